// Real-mount tests of open cells behaving as on a local disk (issue 16,
// DESIGN.md "Writing"): descriptors of one cell share one pending value,
// each close or fsync with something new commits it, readers see committed
// versions only and follow the newest, refused writes store nothing.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/gcc_bug_105329.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

class OpenCellsTest : public MountFixture {
 protected:
  std::vector<Cell> Versions(const std::string& q) {
    auto db = OpenDb();
    ReadOptions ro;
    ro.max_versions = 0;
    auto cells = db->ReadCell("t", "r", "f", q, ro);
    EXPECT_TRUE(cells.ok());
    return cells.ok() ? *cells : std::vector<Cell>();
  }
  std::string PRead(int fd, size_t size = 1 << 20) {
    std::string buf(size, '\0');
    ssize_t n = pread(fd, buf.data(), buf.size(), 0);
    EXPECT_GE(n, 0) << strerror(errno);
    buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return buf;
  }
  // The rewrite tests' versions: version i is RewriteLength(i) bytes of
  // RewriteByte(i), ~5 MiB, each a different size.
  static constexpr int kRewriteVersions = 20;
  static size_t RewriteLength(int i) {
    return (size_t{5} << 20) - size_t(i) * 70001;
  }
  static char RewriteByte(int i) { return static_cast<char>('a' + i); }
  // `got` is one whole rewrite version.
  static bool IsWholeVersion(const std::string& got) {
    for (int i = 0; i < kRewriteVersions; i++) {
      if (!got.empty() && got[0] == RewriteByte(i) &&
          got.size() == RewriteLength(i) &&
          got.find_first_not_of(RewriteByte(i)) == std::string::npos) {
        return true;
      }
    }
    return false;
  }
  // A child process that writes versions 1.. of `path` in turn, each with
  // O_TRUNC and 256 KiB writes, then exits 0 (2-4: a call failed).
  static pid_t StartRewriter(const std::string& path) {
    const pid_t writer = fork();
    if (writer != 0) return writer;
    for (int i = 1; i < kRewriteVersions; i++) {
      std::string v(RewriteLength(i), RewriteByte(i));
      int fd = open(path.c_str(), O_WRONLY | O_TRUNC);
      if (fd < 0) _exit(2);
      for (size_t off = 0; off < v.size(); off += 256 << 10) {
        size_t n = std::min<size_t>(256 << 10, v.size() - off);
        if (write(fd, v.data() + off, n) != static_cast<ssize_t>(n)) _exit(3);
      }
      if (close(fd) != 0) _exit(4);
    }
    _exit(0);
  }
  // RandomInterleavingsMatchALocalFile's body.
  // With O_APPEND descriptors and MAP_PRIVATE mappings in the mix or not.
  void RunRandomOps(bool appends, bool private_mappings);
  void KillWhileAMappingIsDirty(bool synced);
};

// The issue's first example: on a local disk both descriptors write one
// file, and neither close throws the other's bytes away.
TEST_F(OpenCellsTest, TwoDescriptorsShareOneValue) {
  CreateTable("t", {"f"});
  Mount();
  for (int flags : {O_RDWR, O_WRONLY}) {
    SCOPED_TRACE(flags == O_RDWR ? "O_RDWR" : "O_WRONLY");
    ShOk("mkdir -p t/r/f && printf AAAAAAAAAA > t/r/f/two");
    int a = open(Path("t/r/f/two").c_str(), flags);
    int b = open(Path("t/r/f/two").c_str(), flags);
    ASSERT_GE(a, 0);
    ASSERT_GE(b, 0);
    ASSERT_EQ(pwrite(a, "xx", 2, 0), 2);
    ASSERT_EQ(pwrite(b, "YY", 2, 8), 2);
    // Uncommitted: a reader still sees the committed value. (Read here:
    // a child process would inherit the descriptors and its exit, a
    // close, would commit.)
    EXPECT_EQ(ReadFile(Path("t/r/f/two")), "AAAAAAAAAA");
    ASSERT_EQ(close(a), 0);
    EXPECT_EQ(ReadFile(Path("t/r/f/two")), "xxAAAAAAYY");
    ASSERT_EQ(close(b), 0);  // nothing new: no version
    EXPECT_EQ(ReadFile(Path("t/r/f/two")), "xxAAAAAAYY");
    EXPECT_EQ(ShOk("ls .versions/t/r/f | grep -c '^two@'"), "2\n");
    ShOk("rm t/r/f/two");
  }
}

// O_APPEND descriptors append at the shared end and read what the others
// appended (python's "a+"), and commit it all.
TEST_F(OpenCellsTest, AppendersShareTheEnd) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && echo base > t/r/f/a");
  int a = open(Path("t/r/f/a").c_str(), O_RDWR | O_APPEND);
  int b = open(Path("t/r/f/a").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  ASSERT_EQ(write(a, "one\n", 4), 4);
  ASSERT_EQ(write(b, "two\n", 4), 4);
  EXPECT_EQ(PRead(a), "base\none\ntwo\n");
  ASSERT_EQ(write(a, "three\n", 6), 6);
  EXPECT_EQ(PRead(a), "base\none\ntwo\nthree\n");
  EXPECT_EQ(ReadFile(Path("t/r/f/a")), "base\n");
  ASSERT_EQ(close(b), 0);
  ASSERT_EQ(close(a), 0);
  EXPECT_EQ(ReadFile(Path("t/r/f/a")), "base\none\ntwo\nthree\n");
}

// A reader never sees bytes not committed, also after O_TRUNC, and the
// kernel's size never cuts a committed value short.
TEST_F(OpenCellsTest, ReadersSeeCommittedVersionsOnly) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && echo old > t/r/f/tr");
  int reader = open(Path("t/r/f/tr").c_str(), O_RDONLY);
  ASSERT_GE(reader, 0);
  int w = open(Path("t/r/f/tr").c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(w, 0);
  EXPECT_EQ(ReadFile(Path("t/r/f/tr")), "old\n");
  EXPECT_EQ(PRead(reader), "old\n");
  ASSERT_EQ(write(w, "a much longer new value\n", 24), 24);
  EXPECT_EQ(ReadFile(Path("t/r/f/tr")), "old\n");
  EXPECT_EQ(PRead(reader), "old\n");
  struct stat st;
  ASSERT_EQ(fstat(w, &st), 0);
  EXPECT_EQ(st.st_size, 24);  // a writer's fstat sees its writes
  ASSERT_EQ(close(w), 0);
  EXPECT_EQ(ReadFile(Path("t/r/f/tr")), "a much longer new value\n");
  EXPECT_EQ(PRead(reader), "a much longer new value\n");
  close(reader);
}

// A name removed while a descriptor of it is open is a new file when
// created again, as on a local disk: the open descriptor keeps the removed
// one (its writes go nowhere, its reads see what it had) and the new file
// keeps what was written to it.
TEST_F(OpenCellsTest, RecreatedWhileTheRemovedOneIsOpen) {
  CreateTable("t", {"f"});
  Mount();
  EXPECT_EQ(ShOk("mkdir -p t/r/f && echo old > t/r/f/re && exec 3>>t/r/f/re"
                 " && rm t/r/f/re && echo hello > t/r/f/re && cat t/r/f/re"
                 " && echo late >&3 && exec 3>&- && cat t/r/f/re"),
            "hello\nhello\n");
  EXPECT_EQ(ShOk("ls t/r/f"), "re\n");
  // Only a reader of the removed cell is open.
  int reader = open(Path("t/r/f/re").c_str(), O_RDONLY);
  ASSERT_GE(reader, 0);
  EXPECT_EQ(PRead(reader), "hello\n");
  EXPECT_EQ(ShOk("rm t/r/f/re && echo new > t/r/f/re && cat t/r/f/re"),
            "new\n");
  EXPECT_EQ(PRead(reader), "hello\n");
  ASSERT_EQ(close(reader), 0);
  EXPECT_EQ(ReadFile(Path("t/r/f/re")), "new\n");
}

// A close racing with rm or mv of its cell: the close commits either
// before the name changed (rm removes it, mv moves it) or after (to
// nothing, or to the new name), never to the old name in between. The
// daemon's test hook pauses each unlink and rename after the store changed
// and before the open states follow; the close comes in that pause.
TEST_F(OpenCellsTest, ACloseDuringRmOrMvCommitsNothingToTheOldName) {
  CreateTable("t", {"f"});
  ASSERT_EQ(TryMountForeground({}, {"TABLETFS_TEST_NAME_CHANGE_DELAY_MS=300"},
                               tmp() + "/daemon.log"),
            0);
  ShOk("mkdir -p t/r/f && echo old > t/r/f/gone && echo old > t/r/f/moved");
  // The .versions listing shows the store's change at once (read here:
  // a child process would inherit the descriptor).
  auto versions = [&] {
    std::vector<std::string> names;
    DIR* d = opendir(Path(".versions/t/r/f").c_str());
    EXPECT_NE(d, nullptr);
    if (d == nullptr) return std::string();
    while (struct dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n.substr(0, n.find('@')));
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    std::string out;
    for (const std::string& n : names) out += n + "\n";
    return out;
  };
  auto wait_for_versions = [&](const std::string& want) {
    // Polls with a deadline.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (versions() != want && std::chrono::steady_clock::now() < deadline) {
    }
    return versions();
  };
  ASSERT_EQ(versions(), "gone\nmoved\n");
  {
    int fd = open(Path("t/r/f/gone").c_str(), O_WRONLY | O_TRUNC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "new\n", 4), 4);
    int rm_result = -1;
    std::thread rm([&] { rm_result = unlink(Path("t/r/f/gone").c_str()); });
    EXPECT_EQ(wait_for_versions("moved\n"), "moved\n");
    EXPECT_EQ(close(fd), 0);
    rm.join();
    EXPECT_EQ(rm_result, 0);
    EXPECT_EQ(versions(), "moved\n");
    EXPECT_EQ(ShOk("ls t/r/f"), "moved\n");
  }
  {
    int fd = open(Path("t/r/f/moved").c_str(), O_WRONLY | O_TRUNC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "new\n", 4), 4);
    int mv_result = -1;
    std::thread mv([&] {
      mv_result =
          rename(Path("t/r/f/moved").c_str(), Path("t/r/f/dest").c_str());
    });
    EXPECT_EQ(wait_for_versions("dest\n"), "dest\n");
    EXPECT_EQ(close(fd), 0);
    mv.join();
    EXPECT_EQ(mv_result, 0);
    EXPECT_EQ(versions(), "dest\ndest\n");  // old, then the close's new
    EXPECT_EQ(ShOk("ls t/r/f"), "dest\n");
    EXPECT_EQ(ReadFile(Path("t/r/f/dest")), "new\n");
  }
}

