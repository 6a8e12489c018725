// The content of a `.schema/TABLE/FAMILY` file: a family's settings as text,
// one "key = value" per line:
//
//   gcpolicy = maxversions=3 or maxage=7d
//   compression = lz4
//
// Keys: `gcpolicy` (GcPolicy::Parse syntax, `cbt setgcpolicy`) and
// `compression` (`lz4` or `none`). Owner and mode are not in the content:
// they are shown by stat and changed by chmod/chown.
//
// Parsing: lines end with '\n' (a '\r' before it is ignored); spaces and tabs
// around key and value are ignored; blank lines and lines whose first
// non-blank character is '#' are comments. A key may appear more than once:
// the last line wins, so `echo 'gcpolicy = never' >> FILE` works on a file
// that already lists every key. Keys absent from the text keep their current
// value, so writing one line changes one setting.
//
// Thread safety: pure functions.
#ifndef TABLETFS_FS_SCHEMA_TEXT_H_
#define TABLETFS_FS_SCHEMA_TEXT_H_

#include <string>
#include <string_view>

#include "fs/errors.h"
#include "store/schema.h"

namespace tabletfs::fs {

// "gcpolicy = <GcPolicy::ToString()>\ncompression = lz4|none\n".
// ParseFamilySettings(FormatFamilySettings(s), s', &out) gives out == s
// for owner/uid/mode taken from s'.
std::string FormatFamilySettings(const FamilySettings& s);

// Parses `text` on top of `current`: *out = current with the keys in `text`
// replaced. EINVAL naming the line ("line 2: unknown key 'foo', expected
// gcpolicy or compression") for an unknown key, a bad value, or a line
// without '='; *out is unchanged then. Owner and mode always come from
// `current`. `out` may alias `current`.
FsError ParseFamilySettings(std::string_view text,
                            const FamilySettings& current, FamilySettings* out);

// Validates one line (without or with its trailing '\n'), as
// ParseFamilySettings would: Ok for a blank line, a comment or a valid "key =
// value". For refusing a bad write as soon as a complete line has been written.
FsError ValidateSettingsLine(std::string_view line);

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_SCHEMA_TEXT_H_
