#include "store/table/table.h"

#include <cassert>
#include <cstring>

#include "store/table/block_cache.h"
#include "store/table/bloom_filter.h"

namespace tabletfs {

namespace {

// A handle from the footer or the index must lie before `limit` (the
// footer), so a damaged handle never sends a read past the table.
Status CheckHandle(const BlockHandle& handle, uint64_t limit,
                   std::string_view file_name, std::string_view what) {
  if (handle.offset > limit || handle.size > limit ||
      handle.offset + handle.size + kBlockTrailerSize > limit) {
    return Status::Corruption(
        std::string(file_name) + ": " + std::string(what),
        "block handle (offset " + std::to_string(handle.offset) + ", size " +
            std::to_string(handle.size) + ") past the data end " +
            std::to_string(limit));
  }
  return Status::OK();
}

Result<std::shared_ptr<const Block>> ReadAndParseBlock(
    const RandomAccessFile& file,
    const std::shared_ptr<const std::string>& file_name,
    const BlockHandle& handle, uint32_t format_version) {
  TABLETFS_ASSIGN_OR_RETURN(
      BlockContents contents,
      ReadBlockContents(file, *file_name, handle, format_version));
  return Block::Create(std::move(contents), file_name, handle.offset);
}

}  // namespace

Result<std::shared_ptr<Table>> Table::Open(
    const TableOptions& options, std::unique_ptr<RandomAccessFile> file,
    uint64_t file_size, uint64_t cache_id, std::string file_name) {
  if (file_size < Footer::kEncodedLength) {
    return Status::Corruption(file_name,
                              "file of " + std::to_string(file_size) +
                                  " bytes is too short to be an SSTable");
  }
  const uint64_t footer_offset = file_size - Footer::kEncodedLength;
  char footer_buf[Footer::kEncodedLength];
  std::string_view footer_data;
  Status s = file->Read(footer_offset, Footer::kEncodedLength, &footer_data,
                        footer_buf);
  if (!s.ok()) return s.WithContext(file_name + ": reading the footer");
  Footer footer;
  TABLETFS_RETURN_IF_ERROR(
      footer.DecodeFrom(footer_data, file_name, footer_offset));

  TABLETFS_RETURN_IF_ERROR(
      CheckHandle(footer.index, footer_offset, file_name, "index handle"));
  auto shared_name = std::make_shared<const std::string>(file_name);
  TABLETFS_ASSIGN_OR_RETURN(std::shared_ptr<const Block> index_block,
                            ReadAndParseBlock(*file, shared_name, footer.index,
                                              footer.format_version));
  TABLETFS_ASSIGN_OR_RETURN(TableIndex index,
                            TableIndex::Decode(std::move(index_block)));
  FilterBytes filter;
  size_t filter_size = 0;
  if (footer.filter.size > 0) {
    TABLETFS_RETURN_IF_ERROR(
        CheckHandle(footer.filter, footer_offset, file_name, "filter handle"));
    TABLETFS_ASSIGN_OR_RETURN(
        std::string bytes,
        ReadBlock(*file, file_name, footer.filter, footer.format_version));
    filter_size = bytes.size();
    filter.reset(new (std::align_val_t{kFilterAlignment}) char[filter_size]);
    std::memcpy(filter.get(), bytes.data(), filter_size);
  }
  return std::shared_ptr<Table>(new Table(
      options, std::move(file), file_size, cache_id, std::move(shared_name),
      footer, std::move(index), std::move(filter), filter_size));
}

Table::Table(const TableOptions& options,
             std::unique_ptr<RandomAccessFile> file, uint64_t file_size,
             uint64_t cache_id, std::shared_ptr<const std::string> file_name,
             Footer footer, TableIndex index, FilterBytes filter,
             size_t filter_size)
    : options_(options),
      file_(std::move(file)),
      file_size_(file_size),
      cache_id_(cache_id),
      file_name_(std::move(file_name)),
      footer_(footer),
      index_(std::move(index)),
      filter_(std::move(filter)),
      filter_size_(filter_size) {}

Table::~Table() = default;

Result<std::shared_ptr<const Block>> Table::ReadDataBlock(
    const IndexEntry& entry, CacheUse use, GroupRef* ref) const {
  BlockCache* cache = options_.block_cache;
  if (!ref->valid || ref->offset != entry.group) {
    ref->group =
        cache != nullptr ? cache->Lookup(cache_id_, entry.group) : nullptr;
    ref->in_cache = ref->group != nullptr;
    // A scan or a compaction keeps no group of its own: it reads each
    // block once, in order.
    if (ref->group == nullptr && use == CacheUse::kFill) {
      ref->group = std::make_shared<BlockGroup>();
    }
    ref->offset = entry.group;
    ref->valid = true;
  }
  // A one-pass read (compaction) uses a cached block but is not counted
  // as a read's hit or miss.
  const bool count = cache != nullptr && use != CacheUse::kOnePass;
  std::shared_ptr<const Block> block =
      ref->group != nullptr ? ref->group->Find(entry.handle.offset) : nullptr;
  if (count) cache->Count(block != nullptr);
  if (block != nullptr) return block;

  const BlockHandle& handle = entry.handle;
  TABLETFS_RETURN_IF_ERROR(CheckHandle(
      handle, file_size_ - Footer::kEncodedLength, *file_name_, "index entry"));
  if (TableReadCounters* counters = options_.read_counters) {
    counters->block_reads.Add();
    counters->block_read_bytes.Add(handle.size + kBlockTrailerSize);
  }
  TABLETFS_ASSIGN_OR_RETURN(block, ReadAndParseBlock(*file_, file_name_, handle,
                                                     footer_.format_version));
  // A scan or a compaction adds nothing to a cached group. A new group
  // goes into the cache (still empty) before its first block joins it, so
  // a group another reader inserted first is the one joined.
  if (use == CacheUse::kFill && ref->group != nullptr) {
    if (cache != nullptr && !ref->in_cache) {
      ref->group = cache->Insert(cache_id_, ref->offset, ref->group);
      ref->in_cache = true;
    }
    const size_t bytes = block->size();
    if (ref->group->Add(handle.offset, &block) && cache != nullptr) {
      cache->AddCharge(cache_id_, ref->offset, ref->group.get(), bytes);
    }
  }
  return block;
}

BloomLayout Table::filter_layout() const {
  return footer_.format_version == 1 ? BloomLayout::kWholeTable
                                     : BloomLayout::kCacheLineBlocked;
}

bool Table::MayContain(std::string_view filter_key) const {
  return MayContain(BloomKey(filter_key));
}

bool Table::MayContain(const BloomKey& filter_key) const {
  if (filter_ == nullptr) return true;
  return BloomFilterMayContain(filter(), filter_key, filter_layout());
}

void Table::PrefetchFilter(const BloomKey& filter_key) const {
  if (filter_ != nullptr) {
    BloomFilterPrefetch(filter(), filter_key, filter_layout());
  }
}

uint64_t Table::ApproximateOffsetOf(std::string_view key) const {
  const size_t i = index_.Find(key);
  return i < index_.size() ? index_.entry(i).handle.offset : file_size_;
}

std::vector<std::string> Table::IndexKeys() const {
  std::vector<std::string> keys;
  keys.reserve(index_.size());
  for (size_t i = 0; i < index_.size(); ++i) keys.emplace_back(index_.key(i));
  return keys;
}

Status Table::VerifyChecksums() const {
  TABLETFS_ASSIGN_OR_RETURN(std::shared_ptr<const Block> index,
                            ReadAndParseBlock(*file_, file_name_, footer_.index,
                                              footer_.format_version));
  if (footer_.filter.size > 0) {
    Result<std::string> filter =
        ReadBlock(*file_, *file_name_, footer_.filter, footer_.format_version);
    if (!filter.ok()) return filter.status();
  }
  std::unique_ptr<Iterator> index_iter = Block::NewIterator(index);
  for (index_iter->SeekToFirst(); index_iter->Valid(); index_iter->Next()) {
    IndexEntry entry;
    if (!entry.DecodeFrom(index_iter->value())) {
      return Status::Corruption(index->context(), "bad block handle");
    }
    const BlockHandle& handle = entry.handle;
    TABLETFS_RETURN_IF_ERROR(CheckHandle(handle,
                                         file_size_ - Footer::kEncodedLength,
                                         *file_name_, "index entry"));
    TABLETFS_ASSIGN_OR_RETURN(
        std::shared_ptr<const Block> block,
        ReadAndParseBlock(*file_, file_name_, handle, footer_.format_version));
    std::unique_ptr<Iterator> it = Block::NewIterator(std::move(block));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
    }
    TABLETFS_RETURN_IF_ERROR(it->status());
  }
  return index_iter->status();
}

