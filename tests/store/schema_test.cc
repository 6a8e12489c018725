#include "store/schema.h"

#include <gtest/gtest.h>

#include "store/row_mutation.h"

namespace tabletfs {
namespace {

constexpr int64_t kSecond = 1000 * 1000;
constexpr int64_t kDay = 86400 * kSecond;

TEST(DurationTest, ParsesUnitsAndSequences) {
  EXPECT_EQ(*ParseDurationMicros("30s"), 30 * kSecond);
  EXPECT_EQ(*ParseDurationMicros("12h"), 12 * 3600 * kSecond);
  EXPECT_EQ(*ParseDurationMicros("7d"), 7 * kDay);
  EXPECT_EQ(*ParseDurationMicros("1h30m"), 90 * 60 * kSecond);
  EXPECT_EQ(*ParseDurationMicros("250ms"), 250 * 1000);
  EXPECT_EQ(*ParseDurationMicros("5us"), 5);
}

TEST(DurationTest, RejectsMalformed) {
  for (const char *bad : {"", "s", "30", "30x", "-5s", "1.5h", "0s", "h1",
                          "99999999999999999999d"}) {
    Result<int64_t> r = ParseDurationMicros(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_TRUE(r.status().IsInvalidArgument()) << bad;
    }
  }
}

TEST(DurationTest, FormatRoundTrips) {
  for (int64_t d : {int64_t{1}, int64_t{1000}, 30 * kSecond, 7 * kDay,
                    90 * 60 * kSecond, kDay + 5 * kSecond + 3}) {
    std::string s = FormatDurationMicros(d);
    EXPECT_EQ(*ParseDurationMicros(s), d) << s;
  }
  EXPECT_EQ(FormatDurationMicros(7 * kDay), "7d");
  EXPECT_EQ(FormatDurationMicros(90 * 60 * kSecond), "1h30m");
}

TEST(GcPolicyTest, ParsesCbtExpressions) {
  EXPECT_EQ(*GcPolicy::Parse("never"), GcPolicy::Never());
  EXPECT_EQ(*GcPolicy::Parse("maxversions=3"), GcPolicy::MaxVersions(3));
  EXPECT_EQ(*GcPolicy::Parse("maxage=7d"), GcPolicy::MaxAge(7 * kDay));
  EXPECT_EQ(*GcPolicy::Parse("maxage=1d and maxversions=2"),
            GcPolicy::And(GcPolicy::MaxAge(kDay), GcPolicy::MaxVersions(2)));
  EXPECT_EQ(*GcPolicy::Parse("maxversions=3 or maxage=7d"),
            GcPolicy::Or(GcPolicy::MaxVersions(3), GcPolicy::MaxAge(7 * kDay)));
  // "and" binds tighter than "or".
  EXPECT_EQ(*GcPolicy::Parse("maxversions=1 or maxage=1d and maxversions=5"),
            GcPolicy::Or(GcPolicy::MaxVersions(1),
                         GcPolicy::And(GcPolicy::MaxAge(kDay),
                                       GcPolicy::MaxVersions(5))));
  EXPECT_EQ(*GcPolicy::Parse("(maxversions=1 or maxage=1d) and maxversions=5"),
            GcPolicy::And(
                GcPolicy::Or(GcPolicy::MaxVersions(1), GcPolicy::MaxAge(kDay)),
                GcPolicy::MaxVersions(5)));
  EXPECT_EQ(
      *GcPolicy::Parse("  MAXVERSIONS=2  AND  maxage=30s "),
      GcPolicy::And(GcPolicy::MaxVersions(2), GcPolicy::MaxAge(30 * kSecond)));
  // cbt's operators, with or without spaces.
  EXPECT_EQ(*GcPolicy::Parse("maxage=1d||maxversions=3"),
            GcPolicy::Or(GcPolicy::MaxAge(kDay), GcPolicy::MaxVersions(3)));
  EXPECT_EQ(*GcPolicy::Parse("maxage=1d && (maxversions=3 || never)"),
            GcPolicy::And(GcPolicy::MaxAge(kDay),
                          GcPolicy::Or(GcPolicy::MaxVersions(3),
                                       GcPolicy::Never())));
}

TEST(GcPolicyTest, RejectsBadExpressions) {
  for (const char *bad :
       {"", "sometimes", "maxversions=", "maxversions=0", "maxversions=-1",
        "maxversions=x", "maxage=", "maxage=5", "maxage=1d and",
        "and maxage=1d", "maxage=1d xor maxversions=1", "(maxage=1d",
        "maxage=1d)", "maxversions=1 maxage=1d", "maxage=1d |",
        "maxage=1d | maxversions=1", "&& maxage=1d", "maxage=1d &&& never"}) {
    Result<GcPolicy> r = GcPolicy::Parse(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_TRUE(r.status().IsInvalidArgument()) << bad;
      EXPECT_NE(r.status().message().find("gc policy"), std::string::npos);
    }
  }
}

// Found by tests/fuzz/schema_fuzz: 2,000 nested parentheses overflowed the
// stack of the recursive parser.
TEST(GcPolicyTest, BoundsNestingAndRuleCount) {
  std::string deep(kMaxGcPolicyNesting, '(');
  deep += "never";
  deep += std::string(kMaxGcPolicyNesting, ')');
  EXPECT_TRUE(GcPolicy::Parse(deep).ok());
  std::string deeper = "(" + deep + ")";
  Result<GcPolicy> r = GcPolicy::Parse(deeper);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nested"), std::string::npos);
  EXPECT_FALSE(GcPolicy::Parse(std::string(2000, '(')).ok());

  std::string chain = "maxversions=1";
  for (int i = 1; i < kMaxGcPolicyRules; ++i) chain += " or maxversions=1";
  EXPECT_TRUE(GcPolicy::Parse(chain).ok());
  r = GcPolicy::Parse(chain + " or never");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("rules"), std::string::npos);
}

TEST(GcPolicyTest, ToStringParsesBackToTheSameTree) {
  GcPolicy a = GcPolicy::MaxVersions(1), b = GcPolicy::MaxAge(kDay),
           c = GcPolicy::MaxVersions(7);
  std::vector<GcPolicy> cases = {
      GcPolicy::Never(),
      a,
      GcPolicy::And(a, b),
      GcPolicy::Or(a, b),
      GcPolicy::And(a, GcPolicy::And(b, c)),
      GcPolicy::And(GcPolicy::And(a, b), c),
      GcPolicy::Or(a, GcPolicy::Or(b, c)),
      GcPolicy::Or(GcPolicy::And(a, b), c),
      GcPolicy::And(GcPolicy::Or(a, b), c),
      GcPolicy::And(a, GcPolicy::Or(b, c)),
      GcPolicy::Or(a, GcPolicy::And(b, c)),
  };
  for (const GcPolicy &p : cases) {
    Result<GcPolicy> back = GcPolicy::Parse(p.ToString());
    ASSERT_TRUE(back.ok()) << p.ToString();
    EXPECT_EQ(*back, p) << p.ToString();
  }
  EXPECT_EQ(GcPolicy::Or(a, b).ToString(), "maxversions=1 or maxage=1d");
}

TEST(GcPolicyTest, CollectsByRankAgeAndCombination) {
  GcPolicy v2 = GcPolicy::MaxVersions(2);
  EXPECT_FALSE(v2.Collects(0, 0));
  EXPECT_FALSE(v2.Collects(1, 0));
  EXPECT_TRUE(v2.Collects(2, 0));

  GcPolicy age = GcPolicy::MaxAge(kDay);
  EXPECT_FALSE(age.Collects(5, kDay));
  EXPECT_TRUE(age.Collects(0, kDay + 1));

  GcPolicy both = GcPolicy::And(v2, age);  // collect old AND beyond 2
  EXPECT_FALSE(both.Collects(3, 0));
  EXPECT_FALSE(both.Collects(0, 2 * kDay));
  EXPECT_TRUE(both.Collects(3, 2 * kDay));

  GcPolicy either = GcPolicy::Or(v2, age);
  EXPECT_TRUE(either.Collects(3, 0));
  EXPECT_TRUE(either.Collects(0, 2 * kDay));
  EXPECT_FALSE(either.Collects(1, kDay));

  EXPECT_FALSE(GcPolicy::Never().Collects(1000000, 1000 * kDay));
  EXPECT_TRUE(either.DependsOnTime());
  EXPECT_FALSE(v2.DependsOnTime());
}

TEST(NameTest, TableAndFamilyNames) {
  EXPECT_TRUE(ValidateTableName("webtable").ok());
  EXPECT_TRUE(ValidateTableName("_a-b.c9").ok());
  EXPECT_TRUE(ValidateTableName(std::string(50, 't')).ok());
  EXPECT_TRUE(ValidateTableName(std::string(51, 't')).IsInvalidArgument());
  EXPECT_TRUE(ValidateTableName("").IsInvalidArgument());
  EXPECT_TRUE(ValidateTableName("-a").IsInvalidArgument());
  EXPECT_TRUE(ValidateTableName(".hidden").IsInvalidArgument());
  EXPECT_TRUE(ValidateTableName("a/b").IsInvalidArgument());
  EXPECT_TRUE(ValidateTableName("a b").IsInvalidArgument());
  EXPECT_TRUE(ValidateFamilyName(std::string(64, 'f')).ok());
  EXPECT_TRUE(ValidateFamilyName(std::string(65, 'f')).IsInvalidArgument());
  EXPECT_TRUE(ValidateFamilyName("anchor").ok());
  EXPECT_TRUE(ValidateFamilyName("an:chor").IsInvalidArgument());
}

TEST(NameTest, RowKeys) {
  EXPECT_TRUE(ValidateRowKey("r").ok());
  EXPECT_TRUE(ValidateRowKey(std::string(65536, 'r')).ok());
  EXPECT_TRUE(ValidateRowKey("").IsInvalidArgument());
  EXPECT_TRUE(ValidateRowKey(std::string(65537, 'r')).IsInvalidArgument());
  EXPECT_TRUE(ValidateRowKey(std::string("\0\xff", 2)).ok());
}

TEST(RowMutationTest, KeepsOperationsInOrder) {
  RowMutation m("com.cnn.www");
  EXPECT_TRUE(m.empty());
  m.DeleteCell("contents", "")
      .SetCell("contents", "", 6, "<html>v6")
      .DeleteRow();
  ASSERT_EQ(m.ops().size(), 3u);
  EXPECT_EQ(m.ops()[0].type, RowMutation::OpType::kDeleteCell);
  EXPECT_EQ(m.ops()[1].type, RowMutation::OpType::kSetCell);
  EXPECT_EQ(m.ops()[1].timestamp, 6);
  EXPECT_EQ(m.ops()[1].value, "<html>v6");
  EXPECT_EQ(m.ops()[2].type, RowMutation::OpType::kDeleteRow);
  RowMutation s("r");
  s.SetCell("f", "q", "v");
  EXPECT_EQ(s.ops()[0].timestamp, kServerTimestamp);
}

TEST(StatusTest, CarriesCodeAndContext) {
  Status s = Status::Corruption("bad block", "offset 4096");
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_EQ(s.ToString(), "Corruption: bad block: offset 4096");
  EXPECT_EQ(s.WithContext("000012.sst").ToString(),
            "Corruption: 000012.sst: bad block: offset 4096");
  EXPECT_TRUE(Status::OK().WithContext("x").ok());
  Result<int> r(Status::NotFound("nope"));
  EXPECT_FALSE(r.ok());
  Result<int> v(7);
  EXPECT_EQ(*v, 7);
}

}  // namespace
}  // namespace tabletfs
