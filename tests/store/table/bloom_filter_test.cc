#include "store/table/bloom_filter.h"

#include <gtest/gtest.h>

#include <string>

namespace tabletfs {
namespace {

std::string Key(int i) { return "row" + std::to_string(i) + "/family:q"; }

// Every test runs on both layouts: format-2 tables write the blocked one,
// and format-1 tables with the whole-table one must stay readable.
class BloomFilterTest : public ::testing::TestWithParam<BloomLayout> {
 protected:
  BloomLayout layout() const { return GetParam(); }
  bool MayContain(std::string_view filter, std::string_view key) const {
    return BloomFilterMayContain(filter, BloomKey(key), layout());
  }
};

INSTANTIATE_TEST_SUITE_P(Layouts, BloomFilterTest,
                         ::testing::Values(BloomLayout::kWholeTable,
                                           BloomLayout::kCacheLineBlocked),
                         [](const ::testing::TestParamInfo<BloomLayout>& info) {
                           return info.param == BloomLayout::kWholeTable
                                      ? "WholeTable"
                                      : "CacheLineBlocked";
                         });

TEST_P(BloomFilterTest, EmptyFilterMatchesNothing) {
  BloomFilterBuilder builder(10, layout());
  std::string filter = builder.Finish();
  EXPECT_FALSE(MayContain(filter, "hello"));
  EXPECT_FALSE(MayContain(filter, ""));
}

TEST_P(BloomFilterTest, MalformedFilterMatchesEverything) {
  EXPECT_TRUE(MayContain("", "hello"));
  EXPECT_TRUE(MayContain("x", "hello"));
  // A reserved k (> 30).
  EXPECT_TRUE(MayContain(std::string(64, '\0') + "\x40", "hello"));
}

TEST(BloomFilterBlockedTest, PartialBlockMatchesEverything) {
  // Not a whole number of 64-byte blocks before k: malformed.
  EXPECT_TRUE(BloomFilterMayContain(std::string(8, '\0') + "\x07",
                                    BloomKey("hello"),
                                    BloomLayout::kCacheLineBlocked));
  EXPECT_FALSE(BloomFilterMayContain(std::string(64, '\0') + "\x07",
                                     BloomKey("hello"),
                                     BloomLayout::kCacheLineBlocked));
}

// One BloomKey probed in filters of both layouts, and prefetched first,
// answers as a fresh key does in each (its hashes are cached per layout).
TEST(BloomKeyTest, OneKeyManyFilters) {
  BloomFilterBuilder whole(10, BloomLayout::kWholeTable);
  BloomFilterBuilder blocked(10, BloomLayout::kCacheLineBlocked);
  for (int i = 0; i < 1000; i += 2) {
    whole.AddKey(Key(i));
    blocked.AddKey(Key(i));
  }
  const std::string w = whole.Finish(), b = blocked.Finish();
  for (int i = 0; i < 1000; ++i) {
    const std::string k = Key(i);
    BloomKey key(k);
    BloomFilterPrefetch(b, key, BloomLayout::kCacheLineBlocked);
    BloomFilterPrefetch(w, key, BloomLayout::kWholeTable);
    bool in_blocked =
        BloomFilterMayContain(b, key, BloomLayout::kCacheLineBlocked);
    bool in_whole = BloomFilterMayContain(w, key, BloomLayout::kWholeTable);
    EXPECT_EQ(in_blocked, BloomFilterMayContain(
                              b, BloomKey(k), BloomLayout::kCacheLineBlocked));
    EXPECT_EQ(in_whole,
              BloomFilterMayContain(w, BloomKey(k), BloomLayout::kWholeTable));
    if (i % 2 == 0) {
      EXPECT_TRUE(in_blocked && in_whole) << i;
    }
  }
  // Malformed filters are never read by a prefetch.
  BloomFilterPrefetch("", BloomKey("x"), BloomLayout::kCacheLineBlocked);
  BloomFilterPrefetch("abc", BloomKey("x"), BloomLayout::kCacheLineBlocked);
}

TEST_P(BloomFilterTest, SmallFilter) {
  BloomFilterBuilder builder(10, layout());
  builder.AddKey("hello");
  builder.AddKey("world");
  std::string filter = builder.Finish();
  EXPECT_TRUE(MayContain(filter, "hello"));
  EXPECT_TRUE(MayContain(filter, "world"));
  EXPECT_FALSE(MayContain(filter, "x"));
  EXPECT_FALSE(MayContain(filter, "foo"));
}

TEST_P(BloomFilterTest, DuplicatesCountOnce) {
  BloomFilterBuilder once(10, layout()), many(10, layout());
  for (int i = 0; i < 100; ++i) once.AddKey(Key(i));
  for (int i = 0; i < 100; ++i) {
    for (int j = 0; j < 10; ++j) many.AddKey(Key(i));
  }
  EXPECT_EQ(once.NumHashes(), many.NumHashes());
  EXPECT_EQ(once.Finish().size(), many.Finish().size());
}

// No false negatives, and a false-positive rate under 2% at 10 bits/key,
// over filter sizes from tiny to large.
TEST_P(BloomFilterTest, FalsePositiveRate) {
  for (int n : {1, 10, 100, 1000, 10000, 100000}) {
    BloomFilterBuilder builder(10, layout());
    for (int i = 0; i < n; ++i) builder.AddKey(Key(i));
    std::string filter = builder.Finish();
    // Whole blocks for the blocked layout: at most one block more.
    EXPECT_LE(filter.size(), static_cast<size_t>(n) * 10 / 8 + 65) << n;
    if (layout() == BloomLayout::kCacheLineBlocked) {
      EXPECT_EQ((filter.size() - 1) % kBloomBlockBytes, 0u) << n;
    }
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(MayContain(filter, Key(i))) << n << " " << i;
    }
    const int probes = 100000;
    int false_positives = 0;
    for (int i = 0; i < probes; ++i) {
      if (MayContain(filter, Key(i + 1000000000))) ++false_positives;
    }
    double rate = static_cast<double>(false_positives) / probes;
    EXPECT_LT(rate, 0.02) << "n=" << n;
    if (n >= 1000) {
      std::printf("bloom n=%d bytes=%zu fp=%.3f%%\n", n, filter.size(),
                  rate * 100);
    }
  }
}

TEST_P(BloomFilterTest, FewerBitsMoreFalsePositives) {
  auto rate = [this](int bits_per_key) {
    BloomFilterBuilder builder(bits_per_key, layout());
    for (int i = 0; i < 10000; ++i) builder.AddKey(Key(i));
    std::string filter = builder.Finish();
    int fp = 0;
    for (int i = 0; i < 50000; ++i) fp += MayContain(filter, Key(-i - 1));
    return fp;
  };
  EXPECT_GT(rate(4), rate(10));
  EXPECT_GT(rate(10), rate(20));
}

}  // namespace
}  // namespace tabletfs
