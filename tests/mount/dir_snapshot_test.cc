// Directory listings under concurrent change (fs/dir_handle.h): one open
// directory, read in many getdents calls with a small buffer, while another
// process creates and deletes entries between every two calls. Each name
// that existed for the whole listing appears exactly once, in key order;
// nothing appears twice and nothing appears that did not exist; and a
// `.at/T` listing is exactly the state at T, whatever changes after T.
//
// The writer is a child process working through the mount. It announces
// each operation in shared memory before starting it (`started`) and after
// finishing it (`done`); the lister waits for `done` to move after every
// getdents call, so every listing interleaves with real changes.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <new>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

constexpr int kNames = 6000;  // even indices exist at the start
constexpr int64_t kInitialMicros = 1000000;
constexpr const char* kAt = "1500000";  // after every initial version

std::string Name(char prefix, int i) {
  char buf[16];
  snprintf(buf, sizeof(buf), "%c%05d", prefix, i);
  return buf;
}

enum class OpKind { kCreate, kDelete, kOverwrite, kMkdir };
struct Op {
  OpKind kind;
  int index;
};

// Shared between the test and the writer (MAP_SHARED before fork).
struct Shared {
  std::atomic<int> started{0};
  std::atomic<int> done{0};
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  char first_failure[256] = {};
};

// Runs `ops` in order with `run` until told to stop or out of ops.
// Returns the child's pid.
pid_t StartWriter(Shared* shared, const std::vector<Op>& ops,
                  const std::function<std::string(const Op&)>& run) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  for (const Op& op : ops) {
    if (shared->stop.load()) break;
    shared->started.fetch_add(1);
    std::string error = run(op);
    if (!error.empty() && shared->failures.fetch_add(1) == 0) {
      snprintf(shared->first_failure, sizeof(shared->first_failure), "%s",
               error.c_str());
    }
    shared->done.fetch_add(1);
  }
  _exit(0);
}

// "" or what failed: `what` with errno's text.
std::string Check(bool ok, const std::string& what) {
  return ok ? std::string() : what + ": " + strerror(errno);
}

std::string WriteCell(const std::string& path, const std::string& value) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return Check(false, "open " + path);
  bool ok = write(fd, value.data(), value.size()) ==
            static_cast<ssize_t>(value.size());
  std::string error = Check(ok, "write " + path);
  if (close(fd) != 0 && error.empty()) error = Check(false, "close " + path);
  return error;
}

// Waits (bounded: 20 s) until the writer finished more than `seen`
// operations or has stopped; returns the new count.
int AwaitProgress(Shared* shared, int seen, pid_t writer) {
  for (int i = 0; i < 200000; i++) {
    int done = shared->done.load();
    if (done > seen) return done;
    if (waitpid(writer, nullptr, WNOHANG) == writer) {
      ADD_FAILURE() << "the writer ran out of operations";
      return done;
    }
    struct timespec ts = {0, 100 * 1000};
    nanosleep(&ts, nullptr);
  }
  ADD_FAILURE() << "the writer made no progress in 20 s";
  return seen;
}

// The fewest getdents calls that can list the initial names with a
// `buffer`-byte buffer (each entry takes 32 bytes).
int MinCalls(size_t buffer) {
  return static_cast<int>(kNames / 2 * 32 / buffer);
}

struct Listing {
  std::vector<std::string> names;  // in the order listed, without . and ..
  int calls = 0;                   // getdents calls that returned entries
};

// Lists MOUNT/rel through one open descriptor, `buffer` bytes per getdents
// call, calling `between` after each call.
Listing ListDir(const std::string& path, size_t buffer,
                const std::function<void()>& between) {
  Listing out;
  int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) {
    ADD_FAILURE() << "open " << path << ": " << strerror(errno);
    return out;
  }
  std::vector<char> buf(buffer);
  for (;;) {
    long n = syscall(SYS_getdents64, fd, buf.data(), buf.size());
    if (n < 0) {
      ADD_FAILURE() << "getdents64 " << path << ": " << strerror(errno);
      break;
    }
    if (n == 0) break;
    out.calls++;
    for (long pos = 0; pos < n;) {
      // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
      unsigned short reclen;
      memcpy(&reclen, buf.data() + pos + 16, sizeof(reclen));
      std::string name = buf.data() + pos + 19;
      if (name != "." && name != "..") out.names.push_back(name);
      pos += reclen;
    }
    between();
  }
  close(fd);
  return out;
}

