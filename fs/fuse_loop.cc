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
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fs/fuse_ring.h"
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

class Server;

// Requests from the FUSE device (/dev/fuse).
class DeviceSource : public RequestSource {
 public:
  DeviceSource(fuse_session* session, const Server* server,
               std::chrono::microseconds spin, int wake_fd)
      : session_(session),
        server_(server),
        spin_(spin),
        fd_(fuse_session_fd(session)),
        wake_fd_(wake_fd) {}

  int TryTake(RequestSlot* slot) override {
    int res = fuse_session_receive_buf(session_, &slot->buf);
    if (res == -EINTR || res == -EAGAIN) {
      return fuse_session_exited(session_) ? 0 : -EAGAIN;
    }
    return res;
  }
  bool Wait() override {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      // EINTR, or ENOMEM for poll's own table: read and poll again.
      if (errno != EINTR) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      return true;
    }
    return fds[1].revents == 0;
  }
  void Serve(RequestSlot* slot) override {
    fuse_session_process_buf(session_, &slot->buf);
  }
  std::string name() const override { return "fuse-dev"; }
  std::chrono::microseconds spin() const override;

 private:
  fuse_session* const session_;
  const Server* const server_;
  const std::chrono::microseconds spin_;
  const int fd_;
  const int wake_fd_;
};

// The threads serving one source: one at a time, the reader, takes
// requests; a watchdog hands the role on when a request is slow.
class Pool {
 public:
  Pool(Server* server, const FuseLoopOptions& options, RequestSource* source)
      : server_(server), options_(options), source_(source) {}

  // The watchdog and a first worker; false if neither could start.
  bool Start() EXCLUDES(mu_);
  // Every thread returns once its request is served.
  void Stop() EXCLUDES(mu_);
  void Join() EXCLUDES(mu_);
  void WillWait() EXCLUDES(mu_);

 private:
  // What the reader is doing (written by the reader only).
  enum class Phase { kReading, kPolling, kServing };

  void Worker() EXCLUDES(mu_);
  void Watchdog() EXCLUDES(mu_);
  // One request into *slot: > 0 taken, 0 the session ended, -ECANCELED
  // the source ended, < 0 -errno.
  int Read(RequestSlot* slot) EXCLUDES(mu_);
  // Frees the reader's role and wakes (or starts) a thread to take it.
  void HandOff() REQUIRES(mu_);
  void StartThread(void (Pool::*body)()) REQUIRES(mu_);
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

  Server* const server_;
  const FuseLoopOptions options_;
  RequestSource* const source_;

  Mutex mu_;
  CondVar followers_{&mu_};    // threads waiting for the reader's role
  CondVar watchdog_cv_{&mu_};  // the watchdog, while the reader sleeps
  bool reader_taken_ GUARDED_BY(mu_) = false;
  uint64_t generation_ GUARDED_BY(mu_) = 0;  // +1 at each hand-off
  bool exiting_ GUARDED_BY(mu_) = false;
  int idle_ GUARDED_BY(mu_) = 0;  // threads waiting in followers_
  std::vector<std::thread> threads_ GUARDED_BY(mu_);

  // Set by the reader (kServing after serving_since_), read by the
  // watchdog without mu_.
  std::atomic<Phase> phase_{Phase::kReading};
  std::atomic<int64_t> serving_since_{0};
  std::atomic<uint64_t> served_{0};  // requests read
  std::atomic<bool> watchdog_asleep_{false};
};

// The session's pools: the device's, and one per ring queue once the
// kernel takes the ring (fs/fuse_ring.h).
class Server {
 public:
  Server(fuse_session* session, const FuseLoopOptions& options)
      : session_(session), options_(options) {}

  int Run() EXCLUDES(mu_);
  // Ends the loop: every pool stops.
  void Shutdown(int error) EXCLUDES(mu_);
  bool ring_active() const { return ring_ != nullptr && ring_->active(); }

