// I/O errors through the mount (issue 9): the daemon runs on the
// fault-injecting Env of its test hook (TABLETFS_TEST_FAULTS, see
// mount/daemon/test_faults.h), and each test switches faults on while the
// mount is live. A failed read, write, sync or rename must reach the user
// as EIO from the syscall that carries it (never wrong data, never a hang),
// the daemon's log (stderr in -f mode) must say why, and after a remount
// without faults every acknowledged write must be intact and the store
// must pass `tabletctl check`.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "mount/daemon/test_faults.h"
#include "store/fault_env.h"
#include "store/row_mutation.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

std::string Content(const std::string& name, size_t size) {
  std::string v = name + ":";
  while (v.size() < size) v += name + "/" + std::to_string(v.size()) + " ";
  v.resize(size);
  return v;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class IoErrorTest : public MountFixture {
 protected:
  void SetUp() override {
    MountFixture::SetUp();
    control_ = tmp() + "/faults";
    log_ = tmp() + "/daemon.log";
  }

  // Puts `n` cells into table t (family f) through the API and flushes
  // them, so they are read from SSTables, not from a memtable.
  void Seed(int n) {
    auto db = OpenDb();
    ASSERT_NE(db, nullptr);
    ASSERT_TRUE(db->CreateTable("t").ok());
    ASSERT_TRUE(db->CreateFamily("t", "f", FamilySettings()).ok());
    for (int i = 0; i < n; i++) {
      std::string row = "r" + std::to_string(i % 4);
      std::string q = "seed" + std::to_string(i);
      std::string v = Content("t/" + row + "/f/" + q, 200 + i);
      RowMutation m(row);
      m.SetCell("f", q, v);
      ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
      acked_["t/" + row + "/f/" + q] = v;
    }
    ASSERT_TRUE(db->Flush().ok());
    DbStats stats = db->GetStats();
    uint64_t files = 0;
    for (const LevelStats& l : stats.levels) files += l.files;
    ASSERT_GT(files, 0u) << "the seed is not in any SSTable";
  }

  // Mounts in the foreground with the test hook on; the control file may be
  // missing (no faults) or hold rules to apply before the store opens.
  int TryMountWithFaults(const std::vector<std::string>& args = {}) {
    return TryMountForeground(args, {"TABLETFS_TEST_FAULTS=" + control_}, log_);
  }
  void MountWithFaults(const std::vector<std::string>& args = {}) {
    ASSERT_EQ(TryMountWithFaults(args), 0) << "the daemon's log:\n" << Log();
  }

  std::string Log() { return ReadFile(log_); }

  // The hook's state file: "loads" and "<op>.calls", "<op>.injected". The
  // counts are those of the last load, or of the daemon's exit.
  std::map<std::string, uint64_t> State() {
    std::map<std::string, uint64_t> out;
    std::istringstream in(ReadFile(control_ + ".state"));
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::string op, key1, key2;
      uint64_t a = 0, b = 0;
      words >> op;
      if (op == "loads") {
        words >> out["loads"];
      } else if (op == "error") {
        out["error"] = 1;
      } else if (words >> key1 >> a >> key2 >> b) {
        out[op + ".calls"] = a;
        out[op + ".injected"] = b;
      }
    }
    return out;
  }

  // Replaces the live daemon's faults with `rules` and waits until they
  // are in force.
  void SetFaults(const std::string& rules) {
    uint64_t before = State()["loads"];
    WriteFile(control_, rules);
    ASSERT_EQ(kill(daemon_pid(), SIGUSR2), 0);
    for (int i = 0; i < 1000 && State()["loads"] <= before; i++) usleep(5000);
    std::map<std::string, uint64_t> state = State();
    ASSERT_GT(state["loads"], before) << "the daemon did not reload " << rules;
    ASSERT_EQ(state.count("error"), 0u)
        << ReadFile(control_ + ".state") << Log();
  }

  // open(O_CREAT|O_TRUNC) + write() + [fsync()] + close() of `rel`.
  // Returns 0, or the errno and in *from the call that failed.
  int Write(const std::string& rel, const std::string& content,
            std::string* from, bool sync = false) {
    int fd = open(Path(rel).c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) {
      *from = "open";
      return errno;
    }
    size_t done = 0;
    while (done < content.size()) {
      ssize_t n = write(fd, content.data() + done, content.size() - done);
      if (n < 0) {
        int err = errno;
        close(fd);
        *from = "write";
        return err;
      }
      done += static_cast<size_t>(n);
    }
    if (sync && fsync(fd) != 0) {
      int err = errno;
      close(fd);
      *from = "fsync";
      return err;
    }
    if (close(fd) != 0) {
      *from = "close";
      return errno;
    }
    return 0;
  }

  // Writes through the mount, asserting success; the cell joins acked_.
  void WriteAcked(const std::string& rel, size_t size) {
    std::string v = Content(rel, size);
    std::string from;
    int err = Write(rel, v, &from);
    ASSERT_EQ(err, 0) << rel << ": " << strerror(err) << " from " << from;
    acked_[rel] = v;
  }

  // Reads `rel` with open() + read(); returns 0 and the bytes, or the errno.
  int Read(const std::string& rel, std::string* out) {
    out->clear();
    int fd = open(Path(rel).c_str(), O_RDONLY);
    if (fd < 0) return errno;
    char buf[65536];
    while (true) {
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n < 0) {
        int err = errno;
        close(fd);
        return err;
      }
      if (n == 0) break;
      out->append(buf, static_cast<size_t>(n));
    }
    close(fd);
    return 0;
  }

  std::string Stats() { return ReadFile(Path(".tabletfs/stats")); }

  // Writes 4000-byte cells prefix<*i>, ++*i, until the log shows paused
  // background work. Once the paused flush leaves no room for another
  // frozen memtable, writes stall and fail ENOSPC (as they must): then it
  // waits for the line.
  void WriteUntilPaused(const std::string& prefix, int* i) {
    for (; *i < 200 && !Contains(Log(), "background work paused"); ++*i) {
      std::string rel = prefix + std::to_string(*i);
      std::string v = Content(rel, 4000), from;
      int err = Write(rel, v, &from);
      if (err == ENOSPC) {
        // The kernel may keep the refused name's entry for a moment (see
        // disk_full_test.cc): go on with a new one.
        ++*i;
        break;
      }
      ASSERT_EQ(err, 0) << rel << ": " << strerror(err) << " from " << from;
      acked_[rel] = v;
    }
    for (int n = 0; n < 1000 && !Contains(Log(), "background work paused");
         n++) {
      usleep(5000);
    }
  }

  // Unmounts, mounts without the hook, and checks that every acknowledged
  // write is there, the store has no background error, and (after the
  // unmount) `tabletctl check` passes.
  // Keeps the hook's final state in final_.
  void RemountCleanAndCheck() {
    Unmount();
    final_ = State();
    Mount();
    for (const auto& [rel, v] : acked_) {
      EXPECT_EQ(ReadFile(Path(rel)), v) << rel;
    }
    EXPECT_TRUE(Contains(Stats(), "background_error none\n")) << Stats();
    Unmount();
    std::string check = std::string(TABLETFS_BIN_DIR) + "/tabletctl -d '" +
                        datadir() + "' check > /dev/null";
    EXPECT_EQ(system(check.c_str()), 0) << "tabletctl check found damage";
  }

  std::string control_;
  std::string log_;
  std::map<std::string, std::string> acked_;
  std::map<std::string, uint64_t> final_;
};

