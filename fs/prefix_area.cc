// `.prefix` (DESIGN.md "Prefix views"): MOUNT/.prefix/TABLE/P/ROW/FAMILY/Q,
// the rows of TABLE whose key starts with P (P in the row-name encoding),
// read-only. `.prefix/` and `.prefix/TABLE/` list nothing: every name in
// the latter is a prefix. A listing of `.prefix/TABLE/P/` is one scan from
// the first key with that prefix to the last (ScanOptions::prefix), streamed
// as a table listing is, so `ls`, `find` and `grep -r` reach a slice of a
// table of any size in bounded memory. The rows inside are the rows of
// TABLE/ as they are now: the same cells, read the same way.
//
// Read-only, because a cell has one open state per inode (fs/open_cells.h):
// writers of one cell through two names would each hold a value. Writes
// go to TABLE/. Uncached by the kernel: the change events invalidate the
// main tree's nodes, not these, and a size the kernel kept after a write
// in TABLE/ would cut a read short.
#include <errno.h>

#include <memory>
#include <optional>
#include <string>

#include "fs/area.h"
#include "fs/data_tree.h"
#include "fs/mtimes.h"

namespace tabletfs::fs {
namespace {

class PrefixArea : public DataTreeArea {
 public:
  using DataTreeArea::DataTreeArea;

  bool Owns(const Node& node) const override {
    return node.kind == NodeKind::kPrefixRoot ||
           node.kind == NodeKind::kPrefixTable || node.view == View::kPrefix;
  }

  bool Uncached(const Node& node) override {
    (void)node;
    return true;
  }

  FsError CheckWritable(const Node& node, const char* what) override {
    return FsError::Of(EROFS, std::string(what) + ": " + node.DebugPath() +
                                  " is a read-only view of rows by prefix "
                                  "(write under the table's own directory)");
  }

  FsError Stat(const Node& node, uint64_t ino, struct stat* st) override {
    switch (node.kind) {
      case NodeKind::kPrefixRoot:
        fs_->DirStat(ino, S_IFDIR | 0755, fs_->uid(), fs_->gid(), st);
        return FsError::Ok();
      case NodeKind::kPrefixTable:
        TABLETFS_FS_RETURN_IF_ERROR(fs_->TableExists(node.table));
        fs_->DirStat(ino, S_IFDIR | 0755, fs_->uid(), fs_->gid(), st);
        return FsError::Ok();
      case NodeKind::kRow:
      case NodeKind::kFamily:
      case NodeKind::kCell:
        if (!node.row.starts_with(node.view_prefix)) {
          return FsError::Of(ENOENT, "no row " + node.DebugPath() +
                                         ": it does not start with the prefix");
        }
        break;
      default:
        break;
    }
    return DataTreeArea::Stat(node, ino, st);
  }

 protected:
  // The mtimes utimensat set show here too (the same rows and cells).
  std::optional<int64_t> DirMtimeSet(const Node& dir,
                                     int64_t entries) override {
    // The directory P is no directory of the main tree.
    if (dir.kind == NodeKind::kTable) return std::nullopt;
    return mtimes_.Find(dir, entries);
  }
  void CellMtime(const Node& cell, int64_t timestamp,
                 struct stat* st) override {
    if (!cell.at.has_value()) {
      Filesystem::SetMtime(st, mtimes_.Get(cell, timestamp));
    }
  }
};

}  // namespace

std::unique_ptr<Area> NewPrefixArea(Filesystem* fs) {
  return std::make_unique<PrefixArea>(fs);
}

}  // namespace tabletfs::fs
