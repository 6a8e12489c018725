// The FUSE low-level callbacks: every request of the kernel, mapped onto the
// store as DESIGN.md "The filesystem namespace" says. Only this file (and
// fs/invalidator.cc) includes fuse_lowlevel.h.
//
// Each callback resolves its inode to a Node (fs/path_map.h), decides with
// the store, and replies once. A refusal is an FsError: its errno goes to
// the kernel and its reason to the log (failed lookups at debug level).
// Nothing throws; locks are released before replying (see the lock order in
// fs/inode_table.h).
#define FUSE_USE_VERSION 314

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "fs/dir_handle.h"
#include "fs/ephemeral_dirs.h"
#include "fs/errors.h"
#include "fs/file_handle.h"
#include "fs/inode_table.h"
#include "fs/invalidator.h"
#include "fs/log.h"
#include "fs/mtimes.h"
#include "fs/names.h"
#include "fs/open_cells.h"
#include "fs/path_map.h"
#include "fs/schema_text.h"
#include "fs/session.h"
#include "fs/status_files.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

namespace tabletfs::fs {
namespace {

// How long a reply waits for the invalidation notices its request queued.
constexpr std::chrono::milliseconds kInvalidationWait{500};

// Through the filesystem, `Q@T` may be at most this far in the future.
constexpr int64_t kFutureLimitMicros = 3600LL * 1000 * 1000;

int64_t NowMicros() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

struct timespec MicrosToTimespec(int64_t micros) {
  struct timespec ts;
  int64_t sec = micros / 1000000;
  int64_t rem = micros % 1000000;
  if (rem < 0) {
    rem += 1000000;
    sec--;
  }
  ts.tv_sec = static_cast<time_t>(sec);
  ts.tv_nsec = static_cast<long>(rem * 1000);
  return ts;
}

int64_t TimespecToMicros(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

std::string RowEnd(std::string_view row) {
  std::string end(row);
  end.push_back('\0');
  return end;
}

mode_t FileMode(const FamilySettings& s) { return S_IFREG | (s.mode & 07777); }

// Directories get the family's mode plus x wherever r is set.
mode_t DirMode(const FamilySettings& s) {
  mode_t m = s.mode & 0777;
  m |= (m & 0444) >> 2;
  return S_IFDIR | m;
}

// The path of `name` in directory `parent`, for log lines: "/t", not "//t".
// Why a %~HASH name cannot be written where its key does not exist yet.
constexpr char kHashedNameHelp[] =
    ": a name ending in %~HASH stands for a key too long for a file name, "
    "and the key cannot be rebuilt from it; copy such rows with tabletctl "
    "export and tabletctl import (JSON lines keep every key)";

std::string ChildPath(const Node& parent, std::string_view name) {
  std::string path = parent.DebugPath();
  if (path != "/") path += "/";
  return path.append(name);
}

// The newest visible version of one cell (at T for `Q@T`).
struct CellVersion {
  bool exists = false;
  int64_t timestamp = 0;
  std::string value;
};

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

CommittedVersion ToCommitted(CellVersion v) {
  CommittedVersion out;
  out.exists = v.exists;
  out.timestamp = v.timestamp;
  out.value = std::move(v.value);
  return out;
}

// Whether a writer opened with `flags` may use the page cache (see
// SetCellIo): read-write, not O_APPEND (the kernel would place appended
// bytes at its own idea of the end in pages, while the store appends at
// the committed end), and no reader reading through the page cache.
bool CanUsePageCache(int flags, OpenCell& cell) REQUIRES(cell.mu()) {
  return (flags & O_ACCMODE) == O_RDWR && !(flags & O_APPEND) &&
         !cell.HasCachedReaders();
}

// How the kernel does a writer's I/O. Writers opened O_RDWR use the page
// cache, so that MAP_SHARED mappings work (the kernel cannot map a direct
// I/O file shared); their writes still reach the daemon at once (no
// writeback cache), and pages they hold are theirs and other writers'
// pending bytes. So no reader may read through the page cache meanwhile:
// readers that open while writers are open use direct I/O, and an O_RDWR
// open while a cached reader is open uses direct I/O too (it cannot be
// mapped shared then). O_WRONLY writers use direct I/O: their bytes never
// enter the page cache. `shared_pages`: another page-cache writer is
// open, so the cached pages are the pending value: keep them.
void SetCellIo(fuse_file_info* fi, bool page_cache, bool shared_pages) {
  fi->direct_io = page_cache ? 0 : 1;
  fi->keep_cache = page_cache && shared_pages ? 1 : 0;
}

}  // namespace

class Filesystem {
 public:
  Filesystem(Bigtable* db, const SessionOptions& options)
      : db_(db),
        options_(options),
        uid_(getuid()),
        gid_(getgid()),
        start_time_(NowMicros()) {}

  ~Filesystem() { Stop(); }

  void Start(fuse_session* se) {
    std::chrono::milliseconds delay{0};
    // TEST HOOK, not for production: hold each invalidation notice back, so
    // that a test sees a reply that did not wait for its notices fail.
    if (const char* env = getenv("TABLETFS_TEST_INVALIDATION_DELAY_MS")) {
      delay = std::chrono::milliseconds(atoi(env));
      Log(LogLevel::kWarning,
          "test hook: TABLETFS_TEST_INVALIDATION_DELAY_MS=" +
              std::to_string(delay.count()) +
              ": every invalidation notice is delayed");
    }
    invalidator_ = std::make_unique<Invalidator>(se, delay);
    // TEST HOOK, not for production: pause unlink and rename of a cell
    // between the store's change and the open states following it, so
    // that a test can close a descriptor of the cell in between.
    if (const char* env = getenv("TABLETFS_TEST_NAME_CHANGE_DELAY_MS")) {
      name_change_delay_ = std::chrono::milliseconds(atoi(env));
      Log(LogLevel::kWarning, "test hook: TABLETFS_TEST_NAME_CHANGE_DELAY_MS=" +
                                  std::to_string(name_change_delay_.count()) +
                                  ": every unlink and rename is delayed");
    }
  }

  // Commits what open files still hold (as RELEASE would) and drops every
  // handle, so nothing refers to the store after the session ends.
  void Stop() {
    std::vector<std::shared_ptr<FileHandle>> files;
    {
      MutexLock lock(&handles_mu_);
      for (auto& [ptr, h] : files_) files.push_back(h);
      files_.clear();
      dirs_.clear();
    }
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
    invalidator_.reset();
  }

