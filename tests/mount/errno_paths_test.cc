// Directory misuse through the mount (DESIGN.md "Errors"): a directory used
// as a file gives EISDIR, a cell file used as a directory gives ENOTDIR, in
// the main tree and in every view (`.at/T`, `.versions`, `.schema`,
// `.tabletfs`, `Q@T`), through plain syscalls and through the shell tools;
// and each refused request changes nothing. Which side answers (the
// kernel, which knows each node's type from the daemon's replies, or the
// daemon) does not matter to a user: the errno and the unchanged tree do.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"
#include "tests/util/tree_text.h"

namespace tabletfs::testing {
namespace {

// Versions of the fixture's cells: seconds 1 and 2 after the epoch, so
// `.at/kAt` (1.5 s) shows the older ones.
constexpr int64_t kOld = 1000000;
constexpr int64_t kNew = 2000000;
constexpr const char* kAt = "1500000";

class ErrnoPathsFixture : public MountFixture {
 protected:
  void SetUp() override {
    MountFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    CreateTable("t", {"f", "g"});
    PutCells("t", {{"r", "f", "a", kOld, "a-old\n"},
                   {"r", "f", "a", kNew, "a-new\n"},
                   {"r", "g", "b", kOld, "b\n"}});
    // No kernel caching: every request reaches the daemon, every snapshot
    // shows what the store holds.
    Mount({"-o", "entry_timeout=0,attr_timeout=0"});
  }

  // Everything a refused request could change, as text.
  std::string Snapshot() {
    return TreeText(mnt(), "") + TreeText(mnt(), ".versions/t") +
           TreeText(mnt(), ".schema/t") +
           TreeText(mnt(), std::string(".at/") + kAt + "/t");
  }

  // Runs `request` (-1 and errno on failure); expects `err` and no change.
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
  }

  // open(MOUNT/rel, flags), closed again: -1 (errno set) or 0.
  std::function<int()> OpenOf(const std::string& rel, int flags) {
    return [this, rel, flags] {
      int fd = open(Path(rel).c_str(), flags, 0644);
      if (fd < 0) return -1;
      close(fd);
      return 0;
    };
  }