// The hook costs nothing when off: with an empty control file the daemon
// serves normally and counts the store's calls.
TEST_F(IoErrorTest, HookWithoutFaultsChangesNothing) {
  Seed(8);
  MountWithFaults();
  for (const auto& [rel, v] : acked_) EXPECT_EQ(ReadFile(Path(rel)), v) << rel;
  WriteAcked("t/r0/f/new", 3000);
  EXPECT_EQ(State()["loads"], 1u);
  EXPECT_TRUE(Contains(Log(), "test hook: faults now: none")) << Log();
  // A bad rule is refused and reported, and leaves no fault in force.
  uint64_t before = State()["loads"];
  WriteFile(control_, "read\nexplode now please\n");
  ASSERT_EQ(kill(daemon_pid(), SIGUSR2), 0);
  for (int i = 0; i < 1000 && State()["loads"] <= before; i++) usleep(5000);
  EXPECT_EQ(State()["error"], 1u);
  EXPECT_TRUE(Contains(Log(), "line 2: \"explode now please\"")) << Log();
  EXPECT_EQ(ReadFile(Path("t/r0/f/new")), acked_["t/r0/f/new"]);
  RemountCleanAndCheck();
  EXPECT_EQ(final_["loads"], 2u);
  EXPECT_GT(final_["read.calls"], 0u);
  EXPECT_GT(final_["append.calls"], 0u);
  EXPECT_GT(final_["sync.calls"], 0u);  // at least the store's close
  uint64_t injected = 0;
  for (const auto& [key, n] : final_) {
    if (Contains(key, ".injected")) injected += n;
  }
  EXPECT_EQ(injected, 0u);
}