  // ---- Callbacks ----
  void Init(fuse_conn_info* conn);
  void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name);
  void Forget(fuse_ino_t ino, uint64_t nlookup) {
    inodes_.Forget(ino, nlookup);
    // Forgets are frequent and vanished inodes rare: look the inode up only
    // for those.
    if (Vanished(ino) && !inodes_.Get(ino).has_value()) ForgetVanished(ino);
  }
  void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set,
               fuse_file_info* fi);
  void Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode);
  void Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name);
  void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name);
  void Rename(fuse_req_t req, fuse_ino_t parent, const char* name,
              fuse_ino_t newparent, const char* newname, unsigned flags);
  void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
              fuse_file_info* fi);
  void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
            fuse_file_info* fi);
  void Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size,
             off_t off, fuse_file_info* fi);
  void Flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void Fsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi);
  void OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
               fuse_file_info* fi, bool plus);
  void ReleaseDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void FsyncDir(fuse_req_t req, fuse_ino_t ino, int datasync,
                fuse_file_info* fi);
  void StatFs(fuse_req_t req, fuse_ino_t ino);
  void Fallocate(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);

  // Waits (bounded) until the notices this thread queued for the request
  // being served were sent, so that its reply comes after them
  // (fs/invalidator.h says why the wait is bounded).
  void AwaitInvalidations() {
    uint64_t ticket = last_ticket_;
    last_ticket_ = 0;
    if (ticket == 0 || !invalidator_) return;
    if (!invalidator_->Await(ticket, kInvalidationWait)) {
      Log(LogLevel::kWarning,
          "an invalidation notice is still blocked in the kernel; replying "
          "without it");
    }
  }

  // The path of an inode for log lines ("inode N" when unknown).
  std::string PathOfInode(fuse_ino_t ino) {
    std::optional<Node> n = inodes_.Get(ino);
    return n.has_value() ? n->DebugPath() : "inode " + std::to_string(ino);
  }

  void Refuse(fuse_req_t req, const char* op, const std::string& what,
              const FsError& e) {
    AwaitInvalidations();
    // Tools probe names all the time: failed lookups are debug lines. EIO
    // is no refusal but the store failing (a read error, a sticky
    // background error): always an error line, whatever the request, so
    // the log says why a `cat` or `ls` failed.
    // mkdir probes nothing: its ENOENT (a family not in the schema) is a
    // refusal the user must see.
    // A %~HASH name that matches no key (ENAMETOOLONG) is no probe either:
    // it is a copied tree that cannot come back, and cp fails at the lookup.
    LogLevel level = e.err == EIO ? LogLevel::kError
                     : e.err == ENAMETOOLONG ? LogLevel::kInfo
                     : (e.err == ENOENT && std::strcmp(op, "mkdir") != 0) ||
                             std::strcmp(op, "lookup") == 0
                         ? LogLevel::kDebug
                         : LogLevel::kInfo;
    if (LogEnabled(level)) {
      LogRefusal(level, std::string(op) + " " + what + ": " + e.ToString());
    }
    fuse_reply_err(req, e.err);
  }

 private:
  // The node of an inode the kernel names; ENOENT for one we freed (the
  // kernel never does that when it counts right).
  FsError NodeOf(fuse_ino_t ino, Node* out) {
    std::optional<Node> n = inodes_.Get(ino);
    if (!n.has_value()) {
      return FsError::Of(ENOENT, "unknown inode " + std::to_string(ino));
    }
    *out = std::move(*n);
    return FsError::Ok();
  }

  // Parses `name` in `parent` and resolves a hashed (long) name to its key.
  FsError Resolve(const Node& parent, std::string_view name, Node* out,
                  bool* hashed = nullptr);
  FsError ResolveHashedRow(const Node& parent, const ParsedName& parsed,
                           std::string* row);
  FsError ResolveHashedQualifier(const Node& parent, const ParsedName& parsed,
                                 std::string* qualifier);

  // Existence and attributes of a node, from the store (and the open files
  // for cells created but not yet committed).
  FsError Stat(const Node& node, fuse_ino_t ino, struct stat* st);
  void DirStat(fuse_ino_t ino, mode_t mode, uid_t uid, gid_t gid,
               struct stat* st) {
    std::memset(st, 0, sizeof(*st));
    st->st_ino = ino;
    st->st_mode = mode;
    st->st_nlink = 1;  // so that find never skips a directory
    st->st_uid = uid;
    st->st_gid = gid;
    st->st_blksize = 4096;
    st->st_atim = st->st_mtim = st->st_ctim = MicrosToTimespec(start_time_);
  }
  void FileStat(fuse_ino_t ino, const FamilySettings& s, uint64_t size,
                int64_t timestamp, struct stat* st) {
    std::memset(st, 0, sizeof(*st));
    st->st_ino = ino;
    st->st_mode = FileMode(s);
    st->st_nlink = 1;
    st->st_uid = s.owner_uid;
    st->st_gid = s.owner_gid;
    st->st_size = static_cast<off_t>(size);
    st->st_blocks = static_cast<blkcnt_t>((size + 511) / 512);
    st->st_blksize = 4096;
    st->st_atim = st->st_mtim = st->st_ctim = MicrosToTimespec(timestamp);
  }
  void EntryStat(const DirEntry& de, fuse_ino_t ino, struct stat* st);
  // A cell's mtime (and atime) as set by utimensat; ctime stays the
  // version's commit time.
  static void SetMtime(struct stat* st, int64_t micros) {
    st->st_atim = st->st_mtim = MicrosToTimespec(micros);
  }

  FsError TableExists(std::string_view table);
  FsError RowHasCells(const Node& row_node, bool* has);
  FsError FamilyHasCells(const Node& family_node, bool* has);
  // The DirTimes of a row or family directory (as of its view's time).
  // Reads no value.
  FsError DirTimesOf(const Node& dir, DirTimes* out);
  static DirTimes EntryDirTimes(const DirEntry& de) {
    DirTimes t;
    if (de.has_timestamp) t.newest = de.timestamp;
    t.entries = de.entries;
    return t;
  }
  // A row's or family's mtime (DirTimes); a directory without cells (made
  // by mkdir) and no mtime set has the mount's start time.
  void SetDirMtime(const Node& dir, const DirTimes& t, struct stat* st) {
    std::optional<int64_t> set;
    if (dir.view == View::kCurrent) set = mtimes_.Find(dir, t.entries);
    if (!set.has_value()) set = t.newest;
    if (set.has_value()) SetMtime(st, *set);
  }
  FsError ReadVersion(const Node& cell, CellVersion* out);

  // Fills an entry reply for `node`, counting one lookup.
  FsError MakeEntry(const Node& node, fuse_entry_param* e);
  // `@T` names, the `.versions` and `.at` views and the status files change
  // without a kernel operation on them: never cached.
  static bool Volatile(const Node& node) {
    return node.at.has_value() || node.view != View::kCurrent ||
           node.kind == NodeKind::kStatusDir ||
           node.kind == NodeKind::kStatusFile || node.kind == NodeKind::kAtRoot;
  }
  // Also a family whose GC policy uses maxage: its versions expire as time
  // passes.
  bool Uncached(const Node& node) {
    if (Volatile(node)) return true;
    if (node.kind != NodeKind::kFamily && node.kind != NodeKind::kCell) {
      return false;
    }
    auto settings = db_->GetFamily(node.table, node.family);
    return settings.ok() && settings->gc_policy.DependsOnTime();
  }
  double EntryTimeout(const Node& node) {
    return Uncached(node) ? 0.0 : options_.entry_timeout;
  }
  double AttrTimeout(const Node& node) {
    return Uncached(node) ? 0.0 : options_.attr_timeout;
  }
  // While writers of a cell are open, its size differs for readers (the
  // committed version's) and writers (the pending value's), and the kernel
  // keeps one: it asks again each time.
  double CellAttrTimeout(const Node& node, uint64_t ino) {
    if (node.kind == NodeKind::kCell) {
      if (std::shared_ptr<OpenCell> c = open_cells_.Find(ino)) {
        MutexLock lock(c->mu());
        if (c->HasWriters()) return 0.0;
      }
    }
    return AttrTimeout(node);
  }
  // The time a read of `node` is made at: `Q@T` and `.at/T` (the earlier of
  // the two when both).
  static std::optional<int64_t> ReadAt(const Node& node) {
    if (node.view == View::kAt) {
      return node.at.has_value() ? std::min(*node.at, node.view_at)
                                 : node.view_at;
    }
    return node.at;
  }
  // Refuses changes to read-only parts of the namespace: EROFS under
  // `.at`, EPERM for `.versions` (except removing a version) and the status
  // files.
  static FsError CheckWritable(const Node& node, const char* what) {
    if (node.view == View::kAt || node.kind == NodeKind::kAtRoot) {
      return FsError::Of(EROFS, std::string(what) + ": " + node.DebugPath() +
                                    " is a read-only view of the past");
    }
    if (node.view == View::kVersions) {
      return FsError::Of(EPERM, std::string(what) +
                                    ": versions under "
                                    ".versions never change; "
                                    "only rm of one works");
    }
    if (node.kind == NodeKind::kStatusDir ||
        node.kind == NodeKind::kStatusFile) {
      return FsError::Of(
          EPERM, std::string(what) + ": " + node.DebugPath() + " is generated");
    }
    return FsError::Ok();
  }
  // After a family's settings changed (GC policy, owner, mode): every
  // cached node of that family.
  void InvalidateFamily(const std::string& table, const std::string& family) {
    for (uint64_t ino : inodes_.InodesOfFamily(table, family)) {
      InvalidateInode(ino);
    }
  }

  FsError Commit(FileHandle& h) REQUIRES(h.mu());
  // Commits the open cell for its descriptor `descriptor` (0: by path) and
  // invalidates what the kernel cached of it.
  FsError CommitCell(OpenCell& c, uint64_t descriptor) REQUIRES(c.mu());
  FsError CommitSchema(FileHandle& h) REQUIRES(h.mu());
  // utimensat of a cell with nothing pending: the newest version's mtime.
  FsError SetCellMtime(const Node& cell, int64_t micros, fuse_ino_t ino);
  FsError TruncateCell(const Node& cell, uint64_t size, fuse_ino_t ino);
  // EIO after a sticky store failure; ENOSPC when committing `bytes` more
  // would take the data directory's free space below the reserve.
  FsError CheckSpace(uint64_t bytes);
  // Opens a cell of the main tree on its shared open state.
  FsError OpenCellFile(fuse_ino_t ino, const Node& n, fuse_file_info* fi,
                       bool write, std::shared_ptr<FileHandle>* out);
  FsError WriteCell(FileHandle& h, const char* buf, size_t size, off_t off);
  // FLUSH (`at_close`) and FSYNC: commits what the descriptor has new (at a
  // close, the empty value of a fresh open waits for RELEASE).
  FsError CommitIfDue(FileHandle& h, bool at_close);
  void ReleaseCell(FileHandle& h);
  FsError CheckFuture(const Node& node) {
    if (node.at.has_value() && *node.at > NowMicros() + kFutureLimitMicros) {
      return FsError::Of(EINVAL,
                         "a version may be written at most one hour "
                         "in the future: " +
                             node.DebugPath());
    }
    return FsError::Ok();
  }
  FsError CheckSchemaOwner(fuse_req_t req, const FamilySettings& s,
                           const Node& node) {
    const fuse_ctx* ctx = fuse_req_ctx(req);
    if (ctx->uid == 0 || ctx->uid == s.owner_uid) return FsError::Ok();
    return FsError::Of(
        EACCES, "uid " + std::to_string(ctx->uid) + " is not the owner (uid " +
                    std::to_string(s.owner_uid) + ") of " + node.DebugPath());
  }

  std::shared_ptr<FileHandle> FileOf(fuse_file_info* fi) {
    MutexLock lock(&handles_mu_);
    auto it = files_.find(reinterpret_cast<FileHandle*>(fi->fh));
    return it == files_.end() ? nullptr : it->second;
  }
  DirHandle* DirOf(fuse_file_info* fi) {
    MutexLock lock(&handles_mu_);
    auto it = dirs_.find(reinterpret_cast<DirHandle*>(fi->fh));
    return it == dirs_.end() ? nullptr : it->second.get();
  }
  static bool SameCell(const Node& a, const Node& b) {
    return a.view == View::kCurrent && b.view == View::kCurrent &&
           a.table == b.table && a.row == b.row && a.family == b.family &&
           a.qualifier == b.qualifier;
  }
  // A created cell stops being listed from memory (it is in the store, or
  // gone).
  void Unlist(OpenCell& c) REQUIRES(c.mu()) {
    if (!c.listed_while_open()) return;
    c.set_listed_while_open(false);
    const Node& n = c.node();
    ephemeral_.RemoveCell(n.table, n.row, n.family, n.qualifier);
  }
  // The open states of the cells an unlink or rename changes, locked from
  // before the store is read until they follow the change, so that no close
  // commits in between (to a removed name, or to the old name of a moved
  // cell). Each is held (OpenCells::Get) while locked, so that an open of
  // the name racing with the change finds it and waits. Locked in inode
  // order (the lock order in fs/inode_table.h).
  class LockedCells {
   public:
    // The open states of `nodes` (made when none is open) and, with
    // `with_versions`, those of the Q@T names of nodes[0].
    LockedCells(Filesystem* fs, const std::vector<Node>& nodes,
                bool with_versions) NO_THREAD_SAFETY_ANALYSIS : fs_(fs) {
      std::vector<uint64_t> inos;
      for (const Node& n : nodes) {
        if (auto ino = fs->inodes_.Find(n)) inos.push_back(*ino);
      }
      if (with_versions) {
        for (auto& c : fs->open_cells_.All()) {
          std::optional<Node> n = fs->inodes_.Get(c->ino());
          if (n.has_value() && SameCell(*n, nodes[0])) {
            inos.push_back(c->ino());
          }
        }
      }
      std::sort(inos.begin(), inos.end());
      inos.erase(std::unique(inos.begin(), inos.end()), inos.end());
      for (uint64_t ino : inos) {
        std::optional<Node> n = fs->inodes_.Get(ino);
        if (!n.has_value() || n->kind != NodeKind::kCell) continue;
        cells_.push_back(fs->open_cells_.Get(ino, *n));
        cells_.back()->mu()->Lock();
      }
    }
    ~LockedCells() NO_THREAD_SAFETY_ANALYSIS {
      for (auto it = cells_.rbegin(); it != cells_.rend(); ++it) {
        (*it)->mu()->Unlock();
        fs_->open_cells_.Put(*it);
      }
    }
    LockedCells(const LockedCells&) = delete;
    LockedCells& operator=(const LockedCells&) = delete;
    const std::vector<std::shared_ptr<OpenCell>>& cells() const {
      return cells_;
    }

   private:
    Filesystem* const fs_;
    std::vector<std::shared_ptr<OpenCell>> cells_;
  };
  // As on a local disk: writers of a removed cell commit nothing more, and
  // the name is free for a new file: the next create of it gets a new inode
  // and open state, while the open descriptors keep the removed one. With
  // `with_versions` (rm Q removes every version), also the writers of its
  // Q@T names.
  void OrphanWriters(const LockedCells& locked, const Node& cell,
                     bool with_versions) {
    for (auto& c : locked.cells()) {
      c->mu()->AssertHeld();
      if (with_versions ? SameCell(c->node(), cell) : c->node() == cell) {
        Unlist(*c);
        if (!c->unlinked()) inodes_.Unbind(c->node(), c->ino());
        c->Unlinked();
      }
    }
  }
  // As on a local disk: writers of a renamed cell commit to its new name.
  void MoveWriters(const LockedCells& locked, const Node& from,
                   const Node& to) {
    for (auto& c : locked.cells()) {
      c->mu()->AssertHeld();
      if (!c->unlinked() && c->node() == from) {
        Unlist(*c);  // the rename stored the destination
        c->Renamed(to);
      }
    }
  }
  // Whether `cell` was created by a descriptor still open that committed
  // nothing yet (it exists, empty, for unlink and rename).
  bool CreatedAndOpen(const LockedCells& locked, const Node& cell) {
    std::optional<uint64_t> ino = inodes_.Find(cell);
    if (!ino.has_value()) return false;
    for (auto& c : locked.cells()) {
      c->mu()->AssertHeld();
      if (c->ino() == *ino) return c->HasWriters() && !c->unlinked();
    }
    return false;
  }
  // Whether `ino` is a created file released without a commit that the
  // kernel still knows (vanished_).
  bool Vanished(uint64_t ino) {
    MutexLock lock(&handles_mu_);
    return vanished_.count(ino) != 0;
  }
  // The cell of `ino` exists again, or is gone for good: no longer vanished.
  // Returns whether it was.
  bool ForgetVanished(uint64_t ino) {
    MutexLock lock(&handles_mu_);
    return vanished_.erase(ino) > 0;
  }
  static std::string PathOf(FileHandle& h) {
    if (h.cell()) {
      MutexLock lock(h.cell()->mu());
      return h.cell()->node().DebugPath();
    }
    MutexLock lock(h.mu());
    return h.node().DebugPath();
  }
  void AddFile(std::shared_ptr<FileHandle> h, fuse_file_info* fi) {
    fi->fh = reinterpret_cast<uint64_t>(h.get());
    MutexLock lock(&handles_mu_);
    files_.emplace(h.get(), std::move(h));
  }
  std::shared_ptr<FileHandle> OpenHandle(uint64_t ino, const Node& node,
                                         FileHandle::Mode mode,
                                         std::string initial, bool fresh) {
    return std::make_shared<FileHandle>(ino, node, mode, std::move(initial),
                                        fresh, options_.max_value_bytes);
  }
  // The kernel's attributes and pages of `ino` are stale (the store did
  // not change).
  // `await`: the reply waits for it (AwaitInvalidations).
  void InvalidateKernel(uint64_t ino, bool await = true) {
    if (!invalidator_) return;
    uint64_t ticket = invalidator_->Inode(ino);
    if (await) last_ticket_ = ticket;
  }
  // `ino` may have changed in the store: the kernel's copy and the
  // committed value open readers hold.
  void InvalidateInode(uint64_t ino) {
    open_cells_.Changed(ino);
    InvalidateKernel(ino);
  }
  // Drops the kernel's dentry of `node` (when its directory has an inode).
  void ForgetName(const Node& node) {
    std::optional<uint64_t> parent = inodes_.Find(node.Parent());
    if (invalidator_ && parent.has_value()) {
      last_ticket_ = invalidator_->Entry(*parent, ListedName(node));
    }
  }
  // After a change to `cell` the kernel did not see: its inode, and for a
  // `Q@T` write the inode of Q too.
  void InvalidateCell(const Node& cell, uint64_t ino) {
    InvalidateInode(ino);
    if (cell.at.has_value()) {
      Node plain = cell;
      plain.at.reset();
      std::optional<uint64_t> other = inodes_.Find(plain);
      if (other.has_value()) InvalidateInode(*other);
    }
  }

  // The last notice the request served by this thread queued.
  static thread_local uint64_t last_ticket_;

  Bigtable* const db_;
  const SessionOptions options_;
  const uid_t uid_;
  const gid_t gid_;
  const int64_t start_time_;

  InodeTable inodes_;
  EphemeralDirs ephemeral_;
  OpenCells open_cells_{db_, options_.max_value_bytes};
  Mtimes mtimes_{db_};
  std::unique_ptr<Invalidator> invalidator_;
  std::chrono::milliseconds name_change_delay_{0};  // test hook (Start)

  // The open handles, by the pointer given to the kernel as fh. Held only to
  // find or register a handle, never while a handle's own lock is taken.
  Mutex handles_mu_;
  std::unordered_map<FileHandle*, std::shared_ptr<FileHandle>> files_
      GUARDED_BY(handles_mu_);
  std::unordered_map<DirHandle*, std::unique_ptr<DirHandle>> dirs_
      GUARDED_BY(handles_mu_);
  // Inodes of created files released without a commit (their write was
  // refused). Until the kernel forgets such an inode (the release asks it
  // to drop the name), it may still use it: stat shows an empty file and a
  // writing open creates the cell again, as on a local disk, where the
  // empty file would exist. Never listed.
  std::unordered_set<uint64_t> vanished_ GUARDED_BY(handles_mu_);
};

