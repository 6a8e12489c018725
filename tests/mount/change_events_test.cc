// Change events from the mount door (issue 17): what the shell does
// through a mount reaches a subscriber of the store as change events, in
// the order it was committed, and a subscriber that never reads does not
// hold the mount's writes back. The session runs in this process (fs/
// session.h) over a store the test also holds, once over the engine and
// once over the reference implementation.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fs/session.h"
#include "gtest/gtest.h"
#include "store/db.h"
#include "store/reference/reference_bigtable.h"
#include "tests/util/gcc_bug_105329.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

using std::chrono::microseconds;

// "kind family:qualifier" of an event, the part a shell command decides.
std::string Brief(const ChangeEvent& e) {
  return std::string(ChangeKindName(e.kind)) + " " + e.row + "/" + e.family +
         ":" + e.qualifier;
}

class ChangeEventsTest : public ::testing::TestWithParam<MountStore> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tabletfs_events_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    tmp_ = tmpl;
    mnt_ = tmp_ + "/mnt";
    ASSERT_EQ(mkdir(mnt_.c_str(), 0755), 0);
    if (GetParam() == MountStore::kEngine) {
      auto db = DB::Open(Options(), tmp_ + "/data");
      ASSERT_TRUE(db.ok()) << db.status().ToString();
      store_ = std::move(db).value();
    } else {
      store_ = NewReferenceBigtable(ReferenceOptions());
    }
    ASSERT_TRUE(store_->CreateTable("t").ok());
    ASSERT_TRUE(store_->CreateFamily("t", "f", FamilySettings()).ok());

    fs::SessionOptions so;
    so.datadir = tmp_;
    so.mountpoint = mnt_;
    so.space_reserve_bytes = 0;
    fs::FsError e = fs::Session::Create(store_.get(), so, &session_);
    ASSERT_TRUE(e.ok()) << e.ToString();
    e = session_->Mount();
    ASSERT_TRUE(e.ok()) << e.ToString();
    loop_ = std::thread([this] { loop_rc_ = session_->Loop(); });
  }

  void TearDown() override {
    if (loop_.joinable()) {
      EXPECT_EQ(system(("fusermount3 -u " + mnt_).c_str()), 0);
      loop_.join();
      EXPECT_EQ(loop_rc_, 0);
    }
    session_.reset();
    store_.reset();
    EXPECT_EQ(system(("rm -rf " + tmp_).c_str()), 0);
  }

  // Runs `command` with /bin/sh in the mount point, asserting success.
  void Sh(const std::string& command) {
    std::string full = "cd '" + mnt_ + "' && " + command;
    ASSERT_EQ(system(full.c_str()), 0) << command;
  }

  std::unique_ptr<ChangeSubscription> Subscribe(size_t queue) {
    SubscribeOptions so;
    so.table = "t";  // not the mtimes the mount keeps beside the data
    so.max_queued_events = queue;
    auto sub = store_->Subscribe(so);
    EXPECT_TRUE(sub.ok()) << sub.status().ToString();
    return sub.ok() ? std::move(sub).value() : nullptr;
  }

  // Reads until `n` events came (bounded: 10 s).
  static std::vector<ChangeEvent> ReadEvents(ChangeSubscription& sub,
                                             size_t n) {
    std::vector<ChangeEvent> out;
    for (int i = 0; i < 100 && out.size() < n; i++) {
      ChangeBatch b = sub.Read(microseconds(100000));
      EXPECT_EQ(b.lost, 0u);
      out.insert(out.end(), b.events.begin(), b.events.end());
    }
    return out;
  }

  std::string tmp_, mnt_;
  std::unique_ptr<Bigtable> store_;
  std::unique_ptr<fs::Session> session_;
  std::thread loop_;
  int loop_rc_ = -1;
};

TEST_P(ChangeEventsTest, ShellCommandsArriveInCommitOrder) {
  auto sub = Subscribe(4096);
  ASSERT_NE(sub, nullptr);
  Sh("mkdir -p t/r/f t/s/f");  // directories alone commit nothing
  Sh("echo 1 > t/r/f/a");
  Sh("echo 2 > t/s/f/b");
  Sh("echo 3 >> t/r/f/a");
  Sh("printf old > t/r/f/c@1000000");
  Sh("rm t/s/f/b");
  Sh("mv t/r/f/a t/r/f/moved");
  Sh("rm -r t/r");

  // A rename within a row is one mutation: the new cell written, the old
  // one removed. rm -r removes cell by cell, in listing order; the rmdir
  // of the emptied directories commits nothing.
  const std::vector<std::string> want = {
      "set-cell r/f:a",        "set-cell s/f:b",      "set-cell r/f:a",
      "set-cell r/f:c",        "delete-cell s/f:b",   "set-cell r/f:moved",
      "delete-cell r/f:a",     "delete-cell r/f:c",   "delete-cell r/f:moved",
  };
  std::vector<ChangeEvent> got = ReadEvents(*sub, want.size());
  std::vector<std::string> briefs;
  for (const ChangeEvent& e : got) {
    EXPECT_EQ(e.table, "t");
    briefs.push_back(Brief(e));
  }
  EXPECT_EQ(briefs, want);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(got[3].timestamp, 1000000);  // the version the name asked for
  // Timestamps of the server-stamped writes grow with the commit order.
  EXPECT_LT(got[0].timestamp, got[1].timestamp);
  EXPECT_LT(got[1].timestamp, got[2].timestamp);
  EXPECT_EQ(sub->Read(microseconds(0)).events.size(), 0u);
}

TEST_P(ChangeEventsTest, ASubscriberThatNeverReadsDoesNotStallTheMount) {
  auto stalled = Subscribe(/*queue=*/4);
  ASSERT_NE(stalled, nullptr);
  auto reader = Subscribe(4096);
  ASSERT_NE(reader, nullptr);
  const auto start = std::chrono::steady_clock::now();
  Sh("mkdir -p t/r/f && for i in $(seq 1 100); do echo $i > t/r/f/q$i; done");
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(30));
  // Every write committed and is read back through the store.
  ReadOptions ro;
  auto row = store_->ReadRow("t", "r", ro);
  ASSERT_TRUE(row.ok()) << row.status().ToString();
  EXPECT_EQ(row->cells.size(), 100u);
  // The reader that keeps up saw all of them, in order.
  std::vector<ChangeEvent> got = ReadEvents(*reader, 100);
  ASSERT_EQ(got.size(), 100u);
  for (int i = 0; i < 100; i++) {
    // GCC bug 105329: a false -Wrestrict in "q" + std::to_string(i + 1).
    TABLETFS_GCC_BUG_105329_BEGIN
    EXPECT_EQ(got[i].qualifier, "q" + std::to_string(i + 1));
    TABLETFS_GCC_BUG_105329_END
  }
  // The one that never read kept its first events and was told of the rest.
  ChangeBatch b = stalled->Read(microseconds(0));
  EXPECT_EQ(b.events.size(), 4u);
  EXPECT_EQ(b.lost, 96u);
  EXPECT_EQ(b.events[0].qualifier, "q1");
}

INSTANTIATE_TEST_SUITE_P(, ChangeEventsTest, AllStores(), StoreName);

}  // namespace
}  // namespace tabletfs::testing
