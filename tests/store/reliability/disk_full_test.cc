// Disk full, through the Env's free-space setting: below the space reserve,
// writes that add data fail NoSpace while deletes and reads still work;
// with the disk really full, writes (and the background flushes they
// cause) fail NoSpace without a sticky error; once space returns, writes
// work again without reopening, and nothing acknowledged is lost.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "store/db.h"
#include "store/env/mem_env.h"
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

  mem_.SetFreeSpace(options_.space_reserve_bytes / 2);
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

}  // namespace
}  // namespace tabletfs::reliability