thread_local uint64_t Filesystem::last_ticket_ = 0;

// ---------------------------------------------------------------------------
// Resolution and attributes
// ---------------------------------------------------------------------------

FsError Filesystem::Resolve(const Node& parent, std::string_view name,
                            Node* out, bool* hashed) {
  ParsedChild child;
  TABLETFS_FS_RETURN_IF_ERROR(ParseChild(parent, name, &child));
  if (hashed != nullptr) *hashed = child.hashed;
  if (child.hashed) {
    ParsedName parsed;
    parsed.hashed = true;
    parsed.hash = child.hash;
    if (child.node.kind == NodeKind::kRow) {
      parsed.key = child.node.row;
      TABLETFS_FS_RETURN_IF_ERROR(
          ResolveHashedRow(parent, parsed, &child.node.row));
    } else {
      parsed.key = child.node.qualifier;
      TABLETFS_FS_RETURN_IF_ERROR(
          ResolveHashedQualifier(parent, parsed, &child.node.qualifier));
    }
  }
  *out = std::move(child.node);
  return FsError::Ok();
}

FsError Filesystem::ResolveHashedRow(const Node& parent,
                                     const ParsedName& parsed,
                                     std::string* row) {
  ScanOptions so;
  so.prefix = parsed.key;
  auto scanner = db_->NewScanner(parent.table, so);
  if (!scanner.ok()) return FsErrorFromStatus(scanner.status());
  for ((*scanner)->SeekToFirst(); (*scanner)->Valid(); (*scanner)->NextRow()) {
    if (HashedNameMatches(parsed, (*scanner)->row())) {
      *row = std::string((*scanner)->row());
      return FsError::Ok();
    }
  }
  if (!(*scanner)->status().ok()) {
    return FsErrorFromStatus((*scanner)->status());
  }
  return FsError::Of(ENAMETOOLONG, "no row matches the long name in " +
                                       parent.DebugPath() + kHashedNameHelp);
}

FsError Filesystem::ResolveHashedQualifier(const Node& parent,
                                           const ParsedName& parsed,
                                           std::string* qualifier) {
  ScanOptions so;
  so.start_row = parent.row;
  so.end_row = RowEnd(parent.row);
  so.read.families = {parent.family};
  auto scanner = db_->NewScanner(parent.table, so);
  if (!scanner.ok()) return FsErrorFromStatus(scanner.status());
  Scanner& s = **scanner;
  for (s.Seek(parent.row, parent.family, parsed.key);
       s.Valid() && s.family() == parent.family &&
       s.qualifier().substr(0, parsed.key.size()) == parsed.key;
       s.NextColumn()) {
    if (HashedNameMatches(parsed, s.qualifier())) {
      *qualifier = std::string(s.qualifier());
      return FsError::Ok();
    }
  }
  if (!s.status().ok()) return FsErrorFromStatus(s.status());
  return FsError::Of(ENAMETOOLONG, "no qualifier matches the long name in " +
                                       parent.DebugPath() + kHashedNameHelp);
}

FsError Filesystem::TableExists(std::string_view table) {
  auto families = db_->ListFamilies(table);
  if (!families.ok()) return FsErrorFromStatus(families.status());
  return FsError::Ok();
}

FsError Filesystem::RowHasCells(const Node& n, bool* has) {
  ScanOptions so;
  so.read.at = ReadAt(n);
  so.start_row = n.row;
  so.end_row = RowEnd(n.row);
  auto scanner = db_->NewScanner(n.table, so);
  if (!scanner.ok()) return FsErrorFromStatus(scanner.status());
  (*scanner)->SeekToFirst();
  if (!(*scanner)->status().ok()) {
    return FsErrorFromStatus((*scanner)->status());
  }
  *has = (*scanner)->Valid() && (*scanner)->row() == n.row;
  return FsError::Ok();
}

FsError Filesystem::FamilyHasCells(const Node& n, bool* has) {
  ScanOptions so;
  so.read.at = ReadAt(n);
  so.start_row = n.row;
  so.end_row = RowEnd(n.row);
  so.read.families = {n.family};
  auto scanner = db_->NewScanner(n.table, so);
  if (!scanner.ok()) return FsErrorFromStatus(scanner.status());
  (*scanner)->Seek(n.row, n.family);
  if (!(*scanner)->status().ok()) {
    return FsErrorFromStatus((*scanner)->status());
  }
  *has = (*scanner)->Valid() && (*scanner)->row() == n.row &&
         (*scanner)->family() == n.family;
  return FsError::Ok();
}

FsError Filesystem::DirTimesOf(const Node& n, DirTimes* out) {
  ScanOptions so;
  so.read.at = ReadAt(n);
  so.read.max_versions = 1;
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
    *out = ScanDirTimes(s, n.row, {},
                        n.view == View::kCurrent
                            ? ephemeral_.Families(n.table, n.row)
                            : std::vector<std::string>());
  }
  if (!s.status().ok()) return FsErrorFromStatus(s.status());
  return FsError::Ok();
}

FsError Filesystem::ReadVersion(const Node& cell, CellVersion* out) {
  ReadOptions ro;
  ro.max_versions = 1;
  ro.at = ReadAt(cell);
  auto versions =
      db_->ReadCell(cell.table, cell.row, cell.family, cell.qualifier, ro);
  if (!versions.ok()) return FsErrorFromStatus(versions.status());
  *out = CellVersion();
  // Under .versions, Q@T is the version at exactly T.
  if (!versions->empty() && cell.view == View::kVersions &&
      (*versions)[0].timestamp != cell.at) {
    return FsError::Ok();
  }
  if (!versions->empty()) {
    out->exists = true;
    out->timestamp = (*versions)[0].timestamp;
    out->value = std::move((*versions)[0].value);
  }
  return FsError::Ok();
}

FsError Filesystem::Stat(const Node& node, fuse_ino_t ino, struct stat* st) {
  switch (node.kind) {
    case NodeKind::kRoot:
    case NodeKind::kSchemaRoot:
    case NodeKind::kAtRoot:
    case NodeKind::kStatusDir:
      DirStat(ino, S_IFDIR | 0755, uid_, gid_, st);
      return FsError::Ok();
    case NodeKind::kStatusFile: {
      // Generated content, read with direct I/O: the size is a hint.
      std::string text;
      TABLETFS_FS_RETURN_IF_ERROR(
          StatusFileText(*db_, options_.stats_text, node.name, &text));
      FileStat(ino, FamilySettings(), text.size(), NowMicros(), st);
      st->st_mode = S_IFREG | 0444;
      st->st_uid = uid_;
      st->st_gid = gid_;
      return FsError::Ok();
    }
    case NodeKind::kTable:
    case NodeKind::kSchemaTable:
      if (node.view == View::kAt) {
        // .at/T/ holds only the tables that existed at T.
        auto info = db_->GetTable(node.table);
        if (!info.ok()) return FsErrorFromStatus(info.status());
        if (info->since_micros > node.view_at) {
          return FsError::Of(ENOENT, "table " + node.table +
                                         " did not exist yet at " +
                                         std::to_string(node.view_at));
        }
      } else {
        TABLETFS_FS_RETURN_IF_ERROR(TableExists(node.table));
      }
      DirStat(ino, S_IFDIR | 0755, uid_, gid_, st);
      return FsError::Ok();
    case NodeKind::kRow: {
      DirTimes times;
      TABLETFS_FS_RETURN_IF_ERROR(DirTimesOf(node, &times));
      if (!times.newest.has_value() &&
          !(node.view == View::kCurrent &&
            ephemeral_.HasRow(node.table, node.row))) {
        return FsError::Of(ENOENT, "no row " + node.DebugPath());
      }
      DirStat(ino, S_IFDIR | 0755, uid_, gid_, st);
      SetDirMtime(node, times, st);
      return FsError::Ok();
    }
    case NodeKind::kFamily: {
      auto settings = db_->GetFamily(node.table, node.family);
      if (!settings.ok()) return FsErrorFromStatus(settings.status());
      DirTimes times;
      TABLETFS_FS_RETURN_IF_ERROR(DirTimesOf(node, &times));
      if (!times.newest.has_value() &&
          !(node.view == View::kCurrent &&
            ephemeral_.HasFamily(node.table, node.row, node.family))) {
        return FsError::Of(ENOENT, "no cells in " + node.DebugPath());
      }
      DirStat(ino, DirMode(*settings), settings->owner_uid, settings->owner_gid,
              st);
      SetDirMtime(node, times, st);
      return FsError::Ok();
    }
    case NodeKind::kCell: {
      auto settings = db_->GetFamily(node.table, node.family);
      if (!settings.ok()) return FsErrorFromStatus(settings.status());
      // Open writers show what they hold: a created file exists before
      // its first commit, and fstat of a writer sees its own writes (the
      // kernel asks without naming the descriptor).
      bool writers = false;
      if (ino != 0 && node.view == View::kCurrent) {
        if (std::shared_ptr<OpenCell> c = open_cells_.Find(ino)) {
          MutexLock lock(c->mu());
          std::optional<uint64_t> pending = c->PendingSize();
          if (pending.has_value()) {
            FileStat(ino, *settings, *pending,
                     c->pending_mtime().value_or(NowMicros()), st);
            return FsError::Ok();
          }
          writers = c->HasWriters() && !c->unlinked();
        }
      }
      CellVersion v;
      TABLETFS_FS_RETURN_IF_ERROR(ReadVersion(node, &v));
      if (!v.exists) {
        if (ino != 0 && node.view == View::kCurrent &&
            (writers || Vanished(ino))) {
          FileStat(ino, *settings, 0, NowMicros(), st);
          return FsError::Ok();
        }
        return FsError::Of(ENOENT, "no cell " + node.DebugPath());
      }
      FileStat(ino, *settings, v.value.size(), v.timestamp, st);
      if (node.view == View::kCurrent && !node.at.has_value()) {
        SetMtime(st, mtimes_.Get(node, v.timestamp));
      }
      return FsError::Ok();
    }
    case NodeKind::kSchemaFamily: {
      auto settings = db_->GetFamily(node.table, node.family);
      if (!settings.ok()) return FsErrorFromStatus(settings.status());
      FileStat(ino, *settings, FormatFamilySettings(*settings).size(),
               start_time_, st);
      return FsError::Ok();
    }
  }
  return FsError::Of(EIO, "unknown node kind");
}

