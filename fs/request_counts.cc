#include "fs/request_counts.h"

#include <cassert>
#include <iterator>

namespace tabletfs::fs {
namespace {

// Indexed by FuseOp: keep in its order.
constexpr std::string_view kNames[] = {
    "INIT",        "LOOKUP",    "FORGET",     "BATCH_FORGET", "GETATTR",
    "SETATTR",     "READLINK",  "MKNOD",      "MKDIR",        "UNLINK",
    "RMDIR",       "SYMLINK",   "RENAME",     "LINK",         "OPEN",
    "READ",        "WRITE",     "STATFS",     "RELEASE",      "FSYNC",
    "SETXATTR",    "GETXATTR",  "LISTXATTR",  "REMOVEXATTR",  "FLUSH",
    "OPENDIR",     "READDIR",   "RELEASEDIR", "FSYNCDIR",     "CREATE",
    "READDIRPLUS", "FALLOCATE", "GETLK",      "SETLK",
};
static_assert(std::size(kNames) == static_cast<size_t>(FuseOp::kCount),
              "one name per FuseOp");

}  // namespace

std::string_view FuseOpName(FuseOp op) {
  assert(op != FuseOp::kCount);
  return kNames[static_cast<size_t>(op)];
}

std::string RequestCounts::Text() const {
  uint64_t counts[static_cast<size_t>(FuseOp::kCount)];
  uint64_t total = 0;
  for (size_t i = 0; i < std::size(counts); i++) {
    counts[i] = counts_[i].load(std::memory_order_relaxed);
    total += counts[i];
  }
  std::string out = "fuse_requests " + std::to_string(total) + "\n";
  for (size_t i = 0; i < std::size(counts); i++) {
    if (counts[i] == 0) continue;
    out += "fuse_";
    out += kNames[i];
    out += ' ';
    out += std::to_string(counts[i]);
    out += '\n';
  }
  return out;
}

}  // namespace tabletfs::fs
