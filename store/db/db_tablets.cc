// The parts of DBImpl that manage tablets: the tablet map, the tablet part
// of version edits, splits and merges, and the tablet listing. Design:
// store/doc/tablets.md.
#include <algorithm>
#include <chrono>
#include <set>

#include "store/db/db_impl.h"
#include "store/db/key_format.h"
#include "store/table/table.h"

namespace tabletfs {

namespace {

// The row of a row prefix (be32 table id + enc(row)); empty when malformed.
std::string RowOfPrefix(std::string_view row_prefix) {
  std::string row;
  if (row_prefix.size() < 4) return row;
  row_prefix.remove_prefix(4);
  if (!ConsumeEscaped(&row_prefix, &row)) row.clear();
  return row;
}

uint64_t SteadyMicros() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

}  // namespace

// ---------------------------------------------------------------------------
// The tablet map
// ---------------------------------------------------------------------------

std::shared_ptr<Tablet> DBImpl::NewTablet(uint32_t table_id, uint32_t id,
                                          std::string start_row,
                                          std::string end_row) {
  auto t = std::make_shared<Tablet>();
  t->id = id;
  t->table_id = table_id;
  t->SetRange(std::move(start_row), std::move(end_row));
  t->mem = NewMemTable();
  t->version = std::make_shared<Version>();
  t->RefreshView();
  return t;
}

void DBImpl::AddTablet(std::shared_ptr<Tablet> t) {
  ++tablet_generation_;
  next_schema_id_ = std::max(next_schema_id_, t->id + 1);
  auto& list = table_tablets_[t->table_id];
  auto pos = std::upper_bound(
      list.begin(), list.end(), t->lo,
      [](const std::string& lo, const auto& x) { return lo < x->lo; });
  list.insert(pos, t);
  tablets_[t->id] = std::move(t);
}

void DBImpl::RemoveTablet(uint32_t id) {
  auto it = tablets_.find(id);
  if (it == tablets_.end()) return;
  ++tablet_generation_;
  auto& list = table_tablets_[it->second->table_id];
  std::erase_if(list, [id](const auto& t) { return t->id == id; });
  tablets_.erase(it);
}

Tablet* DBImpl::FindTablet(uint32_t table_id, std::string_view key) {
  auto it = table_tablets_.find(table_id);
  if (it == table_tablets_.end() || it->second.empty()) return nullptr;
  const auto& list = it->second;
  // The last tablet whose range starts at or before key.
  auto pos = std::upper_bound(
      list.begin(), list.end(), key,
      [](std::string_view k, const auto& t) { return k < t->lo; });
  if (pos == list.begin()) return nullptr;
  Tablet* t = std::prev(pos)->get();
  return t->Contains(key) ? t : nullptr;
}

void DBImpl::SetVersion(Tablet* t, std::shared_ptr<const Version> v) {
  t->version = std::move(v);
  t->foreign_files = t->HasForeignFiles();
  t->RefreshView();
}

std::shared_ptr<const FileMeta> DBImpl::GetLiveFile(const FileMeta& meta) {
  auto it = live_files_.find(meta.number);
  if (it != live_files_.end()) {
    if (std::shared_ptr<const FileMeta> live = it->second.lock()) {
      if (live->level == meta.level) return live;
      // Moved down a level (RunCompaction's move): a new FileMeta for the
      // new level, holding the one before, so the file is released once,
      // when neither is held.
      auto moved = std::make_unique<FileMeta>(*live);
      moved->level = meta.level;
      moved->tablet_id = meta.tablet_id;
      std::shared_ptr<const FileMeta> now(
          moved.release(),
          [before = std::move(live)](const FileMeta* f) mutable {
            delete f;
            before.reset();
          });
      it->second = now;
      return now;
    }
  }
  std::shared_ptr<const FileMeta> live = MakeLiveFile(meta);
  live_files_[meta.number] = live;
  return live;
}

uint64_t DBImpl::MinLiveLog(const Tablet* except, uint64_t except_log) {
  uint64_t oldest = kNoLog;
  for (const auto& [id, t] : tablets_) {
    oldest = std::min(oldest, t.get() == except ? except_log : t->OldestLog());
  }
  return std::min(oldest, current_log_number_);
}

// ---------------------------------------------------------------------------
// Edits
// ---------------------------------------------------------------------------

Status DBImpl::ApplyTabletEdits(const VersionEdit& edit) {
  TABLETFS_RETURN_IF_ERROR(ApplyTabletRecords(edit));
  for (const VersionEdit::SplitRecord& sp : edit.splits) {
    TABLETFS_RETURN_IF_ERROR(ApplySplit(sp));
  }
  for (const VersionEdit::MergeRecord& m : edit.merges) {
    TABLETFS_RETURN_IF_ERROR(ApplyMerge(m));
  }
  for (const auto& [id, log] : edit.tablet_logs) {
    auto it = tablets_.find(id);
    if (it != tablets_.end()) {
      it->second->log_number = std::max(it->second->log_number, log);
    }
  }
  for (const auto& [id, seq] : edit.tablet_flushed_seqs) {
    auto it = tablets_.find(id);
    if (it != tablets_.end()) {
      it->second->flushed_seq = std::max(it->second->flushed_seq, seq);
    }
  }
  if (!edit.added_files.empty() || !edit.deleted_files.empty()) {
    TABLETFS_RETURN_IF_ERROR(ApplyFileChanges(edit));
  }
  max_l0_ = 0;
  for (const auto& [id, t] : tablets_) {
    max_l0_ = std::max(max_l0_, static_cast<int>(t->version->levels[0].size()));
  }
  return Status::OK();
}

Status DBImpl::ApplyTabletRecords(const VersionEdit& edit) {
  // Tablet records (snapshot edits): the first record of a table replaces
  // the tablets it has (the one made with the table).
  std::set<uint32_t> replaced;
  for (const VersionEdit::TabletRecord& r : edit.tablets) {
    auto list = table_tablets_.find(r.table_id);
    if (list == table_tablets_.end()) {
      return Status::Corruption("manifest: tablet " + std::to_string(r.id) +
                                " of unknown table id " +
                                std::to_string(r.table_id));
    }
    if (replaced.insert(r.table_id).second) {
      for (const auto& t : list->second) tablets_.erase(t->id);
      list->second.clear();
    }
    auto t = NewTablet(r.table_id, r.id, r.start_row, r.end_row);
    t->log_number = r.log_number;
    AddTablet(std::move(t));
  }
  return Status::OK();
}

Status DBImpl::ApplySplit(const VersionEdit::SplitRecord& sp) {
  auto it = tablets_.find(sp.parent);
  if (it == tablets_.end()) return Status::OK();  // its table was dropped
  std::shared_ptr<Tablet> parent = it->second;
  std::string split_key = RowPrefix(parent->table_id, sp.row);
  if (split_key <= parent->lo || split_key >= parent->hi) {
    return Status::Corruption("manifest: split row outside tablet " +
                              std::to_string(sp.parent));
  }
  // Both halves read the parent's frozen memtables and files, each
  // clipped to its own range, until flushes and compactions rewrite them.
  std::vector<Immutable> imm = parent->imm;
  if (parent->MemInUse()) {
    imm.push_back(parent->FrozenMem(++freeze_order_));
  }
  RemoveTablet(parent->id);
  auto left = NewTablet(parent->table_id, sp.left, parent->start_row, sp.row);
  auto right = NewTablet(parent->table_id, sp.right, sp.row, parent->end_row);
  for (const auto& child : {left, right}) {
    child->imm = imm;
    child->log_number = parent->log_number;
    child->flushed_seq = parent->flushed_seq;
    SetVersion(child.get(), parent->version);
    AddTablet(child);
  }
  return Status::OK();
}

Status DBImpl::ApplyMerge(const VersionEdit::MergeRecord& m) {
  auto ia = tablets_.find(m.left);
  auto ib = tablets_.find(m.right);
  if (ia == tablets_.end() || ib == tablets_.end()) {
    return Status::OK();  // dropped with its table
  }
  std::shared_ptr<Tablet> a = ia->second, b = ib->second;
  if (a->table_id != b->table_id || a->end_row.empty() ||
      a->end_row != b->start_row) {
    return Status::Corruption(
        "manifest: merge of tablets " + std::to_string(m.left) + " and " +
        std::to_string(m.right) + " that are not neighbours");
  }
  auto merged = NewTablet(a->table_id, m.merged, a->start_row, b->end_row);
  auto v = std::make_shared<Version>();
  for (int level = 0; level < Version::kNumLevels; ++level) {
    std::set<uint64_t> seen;
    for (const Tablet* t : {a.get(), b.get()}) {
      for (const auto& f : t->version->levels[level]) {
        if (seen.insert(f->number).second) v->levels[level].push_back(f);
      }
    }
  }
  SortLevels(v.get());
  std::vector<Immutable> imm;
  for (const Tablet* t : {a.get(), b.get()}) {
    for (const Immutable& i : t->imm) {
      bool dup = std::any_of(imm.begin(), imm.end(),
                             [&](const auto& x) { return x.mem == i.mem; });
      if (!dup) imm.push_back(i);
    }
    if (t->MemInUse()) {
      imm.push_back(t->FrozenMem(++freeze_order_));
    }
  }
  std::sort(imm.begin(), imm.end(),
            [](const auto& x, const auto& y) { return x.order < y.order; });
  merged->imm = std::move(imm);
  // The older position: replay may then bring back entries of one half
  // that its SSTables already hold; they are the same entries, and reads
  // and flushes keep one (store/doc/tablets.md).
  merged->log_number = std::min(a->log_number, b->log_number);
  merged->flushed_seq = std::min(a->flushed_seq, b->flushed_seq);
  SetVersion(merged.get(), std::move(v));
  RemoveTablet(a->id);
  RemoveTablet(b->id);
  AddTablet(std::move(merged));
  return Status::OK();
}

Status DBImpl::ApplyFileChanges(const VersionEdit& edit) {
  std::map<uint32_t, std::shared_ptr<Version>> changed;
  auto version_of = [&](const std::shared_ptr<Tablet>& t) {
    std::shared_ptr<Version>& v = changed[t->id];
    if (v == nullptr) v = std::make_shared<Version>(*t->version);
    return v.get();
  };
  for (const VersionEdit::DeletedFile& d : edit.deleted_files) {
    // DecodeFrom checks levels; this guards edits built in memory too.
    if (d.level < 0 || d.level >= Version::kNumLevels) {
      return Status::Corruption("manifest: bad level " +
                                std::to_string(d.level));
    }
    auto is_it = [&](const std::shared_ptr<const FileMeta>& f) {
      return f->number == d.number;
    };
    for (const auto& [id, t] : tablets_) {
      if (d.tablet_id != 0 && id != d.tablet_id) continue;
      const auto& files = t->version->levels[d.level];
      if (std::none_of(files.begin(), files.end(), is_it)) continue;
      std::erase_if(version_of(t)->levels[d.level], is_it);
    }
  }
  for (const FileMeta& f : edit.added_files) {
    if (f.level < 0 || f.level >= Version::kNumLevels) {
      return Status::Corruption("manifest: bad level " +
                                std::to_string(f.level));
    }
    // A file of a tablet dropped with its table since it was written is
    // let go at once (and deleted).
    std::shared_ptr<const FileMeta> live = GetLiveFile(f);
    auto it = tablets_.find(f.tablet_id);
    if (it == tablets_.end()) continue;
    version_of(it->second)->levels[f.level].push_back(std::move(live));
  }
  for (auto& [id, v] : changed) {
    SortLevels(v.get());
    SetVersion(tablets_[id].get(), std::move(v));
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Splits and merges
// ---------------------------------------------------------------------------

void DBImpl::StartTabletChange() { tablet_change_start_ = SteadyMicros(); }

void DBImpl::FinishTabletChange() {
  stat_max_pause_micros_ = std::max(stat_max_pause_micros_,
                                    SteadyMicros() - tablet_change_start_);
}

void DBImpl::AwaitFill() {
  const uint64_t fill = fills_;
  ++fill_waiters_;
  while (leader_filling_ && fills_ == fill) Await(&fill_cv_);
  --fill_waiters_;
}

namespace {

uint64_t TabletBytes(const Tablet& t) {
  return t.FileBytes() + t.MemoryBytes();
}

}  // namespace

bool DBImpl::NeedsTabletChange() {
  uint64_t limit = options_.tablet_split_bytes;
  if (limit == 0) return false;
  for (const auto& [table_id, list] : table_tablets_) {
    for (size_t i = 0; i < list.size(); ++i) {
      const Tablet& t = *list[i];
      if (t.foreign_files) continue;
      uint64_t bytes = TabletBytes(t);
      if (bytes > limit && bytes >= t.no_split_below) return true;
      if (i + 1 < list.size() && !list[i + 1]->foreign_files &&
          bytes + TabletBytes(*list[i + 1]) < limit / 4) {
        return true;
      }
    }
  }
  return false;
}

bool DBImpl::WakeForSplit(uint32_t table_id, std::string_view key) {
  const uint64_t limit = options_.tablet_split_bytes;
  if (limit == 0 || bg_busy_) return false;  // a busy thread looks anyway
  const Tablet* t = FindTablet(table_id, key);
  if (t == nullptr || t->foreign_files) return false;
  const uint64_t bytes = TabletBytes(*t);
  if (bytes <= limit || bytes < t->no_split_below) return false;
  bg_cv_.Signal();
  return true;
}

Status DBImpl::MaybeChangeTablets(bool* did) {
  *did = false;
  uint64_t limit = options_.tablet_split_bytes;
  if (limit == 0) return Status::OK();
  std::shared_ptr<Tablet> split, left, right;
  for (const auto& [table_id, list] : table_tablets_) {
    for (size_t i = 0; i < list.size() && split == nullptr && left == nullptr;
         ++i) {
      const Tablet& t = *list[i];
      if (t.foreign_files) continue;
      uint64_t bytes = TabletBytes(t);
      if (bytes > limit && bytes >= t.no_split_below) {
        split = list[i];
      } else if (i + 1 < list.size() && !list[i + 1]->foreign_files &&
                 bytes + TabletBytes(*list[i + 1]) < limit / 4) {
        left = list[i];
        right = list[i + 1];
      }
    }
    if (split != nullptr || left != nullptr) break;
  }
  if (split != nullptr) {
    *did = true;
    if (split->mem->data_bytes() > split->FileBytes()) {
      // Mostly in memory: flush first, so the split row comes from the
      // SSTables' indexes.
      StartTabletChange();
      FreezeTablet(split.get());
      FinishTabletChange();
      return Status::OK();
    }
    return SplitTablet(std::move(split));
  }
  if (left != nullptr) {
    *did = true;
    return MergeTablets(std::move(left), std::move(right));
  }
  return Status::OK();
}

Status DBImpl::SplitTablet(std::shared_ptr<Tablet> t) {
  // The split row: the middle of the index keys of the tablet's files,
  // which lie about a block apart, so the halves hold about equal bytes.
  // Only the background thread changes versions: this one stays the
  // tablet's while mu_ is released.
  std::shared_ptr<const Version> version = t->version;
  uint64_t bytes = TabletBytes(*t);
  mu_.Unlock();
  std::vector<std::string> keys;
  Status s;
  for (const auto& level : version->levels) {
    for (const auto& f : level) {
      Result<std::shared_ptr<Table>> table =
          table_cache_->Get(f->number, f->size);
      if (!table.ok()) {
        s = table.status();
        break;
      }
      for (const std::string& k : (*table)->IndexKeys()) {
        std::string_view rp = RowPrefixView(k);
        if (t->Contains(rp)) keys.emplace_back(rp);
      }
    }
  }
  mu_.Lock();
  TABLETFS_RETURN_IF_ERROR(s);
  std::sort(keys.begin(), keys.end());
  // Never inside a row: the left half ends before the split row, which
  // must come after the tablet's first row.
  std::string split_key;
  for (size_t i = keys.size() / 2; i < keys.size(); ++i) {
    if (keys[i] > t->lo) {
      split_key = keys[i];
      break;
    }
  }
  std::string row = RowOfPrefix(split_key);
  if (row.empty() || RowPrefix(t->table_id, row) <= t->lo) {
    // One row holds (almost) everything: it stays whole.
    t->no_split_below = bytes * 2;
    Log(LogLevel::kInfo, "tablet " + std::to_string(t->id) +
                             ": no row to split at (" + std::to_string(bytes) +
                             " bytes)");
    return Status::OK();
  }

  mu_.Unlock();
  schema_mu_.Lock();  // orders the split with schema changes and ids
  mu_.Lock();
  if (tablets_.count(t->id) == 0) {  // its table was dropped meanwhile
    mu_.Unlock();
    schema_mu_.Unlock();
    mu_.Lock();
    return Status::OK();
  }
  VersionEdit edit;
  edit.splits.push_back({t->id, next_schema_id_, next_schema_id_ + 1, row});
  edit.next_schema_id = next_schema_id_ + 2;
  mu_.Unlock();
  s = LogEdit(edit);
  mu_.Lock();
  if (s.ok()) {
    // Logged: now the tablets change in memory, writers held back only
    // for this.
    StartTabletChange();
    s = ApplyEdit(edit);
    FinishTabletChange();
    ++stat_splits_;
    Log(LogLevel::kInfo, "split tablet " + std::to_string(t->id) + " (" +
                             std::to_string(bytes) + " bytes) into " +
                             std::to_string(edit.splits[0].left) + " and " +
                             std::to_string(edit.splits[0].right));
  }
  mu_.Unlock();
  schema_mu_.Unlock();
  mu_.Lock();
  return s.WithContext("split");
}

Status DBImpl::MergeTablets(std::shared_ptr<Tablet> a,
                            std::shared_ptr<Tablet> b) {
  mu_.Unlock();
  schema_mu_.Lock();
  mu_.Lock();
  if (tablets_.count(a->id) == 0 || tablets_.count(b->id) == 0) {
    mu_.Unlock();
    schema_mu_.Unlock();
    mu_.Lock();
    return Status::OK();
  }
  VersionEdit edit;
  edit.merges.push_back({a->id, b->id, next_schema_id_});
  edit.next_schema_id = next_schema_id_ + 1;
  mu_.Unlock();
  Status s = LogEdit(edit);
  mu_.Lock();
  if (s.ok()) {
    StartTabletChange();
    s = ApplyEdit(edit);
    FinishTabletChange();
    ++stat_merges_;
    Log(LogLevel::kInfo, "merged tablets " + std::to_string(a->id) + " and " +
                             std::to_string(b->id) + " into " +
                             std::to_string(edit.merges[0].merged));
  }
  mu_.Unlock();
  schema_mu_.Unlock();
  mu_.Lock();
  return s.WithContext("merge");
}

// ---------------------------------------------------------------------------
// Listing
// ---------------------------------------------------------------------------

Result<std::vector<TabletInfo>> DBImpl::ListTablets(std::string_view table) {
  struct Pinned {
    std::string start_row, end_row, lo, hi;
    std::shared_ptr<const Version> version;
    uint64_t memory_bytes = 0;
  };
  std::vector<Pinned> pinned;
  {
    MutexLock l(&mu_);
    auto it = tables_.find(table);
    if (it == tables_.end()) return Status::NotFound("no such table", table);
    for (const auto& t : table_tablets_[it->second->id]) {
      pinned.push_back({t->start_row, t->end_row, t->lo, t->hi, t->version,
                        t->MemoryBytes()});
    }
  }
  std::vector<TabletInfo> out;
  for (const Pinned& p : pinned) {
    TabletInfo info;
    info.start_row = p.start_row;
    info.end_row = p.end_row;
    info.bytes = p.memory_bytes;
    std::vector<std::string> keys;
    for (const auto& level : p.version->levels) {
      for (const auto& f : level) {
        ++info.files;
        Result<std::shared_ptr<Table>> t =
            table_cache_->Get(f->number, f->size);
        if (!t.ok()) return t.status();
        std::string_view first = RowPrefixView(f->smallest);
        std::string_view last = RowPrefixView(f->largest);
        if (first >= p.lo && last < p.hi) {
          info.bytes += f->size;
        } else {
          // Shared with a sibling after a split: the part in range.
          uint64_t a = (*t)->ApproximateOffsetOf(p.lo);
          uint64_t b = (*t)->ApproximateOffsetOf(p.hi);
          info.bytes += b > a ? b - a : 0;
        }
        for (const std::string& k : (*t)->IndexKeys()) {
          std::string_view rp = RowPrefixView(k);
          if (rp >= p.lo && rp < p.hi) keys.emplace_back(rp);
        }
      }
    }
    std::sort(keys.begin(), keys.end());
    constexpr size_t kSamples = 8;
    for (size_t i = 1; i <= kSamples && !keys.empty(); ++i) {
      std::string row = RowOfPrefix(keys[i * keys.size() / (kSamples + 1)]);
      if (row.empty() || row == info.start_row) continue;
      if (!info.sample_rows.empty() && info.sample_rows.back() == row) continue;
      info.sample_rows.push_back(std::move(row));
    }
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace tabletfs
