// FuseRing (fs/fuse_ring.h): FUSE over io_uring under libfuse 3.14, as its
// custom I/O.
#include "fs/fuse_ring.h"

#include <liburing.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "fs/log.h"
#include "store/util/mutex.h"
#include "store/util/thread_annotations.h"

namespace tabletfs::fs {

namespace {

// The kernel's FUSE over io_uring interface (include/uapi/linux/fuse.h,
// protocol 7.42; Debian 12's linux-libc-dev predates it).
constexpr uint32_t kFlags2OverIoUring = 1u << (41 - 32);  // FUSE_OVER_IO_URING
constexpr uint32_t kCmdRegister = 1;  // FUSE_IO_URING_CMD_REGISTER
constexpr uint32_t kCmdCommitAndFetch =
    2;  // FUSE_IO_URING_CMD_COMMIT_AND_FETCH

struct UringEntInOut {  // struct fuse_uring_ent_in_out
  uint64_t flags;
  uint64_t commit_id;   // the request's, echoed in the commit
  uint32_t payload_sz;  // bytes in the payload buffer, either way
  uint32_t padding;
  uint64_t reserved;
};

struct UringReqHeader {  // struct fuse_uring_req_header
  char in_out[128];      // fuse_in_header, then fuse_out_header
  char op_in[128];       // the operation's fixed part (in_args[0])
  UringEntInOut ring_ent_in_out;
};

struct UringCmdReq {  // struct fuse_uring_cmd_req, in the SQE's command area
  uint64_t flags;
  uint64_t commit_id;
  uint16_t qid;
  uint8_t padding[6];
};
static_assert(sizeof(UringCmdReq) <= 80, "the SQE128 command area is 80 bytes");

constexpr size_t kPage = 4096;
// Room before the payload for the request's header and fixed part, so the
// rebuilt request is contiguous with its payload.
constexpr size_t kLead = kPage;

class Queue;

// One request buffer registered with the kernel: [header page][lead page]
// [payload]. `commit_id` is the request it holds (0: none).
struct Entry {
  Queue* queue = nullptr;
  char* mem = nullptr;
  size_t mem_size = 0;
  UringReqHeader* header = nullptr;
  char* payload = nullptr;
  size_t payload_size = 0;
  iovec iov[2]{};
  std::atomic<uint64_t> commit_id{0};
  uint32_t last_cmd = kCmdRegister;  // under the queue's sq_mu_
};

// The entry the calling thread serves: its reply goes to the ring.
thread_local Entry* serving_entry = nullptr;

// Marks the CQE of the poll on the loop's wake eventfd.
constexpr uint64_t kWakeData = 1;

}  // namespace

class FuseRing::Impl {
 public:
  Impl(fuse_session* session, int fd, int depth, int wake_fd,
       StartPool start_pool)
      : session_(session),
        fd_(fd),
        depth_(depth),
        wake_fd_(wake_fd),
        start_pool_(std::move(start_pool)) {}
  ~Impl();

  ssize_t Read(int fd, void* buf, size_t len);
  ssize_t Writev(int fd, iovec* iov, int count);
  bool active() const { return active_.load(std::memory_order_relaxed); }
  void MarkActive() {
    if (!active_.load(std::memory_order_relaxed) &&
        !active_.exchange(true, std::memory_order_relaxed)) {
      Log(LogLevel::kInfo, "fuse: requests come over io_uring");
    }
  }
  fuse_session* session() const { return session_; }
  int fd() const { return fd_; }
  int wake_fd() const { return wake_fd_; }
  // The entry of any queue holding request `unique` (a reply from a thread
  // other than the one that took the request), or nullptr.
  Entry* FindEntry(uint64_t unique);

 private:
  // After INIT's reply is written: the queues, and their pools.
  void StartQueues(size_t payload_size);

  fuse_session* const session_;
  const int fd_;
  const int depth_;
  const int wake_fd_;
  const StartPool start_pool_;