// The shell's `>` closes its descriptor after dup2 and before the command
// writes: that close shows no empty version (README "Writing": O_TRUNC
// leaves the old value visible until a commit). The empty value of an
// open that wrote nothing is committed when its last dup closes, so
// `touch new` and `: > f` still make empty cells.
TEST_F(OpenCellsTest, ShellRedirectionShowsNoEmptyVersion) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && echo old > t/r/f/tr");
  EXPECT_EQ(ShOk("exec 7>t/r/f/tr; cat t/r/f/tr; echo new >&7; exec 7>&-;"
                 " cat t/r/f/tr"),
            "old\nnew\n");
  // While the command runs: a new name has no version yet, an existing one
  // keeps its value.
  ShOk("{ ls .versions/t/r/f | grep -c '^out@'; cat t/r/f/tr; } > t/r/f/out");
  EXPECT_EQ(ReadFile(Path("t/r/f/out")), "0\nnew\n");
  ShOk("{ ls .versions/t/r/f | grep -c '^tr@' >&3; cat t/r/f/tr >&3; }"
       " 3>t/r/f/log >t/r/f/tr");
  EXPECT_EQ(ReadFile(Path("t/r/f/log")), "2\nnew\n");
  ShOk("touch t/r/f/empty && : > t/r/f/out && exec 7>t/r/f/fsynced &&"
       " sync t/r/f/fsynced");
  // The fsync stored the empty value before the descriptor closed.
  EXPECT_EQ(ShOk("ls .versions/t/r/f | grep -c '^fsynced@'"), "1\n");
  Unmount();
  for (const char* q : {"empty", "out", "fsynced", "tr"}) {
    std::vector<Cell> v = Versions(q);
    ASSERT_FALSE(v.empty()) << q;
    EXPECT_EQ(v[0].value, "") << q;
  }
  // out: grep's output (committed at its exit), then cat's, then `: >`.
  EXPECT_EQ(Versions("out").size(), 3u);
  EXPECT_EQ(Versions("tr").size(), 3u);  // old, new, then the empty one
}

// `: > f; cat f` prints nothing: the empty value that the close leaves
// to RELEASE (sent as close() returns) is committed before a reader's
// open right after reads the cell: the open waits for that RELEASE. The
// test hook delays every RELEASE by 10 ms (the open waits up to 50 ms), so
// an open that did not wait would read the old value every time.
TEST_F(OpenCellsTest, AReaderRightAfterATruncatingCloseSeesTheEmptyValue) {
  CreateTable("t", {"f"});
  ASSERT_EQ(TryMountForeground({}, {"TABLETFS_TEST_RELEASE_DELAY_MS=10"},
                               tmp() + "/daemon.log"),
            0);
  ShOk("mkdir -p t/r/f");
  const std::string path = Path("t/r/f/e");
  for (int i = 0; i < 50; i++) {
    WriteFile(path, "old value");
    int fd = open(path.c_str(), O_WRONLY | O_TRUNC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(close(fd), 0);
    ASSERT_EQ(ReadFile(path), "") << "round " << i;
  }
  EXPECT_EQ(ShOk("cd t/r/f && for i in $(seq 20); do echo old > s;"
                 " : > s; [ -z \"$(cat s)\" ] || echo stale; done"),
            "");
}

// A reader that opened before any writer reads through the page cache;
// a stat by path meanwhile reports the writers' pending size (empty after
// O_TRUNC), which the kernel applies to the inode. The reader still reads
// the whole committed value: the kernel asks again with the reader's
// descriptor before a read past that size.
TEST_F(OpenCellsTest, ACachedReaderKeepsItsValueWhileAWriterTruncates) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && echo committed-value > t/r/f/c");
  int reader = open(Path("t/r/f/c").c_str(), O_RDONLY);
  ASSERT_GE(reader, 0);
  EXPECT_EQ(PRead(reader), "committed-value\n");
  int w = open(Path("t/r/f/c").c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(w, 0);
  struct stat st;
  ASSERT_EQ(stat(Path("t/r/f/c").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0);  // the size the writer holds
  EXPECT_EQ(PRead(reader), "committed-value\n");
  char c;
  ASSERT_EQ(pread(reader, &c, 1, 3), 1);
  EXPECT_EQ(c, 'm');
  ASSERT_EQ(write(w, "x", 1), 1);
  ASSERT_EQ(stat(Path("t/r/f/c").c_str(), &st), 0);
  EXPECT_EQ(PRead(reader), "committed-value\n");
  ASSERT_EQ(close(w), 0);
  EXPECT_EQ(PRead(reader), "x");
  ASSERT_EQ(close(reader), 0);
}

// A commit of the bytes the newest version holds adds no version, also
// when the same open state committed that version (the hash of the newest
// version is taken at the commit that needs it).
TEST_F(OpenCellsTest, ACommitOfTheSameBytesAgainAddsNoVersion) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");
  int fd = open(Path("t/r/f/c").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "abc", 3), 3);
  ASSERT_EQ(fsync(fd), 0);
  ASSERT_EQ(pwrite(fd, "abc", 3, 0), 3);  // the same bytes again
  ASSERT_EQ(fsync(fd), 0);
  ASSERT_EQ(pwrite(fd, "abd", 3, 0), 3);
  ASSERT_EQ(close(fd), 0);
  Unmount();
  std::vector<Cell> versions = Versions("c");
  ASSERT_EQ(versions.size(), 2u);
  EXPECT_EQ(versions[0].value, "abd");
  EXPECT_EQ(versions[1].value, "abc");
}

