// DBImpl: the read path. Pinning the tablets a read needs, the cursors
// over their memtables and files, ReadRow, ReadCell, scanners and
// snapshots.
#include <algorithm>

#include "store/db/db_impl.h"
#include "store/db/level_iterator.h"
#include "store/db/merger.h"
#include "store/util/coding.h"

namespace tabletfs {

// ---------------------------------------------------------------------------
// Snapshots and scanners
// ---------------------------------------------------------------------------

class DBImpl::SnapshotImpl final : public Snapshot {
 public:
  SnapshotImpl(DBImpl* db, uint64_t seq) : db_(db), seq_(seq) {}
  ~SnapshotImpl() override { db_->ReleaseSnapshot(seq_); }
  uint64_t seq() const { return seq_; }

 private:
  DBImpl* const db_;
  const uint64_t seq_;
};

class DBImpl::ScannerImpl final : public Scanner {
 public:
  ScannerImpl(DBImpl* db, ReadState state, std::unique_ptr<CellCursor> cursor)
      : db_(db), state_(std::move(state)), cursor_(std::move(cursor)) {}

  void Seek(std::string_view row, std::string_view family,
            std::string_view qualifier) override {
    cursor_->Seek(row, family, qualifier);
  }
  void SeekToFirst() override { cursor_->SeekToFirst(); }
  bool Valid() const override { return cursor_->Valid(); }
  void Next() override { cursor_->Next(); }
  void NextColumn() override { cursor_->NextColumn(); }
  void NextFamily() override { cursor_->NextFamily(); }
  void NextRow() override { cursor_->NextRow(); }
  std::string_view row() const override { return cursor_->row(); }
  std::string_view family() const override { return cursor_->family(); }
  std::string_view qualifier() const override { return cursor_->qualifier(); }
  int64_t timestamp() const override { return cursor_->timestamp(); }
  uint64_t value_size() const override {
    if (cursor_->kind() == EntryKind::kPut) return cursor_->raw_value().size();
    return DBImpl::ValueRefSize(cursor_->raw_value());
  }
  Result<std::string_view> value() override {
    if (cursor_->kind() == EntryKind::kPut) return cursor_->raw_value();
    Result<std::string> v =
        db_->LoadValue(cursor_->kind(), cursor_->raw_value());
    if (!v.ok()) return v.status();
    loaded_ = std::move(*v);
    return std::string_view(loaded_);
  }
  Status status() const override { return cursor_->status(); }

