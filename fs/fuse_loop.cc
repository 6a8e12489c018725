// FuseLoop (fs/fuse_loop.h): one reader at a time, which spins before it
// sleeps; a watchdog hands the reader's role on when a request is slow.
#define FUSE_USE_VERSION 314

#include "fs/fuse_loop.h"

#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "fs/log.h"
#include "store/util/mutex.h"
#include "store/util/thread_annotations.h"

namespace tabletfs::fs {

namespace {

using Clock = std::chrono::steady_clock;

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             Clock::now().time_since_epoch())
      .count();
}

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

class Loop {
 public:
  Loop(fuse_session* session, const FuseLoopOptions& options)
      : session_(session), options_(options), fd_(fuse_session_fd(session)) {}

  int Run() EXCLUDES(mu_);
  void WillWait() EXCLUDES(mu_);

 private:
  // What the reader is doing (written by the reader only).
  enum class Phase { kReading, kPolling, kServing };

  void Worker() EXCLUDES(mu_);
  void Watchdog() EXCLUDES(mu_);
  // One request into *buf: > 0 its size, 0 the session ended, < 0 -errno.
  int Read(fuse_buf* buf) EXCLUDES(mu_);
  // Frees the reader's role and wakes (or starts) a thread to take it.
  void HandOff() REQUIRES(mu_);
  void StartThread(void (Loop::*body)()) REQUIRES(mu_);
  // Ends the loop: every thread returns once its request is served.
  void Shutdown(int error) EXCLUDES(mu_);
  // The condition variables are bound to mu_, which the analysis cannot
  // see through CondVar.
  void AwaitRole() REQUIRES(mu_) NO_THREAD_SAFETY_ANALYSIS {
    followers_.Wait();
  }
  void AwaitBusy() REQUIRES(mu_) NO_THREAD_SAFETY_ANALYSIS {
    watchdog_cv_.Wait();
  }
  void AwaitTick(std::chrono::microseconds wait)
      REQUIRES(mu_) NO_THREAD_SAFETY_ANALYSIS {
    watchdog_cv_.WaitFor(wait);
  }

  fuse_session* const session_;
  const FuseLoopOptions options_;
  const int fd_;
  int wake_fd_ = -1;  // an eventfd, readable once the loop ends

  Mutex mu_;
  CondVar followers_{&mu_};    // threads waiting for the reader's role
  CondVar watchdog_cv_{&mu_};  // the watchdog, while the reader sleeps
  bool reader_taken_ GUARDED_BY(mu_) = false;
  uint64_t generation_ GUARDED_BY(mu_) = 0;  // +1 at each hand-off
  bool exiting_ GUARDED_BY(mu_) = false;
  int error_ GUARDED_BY(mu_) = 0;
  int idle_ GUARDED_BY(mu_) = 0;  // threads waiting in followers_
  std::vector<std::thread> threads_ GUARDED_BY(mu_);

  // Set by the reader (kServing after serving_since_), read by the
  // watchdog without mu_.
  std::atomic<Phase> phase_{Phase::kReading};
  std::atomic<int64_t> serving_since_{0};
  std::atomic<uint64_t> served_{0};  // requests read
  std::atomic<bool> watchdog_asleep_{false};
};

// The loop a pool thread serves, and the generation it reads for (~0 when
// it is not the reader).
thread_local Loop* current_loop = nullptr;
thread_local uint64_t reader_generation = ~uint64_t{0};

