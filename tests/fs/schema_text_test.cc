#include "fs/schema_text.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

namespace tabletfs::fs {
namespace {

GcPolicy Policy(std::string_view text) {
  Result<GcPolicy> p = GcPolicy::Parse(text);
  EXPECT_TRUE(p.ok()) << text << ": " << p.status().ToString();
  return p.ok() ? *p : GcPolicy();
}

FamilySettings Owned() {
  FamilySettings s;
  s.owner_uid = 1000;
  s.owner_gid = 100;
  s.mode = 0640;
  return s;
}

TEST(SchemaTextTest, FormatDefaults) {
  EXPECT_EQ(FormatFamilySettings(FamilySettings()),
            "gcpolicy = never\ncompression = lz4\n");
}

TEST(SchemaTextTest, FormatShowsNoOwnerOrMode) {
  FamilySettings s = Owned();
  s.compression = Compression::kNone;
  s.gc_policy = GcPolicy::MaxVersions(3);
  EXPECT_EQ(FormatFamilySettings(s),
            "gcpolicy = " + s.gc_policy.ToString() + "\ncompression = none\n");
}

TEST(SchemaTextTest, RoundTrip) {
  for (const char* policy :
       {"never", "maxversions=1", "maxversions=3", "maxage=7d", "maxage=1h30m",
        "maxage=250ms", "maxversions=3 or maxage=7d",
        "maxversions=3 and maxage=7d",
        "maxversions=1 or maxversions=2 and maxage=1d",
        "(maxversions=1 or maxversions=2) and maxage=1d"}) {
    for (Compression c : {Compression::kLz4, Compression::kNone}) {
      FamilySettings s;
      s.gc_policy = Policy(policy);
      s.compression = c;
      const std::string text = FormatFamilySettings(s);
      FamilySettings out;
      FsError e = ParseFamilySettings(text, Owned(), &out);
      ASSERT_TRUE(e.ok()) << text << e.ToString();
      EXPECT_EQ(out.gc_policy, s.gc_policy) << text;
      EXPECT_EQ(out.compression, c) << text;
      // Owner and mode come from `current`.
      EXPECT_EQ(out.owner_uid, 1000u);
      EXPECT_EQ(out.owner_gid, 100u);
      EXPECT_EQ(out.mode, 0640u);
      EXPECT_EQ(FormatFamilySettings(out), text);
    }
  }
}

TEST(SchemaTextTest, AbsentKeysKeepCurrent) {
  FamilySettings current = Owned();
  current.gc_policy = Policy("maxversions=5");
  current.compression = Compression::kLz4;
  FamilySettings out;
  ASSERT_TRUE(ParseFamilySettings("compression = none\n", current, &out).ok());
  EXPECT_EQ(out.gc_policy, current.gc_policy);
  EXPECT_EQ(out.compression, Compression::kNone);
  ASSERT_TRUE(ParseFamilySettings("gcpolicy = maxage=1d", current, &out).ok());
  EXPECT_EQ(out.gc_policy, Policy("maxage=1d"));
  EXPECT_EQ(out.compression, Compression::kLz4);
  ASSERT_TRUE(ParseFamilySettings("", current, &out).ok());
  EXPECT_EQ(out, current);
}

TEST(SchemaTextTest, Layout) {
  FamilySettings out;
  const std::string text =
      "# settings of family cf\n"
      "\n"
      "   \t\n"
      "  # indented comment\n"
      "\tgcpolicy\t=   maxversions=2   \r\n"
      "compression=none\r\n"
      "\n";
  FsError e = ParseFamilySettings(text, FamilySettings(), &out);
  ASSERT_TRUE(e.ok()) << e.ToString();
  EXPECT_EQ(out.gc_policy, Policy("maxversions=2"));
  EXPECT_EQ(out.compression, Compression::kNone);
}

TEST(SchemaTextTest, LastLineWins) {
  FamilySettings out;
  // What `echo 'gcpolicy = maxage=7d' >> .schema/t/f` produces.
  const std::string text =
      FormatFamilySettings(FamilySettings()) + "gcpolicy = maxage=7d\n";
  ASSERT_TRUE(ParseFamilySettings(text, FamilySettings(), &out).ok());
  EXPECT_EQ(out.gc_policy, Policy("maxage=7d"));
}

TEST(SchemaTextTest, OutMayAliasCurrent) {
  FamilySettings s = Owned();
  ASSERT_TRUE(ParseFamilySettings("compression = none", s, &s).ok());
  EXPECT_EQ(s.compression, Compression::kNone);
  EXPECT_EQ(s.owner_uid, 1000u);
}

struct BadCase {
  const char* text;
  const char* reason_part;  // the reason must contain this
};

TEST(SchemaTextTest, InvalidText) {
  const BadCase cases[] = {
      {"gcpolicy = bogus", "line 1: bad gcpolicy 'bogus'"},
      {"gcpolicy = maxversions=", "line 1: bad gcpolicy"},
      {"gcpolicy = maxage=7x", "line 1: bad gcpolicy"},
      {"gcpolicy = maxversions=3 or", "line 1: bad gcpolicy"},
      {"gcpolicy =", "line 1: gcpolicy has no value"},
      {"gcpolicy", "line 1: expected 'key = value'"},
      {"compression", "line 1: expected 'key = value'"},
      {"compression = zstd", "line 1: bad compression 'zstd'"},
      {"compression = LZ4", "line 1: bad compression 'LZ4'"},
      {"compression =", "line 1: bad compression ''"},
      {"compression = lz4 none", "line 1: bad compression"},
      {"= never", "line 1: no key"},
      {"foo = bar", "line 1: unknown key 'foo'"},
      {"mode = 0644", "line 1: unknown key 'mode'"},
      {"owner = root", "line 1: unknown key 'owner'"},
      {"GCPOLICY = never", "line 1: unknown key 'GCPOLICY'"},
      {"gc policy = never", "line 1: unknown key 'gc policy'"},
      {"gcpolicy = never\n\n# c\ncompression: lz4\n", "line 4: expected"},
      {"gcpolicy = never\ncompression = lz4\nx = 1", "line 3: unknown key"},
  };
  for (const BadCase& c : cases) {
    FamilySettings out = Owned();
    out.gc_policy = Policy("maxversions=9");
    const FamilySettings before = out;
    FsError e = ParseFamilySettings(c.text, FamilySettings(), &out);
    EXPECT_EQ(e.err, EINVAL) << c.text;
    EXPECT_NE(e.reason.find(c.reason_part), std::string::npos)
        << c.text << " -> " << e.reason;
    EXPECT_EQ(out, before) << c.text;  // nothing changes on a refusal
  }
}

TEST(SchemaTextTest, ValidateSettingsLine) {
  for (const char* good : {"gcpolicy = never", "gcpolicy = maxversions=3\n",
                           "compression = none\n", "", "\n", "  \t", "# x",
                           "# foo = bar\n", "compression=lz4\r\n"}) {
    FsError e = ValidateSettingsLine(good);
    EXPECT_TRUE(e.ok()) << good << e.ToString();
  }
  for (const char* bad :
       {"gcpolicy = bogus", "foo = 1\n", "gcpolicy", "compression = gzip",
        "a\nb", "gcpolicy = never\n\n"}) {
    FsError e = ValidateSettingsLine(bad);
    EXPECT_EQ(e.err, EINVAL) << bad;
    EXPECT_FALSE(e.reason.empty());
  }
  EXPECT_EQ(ValidateSettingsLine("foo = 1").reason.find("line"),
            std::string::npos);
}

}  // namespace
}  // namespace tabletfs::fs
