// Timestamps as they appear in file names (`Q@T`, `.at/T/...`) and in logs.
//
// A T is either
//   - decimal microseconds since the Unix epoch: digits only (no sign, no
//     spaces), leading zeros allowed, value <= INT64_MAX; or
//   - ISO-8601 UTC: "YYYY-MM-DDTHH:MM:SS" with an optional fraction of 1 to 6
//     digits (".5" is 500000 µs, ".123456"; 7 or more digits: EINVAL, because
//     a timestamp finer than the store's microsecond would be silently
//     changed), then the zone "Z" or "+00:00" (what `date -u -Iseconds`
//     prints). Any other zone, a lower-case 't'/'z', a space instead of 'T',
//     a leap second (:60), an invalid date ("2026-02-29"), or a time before
//     1970-01-01T00:00:00Z (which decimal T cannot write either): EINVAL.
//
// Thread safety: pure functions.
#ifndef TABLETFS_FS_TIMESTAMP_H_
#define TABLETFS_FS_TIMESTAMP_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "fs/errors.h"

namespace tabletfs::fs {

// Parses a T as described above into microseconds since the epoch (>= 0).
// EINVAL with a reason saying what was expected; *micros is unchanged then.
FsError ParseTimestamp(std::string_view text, int64_t* micros);

// "2026-11-21T10:00:00.123456Z"; the fraction is omitted when zero and is
// otherwise always 6 digits. Every int64 value formats (years outside
// 0000-9999 print with more digits or a '-'); for 0 <= micros <= the end of
// year 9999, ParseTimestamp(FormatIso8601(micros)) == micros.
std::string FormatIso8601(int64_t micros);

// Timestamps on a store whose versions come in units of `granularity` µs
// (Bigtable::TimestampGranularityMicros(): 1 locally, 1000 on a remote
// Bigtable). REQUIRES: granularity >= 1, micros >= 0.
//
// The version a write at T creates (`Q@T`): T rounded down, so that the
// same T always names the same version and reading `Q@T` (the newest
// version <= T) finds what was written there.
int64_t FloorToGranularity(int64_t micros, int64_t granularity);
// The smallest timestamp above `micros` the store keeps: where a write goes
// to sort just above the newest version.
int64_t NextAbove(int64_t micros, int64_t granularity);

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_TIMESTAMP_H_
