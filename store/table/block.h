// Block: an immutable, decoded (uncompressed) block of an SSTable, and the
// iterator over it. Data blocks and the index block share this format.
//
// Blocks are shared: the block cache, the Table (its index block) and every
// iterator positioned in a block hold a std::shared_ptr<const Block>; the
// bytes stay valid while any holder remains.
//
// Thread safety: a Block is immutable and may be read from many threads; each
// iterator is used by one thread at a time.
#ifndef TABLETFS_STORE_TABLE_BLOCK_H_
#define TABLETFS_STORE_TABLE_BLOCK_H_

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "store/status.h"
#include "store/table/format.h"
#include "store/util/coding.h"
#include "store/util/iterator.h"

namespace tabletfs {

class Block {
 public:
  // Checks the restart array. The block's context, "<file>: block at
  // offset N", is prefixed to every Corruption reported about it; a block
  // keeps only the shared file name and the offset, and spells the context
  // out when it reports one (a cache miss makes a block: no string each).
  static Result<std::shared_ptr<const Block>> Create(
      BlockContents contents, std::shared_ptr<const std::string> file_name,
      uint64_t offset);
  // `context` as given (tests, and blocks that are not a table's).
  static Result<std::shared_ptr<const Block>> Create(std::string_view contents,
                                                     std::string context);

  Block(const Block &) = delete;
  Block &operator=(const Block &) = delete;

 private:
  // Only Create makes blocks. std::make_shared (one allocation for a block
  // and its reference counts, where new and shared_ptr took two: a cache
  // miss makes a block) needs a public constructor; this key, private,
  // keeps it Create's.
  struct CreateKey {
    explicit CreateKey() = default;
  };

 public:
  Block(CreateKey, BlockContents contents,
        std::shared_ptr<const std::string> file_name, uint64_t offset,
        uint32_t restart_offset, uint32_t num_restarts);

  // Bytes held (the cache's charge). The buffer may hold up to 255 more
  // (BlockBuffer's classes).
  size_t size() const { return contents_.size; }
  // Restart points: the entries, in a block with a restart at every entry
  // (an index block).
  uint32_t num_restarts() const { return num_restarts_; }
  std::string context() const;

  // An iterator over the block that holds a reference to it, so it stays
  // valid however long the caller keeps it. A malformed entry makes the
  // iterator !Valid() with a Corruption status naming the block.
  static std::unique_ptr<Iterator> NewIterator(
      std::shared_ptr<const Block> block);

 private:
  friend class BlockIterator;

  // kNoOffset: *name_ is the whole context.
  static constexpr uint64_t kNoOffset = ~uint64_t{0};

  const BlockContents contents_;
  const std::shared_ptr<const std::string> name_;
  const uint64_t offset_;
  const uint32_t restart_offset_;  // Offset of the restart array in data_.
  const uint32_t num_restarts_;
};

// The current key of a BlockIterator, rebuilt from a shared prefix of the
// previous one. Keys up to kInline bytes (every key of a typical row) stay in
// the iterator: a point read makes a few iterators, and an allocation for
// each one's key was a tenth of its allocations.
class BlockKeyBuffer {
 public:
  BlockKeyBuffer() = default;
  BlockKeyBuffer(const BlockKeyBuffer&) = delete;
  BlockKeyBuffer& operator=(const BlockKeyBuffer&) = delete;

  std::string_view view() const { return {data_, size_}; }
  size_t size() const { return size_; }
  void clear() { size_ = 0; }
  // Keeps the first n bytes, appends `more`. REQUIRES: n <= size().
  void Rebuild(size_t n, std::string_view more) {
    assert(n <= size_);
    const size_t need = n + more.size();
    if (need > capacity_) {
      const size_t capacity = std::max(need, 2 * capacity_);
      auto grown = std::make_unique_for_overwrite<char[]>(capacity);
      std::memcpy(grown.get(), data_, n);
      heap_ = std::move(grown);
      data_ = heap_.get();
      capacity_ = capacity;
    }
    std::memcpy(data_ + n, more.data(), more.size());
    size_ = need;
  }

 private:
  static constexpr size_t kInline = 80;
  char inline_[kInline];
  std::unique_ptr<char[]> heap_;
  char* data_ = inline_;
  size_t capacity_ = kInline;
  size_t size_ = 0;
};

// The iterator over a block (Block::NewIterator makes one). It is in the
// header so that a table's iterator, which holds one, calls it directly: a
// scan steps it for every entry, and the virtual calls of a stack of
// iterators were a tenth of a scan's time (docs/BENCHMARKS.md,
// twenty-fourth session). Entries are parsed lazily as the iterator moves;
// every length is checked against the block's bounds, so a corrupt block
// yields a Corruption status, never a read outside the block.
class BlockIterator final : public Iterator {
 public:
  static constexpr uint32_t kPrefetchRestarts = 32;

