// Disk full, through the Env's free-space setting: below the space reserve,
// writes that add data fail NoSpace while deletes and reads still work;
// with the disk really full, writes (and the background flushes they
// cause) fail NoSpace without a sticky error; once space returns, writes
// work again without reopening, and nothing acknowledged is lost; a flush
// and a compaction that failed for lack of space are retried and succeed,
// on an idle store too. A log sync that fails for space is not a full
// disk: it is sticky.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "store/db.h"
#include "store/env/mem_env.h"
#include "store/fault_env.h"
#include "tests/store/reliability/reliability_util.h"

namespace tabletfs::reliability {
namespace {

class DiskFullTest : public testing::Test {
 protected:
  void Open() {
    db_.reset();
    auto db = DB::Open(options_, kDir);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
  }

  // Applies a mutation; on success it joins acked_.
  Status Write(const Mutation& m) {
    written_[m.id] = m;
    auto r = db_->Apply(kTable, Workload::ToRowMutation(m), WriteOptions());
    if (r.ok()) acked_.insert(m.id);
    ++cases_;
    return r.ok() ? Status::OK() : r.status();
  }

  MemEnv mem_;
  Options options_ = SmallOptions(&mem_);
  std::unique_ptr<DB> db_;
  Workload w_{Seeds({3})[0]};
  std::map<int64_t, Mutation> written_;
  std::set<int64_t> acked_;
  int cases_ = 0;
};

TEST_F(DiskFullTest, BelowTheReserveWritesFailDeletesWork) {
  options_.space_reserve_bytes = 1 << 20;
  Open();
  ASSERT_TRUE(CreateSchema(db_.get()).ok());
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(Write(w_.Next()).ok());

  mem_.SetFreeSpace(*options_.space_reserve_bytes / 2);
  for (int i = 0; i < 10; ++i) {
    Status s = Write(w_.Next());
    EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  }
  // Reads work.
  CheckResult r = CheckDb(db_.get(), written_, acked_);
  EXPECT_TRUE(r.read_error.ok() && r.errors.empty()) << Describe(r);
  // Deletes use the reserve.
  int64_t victim = *acked_.begin();
  RowMutation del(written_[victim].row);
  del.DeleteRow();
  auto d = db_->Apply(kTable, del, WriteOptions());
  EXPECT_TRUE(d.ok()) << "a delete below the space reserve: "
                      << d.status().ToString();
  ++cases_;
  EXPECT_TRUE(db_->BackgroundError().ok()) << db_->BackgroundError().ToString();

  // Space returns: writes work again, without reopening.
  mem_.SetFreeSpace(MemEnv::kDefaultFreeSpace);
  Status s = Write(w_.Next());
  EXPECT_TRUE(s.ok()) << "after space returned: " << s.ToString();
  std::printf("disk full (reserve): %d cases\n", cases_);
}

TEST_F(DiskFullTest, FullDiskRecoversWithoutReopen) {
  options_.space_reserve_bytes = 0;
  options_.memtable_bytes = 8 << 10;  // flushes happen while the disk is full
  Open();
  ASSERT_TRUE(CreateSchema(db_.get()).ok());
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(Write(w_.Next()).ok());
  ASSERT_TRUE(db_->WaitForIdle().ok());

  mem_.SetFreeSpace(4 << 10);
  int refused = 0, accepted = 0;
  for (int i = 0; i < 200; ++i) {
    Status s = Write(w_.Next());
    if (s.ok()) {
      ++accepted;
    } else {
      EXPECT_TRUE(s.IsNoSpace()) << "write " << i << ": " << s.ToString();
      ++refused;
    }
  }
  EXPECT_GT(refused, 0) << "the disk never filled";
  // Reads keep working on a full disk.
  CheckResult full = CheckDb(db_.get(), written_, acked_);
  EXPECT_TRUE(full.read_error.ok() && full.errors.empty()) << Describe(full);

  mem_.SetFreeSpace(MemEnv::kDefaultFreeSpace);
  int ok_after = 0;
  for (int i = 0; i < 20; ++i) {
    Status s = Write(w_.Next());
    if (s.ok()) ++ok_after;
    EXPECT_TRUE(s.ok()) << "write " << i
                        << " after space returned: " << s.ToString();
  }
  Status idle = db_->WaitForIdle();
  EXPECT_TRUE(idle.ok()) << idle.ToString();
  EXPECT_TRUE(db_->BackgroundError().ok())
      << "out of space stayed sticky: " << db_->BackgroundError().ToString();

  // Nothing acknowledged is lost, now or after a reopen.
  Open();
  CheckResult r = CheckDb(db_.get(), written_, acked_);
  EXPECT_TRUE(r.read_error.ok() && r.errors.empty()) << Describe(r);
  EXPECT_TRUE(db_->Verify().ok());
  std::printf(
      "disk full (no space): %d writes refused NoSpace, %d accepted while "
      "full, %d of 20 after space returned; %d cases\n",
      refused, accepted, ok_after, cases_);
}

uint64_t Level0Files(const DbStats& s) {
  return s.levels.empty() ? 0 : s.levels[0].files;
}

size_t SstFiles(MemEnv* env) {
  auto children = env->GetChildren(kDir);
  size_t n = 0;
  if (!children.ok()) return 0;
  for (const std::string& name : *children) {
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".sst") == 0) ++n;
  }
  return n;
}