int Loop::Run() {
  int flags = fcntl(fd_, F_GETFL);
  if (flags < 0 || fcntl(fd_, F_SETFL, flags | O_NONBLOCK) < 0) {
    return errno;
  }
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return errno;
  // The pool's threads (and those they start) block the signals that end
  // the session, so that this thread receives them in ppoll() below.
  sigset_t ending, previous;
  sigemptyset(&ending);
  sigaddset(&ending, SIGINT);
  sigaddset(&ending, SIGTERM);
  sigaddset(&ending, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &ending, &previous);
  bool started = false;
  if (!fuse_session_exited(session_)) {
    MutexLock l(&mu_);
    try {
      threads_.reserve(options_.max_threads + 1);
    } catch (const std::bad_alloc&) {
    }
    StartThread(&Loop::Watchdog);
    StartThread(&Loop::Worker);
    started = threads_.size() == 2;
  }
  // Until a signal's handler exits the session or a thread ends the loop
  // (unmount, a device error): the previous mask lets signals in only
  // while this thread waits, so none is missed between check and wait.
  // Other threads of the daemon (the API's, the invalidator) may take a
  // signal instead: the timeout notices its exit within a fifth of a
  // second.
  const timespec tick{0, 200'000'000};
  while (started) {
    {
      MutexLock l(&mu_);
      if (exiting_) break;
    }
    if (fuse_session_exited(session_)) break;
    pollfd wake{wake_fd_, POLLIN, 0};
    ppoll(&wake, 1, &tick, &previous);
  }
  Shutdown(started ? 0 : EAGAIN);
  std::vector<std::thread> threads;
  {
    MutexLock l(&mu_);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  close(wake_fd_);
  fuse_session_reset(session_);
  MutexLock l(&mu_);
  return error_;
}

void Loop::StartThread(void (Loop::*body)()) {
  try {
    threads_.emplace_back(body, this);
  } catch (const std::exception& e) {  // system_error, bad_alloc
    // Fewer threads serve: the reader's role waits for a busy one.
    Log(LogLevel::kWarning,
        std::string("fuse loop: cannot start a thread: ") + e.what());
  }
}

void Loop::Shutdown(int error) {
  {
    MutexLock l(&mu_);
    if (error != 0 && error_ == 0) error_ = error;
    exiting_ = true;
    followers_.SignalAll();
    watchdog_cv_.SignalAll();
  }
  fuse_session_exit(session_);
  uint64_t one = 1;
  // The counter cannot overflow from one write per thread; a failure
  // leaves a thread in poll() only if it was already woken.
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
}

void Loop::Worker() {
  current_loop = this;
  fuse_buf buf{};
  mu_.Lock();
  while (!exiting_) {
    if (reader_taken_) {
      ++idle_;
      AwaitRole();
      --idle_;
      continue;
    }
    reader_taken_ = true;
    const uint64_t generation = generation_;
    reader_generation = generation;
    int res = 1;
    // The reader serves what it reads until its role is handed on.
    while (res > 0 && generation_ == generation && !exiting_) {
      mu_.Unlock();
      res = Read(&buf);
      if (res > 0) {
        served_.fetch_add(1, std::memory_order_relaxed);
        serving_since_.store(NowNanos(), std::memory_order_relaxed);
        phase_.store(Phase::kServing, std::memory_order_release);
        fuse_session_process_buf(session_, &buf);
      }
      mu_.Lock();
      // A thread handed off while serving leaves the phase to the new
      // reader.
      if (generation_ == generation) {
        phase_.store(Phase::kReading, std::memory_order_relaxed);
      }
    }
    reader_generation = ~uint64_t{0};
    if (res <= 0) {
      if (generation_ == generation) reader_taken_ = false;
      mu_.Unlock();
      Shutdown(res < 0 ? -res : 0);
      mu_.Lock();
    }
  }
  mu_.Unlock();
  free(buf.mem);
}

int Loop::Read(fuse_buf* buf) {
  Clock::time_point spin_end = Clock::now() + options_.spin;
  for (;;) {
    int res = fuse_session_receive_buf(session_, buf);
    if (res == -EINTR) continue;
    if (res != -EAGAIN) return res;
    if (fuse_session_exited(session_)) return 0;
    if (Clock::now() < spin_end) {
      CpuRelax();
      continue;
    }
    phase_.store(Phase::kPolling, std::memory_order_relaxed);
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      // EINTR, or ENOMEM for poll's own table: read and poll again.
      if (errno != EINTR) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      fds[1].revents = 0;
    }
    if (fds[1].revents != 0) return 0;  // Shutdown
    phase_.store(Phase::kReading);
    // The watchdog sleeps once a whole tick passed without a request. It
    // sets watchdog_asleep_ before it reads the phase, this thread the
    // phase before it reads watchdog_asleep_: one of them sees the other.
    if (watchdog_asleep_.load()) {
      MutexLock l(&mu_);
      watchdog_asleep_.store(false);
      watchdog_cv_.Signal();
    }
    spin_end = Clock::now() + options_.spin;
  }
}

void Loop::Watchdog() {
  const int64_t limit = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            options_.handoff_after)
                            .count();
  MutexLock l(&mu_);
  uint64_t seen = served_.load(std::memory_order_relaxed);
  while (!exiting_) {
    // A tick, or until the request being served reaches the limit.
    std::chrono::microseconds wait = options_.handoff_after;
    if (reader_taken_ && phase_.load() == Phase::kServing) {
      const int64_t left =
          limit - (NowNanos() - serving_since_.load(std::memory_order_relaxed));
      wait = std::chrono::microseconds(std::max<int64_t>(left / 1000, 1));
    }
    AwaitTick(wait);
    if (exiting_) break;
    if (reader_taken_ && phase_.load() == Phase::kServing &&
        NowNanos() - serving_since_.load(std::memory_order_relaxed) >= limit) {
      HandOff();
    } else if (!reader_taken_ && idle_ == 0 &&
               static_cast<int>(threads_.size()) <= options_.max_threads) {
      // A hand-off that could not start a thread: try again.
      StartThread(&Loop::Worker);
    }
    if (served_.load(std::memory_order_relaxed) == seen) {
      // A tick without a request: sleep until the reader's poll() ends
      // (a wake-up after an idle tick, not one per request).
      watchdog_asleep_.store(true);
      if (phase_.load() == Phase::kPolling) {
        while (watchdog_asleep_.load() && !exiting_) AwaitBusy();
      }
      watchdog_asleep_.store(false);
    }
    seen = served_.load(std::memory_order_relaxed);
  }
}

void Loop::HandOff() {
  reader_taken_ = false;
  ++generation_;
  phase_.store(Phase::kReading, std::memory_order_relaxed);
  if (exiting_) return;  // Run() joins the threads it has
  if (idle_ > 0) {
    followers_.Signal();
  } else if (static_cast<int>(threads_.size()) <= options_.max_threads) {
    // threads_ holds the watchdog too.
    StartThread(&Loop::Worker);
  }
  // Else every thread serves a request: the first one done reads next.
}

void Loop::WillWait() {
  MutexLock l(&mu_);
  if (reader_taken_ && reader_generation == generation_) HandOff();
}

}  // namespace

int RunFuseLoop(fuse_session* session, const FuseLoopOptions& options) {
  Loop loop(session, options);
  return loop.Run();
}

void FuseLoopWillWait() {
  if (current_loop != nullptr) current_loop->WillWait();
}

}  // namespace tabletfs::fs
