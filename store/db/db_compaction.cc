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

Status DBImpl::WriteTables(
    Iterator* iter,
    const std::map<uint32_t, std::shared_ptr<const TableState>>& tables,
    CompactionFilter* filter, int level, bool move_large_values,
    uint32_t tablet_id, std::vector<FileMeta>* outputs) {
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

  std::unique_ptr<WritableFile> file;
  std::unique_ptr<TableBuilder> builder;
  FileMeta meta;
  std::string last_row;
  std::unique_ptr<ValueFileWriter> values;
  std::vector<std::string> created;
  Status s;

  auto finish_file = [&]() -> Status {
    Status fs = builder->Finish();
    if (fs.ok()) fs = file->Sync();
    if (fs.ok()) fs = file->Close();
    meta.size = builder->FileSize();
    meta.smallest = builder->smallest_key();
    meta.largest = builder->largest_key();
    std::sort(meta.value_files.begin(), meta.value_files.end());
    meta.value_files.erase(
        std::unique(meta.value_files.begin(), meta.value_files.end()),
        meta.value_files.end());
    builder.reset();
    file.reset();
    if (fs.ok()) outputs->push_back(meta);
    return fs.WithContext(TableFileName(dir_, meta.number));
  };

  ParsedKey p;
  std::string key_buf, value_buf;
  for (iter->SeekToFirst(); s.ok() && iter->Valid(); iter->Next()) {
    std::string_view key = iter->key();
    std::string_view value = iter->value();
    if (!ParseInternalKey(key, &p)) {
      s = Status::Corruption("malformed internal key during flush/compaction");
      break;
    }
    // The same entry twice (a log replayed into a tablet that had already
    // flushed it, after a merge: store/doc/tablets.md) is written once.
    if (builder != nullptr && key == builder->largest_key()) continue;
    if (filter != nullptr && !filter->Keep(p)) continue;
    if (builder != nullptr &&
        builder->FileSize() >= options_.target_file_bytes &&
        p.row_prefix != last_row) {
      s = finish_file();
      if (!s.ok()) break;
    }
    if (builder == nullptr) {
      meta = FileMeta();
      meta.number = NewFileNumber();
      meta.level = level;
      meta.tablet_id = tablet_id;
      std::string path = TableFileName(dir_, meta.number);
      Result<std::unique_ptr<WritableFile>> f = env_->NewWritableFile(path);
      if (!f.ok()) {
        s = f.status().WithContext(path);
        break;
      }
      created.push_back(path);
      file = std::move(*f);
      builder = std::make_unique<TableBuilder>(to, file.get());
    }
    if (move_large_values && p.kind == EntryKind::kPut &&
        value.size() >= options_.large_value_bytes) {
      if (values == nullptr) {
        uint64_t vn = NewFileNumber();
        std::string vpath = FileName(vn, ".vlf");
        auto w = ValueFileWriter::Create(env_, vpath, vn);
        if (!w.ok()) {
          s = w.status();
          break;
        }
        created.push_back(vpath);
        values = std::move(*w);
      }
      Result<ValueRef> ref = values->Add(value);
      if (!ref.ok()) {
        s = ref.status();
        break;
      }
      // Same key but kind 6: the sequence number keeps its place in order.
      key_buf.assign(key.substr(0, key.size() - 8));
      AppendTrailer(&key_buf, p.seq, EntryKind::kPutValueRef);
      value_buf.clear();
      ref->EncodeTo(&value_buf);
      key = key_buf;
      value = value_buf;
      meta.value_files.push_back(ref->file_number);
    } else if (p.kind == EntryKind::kPutValueRef) {
      Result<ValueRef> ref = ValueRef::DecodeFrom(value);
      if (!ref.ok()) {
        s = ref.status();
        break;
      }
      meta.value_files.push_back(ref->file_number);
    }
    builder->Add(key, value);
    last_row.assign(p.row_prefix);
  }
  if (s.ok()) s = iter->status();
  if (s.ok() && builder != nullptr) s = finish_file();
  // The value file must be durable before any table naming it is committed.
  if (s.ok() && values != nullptr) s = values->Sync();
  if (s.ok() && values != nullptr) s = values->Close();
  // The tables' directory entries must be durable before the manifest
  // names them.
  if (s.ok() && !created.empty()) s = env_->SyncDir(dir_);
  if (!s.ok()) {
    if (builder != nullptr) builder->Abandon();
    builder.reset();
    file.reset();
    values.reset();
    for (const std::string& path : created)
      env_->RemoveFile(path).IgnoreError();
    outputs->clear();
    return s;
  }
  if (values != nullptr) {
    MutexLock l(&files_mu_);
    value_file_sizes_[values->file_number()] = values->size();
  }
  uint64_t bytes = 0;
  for (const FileMeta& f : *outputs) bytes += f.size;
  if (values != nullptr) bytes += values->size();
  MutexLock l(&mu_);
  stat_bytes_disk_ += bytes;
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
    PickTabletCompaction(best_tablet, false, c);
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

Status DBImpl::RunCompaction(const Compaction& c) {
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
  // whether work is pending.
  if (!c.manual && c.level >= 1) {
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
