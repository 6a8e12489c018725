// TableBuilder: writes one SSTable (format: store/doc/table_format.md) from
// keys added in strictly increasing memcmp order.
//
// The builder appends to a WritableFile it does not own; after Finish() the
// caller syncs and closes the file (the builder never does). After an error
// every later Add() is ignored and Finish() returns the first error.
//
// Thread safety: one thread at a time.
#ifndef TABLETFS_STORE_TABLE_TABLE_BUILDER_H_
#define TABLETFS_STORE_TABLE_TABLE_BUILDER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "store/env.h"
#include "store/status.h"
#include "store/table/block_builder.h"
#include "store/table/bloom_filter.h"
#include "store/table/format.h"
#include "store/table/table_options.h"

namespace tabletfs {

class TableBuilder {
 public:
  // `file` must stay valid until Finish() or Abandon() returns; writing
  // starts at its current Size().
  TableBuilder(const TableOptions &options, WritableFile *file);
  TableBuilder(const TableBuilder &) = delete;
  TableBuilder &operator=(const TableBuilder &) = delete;
  // REQUIRES: Finish() or Abandon() was called (asserted).
  ~TableBuilder();

  // REQUIRES: key > every key added before (memcmp order); not finished.
  void Add(std::string_view key, std::string_view value);

  // Writes the last data block, the filter, the index and the footer.
  // REQUIRES: not finished.
  Status Finish();
  // Stops without writing the rest; the caller deletes the file.
  void Abandon();

  // The first error met, if any.
  Status status() const { return status_; }
  uint64_t NumEntries() const { return num_entries_; }
  // Bytes written so far; after Finish(), the size of the table.
  uint64_t FileSize() const { return offset_; }
  // Empty until the first Add().
  const std::string &smallest_key() const { return smallest_key_; }
  const std::string &largest_key() const { return largest_key_; }

 private:
  void FlushDataBlock();
  // Adds the pending block's index entry under `index_key`.
  void AddIndexEntry(std::string_view index_key);
  // Encodes `contents` with `compression`, appends it and its trailer, and
  // records where it went in *handle.
  void WriteBlock(std::string_view contents, Compression compression,
                  BlockHandle *handle);

  const TableOptions options_;
  WritableFile *const file_;
  uint64_t offset_;
  Status status_;
  BlockBuilder data_block_;
  BlockBuilder index_block_;
  BloomFilterBuilder filter_;
  // The block written last, whose index entry waits for the next block's
  // first key (TableOptions::index_separator), or none.
  std::optional<IndexEntry> pending_index_;
  // The group being written: its first block's offset, and its blocks and
  // their uncompressed bytes so far (0 blocks: the next block starts one).
  uint64_t group_offset_ = 0;
  size_t group_blocks_ = 0;
  size_t group_bytes_ = 0;
  std::string first_key_of_block_;
  std::string smallest_key_;
  std::string largest_key_;
  std::string scratch_;
  uint64_t num_entries_ = 0;
  bool closed_ = false;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_TABLE_TABLE_BUILDER_H_
