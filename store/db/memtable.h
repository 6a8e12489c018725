// MemTable: the in-memory sorted buffer of recent writes (internal keys,
// see key_format.h) in a skip list over an arena.
//
// Ownership: shared (std::shared_ptr) by the engine, by readers and by
// scanners that iterate it, and by the flush that writes it out; freed when
// the last holder lets go.
//
// Thread safety: Add() by one thread at a time (the write queue's leader,
// or recovery); iterators, MayHoldRow() and ApproximateMemoryUsage() from
// any thread, concurrently with Add().
#ifndef TABLETFS_STORE_DB_MEMTABLE_H_
#define TABLETFS_STORE_DB_MEMTABLE_H_

#include <atomic>
#include <memory>
#include <string_view>
#include <vector>

#include "store/db/arena.h"
#include "store/db/skiplist.h"
#include "store/table/bloom_filter.h"
#include "store/util/iterator.h"

namespace tabletfs {

// A Bloom filter over 64-bit hashes that grows as hashes are added: segment
// i has room for kFirstHashes * 4^i of them at about 10 bits each (1 %
// false positives per segment), each in an SSTable filter's cache-line
// blocked layout (store/table/bloom_filter.h), carved from an arena. A hash
// goes into the newest segment; a probe asks every segment (at most a few: the
// 7th holds 4 M hashes). No rebuild: a memtable never pauses its writer to grow
// it.
//
// Thread safety: Add() by one thread at a time (the arena's); MayContain()
// from any thread, concurrently with Add(). The bits are atomics that the
// one writer sets with a plain load and store, and a new segment is
// published by the release of the segment count, so a probe sees every
// hash whose Add() happened before it.
class GrowingBloomFilter {
 public:
  static constexpr uint64_t kFirstHashes = 1024;

  void Add(uint64_t hash, Arena* arena);
  bool MayContain(uint64_t hash) const;

 private:
  struct Segment {
    std::atomic<uint64_t>* words = nullptr;  // blocks * 8, 64-byte aligned
    uint32_t blocks = 0;
  };
  static constexpr int kMaxSegments = 12;

  Segment segments_[kMaxSegments];
  std::atomic<int> count_{0};
  uint64_t room_ = 0;  // hashes the newest segment can still take
};

class MemTable {
 public:
  // `arena_max_block`: the largest block its arena allocates (Arena).
  explicit MemTable(size_t arena_max_block = Arena::kFirstBlockSize)
      : arena_(arena_max_block), table_(KeyComparator(), &arena_) {}
  MemTable(const MemTable&) = delete;
  MemTable& operator=(const MemTable&) = delete;

  // REQUIRES: `key` is not in the table yet (sequence numbers are unique).
  void Add(std::string_view key, std::string_view value);

  // Bytes held (arena blocks).
  size_t ApproximateMemoryUsage() const { return arena_.MemoryUsage(); }

  // Keeps `hold` alive as long as the memtable (the value file its value
  // references point into: DBImpl::ValueFileHold) and charges the memtable
  // `value_bytes` more, the values it references there. By Add()'s thread.
  void Hold(const std::shared_ptr<const void>& hold, uint64_t value_bytes) {
    if (holds_.empty() || holds_.back() != hold) holds_.push_back(hold);
    held_value_bytes_.fetch_add(value_bytes, std::memory_order_relaxed);
  }
  // What a flush frees: the arena and the values held in value files (a
  // memtable of value references is flushed as if it held the values, so
  // the files they pin are not kept for ever).
  uint64_t ChargedBytes() const {
    return arena_.MemoryUsage() +
           held_value_bytes_.load(std::memory_order_relaxed);
  }
  // False only when no entry of the row whose row prefix (be32(table id)
  // enc(row), store/doc/key_format.md: it begins every key of the row) is
  // `row_prefix` was added (by an Add() that happened before this call);
  // true for about 1 % of the rows not added. A point read skips the skip
  // list of a memtable that does not hold its row. The key is hashed as
  // for an SSTable's filter, so a read hashes its row once for both.
  bool MayHoldRow(const BloomKey& row_prefix) const {
    return rows_.MayContain(row_prefix.hash(BloomLayout::kCacheLineBlocked));
  }

  // Entries added.
  uint64_t entries() const { return entries_.load(std::memory_order_relaxed); }
  // Bytes of the keys and values added (what a flush writes, before
  // compression): the memtable's share of its tablet's size.
  uint64_t data_bytes() const {
    return data_bytes_.load(std::memory_order_relaxed);
  }

  // An iterator over the entries; the caller must keep `self` alive (the
  // iterator holds a reference). Keys and values stay valid as long as the
  // memtable does.
  static std::unique_ptr<Iterator> NewIterator(std::shared_ptr<MemTable> self);

 private:
  struct KeyComparator {
    int operator()(const char* a, const char* b) const;
  };
  using Table = SkipList<const char*, KeyComparator>;
  class MemIterator;

  Arena arena_;
  Table table_;
  GrowingBloomFilter rows_;  // the entries' row prefixes, hashed as BloomKey
  // The row of the entry added last: a mutation's entries come together,
  // and one hash per row is enough.
  uint64_t last_row_hash_ = 0;
  bool any_row_ = false;
  std::atomic<uint64_t> entries_{0};
  std::atomic<uint64_t> data_bytes_{0};
  std::atomic<uint64_t> held_value_bytes_{0};
  std::vector<std::shared_ptr<const void>> holds_;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_MEMTABLE_H_
