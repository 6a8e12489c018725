#include "fs/names.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "store/util/hash.h"

namespace tabletfs::fs {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

std::string Hex(std::string_view s) {
  std::string out;
  char buf[4];
  for (unsigned char c : s) {
    std::snprintf(buf, sizeof(buf), "%02X ", c);
    out += buf;
  }
  return out;
}

std::string HashHex(std::string_view key) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(Hash64(key)));
  return buf;
}

// The golden table: key -> name, checked in both directions.
struct Golden {
  std::string key;
  std::string name;
};

std::vector<Golden> GoldenTable() {
  std::vector<Golden> t = {
      // ASCII, kept.
      {"abc", "abc"},
      {"Hello World", "Hello World"},
      {"a-b_c.d~e+f=g,h;i!j'k\"l(m)n[o]p{q}r*s?t#u$v&w^x`y|z\\<>:",
       "a-b_c.d~e+f=g,h;i!j'k\"l(m)n[o]p{q}r*s?t#u$v&w^x`y|z\\<>:"},
      {" ", " "},
      {"~", "~"},
      // The three escaped printable characters.
      {"/", "%2F"},
      {"%", "%25"},
      {"@", "%40"},
      {"a/b%c@d", "a%2Fb%25c%40d"},
      {"%41", "%2541"},
      {"q@123", "q%40123"},
      // Whole-key special cases.
      {"", "%"},
      {".", "%2E"},
      {"..", "%2E%2E"},
      {"...", "..."},
      {".a", ".a"},
      {"a.", "a."},
      {"./", ".%2F"},
      // DEL.
      {"\x7F", "%7F"},
      {"a\x7F"
       "b",
       "a%7Fb"},
      // UTF-8, kept: 2, 3 and 4 bytes, and the edges of each range.
      {"\xC3\xA9", "\xC3\xA9"},                  // U+00E9
      {"\xC2\x80", "\xC2\x80"},                  // U+0080, first 2-byte
      {"\xC2\x85", "\xC2\x85"},                  // U+0085 (a C1 control)
      {"\xDF\xBF", "\xDF\xBF"},                  // U+07FF
      {"\xE0\xA0\x80", "\xE0\xA0\x80"},          // U+0800, first 3-byte
      {"\xE2\x82\xAC", "\xE2\x82\xAC"},          // U+20AC euro
      {"\xED\x9F\xBF", "\xED\x9F\xBF"},          // U+D7FF, below surrogates
      {"\xEE\x80\x80", "\xEE\x80\x80"},          // U+E000, above surrogates
      {"\xEF\xBF\xBF", "\xEF\xBF\xBF"},          // U+FFFF
      {"\xF0\x90\x80\x80", "\xF0\x90\x80\x80"},  // U+10000, first 4-byte
      {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"},  // U+1F600
      {"\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF"},  // U+10FFFF, the last
      {"caf\xC3\xA9/\xE2\x82\xAC", "caf\xC3\xA9%2F\xE2\x82\xAC"},
      // Invalid UTF-8, escaped byte by byte.
      {"\xC0\x80", "%C0%80"},                // overlong NUL
      {"\xC1\xBF", "%C1%BF"},                // overlong
      {"\xE0\x80\x80", "%E0%80%80"},         // overlong 3-byte
      {"\xE0\x9F\xBF", "%E0%9F%BF"},         // overlong U+07FF
      {"\xED\xA0\x80", "%ED%A0%80"},         // U+D800 surrogate
      {"\xED\xBF\xBF", "%ED%BF%BF"},         // U+DFFF surrogate
      {"\xF0\x80\x80\x80", "%F0%80%80%80"},  // overlong 4-byte
      {"\xF0\x8F\xBF\xBF", "%F0%8F%BF%BF"},  // overlong U+FFFF
      {"\xF4\x90\x80\x80", "%F4%90%80%80"},  // U+110000
      {"\xF5\x80\x80\x80", "%F5%80%80%80"},  // F5 lead
      {"\xF8\x88\x80\x80\x80", "%F8%88%80%80%80"},
      {"\xFE", "%FE"},
      {"\xFF", "%FF"},
      {"\x80", "%80"},  // lone continuation
      {"\xBF", "%BF"},
      {"\xC3", "%C3"},                // truncated at end
      {"\xE2\x82", "%E2%82"},         // truncated at end
      {"\xF0\x9F\x98", "%F0%9F%98"},  // truncated at end
      {"\xE2\x82"
       "A",
       "%E2%82A"},                      // truncated by ASCII
      {"\xC3\xC3\xA9", "%C3\xC3\xA9"},  // then a valid sequence
      {"\xF0\x9F\x98\xF0\x9F\x98\x80", "%F0%9F%98\xF0\x9F\x98\x80"},
      {"\xE2\x82\xAC\x80", "\xE2\x82\xAC%80"},  // extra continuation
      {"a\xFF"
       "b",
       "a%FFb"},
  };
  // Every control byte.
  static const char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 0x20; ++b) {
    t.push_back({Bytes({b}), std::string("%") + kHex[b >> 4] + kHex[b & 15]});
  }
  t.push_back({Bytes({'x', 0, 'y'}), "x%00y"});
  t.push_back({"a\nb", "a%0Ab"});
  return t;
}

