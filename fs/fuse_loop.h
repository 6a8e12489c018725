// FuseLoop: serves a libfuse session's requests with a pool of threads of
// which one at a time, the reader, takes requests from the device. The
// reader serves each request itself and then reads again, spinning for
// `spin_us` before it sleeps in poll().
//
// Why: on this kind of machine (2 vCPUs under a hypervisor) a FUSE round
// trip was ~45 µs of scheduling, most of it waking a daemon thread asleep
// in read() on the device (docs/BENCHMARKS.md, "What a cached `cat` waits
// for"). libfuse's multi-threaded loop sleeps there after every request.
// A reader that is still running when the next request comes saves that
// wake-up: a shell's stream of requests (create, cat, stat of each file)
// is served by one running thread.
//
// Concurrency is kept: the reader hands its role to another thread (waking
// or starting one) when a request it serves takes longer than
// `handoff_after` (a watchdog thread checks while the daemon is busy), or
// at once when the handler says it will wait (FuseLoopWillWait: for a
// RELEASE that only another thread can read, for an invalidation notice
// blocked in the kernel behind a queued request, or for a remote store's
// server: api::RemoteOptions::before_wait). So a slow request (a large
// commit) holds up others for at most about `handoff_after`, and at most
// `max_threads` requests are served at once.
//
// Transport: the device (/dev/fuse), or, if asked (io_uring), FUSE over
// io_uring when the kernel offers it (fs/fuse_ring.h): then each CPU has a
// queue served by its own pool, the same scheme with threads bound to that CPU
// and no spinning (the caller waits on the same CPU), and the device carries
// FORGET and INTERRUPT only.
//
// Shutdown: the loop ends when the session exits (unmount: the device
// read fails with ENODEV; or libfuse's signal handlers, which the calling
// thread receives: the pool's threads block SIGINT, SIGTERM and SIGHUP).
//
// Thread safety: RunFuseLoop is called once per session, from one thread.
#ifndef TABLETFS_FS_FUSE_LOOP_H_
#define TABLETFS_FS_FUSE_LOOP_H_

#include <chrono>

struct fuse_session;

namespace tabletfs::fs {

struct FuseLoopOptions {
  int max_threads = 16;
  // How long the reader polls the device without sleeping after a
  // request; 0: it sleeps at once, as libfuse's loop does.
  std::chrono::microseconds spin{50};
  // A request served longer than this by the reader passes the reader's
  // role to another thread.
  std::chrono::microseconds handoff_after{1000};
  // Take requests over io_uring when the kernel offers it (its fuse
  // module's enable_uring parameter is Y); max_threads entries a CPU. Off
  // by default: on a 2-vCPU VM it halves the daemon's CPU but makes the
  // cached `cat` of a tree slower (docs/BENCHMARKS.md, twenty-second
  // session).
  bool io_uring = false;
};

// Serves `session` until it exits. Returns 0 or an errno.
int RunFuseLoop(fuse_session* session, const FuseLoopOptions& options);

// Called by a request's handler before it waits for another request (a
// RELEASE): if its thread is the reader, another thread takes the role
// now. A no-op on other threads.
void FuseLoopWillWait();

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_FUSE_LOOP_H_
