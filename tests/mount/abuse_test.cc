// Abuse through the mount (issue 9): every refused request gives the errno
// DESIGN.md documents for it AND changes nothing else. Each case takes a
// snapshot of the tree (the current tree with contents and mtimes, every
// stored version under .versions, the schema) before and after the request
// and compares them.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "fs/names.h"
#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"
#include "tests/util/tree_text.h"

namespace tabletfs::testing {
namespace {

int g_cases = 0;  // refusals checked, printed at the end of each test

class AbuseTest : public MountFixture {
 protected:
  void SetUp() override {
    MountFixture::SetUp();
    CreateTable("t", {"f", "g"});
    CreateTable("u", {"f"});
    // No kernel caching: every request reaches the daemon and every
    // snapshot shows what the store holds.
    Mount({"-o", "entry_timeout=0,attr_timeout=0,max_value_bytes=4096"});
    ShOk(
        "mkdir -p t/r/f t/r/g t/r2/f u/r/f && echo a1 > t/r/f/a && "
        "echo a2 > t/r/f/a && echo b > t/r/f/b && echo c > t/r/g/c && "
        "echo d > t/r2/f/d && echo e > u/r/f/e");
  }

  // Everything a refused request could change, as text.
  std::string Snapshot() {
    std::string out;
    for (const char* top :
         {"", ".versions/t", ".versions/u", ".schema/t", ".schema/u"}) {
      out += TreeText(mnt(), top);
    }
    return out;
  }

  // Runs `request` (a syscall returning -1 and setting errno on failure);
  // expects `err` and no change at all.
  void ExpectRefused(const std::string& what, int err,
                     const std::function<int()>& request) {
    SCOPED_TRACE(what);
    std::string before = Snapshot();
    errno = 0;
    int rc = request();
    int got = errno;
    EXPECT_EQ(rc, -1) << what << " succeeded";
    EXPECT_EQ(got, err) << what << ": got " << strerror(got) << ", want "
                        << strerror(err);
    EXPECT_EQ(Snapshot(), before) << what << " changed the tree";
    g_cases++;
  }

  // Opens `rel` with `flags`, returning -1 (errno set) or 0 after closing.
  std::function<int()> OpenOf(const std::string& rel, int flags) {
    return [this, rel, flags] {
      int fd = open(Path(rel).c_str(), flags, 0644);
      if (fd < 0) return -1;
      close(fd);
      return 0;
    };
  }

  std::string At() {
    // A time after every write so far: the view shows them all.
    return ".at/" + std::to_string(MicrosAfterEveryWrite());
  }

