// TableOptions: how SSTables are written and read.
//
// Thread safety: plain values; the functions must be safe to call from any
// thread (compactions run in background threads).
#ifndef TABLETFS_STORE_TABLE_TABLE_OPTIONS_H_
#define TABLETFS_STORE_TABLE_TABLE_OPTIONS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "store/schema.h"
#include "store/util/striped_counter.h"

namespace tabletfs {

class BlockCache;

// What readers fetched from table files (not from the block cache): data
// blocks and their stored bytes (compressed size plus trailer). Counted
// with relaxed atomics; shared by every table opened with the options.
struct TableReadCounters {
  StripedCounter block_reads;
  StripedCounter block_read_bytes;
};

struct TableOptions {
  // Target size of an uncompressed data block, the unit compressed,
  // checksummed and decoded alone: a point read that misses the block cache
  // decodes one. A block is cut once it reaches this size, so a block
  // exceeds it by at most one entry.
  size_t block_size = 4u << 10;
  // Target size of a group: consecutive data blocks the block cache keeps
  // as one entry and a scan steps by (store/doc/table_format.md, "Blocks
  // and groups"). A group is cut after the block that reaches this size,
  // or at kMaxBlocksPerGroup blocks. At most block_size: every block is a
  // group of its own.
  size_t group_size = 16u << 10;
  // Keys between restart points in a block.
  int restart_interval = 16;
  // The format version new tables are written in (Footer::kCurrentVersion;
  // store/doc/table_format.md). Only tests of older readers set 1; readers
  // take the version from each table's footer.
  uint32_t format_version = 3;
  // 0: no filter block.
  int bloom_bits_per_key = 10;
  // Appends to *filter_keys the strings (usually prefixes of key: the row,
  // the row + column) to add to the Bloom filter. The views are read right
  // after the call returns: they must point into `key` (or into storage that
  // outlives the call). nullptr: the whole key.
  std::function<void(std::string_view key,
                     std::vector<std::string_view> *filter_keys)>
      filter_keys;
  // An index key for the boundary between two data blocks: a key k with
  // last_of_block <= k < first_of_next (a short one keeps the index small,
  // and the index is searched on every read). nullptr: last_of_block.
  // The last block's key is always its last key.
  std::function<std::string(std::string_view last_of_block,
                            std::string_view first_of_next)>
      index_separator;
  // The compression of the data block starting with first_key_of_block.
  // nullptr: none. lz4 is used only when it saves at least 1/8 of the block.
  std::function<Compression(std::string_view first_key_of_block)> compression;
  // Where readers cache decoded data blocks. nullptr: no caching. Not owned;
  // must outlive every Table opened with these options.
  BlockCache *block_cache = nullptr;
  // Counts data-block reads from files. nullptr: not counted. Not owned;
  // must outlive every Table opened with these options.
  TableReadCounters *read_counters = nullptr;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_TABLE_TABLE_OPTIONS_H_