// A cell that must come from an SSTable cannot be read: EIO, no bytes,
// no hang; the log names the file; once the fault is gone the same cell
// reads back right without a restart (a failed read is not sticky).
TEST_F(IoErrorTest, ReadFaultIsEioNeverWrongData) {
  Seed(20);
  MountWithFaults();
  SetFaults("read\n");
  const std::string rel = "t/r1/f/seed5";
  std::string got;
  int err = Read(rel, &got);
  EXPECT_EQ(err, EIO) << strerror(err) << "; read " << got.size() << " bytes";
  EXPECT_EQ(got, "");
  std::string out;
  EXPECT_NE(Sh("cat " + rel + " 2>&1", &out), 0);
  EXPECT_TRUE(Contains(out, "Input/output error")) << out;
  EXPECT_FALSE(Contains(out, acked_[rel].substr(0, 20))) << out;
  std::string log = Log();
  EXPECT_TRUE(Contains(log, ": EIO: IOError: ")) << log;
  EXPECT_TRUE(Contains(log, ".sst: injected by TABLETFS_TEST_FAULTS")) << log;

  SetFaults("");  // also writes the counts so far
  uint64_t injected = State()["read.injected"];
  EXPECT_GE(injected, 2u);  // one per attempt at least
  for (const auto& [r, v] : acked_) EXPECT_EQ(ReadFile(Path(r)), v) << r;
  EXPECT_TRUE(Contains(Stats(), "background_error none\n")) << Stats();
  RemountCleanAndCheck();
  std::cout << "read faults injected: " << injected << std::endl;
}

// A failed log append: the commit at close() fails EIO (the write was
// buffered), the failure is sticky, so the next write() is refused with
// EIO at once; reads keep working; the log says why.
TEST_F(IoErrorTest, WriteFaultIsEioFromCloseThenFromWrite) {
  Seed(4);
  MountWithFaults();
  for (int i = 0; i < 10; i++) WriteAcked("t/r0/f/w" + std::to_string(i), 500);
  SetFaults("append\n");
  std::string from;
  int err = Write("t/r0/f/failed1", Content("failed1", 700), &from);
  EXPECT_EQ(err, EIO) << strerror(err) << " from " << from;
  EXPECT_EQ(from, "close");
  err = Write("t/r0/f/failed2", Content("failed2", 700), &from);
  EXPECT_EQ(err, EIO) << strerror(err) << " from " << from;
  EXPECT_EQ(from, "write") << "a sticky error must be reported by write()";
  std::string log = Log();
  EXPECT_TRUE(Contains(log, "log write failed: IOError: ")) << log;
  EXPECT_TRUE(Contains(log, ".log: injected by TABLETFS_TEST_FAULTS")) << log;
  EXPECT_TRUE(Contains(log, "/t/r0/f/failed2: EIO: the store failed earlier"))
      << log;
  EXPECT_TRUE(Contains(Stats(), "injected by TABLETFS_TEST_FAULTS")) << Stats();
  for (const auto& [r, v] : acked_) EXPECT_EQ(ReadFile(Path(r)), v) << r;
  RemountCleanAndCheck();
  EXPECT_EQ(final_["append.injected"], 1u)
      << "only the first append fails: the error is sticky";
  Mount();
  EXPECT_NE(access(Path("t/r0/f/failed2").c_str(), F_OK), 0);
  std::string listing = ShOk("ls t/r0/f");
  EXPECT_FALSE(Contains(listing, "failed")) << listing;
  std::cout << "append faults injected: " << final_["append.injected"]
            << std::endl;
}