// Walks the index block and, for each entry, the data block it names. A
// data block that fails to read or parse stops the iterator with that
// status: skipping it would hide lost data behind a clean-looking scan.
class Table::TwoLevelIterator final : public Iterator {
 public:
  TwoLevelIterator(std::shared_ptr<const Table> table, bool fill_cache)
      : table_(std::move(table)),
        fill_cache_(fill_cache),
        index_pos_(table_->index_.size()) {}
  ~TwoLevelIterator() override {
    if (!fill_cache_) DropPagesBefore(read_end_);
  }

  bool Valid() const override {
    return status_.ok() && data_iter_ != nullptr && data_iter_->Valid();
  }
  std::string_view key() const override {
    assert(Valid());
    return data_iter_->key();
  }
  std::string_view value() const override {
    assert(Valid());
    return data_iter_->value();
  }
  Status status() const override { return status_; }

  void SeekToFirst() override {
    if (!status_.ok()) return;
    groups_stepped_ = 0;
    index_pos_ = 0;
    InitDataBlock(Move::kFirst);
    if (data_iter_ != nullptr) data_iter_->SeekToFirst();
    SkipEmptyDataBlocksForward();
  }

  void Seek(std::string_view target) override {
    if (!status_.ok()) return;
    index_pos_ = table_->index_.Find(target);
    InitDataBlock(Move::kSeek);
    if (data_iter_ != nullptr) data_iter_->Seek(target);
    SkipEmptyDataBlocksForward();
  }

