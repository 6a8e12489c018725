#include "fs/data_tree.h"

#include <errno.h>

#include <string>
#include <utility>

#include "fs/write_path.h"

namespace tabletfs::fs {

FsError DataTreeArea::Stat(const Node& node, uint64_t ino, struct stat* st) {
  switch (node.kind) {
    case NodeKind::kRoot:
      fs_->DirStat(ino, S_IFDIR | 0755, fs_->uid(), fs_->gid(), st);
      if (node.view == View::kCurrent) {
        DirTimes times;
        TABLETFS_FS_RETURN_IF_ERROR(DirTimesOf(node, &times));
        SetDirMtime(node, times, st);
      }
      return FsError::Ok();
    case NodeKind::kTable: {
      TABLETFS_FS_RETURN_IF_ERROR(fs_->TableExists(node.table));
      DirTimes times;
      TABLETFS_FS_RETURN_IF_ERROR(DirTimesOf(node, &times));
      fs_->DirStat(ino, S_IFDIR | 0755, fs_->uid(), fs_->gid(), st);
      SetDirMtime(node, times, st);
      return FsError::Ok();
    }
    case NodeKind::kRow: {
      DirTimes times;
      TABLETFS_FS_RETURN_IF_ERROR(DirTimesOf(node, &times));
      if (!times.newest.has_value() && !MadeByMkdir(node)) {
        return FsError::Of(ENOENT, "no row " + node.DebugPath());
      }
      fs_->DirStat(ino, S_IFDIR | 0755, fs_->uid(), fs_->gid(), st);
      SetDirMtime(node, times, st);
      return FsError::Ok();
    }
    case NodeKind::kFamily: {
      auto settings = db_->GetFamily(node.table, node.family);
      if (!settings.ok()) return FsErrorFromStatus(settings.status());
      DirTimes times;
      TABLETFS_FS_RETURN_IF_ERROR(DirTimesOf(node, &times, &*settings));
      if (!times.newest.has_value() && !MadeByMkdir(node)) {
        return FsError::Of(ENOENT, "no cells in " + node.DebugPath());
      }
      fs_->DirStat(ino, DirMode(*settings), settings->owner_uid,
                   settings->owner_gid, st);
      SetDirMtime(node, times, st);
      return FsError::Ok();
    }
    case NodeKind::kCell: {
      auto settings = db_->GetFamily(node.table, node.family);
      if (!settings.ok()) return FsErrorFromStatus(settings.status());
      return StatCell(node, ino, *settings, st);
    }
    default:
      break;
  }
  return FsError::Of(EIO, "unknown node kind");
}

FsError DataTreeArea::StatCell(const Node& node, uint64_t ino,
                               const FamilySettings& settings,
                               struct stat* st) {
  VersionStat v;
  TABLETFS_FS_RETURN_IF_ERROR(fs_->StatVersion(node, &v));
  if (!v.exists) return FsError::Of(ENOENT, "no cell " + node.DebugPath());
  fs_->FileStat(ino, settings, v.size, v.timestamp, st);
  CellMtime(node, v.timestamp, st);
  return FsError::Ok();
}

FsError DataTreeArea::StatOpen(const Node& node, uint64_t ino, FileHandle* h,
                               struct stat* st) {
  // The kernel names the descriptor when it refreshes the size before a
  // cached read: a reader's size is the committed version's, never what
  // writers hold (it would read past the committed end).
  if (node.kind != NodeKind::kCell) h = nullptr;
  const bool reader = h != nullptr && WritePath::IsCellReader(*h);
  // A writer's size is its open state's (the kernel asks with the
  // descriptor at lseek(SEEK_END)), also where it joined another inode's.
  FsError e = Stat(node, reader ? 0 : WritePath::StateInode(ino, h), st);
  st->st_ino = ino;
  if (e.err == ENOENT && h != nullptr) {
    // fstat (and the kernel before a read) of a descriptor whose cell was
    // removed while open: as on a local disk it works, with no links.
    auto settings = db_->GetFamily(node.table, node.family);
    if (settings.ok()) {
      fs_->FileStat(ino, *settings, WritePath::SizeOf(*h), NowMicros(), st);
      st->st_nlink = 0;
      e = FsError::Ok();
    }
  }
  return e;
}

void DataTreeArea::EntryStat(const DirEntry& de, uint64_t ino,
                             struct stat* st) {
  switch (de.node.kind) {
    case NodeKind::kTable:
      // A table's entries are known also without cells (rows made by mkdir).
      fs_->DirStat(ino, S_IFDIR | 0755, fs_->uid(), fs_->gid(), st);
      SetDirMtime(de.node, EntryDirTimes(de), st);
      return;
    case NodeKind::kFamily:
      if (de.settings.has_value()) {
        fs_->DirStat(ino, DirMode(*de.settings), de.settings->owner_uid,
                     de.settings->owner_gid, st);
        SetDirMtime(de.node, EntryDirTimes(de), st);
        return;
      }
      break;
    case NodeKind::kRow:
      fs_->DirStat(ino, S_IFDIR | 0755, fs_->uid(), fs_->gid(), st);
      if (de.has_timestamp) {
        SetDirMtime(de.node, EntryDirTimes(de), st);
      }
      return;
    case NodeKind::kCell:
      if (de.settings.has_value()) {
        fs_->FileStat(ino, *de.settings, de.size, de.timestamp, st);
        CellMtime(de.node, de.timestamp, st);
        return;
      }
      break;
    default:
      break;
  }
  Area::EntryStat(de, ino, st);
}

FsError DataTreeArea::Open(uint64_t ino, const Node& node,
                           const OpenRequest& request, bool write,
                           Opened* out) {
  if (node.kind != NodeKind::kCell) {
    return Area::Open(ino, node, request, write, out);
  }
  if (write) TABLETFS_FS_RETURN_IF_ERROR(fs_->CheckFuture(node));
  return OpenVersion(ino, node, out);
}

FsError DataTreeArea::OpenVersion(uint64_t ino, const Node& n, Opened* out) {
  // A version (Q@T, .versions, .at) never changes: read at open.
  CellVersion v;
  TABLETFS_FS_RETURN_IF_ERROR(fs_->ReadVersion(n, &v));
  if (!v.exists) return FsError::Of(ENOENT, "no cell " + n.DebugPath());
  out->keep_cache =
      inodes_.SameVersionAsLastOpen(ino, v.timestamp, v.value.size());
  out->handle = fs_->NewBufferHandle(ino, n, FileHandle::Mode::kRead,
                                     std::move(v.value), false);
  return FsError::Ok();
}

FsError DataTreeArea::Exists(const Node& node, uint64_t ino) {
  if (node.kind == NodeKind::kTable && node.view == View::kCurrent) {
    return fs_->TableExists(node.table);
  }
  struct stat st;
  return Stat(node, ino, &st);
}

FsError DataTreeArea::DirTimesOf(const Node& n, DirTimes* out,
                                 const FamilySettings* settings) {
  if (n.kind == NodeKind::kRoot) {
    auto tables = db_->ListTables();
    if (!tables.ok()) return FsErrorFromStatus(tables.status());
    std::erase(*tables, std::string(kReservedTableName));
    *out = RootDirTimes(*tables);
    return FsError::Ok();
  }
  ScanOptions so;
  so.read.at = Filesystem::ReadAt(n);
  so.read.max_versions = 1;
  so.content = ScanContent::kNoValues;  // times and names only
  if (n.kind == NodeKind::kTable) {
    if (n.view == View::kPrefix) so.prefix = n.view_prefix;
    // Bounded: the table's first rows (ScanTableTimes). A current table's
    // scan starts where the last one found its first cell, when no write
    // since could have put one before it (DirTimesCache::FirstRow).
    const bool current = n.view == View::kCurrent && !so.read.at.has_value();
    DirTimesCache& cache = fs_->dir_times();
    std::optional<std::string> first;
    std::optional<DirTimesCache::Scan> scan;
    if (current) scan.emplace(cache.StartTableScan(n.table, &first));
    // Rows before it have no cells (a store may position a new scanner
    // at its start: where it steps over the deleted cells).
    if (first.has_value()) so.start_row = *first;
    auto scanner = db_->NewScanner(n.table, so);
    if (!scanner.ok()) return FsErrorFromStatus(scanner.status());
    Scanner& s = **scanner;
    s.SeekToFirst();
    if (scan.has_value() && s.Valid()) scan->FoundFirstRow(s.row());
    *out = ScanTableTimes(
        s, n.view == View::kCurrent ? &ephemeral_ : nullptr, n.table);
    if (!s.status().ok()) return FsErrorFromStatus(s.status());
    return FsError::Ok();
  }
  // A family's cells expire with no write when its GC policy depends on
  // time: such a family is scanned each time.
  const bool kept = n.kind == NodeKind::kFamily && n.view == View::kCurrent &&
                    !so.read.at.has_value() && settings != nullptr &&
                    !settings->gc_policy.DependsOnTime();
  DirTimesCache& cache = fs_->dir_times();
  if (kept) {
    std::optional<DirTimes> found = cache.Find(n.table, n.row, n.family);
    if (found.has_value()) {
      *out = *found;
      return FsError::Ok();
    }
  }
  std::optional<DirTimesCache::Scan> scan;
  if (kept) scan.emplace(cache.StartScan(n.table, n.row, n.family));
  so.start_row = n.row;
  so.end_row = RowEnd(n.row);
  if (n.kind == NodeKind::kFamily) so.read.families = {n.family};
  auto scanner = db_->NewScanner(n.table, so);
  if (!scanner.ok()) return FsErrorFromStatus(scanner.status());
  Scanner& s = **scanner;
  s.Seek(n.row, n.kind == NodeKind::kFamily ? n.family : std::string());
  if (n.kind == NodeKind::kFamily) {
    *out = ScanDirTimes(s, n.row, n.family);
  } else {
    *out = ScanDirTimes(s, n.row, {}, MadeFamilies(n));
  }
  if (!s.status().ok()) return FsErrorFromStatus(s.status());
  if (scan.has_value()) scan->Found(*out);
  return FsError::Ok();
}

void DataTreeArea::SetDirMtime(const Node& dir, const DirTimes& t,
                               struct stat* st) {
  std::optional<int64_t> set = DirMtimeSet(dir, t.entries);
  if (!set.has_value()) set = t.newest;
  if (set.has_value()) Filesystem::SetMtime(st, *set);
}

}  // namespace tabletfs::fs