// Issue 14 items 1 and 8 for EIO: the open, dup, close-the-original
// pattern (Python's os.dup then os.close) stores nothing when the commit
// at the dup's close fails (a failed log append), nor when the dup's
// write() is refused because of that sticky failure: no name, no version,
// also after a remount without faults.
TEST_F(IoErrorTest, RefusedWritesThroughADupStoreNothing) {
  Seed(4);
  MountWithFaults();
  WriteAcked("t/r0/f/old", 300);
  auto dup_pattern = [&](const std::string& rel, int* write_err,
                         int* close_err) {
    int fd = open(Path(rel).c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    ASSERT_GE(fd, 0) << rel << ": " << strerror(errno);
    int dup_fd = dup(fd);
    ASSERT_GE(dup_fd, 0);
    ASSERT_EQ(close(fd), 0) << strerror(errno);
    const std::string v = Content(rel, 5000);
    *write_err = write(dup_fd, v.data(), v.size()) < 0 ? errno : 0;
    *close_err = close(dup_fd) != 0 ? errno : 0;
  };
  SetFaults("append\n");
  int write_err = 0, close_err = 0;
  // The write is buffered; the commit at the last close fails.
  dup_pattern("t/r0/f/dupclose", &write_err, &close_err);
  EXPECT_EQ(write_err, 0) << strerror(write_err);
  EXPECT_EQ(close_err, EIO) << strerror(close_err);
  // The failure is sticky: the next write() is refused.
  dup_pattern("t/r0/f/dupwrite", &write_err, &close_err);
  EXPECT_EQ(write_err, EIO) << strerror(write_err);
  EXPECT_EQ(close_err, 0) << strerror(close_err);
  auto expect_nothing_kept = [&] {
    EXPECT_TRUE(GoneSoon("t/r0/f/dupclose"));
    EXPECT_TRUE(GoneSoon("t/r0/f/dupwrite"));
    std::string listing = ShOk("ls t/r0/f");
    EXPECT_FALSE(Contains(listing, "dup")) << listing;
    std::string versions = ShOk("ls .versions/t/r0/f");
    EXPECT_FALSE(Contains(versions, "dup")) << versions;
    EXPECT_TRUE(Contains(versions, "old@")) << versions;
  };
  expect_nothing_kept();
  RemountCleanAndCheck();
  EXPECT_EQ(final_["append.injected"], 1u);
  Mount();
  expect_nothing_kept();
}

// Issue 15: a data directory on a filesystem that reports no size (the
// hook's `disksize 0`; some network and FUSE filesystems report zero
// blocks) gets no default space reserve, so writes are not refused; the
// log says why.
TEST_F(IoErrorTest, AFilesystemReportingNoSizeDoesNotRefuseWrites) {
  CreateTable("t", {"f"});
  WriteFile(control_, "disksize 0\n");
  MountWithFaults();
  EXPECT_TRUE(Contains(Log(), "test hook: faults now: disksize 0")) << Log();
  EXPECT_TRUE(Contains(Log(), "the filesystem reports no size")) << Log();
  EXPECT_TRUE(Contains(Stats(), "space_reserve_bytes 0\n")) << Stats();
  ShOk("mkdir -p t/r0/f");
  for (int i = 0; i < 5; i++) WriteAcked("t/r0/f/c" + std::to_string(i), 1000);
  WriteAcked("t/r0/f/big", 2u << 20);
  RemountCleanAndCheck();
  // A bad size is refused like any bad rule.
  std::string summary;
  FaultInjectionEnv env(Env::Default());
  EXPECT_FALSE(daemon::TestFaults::Apply("disksize -1\n", &env, &summary).ok());
  EXPECT_FALSE(daemon::TestFaults::Apply("disksize\n", &env, &summary).ok());
  ASSERT_TRUE(
      daemon::TestFaults::Apply("disksize 4096\n", &env, &summary).ok());
  EXPECT_EQ(summary, "disksize 4096");
  auto size = env.GetDiskSize("/");
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 4096u);
}

