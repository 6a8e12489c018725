// `.stage` and `.commit` (README "Row-atomic commits", issue 21): a program
// stages any number of changes of one row with ordinary file operations
// under MOUNT/.stage/TABLE/ROW/ (fs/stage.h says what can be staged), and
// `mv MOUNT/.stage/TABLE/ROW MOUNT/.commit/TABLE/` applies them as one row
// mutation with one timestamp: readers see all of it or none. `rm -r` of
// the staged row aborts. `.stage/` lists the tables with staged rows;
// `.commit/` and `.commit/TABLE/` list nothing and hold nothing: they are
// where a staged row is moved to be committed.
//
// Staged files are read and written through buffer handles (as `.schema`
// files): each descriptor stages its whole buffer at close or fsync, so
// of two descriptors writing one staged file the last close wins. Files
// use direct I/O.
//
// The commit: refused (EBUSY) while a descriptor of the row holds bytes
// not staged yet; the row is read and rewritten atomically
// (Bigtable::RewriteRow): the cells get one timestamp, above the newest
// version of each (a future version never hides a commit, as for writes,
// fs/open_cells.h), and with `@if-unchanged` nothing is written unless the
// row's content is what it was at the staging's mkdir (else ECANCELED, the
// row stays staged). A remote Bigtable has no atomic read-then-write:
// there the commit reads, then applies (one MutateRow), and a conditional
// commit is ENOTSUP. The area keeps its staged rows itself (the exception
// to fs/area.h's rule, as `.changes` keeps its feeds).
#include <errno.h>
#include <fcntl.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fs/area.h"
#include "fs/log.h"
#include "fs/stage.h"
#include "fs/timestamp.h"
#include "fs/write_path.h"

namespace tabletfs::fs {
namespace {

bool IsStageFile(const Node& n) {
  return n.kind == NodeKind::kStageCell || n.kind == NodeKind::kStageRowMark ||
         n.kind == NodeKind::kStageCellMark;
}

class StageArea : public Area {
 public:
  using Area::Area;

  bool Owns(const Node& n) const override {
    switch (n.kind) {
      case NodeKind::kStageRoot:
      case NodeKind::kStageTable:
      case NodeKind::kStageRow:
      case NodeKind::kStageFamily:
      case NodeKind::kStageCell:
      case NodeKind::kStageRowMark:
      case NodeKind::kStageCellMark:
      case NodeKind::kCommitRoot:
      case NodeKind::kCommitTable:
      case NodeKind::kCommitRow:
        return true;
      default:
        return false;
    }
  }

  // The stage's directories change only through the kernel's own
  // operations (mkdir, rmdir, rename), so the kernel may cache them (a
  // path walk to a staged file costs no lookups); the commit moves the
  // row's entry onto a name that never exists, and drops it. Files are
  // never cached: a cell and its @delete remove each other, which the
  // kernel does not see, and a staged file is mostly written once (its
  // create looks it up anyway). Nor is `.commit`, looked up once per
  // commit.
  bool Uncached(const Node& n) override {
    switch (n.kind) {
      case NodeKind::kStageRoot:
      case NodeKind::kStageTable:
      case NodeKind::kStageRow:
      case NodeKind::kStageFamily:
        return false;
      default:
        return Owns(n);
    }
  }

  FsError Stat(const Node& n, uint64_t ino, struct stat* st) override {
    switch (n.kind) {
      case NodeKind::kStageTable:
      case NodeKind::kCommitTable:
        TABLETFS_FS_RETURN_IF_ERROR(fs_->TableExists(n.table));
        [[fallthrough]];
      case NodeKind::kStageRoot:
      case NodeKind::kCommitRoot:
        fs_->DirStat(ino, S_IFDIR | 0755, fs_->uid(), fs_->gid(), st);
        return FsError::Ok();
      case NodeKind::kCommitRow:
        return FsError::Of(ENOENT, n.DebugPath() +
                                       " is only a name to move a staged "
                                       "row to");
      default:
        break;
    }
    Stage::Found f;
    TABLETFS_FS_RETURN_IF_ERROR(stage_.Find(n, &f));
    FamilySettings settings;
    settings.owner_uid = fs_->uid();
    settings.owner_gid = fs_->gid();
    settings.mode = 0644;
    if (!n.family.empty()) {
      auto s = db_->GetFamily(n.table, n.family);
      if (!s.ok()) return FsErrorFromStatus(s.status());
      settings = *s;
    }
    if (f.directory) {
      fs_->DirStat(ino, DirMode(settings), settings.owner_uid,
                   settings.owner_gid, st);
      st->st_atim = st->st_mtim = st->st_ctim = MicrosToTimespec(f.mtime);
    } else {
      fs_->FileStat(ino, settings, f.size, f.mtime, st);
    }
    return FsError::Ok();
  }

