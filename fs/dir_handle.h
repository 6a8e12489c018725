// DirHandle: one open directory, listed in a stream (DESIGN.md, issue 4
// "readdir"). Offsets are a per-handle counter: "." is 1, ".." is 2, the
// n-th entry after them is n + 2. The handle remembers the key of the
// entries it returned recently and resumes by seeking past the key of the
// offset the kernel resumes from, so rows added or removed during a listing
// never make it skip or repeat, and memory stays bounded however many rows
// the table has (the store's Scanner streams; only kRememberedEntries keys
// are kept). Resuming from a remembered offset forgets the offsets after it:
// they are handed out again, to the entries the resumed stream produces.
// An older offset the handle returned (seekdir to an old telldir) restarts
// the pass and skips that many entries: exact when the directory did not
// change meanwhile.
//
// Listing order: tables, rows and qualifiers in byte order (a row listing
// merges the directories made by mkdir); families (in a row and in
// `.schema/TABLE`) by name; under `.versions`, every version of each
// qualifier, newest first. A `.at/T` listing reads as of T. A table or
// family listing reads one consistent snapshot (the scanner's) per pass.
//
// Thread safety: Read() may be called from any thread; calls on one handle
// are serialized by its mutex. REQUIRES: the store outlives the handle.
#ifndef TABLETFS_FS_DIR_HANDLE_H_
#define TABLETFS_FS_DIR_HANDLE_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fs/ephemeral_dirs.h"
#include "fs/errors.h"
#include "fs/path_map.h"
#include "store/bigtable.h"
#include "store/util/mutex.h"

namespace tabletfs::fs {

struct DirEntry {
  std::string name;
  // Offset the kernel passes back to continue after this entry.
  off_t offset = 0;
  // "." and "..": no node, no lookup count.
  bool is_dot = false;
  Node node;
  // Cells: newest version's size and timestamp. Tables, rows and families
  // with cells: the newest timestamp of their cells and the fingerprint of
  // their entries (DirTimes; a table's `entries` is set also without
  // cells).
  uint64_t size = 0;
  int64_t timestamp = 0;
  bool has_timestamp = false;
  int64_t entries = 0;
  // Family directories and cells: the family's settings.
  std::optional<FamilySettings> settings;
};

// What the mtime of a table, row or family directory follows: the newest
// timestamp of its cells, and a fingerprint of its entries (the names of
// the rows of a table, of the families of a row, of the qualifiers of a
// family). Its mtime is the one utimensat set for exactly these entries
// (rsync -a sets every directory's), else the newest timestamp; as on a
// local disk, writing a file in it changes only its mtime when the entries
// change. The root's entries are the tables; it has no newest timestamp.
struct DirTimes {
  std::optional<int64_t> newest;  // nullopt: no cells
  int64_t entries = 0;            // fingerprint, >= 0
};
// A family directory's entries fingerprint is the XOR of this over its
// qualifiers, shifted right by one: in no order, so that it can follow one
// name at a time (fs/dir_times_cache.h). The others' hash their sorted
// names.
uint64_t QualifierHash(std::string_view qualifier);
// The DirTimes of the columns from the scanner's position on that are in
// `row` (and in `family`, when not empty). A row's entries also count the
// families made by mkdir that have no cells yet (`made`). Reads no value.
// Leaves the scanner after them.
DirTimes ScanDirTimes(Scanner& s, std::string_view row, std::string_view family,
                      std::vector<std::string> made = {});

// A table's DirTimes are bounded, so that a stat of a table and a listing
// of the mount root stay cheap however big the tables are (the interface
// offers no newest timestamp of a table): they follow the table's first
// kTableTimesRows rows, reading at most kTableTimesCells cells (newest
// versions, no value). A table with more is judged by that first part:
// changes past it change neither its newest timestamp nor its entries.
inline constexpr size_t kTableTimesRows = 1024;
inline constexpr size_t kTableTimesCells = 16384;
// The DirTimes of the table `s` scans, from its position on (its first
// row). A table's entries also count the rows made by mkdir that have no
// cells yet (from `made`, when not null). Reads no value.
DirTimes ScanTableTimes(Scanner& s, EphemeralDirs* made,
                        std::string_view table);
// The DirTimes of the root whose tables are `tables` (sorted).
DirTimes RootDirTimes(const std::vector<std::string>& tables);

class DirHandle {
 public:
  static constexpr size_t kRememberedEntries = 4096;