// tail -f and a polling reader follow `>>` appends of other processes.
TEST_F(OpenCellsTest, ReadersFollowAppends) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && echo first > t/r/f/log");
  int fd = open(Path("t/r/f/log").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  char buf[256];
  ASSERT_EQ(read(fd, buf, sizeof(buf)), 6);
  EXPECT_EQ(read(fd, buf, sizeof(buf)), 0);
  const std::string out = tmp() + "/tail.out";
  pid_t tail = fork();
  ASSERT_GE(tail, 0);
  if (tail == 0) {
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    // -s: poll often; --follow=descriptor reads the open file, as a
    // local disk's tail -f does when inotify says nothing.
    execlp("tail", "tail", "-n", "+1", "-s", "0.05", "-f",
           Path("t/r/f/log").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string expected = "first\n";
  for (int i = 0; i < 20; i++) {
    std::string line = "line" + std::to_string(i) + "\n";
    ShOk("printf '" + line + "' >> t/r/f/log");
    expected += line;
    // The append's close returned: the next read() sees it.
    ssize_t n = read(fd, buf, sizeof(buf));
    ASSERT_EQ(std::string(buf, n > 0 ? n : 0), line);
  }
  close(fd);
  // tail polls: wait (with a deadline) until it printed everything.
  std::string got;
  for (int i = 0; i < 400 && got != expected; i++) {
    got = ReadFile(out);
    if (got != expected) usleep(10000);
  }
  kill(tail, SIGTERM);
  waitpid(tail, nullptr, 0);
  EXPECT_EQ(got, expected);
}

// A page-cache reader at the end of a cell while another thread appends
// line by line (issue 16: `tail -f`; ReadersFollowAppends met this once
// in CI, tail printing zeros in place of a line). An appender's write is
// direct I/O: its reply raises the kernel's size of the inode it opened
// before the commit, and the kernel ignores the size a stat or a short
// page read told it before that write, so a reader of that inode whose
// read overlapped the write read its cached last page, zero-filled past
// the committed end, up to the raised size (about 1 run in 120 failed,
// 3 in parallel). No order of the daemon's replies can fence it; now the
// appender opens an inode of its own (README "Writing": a writer's own
// inode), and the reader's inode changes only at commits: 0 failures in
// 1,500 runs, where the same build without it failed 4 in 450.
TEST_F(OpenCellsTest, AReaderAtTheEndReadsNoZerosDuringAppends) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && echo first > t/r/f/log");
  const std::string path = Path("t/r/f/log");
  int reader = open(path.c_str(), O_RDONLY);
  ASSERT_GE(reader, 0);
  std::string expected = "first\n";
  std::vector<std::string> lines;
  for (int i = 0; i < 300; i++) {
    lines.push_back("line" + std::to_string(i) + "\n");
    expected += lines.back();
  }
  std::atomic<bool> done{false};
  std::thread appender([&] {
    for (const std::string& line : lines) {
      int a = open(path.c_str(), O_WRONLY | O_APPEND);
      EXPECT_GE(a, 0);
      EXPECT_EQ(write(a, line.data(), line.size()),
                static_cast<ssize_t>(line.size()));
      EXPECT_EQ(close(a), 0);
    }
    done = true;
  });
  std::string got;
  char buf[4096];
  for (;;) {
    const bool last = done;
    ssize_t n = read(reader, buf, sizeof(buf));
    EXPECT_GE(n, 0) << strerror(errno);
    if (n < 0) break;
    got.append(buf, static_cast<size_t>(n));
    if (got.find('\0') != std::string::npos || (last && n == 0)) break;
  }
  appender.join();
  close(reader);
  EXPECT_EQ(got.find('\0'), std::string::npos);
  EXPECT_EQ(got, expected);
}

// A reader opened while a large cell is rewritten reads whole committed
// versions, never a mix or a cut (the issue saw lengths 0, 921600, ...).
TEST_F(OpenCellsTest, AReaderDuringARewriteSeesWholeVersions) {
  CreateTable("t", {"f"});
  Mount();
  auto value = [](int i) {
    return std::string(static_cast<size_t>(1 + i % 3) << 20,
                       static_cast<char>('a' + i % 26));
  };
  ShOk("mkdir -p t/r/f");
  WriteFile(Path("t/r/f/big"), value(0));
  const std::string path = Path("t/r/f/big");
  for (int i = 1; i <= 6; i++) {
    int w = open(path.c_str(), O_WRONLY | O_TRUNC);
    ASSERT_GE(w, 0);
    std::string v = value(i);
    // Readers in the middle of the rewrite: the previous version, whole.
    for (size_t off = 0; off < v.size(); off += 256 << 10) {
      size_t len = std::min<size_t>(256 << 10, v.size() - off);
      ASSERT_EQ(pwrite(w, v.data() + off, len, static_cast<off_t>(off)),
                static_cast<ssize_t>(len));
      int r = open(path.c_str(), O_RDONLY);
      ASSERT_GE(r, 0);
      std::string got = PRead(r, 4 << 20);
      close(r);
      ASSERT_EQ(got, value(i - 1)) << "round " << i << " at " << off;
    }
    ASSERT_EQ(close(w), 0);
    EXPECT_EQ(ReadFile(path), v);
  }
}

// The shell's `>` with a refused write, also through a duplicated
// descriptor whose original closed first (issue 14 items 1 and 8), and a
// refused fallocate: nothing is stored, a new name is not kept.
TEST_F(OpenCellsTest, RefusedWritesStoreNothingOnEveryPathToClose) {
  CreateTable("t", {"f"});
  Mount({"-o", "max_value_bytes=1000"});
  ShOk("mkdir -p t/r/f && echo keep > t/r/f/old");
  std::string big(2000, 'z');
  for (const char* name : {"new", "old"}) {
    SCOPED_TRACE(name);
    std::string path = Path(std::string("t/r/f/") + name);
    // open, dup, close the original, write (refused), close the dup.
    int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    int dup_fd = dup(fd);
    ASSERT_EQ(close(fd), 0);  // FLUSH of a fresh, empty file
    errno = 0;
    EXPECT_EQ(write(dup_fd, big.data(), big.size()), -1);
    EXPECT_EQ(errno, EFBIG);
    EXPECT_EQ(close(dup_fd), 0);
  }
  EXPECT_TRUE(GoneSoon("t/r/f/new"));
  EXPECT_EQ(ShOk("ls t/r/f"), "old\n");
  EXPECT_EQ(ShOk("cat t/r/f/old"), "keep\n");
  // fallocate is refused like a write.
  EXPECT_NE(Sh("fallocate -l 100 t/r/f/falloc 2>/dev/null"), 0);
  EXPECT_TRUE(GoneSoon("t/r/f/falloc"));
  EXPECT_EQ(ShOk("ls t/r/f"), "old\n");
  EXPECT_NE(Sh("head -c 2000 /dev/zero > t/r/f/head 2>/dev/null"), 0);
  EXPECT_TRUE(GoneSoon("t/r/f/head"));
  EXPECT_EQ(ShOk("ls t/r/f"), "old\n");
  EXPECT_EQ(ShOk("ls .versions/t/r/f | sed 's/@.*//'"), "old\n");
  Unmount();
  EXPECT_EQ(Versions("new").size(), 0u);
  EXPECT_EQ(Versions("falloc").size(), 0u);
  EXPECT_EQ(Versions("head").size(), 0u);
  ASSERT_EQ(Versions("old").size(), 1u);
  EXPECT_EQ(Versions("old")[0].value, "keep\n");
}

// One process holding one descriptor of a cell, driven step by step over
// pipes, so that a test runs an exact interleaving across processes.
class Worker {
 public:
  Worker(const std::string& path, int flags) {
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0) abort();
    pid_ = fork();
    if (pid_ == 0) {
      close(to[1]);
      close(from[0]);
      int fd = open(path.c_str(), flags);
      char cmd[64];
      while (read(to[0], cmd, sizeof(cmd)) > 0) {
        int ok = 0;
        if (cmd[0] == 'w') {
          int off = cmd[1], len = cmd[2];
          std::string data(static_cast<size_t>(len), cmd[3]);
          ok = pwrite(fd, data.data(), data.size(), off) == len;
        } else if (cmd[0] == 's') {
          ok = fsync(fd) == 0;
        } else {
          ok = close(fd) == 0;
        }
        char r = ok ? 'y' : 'n';
        if (write(from[1], &r, 1) != 1 || cmd[0] == 'c') _exit(0);
      }
      _exit(0);
    }
    close(to[0]);
    close(from[1]);
    to_ = to[1];
    from_ = from[0];
  }
  ~Worker() {
    close(to_);
    close(from_);
    // A child that has not closed yet (a test that failed) waits on its
    // pipe, which the other workers' children hold open too (they forked
    // with it): end it.
    if (waitpid(pid_, nullptr, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  // 'w' (write `len` bytes `c` at `off`), 's' (fsync), 'c' (close).
  bool Do(char op, int off = 0, int len = 0, char c = 0) {
    char cmd[64] = {op, static_cast<char>(off), static_cast<char>(len), c};
    char r = 0;
    return write(to_, cmd, sizeof(cmd)) == sizeof(cmd) &&
           read(from_, &r, 1) == 1 && r == 'y';
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
};

// A number from the environment (a long run's size), or `fallback`.
long EnvCount(const char* name, long fallback) {
  const char* v = getenv(name);
  return v != nullptr && *v != '\0' ? atol(v) : fallback;
}

// "" when `got` is `want`, else where they differ (the values can be
// megabytes: not printed whole).
std::string Mismatch(const std::string& got, const std::string& want) {
  if (got == want) return "";
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) i++;
  // GCC bug 105329: a false -Wrestrict in "'" + s.substr(i, 16).
  TABLETFS_GCC_BUG_105329_BEGIN
  auto at = [&](const std::string& s) {
    return i < s.size() ? "'" + s.substr(i, 16) + "'" : std::string("end");
  };
  TABLETFS_GCC_BUG_105329_END
  return "size " + std::to_string(got.size()) + " (want " +
         std::to_string(want.size()) + "), first difference at " +
         std::to_string(i) + ": " + at(got) + " (want " + at(want) + ")";
}

// The fixture's file helpers, for functions outside a test.
struct Files : MountFixture {
  using MountFixture::ReadFile;
  using MountFixture::WriteFile;
};

// Where the descriptors of an interleaving live: one process each (a
// Worker), or all in the test's own process (three open() of one cell).
enum class Holders { kProcesses, kOneProcess };

// Runs every `stride`-th interleaving, in lexicographic order, of `n`
// descriptors of `path` each doing `steps` ('w' write, 's' fsync, 'c'
// close; the last must be 'c'), against a model of a local file: after each
// step a new reader sees the last commit, and the end holds every write.
// Adds the number of interleavings run to *ran.
void RunInterleavings(const std::string& path, int n, const std::string& steps,
                      Holders holders, int stride, int* ran) {
  // Each interleaving: a sequence of descriptor numbers, each appearing
  // steps.size() times.
  std::string order;
  for (int p = 0; p < n; p++) {
    order += std::string(steps.size(), static_cast<char>('0' + p));
  }
  long index = 0;
  do {
    if (index++ % stride != 0) continue;
    (*ran)++;
    Files::WriteFile(path, "0123456789");
    std::string model = "0123456789", committed = model;
    bool dirty = false;
    std::vector<std::unique_ptr<Worker>> workers;
    std::vector<int> fds(n, -1);
    struct CloseAll {
      std::vector<int>* fds;
      ~CloseAll() {
        for (int fd : *fds) {
          if (fd >= 0) close(fd);
        }
      }
    } close_all{&fds};
    for (int p = 0; p < n; p++) {
      const int flags = p % 2 == 0 ? O_RDWR : O_WRONLY;
      if (holders == Holders::kProcesses) {
        workers.push_back(std::make_unique<Worker>(path, flags));
      } else {
        fds[p] = open(path.c_str(), flags);
        ASSERT_GE(fds[p], 0) << strerror(errno);
      }
    }
    auto run = [&](int p, char op, int off, int len, char c) {
      if (holders == Holders::kProcesses) {
        return workers[p]->Do(op, off, len, c);
      }
      if (op == 'w') {
        std::string data(static_cast<size_t>(len), c);
        return pwrite(fds[p], data.data(), data.size(), off) == len;
      }
      if (op == 's') return fsync(fds[p]) == 0;
      const int fd = fds[p];
      fds[p] = -1;
      return close(fd) == 0;
    };
    std::vector<size_t> next(n, 0);
    for (char who : order) {
      int p = who - '0';
      size_t k = next[p]++;
      char op = steps[k];
      SCOPED_TRACE("order " + order + " descriptor " + std::to_string(p) +
                   " step " + std::to_string(k));
      if (op == 'w') {
        int off = p * 3 + static_cast<int>(k) * 2, len = 4;
        char c = static_cast<char>('a' + p * 4 + static_cast<int>(k));
        ASSERT_TRUE(run(p, 'w', off, len, c)) << strerror(errno);
        if (model.size() < static_cast<size_t>(off + len)) {
          model.resize(off + len, '\0');
        }
        model.replace(off, len, std::string(len, c));
        dirty = true;
      } else {
        ASSERT_TRUE(run(p, op, 0, 0, 0)) << strerror(errno);
        if (dirty) committed = model;
        dirty = false;
      }
      ASSERT_EQ(Files::ReadFile(path), committed);
    }
    workers.clear();
    ASSERT_EQ(Files::ReadFile(path), model) << order;
  } while (std::next_permutation(order.begin(), order.end()));
}

// Every interleaving of two processes doing write, fsync, write, close, and
// of three doing write, close, against a model of a local file.
TEST_F(OpenCellsTest, EveryInterleavingOfProcessesMatchesALocalFile) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");
  int ran = 0;
  RunInterleavings(Path("t/r/f/i"), 2, "wswc", Holders::kProcesses, 1, &ran);
  if (HasFatalFailure()) return;
  RunInterleavings(Path("t/r/f/i"), 3, "wc", Holders::kProcesses, 1, &ran);
  EXPECT_EQ(ran, 70 + 90);
}

// Three processes doing write, fsync, close: 1,680 interleavings, about
// 20 s, so by default every 6th of them in lexicographic order (280, each
// process first, second and last in turn); TABLETFS_LONG_TESTS=1 runs all.
TEST_F(OpenCellsTest, InterleavingsOfThreeProcessesWithFsyncMatchALocalFile) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");
  const int stride = EnvCount("TABLETFS_LONG_TESTS", 0) != 0 ? 1 : 6;
  int ran = 0;
  RunInterleavings(Path("t/r/f/i"), 3, "wsc", Holders::kProcesses, stride,
                   &ran);
  EXPECT_EQ(ran, (1680 + stride - 1) / stride);
}

// The same plans with every descriptor in one process: three open() of
// one cell share its pending value as three processes' do. Three
// descriptors with fsync are sampled as above (all of them take 20 s).
TEST_F(OpenCellsTest, InterleavingsOfDescriptorsInOneProcessMatchALocalFile) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");
  const std::string path = Path("t/r/f/i");
  const int stride = EnvCount("TABLETFS_LONG_TESTS", 0) != 0 ? 1 : 6;
  int ran = 0;
  RunInterleavings(path, 2, "wswc", Holders::kOneProcess, 1, &ran);
  if (HasFatalFailure()) return;
  RunInterleavings(path, 3, "wc", Holders::kOneProcess, 1, &ran);
  if (HasFatalFailure()) return;
  RunInterleavings(path, 3, "wsc", Holders::kOneProcess, stride, &ran);
  EXPECT_EQ(ran, 70 + 90 + (1680 + stride - 1) / stride);
}