  void EntryStat(const DirEntry& de, uint64_t ino, struct stat* st) override {
    if (!Stat(de.node, ino, st).ok()) Area::EntryStat(de, ino, st);
  }

  DirHandle::NameLister Lister(const Node& dir) override {
    return [this, dir](std::vector<DirEntry>* names) {
      for (auto& [name, node] : stage_.List(dir)) {
        DirEntry e;
        e.name = std::move(name);
        e.node = std::move(node);
        names->push_back(std::move(e));
      }
      return FsError::Ok();
    };
  }

  // ---- Changes ----

  FsError Mkdir(const Node& parent, const Node& n,
                const Caller& caller) override {
    if (n.kind == NodeKind::kStageRow) {
      // Staging into a missing table: ENOENT at once.
      TABLETFS_FS_RETURN_IF_ERROR(fs_->TableExists(n.table));
      // What @if-unchanged compares the row with at the commit.
      auto row = db_->ReadRow(n.table, n.row, ReadOptions());
      if (!row.ok()) return FsErrorFromStatus(row.status());
      return stage_.Make(n, RowFingerprint(*row), NowMicros());
    }
    if (n.kind == NodeKind::kStageFamily) {
      TABLETFS_FS_RETURN_IF_ERROR(FamilyExists(n));
      return stage_.Make(n, 0, NowMicros());
    }
    if (n.kind == NodeKind::kStageTable) {
      // `mkdir -p .stage/TABLE/ROW` of a missing table: ENOENT, not EPERM.
      TABLETFS_FS_RETURN_IF_ERROR(fs_->TableExists(n.table));
      return FsError::Of(EEXIST, n.DebugPath() + " exists");
    }
    return Area::Mkdir(parent, n, caller);
  }

  FsError Rmdir(const Node& n) override {
    if (n.kind != NodeKind::kStageRow && n.kind != NodeKind::kStageFamily) {
      return Area::Rmdir(n);
    }
    // fs/fuse_ops.cc unbinds the directory's inode.
    return stage_.Remove(n);
  }

  FsError Unlink(const Node& n, const Caller& caller) override {
    if (!IsStageFile(n)) return Area::Unlink(n, caller);
    TABLETFS_FS_RETURN_IF_ERROR(stage_.Remove(n));
    // As on a local disk: a descriptor of a removed file stages nothing.
    for (auto& h : stage_.Handles(n.table, n.row)) {
      MutexLock lock(h->mu());
      if (h->node() == n) h->Unlinked();
    }
    if (std::optional<uint64_t> ino = inodes_.Find(n)) inodes_.Unbind(n, *ino);
    return FsError::Ok();
  }

  FsError Rename(const Node& from, const Node& to, bool noreplace) override {
    if (from.kind == NodeKind::kStageRow) {
      if (to.kind != NodeKind::kCommitRow) {
        return FsError::Of(EPERM,
                           "a staged row is committed by moving it into "
                           ".commit/" +
                               from.table + "/ (or aborted by rm -r)");
      }
      if (to.table != from.table || to.row != from.row) {
        // Not EINVAL, which mv reads as a move into itself; not EXDEV,
        // which makes it copy.
        return FsError::Of(EPERM, "a staged row commits to its own row: mv " +
                                      from.DebugPath() + " .commit/" +
                                      from.table + "/");
      }
      return CommitRow(from, to);
    }
    if (from.kind != NodeKind::kStageCell || to.kind != NodeKind::kStageCell) {
      return FsError::Of(EPERM,
                         "in the stage only files are renamed, within "
                         "their row: " +
                             from.DebugPath() + " -> " + to.DebugPath());
    }
    Stage::Found found;
    if (noreplace && stage_.Find(to, &found).ok()) {
      return FsError::Of(EEXIST, to.DebugPath() + " is staged");
    }
    TABLETFS_FS_RETURN_IF_ERROR(stage_.Rename(from, to));
    for (auto& h : stage_.Handles(from.table, from.row)) {
      MutexLock lock(h->mu());
      if (h->node() == to) {
        h->Unlinked();
      } else if (h->node() == from) {
        h->Renamed(to);
      }
    }
    inodes_.Rebind(from, to);
    return FsError::Ok();
  }

