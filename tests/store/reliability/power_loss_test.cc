// Power loss: random row mutations (some with sync=true, some DB::Sync()
// calls, flushes and compactions), then the FaultInjectionEnv drops every
// unsynced byte and directory entry at a random point; the database must
// open, keep everything acknowledged as durable, and show every mutation
// whole or not at all. Several crash rounds per seed, each continuing from
// what survived the last.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "store/db.h"
#include "store/env/mem_env.h"
#include "store/fault_env.h"
#include "tests/store/reliability/reliability_util.h"

namespace tabletfs::reliability {
namespace {

struct Counts {
  uint64_t power_losses = 0;
  uint64_t mutations = 0;
  uint64_t durable_checked = 0;
};

// One seed: `rounds` crash rounds of up to `per_round` mutations. With
// `log_upkeep`, a commit thread runs (its interval too long to tick): it
// syncs the log early and makes the next log's file beside the writers,
// at times that differ from run to run.
void RunPowerLoss(uint64_t seed, int rounds, int per_round, Counts* counts,
                  bool log_upkeep = false) {
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (rerun with TABLETFS_SEED=" + std::to_string(seed) + ")");
  std::printf("power loss: seed %llu\n", static_cast<unsigned long long>(seed));
  MemEnv mem;
  FaultInjectionEnv env(&mem);
  Options options = SmallOptions(&env);
  if (log_upkeep) options.commit_interval = std::chrono::hours(1);
  Workload w(seed);

  std::map<int64_t, Mutation> written;  // every mutation attempted
  std::set<int64_t> durable;            // must survive the next power loss
  {
    auto db = DB::Open(options, kDir);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE(CreateSchema(db->get()).ok());
  }
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto opened = DB::Open(options, kDir);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    std::unique_ptr<DB> db = std::move(*opened);

    std::set<int64_t> acked;  // since the last power loss
    int n = 1 + static_cast<int>(w.rng()() % per_round);
    for (int i = 0; i < n; ++i) {
      Mutation m = w.Next();
      written[m.id] = m;
      WriteOptions wo;
      wo.sync = m.sync;
      auto r = db->Apply(kTable, Workload::ToRowMutation(m), wo);
      ASSERT_TRUE(r.ok()) << "mutation " << m.id << ": "
                          << r.status().ToString();
      ++counts->mutations;
      acked.insert(m.id);
      if (m.sync) durable.insert(m.id);
      if (w.OneIn(25)) {
        // DB::Sync makes every acknowledged write durable.
        ASSERT_TRUE(db->Sync().ok());
        durable.insert(acked.begin(), acked.end());
      }
      if (w.OneIn(60)) {
        ASSERT_TRUE(db->Flush().ok());
      }
      if (w.OneIn(150)) {
        ASSERT_TRUE(db->CompactAll().ok());
      }
    }
    // The power goes now, maybe in the middle of a background flush or
    // compaction.
    env.SetFilesystemActive(false);
    db.reset();
    ASSERT_TRUE(env.DropUnsyncedData().ok());
    env.SetFilesystemActive(true);
    ++counts->power_losses;

    opened = DB::Open(options, kDir);
    ASSERT_TRUE(opened.ok())
        << "reopen after power loss: " << opened.status().ToString();
    db = std::move(*opened);
    CheckResult check = CheckDb(db.get(), written, durable);
    ASSERT_TRUE(check.read_error.ok() && check.errors.empty())
        << Describe(check);
    counts->durable_checked += durable.size();
    // What survived is on disk now; what did not is gone for good.
    std::erase_if(written, [&](const auto& kv) {
      return check.present.count(kv.first) == 0;
    });
    durable = check.present;
    ASSERT_TRUE(db->Verify().ok());
  }
}

TEST(PowerLossTest, AcknowledgedSyncedWritesSurviveAndMutationsAreWhole) {
  Counts counts;
  for (uint64_t seed : Seeds({1, 2, 3, 4, 5, 6})) {
    RunPowerLoss(seed, /*rounds=*/6, /*per_round=*/200, &counts);
    if (HasFatalFailure()) break;
  }
  std::printf(
      "power loss: %llu power losses injected, %llu mutations, %llu durable "
      "mutations checked\n",
      static_cast<unsigned long long>(counts.power_losses),
      static_cast<unsigned long long>(counts.mutations),
      static_cast<unsigned long long>(counts.durable_checked));
  EXPECT_GT(counts.power_losses, 0u);
}

TEST(PowerLossTest, WritesSurviveBesideTheCommitThreadsLogUpkeep) {
  Counts counts;
  for (uint64_t seed : Seeds({11, 12, 13, 14})) {
    RunPowerLoss(seed, /*rounds=*/6, /*per_round=*/200, &counts,
                 /*log_upkeep=*/true);
    if (HasFatalFailure()) break;
  }
  EXPECT_GT(counts.power_losses, 0u);
}

// The smallest case: one synced write to a fresh database, then power loss.
TEST(PowerLossTest, OneSyncedWriteSurvives) {
  MemEnv mem;
  FaultInjectionEnv env(&mem);
  Options options = SmallOptions(&env);
  {
    auto db = DB::Open(options, kDir);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE(CreateSchema(db->get()).ok());
    RowMutation m("row");
    m.SetCell("f", "q", 7, "synced");
    WriteOptions wo;
    wo.sync = true;
    ASSERT_TRUE((*db)->Apply(kTable, m, wo).ok());
    env.SetFilesystemActive(false);
  }
  ASSERT_TRUE(env.DropUnsyncedData().ok());
  env.SetFilesystemActive(true);
  auto db = DB::Open(options, kDir);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto cells = (*db)->ReadCell(kTable, "row", "f", "q", ReadOptions());
  ASSERT_TRUE(cells.ok()) << cells.status().ToString();
  ASSERT_EQ(cells->size(), 1u) << "a write acknowledged with sync=true was "
                                  "lost by a power loss";
  EXPECT_EQ((*cells)[0].value, "synced");
}

// Writes acknowledged before a successful DB::Sync() survive, also when a
// memtable was frozen (and a new log started) in between.
TEST(PowerLossTest, DbSyncCoversWritesInAFrozenMemtable) {
  MemEnv mem;
  FaultInjectionEnv env(&mem);
  Options options = SmallOptions(&env);
  // 4 KiB once hung 1 run in 3 in a write stall (docs/RELIABILITY.md, bug
  // 5); the tablet engine passed 3,000 runs in a row.
  options.memtable_bytes = 4 << 10;
  int written = 0;
  {
    auto db = DB::Open(options, kDir);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE(CreateSchema(db->get()).ok());
    // ~16 KiB without sync: several memtables freeze on the way.
    for (; written < 64; ++written) {
      RowMutation m("row" + std::to_string(written));
      m.SetCell("f", "q", 1, std::string(256, 'v'));
      ASSERT_TRUE((*db)->Apply(kTable, m, WriteOptions()).ok());
    }
    ASSERT_TRUE((*db)->Sync().ok());
    env.SetFilesystemActive(false);
  }
  ASSERT_TRUE(env.DropUnsyncedData().ok());
  env.SetFilesystemActive(true);
  auto db = DB::Open(options, kDir);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  int lost = 0;
  for (int i = 0; i < written; ++i) {
    auto cells = (*db)->ReadCell(kTable, "row" + std::to_string(i), "f", "q",
                                 ReadOptions());
    ASSERT_TRUE(cells.ok()) << cells.status().ToString();
    if (cells->empty()) ++lost;
  }
  EXPECT_EQ(lost, 0) << lost << " of " << written
                     << " writes acknowledged before DB::Sync() were lost";
}

}  // namespace
}  // namespace tabletfs::reliability