  void Next() override {
    assert(Valid());
    data_iter_->Next();
    SkipEmptyDataBlocksForward();
  }

 private:
  enum class Move { kFirst, kSeek, kNext };

  // Points data_iter_ at the block index entry index_pos_ names (nullptr
  // past the last entry or on error), after `move` moved index_pos_.
  // Moving into another group is a scan's step.
  // CellCursor seeks past versions and columns as it scans, so a seek that
  // lands in the next group (skipping the rest of this one) counts as the
  // scan's step too, one within this group changes nothing, and any other
  // starts the count over.
  void InitDataBlock(Move move) {
    if (index_pos_ >= table_->index_.size()) {
      data_iter_.reset();
      return;
    }
    const IndexEntry& entry = table_->index_.entry(index_pos_);
    const BlockHandle& handle = entry.handle;
    const bool here = data_iter_ != nullptr && handle.offset == data_offset_;
    const bool same_group =
        data_iter_ != nullptr && group_.valid && entry.group == group_.offset;
    if (move == Move::kNext && !same_group) Step();
    if (move == Move::kSeek && !same_group) {
      // The next group starts after this block's end, within what is left
      // of this group: at most group_size stored bytes (a block's stored
      // bytes are at most its own, plus a trailer, past block_size).
      const bool next_group =
          data_iter_ != nullptr && entry.group >= data_end_ &&
          entry.group - data_end_ <= table_->options_.group_size;
      if (next_group) {
        Step();
      } else {
        groups_stepped_ = 0;
      }
    }
    if (here) return;
    CacheUse use = !fill_cache_                          ? CacheUse::kOnePass
                   : groups_stepped_ < kScanGroupsCached ? CacheUse::kFill
                                                         : CacheUse::kScan;
    Result<std::shared_ptr<const Block>> block =
        table_->ReadDataBlock(entry, use, &group_);
    if (!block.ok()) {
      Fail(block.status());
      return;
    }
    if (use == CacheUse::kOnePass) {
      // The blocks have their own copies: a one-pass reader gives the
      // file's pages back a megabyte at a time, not a block at a time (each
      // call unmaps, which interrupts every CPU that ran this process).
      if (handle.offset != read_end_) {  // a seek: start from here
        DropPagesBefore(read_end_);
        dropped_to_ = handle.offset;
      }
      read_end_ = handle.offset + handle.size + kBlockTrailerSize;
      if (read_end_ >= dropped_to_ + kDropBytes) DropPagesBefore(read_end_);
    }
    data_iter_ = std::make_unique<BlockIterator>(std::move(block).value());
    data_offset_ = handle.offset;
    data_end_ = handle.offset + handle.size + kBlockTrailerSize;
  }

  void SkipEmptyDataBlocksForward() {
    while (status_.ok() && (data_iter_ == nullptr || !data_iter_->Valid())) {
      if (data_iter_ != nullptr && !data_iter_->status().ok()) {
        Fail(data_iter_->status());
        return;
      }
      if (index_pos_ >= table_->index_.size()) {
        data_iter_.reset();
        return;
      }
      ++index_pos_;
      InitDataBlock(Move::kNext);
      if (data_iter_ != nullptr) data_iter_->SeekToFirst();
    }
  }

  void Step() {
    if (groups_stepped_ < kScanGroupsCached) ++groups_stepped_;
  }

  void DropPagesBefore(uint64_t end) {
    if (end > dropped_to_) {
      table_->file_->DropReadPages(dropped_to_, end - dropped_to_);
      dropped_to_ = end;
    }
  }

  void Fail(Status s) {
    status_ = std::move(s);
    data_iter_.reset();
  }

  const std::shared_ptr<const Table> table_;
  const bool fill_cache_;
  size_t index_pos_;  // The index entry of data_iter_'s block.
  // Holds its block. The concrete type: its calls are direct.
  std::unique_ptr<BlockIterator> data_iter_;
  uint64_t data_offset_ = 0;             // Of data_iter_'s block,
  uint64_t data_end_ = 0;                // and where the next one starts.
  Table::GroupRef group_;                // The group read last.
  // Steps into the next group since a seek elsewhere (at most
  // kScanGroupsCached).
  int groups_stepped_ = 0;
  // One pass (!fill_cache_): the end of the last block read, and how far
  // the file's pages have been dropped.
  static constexpr uint64_t kDropBytes = 1 << 20;
  uint64_t read_end_ = 0;
  uint64_t dropped_to_ = 0;
  Status status_;                        // Sticky: the first error.
};

std::unique_ptr<Iterator> Table::NewIterator(bool fill_cache) const {
  return std::make_unique<TwoLevelIterator>(shared_from_this(), fill_cache);
}

}  // namespace tabletfs
