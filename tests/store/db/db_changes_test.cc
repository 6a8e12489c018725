// Change subscriptions of the engine that start in the past
// (SubscribeOptions::since, store/db/db_changes.cc): the past read from the
// commit logs it keeps, then the live events, across flushes and reopens;
// a start older than the kept logs refused.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "store/db.h"
#include "store/env/mem_env.h"
#include "tests/store/db/mem_db_test.h"

namespace tabletfs {
namespace {

using std::chrono::microseconds;

class DBChangesTest : public MemDbTest {
 protected:
  void SetUp() override {
    MemDbTest::SetUp();
    ASSERT_TRUE(db_->CreateTable("t").ok());
    ASSERT_TRUE(db_->CreateFamily("t", "f", FamilySettings()).ok());
    ASSERT_TRUE(db_->CreateFamily("t", "g", FamilySettings()).ok());
  }

  // Sets f:q of `row` at the server timestamp; returns the commit time.
  int64_t Put(const std::string& row, uint64_t origin = 0,
              const std::string& table = "t") {
    RowMutation m(row);
    m.SetCell("f", "q", "v");
    WriteOptions wo;
    wo.origin = origin;
    auto r = db_->Apply(table, m, wo);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : 0;
  }

  std::unique_ptr<ChangeSubscription> Since(int64_t since,
                                            size_t queue = 1 << 16) {
    SubscribeOptions so;
    so.table = "t";
    so.since = since;
    so.max_queued_events = queue;
    auto sub = db_->Subscribe(so);
    EXPECT_TRUE(sub.ok()) << sub.status().ToString();
    return sub.ok() ? std::move(*sub) : nullptr;
  }

  // The rows of every event read until a read comes back empty.
  static std::vector<std::string> Rows(ChangeSubscription* sub) {
    std::vector<std::string> rows;
    for (;;) {
      ChangeBatch b = sub->Read(microseconds(0));
      EXPECT_EQ(b.lost, 0u);
      if (b.events.empty()) return rows;
      for (const ChangeEvent& e : b.events) rows.push_back(e.row);
    }
  }

  // "r<i>" (appended, not R(i): GCC 12 warns falsely
  // on that, bug 105329).
  static std::string R(int i) {
    return std::string("r").append(std::to_string(i));
  }

