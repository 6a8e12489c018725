// CompactionFilter: decides, entry by entry in key order, what a flush or
// compaction keeps.
//
// Everywhere: entries of dropped tables and families go (ids are never
// reused, so nothing can read them again).
// At the bottom (the compaction holds every entry of its rows: nothing in
// deeper levels overlaps them, and shallower levels hold only newer
// sequence numbers): entries no read at or after `view_seq` can see go too —
// entries masked by markers, superseded entries at one timestamp,
// delete-version entries, versions GC collects, and the markers themselves.
// Entries newer than `view_seq` (the oldest live snapshot) are kept as they
// are. So the result reads exactly as the input did at every view at or
// after `view_seq` (see store/doc/compaction.md for the one GC caveat).
//
// Thread safety: one thread at a time.
#ifndef TABLETFS_STORE_DB_COMPACTION_FILTER_H_
#define TABLETFS_STORE_DB_COMPACTION_FILTER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "store/db/key_format.h"
#include "store/db/schema_state.h"

namespace tabletfs {

class CompactionFilter {
 public:
  CompactionFilter(std::map<uint32_t, std::shared_ptr<const TableState>> tables,
                   bool bottom, uint64_t view_seq, uint64_t epoch_view_seq,
                   int64_t now_micros);

  // REQUIRES: keys come in ascending order.
  bool Keep(const ParsedKey& p);

  uint64_t dropped() const { return dropped_; }

 private:
  bool Drop() {
    ++dropped_;
    return false;
  }

  const std::map<uint32_t, std::shared_ptr<const TableState>> tables_;
  const bool bottom_;
  const uint64_t view_seq_;
  const uint64_t epoch_view_seq_;
  const int64_t now_micros_;
  uint64_t dropped_ = 0;

  const TableState* table_ = nullptr;
  uint32_t table_id_ = 0;
  bool have_table_ = false;
  std::string row_prefix_;
  uint64_t row_del_ = 0;
  bool in_family_ = false;
  uint32_t family_id_ = 0;
  const FamilyState* family_ = nullptr;
  uint64_t family_del_ = 0;
  bool in_cell_ = false;
  std::string cell_prefix_;
  uint64_t cell_del_ = 0;
  std::vector<uint64_t> ranks_;  // per GC epoch
  bool have_last_ts_ = false;
  int64_t last_ts_ = 0;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_COMPACTION_FILTER_H_