 private:
  // Starts a pool for `source`; false once the loop ends.
  bool StartPool(RequestSource* source) EXCLUDES(mu_);

  fuse_session* const session_;
  const FuseLoopOptions options_;
  int wake_fd_ = -1;  // an eventfd, readable once the loop ends
  std::unique_ptr<FuseRing> ring_;

  Mutex mu_;
  bool exiting_ GUARDED_BY(mu_) = false;
  int error_ GUARDED_BY(mu_) = 0;
  std::vector<std::unique_ptr<Pool>> pools_ GUARDED_BY(mu_);
};

std::chrono::microseconds DeviceSource::spin() const {
  // Once the ring carries the requests, the device has FORGETs and
  // INTERRUPTs only: not worth a CPU's spinning beside the ring's threads.
  return server_->ring_active() ? std::chrono::microseconds(0) : spin_;
}

// The pool a thread serves, and the generation it reads for (~0 when it is
// not the reader).
thread_local Pool* current_pool = nullptr;
thread_local uint64_t reader_generation = ~uint64_t{0};

int Server::Run() {
  const int fd = fuse_session_fd(session_);
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return errno;
  }
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return errno;
  if (options_.io_uring) {
    if (FuseRing::KernelAllows()) {
      ring_ = FuseRing::Attach(
          session_, options_.max_threads, wake_fd_,
          [this](RequestSource* source) { return StartPool(source); });
    } else {
      Log(LogLevel::kWarning,
          "fuse: io_uring asked for, but the kernel does not allow it "
          "(/sys/module/fuse/parameters/enable_uring is not Y): requests "
          "come through /dev/fuse");
    }
  }
  // The pool's threads (and those they start) block the signals that end
  // the session, so that this thread receives them in ppoll() below.
  sigset_t ending, previous;
  sigemptyset(&ending);
  sigaddset(&ending, SIGINT);
  sigaddset(&ending, SIGTERM);
  sigaddset(&ending, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &ending, &previous);
  DeviceSource device(session_, this, options_.spin, wake_fd_);
  const bool started = !fuse_session_exited(session_) && StartPool(&device);
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
  // No pool starts once exiting_ is set: the list is final.
  std::vector<std::unique_ptr<Pool>> pools;
  {
    MutexLock l(&mu_);
    pools.swap(pools_);
  }
  for (auto& pool : pools) pool->Join();
  pools.clear();
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  // The ring's queues go after the threads that used them. libfuse keeps
  // the custom I/O: with the ring gone it reads and writes the device.
  ring_.reset();
  close(wake_fd_);
  fuse_session_reset(session_);
  MutexLock l(&mu_);
  return error_;
}

bool Server::StartPool(RequestSource* source) {
  MutexLock l(&mu_);
  if (exiting_) return false;
  auto pool = std::make_unique<Pool>(this, options_, source);
  if (!pool->Start()) return false;
  pools_.push_back(std::move(pool));
  return true;
}

void Server::Shutdown(int error) {
  std::vector<Pool*> pools;
  {
    MutexLock l(&mu_);
    if (error != 0 && error_ == 0) error_ = error;
    exiting_ = true;
    for (auto& pool : pools_) pools.push_back(pool.get());
  }
  for (Pool* pool : pools) pool->Stop();
  fuse_session_exit(session_);
  uint64_t one = 1;
  // The counter cannot overflow from one write per thread; a failure
  // leaves a thread in poll() only if it was already woken.
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
}

bool Pool::Start() {
  MutexLock l(&mu_);
  try {
    threads_.reserve(options_.max_threads + 1);
  } catch (const std::bad_alloc&) {
  }
  StartThread(&Pool::Watchdog);
  StartThread(&Pool::Worker);
  return threads_.size() == 2;
}

