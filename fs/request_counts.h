// RequestCounts: how many FUSE requests of each kind the mount has served
// since it started (issue 20), for `.tabletfs/stats` (fs/status_files.h).
// fs/fuse_ops.cc counts each request as its callback starts, failed ones
// too; what libfuse answers without a callback (INTERRUPT, DESTROY, ENOSYS
// for an operation we leave unset) is not counted. No FUSE include: FuseOp
// names the kernel's opcodes we implement.
//
// Thread safety: Add and Text may be called from any thread at any time.
// Counts are relaxed atomics: cheap on the request path, each exact on its
// own, but a Text taken while requests are served is not one instant's
// snapshot across kinds.
#ifndef TABLETFS_FS_REQUEST_COUNTS_H_
#define TABLETFS_FS_REQUEST_COUNTS_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tabletfs::fs {

// The requests the filesystem implements, by the kernel's opcode names
// (linux/fuse.h FUSE_*, without the prefix). Not persisted: only the
// names in the stats text are an interface.
enum class FuseOp : uint8_t {
  kInit,
  kLookup,
  kForget,
  kBatchForget,
  kGetattr,
  kSetattr,
  kReadlink,
  kMknod,
  kMkdir,
  kUnlink,
  kRmdir,
  kSymlink,
  kRename,  // RENAME and RENAME2: libfuse hands both to one callback
  kLink,
  kOpen,
  kRead,
  kWrite,
  kStatfs,
  kRelease,
  kFsync,
  kSetxattr,
  kGetxattr,
  kListxattr,
  kRemovexattr,
  kFlush,
  kOpendir,
  kReaddir,
  kReleasedir,
  kFsyncdir,
  kCreate,
  kReaddirplus,
  kFallocate,
  kGetlk,
  kSetlk,  // SETLK and SETLKW, fcntl and flock locks
  kCount   // not an opcode: the number of them
};

// "LOOKUP", "GETATTR", ... REQUIRES: op != kCount.
std::string_view FuseOpName(FuseOp op);

class RequestCounts {
 public:
  RequestCounts() = default;
  RequestCounts(const RequestCounts&) = delete;
  RequestCounts& operator=(const RequestCounts&) = delete;

  // One request of kind `op` arrived. REQUIRES: op != kCount.
  void Add(FuseOp op) {
    counts_[static_cast<size_t>(op)].fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t Get(FuseOp op) const {
    return counts_[static_cast<size_t>(op)].load(std::memory_order_relaxed);
  }

  // "key value" lines, each ending in '\n': `fuse_requests N` (every kind)
  // and then, in the order of FuseOp, `fuse_NAME N` for each kind counted
  // at least once.
  std::string Text() const;

 private:
  std::array<std::atomic<uint64_t>, static_cast<size_t>(FuseOp::kCount)>
      counts_{};
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_REQUEST_COUNTS_H_
