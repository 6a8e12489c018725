// CellCursor: walks the internal keys of one table and stops on each cell
// version a read may return, applying everything that decides visibility:
// the view (sequence number), row / family / cell markers (which hide
// entries of lower sequence in their scope), delete-version entries, GC
// policies (rank and age at the read's `now`), the time T of the read, the
// family / column filter, max_versions and the row range.
//
// Every read (ReadRow, ReadCell, Scanner) goes through this one class, so
// they cannot disagree. Memory is bounded: nothing is buffered beyond the
// current key; values are views into the underlying iterator.
//
// Thread safety: one thread at a time.
#ifndef TABLETFS_STORE_DB_CELL_CURSOR_H_
#define TABLETFS_STORE_DB_CELL_CURSOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "store/db/key_format.h"
#include "store/db/schema_state.h"
#include "store/options.h"
#include "store/util/iterator.h"

namespace tabletfs {

struct CursorOptions {
  uint64_t view_seq = kMaxSequence;
  // GC policy epochs in force: those since <= this (a snapshot's sequence;
  // kMaxSequence for the latest state, where every epoch is in force).
  uint64_t epoch_view_seq = kMaxSequence;
  int64_t now_micros = 0;     // for GC by age (0 when no policy uses it)
  std::optional<int64_t> at;  // read as of T
  uint32_t max_versions = 1;  // 0: all
  std::vector<std::string> families;
  std::vector<Column> columns;
  std::string start_row, end_row, prefix;
  // Not empty: the cursor ends at the first internal key >= stop_key. A
  // point read sets it just past its row or cell, so it never reads on into
  // the next one.
  std::string stop_key;
};

class CellCursor {
 public:
  // `iter` iterates internal keys (it may hold other tables too).
  CellCursor(std::unique_ptr<Iterator> iter,
             std::shared_ptr<const TableState> table, CursorOptions options);
  // An idle cursor, for Reset.
  CellCursor() = default;
  CellCursor(const CellCursor&) = delete;
  CellCursor& operator=(const CellCursor&) = delete;

  // Starts a new read over `iter` with the options in *mutable_options()
  // (set them first, in place): as constructing a new cursor, but the
  // strings the cursor keeps keep their capacity, so a point read that
  // reuses one allocates none of them (DBImpl's point reads do).
  void Reset(std::unique_ptr<Iterator> iter,
             std::shared_ptr<const TableState> table);
  CursorOptions* mutable_options() { return &options_; }
  // Drops the iterator and the table, and what they pin: the cursor is idle.
  void Release();

  void SeekToFirst();
  // First visible version at or after (row, family, qualifier); an empty or
  // unknown family means the row's start.
  void Seek(std::string_view row, std::string_view family = {},
            std::string_view qualifier = {});
  void Next();
  void NextColumn();
  void NextFamily();
  void NextRow();

  bool Valid() const { return valid_; }
  Status status() const { return status_; }
  // REQUIRES: Valid(). Views valid until the cursor moves.
  const std::string& row() const { return row_; }
  const std::string& family() const { return family_->name; }
  uint32_t family_id() const { return family_->id; }
  const std::string& qualifier() const { return qualifier_; }
  int64_t timestamp() const { return timestamp_; }
  EntryKind kind() const { return kind_; }
  // The stored value: the bytes, or a value-file reference for kPutValueRef.
  std::string_view raw_value() const { return iter_->value(); }

 private:
  // What one step of FindNext did with the key the iterator is on.
  enum class Step {
    kOn,     // the key is in scope: the next step takes it
    kMoved,  // the key was consumed or skipped: the iterator moved
    kEmit,   // the key is a version the read returns
    kEnd,    // the read is over (or failed: status_)
  };
  void FindNext();
  // The steps of FindNext, in order (cell_cursor.cc).
  Step ParseKey(ParsedKey* p);
  Step EnterRow(const ParsedKey& p);
  Step EnterFamily(const ParsedKey& p);
  Step EnterCell(const ParsedKey& p);
  Step VisitVersion(const ParsedKey& p);
  // When `p` is a marker of `section`: folds its sequence into *del (what
  // it hides) and moves past it.
  bool TakeMarker(const ParsedKey& p, KeySection section, uint64_t* del);
  // Moves past every remaining entry of the current cell.
  void SkipCell();
  void SeekIter(const std::string& target);
  void SkipForward(std::string_view target);
  // skip_ = row_prefix_ + 0x02 + be32(family_id) (+ `tail` when not 0).
  const std::string& FamilyKey(uint32_t family_id, char tail);
  void Finish();
  bool FamilyWanted(uint32_t fid, bool* all_columns) const;
  bool ColumnWanted() const;

  std::unique_ptr<Iterator> iter_;
  std::shared_ptr<const TableState> table_;
  CursorOptions options_;
  // Filter: family id -> qualifiers wanted (all when the set is absent).
  std::map<uint32_t, std::optional<std::set<std::string>>> filter_;
  bool filter_all_ = true;

  bool valid_ = false;
  Status status_;

  // Context of the current row / family / cell.
  std::string row_prefix_;  // empty: no row context
  std::string row_;
  uint64_t row_del_ = 0;
  bool in_family_ = false;
  uint32_t family_id_ = 0;
  const FamilyState* family_ = nullptr;
  // How family_ collects, decided when family_ changes: most families have
  // no GC policy or one maxversions=N since their creation, and asking
  // CollectsNext for every version was a twentieth of a scan's work.
  enum class Gc : uint8_t { kNever, kMaxVersions, kGeneral };
  Gc gc_ = Gc::kNever;
  uint64_t gc_max_versions_ = 0;  // kMaxVersions: its N
  uint64_t gc_since_ = 0;         // kMaxVersions: the epoch's start
  uint64_t gc_rank_ = 0;          // kMaxVersions: live versions seen
  void DecideGc();
  bool Collects(const ParsedKey& p);
  bool family_all_columns_ = true;
  uint64_t family_del_ = 0;
  bool in_cell_ = false;
  std::string cell_prefix_;
  std::string qualifier_;
  uint64_t cell_del_ = 0;
  std::vector<uint64_t> ranks_;  // per GC epoch
  uint32_t emitted_ = 0;
  bool have_last_ts_ = false;
  int64_t last_ts_ = 0;

  // A Seek into the middle of a row: walk the row's markers, then skip to
  // this family / qualifier.
  bool has_target_ = false;
  std::string target_row_prefix_;
  uint32_t target_family_ = 0;
  std::string target_qualifier_;

  int64_t timestamp_ = 0;
  EntryKind kind_ = EntryKind::kPut;

  // Scratch buffers, kept so that moving the cursor does not allocate.
  std::string skip_;       // a SkipForward / Seek target
  std::string next_row_;   // the decoded row of a key being looked at
  std::string next_qual_;  // the decoded qualifier of a key being looked at
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_CELL_CURSOR_H_