  // R(from) .. R(to - 1).
  static std::vector<std::string> Rs(int from, int to) {
    std::vector<std::string> out;
    for (int i = from; i < to; ++i) out.push_back(R(i));
    return out;
  }

};

TEST_F(DBChangesTest, ThePastSinceTComesFirstThenTheLiveChanges) {
  std::vector<int64_t> ts;
  for (int i = 0; i < 10; ++i) ts.push_back(Put(R(i)));
  auto sub = Since(ts[3]);
  ASSERT_NE(sub, nullptr);
  for (int i = 10; i < 13; ++i) Put(R(i));
  EXPECT_EQ(Rows(sub.get()), Rs(3, 13));
}

TEST_F(DBChangesTest, ThePastHasTheSameEventsAsTheLiveFeed) {
  SubscribeOptions live_options;
  live_options.table = "t";
  auto live = db_->Subscribe(live_options);
  ASSERT_TRUE(live.ok());
  RowMutation m("r");
  m.SetCell("f", "a", "x")
      .SetCell("g", "b", 42, "y")
      .DeleteVersion("f", "a", 7)
      .DeleteCell("g", "c")
      .DeleteFamily("g")
      .DeleteRow();
  WriteOptions wo;
  wo.origin = 5;
  auto ts = db_->Apply("t", m, wo);
  ASSERT_TRUE(ts.ok());
  RowMutation tricky(std::string("a\0b", 3));
  tricky.SetCell("f", std::string("\0", 1), "z");
  ASSERT_TRUE(db_->Apply("t", tricky, WriteOptions()).ok());
  ChangeBatch expected = (*live)->Read(microseconds(0));
  ASSERT_EQ(expected.events.size(), 7u);
  EXPECT_EQ(expected.events[0].value, "x");  // and the past has it too

  auto sub = Since(*ts);
  ASSERT_NE(sub, nullptr);
  ChangeBatch got = sub->Read(microseconds(0));
  EXPECT_EQ(got.lost, 0u);
  EXPECT_EQ(got.events, expected.events);
}

TEST_F(DBChangesTest, ThePastKeepsToTheTableAndSkipsTheExcludedOrigin) {
  ASSERT_TRUE(db_->CreateTable("u").ok());
  ASSERT_TRUE(db_->CreateFamily("u", "f", FamilySettings()).ok());
  const int64_t start = Put("a");
  Put("b", /*origin=*/9);
  Put("x", 0, "u");
  Put("c");
  SubscribeOptions so;
  so.table = "t";
  so.since = start;
  so.exclude_origin = 9;
  auto sub = db_->Subscribe(so);
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(Rows(sub->get()), (std::vector<std::string>{"a", "c"}));
  // Every table.
  so.table.clear();
  so.exclude_origin = 0;
  sub = db_->Subscribe(so);
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(Rows(sub->get()), (std::vector<std::string>{"a", "b", "x", "c"}));
}

TEST_F(DBChangesTest, AStartInTheFutureStartsNow) {
  Put("old");
  auto sub = Since(db_->LastTimestamp() + 1000000);
  ASSERT_NE(sub, nullptr);
  Put("new");
  EXPECT_EQ(Rows(sub.get()), (std::vector<std::string>{"new"}));
}

TEST_F(DBChangesTest, ThePastReachesAcrossFlushesWithinTheBudget) {
  options_.memtable_bytes = 4 << 10;  // a log every 4 KiB
  Reopen();
  const int64_t start = Put("r0");
  for (int i = 1; i < 200; ++i) {
    Put(R(i));
    if (i % 50 == 0) {
      ASSERT_TRUE(db_->Flush().ok());
    }
  }
  ASSERT_TRUE(db_->WaitForIdle().ok());
  auto sub = Since(start);
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(Rows(sub.get()), Rs(0, 200));
}

TEST_F(DBChangesTest, AStartOlderThanTheKeptLogsSaysSo) {
  options_.change_history_bytes = 0;  // only the live logs
  Reopen();
  const int64_t first = Put("a");
  ASSERT_TRUE(db_->Flush().ok());
  const int64_t second = Put("b");
  SubscribeOptions so;
  so.table = "t";
  so.since = first;
  auto refused = db_->Subscribe(so);
  ASSERT_TRUE(refused.status().IsNotFound()) << refused.status().ToString();
  // It names the oldest start held: just after the flushed write.
  const std::string oldest = std::to_string(first + 1);
  EXPECT_NE(refused.status().ToString().find("changes before " + oldest),
            std::string::npos)
      << refused.status().ToString();
  auto sub = Since(first + 1);
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(Rows(sub.get()), (std::vector<std::string>{"b"}));
  EXPECT_EQ(second, first + 1);
}

TEST_F(DBChangesTest, ALogBeingReadIsNotDeletedUnderTheReader) {
  options_.change_history_bytes = 0;
  Reopen();
  const int64_t start = Put("a");
  Put("b");
  auto sub = Since(start);
  ASSERT_NE(sub, nullptr);
  // The log it reads is flushed and past the budget: it stays until read.
  ASSERT_TRUE(db_->Flush().ok());
  ASSERT_TRUE(db_->WaitForIdle().ok());
  Put("c");
  EXPECT_EQ(Rows(sub.get()), (std::vector<std::string>{"a", "b", "c"}));
  sub.reset();
  ASSERT_TRUE(db_->Flush().ok());
  ASSERT_TRUE(db_->WaitForIdle().ok());
  SubscribeOptions so;
  so.since = start;
  EXPECT_TRUE(db_->Subscribe(so).status().IsNotFound());
}

// Short of space (less than twice the reserve free), flushed logs are not
// kept for the past: deletes give their space back.
TEST_F(DBChangesTest, ShortOfSpaceNoFlushedLogIsKept) {
  options_.space_reserve_bytes = 1 << 20;
  Reopen();
  const int64_t start = Put("a");
  env_.SetFreeSpace(3 << 20);  // plenty: the flushed log stays
  RowMutation del("a");
  del.DeleteRow();
  ASSERT_TRUE(db_->Apply("t", del, WriteOptions()).ok());
  ASSERT_TRUE(db_->Flush().ok());
  ASSERT_TRUE(db_->WaitForIdle().ok());
  auto sub = Since(start);
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(Rows(sub.get()), (std::vector<std::string>{"a", "a"}));
  sub.reset();
  env_.SetFreeSpace(3 << 19);  // 1.5 MiB: short
  ASSERT_TRUE(db_->Apply("t", del, WriteOptions()).ok());
  ASSERT_TRUE(db_->Flush().ok());
  ASSERT_TRUE(db_->WaitForIdle().ok());
  SubscribeOptions so;
  so.since = start;
  EXPECT_TRUE(db_->Subscribe(so).status().IsNotFound());
}

TEST_F(DBChangesTest, AfterReopenThePastComesFromTheRecoveredLogs) {
  const int64_t start = Put("a");
  Put("b");
  Reopen();
  auto sub = Since(start);
  ASSERT_NE(sub, nullptr);
  Put("c");
  EXPECT_EQ(Rows(sub.get()), (std::vector<std::string>{"a", "b", "c"}));
  // The next reopen recovers (and keeps) the log that holds "c"; the log
  // recovered before was flushed at the last open and goes: the past now
  // starts after "b".
  Reopen();
  SubscribeOptions so;
  so.since = start + 1;
  EXPECT_TRUE(db_->Subscribe(so).status().IsNotFound());
  auto later = Since(start + 2);
  ASSERT_NE(later, nullptr);
  EXPECT_EQ(Rows(later.get()), (std::vector<std::string>{"c"}));
}

TEST_F(DBChangesTest, APastLargerThanTheQueueIsReadOneQueueAtATime) {
  const int64_t start = Put("r0");
  for (int i = 1; i < 100; ++i) Put(R(i));
  auto sub = Since(start, /*queue=*/10);
  ASSERT_NE(sub, nullptr);
  Put("r100");
  std::vector<std::string> rows;
  for (;;) {
    ChangeBatch b = sub->Read(microseconds(0));
    EXPECT_EQ(b.lost, 0u);
    EXPECT_LE(b.events.size(), 10u);  // one write per record here
    if (b.events.empty()) break;
    // The past, then "r100" live.
    EXPECT_EQ(b.past, b.events.back().row != "r100") << b.events.back().row;
    for (const ChangeEvent& e : b.events) rows.push_back(e.row);
  }
  EXPECT_EQ(rows, Rs(0, 101));
}

TEST_F(DBChangesTest, ThePastOfADroppedFamilyIsGone) {
  const int64_t start = Put("a");
  RowMutation m("b");
  m.SetCell("g", "q", "v");
  ASSERT_TRUE(db_->Apply("t", m, WriteOptions()).ok());
  ASSERT_TRUE(db_->DeleteFamily("t", "g").ok());
  auto sub = Since(start);
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(Rows(sub.get()), (std::vector<std::string>{"a"}));
}

}  // namespace
}  // namespace tabletfs
