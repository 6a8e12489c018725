// Tablet: a contiguous row range of one table with its own memtables and
// SSTable levels, compacted on its own (store/doc/tablets.md). All tablets
// share the one commit log; each records the oldest log that may still hold
// an entry of it that is not in its SSTables.
//
// Ownership: the engine holds tablets by std::shared_ptr; a split or merge
// replaces them with new objects. Memtables and files may be shared: after a
// split both halves read their parent's frozen memtable and SSTables, each
// clipped to its own range, until flushes and compactions rewrite them.
//
// Thread safety: every mutable field is guarded by the engine's mutex
// (DBImpl::mu_). Readers pin the tablet's TabletView (immutable) under that
// mutex and use it without it.
#ifndef TABLETFS_STORE_DB_TABLET_H_
#define TABLETFS_STORE_DB_TABLET_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "store/db/memtable.h"
#include "store/db/version_edit.h"
#include "store/util/iterator.h"

namespace tabletfs {

// The set of live SSTables of one tablet, per level. Immutable once built;
// shared by readers, scanners and compactions that use it.
struct Version {
  static constexpr int kNumLevels = tabletfs::kNumLevels;
  Version() = default;
  // A copy (the start of the next version) counts overlapped reads anew.
  Version(const Version& other) {
    for (int i = 0; i < kNumLevels; ++i) levels[i] = other.levels[i];
  }
  Version& operator=(const Version&) = delete;

  // Level 0: newest file first (files may overlap). Levels >= 1: sorted by
  // smallest key, disjoint.
  std::vector<std::shared_ptr<const FileMeta>> levels[kNumLevels];
  // Point reads of this version that searched a level-0 file and another
  // file as well, or probed two level-0 files' filters (LevelDB's seek
  // compaction, which counts searches only): past
  // ReadCompactionThreshold() its level 0 is compacted though it holds
  // fewer files than the trigger.
  mutable std::atomic<uint64_t> overlapped_reads{0};
};

// Overlapped reads (Version::overlapped_reads) after which a version's
// level 0 is compacted: one per 16 KiB of level-0 data, at least 1,000
// (LevelDB allows a file size / 16 KiB wasted seeks, at least 100).
uint64_t ReadCompactionThreshold(const Version& v);

// A frozen memtable waiting for its flush.
struct Immutable {
  std::shared_ptr<MemTable> mem;
  uint64_t first_log = 0;  // the oldest log holding one of its entries
  uint64_t first_seq = 0;  // no entry of it has a smaller sequence
  uint64_t order = 0;      // freeze order across tablets: oldest flush first
};

inline constexpr uint64_t kNoLog = std::numeric_limits<uint64_t>::max();

// What a read of one tablet pins under the engine's mutex: its bounds,
// memtables and version as one immutable object, so that a read takes one
// reference, not one per memtable and version (docs/BENCHMARKS.md,
// twenty-second session).
struct TabletView {
  std::string lo;
  std::string hi;
  std::vector<std::shared_ptr<MemTable>> mems;  // newest first
  std::shared_ptr<const Version> version;
};

struct Tablet {
  uint32_t id = 0;
  uint32_t table_id = 0;
  // [start_row, end_row); empty: unbounded.
  std::string start_row;
  std::string end_row;
  // The same bounds as internal-key prefixes: a key belongs to the tablet
  // when lo <= key < hi.
  std::string lo;
  std::string hi;

  std::shared_ptr<MemTable> mem;
  uint64_t mem_first_log = kNoLog;  // kNoLog while mem is empty
  uint64_t mem_first_seq = 0;       // as Immutable::first_seq, when not empty
  std::vector<Immutable> imm;       // oldest first
  std::shared_ptr<const Version> version;
  // lo, hi, mem, imm and version for readers; RefreshView() rebuilds it,
  // and the engine calls it wherever it changes one of them (NewTablet,
  // SetVersion, a freeze, a flush's end, a log switch).
  std::shared_ptr<const TabletView> view;
  // As last recorded in the manifest: logs below it hold nothing unflushed
  // of this tablet, and its entries with sequences up to flushed_seq are
  // all in its SSTables (a flush does not switch the log, which other
  // tablets share: replay skips what the flush wrote by sequence).
  uint64_t log_number = 0;
  uint64_t flushed_seq = 0;
  std::string compact_pointer[kNumLevels];
  // HasForeignFiles() of version, kept current by the engine.
  bool foreign_files = false;
  // A split found no row to split at (one huge row): not tried again until
  // the tablet holds this many bytes.
  uint64_t no_split_below = 0;

  // Sets start/end rows and the encoded bounds.
  void SetRange(std::string start, std::string end);
  void RefreshView();
  // Whether internal key (or row prefix) `key` lies in the range.
  bool Contains(std::string_view key) const { return key >= lo && key < hi; }
  // The oldest log holding an unflushed entry of this tablet (kNoLog: none).
  uint64_t OldestLog() const;
  // Whether the active memtable holds entries or a leader routed some to it
  // (mem_first_log is set at routing, before the leader fills it without
  // mu_): a split or merge then keeps it, frozen, for its halves.
  bool MemInUse() const {
    return mem->entries() > 0 || mem_first_log != kNoLog;
  }
  // The active memtable as a frozen one (for a freeze, split or merge).
  Immutable FrozenMem(uint64_t order) const {
    return {mem, mem_first_log, mem_first_seq, order};
  }
  // Bytes of data in memtables (shared frozen ones counted whole).
  uint64_t MemoryBytes() const;
  // Bytes of SSTables (shared ones counted whole) and their count.
  uint64_t FileBytes() const;
  uint64_t FileCount() const;
  // Whether a file extends past the range (shared with a sibling after a
  // split): such a tablet is rewritten before it may split or merge.
  bool HasForeignFiles() const;
};

// The encoded bounds of a table's whole row space.
std::string TableLowKey(uint32_t table_id);
std::string TableHighKey(uint32_t table_id);

// An iterator over consecutive disjoint key ranges [lo, hi), in order, each
// read through an iterator made by `open` on first use and clipped to its
// range (keys outside it are skipped). Seeks touch only the segment that
// holds the target. With one segment: a clipped iterator.
struct IteratorSegment {
  std::string lo;
  std::string hi;
  std::function<std::unique_ptr<Iterator>()> open;
};
std::unique_ptr<Iterator> NewSegmentIterator(
    std::vector<IteratorSegment> segments);

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_TABLET_H_
