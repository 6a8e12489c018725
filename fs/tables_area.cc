// The tables, rows, families and cells as they are now (DESIGN.md "The
// filesystem namespace", "Writing", "Directories"): MOUNT/TABLE/ROW/FAMILY/
// QUALIFIER[@T]. The read-write view of the data tree (fs/data_tree.h):
// directories made by mkdir and kept in memory, open writers shown by stat,
// the mtimes utimensat set, and every change — mkdir, rmdir, unlink,
// rename, truncate — of the tree. Open files go through fs/write_path.h.
#include <errno.h>
#include <stdio.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fs/area.h"
#include "fs/data_tree.h"
#include "fs/log.h"
#include "fs/timestamp.h"
#include "fs/write_path.h"

namespace tabletfs::fs {
namespace {

class TablesArea : public DataTreeArea {
 public:
  using DataTreeArea::DataTreeArea;

  bool Owns(const Node& node) const override {
    if (node.view != View::kCurrent) return false;
    switch (node.kind) {
      case NodeKind::kRoot:
      case NodeKind::kTable:
      case NodeKind::kRow:
      case NodeKind::kFamily:
      case NodeKind::kCell:
        return true;
      default:
        return false;
    }
  }

  // `@T` names change without a kernel operation on them; so do the cells
  // of a family whose GC policy uses maxage: its versions expire as time
  // passes.
  bool Uncached(const Node& node) override {
    if (node.at.has_value()) return true;
    if (node.kind != NodeKind::kFamily && node.kind != NodeKind::kCell) {
      return false;
    }
    auto settings = db_->GetFamily(node.table, node.family);
    return settings.ok() && settings->gc_policy.DependsOnTime();
  }

  FsError Mkdir(const Node& parent, const Node& n,
                const Caller& caller) override;
  FsError Rmdir(const Node& n) override;
  FsError Unlink(const Node& n, const Caller& caller) override;
  FsError Rename(const Node& from, const Node& to, bool noreplace) override;
  FsError Truncate(const Node& n, uint64_t ino, uint64_t size,
                   FileHandle* h) override;
  FsError SetMtime(const Node& n, uint64_t ino, int64_t micros) override;
  FsError SetOwnership(const Node& n, const Ownership& o,
                       const Caller& caller) override;
  FsError Create(const Node& parent, const Node& n, const OpenRequest& request,
                 Opened* out, Entry* entry) override;
  FsError Open(uint64_t ino, const Node& n, const OpenRequest& request,
               bool write, Opened* out) override;

 protected:
  // Open writers show what they hold: a created file exists before its
  // first commit, and fstat of a writer sees its own writes (the kernel
  // asks without naming the descriptor).
  FsError StatCell(const Node& node, uint64_t ino,
                   const FamilySettings& settings, struct stat* st) override;
  bool MadeByMkdir(const Node& dir) override {
    if (dir.kind == NodeKind::kRow)
      return ephemeral_.HasRow(dir.table, dir.row);
    return ephemeral_.HasFamily(dir.table, dir.row, dir.family);
  }
  std::vector<std::string> MadeFamilies(const Node& row) override {
    return ephemeral_.Families(row.table, row.row);
  }
  std::optional<int64_t> DirMtimeSet(const Node& dir,
                                     int64_t entries) override {
    return mtimes_.Find(dir, entries);
  }
  void CellMtime(const Node& cell, int64_t timestamp,
                 struct stat* st) override {
    if (!cell.at.has_value()) {
      Filesystem::SetMtime(st, mtimes_.Get(cell, timestamp));
    }
  }