  Mutex mu_;
  uint64_t init_unique_ GUARDED_BY(mu_) = 0;    // the INIT request, if read
  bool offered_ GUARDED_BY(mu_) = false;        // the kernel offers the ring
  std::vector<std::unique_ptr<Queue>> queues_;  // set once, at INIT
  std::atomic<bool> queues_ready_{false};
  std::atomic<bool> active_{false};
};

namespace {

// One CPU's queue: its io_uring and entries; the RequestSource of the pool
// whose threads are bound to that CPU.
class Queue : public RequestSource {
 public:
  Queue(FuseRing::Impl* owner, int qid) : owner_(owner), qid_(qid) {}
  ~Queue() override;

  // The ring and entries; false (logged) if the system refuses them.
  bool Init(int depth, size_t payload_size);
  ssize_t Commit(Entry* e, const iovec* iov, int count);
  bool Holds(uint64_t unique) const;
  Entry* Find(uint64_t unique);

  void ThreadStarted() override;
  std::string name() const override {
    return "fuse-ring-" + std::to_string(qid_);
  }
  int TryTake(RequestSlot* slot) override;
  bool Wait() override;
  void Serve(RequestSlot* slot) override;
  std::chrono::microseconds spin() const override {
    // The caller is on this CPU: the daemon's thread must sleep to let it
    // run.
    return std::chrono::microseconds(0);
  }

 private:
  // Puts a command for `e` in the submission queue (the caller submits).
  bool Prepare(Entry* e, uint32_t cmd) REQUIRES(sq_mu_);
  int Register() REQUIRES(sq_mu_);

  FuseRing::Impl* const owner_;
  const int qid_;
  bool ring_made_ = false;
  io_uring ring_{};
  std::vector<std::unique_ptr<Entry>> entries_;
  Mutex sq_mu_;
  bool registered_ GUARDED_BY(sq_mu_) = false;
};

Queue::~Queue() {
  if (ring_made_) io_uring_queue_exit(&ring_);
  for (auto& e : entries_) {
    if (e->mem != nullptr) munmap(e->mem, e->mem_size);
  }
}

bool Queue::Init(int depth, size_t payload_size) {
  io_uring_params params{};
  params.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE;
  params.cq_entries = 2 * (depth + 1);
  int rc = io_uring_queue_init_params(depth + 1, &ring_, &params);
  if (rc < 0) {
    Log(LogLevel::kWarning, "fuse: io_uring for queue " + std::to_string(qid_) +
                                " refused: " + strerror(-rc));
    return false;
  }
  ring_made_ = true;
  for (int i = 0; i < depth; ++i) {
    auto e = std::make_unique<Entry>();
    e->queue = this;
    e->payload_size = payload_size;
    e->mem_size = kPage + kLead + payload_size;
    // Untouched pages cost nothing: a payload's pages are touched only as
    // far as the largest request it carried.
    void* mem = mmap(nullptr, e->mem_size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) {
      Log(LogLevel::kWarning,
          std::string("fuse: ring entry: ") + strerror(errno));
      return false;
    }
    e->mem = static_cast<char*>(mem);
    e->header = reinterpret_cast<UringReqHeader*>(e->mem);
    e->payload = e->mem + kPage + kLead;
    e->iov[0] = {e->header, sizeof(UringReqHeader)};
    e->iov[1] = {e->payload, payload_size};
    entries_.push_back(std::move(e));
  }
  return true;
}

void Queue::ThreadStarted() {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(qid_, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
    // Served anyway, at the cost of the wake-ups the queue saves.
    Log(LogLevel::kWarning,
        "fuse: cannot bind a thread to CPU " + std::to_string(qid_));
  }
}

bool Queue::Prepare(Entry* e, uint32_t cmd) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {
    // Each entry has at most one command queued, and the ring has room
    // for all of them and the wake-up poll.
    Log(LogLevel::kError, "fuse: ring submission queue full");
    return false;
  }
  // A 128-byte SQE: clear the command area too.
  memset(sqe, 0, 2 * sizeof(io_uring_sqe));
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = owner_->fd();
  sqe->cmd_op = cmd;
  io_uring_sqe_set_data(sqe, e);
  UringCmdReq req{};
  req.qid = static_cast<uint16_t>(qid_);
  if (cmd == kCmdRegister) {
    sqe->addr = reinterpret_cast<uint64_t>(e->iov);
    sqe->len = 2;
  } else {
    req.commit_id = e->commit_id.load(std::memory_order_relaxed);
  }
  memcpy(sqe->cmd, &req, sizeof req);
  e->last_cmd = cmd;
  return true;
}

int Queue::Register() {
  for (auto& e : entries_) {
    if (!Prepare(e.get(), kCmdRegister)) return -EIO;
  }
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) return -EIO;
  io_uring_prep_poll_add(sqe, owner_->wake_fd(), POLLIN);
  io_uring_sqe_set_data64(sqe, kWakeData);
  int rc = io_uring_submit(&ring_);
  return rc < 0 ? rc : 0;
}