// Random writes, truncates, fsyncs, closes, reopens, writes through shared
// mappings and reads through private ones from three descriptors
// (read-write and write-only, the former through the page cache, a quarter
// of them O_APPEND), and a reader, against a model of a local file: the
// writers read the one pending value, the reader the last committed one.
// 30,000 operations (about 5 s; the suite's budget);
// TABLETFS_RANDOM_OPS=100000 runs longer.
TEST_F(OpenCellsTest, RandomInterleavingsMatchALocalFile) {
  RunRandomOps(false, false);
}

// The same with a quarter of the descriptors O_APPEND (seeds 1 and
// 915767296 caught O_APPEND|O_TRUNC descriptors writing at the kernel's
// idea of the size, in the middle of the shared value). Known failure,
// issue 16: seed 77777 fails at op 1926, where a reader reading through
// the page cache (opened before the writers) gets zeros up to the
// kernel's size, which the writers' pending value set.
TEST_F(OpenCellsTest, RandomInterleavingsWithAppends) {
  RunRandomOps(true, false);
}

// Two O_APPEND descriptors and no other writer: each keeps its appends
// out of the value, and the first close commits both, in the order they
// were written, as on a local disk (it committed only its own bytes, so a
// reader saw "base\nb\n" and the other's close then made "base\nb\na\n").
TEST_F(OpenCellsTest, AppendersCloseCommitsEveryAppendInOrder) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && echo base > t/r/f/ap");
  int a = open(Path("t/r/f/ap").c_str(), O_WRONLY | O_APPEND);
  int b = open(Path("t/r/f/ap").c_str(), O_RDWR | O_APPEND);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  ASSERT_EQ(write(a, "a\n", 2), 2);
  ASSERT_EQ(write(b, "b\n", 2), 2);
  ASSERT_EQ(write(a, "c\n", 2), 2);
  EXPECT_EQ(ReadFile(Path("t/r/f/ap")), "base\n");
  ASSERT_EQ(close(b), 0);
  EXPECT_EQ(ReadFile(Path("t/r/f/ap")), "base\na\nb\nc\n");
  ASSERT_EQ(close(a), 0);  // nothing new: no version
  EXPECT_EQ(ReadFile(Path("t/r/f/ap")), "base\na\nb\nc\n");
  EXPECT_EQ(ShOk("ls .versions/t/r/f | grep -c '^ap@'"), "2\n");
}

// An appender keeps its bytes out of the size a stat reports until its
// close; the kernel caches that size (attr_timeout). The close's reply
// waits for the notice that drops it, so a reader right after the close
// reads the appended bytes too (it read "base\n" while a loaded machine
// delayed the notice). The test hook delays every notice by 100 ms.
TEST_F(OpenCellsTest, AReaderAfterAnAppendersCloseSeesTheAppendDespiteAStat) {
  CreateTable("t", {"f"});
  ASSERT_EQ(TryMountForeground({"-o", "attr_timeout=60"},
                               {"TABLETFS_TEST_INVALIDATION_DELAY_MS=100"},
                               tmp() + "/daemon.log"),
            0);
  ShOk("mkdir -p t/r/f");
  const std::string path = Path("t/r/f/ap");
  std::string expected;
  for (int i = 0; i < 3; i++) {
    const std::string line = "line " + std::to_string(i) + "\n";
    int a = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    ASSERT_GE(a, 0);
    ASSERT_EQ(write(a, line.data(), line.size()),
              static_cast<ssize_t>(line.size()));
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0);  // the committed size, cached
    EXPECT_EQ(st.st_size, static_cast<off_t>(expected.size()));
    ASSERT_EQ(close(a), 0);
    expected += line;
    EXPECT_EQ(ReadFile(path), expected) << "round " << i;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, static_cast<off_t>(expected.size()));
  }
}

// The same with reads through MAP_PRIVATE mappings, of the writers and of
// the reader. While writers shared the inode of a reader that opened
// before them, it failed within a few hundred operations (op 224 of the
// default seed): a private mapping of a writer's descriptor faulted its
// pages in through the inode's page cache, so that reader's next read()
// returned uncommitted bytes. With a writer's own inode it ran 7,000 to
// 30,000 operations, then a shared mapping got SIGBUS: the private
// mapping of a reader that opened beside the writers (direct I/O, on
// their inode) read the committed bytes into their pages, and its short
// read cut the kernel's size (AReadersPrivateMappingBesideAWriters-
// SharedMapping). Readers have an inode of their own too now.
TEST_F(OpenCellsTest, RandomInterleavingsWithPrivateMappings) {
  RunRandomOps(false, true);
}

