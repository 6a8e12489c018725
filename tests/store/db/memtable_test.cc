#include "store/db/memtable.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/db/arena.h"
#include "store/db/key_format.h"
#include "store/db/skiplist.h"

namespace tabletfs {
namespace {

struct IntCompare {
  int operator()(uint64_t a, uint64_t b) const {
    return a < b ? -1 : (a > b ? 1 : 0);
  }
};

TEST(SkipListTest, InsertSeekAndIterateInOrder) {
  Arena arena;
  SkipList<uint64_t, IntCompare> list(IntCompare(), &arena);
  std::set<uint64_t> model;
  uint32_t seed = std::random_device{}();
  std::printf("SkipListTest seed %u\n", seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 5000; ++i) {
    uint64_t k = rng() % 100000;
    if (model.insert(k).second) list.Insert(k);
  }
  for (uint64_t k : model) EXPECT_TRUE(list.Contains(k));
  EXPECT_FALSE(list.Contains(100001));
  SkipList<uint64_t, IntCompare>::Iterator it(&list);
  it.SeekToFirst();
  for (uint64_t k : model) {
    ASSERT_TRUE(it.Valid());
    EXPECT_EQ(it.key(), k);
    it.Next();
  }
  EXPECT_FALSE(it.Valid());
  for (int i = 0; i < 100; ++i) {
    uint64_t target = rng() % 100001;
    it.Seek(target);
    auto m = model.lower_bound(target);
    if (m == model.end()) {
      EXPECT_FALSE(it.Valid());
    } else {
      ASSERT_TRUE(it.Valid());
      EXPECT_EQ(it.key(), *m);
    }
  }
}

// Ascending runs (which insert where the last insert ended), started at
// random points among keys already there, so that the shortcut must be
// refused whenever a node lies between the last key and the next: every
// level stays sorted, which Seek (a walk from the top level) shows for
// every key and every gap.
TEST(SkipListTest, AscendingRunsAmongExistingKeys) {
  Arena arena;
  SkipList<uint64_t, IntCompare> list(IntCompare(), &arena);
  std::set<uint64_t> model;
  uint32_t seed = std::random_device{}();
  std::printf("SkipListTest seed %u\n", seed);
  std::mt19937_64 rng(seed);
  for (int run = 0; run < 300; ++run) {
    uint64_t k = rng() % 200000;
    const int length = 1 + static_cast<int>(rng() % 60);
    for (int i = 0; i < length; ++i) {
      if (model.insert(k).second) list.Insert(k);
      k += 1 + rng() % 7;  // sometimes lands on, or past, an existing key
    }
  }
  SkipList<uint64_t, IntCompare>::Iterator it(&list);
  it.SeekToFirst();
  for (uint64_t k : model) {
    ASSERT_TRUE(it.Valid());
    ASSERT_EQ(it.key(), k);
    it.Next();
  }
  EXPECT_FALSE(it.Valid());
  for (uint64_t k : model) {
    ASSERT_TRUE(list.Contains(k)) << k;
    it.Seek(k + 1);
    auto next = model.upper_bound(k);
    if (next == model.end()) {
      EXPECT_FALSE(it.Valid());
    } else {
      ASSERT_TRUE(it.Valid());
      ASSERT_EQ(it.key(), *next) << "seek past " << k;
    }
  }
}

TEST(SkipListTest, EmptyList) {
  Arena arena;
  SkipList<uint64_t, IntCompare> list(IntCompare(), &arena);
  SkipList<uint64_t, IntCompare>::Iterator it(&list);
  it.SeekToFirst();
  EXPECT_FALSE(it.Valid());
  it.Seek(0);
  EXPECT_FALSE(it.Valid());
}

TEST(ArenaTest, AllocationsAreDistinctAndAligned) {
  Arena arena;
  std::vector<std::pair<char*, size_t>> blocks;
  for (size_t n : {1u, 7u, 4096u, 100000u, 3u, 8u}) {
    char* p = arena.AllocateAligned(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 8, 0u);
    std::memset(p, static_cast<int>(n & 0xff), n);
    blocks.push_back({p, n});
  }
  for (auto [p, n] : blocks) {
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], static_cast<char>(n & 0xff));
  }
  EXPECT_GE(arena.MemoryUsage(), 100000u + 4096u);
}

TEST(ArenaTest, BlocksGrowWithTheArenaAndWasteLittle) {
  // A small arena stays one small block.
  Arena small(64 << 10);
  small.Allocate(100);
  EXPECT_LE(small.MemoryUsage(), 4096u + 64);
  // Entries of 1,060 bytes (a 1,000-byte value and its key) share blocks
  // that grow to 64 KiB: the tails wasted stay under a quarter of each
  // block, and the blocks, few of them, cost little beyond the bytes.
  Arena arena(64 << 10);
  const size_t n = 5000, bytes = 1060;
  std::vector<char*> got;
  for (size_t i = 0; i < n; ++i) {
    char* p = arena.Allocate(bytes);
    std::memset(p, static_cast<int>(i & 0xff), bytes);
    got.push_back(p);
  }
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(got[i][0], static_cast<char>(i & 0xff));
    ASSERT_EQ(got[i][bytes - 1], static_cast<char>(i & 0xff));
  }
  EXPECT_GE(arena.MemoryUsage(), n * bytes);
  EXPECT_LE(arena.MemoryUsage(), n * bytes * 103 / 100);
  // A request above 16 KiB gets a block of its own, not a 64 KiB one.
  const size_t before = arena.MemoryUsage();
  arena.Allocate(20000);
  EXPECT_LE(arena.MemoryUsage() - before, 20000u + 64);
}