 private:
  // utimensat of a cell with nothing pending: the newest version's mtime.
  FsError SetCellMtime(const Node& cell, int64_t micros, uint64_t ino);
  FsError TruncateCell(const Node& cell, uint64_t size, uint64_t ino);
  void NameChangeDelay() {
    if (fs_->name_change_delay().count() > 0) {
      std::this_thread::sleep_for(fs_->name_change_delay());  // test hook
    }
  }
};

FsError TablesArea::StatCell(const Node& node, uint64_t ino,
                             const FamilySettings& settings, struct stat* st) {
  bool writers = false;
  if (ino != 0) {
    if (std::shared_ptr<OpenCell> c = open_cells_.Find(ino)) {
      MutexLock lock(c->mu());
      std::optional<uint64_t> pending = c->PendingSize();
      if (pending.has_value()) {
        fs_->FileStat(ino, settings, *pending,
                      c->pending_mtime().value_or(NowMicros()), st);
        return FsError::Ok();
      }
      writers = c->HasWriters() && !c->unlinked();
    }
  }
  VersionStat v;
  TABLETFS_FS_RETURN_IF_ERROR(fs_->StatVersion(node, &v));
  if (!v.exists) {
    if (ino != 0 && (writers || fs_->Vanished(ino))) {
      fs_->FileStat(ino, settings, 0, NowMicros(), st);
      return FsError::Ok();
    }
    return FsError::Of(ENOENT, "no cell " + node.DebugPath());
  }
  fs_->FileStat(ino, settings, v.size, v.timestamp, st);
  CellMtime(node, v.timestamp, st);
  return FsError::Ok();
}

// ---------------------------------------------------------------------------
// Directories
// ---------------------------------------------------------------------------

FsError TablesArea::Mkdir(const Node& parent, const Node& n,
                          const Caller& caller) {
  FsError e;
  switch (n.kind) {
    case NodeKind::kTable: {
      Status s = db_->CreateTable(n.table);
      if (!s.ok()) e = FsErrorFromStatus(s);
      break;
    }
    case NodeKind::kRow: {
      e = fs_->TableExists(n.table);
      bool has = false;
      if (e.ok()) has = ephemeral_.HasRow(n.table, n.row);
      if (e.ok() && !has) e = fs_->RowHasCells(n, &has);
      if (e.ok() && has) {
        e = FsError::Of(EEXIST, n.DebugPath() + " exists");
      }
      if (e.ok()) ephemeral_.AddRow(n.table, n.row);
      break;
    }
    case NodeKind::kFamily: {
      auto settings = db_->GetFamily(n.table, n.family);
      if (!settings.ok() && settings.status().IsNotFound() &&
          options_.auto_families && fs_->TableExists(n.table).ok()) {
        // -o auto_families: as touch .schema/TABLE/FAMILY would.
        FamilySettings s;
        s.owner_uid = caller.uid;
        s.owner_gid = caller.gid;
        Status st = db_->CreateFamily(n.table, n.family, s);
        if (st.ok() || st.IsAlreadyExists()) {
          Log(LogLevel::kInfo, "mkdir " + n.DebugPath() + ": created family " +
                                   n.family + " of table " + n.table +
                                   " with default settings (-o auto_families)");
        }
        settings = db_->GetFamily(n.table, n.family);
      }
      if (!settings.ok()) {
        e = FsError::Of(
            ENOENT, "family " + n.family + " is not in the schema of table " +
                        n.table + ": create it with touch " +
                        options_.mountpoint + "/.schema/" + n.table + "/" +
                        n.family + ", or mount with -o auto_families");
        break;
      }
      bool has = ephemeral_.HasFamily(n.table, n.row, n.family);
      if (!has) e = fs_->FamilyHasCells(n, &has);
      if (e.ok() && has) {
        e = FsError::Of(EEXIST, n.DebugPath() + " exists");
      }
      if (e.ok()) ephemeral_.AddFamily(n.table, n.row, n.family);
      break;
    }
    case NodeKind::kCell:
      e = FsError::Of(EPERM, "a family directory holds cells (files) only");
      break;
    default:
      return Area::Mkdir(parent, n, caller);
  }
  return e;
}

FsError TablesArea::Rmdir(const Node& n) {
  FsError e;
  switch (n.kind) {
    case NodeKind::kTable: {
      e = fs_->TableExists(n.table);
      if (!e.ok()) break;
      if (ephemeral_.TableHasRows(n.table)) {
        e = FsError::Of(ENOTEMPTY, n.DebugPath() + " has rows");
        break;
      }
      ScanOptions so;
      so.content = ScanContent::kRows;  // is there any row
      auto scanner = db_->NewScanner(n.table, so);
      if (!scanner.ok()) {
        e = FsErrorFromStatus(scanner.status());
        break;
      }
      (*scanner)->SeekToFirst();
      if ((*scanner)->Valid()) {
        e = FsError::Of(ENOTEMPTY, n.DebugPath() + " has rows");
        break;
      }
      scanner->reset();
      Status s = db_->DeleteTable(n.table);
      if (!s.ok()) e = FsErrorFromStatus(s);
      ephemeral_.RemoveTable(n.table);
      break;
    }
    case NodeKind::kRow: {
      bool has = false;
      e = fs_->RowHasCells(n, &has);
      if (e.ok() && (has || ephemeral_.RowHasFamilies(n.table, n.row))) {
        e = FsError::Of(ENOTEMPTY, n.DebugPath() + " holds families");
      }
      if (e.ok() && !ephemeral_.RemoveRow(n.table, n.row)) {
        e = FsError::Of(ENOENT, "no row " + n.DebugPath());
      }
      break;
    }
    case NodeKind::kFamily: {
      bool has = false;
      e = fs_->FamilyHasCells(n, &has);
      if (e.ok() && has) {
        e = FsError::Of(ENOTEMPTY, n.DebugPath() + " holds cells");
      }
      if (e.ok() && !ephemeral_.RemoveFamily(n.table, n.row, n.family)) {
        e = FsError::Of(ENOENT, "no family directory " + n.DebugPath());
      }
      break;
    }
    case NodeKind::kCell:
      e = FsError::Of(ENOTDIR, n.DebugPath() + " is a file");
      break;
    default:
      return Area::Rmdir(n);
  }
  return e;
}

// ---------------------------------------------------------------------------
// Names of cells
// ---------------------------------------------------------------------------

FsError TablesArea::Unlink(const Node& n, const Caller& caller) {
  if (n.kind != NodeKind::kCell) return Area::Unlink(n, caller);
  if (n.at.has_value()) {
    return FsError::Of(EPERM,
                       "single versions are removed under .versions, "
                       "not " +
                           n.DebugPath());
  }
  WritePath& wp = fs_->write_path();
  WritePath::LockedCells locked(fs_, {n}, /*with_versions=*/true);
  VersionStat v;
  FsError e = fs_->StatVersion(n, &v);
  std::optional<uint64_t> ino = inodes_.Find(n);
  // A vanished name the kernel still shows goes without a trace.
  bool vanished = ino.has_value() && fs_->ForgetVanished(*ino);
  if (e.ok() && !v.exists && !wp.CreatedAndOpen(locked, n) && !vanished) {
    e = FsError::Of(ENOENT, "no cell " + n.DebugPath());
  }
  if (e.ok()) {
    RowMutation m(n.row);
    m.DeleteCell(n.family, n.qualifier);
    auto r = db_->Apply(n.table, m, WriteOptions());
    if (!r.ok()) e = FsErrorFromStatus(r.status());
  }
  // The emptied directories stay until rmdir, as on a local disk,
  // and an open writer of the cell never brings it back.
  if (e.ok()) {
    NameChangeDelay();
    ephemeral_.AddFamily(n.table, n.row, n.family);
    wp.OrphanWriters(locked, n, /*with_versions=*/true);
  }
  return e;
}

FsError TablesArea::Rename(const Node& from, const Node& to, bool noreplace) {
  if (from.kind != NodeKind::kCell) {
    return Area::Rename(from, to, noreplace);
  }
  if (to.kind != NodeKind::kCell) {
    return FsError::Of(EPERM,
                       "a cell can only be renamed into a family "
                       "directory, not to " +
                           to.DebugPath());
  }
  if (from.at.has_value() || to.at.has_value()) {
    return FsError::Of(EPERM, "versions (NAME@T) cannot be renamed");
  }
  if (from.table != to.table || from.row != to.row) {
    return FsError::Of(EXDEV, "a cell moves only within its row: " +
                                  from.DebugPath() + " -> " + to.DebugPath());
  }
  WritePath& wp = fs_->write_path();
  WritePath::LockedCells locked(fs_, std::vector<Node>{from, to}, false);
  CellVersion src, dst;
  FsError e = fs_->ReadVersion(from, &src);
  if (e.ok() && !src.exists && wp.CreatedAndOpen(locked, from)) {
    src.exists = true;  // created, not committed yet: empty
  }
  if (e.ok() && !src.exists) {
    e = FsError::Of(ENOENT, "no cell " + from.DebugPath());
  }
  if (e.ok()) e = fs_->ReadVersion(to, &dst);
  if (e.ok() && dst.exists && noreplace) {
    e = FsError::Of(EEXIST, to.DebugPath() + " exists");
  }
  if (e.ok() && !(from == to)) {
    // One row mutation: the destination gets the source's newest value as a
    // new version (keeping its own history), the source goes.
    // The same bytes as the destination's newest version add no version
    // (rsync's rename of an unchanged file). The mtime goes with the value.
    const int64_t mtime = src.exists && src.timestamp != 0
                              ? mtimes_.Get(from, src.timestamp)
                              : NowMicros();
    const bool same = dst.exists && dst.value == src.value;
    RowMutation m(from.row);
    int64_t stamp = kServerTimestamp;
    if (same) {
      stamp = dst.timestamp;
    } else if (dst.exists && dst.timestamp >= NowMicros()) {
      // Above a version in the future, so that the rename shows.
      stamp = NextAbove(dst.timestamp, db_->TimestampGranularityMicros());
      m.SetCell(to.family, to.qualifier, stamp, src.value);
    } else {
      m.SetCell(to.family, to.qualifier, src.value);
    }
    m.DeleteCell(from.family, from.qualifier);
    auto r = db_->Apply(from.table, m, WriteOptions());
    if (!r.ok()) e = FsErrorFromStatus(r.status());
    if (e.ok()) {
      NameChangeDelay();
      if (stamp == kServerTimestamp) stamp = *r;
      FsError me = mtimes_.Set(to, stamp, mtime);
      if (!me.ok()) {
        Log(LogLevel::kError, "the mtime of " + to.DebugPath() +
                                  " was not kept: " + me.ToString());
      }
      // Open files follow their names, as on a local disk: writers of the
      // replaced destination commit nothing more, writers of the source
      // commit to the destination.
      std::optional<uint64_t> old_to = inodes_.Find(to);
      wp.OrphanWriters(locked, to, /*with_versions=*/false);
      wp.MoveWriters(locked, from, to);
      inodes_.Rebind(from, to);
      fs_->locks().Rebind(from, to);
      ephemeral_.AddFamily(from.table, from.row, from.family);
      std::optional<uint64_t> moved = inodes_.Find(to);
      if (moved.has_value()) fs_->InvalidateInode(*moved);
      if (old_to.has_value()) fs_->InvalidateInode(*old_to);
    }
  }
  return e;  // the cells unlock (LockedCells) before the reply
}

// ---------------------------------------------------------------------------
// Attributes
// ---------------------------------------------------------------------------

FsError TablesArea::Truncate(const Node& n, uint64_t ino, uint64_t size,
                             FileHandle* h) {
  if (n.kind != NodeKind::kCell) return Area::Truncate(n, ino, size, h);
  if (h != nullptr && h->cell() && h->writable()) {
    return fs_->write_path().Truncate(*h, size);
  }
  return TruncateCell(n, size, ino);
}

FsError TablesArea::TruncateCell(const Node& cell, uint64_t size,
                                 uint64_t ino) {
  if (size > options_.max_value_bytes) {
    return FsError::Of(EFBIG, ValueLimitReason(options_.max_value_bytes));
  }
  // While writers are open, the truncate goes into their shared value and
  // is committed at once, as a truncate(2) on a local disk is.
  if (std::shared_ptr<OpenCell> c = open_cells_.Find(ino);
      c && cell.view == View::kCurrent) {
    MutexLock lock(c->mu());
    if (c->HasWriters() && !c->unlinked()) {
      TABLETFS_FS_RETURN_IF_ERROR(c->Truncate(0, size));
      return fs_->write_path().CommitCell(*c, 0);
    }
  }
  TABLETFS_FS_RETURN_IF_ERROR(fs_->CheckFuture(cell));
  CellVersion v;
  TABLETFS_FS_RETURN_IF_ERROR(fs_->ReadVersion(cell, &v));
  if (!v.exists) return FsError::Of(ENOENT, "no cell " + cell.DebugPath());
  if (v.value.size() == size && !cell.at.has_value()) return FsError::Ok();
  v.value.resize(size);
  RowMutation m(cell.row);
  if (cell.at.has_value()) {
    m.SetCell(cell.family, cell.qualifier,
              FloorToGranularity(*cell.at, db_->TimestampGranularityMicros()),
              v.value);
  } else {
    m.SetCell(cell.family, cell.qualifier, v.value);
  }
  auto r = db_->Apply(cell.table, m, WriteOptions());
  if (!r.ok()) return FsErrorFromStatus(r.status());
  fs_->InvalidateCell(cell, ino);
  return FsError::Ok();
}

FsError TablesArea::SetMtime(const Node& n, uint64_t ino, int64_t micros) {
  if (n.kind == NodeKind::kCell) {
    bool pending = false;
    if (std::shared_ptr<OpenCell> c = open_cells_.Find(ino)) {
      MutexLock lock(c->mu());
      if (c->HasPending()) {
        c->SetPendingMtime(micros);
        pending = true;
      }
    }
    if (!pending) return SetCellMtime(n, micros, ino);
    return FsError::Ok();
  }
  if (n.kind == NodeKind::kRoot || n.kind == NodeKind::kTable ||
      n.kind == NodeKind::kRow || n.kind == NodeKind::kFamily) {
    // Kept for the directory's entries as they are (DirTimes).
    DirTimes times;
    TABLETFS_FS_RETURN_IF_ERROR(DirTimesOf(n, &times));
    return mtimes_.Set(n, times.entries, micros);
  }
  return FsError::Ok();
}

FsError TablesArea::SetCellMtime(const Node& cell, int64_t micros,
                                 uint64_t ino) {
  if (cell.at.has_value()) return FsError::Ok();  // a version keeps its T
  VersionStat v;
  TABLETFS_FS_RETURN_IF_ERROR(fs_->StatVersion(cell, &v));
  if (!v.exists) return FsError::Of(ENOENT, "no cell " + cell.DebugPath());
  TABLETFS_FS_RETURN_IF_ERROR(mtimes_.Set(cell, v.timestamp, micros));
  fs_->InvalidateKernel(ino);
  return FsError::Ok();
}

FsError TablesArea::SetOwnership(const Node& n, const Ownership& o,
                                 const Caller& caller) {
  (void)caller;
  // Cells and family directories have their family's owner and mode
  // (DESIGN.md "Schema and access"): chmod of one only says so.
  if (o.mode.has_value() &&
      (n.kind == NodeKind::kCell || n.kind == NodeKind::kFamily)) {
    auto settings = db_->GetFamily(n.table, n.family);
    if (settings.ok() && (~*o.mode & settings->mode & 0777) != 0 &&
        LogEnabled(LogLevel::kWarning)) {
      char buf[96];
      snprintf(buf, sizeof(buf),
               "chmod %o has no effect: the family's mode %o applies",
               *o.mode & 07777, settings->mode);
      LogRefusal(LogLevel::kWarning, n.DebugPath() + ": " + buf);
    }
  }
  return FsError::Ok();
}

// ---------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------

FsError TablesArea::Create(const Node& parent, const Node& n,
                           const OpenRequest& request, Opened* out,
                           Entry* entry) {
  switch (n.kind) {
    case NodeKind::kCell:
      return fs_->write_path().CreateCell(n, request, out, entry);
    case NodeKind::kTable:
    case NodeKind::kRow:
    case NodeKind::kFamily:
      return FsError::Of(EPERM,
                         "only directories may be in " + parent.DebugPath());
    default:
      return Area::Create(parent, n, request, out, entry);
  }
}

FsError TablesArea::Open(uint64_t ino, const Node& n,
                         const OpenRequest& request, bool write, Opened* out) {
  if (n.kind != NodeKind::kCell) {
    return Area::Open(ino, n, request, write, out);
  }
  if (write) TABLETFS_FS_RETURN_IF_ERROR(fs_->CheckFuture(n));
  // Q@T readers too: a `Q@T` writer changes the version at T, and its
  // readers follow it as a cell's do.
  return fs_->write_path().OpenCellFile(ino, n, request, write, out);
}

}  // namespace

std::unique_ptr<Area> NewTablesArea(Filesystem* fs) {
  return std::make_unique<TablesArea>(fs);
}

}  // namespace tabletfs::fs