void Filesystem::EntryStat(const DirEntry& de, fuse_ino_t ino,
                           struct stat* st) {
  switch (de.node.kind) {
    case NodeKind::kFamily:
      if (de.settings.has_value()) {
        DirStat(ino, DirMode(*de.settings), de.settings->owner_uid,
                de.settings->owner_gid, st);
        SetDirMtime(de.node, EntryDirTimes(de), st);
        return;
      }
      break;
    case NodeKind::kRow:
      DirStat(ino, S_IFDIR | 0755, uid_, gid_, st);
      if (de.has_timestamp) {
          SetDirMtime(de.node, EntryDirTimes(de), st);
        }
      return;
    case NodeKind::kCell:
      if (de.settings.has_value()) {
        FileStat(ino, *de.settings, de.size, de.timestamp, st);
        if (de.node.view == View::kCurrent && !de.node.at.has_value()) {
          SetMtime(st, mtimes_.Get(de.node, de.timestamp));
        }
        return;
      }
      break;
    case NodeKind::kSchemaFamily:
      if (de.settings.has_value()) {
        FileStat(ino, *de.settings, FormatFamilySettings(*de.settings).size(),
                 start_time_, st);
        return;
      }
      break;
    case NodeKind::kStatusFile:
      FileStat(ino, FamilySettings(), 0, NowMicros(), st);
      st->st_mode = S_IFREG | 0444;
      st->st_uid = uid_;
      st->st_gid = gid_;
      return;
    default:
      break;
  }
  DirStat(ino, S_IFDIR | 0755, uid_, gid_, st);
}

FsError Filesystem::MakeEntry(const Node& node, fuse_entry_param* e) {
  std::memset(e, 0, sizeof(*e));
  std::optional<uint64_t> known = inodes_.Find(node);
  TABLETFS_FS_RETURN_IF_ERROR(Stat(node, known.value_or(0), &e->attr));
  e->ino = inodes_.Lookup(node);
  e->attr.st_ino = e->ino;
  e->generation = 1;
  e->entry_timeout = EntryTimeout(node);
  e->attr_timeout = CellAttrTimeout(node, e->ino);
  return FsError::Ok();
}

FsError Filesystem::CheckSpace(uint64_t bytes) {
  Status bg = db_->StickyError();
  if (!bg.ok()) {
    return FsError::Of(EIO, "the store failed earlier: " + bg.ToString());
  }
  struct statvfs sv;
  if (statvfs(options_.datadir.c_str(), &sv) == 0) {
    uint64_t free_bytes = static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize;
    // The commit at close appends the whole value to the log: refuse here,
    // where the shell sees it, what the store would refuse at close after
    // background work used a little more space meanwhile.
    if (options_.space_reserve_bytes > 0 &&
        free_bytes < options_.space_reserve_bytes + bytes) {
      return FsError::Of(
          ENOSPC, "free space of the data directory (" +
                      std::to_string(free_bytes) +
                      " bytes) is below the space reserve of " +
                      std::to_string(options_.space_reserve_bytes) +
                      " bytes (-o space_reserve_bytes) plus the " +
                      std::to_string(bytes) + " bytes to commit");
    }
  }
  return FsError::Ok();
}

// ---------------------------------------------------------------------------
// Commits
// ---------------------------------------------------------------------------

FsError Filesystem::Commit(FileHandle& h) {
  // Only `.schema` files buffer in their handle; cells commit through their
  // open state (CommitCell).
  return CommitSchema(h);
}

FsError Filesystem::CommitCell(OpenCell& c, uint64_t descriptor) {
  int64_t committed_at = 0;
  TABLETFS_FS_RETURN_IF_ERROR(c.Commit(descriptor, &committed_at));
  if (std::optional<int64_t> mtime = c.TakePendingMtime()) {
    FsError e = mtimes_.Set(c.node(), committed_at, *mtime);
    if (!e.ok()) {
      Log(LogLevel::kError, "the mtime of " + c.node().DebugPath() +
                                " was not kept: " + e.ToString());
    }
  }
  ForgetVanished(c.ino());
  // Readers of the cell were updated by the commit itself; the kernel's
  // copy, and for a Q@T write the cell Q, are stale. While writers are
  // open the kernel caches no attributes of the cell (CellAttrTimeout) and
  // holds no page a reader sees, so only readers that read through the
  // page cache can see an old version: the reply waits for the notice only
  // when there are some (a wait per commit costs a thread hand-off).
  InvalidateKernel(c.ino(), c.HasCachedReaders());
  const Node& n = c.node();
  if (n.at.has_value()) {
    Node plain = n;
    plain.at.reset();
    if (std::optional<uint64_t> other = inodes_.Find(plain)) {
      InvalidateInode(*other);
    }
  }
  return FsError::Ok();
}

FsError Filesystem::CommitSchema(FileHandle& h) {
  const Node& n = h.node();
  if (h.buffer().empty()) {
    h.Committed(0);  // an empty commit changes nothing
    return FsError::Ok();
  }
  auto current = db_->GetFamily(n.table, n.family);
  if (!current.ok()) return FsErrorFromStatus(current.status());
  FamilySettings next;
  FsError e = ParseFamilySettings(h.buffer(), *current, &next);
  if (!e.ok()) {
    h.SetFailed(e);
    return e;
  }
  if (!(next == *current)) {
    Status s = db_->UpdateFamily(n.table, n.family, next);
    if (!s.ok()) return FsErrorFromStatus(s);
    InvalidateFamily(n.table, n.family);
  }
  h.Committed(0);
  InvalidateInode(h.ino());
  return FsError::Ok();
}

FsError Filesystem::SetCellMtime(const Node& cell, int64_t micros,
                                 fuse_ino_t ino) {
  if (cell.at.has_value()) return FsError::Ok();  // a version keeps its T
  CellVersion v;
  TABLETFS_FS_RETURN_IF_ERROR(ReadVersion(cell, &v));
  if (!v.exists) return FsError::Of(ENOENT, "no cell " + cell.DebugPath());
  TABLETFS_FS_RETURN_IF_ERROR(mtimes_.Set(cell, v.timestamp, micros));
  InvalidateKernel(ino);
  return FsError::Ok();
}

FsError Filesystem::TruncateCell(const Node& cell, uint64_t size,
                                 fuse_ino_t ino) {
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
      return CommitCell(*c, 0);
    }
  }
  TABLETFS_FS_RETURN_IF_ERROR(CheckFuture(cell));
  CellVersion v;
  TABLETFS_FS_RETURN_IF_ERROR(ReadVersion(cell, &v));
  if (!v.exists) return FsError::Of(ENOENT, "no cell " + cell.DebugPath());
  if (v.value.size() == size && !cell.at.has_value()) return FsError::Ok();
  v.value.resize(size);
  RowMutation m(cell.row);
  if (cell.at.has_value()) {
    m.SetCell(cell.family, cell.qualifier, *cell.at, v.value);
  } else {
    m.SetCell(cell.family, cell.qualifier, v.value);
  }
  auto r = db_->Apply(cell.table, m, WriteOptions());
  if (!r.ok()) return FsErrorFromStatus(r.status());
  InvalidateCell(cell, ino);
  return FsError::Ok();
}

// ---------------------------------------------------------------------------
// Callbacks
// ---------------------------------------------------------------------------

void Filesystem::Init(fuse_conn_info* conn) {
  if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) {
    conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
  }
  // Only the daemon changes the data, but commits happen at close: a
  // writeback cache would show data the store does not hold yet.
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  if (conn->capable & FUSE_CAP_READDIRPLUS) conn->want |= FUSE_CAP_READDIRPLUS;
}

void Filesystem::Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Node p, n;
  FsError e = NodeOf(parent, &p);
  if (e.ok()) e = Resolve(p, name, &n);
  fuse_entry_param entry;
  if (e.ok()) e = MakeEntry(n, &entry);
  if (!e.ok()) {
    Refuse(req, "lookup", ChildPath(p, name), e);
    return;
  }
  AwaitInvalidations();
  fuse_reply_entry(req, &entry);
}

void Filesystem::GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Node n;
  FsError e = NodeOf(ino, &n);
  struct stat st;
  // The kernel names the descriptor when it refreshes the size before a
  // cached read: a reader's size is the committed version's, never what
  // writers hold (it would read past the committed end).
  std::shared_ptr<FileHandle> h =
      fi != nullptr && n.kind == NodeKind::kCell ? FileOf(fi) : nullptr;
  bool reader = false;
  if (h && h->cell()) {
    MutexLock lock(h->cell()->mu());
    reader = !h->cell()->IsWriter(h->descriptor());
  }
  if (e.ok()) e = Stat(n, reader ? 0 : ino, &st);
  st.st_ino = ino;
  if (e.err == ENOENT && h) {
    // fstat (and the kernel before a read) of a descriptor whose cell was
    // removed while open: as on a local disk it works, with no links.
    auto settings = db_->GetFamily(n.table, n.family);
    if (settings.ok()) {
      uint64_t size = 0;
      if (h->cell()) {
        OpenCell& c = *h->cell();
        MutexLock lock(c.mu());
        size = c.SizeFor(h->descriptor());
      } else {
        MutexLock lock(h->mu());
        size = h->size();
      }
      FileStat(ino, *settings, size, NowMicros(), &st);
      st.st_nlink = 0;
      e = FsError::Ok();
    }
  }
  if (!e.ok()) {
    Refuse(req, "getattr", n.DebugPath(), e);
    return;
  }
  AwaitInvalidations();
  fuse_reply_attr(req, &st, CellAttrTimeout(n, ino));
}

