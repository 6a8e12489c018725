#include "fs/timestamp.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>

namespace tabletfs::fs {
namespace {

constexpr int64_t k20261121 = 1795255200LL * 1000000;  // 2026-11-21T10:00:00Z
// 9999-12-31T23:59:59.999999Z, the last ISO-8601 time with 4 year digits.
constexpr int64_t kLastIso = 253402300799LL * 1000000 + 999999;

int64_t Parse(std::string_view text) {
  int64_t micros = -42;
  FsError e = ParseTimestamp(text, &micros);
  EXPECT_TRUE(e.ok()) << text << ": " << e.ToString();
  return micros;
}

void ExpectInvalid(std::string_view text) {
  int64_t micros = -42;
  FsError e = ParseTimestamp(text, &micros);
  EXPECT_EQ(e.err, EINVAL) << "'" << text << "' parsed as " << micros;
  EXPECT_NE(e.reason.find("expected"), std::string::npos) << e.reason;
  EXPECT_EQ(micros, -42) << text;
}

TEST(TimestampTest, DecimalMicros) {
  EXPECT_EQ(Parse("0"), 0);
  EXPECT_EQ(Parse("15"), 15);
  EXPECT_EQ(Parse("0015"), 15);
  EXPECT_EQ(Parse("2026"), 2026);  // digits only: micros, not a year
  EXPECT_EQ(Parse("1795255200000000"), k20261121);
  EXPECT_EQ(Parse("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(Parse("0009223372036854775807"), INT64_MAX);
}

TEST(TimestampTest, DecimalInvalid) {
  for (const char* bad :
       {"", "abc", "-1", "+1", " 1", "1 ", "1.5", "1e6", "0x10", "12a",
        "9223372036854775808", "18446744073709551616",
        "99999999999999999999999999"}) {
    ExpectInvalid(bad);
  }
}

TEST(TimestampTest, Iso8601) {
  EXPECT_EQ(Parse("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(Parse("1970-01-01T00:00:00.000001Z"), 1);
  EXPECT_EQ(Parse("2026-11-21T10:00:00Z"), k20261121);
  EXPECT_EQ(Parse("2026-11-21T10:00:00+00:00"), k20261121);
  EXPECT_EQ(Parse("2026-11-21T10:00:00.5Z"), k20261121 + 500000);
  EXPECT_EQ(Parse("2026-11-21T10:00:00.05Z"), k20261121 + 50000);
  EXPECT_EQ(Parse("2026-11-21T10:00:00.123456Z"), k20261121 + 123456);
  EXPECT_EQ(Parse("2026-11-21T10:00:00.000000Z"), k20261121);
  EXPECT_EQ(Parse("2026-11-21T10:00:00.1+00:00"), k20261121 + 100000);
  EXPECT_EQ(Parse("2026-11-21T10:01:02Z"), k20261121 + 62000000);
  EXPECT_EQ(Parse("2000-02-29T00:00:00Z"), 951782400LL * 1000000);
  EXPECT_EQ(Parse("2024-02-29T23:59:59Z"), 1709251199LL * 1000000);
  EXPECT_EQ(Parse("2024-12-31T00:00:00Z"), 1735603200LL * 1000000);
  EXPECT_EQ(Parse("9999-12-31T23:59:59.999999Z"), kLastIso);
}

TEST(TimestampTest, Iso8601Invalid) {
  for (const char* bad : {
           "2026-13-01T00:00:00Z",       // month 13
           "2026-00-01T00:00:00Z",       // month 0
           "2026-11-00T00:00:00Z",       // day 0
           "2026-11-31T00:00:00Z",       // November has 30 days
           "2026-02-29T00:00:00Z",       // not a leap year
           "2100-02-29T00:00:00Z",       // not a leap year either
           "2026-11-21T24:00:00Z",       // hour 24
           "2026-11-21T10:60:00Z",       // minute 60
           "2026-11-21T10:00:60Z",       // no leap seconds
           "2026-11-21 10:00:00",        // space, no zone
           "2026-11-21 10:00:00Z",       // space
           "2026-11-21t10:00:00Z",       // lower-case t
           "2026-11-21T10:00:00z",       // lower-case z
           "2026-11-21T10:00:00",        // no zone
           "2026-11-21T10:00:00+01:00",  // not UTC
           "2026-11-21T10:00:00-00:00",  // not the accepted spelling
           "2026-11-21T10:00:00+0000",
           "2026-11-21T10:00:00UTC",
           "2026-11-21T10:00:00ZZ",
           "2026-11-21T10:00:00.Z",         // no fraction digits
           "2026-11-21T10:00:00.1234567Z",  // finer than a microsecond
           "2026-11-21T10:00:00,5Z",        // comma fraction
           "2026-11-21T10:00Z",             // no seconds
           "2026-11-21T10Z",
           "2026-11-21",  // date only
           "2026-11-21T",
           "2026-1-21T10:00:00Z",  // one-digit month
           "26-11-21T10:00:00Z",   // two-digit year
           "+2026-11-21T10:00:00Z",
           "20261121T100000Z",      // basic format
           "1969-12-31T23:59:59Z",  // before the epoch
           "0000-01-01T00:00:00Z",
           "2026-11-21T10:00:00Z ",  // trailing space
           " 2026-11-21T10:00:00Z",
       }) {
    ExpectInvalid(bad);
  }
}

TEST(TimestampTest, Format) {
  EXPECT_EQ(FormatIso8601(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatIso8601(1), "1970-01-01T00:00:00.000001Z");
  EXPECT_EQ(FormatIso8601(k20261121), "2026-11-21T10:00:00Z");
  EXPECT_EQ(FormatIso8601(k20261121 + 123456), "2026-11-21T10:00:00.123456Z");
  EXPECT_EQ(FormatIso8601(k20261121 + 500000), "2026-11-21T10:00:00.500000Z");
  EXPECT_EQ(FormatIso8601(kLastIso), "9999-12-31T23:59:59.999999Z");
  EXPECT_EQ(FormatIso8601(-1), "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(FormatIso8601(-1000000), "1969-12-31T23:59:59Z");
  EXPECT_EQ(FormatIso8601(951782400LL * 1000000), "2000-02-29T00:00:00Z");
  // The extremes format without overflow.
  EXPECT_EQ(FormatIso8601(INT64_MAX), "294247-01-10T04:00:54.775807Z");
  EXPECT_EQ(FormatIso8601(INT64_MIN), "-290308-12-21T19:59:05.224192Z");
}

// A fresh seed per run, printed; TABLETFS_TEST_SEED=N replays a failure.
uint64_t TestSeed() {
  const char* env = std::getenv("TABLETFS_TEST_SEED");
  const uint64_t seed =
      env != nullptr ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::printf("%s seed: %llu (replay with TABLETFS_TEST_SEED=%llu)\n",
              "timestamp_test", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  return seed;
}

TEST(TimestampTest, RandomRoundTripsAgainstGmtime) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> dist(0, kLastIso);
  for (int i = 0; i < 20000; ++i) {
    int64_t micros = dist(rng);
    if (i % 4 == 0) micros -= micros % 1000000;  // whole seconds too
    const std::string text = FormatIso8601(micros);
    int64_t back = -1;
    FsError e = ParseTimestamp(text, &back);
    ASSERT_TRUE(e.ok()) << text << ": " << e.ToString();
    ASSERT_EQ(back, micros) << text;
    // The calendar agrees with the C library's.
    const time_t seconds = static_cast<time_t>(micros / 1000000);
    struct tm tm;
    ASSERT_NE(gmtime_r(&seconds, &tm), nullptr);
    char expected[64];
    std::strftime(expected, sizeof(expected), "%Y-%m-%dT%H:%M:%S", &tm);
    ASSERT_EQ(text.substr(0, 19), expected) << micros;
  }
}

TEST(TimestampTest, Granularity) {
  // Microsecond stores: every T is a version of its own.
  EXPECT_EQ(FloorToGranularity(1700000000123456, 1), 1700000000123456);
  EXPECT_EQ(NextAbove(1700000000123456, 1), 1700000000123457);
  // Millisecond stores (a remote Bigtable): T rounds down, always the same.
  EXPECT_EQ(FloorToGranularity(1700000000123456, 1000), 1700000000123000);
  EXPECT_EQ(FloorToGranularity(1700000000123999, 1000), 1700000000123000);
  EXPECT_EQ(FloorToGranularity(1700000000123000, 1000), 1700000000123000);
  EXPECT_EQ(FloorToGranularity(0, 1000), 0);
  EXPECT_EQ(FloorToGranularity(999, 1000), 0);
  // Just above a version: the next whole millisecond.
  EXPECT_EQ(NextAbove(1700000000123000, 1000), 1700000000124000);
  EXPECT_EQ(NextAbove(1700000000123456, 1000), 1700000000124000);
}

}  // namespace
}  // namespace tabletfs::fs
