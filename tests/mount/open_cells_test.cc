// Real-mount tests of open cells behaving as on a local disk (issue 16,
// DESIGN.md "Writing"): descriptors of one cell share one pending value,
// each close or fsync with something new commits it, readers see committed
// versions only and follow the newest, refused writes store nothing.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
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
};

// The first example: on a local disk both descriptors write one
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
  EXPECT_EQ(ShOk("ls t/r/f"), "old\n");
  EXPECT_EQ(ShOk("cat t/r/f/old"), "keep\n");
  // fallocate is refused like a write.
  EXPECT_NE(Sh("fallocate -l 100 t/r/f/falloc 2>/dev/null"), 0);
  EXPECT_EQ(ShOk("ls t/r/f"), "old\n");
  EXPECT_NE(Sh("head -c 2000 /dev/zero > t/r/f/head 2>/dev/null"), 0);
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
    waitpid(pid_, nullptr, 0);
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

// Every interleaving of two processes doing write, fsync, write, close, and
// of three doing write, close, against a model of a local file: after each
// step a new reader sees the last commit, and the end holds every write.
TEST_F(OpenCellsTest, EveryInterleavingOfProcessesMatchesALocalFile) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");
  const std::string path = Path("t/r/f/i");
  struct Plan {
    int processes;
    std::string steps;  // each process's ops in order
  };
  int interleavings = 0;
  for (const Plan& plan : {Plan{2, "wswc"}, Plan{3, "wc"}}) {
    // Each interleaving: a sequence of process numbers, each appearing
    // steps.size() times, enumerated in lexicographic order.
    std::string order;
    for (int p = 0; p < plan.processes; p++) {
      order += std::string(plan.steps.size(), static_cast<char>('0' + p));
    }
    do {
      interleavings++;
      WriteFile(path, "0123456789");
      std::string model = "0123456789", committed = model;
      bool dirty = false;
      std::vector<std::unique_ptr<Worker>> workers;
      for (int p = 0; p < plan.processes; p++) {
        workers.push_back(
            std::make_unique<Worker>(path, p % 2 == 0 ? O_RDWR : O_WRONLY));
      }
      std::vector<size_t> next(plan.processes, 0);
      for (char who : order) {
        int p = who - '0';
        size_t k = next[p]++;
        char op = plan.steps[k];
        SCOPED_TRACE("order " + order + " process " + std::to_string(p) +
                     " step " + std::to_string(k));
        if (op == 'w') {
          int off = p * 3 + static_cast<int>(k) * 2, len = 4;
          char c = static_cast<char>('a' + p * 4 + static_cast<int>(k));
          ASSERT_TRUE(workers[p]->Do('w', off, len, c));
          if (model.size() < static_cast<size_t>(off + len)) {
            model.resize(off + len, '\0');
          }
          model.replace(off, len, std::string(len, c));
          dirty = true;
        } else {
          ASSERT_TRUE(workers[p]->Do(op));
          if (dirty) committed = model;
          dirty = false;
        }
        ASSERT_EQ(ReadFile(path), committed);
      }
      workers.clear();
      ASSERT_EQ(ReadFile(path), model) << order;
    } while (std::next_permutation(order.begin(), order.end()));
  }
  EXPECT_EQ(interleavings, 70 + 90);
}

// Random writes, truncates, fsyncs, closes, reopens and writes through
// shared mappings from three descriptors (read-write and write-only, the
// former through the page cache), and a reader, against a model of a local
// file: the writers read the one pending value, the reader the last
// committed one. 30,000 operations (about 5 s; the suite's budget).
TEST_F(OpenCellsTest, RandomInterleavingsMatchALocalFile) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && : > t/r/f/m");
  const std::string path = Path("t/r/f/m");
  const char* seed_env = getenv("OPEN_CELLS_SEED");  // to replay a failure
  const unsigned seed = seed_env != nullptr
                            ? static_cast<unsigned>(atol(seed_env))
                            : std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::string model, committed;
  bool dirty = false;
  struct Desc {
    int fd = -1;
    int flags = 0;
    bool trunc = false;
  };
  Desc d[3];
  int reader = -1;
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  auto commit = [&] {
    if (dirty) committed = model;
    dirty = false;
  };
  constexpr int kOps = 30000;
  for (int op = 0; op < kOps; op++) {
    Desc& x = d[pick(3)];
    int what = pick(100);
    if (x.fd < 0) {
      x.flags = pick(2) == 0 ? O_RDWR : O_WRONLY;
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
      if (x.flags == O_RDWR) {
        ASSERT_EQ(PRead(x.fd, 64 << 10), model) << "op " << op;
      }
    } else if (what < 85) {
      // Through a shared mapping: read it all, change a range, unmap (the
      // kernel writes the pages back at the unmap).
      if (x.flags != O_RDWR || model.empty()) continue;
      size_t size = model.size();
      void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED,
                     x.fd, 0);
      if (p == MAP_FAILED) {
        // Opened while a reader read through the page cache (README).
        ASSERT_EQ(errno, ENODEV) << "op " << op;
        ASSERT_GE(reader, 0);
        continue;
      }
      char* m = static_cast<char*>(p);
      ASSERT_EQ(std::string(m, size), model) << "mapped, op " << op;
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
    } else {
      if (reader < 0 || pick(4) == 0) {
        if (reader >= 0) close(reader);
        reader = open(path.c_str(), O_RDONLY);
        ASSERT_GE(reader, 0);
      }
      ASSERT_EQ(PRead(reader, 64 << 10), committed) << "op " << op;
    }
  }
  for (Desc& x : d) {
    if (x.fd >= 0) {
      ASSERT_EQ(close(x.fd), 0);
      commit();
    }
  }
  if (reader >= 0) close(reader);
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

// kill -9 of the daemon while a mapping holds dirty pages leaves the
// previous version intact.
TEST_F(OpenCellsTest, KillWhileAMappingIsDirtyKeepsThePreviousVersion) {
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
    memcpy(p, "AFTER!", 6);
    if (write(ready[1], "x", 1) != 1) _exit(1);
    pause();  // killed with the mount gone
    _exit(0);
  }
  close(ready[1]);
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);  // the mapping is dirty now
  close(ready[0]);
  KillDaemon();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  Mount();
  EXPECT_EQ(ShOk("cat t/r/f/k"), "before");
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
        "import sqlite3, subprocess, sys\n"
        "db = sys.argv[1]\n"
        "a = sqlite3.connect(db)\n"
        "a.execute('pragma journal_mode=" + std::string(mode) + "')\n"
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
        "a.close()\n";
    WriteFile(tmp() + "/sq.py", script);
    EXPECT_EQ(ShOk("python3 " + tmp() + "/sq.py " + db), "401\nok\n");
    EXPECT_EQ(ShOk("python3 -c \"import sqlite3; c = sqlite3.connect('" + db +
                   "'); print(c.execute('select count(*) from t')"
                   ".fetchone()[0])\""),
              "401\n");
  }
}

}  // namespace
}  // namespace tabletfs::testing