void Filesystem::SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr,
                         int to_set, fuse_file_info* fi) {
  Node n;
  FsError e = NodeOf(ino, &n);
  if (!e.ok()) {
    Refuse(req, "setattr", "inode " + std::to_string(ino), e);
    return;
  }
  e = CheckWritable(n, "setattr");
  if (!e.ok()) {
    Refuse(req, "setattr", n.DebugPath(), e);
    return;
  }
  std::shared_ptr<FileHandle> h = fi != nullptr ? FileOf(fi) : nullptr;
  if (to_set & FUSE_SET_ATTR_SIZE) {
    uint64_t size = static_cast<uint64_t>(attr->st_size);
    if (n.kind == NodeKind::kCell) {
      if (h && h->cell() && h->writable()) {
        OpenCell& c = *h->cell();
        MutexLock lock(c.mu());
        e = c.Truncate(h->descriptor(), size);
      } else {
        e = TruncateCell(n, size, ino);
      }
    } else if (n.kind == NodeKind::kSchemaFamily) {
      if (h && h->writable()) {
        MutexLock lock(h->mu());
        e = h->Truncate(size);
      }
      // Otherwise: an empty commit changes nothing.
    } else {
      e = FsError::Of(EISDIR, n.DebugPath() + " is a directory");
    }
    if (!e.ok()) {
      Refuse(req, "truncate", n.DebugPath(), e);
      return;
    }
  }
  if ((to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)) &&
      n.kind == NodeKind::kCell) {
    int64_t micros = (to_set & FUSE_SET_ATTR_MTIME_NOW)
                         ? NowMicros()
                         : TimespecToMicros(attr->st_mtim);
    bool pending = false;
    if (std::shared_ptr<OpenCell> c = open_cells_.Find(ino)) {
      MutexLock lock(c->mu());
      if (c->HasPending()) {
        c->SetPendingMtime(micros);
        pending = true;
      }
    }
    if (!pending) e = SetCellMtime(n, micros, ino);
    if (!e.ok()) {
      Refuse(req, "utimensat", n.DebugPath(), e);
      return;
    }
  }
  if ((to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)) &&
      (n.kind == NodeKind::kRow || n.kind == NodeKind::kFamily) &&
      n.view == View::kCurrent) {
    // Kept for the directory's entries as they are (DirTimes).
    DirTimes times;
    e = DirTimesOf(n, &times);
    if (e.ok()) {
      e = mtimes_.Set(n, times.entries,
                      (to_set & FUSE_SET_ATTR_MTIME_NOW)
                          ? NowMicros()
                          : TimespecToMicros(attr->st_mtim));
    }
    if (!e.ok()) {
      Refuse(req, "utimensat", n.DebugPath(), e);
      return;
    }
  }
  if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
    if (n.kind == NodeKind::kSchemaFamily) {
      // The family's owner and mode (DESIGN.md "Schema and access").
      auto settings = db_->GetFamily(n.table, n.family);
      if (!settings.ok()) e = FsErrorFromStatus(settings.status());
      if (e.ok()) e = CheckSchemaOwner(req, *settings, n);
      if (e.ok()) {
        FamilySettings next = *settings;
        if (to_set & FUSE_SET_ATTR_MODE) next.mode = attr->st_mode & 07777;
        if (to_set & FUSE_SET_ATTR_UID) next.owner_uid = attr->st_uid;
        if (to_set & FUSE_SET_ATTR_GID) next.owner_gid = attr->st_gid;
        Status s = db_->UpdateFamily(n.table, n.family, next);
        if (!s.ok()) e = FsErrorFromStatus(s);
      }
      if (!e.ok()) {
        Refuse(req, "chmod/chown", n.DebugPath(), e);
        return;
      }
      InvalidateFamily(n.table, n.family);
    } else if ((to_set & FUSE_SET_ATTR_MODE) &&
               (n.kind == NodeKind::kCell || n.kind == NodeKind::kFamily)) {
      auto settings = db_->GetFamily(n.table, n.family);
      if (settings.ok() && (~attr->st_mode & settings->mode & 0777) != 0 &&
          LogEnabled(LogLevel::kWarning)) {
        char buf[96];
        snprintf(buf, sizeof(buf),
                 "chmod %o has no effect: the family's mode %o applies",
                 attr->st_mode & 07777, settings->mode);
        LogRefusal(LogLevel::kWarning, n.DebugPath() + ": " + buf);
      }
    }
  }
  struct stat st;
  e = Stat(n, ino, &st);
  if (!e.ok()) {
    Refuse(req, "setattr", n.DebugPath(), e);
    return;
  }
  AwaitInvalidations();
  fuse_reply_attr(req, &st, CellAttrTimeout(n, ino));
}

void Filesystem::Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name,
                       mode_t mode) {
  (void)mode;
  Node p, n;
  FsError e = NodeOf(parent, &p);
  bool hashed = false;
  if (e.ok()) e = CheckWritable(p, "mkdir");
  if (e.ok()) e = Resolve(p, name, &n, &hashed);
  if (!e.ok() && e.err == ENAMETOOLONG) {
    e.reason = "a new name may be at most 234 bytes: " + e.reason;
  }
  if (e.ok()) {
    switch (n.kind) {
      case NodeKind::kTable:
      case NodeKind::kSchemaTable: {
        // mkdir TABLE and mkdir .schema/TABLE both create the table.
        Status s = db_->CreateTable(n.table);
        if (!s.ok()) e = FsErrorFromStatus(s);
        break;
      }
      case NodeKind::kRow: {
        e = TableExists(n.table);
        bool has = false;
        if (e.ok()) has = ephemeral_.HasRow(n.table, n.row);
        if (e.ok() && !has) e = RowHasCells(n, &has);
        if (e.ok() && has) {
          e = FsError::Of(EEXIST, n.DebugPath() + " exists");
        }
        if (e.ok()) ephemeral_.AddRow(n.table, n.row);
        break;
      }
      case NodeKind::kFamily: {
        auto settings = db_->GetFamily(n.table, n.family);
        if (!settings.ok() && settings.status().IsNotFound() &&
            options_.auto_families && TableExists(n.table).ok()) {
          // -o auto_families: as touch .schema/TABLE/FAMILY would.
          const fuse_ctx* ctx = fuse_req_ctx(req);
          FamilySettings s;
          s.owner_uid = ctx->uid;
          s.owner_gid = ctx->gid;
          Status st = db_->CreateFamily(n.table, n.family, s);
          if (st.ok() || st.IsAlreadyExists()) {
            Log(LogLevel::kInfo, "mkdir " + n.DebugPath() + ": created family " +
                    n.family + " of table " + n.table +
                    " with default settings (-o auto_families)");
          }
          settings = db_->GetFamily(n.table, n.family);
        }
        if (!settings.ok()) {
          e = FsError::Of(ENOENT, "family " + n.family +
                                      " is not in the schema of table " +
                                      n.table + ": create it with touch " +
                                      options_.mountpoint + "/.schema/" +
                                      n.table + "/" + n.family +
                                      ", or mount with -o auto_families");
          break;
        }
        bool has = ephemeral_.HasFamily(n.table, n.row, n.family);
        if (!has) e = FamilyHasCells(n, &has);
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
        e = FsError::Of(EPERM,
                        "directories cannot be made in " + p.DebugPath());
        break;
    }
  }
  fuse_entry_param entry;
  if (e.ok()) e = MakeEntry(n, &entry);
  if (!e.ok()) {
    Refuse(req, "mkdir", ChildPath(p, name), e);
    return;
  }
  AwaitInvalidations();
  fuse_reply_entry(req, &entry);
}

void Filesystem::Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Node p, n;
  FsError e = NodeOf(parent, &p);
  if (e.ok()) e = CheckWritable(p, "rmdir");
  if (e.ok()) e = Resolve(p, name, &n);
  if (e.ok()) {
    switch (n.kind) {
      case NodeKind::kTable: {
        e = TableExists(n.table);
        if (!e.ok()) break;
        if (ephemeral_.TableHasRows(n.table)) {
          e = FsError::Of(ENOTEMPTY, n.DebugPath() + " has rows");
          break;
        }
        auto scanner = db_->NewScanner(n.table, ScanOptions());
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
        e = RowHasCells(n, &has);
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
        e = FamilyHasCells(n, &has);
        if (e.ok() && has) {
          e = FsError::Of(ENOTEMPTY, n.DebugPath() + " holds cells");
        }
        if (e.ok() && !ephemeral_.RemoveFamily(n.table, n.row, n.family)) {
          e = FsError::Of(ENOENT, "no family directory " + n.DebugPath());
        }
        break;
      }
      case NodeKind::kSchemaTable: {
        // The table without families has no data left: dropping it
        // completes `rm -r .schema/TABLE` (which first removed each family
        // file) as one whole. With families left: ENOTEMPTY, nothing done.
        e = TableExists(n.table);
        if (!e.ok()) break;
        auto families = db_->ListFamilies(n.table);
        if (!families.ok()) {
          e = FsErrorFromStatus(families.status());
          break;
        }
        if (!families->empty()) {
          e = FsError::Of(ENOTEMPTY, n.DebugPath() + " still has " +
                                         std::to_string(families->size()) +
                                         " families");
          break;
        }
        Status s = db_->DeleteTable(n.table);
        if (!s.ok()) e = FsErrorFromStatus(s);
        ephemeral_.RemoveTable(n.table);
        if (e.ok()) Log(LogLevel::kInfo, "rmdir " + n.DebugPath() + ": dropped table " +
                            n.table + " (it had no families left)");
        break;
      }
      case NodeKind::kCell:
      case NodeKind::kSchemaFamily:
        e = FsError::Of(ENOTDIR, n.DebugPath() + " is a file");
        break;
      default:
        e = FsError::Of(EPERM, n.DebugPath() + " cannot be removed");
        break;
    }
  }
  if (!e.ok()) {
    Refuse(req, "rmdir", ChildPath(p, name), e);
    return;
  }
  AwaitInvalidations();
  fuse_reply_err(req, 0);
}

void Filesystem::Unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Node p, n;
  FsError e = NodeOf(parent, &p);
  if (e.ok()) e = Resolve(p, name, &n);
  if (e.ok() && !(p.view == View::kVersions && n.kind == NodeKind::kCell)) {
    e = CheckWritable(p, "unlink");
  }
  if (e.ok()) {
    if (n.kind == NodeKind::kCell && n.view == View::kVersions) {
      // rm .versions/TABLE/ROW/FAMILY/Q@T: exactly that version.
      CellVersion v;
      e = ReadVersion(n, &v);
      if (e.ok() && !v.exists) {
        e = FsError::Of(ENOENT, "no version " + n.DebugPath());
      }
      if (e.ok()) {
        RowMutation m(n.row);
        m.DeleteVersion(n.family, n.qualifier, *n.at);
        auto r = db_->Apply(n.table, m, WriteOptions());
        if (!r.ok()) e = FsErrorFromStatus(r.status());
      }
      if (e.ok()) {
        // The main tree's Q (and Q@T) changed without a kernel operation.
        Node plain = n;
        plain.view = View::kCurrent;
        plain.at.reset();
        if (auto ino = inodes_.Find(plain)) InvalidateInode(*ino);
        plain.at = n.at;
        if (auto ino = inodes_.Find(plain)) InvalidateInode(*ino);
      }
    } else if (n.kind == NodeKind::kCell) {
      if (n.at.has_value()) {
        e = FsError::Of(EPERM,
                        "single versions are removed under .versions, "
                        "not " +
                            n.DebugPath());
      } else {
        LockedCells locked(this, {n}, /*with_versions=*/true);
        CellVersion v;
        e = ReadVersion(n, &v);
        std::optional<uint64_t> ino = inodes_.Find(n);
        // A vanished name the kernel still shows goes without a trace.
        bool vanished = ino.has_value() && ForgetVanished(*ino);
        if (e.ok() && !v.exists && !CreatedAndOpen(locked, n) && !vanished) {
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
          if (name_change_delay_.count() > 0) {
            std::this_thread::sleep_for(name_change_delay_);  // test hook
          }
          ephemeral_.AddFamily(n.table, n.row, n.family);
          OrphanWriters(locked, n, /*with_versions=*/true);
        }
      }
    } else if (n.kind == NodeKind::kSchemaFamily) {
      auto settings = db_->GetFamily(n.table, n.family);
      if (!settings.ok()) e = FsErrorFromStatus(settings.status());
      if (e.ok()) e = CheckSchemaOwner(req, *settings, n);
      if (e.ok()) {
        Status s = db_->DeleteFamily(n.table, n.family);
        if (!s.ok()) e = FsErrorFromStatus(s);
      }
    } else {
      e = FsError::Of(EISDIR, n.DebugPath() + " is a directory");
    }
  }
  if (!e.ok()) {
    Refuse(req, "unlink", ChildPath(p, name), e);
    return;
  }
  AwaitInvalidations();
  fuse_reply_err(req, 0);
}

