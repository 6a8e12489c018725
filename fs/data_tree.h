// DataTreeArea: what the three views of the data share — the tables, rows,
// families and cells as they are now (fs/tables_area.cc), every version
// under `.versions` (fs/versions_area.cc) and the past under `.at/T`
// (fs/at_area.cc) are one tree of nodes (Node::view says which), stat'ed,
// listed and read the same way. This base class answers for a read-only
// view; the current tree adds through the hooks below what only it has
// (directories made by mkdir, open writers, the mtimes utimensat set) and
// the changes.
//
// Thread safety: as fs/area.h; no state of its own.
#ifndef TABLETFS_FS_DATA_TREE_H_
#define TABLETFS_FS_DATA_TREE_H_

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fs/area.h"
#include "fs/dir_handle.h"
#include "fs/errors.h"
#include "fs/path_map.h"

namespace tabletfs::fs {

class DataTreeArea : public Area {
 public:
  using Area::Area;

  // kRoot, kTable, kRow, kFamily, kCell of the area's view.
  FsError Stat(const Node& node, uint64_t ino, struct stat* st) override;
  // A current table exists without its mtime, which reads its first rows.
  FsError Exists(const Node& node, uint64_t ino) override;
  // fstat (and the kernel before a read) of a descriptor whose cell was
  // removed while open: as on a local disk it works, with no links.
  FsError StatOpen(const Node& node, uint64_t ino, FileHandle* h,
                   struct stat* st) override;
  void EntryStat(const DirEntry& de, uint64_t ino, struct stat* st) override;
  // A cell of a view: the version is read at open (it never changes).
  FsError Open(uint64_t ino, const Node& node, const OpenRequest& request,
               bool write, Opened* out) override;

  // The DirTimes of a root, table, row or family directory (as of its
  // view's time; a table's from its first rows: ScanTableTimes). Reads no
  // value. A current family directory whose `settings` are given is
  // answered from the mount's DirTimesCache when they allow.
  FsError DirTimesOf(const Node& dir, DirTimes* out,
                     const FamilySettings* settings = nullptr);

 protected:
  // Opens a version (Q@T, `.versions`, `.at`): its value is read at open.
  FsError OpenVersion(uint64_t ino, const Node& node, Opened* out);
  // A cell's attributes, its family's settings given. Default: the version
  // the node names (its mtime by CellMtime), ENOENT without one.
  virtual FsError StatCell(const Node& node, uint64_t ino,
                           const FamilySettings& settings, struct stat* st);
  // Whether the row or family directory `dir` exists without cells (made
  // by mkdir). Default: never.
  virtual bool MadeByMkdir(const Node& dir) {
    (void)dir;
    return false;
  }
  // The families of `row` made by mkdir (they count as its entries).
  virtual std::vector<std::string> MadeFamilies(const Node& row) {
    (void)row;
    return {};
  }
  // The mtime set for directory `dir` with these entries (DirTimes).
  virtual std::optional<int64_t> DirMtimeSet(const Node& dir, int64_t entries) {
    (void)dir;
    (void)entries;
    return std::nullopt;
  }
  // A listed cell's mtime, its newest version's timestamp given.
  virtual void CellMtime(const Node& cell, int64_t timestamp, struct stat* st) {
    (void)cell;
    (void)timestamp;
    (void)st;
  }
  // A root's, table's, row's or family's mtime (DirTimes); a directory
  // without cells (the root, one made by mkdir, an empty table) and no
  // mtime set has the mount's start time.
  void SetDirMtime(const Node& dir, const DirTimes& t, struct stat* st);
  static DirTimes EntryDirTimes(const DirEntry& de) {
    DirTimes t;
    if (de.has_timestamp) t.newest = de.timestamp;
    t.entries = de.entries;
    return t;
  }
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_DATA_TREE_H_
