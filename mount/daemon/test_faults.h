// TEST HOOK, not for production: I/O faults injected into a live daemon.
//
// With TABLETFS_TEST_FAULTS=<control file> in its environment, the daemon
// runs the store on a FaultInjectionEnv (store/fault_env.h) over the
// POSIX Env, and makes the faults the control file lists: once at start
// (before the store opens), and again every time the process gets SIGUSR2.
// Without the variable nothing changes: no wrapper, no thread, no signal
// handling (SIGUSR2 keeps its default action).
//
// The control file, one rule per line (blank lines and `#` comments are
// ignored; a missing file means no faults):
//   OP [TARGET]          every call of OP fails with IOError
//   nospace OP [TARGET]  every call of OP fails with NoSpace
//   disksize BYTES       the filesystem's size as the store sees it
//                        (Env::GetDiskSize) from now on; the store reads
//                        it once, when it opens, to size its default space
//                        reserve, so this belongs in the file before the
//                        mount. A later load without the line keeps it.
//   powercut             a power cut, at once: every later write fails,
//                        every byte and directory entry not yet synced is
//                        dropped from the data directory (as the page
//                        cache is at power loss), and the daemon exits
//                        with status 0 without unmounting or syncing
//                        (the mount then answers ENOTCONN until unmounted)
// OP is a FaultOp name: read, append, flush, sync, rename, remove, create,
// syncdir, lock, truncate, open, close. TARGET limits the rule to the calls
// whose operand (the path; "FROM -> TO" for a rename) contains it, e.g.
// `sync .sst` or `rename CURRENT`. Each load replaces every earlier rule;
// an empty file clears them. The injected error says "injected by
// TABLETFS_TEST_FAULTS", so the daemon's log shows where it came from.
//
// After each load, and when the daemon exits, <control file>.state is
// replaced (written to a temporary name and renamed) by:
//   loads N                 loads so far (1 after the start)
//   error MESSAGE           only when the last load was refused (bad rule:
//                           then no rule is active)
//   OP calls C injected I   one line per op, counted since the start
// A test writes the control file, sends SIGUSR2, and waits for `loads` to
// grow: from then on the faults are in force.
//
// Thread safety: Create() must run before the process starts any other
// thread (it blocks SIGUSR2 so that only its own thread takes it); env() may
// be used from any thread. REQUIRES: the TestFaults outlives the store
// opened on env().
#ifndef TABLETFS_MOUNT_DAEMON_TEST_FAULTS_H_
#define TABLETFS_MOUNT_DAEMON_TEST_FAULTS_H_

#include <pthread.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "store/env.h"
#include "store/fault_env.h"
#include "store/status.h"

namespace tabletfs::daemon {

inline constexpr char kTestFaultsVariable[] = "TABLETFS_TEST_FAULTS";

class TestFaults {
 public:
  // nullptr when TABLETFS_TEST_FAULTS is unset or empty.
  static std::unique_ptr<TestFaults> FromEnvironment();

  explicit TestFaults(std::string control_path);
  TestFaults(const TestFaults&) = delete;
  TestFaults& operator=(const TestFaults&) = delete;
  // Stops the reload thread and writes the final state file.
  ~TestFaults();

  // The Env for the store. Valid as long as this object.
  Env* env() { return &env_; }

  // Parses control-file text into `env` (after clearing its faults).
  // InvalidArgument naming the line for a bad rule (the env is then left
  // without faults). *summary gets the rules, "none" when there are none;
  // *power_cut (when not null) whether the text asks for a power cut.
  static Status Apply(const std::string& text, FaultInjectionEnv* env,
                      std::string* summary, bool* power_cut = nullptr);

 private:
  // Reads the control file, applies it, logs and writes the state file.
  void Load();
  // Drops what is not synced and ends the process (the `powercut` rule).
  [[noreturn]] void PowerCut();
  void WriteState(const std::string& error);
  // Waits for SIGUSR2 (blocked in every thread) and reloads, until stopped.
  void Run();

  const std::string control_path_;
  FaultInjectionEnv env_;
  // Touched by the constructor, then the thread, then the destructor after
  // the join: never at once.
  int loads_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace tabletfs::daemon

#endif  // TABLETFS_MOUNT_DAEMON_TEST_FAULTS_H_
