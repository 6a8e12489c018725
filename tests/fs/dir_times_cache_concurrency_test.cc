// DirTimesCache under threads (run under TSan by the concurrency label):
// writers creating and removing cells of the same directories through the
// mount's origin wrapper while others answer GETATTRs from the cache or by
// a scan that fills it. Once the threads stop, whatever the cache keeps
// equals a fresh scan: no scan put back what a write changed under it, and
// no two writes of one directory were followed in the wrong order.
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fs/dir_times_cache.h"
#include "fs/origin_bigtable.h"
#include "gtest/gtest.h"
#include "store/env/mem_env.h"
#include "store/reference/reference_bigtable.h"
#include "tests/fs/dir_times_scan.h"

namespace tabletfs::fs {
namespace {

TEST(DirTimesCacheConcurrencyTest, KeptTimesEqualAFreshScanAfterRacingWrites) {
  std::unique_ptr<Env> env = NewMemEnv();
  ReferenceOptions options;
  options.clock = env.get();
  std::unique_ptr<Bigtable> store = NewReferenceBigtable(options);
  DirTimesCache cache(std::chrono::hours(1));
  std::unique_ptr<Bigtable> db = NewOriginBigtable(store.get(), 1, &cache);
  ASSERT_TRUE(db->CreateTable("t").ok());
  ASSERT_TRUE(db->CreateFamily("t", "f", FamilySettings()).ok());
  const std::vector<std::string> rows = {"r", "s"};

  constexpr int kRounds = 30, kWrites = 150;
  for (int round = 0; round < kRounds; round++) {
    std::vector<std::thread> threads;
    for (int w = 0; w < 2; w++) {
      threads.emplace_back([&, w] {
        std::mt19937 rng(round * 10 + w);
        for (int i = 0; i < kWrites; i++) {
          RowMutation m(rows[rng() % rows.size()]);
          std::string q = "q";
          q += std::to_string(rng() % 6);
          if (rng() % 3 == 0) {
            m.DeleteCell("f", q);
          } else {
            m.SetCell("f", q, "v");
          }
          EXPECT_TRUE(db->Apply("t", m, WriteOptions()).ok());
        }
      });
    }
    for (int g = 0; g < 2; g++) {
      threads.emplace_back([&, g] {
        std::mt19937 rng(round * 10 + 5 + g);
        for (int i = 0; i < kWrites; i++) {
          const std::string& row = rows[rng() % rows.size()];
          if (cache.Find("t", row, "f").has_value()) continue;
          DirTimesCache::Scan scan = cache.StartScan("t", row, "f");
          DirTimes t = ScannedFamilyTimes(store.get(), row, "f");
          std::this_thread::yield();  // widen the window for a write
          scan.Found(t);
        }
      });
    }
    for (std::thread& t : threads) t.join();
    for (const std::string& row : rows) {
      std::optional<DirTimes> kept = cache.Find("t", row, "f");
      if (!kept.has_value()) continue;
      DirTimes fresh = ScannedFamilyTimes(store.get(), row, "f");
      EXPECT_EQ(kept->newest, fresh.newest) << "round " << round;
      EXPECT_EQ(kept->entries, fresh.entries) << "round " << round;
    }
    if (HasFailure()) return;
  }
  EXPECT_GT(cache.kept_scans(), 0u);
}

}  // namespace
}  // namespace tabletfs::fs