TEST(NamesTest, GoldenTable) {
  for (const Golden& g : GoldenTable()) {
    SCOPED_TRACE("key bytes: " + Hex(g.key));
    EXPECT_EQ(EncodeName(g.key), g.name);
    EXPECT_EQ(ShownName(g.key), g.name);
    ParsedName p;
    FsError e = ParseName(g.name, &p);
    ASSERT_TRUE(e.ok()) << e.ToString();
    EXPECT_FALSE(p.hashed);
    EXPECT_EQ(p.key, g.key);
    EXPECT_TRUE(HashedNameMatches(p, g.key));
  }
}

// Every printable ASCII byte but '/', '%' and '@' is kept.
TEST(NamesTest, PrintableAsciiKept) {
  for (int c = 0x20; c < 0x7F; ++c) {
    std::string key(1, static_cast<char>(c));
    if (c == '/' || c == '%' || c == '@' || c == '.') continue;
    EXPECT_EQ(EncodeName(key), key) << c;
  }
}

TEST(NamesTest, NonCanonicalNamesRefused) {
  const std::vector<std::string> bad = {
      "%41",  // an escaped byte that is kept
      "%2f",  // lower-case hex
      "%2e",  // lower-case, and "." must be %2E
      "%2e%2e",
      "%2E.",  // ".." spelled half-escaped
      ".%2E",
      "%7E",     // '~' is kept
      "%20",     // ' ' is kept
      "%C3%A9",  // valid UTF-8 is kept
      "%zz",     // not hex
      "%g0",
      "a%",  // trailing lone '%'
      "%%",
      "%2",  // one digit
      "a%4",
      "%~",  // not a hashed name: no digits
      "@",   // raw '@'
      "a@b",
      "q@123",  // a version suffix must be split off first
      ".",      // raw dots (the kernel never passes them)
      "..",
      "\x01",      // raw control byte
      "a\x7F",     // raw DEL
      "\xC0\x80",  // raw invalid UTF-8
      "\xED\xA0\x80",
      "\xFF",
      "\xE2\x82",
      "",  // empty
  };
  for (const std::string& name : bad) {
    SCOPED_TRACE("name bytes: " + Hex(name));
    ParsedName p;
    p.key = "unchanged";
    FsError e = ParseName(name, &p);
    EXPECT_EQ(e.err, EINVAL) << e.ToString();
    EXPECT_FALSE(e.reason.empty());
    EXPECT_EQ(p.key, "unchanged");
  }
}

TEST(NamesTest, ReasonGivesTheCanonicalSpelling) {
  ParsedName p;
  FsError e = ParseName("%41", &p);
  EXPECT_EQ(e.err, EINVAL);
  EXPECT_NE(e.reason.find("'A'"), std::string::npos) << e.reason;
}