 private:
  DBImpl* const db_;
  ReadState state_;  // pins the memtables and files the cursor reads
  std::unique_ptr<CellCursor> cursor_;
  std::string loaded_;
};

// ---------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------

void DBImpl::ReadState::Unpin() {
  table.reset();
  for (auto& v : tablets) v.reset();
}

Status DBImpl::PinReadState(std::string_view table, const ReadOptions& options,
                            std::string_view first_row,
                            std::string_view end_row, bool one_row,
                            ReadState* out) {
  ReadState& state = *out;
  const SnapshotImpl* snap = nullptr;
  if (options.snapshot != nullptr) {
    snap = dynamic_cast<const SnapshotImpl*>(options.snapshot);
    if (snap == nullptr) {
      return Status::InvalidArgument("snapshot from another database");
    }
  }
  MutexLock l(&mu_);
  auto it = tables_.find(table);
  if (it == tables_.end()) return Status::NotFound("no such table", table);
  state.table = it->second;
  uint32_t id = state.table->id;
  // The thread's (a read's row prefix is longer than a short string's 15
  // bytes: one allocation per read saved).
  thread_local std::string lo;
  lo.clear();
  if (first_row.empty()) {
    lo = TableLowKey(id);
  } else {
    AppendRowPrefix(&lo, id, first_row);
  }
  size_t pinned = 0;
  auto pin = [&state, &pinned](const Tablet& t) {
    if (pinned == state.tablets.size()) state.tablets.emplace_back();
    state.tablets[pinned++] = t.view;
  };
  if (one_row) {
    pin(*FindTablet(id, lo));
  } else {
    const std::string hi =
        end_row.empty() ? TableHighKey(id) : RowPrefix(id, end_row);
    for (const auto& t : table_tablets_[id]) {
      if (t->lo < hi && lo < t->hi) pin(*t);
    }
  }
  state.tablets.resize(pinned);
  // Not last_seq_: UpdateFamily may have raised it into the group being
  // written, whose later entries are not in the memtables yet.
  state.view_seq = snap != nullptr ? snap->seq() : SequenceBeforeUnwritten();
  state.epoch_view = snap != nullptr ? snap->seq() : kMaxSequence;
  return Status::OK();
}

std::unique_ptr<Iterator> DBImpl::NewTabletIterator(const TabletView& view) {
  std::vector<std::unique_ptr<Iterator>> children;
  // An empty memtable holds nothing the view sees (as in StartPointCursor:
  // every entry up to view_seq was added before PinReadState took mu_).
  // Left out, a tablet whose data is all in one level is read through that
  // level's iterator alone, with no merge above it.
  for (const auto& m : view.mems) {
    if (m->entries() > 0) children.push_back(MemTable::NewIterator(m));
  }
  for (int level = 0; level < Version::kNumLevels; ++level) {
    const auto& files = view.version->levels[level];
    if (files.empty()) continue;
    if (level == 0 || files.size() == 1) {
      for (const auto& f : files) {
        Result<std::shared_ptr<Table>> t =
            table_cache_->Get(f->number, f->size);
        children.push_back(t.ok() ? (*t)->NewIterator()
                                  : NewEmptyIterator(t.status()));
      }
    } else {
      // Disjoint files of one level: one child that opens a file at a
      // time, so a seek touches one file of the level, not all of them.
      children.push_back(NewLevelIterator(
          files, [this](const FileMeta& f) -> std::unique_ptr<Iterator> {
            Result<std::shared_ptr<Table>> t =
                table_cache_->Get(f.number, f.size);
            if (!t.ok()) return NewEmptyIterator(t.status());
            return (*t)->NewIterator();
          }));
    }
  }
  return NewMergingIterator(std::move(children));
}

std::unique_ptr<CellCursor> DBImpl::NewCursor(const ReadState& state,
                                              const ReadOptions& options,
                                              std::string start_row,
                                              std::string end_row,
                                              std::string prefix) {
  // Tablets in row order, each clipped to its range: the scan crosses
  // their boundaries in order and opens a tablet only when it gets there.
  std::vector<IteratorSegment> segments;
  for (const std::shared_ptr<const TabletView>& view : state.tablets) {
    segments.push_back({view->lo, view->hi,
                        [this, view] { return NewTabletIterator(*view); }});
  }
  CursorOptions co;
  co.view_seq = state.view_seq;
  co.epoch_view_seq = state.epoch_view;
  co.now_micros = state.table->CollectsByAge() ? env_->NowMicros() : 0;
  co.at = options.at;
  co.max_versions = options.max_versions;
  co.families = options.families;
  co.columns = options.columns;
  co.start_row = std::move(start_row);
  co.end_row = std::move(end_row);
  co.prefix = std::move(prefix);
  return std::make_unique<CellCursor>(NewSegmentIterator(std::move(segments)),
                                      state.table, std::move(co));
}

namespace {

// The file iterators of a point read of one row (LevelDB's Version::Get):
// only files whose rows include it, at most one per level >= 1 (found by
// binary search, levels >= 1 being sorted and disjoint by row), and only
// those whose Bloom filter may hold `row_prefix` and, when `cell_keys` is not
// empty, one of them. The row prefix goes first: every key adds it, so one
// probe rules out a file that holds nothing of the row. Each candidate's
// filter lines for the row and the cell keys are prefetched before any is
// probed: a probe is a cache miss, and the misses then overlap (a read of
// a cell that exists probes both, one after the other). A read that
// searches a level-0 file and another file, or probes the filters of two
// level-0 files, counts as overlapped (Version::overlapped_reads); true
// when it is the one that reaches ReadCompactionThreshold.
bool AddPointFileIterators(TableCache* cache, const Version& version,
                           std::string_view row_prefix, const BloomKey& row_key,
                           std::span<const std::string_view> cell_keys,
                           StripedCounter* bloom_useful,
                           std::vector<std::unique_ptr<Iterator>>* children) {
  // The thread's, emptied before returning: no allocation per read.
  thread_local std::vector<std::shared_ptr<Table>> tables;
  thread_local std::vector<BloomKey> cell_bloom_keys;
  tables.clear();
  cell_bloom_keys.clear();
  for (std::string_view k : cell_keys) cell_bloom_keys.emplace_back(k);
  auto consider = [&](const FileMeta& f) {
    Result<std::shared_ptr<Table>> t = cache->Get(f.number, f.size);
    if (!t.ok()) {
      children->push_back(NewEmptyIterator(t.status()));
      return;
    }
    (*t)->PrefetchFilter(row_key);
    for (const BloomKey& k : cell_bloom_keys) (*t)->PrefetchFilter(k);
    tables.push_back(std::move(t).value());
  };
  for (const auto& f : version.levels[0]) {
    if (row_prefix < RowPrefixView(f->smallest) ||
        row_prefix > RowPrefixView(f->largest)) {
      continue;
    }
    consider(*f);
  }
  const size_t level0_tables = tables.size();
  for (int level = 1; level < Version::kNumLevels; ++level) {
    const auto& files = version.levels[level];
    auto it = std::lower_bound(
        files.begin(), files.end(), row_prefix,
        [](const std::shared_ptr<const FileMeta>& f, std::string_view rp) {
          return RowPrefixView(f->largest) < rp;
        });
    if (it == files.end()) continue;
    const FileMeta& f = **it;
    if (row_prefix < RowPrefixView(f.smallest)) {
      continue;
    }
    consider(f);
  }
  size_t searched = 0, level0_searched = 0;
  for (size_t i = 0; i < tables.size(); ++i) {
    const std::shared_ptr<Table>& table = tables[i];
    bool may_contain = table->MayContain(row_key);
    if (may_contain && !cell_bloom_keys.empty()) {
      may_contain = false;
      for (const BloomKey& k : cell_bloom_keys) {
        if (table->MayContain(k)) {
          may_contain = true;
          break;
        }
      }
    }
    if (!may_contain) {
      bloom_useful->Add();
      continue;
    }
    ++searched;
    if (i < level0_tables) ++level0_searched;
    children->push_back(table->NewIterator());
  }
  tables.clear();  // lets the table cache close what it evicts
  cell_bloom_keys.clear();  // its views point into the caller's keys
  // A read that probed two or more level-0 filters counts too, though it
  // searched nothing: each probe is a cache miss, and a missing key's read
  // pays one per level-0 file (docs/BENCHMARKS.md, "Set M's readmissing").
  const bool overlapped =
      (level0_searched > 0 && searched >= 2) || level0_tables >= 2;
  if (!overlapped) return false;
  // Past the threshold the count stays: no more writes to its line.
  const uint64_t threshold = ReadCompactionThreshold(version);
  if (version.overlapped_reads.load(std::memory_order_relaxed) >= threshold) {
    return false;
  }
  return version.overlapped_reads.fetch_add(1, std::memory_order_relaxed) + 1 ==
         threshold;
}

}  // namespace

// What a point read reuses from the previous one on its thread: the cursor,
// the keys and the pinned state keep their capacity, so a read allocates
// only its iterators and its result (a read of a 16-byte row made 30
// allocations, 18 of them these strings: docs/BENCHMARKS.md, "A point
// read reuses its thread's cursor and keys").
struct DBImpl::PointScratch {
  CellCursor cursor;
  std::string cell_key;    // the cell's (or the row's) Bloom key
  std::string row_marker;  // the row marker's Bloom key
  ReadState state;
};

// The thread's scratch for one read, or a scratch of its own when the
// thread's is in use (a read made while another's cursor is open).
class DBImpl::PointScratchLease {
 public:
  PointScratchLease() {
    if (!thread_in_use_) {
      thread_in_use_ = true;
      scratch_ = &thread_scratch_;
    } else {
      own_ = std::make_unique<PointScratch>();
      scratch_ = own_.get();
    }
  }
  ~PointScratchLease() {
    scratch_->cursor.Release();  // unpins the memtables and files
    scratch_->state.Unpin();
    if (own_ == nullptr) thread_in_use_ = false;
  }
  PointScratchLease(const PointScratchLease&) = delete;
  PointScratchLease& operator=(const PointScratchLease&) = delete;