int Queue::TryTake(RequestSlot* slot) {
  {
    MutexLock l(&sq_mu_);
    if (!registered_) {
      // Registered by the queue's own (bound) thread: the kernel delivers
      // an entry's requests in the context of the thread that submitted
      // its last command.
      registered_ = true;
      int rc = Register();
      if (rc < 0) {
        Log(LogLevel::kWarning, "fuse: ring queue " + std::to_string(qid_) +
                                    " not registered: " + strerror(-rc));
        return -ECANCELED;
      }
    }
  }
  io_uring_cqe* cqe = nullptr;
  if (io_uring_peek_cqe(&ring_, &cqe) != 0 || cqe == nullptr) return -EAGAIN;
  if (io_uring_cqe_get_data64(cqe) == kWakeData) return 0;  // left unseen
  Entry* e = static_cast<Entry*>(io_uring_cqe_get_data(cqe));
  const int res = cqe->res;
  io_uring_cqe_seen(&ring_, cqe);
  if (res == -EINTR || res == -EAGAIN) {
    MutexLock l(&sq_mu_);
    if (!Prepare(e, e->last_cmd) || io_uring_submit(&ring_) < 0) return -EIO;
    return -EAGAIN;
  }
  if (res == -ENOTCONN) return 0;  // the connection ends (unmount, abort)
  if (res < 0) {
    // The kernel refused a command: the queue never becomes ready (the
    // kernel keeps to the device) or one entry is lost.
    Log(LogLevel::kWarning, "fuse: ring queue " + std::to_string(qid_) +
                                " command failed: " + strerror(-res));
    MutexLock l(&sq_mu_);
    return e->last_cmd == kCmdRegister ? -ECANCELED : -EAGAIN;
  }
  e->commit_id.store(e->header->ring_ent_in_out.commit_id,
                     std::memory_order_relaxed);
  slot->entry = e;
  return 1;
}

bool Queue::Wait() {
  io_uring_cqe* cqe = nullptr;
  int rc = io_uring_wait_cqe(&ring_, &cqe);
  if (rc < 0 && rc != -EINTR && rc != -EAGAIN) {
    Log(LogLevel::kError, std::string("fuse: ring wait: ") + strerror(-rc));
    return false;
  }
  return true;
}

void Queue::Serve(RequestSlot* slot) {
  Entry* e = static_cast<Entry*>(slot->entry);
  slot->entry = nullptr;
  owner_->MarkActive();
  fuse_in_header in;
  memcpy(&in, e->header->in_out, sizeof in);
  const uint32_t payload = e->header->ring_ent_in_out.payload_sz;
  // The request as the device delivers it: header, the operation's fixed
  // part (whatever the total length leaves beside the payload), payload.
  if (in.len < sizeof in + payload || payload > e->payload_size ||
      in.len - sizeof in - payload > sizeof e->header->op_in) {
    Log(LogLevel::kError, "fuse: ring request " + std::to_string(in.unique) +
                              " of length " + std::to_string(in.len) +
                              " with a payload of " + std::to_string(payload) +
                              " bytes: answered EIO");
    fuse_out_header out{sizeof(fuse_out_header), -EIO, in.unique};
    iovec iov{&out, sizeof out};
    Commit(e, &iov, 1);
    return;
  }
  const size_t op_size = in.len - sizeof in - payload;
  char* start = e->payload - op_size - sizeof in;
  memcpy(start, &in, sizeof in);
  memcpy(start + sizeof in, e->header->op_in, op_size);
  fuse_buf buf{};
  buf.mem = start;
  buf.size = in.len;
  serving_entry = e;
  fuse_session_process_buf(owner_->session(), &buf);
  serving_entry = nullptr;
}