// A maximum that is not a power of two still bounds every block: doubling
// from 8 KiB for a 4,100-byte request would make 32 KiB.
TEST(ArenaTest, NoBlockPassesAMaximumThatIsNotAPowerOfTwo) {
  const size_t max = 16400;  // memtable_bytes / 64 of a 1,049,600 budget
  Arena arena(max);
  size_t last = arena.MemoryUsage();
  for (int i = 0; i < 50; ++i) {
    arena.Allocate(i % 2 == 0 ? 4100 : 100);
    const size_t grew = arena.MemoryUsage() - last;
    EXPECT_LE(grew, max + 64) << "allocation " << i;
    last = arena.MemoryUsage();
  }
}

TEST(MemTableTest, IteratesKeysInMemcmpOrderWithValues) {
  auto mem = std::make_shared<MemTable>();
  std::map<std::string, std::string> model;
  for (int i = 0; i < 1000; ++i) {
    std::string k = "key" + std::to_string(i * 7919 % 1000);
    k.push_back('\0');
    std::string v(i % 50, 'v');
    model[k] = v;
    mem->Add(k, v);
  }
  EXPECT_EQ(mem->entries(), 1000u);
  auto it = MemTable::NewIterator(mem);
  it->SeekToFirst();
  for (const auto& [k, v] : model) {
    ASSERT_TRUE(it->Valid());
    EXPECT_EQ(it->key(), k);
    EXPECT_EQ(it->value(), v);
    it->Next();
  }
  EXPECT_FALSE(it->Valid());
  it->Seek("key5");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), model.lower_bound("key5")->first);
}

TEST(MemTableTest, ReaderRunsConcurrentlyWithWriter) {
  auto mem = std::make_shared<MemTable>();
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      auto it = MemTable::NewIterator(mem);
      std::string prev;
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        std::string k(it->key());
        ASSERT_LT(prev, k);
        ASSERT_EQ(it->value(), k);  // a visible entry is complete
        prev = k;
      }
    }
  });
  for (int i = 0; i < 20000; ++i) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%08d", (i * 7907) % 20000);
    mem->Add(buf, buf);
  }
  done = true;
  reader.join();
}

TEST(GrowingBloomFilterTest, HoldsEveryHashAddedAcrossSegments) {
  Arena arena;
  GrowingBloomFilter filter;
  uint32_t seed = std::random_device{}();
  std::printf("GrowingBloomFilterTest seed %u\n", seed);
  std::mt19937_64 rng(seed);
  EXPECT_FALSE(filter.MayContain(rng())) << "an empty filter holds nothing";
  // Past the first four segments (1 Ki + 4 Ki + 16 Ki + 64 Ki hashes).
  std::set<uint64_t> added;
  while (added.size() < 100000) {
    uint64_t h = rng();
    added.insert(h);
    filter.Add(h, &arena);
  }
  for (uint64_t h : added) ASSERT_TRUE(filter.MayContain(h)) << h;
  // Each segment answers about 1 % of the hashes it never saw; five
  // segments together stay under 6 %.
  int passed = 0;
  const int probes = 100000;
  for (int i = 0; i < probes; ++i) {
    uint64_t h = rng();
    if (added.count(h) == 0 && filter.MayContain(h)) ++passed;
  }
  EXPECT_LT(passed, probes * 6 / 100);
  EXPECT_GT(passed, 0) << "a Bloom filter this full has false positives";
  // The bits live in the arena, ~10 bits a hash of room: five segments
  // (1 + 4 + 16 + 64 + 256 Ki hashes). The small ones come from the
  // arena's shared blocks, whose unused tails count too: under 64 KiB.
  const size_t room = (1 + 4 + 16 + 64 + 256) * 1024;
  EXPECT_GE(arena.MemoryUsage(), room * 10 / 8);
  EXPECT_LT(arena.MemoryUsage(), room * 10 / 8 + (64 << 10));
}

// Internal keys of `rows` rows, a few entries each (a row marker, cells).
std::vector<std::string> KeysOfRows(int rows) {
  std::vector<std::string> keys;
  uint64_t seq = 1;
  for (int r = 0; r < rows; ++r) {
    const std::string row =
        std::string("row").append(std::to_string(r * 7919 % rows));
    keys.push_back(RowMarkerKey(7, row, seq++));
    for (int c = 0; c < 3; ++c) {
      keys.push_back(VersionKey(7, row, 1,
                                std::string("q").append(std::to_string(c)), 100,
                                seq++, EntryKind::kPut));
    }
  }
  return keys;
}

TEST(MemTableTest, RowFilterHoldsEveryRowAdded) {
  auto mem = std::make_shared<MemTable>();
  const int rows = 20000;
  for (const std::string& k : KeysOfRows(rows)) mem->Add(k, "v");
  for (int r = 0; r < rows; ++r) {
    const std::string row = std::string("row").append(std::to_string(r));
    ASSERT_TRUE(mem->MayHoldRow(BloomKey(RowPrefix(7, row)))) << row;
  }
  // Rows never added, and the added rows of another table, mostly fail.
  int passed = 0;
  for (int r = 0; r < rows; ++r) {
    passed += mem->MayHoldRow(BloomKey(
        RowPrefix(7, std::string("absent").append(std::to_string(r)))));
    passed += mem->MayHoldRow(
        BloomKey(RowPrefix(8, std::string("row").append(std::to_string(r)))));
  }
  EXPECT_LT(passed, 2 * rows * 5 / 100);
}

}  // namespace
}  // namespace tabletfs
