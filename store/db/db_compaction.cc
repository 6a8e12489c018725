// DBImpl: compaction. Writing SSTables from an iterator (flushes use it
// too), picking the tablet and level to compact, and running it. Policy:
// store/doc/compaction.md.
#include <algorithm>

#include "store/db/compaction_filter.h"
#include "store/db/db_impl.h"
#include "store/db/level_iterator.h"
#include "store/db/merger.h"
#include "store/table/table_builder.h"
#include "store/util/coding.h"

namespace tabletfs {

namespace {

// Level-0 files that trigger a compaction.
constexpr int kL0CompactionTrigger = 4;

std::string RowPrefixOf(std::string_view key) {
  ParsedKey p;
  if (!ParseInternalKey(key, &p)) return std::string(key);
  return std::string(p.row_prefix);
}

// Whether the rows of f intersect [lo, hi] (row prefixes, inclusive).
bool RowsOverlap(const FileMeta& f, const std::string& lo,
                 const std::string& hi) {
  return !(RowPrefixOf(f.largest) < lo || RowPrefixOf(f.smallest) > hi);
}

}  // namespace

// The files one WriteTables call creates: SSTables of one tablet at one
// level, cut at row boundaries once past target_file_bytes, and at most one
// value file for large values. Nothing is live until the caller commits
// outputs in a manifest edit; Abandon() removes every file made.
class DBImpl::TableOutputs {
 public:
  TableOutputs(DBImpl* db, TableOptions options, int level, uint32_t tablet_id,
               std::vector<FileMeta>* outputs)
      : db_(db),
        options_(std::move(options)),
        level_(level),
        tablet_id_(tablet_id),
        outputs_(outputs) {}

  // True when `key` is the last key added: the same entry twice (a log
  // replayed into a tablet that had already flushed it, after a merge:
  // store/doc/tablets.md) is written once.
  bool IsLastKey(std::string_view key) const {
    return builder_ != nullptr && key == builder_->largest_key();
  }

  // Adds one entry (parsed as `p`). With move_large_value, a put of at
  // least large_value_bytes goes to the value file and the table gets a
  // reference to it.
  Status Add(std::string_view key, std::string_view value, const ParsedKey& p,
             bool move_large_value) {
    if (builder_ != nullptr &&
        builder_->FileSize() >= db_->options_.target_file_bytes &&
        p.row_prefix != last_row_) {
      TABLETFS_RETURN_IF_ERROR(FinishTable());
    }
    if (builder_ == nullptr) TABLETFS_RETURN_IF_ERROR(StartTable());
    if (move_large_value && p.kind == EntryKind::kPut &&
        value.size() >= db_->options_.large_value_bytes) {
      TABLETFS_RETURN_IF_ERROR(MoveToValueFile(p, &key, &value));
    } else if (p.kind == EntryKind::kPutValueRef) {
      Result<ValueRef> ref = ValueRef::DecodeFrom(value);
      if (!ref.ok()) return ref.status();
      meta_.value_files.push_back(ref->file_number);
    }
    builder_->Add(key, value);
    last_row_.assign(p.row_prefix);
    // (ParseInternalKey leaves cell_prefix as it was for other sections.)
    if (p.section != KeySection::kVersion) {
      meta_.plain = false;
    } else {
      if ((p.kind != EntryKind::kPut && p.kind != EntryKind::kPutValueRef) ||
          p.cell_prefix == last_cell_) {
        meta_.plain = false;
      }
      last_cell_.assign(p.cell_prefix);
    }
    return Status::OK();
  }

  // Finishes the last table and makes every file, and the directory
  // entries, durable.
  Status Finish() {
    if (builder_ != nullptr) TABLETFS_RETURN_IF_ERROR(FinishTable());
    // The value file must be durable before any table naming it is
    // committed.
    if (values_ != nullptr) {
      TABLETFS_RETURN_IF_ERROR(values_->Sync());
      TABLETFS_RETURN_IF_ERROR(values_->Close());
    }
    // The tables' directory entries must be durable before the manifest
    // names them.
    if (!created_.empty()) {
      TABLETFS_RETURN_IF_ERROR(db_->env_->SyncDir(db_->dir_));
    }
    return Status::OK();
  }

  // After a failure: removes every file made and forgets the outputs.
  void Abandon() {
    if (builder_ != nullptr) builder_->Abandon();
    builder_.reset();
    file_.reset();
    values_.reset();
    for (const std::string& path : created_) {
      db_->env_->RemoveFile(path).IgnoreError();
    }
    outputs_->clear();
  }

