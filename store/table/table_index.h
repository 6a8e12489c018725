// TableIndex: a table's index block, decoded once when the table opens, and
// searched by every read of the table.
//
// The index block (store/doc/table_format.md) is a block of index keys and
// IndexEntry values. Searched as a block, a seek in a table of 12,000 data
// blocks is a binary search of 14 probes, each decoding an entry at a
// random place in about half a megabyte: most probes miss the CPU's L1 and
// L2 caches. Decoded, the search runs first over a dense array of 8-byte
// words, one per entry: the bytes of its key after the prefix every key in
// the table shares, as a big-endian number. The words sort as their keys do
// (a shorter key is padded with zeros, which sorts before any byte), so the
// binary search over words narrows the answer to the entries whose words
// equal the target's, and the keys decide only among those.
//
// Thread safety: immutable after Decode; any number of threads may read.
#ifndef TABLETFS_STORE_TABLE_TABLE_INDEX_H_
#define TABLETFS_STORE_TABLE_TABLE_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "store/status.h"
#include "store/table/block.h"
#include "store/table/format.h"

namespace tabletfs {

class TableIndex {
 public:
  // Decodes every entry of `index_block`. Errors: Corruption naming the
  // block for a malformed entry, a value that is not an IndexEntry, or keys
  // out of order.
  static Result<TableIndex> Decode(std::shared_ptr<const Block> index_block);

  size_t size() const { return entries_.size(); }
  std::string_view key(size_t i) const {
    const uint32_t begin = i == 0 ? 0 : key_ends_[i - 1];
    return std::string_view(keys_).substr(begin, key_ends_[i] - begin);
  }
  const IndexEntry &entry(size_t i) const { return entries_[i]; }

  // The first entry whose key is >= target; size() when there is none.
  size_t Find(std::string_view target) const;

 private:
  uint64_t Word(std::string_view key_after_prefix) const;

  std::string keys_;                // every key, in order, concatenated
  std::vector<uint32_t> key_ends_;  // where each key ends in keys_
  std::vector<IndexEntry> entries_;
  std::string prefix_;  // the prefix every key shares
  std::vector<uint64_t> words_;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_TABLE_TABLE_INDEX_H_
