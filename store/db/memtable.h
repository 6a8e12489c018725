// MemTable: the in-memory sorted buffer of recent writes (internal keys,
// see key_format.h) in a skip list over an arena.
//
// Ownership: shared (std::shared_ptr) by the engine, by readers and by
// scanners that iterate it, and by the flush that writes it out; freed when
// the last holder lets go.
//
// Thread safety: Add() by one thread at a time (the write queue's leader,
// or recovery); iterators and ApproximateMemoryUsage() from any thread,
// concurrently with Add().
#ifndef TABLETFS_STORE_DB_MEMTABLE_H_
#define TABLETFS_STORE_DB_MEMTABLE_H_

#include <atomic>
#include <memory>
#include <string_view>
#include <vector>

#include "store/db/arena.h"
#include "store/db/skiplist.h"
#include "store/util/iterator.h"

namespace tabletfs {

class MemTable {
 public:
  MemTable() : table_(KeyComparator(), &arena_) {}
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
  std::atomic<uint64_t> entries_{0};
  std::atomic<uint64_t> data_bytes_{0};
  std::atomic<uint64_t> held_value_bytes_{0};
  std::vector<std::shared_ptr<const void>> holds_;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_MEMTABLE_H_
