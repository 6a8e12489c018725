#include "fs/file_handle.h"

#include <errno.h>

#include "gtest/gtest.h"

namespace tabletfs::fs {
namespace {

using Mode = FileHandle::Mode;

TEST(FileHandleTest, RandomWritesTruncateAndReadBack) {
  FileHandle h(2, Node(), Mode::kWrite, "0123456789", false, 100);
  MutexLock lock(h.mu());
  EXPECT_FALSE(h.NeedsCommit());  // opened, nothing written
  ASSERT_TRUE(h.Write(3, "AB").ok());
  EXPECT_EQ(h.Read(0, 100), "012AB56789");
  ASSERT_TRUE(h.Write(12, "Z").ok());
  EXPECT_EQ(h.buffer(), std::string("012AB56789\0\0Z", 13));
  ASSERT_TRUE(h.Truncate(4).ok());
  EXPECT_EQ(h.Read(2, 10), "2A");
  EXPECT_EQ(h.Read(10, 10), "");
  EXPECT_TRUE(h.NeedsCommit());
  h.Committed(5);
  EXPECT_FALSE(h.NeedsCommit());
  EXPECT_FALSE(h.placeholder_timestamp().has_value());
}

TEST(FileHandleTest, FreshHandleCommitsEmptyOnceAsAPlaceholder) {
  FileHandle h(2, Node(), Mode::kWrite, "", true, 100);
  MutexLock lock(h.mu());
  EXPECT_TRUE(h.NeedsCommit());
  h.Committed(7);  // the FLUSH of a dup closed before any write
  EXPECT_EQ(h.placeholder_timestamp(), 7);
  EXPECT_FALSE(h.NeedsCommit());
  ASSERT_TRUE(h.Write(0, "x").ok());
  EXPECT_TRUE(h.NeedsCommit());
  h.Committed(8);
  EXPECT_FALSE(h.placeholder_timestamp().has_value());
}

TEST(FileHandleTest, AppendKeepsOnlyUncommittedBytes) {
  FileHandle h(2, Node(), Mode::kAppend, "ignored", false, 100);
  MutexLock lock(h.mu());
  ASSERT_TRUE(h.Write(999, "a\n").ok());  // offsets do not matter
  ASSERT_TRUE(h.Write(0, "b\n").ok());
  EXPECT_EQ(h.buffer(), "a\nb\n");
  h.Committed(1);
  EXPECT_EQ(h.buffer(), "");
  EXPECT_FALSE(h.NeedsCommit());
}

TEST(FileHandleTest, RefusedWriteCommitsNothing) {
  FileHandle h(2, Node(), Mode::kWrite, "abc", true, 10);
  MutexLock lock(h.mu());
  EXPECT_EQ(h.Write(8, "xyz").err, EFBIG);
  EXPECT_FALSE(h.NeedsCommit());
  EXPECT_EQ(h.Truncate(11).err, EFBIG);
  // Later writes that would fit fail too: nothing of this handle is
  // committed, so accepting them would lose them silently.
  EXPECT_EQ(h.Write(0, "x").err, EFBIG);
  EXPECT_EQ(h.Truncate(1).err, EFBIG);
  EXPECT_FALSE(h.NeedsCommit());
}

TEST(FileHandleTest, WriteRefusedBeforeTheHandleFailsLaterWrites) {
  // write() refused with ENOSPC by the filesystem before the handle saw it.
  FileHandle h(2, Node(), Mode::kWrite, "", true, 100);
  MutexLock lock(h.mu());
  h.Refuse(ENOSPC);
  EXPECT_FALSE(h.NeedsCommit()) << "a fresh handle would commit an empty value";
  EXPECT_EQ(h.Write(0, "x").err, ENOSPC);
  EXPECT_FALSE(h.NeedsCommit());
}

TEST(FileHandleTest, FailedCommitMakesLaterWritesFail) {
  FileHandle h(2, Node(), Mode::kWrite, "", false, 10);
  MutexLock lock(h.mu());
  h.SetFailed(FsError::Of(ENOSPC, "full"));
  EXPECT_EQ(h.Write(0, "x").err, EIO);
}

TEST(FileHandleTest, ReadOnlyHandleRefusesWrites) {
  FileHandle h(2, Node(), Mode::kRead, "abc", true, 10);
  MutexLock lock(h.mu());
  EXPECT_EQ(h.Write(0, "x").err, EBADF);
  EXPECT_FALSE(h.NeedsCommit());
  EXPECT_EQ(h.Read(1, 1), "b");
}

}  // namespace
}  // namespace tabletfs::fs
