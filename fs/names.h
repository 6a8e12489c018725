// The name encoding of DESIGN.md "Names": a bijection between byte strings
// (row keys, qualifiers) and file names, plus the `NAME@T` version suffix and
// the table and family name rules. A pure mapping: no FUSE, no store access.
//
// Encoding (EncodeName). Each byte of the key is kept as it is, except these,
// which become "%XX" with upper-case hex digits:
//   '/', '%', '@', NUL and every control byte 0x00-0x1F, DEL 0x7F, and every
//   byte that is not part of a valid UTF-8 sequence (RFC 3629: no overlong
//   forms, no surrogates U+D800-U+DFFF, nothing above U+10FFFF, no truncated
//   sequences). A sequence is checked as a whole: either every byte of a
//   valid sequence is kept, or its first byte is escaped and the next byte
//   is looked at afresh.
// Whole-key special cases: the empty key is "%", "." is "%2E" and ".." is
// "%2E%2E" ("..." and other dot runs are kept).
//
// A name is canonical when EncodeName(decode(name)) == name; only canonical
// names are accepted, so no two names reach one key and a name written is
// the name listed.
//
// Long keys (ShownName). An encoding longer than kMaxShownNameBytes (234) is
// shown as a prefix of it (never cut inside "%XX" or a UTF-8 sequence), then
// "%~", then XXH64(key, seed 0) in 16 lower-case hex digits, at most 234
// bytes in all; so "NAME@T" with a 19-digit T fits in NAME_MAX (255). "%~"
// never occurs in an ordinary encoding ('~' is not a hex digit). A hashed
// name is resolved by the caller: list the keys starting with the decoded
// prefix (ParsedName::key) and take the one for which HashedNameMatches; if
// none, ENAMETOOLONG (such keys come through the API and the CLI).
//
// Thread safety: pure functions.
#ifndef TABLETFS_FS_NAMES_H_
#define TABLETFS_FS_NAMES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fs/errors.h"

namespace tabletfs::fs {

// Longest name ShownName produces and ParseName accepts.
inline constexpr size_t kMaxShownNameBytes = 234;
// The kernel's limit on one path component (NAME_MAX).
inline constexpr size_t kMaxFileNameBytes = 255;

// The full encoding of `key`, without length limit.
std::string EncodeName(std::string_view key);

// The name listed for `key`: EncodeName(key) if it is at most 234 bytes,
// otherwise the hashed form described above (exactly what HashedNameMatches
// compares against).
std::string ShownName(std::string_view key);

struct ParsedName {
  // True for a "PREFIX%~HASH" name, which stands for a longer key.
  bool hashed = false;
  // The key; for a hashed name, the decoded prefix (a prefix of the key).
  std::string key;
  // Hashed names only: XXH64 of the whole key.
  uint64_t hash = 0;
};

// Decodes a file name (without any "@T" suffix: see SplitVersionSuffix).
//   ENAMETOOLONG: longer than 234 bytes (a name that long can never be
//                 listed, so it cannot be created through the filesystem).
//   EINVAL:       empty, or not canonical: a bad escape ("%zz", "%2", a
//                 trailing lone '%' — the whole name "%" is the empty key),
//                 an escape of a byte that is kept ("%41"), lower-case hex
//                 ("%2f", "%2e"), a byte that must be escaped ("@", a control
//                 byte, invalid UTF-8), a raw "." or ".." (never passed by the
//                 kernel), or a malformed hashed form ("%~" not followed by
//                 exactly 16 lower-case hex digits at the end of the name).
// A well-formed hashed name gives hashed=true; whether its prefix has the
// length ShownName would choose is checked by HashedNameMatches.
// *out is unchanged on error.
FsError ParseName(std::string_view name, ParsedName* out);

// ParseName for a row directory: additionally EINVAL for "%" (row keys are 1
// byte or more).
FsError ParseRowName(std::string_view name, ParsedName* out);

// True when `parsed` (a hashed name from ParseName) is exactly ShownName(key).
// Also true for an unhashed `parsed` whose key equals `key`, so callers can
// use it for every lookup.
bool HashedNameMatches(const ParsedName& parsed, std::string_view key);

// Splits "Q@T" at the first '@' ('@' never appears in an encoded key) into
// base "Q" and T parsed by ParseTimestamp (fs/timestamp.h). Without '@':
// *base = name, *timestamp = nullopt. EINVAL for a bad or empty T. `base`
// points into `name`.
FsError SplitVersionSuffix(std::string_view name, std::string_view* base,
                           std::optional<int64_t>* timestamp);

// "NAME@T" with T in decimal microseconds. A negative T (possible through
// the API only) prints as "-N", which ParseTimestamp refuses.
std::string VersionName(std::string_view shown_name, int64_t timestamp_micros);

// The table that keeps the mtimes set by utimensat (fs/mtimes.h): never
// listed, and EPERM by name.
inline constexpr char kReservedTableName[] = "_tabletfs_mtimes";

// Table names: store's ValidateTableName; EINVAL with its message,
// ENAMETOOLONG beyond 255 bytes, EPERM for kReservedTableName.
FsError ParseTableName(std::string_view name);
// Family names: store's ValidateFamilyName; EINVAL with its message, or
// ENAMETOOLONG beyond 255 bytes.
FsError ParseFamilyName(std::string_view name);

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_NAMES_H_
