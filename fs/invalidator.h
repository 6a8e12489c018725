// Invalidator: sends the kernel invalidation notices
// (fuse_lowlevel_notify_inval_inode / _entry) from its own thread, because
// libfuse forbids sending them from a request handler for a node the kernel
// may hold locked (DESIGN.md "Caching and coherence").
//
// A request that queued notices waits for them (Await) before it replies,
// so that a process that saw the reply (a close, a Q@T write) never reads
// what the kernel cached before. The wait is bounded: a notice can block in
// the kernel on a page lock held by a read that waits for this daemon, and
// in single-threaded mode that read is served only after the reply.
//
// Thread safety: all methods may be called from any thread.
#ifndef TABLETFS_FS_INVALIDATOR_H_
#define TABLETFS_FS_INVALIDATOR_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <thread>

#include "store/util/mutex.h"

struct fuse_session;

namespace tabletfs::fs {

class Invalidator {
 public:
  // REQUIRES: `session` outlives this object. `test_delay`: a test hook
  // (TABLETFS_TEST_INVALIDATION_DELAY_MS) that holds each notice back this
  // long, so that tests see what happens when notices come late.
  explicit Invalidator(fuse_session* session,
                       std::chrono::milliseconds test_delay = {});
  // Sends what is queued, then stops the thread.
  ~Invalidator();
  Invalidator(const Invalidator&) = delete;
  Invalidator& operator=(const Invalidator&) = delete;

  // Drops the kernel's attributes and cached data of `ino`. Returns the
  // notice's ticket for Await().
  uint64_t Inode(uint64_t ino);
  // Drops the kernel's dentry `name` in directory `parent`.
  uint64_t Entry(uint64_t parent, std::string name);
  // Waits until the notice `ticket` (and every one before it) was sent, for
  // at most `timeout`. Returns whether it was.
  bool Await(uint64_t ticket, std::chrono::microseconds timeout);

  // Blocks until everything queued so far was sent (tests, shutdown).
  void Drain();

 private:
  struct Notice {
    uint64_t ino = 0;  // Inode() when name is empty... see `entry`
    bool entry = false;
    std::string name;
  };
  void Run();
  uint64_t Push(Notice n);
  // CondVar::Wait names the CondVar's own mutex, which the analysis cannot
  // tie to mu_.
  void Await() REQUIRES(mu_) NO_THREAD_SAFETY_ANALYSIS { cv_.Wait(); }
  void AwaitFor(std::chrono::microseconds timeout) REQUIRES(mu_)
      NO_THREAD_SAFETY_ANALYSIS {
    cv_.WaitFor(timeout);
  }

  fuse_session* const session_;
  const std::chrono::milliseconds test_delay_;
  Mutex mu_;
  CondVar cv_{&mu_};
  std::deque<Notice> queue_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  uint64_t sent_ GUARDED_BY(mu_) = 0;
  uint64_t queued_ GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_INVALIDATOR_H_
