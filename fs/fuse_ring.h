// FuseRing: FUSE over io_uring (Linux 6.14+), the transport FuseLoop
// (fs/fuse_loop.h) serves requests from when asked (-o uring) and the
// kernel offers it.
//
// Why: on /dev/fuse a request wakes whichever daemon thread reads the
// device, usually on another CPU than the caller; on a VM whose idle vCPUs
// halt, that wake-up and the caller's on the way back are most of a round
// trip (docs/BENCHMARKS.md, "What a cached `cat` waits for"). Over io_uring
// the kernel puts a request in the queue of the CPU its caller runs on, and
// that queue's threads are bound to that CPU: the caller blocks, the CPU
// switches to the daemon's thread and back, with no inter-processor
// wake-up (the twenty-second session's section in docs/BENCHMARKS.md).
//
// How: libfuse 3.14 knows nothing of io_uring, so the ring sits under it as
// its custom I/O (fuse_session_custom_io):
// - read: the device's read(2); it notes the FUSE_INIT request, and whether
//   the kernel offers FUSE_OVER_IO_URING (its enable_uring parameter).
// - writev: the reply to INIT gets FUSE_OVER_IO_URING added; once it is
//   written, one queue per possible CPU is made (io_uring with 128-byte
//   SQEs, `depth` entries of a header and a payload buffer each) and
//   `start_pool` is asked to serve each (threads bound to its CPU). A reply
//   to a request that came over the ring is copied into its entry and
//   committed (COMMIT_AND_FETCH, which also waits for the entry's next
//   request); everything else (INIT, INTERRUPT replies, notifications)
//   goes to the device as before.
// - A ring request is rebuilt in its entry's buffer into the layout the
//   device delivers (header, the operation's fixed part, the payload),
//   which the payload follows without a copy, and handed to
//   fuse_session_process_buf.
// FORGET and INTERRUPT keep coming through the device; so does everything
// if the kernel does not offer the ring, or refuses a queue (the kernel
// switches to the ring only when every queue has registered).
//
// Thread safety: the custom I/O callbacks run on any thread; a queue's
// completions are taken by one thread at a time (FuseLoop's reader role),
// its submissions are serialized by the queue's mutex.
#ifndef TABLETFS_FS_FUSE_RING_H_
#define TABLETFS_FS_FUSE_RING_H_

#define FUSE_USE_VERSION 314

#include <fuse_lowlevel.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

namespace tabletfs::fs {

// What a pool thread holds while it serves one request.
struct RequestSlot {
  fuse_buf buf{};         // a device request (libfuse's buffer)
  void* entry = nullptr;  // a ring request (the queue's entry)
  RequestSlot() = default;
  RequestSlot(const RequestSlot&) = delete;
  RequestSlot& operator=(const RequestSlot&) = delete;
  ~RequestSlot() { free(buf.mem); }
};

// Where one pool of FuseLoop's threads takes its requests. TryTake and
// Wait are called by the pool's reader only; Serve by the thread that took
// the request.
class RequestSource {
 public:
  virtual ~RequestSource() = default;
  // On each of the pool's threads as it starts.
  virtual void ThreadStarted() {}
  // The pool's threads' name (at most 15 characters).
  virtual std::string name() const = 0;
  // Without blocking: > 0 a request is in *slot; -EAGAIN none yet; 0 the
  // session ended; -ECANCELED this source ends (the session goes on); other
  // < 0 a fatal -errno.
  virtual int TryTake(RequestSlot* slot) = 0;
  // Blocks until TryTake may find something; false: the loop is ending.
  virtual bool Wait() = 0;
  virtual void Serve(RequestSlot* slot) = 0;
  // How long the reader polls before it sleeps in Wait.
  virtual std::chrono::microseconds spin() const = 0;
};

class FuseRing {
 public:
  using StartPool = std::function<bool(RequestSource* source)>;

  // Whether this kernel may offer FUSE over io_uring
  // (/sys/module/fuse/parameters/enable_uring is Y).
  static bool KernelAllows();

  // Installs the ring as `session`'s custom I/O (after fuse_session_mount,
  // before the first request is read). `wake_fd` (an eventfd) becomes
  // readable when the loop ends; `start_pool` starts serving a queue once
  // INIT is answered (false: it could not, the ring is dropped).
  static std::unique_ptr<FuseRing> Attach(fuse_session* session, int depth,
                                          int wake_fd, StartPool start_pool);
  ~FuseRing();  // after every pool serving it has stopped
  FuseRing(const FuseRing&) = delete;
  FuseRing& operator=(const FuseRing&) = delete;

  // Whether the kernel took the ring (INIT answered with it and every
  // queue registered): the device then carries FORGET and INTERRUPT only.
  bool active() const;

  class Impl;

 private:
  explicit FuseRing(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_FUSE_RING_H_
