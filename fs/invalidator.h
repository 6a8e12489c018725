// Invalidator: sends the kernel invalidation notices
// (fuse_lowlevel_notify_inval_inode / _entry) from its own thread, because
// libfuse forbids sending them from a request handler for a node the kernel
// may hold locked (DESIGN.md "Caching and coherence").
//
// Thread safety: Inode() and Entry() may be called from any thread.
#ifndef TABLETFS_FS_INVALIDATOR_H_
#define TABLETFS_FS_INVALIDATOR_H_

#include <cstdint>
#include <deque>
#include <string>
#include <thread>

#include "store/util/mutex.h"

struct fuse_session;

namespace tabletfs::fs {

class Invalidator {
 public:
  // REQUIRES: `session` outlives this object.
  explicit Invalidator(fuse_session* session);
  // Sends what is queued, then stops the thread.
  ~Invalidator();
  Invalidator(const Invalidator&) = delete;
  Invalidator& operator=(const Invalidator&) = delete;

  // Drops the kernel's attributes and cached data of `ino`.
  void Inode(uint64_t ino);
  // Drops the kernel's dentry `name` in directory `parent`.
  void Entry(uint64_t parent, std::string name);

  // Blocks until everything queued so far was sent (tests, shutdown).
  void Drain();

 private:
  struct Notice {
    uint64_t ino = 0;  // Inode() when name is empty... see `entry`
    bool entry = false;
    std::string name;
  };
  void Run();
  // CondVar::Wait names the CondVar's own mutex, which the analysis cannot
  // tie to mu_.
  void Await() REQUIRES(mu_) NO_THREAD_SAFETY_ANALYSIS { cv_.Wait(); }

  fuse_session* const session_;
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
