// Real-mount tests of open files as a local disk treats them: a cell removed
// or renamed while a writer holds it open, and a file created but not yet
// closed (DESIGN.md "Writing"; issue 4).
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

class OpenFilesTest : public MountFixture {
 protected:
  // ENOENT-or-not of a name, asked by another process (not through an
  // inode this process holds).
  bool ExistsForOthers(const std::string& rel) {
    return Sh("test -e '" + rel + "'") == 0;
  }
};

// On a local disk an unlinked open file never reappears: its writer's later
// writes and close go to the orphaned inode.
TEST_F(OpenFilesTest, RmWhileAWriterHasTheCellOpenStaysGone) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && echo old > t/r/f/q");
  int fd = open(Path("t/r/f/q").c_str(), O_RDWR | O_TRUNC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "new\n", 4), 4);
  ShOk("rm t/r/f/q");
  EXPECT_FALSE(ExistsForOthers("t/r/f/q"));
  // The writer still works on its own copy.
  ASSERT_EQ(write(fd, "more\n", 5), 5);
  char buf[16] = {};
  EXPECT_EQ(pread(fd, buf, sizeof(buf), 0), 9);
  EXPECT_EQ(std::string(buf, 9), "new\nmore\n");
  EXPECT_EQ(fsync(fd), 0);
  EXPECT_EQ(close(fd), 0);
  EXPECT_FALSE(ExistsForOthers("t/r/f/q"));
  EXPECT_EQ(ShOk("ls t/r/f"), "");
  Unmount();
  Mount();
  EXPECT_FALSE(ExistsForOthers("t/r/f/q"));
}

TEST_F(OpenFilesTest, RmOfACreatedFileBeforeItsCloseStaysGone) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");
  int fd = open(Path("t/r/f/n").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "data", 4), 4);
  EXPECT_EQ(unlink(Path("t/r/f/n").c_str()), 0);
  EXPECT_FALSE(ExistsForOthers("t/r/f/n"));
  EXPECT_EQ(close(fd), 0);
  EXPECT_FALSE(ExistsForOthers("t/r/f/n"));
  // A new file of that name is a new cell, and its own.
  ShOk("echo again > t/r/f/n");
  EXPECT_EQ(ShOk("cat t/r/f/n"), "again\n");
}

// On a local disk the writer's data follows the file to its new name.
TEST_F(OpenFilesTest, MvWhileAWriterHasTheCellOpenKeepsItsDataAtTheNewName) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && echo first > t/r/f/a && echo dst > t/r/f/b");
  int fd = open(Path("t/r/f/a").c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "second\n", 7), 7);
  // A writer of the destination is orphaned by the rename.
  int old_b = open(Path("t/r/f/b").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(old_b, 0);
  ASSERT_EQ(write(old_b, "lost\n", 5), 5);
  ShOk("mv t/r/f/a t/r/f/b");
  EXPECT_EQ(close(old_b), 0);
  EXPECT_EQ(close(fd), 0);
  EXPECT_FALSE(ExistsForOthers("t/r/f/a"));
  EXPECT_EQ(ShOk("ls t/r/f"), "b\n");
  EXPECT_EQ(ShOk("cat t/r/f/b"), "second\n");
}

// A local disk shows a created file at once (empty until written); here its
// name is listed and found by other processes before the creator closes it.
TEST_F(OpenFilesTest, ACreatedFileIsVisibleBeforeItsClose) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");
  int fd = open(Path("t/r/f/n").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(ShOk("ls t/r/f"), "n\n");
  EXPECT_EQ(ShOk("stat -c %s t/r/f/n"), "0\n");
  EXPECT_EQ(ShOk("cat t/r/f/n"), "");
  ASSERT_EQ(write(fd, "abc", 3), 3);
  // Its size through stat is what the writer holds.
  EXPECT_EQ(ShOk("stat -c %s t/r/f/n"), "3\n");
  // A second O_EXCL create of that name fails, as on a local disk.
  errno = 0;
  EXPECT_EQ(open(Path("t/r/f/n").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644),
            -1);
  EXPECT_EQ(errno, EEXIST);
  EXPECT_EQ(close(fd), 0);
  EXPECT_EQ(ShOk("cat t/r/f/n"), "abc");
  Unmount();
  // One version: the empty one made at create was replaced.
  auto db = OpenDb();
  ReadOptions ro;
  ro.max_versions = 0;
  auto cells = db->ReadCell("t", "r", "f", "n", ro);
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(cells->size(), 1u);
  EXPECT_EQ((*cells)[0].value, "abc");
}

}  // namespace
}  // namespace tabletfs::testing
