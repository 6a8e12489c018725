#include "fs/inode_table.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/fs/cell_node.h"

namespace tabletfs::fs {
namespace {

TEST(InodeTableTest, RootIsOneAndNeverForgotten) {
  InodeTable t;
  EXPECT_EQ(t.Lookup(Node()), InodeTable::kRootInode);
  t.Forget(InodeTable::kRootInode, 100);
  EXPECT_TRUE(t.Get(InodeTable::kRootInode).has_value());
}

TEST(InodeTableTest, CountsLookupsExactly) {
  InodeTable t;
  uint64_t a = t.Lookup(Cell("a"));
  EXPECT_EQ(t.Lookup(Cell("a")), a);
  EXPECT_EQ(t.Lookup(Cell("a"), 0), a);
  EXPECT_EQ(t.LookupCount(a), 2u);
  t.Forget(a, 1);
  EXPECT_TRUE(t.Get(a).has_value());
  t.Forget(a, 1);
  EXPECT_FALSE(t.Get(a).has_value());
  EXPECT_FALSE(t.Find(Cell("a")).has_value());
  // A new lookup gets a new number: numbers are never reused.
  uint64_t b = t.Lookup(Cell("a"));
  EXPECT_NE(a, b);
  EXPECT_EQ(t.size(), 2u);
}

TEST(InodeTableTest, VersionsHaveTheirOwnInode) {
  InodeTable t;
  Node v = Cell("q");
  v.at = 5;
  EXPECT_NE(t.Lookup(Cell("q")), t.Lookup(v));
}

TEST(InodeTableTest, RebindFollowsARename) {
  InodeTable t;
  uint64_t a = t.Lookup(Cell("a"));
  uint64_t b = t.Lookup(Cell("b"));
  t.Rebind(Cell("a"), Cell("b"));
  EXPECT_EQ(t.Find(Cell("b")), a);
  EXPECT_FALSE(t.Find(Cell("a")).has_value());
  EXPECT_EQ(t.Get(a)->qualifier, "b");
  // The replaced inode keeps its node until forgotten, without stealing
  // the name from the moved one.
  t.Forget(b, 1);
  EXPECT_EQ(t.Find(Cell("b")), a);
}

TEST(InodeTableTest, UnbindFreesTheNameForANewInode) {
  InodeTable t;
  uint64_t a = t.Lookup(Cell("a"));
  t.Unbind(Cell("a"), a + 1);  // another inode: no change
  EXPECT_EQ(t.Find(Cell("a")), a);
  t.Unbind(Cell("a"), a);
  EXPECT_FALSE(t.Find(Cell("a")).has_value());
  EXPECT_EQ(t.Get(a)->qualifier, "a");  // the open file keeps its node
  uint64_t again = t.Lookup(Cell("a"));
  EXPECT_NE(again, a);
  // Forgetting the removed inode leaves the new one bound.
  t.Forget(a, 1);
  EXPECT_EQ(t.Find(Cell("a")), again);
}

TEST(InodeTableTest, ARetiredInodeFollowsItsCellUntilRemovedOrFreed) {
  InodeTable t;
  uint64_t a = t.Lookup(Cell("a"));
  EXPECT_FALSE(t.Retire(Cell("a"), a + 1));  // not bound to it
  EXPECT_EQ(t.Find(Cell("a")), a);
  EXPECT_TRUE(t.Retired(Cell("a")).empty());
  EXPECT_TRUE(t.RetiredAlike(a).empty());
  EXPECT_TRUE(t.Retire(Cell("a"), a));
  EXPECT_FALSE(t.Retire(Cell("a"), a));  // once
  EXPECT_FALSE(t.Find(Cell("a")).has_value());
  EXPECT_TRUE(t.RetiredAlike(a).empty());  // nothing bound yet
  uint64_t b = t.Lookup(Cell("a"));
  EXPECT_NE(b, a);
  EXPECT_EQ(t.Retired(Cell("a")), std::vector<uint64_t>{a});
  EXPECT_EQ(t.RetiredAlike(b), std::vector<uint64_t>{a});
  EXPECT_EQ(t.RetiredAlike(a), std::vector<uint64_t>{b});
  // stat shows the first inode's number for both.
  EXPECT_EQ(t.StatIno(a), a);
  EXPECT_EQ(t.StatIno(b), a);
  EXPECT_TRUE(t.Retire(Cell("a"), b));
  uint64_t b2 = t.Lookup(Cell("a"));
  EXPECT_EQ(t.StatIno(b2), a);
  t.Forget(b, 1);  // freed: off the list
  EXPECT_EQ(t.RetiredAlike(b2), std::vector<uint64_t>{a});
  // A rename takes it along, with the bound inode.
  t.Rebind(Cell("a"), Cell("z"));
  EXPECT_TRUE(t.Retired(Cell("a")).empty());
  EXPECT_EQ(t.Retired(Cell("z")), std::vector<uint64_t>{a});
  EXPECT_EQ(t.Get(a)->qualifier, "z");
  EXPECT_EQ(t.RetiredAlike(b2), std::vector<uint64_t>{a});
  EXPECT_EQ(t.RetiredAlike(a), std::vector<uint64_t>{b2});
  // Removed: it keeps its node but follows nothing.
  t.Unbind(Cell("z"), a);
  EXPECT_TRUE(t.Retired(Cell("z")).empty());
  EXPECT_EQ(t.Get(a)->qualifier, "z");
  // Freed by the kernel's FORGET: gone from the list too.
  uint64_t c = t.Lookup(Cell("c"));
  EXPECT_TRUE(t.Retire(Cell("c"), c));
  t.Forget(c, 1);
  EXPECT_FALSE(t.Get(c).has_value());
  EXPECT_TRUE(t.Retired(Cell("c")).empty());
}

// A reader's open moves the cell to a new inode, a writer's open moves it
// back to the writers' inode (fs/write_path.cc): each bound in turn, the
// other retired and following.
TEST(InodeTableTest, ARetiredInodeIsBoundAgainByRestore) {
  InodeTable t;
  uint64_t w = t.Lookup(Cell("a"));
  EXPECT_FALSE(t.Restore(Cell("a"), w));  // bound, not retired
  ASSERT_TRUE(t.Retire(Cell("a"), w));
  EXPECT_FALSE(t.Restore(Cell("b"), w));  // not a retired inode of b
  uint64_t r = t.Lookup(Cell("a"));
  EXPECT_TRUE(t.Restore(Cell("a"), w));
  EXPECT_EQ(t.Find(Cell("a")), w);
  EXPECT_EQ(t.Lookup(Cell("a")), w);
  EXPECT_EQ(t.Retired(Cell("a")), std::vector<uint64_t>{r});
  EXPECT_EQ(t.RetiredAlike(w), std::vector<uint64_t>{r});
  EXPECT_EQ(t.RetiredAlike(r), std::vector<uint64_t>{w});
  EXPECT_EQ(t.StatIno(r), w);
  EXPECT_EQ(t.StatIno(w), w);
  EXPECT_FALSE(t.Restore(Cell("a"), w));  // bound already
  EXPECT_TRUE(t.Restore(Cell("a"), r));
  EXPECT_EQ(t.Find(Cell("a")), r);
  EXPECT_EQ(t.Retired(Cell("a")), std::vector<uint64_t>{w});
  // With nothing bound (retired, not looked up again), it is bound alone.
  ASSERT_TRUE(t.Retire(Cell("a"), r));
  EXPECT_TRUE(t.Restore(Cell("a"), w));
  EXPECT_EQ(t.Find(Cell("a")), w);
  EXPECT_EQ(t.Retired(Cell("a")), std::vector<uint64_t>{r});
  // Forgotten by the kernel: nothing to restore.
  t.Forget(r, 1);
  EXPECT_FALSE(t.Restore(Cell("a"), r));
  EXPECT_EQ(t.Find(Cell("a")), w);
  // A moved inode forgotten before the new one is looked up: the new one
  // still shows the cell's number.
  ASSERT_TRUE(t.Retire(Cell("a"), w));
  t.Forget(w, 2);
  EXPECT_FALSE(t.Get(w).has_value());
  uint64_t n = t.Lookup(Cell("a"));
  EXPECT_EQ(t.StatIno(n), w);
  // Removed: a file created under the name is another file.
  t.Unbind(Cell("a"), n);
  uint64_t m = t.Lookup(Cell("a"));
  EXPECT_EQ(t.StatIno(m), m);
}

TEST(InodeTableTest, KeepCacheOnlyWhileTheVersionIsUnchanged) {
  InodeTable t;
  uint64_t a = t.Lookup(Cell("a"));
  EXPECT_FALSE(t.SameVersionAsLastOpen(a, 10, 3));
  EXPECT_TRUE(t.SameVersionAsLastOpen(a, 10, 3));
  EXPECT_FALSE(t.SameVersionAsLastOpen(a, 11, 3));
}

TEST(InodeTableTest, ConcurrentLookupsAndForgetsBalance) {
  InodeTable t;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; i++) {
    threads.emplace_back([&t] {
      for (int j = 0; j < 10000; j++) {
        uint64_t ino = t.Lookup(Cell(std::to_string(j % 10)));
        t.Forget(ino, 1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(t.size(), 1u);  // only the root
}

}  // namespace
}  // namespace tabletfs::fs
