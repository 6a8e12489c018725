// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable with
// clang thread-safety annotations, so `-Wthread-safety` checks GUARDED_BY and
// REQUIRES in the clang build (libstdc++'s std::mutex carries no
// annotations).
//
// Thread safety: a Mutex is used from many threads by design; a MutexLock
// belongs to the thread that created it.
#ifndef TABLETFS_STORE_UTIL_MUTEX_H_
#define TABLETFS_STORE_UTIL_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "store/util/thread_annotations.h"

namespace tabletfs {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex &) = delete;
  Mutex &operator=(const Mutex &) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Documents (and, in the clang build, tells the analysis) that the caller
  // holds the lock.
  void AssertHeld() ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex *mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock &) = delete;
  MutexLock &operator=(const MutexLock &) = delete;

 private:
  Mutex *const mu_;
};

// A condition variable bound to one Mutex.
class CondVar {
 public:
  explicit CondVar(Mutex *mu) : mu_(mu) {}
  CondVar(const CondVar &) = delete;
  CondVar &operator=(const CondVar &) = delete;

  // REQUIRES: mu held. Releases it while waiting; holds it again on return.
  void Wait() REQUIRES(mu_) {
    std::unique_lock<std::mutex> lock(mu_->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // Like Wait(), but returns after `timeout` at the latest. Returns false on
  // timeout.
  bool WaitFor(std::chrono::microseconds timeout) REQUIRES(mu_) {
    std::unique_lock<std::mutex> lock(mu_->mu_, std::adopt_lock);
    bool signalled = cv_.wait_for(lock, timeout) == std::cv_status::no_timeout;
    lock.release();
    return signalled;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  Mutex *const mu_;
  std::condition_variable cv_;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_UTIL_MUTEX_H_