TEST(NamesTest, EmptyKeyIsPercentButNotARow) {
  ParsedName p;
  ASSERT_TRUE(ParseName("%", &p).ok());
  EXPECT_EQ(p.key, "");
  EXPECT_FALSE(p.hashed);
  EXPECT_EQ(ParseRowName("%", &p).err, EINVAL);
  ASSERT_TRUE(ParseRowName("%25", &p).ok());
  EXPECT_EQ(p.key, "%");
}

// An independent UTF-8 decoder (code point arithmetic, not the RFC table)
// to check the encoder against: the length of the valid sequence at s[i],
// or 0.
size_t OracleSequenceLength(std::string_view s, size_t i) {
  const unsigned char b = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t cp;
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) {
    n = 2, cp = b & 0x1F;
  } else if ((b & 0xF0) == 0xE0) {
    n = 3, cp = b & 0x0F;
  } else if ((b & 0xF8) == 0xF0) {
    n = 4, cp = b & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const unsigned char c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (c & 0x3F);
  }
  static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return n;
}

std::string OracleEncode(std::string_view key) {
  if (key.empty()) return "%";
  if (key == ".") return "%2E";
  if (key == "..") return "%2E%2E";
  std::string out;
  char buf[4];
  for (size_t i = 0; i < key.size();) {
    const unsigned char b = static_cast<unsigned char>(key[i]);
    size_t n = OracleSequenceLength(key, i);
    if (n == 0 || b < 0x20 || b == 0x7F || b == '/' || b == '%' || b == '@') {
      std::snprintf(buf, sizeof(buf), "%%%02X", b);
      out += buf;
      ++i;
    } else {
      out.append(key.substr(i, n));
      i += n;
    }
  }
  return out;
}

// Decodes "%XX" (upper-case only) and "%" alone; false for anything else
// after a '%'.
bool OracleDecode(std::string_view name, std::string* key) {
  key->clear();
  if (name == "%") return true;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] != '%') {
      key->push_back(name[i]);
      continue;
    }
    if (i + 2 >= name.size()) return false;
    unsigned int v;
    const std::string hex(name.substr(i + 1, 2));
    if (hex.size() != 2 || !std::isxdigit(static_cast<unsigned char>(hex[0])) ||
        !std::isxdigit(static_cast<unsigned char>(hex[1])) ||
        std::sscanf(hex.c_str(), "%2X", &v) != 1) {
      return false;
    }
    key->push_back(static_cast<char>(v));
    i += 2;
  }
  return true;
}

void ExpectRoundTrip(const std::string& key) {
  const std::string name = EncodeName(key);
  ASSERT_EQ(name, OracleEncode(key)) << "key bytes: " << Hex(key);
  ParsedName p;
  FsError e = ParseName(name, &p);
  ASSERT_TRUE(e.ok()) << "key bytes: " << Hex(key) << e.ToString();
  ASSERT_EQ(p.key, key) << "key bytes: " << Hex(key);
}

TEST(NamesTest, AllTwoByteKeysMatchOracle) {
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) ExpectRoundTrip(Bytes({a, b}));
  }
}

TEST(NamesTest, ThreeAndFourByteSequencesMatchOracle) {
  // Every lead and second byte; third and fourth bytes at the edges of the
  // continuation range and of the ranges around it.
  const int kTails[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F,
                        0xA0, 0xBF, 0xC0, 0xC2, 0xE2, 0xFF};
  for (int a = 0xC0; a < 0x100; ++a) {
    for (int b = 0; b < 256; ++b) {
      for (int c : kTails) ExpectRoundTrip(Bytes({a, b, c}));
    }
  }
  const int kTails4[] = {0x41, 0x80, 0x8F, 0xBF, 0xC0};
  for (int a = 0xF0; a < 0x100; ++a) {
    for (int b = 0; b < 256; ++b) {
      for (int c : kTails4) {
        for (int d : kTails4) ExpectRoundTrip(Bytes({a, b, c, d}));
      }
    }
  }
}