  void TearDown() override {
    std::cout << g_cases << " refusals checked so far" << std::endl;
    MountFixture::TearDown();
  }
};

TEST_F(AbuseTest, LongNames) {
  std::string n234(234, 'x');
  std::string n235(235, 'x');
  std::string n255(255, 'x');
  std::string n256(256, 'x');
  ExpectRefused("create a 255-byte qualifier", ENAMETOOLONG,
                OpenOf("t/r/f/" + n255, O_CREAT | O_WRONLY));
  ExpectRefused("create a 235-byte qualifier", ENAMETOOLONG,
                OpenOf("t/r/f/" + n235, O_CREAT | O_WRONLY));
  ExpectRefused("create a 256-byte qualifier", ENAMETOOLONG,
                OpenOf("t/r/f/" + n256, O_CREAT | O_WRONLY));
  ExpectRefused("mkdir a 255-byte row", ENAMETOOLONG,
                [&] { return mkdir(Path("t/" + n255).c_str(), 0755); });
  ExpectRefused("a %~ name that matches no key", ENAMETOOLONG,
                OpenOf("t/r/f/abc%~0123456789abcdef", O_CREAT | O_WRONLY));
  // 234 bytes is the longest name written, listed and read back as is.
  WriteFile(Path("t/r/f/" + n234), "long\n");
  EXPECT_EQ(ReadFile(Path("t/r/f/" + n234)), "long\n");
  EXPECT_NE(ShOk("ls t/r/f").find(n234 + "\n"), std::string::npos);
  ASSERT_EQ(mkdir(Path("t/" + n234).c_str(), 0755), 0);
  ASSERT_EQ(mkdir(Path("t/" + n234 + "/f").c_str(), 0755), 0);
  WriteFile(Path("t/" + n234 + "/f/" + n234), "both\n");
  EXPECT_EQ(ReadFile(Path("t/" + n234 + "/f/" + n234)), "both\n");
}

TEST_F(AbuseTest, EveryByteValueAsRowAndQualifier) {
  // Raw bytes that must be encoded, and non-canonical encodings: EINVAL.
  for (const std::string& bad :
       std::vector<std::string>{"%41", "%2f", "%zz", "a%", std::string("\xff"),
                                std::string("\xc0\xaf"), std::string("\x01"),
                                std::string("\xed\xa0\x80"), "%2E%2e"}) {
    ExpectRefused("create qualifier '" + bad + "'", EINVAL,
                  OpenOf("t/r/f/" + bad, O_CREAT | O_WRONLY));
    ExpectRefused("mkdir row '" + bad + "'", EINVAL,
                  [&] { return mkdir(Path("t/" + bad).c_str(), 0755); });
  }
  ExpectRefused("a lone % as a row name", EINVAL,
                [&] { return mkdir(Path("t/%").c_str(), 0755); });
  ExpectRefused("mkdir a table with a bad name", EINVAL,
                [&] { return mkdir(Path("bad name").c_str(), 0755); });
  ExpectRefused("mkdir a table of 51 bytes", EINVAL, [&] {
    return mkdir(Path(std::string(51, 'T')).c_str(), 0755);
  });
  ASSERT_EQ(mkdir(Path("t/bytes").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(Path("t/bytes/f").c_str(), 0755), 0);
  for (int b = 0; b < 256; b++) {
    std::string key(1, static_cast<char>(b));
    std::string name = fs::EncodeName(key);
    std::string q = "t/bytes/f/" + name;
    std::string content = "byte " + std::to_string(b) + "\n";
    WriteFile(Path(q), content);
    EXPECT_EQ(ReadFile(Path(q)), content) << "byte " << b << " as " << name;
    // As a row ("x" + the byte: the empty row does not exist).
    std::string row = "t/" + fs::EncodeName("x" + key);
    EXPECT_EQ(mkdir(Path(row).c_str(), 0755), 0) << row;
    EXPECT_EQ(mkdir(Path(row + "/g").c_str(), 0755), 0) << row;
    WriteFile(Path(row + "/g/q"), content);
    EXPECT_EQ(ReadFile(Path(row + "/g/q")), content) << row;
  }
  // Every name listed is the name written.
  std::set<std::string> want, listed;
  for (int b = 0; b < 256; b++) {
    want.insert(fs::EncodeName(std::string(1, static_cast<char>(b))));
  }
  DIR* d = opendir(Path("t/bytes/f").c_str());
  ASSERT_NE(d, nullptr);
  while (struct dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") listed.insert(n);
  }
  closedir(d);
  EXPECT_EQ(listed, want);
}

TEST_F(AbuseTest, UnknownNamesAndMisplacedFilesAndDirectories) {
  ExpectRefused("mkdir an unknown family", ENOENT,
                [&] { return mkdir(Path("t/r/nofam").c_str(), 0755); });
  ExpectRefused("create in an unknown family", ENOENT,
                OpenOf("t/r/nofam/q", O_CREAT | O_WRONLY));
  ExpectRefused("create in an unknown table", ENOENT,
                OpenOf("nosuch/r/f/q", O_CREAT | O_WRONLY));
  ExpectRefused("read a missing cell", ENOENT, OpenOf("t/r/f/zz", O_RDONLY));
  ExpectRefused("mkdir in a family directory", EPERM,
                [&] { return mkdir(Path("t/r/f/dir").c_str(), 0755); });
  ExpectRefused("create a file in the root", EPERM,
                OpenOf("file", O_CREAT | O_WRONLY));
  ExpectRefused("create a file in a table", EPERM,
                OpenOf("t/file", O_CREAT | O_WRONLY));
  ExpectRefused("create a file in a row", EPERM,
                OpenOf("t/r/file", O_CREAT | O_WRONLY));
  ExpectRefused("rmdir a non-empty table", ENOTEMPTY,
                [&] { return rmdir(Path("u").c_str()); });
  ExpectRefused("rmdir a cell", ENOTDIR,
                [&] { return rmdir(Path("t/r/f/a").c_str()); });
  ExpectRefused("unlink a family directory", EISDIR,
                [&] { return unlink(Path("t/r/f").c_str()); });
  ExpectRefused("open a row directory for writing", EISDIR,
                OpenOf("t/r", O_WRONLY));
}

TEST_F(AbuseTest, UnsupportedOperations) {
  ExpectRefused("symlink", EPERM,
                [&] { return symlink("a", Path("t/r/f/link").c_str()); });
  ExpectRefused("link", EPERM, [&] {
    return link(Path("t/r/f/a").c_str(), Path("t/r/f/hard").c_str());
  });
  ExpectRefused("mknod fifo", EPERM,
                [&] { return mkfifo(Path("t/r/f/fifo").c_str(), 0644); });
  ExpectRefused("mknod char device", EPERM, [&] {
    return mknod(Path("t/r/f/dev").c_str(), S_IFCHR | 0644, makedev(1, 3));
  });
  ExpectRefused("fallocate", EOPNOTSUPP, [&] {
    int fd = open(Path("t/r/f/b").c_str(), O_WRONLY);
    if (fd < 0) return -2;
    int rc = fallocate(fd, 0, 0, 1 << 20);
    int err = errno;
    close(fd);
    errno = err;
    return rc;
  });
  ExpectRefused("setxattr", ENOTSUP, [&] {
    return setxattr(Path("t/r/f/a").c_str(), "user.x", "1", 1, 0);
  });
  ExpectRefused("getxattr", ENOTSUP, [&] {
    char buf[16];
    return static_cast<int>(
        getxattr(Path("t/r/f/a").c_str(), "user.x", buf, sizeof(buf)));
  });
  ExpectRefused("removexattr", ENOTSUP,
                [&] { return removexattr(Path("t/r/f/a").c_str(), "user.x"); });
}

TEST_F(AbuseTest, Renames) {
  ExpectRefused("rename a row", EPERM, [&] {
    return rename(Path("t/r2").c_str(), Path("t/r3").c_str());
  });
  ExpectRefused("rename a table", EPERM,
                [&] { return rename(Path("u").c_str(), Path("v").c_str()); });
  ExpectRefused("rename a family directory", EPERM, [&] {
    return rename(Path("t/r/g").c_str(), Path("t/r/f2").c_str());
  });
  ExpectRefused("rename a cell onto a family directory", EISDIR, [&] {
    return rename(Path("t/r/f/a").c_str(), Path("t/r/g").c_str());
  });
  ExpectRefused("rename a cell onto a row directory", EISDIR, [&] {
    return rename(Path("t/r/f/a").c_str(), Path("t/r2").c_str());
  });
  ExpectRefused("rename a row directory onto a cell", ENOTDIR, [&] {
    return rename(Path("t/r2").c_str(), Path("t/r/f/a").c_str());
  });
  ExpectRefused("rename a cell across rows", EXDEV, [&] {
    return rename(Path("t/r/f/a").c_str(), Path("t/r2/f/a").c_str());
  });
  ExpectRefused("rename a cell across tables", EXDEV, [&] {
    return rename(Path("t/r/f/a").c_str(), Path("u/r/f/a").c_str());
  });
  ExpectRefused("RENAME_EXCHANGE", EINVAL, [&] {
    return renameat2(AT_FDCWD, Path("t/r/f/a").c_str(), AT_FDCWD,
                     Path("t/r/f/b").c_str(), RENAME_EXCHANGE);
  });
  ExpectRefused("RENAME_NOREPLACE onto an existing cell", EEXIST, [&] {
    return renameat2(AT_FDCWD, Path("t/r/f/a").c_str(), AT_FDCWD,
                     Path("t/r/f/b").c_str(), RENAME_NOREPLACE);
  });
  ExpectRefused("rename inside .schema", EPERM, [&] {
    return rename(Path(".schema/t/g").c_str(), Path(".schema/t/h").c_str());
  });
  ExpectRefused("rename a missing cell", ENOENT, [&] {
    return rename(Path("t/r/f/zz").c_str(), Path("t/r/f/yy").c_str());
  });
  // RENAME_NOREPLACE onto a free name works.
  EXPECT_EQ(renameat2(AT_FDCWD, Path("t/r/f/b").c_str(), AT_FDCWD,
                      Path("t/r/g/b2").c_str(), RENAME_NOREPLACE),
            0);
  EXPECT_EQ(ReadFile(Path("t/r/g/b2")), "b\n");
}

TEST_F(AbuseTest, VersionsAndTimeTravel) {
  std::string listing = ShOk("ls .versions/t/r/f | grep '^a@'");
  std::string a_at = listing.substr(0, listing.find('\n'));
  ASSERT_FALSE(a_at.empty());
  ExpectRefused("rm Q@T in the main tree", EPERM,
                [&] { return unlink(Path("t/r/f/" + a_at).c_str()); });
  ExpectRefused(
      "write Q@T more than an hour ahead", EINVAL,
      OpenOf("t/r/f/a@" + std::to_string(time(nullptr) + 7200) + "000000",
             O_CREAT | O_WRONLY));
  ExpectRefused("a bad T", EINVAL, OpenOf("t/r/f/a@yesterday", O_RDONLY));
  std::string at = At();
  ASSERT_EQ(ReadFile(Path(at + "/t/r/f/a")), "a2\n");
  ExpectRefused("write under .at", EROFS,
                OpenOf(at + "/t/r/f/a", O_WRONLY | O_TRUNC));
  ExpectRefused("create under .at", EROFS,
                OpenOf(at + "/t/r/f/new", O_CREAT | O_WRONLY));
  ExpectRefused("unlink under .at", EROFS,
                [&] { return unlink(Path(at + "/t/r/f/a").c_str()); });
  ExpectRefused("mkdir under .at", EROFS,
                [&] { return mkdir(Path(at + "/t/r9").c_str(), 0755); });
  ExpectRefused("rmdir under .at", EROFS,
                [&] { return rmdir(Path(at + "/u").c_str()); });
  ExpectRefused("truncate under .at", EROFS,
                [&] { return truncate(Path(at + "/t/r/f/a").c_str(), 0); });
  ExpectRefused("rename under .at", EROFS, [&] {
    return rename(Path(at + "/t/r/f/a").c_str(),
                  Path(at + "/t/r/f/a3").c_str());
  });
}

TEST_F(AbuseTest, ValuesPastTheLimitAreRefusedByWrite) {
  // max_value_bytes=4096 (SetUp).
  std::string big(5000, 'z');
  ExpectRefused("write() past the value limit", EFBIG, [&] {
    int fd = open(Path("t/r/f/a").c_str(), O_WRONLY | O_TRUNC);
    if (fd < 0) return -2;
    ssize_t n = write(fd, big.data(), big.size());
    int err = errno;
    // The refused handle commits nothing at close.
    EXPECT_EQ(close(fd), 0);
    errno = err;
    return static_cast<int>(n);
  });
  ExpectRefused("write() at an offset past the limit", EFBIG, [&] {
    int fd = open(Path("t/r/f/new").c_str(), O_CREAT | O_WRONLY, 0644);
    if (fd < 0) return -2;
    ssize_t n = pwrite(fd, "x", 1, 4096);
    int err = errno;
    close(fd);
    // The create itself made an empty cell: take it out of the comparison.
    unlink(Path("t/r/f/new").c_str());
    errno = err;
    return static_cast<int>(n);
  });
  ExpectRefused("append past the limit", EFBIG, [&] {
    int fd = open(Path("t/r/f/b").c_str(), O_WRONLY | O_APPEND);
    if (fd < 0) return -2;
    ssize_t n = write(fd, big.data(), 4095);
    int err = errno;
    close(fd);
    errno = err;
    return static_cast<int>(n);
  });
  // Exactly the limit is fine, also by appending.
  int fd = open(Path("t/r/f/b").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(write(fd, big.data(), 4094), 4094);
  EXPECT_EQ(close(fd), 0);
  EXPECT_EQ(ReadFile(Path("t/r/f/b")), "b\n" + big.substr(0, 4094));
  WriteFile(Path("t/r/f/max"), std::string(4096, 'm'));
  EXPECT_EQ(ReadFile(Path("t/r/f/max")), std::string(4096, 'm'));
}

TEST_F(AbuseTest, OpenUnlinkRead) {
  int fd = open(Path("t/r/f/a").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(unlink(Path("t/r/f/a").c_str()), 0);
  char buf[64];
  ssize_t n = read(fd, buf, sizeof(buf));
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "a2\n");
  EXPECT_EQ(close(fd), 0);
  EXPECT_EQ(access(Path("t/r/f/a").c_str(), F_OK), -1);
  EXPECT_EQ(ShOk("ls .versions/t/r/f | grep -c '^a@' || true"), "0\n");
  EXPECT_EQ(ShOk("ls t/r/f"), "b\n");
  EXPECT_EQ(ShOk("cat t/r/g/c"), "c\n");
}

}  // namespace
}  // namespace tabletfs::testing