  // The value file written (closed by Finish), or nullptr.
  const ValueFileWriter* value_file() const { return values_.get(); }

 private:
  Status StartTable() {
    meta_ = FileMeta();
    meta_.plain = true;
    last_cell_.clear();
    meta_.number = db_->NewFileNumber();
    meta_.level = level_;
    meta_.tablet_id = tablet_id_;
    std::string path = TableFileName(db_->dir_, meta_.number);
    Result<std::unique_ptr<WritableFile>> f = db_->env_->NewWritableFile(path);
    if (!f.ok()) return f.status().WithContext(path);
    created_.push_back(path);
    file_ = std::move(*f);
    builder_ = std::make_unique<TableBuilder>(options_, file_.get());
    return Status::OK();
  }

  // Finishes and syncs the current table; an output once it succeeded.
  Status FinishTable() {
    Status fs = builder_->Finish();
    if (fs.ok()) fs = file_->Sync();
    if (fs.ok()) fs = file_->Close();
    meta_.size = builder_->FileSize();
    meta_.smallest = builder_->smallest_key();
    meta_.largest = builder_->largest_key();
    std::sort(meta_.value_files.begin(), meta_.value_files.end());
    meta_.value_files.erase(
        std::unique(meta_.value_files.begin(), meta_.value_files.end()),
        meta_.value_files.end());
    builder_.reset();
    file_.reset();
    if (fs.ok()) outputs_->push_back(meta_);
    return fs.WithContext(TableFileName(db_->dir_, meta_.number));
  }

  // Appends *value to the value file (made on first use) and points *key
  // and *value at the reference entry that replaces it.
  Status MoveToValueFile(const ParsedKey& p, std::string_view* key,
                         std::string_view* value) {
    if (values_ == nullptr) {
      uint64_t vn = db_->NewFileNumber();
      std::string vpath = db_->FileName(vn, ".vlf");
      auto w = ValueFileWriter::Create(db_->env_, vpath, vn);
      if (!w.ok()) return w.status();
      created_.push_back(vpath);
      values_ = std::move(*w);
    }
    Result<ValueRef> ref = values_->Add(*value);
    if (!ref.ok()) return ref.status();
    // Same key but kind 6: the sequence number keeps its place in order.
    key_buf_.assign(key->substr(0, key->size() - 8));
    AppendTrailer(&key_buf_, p.seq, EntryKind::kPutValueRef);
    value_buf_.clear();
    ref->EncodeTo(&value_buf_);
    *key = key_buf_;
    *value = value_buf_;
    meta_.value_files.push_back(ref->file_number);
    return Status::OK();
  }

  DBImpl* const db_;
  const TableOptions options_;
  const int level_;
  const uint32_t tablet_id_;
  std::vector<FileMeta>* const outputs_;

