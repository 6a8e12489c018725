// libFuzzer target for the name codec (fs/names.h) and the timestamps in
// names (fs/timestamp.h).
//
// The input is used both ways:
//   as a file name: ParseName/ParseRowName/SplitVersionSuffix/ParseTimestamp
//     never crash; an accepted plain name is canonical (EncodeName and
//     ShownName of its key give the name back); an accepted hashed name has
//     a canonical prefix; an accepted T formats back to itself.
//   as a key: EncodeName/ShownName give a name that ParseName accepts and
//     that resolves back to the key (HashedNameMatches), never longer than
//     234 bytes, and "NAME@T" fits in NAME_MAX.
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "fs/names.h"
#include "fs/timestamp.h"
#include "tests/fuzz/fuzz_util.h"

namespace tabletfs::fuzz {
namespace {

using fs::FsError;
using fs::ParsedName;

// Largest T that FormatIso8601 prints with a 4-digit year:
// 9999-12-31T23:59:59.999999Z.
constexpr int64_t kEndOfYear9999 = 253402300799999999LL;

void CheckAsName(std::string_view name) {
  ParsedName parsed;
  FsError e = fs::ParseName(name, &parsed);
  if (!e.ok()) {
    FUZZ_CHECK(e.err == EINVAL || e.err == ENAMETOOLONG,
               "ParseName: unexpected %s", e.ToString().c_str());
    FUZZ_CHECK(e.err != ENAMETOOLONG || name.size() > fs::kMaxShownNameBytes,
               "ENAMETOOLONG for a %zu-byte name", name.size());
    FUZZ_CHECK(parsed.key.empty() && !parsed.hashed && parsed.hash == 0,
               "*out changed on error");
  } else {
    FUZZ_CHECK(name.size() <= fs::kMaxShownNameBytes, "accepted %zu bytes",
               name.size());
    if (!parsed.hashed) {
      std::string encoded = fs::EncodeName(parsed.key);
      FUZZ_CHECK(encoded == name, "not canonical: EncodeName(key) = '%s'",
                 encoded.c_str());
      FUZZ_CHECK(fs::ShownName(parsed.key) == name,
                 "ShownName(key) differs from the accepted name");
      FUZZ_CHECK(fs::HashedNameMatches(parsed, parsed.key),
                 "plain name does not match its own key");
    } else {
      size_t mark = name.rfind("%~");
      FUZZ_CHECK(mark != std::string_view::npos && mark + 2 + 16 == name.size(),
                 "hashed name without a trailing %%~HASH");
      std::string_view prefix = name.substr(0, mark);
      if (!prefix.empty()) {
        FUZZ_CHECK(fs::EncodeName(parsed.key) == prefix,
                   "hashed name with a non-canonical prefix");
      } else {
        FUZZ_CHECK(parsed.key.empty(), "empty prefix, non-empty key");
      }
      // The name stands for a key longer than it shows: the key it decodes
      // to (a strict prefix of that key) is never what it names.
      FUZZ_CHECK(!fs::HashedNameMatches(parsed, parsed.key) ||
                     fs::ShownName(parsed.key) == name,
                 "hashed name matches its own prefix");
    }
  }

  ParsedName row;
  FsError re = fs::ParseRowName(name, &row);
  if (e.ok()) {
    bool empty_key = !parsed.hashed && parsed.key.empty();
    FUZZ_CHECK(re.ok() != empty_key,
               "ParseRowName disagrees with ParseName (%s)",
               re.ToString().c_str());
    if (re.ok()) FUZZ_CHECK(row.key == parsed.key, "row key differs");
  } else {
    FUZZ_CHECK(!re.ok(), "ParseRowName accepts what ParseName refuses");
  }

  std::string_view base;
  std::optional<int64_t> t;
  FsError ve = fs::SplitVersionSuffix(name, &base, &t);
  if (ve.ok()) {
    size_t at = name.find('@');
    if (at == std::string_view::npos) {
      FUZZ_CHECK(base == name && !t.has_value(), "no '@' but a suffix");
    } else {
      FUZZ_CHECK(base == name.substr(0, at) && t.has_value(),
                 "bad split of '@'");
      FUZZ_CHECK(*t >= 0, "negative T accepted");
      std::string_view text = name.substr(at + 1);
      int64_t again = -1;
      FUZZ_CHECK(fs::ParseTimestamp(text, &again).ok() && again == *t,
                 "SplitVersionSuffix and ParseTimestamp disagree");
      // VersionName prints T in decimal, which parses back to T.
      std::string_view base2;
      std::optional<int64_t> t2;
      FUZZ_CHECK(
          fs::SplitVersionSuffix(fs::VersionName(base, *t), &base2, &t2).ok() &&
              base2 == base && t2 == t,
          "VersionName does not split back");
    }
  } else {
    FUZZ_CHECK(ve.err == EINVAL, "SplitVersionSuffix: %s",
               ve.ToString().c_str());
  }

  int64_t micros = -1;
  FsError te = fs::ParseTimestamp(name, &micros);
  if (te.ok()) {
    FUZZ_CHECK(micros >= 0, "negative T %lld", static_cast<long long>(micros));
    if (micros <= kEndOfYear9999) {
      int64_t back = -1;
      std::string iso = fs::FormatIso8601(micros);
      FUZZ_CHECK(fs::ParseTimestamp(iso, &back).ok() && back == micros,
                 "ISO form '%s' does not parse back", iso.c_str());
    }
    int64_t back = -1;
    FUZZ_CHECK(fs::ParseTimestamp(std::to_string(micros), &back).ok() &&
                   back == micros,
               "decimal form does not parse back");
  } else {
    FUZZ_CHECK(te.err == EINVAL, "ParseTimestamp: %s", te.ToString().c_str());
    FUZZ_CHECK(micros == -1, "*micros changed on error");
  }

  bool table_ok = fs::ParseTableName(name).ok();
  bool family_ok = fs::ParseFamilyName(name).ok();
  if (table_ok || family_ok) {
    FUZZ_CHECK(!name.empty(), "empty table/family name accepted");
    for (char c : name) {
      bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                     (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
      FUZZ_CHECK(allowed, "table/family name with byte 0x%02x",
                 static_cast<unsigned char>(c));
    }
    FUZZ_CHECK(name[0] != '-' && name[0] != '.', "bad first character");
    FUZZ_CHECK(!table_ok || name.size() <= 50, "table name too long");
    FUZZ_CHECK(!family_ok || name.size() <= 64, "family name too long");
  }
}

void CheckAsKey(std::string_view key) {
  std::string encoded = fs::EncodeName(key);
  std::string shown = fs::ShownName(key);
  FUZZ_CHECK(shown.size() <= fs::kMaxShownNameBytes, "ShownName %zu bytes",
             shown.size());
  FUZZ_CHECK(encoded.find('/') == std::string::npos &&
                 encoded.find('\0') == std::string::npos &&
                 encoded.find('@') == std::string::npos,
             "encoding holds '/', NUL or '@'");
  FUZZ_CHECK(encoded != "." && encoded != ".." && !encoded.empty(),
             "encoding '%s' is not a usable file name", encoded.c_str());
  ParsedName parsed;
  FsError e = fs::ParseName(shown, &parsed);
  FUZZ_CHECK(e.ok(), "ShownName not accepted: %s", e.ToString().c_str());
  FUZZ_CHECK(fs::HashedNameMatches(parsed, key),
             "ShownName does not resolve back to its key");
  if (encoded.size() <= fs::kMaxShownNameBytes) {
    FUZZ_CHECK(shown == encoded, "short key shown hashed");
    FUZZ_CHECK(!parsed.hashed && parsed.key == key, "round trip lost the key");
  } else {
    FUZZ_CHECK(parsed.hashed, "long key shown unhashed");
    FUZZ_CHECK(key.substr(0, parsed.key.size()) == parsed.key,
               "hashed prefix is not a prefix of the key");
    // A longer key with the same prefix must not match this name.
    std::string other(key);
    other.push_back('x');
    FUZZ_CHECK(!fs::HashedNameMatches(parsed, other),
               "hashed name matches another key");
  }
  std::string version =
      fs::VersionName(shown, std::numeric_limits<int64_t>::max());
  FUZZ_CHECK(version.size() <= fs::kMaxFileNameBytes, "NAME@T is %zu bytes",
             version.size());
}

void CheckMicros(const uint8_t* data, size_t size) {
  if (size < 8) return;
  uint64_t raw;
  std::memcpy(&raw, data, 8);
  int64_t micros = static_cast<int64_t>(raw % (kEndOfYear9999 + 1));
  int64_t back = -1;
  std::string iso = fs::FormatIso8601(micros);
  FUZZ_CHECK(fs::ParseTimestamp(iso, &back).ok() && back == micros,
             "FormatIso8601(%lld) = '%s' does not parse back",
             static_cast<long long>(micros), iso.c_str());
  // Any int64 formats without crashing.
  (void)fs::FormatIso8601(static_cast<int64_t>(raw));
}

}  // namespace
}  // namespace tabletfs::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tabletfs::fuzz::CheckAsName(text);
  tabletfs::fuzz::CheckAsKey(text);
  tabletfs::fuzz::CheckMicros(data, size);
  return 0;
}
