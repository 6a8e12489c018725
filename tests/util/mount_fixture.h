// MountFixture: a googletest fixture that mounts a fresh data directory with
// the real `tabletfs` daemon (TABLETFS_BIN_DIR) and always unmounts it in
// TearDown, also when the test failed. Data can be put in the store through
// the C++ API before mounting (faster than the shell for big trees).
//
// The daemon serves the engine by default, or the reference implementation
// in memory (-o store=memory), or mounts a remote Bigtable
// (bigtable://p/i -o endpoint=) served by a server the fixture starts in
// SetUp on a free loopback port and stops in TearDown: Google's emulator
// (cbtemulator; the test is skipped where it is not installed) or a
// `tabletfs --serve` daemon (tests/util/bigtable_server.h).
// OverStores<Fixture> runs a fixture's TEST_Ps once over each store of a
// list, the same bodies:
//
//   class ViewsFixture : public MountFixture { ... };
//   using ViewsTest = OverStores<ViewsFixture>;
//   TEST_P(ViewsTest, ...) { CreateTable(...); PutCells(...); Mount(); ... }
//   INSTANTIATE_TEST_SUITE_P(, ViewsTest, AllStores(), StoreName);
//
// AllStores() is the two local ones; AllBackends() adds the two remote
// servers, for the bodies that hold against any Bigtable (a part that
// does not asks remote() and says why).
//
// Over every store but the engine CreateTable and PutCells go through the
// mount once it is up (mkdir, touch .schema/T/F, printf >
// ROW/FAMILY/QUALIFIER@TS); OpenDb() and remounts that expect the data back
// are the engine's only (the tabletfs server keeps its data across
// remounts too, the emulator while it runs).
//
// Thread safety: one test thread drives a fixture; Sh() may run commands
// that run in parallel themselves.
#ifndef TABLETFS_TESTS_UTIL_MOUNT_FIXTURE_H_
#define TABLETFS_TESTS_UTIL_MOUNT_FIXTURE_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "store/db.h"
#include "tests/util/bigtable_server.h"

namespace tabletfs::testing {

// What the daemon mounts: a local data directory (the engine, or the memory
// store), or a remote Bigtable served by the emulator or by a tabletfs
// server.
enum class MountStore { kEngine, kMemory, kEmulator, kServer };

// One version of one cell, to seed a store with (PutCells).
struct SeedCell {
  std::string row, family, qualifier;
  int64_t timestamp;
  std::string value;
};

class MountFixture : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  MountStore store() const { return store_; }
  // A bigtable:// mount of the emulator or the tabletfs server.
  bool remote() const {
    return store_ == MountStore::kEmulator || store_ == MountStore::kServer;
  }
  // Mount `source` (bigtable://PROJECT/INSTANCE) instead of datadir(), and
  // without -o store=. Such a daemon writes no mount.pid: mount it with
  // TryMountForeground. Before the first mount.
  void set_source(const std::string& source) { source_ = source; }
  // Before SetUp (OverStores sets it in its constructor).
  void set_store(MountStore store) { store_ = store; }
  // The server of a remote store (kill, stop, restart it), else null.
  BigtableServer* server() { return server_.get(); }
  // -o rpc_timeout= of a remote mount (default: the daemon's, 10 s).
  // Before the mount.
  void set_rpc_timeout_seconds(double seconds) { rpc_timeout_ = seconds; }
  // The daemon's log (stderr) of a remote mount, and of every
  // TryMountForeground that was given this path.
  std::string daemon_log() const { return tmp_ + "/daemon.log"; }
  // The -o endpoint= (and rpc_timeout=) arguments of a remote mount of
  // server(); empty for a local store.
  std::vector<std::string> RemoteArgs() const;

  // Opens the store of datadir() (not while mounted: the lock is held).
  // REQUIRES: store() == kEngine.
  std::unique_ptr<DB> OpenDb();
  // Creates `table` with `families`: through the API (engine, not while
  // mounted), or through the mount (every other store: at once when
  // mounted, else right after the next Mount()).
  void CreateTable(const std::string& table,
                   const std::vector<std::string>& families);
  // Writes `cells` into `table` as CreateTable does. Names must be plain
  // (shown as they are: no '/', '@', '%', leading '.'), values short.
  void PutCells(const std::string& table, const std::vector<SeedCell>& cells);