  explicit BlockIterator(std::shared_ptr<const Block> block)
      : block_(std::move(block)),
        data_(block_->contents_.data.get()),
        limit_(block_->restart_offset_),
        current_(limit_),
        next_(limit_) {}

  bool Valid() const override { return current_ < limit_; }
  Status status() const override { return status_; }
  std::string_view key() const override {
    assert(Valid());
    return key_.view();
  }
  std::string_view value() const override {
    assert(Valid());
    return value_;
  }

  void SeekToFirst() override {
    if (!status_.ok()) return;
    SeekToRestart(0);
    ParseNext();
  }

  void Next() override {
    assert(Valid());
    ParseNext();
  }

  void Seek(std::string_view target) override {
    if (!status_.ok()) return;
    // Binary search for the last restart point whose key is < target, then
    // scan forward from it.
    uint32_t left = 0;
    uint32_t right = block_->num_restarts_ - 1;
    if (right < kPrefetchRestarts) {
      // A data block not read lately is cold: each restart key the search
      // reads would be a cache miss after the one before. Asked for
      // together, the misses overlap (a data block has about 8 restarts;
      // an index block has too many to fetch them all).
      for (uint32_t i = 0; i <= right; ++i) {
        __builtin_prefetch(data_ + RestartPoint(i));  // never faults
      }
    }
    while (left < right) {
      uint32_t mid = (left + right + 1) / 2;
      std::string_view mid_key;
      if (!RestartKey(mid, &mid_key)) return;
      if (mid_key < target) {
        left = mid;
      } else {
        right = mid - 1;
      }
    }
    SeekToRestart(left);
    while (ParseNext() && key_.view() < target) {
    }
  }

 private:
  uint32_t RestartPoint(uint32_t index) const {
    return DecodeFixed32(data_ + limit_ + 4 * index);
  }

  void SeekToRestart(uint32_t index) {
    key_.clear();
    next_ = RestartPoint(index);
    current_ = limit_;
  }

  // The whole key stored at a restart point (shared length must be 0).
  bool RestartKey(uint32_t index, std::string_view* key) {
    uint32_t offset = RestartPoint(index);
    uint64_t shared, non_shared, value_len;
    std::string_view in;
    if (offset >= limit_ ||
        !DecodeHeader(offset, &shared, &non_shared, &value_len, &in) ||
        shared != 0) {
      return Fail("bad restart point " + std::to_string(index));
    }
    *key = in.substr(0, non_shared);
    return true;
  }

  // Parses the lengths of the entry at `offset`; *rest starts at its key
  // delta and is known to hold key delta and value.
  bool DecodeHeader(uint32_t offset, uint64_t* shared, uint64_t* non_shared,
                    uint64_t* value_len, std::string_view* rest) const {
    std::string_view in(data_ + offset, limit_ - offset);
    if (!GetVarint64(&in, shared) || !GetVarint64(&in, non_shared) ||
        !GetVarint64(&in, value_len)) {
      return false;
    }
    if (*non_shared > in.size() || *value_len > in.size() - *non_shared) {
      return false;
    }
    *rest = in;
    return true;
  }

  // Moves to the entry at next_. False at the end or on corruption.
  bool ParseNext() {
    current_ = next_;
    if (current_ >= limit_) {
      current_ = limit_;
      return false;
    }
    uint64_t shared, non_shared, value_len;
    std::string_view in;
    if (!DecodeHeader(current_, &shared, &non_shared, &value_len, &in) ||
        shared > key_.size()) {
      return Fail("bad entry at block offset " + std::to_string(current_));
    }
    key_.Rebuild(shared, in.substr(0, non_shared));
    value_ = in.substr(non_shared, value_len);
    next_ = static_cast<uint32_t>(value_.data() + value_.size() - data_);
    return true;
  }

  bool Fail(const std::string& what) {
    status_ = Status::Corruption(block_->context(), what);
    current_ = next_ = limit_;
    key_.clear();
    value_ = {};
    return false;
  }

  const std::shared_ptr<const Block> block_;
  const char* const data_;
  const uint32_t limit_;  // End of the entries (start of the restarts).
  uint32_t current_;      // Offset of the current entry; limit_: invalid.
  uint32_t next_;         // Offset of the entry after it.
  BlockKeyBuffer key_;
  std::string_view value_;
  Status status_;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_TABLE_BLOCK_H_