// Background work that ran out of space pauses (no sticky error) and is
// retried once space returns, without reopening: the failed flush by the
// writes that follow (no Flush() call), the failed compaction by the
// background thread once a write wakes it.
// Below the reserve, deletes still work, and they give their space back:
// the deleted rows' tablets are flushed and compacted, one at a time, so
// writes work again without anyone freeing space outside the database. A
// tablet's compaction writes what survives in it before its inputs go, so
// the reserve must hold that much: tablets bound it.
TEST_F(DiskFullTest, DeletesBelowTheReserveGiveTheirSpaceBack) {
  options_.space_reserve_bytes = 256 << 10;
  options_.tablet_split_bytes = 128 << 10;
  options_.large_value_bytes = 1 << 20;  // values stay in the SSTables
  Open();
  ASSERT_TRUE(CreateSchema(db_.get()).ok());
  auto row = [](int i) { return "row" + std::to_string(1000 + i); };
  uint64_t x = 88172645463325252ull;  // xorshift: values lz4 cannot shrink
  for (int i = 0; i < 200; ++i) {
    std::string value(4096, '\0');
    for (char& c : value) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      c = static_cast<char>(x);
    }
    RowMutation m(row(i));
    m.SetCell("f", "q", 1, value);
    ASSERT_TRUE(db_->Apply(kTable, m, WriteOptions()).ok());
  }
  ASSERT_TRUE(db_->CompactAll().ok());
  ASSERT_TRUE(db_->WaitForIdle().ok());
  ASSERT_GE(db_->GetStats().tablets, 4u);
  // The disk fills up to just below the reserve.
  mem_.SetFreeSpace(*options_.space_reserve_bytes - 1024);
  RowMutation more(row(500));
  more.SetCell("f", "q", 1, "x");
  ASSERT_TRUE(db_->Apply(kTable, more, WriteOptions()).status().IsNoSpace());
  const uint64_t compactions = db_->GetStats().compactions;

  // Deleting half of the ~800 KiB of data brings the space back.
  for (int i = 0; i < 100; ++i) {
    RowMutation d(row(i));
    d.DeleteRow();
    ASSERT_TRUE(db_->Apply(kTable, d, WriteOptions()).ok()) << i;
  }
  ASSERT_TRUE(db_->WaitForIdle().ok());
  EXPECT_GT(db_->GetStats().compactions, compactions);
  auto free_space = mem_.GetFreeSpace(kDir);
  ASSERT_TRUE(free_space.ok());
  EXPECT_GT(*free_space, *options_.space_reserve_bytes + (256u << 10))
      << "the deleted rows' space did not come back";
  auto r = db_->Apply(kTable, more, WriteOptions());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(db_->BackgroundError().ok()) << db_->BackgroundError().ToString();

  // What was not deleted is all there, before and after a reopen.
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < 200; ++i) {
      auto cells = db_->ReadCell(kTable, row(i), "f", "q", ReadOptions());
      ASSERT_TRUE(cells.ok()) << cells.status().ToString();
      EXPECT_EQ(cells->size(), i < 100 ? 0u : 1u) << row(i);
    }
    Open();
  }
}