// Random keys, biased towards the bytes the encoding cares about.
std::string RandomKey(std::mt19937_64* rng, size_t max_len) {
  static const unsigned char kInteresting[] = {
      '/',  '%',  '@',  '.',  0,    0x1F, 0x7F, 0x80, 0xBF, 0xC0, 0xC2,
      0xC3, 0xDF, 0xE0, 0xE2, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF, 'A'};
  std::uniform_int_distribution<size_t> len_dist(0, max_len);
  std::uniform_int_distribution<int> kind(0, 3);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<size_t> pick(0, sizeof(kInteresting) - 1);
  std::string key;
  const size_t len = len_dist(*rng);
  while (key.size() < len) {
    switch (kind(*rng)) {
      case 0:
        key.push_back(static_cast<char>(byte(*rng)));
        break;
      case 1:
        key.push_back(static_cast<char>(kInteresting[pick(*rng)]));
        break;
      case 2:
        key += "\xE2\x82\xAC";
        break;
      default:
        key.push_back(static_cast<char>('a' + byte(*rng) % 26));
    }
  }
  return key;
}

// A fresh seed per run, printed; TABLETFS_TEST_SEED=N replays a failure.
uint64_t TestSeed() {
  const char* env = std::getenv("TABLETFS_TEST_SEED");
  const uint64_t seed =
      env != nullptr ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::printf("%s seed: %llu (replay with TABLETFS_TEST_SEED=%llu)\n",
              "names_test", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  return seed;
}

TEST(NamesTest, RandomRoundTrips) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 20000; ++i) {
    const std::string key = RandomKey(&rng, 40);
    const std::string name = EncodeName(key);
    ASSERT_EQ(name, OracleEncode(key)) << "key bytes: " << Hex(key);
    EXPECT_EQ(name.find('/'), std::string::npos);
    EXPECT_EQ(name.find('@'), std::string::npos);
    EXPECT_EQ(name.find('\0'), std::string::npos);
    if (name.size() > kMaxShownNameBytes) continue;
    ParsedName p;
    FsError e = ParseName(name, &p);
    ASSERT_TRUE(e.ok()) << "key bytes: " << Hex(key) << e.ToString();
    ASSERT_FALSE(p.hashed);
    ASSERT_EQ(p.key, key) << "key bytes: " << Hex(key);
  }
}

// Random names from an alphabet rich in escapes: whatever parses is
// canonical, so no two names reach one key.
TEST(NamesTest, RandomNamesParseOnlyWhenCanonical) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  static const char* const kPieces[] = {
      "%",   "2",   "E",   "F",   "e",  "f",    "4",    "0",
      "A",   ".",   "a",   "@",   "~",  "\xC3", "\xA9", "\xE2\x82\xAC",
      "%C3", "%A9", "%2E", "%25", "%40"};
  std::uniform_int_distribution<size_t> pick(0, std::size(kPieces) - 1);
  std::uniform_int_distribution<int> len(1, 8);
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string name;
    for (int n = len(rng); n > 0; --n) name += kPieces[pick(rng)];
    std::string decoded;
    const bool canonical =
        OracleDecode(name, &decoded) && OracleEncode(decoded) == name;
    ParsedName p;
    FsError e = ParseName(name, &p);
    if (canonical) {
      ++parsed;
      ASSERT_TRUE(e.ok()) << "name bytes: " << Hex(name) << e.ToString();
      ASSERT_EQ(p.key, decoded) << "name bytes: " << Hex(name);
    } else {
      ASSERT_EQ(e.err, EINVAL) << "name bytes: " << Hex(name);
    }
  }
  EXPECT_GT(parsed, 100);
}

// ---------------------------------------------------------------------------
// Long keys.