  DirHandle(Bigtable* db, EphemeralDirs* ephemeral, Node dir);
  DirHandle(const DirHandle&) = delete;

  // Where an area's directory gets its names instead of the store (the
  // staging area's, fs/stage_area.cc): called at the start of each pass.
  using NameLister = std::function<FsError(std::vector<DirEntry>* names)>;
  void set_lister(NameLister lister) { lister_ = std::move(lister); }
  DirHandle& operator=(const DirHandle&) = delete;

  // Calls `emit` for each entry after kernel offset `offset`, until emit
  // returns false (the entry did not fit: it is not consumed) or the
  // directory ends. EINVAL for an offset this handle never returned; a
  // store error as its errno.
  FsError Read(off_t offset, const std::function<bool(const DirEntry&)>& emit);

  const Node& dir() const { return dir_; }

 private:
  enum class Phase { kDot, kDotDot, kEntries };
  struct Position {
    off_t offset = 0;
    Phase phase = Phase::kDot;
    // Phase kEntries: the key (table, row, family or qualifier) returned.
    std::string key;
    // `.versions` family listings: the version's timestamp.
    int64_t timestamp = 0;
  };

  // The entry after last_ and the position after it; *end at the end.
  FsError Step(DirEntry* out, Position* next, bool* end) REQUIRES(mu_);
  // Positions the stream after `pos` (pos.offset == 0: at the start).
  FsError Reposition(const Position& pos) REQUIRES(mu_);
  // The next entry of the kEntries phase after last_ (nullopt at the end).
  FsError NextEntry(std::optional<DirEntry>* out) REQUIRES(mu_);
  FsError NextRowEntry(std::optional<DirEntry>* out) REQUIRES(mu_);
  FsError NextQualifierEntry(std::optional<DirEntry>* out) REQUIRES(mu_);
  // A node of this directory's view, with table/row/family set from dir_.
  Node ChildBase(NodeKind kind) const;
  ReadOptions ViewReadOptions() const;
  FsError LoadNames() REQUIRES(mu_);
  void Remember(const Position& pos) REQUIRES(mu_);

  Bigtable* const db_;
  EphemeralDirs* const ephemeral_;
  const Node dir_;
  NameLister lister_;

  Mutex mu_;
  // Where the stream stands: the last entry handed out and consumed.
  Position last_ GUARDED_BY(mu_);
  std::deque<Position> remembered_ GUARDED_BY(mu_);
  // The largest offset ever handed out.
  off_t max_offset_ GUARDED_BY(mu_) = 0;
  // Root, `.schema`, `.schema/TABLE` and row listings: the names (sorted),
  // loaded at the start of each pass.
  std::vector<DirEntry> names_ GUARDED_BY(mu_);
  bool names_loaded_ GUARDED_BY(mu_) = false;
  // Table and family listings: a scanner positioned at the first row or
  // cell after last_.key, when scanner_positioned_.
  std::unique_ptr<Scanner> scanner_ GUARDED_BY(mu_);
  bool scanner_positioned_ GUARDED_BY(mu_) = false;
  // Table listings: the row entry produced after last_ (at offset
  // peeked_after_) whose cells the scanner has passed to find its mtime;
  // given again when the kernel had no room for it.
  std::optional<DirEntry> peeked_ GUARDED_BY(mu_);
  off_t peeked_after_ GUARDED_BY(mu_) = -1;
  std::optional<FamilySettings> family_settings_ GUARDED_BY(mu_);
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_DIR_HANDLE_H_