// A failed log sync: fsync() answers EIO, and the store refuses writes
// from then on (the log's durability is unknown).
TEST_F(IoErrorTest, SyncFaultIsEioFromFsync) {
  Seed(4);
  MountWithFaults();
  for (int i = 0; i < 5; i++) WriteAcked("t/r2/f/s" + std::to_string(i), 400);
  SetFaults("sync\n");
  std::string from;
  int err = Write("t/r2/f/synced", Content("synced", 300), &from,
                  /*sync=*/true);
  EXPECT_EQ(err, EIO) << strerror(err) << " from " << from;
  EXPECT_EQ(from, "fsync");
  err = Write("t/r2/f/after", Content("after", 300), &from);
  EXPECT_EQ(err, EIO) << strerror(err) << " from " << from;
  EXPECT_EQ(from, "write");
  std::string log = Log();
  EXPECT_TRUE(Contains(log, "fsync /t/r2/f/synced: EIO: IOError: ")) << log;
  EXPECT_TRUE(Contains(log, ".log: injected by TABLETFS_TEST_FAULTS")) << log;
  RemountCleanAndCheck();
  EXPECT_GE(final_["sync.injected"], 1u);
  std::cout << "sync faults injected: " << final_["sync.injected"] << std::endl;
}

// A background flush whose SSTable sync fails: writes that were
// acknowledged before stay (the log holds them), the error is sticky and
// logged as a background error, and later writes fail EIO.
TEST_F(IoErrorTest, FailedFlushIsStickyAndLoggedNothingAcknowledgedLost) {
  Seed(4);
  MountWithFaults({"-o", "memtable_bytes=65536"});
  SetFaults("sync .sst\n");
  std::string from;
  int err = 0, i = 0;
  for (; i < 200 && err == 0; i++) {
    std::string rel = "t/r3/f/b" + std::to_string(i);
    std::string v = Content(rel, 4000);
    err = Write(rel, v, &from);
    if (err == 0) acked_[rel] = v;
  }
  EXPECT_EQ(err, EIO) << "after " << i << " writes: " << strerror(err)
                      << " from " << from;
  // The flush fails in the background: a write() that passed before it
  // did fails at its commit in close().
  EXPECT_TRUE(from == "write" || from == "close") << from;
  err = Write("t/r3/f/later", Content("later", 100), &from);
  EXPECT_EQ(err, EIO) << strerror(err) << " from " << from;
  EXPECT_EQ(from, "write") << "a sticky error must be reported by write()";
  std::string log = Log();
  EXPECT_TRUE(Contains(log, "background error: IOError: flush: ")) << log;
  EXPECT_TRUE(Contains(log, ".sst: injected by TABLETFS_TEST_FAULTS (.sst)"))
      << log;
  RemountCleanAndCheck();
  EXPECT_EQ(final_["sync.injected"], 1u) << "the error is sticky";
  EXPECT_GT(final_["sync.calls"], final_["sync.injected"])
      << "log syncs must not match the rule";
  std::cout << acked_.size() << " writes acknowledged before the sticky "
            << "error; sync faults injected: " << final_["sync.injected"]
            << std::endl;
}

// The manifest's CURRENT is replaced by a rename whenever the store opens:
// with renames failing, the daemon refuses to mount and says why; without,
// the data is all there.
TEST_F(IoErrorTest, RenameFaultAtOpenRefusesTheMount) {
  Seed(10);
  WriteFile(control_, "rename CURRENT\n");
  EXPECT_NE(TryMountWithFaults(), 0);
  std::string log = Log();
  EXPECT_TRUE(Contains(log, "cannot open ")) << log;
  EXPECT_TRUE(Contains(log, "IOError: rename ")) << log;
  EXPECT_TRUE(Contains(log, "/CURRENT: injected by TABLETFS_TEST_FAULTS"))
      << log;
  RemountCleanAndCheck();  // the daemon is gone: final_ is its exit state
  EXPECT_EQ(final_["rename.injected"], 1u);
}