void Filesystem::Rename(fuse_req_t req, fuse_ino_t parent, const char* name,
                        fuse_ino_t newparent, const char* newname,
                        unsigned flags) {
  Node p, np, from, to;
  FsError e = NodeOf(parent, &p);
  if (e.ok()) e = NodeOf(newparent, &np);
  if (e.ok()) e = CheckWritable(p, "rename");
  if (e.ok()) e = CheckWritable(np, "rename");
  if (e.ok() &&
      (p.kind == NodeKind::kSchemaTable || np.kind == NodeKind::kSchemaTable)) {
    e = FsError::Of(EPERM, "families are not renamed");
  }
  if (e.ok() && (flags & RENAME_EXCHANGE)) {
    e = FsError::Of(EINVAL, "RENAME_EXCHANGE is not supported");
  }
  if (e.ok()) e = Resolve(p, name, &from);
  if (e.ok()) e = Resolve(np, newname, &to);
  if (e.ok() && from.kind != NodeKind::kCell) {
    e = FsError::Of(EPERM,
                    "only cells can be renamed, not " + from.DebugPath());
  }
  if (e.ok() && to.kind != NodeKind::kCell) {
    e = FsError::Of(EPERM,
                    "a cell can only be renamed into a family "
                    "directory, not to " +
                        to.DebugPath());
  }
  if (e.ok() && (from.at.has_value() || to.at.has_value())) {
    e = FsError::Of(EPERM, "versions (NAME@T) cannot be renamed");
  }
  if (e.ok() && (from.table != to.table || from.row != to.row)) {
    e = FsError::Of(EXDEV, "a cell moves only within its row: " +
                               from.DebugPath() + " -> " + to.DebugPath());
  }
  std::optional<LockedCells> locked;
  if (e.ok()) locked.emplace(this, std::vector<Node>{from, to}, false);
  CellVersion src, dst;
  if (e.ok()) e = ReadVersion(from, &src);
  if (e.ok() && !src.exists && CreatedAndOpen(*locked, from)) {
    src.exists = true;  // created, not committed yet: empty
  }
  if (e.ok() && !src.exists) {
    e = FsError::Of(ENOENT, "no cell " + from.DebugPath());
  }
  if (e.ok()) e = ReadVersion(to, &dst);
  if (e.ok() && dst.exists && (flags & RENAME_NOREPLACE)) {
    e = FsError::Of(EEXIST, to.DebugPath() + " exists");
  }
  if (e.ok() && !(from == to)) {
    // One row mutation: the destination gets the source's newest value as a
    // new version (keeping its own history), the source goes.
    // The same bytes as the destination's newest version add no version
    // (rsync's rename of an unchanged file). The mtime goes with the value.
    const int64_t mtime =
        src.exists && src.timestamp != 0 ? mtimes_.Get(from, src.timestamp)
                                         : NowMicros();
    const bool same = dst.exists && dst.value == src.value;
    RowMutation m(from.row);
    int64_t stamp = kServerTimestamp;
    if (same) {
      stamp = dst.timestamp;
    } else if (dst.exists && dst.timestamp >= NowMicros()) {
      // Above a version in the future, so that the rename shows.
      stamp = dst.timestamp + 1;
      m.SetCell(to.family, to.qualifier, stamp, src.value);
    } else {
      m.SetCell(to.family, to.qualifier, src.value);
    }
    m.DeleteCell(from.family, from.qualifier);
    auto r = db_->Apply(from.table, m, WriteOptions());
    if (!r.ok()) e = FsErrorFromStatus(r.status());
    if (e.ok()) {
      if (name_change_delay_.count() > 0) {
        std::this_thread::sleep_for(name_change_delay_);  // test hook
      }
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
      OrphanWriters(*locked, to, /*with_versions=*/false);
      MoveWriters(*locked, from, to);
      inodes_.Rebind(from, to);
      ephemeral_.AddFamily(from.table, from.row, from.family);
      std::optional<uint64_t> moved = inodes_.Find(to);
      if (moved.has_value()) InvalidateInode(*moved);
      if (old_to.has_value()) InvalidateInode(*old_to);
    }
  }
  locked.reset();  // before the reply
  if (!e.ok()) {
    Refuse(req, "rename", ChildPath(p, name) + " -> " + ChildPath(np, newname),
           e);
    return;
  }
  AwaitInvalidations();
  fuse_reply_err(req, 0);
}

void Filesystem::Create(fuse_req_t req, fuse_ino_t parent, const char* name,
                        mode_t mode, fuse_file_info* fi) {
  (void)mode;
  Node p, n;
  FsError e = NodeOf(parent, &p);
  if (e.ok()) e = CheckWritable(p, "create");
  if (e.ok()) e = Resolve(p, name, &n);
  if (!e.ok() && e.err == ENAMETOOLONG) {
    e.reason = "a new name may be at most 234 bytes: " + e.reason;
  }
  std::shared_ptr<FileHandle> h;
  fuse_entry_param entry;
  if (e.ok()) {
    switch (n.kind) {
      case NodeKind::kCell: {
        e = CheckFuture(n);
        if (!e.ok()) break;
        auto settings = db_->GetFamily(n.table, n.family);
        if (!settings.ok()) {
          e = FsErrorFromStatus(settings.status());
          break;
        }
        uint64_t ino = inodes_.Lookup(n);
        std::shared_ptr<OpenCell> cell = open_cells_.Get(ino, n);
        MutexLock lock(cell->mu());
        CellVersion v;
        e = ReadVersion(n, &v);
        if (e.ok() && n.at.has_value() && v.exists && v.timestamp != *n.at) {
          v = CellVersion();
        }
        const bool others = cell->HasWriters() && !cell->unlinked();
        if (e.ok() && (v.exists || others) && (fi->flags & O_EXCL)) {
          e = FsError::Of(EEXIST, n.DebugPath() + " exists");
        }
        if (!e.ok()) {
          open_cells_.Put(cell);
          inodes_.Forget(ino, 1);
          break;
        }
        const bool create = !v.exists && !others;
        FileHandle::Mode m = (fi->flags & O_APPEND) && !(fi->flags & O_TRUNC)
                                 ? FileHandle::Mode::kAppend
                                 : FileHandle::Mode::kWrite;
        if (n.at.has_value()) m = FileHandle::Mode::kWrite;
        const bool page_cache =
            CanUsePageCache(fi->flags, *cell);
        const bool shared_pages = cell->HasPageCacheWriters();
        ForgetVanished(ino);  // created again
        uint64_t desc = cell->Attach(AccessOf(m), ToCommitted(std::move(v)),
                                     (fi->flags & O_TRUNC) != 0, create,
                                     page_cache);
        if (create && !n.at.has_value()) {
          // A local disk lists a created file at once: until its last
          // writer closes, listings of the family show the name (nothing is
          // committed before a close, so a crash leaves no trace).
          cell->set_listed_while_open(true);
          ephemeral_.AddCell(n.table, n.row, n.family, n.qualifier);
        }
        h = std::make_shared<FileHandle>(ino, n, m, cell, desc);
        std::memset(&entry, 0, sizeof(entry));
        entry.ino = ino;
        entry.generation = 1;
        FileStat(ino, *settings, cell->PendingSize().value_or(0), NowMicros(),
                 &entry.attr);
        entry.entry_timeout = EntryTimeout(n);
        entry.attr_timeout = 0.0;  // a writer is open (CellAttrTimeout)
        SetCellIo(fi, page_cache, shared_pages);
        break;
      }
      case NodeKind::kSchemaFamily: {
        // touch .schema/TABLE/FAMILY creates the family with defaults, owned
        // by the creator.
        const fuse_ctx* ctx = fuse_req_ctx(req);
        FamilySettings s;
        s.owner_uid = ctx->uid;
        s.owner_gid = ctx->gid;
        s.mode = 0644;
        Status st = db_->CreateFamily(n.table, n.family, s);
        if (st.IsAlreadyExists() && !(fi->flags & O_EXCL)) st = Status::OK();
        if (!st.ok()) {
          e = FsErrorFromStatus(st);
          break;
        }
        auto settings = db_->GetFamily(n.table, n.family);
        if (!settings.ok()) {
          e = FsErrorFromStatus(settings.status());
          break;
        }
        e = MakeEntry(n, &entry);
        if (!e.ok()) break;
        std::string text = (fi->flags & O_TRUNC)
                               ? std::string()
                               : FormatFamilySettings(*settings);
        h = OpenHandle(entry.ino, n, FileHandle::Mode::kWrite, std::move(text),
                       false);
        fi->direct_io = 1;
        break;
      }
      case NodeKind::kTable:
      case NodeKind::kRow:
      case NodeKind::kFamily:
        e = FsError::Of(EPERM, "only directories may be in " + p.DebugPath());
        break;
      default:
        e = FsError::Of(EPERM, "files cannot be made in " + p.DebugPath());
        break;
    }
  }
  if (!e.ok()) {
    Refuse(req, "create", ChildPath(p, name), e);
    return;
  }
  AddFile(h, fi);
  AwaitInvalidations();
  fuse_reply_create(req, &entry, fi);
}

void Filesystem::Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Node n;
  FsError e = NodeOf(ino, &n);
  std::shared_ptr<FileHandle> h;
  const int acc = fi->flags & O_ACCMODE;
  const bool write = acc != O_RDONLY || (fi->flags & O_TRUNC);
  if (e.ok() && write) e = CheckWritable(n, "open for writing");
  if (e.ok()) {
    switch (n.kind) {
      case NodeKind::kStatusFile: {
        // The text is fixed at open: one read sees one consistent state.
        std::string text;
        e = StatusFileText(*db_, options_.stats_text, n.name, &text);
        if (!e.ok()) break;
        h = OpenHandle(ino, n, FileHandle::Mode::kRead, std::move(text), false);
        fi->direct_io = 1;
        break;
      }
      case NodeKind::kCell: {
        if (write) e = CheckFuture(n);
        if (!e.ok()) break;
        if (n.view != View::kCurrent || (n.at.has_value() && !write)) {
          // A version (Q@T, .versions, .at) never changes: read at open.
          CellVersion v;
          e = ReadVersion(n, &v);
          if (!e.ok()) break;
          if (!v.exists) {
            e = FsError::Of(ENOENT, "no cell " + n.DebugPath());
            break;
          }
          fi->keep_cache = inodes_.SameVersionAsLastOpen(ino, v.timestamp,
                                                         v.value.size());
          h = OpenHandle(ino, n, FileHandle::Mode::kRead, std::move(v.value),
                         false);
          break;
        }
        e = OpenCellFile(ino, n, fi, write, &h);
        break;
      }
      case NodeKind::kSchemaFamily: {
        auto settings = db_->GetFamily(n.table, n.family);
        if (!settings.ok()) {
          e = FsErrorFromStatus(settings.status());
          break;
        }
        if (write) e = CheckSchemaOwner(req, *settings, n);
        if (!e.ok()) break;
        bool trunc = write && (fi->flags & O_TRUNC);
        h = OpenHandle(
            ino, n, write ? FileHandle::Mode::kWrite : FileHandle::Mode::kRead,
            trunc ? std::string() : FormatFamilySettings(*settings), false);
        fi->direct_io = 1;
        break;
      }
      default:
        e = FsError::Of(EISDIR, n.DebugPath() + " is a directory");
        break;
    }
  }
  if (!e.ok()) {
    Refuse(req, "open", n.DebugPath(), e);
    return;
  }
  AddFile(h, fi);
  fuse_reply_open(req, fi);
}