  PointScratch* operator->() const { return scratch_; }

 private:
  static thread_local PointScratch thread_scratch_;
  static thread_local bool thread_in_use_;
  PointScratch* scratch_;
  std::unique_ptr<PointScratch> own_;
};

thread_local DBImpl::PointScratch DBImpl::PointScratchLease::thread_scratch_;
thread_local bool DBImpl::PointScratchLease::thread_in_use_ = false;

bool DBImpl::StartPointCursor(const ReadState& state,
                              const ReadOptions& options, std::string_view row,
                              std::string_view row_prefix,
                              std::span<const std::string_view> cell_keys,
                              bool use_filter, CellCursor* cursor) {
  stat_point_reads_.Add();
  // The row lies in one tablet (PinReadState with one_row).
  const TabletView& view = *state.tablets.front();
  std::vector<std::unique_ptr<Iterator>> children;
  children.reserve(view.mems.size() + 4);
  // An empty memtable holds nothing of the row, and one whose filter has
  // not seen the row holds none of its entries either. (The count and the
  // filter are read after PinReadState took mu_, which every write to the
  // memtable up to view_seq released after adding its entries.) The row's
  // key is hashed once, for the memtables' filters and the files'.
  const BloomKey row_key(row_prefix);
  for (const auto& m : view.mems) {
    if (m->entries() == 0) continue;
    if (!m->MayHoldRow(row_key)) {
      stat_memtable_filter_useful_.Add();
      continue;
    }
    children.push_back(MemTable::NewIterator(m));
  }
  if (AddPointFileIterators(table_cache_.get(), *view.version, row_prefix,
                            row_key, cell_keys, &stat_bloom_useful_,
                            &children)) {
    // Reads now pay for the version's level 0: let the background thread
    // compact it (PickCompaction), even with no write to wake it.
    MutexLock l(&mu_);
    bg_cv_.Signal();
  }
  // Most reads of a missing row end here, with no iterator made.
  if (children.empty()) return false;
  CursorOptions& co = *cursor->mutable_options();
  co.view_seq = state.view_seq;
  co.epoch_view_seq = state.epoch_view;
  // A clock read costs a twentieth of a missing row's read: only for age.
  co.now_micros = state.table->CollectsByAge() ? env_->NowMicros() : 0;
  co.at = options.at;
  co.max_versions = options.max_versions;
  if (use_filter) {
    co.families = options.families;
    co.columns = options.columns;
  } else {
    co.families.clear();
    co.columns.clear();
  }
  co.start_row.assign(row);
  co.end_row.assign(row);
  co.end_row.push_back('\0');  // the first row after `row`
  co.prefix.clear();
  cursor->Reset(NewMergingIterator(std::move(children)), state.table);
  return true;
}

Result<Row> DBImpl::ReadRow(std::string_view table, std::string_view row,
                            const ReadOptions& options) {
  TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
  PointScratchLease scratch;
  const ReadState& state = scratch->state;
  TABLETFS_RETURN_IF_ERROR(
      PinReadState(table, options, row, {}, true, &scratch->state));
  std::string& row_prefix = scratch->cell_key;
  row_prefix.clear();
  AppendRowPrefix(&row_prefix, state.table->id, row);
  CellCursor* cursor = &scratch->cursor;
  std::string& stop = cursor->mutable_options()->stop_key;
  stop.assign(row_prefix).push_back('\x03');  // after every key of the row
  Row out;
  out.key = std::string(row);
  if (!StartPointCursor(state, options, row, row_prefix, {},
                        /*use_filter=*/true, cursor)) {
    return out;
  }
  for (cursor->Seek(row); cursor->Valid(); cursor->Next()) {
    Cell c;
    c.family = cursor->family();
    c.qualifier = cursor->qualifier();
    c.timestamp = cursor->timestamp();
    TABLETFS_ASSIGN_OR_RETURN(c.value,
                              LoadValue(cursor->kind(), cursor->raw_value()));
    out.cells.push_back(std::move(c));
  }
  TABLETFS_RETURN_IF_ERROR(cursor->status());
  return out;
}

template <typename Visit>
Status DBImpl::VisitCell(std::string_view table, std::string_view row,
                         std::string_view family, std::string_view qualifier,
                         const ReadOptions& options, Visit visit) {
  TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
  PointScratchLease scratch;
  const ReadState& state = scratch->state;
  TABLETFS_RETURN_IF_ERROR(
      PinReadState(table, options, row, {}, true, &scratch->state));
  const FamilyState* fs = state.table->FindFamily(family);
  if (fs == nullptr) {
    return Status::NotFound("no such family",
                            std::string(table) + ":" + std::string(family));
  }
  // A file matters when it may hold the cell or a row / family marker of
  // the row (their own Bloom keys, see store/doc/key_format.md). The cell
  // prefix begins with the family prefix, which begins with the row
  // prefix: one string holds all three.
  std::string& cell_key = scratch->cell_key;
  cell_key.clear();
  AppendCellPrefix(&cell_key, state.table->id, row, fs->id, qualifier);
  const std::string_view cell_prefix = cell_key;
  const std::string_view row_prefix =
      cell_prefix.substr(0, 4 + EscapedSize(row));
  std::string& row_marker = scratch->row_marker;
  row_marker.assign(row_prefix).push_back('\x01');
  const std::string_view bloom_keys[] = {
      cell_prefix, row_marker, cell_prefix.substr(0, row_prefix.size() + 5)};
  CellCursor* cursor = &scratch->cursor;
  std::string& stop = cursor->mutable_options()->stop_key;
  stop.assign(cell_prefix).push_back('\x03');  // after every key of the cell
  // No family / column filter: Seek goes straight to the cell (past the
  // row's and the family's markers) and stop ends the read after it.
  if (!StartPointCursor(state, options, row, row_prefix, bloom_keys,
                        /*use_filter=*/false, cursor)) {
    return Status::OK();
  }
  bool more = true;
  for (cursor->Seek(row, family, qualifier);
       more && cursor->Valid() && cursor->family_id() == fs->id &&
       cursor->qualifier() == qualifier;
       cursor->Next()) {
    TABLETFS_RETURN_IF_ERROR(visit(*cursor, &more));
  }
  return cursor->status();
}

Result<std::vector<Cell>> DBImpl::ReadCell(std::string_view table,
                                           std::string_view row,
                                           std::string_view family,
                                           std::string_view qualifier,
                                           const ReadOptions& options) {
  std::vector<Cell> out;
  TABLETFS_RETURN_IF_ERROR(
      VisitCell(table, row, family, qualifier, options,
                [&](CellCursor& cursor, bool*) -> Status {
                  Cell c;
                  c.family = cursor.family();
                  c.qualifier = cursor.qualifier();
                  c.timestamp = cursor.timestamp();
                  TABLETFS_ASSIGN_OR_RETURN(
                      c.value, LoadValue(cursor.kind(), cursor.raw_value()));
                  out.push_back(std::move(c));
                  return Status::OK();
                }));
  return out;
}

Result<std::optional<CellStat>> DBImpl::StatCell(std::string_view table,
                                                 std::string_view row,
                                                 std::string_view family,
                                                 std::string_view qualifier,
                                                 const ReadOptions& options) {
  // The size of a value kept in a value file is in its ref: no read.
  std::optional<CellStat> out;
  TABLETFS_RETURN_IF_ERROR(
      VisitCell(table, row, family, qualifier, options,
                [&](CellCursor& cursor, bool* more) -> Status {
                  out = CellStat{cursor.timestamp(), 0, std::nullopt};
                  if (cursor.kind() == EntryKind::kPut) {
                    out->value_size = cursor.raw_value().size();
                  } else {
                    // A reference that does not decode is damage, not a
                    // size of 0.
                    Result<ValueRef> ref =
                        ValueRef::DecodeFrom(cursor.raw_value());
                    if (!ref.ok()) return ref.status();
                    out->value_size = ref->size;
                    out->value_xxh64 = ref->checksum;
                  }
                  *more = false;
                  return Status::OK();
                }));
  return out;
}

Result<std::unique_ptr<Scanner>> DBImpl::NewScanner(
    std::string_view table, const ScanOptions& options) {
  // Rows with the prefix sort at or after it.
  std::string_view first_row = options.start_row;
  if (options.prefix > first_row) first_row = options.prefix;
  ReadState state;
  TABLETFS_RETURN_IF_ERROR(PinReadState(table, options.read, first_row,
                                        options.end_row, false, &state));
  stat_scans_.Add();
  auto cursor = NewCursor(state, options.read, options.start_row,
                          options.end_row, options.prefix);
  cursor->SeekToFirst();
  return std::unique_ptr<Scanner>(
      std::make_unique<ScannerImpl>(this, std::move(state), std::move(cursor)));
}

std::shared_ptr<const Snapshot> DBImpl::GetSnapshot() {
  MutexLock l(&mu_);
  const uint64_t seq = SequenceBeforeUnwritten();  // as PinReadState
  snapshots_.insert(seq);
  return std::make_shared<SnapshotImpl>(this, seq);
}

void DBImpl::ReleaseSnapshot(uint64_t seq) {
  MutexLock l(&mu_);
  auto it = snapshots_.find(seq);
  if (it != snapshots_.end()) snapshots_.erase(it);
}

}  // namespace tabletfs
