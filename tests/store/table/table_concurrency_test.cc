// Several threads read one set of tables through a small table cache and a
// small block cache, so lookups, inserts, evictions and pinned blocks race.
// Run under TSan (the concurrency_tests executable); about one second there.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "store/table/block_cache.h"
#include "store/table/table_builder.h"
#include "store/table/table_cache.h"
#include "tests/store/table/table_test_util.h"

namespace tabletfs {
namespace {

using table_test::StringEnv;
using table_test::StringSink;

std::string Key(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "row%06d", i);
  return buf;
}
std::string Value(uint64_t file, int i) {
  return "value-" + std::to_string(file) + "-" + std::to_string(i) +
         std::string(i % 50, 'x');
}

TEST(TableConcurrencyTest, ReadersShareCaches) {
  constexpr int kTables = 4;
  constexpr int kKeys = 2000;
  constexpr int kRoundsPerThread = 3000;
  StringEnv env;
  BlockCache blocks(32 << 10);  // Far smaller than the data: constant churn.
  TableOptions options;
  options.block_size = 1024;
  options.block_cache = &blocks;
  options.compression = [](std::string_view) { return Compression::kLz4; };
  std::vector<uint64_t> sizes;
  for (uint64_t f = 0; f < kTables; ++f) {
    std::string contents;
    StringSink sink(&contents);
    TableBuilder builder(options, &sink);
    for (int i = 0; i < kKeys; i += 2) builder.Add(Key(i), Value(f, i));
    ASSERT_TRUE(builder.Finish().ok());
    env.PutFile(TableFileName("/db", f), contents);
    sizes.push_back(contents.size());
  }
  TableCache tables(&env, "/db", options, 2);

  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::atomic<uint64_t> reads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int round = 0; round < kRoundsPerThread; ++round) {
        uint64_t f = rng() % kTables;
        auto table = tables.Get(f, sizes[f]);
        if (!table.ok()) {
          failures.fetch_add(1);
          continue;
        }
        auto it = (*table)->NewIterator(/*fill_cache=*/rng() % 4 != 0);
        int i = static_cast<int>(rng() % kKeys);
        it->Seek(Key(i));
        int expect = i + (i % 2);
        for (int n = 0; n < 20 && expect < kKeys; ++n, expect += 2) {
          if (!it->Valid() || it->key() != Key(expect) ||
              it->value() != Value(f, expect)) {
            failures.fetch_add(1);
            break;
          }
          it->Next();
        }
        if (!(*table)->MayContain(Key(expect - 2 < 0 ? 0 : expect - 2))) {
          failures.fetch_add(1);
        }
        reads.fetch_add(1);
      }
    });
  }
  threads.emplace_back([&] {
    std::mt19937 rng(99);
    while (!stop.load()) {
      tables.Evict(rng() % kTables);
      std::this_thread::yield();
    }
  });
  for (int t = 0; t < 4; ++t) threads[t].join();
  stop.store(true);
  threads.back().join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(reads.load(), 100u);
  EXPECT_GT(blocks.hits() + blocks.misses(), 0u);
  EXPECT_LE(blocks.usage(), blocks.capacity() + 16);
}

}  // namespace
}  // namespace tabletfs
