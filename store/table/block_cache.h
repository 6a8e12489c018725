// BlockCache: the memory-bounded cache of decoded (uncompressed) SSTable
// data blocks, keyed by (cache_id, group offset), shared by every open table
// of a database. An entry is a BlockGroup: the blocks of one group
// (TableOptions::group_size, consecutive blocks of ~16 KiB in all) that
// readers have decoded so far. A point read decodes the one block it needs
// and a scan every block in turn, but both pay one lookup per group and one
// insertion per group missed, then a charge (AddCharge) per further block
// added (store/doc/table_format.md, "Blocks and groups").
//
// Capacity is in bytes; an entry's charge is the decoded size of the blocks
// it holds, raised (AddCharge) as blocks join it. The cache is 16 shards of
// capacity/16 bytes each, so a group larger than capacity/16 is not kept.
// Entries are std::shared_ptr: an iterator holds its block and its group,
// so eviction never invalidates a block in use (such a group costs memory
// beyond the capacity until the iterator moves on to another group; the
// blocks it adds meanwhile are charged to no one).
//
// Each shard is one open-addressing table (linear probing, entries inline)
// and evicts by CLOCK, LevelDB's LRU's cheaper cousin: a hit sets the
// entry's reference bit (a write to the line the lookup read anyway) where
// an LRU list moves the entry and touches both neighbours; eviction sweeps
// the table, clearing set bits and evicting the first entry whose bit is
// clear, so an entry hit since the hand last passed survives one more
// sweep. A lookup costs one cache line of the table and the group's own
// (see docs/BENCHMARKS.md, "the block cache"); the node-based LRU cost four
// dependent cache misses, a sixth of a point read.
//
// cache_id: a number unique to one table file for the cache's lifetime (the
// engine uses the file number; NewId() hands out fresh ones).
//
// Thread safety: every method of both classes may be called concurrently.
#ifndef TABLETFS_STORE_TABLE_BLOCK_CACHE_H_
#define TABLETFS_STORE_TABLE_BLOCK_CACHE_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "store/table/block.h"
#include "store/table/format.h"
#include "store/util/mutex.h"
#include "store/util/striped_counter.h"
#include "store/util/thread_annotations.h"

namespace tabletfs {

// The decoded blocks of one group, each keyed by its file offset. Blocks
// join as readers decode them; none leaves before the group is destroyed.
class BlockGroup {
 public:
  BlockGroup() = default;
  BlockGroup(const BlockGroup &) = delete;
  BlockGroup &operator=(const BlockGroup &) = delete;

  // The block at `offset`, or nullptr.
  std::shared_ptr<const Block> Find(uint64_t offset) const EXCLUDES(mu_);
  // Adds *block at `offset` and returns true, unless the group already
  // holds a block there (another reader decoded it first: *block becomes
  // that one) or kMaxBlocksPerGroup blocks (*block is left as is).
  bool Add(uint64_t offset, std::shared_ptr<const Block> *block) EXCLUDES(mu_);
  // Decoded bytes held.
  size_t size() const EXCLUDES(mu_);

 private:
  struct Entry {
    uint64_t offset = 0;
    std::shared_ptr<const Block> block;
  };
  mutable Mutex mu_;
  std::array<Entry, kMaxBlocksPerGroup> blocks_ GUARDED_BY(mu_);
  size_t count_ GUARDED_BY(mu_) = 0;
  size_t bytes_ GUARDED_BY(mu_) = 0;
};

class BlockCache {
 public:
  static constexpr int kShards = 16;

  explicit BlockCache(size_t capacity_bytes);
  BlockCache(const BlockCache &) = delete;
  BlockCache &operator=(const BlockCache &) = delete;

  // The cached group, or nullptr. Counts nothing: a reader counts whether
  // the block it wanted was there (Count).
  std::shared_ptr<BlockGroup> Lookup(uint64_t cache_id, uint64_t offset);
  // Inserts the group at (cache_id, offset), charged its size() now, and
  // evicts as needed; returns it. If a group is there already (another
  // reader missed it at the same time and inserted first) that one stays
  // and is returned: both hold the same table's blocks, and the caller
  // adds its own to it. A group larger than a shard's capacity is not
  // kept (and is returned).
  std::shared_ptr<BlockGroup> Insert(uint64_t cache_id, uint64_t offset,
                                     std::shared_ptr<BlockGroup> group);
  // Raises the charge of the entry at (cache_id, offset) by `bytes` (a
  // block joined it) and evicts as needed; nothing if that entry is not
  // `group` (it was evicted or replaced: its memory is its holders' now).
  void AddCharge(uint64_t cache_id, uint64_t offset, const BlockGroup *group,
                 size_t bytes);
  // Counts a read's hit (the block was cached) or miss.
  void Count(bool hit) { (hit ? hits_ : misses_).Add(); }

  // A cache_id no other caller got from this cache. Starts above 2^48 so it
  // never meets a file number.
  uint64_t NewId() { return next_id_.fetch_add(1); }

  size_t capacity() const { return capacity_; }
  // Bytes held now (at most capacity() + 16 shards' rounding).
  size_t usage() const;
  // Groups held now.
  size_t size() const;
  uint64_t hits() const { return hits_.Load(); }
  uint64_t misses() const { return misses_.Load(); }

 private:
  class Shard {
   public:
    explicit Shard(size_t capacity) : capacity_(capacity) {}
    std::shared_ptr<BlockGroup> Lookup(uint64_t cache_id, uint64_t offset,
                                       uint64_t hash) EXCLUDES(mu_);
    std::shared_ptr<BlockGroup> Insert(uint64_t cache_id, uint64_t offset,
                                       uint64_t hash,
                                       std::shared_ptr<BlockGroup> group)
        EXCLUDES(mu_);
    void AddCharge(uint64_t cache_id, uint64_t offset, uint64_t hash,
                   const BlockGroup *group, size_t bytes) EXCLUDES(mu_);
    size_t usage() const EXCLUDES(mu_);
    size_t size() const EXCLUDES(mu_);

   private:
    struct Slot {
      uint64_t cache_id = 0;
      uint64_t offset = 0;
      std::shared_ptr<BlockGroup> group;  // null: the slot is free
      size_t charge = 0;  // group->size() at insertion, plus AddCharge
      uint32_t hash = 0;                   // the key's hash, low bits
      bool referenced = false;             // hit since the hand passed
    };
    // The slot of the key, or of the free slot where it would go.
    size_t Find(uint64_t cache_id, uint64_t offset, uint64_t hash) const
        REQUIRES(mu_);
    // Doubles the table (at half full), rehashing every entry.
    void Grow() REQUIRES(mu_);
    // Frees slot i, moving later entries of its probe run back so that
    // every entry stays reachable from its home slot. The group goes to
    // *out (destroyed by the caller after the lock is released).
    void RemoveAt(size_t i, std::shared_ptr<BlockGroup> *out) REQUIRES(mu_);
    // Evicts by CLOCK until usage_ is within capacity_; the groups removed
    // go to *out (a Dropped, see block_cache.cc).
    template <typename Out>
    void EvictToCapacity(Out *out) REQUIRES(mu_);

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
  // Counted by reads on many threads at once.
  StripedCounter hits_;
  StripedCounter misses_;
  std::atomic<uint64_t> next_id_{uint64_t{1} << 48};
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_TABLE_BLOCK_CACHE_H_
