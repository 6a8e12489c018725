#include "store/table/bloom_filter.h"

#include <gtest/gtest.h>

#include <string>

namespace tabletfs {
namespace {

std::string Key(int i) { return "row" + std::to_string(i) + "/family:q"; }

TEST(BloomFilterTest, EmptyFilterMatchesNothing) {
  BloomFilterBuilder builder(10);
  std::string filter = builder.Finish();
  EXPECT_FALSE(BloomFilterMayContain(filter, "hello"));
  EXPECT_FALSE(BloomFilterMayContain(filter, ""));
}

TEST(BloomFilterTest, MalformedFilterMatchesEverything) {
  EXPECT_TRUE(BloomFilterMayContain("", "hello"));
  EXPECT_TRUE(BloomFilterMayContain("x", "hello"));
  // A reserved k (> 30).
  EXPECT_TRUE(BloomFilterMayContain(std::string(8, '\0') + "\x40", "hello"));
}

TEST(BloomFilterTest, SmallFilter) {
  BloomFilterBuilder builder(10);
  builder.AddKey("hello");
  builder.AddKey("world");
  std::string filter = builder.Finish();
  EXPECT_TRUE(BloomFilterMayContain(filter, "hello"));
  EXPECT_TRUE(BloomFilterMayContain(filter, "world"));
  EXPECT_FALSE(BloomFilterMayContain(filter, "x"));
  EXPECT_FALSE(BloomFilterMayContain(filter, "foo"));
}

TEST(BloomFilterTest, DuplicatesCountOnce) {
  BloomFilterBuilder once(10), many(10);
  once.AddKey("row");
  for (int i = 0; i < 1000; ++i) many.AddKey(i % 2 ? "row" : "row");
  many.AddKey("other");
  many.AddKey("row");
  EXPECT_EQ(once.Finish().size(), many.Finish().size());
}

// No false negatives, and a false-positive rate under 2% at 10 bits/key,
// over filter sizes from tiny to large.
TEST(BloomFilterTest, FalsePositiveRate) {
  for (int n : {1, 10, 100, 1000, 10000, 100000}) {
    BloomFilterBuilder builder(10);
    for (int i = 0; i < n; ++i) builder.AddKey(Key(i));
    std::string filter = builder.Finish();
    EXPECT_LE(filter.size(), static_cast<size_t>(n) * 10 / 8 + 9) << n;
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(BloomFilterMayContain(filter, Key(i))) << n << " " << i;
    }
    const int probes = 100000;
    int false_positives = 0;
    for (int i = 0; i < probes; ++i) {
      if (BloomFilterMayContain(filter, Key(i + 1000000000))) ++false_positives;
    }
    double rate = static_cast<double>(false_positives) / probes;
    EXPECT_LT(rate, 0.02) << "n=" << n;
    if (n >= 1000) {
      std::printf("bloom n=%d bytes=%zu fp=%.3f%%\n", n, filter.size(),
                  rate * 100);
    }
  }
}

TEST(BloomFilterTest, FewerBitsMoreFalsePositives) {
  auto rate = [](int bits_per_key) {
    BloomFilterBuilder builder(bits_per_key);
    for (int i = 0; i < 10000; ++i) builder.AddKey(Key(i));
    std::string filter = builder.Finish();
    int fp = 0;
    for (int i = 0; i < 50000; ++i)
      fp += BloomFilterMayContain(filter, Key(-i - 1));
    return fp;
  };
  EXPECT_GT(rate(4), rate(10));
  EXPECT_GT(rate(10), rate(20));
}

}  // namespace
}  // namespace tabletfs
