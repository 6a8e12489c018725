// BlockCache: the memory-bounded cache of decoded (uncompressed) SSTable
// blocks, keyed by (cache_id, block offset), shared by every open table of a
// database.
//
// Capacity is in bytes; an entry's charge is its decoded size. The cache is
// 16 shards of capacity/16 bytes each, so a block larger than capacity/16 is
// never cached. Entries are std::shared_ptr<const Block>: an iterator
// positioned in a block holds a reference, so eviction never invalidates a
// block in use (such a block costs memory beyond the capacity until the
// iterator moves on).
//
// Each shard is one open-addressing table (linear probing, entries inline)
// and evicts by CLOCK, LevelDB's LRU's cheaper cousin: a hit sets the
// entry's reference bit (a write to the line the lookup read anyway) where
// an LRU list moves the entry and touches both neighbours; eviction sweeps
// the table, clearing set bits and evicting the first entry whose bit is
// clear, so an entry hit since the hand last passed survives one more
// sweep. A lookup costs one cache line of the table and the block's own
// (see docs/BENCHMARKS.md, "the block cache"); the node-based LRU cost four
// dependent cache misses, a sixth of a point read.
//
// cache_id: a number unique to one table file for the cache's lifetime (the
// engine uses the file number; NewId() hands out fresh ones).
//
// Thread safety: every method may be called concurrently.
#ifndef TABLETFS_STORE_TABLE_BLOCK_CACHE_H_
#define TABLETFS_STORE_TABLE_BLOCK_CACHE_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "store/table/block.h"
#include "store/util/mutex.h"
#include "store/util/thread_annotations.h"

namespace tabletfs {

class BlockCache {
 public:
  static constexpr int kShards = 16;

  explicit BlockCache(size_t capacity_bytes);
  BlockCache(const BlockCache &) = delete;
  BlockCache &operator=(const BlockCache &) = delete;

  // The cached block, or nullptr. Counts a hit or a miss when `count`
  // (a compaction's lookups are not counted: hits() and misses() describe
  // reads).
  std::shared_ptr<const Block> Lookup(uint64_t cache_id, uint64_t offset,
                                      bool count = true);
  // Inserts or replaces the block at (cache_id, offset) and evicts as
  // needed. A block larger than a shard's capacity is not kept.
  void Insert(uint64_t cache_id, uint64_t offset,
              std::shared_ptr<const Block> block);

  // A cache_id no other caller got from this cache. Starts above 2^48 so it
  // never meets a file number.
  uint64_t NewId() { return next_id_.fetch_add(1); }

  size_t capacity() const { return capacity_; }
  // Bytes held now (at most capacity() + 16 shards' rounding).
  size_t usage() const;
  // Blocks held now.
  size_t size() const;
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }

 private:
  class Shard {
   public:
    explicit Shard(size_t capacity) : capacity_(capacity) {}
    std::shared_ptr<const Block> Lookup(uint64_t cache_id, uint64_t offset,
                                        uint64_t hash) EXCLUDES(mu_);
    void Insert(uint64_t cache_id, uint64_t offset, uint64_t hash,
                std::shared_ptr<const Block> block) EXCLUDES(mu_);
    size_t usage() const EXCLUDES(mu_);
    size_t size() const EXCLUDES(mu_);

   private:
    struct Slot {
      uint64_t cache_id = 0;
      uint64_t offset = 0;
      std::shared_ptr<const Block> block;  // null: the slot is free
      size_t charge = 0;                   // block->size()
      uint32_t hash = 0;                   // the key's hash, low bits
      bool referenced = false;             // hit since the hand passed
    };
    // The slot of the key, or of the free slot where it would go.
    size_t Find(uint64_t cache_id, uint64_t offset, uint64_t hash) const
        REQUIRES(mu_);
    // Doubles the table (at half full), rehashing every entry.
    void Grow() REQUIRES(mu_);
    // Frees slot i, moving later entries of its probe run back so that
    // every entry stays reachable from its home slot. The block goes to
    // *out (destroyed by the caller after the lock is released).
    void RemoveAt(size_t i, std::shared_ptr<const Block> *out) REQUIRES(mu_);

    const size_t capacity_;
    mutable Mutex mu_;
    std::vector<Slot> slots_ GUARDED_BY(mu_);  // size a power of 2, or 0
    size_t count_ GUARDED_BY(mu_) = 0;
    size_t usage_ GUARDED_BY(mu_) = 0;
    size_t hand_ GUARDED_BY(mu_) = 0;  // CLOCK's position in slots_
  };

  Shard &ShardOf(uint64_t hash) { return *shards_[hash >> 60]; }

  const size_t capacity_;
  std::array<std::unique_ptr<Shard>, kShards> shards_;
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
  std::atomic<uint64_t> next_id_{uint64_t{1} << 48};
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_TABLE_BLOCK_CACHE_H_