ssize_t Queue::Commit(Entry* e, const iovec* iov, int count) {
  fuse_out_header out;
  memcpy(&out, iov[0].iov_base, sizeof out);
  size_t len = 0;
  for (int i = 1; i < count; ++i) len += iov[i].iov_len;
  ssize_t written = sizeof out + len;
  if (len > e->payload_size) {
    Log(LogLevel::kError, "fuse: a reply of " + std::to_string(len) +
                              " bytes exceeds the ring's buffer: EIO");
    out.error = -EIO;
    len = 0;
  } else {
    char* p = e->payload;
    for (int i = 1; i < count; ++i) {
      memcpy(p, iov[i].iov_base, iov[i].iov_len);
      p += iov[i].iov_len;
    }
  }
  out.len = static_cast<uint32_t>(sizeof out + len);
  memcpy(e->header->in_out, &out, sizeof out);
  e->header->ring_ent_in_out.payload_sz = static_cast<uint32_t>(len);
  MutexLock l(&sq_mu_);
  if (!Prepare(e, kCmdCommitAndFetch)) {
    errno = EIO;
    return -1;
  }
  e->commit_id.store(0, std::memory_order_relaxed);
  int rc = io_uring_submit(&ring_);
  if (rc < 0) {
    Log(LogLevel::kError, std::string("fuse: ring commit: ") + strerror(-rc));
    errno = -rc;
    return -1;
  }
  return written;
}

Entry* Queue::Find(uint64_t unique) {
  for (auto& e : entries_) {
    if (e->commit_id.load(std::memory_order_relaxed) == unique) return e.get();
  }
  return nullptr;
}

// The rings by device descriptor: libfuse's callbacks get the descriptor
// and the filesystem's userdata, not the ring.
Mutex registry_mu;
std::vector<std::pair<int, FuseRing::Impl*>>& Registry() {
  static auto* rings = new std::vector<std::pair<int, FuseRing::Impl*>>;
  return *rings;
}

FuseRing::Impl* Lookup(int fd) {
  MutexLock l(&registry_mu);
  for (auto& [f, ring] : Registry()) {
    if (f == fd) return ring;
  }
  return nullptr;
}

ssize_t RingRead(int fd, void* buf, size_t len, void* /*userdata*/) {
  FuseRing::Impl* ring = Lookup(fd);
  if (ring == nullptr) return read(fd, buf, len);
  return ring->Read(fd, buf, len);
}

ssize_t RingWritev(int fd, iovec* iov, int count, void* /*userdata*/) {
  Entry* e = serving_entry;
  uint64_t unique;
  memcpy(
      &unique,
      static_cast<char*>(iov[0].iov_base) + offsetof(fuse_out_header, unique),
      sizeof unique);
  if (e != nullptr && unique != 0 &&
      e->commit_id.load(std::memory_order_relaxed) == unique) {
    serving_entry = nullptr;  // one reply a request
    return e->queue->Commit(e, iov, count);
  }
  FuseRing::Impl* ring = Lookup(fd);
  if (ring == nullptr) return writev(fd, iov, count);
  return ring->Writev(fd, iov, count);
}

}  // namespace

FuseRing::Impl::~Impl() {
  MutexLock l(&registry_mu);
  auto& rings = Registry();
  rings.erase(
      std::remove_if(rings.begin(), rings.end(),
                     [this](const auto& r) { return r.second == this; }),
      rings.end());
}

