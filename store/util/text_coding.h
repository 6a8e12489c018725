// Text codings shared by the tools and the filesystem: UTF-8 validity,
// base64, and JSON strings, in one convention for every JSON line tabletfs
// writes (`tabletctl export`, the mount's `.changes` feeds): a byte string
// NAME that is valid UTF-8 is the member "NAME":"..." (a JSON string), any
// other is "NAME_base64":"..." (AppendJsonBytes).
//
// Thread safety: pure functions.
#ifndef TABLETFS_STORE_UTIL_TEXT_CODING_H_
#define TABLETFS_STORE_UTIL_TEXT_CODING_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "store/status.h"

namespace tabletfs {

// Length of the valid UTF-8 sequence starting at text[i], or 0 when the
// byte there does not start one. REQUIRES: i < text.size().
size_t Utf8SequenceLength(std::string_view text, size_t i);

// True when `text` is valid UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF).
bool IsValidUtf8(std::string_view text);

// Standard base64 (RFC 4648, with padding).
std::string Base64Encode(std::string_view bytes);
Result<std::string> Base64Decode(std::string_view text);

// A JSON string literal (with quotes) for valid UTF-8 `text`; control
// characters become \n, \t, \r, \b, \f or \u00XX.
std::string JsonQuote(std::string_view text);

// Appends the member for `bytes` named `name` (no separator): "name":"..."
// when `bytes` is valid UTF-8, else "name_base64":"...".
void AppendJsonBytes(std::string* line, std::string_view name,
                     std::string_view bytes);

}  // namespace tabletfs

#endif  // TABLETFS_STORE_UTIL_TEXT_CODING_H_
