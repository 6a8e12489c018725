// Arena: bump allocation for memtable entries; everything is freed at once
// when the arena is destroyed.
//
// Thread safety: Allocate* by one thread at a time (the memtable's single
// writer); MemoryUsage() from any thread.
#ifndef TABLETFS_STORE_DB_ARENA_H_
#define TABLETFS_STORE_DB_ARENA_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

namespace tabletfs {

class Arena {
 public:
  static constexpr size_t kFirstBlockSize = 4096;

  // Blocks double from kFirstBlockSize up to `max_block_size` (at least
  // kFirstBlockSize), so an arena of a few entries (one of many tablets'
  // memtables) stays small and a busy one makes few allocations: with
  // 4 KiB blocks, each entry of a 1,000-byte value took a malloc of its
  // own, 16 % of a fill's writer thread (docs/BENCHMARKS.md, twenty-third
  // session). A request above a quarter of the largest block gets a block
  // of its own.
  explicit Arena(size_t max_block_size = kFirstBlockSize)
      : max_block_size_(max_block_size < kFirstBlockSize ? kFirstBlockSize
                                                         : max_block_size) {}
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Returns `bytes` bytes valid for the arena's lifetime. REQUIRES: bytes > 0.
  char* Allocate(size_t bytes);
  // Like Allocate, aligned for pointers.
  char* AllocateAligned(size_t bytes);

  // Bytes reserved from the system, approximately.
  size_t MemoryUsage() const { return usage_.load(std::memory_order_relaxed); }

 private:
  char* AllocateFallback(size_t bytes);
  char* NewBlock(size_t bytes);

  char* ptr_ = nullptr;
  size_t remaining_ = 0;
  const size_t max_block_size_;
  size_t next_block_size_ = kFirstBlockSize;
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::atomic<size_t> usage_{0};
};

inline char* Arena::Allocate(size_t bytes) {
  if (bytes <= remaining_) {
    char* result = ptr_;
    ptr_ += bytes;
    remaining_ -= bytes;
    return result;
  }
  return AllocateFallback(bytes);
}

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_ARENA_H_