ssize_t FuseRing::Impl::Read(int fd, void* buf, size_t len) {
  ssize_t n = read(fd, buf, len);
  if (n >=
      static_cast<ssize_t>(sizeof(fuse_in_header) + sizeof(fuse_init_in))) {
    fuse_in_header in;
    memcpy(&in, buf, sizeof in);
    if (in.opcode == FUSE_INIT) {
      fuse_init_in init;
      memcpy(&init, static_cast<char*>(buf) + sizeof in, sizeof init);
      MutexLock l(&mu_);
      init_unique_ = in.unique;
      offered_ = (init.flags & FUSE_INIT_EXT) != 0 &&
                 (init.flags2 & kFlags2OverIoUring) != 0;
      if (!offered_) {
        Log(LogLevel::kInfo, "fuse: the kernel does not offer io_uring");
      }
    }
  }
  return n;
}

ssize_t FuseRing::Impl::Writev(int fd, iovec* iov, int count) {
  fuse_out_header out;
  memcpy(&out, iov[0].iov_base, sizeof out);
  if (queues_ready_.load(std::memory_order_acquire)) {
    // A reply from another thread than the one that took the request.
    if (out.unique != 0) {
      if (Entry* e = FindEntry(out.unique)) {
        return e->queue->Commit(e, iov, count);
      }
    }
    return writev(fd, iov, count);
  }
  bool init_reply = false;
  {
    MutexLock l(&mu_);
    init_reply = offered_ && out.unique == init_unique_ && out.error == 0 &&
                 count == 2 && iov[1].iov_len >= sizeof(fuse_init_out);
  }
  if (!init_reply) return writev(fd, iov, count);
  fuse_init_out* init = static_cast<fuse_init_out*>(iov[1].iov_base);
  init->flags |= FUSE_INIT_EXT;
  init->flags2 |= kFlags2OverIoUring;
  // The kernel refuses a payload buffer smaller than the largest request
  // it may send: max(8 KiB, max_write, max_pages pages).
  size_t payload = std::max<size_t>(
      {8192, init->max_write,
       static_cast<size_t>(std::max<uint16_t>(init->max_pages, 1)) * kPage});
  ssize_t n = writev(fd, iov, count);
  if (n >= 0) StartQueues(payload);
  return n;
}

void FuseRing::Impl::StartQueues(size_t payload_size) {
  long cpus = sysconf(_SC_NPROCESSORS_CONF);
  if (cpus < 1) cpus = 1;
  std::vector<std::unique_ptr<Queue>> queues;
  for (int q = 0; q < cpus; ++q) {
    auto queue = std::make_unique<Queue>(this, q);
    if (!queue->Init(depth_, payload_size)) return;  // logged
    queues.push_back(std::move(queue));
  }
  queues_ = std::move(queues);
  queues_ready_.store(true, std::memory_order_release);
  for (auto& q : queues_) {
    if (!start_pool_(q.get())) {
      Log(LogLevel::kWarning,
          "fuse: no thread serves a ring queue: requests stay on the device");
      return;
    }
  }
}

Entry* FuseRing::Impl::FindEntry(uint64_t unique) {
  for (auto& q : queues_) {
    if (Entry* e = static_cast<Queue*>(q.get())->Find(unique)) return e;
  }
  return nullptr;
}

bool FuseRing::KernelAllows() {
  std::ifstream f("/sys/module/fuse/parameters/enable_uring");
  char c = 0;
  return f.get(c) && c == 'Y';
}

std::unique_ptr<FuseRing> FuseRing::Attach(fuse_session* session, int depth,
                                           int wake_fd, StartPool start_pool) {
  const int fd = fuse_session_fd(session);
  auto impl = std::make_unique<Impl>(session, fd, depth, wake_fd,
                                     std::move(start_pool));
  {
    MutexLock l(&registry_mu);
    Registry().emplace_back(fd, impl.get());
  }
  static const fuse_custom_io io = {
      .writev = RingWritev,
      .read = RingRead,
      .splice_receive = nullptr,
      .splice_send = nullptr,
  };
  if (fuse_session_custom_io(session, &io, fd) != 0) {
    Log(LogLevel::kWarning, "fuse: libfuse refused the ring's custom I/O");
    return nullptr;
  }
  return std::unique_ptr<FuseRing>(new FuseRing(std::move(impl)));
}

FuseRing::FuseRing(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FuseRing::~FuseRing() = default;

bool FuseRing::active() const { return impl_->active(); }

}  // namespace tabletfs::fs