  FsError Truncate(const Node& n, uint64_t ino, uint64_t size,
                   FileHandle* h) override {
    if (!IsStageFile(n)) return Area::Truncate(n, ino, size, h);
    if (n.kind != NodeKind::kStageCell) {
      if (size == 0) return FsError::Ok();
      return FsError::Of(EINVAL, n.DebugPath() +
                                     " is a mark: it holds no "
                                     "bytes");
    }
    if (size > options_.max_value_bytes) {
      return FsError::Of(EFBIG, "a value is at most " +
                                    std::to_string(options_.max_value_bytes) +
                                    " bytes");
    }
    if (h != nullptr && h->writable()) {
      return fs_->write_path().Truncate(*h, size);
    }
    return stage_.Truncate(n, size, NowMicros());
  }

  // cp -a, rsync and tar set it; the commit keeps it for the new version.
  FsError SetMtime(const Node& n, uint64_t ino, int64_t micros) override {
    (void)ino;
    if (n.kind != NodeKind::kStageCell) return FsError::Ok();
    return stage_.SetMtime(n, micros);
  }

  // ---- Files ----

  FsError Create(const Node& parent, const Node& n, const OpenRequest& request,
                 Opened* out, Entry* entry) override {
    if (!IsStageFile(n)) return Area::Create(parent, n, request, out, entry);
    if (!n.family.empty()) TABLETFS_FS_RETURN_IF_ERROR(FamilyExists(n));
    Stage::Found found;
    const bool exists = stage_.Find(n, &found).ok();
    if (exists && (request.flags & O_EXCL)) {
      return FsError::Of(EEXIST, n.DebugPath() + " is staged");
    }
    std::string initial;
    if (!exists || (request.flags & O_TRUNC)) {
      TABLETFS_FS_RETURN_IF_ERROR(stage_.Put(n, "", NowMicros()));
    } else if (n.kind == NodeKind::kStageCell) {
      TABLETFS_FS_RETURN_IF_ERROR(stage_.Value(n, &initial));
    }
    TABLETFS_FS_RETURN_IF_ERROR(fs_->MakeEntry(n, entry));
    out->handle = fs_->NewBufferHandle(entry->ino, n, FileHandle::Mode::kWrite,
                                       std::move(initial), false);
    stage_.Track(n, out->handle);
    out->direct_io = true;
    return FsError::Ok();
  }

  FsError Open(uint64_t ino, const Node& n, const OpenRequest& request,
               bool write, Opened* out) override {
    if (!IsStageFile(n)) return Area::Open(ino, n, request, write, out);
    std::string value;
    if (n.kind == NodeKind::kStageCell) {
      TABLETFS_FS_RETURN_IF_ERROR(stage_.Value(n, &value));
    } else {
      Stage::Found found;
      TABLETFS_FS_RETURN_IF_ERROR(stage_.Find(n, &found));
    }
    if (write && (request.flags & O_TRUNC)) {
      value.clear();
      if (n.kind == NodeKind::kStageCell) {
        TABLETFS_FS_RETURN_IF_ERROR(stage_.Put(n, "", NowMicros()));
      }
    }
    out->handle = fs_->NewBufferHandle(
        ino, n, write ? FileHandle::Mode::kWrite : FileHandle::Mode::kRead,
        std::move(value), false);
    if (write) stage_.Track(n, out->handle);
    out->direct_io = true;
    return FsError::Ok();
  }

  FsError CheckWrite(const Node& n, std::string_view data) override {
    if (n.kind != NodeKind::kStageCell && !data.empty()) {
      return FsError::Of(EINVAL, n.DebugPath() +
                                     " is a mark: it holds no "
                                     "bytes");
    }
    return FsError::Ok();
  }

