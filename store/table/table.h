// Table: an open, immutable SSTable (format: store/doc/table_format.md).
//
// Open() reads and verifies the footer, the index block and the filter
// block, and keeps the filter and the decoded index (TableIndex) in memory;
// data blocks are read on demand through the block cache, each verified
// against its checksum on every read from the file.
//
// References: a Table is held by std::shared_ptr: the TableCache holds one
// while the table is cached, and every iterator from NewIterator() holds one,
// so a table evicted from the cache (or whose file was deleted) stays usable
// until its last iterator is destroyed. The file is closed with the Table.
//
// Thread safety: a Table is immutable; all const methods may be called
// concurrently. Each iterator is used by one thread at a time.
#ifndef TABLETFS_STORE_TABLE_TABLE_H_
#define TABLETFS_STORE_TABLE_TABLE_H_

#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "store/env.h"
#include "store/status.h"
#include "store/table/block.h"
#include "store/table/bloom_filter.h"
#include "store/table/format.h"
#include "store/table/table_index.h"
#include "store/table/table_options.h"
#include "store/util/iterator.h"

namespace tabletfs {

class BlockGroup;

class Table : public std::enable_shared_from_this<Table> {
 public:
  // Opens the table held in `file` (file_size bytes). `cache_id` keys this
  // table's blocks in options.block_cache (see block_cache.h); `file_name`
  // goes into error messages. Errors: Corruption naming the file and the
  // offset (bad magic, checksum mismatch, malformed block), NotSupported for
  // an unknown format version, or the file's read error.
  static Result<std::shared_ptr<Table>> Open(
      const TableOptions &options, std::unique_ptr<RandomAccessFile> file,
      uint64_t file_size, uint64_t cache_id, std::string file_name);

  Table(const Table &) = delete;
  Table &operator=(const Table &) = delete;
  ~Table();

  // A two-level iterator (index -> data blocks) over every entry, in key
  // order. It holds a reference to this Table. fill_cache=false: blocks read
  // from the file are not added to the block cache, nor counted as a read's
  // hits and misses, and their pages are dropped (one pass: compactions).
  // With fill_cache, a scan stops adding to the cache once it has stepped
  // from group to group kScanGroupsCached times since it last sought
  // elsewhere (a seek into the next group is a step, one within its group
  // changes nothing): a long scan then decodes into memory it frees again at
  // once instead of evicting what point reads and short scans keep in the cache
  // (as a sequential scan of a large table uses a small ring of buffers in
  // PostgreSQL). A block that fails to read or verify makes
  // the iterator !Valid() with that status; it never skips a bad block, and
  // the error is sticky (later Seeks leave it !Valid()).
  std::unique_ptr<Iterator> NewIterator(bool fill_cache = true) const;
  static constexpr int kScanGroupsCached = 8;

  // False only when no key added to the table had `filter_key` among its
  // filter keys (TableOptions::filter_keys). True when the table has no
  // filter.
  bool MayContain(std::string_view filter_key) const;
  // The same for a key probed in many tables (hashed once per layout).
  bool MayContain(const BloomKey &filter_key) const;
  // Starts loading the part of the filter MayContain(filter_key) reads, so
  // that a read checking several tables waits for their filters together.
  void PrefetchFilter(const BloomKey &filter_key) const;

  // Reads the index, the filter and every data block from the file (not the
  // cache) and verifies their checksums and structure. Returns the first
  // error.
  Status VerifyChecksums() const;

  // The approximate file offset where `key` is or would be: the offset of
  // the first data block whose index key is >= key, or the file size past
  // the last key. For choosing tablet split points and sizing key ranges.
  uint64_t ApproximateOffsetOf(std::string_view key) const;
  // The key of every index entry (a key between each data block's last key
  // and the next block's first: TableOptions::index_separator), in order:
  // evenly spaced by bytes, for split points and row samples.
  std::vector<std::string> IndexKeys() const;

  const std::string &file_name() const { return *file_name_; }
  uint64_t file_size() const { return file_size_; }
  uint64_t cache_id() const { return cache_id_; }

 private:
  class TwoLevelIterator;

  // The filter's bytes, at a cache-line boundary: a probe of a blocked
  // filter then touches one cache line, not two.
  struct AlignedDelete {
    void operator()(char *p) const {
      ::operator delete[](p, std::align_val_t{kFilterAlignment});
    }
  };
  static constexpr size_t kFilterAlignment = 64;
  using FilterBytes = std::unique_ptr<char[], AlignedDelete>;

  Table(const TableOptions &options, std::unique_ptr<RandomAccessFile> file,
        uint64_t file_size, uint64_t cache_id,
        std::shared_ptr<const std::string> file_name, Footer footer,
        TableIndex index, FilterBytes filter, size_t filter_size);

  BloomLayout filter_layout() const;
  std::string_view filter() const { return {filter_.get(), filter_size_}; }

  // How a data block read uses the block cache (NewIterator).
  enum class CacheUse {
    kFill,     // look up, count, add what was read
    kScan,     // look up, count, add nothing
    kOnePass,  // look up, add nothing, drop the file's pages read
  };
  // The group a reader is in (valid: it has read one; offset: the
  // group's): the cache's entry (in_cache), one of its own (a point read's
  // with no cache, or before it is inserted), or none (a scan's outside
  // the cache).
  struct GroupRef {
    std::shared_ptr<BlockGroup> group;
    uint64_t offset = 0;
    bool valid = false;
    bool in_cache = false;
  };
  // The data block `entry` names: from *ref's group when it is entry's
  // group, else from the cache's or a new one (*ref then holds it), and
  // from the file when the group lacks it.
  Result<std::shared_ptr<const Block>> ReadDataBlock(const IndexEntry &entry,
                                                     CacheUse use,
                                                     GroupRef *ref) const;

  const TableOptions options_;
  const std::unique_ptr<RandomAccessFile> file_;
  const uint64_t file_size_;
  const uint64_t cache_id_;
  const std::shared_ptr<const std::string> file_name_;  // shared by blocks
  const Footer footer_;
  const TableIndex index_;
  const FilterBytes filter_;  // nullptr: no filter.
  const size_t filter_size_;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_TABLE_TABLE_H_
