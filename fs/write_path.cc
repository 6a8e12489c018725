#include "fs/write_path.h"

#include <errno.h>
#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "fs/area.h"
#include "fs/log.h"

namespace tabletfs::fs {
namespace {

OpenCell::Access AccessOf(FileHandle::Mode m) {
  switch (m) {
    case FileHandle::Mode::kRead:
      return OpenCell::Access::kRead;
    case FileHandle::Mode::kWrite:
      return OpenCell::Access::kWrite;
    case FileHandle::Mode::kAppend:
      return OpenCell::Access::kAppend;
  }
  return OpenCell::Access::kRead;
}

// How long an open waits for the RELEASE of closed descriptors: a
// reader's open for a closed `>` whose empty value is still due
// (OpenCell::AwaitEmptyRelease), a writer's open for readers that read
// through the page cache (OpenCell::AwaitCachedReadersRelease; if they
// are still open, the writer moves to an inode of its own).
// RELEASE follows the close within microseconds, or a few milliseconds on
// a loaded machine; a dup still open keeps it away for good.
constexpr std::chrono::milliseconds kReleaseWait{50};

// How recent a cell's last commit is when its readers read around the page
// cache (OpenCellFile).
constexpr int64_t kRecentCommitMicros = 1000000;

// How long after a writer's open moved readers of the cell read around the
// page cache (WritePath::WriterDue): the kernel retries at once.
constexpr std::chrono::seconds kRetryDue{1};
// How long a moved open's retry is recognized (WritePath::TakeDue): any
// time it comes (a LOOKUP that reads the store, a busy daemon), so that it
// is never moved twice; a retry that never came (its caller was killed)
// is dropped after this.
constexpr std::chrono::seconds kDueKept{60};

// How many times a writer's open looks for writers to join on another
// inode before it stays on its own (each look after the first follows a
// join that found those writers closed).
constexpr int kJoinLooks = 3;

// Whether a writer opened with `flags` may use the page cache (see
// SetCellIo): read-write, not O_APPEND (the kernel would place appended
// bytes at its own idea of the end in pages, while the store appends at
// the committed end), and no reader reading through the page cache (only
// where the writer could not get an inode of its own: a retry that raced
// another open, or a CREATE on an inode readers hold).
bool CanUsePageCache(int flags, OpenCell& cell) REQUIRES(cell.mu()) {
  return (flags & O_ACCMODE) == O_RDWR && !(flags & O_APPEND) &&
         !cell.HasCachedReaders();
}

// How the kernel does a writer's I/O. Writers opened O_RDWR use the page
// cache, so that MAP_SHARED mappings work (the kernel cannot map a direct
// I/O file shared); their writes still reach the daemon at once (no
// writeback cache), and pages they hold are theirs and other writers'
// pending bytes. So no reader may use that inode meanwhile: readers and
// writers get inodes of their own (OpenCellFile), and where they still
// share one, readers use direct I/O. O_WRONLY writers use direct I/O: their
// bytes never enter the page cache. `shared_pages`: another page-cache
// writer is open, so the cached pages are the pending value: keep them.
void SetCellIo(Opened* out, bool page_cache, bool shared_pages) {
  out->direct_io = !page_cache;
  out->keep_cache = page_cache && shared_pages;
}

// Whether an open with `flags` needs the committed bytes at once: a reader,
// and a read-write open that keeps them (it may read them, or map them).
// Appenders, truncating opens and write-only opens load them when a write
// first needs them (OpenCell::Attach), so `touch` or `echo x >` of a
// 64 MiB cell reads none of it.
bool NeedsBytesAtOpen(const Node& n, int flags, bool write) {
  if (!write) return true;
  const bool append = (flags & O_APPEND) && !n.at.has_value();
  return (flags & O_ACCMODE) == O_RDWR && !(flags & O_TRUNC) && !append;
}

bool SameCell(const Node& a, const Node& b) {
  return a.view == View::kCurrent && b.view == View::kCurrent &&
         a.table == b.table && a.row == b.row && a.family == b.family &&
         a.qualifier == b.qualifier;
}

}  // namespace

// ---------------------------------------------------------------------------
// Opening cells
// ---------------------------------------------------------------------------

FsError WritePath::ReadForOpen(const Node& n, bool value, bool write,
                               CommittedVersion* out) {
  *out = CommittedVersion();
  if (value) {
    CellVersion v;
    TABLETFS_FS_RETURN_IF_ERROR(fs_->ReadVersion(n, &v));
    out->exists = v.exists;
    out->timestamp = v.timestamp;
    out->size = v.value.size();
    out->value = std::move(v.value);
  } else {
    VersionStat v;
    TABLETFS_FS_RETURN_IF_ERROR(fs_->StatVersion(n, &v));
    out->exists = v.exists;
    out->timestamp = v.timestamp;
    out->size = v.size;
    out->value_read = false;
  }
  // Q@T is written at exactly T (and read as of T).
  if (write && n.at.has_value() && out->exists && out->timestamp != *n.at) {
    *out = CommittedVersion();
  }
  return FsError::Ok();
}

FsError WritePath::OpenCellFile(uint64_t ino, const Node& n,
                                const OpenRequest& request, bool write,
                                Opened* out) {
  // A writer's open that stays on `ino` (a retry, see MoveToOwnInode)
  // while the cell's writers are open on another inode shares their
  // pending value, through direct I/O, so that nothing it writes enters
  // the pages of `ino`, which readers may hold. When they all closed
  // before it joined, it opens on `ino` after all (and may join others).
  OpenPass pass = OpenPass::kFirst;
  uint64_t state_ino = ino;
  for (int looks = 1;; looks += pass == OpenPass::kJoin ? 0 : 1) {
    std::optional<uint64_t> join;
    const bool may_join = looks <= kJoinLooks;
    FsError e = OpenCellOn(ino, n, request, write, pass, state_ino, may_join,
                           out, &join);
    if (!join.has_value()) {
      if (!may_join && WritersInode(n, ino).has_value()) {
        Log(LogLevel::kWarning,
            "open of " + n.DebugPath() + " (inode " + std::to_string(ino) +
                ") keeps a pending value of its own: the writers it tried "
                "to join on another inode kept closing");
      }
      return e;
    }
    pass = *join == ino ? OpenPass::kAgain : OpenPass::kJoin;
    state_ino = *join;
  }
}

FsError WritePath::OpenCellOn(uint64_t ino, const Node& n,
                              const OpenRequest& request, bool write,
                              OpenPass pass, uint64_t state_ino, bool may_join,
                              Opened* out, std::optional<uint64_t>* join) {
  join->reset();
  std::shared_ptr<OpenCell> cell = fs_->open_cells().Get(state_ino, n);
  MutexLock lock(cell->mu());
  const pid_t pid = request.caller.pid;
  if (pass == OpenPass::kJoin && !Joinable(*cell, n)) {
    // Back to the open's own inode.
    fs_->open_cells().Put(cell);
    *join = ino;
    return FsError::Ok();
  }
  if (pass == OpenPass::kFirst && !fs_->options().single_threaded) {
    // RELEASE is served by another thread: wait for those of descriptors
    // just closed (bounded: a dup may still be open).
    if (!write) {
      // `: > f; cat f`: the empty value of the closed `>` is committed by
      // its RELEASE, which the kernel sends as that close() returns
      // (while `cmd > f` runs, a dup is open: readers see the old value).
      cell->AwaitEmptyRelease(kReleaseWait);
    } else {
      // `cat f` just returned: once its RELEASE came, this writer keeps
      // the inode, and commits after that reader's last read.
      cell->AwaitCachedReadersRelease(kReleaseWait);
    }
  }
  // Readers and writers on inodes of their own. The kernel applies a
  // writer's sizes (its O_TRUNC, a write past the end) to the inode it
  // opens, before the commit, and keeps its pending bytes in that inode's
  // pages (read-write writers use the page cache, for MAP_SHARED); a
  // reader of that inode would read them through the page cache, or
  // through a private mapping, which faults pages in through the page
  // cache even on a direct-I/O descriptor. The reader's faults put
  // committed bytes in the pages the writers read and map, and a short
  // read there cuts the kernel's size under the writers' mappings
  // (SIGBUS). So an open that finds descriptors of the other kind moves
  // to the cell's inode of its kind: the inode it found is retired (it
  // still follows the cell: each commit drops its pages and attributes,
  // InvalidateKernel, but no path finds it) and the open gets ESTALE,
  // which makes the kernel walk the path again with a fresh lookup
  // (do_filp_open's LOOKUP_REVAL retry), which finds the other inode, or
  // a new one. A retry is never moved again (its ESTALE would reach the
  // caller): where it races another open, the two kinds share an inode,
  // with readers on direct I/O.
  const bool retry = pass != OpenPass::kFirst || TakeDue(n, pid, write);
  if (write && !retry && MoveToOwnInode(n, ino, *cell, true, pid)) {
    fs_->open_cells().Put(cell);
    return FsError::Of(ESTALE, "inode " + std::to_string(ino) + " of " +
                                   n.DebugPath() +
                                   " is open for reading: a writer moves");
  }
  if (!write && !retry && cell->HasWriters()) {
    // (A cell created by a writer and not committed yet has no version a
    // reader's inode of its own could show: such a reader stays. The
    // version's size is enough to know: its bytes are read after.)
    VersionStat committed;
    FsError e = fs_->StatVersion(n, &committed);
    if (e.ok() && committed.exists &&
        MoveToOwnInode(n, ino, *cell, false, pid)) {
      fs_->open_cells().Put(cell);
      return FsError::Of(ESTALE, "inode " + std::to_string(ino) + " of " +
                                     n.DebugPath() +
                                     " is open for writing: a reader moves");
    }
  }
  // The store is read with the cell's lock held: a writer that commits
  // and closes meanwhile is either still a writer here or committed.
  CommittedVersion v;
  FsError e =
      ReadForOpen(n, NeedsBytesAtOpen(n, request.flags, write), write, &v);
  const bool writers = cell->HasWriters() && !cell->unlinked();
  // A writer decides whose writers it joins, and attaches, under its
  // cell's attach lock: two writers' opens on two inodes of the cell at
  // once (a retry and another open) would each find no writers elsewhere
  // and keep pending values of their own. (std::unique_lock: taken for
  // writers only, which the thread-safety analysis cannot follow.)
  std::unique_lock<std::mutex> attaching;
  if (write) attaching = std::unique_lock(AttachMutex(n));
  // (Not for a descriptor of a removed cell: the writers of a new file of
  // that name are not its. Before the checks below: a cell the writers
  // created has no version yet.)
  if (write && !cell->HasWriters() && !cell->unlinked() &&
      pass != OpenPass::kJoin && may_join) {
    if ((*join = WritersInode(n, ino)).has_value()) {
      fs_->open_cells().Put(cell);
      return FsError::Ok();
    }
  }
  bool recreate = false;
  if (e.ok() && !v.exists && !writers && (!n.at.has_value() || !write)) {
    recreate = write && fs_->Vanished(ino);
    if (!recreate) e = FsError::Of(ENOENT, "no cell " + n.DebugPath());
  }
  if (!e.ok()) {
    fs_->open_cells().Put(cell);
    return e;
  }
  if (!write) {
    // A reader sees committed versions only. While writers hold bytes not
    // committed, or write through the page cache, read around the cache
    // (direct I/O); else let the kernel cache what it read.
    // (Writers that committed everything and only wait for their
    // RELEASE, which the kernel sends after the close returned, hold
    // nothing a reader could see.)
    // Also around the cache: a cell committed in the last kRecentCommit
    // (or stamped in the future). A commit landing during a page-cache
    // reader's read() can mix two versions in it (README "Where this
    // differs", item 1), and a cell just written is the one likely to be
    // written again: `echo x > f; cat f` loops, a writer between two
    // sessions. A cell at rest is read through the page cache, unless the
    // caller asked for O_DIRECT: its read()s are then whole versions too.
    const bool recent =
        v.exists && NowMicros() - v.timestamp < kRecentCommitMicros;
    const bool direct = (request.flags & O_DIRECT) != 0 || cell->HasPending() ||
                        cell->HasPageCacheWriters() || WriterDue(n) ||
                        WritersInode(n, ino).has_value() || recent;
    if (direct) {
      out->direct_io = true;
    } else {
      out->keep_cache = v.exists && fs_->inodes().SameVersionAsLastOpen(
                                        ino, v.timestamp, v.size);
    }
    uint64_t desc = cell->Attach(OpenCell::Access::kRead, std::move(v), false,
                                 false, !direct);
    out->handle = std::make_shared<FileHandle>(ino, n, FileHandle::Mode::kRead,
                                               cell, desc);
    return FsError::Ok();
  }
  const int flags = request.flags;
  const bool trunc = (flags & O_TRUNC) != 0;
  // O_APPEND writes always go to the end, O_TRUNC or not: as a plain
  // writer, an O_APPEND|O_TRUNC descriptor would write at the kernel's
  // idea of the size, which a reader's stat may have set to the committed
  // size, in the middle of the shared value.
  FileHandle::Mode m = (flags & O_APPEND) && !n.at.has_value()
                           ? FileHandle::Mode::kAppend
                           : FileHandle::Mode::kWrite;
  // Not while a reader reads through the page cache: it would see the
  // pending bytes there.
  const bool page_cache =
      pass != OpenPass::kJoin && CanUsePageCache(flags, *cell);
  const bool shared_pages = cell->HasPageCacheWriters();
  const bool create = recreate || (!v.exists && !writers);
  uint64_t desc =
      cell->Attach(AccessOf(m), std::move(v), trunc, create, page_cache);
  if (recreate) {
    // Created again: listed while open, and committed (empty when nothing
    // is written) at close.
    fs_->ForgetVanished(ino);
    cell->set_listed_while_open(true);
    fs_->ephemeral().AddCell(n.table, n.row, n.family, n.qualifier);
  }
  SetCellIo(out, page_cache, shared_pages);
  out->handle = std::make_shared<FileHandle>(ino, n, m, cell, desc);
  return FsError::Ok();
}

bool WritePath::Joinable(OpenCell& cell, const Node& n) {
  // Not when they all closed, or their cell was removed or renamed, since
  // the open chose to join them.
  return cell.HasWriters() && !cell.unlinked() && cell.node() == n;
}

std::mutex& WritePath::AttachMutex(const Node& n) {
  return attach_mu_[NodeHash()(n) % attach_mu_.size()];
}

bool WritePath::MoveToOwnInode(const Node& n, uint64_t ino, OpenCell& cell,
                               bool write, pid_t pid) {
  // A writer joins the writers; a reader beside no writer stays. A caller
  // outside the daemon's pid namespace (pid 0) stays too: its retry could
  // not be told from another open.
  if (write ? cell.HasWriters() : !cell.HasWriters()) return false;
  if (pid == 0) return false;
  InodeTable& inodes = fs_->inodes();
  // The cell's other inodes, by what is open on them (the writers of a
  // cell are on one inode: they share its pending value).
  std::optional<uint64_t> writers_at, idle;
  const std::optional<uint64_t> bound = inodes.Find(n);
  for (const auto& [other, c] : OtherInodes(ino, bound, inodes.Retired(n))) {
    if (!c || c->IdleNow()) {
      if (!idle) idle = other;
    } else if (c->WritersNow()) {
      writers_at = other;
    }
  }
  if (write && !cell.HasReaders() && !writers_at) return false;
  // A reader goes to an idle inode, or a new one, rather than to one
  // that readers hold: a long-lived reader there (`tail -f`) would make
  // each writer that finds it wait for its release (kReleaseWait).
  std::optional<uint64_t> target = write && writers_at ? writers_at : idle;
  SetDue(n, pid, write);
  bool moved = false;
  if (target) moved = *target == bound || inodes.Restore(n, *target);
  // Else (or the kernel forgot the target meanwhile) the next lookup binds
  // a new inode.
  if (!moved) moved = !bound || inodes.Retire(n, *bound);
  if (!moved) TakeDue(n, pid, write);
  return moved;
}

std::vector<std::pair<uint64_t, std::shared_ptr<OpenCell>>>
WritePath::OtherInodes(uint64_t ino, std::optional<uint64_t> bound,
                       const std::vector<uint64_t>& retired) {
  std::vector<std::pair<uint64_t, std::shared_ptr<OpenCell>>> out;
  auto add = [&](uint64_t other) {
    if (other != ino) out.emplace_back(other, fs_->open_cells().Find(other));
  };
  if (bound) add(*bound);
  for (uint64_t r : retired) add(r);
  return out;
}

std::optional<uint64_t> WritePath::WritersInode(const Node& n, uint64_t ino) {
  // Without a retired inode the cell has one (every open asks).
  const std::vector<uint64_t> retired = fs_->inodes().Retired(n);
  if (retired.empty()) return std::nullopt;
  for (const auto& [other, c] :
       OtherInodes(ino, fs_->inodes().Find(n), retired)) {
    if (c && c->WritersNow()) return other;
  }
  return std::nullopt;
}

void WritePath::SetDue(const Node& n, pid_t pid, bool write) {
  MutexLock lock(&due_mu_);
  const auto now = std::chrono::steady_clock::now();
  // Retries that never came (the caller was killed) go here.
  for (auto it = due_.begin(); it != due_.end();) {
    std::erase_if(it->second,
                  [&](const Due& d) { return now - d.at > kDueKept; });
    it = it->second.empty() ? due_.erase(it) : std::next(it);
  }
  due_[n].push_back(Due{pid, write, now});
}

bool WritePath::TakeDue(const Node& n, pid_t pid, bool write) {
  MutexLock lock(&due_mu_);
  if (due_.empty()) return false;  // every open asks
  auto it = due_.find(n);
  if (it == due_.end()) return false;
  std::vector<Due>& dues = it->second;
  for (auto d = dues.begin(); d != dues.end(); ++d) {
    if (d->write == write && d->pid == pid) {
      dues.erase(d);
      if (dues.empty()) due_.erase(it);
      return true;
    }
  }
  return false;
}

bool WritePath::WriterDue(const Node& n) {
  MutexLock lock(&due_mu_);
  if (due_.empty()) return false;  // every reader's open asks
  auto it = due_.find(n);
  if (it == due_.end()) return false;
  const auto now = std::chrono::steady_clock::now();
  for (const Due& d : it->second) {
    if (d.write && now - d.at < kRetryDue) return true;
  }
  return false;
}

FsError WritePath::CreateCell(const Node& n, const OpenRequest& request,
                              Opened* out, Entry* entry) {
  TABLETFS_FS_RETURN_IF_ERROR(fs_->CheckFuture(n));
  auto settings = fs_->db()->GetFamily(n.table, n.family);
  if (!settings.ok()) return FsErrorFromStatus(settings.status());
  const uint64_t ino = fs_->inodes().Lookup(n);
  // As OpenCellFile: a create on an inode whose cell has no writers while
  // another inode of the cell has them joins those (a local disk has one
  // file under the name); when they closed meanwhile, it creates on its
  // own inode after all.
  std::optional<uint64_t> join;
  FsError e = CreateCellOn(ino, n, request, *settings, OpenPass::kFirst, ino,
                           out, entry, &join);
  if (join.has_value()) {
    e = CreateCellOn(ino, n, request, *settings, OpenPass::kJoin, *join, out,
                     entry, &join);
  }
  if (join.has_value()) {
    e = CreateCellOn(ino, n, request, *settings, OpenPass::kAgain, ino, out,
                     entry, &join);
  }
  // The lookup counted for the entry reply, which an error does not send.
  if (!e.ok()) fs_->inodes().Forget(ino, 1);
  return e;
}

FsError WritePath::CreateCellOn(uint64_t ino, const Node& n,
                                const OpenRequest& request,
                                const FamilySettings& settings, OpenPass pass,
                                uint64_t state_ino, Opened* out, Entry* entry,
                                std::optional<uint64_t>* join) {
  join->reset();
  const int flags = request.flags;
  std::shared_ptr<OpenCell> cell = fs_->open_cells().Get(state_ino, n);
  MutexLock lock(cell->mu());
  if (pass == OpenPass::kJoin && !Joinable(*cell, n)) {
    fs_->open_cells().Put(cell);
    *join = ino;  // back to the create's own inode
    return FsError::Ok();
  }
  CommittedVersion v;
  FsError e = ReadForOpen(n, NeedsBytesAtOpen(n, flags, true), true, &v);
  std::lock_guard<std::mutex> attaching(AttachMutex(n));
  bool others = cell->HasWriters() && !cell->unlinked();
  if (pass == OpenPass::kFirst && !others && !cell->unlinked()) {
    *join = WritersInode(n, ino);
    others = join->has_value();
  }
  if (e.ok() && (v.exists || others) && (flags & O_EXCL)) {
    e = FsError::Of(EEXIST, n.DebugPath() + " exists");
  }
  if (!e.ok() || join->has_value()) {
    if (!e.ok()) join->reset();
    fs_->open_cells().Put(cell);
    return e;
  }
  const bool create = !v.exists && !others;
  // As in OpenCellFile: O_APPEND appends, with O_TRUNC too.
  FileHandle::Mode m = (flags & O_APPEND) ? FileHandle::Mode::kAppend
                                          : FileHandle::Mode::kWrite;
  if (n.at.has_value()) m = FileHandle::Mode::kWrite;
  // A create that joined writes around the pages of its own inode.
  const bool page_cache =
      pass != OpenPass::kJoin && CanUsePageCache(flags, *cell);
  const bool shared_pages = cell->HasPageCacheWriters();
  fs_->ForgetVanished(ino);  // created again
  uint64_t desc = cell->Attach(AccessOf(m), std::move(v),
                               (flags & O_TRUNC) != 0, create, page_cache);
  if (create && !n.at.has_value()) {
    // A local disk lists a created file at once: until its last
    // writer closes, listings of the family show the name (nothing is
    // committed before a close, so a crash leaves no trace).
    cell->set_listed_while_open(true);
    fs_->ephemeral().AddCell(n.table, n.row, n.family, n.qualifier);
  }
  out->handle = std::make_shared<FileHandle>(ino, n, m, cell, desc);
  entry->ino = ino;
  fs_->FileStat(ino, settings, cell->PendingSize().value_or(0), NowMicros(),
                &entry->attr);
  entry->entry_timeout = fs_->EntryTimeout(n);
  entry->attr_timeout = fs_->OpenCellAttrTimeout(n, *cell);
  SetCellIo(out, page_cache, shared_pages);
  return FsError::Ok();
}

// ---------------------------------------------------------------------------
// Descriptors
// ---------------------------------------------------------------------------

FsError WritePath::Read(FileHandle& h, off_t offset, size_t size,
                        std::string* out) {
  if (h.cell()) {
    OpenCell& c = *h.cell();
    MutexLock lock(c.mu());
    return c.Read(h.descriptor(), offset, size, out);
  }
  if (h.source()) return h.source()->Read(offset, size, out);
  MutexLock lock(h.mu());
  *out = h.Read(offset, size);
  return FsError::Ok();
}

FsError WritePath::Write(FileHandle& h, const char* buf, size_t size,
                         off_t off) {
  if (h.cell()) return WriteCell(h, buf, size, off);
  MutexLock lock(h.mu());
  // A file that buffers in its handle: its area sees the bytes first.
  TABLETFS_FS_RETURN_IF_ERROR(
      fs_->AreaOf(h.node()).CheckWrite(h.node(), std::string_view(buf, size)));
  FsError e = fs_->CheckSpace(
      std::max<uint64_t>(h.size(), static_cast<uint64_t>(off) + size));
  if (e.ok()) {
    e = h.Write(off, std::string_view(buf, size));
  } else {
    h.Refuse(e.err);
  }
  return e;
}

FsError WritePath::WriteCell(FileHandle& h, const char* buf, size_t size,
                             off_t off) {
  OpenCell& c = *h.cell();
  const uint64_t desc = h.descriptor();
  bool stale_pages = false;
  FsError e;
  {
    MutexLock lock(c.mu());
    e = fs_->CheckSpace(c.SizeAfterWrite(desc, off, size));
    if (e.ok()) {
      e = c.Write(desc, off, std::string_view(buf, size));
      // A direct write changed bytes that page-cache writers (mappings)
      // may hold.
      stale_pages = e.ok() && !c.IsPageCache(desc) && c.HasPageCacheWriters();
      if (e.ok()) c.KernelAttrsDroppedByWrite();
    } else {
      c.Refuse(desc, e.err);
    }
  }
  // A refusal may have removed the empty version of a created file.
  if (!e.ok() || stale_pages) fs_->InvalidateKernel(c.ino());
  return e;
}

FsError WritePath::Truncate(FileHandle& h, uint64_t size) {
  if (h.cell()) {
    OpenCell& c = *h.cell();
    MutexLock lock(c.mu());
    return c.Truncate(h.descriptor(), size);
  }
  MutexLock lock(h.mu());
  return h.Truncate(size);
}

FsError WritePath::CommitIfDue(FileHandle& h, bool at_close) {
  if (h.cell()) {
    OpenCell& c = *h.cell();
    MutexLock lock(c.mu());
    FsError e;
    const uint64_t d = h.descriptor();
    if (at_close ? c.NeedsCommitAtClose(d) : c.NeedsCommit(d)) {
      e = CommitCell(c, d);
    }
    if (e.ok()) c.Flushed(d, at_close);
    return e;
  }
  MutexLock lock(h.mu());
  if (!h.NeedsCommit()) return FsError::Ok();
  return Commit(h);
}

void WritePath::Release(FileHandle& h) {
  if (h.cell()) {
    ReleaseCell(h);
    return;
  }
  MutexLock lock(h.mu());
  if (h.NeedsCommit()) {
    FsError e = Commit(h);
    if (!e.ok()) {
      Log(LogLevel::kError, "commit at release of " + h.node().DebugPath() +
                                " failed: " + e.ToString());
    }
  }
}

void WritePath::ReleaseCell(FileHandle& h) {
  // TEST HOOK, not for production: hold each RELEASE of a cell back, so
  // that a test sees a reader's open that does not wait for it fail.
  static const std::chrono::milliseconds release_delay = [] {
    const char* env = getenv("TABLETFS_TEST_RELEASE_DELAY_MS");
    if (env == nullptr) return std::chrono::milliseconds(0);
    Log(LogLevel::kWarning, std::string("test hook: "
                                        "TABLETFS_TEST_RELEASE_DELAY_MS=") +
                                env + ": every RELEASE of a cell is delayed");
    return std::chrono::milliseconds(atoi(env));
  }();
  if (release_delay.count() > 0) std::this_thread::sleep_for(release_delay);
  OpenCell& c = *h.cell();
  const uint64_t desc = h.descriptor();
  std::optional<Node> vanished;  // a created cell that never committed
  bool stale_pages = false;
  {
    MutexLock lock(c.mu());
    if (c.NeedsCommitAtRelease(desc)) {
      FsError e = CommitCell(c, desc);
      if (!e.ok()) {
        Log(LogLevel::kError, "commit at release of " + c.node().DebugPath() +
                                  " failed: " + e.ToString());
      }
    }
    const bool last_writer = c.IsWriter(desc) && c.writers() == 1;
    // Pages of a page-cache writer may hold bytes never committed (refused,
    // or the cell removed): no later reader may be given them.
    stale_pages = c.IsPageCache(desc) && c.HasPending();
    if (last_writer) {
      // A created cell that never committed (its write was refused) is
      // gone now; the kernel's dentry for it would make the next
      // open(O_CREAT) of the name fail ENOENT until it timed out.
      if (c.listed_while_open() && !c.committed_once() && !c.unlinked()) {
        VersionStat v;
        if (fs_->StatVersion(c.node(), &v).ok() && !v.exists) {
          // Marked under the cell's lock, which this last writer detaches
          // under: an open that creates the cell again comes after it and
          // unmarks it, so a vanished cell has no writer
          // (Filesystem::MakeEntry counts on it).
          fs_->MarkVanished(c.ino());
          vanished = c.node();
        }
      }
      Unlist(c);
    }
    // Only once committed does the descriptor stop being a writer: an open
    // or stat that finds no writer then finds the version in the store.
    c.Detach(desc);
  }
  if (vanished.has_value()) fs_->ForgetName(*vanished);
  if (stale_pages) fs_->InvalidateKernel(c.ino());
  fs_->open_cells().Put(h.cell());
}

void WritePath::Fallocate(FileHandle& h) {
  if (!h.cell()) return;
  // As a refused write: the descriptor stores nothing, and a name it
  // created is not kept.
  OpenCell& c = *h.cell();
  {
    MutexLock lock(c.mu());
    if (c.IsWriter(h.descriptor())) c.Refuse(h.descriptor(), EOPNOTSUPP);
  }
  fs_->InvalidateKernel(c.ino());
}

void WritePath::CommitAtUnmount(
    const std::vector<std::shared_ptr<FileHandle>>& files) {
  for (auto& h : files) {
    FsError e;
    std::string path;
    if (h->cell()) {
      OpenCell& c = *h->cell();
      MutexLock lock(c.mu());
      if (c.NeedsCommit(h->descriptor())) e = CommitCell(c, h->descriptor());
      path = c.node().DebugPath();
    } else {
      MutexLock lock(h->mu());
      if (h->NeedsCommit()) e = Commit(*h);
      path = h->node().DebugPath();
    }
    if (!e.ok()) {
      Log(LogLevel::kError,
          "commit of " + path + " at unmount failed: " + e.ToString());
    }
  }
}

std::string WritePath::PathOf(FileHandle& h) {
  if (h.cell()) {
    MutexLock lock(h.cell()->mu());
    return h.cell()->node().DebugPath();
  }
  MutexLock lock(h.mu());
  return h.node().DebugPath();
}

uint64_t WritePath::SizeOf(FileHandle& h) {
  if (h.cell()) {
    OpenCell& c = *h.cell();
    MutexLock lock(c.mu());
    return c.SizeFor(h.descriptor());
  }
  MutexLock lock(h.mu());
  return h.size();
}

bool WritePath::IsCellReader(FileHandle& h) {
  if (!h.cell()) return false;
  MutexLock lock(h.cell()->mu());
  return !h.cell()->IsWriter(h.descriptor());
}

// ---------------------------------------------------------------------------
// Commits
// ---------------------------------------------------------------------------

FsError WritePath::CommitCell(OpenCell& c, uint64_t descriptor) {
  int64_t committed_at = 0;
  TABLETFS_FS_RETURN_IF_ERROR(c.Commit(descriptor, &committed_at));
  if (std::optional<int64_t> mtime = c.TakePendingMtime()) {
    FsError e = fs_->mtimes().Set(c.node(), committed_at, *mtime);
    if (!e.ok()) {
      Log(LogLevel::kError, "the mtime of " + c.node().DebugPath() +
                                " was not kept: " + e.ToString());
    }
  }
  fs_->ForgetVanished(c.ino());
  // Readers of the cell were updated by the commit itself; the kernel's
  // copy, and for a Q@T write the cell Q, are stale. While writers are
  // open the kernel holds no page a reader sees, and attributes only when
  // a stat was answered since the last write (OpenCell::MarkKernelAttrs),
  // so only then, or when readers read through the page cache, can a
  // process that saw the reply see the old version: the reply waits for
  // the notice only then (a wait per commit costs a thread hand-off).
  const bool await = c.TakeKernelAttrs() || c.HasCachedReaders();
  fs_->InvalidateKernel(c.ino(), await);
  const Node& n = c.node();
  if (n.at.has_value()) {
    Node plain = n;
    plain.at.reset();
    if (std::optional<uint64_t> other = fs_->inodes().Find(plain)) {
      fs_->InvalidateInode(*other);
    }
  }
  return FsError::Ok();
}

FsError WritePath::Commit(FileHandle& h) {
  // Only files whose area buffers them in their handle (`.schema`) get
  // here; cells commit through their open state (CommitCell).
  return fs_->AreaOf(h.node()).Commit(h);
}

// ---------------------------------------------------------------------------
// Name changes
// ---------------------------------------------------------------------------

WritePath::LockedCells::LockedCells(
    Filesystem* fs, const std::vector<Node>& nodes,
    bool with_versions) NO_THREAD_SAFETY_ANALYSIS : fs_(fs) {
  std::vector<uint64_t> inos;
  for (const Node& n : nodes) {
    if (auto ino = fs->inodes().Find(n)) inos.push_back(*ino);
    for (uint64_t r : fs->inodes().Retired(n)) inos.push_back(r);
  }
  if (with_versions) {
    for (auto& c : fs->open_cells().All()) {
      std::optional<Node> n = fs->inodes().Get(c->ino());
      if (n.has_value() && SameCell(*n, nodes[0])) {
        inos.push_back(c->ino());
      }
    }
  }
  std::sort(inos.begin(), inos.end());
  inos.erase(std::unique(inos.begin(), inos.end()), inos.end());
  for (uint64_t ino : inos) {
    std::optional<Node> n = fs->inodes().Get(ino);
    if (!n.has_value() || n->kind != NodeKind::kCell) continue;
    cells_.push_back(fs->open_cells().Get(ino, *n));
    cells_.back()->mu()->Lock();
  }
}

WritePath::LockedCells::~LockedCells() NO_THREAD_SAFETY_ANALYSIS {
  for (auto it = cells_.rbegin(); it != cells_.rend(); ++it) {
    (*it)->mu()->Unlock();
    fs_->open_cells().Put(*it);
  }
}

void WritePath::OrphanWriters(const LockedCells& locked, const Node& cell,
                              bool with_versions) {
  // Each removed node's open inodes keep its locks, together.
  std::unordered_map<Node, std::vector<uint64_t>, NodeHash> removed;
  for (auto& c : locked.cells()) {
    c->mu()->AssertHeld();
    if (with_versions ? SameCell(c->node(), cell) : c->node() == cell) {
      Unlist(*c);
      if (!c->unlinked()) {
        fs_->inodes().Unbind(c->node(), c->ino());
        removed[c->node()].push_back(c->ino());
      }
      c->Unlinked();
    }
  }
  for (const auto& [node, inos] : removed) fs_->locks().Orphan(node, inos);
}

void WritePath::MoveWriters(const LockedCells& locked, const Node& from,
                            const Node& to) {
  for (auto& c : locked.cells()) {
    c->mu()->AssertHeld();
    if (!c->unlinked() && c->node() == from) {
      Unlist(*c);  // the rename stored the destination
      c->Renamed(to);
    }
  }
}

bool WritePath::CreatedAndOpen(const LockedCells& locked, const Node& cell) {
  std::optional<uint64_t> ino = fs_->inodes().Find(cell);
  if (!ino.has_value()) return false;
  for (auto& c : locked.cells()) {
    c->mu()->AssertHeld();
    if (c->ino() == *ino) return c->HasWriters() && !c->unlinked();
  }
  return false;
}

void WritePath::Unlist(OpenCell& c) {
  if (!c.listed_while_open()) return;
  c.set_listed_while_open(false);
  const Node& n = c.node();
  fs_->ephemeral().RemoveCell(n.table, n.row, n.family, n.qualifier);
}

}  // namespace tabletfs::fs