  std::unique_ptr<WritableFile> file_;
  std::unique_ptr<TableBuilder> builder_;
  FileMeta meta_;  // of the table being written
  std::string last_row_;
  std::string last_cell_;  // of the last version added (FileMeta::plain)
  std::unique_ptr<ValueFileWriter> values_;
  std::vector<std::string> created_;  // paths, for Abandon
  std::string key_buf_, value_buf_;   // a moved value's reference entry
};

TableOptions DBImpl::TableOptionsFor(
    const std::map<uint32_t, std::shared_ptr<const TableState>>& tables) {
  TableOptions to = MakeTableOptions();
  // Per block, the compression of the family its first key belongs to.
  to.compression = [&tables](std::string_view first_key) {
    ParsedKey p;
    if (!ParseInternalKey(first_key, &p) ||
        p.section == KeySection::kRowMarker) {
      return Compression::kLz4;
    }
    auto t = tables.find(p.table_id);
    if (t == tables.end()) return Compression::kLz4;
    const FamilyState* f = t->second->FindFamilyById(p.family_id);
    return f == nullptr ? Compression::kLz4 : f->settings.compression;
  };
  return to;
}

Status DBImpl::WriteTables(
    Iterator* iter,
    const std::map<uint32_t, std::shared_ptr<const TableState>>& tables,
    CompactionFilter* filter, int level, bool move_large_values,
    uint32_t tablet_id, std::vector<FileMeta>* outputs) {
  TableOutputs out(this, TableOptionsFor(tables), level, tablet_id, outputs);
  Status s = AddEntries(iter, filter, move_large_values, &out);
  if (s.ok()) s = out.Finish();
  if (!s.ok()) {
    out.Abandon();
    return s;
  }
  uint64_t bytes = 0;
  for (const FileMeta& f : *outputs) bytes += f.size;
  if (const ValueFileWriter* values = out.value_file()) {
    bytes += values->size();
    MutexLock l(&files_mu_);
    value_file_sizes_[values->file_number()] = values->size();
  }
  MutexLock l(&mu_);
  stat_bytes_disk_ += bytes;
  return Status::OK();
}

Status DBImpl::AddEntries(Iterator* iter, CompactionFilter* filter,
                          bool move_large_values, TableOutputs* out) {
  ParsedKey p;
  uint64_t freezes = freezes_.load(std::memory_order_relaxed);
  bool flush_between = filter != nullptr;
  for (iter->SeekToFirst(); iter->Valid(); iter->Next()) {
    // A compaction (it has a filter) can take seconds on the one background
    // thread: memtables frozen meanwhile are flushed between its entries,
    // as LevelDB does, so writers do not stall behind it. Out of space,
    // the compaction goes on (it may be what frees space, ReclaimStep) and
    // the flush is retried after it.
    if (flush_between && freezes_.load(std::memory_order_relaxed) != freezes) {
      freezes = freezes_.load(std::memory_order_relaxed);
      Status s = FlushDuringCompaction();
      if (s.IsNoSpace()) {
        flush_between = false;
      } else if (!s.ok()) {
        return s;
      }
    }
    std::string_view key = iter->key();
    if (!ParseInternalKey(key, &p)) {
      return Status::Corruption(
          "malformed internal key during flush/compaction");
    }
    if (out->IsLastKey(key)) continue;
    if (filter != nullptr && !filter->Keep(p)) continue;
    TABLETFS_RETURN_IF_ERROR(
        out->Add(key, iter->value(), p, move_large_values));
  }
  return iter->status();
}

Status DBImpl::FlushDuringCompaction() {
  MutexLock l(&mu_);
  while (std::shared_ptr<Tablet> t = NextFlush()) {
    TABLETFS_RETURN_IF_ERROR(FlushImmutable(std::move(t)));
    ++stat_flushes_during_compactions_;
    done_cv_.SignalAll();  // writers waiting for room
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Compaction
// ---------------------------------------------------------------------------

namespace {

uint64_t MaxBytesForLevel(const Options& options, int level) {
  // Level 1 holds ten target-sized files; each deeper level ten times more.
  uint64_t bytes = 10 * std::max<uint64_t>(options.target_file_bytes, 1 << 16);
  for (int i = 1; i < level; ++i) bytes *= 10;
  return bytes;
}

void RowRange(const std::vector<std::shared_ptr<const FileMeta>>& files,
              std::string* lo, std::string* hi) {
  for (size_t i = 0; i < files.size(); ++i) {
    std::string a = RowPrefixOf(files[i]->smallest);
    std::string b = RowPrefixOf(files[i]->largest);
    if (i == 0 || a < *lo) *lo = a;
    if (i == 0 || b > *hi) *hi = b;
  }
}

}  // namespace

bool DBImpl::PickCompaction(Compaction* c) {
  // The tablet and level with the highest score (LevelDB's, per tablet):
  // a hot tablet compacts without rewriting the rest of the table.
  double best = 0;
  int best_level = -1;
  std::shared_ptr<Tablet> best_tablet;
  for (const auto& [id, t] : tablets_) {
    const Version& v = *t->version;
    if (t->foreign_files) {
      // Rewrite what a split left shared before anything else of it.
      if (best < 1.5) {
        best = 1.5;
        best_level = -2;
        best_tablet = t;
      }
      continue;
    }
    double l0 = static_cast<double>(v.levels[0].size()) / kL0CompactionTrigger;
    if (l0 < 1 && !v.levels[0].empty() &&
        v.overlapped_reads.load(std::memory_order_relaxed) >=
            ReadCompactionThreshold(v)) {
      l0 = 1;  // reads search level 0 and a deeper level too often
    }
    if (l0 >= 1 && l0 > best) {
      best = l0;
      best_level = 0;
      best_tablet = t;
    }
    for (int level = 1; level < Version::kNumLevels - 1; ++level) {
      uint64_t bytes = 0;
      for (const auto& f : v.levels[level]) bytes += f->size;
      double score = static_cast<double>(bytes) /
                     static_cast<double>(MaxBytesForLevel(options_, level));
      if (score >= 1 && score > best) {
        best = score;
        best_level = level;
        best_tablet = t;
      }
    }
  }
  if (best_tablet == nullptr) return false;
  if (best_level == -2) {
    PickTrimCompaction(best_tablet, c);
    return true;
  }
  const Version& v = *best_tablet->version;
  c->tablet = best_tablet;
  c->level = best_level;
  c->output_level = best_level + 1;
  if (best_level == 0) {
    c->inputs[0] = v.levels[0];
  } else {
    // Round robin through the level's rows, so every row range gets its
    // turn (LevelDB's compact pointer).
    const auto& files = v.levels[best_level];
    std::shared_ptr<const FileMeta> pick = files.front();
    for (const auto& f : files) {
      if (f->largest > best_tablet->compact_pointer[best_level]) {
        pick = f;
        break;
      }
    }
    c->inputs[0] = {pick};
  }
  std::string lo, hi;
  RowRange(c->inputs[0], &lo, &hi);
  for (const auto& f : v.levels[c->output_level]) {
    if (RowsOverlap(*f, lo, hi)) c->inputs[1].push_back(f);
  }
  if (!c->inputs[1].empty()) {
    std::string lo1, hi1;
    RowRange(c->inputs[1], &lo1, &hi1);
    lo = std::min(lo, lo1);
    hi = std::max(hi, hi1);
  }
  c->bottom = true;
  for (int level = c->output_level + 1; level < Version::kNumLevels; ++level) {
    for (const auto& f : v.levels[level]) {
      if (RowsOverlap(*f, lo, hi)) c->bottom = false;
    }
  }
  return true;
}

void DBImpl::PickTrimCompaction(std::shared_ptr<Tablet> t, Compaction* c) {
  // Only the shared files: after a split of rows written in order, one
  // file straddles the split row and the rest lie in one half each
  // (rewriting every file of both halves read and wrote the whole tablet:
  // docs/BENCHMARKS.md, twenty-first session). The output stays at the
  // input's level: it is a part of the input's rows, so it overlaps
  // nothing at levels >= 1 the input did not, and it is not the bottom,
  // so deletion markers stay for what they may cover elsewhere.
  const Version& v = *t->version;
  for (int level = 0; level < Version::kNumLevels; ++level) {
    for (const auto& f : v.levels[level]) {
      if (RowPrefixView(f->smallest) < t->lo ||
          RowPrefixView(f->largest) >= t->hi) {
        c->inputs[0].push_back(f);
      }
    }
    if (!c->inputs[0].empty()) {
      c->level = level;
      c->output_level = level;
      break;
    }
  }
  assert(!c->inputs[0].empty());
  c->tablet = std::move(t);
  c->bottom = false;
}

void DBImpl::PickTabletCompaction(std::shared_ptr<Tablet> t, bool manual,
                                  Compaction* c) {
  // Every file of the tablet into its deepest level: what a manual
  // compaction does, and what rewrites files shared after a split.
  const Version& v = *t->version;
  int deepest = 1;
  for (int level = 1; level < Version::kNumLevels; ++level) {
    if (!v.levels[level].empty()) deepest = level;
  }
  c->tablet = std::move(t);
  c->manual = manual;
  c->level = 0;
  c->output_level = deepest;
  c->bottom = true;
  for (int level = 0; level < Version::kNumLevels; ++level) {
    for (const auto& f : v.levels[level]) c->inputs[0].push_back(f);
  }
}

bool DBImpl::MovesWithoutRewrite(const Compaction& c) {
  if (c.manual || c.tablet->foreign_files || !c.inputs[1].empty() ||
      c.output_level != c.level + 1) {
    return false;
  }
  std::vector<std::shared_ptr<const FileMeta>> files = c.inputs[0];
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
    return a->smallest < b->smallest;
  });
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i]->level != c.level) return false;
    // Level-0 files may overlap each other; moved, they must not.
    if (i > 0 &&
        RowPrefixOf(files[i - 1]->largest) >= RowPrefixOf(files[i]->smallest)) {
      return false;
    }
    // At the bottom a rewrite drops what markers and newer versions hide.
    if (c.bottom && !files[i]->plain) return false;
  }
  // And a time-based policy collects even a cell's only version.
  if (c.bottom) {
    for (const auto& [name, table] : tables_) {
      if (table->id == c.tablet->table_id && table->CollectsByAge()) {
        return false;
      }
    }
  }
  // Not onto a range of the level below the output that a later
  // compaction of the moved files would have to rewrite at once (LevelDB's
  // limit).
  std::string lo, hi;
  RowRange(files, &lo, &hi);
  uint64_t below = 0;
  if (c.output_level + 1 < Version::kNumLevels) {
    for (const auto& f : c.tablet->version->levels[c.output_level + 1]) {
      if (RowsOverlap(*f, lo, hi)) below += f->size;
    }
  }
  return below <= 10 * options_.target_file_bytes;
}