FsError Filesystem::OpenCellFile(fuse_ino_t ino, const Node& n,
                                 fuse_file_info* fi, bool write,
                                 std::shared_ptr<FileHandle>* out) {
  std::shared_ptr<OpenCell> cell = open_cells_.Get(ino, n);
  MutexLock lock(cell->mu());
  // The store is read with the cell's lock held: a writer that commits
  // and closes meanwhile is either still a writer here or committed.
  CellVersion v;
  FsError e = ReadVersion(n, &v);
  if (e.ok() && n.at.has_value() && v.exists && v.timestamp != *n.at) {
    v = CellVersion();  // Q@T is written at exactly T
  }
  const bool writers = cell->HasWriters() && !cell->unlinked();
  bool recreate = false;
  if (e.ok() && !v.exists && !writers && !n.at.has_value()) {
    recreate = write && Vanished(ino);
    if (!recreate) e = FsError::Of(ENOENT, "no cell " + n.DebugPath());
  }
  if (!e.ok()) {
    open_cells_.Put(cell);
    return e;
  }
  if (!write) {
    // A reader sees committed versions only. While writers hold bytes not
    // committed, or write through the page cache, read around the cache
    // (direct I/O); else let the kernel cache what it read.
    // (Writers that committed everything and only wait for their
    // RELEASE, which the kernel sends after the close returned, hold
    // nothing a reader could see.)
    const bool direct = cell->HasPending() || cell->HasPageCacheWriters();
    if (direct) {
      fi->direct_io = 1;
    } else {
      fi->keep_cache = v.exists && inodes_.SameVersionAsLastOpen(
                                       ino, v.timestamp, v.value.size());
    }
    uint64_t desc = cell->Attach(OpenCell::Access::kRead,
                                 ToCommitted(std::move(v)), false, false,
                                 !direct);
    *out = std::make_shared<FileHandle>(ino, n, FileHandle::Mode::kRead,
                                        cell, desc);
    return FsError::Ok();
  }
  const bool trunc = (fi->flags & O_TRUNC) != 0;
  FileHandle::Mode m = (fi->flags & O_APPEND) && !trunc && !n.at.has_value()
                           ? FileHandle::Mode::kAppend
                           : FileHandle::Mode::kWrite;
  // Not while a reader reads through the page cache: it would see the
  // pending bytes there.
  const bool page_cache =
      CanUsePageCache(fi->flags, *cell);
  const bool shared_pages = cell->HasPageCacheWriters();
  const bool create = recreate || (!v.exists && !writers);
  uint64_t desc = cell->Attach(AccessOf(m), ToCommitted(std::move(v)), trunc,
                               create, page_cache);
  if (recreate) {
    // Created again: listed while open, and committed (empty when nothing
    // is written) at close.
    ForgetVanished(ino);
    cell->set_listed_while_open(true);
    ephemeral_.AddCell(n.table, n.row, n.family, n.qualifier);
  }
  SetCellIo(fi, page_cache, shared_pages);
  *out = std::make_shared<FileHandle>(ino, n, m, cell, desc);
  return FsError::Ok();
}

void Filesystem::Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                      fuse_file_info* fi) {
  (void)ino;
  std::shared_ptr<FileHandle> h = FileOf(fi);
  if (!h) {
    fuse_reply_err(req, EBADF);
    return;
  }
  std::string data;
  if (h->cell()) {
    OpenCell& c = *h->cell();
    FsError e;
    {
      MutexLock lock(c.mu());
      e = c.Read(h->descriptor(), off, size, &data);
    }
    if (!e.ok()) {
      Refuse(req, "read", PathOf(*h), e);
      return;
    }
  } else {
    MutexLock lock(h->mu());
    data = h->Read(off, size);
  }
  fuse_reply_buf(req, data.data(), data.size());
}

void Filesystem::Write(fuse_req_t req, fuse_ino_t ino, const char* buf,
                       size_t size, off_t off, fuse_file_info* fi) {
  (void)ino;
  std::shared_ptr<FileHandle> h = FileOf(fi);
  if (!h) {
    fuse_reply_err(req, EBADF);
    return;
  }
  FsError e;
  if (h->kind() == NodeKind::kSchemaFamily) {
    // Each complete line is validated as it arrives.
    std::string_view data(buf, size);
    size_t start = 0;
    for (size_t nl = data.find('\n'); nl != std::string_view::npos && e.ok();
         nl = data.find('\n', start)) {
      e = ValidateSettingsLine(data.substr(start, nl - start));
      start = nl + 1;
    }
  }
  if (e.ok() && h->cell()) {
    e = WriteCell(*h, buf, size, off);
  } else if (e.ok()) {
    MutexLock lock(h->mu());
    e = CheckSpace(std::max<uint64_t>(h->size(),
                                      static_cast<uint64_t>(off) + size));
    if (e.ok()) {
      e = h->Write(off, std::string_view(buf, size));
    } else {
      h->Refuse(e.err);
    }
  }
  if (!e.ok()) {
    Refuse(req, "write", PathOf(*h), e);
    return;
  }
  AwaitInvalidations();
  fuse_reply_write(req, size);
}

FsError Filesystem::WriteCell(FileHandle& h, const char* buf, size_t size,
                              off_t off) {
  OpenCell& c = *h.cell();
  const uint64_t desc = h.descriptor();
  bool stale_pages = false;
  FsError e;
  {
    MutexLock lock(c.mu());
    e = CheckSpace(c.SizeAfterWrite(desc, off, size));
    if (e.ok()) {
      e = c.Write(desc, off, std::string_view(buf, size));
      // A direct write changed bytes that page-cache writers (mappings)
      // may hold.
      stale_pages = e.ok() && !c.IsPageCache(desc) && c.HasPageCacheWriters();
    } else {
      c.Refuse(desc, e.err);
    }
  }
  // A refusal may have removed the empty version of a created file.
  if (!e.ok() || stale_pages) InvalidateKernel(c.ino());
  return e;
}

void Filesystem::Flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  (void)ino;
  std::shared_ptr<FileHandle> h = FileOf(fi);
  FsError e;
  if (h) e = CommitIfDue(*h, /*at_close=*/true);
  if (!e.ok()) {
    Refuse(req, "close", PathOf(*h), e);
    return;
  }
  AwaitInvalidations();
  fuse_reply_err(req, 0);
}

FsError Filesystem::CommitIfDue(FileHandle& h, bool at_close) {
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

void Filesystem::ReleaseCell(FileHandle& h) {
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
        CellVersion v;
        if (ReadVersion(c.node(), &v).ok() && !v.exists) vanished = c.node();
      }
      Unlist(c);
    }
    // Only once committed does the descriptor stop being a writer: an open
    // or stat that finds no writer then finds the version in the store.
    c.Detach(desc);
  }
  if (vanished.has_value()) {
    {
      MutexLock lock(&handles_mu_);
      vanished_.insert(c.ino());
    }
    ForgetName(*vanished);
  }
  if (stale_pages) InvalidateKernel(c.ino());
  open_cells_.Put(h.cell());
}

void Filesystem::Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  (void)ino;
  std::shared_ptr<FileHandle> h = FileOf(fi);
  if (h && h->cell()) {
    ReleaseCell(*h);
  } else if (h) {
    MutexLock lock(h->mu());
    if (h->NeedsCommit()) {
      FsError e = Commit(*h);
      if (!e.ok()) {
        Log(LogLevel::kError, "commit at release of " + h->node().DebugPath() +
                                  " failed: " + e.ToString());
      }
    }
  }
  if (h) {
    MutexLock lock(&handles_mu_);
    files_.erase(h.get());
  }
  AwaitInvalidations();
  fuse_reply_err(req, 0);
}

void Filesystem::Fallocate(fuse_req_t req, fuse_ino_t ino,
                           fuse_file_info* fi) {
  (void)ino;
  std::shared_ptr<FileHandle> h = fi != nullptr ? FileOf(fi) : nullptr;
  std::string path = h ? PathOf(*h) : "inode " + std::to_string(ino);
  if (h && h->cell()) {
    // As a refused write: the descriptor stores nothing, and a name it
    // created is not kept.
    OpenCell& c = *h->cell();
    {
      MutexLock lock(c.mu());
      if (c.IsWriter(h->descriptor())) c.Refuse(h->descriptor(), EOPNOTSUPP);
    }
    InvalidateKernel(c.ino());
  }
  Refuse(req, "fallocate", path,
         FsError::Of(EOPNOTSUPP, "values are not preallocated"));
}

void Filesystem::Fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
                       fuse_file_info* fi) {
  (void)ino;
  (void)datasync;
  std::shared_ptr<FileHandle> h = FileOf(fi);
  FsError e;
  if (h) e = CommitIfDue(*h, /*at_close=*/false);
  if (e.ok()) {
    Status s = db_->Sync();
    if (!s.ok()) e = FsErrorFromStatus(s);
  }
  if (!e.ok()) {
    Refuse(req, "fsync", h ? PathOf(*h) : "?", e);
    return;
  }
  AwaitInvalidations();
  fuse_reply_err(req, 0);
}

void Filesystem::OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Node n;
  FsError e = NodeOf(ino, &n);
  struct stat st;
  if (e.ok()) e = Stat(n, ino, &st);
  if (e.ok() && !n.IsDirectory()) {
    e = FsError::Of(ENOTDIR, n.DebugPath() + " is a file");
  }
  if (!e.ok()) {
    Refuse(req, "opendir", n.DebugPath(), e);
    return;
  }
  auto d = std::make_unique<DirHandle>(db_, &ephemeral_, n);
  fi->fh = reinterpret_cast<uint64_t>(d.get());
  {
    MutexLock lock(&handles_mu_);
    dirs_.emplace(d.get(), std::move(d));
  }
  fuse_reply_open(req, fi);
}