void OpenCellsTest::RunRandomOps(bool appends, bool private_mappings) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && : > t/r/f/m");
  const std::string path = Path("t/r/f/m");
  // A fixed seed by default, so that the suite is repeatable;
  // OPEN_CELLS_SEED=N replays seed N and OPEN_CELLS_SEED=random explores.
  const char* seed_env = getenv("OPEN_CELLS_SEED");
  const unsigned seed =
      seed_env == nullptr ? 1u
      : std::string(seed_env) == "random"
          ? std::random_device()()
          : static_cast<unsigned>(atol(seed_env));
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::string model, committed;
  bool dirty = false;
  struct Desc {
    int fd = -1;
    int flags = 0;
    bool trunc = false;
    bool append = false;
    bool readable() const { return (flags & O_ACCMODE) == O_RDWR; }
  };
  Desc d[3];
  int reader = -1;
  struct CloseAll {  // on a failed ASSERT too, so that the unmount works
    Desc* d;
    int* reader;
    ~CloseAll() {
      for (int i = 0; i < 3; i++) {
        if (d[i].fd >= 0) close(d[i].fd);
      }
      if (*reader >= 0) close(*reader);
    }
  } close_all{d, &reader};
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  auto commit = [&] {
    if (dirty) committed = model;
    dirty = false;
  };
  const long ops = EnvCount("TABLETFS_RANDOM_OPS", 30000);
  for (long op = 0; op < ops; op++) {
    Desc& x = d[pick(3)];
    int what = pick(100);
    if (x.fd < 0) {
      x.flags = pick(2) == 0 ? O_RDWR : O_WRONLY;
      x.append = pick(4) == 0 && appends;
      if (x.append) x.flags |= O_APPEND;
      bool trunc = pick(10) == 0;
      x.fd = open(path.c_str(), x.flags | (trunc ? O_TRUNC : 0));
      ASSERT_GE(x.fd, 0) << strerror(errno);
      x.trunc = trunc;
      if (trunc) {
        model.clear();
        dirty = true;
      }
    } else if (what < 50) {
      size_t off = rng() % 12000, len = 1 + rng() % 3000;
      std::string data(len, static_cast<char>('a' + pick(26)));
      if (x.append) {
        // At the end of the shared value, whatever the offset.
        ASSERT_EQ(write(x.fd, data.data(), len), static_cast<ssize_t>(len))
            << "op " << op << ": " << strerror(errno);
        model += data;
        dirty = true;
        continue;
      }
      ASSERT_EQ(pwrite(x.fd, data.data(), len, static_cast<off_t>(off)),
                static_cast<ssize_t>(len));
      if (model.size() < off + len) model.resize(off + len, '\0');
      model.replace(off, len, data);
      dirty = true;
    } else if (what < 55) {
      size_t size = rng() % 14000;
      ASSERT_EQ(ftruncate(x.fd, static_cast<off_t>(size)), 0);
      if (size != model.size()) dirty = true;
      model.resize(size, '\0');
    } else if (what < 62) {
      ASSERT_EQ(fsync(x.fd), 0);
      commit();
    } else if (what < 70) {
      ASSERT_EQ(close(x.fd), 0);
      x.fd = -1;
      const bool was_dirty = dirty;
      commit();
      if (x.trunc && was_dirty) {
        // An O_TRUNC open that wrote nothing since commits its empty value
        // at RELEASE, which the kernel sends as close() returns: poll for
        // it with a deadline.
        auto deadline =
            std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (ReadFile(path) != committed &&
               std::chrono::steady_clock::now() < deadline) {
        }
      }
    } else if (what < 78) {
      if (x.readable()) {
        ASSERT_EQ(Mismatch(PRead(x.fd, model.size() + 4096), model), "")
            << "op " << op;
      }
    } else if (what < 85) {
      // Through a shared mapping: read it all, change a range, unmap (the
      // kernel writes the pages back at the unmap).
      if (!x.readable() || model.empty()) continue;
      size_t size = model.size();
      void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED,
                     x.fd, 0);
      if (x.append) {
        // README "Writing": no MAP_SHARED of an O_APPEND descriptor.
        ASSERT_EQ(p, MAP_FAILED) << "op " << op;
        ASSERT_EQ(errno, ENODEV) << "op " << op;
        continue;
      }
      if (p == MAP_FAILED) {
        // Opened while a reader read through the page cache (README).
        ASSERT_EQ(errno, ENODEV) << "op " << op;
        ASSERT_GE(reader, 0);
        continue;
      }
      char* m = static_cast<char*>(p);
      ASSERT_EQ(Mismatch(std::string(m, size), model), "")
          << "mapped, op " << op;
      size_t off = rng() % size, len = 1 + rng() % std::min<size_t>(
                                                 size - off, 2000);
      char c = static_cast<char>('A' + pick(26));
      memset(m + off, c, len);
      model.replace(off, len, std::string(len, c));
      dirty = true;
      if (pick(3) == 0) {
        ASSERT_EQ(msync(p, size, MS_SYNC), 0);
        commit();
      }
      ASSERT_EQ(munmap(p, size), 0);
    } else if (what < 89) {
      // Through a private mapping, of a writer (the pending value) or of
      // the reader (the committed one): a private copy, nothing stored.
      const bool of_reader = reader >= 0 && pick(2) == 0;
      if (!private_mappings) continue;
      const int fd = of_reader ? reader : x.fd;
      const std::string& want = of_reader ? committed : model;
      size_t size = want.size();
      if (of_reader) {
        // The kernel holds the size the writers hold (README "Writing":
        // a reader's mapping touched past it gets SIGBUS).
        struct stat st;
        ASSERT_EQ(fstat(fd, &st), 0);
        size = std::min(size, static_cast<size_t>(st.st_size));
      }
      if (size == 0) continue;
      void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd,
                     0);
      if (!of_reader && !x.readable()) {
        ASSERT_EQ(p, MAP_FAILED) << "op " << op;
        ASSERT_EQ(errno, EACCES) << "op " << op;
        continue;
      }
      ASSERT_NE(p, MAP_FAILED) << "private, op " << op << ": "
                               << strerror(errno);
      char* m = static_cast<char*>(p);
      ASSERT_EQ(Mismatch(std::string(m, size), want.substr(0, size)), "")
          << "private" << (of_reader ? " of the reader" : "") << ", op "
          << op;
      memset(m, 'P', std::min<size_t>(size, 100));
      ASSERT_EQ(munmap(p, size), 0);
    } else {
      if (reader < 0 || pick(4) == 0) {
        if (reader >= 0) close(reader);
        reader = open(path.c_str(), O_RDONLY);
        ASSERT_GE(reader, 0);
      }
      ASSERT_EQ(Mismatch(PRead(reader, committed.size() + 4096), committed), "")
          << "op " << op;
    }
  }
  for (Desc& x : d) {
    if (x.fd >= 0) {
      ASSERT_EQ(close(x.fd), 0);
      x.fd = -1;
      commit();
    }
  }
  if (reader >= 0) close(reader);
  reader = -1;
  EXPECT_EQ(ReadFile(path), model);
  Unmount();
  Mount();
  EXPECT_EQ(ReadFile(path), model);
}

// Issue 14 item 14: invalidations were sent after the reply, so a reader
// right after a write could see the kernel's copy of the old value. The
// test hook delays every notice; the reply must wait for them.
TEST_F(OpenCellsTest, RepliesComeAfterTheirInvalidations) {
  CreateTable("t", {"f"});
  {
    auto db = OpenDb();
    RowMutation m("r");
    m.SetCell("f", "q", 3000000, "v3");
    ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
  }
  ASSERT_EQ(TryMountForeground({"-o", "entry_timeout=60,attr_timeout=60"},
                               {"TABLETFS_TEST_INVALIDATION_DELAY_MS=100"},
                               tmp() + "/daemon.log"),
            0);
  auto snapshot = [&] {
    return ShOk("stat -c '%s %Y' t/r/f/q; cat t/r/f/q; echo");
  };
  EXPECT_EQ(snapshot(), "2 3\nv3\n");  // cached by the kernel now
  // A Q@T write changes Q, which the kernel did not see.
  ShOk("printf v444 > t/r/f/q@4000000");
  EXPECT_EQ(snapshot(), "4 4\nv444\n");
  // A version removed under .versions.
  ShOk("rm .versions/t/r/f/q@4000000");
  EXPECT_EQ(snapshot(), "2 3\nv3\n");
  // A close's commit, seen by a reader that cached the old size.
  ShOk("printf a-longer-value > t/r/f/q");
  EXPECT_EQ(ShOk("stat -c %s t/r/f/q; cat t/r/f/q"), "14\na-longer-value");
}

// Issue 14 item 14, single-threaded: a reply waits for its notices, but a
// notice can block in the kernel on a page a reader is reading, whose READ
// a -s daemon serves only after that reply. The wait is bounded: a reader
// that keeps the cell open and reads it through the page cache while
// another process commits new versions by Q@T names (which the kernel does
// not see, so each commit's reply waits for a notice on the reader's
// inode), with every notice delayed, never deadlocks the mount. Both
// processes must finish within the deadline.
TEST_F(OpenCellsTest, SingleThreadedReaderAndWriterFinishWithDelayedNotices) {
  CreateTable("t", {"f"});
  {
    auto db = OpenDb();
    RowMutation m("r");
    m.SetCell("f", "q", 3000000, std::string(4u << 20, 'a'));
    ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
  }
  const std::string log = tmp() + "/daemon.log";
  ASSERT_EQ(
      TryMountForeground({"-s", "-o", "entry_timeout=60,attr_timeout=60"},
                         {"TABLETFS_TEST_INVALIDATION_DELAY_MS=100"}, log),
      0)
      << ReadFile(log);
  const std::string path = Path("t/r/f/q");
  constexpr int kCommits = 6;
  int stop[2];
  ASSERT_EQ(pipe(stop), 0);
  const pid_t reader = fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    close(stop[1]);
    // Opened before any writer: it reads through the page cache.
    int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) _exit(2);
    std::string buf(4u << 20, '\0');
    for (;;) {
      // Whole passes, each many READs while the writer commits.
      if (pread(fd, buf.data(), buf.size(), 0) < 0) _exit(3);
      struct pollfd p = {stop[0], POLLIN, 0};
      if (poll(&p, 1, 0) > 0) _exit(0);  // the writer is done
    }
  }
  close(stop[0]);
  const pid_t writer = fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    for (int i = 0; i < kCommits; i++) {
      std::string v(4u << 20, static_cast<char>('b' + i));
      const std::string at = path + "@" + std::to_string(4000000 + i);
      int fd = open(at.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) _exit(2);
      if (write(fd, v.data(), v.size()) != static_cast<ssize_t>(v.size())) {
        _exit(3);
      }
      if (close(fd) != 0) _exit(4);
    }
    _exit(0);
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  // The exit status of `pid`, or -1 once the deadline passed.
  auto wait_until_deadline = [&](pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return status;
  };
  const auto start = std::chrono::steady_clock::now();
  const int writer_status = wait_until_deadline(writer);
  close(stop[1]);
  const int reader_status = wait_until_deadline(reader);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  if (writer_status == -1 || reader_status == -1) {
    kill(writer, SIGKILL);
    kill(reader, SIGKILL);
    ADD_FAILURE() << "deadlock: writer " << writer_status << ", reader "
                  << reader_status << " after 30 s\n"
                  << ReadFile(log);
    KillDaemon();
    waitpid(writer, nullptr, 0);
    waitpid(reader, nullptr, 0);
    return;
  }
  EXPECT_TRUE(WIFEXITED(writer_status) && WEXITSTATUS(writer_status) == 0)
      << writer_status;
  EXPECT_TRUE(WIFEXITED(reader_status) && WEXITSTATUS(reader_status) == 0)
      << reader_status;
  EXPECT_EQ(ReadFile(path), std::string(4u << 20, 'b' + kCommits - 1));
  const std::string text = ReadFile(log);
  size_t blocked = 0;
  for (size_t at = 0;
       (at = text.find("still blocked in the kernel", at)) != std::string::npos;
       ++at) {
    ++blocked;
  }
  std::cout << kCommits
            << " Q@T commits under a page-cache reader in -s mode took " << ms
            << " ms; replies that gave up waiting: " << blocked << std::endl;
}

