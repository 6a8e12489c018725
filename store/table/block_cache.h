// BlockCache: the memory-bounded cache of decoded (uncompressed) SSTable
// blocks, keyed by (cache_id, block offset), shared by every open table of a
// database.
//
// Capacity is in bytes; an entry's charge is its decoded size. The cache is
// 16 shards of capacity/16 bytes each, so a block larger than capacity/16 is
// never cached. Entries are
// std::shared_ptr<const Block>: an iterator positioned in a block holds a
// reference, so eviction never invalidates a block in use (such a block costs
// memory beyond the capacity until the iterator moves on).
//
// cache_id: a number unique to one table file for the cache's lifetime (the
// engine uses the file number; NewId() hands out fresh ones).
//
// Thread safety: every method may be called concurrently.
#ifndef TABLETFS_STORE_TABLE_BLOCK_CACHE_H_
#define TABLETFS_STORE_TABLE_BLOCK_CACHE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "store/table/block.h"
#include "store/util/lru_cache.h"

namespace tabletfs {

class BlockCache {
 public:
  explicit BlockCache(size_t capacity_bytes);
  BlockCache(const BlockCache &) = delete;
  BlockCache &operator=(const BlockCache &) = delete;

  // The cached block, or nullptr. Counts a hit or a miss.
  std::shared_ptr<const Block> Lookup(uint64_t cache_id, uint64_t offset);
  void Insert(uint64_t cache_id, uint64_t offset,
              std::shared_ptr<const Block> block);

  // A cache_id no other caller got from this cache. Starts above 2^48 so it
  // never meets a file number.
  uint64_t NewId() { return next_id_.fetch_add(1); }

  size_t capacity() const { return capacity_; }
  // Bytes held now (at most capacity() + 16 shards' rounding).
  size_t usage() const { return cache_.usage(); }
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }

 private:
  struct Key {
    uint64_t cache_id;
    uint64_t offset;
    bool operator==(const Key &) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key &k) const;
  };

  const size_t capacity_;
  ShardedLruCache<Key, std::shared_ptr<const Block>, KeyHash> cache_;
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
  std::atomic<uint64_t> next_id_{uint64_t{1} << 48};
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_TABLE_BLOCK_CACHE_H_