class DirSnapshotTest : public MountFixture {
 protected:
  void SetUp() override {
    MountFixture::SetUp();
    void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    shared_ = new (mem) Shared();
  }

  void TearDown() override {
    StopWriter();
    if (shared_ != nullptr) munmap(shared_, sizeof(Shared));
    MountFixture::TearDown();
  }

  void StopWriter() {
    if (writer_ <= 0) return;
    shared_->stop.store(true);
    int status = 0;
    waitpid(writer_, &status, 0);
    writer_ = -1;
    EXPECT_EQ(shared_->failures.load(), 0)
        << "the writer failed: " << shared_->first_failure;
  }

  // Lists `rel` while the writer runs `ops`, waiting for one more finished
  // operation after every getdents call; then stops the writer.
  // *done_before: operations finished when the listing started;
  // *started_after: operations started when it ended.
  Listing ListWhileWriting(const std::string& rel, size_t buffer,
                           const std::vector<Op>& ops,
                           const std::function<std::string(const Op&)>& run,
                           int* done_before, int* started_after) {
    writer_ = StartWriter(shared_, ops, run);
    EXPECT_GT(writer_, 0);
    // Let it get going: some changes before the listing starts.
    int seen = AwaitProgress(shared_, 10, writer_);
    *done_before = seen;
    Listing listing = ListDir(Path(rel), buffer, [&] {
      seen = AwaitProgress(shared_, seen, writer_);
    });
    *started_after = shared_->started.load();
    StopWriter();
    return listing;
  }

  Shared* shared_ = nullptr;
  pid_t writer_ = -1;
};

// The names of `ops[begin, end)` of the given kinds.
std::set<std::string> NamesOf(const std::vector<Op>& ops, int begin, int end,
                              std::initializer_list<OpKind> kinds,
                              char prefix) {
  std::set<std::string> out;
  for (int i = begin; i < end && i < static_cast<int>(ops.size()); i++) {
    if (std::find(kinds.begin(), kinds.end(), ops[i].kind) != kinds.end()) {
      out.insert(Name(prefix, ops[i].index));
    }
  }
  return out;
}

// The writer's operations: create every odd name, delete a quarter of the
// initial ones, write new versions of others, in a random order spread
// over the whole key range. Deterministic (seeded), so the expected sets
// follow from the operation counts.
std::vector<Op> MixedOps(bool deletes_initial, bool mkdirs) {
  std::vector<Op> ops;
  for (int i = 0; i < kNames; i++) {
    if (i % 2 == 1) {
      ops.push_back(
          {mkdirs && i % 8 == 1 ? OpKind::kMkdir : OpKind::kCreate, i});
    } else if (i % 4 == 2 && deletes_initial) {
      ops.push_back({OpKind::kDelete, i});
    } else if (i % 8 == 4) {
      ops.push_back({OpKind::kOverwrite, i});
    }
  }
  std::mt19937 rng(20261121);
  std::shuffle(ops.begin(), ops.end(), rng);
  if (!deletes_initial) {
    // Delete some of the writer's own new names after creating them.
    std::vector<Op> with;
    for (const Op& op : ops) {
      with.push_back(op);
      if (op.kind == OpKind::kCreate && op.index % 3 == 0) {
        with.push_back({OpKind::kDelete, op.index});
      }
    }
    ops = std::move(with);
  }
  return ops;
}

// The checks every listing under change must pass. `always` existed for
// the whole listing; `ever` is every name that existed at some point.
void ExpectConsistent(const Listing& listing, size_t buffer,
                      const std::set<std::string>& always,
                      const std::set<std::string>& ever) {
  EXPECT_GE(listing.calls, MinCalls(buffer));
  std::set<std::string> listed(listing.names.begin(), listing.names.end());
  EXPECT_EQ(listed.size(), listing.names.size()) << "a name was listed twice";
  EXPECT_TRUE(std::is_sorted(listing.names.begin(), listing.names.end()))
      << "not in key order";
  std::vector<std::string> missing, unknown;
  std::set_difference(always.begin(), always.end(), listed.begin(),
                      listed.end(), std::back_inserter(missing));
  std::set_difference(listed.begin(), listed.end(), ever.begin(), ever.end(),
                      std::back_inserter(unknown));
  EXPECT_TRUE(missing.empty())
      << missing.size() << " names missing, first " << missing.front();
  EXPECT_TRUE(unknown.empty())
      << unknown.size() << " names that never existed, first "
      << unknown.front();
}

