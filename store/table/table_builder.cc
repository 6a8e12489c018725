#include "store/table/table_builder.h"

#include <cassert>
#include <vector>

namespace tabletfs {

TableBuilder::TableBuilder(const TableOptions& options, WritableFile* file)
    : options_(options),
      file_(file),
      offset_(file->Size()),
      data_block_(options.restart_interval),
      // The index is small and searched once per table read: a restart at
      // every entry makes Seek a pure binary search.
      index_block_(1),
      filter_(options.bloom_bits_per_key > 0 ? options.bloom_bits_per_key : 1,
              options.format_version == 1 ? BloomLayout::kWholeTable
                                          : BloomLayout::kCacheLineBlocked) {
  assert(options.format_version >= Footer::kOldestVersion &&
         options.format_version <= Footer::kCurrentVersion);
}

TableBuilder::~TableBuilder() { assert(closed_); }

void TableBuilder::Add(std::string_view key, std::string_view value) {
  assert(!closed_);
  assert(num_entries_ == 0 || key > std::string_view(largest_key_));
  if (!status_.ok()) return;
  if (num_entries_ == 0) smallest_key_.assign(key);
  if (pending_index_.has_value()) {
    // largest_key_ is still the last key of the block written last.
    if (options_.index_separator) {
      const std::string separator = options_.index_separator(largest_key_, key);
      assert(std::string_view(separator) < key);
      AddIndexEntry(separator);
    } else {
      AddIndexEntry(largest_key_);
    }
  }
  if (data_block_.empty()) first_key_of_block_.assign(key);
  if (options_.bloom_bits_per_key > 0) {
    if (options_.filter_keys) {
      std::vector<std::string_view> filter_keys;
      options_.filter_keys(key, &filter_keys);
      for (std::string_view k : filter_keys) filter_.AddKey(k);
    } else {
      filter_.AddKey(key);
    }
  }
  data_block_.Add(key, value);
  largest_key_.assign(key);
  ++num_entries_;
  if (data_block_.CurrentSizeEstimate() >= options_.block_size) {
    FlushDataBlock();
  }
}

void TableBuilder::FlushDataBlock() {
  if (data_block_.empty() || !status_.ok()) return;
  Compression compression = options_.compression
                                ? options_.compression(first_key_of_block_)
                                : Compression::kNone;
  const std::string_view contents = data_block_.Finish();
  IndexEntry entry;
  WriteBlock(contents, compression, &entry.handle);
  if (!status_.ok()) return;
  if (group_blocks_ == 0) group_offset_ = entry.handle.offset;
  // Before version 3 an index value is the bare handle: every block is a
  // group of its own.
  entry.group =
      options_.format_version >= 3 ? group_offset_ : entry.handle.offset;
  group_bytes_ += contents.size();
  if (++group_blocks_ == kMaxBlocksPerGroup ||
      group_bytes_ >= options_.group_size) {
    group_blocks_ = 0;
    group_bytes_ = 0;
  }
  // The index maps a key between each block's last key and the next
  // block's first to the block: the first block whose index key is >= a
  // target is the only one that can hold the target. The entry waits for
  // the next block's first key (Add) or the table's end (Finish).
  pending_index_ = entry;
  data_block_.Reset();
}

void TableBuilder::AddIndexEntry(std::string_view index_key) {
  assert(index_key >= std::string_view(largest_key_));
  std::string encoded;
  pending_index_->EncodeTo(&encoded);
  index_block_.Add(index_key, encoded);
  pending_index_.reset();
}

void TableBuilder::WriteBlock(std::string_view contents,
                              Compression compression, BlockHandle* handle) {
  scratch_.clear();
  EncodeBlock(contents, compression, options_.format_version, &scratch_);
  handle->offset = offset_;
  handle->size = scratch_.size() - kBlockTrailerSize;
  status_ = file_->Append(scratch_);
  if (status_.ok()) offset_ += scratch_.size();
}

Status TableBuilder::Finish() {
  assert(!closed_);
  FlushDataBlock();
  if (pending_index_.has_value() && status_.ok()) {
    AddIndexEntry(largest_key_);
  }
  closed_ = true;
  Footer footer;
  footer.format_version = options_.format_version;
  if (status_.ok() && options_.bloom_bits_per_key > 0) {
    WriteBlock(filter_.Finish(), Compression::kNone, &footer.filter);
  }
  if (status_.ok()) {
    WriteBlock(index_block_.Finish(), Compression::kNone, &footer.index);
  }
  if (status_.ok()) {
    std::string encoded;
    footer.EncodeTo(&encoded);
    status_ = file_->Append(encoded);
    if (status_.ok()) offset_ += encoded.size();
  }
  return status_;
}

void TableBuilder::Abandon() {
  assert(!closed_);
  closed_ = true;
}

}  // namespace tabletfs
