#include "store/table/block_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "store/util/coding.h"

namespace tabletfs {
namespace {

// A well-formed block of exactly `bytes` bytes (one restart, at 0).
std::shared_ptr<const Block> MakeBlock(size_t bytes) {
  std::string contents(bytes - 8, 'x');
  PutFixed32(&contents, 0);
  PutFixed32(&contents, 1);
  Result<std::shared_ptr<const Block>> block =
      Block::Create(contents, "test block");
  EXPECT_TRUE(block.ok()) << block.status().ToString();
  return std::move(block).value();
}

// A group holding one block of `bytes` bytes.
std::shared_ptr<BlockGroup> MakeGroup(size_t bytes) {
  auto group = std::make_shared<BlockGroup>();
  std::shared_ptr<const Block> block = MakeBlock(bytes);
  EXPECT_TRUE(group->Add(0, &block));
  return group;
}

TEST(BlockGroupTest, KeepsTheFirstBlockAddedAtEachOffsetUpToItsLimit) {
  BlockGroup group;
  EXPECT_EQ(group.Find(0), nullptr);
  auto a = MakeBlock(100);
  auto b = MakeBlock(200);
  std::shared_ptr<const Block> added = a;
  EXPECT_TRUE(group.Add(0, &added));
  added = b;
  EXPECT_TRUE(group.Add(4096, &added));
  EXPECT_EQ(group.Find(0), a);
  EXPECT_EQ(group.Find(4096), b);
  EXPECT_EQ(group.Find(100), nullptr);
  EXPECT_EQ(group.size(), 300u);
  // A second reader's copy of a block yields to the one held.
  std::shared_ptr<const Block> late = MakeBlock(150);
  EXPECT_FALSE(group.Add(0, &late));
  EXPECT_EQ(late, a);
  EXPECT_EQ(group.size(), 300u);
  // Full: a block past the limit is not kept, and stays the caller's.
  for (uint64_t i = 2; i < kMaxBlocksPerGroup; ++i) {
    added = MakeBlock(64);
    ASSERT_TRUE(group.Add(i * 4096, &added));
  }
  std::shared_ptr<const Block> extra = MakeBlock(64);
  const Block* extra_ptr = extra.get();
  EXPECT_FALSE(group.Add(1 << 20, &extra));
  EXPECT_EQ(extra.get(), extra_ptr);
  EXPECT_EQ(group.Find(1 << 20), nullptr);
}

TEST(BlockCacheTest, LookupFindsWhatWasInsertedAndReadsAreCounted) {
  BlockCache cache(1 << 20);
  EXPECT_EQ(cache.Lookup(1, 0), nullptr);
  auto a = MakeGroup(100);
  auto b = MakeGroup(200);
  cache.Insert(1, 0, a);
  cache.Insert(2, 0, b);  // same offset, another table
  EXPECT_EQ(cache.Lookup(1, 0), a);
  EXPECT_EQ(cache.Lookup(2, 0), b);
  EXPECT_EQ(cache.Lookup(1, 4096), nullptr);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.usage(), 300u);
  // Lookups count nothing; a reader counts what it wanted.
  EXPECT_EQ(cache.hits(), 0u);
  cache.Count(true);
  cache.Count(false);
  cache.Count(false);
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 2u);

  // Inserting a key again keeps the group there and returns it (another
  // reader's copy of the same blocks, inserted first).
  auto c = MakeGroup(50);
  EXPECT_EQ(cache.Insert(1, 0, c), a);
  EXPECT_EQ(cache.Insert(3, 0, c), c);
  EXPECT_EQ(cache.Lookup(1, 0), a);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.usage(), 350u);
}