void Pool::StartThread(void (Pool::*body)()) {
  try {
    threads_.emplace_back(body, this);
  } catch (const std::exception& e) {  // system_error, bad_alloc
    // Fewer threads serve: the reader's role waits for a busy one.
    Log(LogLevel::kWarning,
        std::string("fuse loop: cannot start a thread: ") + e.what());
  }
}

void Pool::Stop() {
  MutexLock l(&mu_);
  exiting_ = true;
  followers_.SignalAll();
  watchdog_cv_.SignalAll();
}

void Pool::Join() {
  std::vector<std::thread> threads;
  {
    MutexLock l(&mu_);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void Pool::Worker() {
  current_pool = this;
  pthread_setname_np(pthread_self(), source_->name().c_str());
  source_->ThreadStarted();
  RequestSlot slot;
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
      res = Read(&slot);
      if (res > 0) {
        served_.fetch_add(1, std::memory_order_relaxed);
        serving_since_.store(NowNanos(), std::memory_order_relaxed);
        phase_.store(Phase::kServing, std::memory_order_release);
        source_->Serve(&slot);
      }
      mu_.Lock();
      // A thread handed off while serving leaves the phase to the new
      // reader.
      if (generation_ == generation) {
        phase_.store(Phase::kReading, std::memory_order_relaxed);
      }
    }
    reader_generation = ~uint64_t{0};
    if (res == -ECANCELED) {
      // This source is done; the session's other pools go on.
      exiting_ = true;
      followers_.SignalAll();
      watchdog_cv_.SignalAll();
    } else if (res <= 0) {
      if (generation_ == generation) reader_taken_ = false;
      mu_.Unlock();
      server_->Shutdown(res < 0 ? -res : 0);
      mu_.Lock();
    }
  }
  mu_.Unlock();
}

int Pool::Read(RequestSlot* slot) {
  const std::chrono::microseconds spin = source_->spin();
  Clock::time_point spin_end = Clock::now() + spin;
  for (;;) {
    int res = source_->TryTake(slot);
    if (res != -EAGAIN) return res;
    if (spin.count() > 0 && Clock::now() < spin_end) {
      CpuRelax();
      continue;
    }
    phase_.store(Phase::kPolling, std::memory_order_relaxed);
    if (!source_->Wait()) return 0;  // Shutdown
    phase_.store(Phase::kReading);
    // The watchdog sleeps once a whole tick passed without a request. It
    // sets watchdog_asleep_ before it reads the phase, this thread the
    // phase before it reads watchdog_asleep_: one of them sees the other.
    if (watchdog_asleep_.load()) {
      MutexLock l(&mu_);
      watchdog_asleep_.store(false);
      watchdog_cv_.Signal();
    }
    spin_end = Clock::now() + spin;
  }
}

void Pool::Watchdog() {
  const int64_t limit = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            options_.handoff_after)
                            .count();
  pthread_setname_np(pthread_self(), "fuse-watchdog");
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
      StartThread(&Pool::Worker);
    }
    if (served_.load(std::memory_order_relaxed) == seen) {
      // A tick without a request: sleep until the reader's wait ends
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

void Pool::HandOff() {
  reader_taken_ = false;
  ++generation_;
  phase_.store(Phase::kReading, std::memory_order_relaxed);
  if (exiting_) return;  // Run() joins the threads it has
  if (idle_ > 0) {
    followers_.Signal();
  } else if (static_cast<int>(threads_.size()) <= options_.max_threads) {
    // threads_ holds the watchdog too.
    StartThread(&Pool::Worker);
  }
  // Else every thread serves a request: the first one done reads next.
}

void Pool::WillWait() {
  MutexLock l(&mu_);
  if (reader_taken_ && reader_generation == generation_) HandOff();
}

}  // namespace

int RunFuseLoop(fuse_session* session, const FuseLoopOptions& options) {
  Server server(session, options);
  return server.Run();
}

void FuseLoopWillWait() {
  if (current_pool != nullptr) current_pool->WillWait();
}

}  // namespace tabletfs::fs