Status DBImpl::MoveFiles(const Compaction& c) {
  VersionEdit edit;
  uint64_t bytes = 0;
  for (const auto& f : c.inputs[0]) {
    edit.deleted_files.push_back({f->level, f->number, c.tablet->id});
    FileMeta moved = *f;
    moved.level = c.output_level;
    moved.tablet_id = c.tablet->id;
    edit.added_files.push_back(std::move(moved));
    bytes += f->size;
  }
  mu_.Unlock();
  Status s;
  {
    MutexLock sl(&schema_mu_);
    s = LogEdit(edit);
  }
  mu_.Lock();
  if (!s.ok()) {
    return s.WithContext("move of level " + std::to_string(c.level));
  }
  s = ApplyEdit(edit);
  ++stat_compactions_;
  ++stat_moves_;
  if (c.level >= 1) {
    c.tablet->compact_pointer[c.level] = c.inputs[0].front()->largest;
  }
  Log(LogLevel::kInfo, "moved " + std::to_string(edit.added_files.size()) +
                           " files (" + std::to_string(bytes) +
                           " bytes) from level " + std::to_string(c.level) +
                           " to level " + std::to_string(c.output_level));
  return s;
}

Status DBImpl::RunCompaction(const Compaction& c) {
  if (MovesWithoutRewrite(c)) return MoveFiles(c);
  auto tables = TablesById();
  uint64_t view = snapshots_.empty() ? last_seq_ : *snapshots_.begin();
  uint64_t epoch_view = snapshots_.empty() ? kMaxSequence : view;
  VersionEdit edit;
  for (int which = 0; which < 2; ++which) {
    for (const auto& f : c.inputs[which]) {
      edit.deleted_files.push_back({f->level, f->number, c.tablet->id});
    }
  }
  std::string lo = c.tablet->lo, hi = c.tablet->hi;
  mu_.Unlock();
  std::vector<std::shared_ptr<const FileMeta>> inputs;
  uint64_t input_bytes = 0;
  for (int which = 0; which < 2; ++which) {
    for (const auto& f : c.inputs[which]) {
      input_bytes += f->size;
      inputs.push_back(f);
    }
  }
  // Only the tablet's rows: files shared with a sibling after a split hold
  // rows of both.
  auto clipped = NewSegmentIterator(
      {{lo, hi, [this, inputs] {
          std::vector<std::unique_ptr<Iterator>> children;
          for (const auto& f : inputs) {
            auto t = table_cache_->Get(f->number, f->size);
            children.push_back(t.ok() ? (*t)->NewIterator(
                                            /*fill_cache=*/false)
                                      : NewEmptyIterator(t.status()));
          }
          return NewMergingIterator(std::move(children));
        }}});
  CompactionFilter filter(tables, c.bottom, view, epoch_view,
                          env_->NowMicros());
  Status s =
      WriteTables(clipped.get(), tables, &filter, c.output_level,
                  /*move_large_values=*/false, c.tablet->id, &edit.added_files);
  if (s.ok()) {
    MutexLock sl(&schema_mu_);
    s = LogEdit(edit);
  }
  mu_.Lock();
  if (!s.ok()) {
    // As in FlushImmutable: outputs an edit that may be on disk names stay.
    return s.WithContext("compaction of level " + std::to_string(c.level));
  }
  s = ApplyEdit(edit);
  ++stat_compactions_;
  // Advanced only when the compaction ran: PickCompaction is also asked
  // whether work is pending. A trim (the one compaction whose output stays
  // at its level) is not a turn of the level's round robin.
  if (!c.manual && c.output_level != c.level && c.level >= 1) {
    c.tablet->compact_pointer[c.level] = c.inputs[0].front()->largest;
  }
  uint64_t output_bytes = 0;
  for (const FileMeta& f : edit.added_files) output_bytes += f.size;
  Log(LogLevel::kInfo,
      "compacted " + std::to_string(edit.deleted_files.size()) + " files (" +
          std::to_string(input_bytes) + " bytes) from level " +
          std::to_string(c.level) + " into " +
          std::to_string(edit.added_files.size()) + " files (" +
          std::to_string(output_bytes) + " bytes) at level " +
          std::to_string(c.output_level) + (c.bottom ? ", bottom" : "") +
          ", dropped " + std::to_string(filter.dropped()) + " entries");
  return s;
}

}  // namespace tabletfs