// The hashed form of `key`: the checks every long key must pass.
void ExpectGoodShownName(const std::string& key) {
  SCOPED_TRACE("key bytes: " + Hex(key.substr(0, 64)) + "...");
  const std::string full = EncodeName(key);
  const std::string shown = ShownName(key);
  ASSERT_LE(shown.size(), kMaxShownNameBytes);
  if (full.size() <= kMaxShownNameBytes) {
    ASSERT_EQ(shown, full);
    return;
  }
  // PREFIX%~HASH, the prefix a prefix of the full encoding, cut at a unit
  // boundary (within 3 bytes of the budget: a 4-byte UTF-8 sequence).
  const size_t prefix_len = shown.size() - 18;
  ASSERT_EQ(shown.substr(prefix_len, 2), "%~");
  ASSERT_EQ(shown.substr(prefix_len + 2), HashHex(key));
  ASSERT_EQ(full.substr(0, prefix_len), shown.substr(0, prefix_len));
  ASSERT_GE(prefix_len, kMaxShownNameBytes - 18 - 3);
  ParsedName p;
  FsError e = ParseName(shown, &p);
  ASSERT_TRUE(e.ok()) << e.ToString();  // so the prefix is canonical
  ASSERT_TRUE(p.hashed);
  ASSERT_EQ(p.hash, Hash64(key));
  ASSERT_EQ(key.substr(0, p.key.size()), p.key);
  ASSERT_EQ(EncodeName(p.key), shown.substr(0, prefix_len));
  ASSERT_TRUE(HashedNameMatches(p, key));
  ASSERT_FALSE(HashedNameMatches(p, key + "x"));
  ASSERT_FALSE(HashedNameMatches(p, key.substr(0, key.size() - 1)));
  // The next unit (an escape or a whole sequence) would not have fit.
  const size_t i = p.key.size();
  ASSERT_LT(i, key.size());
  const unsigned char b = static_cast<unsigned char>(key[i]);
  const size_t n = OracleSequenceLength(key, i);
  const bool escaped =
      n == 0 || b < 0x20 || b == 0x7F || b == '/' || b == '%' || b == '@';
  ASSERT_GT(prefix_len + (escaped ? 3 : n), kMaxShownNameBytes - 18);
  // A listed version name fits NAME_MAX.
  ASSERT_LE(VersionName(shown, INT64_MAX).size(), kMaxFileNameBytes);
}

TEST(NamesTest, LongAsciiKey) {
  const std::string key(300, 'a');
  const std::string shown = ShownName(key);
  EXPECT_EQ(shown, std::string(216, 'a') + "%~" + HashHex(key));
  EXPECT_EQ(shown.size(), kMaxShownNameBytes);
  ExpectGoodShownName(key);
  EXPECT_EQ(VersionName(shown, INT64_MAX).size(), 254u);
}

TEST(NamesTest, LongKeysNeverCutInsideEscapesOrSequences) {
  // '/' is 3 bytes encoded: 216 = 72 * 3 fits exactly; with one 'a' in
  // front, 71 escapes fit (214 bytes) and the 72nd would be cut.
  EXPECT_EQ(ShownName(std::string(300, '/')).size(), 216u + 18);
  const std::string slashes = "a" + std::string(300, '/');
  EXPECT_EQ(ShownName(slashes).size(), 214u + 18);
  ExpectGoodShownName(slashes);
  const std::string slashes2 = "ab" + std::string(300, '/');
  EXPECT_EQ(ShownName(slashes2).size(), 215u + 18);
  ExpectGoodShownName(slashes2);
  // 4-byte sequences: 1 + 53 * 4 = 213 bytes, the 54th would be cut.
  std::string emoji = "a";
  for (int i = 0; i < 100; ++i) emoji += "\xF0\x9F\x98\x80";
  EXPECT_EQ(ShownName(emoji).size(), 213u + 18);
  ExpectGoodShownName(emoji);
  std::string euro = "ab";
  for (int i = 0; i < 100; ++i) euro += "\xE2\x82\xAC";
  ExpectGoodShownName(euro);
  std::string invalid;
  for (int i = 0; i < 100; ++i) invalid += "\xC0\xE2\x82";
  ExpectGoodShownName(invalid);
}

TEST(NamesTest, EncodingOf234BytesIsNotHashed) {
  const std::string k234(234, 'b');
  EXPECT_EQ(ShownName(k234), k234);
  const std::string k235(235, 'b');
  EXPECT_EQ(ShownName(k235).size(), 234u);
  EXPECT_NE(ShownName(k235).find("%~"), std::string::npos);
  // 78 escapes are 234 bytes.
  EXPECT_EQ(ShownName(std::string(78, '%')), EncodeName(std::string(78, '%')));
  EXPECT_NE(ShownName(std::string(79, '%')).find("%~"), std::string::npos);
}