  FsError Commit(FileHandle& h) REQUIRES(h.mu()) override {
    const Node& n = h.node();
    if (n.kind == NodeKind::kStageCell) {
      FsError e = stage_.Put(n, h.buffer(), NowMicros(), /*keep_mtime=*/true);
      if (!e.ok()) {
        h.SetFailed(e);
        return e;
      }
    }
    h.Committed(0);
    return FsError::Ok();
  }

 private:
  FsError FamilyExists(const Node& n) {
    auto settings = db_->GetFamily(n.table, n.family);
    if (!settings.ok()) return FsErrorFromStatus(settings.status());
    return FsError::Ok();
  }

  // The one timestamp of a commit's cells: the store's, unless a staged
  // cell has a version at or after now (clock skew, `touch -d`): then
  // just above the newest such version, so the commit shows.
  int64_t CommitTimestamp(const tabletfs::Row& current,
                          const Stage::Row& staged) {
    std::optional<int64_t> newest;
    for (const tabletfs::Cell& c : current.cells) {
      auto f = staged.families.find(c.family);
      if (f == staged.families.end() ||
          f->second.cells.count(c.qualifier) == 0) {
        continue;
      }
      newest = std::max(newest.value_or(c.timestamp), c.timestamp);
    }
    if (!newest.has_value() || *newest < NowMicros()) return kServerTimestamp;
    return NextAbove(*newest, db_->TimestampGranularityMicros());
  }

  // mv .stage/TABLE/ROW .commit/TABLE/
  FsError CommitRow(const Node& from, const Node& to) {
    Stage::Row staged;
    TABLETFS_FS_RETURN_IF_ERROR(stage_.Copy(from.table, from.row, &staged));
    for (auto& h : stage_.Handles(from.table, from.row)) {
      MutexLock lock(h->mu());
      if (h->NeedsCommit()) {
        return FsError::Of(EBUSY, h->node().DebugPath() +
                                      " is open with bytes not staged yet: "
                                      "close it before the commit");
      }
    }
    int64_t stamp = kServerTimestamp;
    bool changed = false;
    auto rewrite = [&](const tabletfs::Row& current) -> Result<RowMutation> {
      if (staged.if_unchanged &&
          RowFingerprint(current) != staged.fingerprint) {
        changed = true;
        return RowMutation(from.row);  // writes nothing
      }
      stamp = CommitTimestamp(current, staged);
      return StagedMutation(from.row, staged, stamp);
    };
    auto r = db_->RewriteRow(from.table, from.row, ReadOptions(), rewrite,
                             WriteOptions());
    if (r.status().IsNotSupported()) {
      // A remote Bigtable: read, then one MutateRow.
      if (staged.if_unchanged) {
        return FsError::Of(ENOTSUP,
                           "a commit @if-unchanged needs an atomic "
                           "read-then-write, which this store does not have");
      }
      auto current = db_->ReadRow(from.table, from.row, ReadOptions());
      if (!current.ok()) return FsErrorFromStatus(current.status());
      stamp = CommitTimestamp(*current, staged);
      RowMutation m = StagedMutation(from.row, staged, stamp);
      RewriteResult result;
      if (!m.ops().empty()) {
        auto applied = db_->Apply(from.table, m, WriteOptions());
        if (!applied.ok()) return FsErrorFromStatus(applied.status());
        result = RewriteResult{true, *applied};
      }
      r = result;
    }
    if (!r.ok()) return FsErrorFromStatus(r.status());
    if (changed) {
      return FsError::Of(ECANCELED, from.DebugPath() +
                                        " is @if-unchanged and the row "
                                        "changed since it was staged: "
                                        "nothing committed, still staged");
    }
    if (r->written) {
      if (stamp == kServerTimestamp) stamp = r->timestamp;
      KeepMtimes(from, staged, stamp);
    }
    stage_.Erase(from.table, from.row, staged.id);
    Detach(from, to, staged);
    if (r->written) InvalidateRow(from, staged);
    // The kernel moved the row's entry onto `to`, which never exists. Not
    // awaited: the notice waits for this rename's locks on the directory.
    fs_->ForgetName(to, /*await=*/false);
    return FsError::Ok();
  }

