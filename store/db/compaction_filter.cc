#include "store/db/compaction_filter.h"

#include <algorithm>

namespace tabletfs {

CompactionFilter::CompactionFilter(
    std::map<uint32_t, std::shared_ptr<const TableState>> tables, bool bottom,
    uint64_t view_seq, uint64_t epoch_view_seq, int64_t now_micros)
    : tables_(std::move(tables)),
      bottom_(bottom),
      view_seq_(view_seq),
      epoch_view_seq_(epoch_view_seq),
      now_micros_(now_micros) {}

bool CompactionFilter::Keep(const ParsedKey& p) {
  if (!have_table_ || p.table_id != table_id_) {
    have_table_ = true;
    table_id_ = p.table_id;
    auto it = tables_.find(p.table_id);
    table_ = it == tables_.end() ? nullptr : it->second.get();
    row_prefix_.clear();
  }
  if (table_ == nullptr) return Drop();

  if (row_prefix_.empty() || p.row_prefix != row_prefix_) {
    row_prefix_.assign(p.row_prefix);
    row_del_ = 0;
    in_family_ = false;
    in_cell_ = false;
  }
  if (p.section == KeySection::kRowMarker) {
    if (!bottom_ || p.seq > view_seq_) return true;
    row_del_ = std::max(row_del_, p.seq);
    return Drop();
  }

  if (!in_family_ || p.family_id != family_id_) {
    in_family_ = true;
    in_cell_ = false;
    family_id_ = p.family_id;
    family_ = table_->FindFamilyById(p.family_id);
    family_del_ = row_del_;
  }
  if (family_ == nullptr) return Drop();
  if (!bottom_) return true;

  if (p.section == KeySection::kFamilyMarker) {
    if (p.seq > view_seq_) return true;
    family_del_ = std::max(family_del_, p.seq);
    return Drop();
  }

  if (!in_cell_ || p.cell_prefix != cell_prefix_) {
    in_cell_ = true;
    cell_prefix_.assign(p.cell_prefix);
    cell_del_ = family_del_;
    ranks_.clear();
    have_last_ts_ = false;
  }
  if (p.section == KeySection::kCellMarker) {
    if (p.seq > view_seq_) return true;
    cell_del_ = std::max(cell_del_, p.seq);
    return Drop();
  }

  // A version: the same decisions CellCursor makes at view_seq_.
  if (p.seq > view_seq_) return true;
  if (have_last_ts_ && p.timestamp == last_ts_) return Drop();
  have_last_ts_ = true;
  last_ts_ = p.timestamp;
  if (p.seq <= cell_del_ || p.kind == EntryKind::kDeleteVersion) return Drop();
  if (family_->CollectsNext(p.seq, epoch_view_seq_, now_micros_ - p.timestamp,
                            &ranks_)) {
    return Drop();
  }
  return true;
}

}  // namespace tabletfs