TEST(BlockCacheTest, AddChargeGrowsTheEntryOfThatGroupOnly) {
  BlockCache cache(BlockCache::kShards * 1024);  // 1 KiB a shard
  auto group = MakeGroup(100);
  cache.Insert(5, 0, group);
  cache.AddCharge(5, 0, group.get(), 300);
  EXPECT_EQ(cache.usage(), 400u);
  // Not the group under the key (one that lost the insert, or a key with
  // no entry): nothing changes.
  auto other = MakeGroup(100);
  cache.AddCharge(5, 0, other.get(), 300);
  cache.AddCharge(6, 0, group.get(), 300);
  EXPECT_EQ(cache.usage(), 400u);
  // Grown past its shard's capacity, the group leaves the cache.
  cache.AddCharge(5, 0, group.get(), 1000);
  EXPECT_EQ(cache.Lookup(5, 0), nullptr);
  EXPECT_EQ(cache.usage(), 0u);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(BlockCacheTest, AddChargeEvictsColdGroupsToStayWithinTheCapacity) {
  const size_t capacity = BlockCache::kShards * 4 * 1024;
  BlockCache cache(capacity);
  std::vector<std::shared_ptr<BlockGroup>> groups;
  for (uint64_t i = 0; i < 400; ++i) {
    groups.push_back(MakeGroup(256));
    cache.Insert(9, i * 16384, groups.back());
  }
  const size_t before = cache.size();
  for (uint64_t i = 0; i < 400; ++i) {
    cache.AddCharge(9, i * 16384, groups[i].get(), 768);
    ASSERT_LE(cache.usage(), capacity + BlockCache::kShards);
  }
  EXPECT_LT(cache.size(), before);
  EXPECT_GT(cache.usage(), capacity / 2);
}

TEST(BlockCacheTest, UsageStaysWithinTheCapacity) {
  const size_t capacity = 64 << 10;
  BlockCache cache(capacity);
  for (uint64_t i = 0; i < 2000; ++i) {
    cache.Insert(7, i * 4096, MakeGroup(1000 + (i % 7) * 300));
    ASSERT_LE(cache.usage(), capacity + BlockCache::kShards);
  }
  // Full: about capacity / 1,900 bytes of blocks, spread over the shards.
  EXPECT_GT(cache.usage(), capacity / 2);
  EXPECT_LT(cache.size(), 2000u);
}

TEST(BlockCacheTest, AGroupLargerThanAShardIsNotKept) {
  BlockCache cache(16 * 1024);  // 1 KiB a shard
  auto big = MakeGroup(2048);
  EXPECT_EQ(cache.Insert(3, 0, big), big);
  EXPECT_EQ(cache.Lookup(3, 0), nullptr);
  EXPECT_EQ(cache.usage(), 0u);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(BlockCacheTest, AGroupHitBetweenInsertsOutlivesColdOnes) {
  // Each shard holds 4 blocks; 4,000 cold blocks go through the cache,
  // and the hot one is read after each insert, as a point read's index
  // neighbourhood would be. CLOCK keeps it (its bit is set again before the
  // hand comes round); the cold ones are evicted.
  BlockCache cache(BlockCache::kShards * 4 * 1024);
  auto hot = MakeGroup(1024);
  cache.Insert(1, 0, hot);
  for (uint64_t i = 1; i <= 4000; ++i) {
    cache.Insert(2, i * 4096, MakeGroup(1024));
    ASSERT_EQ(cache.Lookup(1, 0), hot) << "after " << i << " inserts";
  }
  EXPECT_LE(cache.size(), BlockCache::kShards * 4u);
  // The cold blocks inserted first are long gone.
  EXPECT_EQ(cache.Lookup(2, 4096), nullptr);
}

TEST(BlockCacheTest, EveryGroupHeldStaysFindableThroughChurn) {
  // A model check of the table's deletions: keys of few tables and close
  // offsets collide and form long probe runs; after each step every block
  // the cache holds must be found under its own key, and only there.
  BlockCache cache(BlockCache::kShards * 40 * 256);
  std::map<std::pair<uint64_t, uint64_t>, std::shared_ptr<BlockGroup>> model;
  std::mt19937_64 rng(42);
  for (int step = 0; step < 20000; ++step) {
    uint64_t id = rng() % 3 + 1;
    uint64_t offset = (rng() % 2000) * 64;
    if (rng() % 3 == 0) {
      auto got = cache.Lookup(id, offset);
      auto it = model.find({id, offset});
      if (got != nullptr) {
        ASSERT_TRUE(it != model.end());
        ASSERT_EQ(got, it->second) << "a block found under another key";
      }
    } else {
      // What Insert returns is what the key holds now: the group given,
      // or one inserted before and still there.
      model[{id, offset}] =
          cache.Insert(id, offset, MakeGroup(64 + rng() % 256));
    }
  }
  size_t found = 0;
  for (const auto& [key, block] : model) {
    auto got = cache.Lookup(key.first, key.second);
    if (got == nullptr) continue;
    EXPECT_EQ(got, block);
    ++found;
  }
  // Every entry the cache counts is reachable: none was lost by a move.
  EXPECT_EQ(found, cache.size());
  EXPECT_GT(found, 100u);
}

}  // namespace
}  // namespace tabletfs