  // utimensat's mtimes of the staged cells, for the committed versions.
  void KeepMtimes(const Node& row, const Stage::Row& staged, int64_t stamp) {
    for (const auto& [family, f] : staged.families) {
      for (const auto& [qualifier, c] : f.cells) {
        if (!c.set_mtime.has_value()) continue;
        Node cell;
        cell.kind = NodeKind::kCell;
        cell.table = row.table;
        cell.row = row.row;
        cell.family = family;
        cell.qualifier = qualifier;
        FsError e = mtimes_.Set(cell, stamp, *c.set_mtime);
        if (!e.ok()) {
          Log(LogLevel::kError, "the mtime of " + cell.DebugPath() +
                                    " was not kept: " + e.ToString());
        }
      }
    }
  }

  // The staged row is gone: its descriptors stage nothing more, its
  // directory's inode follows the rename (to a name that never exists),
  // and its other names get new inodes when staged again. (Found by name,
  // not by a pass over the inode table: a commit costs what it staged.)
  void Detach(const Node& from, const Node& to, const Stage::Row& staged) {
    for (auto& h : stage_.Handles(from.table, from.row)) {
      MutexLock lock(h->mu());
      h->Unlinked();
    }
    inodes_.Rebind(from, to);
    std::vector<Node> names;
    auto add = [&](NodeKind kind, const std::string& family,
                   const std::string& qualifier, std::string_view mark) {
      Node n = from;
      n.kind = kind;
      n.family = family;
      n.qualifier = qualifier;
      n.name = std::string(mark);
      names.push_back(std::move(n));
    };
    if (staged.delete_row) add(NodeKind::kStageRowMark, "", "", kDeleteMark);
    if (staged.if_unchanged) {
      add(NodeKind::kStageRowMark, "", "", kIfUnchangedMark);
    }
    for (const std::string& family : staged.deleted_families) {
      add(NodeKind::kStageRowMark, family, "", kDeleteMark);
    }
    for (const auto& [family, f] : staged.families) {
      add(NodeKind::kStageFamily, family, "", "");
      for (const auto& [qualifier, c] : f.cells) {
        add(NodeKind::kStageCell, family, qualifier, "");
      }
      for (const std::string& qualifier : f.deleted) {
        add(NodeKind::kStageCellMark, family, qualifier, kDeleteMark);
      }
    }
    for (const Node& n : names) {
      if (std::optional<uint64_t> ino = inodes_.Find(n)) {
        inodes_.Unbind(n, *ino);
      }
    }
  }

  // The kernel's copies of the committed row's names in the main tree:
  // the table, the row, and what the commit wrote, by name; after staged
  // deletions, also every known name they may have removed (one pass over
  // the inode table), which loses its name when gone.
  void InvalidateRow(const Node& from, const Stage::Row& staged) {
    Node n;
    n.kind = NodeKind::kTable;
    n.table = from.table;
    std::vector<Node> written = {n};
    n.kind = NodeKind::kRow;
    n.row = from.row;
    written.push_back(n);
    bool deletes = staged.delete_row || !staged.deleted_families.empty();
    for (const auto& [family, f] : staged.families) {
      n.kind = NodeKind::kFamily;
      n.family = family;
      written.push_back(n);
      n.kind = NodeKind::kCell;
      for (const auto& [qualifier, c] : f.cells) {
        n.qualifier = qualifier;
        written.push_back(n);
      }
      deletes = deletes || !f.deleted.empty();
    }
    for (const Node& w : written) {
      if (std::optional<uint64_t> ino = inodes_.Find(w)) {
        fs_->InvalidateInode(*ino);
      }
    }
    if (!deletes) return;
    auto known = inodes_.Matching([&](const Node& k) {
      return k.table == from.table && k.row == from.row &&
             k.view != View::kAt &&
             (k.kind == NodeKind::kFamily || k.kind == NodeKind::kCell);
    });
    for (const auto& [ino, node] : known) {
      fs_->InvalidateInode(ino);
      struct stat st;
      if (!fs_->Stat(node, ino, &st).ok()) fs_->ForgetName(node);
    }
  }

  Stage stage_;
};

}  // namespace

std::unique_ptr<Area> NewStageArea(Filesystem* fs) {
  return std::make_unique<StageArea>(fs);
}

}  // namespace tabletfs::fs
