#include "fs/errors.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace tabletfs::fs {
namespace {

TEST(ErrorsTest, ErrnoFromStatus) {
  EXPECT_EQ(ErrnoFromStatus(Status::OK()), 0);
  EXPECT_EQ(ErrnoFromStatus(Status::NotFound("x")), ENOENT);
  EXPECT_EQ(ErrnoFromStatus(Status::AlreadyExists("x")), EEXIST);
  EXPECT_EQ(ErrnoFromStatus(Status::InvalidArgument("x")), EINVAL);
  EXPECT_EQ(ErrnoFromStatus(Status::Corruption("x")), EIO);
  EXPECT_EQ(ErrnoFromStatus(Status::IOError("x")), EIO);
  EXPECT_EQ(ErrnoFromStatus(Status::NoSpace("x")), ENOSPC);
  EXPECT_EQ(ErrnoFromStatus(Status::NotSupported("x")), EOPNOTSUPP);
  // A remote server that is down: an I/O error to the shell.
  EXPECT_EQ(ErrnoFromStatus(Status::Busy("x")), EIO);
}

TEST(ErrorsTest, FsErrorFromStatus) {
  EXPECT_TRUE(FsErrorFromStatus(Status::OK()).ok());
  EXPECT_TRUE(FsErrorFromStatus(Status::OK()).reason.empty());
  const Status s = Status::NotFound("table 't'", "no such table");
  FsError e = FsErrorFromStatus(s);
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.err, ENOENT);
  EXPECT_EQ(e.reason, s.ToString());
  EXPECT_NE(e.reason.find("table 't'"), std::string::npos);
}

TEST(ErrorsTest, OkAndOf) {
  EXPECT_TRUE(FsError::Ok().ok());
  EXPECT_EQ(FsError::Ok().ToString(), "OK");
  FsError e = FsError::Of(ENOTEMPTY, "row 'r' has cells");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.err, ENOTEMPTY);
  EXPECT_EQ(e.reason, "row 'r' has cells");
  EXPECT_EQ(e.ToString(), "ENOTEMPTY: row 'r' has cells");
}

TEST(ErrorsTest, ErrnoName) {
  EXPECT_EQ(ErrnoName(ENAMETOOLONG), "ENAMETOOLONG");
  EXPECT_EQ(ErrnoName(EXDEV), "EXDEV");
  EXPECT_EQ(ErrnoName(EOPNOTSUPP), "EOPNOTSUPP");
  EXPECT_EQ(ErrnoName(ENOTSUP), "EOPNOTSUPP");  // the same value on Linux
  EXPECT_EQ(ErrnoName(9999), "errno 9999");
}

FsError FailsThenNot(bool fail) {
  TABLETFS_FS_RETURN_IF_ERROR(fail ? FsError::Of(EROFS, "read-only")
                                   : FsError::Ok());
  return FsError::Of(EEXIST, "reached the end");
}

TEST(ErrorsTest, ReturnIfError) {
  EXPECT_EQ(FailsThenNot(true).err, EROFS);
  EXPECT_EQ(FailsThenNot(false).err, EEXIST);
}

TEST(ErrorsTest, ValueLimitReasonSaysTheLimitAndTheOption) {
  EXPECT_EQ(ValueLimitReason(64u << 20),
            "a value may hold at most 64 MiB (67108864 bytes; the mount "
            "option -o max_value_bytes=N sets the limit)");
  EXPECT_EQ(ValueLimitReason(1000),
            "a value may hold at most 1000 bytes (the mount option "
            "-o max_value_bytes=N sets the limit)");
}

}  // namespace
}  // namespace tabletfs::fs