void Filesystem::ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                         fuse_file_info* fi, bool plus) {
  DirHandle* d = DirOf(fi);
  if (d == nullptr) {
    fuse_reply_err(req, EBADF);
    return;
  }
  std::vector<char> buf(size);
  size_t used = 0;
  FsError e = d->Read(off, [&](const DirEntry& de) -> bool {
    const char* name = de.name.c_str();
    size_t need =
        plus ? fuse_add_direntry_plus(req, nullptr, 0, name, nullptr, 0)
             : fuse_add_direntry(req, nullptr, 0, name, nullptr, 0);
    if (used + need > size) return false;
    if (!plus) {
      struct stat st;
      std::memset(&st, 0, sizeof(st));
      if (de.is_dot) {
        st.st_ino = ino;
        st.st_mode = S_IFDIR;
      } else {
        std::optional<uint64_t> known = inodes_.Find(de.node);
        // Not looked up yet: any stable nonzero number will do for d_ino.
        st.st_ino =
            known.has_value() ? *known : (NodeHash()(de.node) | (1ull << 63));
        st.st_mode = de.node.IsDirectory() ? S_IFDIR : S_IFREG;
      }
      fuse_add_direntry(req, buf.data() + used, size - used, name, &st,
                        de.offset);
    } else {
      fuse_entry_param entry;
      std::memset(&entry, 0, sizeof(entry));
      if (de.is_dot) {
        // ino 0: the kernel takes no reference (and no lookup is counted).
        entry.attr.st_ino = ino;
        entry.attr.st_mode = S_IFDIR;
      } else {
        entry.ino = inodes_.Lookup(de.node);
        entry.generation = 1;
        EntryStat(de, entry.ino, &entry.attr);
        entry.entry_timeout = EntryTimeout(de.node);
        entry.attr_timeout = CellAttrTimeout(de.node, entry.ino);
      }
      fuse_add_direntry_plus(req, buf.data() + used, size - used, name, &entry,
                             de.offset);
    }
    used += need;
    return true;
  });
  if (!e.ok() && used == 0) {
    Refuse(req, "readdir", d->dir().DebugPath(), e);
    return;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void Filesystem::ReleaseDir(fuse_req_t req, fuse_ino_t ino,
                            fuse_file_info* fi) {
  (void)ino;
  std::unique_ptr<DirHandle> d;
  {
    MutexLock lock(&handles_mu_);
    auto it = dirs_.find(reinterpret_cast<DirHandle*>(fi->fh));
    if (it != dirs_.end()) {
      d = std::move(it->second);
      dirs_.erase(it);
    }
  }
  d.reset();
  AwaitInvalidations();
  fuse_reply_err(req, 0);
}

void Filesystem::FsyncDir(fuse_req_t req, fuse_ino_t ino, int datasync,
                          fuse_file_info* fi) {
  (void)ino;
  (void)datasync;
  (void)fi;
  Status s = db_->Sync();
  if (!s.ok()) {
    Refuse(req, "fsyncdir", "", FsErrorFromStatus(s));
    return;
  }
  AwaitInvalidations();
  fuse_reply_err(req, 0);
}

void Filesystem::StatFs(fuse_req_t req, fuse_ino_t ino) {
  (void)ino;
  struct statvfs sv;
  if (statvfs(options_.datadir.c_str(), &sv) != 0) {
    int err = errno;
    Refuse(req, "statfs", options_.datadir,
           FsError::Of(err, std::string("statvfs: ") + strerror(err)));
    return;
  }
  sv.f_namemax = kMaxFileNameBytes;
  fuse_reply_statfs(req, &sv);
}

// ---------------------------------------------------------------------------
// The operations table
// ---------------------------------------------------------------------------

namespace {

Filesystem* Fs(fuse_req_t req) {
  return static_cast<Filesystem*>(fuse_req_userdata(req));
}

void RefuseOp(fuse_req_t req, const char* op, int err, const char* why) {
  Fs(req)->Refuse(req, op, "", FsError::Of(err, why));
}

// The same for a request on an inode: the log line names its path.
void RefuseOnInode(fuse_req_t req, fuse_ino_t ino, const char* op, int err,
                   const char* why) {
  Fs(req)->Refuse(req, op, Fs(req)->PathOfInode(ino), FsError::Of(err, why));
}

const fuse_lowlevel_ops kOps = [] {
  fuse_lowlevel_ops ops;
  std::memset(&ops, 0, sizeof(ops));
  ops.init = [](void* userdata, fuse_conn_info* conn) {
    static_cast<Filesystem*>(userdata)->Init(conn);
  };
  ops.lookup = [](fuse_req_t req, fuse_ino_t parent, const char* name) {
    Fs(req)->Lookup(req, parent, name);
  };
  ops.forget = [](fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
    Fs(req)->Forget(ino, nlookup);
    fuse_reply_none(req);
  };
  ops.forget_multi = [](fuse_req_t req, size_t count,
                        fuse_forget_data* forgets) {
    for (size_t i = 0; i < count; i++) {
      Fs(req)->Forget(forgets[i].ino, forgets[i].nlookup);
    }
    fuse_reply_none(req);
  };
  ops.getattr = [](fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Fs(req)->GetAttr(req, ino, fi);
  };
  ops.setattr = [](fuse_req_t req, fuse_ino_t ino, struct stat* attr,
                   int to_set, fuse_file_info* fi) {
    Fs(req)->SetAttr(req, ino, attr, to_set, fi);
  };
  ops.readlink = [](fuse_req_t req, fuse_ino_t) {
    RefuseOp(req, "readlink", EINVAL, "there are no symlinks");
  };
  ops.mknod = [](fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) {
    RefuseOp(req, "mknod", EPERM, "device nodes and fifos are not supported");
  };
  ops.mkdir = [](fuse_req_t req, fuse_ino_t parent, const char* name,
                 mode_t mode) { Fs(req)->Mkdir(req, parent, name, mode); };
  ops.unlink = [](fuse_req_t req, fuse_ino_t parent, const char* name) {
    Fs(req)->Unlink(req, parent, name);
  };
  ops.rmdir = [](fuse_req_t req, fuse_ino_t parent, const char* name) {
    Fs(req)->Rmdir(req, parent, name);
  };
  ops.symlink = [](fuse_req_t req, const char*, fuse_ino_t, const char*) {
    RefuseOp(req, "symlink", EPERM, "symlinks are not supported");
  };
  ops.rename = [](fuse_req_t req, fuse_ino_t parent, const char* name,
                  fuse_ino_t newparent, const char* newname, unsigned flags) {
    Fs(req)->Rename(req, parent, name, newparent, newname, flags);
  };
  ops.link = [](fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) {
    RefuseOp(req, "link", EPERM, "hard links are not supported");
  };
  ops.open = [](fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Fs(req)->Open(req, ino, fi);
  };
  ops.read = [](fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                fuse_file_info* fi) { Fs(req)->Read(req, ino, size, off, fi); };
  ops.write = [](fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size,
                 off_t off, fuse_file_info* fi) {
    Fs(req)->Write(req, ino, buf, size, off, fi);
  };
  ops.flush = [](fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Fs(req)->Flush(req, ino, fi);
  };
  ops.release = [](fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Fs(req)->Release(req, ino, fi);
  };
  ops.fsync = [](fuse_req_t req, fuse_ino_t ino, int datasync,
                 fuse_file_info* fi) {
    Fs(req)->Fsync(req, ino, datasync, fi);
  };
  ops.opendir = [](fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Fs(req)->OpenDir(req, ino, fi);
  };
  ops.readdir = [](fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                   fuse_file_info* fi) {
    Fs(req)->ReadDir(req, ino, size, off, fi, false);
  };
  ops.readdirplus = [](fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       fuse_file_info* fi) {
    Fs(req)->ReadDir(req, ino, size, off, fi, true);
  };
  ops.releasedir = [](fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Fs(req)->ReleaseDir(req, ino, fi);
  };
  ops.fsyncdir = [](fuse_req_t req, fuse_ino_t ino, int datasync,
                    fuse_file_info* fi) {
    Fs(req)->FsyncDir(req, ino, datasync, fi);
  };
  ops.statfs = [](fuse_req_t req, fuse_ino_t ino) {
    Fs(req)->StatFs(req, ino);
  };
  ops.setxattr = [](fuse_req_t req, fuse_ino_t ino, const char*, const char*,
                    size_t, int) {
    RefuseOnInode(req, ino, "setxattr", ENOTSUP,
                  "extended attributes have no meaning");
  };
  ops.getxattr = [](fuse_req_t req, fuse_ino_t, const char*, size_t) {
    fuse_reply_err(req, ENOTSUP);  // probed by ls and cp: not logged
  };
  ops.listxattr = [](fuse_req_t req, fuse_ino_t, size_t) {
    fuse_reply_err(req, ENOTSUP);
  };
  ops.removexattr = [](fuse_req_t req, fuse_ino_t ino, const char*) {
    RefuseOnInode(req, ino, "removexattr", ENOTSUP,
                  "extended attributes have no meaning");
  };
  ops.create = [](fuse_req_t req, fuse_ino_t parent, const char* name,
                  mode_t mode, fuse_file_info* fi) {
    Fs(req)->Create(req, parent, name, mode, fi);
  };
  ops.fallocate = [](fuse_req_t req, fuse_ino_t ino, int, off_t, off_t,
                     fuse_file_info* fi) { Fs(req)->Fallocate(req, ino, fi); };
  return ops;
}();

}  // namespace

// ---------------------------------------------------------------------------
// Session
// ---------------------------------------------------------------------------

class Session::Impl {
 public:
  Impl(Bigtable* db, const SessionOptions& options)
      : options_(options), fs_(db, options) {}

  ~Impl() {
    if (session_ != nullptr) {
      // Commit open files and stop the invalidator while the session
      // exists; then unmount.
      fs_.Stop();
      if (mounted_) fuse_session_unmount(session_);
      if (signals_) fuse_remove_signal_handlers(session_);
      fuse_session_destroy(session_);
    }
  }

  FsError Create() {
    std::vector<std::string> argv_storage = {"tabletfs"};
    if (options_.debug) argv_storage.push_back("-d");
    std::string opts = "default_permissions,subtype=tabletfs,fsname=" +
                       EscapeOption(options_.datadir);
    for (const std::string& o : options_.fuse_options) opts += "," + o;
    argv_storage.push_back("-o");
    argv_storage.push_back(opts);
    std::vector<char*> argv;
    for (std::string& a : argv_storage) argv.push_back(a.data());
    fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
    session_ = fuse_session_new(&args, &kOps, sizeof(kOps), &fs_);
    fuse_opt_free_args(&args);
    if (session_ == nullptr) {
      return FsError::Of(EINVAL, "libfuse refused the options '" + opts +
                                     "' (its message is above)");
    }
    if (fuse_set_signal_handlers(session_) != 0) {
      return FsError::Of(EIO, "cannot install the signal handlers");
    }
    signals_ = true;
    return FsError::Ok();
  }

  FsError Mount() {
    if (fuse_session_mount(session_, options_.mountpoint.c_str()) != 0) {
      return FsError::Of(EIO, "cannot mount at " + options_.mountpoint +
                                  " (libfuse's message is above)");
    }
    mounted_ = true;
    fs_.Start(session_);
    return FsError::Ok();
  }

  int Loop() {
    int rc;
    if (options_.single_threaded) {
      rc = fuse_session_loop(session_);
    } else {
      fuse_loop_config* config = fuse_loop_cfg_create();
      fuse_loop_cfg_set_clone_fd(config, 0);
      fuse_loop_cfg_set_max_threads(config, 16);
      rc = fuse_session_loop_mt(session_, config);
      fuse_loop_cfg_destroy(config);
    }
    return rc < 0 ? -rc : 0;
  }

 private:
  // fsname goes through libfuse's comma-separated option parser.
  static std::string EscapeOption(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == ',' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    return out;
  }

  const SessionOptions options_;
  Filesystem fs_;
  fuse_session* session_ = nullptr;
  bool mounted_ = false;
  bool signals_ = false;
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

FsError Session::Create(Bigtable* db, const SessionOptions& options,
                        std::unique_ptr<Session>* out) {
  auto impl = std::make_unique<Impl>(db, options);
  TABLETFS_FS_RETURN_IF_ERROR(impl->Create());
  out->reset(new Session(std::move(impl)));
  return FsError::Ok();
}

FsError Session::Mount() { return impl_->Mount(); }
int Session::Loop() { return impl_->Loop(); }

void Session::PrintFuseHelp() { fuse_lowlevel_help(); }

std::string Session::FuseVersion() { return fuse_pkgversion(); }

}  // namespace tabletfs::fs
