#include "fs/lock_table.h"

#include <errno.h>

#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "tests/fs/cell_node.h"

namespace tabletfs::fs {
namespace {

using Kind = LockTable::Kind;

LockTable::Lock Range(uint64_t owner, bool write, uint64_t first, uint64_t last,
                      uint64_t handle = 1) {
  LockTable::Lock l;
  l.owner = owner;
  l.write = write;
  l.first = first;
  l.last = last;
  l.pid = static_cast<pid_t>(owner);
  l.handle = handle;
  return l;
}

int SetNow(LockTable& t, const Node& n, Kind kind, const LockTable::Lock& l,
           bool unlock = false) {
  return t.Set(n, kind, l, unlock, false, nullptr, nullptr);
}

TEST(LockTableTest, ReadLocksShareAndWriteLocksExclude) {
  LockTable t;
  const Node a = Cell("a");
  EXPECT_EQ(SetNow(t, a, Kind::kPosix, Range(1, false, 0, 9)), 0);
  EXPECT_EQ(SetNow(t, a, Kind::kPosix, Range(2, false, 5, 20)), 0);
  EXPECT_EQ(SetNow(t, a, Kind::kPosix, Range(3, true, 9, 9)), EAGAIN);
  EXPECT_EQ(SetNow(t, a, Kind::kPosix, Range(3, true, 21, 30)), 0);
  // F_GETLK names a lock in the way.
  auto c = t.Test(a, Kind::kPosix, Range(4, true, 0, 0));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->owner, 1u);
  EXPECT_FALSE(t.Test(a, Kind::kPosix, Range(4, false, 0, 0)).has_value());
  // An owner never conflicts with itself: it upgrades its own range.
  EXPECT_EQ(SetNow(t, a, Kind::kPosix, Range(3, true, 25, LockTable::kToEnd)),
            0);
  EXPECT_EQ(SetNow(t, a, Kind::kPosix, Range(1, false, 1000, 1000)), EAGAIN);
  // Another node and the other kind are apart.
  EXPECT_EQ(SetNow(t, Cell("b"), Kind::kPosix, Range(4, true, 0, 9)), 0);
  EXPECT_EQ(SetNow(t, a, Kind::kFlock, Range(4, true, 0, LockTable::kToEnd)),
            0);
}

TEST(LockTableTest, UnlockingTheMiddleSplitsALock) {
  LockTable t;
  const Node a = Cell("a");
  ASSERT_EQ(SetNow(t, a, Kind::kPosix, Range(1, true, 0, 99)), 0);
  ASSERT_EQ(SetNow(t, a, Kind::kPosix, Range(1, true, 40, 59), true), 0);
  EXPECT_EQ(t.LocksOn(a, Kind::kPosix), 2u);
  EXPECT_EQ(SetNow(t, a, Kind::kPosix, Range(2, true, 40, 59)), 0);
  EXPECT_EQ(SetNow(t, a, Kind::kPosix, Range(2, true, 39, 39)), EAGAIN);
  EXPECT_EQ(SetNow(t, a, Kind::kPosix, Range(2, true, 60, 60)), EAGAIN);
  // Downgrading a part to a read lock splits the piece it is in: owner 1
  // holds 0-9, 10-19 (read), 20-39 and 60-99; owner 2 holds 40-59.
  ASSERT_EQ(SetNow(t, a, Kind::kPosix, Range(1, false, 10, 19)), 0);
  EXPECT_EQ(t.LocksOn(a, Kind::kPosix), 5u);
  EXPECT_EQ(SetNow(t, a, Kind::kPosix, Range(3, false, 10, 19)), 0);
  EXPECT_EQ(SetNow(t, a, Kind::kPosix, Range(3, false, 20, 20)), EAGAIN);
}

TEST(LockTableTest, WaitersAreGrantedWhenTheWayClears) {
  LockTable t;
  const Node a = Cell("a");
  ASSERT_EQ(SetNow(t, a, Kind::kFlock, Range(1, true, 0, LockTable::kToEnd)),
            0);
  std::vector<std::pair<int, int>> replies;  // (waiter, err)
  uint64_t w2 = 0, w3 = 0, w4 = 0;
  EXPECT_EQ(t.Set(
                a, Kind::kFlock, Range(2, false, 0, LockTable::kToEnd), false,
                true, [&](int e) { replies.emplace_back(2, e); }, &w2),
            -1);
  EXPECT_EQ(t.Set(
                a, Kind::kFlock, Range(3, false, 0, LockTable::kToEnd), false,
                true, [&](int e) { replies.emplace_back(3, e); }, &w3),
            -1);
  EXPECT_EQ(t.Set(
                a, Kind::kFlock, Range(4, true, 0, LockTable::kToEnd), false,
                true, [&](int e) { replies.emplace_back(4, e); }, &w4),
            -1);
  EXPECT_TRUE(replies.empty());
  t.Cancel(w3);  // its caller got a signal
  EXPECT_EQ(replies, (std::vector<std::pair<int, int>>{{3, EINTR}}));
  t.Cancel(w3);  // once
  // The writer's close: both shared waiters could go, 3 is gone, and 4
  // (exclusive) waits for 2.
  t.ReleaseOwner(a, Kind::kFlock, 1);
  EXPECT_EQ(replies, (std::vector<std::pair<int, int>>{{3, EINTR}, {2, 0}}));
  t.ReleaseOwner(a, Kind::kFlock, 2);
  EXPECT_EQ(replies.back(), std::make_pair(4, 0));
  t.Cancel(w4);  // granted already: nothing
  EXPECT_EQ(replies.size(), 3u);
  EXPECT_EQ(t.LocksOn(a, Kind::kFlock), 1u);
}

TEST(LockTableTest, AReleasedHandleTakesItsLocksAlong) {
  LockTable t;
  const Node a = Cell("a");
  EXPECT_FALSE(t.used());
  ASSERT_EQ(SetNow(t, a, Kind::kPosix, Range(1, true, 0, 9, /*handle=*/7)), 0);
  ASSERT_EQ(SetNow(t, a, Kind::kPosix, Range(1, true, 20, 29, /*handle=*/8)),
            0);
  EXPECT_TRUE(t.used());
  t.ReleaseHandle(a, 7);
  EXPECT_EQ(SetNow(t, a, Kind::kPosix, Range(2, true, 0, 9)), 0);
  EXPECT_EQ(SetNow(t, a, Kind::kPosix, Range(2, true, 20, 29)), EAGAIN);
  t.ReleaseOwner(a, Kind::kPosix, 1);
  EXPECT_EQ(SetNow(t, a, Kind::kPosix, Range(2, true, 20, 29)), 0);
  t.ReleaseOwner(a, Kind::kPosix, 2);
  EXPECT_EQ(t.LocksOn(a, Kind::kPosix), 0u);
}

// Two holders of a shared flock lock both ask for it exclusive: as on
// Linux, a conversion drops the old lock first, so one of them gets it
// (they waited for each other forever).
TEST(LockTableTest, TwoSharedHoldersUpgradingDoNotWaitForEachOther) {
  LockTable t;
  const Node a = Cell("a");
  const auto all = LockTable::kToEnd;
  ASSERT_EQ(SetNow(t, a, Kind::kFlock, Range(1, false, 0, all)), 0);
  ASSERT_EQ(SetNow(t, a, Kind::kFlock, Range(2, false, 0, all)), 0);
  std::vector<int> got;
  uint64_t w1 = 0;
  EXPECT_EQ(t.Set(
                a, Kind::kFlock, Range(1, true, 0, all), false, true,
                [&](int e) { got.push_back(1000 + e); }, &w1),
            -1);  // 2 still holds it shared
  uint64_t w2 = 0;
  // 1's conversion dropped its shared lock while it waits: 2's gets in at
  // once, and 1 gets it after 2.
  EXPECT_EQ(t.Set(
                a, Kind::kFlock, Range(2, true, 0, all), false, true,
                [&](int e) { got.push_back(2000 + e); }, &w2),
            0);
  EXPECT_TRUE(got.empty());
  t.ReleaseOwner(a, Kind::kFlock, 2);
  EXPECT_EQ(got, std::vector<int>{1000});
  t.ReleaseOwner(a, Kind::kFlock, 1);
  // A conversion that cannot wait loses the old lock, as flock(2) says.
  ASSERT_EQ(SetNow(t, a, Kind::kFlock, Range(2, false, 0, all)), 0);
  ASSERT_EQ(SetNow(t, a, Kind::kFlock, Range(3, false, 0, all)), 0);
  EXPECT_EQ(SetNow(t, a, Kind::kFlock, Range(2, true, 0, all)), EAGAIN);
  EXPECT_EQ(t.LocksOn(a, Kind::kFlock), 1u);  // 3's
}

// A grant that frees what an earlier waiter needs wakes it too: A holds
// 0-99 for writing, C 200-299; B waits to read 0-9, A to read 0-299 (a
// downgrade); C's unlock lets A's downgrade in, which lets B in.
TEST(LockTableTest, AGrantThatFreesAnEarlierWaiterWakesIt) {
  LockTable t;
  const Node a = Cell("a");
  ASSERT_EQ(SetNow(t, a, Kind::kPosix, Range(1, true, 0, 99)), 0);
  ASSERT_EQ(SetNow(t, a, Kind::kPosix, Range(3, true, 200, 299)), 0);
  std::vector<int> got;
  uint64_t w = 0;
  ASSERT_EQ(t.Set(
                a, Kind::kPosix, Range(2, false, 0, 9), false, true,
                [&](int e) { got.push_back(2000 + e); }, &w),
            -1);
  ASSERT_EQ(t.Set(
                a, Kind::kPosix, Range(1, false, 0, 299), false, true,
                [&](int e) { got.push_back(1000 + e); }, &w),
            -1);
  t.ReleaseOwner(a, Kind::kPosix, 3);
  EXPECT_EQ(got, (std::vector<int>{1000, 2000}));
}

// A rename takes the locks along: the new name is locked, the old one is
// free for a new file.
TEST(LockTableTest, LocksFollowARename) {
  LockTable t;
  ASSERT_EQ(SetNow(t, Cell("a"), Kind::kPosix, Range(1, true, 0, 9)), 0);
  t.Rebind(Cell("a"), Cell("b"));
  EXPECT_EQ(SetNow(t, Cell("a"), Kind::kPosix, Range(2, true, 0, 9)), 0);
  EXPECT_EQ(SetNow(t, Cell("b"), Kind::kPosix, Range(2, true, 0, 9)), EAGAIN);
  t.ReleaseOwner(Cell("b"), Kind::kPosix, 1);
  EXPECT_EQ(SetNow(t, Cell("b"), Kind::kPosix, Range(2, true, 0, 9)), 0);
}

// A cell removed while open keeps its locks with its open inodes; a new
// file under the name starts with none.
TEST(LockTableTest, ARemovedCellsLocksStayWithItsOpenFiles) {
  LockTable t;
  const Node a = Cell("a");
  ASSERT_EQ(SetNow(t, a, Kind::kFlock, Range(1, true, 0, LockTable::kToEnd)),
            0);
  EXPECT_FALSE(t.OrphanKey(5).has_value());
  t.Orphan(a, {5, 6});
  std::optional<Node> key = t.OrphanKey(5);
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(t.OrphanKey(6), key);
  EXPECT_NE(*key, a);
  EXPECT_EQ(SetNow(t, a, Kind::kFlock, Range(2, true, 0, LockTable::kToEnd)),
            0);
  EXPECT_EQ(SetNow(t, *key, Kind::kFlock, Range(2, true, 0, LockTable::kToEnd)),
            EAGAIN);
  t.ReleaseOwner(*key, Kind::kFlock, 1);
  EXPECT_EQ(t.LocksOn(*key, Kind::kFlock), 0u);
  t.ForgetInode(5);
  EXPECT_FALSE(t.OrphanKey(5).has_value());
  EXPECT_TRUE(t.OrphanKey(6).has_value());
}

}  // namespace
}  // namespace tabletfs::fs
