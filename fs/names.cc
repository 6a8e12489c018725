#include "fs/names.h"

#include <xxhash.h>

#include <cerrno>
#include <cstdio>

#include "fs/timestamp.h"
#include "store/schema.h"

namespace tabletfs::fs {
namespace {

constexpr char kHexUpper[] = "0123456789ABCDEF";
constexpr std::string_view kHashMarker = "%~";
constexpr size_t kHashDigits = 16;
// "%~" plus the hash.
constexpr size_t kHashSuffixBytes = kHashMarker.size() + kHashDigits;

bool InRange(unsigned char c, unsigned char lo, unsigned char hi) {
  return c >= lo && c <= hi;
}

// The length of the valid UTF-8 sequence of two or more bytes starting at
// s[i] (RFC 3629, table in section 4), or 0 when there is none. Validity
// depends only on the sequence's own bytes, so a key cut at a sequence
// boundary encodes to a prefix of the key's encoding: ShownName relies on it.
size_t MultiByteSequenceLength(std::string_view s, size_t i) {
  auto at = [&](size_t k) -> int {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : -1;
  };
  auto cont = [&](size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    int c = at(k);
    return c >= 0 && InRange(static_cast<unsigned char>(c), lo, hi);
  };
  const unsigned char b = static_cast<unsigned char>(s[i]);
  if (InRange(b, 0xC2, 0xDF)) return cont(1) ? 2 : 0;
  if (b == 0xE0) return cont(1, 0xA0, 0xBF) && cont(2) ? 3 : 0;
  if (b == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;  // surrogates
  if (InRange(b, 0xE1, 0xEF)) return cont(1) && cont(2) ? 3 : 0;
  if (b == 0xF0) return cont(1, 0x90, 0xBF) && cont(2) && cont(3) ? 4 : 0;
  if (InRange(b, 0xF1, 0xF3)) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (b == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;  // continuation byte, C0, C1, F5-FF
}

bool MustEscapeAscii(unsigned char c) {
  return c < 0x20 || c == 0x7F || c == '/' || c == '%' || c == '@';
}

void AppendEscaped(unsigned char c, std::string* out) {
  out->push_back('%');
  out->push_back(kHexUpper[c >> 4]);
  out->push_back(kHexUpper[c & 0xF]);
}

// Appends the encoding of key's units (a kept ASCII byte, a kept UTF-8
// sequence, or an escaped byte) while the result stays within `limit`
// bytes; stops before the first unit that would not fit. Never applies the
// whole-key special cases ("", ".", "..").
void EncodeUnits(std::string_view key, size_t limit, std::string* out) {
  size_t i = 0;
  while (i < key.size()) {
    const unsigned char b = static_cast<unsigned char>(key[i]);
    if (b < 0x80) {
      const size_t n = MustEscapeAscii(b) ? 3 : 1;
      if (out->size() + n > limit) return;
      if (n == 3) {
        AppendEscaped(b, out);
      } else {
        out->push_back(static_cast<char>(b));
      }
      ++i;
      continue;
    }
    const size_t len = MultiByteSequenceLength(key, i);
    if (len == 0) {
      if (out->size() + 3 > limit) return;
      AppendEscaped(b, out);
      ++i;
    } else {
      if (out->size() + len > limit) return;
      out->append(key.substr(i, len));
      i += len;
    }
  }
}

// The digest of a long name (DESIGN.md "Names": the 64-bit xxHash of the
// whole key, seed 0). Part of the namespace contract, so fs/ calls xxHash
// itself rather than the store's checksum function.
uint64_t KeyHash(std::string_view key) {
  return XXH64(key.data(), key.size(), 0);
}

std::string HashHex(uint64_t h) {
  char buf[kHashDigits + 1];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(h));
  return std::string(buf, kHashDigits);
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The name as it can appear in a log line: bytes that would garble the line
// become \xHH.
std::string Printable(std::string_view name) {
  std::string out;
  for (char ch : name) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F || c == '\\') {
      char buf[5];
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

// Decodes every "%XX" (either case: canonicality is checked afterwards by
// re-encoding). False for a '%' not followed by two hex digits.
bool Unescape(std::string_view name, std::string* key, std::string* why) {
  key->clear();
  key->reserve(name.size());
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] != '%') {
      key->push_back(name[i]);
      continue;
    }
    int hi = i + 1 < name.size() ? HexValue(name[i + 1]) : -1;
    int lo = i + 2 < name.size() ? HexValue(name[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      *why = "'%' at byte " + std::to_string(i) +
             " is not followed by two hex digits";
      return false;
    }
    key->push_back(static_cast<char>(hi << 4 | lo));
    i += 2;
  }
  return true;
}

// Decodes `text` (the whole name, or a hashed name's prefix) and checks
// that it is canonical.
FsError DecodeCanonical(std::string_view name, std::string_view text,
                        std::string* key) {
  if (text == "%") {  // the empty key
    key->clear();
    return FsError::Ok();
  }
  std::string why;
  if (!Unescape(text, key, &why)) {
    return FsError::Of(EINVAL, "bad name '" + Printable(name) + "': " + why);
  }
  const std::string canonical = EncodeName(*key);
  if (canonical != text) {
    return FsError::Of(EINVAL, "name '" + Printable(name) +
                                   "' is not canonical: its key is written '" +
                                   Printable(canonical) + "'");
  }
  return FsError::Ok();
}

bool IsLowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

FsError CheckLength(std::string_view what, std::string_view name,
                    size_t limit) {
  if (name.size() > kMaxFileNameBytes) {
    return FsError::Of(ENAMETOOLONG, std::string(what) + " name of " +
                                         std::to_string(name.size()) +
                                         " bytes is longer than 255 bytes");
  }
  if (name.size() > limit) {
    return FsError::Of(ENAMETOOLONG,
                       std::string(what) + " name of " +
                           std::to_string(name.size()) +
                           " bytes is longer than " + std::to_string(limit) +
                           " bytes (longer keys come through the API or CLI)");
  }
  return FsError::Ok();
}

}  // namespace

std::string EncodeName(std::string_view key) {
  if (key.empty()) return "%";
  if (key == ".") return "%2E";
  if (key == "..") return "%2E%2E";
  std::string out;
  out.reserve(key.size());
  EncodeUnits(key, std::string::npos, &out);
  return out;
}

std::string ShownName(std::string_view key) {
  std::string full = EncodeName(key);
  if (full.size() <= kMaxShownNameBytes) return full;
  std::string out;
  EncodeUnits(key, kMaxShownNameBytes - kHashSuffixBytes, &out);
  out += kHashMarker;
  out += HashHex(KeyHash(key));
  return out;
}

FsError ParseName(std::string_view name, ParsedName* out) {
  if (name.empty()) return FsError::Of(EINVAL, "empty name");
  TABLETFS_FS_RETURN_IF_ERROR(CheckLength("file", name, kMaxShownNameBytes));
  ParsedName parsed;
  if (name.size() >= kHashSuffixBytes &&
      name.substr(name.size() - kHashSuffixBytes, kHashMarker.size()) ==
          kHashMarker) {
    const std::string_view digits = name.substr(name.size() - kHashDigits);
    if (!IsLowerHex(digits)) {
      return FsError::Of(EINVAL, "bad hashed name '" + Printable(name) +
                                     "': expected 16 lower-case hex digits "
                                     "after '%~'");
    }
    parsed.hashed = true;
    for (char c : digits) parsed.hash = parsed.hash << 4 | HexValue(c);
    TABLETFS_FS_RETURN_IF_ERROR(DecodeCanonical(
        name, name.substr(0, name.size() - kHashSuffixBytes), &parsed.key));
  } else {
    TABLETFS_FS_RETURN_IF_ERROR(DecodeCanonical(name, name, &parsed.key));
  }
  *out = std::move(parsed);
  return FsError::Ok();
}

FsError ParseRowName(std::string_view name, ParsedName* out) {
  ParsedName parsed;
  TABLETFS_FS_RETURN_IF_ERROR(ParseName(name, &parsed));
  if (!parsed.hashed && parsed.key.empty()) {
    return FsError::Of(EINVAL,
                       "row name '%' is the empty key; row keys are 1 byte "
                       "or more");
  }
  *out = std::move(parsed);
  return FsError::Ok();
}

bool HashedNameMatches(const ParsedName& parsed, std::string_view key) {
  if (!parsed.hashed) return parsed.key == key;
  if (key.substr(0, parsed.key.size()) != parsed.key) return false;
  if (KeyHash(key) != parsed.hash) return false;
  // Same hash and prefix; the prefix must also be the one ShownName cuts,
  // so that exactly one name reaches the key.
  return ShownName(key) == EncodeName(parsed.key) + std::string(kHashMarker) +
                               HashHex(parsed.hash);
}

FsError SplitVersionSuffix(std::string_view name, std::string_view* base,
                           std::optional<int64_t>* timestamp) {
  const size_t at = name.find('@');
  if (at == std::string_view::npos) {
    *base = name;
    timestamp->reset();
    return FsError::Ok();
  }
  int64_t t = 0;
  FsError e = ParseTimestamp(name.substr(at + 1), &t);
  if (!e.ok()) {
    e.reason = "in name '" + Printable(name) + "': " + e.reason;
    return e;
  }
  *base = name.substr(0, at);
  *timestamp = t;
  return FsError::Ok();
}

std::string VersionName(std::string_view shown_name, int64_t timestamp_micros) {
  std::string out(shown_name);
  out += '@';
  out += std::to_string(timestamp_micros);
  return out;
}

FsError ParseTableName(std::string_view name) {
  TABLETFS_FS_RETURN_IF_ERROR(CheckLength("table", name, kMaxFileNameBytes));
  Status s = ValidateTableName(name);
  if (!s.ok()) return FsError::Of(EINVAL, s.message());
  if (name == kReservedTableName) {
    return FsError::Of(EPERM, std::string(name) +
                                  " holds the mtimes utimensat set; the "
                                  "filesystem never shows it");
  }
  return FsError::Ok();
}

FsError ParseFamilyName(std::string_view name) {
  TABLETFS_FS_RETURN_IF_ERROR(CheckLength("family", name, kMaxFileNameBytes));
  Status s = ValidateFamilyName(name);
  if (!s.ok()) return FsError::Of(EINVAL, s.message());
  return FsError::Ok();
}

}  // namespace tabletfs::fs