  // Runs a shell command; expects it to fail with `message` (strerror's
  // text) on stderr, and no change.
  void ExpectShellRefused(const std::string& command,
                          const std::string& message) {
    SCOPED_TRACE(command);
    std::string before = Snapshot();
    std::string out;
    // The shell reports a failed redirection on its own stderr.
    int rc = Sh("{ " + command + "; } 2>&1", &out);
    EXPECT_NE(rc, 0) << command << " succeeded: " << out;
    EXPECT_NE(out.find(message), std::string::npos)
        << command << ": " << out << " (want '" << message << "')";
    EXPECT_EQ(Snapshot(), before) << command << " changed the tree";
  }
};

// Run over the engine, the memory store and a remote Bigtable (the
// emulator and a tabletfs server).
using ErrnoPathsTest = OverStores<ErrnoPathsFixture>;
// Every directory or file with every request, through syscalls and the
// shell: hundreds to thousands of requests, each a round trip or more to a
// remote server with the kernel's caches off (3 to 20 s a body there),
// through the same fs code whatever the store. Against the remote servers
// only with TABLETFS_LONG_TESTS=1.
class ErrnoPathsMatrixTest : public OverStores<ErrnoPathsFixture> {
 protected:
  void SetUp() override {
    if (remote() && !LongTestsRequested()) {
      GTEST_SKIP() << "thousands of round trips: TABLETFS_LONG_TESTS=1";
    }
    OverStores<ErrnoPathsFixture>::SetUp();
  }
};

// Every directory of the namespace, and what each holds.
const std::vector<std::string>& Directories() {
  static const std::vector<std::string> dirs = {
      "",
      "t",
      "t/r",
      "t/r/f",
      ".at/" + std::string(kAt),
      ".at/" + std::string(kAt) + "/t/r",
      ".at/" + std::string(kAt) + "/t/r/f",
      ".versions/t/r/f",
      ".schema",
      ".schema/t",
      ".tabletfs",
  };
  return dirs;
}

// Every kind of file of the namespace.
const std::vector<std::string>& Files() {
  static const std::vector<std::string> files = {
      "t/r/f/a",
      "t/r/f/a@" + std::to_string(kOld),
      ".at/" + std::string(kAt) + "/t/r/f/a",
      ".versions/t/r/f/a@" + std::to_string(kNew),
      ".schema/t/f",
      ".tabletfs/stats",
      ".tabletfs/tablets",
  };
  return files;
}

TEST_P(ErrnoPathsTest, TheNamespaceHasTheExpectedTypes) {
  // The premise of the other tests: these are directories and files.
  for (const std::string& d : Directories()) {
    struct stat st;
    ASSERT_EQ(stat(Path(d).c_str(), &st), 0) << d << ": " << strerror(errno);
    EXPECT_TRUE(S_ISDIR(st.st_mode)) << d;
  }
  for (const std::string& f : Files()) {
    struct stat st;
    ASSERT_EQ(stat(Path(f).c_str(), &st), 0) << f << ": " << strerror(errno);
    EXPECT_TRUE(S_ISREG(st.st_mode)) << f;
  }
  EXPECT_EQ(ReadFile(Path(".at/" + std::string(kAt) + "/t/r/f/a")), "a-old\n");
}

TEST_P(ErrnoPathsMatrixTest, OpeningADirectoryForWritingIsEisdir) {
  for (const std::string& d : Directories()) {
    for (int flags : {O_WRONLY, O_RDWR, O_WRONLY | O_TRUNC, O_RDWR | O_APPEND,
                      O_WRONLY | O_CREAT}) {
      ExpectRefused("open(" + d + ", " + std::to_string(flags) + ")", EISDIR,
                    OpenOf(d, flags));
    }
  }
}

TEST_P(ErrnoPathsMatrixTest, ReadingOrTruncatingADirectoryIsEisdir) {
  for (const std::string& d : Directories()) {
    ExpectRefused("read(" + d + ")", EISDIR, [&] {
      int fd = open(Path(d).c_str(), O_RDONLY);
      if (fd < 0) return -2;  // not the refusal under test
      char buf[64];
      ssize_t n = read(fd, buf, sizeof(buf));
      int err = errno;
      close(fd);
      errno = err;
      return static_cast<int>(n);
    });
    ExpectRefused("truncate(" + d + ")", EISDIR,
                  [&] { return truncate(Path(d).c_str(), 0); });
  }
}

TEST_P(ErrnoPathsMatrixTest, ShellToolsOnDirectoriesSayIsADirectory) {
  for (const char* d : {"t/r", "t/r/f"}) {
    ExpectShellRefused(std::string("cat ") + d, "Is a directory");
    ExpectShellRefused(std::string("echo x > ") + d, "Is a directory");
    ExpectShellRefused(std::string("echo x >> ") + d, "Is a directory");
    ExpectShellRefused(std::string("truncate -s 0 ") + d, "Is a directory");
  }
  ExpectShellRefused(std::string("cat .at/") + kAt + "/t/r/f",
                     "Is a directory");
  ExpectShellRefused("cat .versions/t/r/f", "Is a directory");
  ExpectShellRefused("echo 'gcpolicy = maxversions=1' > .schema/t",
                     "Is a directory");
}

TEST_P(ErrnoPathsMatrixTest, AFileUsedAsADirectoryIsEnotdir) {
  for (const std::string& f : Files()) {
    const std::string x = f + "/x";
    ExpectRefused("stat(" + x + ")", ENOTDIR, [&] {
      struct stat st;
      return stat(Path(x).c_str(), &st);
    });
    ExpectRefused("stat(" + f + "/)", ENOTDIR, [&] {
      struct stat st;
      return stat(Path(f + "/").c_str(), &st);
    });
    ExpectRefused("open(" + x + ", O_RDONLY)", ENOTDIR, OpenOf(x, O_RDONLY));
    ExpectRefused("open(" + x + ", O_WRONLY|O_CREAT)", ENOTDIR,
                  OpenOf(x, O_WRONLY | O_CREAT));
    ExpectRefused("open(" + f + ", O_DIRECTORY)", ENOTDIR,
                  OpenOf(f, O_RDONLY | O_DIRECTORY));
    ExpectRefused("mkdir(" + x + ")", ENOTDIR,
                  [&] { return mkdir(Path(x).c_str(), 0755); });
    ExpectRefused("unlink(" + x + ")", ENOTDIR,
                  [&] { return unlink(Path(x).c_str()); });
    ExpectRefused("rmdir(" + f + ")", ENOTDIR,
                  [&] { return rmdir(Path(f).c_str()); });
    ExpectRefused("rename(t/r/g/b, " + x + ")", ENOTDIR, [&] {
      return rename(Path("t/r/g/b").c_str(), Path(x).c_str());
    });
  }
}

TEST_P(ErrnoPathsMatrixTest, ShellToolsOnACellAsADirectorySayNotADirectory) {
  ExpectShellRefused("ls t/r/f/a/x", "Not a directory");
  ExpectShellRefused("ls t/r/f/a/", "Not a directory");
  ExpectShellRefused("mkdir t/r/f/a/x", "Not a directory");
  ExpectShellRefused("mkdir -p t/r/f/a/x", "Not a directory");
  ExpectShellRefused("echo v | tee t/r/f/a/x", "Not a directory");
  ExpectShellRefused("cat t/r/f/a/x", "Not a directory");
  ExpectShellRefused(std::string("ls .at/") + kAt + "/t/r/f/a/x",
                     "Not a directory");
  ExpectShellRefused("ls .versions/t/r/f/a@" + std::to_string(kNew) + "/x",
                     "Not a directory");
  ExpectShellRefused("touch .schema/t/f/x", "Not a directory");
  // What was refused is still there, unchanged.
  EXPECT_EQ(ShOk("cat t/r/f/a"), "a-new\n");
  EXPECT_EQ(ShOk("ls t/r/f"), "a\n");
}

INSTANTIATE_TEST_SUITE_P(, ErrnoPathsTest, AllBackends(), StoreName);
INSTANTIATE_TEST_SUITE_P(, ErrnoPathsMatrixTest, AllBackends(), StoreName);

}  // namespace
}  // namespace tabletfs::testing
