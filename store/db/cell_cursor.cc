#include "store/db/cell_cursor.h"

#include <algorithm>

#include "store/util/coding.h"

namespace tabletfs {

CellCursor::CellCursor(std::unique_ptr<Iterator> iter,
                       std::shared_ptr<const TableState> table,
                       CursorOptions options)
    : options_(std::move(options)) {
  Reset(std::move(iter), std::move(table));
}

void CellCursor::Reset(std::unique_ptr<Iterator> iter,
                       std::shared_ptr<const TableState> table) {
  iter_ = std::move(iter);
  table_ = std::move(table);
  filter_.clear();
  filter_all_ = options_.families.empty() && options_.columns.empty();
  for (const std::string& f : options_.families) {
    const FamilyState* fs = table_->FindFamily(f);
    if (fs != nullptr) filter_[fs->id] = std::nullopt;
  }
  for (const Column& c : options_.columns) {
    const FamilyState* fs = table_->FindFamily(c.family);
    if (fs == nullptr) continue;
    auto it = filter_.find(fs->id);
    if (it == filter_.end()) {
      filter_[fs->id] = std::set<std::string>{c.qualifier};
    } else if (it->second.has_value()) {
      it->second->insert(c.qualifier);
    }
  }
  valid_ = false;
  status_ = Status::OK();
  row_prefix_.clear();
  row_.clear();
  row_del_ = 0;
  in_family_ = false;
  family_id_ = 0;
  family_ = nullptr;  // with table_ changed, DecideGc must run again
  gc_ = Gc::kNever;
  gc_rank_ = 0;
  family_all_columns_ = true;
  family_del_ = 0;
  in_cell_ = false;
  cell_prefix_.clear();
  qualifier_.clear();
  cell_del_ = 0;
  ranks_.clear();
  emitted_ = 0;
  have_last_ts_ = false;
  last_ts_ = 0;
  has_target_ = false;
  target_row_prefix_.clear();
  target_family_ = 0;
  target_qualifier_.clear();
  timestamp_ = 0;
  kind_ = EntryKind::kPut;
}

void CellCursor::Release() {
  iter_.reset();
  table_.reset();
  family_ = nullptr;
  gc_ = Gc::kNever;
  valid_ = false;
}

bool CellCursor::FamilyWanted(uint32_t fid, bool* all_columns) const {
  *all_columns = true;
  if (filter_all_) return true;
  auto it = filter_.find(fid);
  if (it == filter_.end()) return false;
  *all_columns = !it->second.has_value();
  return true;
}

bool CellCursor::ColumnWanted() const {
  if (family_all_columns_) return true;
  const auto& quals = filter_.at(family_id_);
  return quals->count(qualifier_) > 0;
}

void CellCursor::Finish() {
  valid_ = false;
  if (status_.ok()) status_ = iter_->status();
}

void CellCursor::SeekIter(const std::string& target) { iter_->Seek(target); }

const std::string& CellCursor::FamilyKey(uint32_t family_id, char tail) {
  skip_.assign(row_prefix_);
  skip_.push_back('\x02');
  PutBigEndian32(&skip_, family_id);
  if (tail != 0) skip_.push_back(tail);
  return skip_;
}

void CellCursor::SkipForward(std::string_view target) {
  // A few Next() calls are cheaper than a seek, which repositions every
  // child of the merge; most skips are short (the rest of a cell's
  // versions). REQUIRES: the iterator is before `target`.
  for (int i = 0; i < 8 && iter_->Valid(); ++i) {
    if (iter_->key() >= target) return;
    iter_->Next();
  }
  if (!iter_->Valid() && iter_->status().ok()) return;  // nothing after
  if (iter_->Valid() && iter_->key() >= target) return;
  iter_->Seek(target);
}

void CellCursor::SeekToFirst() {
  Seek(options_.prefix > options_.start_row ? options_.prefix
                                            : options_.start_row);
}

void CellCursor::Seek(std::string_view row, std::string_view family,
                      std::string_view qualifier) {
  std::string_view r = row;
  bool clipped = false;
  if (r < options_.start_row) {
    r = options_.start_row;
    clipped = true;
  }
  if (!options_.prefix.empty() && r < options_.prefix) {
    r = options_.prefix;
    clipped = true;
  }
  has_target_ = false;
  if (!clipped && !family.empty()) {
    const FamilyState* fs = table_->FindFamily(family);
    if (fs != nullptr) {
      has_target_ = true;
      target_family_ = fs->id;
      target_qualifier_.assign(qualifier);
    }
  }
  skip_.clear();
  PutBigEndian32(&skip_, table_->id);
  AppendEscaped(&skip_, r);
  if (has_target_) target_row_prefix_.assign(skip_);
  row_prefix_.clear();
  // Always start at the row's first key so its markers are seen; the target
  // family / qualifier is reached by seeking forward from there.
  SeekIter(skip_);
  FindNext();
}

void CellCursor::Next() {
  iter_->Next();
  FindNext();
}

void CellCursor::NextColumn() {
  SkipCell();
  FindNext();
}

void CellCursor::NextFamily() {
  SkipForward(FamilyKey(family_id_, '\x03'));
  FindNext();
}

void CellCursor::NextRow() {
  // Most rows end at the next key (a row of one cell of one version): step
  // once and look, before building a target to skip to.
  if (!row_prefix_.empty() && iter_->Valid()) {
    iter_->Next();
    if (!iter_->Valid() || !iter_->key().starts_with(row_prefix_)) {
      FindNext();
      return;
    }
  }
  skip_.assign(row_prefix_);
  skip_.push_back('\x03');
  SkipForward(skip_);
  FindNext();
}

// FindNext walks keys until one is a version the read returns. Each key
// passes the steps below in turn, each entering (or skipping) its scope: the
// row, the family, the cell, and last the version itself. A step answers
// kOn (the next step takes this key), kMoved (the iterator moved: start
// again at the key it is on now), kEmit or kEnd.
void CellCursor::FindNext() {
  valid_ = false;
  ParsedKey p;
  while (iter_->Valid()) {
    Step step = ParseKey(&p);
    if (step == Step::kOn) step = EnterRow(p);
    if (step == Step::kOn) step = EnterFamily(p);
    if (step == Step::kOn) step = EnterCell(p);
    if (step == Step::kOn) step = VisitVersion(p);
    if (step == Step::kEmit) {
      valid_ = true;
      return;
    }
    if (step == Step::kEnd) break;
  }
  Finish();
}

CellCursor::Step CellCursor::ParseKey(ParsedKey* p) {
  std::string_view key = iter_->key();
  if (!options_.stop_key.empty() && key >= options_.stop_key) {
    return Step::kEnd;
  }
  if (!ParseInternalKey(key, p)) {
    status_ =
        Status::Corruption("malformed internal key", "in table " + table_->name);
    return Step::kEnd;
  }
  return p->table_id == table_->id ? Step::kOn : Step::kEnd;
}

bool CellCursor::TakeMarker(const ParsedKey& p, KeySection section,
                            uint64_t* del) {
  if (p.section != section) return false;
  if (p.seq <= options_.view_seq) *del = std::max(*del, p.seq);
  iter_->Next();
  return true;
}

CellCursor::Step CellCursor::EnterRow(const ParsedKey& p) {
  if (row_prefix_.empty() || p.row_prefix != row_prefix_) {
    AssignUnescaped(p.row_enc, p.row_plain, &next_row_);
    const std::string& row = next_row_;
    if (!options_.end_row.empty() && row >= options_.end_row) {
      return Step::kEnd;
    }
    if (!options_.prefix.empty()) {
      if (row < options_.prefix) {
        SkipForward(RowPrefix(table_->id, options_.prefix));
        return Step::kMoved;
      }
      if (row.compare(0, options_.prefix.size(), options_.prefix) != 0) {
        return Step::kEnd;
      }
    }
    if (row < options_.start_row) {
      SkipForward(RowPrefix(table_->id, options_.start_row));
      return Step::kMoved;
    }
    if (has_target_ && p.row_prefix != target_row_prefix_) has_target_ = false;
    row_prefix_.assign(p.row_prefix);
    row_.swap(next_row_);
    row_del_ = 0;
    in_family_ = false;
    in_cell_ = false;
  }
  return TakeMarker(p, KeySection::kRowMarker, &row_del_) ? Step::kMoved
                                                          : Step::kOn;
}

CellCursor::Step CellCursor::EnterFamily(const ParsedKey& p) {
  if (!in_family_ || p.family_id != family_id_) {
    if (has_target_ && p.family_id < target_family_) {
      SkipForward(FamilyKey(target_family_, 0));
      return Step::kMoved;
    }
    if (has_target_ && p.family_id > target_family_) has_target_ = false;
    in_family_ = true;
    in_cell_ = false;
    family_id_ = p.family_id;
    const FamilyState* family = table_->FindFamilyById(p.family_id);
    if (family != family_) {
      family_ = family;
      DecideGc();
    }
    family_del_ = row_del_;
    if (family_ == nullptr ||
        !FamilyWanted(p.family_id, &family_all_columns_)) {
      // A dropped family (its data awaits compaction) or one the read
      // does not want.
      SkipForward(FamilyKey(p.family_id, '\x03'));
      return Step::kMoved;
    }
  }
  return TakeMarker(p, KeySection::kFamilyMarker, &family_del_) ? Step::kMoved
                                                                : Step::kOn;
}

CellCursor::Step CellCursor::EnterCell(const ParsedKey& p) {
  if (!in_cell_ || p.cell_prefix != cell_prefix_) {
    AssignUnescaped(p.qualifier_enc, p.qualifier_plain, &next_qual_);
    if (has_target_) {
      // Here p.family_id == target_family_.
      if (next_qual_ < target_qualifier_) {
        FamilyKey(target_family_, '\x02');
        AppendEscaped(&skip_, target_qualifier_);
        has_target_ = false;
        SkipForward(skip_);
        return Step::kMoved;
      }
      has_target_ = false;
    }
    in_cell_ = true;
    cell_prefix_.assign(p.cell_prefix);
    qualifier_.swap(next_qual_);
    cell_del_ = family_del_;
    ranks_.clear();
    gc_rank_ = 0;
    emitted_ = 0;
    have_last_ts_ = false;
    if (!ColumnWanted()) {
      SkipCell();
      return Step::kMoved;
    }
  }
  return TakeMarker(p, KeySection::kCellMarker, &cell_del_) ? Step::kMoved
                                                            : Step::kOn;
}

void CellCursor::DecideGc() {
  gc_ = Gc::kGeneral;
  if (family_ == nullptr || family_->NeverCollects()) {
    gc_ = Gc::kNever;
  } else if (family_->epochs.size() == 1 &&
             family_->epochs[0].policy.kind() == GcPolicy::Kind::kMaxVersions) {
    gc_ = Gc::kMaxVersions;
    gc_max_versions_ = family_->epochs[0].policy.max_versions();
    gc_since_ = family_->epochs[0].since;
  }
}

// FamilyState::CollectsNext, without its general loop for the two common
// cases (the same answer: one epoch, rank against N).
bool CellCursor::Collects(const ParsedKey& p) {
  switch (gc_) {
    case Gc::kNever:
      return false;
    case Gc::kMaxVersions: {
      const bool collects =
          gc_since_ <= options_.epoch_view_seq && gc_rank_ >= gc_max_versions_;
      ++gc_rank_;
      return collects;
    }
    case Gc::kGeneral:
      break;
  }
  return family_->CollectsNext(p.seq, options_.epoch_view_seq,
                               options_.now_micros - p.timestamp, &ranks_);
}

CellCursor::Step CellCursor::VisitVersion(const ParsedKey& p) {
  if (p.seq > options_.view_seq ||
      (have_last_ts_ && p.timestamp == last_ts_)) {
    // Newer than the view, or an older write at a timestamp whose newest
    // visible entry already decided it.
    iter_->Next();
    return Step::kMoved;
  }
  have_last_ts_ = true;
  last_ts_ = p.timestamp;
  if (p.seq <= cell_del_ || p.kind == EntryKind::kDeleteVersion ||
      Collects(p) || (options_.at.has_value() && p.timestamp > *options_.at)) {
    // Deleted, collected by the GC policy, or after the read's time T.
    iter_->Next();
    return Step::kMoved;
  }
  if (options_.max_versions != 0 && emitted_ >= options_.max_versions) {
    SkipCell();
    return Step::kMoved;
  }
  ++emitted_;
  timestamp_ = p.timestamp;
  kind_ = p.kind;
  return Step::kEmit;
}

void CellCursor::SkipCell() {
  skip_.assign(cell_prefix_);
  skip_.push_back('\x03');
  SkipForward(skip_);
}

}  // namespace tabletfs