// A reader that opens while a writer maps the cell shared, and maps it
// privately: its faults went through the writers' inode, put the
// committed bytes in the pages the writer's mapping showed, and their
// short read cut the kernel's size under that mapping, which then got
// SIGBUS (issue 16's open bug, item 2). Readers and writers are now on
// inodes of their own. The mapping is used in a child, so that a SIGBUS
// fails the test instead of ending the suite.
TEST_F(OpenCellsTest, AReadersPrivateMappingBesideAWritersSharedMapping) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && printf 'base\\n' > t/r/f/c");
  const std::string path = Path("t/r/f/c");
  constexpr size_t kSize = 20000;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int w = open(path.c_str(), O_RDWR);
    if (w < 0 || pwrite(w, std::string(kSize, 'w').data(), kSize, 0) !=
                     static_cast<ssize_t>(kSize)) {
      _exit(10);
    }
    auto* s = static_cast<char*>(
        mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, w, 0));
    if (s == MAP_FAILED || s[12288] != 'w') _exit(11);
    int r = open(path.c_str(), O_RDONLY);
    struct stat st;
    if (r < 0 || fstat(r, &st) != 0) _exit(12);
    if (st.st_size != 5) _exit(13);  // the committed value's size
    auto* m = static_cast<char*>(
        mmap(nullptr, 5, PROT_READ | PROT_WRITE, MAP_PRIVATE, r, 0));
    if (m == MAP_FAILED || std::string(m, 5) != "base\n") _exit(14);
    munmap(m, 5);
    // The writer's mapping still shows the pending bytes, to the end.
    if (std::string(s, 8) != "wwwwwwww" || s[12288] != 'w' ||
        s[kSize - 1] != 'w') {
      _exit(15);
    }
    memset(s + 100, 'M', 10);
    if (msync(s, kSize, MS_SYNC) != 0) _exit(16);
    munmap(s, kSize);
    close(w);
    // The reader follows the commit.
    char buf[8];
    if (pread(r, buf, sizeof(buf), 100) != 8 ||
        std::string(buf, 8) != "MMMMMMMM") {
      _exit(17);
    }
    close(r);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_FALSE(WIFSIGNALED(status)) << "signal " << WTERMSIG(status);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  std::string want(kSize, 'w');
  want.replace(100, 10, std::string(10, 'M'));
  EXPECT_EQ(ReadFile(path), want);
}

