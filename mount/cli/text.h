// Text helpers of tabletctl: how bytes, timestamps and keys are shown and
// parsed on the command line, in cbt's conventions.
//
// Thread safety: pure functions.
#ifndef TABLETFS_MOUNT_CLI_TEXT_H_
#define TABLETFS_MOUNT_CLI_TEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/schema.h"
#include "store/status.h"
#include "store/util/text_coding.h"

namespace tabletfs::cli {

// UTF-8, base64 and JSON strings: store/util/text_coding.h.
using tabletfs::Base64Decode;
using tabletfs::Base64Encode;
using tabletfs::IsValidUtf8;
using tabletfs::JsonQuote;

// True when `text` can be shown as itself without ambiguity: valid UTF-8,
// no control characters (C0, DEL, C1), and not starting with '"' (the
// quoted form of ShowKey always does).
bool IsPlainText(std::string_view text);

// `text` in double quotes, escaped as Go's %q (strconv.Quote) does, which is
// what cbt prints for values: \a \b \f \n \r \t \v \\ \", \xNN for other
// control bytes, DEL and bytes that are not valid UTF-8, \u00NN for C1
// controls; other valid UTF-8 is kept.
std::string QuoteBytes(std::string_view text);

// `text` itself when IsPlainText, otherwise QuoteBytes(text): how row keys
// and qualifiers are shown.
std::string ShowKey(std::string_view text);

// cbt's timestamp layout "2006/01/02-15:04:05.000000", in UTC.
std::string FormatCbtTimestamp(int64_t micros);

// A GC policy as `cbt ls TABLE` shows it: "" for never, "versions() > N",
// "age() > D" (D in whole days, hours or minutes when it divides, else in
// microseconds, seconds precision as cbt reads it back), and every `and` /
// `or` as "(A && B)" / "(A || B)".
std::string CbtPolicyText(const GcPolicy& policy);

// Lines of cells aligned as Go's tabwriter.NewWriter(out, 10, 8, 4, '\t', 0)
// aligns them (cbt's tables): each column but the last is padded with tabs
// to max(10, its widest cell + 4) rounded up to a multiple of 8.
std::string TabAligned(const std::vector<std::vector<std::string>>& lines);

// A decimal int64 ("-" allowed, nothing else): the cbt rule for "value@ts".
std::optional<int64_t> ParseInt64(std::string_view text);
// A decimal uint64 (digits only).
std::optional<uint64_t> ParseUint64(std::string_view text);

// A time T as DESIGN.md writes it: decimal microseconds or ISO-8601 UTC.
Result<int64_t> ParseTime(std::string_view text);

// "1.5 MiB", "12 B".
std::string FormatBytes(uint64_t bytes);

}  // namespace tabletfs::cli

#endif  // TABLETFS_MOUNT_CLI_TEXT_H_