// A rename during a flush: the flush's manifest append runs out of space
// (not sticky: the flush pauses), the retry then starts a fresh manifest,
// and the rename of its CURRENT fails. That failure is sticky, logged,
// and seen as EIO; nothing acknowledged is lost.
TEST_F(IoErrorTest, RenameFaultDuringAFlushRetry) {
  Seed(4);
  MountWithFaults({"-o", "memtable_bytes=65536"});
  SetFaults("nospace append MANIFEST\n");
  int i = 0;
  WriteUntilPaused("t/r1/f/m", &i);
  ASSERT_TRUE(Contains(Log(), "background work paused: NoSpace: flush: "))
      << Log();
  EXPECT_TRUE(Contains(Log(), "/MANIFEST-")) << Log();
  EXPECT_TRUE(Contains(Stats(), "background_error none\n")) << Stats();
  SetFaults("rename CURRENT\n");
  std::string from;
  int err = 0;
  for (int j = 0; j < 200 && err == 0; j++, i++) {
    std::string rel = "t/r1/f/m" + std::to_string(i);
    std::string v = Content(rel, 4000);
    err = Write(rel, v, &from);
    if (err == 0) acked_[rel] = v;
  }
  EXPECT_EQ(err, EIO) << strerror(err) << " from " << from;
  std::string log = Log();
  EXPECT_TRUE(Contains(log, "background error: IOError: flush: rename "))
      << log;
  EXPECT_TRUE(Contains(log, "/CURRENT: injected by TABLETFS_TEST_FAULTS"))
      << log;
  RemountCleanAndCheck();
  EXPECT_EQ(final_["rename.injected"], 1u);
  EXPECT_GE(final_["append.injected"], 1u);
  std::cout << acked_.size() << " writes acknowledged; manifest appends "
            << "refused: " << final_["append.injected"]
            << ", renames failed: " << final_["rename.injected"] << std::endl;
}

// Disk full for background work only (the hook's NoSpace on SSTable
// appends): the flush pauses without a sticky error, writes keep working
// (the log has room), and once the space is back the writes that follow
// get the paused flush retried, without a restart.
TEST_F(IoErrorTest, FlushOutOfSpaceIsRetriedWithoutRestart) {
  Seed(4);
  MountWithFaults({"-o", "memtable_bytes=65536"});
  auto stat = [this](const std::string& key) -> uint64_t {
    std::istringstream in(Stats());
    std::string k;
    uint64_t v = 0;
    while (in >> k) {
      if (k == key && in >> v) return v;
    }
    return 0;
  };
  const uint64_t flushes_before = stat("flushes");
  SetFaults("nospace append .sst\n");
  int i = 0;
  WriteUntilPaused("t/r2/f/d", &i);
  ASSERT_TRUE(Contains(Log(), "background work paused: NoSpace: flush: "))
      << Log();
  EXPECT_EQ(stat("flushes"), flushes_before);
  EXPECT_TRUE(Contains(Stats(), "background_error none\n")) << Stats();
  SetFaults("");  // the space is back
  for (int j = 0; j < 200 && stat("flushes") < flushes_before + 2; j++, i++) {
    WriteAcked("t/r2/f/d" + std::to_string(i), 4000);
  }
  EXPECT_GE(stat("flushes"), flushes_before + 2)
      << "the paused flush was not retried";
  EXPECT_TRUE(Contains(Stats(), "background_error none\n")) << Stats();
  for (const auto& [r, v] : acked_) EXPECT_EQ(ReadFile(Path(r)), v) << r;
  RemountCleanAndCheck();
  EXPECT_GE(final_["append.injected"], 1u);
  std::cout << acked_.size() << " writes acknowledged; SSTable appends "
            << "refused NoSpace: " << final_["append.injected"] << std::endl;
}

// ---------------------------------------------------------------------------
// Power cuts (the hook's `powercut`: unsynced bytes and names dropped, the
// daemon gone) and the commit interval (-o commit=SECONDS)
// ---------------------------------------------------------------------------