  // Runs the daemon (in the background, as a user would) and waits for its
  // exit code: 0 means mounted. Extra arguments go before DATADIR. A remote
  // store's daemon runs as TryMountForeground, logging to daemon_log().
  void Mount(const std::vector<std::string>& extra_args = {});
  // Returns the daemon's exit code instead of asserting.
  int TryMount(const std::vector<std::string>& extra_args = {});
  // Runs the daemon in the foreground (-f) as a child of the test, with
  // `env` ("NAME=value") added to its environment and its stderr (the log)
  // appended to `log`. Returns 0 once mounted, else the daemon's exit code
  // (or -1 when it neither mounted nor exited within 20 s). Afterwards
  // Unmount() and KillDaemon() work as after Mount().
  int TryMountForeground(const std::vector<std::string>& extra_args,
                         const std::vector<std::string>& env,
                         const std::string& log);
  // fusermount3 -u, retried for 2 s while busy (then a failure naming the
  // processes that use the mount, and -uz), and waits for the daemon to
  // exit, so the store's lock is free again.
  void Unmount();
  // The processes with a descriptor or their directory in the mount.
  std::string MountUsers() const;
  // SIGKILL to the daemon, lazy unmount, wait for it to be gone.
  void KillDaemon();
  bool IsMounted() const;
  // Whether /proc/self/mounts lists the mount point (also when a stat of it
  // fails).
  bool InMountTable() const;

  // MOUNT/rel.
  std::string Path(const std::string& rel) const { return mnt_ + "/" + rel; }
  const std::string& mnt() const { return mnt_; }
  const std::string& datadir() const { return datadir_; }
  const std::string& tmp() const { return tmp_; }
  pid_t daemon_pid() const { return daemon_pid_; }

  // Runs `command` with /bin/sh in the mount point; returns its exit status
  // and its stdout in *out when given.
  int Sh(const std::string& command, std::string* out = nullptr);
  // Like Sh, asserting success; returns stdout.
  std::string ShOk(const std::string& command);

  // Whether MOUNT/rel is gone within 5 seconds. A name created by a
  // descriptor whose write was refused goes at its RELEASE, which the
  // kernel sends after the last close() has returned (on a loaded machine,
  // well after).
  bool GoneSoon(const std::string& rel) const;

  static std::string ReadFile(const std::string& path);
  static void WriteFile(const std::string& path, const std::string& content);

  // A change feed (`.changes/TABLE`) read on `fd` until it holds `lines`
  // lines (10 s at most), as tail -f reads a file on FUSE: the size, then
  // what is new from where it left off.
  static std::vector<std::string> FollowLines(int fd, size_t lines);
  // A feed line without its timestamp member.
  static std::string Untimed(const std::string& line);

 private:
  void WaitForDaemonExit();
  // The extra arguments of a mount of store_.
  std::vector<std::string> StoreArgs(const std::vector<std::string>& extra);
  // Memory store: runs the seeding deferred until the mount was up.
  void RunPendingSeeds();

  MountStore store_ = MountStore::kEngine;
  std::string source_;                      // empty: datadir_
  std::unique_ptr<BigtableServer> server_;  // remote() only
  double rpc_timeout_ = 0;                  // 0: the daemon's default
  std::vector<std::string> pending_seeds_;  // shell commands
  std::string tmp_;
  std::string datadir_;
  std::string mnt_;
  pid_t daemon_pid_ = -1;
  bool daemon_is_child_ = false;  // TryMountForeground: reap it
  bool mounted_ = false;
};

// The daemon binary the tests run.
std::string TabletfsBinary();

// A time in microseconds after every write made so far (the next whole
// second, plus one): the T of an `.at/T` that shows them all. From the
// precise clock: time(2) reads the kernel's coarse clock, which lags by up
// to a tick, so a write stamped just after a second turned could sort
// after a T built from it.
int64_t MicrosAfterEveryWrite();

// Runs `Fixture`'s TEST_Ps over the store of the test's parameter.
template <class Fixture>
class OverStores : public Fixture,
                   public ::testing::WithParamInterface<MountStore> {
 protected:
  OverStores() { this->set_store(this->GetParam()); }
};

inline auto AllStores() {
  return ::testing::Values(MountStore::kEngine, MountStore::kMemory);
}

// The local stores and the two remote servers.
inline auto AllBackends() {
  return ::testing::Values(MountStore::kEngine, MountStore::kMemory,
                           MountStore::kEmulator, MountStore::kServer);
}

// Whether TABLETFS_LONG_TESTS is set (not empty, not 0): long tests, or
// the remote half of bodies that make thousands of requests, each a round
// trip to a remote server, run only then (they skip otherwise).
bool LongTestsRequested();

// The two remote servers.
inline auto RemoteBackends() {
  return ::testing::Values(MountStore::kEmulator, MountStore::kServer);
}

// "engine" / "memory" / "emulator" / "server": the suffix of each
// parameterised test's name.
std::string StoreName(const ::testing::TestParamInfo<MountStore>& info);

}  // namespace tabletfs::testing

#endif  // TABLETFS_TESTS_UTIL_MOUNT_FIXTURE_H_