TEST(NamesTest, RandomLongKeys) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 3000; ++i) {
    std::string key = RandomKey(&rng, 600);
    ExpectGoodShownName(key);
    if (HasFatalFailure()) return;
  }
}

TEST(NamesTest, SamePrefixDifferentNames) {
  const std::string common(400, 'k');
  const std::string a = common + "a", b = common + "b";
  EXPECT_NE(ShownName(a), ShownName(b));
  ParsedName pa, pb;
  ASSERT_TRUE(ParseName(ShownName(a), &pa).ok());
  ASSERT_TRUE(ParseName(ShownName(b), &pb).ok());
  EXPECT_EQ(pa.key, pb.key);  // same prefix, so the caller scans both
  EXPECT_TRUE(HashedNameMatches(pa, a));
  EXPECT_FALSE(HashedNameMatches(pa, b));
  EXPECT_TRUE(HashedNameMatches(pb, b));
  EXPECT_FALSE(HashedNameMatches(pb, a));
}

TEST(NamesTest, HashedNameMatchIsExact) {
  const std::string key(300, 'z');
  const std::string hash = HashHex(key);
  // The right hash with a prefix shorter than ShownName's: well formed,
  // but it is not the key's name.
  ParsedName p;
  ASSERT_TRUE(ParseName(std::string(200, 'z') + "%~" + hash, &p).ok());
  EXPECT_TRUE(p.hashed);
  EXPECT_FALSE(HashedNameMatches(p, key));
  // A wrong hash.
  ASSERT_TRUE(ParseName(std::string(216, 'z') + "%~0123456789abcdef", &p).ok());
  EXPECT_FALSE(HashedNameMatches(p, key));
  // A short key never matches a hashed name.
  ASSERT_TRUE(ParseName("zz%~" + HashHex("zz"), &p).ok());
  EXPECT_FALSE(HashedNameMatches(p, "zz"));
  // An unhashed name matches its key only.
  ASSERT_TRUE(ParseName("zz", &p).ok());
  EXPECT_TRUE(HashedNameMatches(p, "zz"));
  EXPECT_FALSE(HashedNameMatches(p, "zzz"));
}

TEST(NamesTest, MalformedHashedNames) {
  const std::string prefix(216, 'q');
  ParsedName p;
  EXPECT_EQ(ParseName(prefix + "%~0123456789ABCDEF", &p).err, EINVAL);
  EXPECT_EQ(ParseName(prefix + "%~0123456789abcde", &p).err, EINVAL);
  EXPECT_EQ(ParseName(prefix + "%~0123456789abcdeg", &p).err, EINVAL);
  EXPECT_EQ(ParseName("ab%~cd" + std::string(16, '0'), &p).err, EINVAL);
  EXPECT_EQ(ParseName("%~" + std::string(16, '0'), &p).err, EINVAL);  // ""
  EXPECT_EQ(ParseName("a%41%~" + std::string(16, '0'), &p).err, EINVAL);
  EXPECT_EQ(ParseName("a@%~" + std::string(16, '0'), &p).err, EINVAL);
  ASSERT_TRUE(ParseName("ab%~" + std::string(16, 'f'), &p).ok());
  EXPECT_EQ(p.hash, UINT64_MAX);
  EXPECT_EQ(p.key, "ab");
}

TEST(NamesTest, TooLongNames) {
  ParsedName p;
  EXPECT_TRUE(ParseName(std::string(234, 'a'), &p).ok());
  FsError e = ParseName(std::string(235, 'a'), &p);
  EXPECT_EQ(e.err, ENAMETOOLONG) << e.ToString();
  EXPECT_EQ(ParseName(std::string(255, 'a'), &p).err, ENAMETOOLONG);
  EXPECT_EQ(ParseName(std::string(256, 'a'), &p).err, ENAMETOOLONG);
  EXPECT_EQ(ParseName(std::string(235, '@'), &p).err, ENAMETOOLONG);
  EXPECT_EQ(ParseName(std::string(217, 'a') + "%~" + HashHex("x"), &p).err,
            ENAMETOOLONG);
}