// Readers and writers opening one cell at once, from several threads: each
// open that finds the other kind moves once (ESTALE, answered by the
// kernel's retry), and no ESTALE ever reaches a caller, also when two
// threads move at the same moment; every read is a whole version, and the
// cell keeps one st_ino. (Each writer writes a whole value of one length
// in one write(), so every commit is one writer's value: with O_TRUNC or
// several writes, writers interleaving would commit mixes, as on a local
// disk.)
TEST_F(OpenCellsTest, ReadersAndWritersOpeningAtOnceNeverSeeEstale) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");
  const std::string path = Path("t/r/f/c");
  auto version = [](int i) {
    return std::string(3000, static_cast<char>('a' + i % 26));
  };
  WriteFile(path, version(0));
  struct stat first;
  ASSERT_EQ(stat(path.c_str(), &first), 0);
  std::atomic<bool> stop{false};
  std::atomic<int> opens{0}, next_version{1};
  std::mutex mu;
  std::vector<std::string> problems;
  auto problem = [&](const std::string& p) {
    std::lock_guard<std::mutex> lock(mu);
    if (problems.size() < 5) problems.push_back(p);
  };
  auto is_version = [&](const std::string& got) {
    return got.size() == 3000 && got == std::string(got.size(), got[0]);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; t++) {
    threads.emplace_back([&, t] {
      const bool writer = t % 2 == 0;
      while (!stop.load()) {
        int fd = open(path.c_str(), writer ? O_RDWR : O_RDONLY);
        opens++;
        if (fd < 0) {
          problem(std::string(writer ? "writer" : "reader") +
                  " open: " + strerror(errno));
          return;
        }
        if (writer) {
          const std::string v = version(next_version++);
          if (pwrite(fd, v.data(), v.size(), 0) !=
              static_cast<ssize_t>(v.size())) {
            problem(std::string("write: ") + strerror(errno));
          }
        } else {
          struct stat st;
          if (fstat(fd, &st) == 0 && st.st_ino != first.st_ino) {
            problem("st_ino " + std::to_string(st.st_ino) + ", first " +
                    std::to_string(first.st_ino));
          }
          std::string got = PRead(fd);
          if (!is_version(got)) {
            problem("read " + std::to_string(got.size()) +
                    " bytes: " + got.substr(0, 20));
          }
        }
        if (close(fd) != 0) problem(std::string("close: ") + strerror(errno));
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(problems, std::vector<std::string>{});
  EXPECT_GT(opens.load(), 100);
  EXPECT_TRUE(is_version(ReadFile(path)));
  std::cout << opens.load() << " opens" << std::endl;
}

// A `Q@T` writer beside a reader of Q@T: the reader read a version that
// "never changes" from a buffer taken at open, on the inode the writer's
// O_TRUNC then emptied in the kernel, so it read nothing, and after the
// commit the new bytes cut at the old size. Now the reader keeps the
// version at T until the writer's close and then follows it, as readers
// of a cell do.
TEST_F(OpenCellsTest, AReaderOfQAtTFollowsAQAtTWriter) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");
  const long t = (time(nullptr) - 5) * 1000000L;
  const std::string path = Path("t/r/f/q@" + std::to_string(t));
  WriteFile(path, "old version at T\n");
  int r = open(path.c_str(), O_RDONLY);
  ASSERT_GE(r, 0) << strerror(errno);
  EXPECT_EQ(PRead(r), "old version at T\n");
  int w = open(path.c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(w, 0) << strerror(errno);
  EXPECT_EQ(PRead(r), "old version at T\n");
  ASSERT_EQ(write(w, "new", 3), 3);
  EXPECT_EQ(PRead(r), "old version at T\n");
  ASSERT_EQ(close(w), 0);
  EXPECT_EQ(PRead(r), "new");
  close(r);
  EXPECT_EQ(ReadFile(path), "new");
  EXPECT_EQ(ShOk("ls .versions/t/r/f"), "q@" + std::to_string(t) + "\n");
}

// Mappings (issue 16 item 6): MAP_SHARED of a cell opened read-write reads
// and writes it, committed like write() at close, fsync/msync(MS_SYNC),
// and at the last unmap of a closed descriptor; MAP_PRIVATE works on any
// descriptor; writable mappings of versions are refused like writes.
TEST_F(OpenCellsTest, Mappings) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && printf 0123456789 > t/r/f/m");
  const std::string path = Path("t/r/f/m");
  // MAP_SHARED, written through the mapping only, committed by close.
  int fd = open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  void* p = mmap(nullptr, 10, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED) << strerror(errno);
  char* m = static_cast<char*>(p);
  EXPECT_EQ(std::string(m, 10), "0123456789");
  m[0] = 'A';
  // Not committed yet: readers see the committed value.
  EXPECT_EQ(ReadFile(path), "0123456789");
  // msync(MS_SYNC) commits.
  ASSERT_EQ(msync(p, 10, MS_SYNC), 0);
  EXPECT_EQ(ReadFile(path), "A123456789");
  // Written after the close: committed at the unmap (RELEASE).
  ASSERT_EQ(close(fd), 0);
  m[1] = 'B';
  ASSERT_EQ(munmap(p, 10), 0);
  std::string got;
  for (int i = 0; i < 200 && got != "AB23456789"; i++) {
    got = ReadFile(path);  // RELEASE is asynchronous: poll, with a deadline
    if (got != "AB23456789") usleep(5000);
  }
  EXPECT_EQ(got, "AB23456789");
  // A write() of another descriptor is seen through the mapping at once.
  fd = open(path.c_str(), O_RDWR);
  int other = open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_GE(other, 0);
  p = mmap(nullptr, 10, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  m = static_cast<char*>(p);
  EXPECT_EQ(m[2], '2');
  ASSERT_EQ(pwrite(other, "CC", 2, 2), 2);
  EXPECT_EQ(std::string(m, 10), "ABCC456789");
  m[9] = 'Z';
  ASSERT_EQ(fsync(fd), 0);
  EXPECT_EQ(ReadFile(path), "ABCC45678Z");
  ASSERT_EQ(munmap(p, 10), 0);
  ASSERT_EQ(close(other), 0);
  ASSERT_EQ(close(fd), 0);
  // MAP_PRIVATE on a read-only descriptor and on a read-write one: the
  // copy is private and nothing is committed.
  for (int flags : {O_RDONLY, O_RDWR}) {
    fd = open(path.c_str(), flags);
    ASSERT_GE(fd, 0);
    p = mmap(nullptr, 10, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    ASSERT_NE(p, MAP_FAILED) << strerror(errno);
    m = static_cast<char*>(p);
    EXPECT_EQ(std::string(m, 10), "ABCC45678Z");
    m[0] = 'p';
    ASSERT_EQ(munmap(p, 10), 0);
    ASSERT_EQ(close(fd), 0);
  }
  EXPECT_EQ(ReadFile(path), "ABCC45678Z");
  // A file written only through a mapping survives a remount.
  fd = open(Path("t/r/f/new").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 8192), 0);
  p = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  memset(p, 'n', 8192);
  ASSERT_EQ(munmap(p, 8192), 0);
  ASSERT_EQ(close(fd), 0);
  // Writable mappings of versions: refused at the open, like writes.
  std::string version = ShOk("ls .versions/t/r/f | grep '^m@' | head -1");
  version.pop_back();
  errno = 0;
  EXPECT_EQ(open(Path(".versions/t/r/f/" + version).c_str(), O_RDWR), -1);
  EXPECT_EQ(errno, EPERM);
  fd = open(Path(".versions/t/r/f/" + version).c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  errno = 0;
  EXPECT_EQ(mmap(nullptr, 10, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0),
            MAP_FAILED);
  EXPECT_EQ(errno, EACCES);
  p = mmap(nullptr, 10, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED) << strerror(errno);
  ASSERT_EQ(munmap(p, 10), 0);
  close(fd);
  Unmount();
  Mount();
  EXPECT_EQ(ReadFile(Path("t/r/f/new")), std::string(8192, 'n'));
  EXPECT_EQ(ReadFile(path), "ABCC45678Z");
}

// `cat f` then a shared mapping of f: the reader's RELEASE comes after
// its close returned, and while a reader reads through the page cache a
// writer cannot share its inode (its pending bytes would show there). The
// O_RDWR open waits for the RELEASE of closed readers (the test hook
// delays every RELEASE by 10 ms; the open waits up to 50 ms), so each
// round maps the cell's own inode; a reader still open makes the writer
// open a new one.
TEST_F(OpenCellsTest, ASharedMappingRightAfterAReadersClose) {
  CreateTable("t", {"f"});
  ASSERT_EQ(TryMountForeground({}, {"TABLETFS_TEST_RELEASE_DELAY_MS=10"},
                               tmp() + "/daemon.log"),
            0);
  ShOk("mkdir -p t/r/f && printf 0123456789 > t/r/f/m");
  const std::string path = Path("t/r/f/m");
  {
    // A reader still open reads through the page cache: the writer gets
    // an inode of its own (README "Writing"), so it maps shared, and the
    // reader sees the committed value until the commit, then the new one.
    int reader = open(path.c_str(), O_RDONLY);
    ASSERT_GE(reader, 0);
    EXPECT_EQ(PRead(reader), "0123456789");
    struct stat before, after;
    ASSERT_EQ(fstat(reader, &before), 0);
    int fd = open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << strerror(errno);
    ASSERT_EQ(fstat(fd, &after), 0);
    EXPECT_EQ(before.st_ino, after.st_ino);  // stat shows one number
    void* p = mmap(nullptr, 10, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(p, MAP_FAILED) << strerror(errno);
    static_cast<char*>(p)[0] = 'X';
    ASSERT_EQ(munmap(p, 10), 0);
    EXPECT_EQ(PRead(reader), "0123456789");
    ASSERT_EQ(close(fd), 0);
    EXPECT_EQ(PRead(reader), "X123456789");
    close(reader);
  }
  for (int i = 0; i < 10; i++) {
    ASSERT_EQ(ReadFile(path).size(), 10u);
    int fd = open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    void* p = mmap(nullptr, 10, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      close(fd);  // else the unmount finds the mount busy
      FAIL() << "round " << i << ": " << strerror(err);
    }
    static_cast<char*>(p)[0] = static_cast<char>('a' + i);
    ASSERT_EQ(munmap(p, 10), 0);
    ASSERT_EQ(close(fd), 0);
  }
  EXPECT_EQ(ReadFile(path), "j123456789");
}

// A writer's own inode (README "Writing") beside readers that open and
// close all the time through the page cache: each writer's open retires
// the inode at most once, so none fails (the kernel retries ESTALE once
// only), and no reader sees a writer's O_TRUNC or bytes before its
// commit: each read is one whole version.
TEST_F(OpenCellsTest, WritersBesideAReaderLoopOpenAndReadersSeeWholeVersions) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");
  const std::string path = Path("t/r/f/c");
  auto version = [](int i) {
    return std::string(size_t(1000 + i), static_cast<char>('a' + i % 26));
  };
  WriteFile(path, version(0));
  // A long-lived page-cache reader too, as `tail -f` would be.
  int early = open(path.c_str(), O_RDONLY);
  ASSERT_GE(early, 0) << strerror(errno);
  EXPECT_EQ(PRead(early), version(0));
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0};
  std::string bad;
  std::thread reader([&] {
    while (!stop.load()) {
      int fd = open(path.c_str(), O_RDONLY);
      if (fd < 0) {
        bad = std::string("open: ") + strerror(errno);
        return;
      }
      std::string got = PRead(fd);
      close(fd);
      reads++;
      bool whole = false;
      for (int i = 0; i < 100 && !whole; i++) whole = got == version(i);
      if (!whole) {
        bad = "read " + std::to_string(got.size()) +
              " bytes: " + got.substr(0, 20);
        return;
      }
    }
  });
  std::string failed;
  for (int i = 1; i < 100 && bad.empty() && failed.empty(); i++) {
    int fd = open(path.c_str(), O_WRONLY | O_TRUNC);
    if (fd < 0) {
      failed = "writer " + std::to_string(i) + ": " + strerror(errno);
      break;
    }
    const std::string v = version(i);
    EXPECT_EQ(write(fd, v.data(), 500), 500);
    EXPECT_EQ(write(fd, v.data() + 500, v.size() - 500),
              static_cast<ssize_t>(v.size() - 500));
    EXPECT_EQ(close(fd), 0);
    EXPECT_EQ(PRead(early), v) << "writer " << i;
  }
  stop = true;
  reader.join();
  close(early);
  EXPECT_EQ(failed, "");
  EXPECT_EQ(bad, "");
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(ReadFile(path), version(99));
}

// Writers that open a cell at once while readers open and close it in a
// loop (each reader's open beside writers moves it to an inode of its own,
// and each writer's open beside readers moves it back, so that retried
// opens race one another): every writer shares the one pending value, as
// on a local disk, so the value after each round holds every writer's
// byte. A retry that landed on an inode without the writers once kept a
// pending value of its own, and its commit dropped the others' bytes.
TEST_F(OpenCellsTest, WritersOpeningBesideReaderLoopsShareOnePendingValue) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");
  const std::string path = Path("t/r/f/s");
  constexpr int kWriters = 3;
  const int rounds =
      static_cast<int>(EnvCount("TABLETFS_LONG_TESTS", 0)) != 0 ? 2000 : 200;
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; r++) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        int fd = open(path.c_str(), O_RDONLY);
        if (fd < 0) continue;  // before the first round's value
        PRead(fd);
        close(fd);
        reads++;
      }
    });
  }
  std::string failed;
  for (int round = 0; round < rounds && failed.empty(); round++) {
    const std::string base(kWriters, '.');
    WriteFile(path, base);
    std::barrier opened(kWriters), wrote(kWriters);
    std::vector<std::string> errors(kWriters);
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; w++) {
      writers.emplace_back([&, w] {
        int fd = open(path.c_str(), O_RDWR);
        if (fd < 0) errors[w] = std::string("open: ") + strerror(errno);
        opened.arrive_and_wait();
        const char c = static_cast<char>('A' + w);
        if (fd >= 0 && pwrite(fd, &c, 1, w) != 1) {
          errors[w] = std::string("pwrite: ") + strerror(errno);
        }
        wrote.arrive_and_wait();
        if (fd >= 0 && close(fd) != 0) {
          errors[w] = std::string("close: ") + strerror(errno);
        }
      });
    }
    for (std::thread& t : writers) t.join();
    for (int w = 0; w < kWriters; w++) {
      if (!errors[w].empty()) {
        failed = "round " + std::to_string(round) + " writer " +
                 std::to_string(w) + ": " + errors[w];
      }
    }
    const std::string got = ReadFile(path);
    if (failed.empty() && got != "ABC") {
      failed = "round " + std::to_string(round) + ": " + got;
    }
  }
  stop = true;
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(failed, "");
  EXPECT_GT(reads.load(), 0);
}

// A child maps t/r/f/k (holding "before") shared, writes "synced" and
// msyncs it when `synced` is set, then leaves "dirty!" in the mapping; the
// daemon is killed (-9) while the mapping is dirty and mounted again.
void OpenCellsTest::KillWhileAMappingIsDirty(bool synced) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && printf before > t/r/f/k");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int fd = open(Path("t/r/f/k").c_str(), O_RDWR);
    void* p = mmap(nullptr, 6, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) _exit(1);
    if (synced) {
      memcpy(p, "synced", 6);
      if (msync(p, 6, MS_SYNC) != 0) _exit(2);
    }
    memcpy(p, "dirty!", 6);
    if (write(ready[1], "x", 1) != 1) _exit(3);
    pause();  // killed with the mount gone
    _exit(0);
  }
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1) << "the child failed";
  close(ready[0]);
  if (synced) {
    EXPECT_EQ(ReadFile(Path("t/r/f/k")), "synced");
  }
  KillDaemon();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  Mount();
}

// kill -9 of the daemon while a mapping holds dirty pages leaves the
// previous version intact.
TEST_F(OpenCellsTest, KillWhileAMappingIsDirtyKeepsThePreviousVersion) {
  KillWhileAMappingIsDirty(/*synced=*/false);
  EXPECT_EQ(ShOk("cat t/r/f/k"), "before");
}

// kill -9 of the daemon after msync(MS_SYNC) of a shared mapping: the
// msync committed (README "Durability"), so that version survives; what
// was written after it is lost with the daemon.
TEST_F(OpenCellsTest, KillAfterMsyncKeepsTheSyncedVersion) {
  KillWhileAMappingIsDirty(/*synced=*/true);
  EXPECT_EQ(ShOk("cat t/r/f/k"), "synced");
  EXPECT_EQ(ShOk("ls .versions/t/r/f | wc -l"), "2\n");
}