class PowerCutTest : public IoErrorTest {
 protected:
  uint64_t StatValue(const std::string& key) {
    std::istringstream in(Stats());
    std::string line;
    while (std::getline(in, line)) {
      if (line.starts_with(key + " ")) {
        return std::strtoull(line.c_str() + key.size() + 1, nullptr, 10);
      }
    }
    ADD_FAILURE() << "no " << key << " in .tabletfs/stats";
    return 0;
  }

  // Closed files: `n` cells in table t (rows r0..r3) and in a table made by
  // mkdir through the mount, with its family made by touch in .schema.
  void WriteClosedFiles(int n) {
    ShOk("mkdir m && touch .schema/m/g");
    std::set<std::string> dirs;
    for (int i = 0; i < n; i++) {
      std::string dir = i % 2 == 0 ? "t/r" + std::to_string(i / 2 % 4) + "/f"
                                   : "m/x" + std::to_string(i / 2 % 2) + "/g";
      if (dirs.insert(dir).second) ShOk("mkdir -p " + dir);
      WriteAcked(dir + "/c" + std::to_string(i), 100 + i);
    }
  }

  // The power goes; then a mount without the hook.
  void CutPowerAndRemount() {
    WriteFile(control_, "powercut\n");
    ASSERT_EQ(kill(daemon_pid(), SIGUSR2), 0);
    // The daemon logs the drop, then exits by itself; the kill below must
    // not cut the drop short.
    for (int i = 0; i < 4000 && !Contains(Log(), "test hook: power cut:"); i++) {
      usleep(5000);
    }
    ASSERT_TRUE(Contains(Log(), "test hook: power cut: unsynced data dropped"))
        << Log();
    KillDaemon();  // reaps the exited daemon, lazy-unmounts the dead mount
    Mount();
  }
};

// What the issue asked (issue 15): with -o commit=1, files closed 2 s
// before a power cut are all there after it.
TEST_F(PowerCutTest, ClosedFilesSurviveAPowerCutAfterTheCommitInterval) {
  CreateTable("t", {"f"});
  MountWithFaults({"-o", "commit=1"});
  WriteClosedFiles(200);
  // Within 2 s of the last close the commit thread has synced the log.
  bool committed = false;
  for (int i = 0; i < 400 && !committed; i++) {
    committed = StatValue("log_unsynced_bytes") == 0;
    if (!committed) usleep(5000);
  }
  ASSERT_TRUE(committed) << Stats();
  EXPECT_GT(StatValue("commit_syncs"), 0u);
  CutPowerAndRemount();
  int missing = 0;
  for (const auto& [rel, v] : acked_) {
    std::string got;
    if (Read(rel, &got) != 0 || got != v) ++missing;
  }
  EXPECT_EQ(missing, 0) << "of " << acked_.size() << " closed files";
  Unmount();
  std::string check = std::string(TABLETFS_BIN_DIR) + "/tabletctl -d '" +
                      datadir() + "' check > /dev/null";
  EXPECT_EQ(system(check.c_str()), 0) << "tabletctl check found damage";
}

// The same without the interval shows that the hook's power cut drops what
// is not synced: closed files are lost (the schema changes were synced when
// made), an fsync'ed one is not.
TEST_F(PowerCutTest, WithoutTheIntervalOnlyFsyncedFilesSurvive) {
  CreateTable("t", {"f"});
  MountWithFaults({"-o", "commit=0"});
  WriteClosedFiles(20);
  std::string from;
  ASSERT_EQ(Write("t/r0/f/synced", "synced\n", &from, /*sync=*/true), 0);
  ShOk("echo after > t/r0/f/after");
  CutPowerAndRemount();
  std::string got;
  EXPECT_EQ(Read("t/r0/f/synced", &got), 0);
  EXPECT_EQ(got, "synced\n");
  // Written before the fsync: in the synced part of the log.
  for (const auto& [rel, v] : acked_) EXPECT_EQ(ReadFile(Path(rel)), v) << rel;
  EXPECT_NE(Read("t/r0/f/after", &got), 0) << "an unsynced close survived";
  EXPECT_EQ(Sh("test -d m/x0/g"), 0) << "the table made by mkdir is gone";
  Unmount();
}

}  // namespace
}  // namespace tabletfs::testing