// Unlike a write that finds no space, a log sync that fails for space
// (fdatasync's ENOSPC or EDQUOT, on thin-provisioned or quota'd
// filesystems) stops the store: the kernel does not report a failed
// fdatasync twice, so the log's unsynced tail may be gone while a retried
// sync succeeds. The flush syncs the log beside the writers; its failure
// must be sticky like every other log sync's, not a pause.
TEST(LogSyncNoSpaceTest, AFlushWhoseLogSyncFailsStopsAcknowledgingWrites) {
  MemEnv mem;
  FaultInjectionEnv env(&mem);
  auto opened = DB::Open(SmallOptions(&env), kDir);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<DB> db = std::move(*opened);
  ASSERT_TRUE(CreateSchema(db.get()).ok());
  env.FailAll(FaultOp::kSync, Status::NoSpace("injected fdatasync failure"),
              ".log");
  // Writes until the first memtable is frozen (at half the budget, before
  // the log reaches the size that switches it): its flush syncs the log.
  Workload w(Seeds({5})[0]);
  for (int i = 0; i < 1000 && db->GetStats().frozen_memtables == 0 &&
                  db->GetStats().flushes == 0;
       ++i) {
    ASSERT_TRUE(
        db->Apply(kTable, Workload::ToRowMutation(w.Next()), WriteOptions())
            .ok());
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (db->GetStats().background_error.empty() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string error = db->GetStats().background_error;
  EXPECT_NE(error.find("syncing the log before a flush"), std::string::npos)
      << "background error: '" << error << "'";
  // Sticky: with the fault gone, writes are still refused until a reopen.
  env.ClearFaults();
  EXPECT_FALSE(
      db->Apply(kTable, Workload::ToRowMutation(w.Next()), WriteOptions())
          .ok());
}

// An idle store: nothing but the returning space wakes the paused flush.
TEST_F(DiskFullTest, PausedFlushIsRetriedWhenSpaceReturnsWithoutAWrite) {
  options_.space_reserve_bytes = 0;
  // Every write in the active memtable: with the small default, the 40th
  // write filled it, and when the background flush of it finished before
  // the disk filled, Flush() had nothing left to do (CI, once).
  options_.memtable_bytes = 1 << 20;
  Open();
  ASSERT_TRUE(CreateSchema(db_.get()).ok());
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(Write(w_.Next()).ok());
  mem_.SetFreeSpace(64);
  Status s = db_->Flush();
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  const DbStats failed = db_->GetStats();
  EXPECT_GE(failed.frozen_memtables, 1u);
  // Still full a while later: the pause holds, nothing is retried in a loop.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(db_->GetStats().flushes, failed.flushes);
  EXPECT_EQ(db_->GetStats().frozen_memtables, failed.frozen_memtables);

  mem_.SetFreeSpace(MemEnv::kDefaultFreeSpace);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (db_->GetStats().frozen_memtables != 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const DbStats after = db_->GetStats();
  EXPECT_EQ(after.frozen_memtables, 0u) << "the paused flush was not retried";
  EXPECT_GT(after.flushes, failed.flushes);
  EXPECT_TRUE(after.background_error.empty()) << after.background_error;
  Open();
  CheckResult r = CheckDb(db_.get(), written_, acked_);
  EXPECT_TRUE(r.read_error.ok() && r.errors.empty()) << Describe(r);
}

TEST_F(DiskFullTest, FailedFlushAndCompactionAreRetriedWhenSpaceReturns) {
  options_.space_reserve_bytes = 0;
  Open();
  ASSERT_TRUE(CreateSchema(db_.get()).ok());
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(Write(w_.Next()).ok());
  ASSERT_TRUE(db_->Flush().ok());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Write(w_.Next()).ok());
  ASSERT_TRUE(db_->WaitForIdle().ok());
  const DbStats before = db_->GetStats();
  const size_t ssts_before = SstFiles(&mem_);

  // The flush's SSTable does not fit.
  mem_.SetFreeSpace(64);
  Status s = db_->Flush();
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  const DbStats failed = db_->GetStats();
  EXPECT_EQ(failed.flushes, before.flushes);
  EXPECT_EQ(failed.frozen_memtables, 1u) << "the memtable waits, frozen";
  EXPECT_EQ(Level0Files(failed), Level0Files(before));
  EXPECT_EQ(SstFiles(&mem_), ssts_before) << "a partial SSTable was left";
  EXPECT_TRUE(db_->BackgroundError().ok()) << db_->BackgroundError().ToString();
  CheckResult full = CheckDb(db_.get(), written_, acked_);
  EXPECT_TRUE(full.read_error.ok() && full.errors.empty()) << Describe(full);

  // Space returns. Only writes follow: they fill the next memtable, and
  // its freeze wakes the background work, which flushes both.
  mem_.SetFreeSpace(MemEnv::kDefaultFreeSpace);
  int writes = 0;
  for (; writes < 2000 && db_->GetStats().flushes < failed.flushes + 2;
       ++writes) {
    Status w = Write(w_.Next());
    ASSERT_TRUE(w.ok()) << "write " << writes << ": " << w.ToString();
  }
  ASSERT_TRUE(db_->WaitForIdle().ok());
  const int flush_writes = writes;
  const DbStats retried = db_->GetStats();
  EXPECT_GE(retried.flushes, failed.flushes + 2)
      << "the failed flush was not retried after " << writes << " writes";
  EXPECT_EQ(retried.frozen_memtables, 0u);
  EXPECT_TRUE(retried.background_error.empty()) << retried.background_error;

  // A compaction that does not fit: CompactAll fails, nothing changes.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Write(w_.Next()).ok());
  ASSERT_TRUE(db_->Flush().ok());
  ASSERT_TRUE(db_->WaitForIdle().ok());
  const DbStats flushed = db_->GetStats();
  mem_.SetFreeSpace(1024);
  s = db_->CompactAll();
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  const DbStats no_compaction = db_->GetStats();
  EXPECT_EQ(no_compaction.compactions, flushed.compactions);
  EXPECT_EQ(Level0Files(no_compaction), Level0Files(flushed));
  EXPECT_TRUE(db_->BackgroundError().ok()) << db_->BackgroundError().ToString();

  // Space returns; the requested compaction is still pending and runs as
  // soon as a write's freeze wakes the background thread.
  mem_.SetFreeSpace(MemEnv::kDefaultFreeSpace);
  writes = 0;
  for (; writes < 2000 &&
         db_->GetStats().compactions == no_compaction.compactions;
       ++writes) {
    Status w = Write(w_.Next());
    ASSERT_TRUE(w.ok()) << "write " << writes << ": " << w.ToString();
  }
  ASSERT_TRUE(db_->WaitForIdle().ok());
  const DbStats compacted = db_->GetStats();
  EXPECT_GT(compacted.compactions, no_compaction.compactions)
      << "the failed compaction was not retried after " << writes << " writes";
  EXPECT_TRUE(compacted.background_error.empty()) << compacted.background_error;
  ASSERT_TRUE(db_->CompactAll().ok());
  EXPECT_EQ(Level0Files(db_->GetStats()), 0u);

  CheckResult r = CheckDb(db_.get(), written_, acked_);
  EXPECT_TRUE(r.read_error.ok() && r.errors.empty()) << Describe(r);
  Open();
  r = CheckDb(db_.get(), written_, acked_);
  EXPECT_TRUE(r.read_error.ok() && r.errors.empty()) << Describe(r);
  EXPECT_TRUE(db_->Verify().ok());
  std::printf(
      "disk full (retry): failed flush retried within %d writes (flushes "
      "%llu -> %llu), failed compaction within %d (compactions %llu -> "
      "%llu); %d cases\n",
      flush_writes, static_cast<unsigned long long>(failed.flushes),
      static_cast<unsigned long long>(retried.flushes), writes,
      static_cast<unsigned long long>(no_compaction.compactions),
      static_cast<unsigned long long>(compacted.compactions), cases_);
}

}  // namespace
}  // namespace tabletfs::reliability
