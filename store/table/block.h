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

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "store/status.h"
#include "store/table/format.h"
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

}  // namespace tabletfs

#endif  // TABLETFS_STORE_TABLE_BLOCK_H_