// ---------------------------------------------------------------------------
// Version suffixes.

TEST(NamesTest, SplitVersionSuffix) {
  std::string_view base;
  std::optional<int64_t> t;
  ASSERT_TRUE(SplitVersionSuffix("q", &base, &t).ok());
  EXPECT_EQ(base, "q");
  EXPECT_FALSE(t.has_value());
  ASSERT_TRUE(SplitVersionSuffix("q@15", &base, &t).ok());
  EXPECT_EQ(base, "q");
  EXPECT_EQ(t, 15);
  ASSERT_TRUE(SplitVersionSuffix("%40%25@0", &base, &t).ok());
  EXPECT_EQ(base, "%40%25");
  EXPECT_EQ(t, 0);
  ASSERT_TRUE(SplitVersionSuffix("col@2026-11-21T10:00:00.5Z", &base, &t).ok());
  EXPECT_EQ(base, "col");
  EXPECT_EQ(t, 1795255200500000);
  ASSERT_TRUE(SplitVersionSuffix("%@7", &base, &t).ok());
  EXPECT_EQ(base, "%");
  EXPECT_EQ(t, 7);
  ASSERT_TRUE(SplitVersionSuffix("q@9223372036854775807", &base, &t).ok());
  EXPECT_EQ(t, INT64_MAX);
  for (const char* bad : {"q@", "q@abc", "q@1@2", "q@-1", "q@ 1", "q@1.5",
                          "q@9223372036854775808", "q@2026-13-01T00:00:00Z"}) {
    FsError e = SplitVersionSuffix(bad, &base, &t);
    EXPECT_EQ(e.err, EINVAL) << bad;
    EXPECT_NE(e.reason.find(bad), std::string::npos) << e.reason;
  }
}

TEST(NamesTest, VersionName) {
  EXPECT_EQ(VersionName("q", 15), "q@15");
  EXPECT_EQ(VersionName("%", 0), "%@0");
  EXPECT_EQ(VersionName("a%2Fb", INT64_MAX), "a%2Fb@9223372036854775807");
  std::string_view base;
  std::optional<int64_t> t;
  const std::string name = VersionName(ShownName("x/y"), 1234567);
  ASSERT_TRUE(SplitVersionSuffix(name, &base, &t).ok());
  EXPECT_EQ(base, "x%2Fy");
  EXPECT_EQ(t, 1234567);
}

// ---------------------------------------------------------------------------
// Tables and families.

TEST(NamesTest, TableNames) {
  for (const char* good : {"t", "T1", "_x", "9lives", "a-b.c_d"}) {
    EXPECT_TRUE(ParseTableName(good).ok()) << good;
  }
  EXPECT_TRUE(ParseTableName(std::string(50, 't')).ok());
  for (const char* bad : {"", "-x", ".schema", ".at", "a/b", "a b", "a@b",
                          "caf\xC3\xA9", "%41"}) {
    FsError e = ParseTableName(bad);
    EXPECT_EQ(e.err, EINVAL) << bad;
    EXPECT_FALSE(e.reason.empty());
  }
  EXPECT_EQ(ParseTableName(std::string(51, 't')).err, EINVAL);
  EXPECT_EQ(ParseTableName(std::string(255, 't')).err, EINVAL);
  EXPECT_EQ(ParseTableName(std::string(256, 't')).err, ENAMETOOLONG);
}

TEST(NamesTest, FamilyNames) {
  EXPECT_TRUE(ParseFamilyName("contents").ok());
  EXPECT_TRUE(ParseFamilyName(std::string(64, 'f')).ok());
  EXPECT_EQ(ParseFamilyName(std::string(65, 'f')).err, EINVAL);
  EXPECT_EQ(ParseFamilyName("").err, EINVAL);
  EXPECT_EQ(ParseFamilyName(".x").err, EINVAL);
  EXPECT_EQ(ParseFamilyName("a:b").err, EINVAL);
  EXPECT_EQ(ParseFamilyName(std::string(300, 'f')).err, ENAMETOOLONG);
}

}  // namespace
}  // namespace tabletfs::fs