// The state after the first `count` operations, from `initial`.
std::set<std::string> Apply(std::set<std::string> state,
                            const std::vector<Op>& ops, int count,
                            char prefix) {
  for (int i = 0; i < count && i < static_cast<int>(ops.size()); i++) {
    if (ops[i].kind == OpKind::kDelete) {
      state.erase(Name(prefix, ops[i].index));
    } else {
      state.insert(Name(prefix, ops[i].index));
    }
  }
  return state;
}

std::set<std::string> Initial(char prefix) {
  std::set<std::string> out;
  for (int i = 0; i < kNames; i += 2) out.insert(Name(prefix, i));
  return out;
}

// ---- A row with thousands of cells (a family directory listing) ----

class CellListingTest : public DirSnapshotTest,
                        public ::testing::WithParamInterface<size_t> {
 protected:
  void SetUp() override {
    DirSnapshotTest::SetUp();
    CreateTable("t", {"f"});
    {
      auto db = OpenDb();
      ASSERT_NE(db, nullptr);
      RowMutation m("r");
      for (const std::string& q : Initial('c')) {
        m.SetCell("f", q, kInitialMicros, "initial");
      }
      ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
    }
    Mount();
  }

  std::function<std::string(const Op&)> CellWriter() {
    std::string dir = Path("t/r/f/");
    return [dir](const Op& op) {
      std::string path = dir + Name('c', op.index);
      if (op.kind == OpKind::kDelete) {
        return Check(unlink(path.c_str()) == 0, "unlink " + path);
      }
      return WriteCell(path, "written by the writer");
    };
  }
};

TEST_P(CellListingTest, NamesThatExistedThroughoutAppearOnce) {
  std::vector<Op> ops = MixedOps(/*deletes_initial=*/true, /*mkdirs=*/false);
  int done_before = 0, started_after = 0;
  Listing listing = ListWhileWriting("t/r/f", GetParam(), ops, CellWriter(),
                                     &done_before, &started_after);
  ASSERT_FALSE(HasFailure());
  // Whatever a change started during the listing touched may or may not
  // be listed; everything else must be exactly right.
  std::set<std::string> always = Apply(Initial('c'), ops, done_before, 'c');
  for (const std::string& n :
       NamesOf(ops, done_before, started_after, {OpKind::kDelete}, 'c')) {
    always.erase(n);
  }
  std::set<std::string> ever = Initial('c');
  for (const std::string& n :
       NamesOf(ops, 0, started_after, {OpKind::kCreate}, 'c')) {
    ever.insert(n);
  }
  EXPECT_GT(started_after - done_before, listing.calls - 1);
  ExpectConsistent(listing, GetParam(), always, ever);
  // With the writer stopped, a new listing is exactly the final state.
  int done = shared_->done.load();
  Listing after = ListDir(Path("t/r/f"), GetParam(), [] {});
  std::set<std::string> want = Apply(Initial('c'), ops, done, 'c');
  EXPECT_EQ(std::set<std::string>(after.names.begin(), after.names.end()),
            want);
  EXPECT_EQ(after.names.size(), want.size());
}

TEST_P(CellListingTest, AtViewListsExactlyTheStateAtT) {
  // Changes after T only: new cells, new versions, deletes of new cells.
  std::vector<Op> ops = MixedOps(/*deletes_initial=*/false, /*mkdirs=*/false);
  const std::string at = std::string(".at/") + kAt + "/t/r/f";
  Listing before = ListDir(Path(at), GetParam(), [] {});
  const std::set<std::string> initial = Initial('c');
  std::vector<std::string> want(initial.begin(), initial.end());
  ASSERT_EQ(before.names, want);
  int done_before = 0, started_after = 0;
  Listing listing = ListWhileWriting(at, GetParam(), ops, CellWriter(),
                                     &done_before, &started_after);
  ASSERT_FALSE(HasFailure());
  EXPECT_GE(listing.calls, MinCalls(GetParam()));
  EXPECT_EQ(listing.names, want);
  // The changes happened: the current tree shows them.
  Listing now = ListDir(Path("t/r/f"), GetParam(), [] {});
  EXPECT_EQ(std::set<std::string>(now.names.begin(), now.names.end()),
            Apply(Initial('c'), ops, shared_->done.load(), 'c'));
}

// 512 bytes hold 16 entries per getdents call; 4 KiB, 128 (one FUSE
// readdir request's worth).
INSTANTIATE_TEST_SUITE_P(Buffers, CellListingTest,
                         ::testing::Values(512, 4096));

// ---- A table with thousands of rows (a table directory listing) ----

