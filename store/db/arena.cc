#include "store/db/arena.h"

#include <algorithm>
#include <cstdint>

namespace tabletfs {

char* Arena::NewBlock(size_t bytes) {
  // Not zeroed: every byte is written before it is read.
  blocks_.push_back(std::make_unique_for_overwrite<char[]>(bytes));
  usage_.fetch_add(bytes + sizeof(char*), std::memory_order_relaxed);
  return blocks_.back().get();
}

char* Arena::AllocateFallback(size_t bytes) {
  // Large requests get their own block so the tail of the current block is
  // not wasted on them.
  if (bytes > max_block_size_ / 4) return NewBlock(bytes);
  // A block at least four times the request: the tail the current block
  // leaves is under a quarter of it.
  size_t size = next_block_size_;
  while (size < 4 * bytes) size *= 2;
  // Doubling may pass a maximum that is not a power of two; 4 * bytes is
  // within it (larger requests took their own block above).
  size = std::min(size, max_block_size_);
  next_block_size_ = std::min(2 * size, max_block_size_);
  ptr_ = NewBlock(size);
  remaining_ = size;
  char* result = ptr_;
  ptr_ += bytes;
  remaining_ -= bytes;
  return result;
}

char* Arena::AllocateAligned(size_t bytes) {
  constexpr size_t kAlign =
      alignof(std::max_align_t) > 8 ? alignof(std::max_align_t) : 8;
  size_t mod = reinterpret_cast<uintptr_t>(ptr_) & (kAlign - 1);
  size_t slop = mod == 0 ? 0 : kAlign - mod;
  if (bytes + slop <= remaining_) {
    char* result = ptr_ + slop;
    ptr_ += bytes + slop;
    remaining_ -= bytes + slop;
    return result;
  }
  // New blocks come from operator new[], aligned for any fundamental type.
  return AllocateFallback(bytes);
}

}  // namespace tabletfs