// `.at/T` is read-only (README: any change there is EROFS): no open for
// writing, so no writable shared mapping; read-only and private mappings
// work and change nothing.
TEST_F(OpenCellsTest, WritableMappingsUnderAtAreRefused) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && printf 0123456789 > t/r/f/m");
  const std::string at =
      Path(".at/" + std::to_string(MicrosAfterEveryWrite()) + "/t/r/f/m");
  for (int flags : {O_RDWR, O_WRONLY, O_RDWR | O_TRUNC}) {
    errno = 0;
    EXPECT_EQ(open(at.c_str(), flags), -1) << flags;
    EXPECT_EQ(errno, EROFS) << flags;
  }
  int fd = open(at.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0) << strerror(errno);
  errno = 0;
  EXPECT_EQ(mmap(nullptr, 10, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0),
            MAP_FAILED);
  EXPECT_EQ(errno, EACCES);
  void* p = mmap(nullptr, 10, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED) << strerror(errno);
  EXPECT_EQ(std::string(static_cast<char*>(p), 10), "0123456789");
  ASSERT_EQ(munmap(p, 10), 0);
  p = mmap(nullptr, 10, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ASSERT_NE(p, MAP_FAILED) << strerror(errno);
  static_cast<char*>(p)[0] = 'X';
  ASSERT_EQ(munmap(p, 10), 0);
  ASSERT_EQ(close(fd), 0);
  EXPECT_EQ(ReadFile(at), "0123456789");
  EXPECT_EQ(ReadFile(Path("t/r/f/m")), "0123456789");
  EXPECT_EQ(ShOk("ls .versions/t/r/f | wc -l"), "1\n");
}

// touch -d into the future, then `>>`; into the past, then `>`: each write
// is the current value, one new version each, and stat's mtime is the
// commit's time, not the touched one (issue 16 item 2), until touched again.
TEST_F(OpenCellsTest, WritesAfterTouchIntoTheFutureOrThePastAreCurrent) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && echo base > t/r/f/f");
  auto mtime = [&] { return std::stol(ShOk("stat -c %Y t/r/f/f")); };
  auto versions = [&] { return ShOk("ls .versions/t/r/f | wc -l"); };
  ShOk("touch -d 2099-01-01T00:00:00Z t/r/f/f");
  EXPECT_EQ(mtime(), 4070908800);
  EXPECT_EQ(versions(), "1\n");  // touch adds no version
  long before = time(nullptr);
  ShOk("echo appended >> t/r/f/f");
  EXPECT_EQ(ShOk("cat t/r/f/f"), "base\nappended\n");
  EXPECT_EQ(versions(), "2\n");
  EXPECT_GE(mtime(), before);
  EXPECT_LE(mtime(), time(nullptr));
  ShOk("touch -d 2001-02-03T04:05:06Z t/r/f/f");
  EXPECT_EQ(mtime(), 981173106);
  before = time(nullptr);
  ShOk("echo rewritten > t/r/f/f");
  EXPECT_EQ(ShOk("cat t/r/f/f"), "rewritten\n");
  EXPECT_EQ(versions(), "3\n");
  EXPECT_GE(mtime(), before);
  EXPECT_LE(mtime(), time(nullptr));
  // Touched after the write: the touched time, and still no version.
  ShOk("touch -d 2001-02-03T04:05:06Z t/r/f/f");
  EXPECT_EQ(mtime(), 981173106);
  EXPECT_EQ(ShOk("cat t/r/f/f"), "rewritten\n");
  EXPECT_EQ(versions(), "3\n");
}

// A reader during rewrites, concurrently: another process rewrites a 5 MiB
// cell (`>`) several times, each version one distinct byte and length.
// A reader opened fresh for each pass reads one whole committed version,
// and so does the reader opened before the writer started (mixed values
// are counted and printed; each page must still be whole).
// It failed on most runs while writers shared the readers' inode (sizes
// 0 and 131072 of versions 5 MiB long: the writer's O_TRUNC, applied by
// the kernel before any commit), then 17 runs in 40 with a writer's own
// inode: a commit landing during a page-cache reader's 6 MiB pread
// dropped the pages and size under it ("'a' x 1396736, 'b' x 69632, 'c' x
// 3636510", a fresh reader that opened between two writers; "'b' x 69632,
// 'c' x 5033246, NUL x 8930 (unaligned)", the early reader). Readers of a
// cell committed less than a second ago read around the page cache now,
// and a direct reader's read() is one version: none in 30 runs. (A reader
// that opened a cell at rest through the page cache can still meet a
// commit during a read(): README "Where this differs", item 1.)
TEST_F(OpenCellsTest, ReadersDuringConcurrentRewritesSeeWholeVersions) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");
  const std::string path = Path("t/r/f/big");
  WriteFile(path, std::string(RewriteLength(0), RewriteByte(0)));
  const int early = open(path.c_str(), O_RDONLY);  // before the writer
  ASSERT_GE(early, 0);
  const pid_t writer = StartRewriter(path);
  ASSERT_GE(writer, 0);
  // "" for a whole version; else what the read returned.
  auto check = [&](const std::string& got) -> std::string {
    if (IsWholeVersion(got)) return "";
    std::string runs;  // byte x length, run by run
    for (size_t i = 0; i < got.size();) {
      size_t j = got.find_first_not_of(got[i], i);
      if (j == std::string::npos) j = got.size();
      runs += std::string(1, got[i]) + "x" + std::to_string(j - i) +
              (i % 4096 == 0 ? "" : "(unaligned)") + " ";
      i = j;
    }
    return "size " + std::to_string(got.size()) + ": " + runs;
  };
  int passes = 0, early_mixed = 0;
  std::string early_example;
  int status = 0;
  while (waitpid(writer, &status, WNOHANG) == 0) {
    passes++;
    std::string got = PRead(early, 6 << 20);
    std::string problem = check(got);
    if (!problem.empty()) {
      early_mixed++;
      if (early_example.empty()) early_example = problem;
      EXPECT_EQ(problem.find("unaligned"), std::string::npos) << problem;
    }
    int fresh = open(path.c_str(), O_RDONLY);
    ASSERT_GE(fresh, 0);
    got = PRead(fresh, 6 << 20);
    close(fresh);
    EXPECT_EQ(check(got), "") << "fresh reader, pass " << passes;
  }
  close(early);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(ReadFile(path), std::string(RewriteLength(kRewriteVersions - 1),
                                        RewriteByte(kRewriteVersions - 1)));
  EXPECT_EQ(early_mixed, 0) << early_example;
  printf("%d passes; the reader opened before the writer read %d mixed "
         "values%s%s\n",
         passes, early_mixed, early_example.empty() ? "" : ", first: ",
         early_example.c_str());
}

// A reader of a cell at rest reads through the page cache, and a commit
// during one of its read()s can mix two versions (README "Where this
// differs", item 1); one opened with O_DIRECT reads each read() from one
// version, as the README tells programs that must never see a mix.
TEST_F(OpenCellsTest, AnODirectReaderOfACellAtRestReadsWholeVersions) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");
  const std::string path = Path("t/r/f/big");
  WriteFile(path, std::string(RewriteLength(0), RewriteByte(0)));
  // At rest: more than a second after the last commit, no writer open.
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  const int reader = open(path.c_str(), O_RDONLY | O_DIRECT);
  ASSERT_GE(reader, 0) << strerror(errno);
  const pid_t writer = StartRewriter(path);
  ASSERT_GE(writer, 0);
  int passes = 0, mixed = 0;
  int status = 0;
  while (waitpid(writer, &status, WNOHANG) == 0) {
    passes++;
    std::string got = PRead(reader, 6 << 20);
    if (!IsWholeVersion(got)) mixed++;
  }
  close(reader);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(mixed, 0) << "of " << passes << " passes";
  EXPECT_GT(passes, 1);
  printf("%d passes of an O_DIRECT reader during 19 rewrites, %d mixed\n",
         passes, mixed);
}

// sqlite with two connections in two processes, in the default journal
// mode and in WAL mode (which maps its -shm file MAP_SHARED): the issue's
// 200 rows from each, committed 10 at a time (each commit fsyncs).
TEST_F(OpenCellsTest, SqliteTwoConnections) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");
  for (const char* mode : {"delete", "wal"}) {
    SCOPED_TRACE(mode);
    std::string db = Path(std::string("t/r/f/") + mode + ".db");
    std::string script =
        "import os, sqlite3, subprocess, sys\n"
        "db = sys.argv[1]\n"
        "a = sqlite3.connect(db)\n"
        "print(a.execute('pragma journal_mode=" + std::string(mode) +
        "').fetchone()[0])\n"
        "a.execute('create table t (x)')\n"
        "a.execute('insert into t values (0)')\n"
        "a.commit()\n"
        "subprocess.run([sys.executable, '-c', '''\n"
        "import sqlite3, sys\n"
        "b = sqlite3.connect(sys.argv[1])\n"
        "for i in range(200):\n"
        "    b.execute(\"insert into t values (?)\", (i,))\n"
        "    if i % 10 == 9: b.commit()\n"
        "b.close()\n"
        "''', db], check=True)\n"
        "for i in range(200):\n"
        "    a.execute('insert into t values (?)', (i,))\n"
        "    if i % 10 == 9: a.commit()\n"
        "print(a.execute('select count(*) from t').fetchone()[0])\n"
        "print(a.execute('pragma integrity_check').fetchone()[0])\n"
        "print(os.path.exists(db + '-wal'))\n"  // while a is open
        "a.close()\n";
    WriteFile(tmp() + "/sq.py", script);
    const bool wal = std::string(mode) == "wal";
    EXPECT_EQ(ShOk("python3 " + tmp() + "/sq.py " + db),
              std::string(mode) + "\n401\nok\n" + (wal ? "True" : "False") +
                  "\n");
    EXPECT_EQ(ShOk("python3 -c \"import sqlite3; c = sqlite3.connect('" + db +
                   "'); print(c.execute('select count(*) from t')"
                   ".fetchone()[0])\""),
              "401\n");
  }
}

}  // namespace
}  // namespace tabletfs::testing