class RowListingTest : public DirSnapshotTest,
                       public ::testing::WithParamInterface<size_t> {
 protected:
  void SetUp() override {
    DirSnapshotTest::SetUp();
    CreateTable("t", {"f"});
    {
      auto db = OpenDb();
      ASSERT_NE(db, nullptr);
      for (const std::string& row : Initial('r')) {
        RowMutation m(row);
        m.SetCell("f", "q", kInitialMicros, "initial");
        ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
      }
    }
    Mount();
  }

  // Rows come with mkdir (an empty row, listed until rmdir) or with their
  // first cell; a row goes with its cell and both directories.
  std::function<std::string(const Op&)> RowWriter() {
    std::string table = Path("t/");
    return [table](const Op& op) -> std::string {
      std::string row = table + Name('r', op.index);
      std::string family = row + "/f";
      switch (op.kind) {
        case OpKind::kMkdir:
          return Check(mkdir(row.c_str(), 0755) == 0, "mkdir " + row);
        case OpKind::kCreate:
          if (mkdir(row.c_str(), 0755) != 0 && errno != EEXIST) {
            return Check(false, "mkdir " + row);
          }
          if (mkdir(family.c_str(), 0755) != 0 && errno != EEXIST) {
            return Check(false, "mkdir " + family);
          }
          return WriteCell(family + "/q", "written by the writer");
        case OpKind::kOverwrite:
          return WriteCell(family + "/q", "written by the writer");
        case OpKind::kDelete: {
          std::string e = Check(unlink((family + "/q").c_str()) == 0,
                                "unlink " + family + "/q");
          if (e.empty())
            e = Check(rmdir(family.c_str()) == 0, "rmdir " + family);
          if (e.empty()) e = Check(rmdir(row.c_str()) == 0, "rmdir " + row);
          return e;
        }
      }
      return "unknown operation";
    };
  }
};

TEST_P(RowListingTest, RowsThatExistedThroughoutAppearOnce) {
  std::vector<Op> ops = MixedOps(/*deletes_initial=*/true, /*mkdirs=*/true);
  int done_before = 0, started_after = 0;
  Listing listing = ListWhileWriting("t", GetParam(), ops, RowWriter(),
                                     &done_before, &started_after);
  ASSERT_FALSE(HasFailure());
  std::set<std::string> always = Apply(Initial('r'), ops, done_before, 'r');
  for (const std::string& n :
       NamesOf(ops, done_before, started_after, {OpKind::kDelete}, 'r')) {
    always.erase(n);
  }
  std::set<std::string> ever = Initial('r');
  for (const std::string& n :
       NamesOf(ops, 0, started_after, {OpKind::kCreate, OpKind::kMkdir}, 'r')) {
    ever.insert(n);
  }
  ExpectConsistent(listing, GetParam(), always, ever);
  int done = shared_->done.load();
  Listing after = ListDir(Path("t"), GetParam(), [] {});
  std::set<std::string> want = Apply(Initial('r'), ops, done, 'r');
  EXPECT_EQ(std::set<std::string>(after.names.begin(), after.names.end()),
            want);
  EXPECT_EQ(after.names.size(), want.size());
}

TEST_P(RowListingTest, AtViewListsExactlyTheRowsAtT) {
  // New rows (with cells, or empty by mkdir), new versions, and deletes of
  // new rows: all after T.
  std::vector<Op> ops = MixedOps(/*deletes_initial=*/false, /*mkdirs=*/true);
  const std::string at = std::string(".at/") + kAt + "/t";
  const std::set<std::string> initial = Initial('r');
  std::vector<std::string> want(initial.begin(), initial.end());
  ASSERT_EQ(ListDir(Path(at), GetParam(), [] {}).names, want);
  int done_before = 0, started_after = 0;
  Listing listing = ListWhileWriting(at, GetParam(), ops, RowWriter(),
                                     &done_before, &started_after);
  ASSERT_FALSE(HasFailure());
  EXPECT_GE(listing.calls, MinCalls(GetParam()));
  EXPECT_EQ(listing.names, want);
  Listing now = ListDir(Path("t"), GetParam(), [] {});
  EXPECT_EQ(std::set<std::string>(now.names.begin(), now.names.end()),
            Apply(Initial('r'), ops, shared_->done.load(), 'r'));
}

INSTANTIATE_TEST_SUITE_P(Buffers, RowListingTest, ::testing::Values(512, 4096));

}  // namespace
}  // namespace tabletfs::testing
