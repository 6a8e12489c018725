// The FUSE low-level callbacks: every request of the kernel, decoded, handed
// to the namespace area that owns its node (fs/area.h) or to the write path
// (fs/write_path.h), and replied to once — libfuse's
// example/passthrough_hp.cc is the model. Only this file, fs/session.cc,
// fs/fuse_loop.cc and fs/invalidator.cc include fuse_lowlevel.h.
//
// Each callback resolves its inode to a Node (fs/path_map.h) and never
// switches on its kind: the area decides. A refusal is an FsError: its
// errno goes to the kernel and its reason to the log (failed lookups at
// debug level). Nothing throws; locks are released before replying (see
// the lock order in fs/inode_table.h), and a reply waits for the
// invalidation notices its request queued (Filesystem::AwaitInvalidations).
// Every callback first counts its request (Filesystem::requests(),
// `.tabletfs/stats`).
#define FUSE_USE_VERSION 314

#include "fs/fuse_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <sys/file.h>
#include <sys/statvfs.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fs/area.h"
#include "fs/dir_handle.h"
#include "fs/errors.h"
#include "fs/file_handle.h"
#include "fs/filesystem.h"
#include "fs/lock_table.h"
#include "fs/names.h"
#include "fs/path_map.h"
#include "fs/request_counts.h"
#include "fs/write_path.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

namespace tabletfs::fs {
namespace {

Filesystem& Fs(fuse_req_t req) {
  return *static_cast<Filesystem*>(fuse_req_userdata(req));
}

// Counts the request `req` (one relaxed atomic add).
void Count(fuse_req_t req, FuseOp op) { Fs(req).requests().Add(op); }

Caller CallerOf(fuse_req_t req) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  return Caller{ctx->uid, ctx->gid, ctx->pid};
}

// ---- Replies ----

void Refuse(fuse_req_t req, const char* op, const std::string& what,
            const FsError& e) {
  Filesystem& fs = Fs(req);
  fs.AwaitInvalidations();
  fs.LogRefused(op, what, e);
  fuse_reply_err(req, e.err);
}

void ReplyOk(fuse_req_t req) {
  Fs(req).AwaitInvalidations();
  fuse_reply_err(req, 0);
}

fuse_entry_param ToFuse(Filesystem& fs, const Entry& e) {
  fuse_entry_param p;
  std::memset(&p, 0, sizeof(p));
  p.ino = e.ino;
  p.generation = 1;
  p.attr = e.attr;
  p.attr.st_ino = fs.inodes().StatIno(e.ino);
  p.entry_timeout = e.entry_timeout;
  p.attr_timeout = e.attr_timeout;
  return p;
}

void ReplyEntry(fuse_req_t req, const Entry& e) {
  fuse_entry_param p = ToFuse(Fs(req), e);
  Fs(req).AwaitInvalidations();
  fuse_reply_entry(req, &p);
}

void ReplyAttr(fuse_req_t req, const Node& n, fuse_ino_t ino,
               const struct stat& st) {
  Filesystem& fs = Fs(req);
  struct stat shown = st;
  shown.st_ino = fs.inodes().StatIno(ino);
  fs.AwaitInvalidations();
  fuse_reply_attr(req, &shown, fs.CellAttrTimeout(n, ino));
}

// Registers the handle of an open or create and tells the kernel how to do
// its I/O. A read-only handle has nothing to commit at close: the kernel
// sends it no FLUSH (FOPEN_NOFLUSH, Linux 5.16+), one round trip less for
// every `cat`, until a lock was taken on the mount: a close drops the
// closing process's fcntl locks, which the daemon learns from FLUSH.
void SetOpened(Filesystem& fs, Opened& o, fuse_file_info* fi) {
  if (o.direct_io) fi->direct_io = 1;
  if (o.keep_cache) fi->keep_cache = 1;
  if (!o.handle->writable() && !fs.locks().used()) fi->noflush = 1;
  fs.AddFile(std::move(o.handle), &fi->fh);
}

// A name that cannot be made: say how long a new one may be.
void ExplainNewName(FsError* e) {
  if (!e->ok() && e->err == ENAMETOOLONG) {
    e->reason = "a new name may be at most 234 bytes: " + e->reason;
  }
}

// ---- Names ----

void Init(void* userdata, fuse_conn_info* conn) {
  static_cast<Filesystem*>(userdata)->requests().Add(FuseOp::kInit);
  if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) {
    conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
  }
  // Commits happen at close: a writeback cache would show data the store
  // does not hold yet.
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  if (conn->capable & FUSE_CAP_READDIRPLUS) conn->want |= FUSE_CAP_READDIRPLUS;
}

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Count(req, FuseOp::kLookup);
  Filesystem& fs = Fs(req);
  Node p, n;
  FsError e = fs.NodeOf(parent, &p);
  if (e.ok()) e = fs.Resolve(p, name, &n);
  Entry entry;
  if (e.ok()) e = fs.MakeEntry(n, &entry);
  if (!e.ok()) return Refuse(req, "lookup", ChildPath(p, name), e);
  ReplyEntry(req, entry);
}

void Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  Count(req, FuseOp::kForget);
  Fs(req).Forget(ino, nlookup);
  fuse_reply_none(req);
}

void ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  Count(req, FuseOp::kBatchForget);
  for (size_t i = 0; i < count; i++) {
    Fs(req).Forget(forgets[i].ino, forgets[i].nlookup);
  }
  fuse_reply_none(req);
}

void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Count(req, FuseOp::kGetattr);
  Filesystem& fs = Fs(req);
  Node n;
  FsError e = fs.NodeOf(ino, &n);
  struct stat st;
  std::memset(&st, 0, sizeof(st));
  if (e.ok()) {
    std::shared_ptr<FileHandle> h = fi != nullptr ? fs.FileOf(fi->fh) : nullptr;
    e = fs.AreaOf(n).StatOpen(n, ino, h.get(), &st);
    st.st_ino = ino;
  }
  if (!e.ok()) return Refuse(req, "getattr", n.DebugPath(), e);
  ReplyAttr(req, n, ino, st);
}

void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set,
             fuse_file_info* fi) {
  Count(req, FuseOp::kSetattr);
  Filesystem& fs = Fs(req);
  Node n;
  FsError e = fs.NodeOf(ino, &n);
  if (!e.ok()) return Refuse(req, "setattr", "inode " + std::to_string(ino), e);
  Area& area = fs.AreaOf(n);
  e = area.CheckWritable(n, "setattr");
  if (!e.ok()) return Refuse(req, "setattr", n.DebugPath(), e);
  std::shared_ptr<FileHandle> h = fi != nullptr ? fs.FileOf(fi->fh) : nullptr;
  if (to_set & FUSE_SET_ATTR_SIZE) {
    e = area.Truncate(n, ino, static_cast<uint64_t>(attr->st_size), h.get());
    if (!e.ok()) return Refuse(req, "truncate", n.DebugPath(), e);
  }
  if (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)) {
    int64_t micros = (to_set & FUSE_SET_ATTR_MTIME_NOW)
                         ? NowMicros()
                         : TimespecToMicros(attr->st_mtim);
    e = area.SetMtime(n, WritePath::StateInode(ino, h.get()), micros);
    if (!e.ok()) return Refuse(req, "utimensat", n.DebugPath(), e);
  }
  if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
    Ownership o;
    if (to_set & FUSE_SET_ATTR_MODE) o.mode = attr->st_mode;
    if (to_set & FUSE_SET_ATTR_UID) o.uid = attr->st_uid;
    if (to_set & FUSE_SET_ATTR_GID) o.gid = attr->st_gid;
    e = area.SetOwnership(n, o, CallerOf(req));
    if (!e.ok()) return Refuse(req, "chmod/chown", n.DebugPath(), e);
  }
  struct stat st;
  e = fs.Stat(n, WritePath::StateInode(ino, h.get()), &st);
  if (!e.ok()) return Refuse(req, "setattr", n.DebugPath(), e);
  ReplyAttr(req, n, ino, st);
}

void Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  Count(req, FuseOp::kMkdir);
  (void)mode;
  Filesystem& fs = Fs(req);
  Node p, n;
  FsError e = fs.NodeOf(parent, &p);
  if (e.ok()) e = fs.AreaOf(p).CheckWritable(p, "mkdir");
  if (e.ok()) e = fs.Resolve(p, name, &n);
  ExplainNewName(&e);
  if (e.ok()) e = fs.AreaOf(n).Mkdir(p, n, CallerOf(req));
  Entry entry;
  if (e.ok()) e = fs.MakeEntry(n, &entry);
  if (!e.ok()) return Refuse(req, "mkdir", ChildPath(p, name), e);
  ReplyEntry(req, entry);
}

void Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Count(req, FuseOp::kRmdir);
  Filesystem& fs = Fs(req);
  Node p, n;
  FsError e = fs.NodeOf(parent, &p);
  if (e.ok()) e = fs.AreaOf(p).CheckWritable(p, "rmdir");
  if (e.ok()) e = fs.Resolve(p, name, &n);
  if (e.ok()) e = fs.AreaOf(n).Rmdir(n);
  if (!e.ok()) return Refuse(req, "rmdir", ChildPath(p, name), e);
  // The kernel marks the removed directory's inode dead and keeps it while
  // anything holds it (a RELEASEDIR still in flight, a descriptor). A new
  // directory of the name must get a new inode: given the old number, the
  // kernel would take the dead inode back and refuse to create anything
  // in it (ENOENT, without asking).
  if (std::optional<uint64_t> ino = fs.inodes().Find(n)) {
    fs.inodes().Unbind(n, *ino);
  }
  ReplyOk(req);
}

void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Count(req, FuseOp::kUnlink);
  Filesystem& fs = Fs(req);
  Node p, n;
  FsError e = fs.NodeOf(parent, &p);
  if (e.ok()) e = fs.Resolve(p, name, &n);
  if (e.ok()) e = fs.AreaOf(p).CheckUnlinkIn(p, n);
  if (e.ok()) e = fs.AreaOf(n).Unlink(n, CallerOf(req));
  if (!e.ok()) return Refuse(req, "unlink", ChildPath(p, name), e);
  ReplyOk(req);
}

void Rename(fuse_req_t req, fuse_ino_t parent, const char* name,
            fuse_ino_t newparent, const char* newname, unsigned flags) {
  Count(req, FuseOp::kRename);
  Filesystem& fs = Fs(req);
  Node p, np, from, to;
  FsError e = fs.NodeOf(parent, &p);
  if (e.ok()) e = fs.NodeOf(newparent, &np);
  if (e.ok()) e = fs.AreaOf(p).CheckWritable(p, "rename");
  if (e.ok()) e = fs.AreaOf(np).CheckWritable(np, "rename");
  if (e.ok()) e = fs.AreaOf(p).CheckRenameIn(p);
  if (e.ok()) e = fs.AreaOf(np).CheckRenameIn(np);
  if (e.ok() && (flags & RENAME_EXCHANGE)) {
    e = FsError::Of(EINVAL, "RENAME_EXCHANGE is not supported");
  }
  if (e.ok()) e = fs.Resolve(p, name, &from);
  if (e.ok()) e = fs.Resolve(np, newname, &to);
  if (e.ok()) {
    e = fs.AreaOf(from).Rename(from, to, (flags & RENAME_NOREPLACE) != 0);
  }
  if (!e.ok()) {
    return Refuse(req, "rename",
                  ChildPath(p, name) + " -> " + ChildPath(np, newname), e);
  }
  ReplyOk(req);
}

// ---- Files ----

void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
            fuse_file_info* fi) {
  Count(req, FuseOp::kCreate);
  (void)mode;
  Filesystem& fs = Fs(req);
  Node p, n;
  FsError e = fs.NodeOf(parent, &p);
  if (e.ok()) e = fs.AreaOf(p).CheckWritable(p, "create");
  if (e.ok()) e = fs.Resolve(p, name, &n);
  ExplainNewName(&e);
  Opened opened;
  Entry entry;
  if (e.ok()) {
    e = fs.AreaOf(n).Create(p, n, OpenRequest{fi->flags, CallerOf(req)},
                            &opened, &entry);
  }
  if (!e.ok()) return Refuse(req, "create", ChildPath(p, name), e);
  SetOpened(fs, opened, fi);
  fuse_entry_param param = ToFuse(fs, entry);
  fs.AwaitInvalidations();
  fuse_reply_create(req, &param, fi);
}

void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Count(req, FuseOp::kOpen);
  Filesystem& fs = Fs(req);
  Node n;
  FsError e = fs.NodeOf(ino, &n);
  const int acc = fi->flags & O_ACCMODE;
  const bool write = acc != O_RDONLY || (fi->flags & O_TRUNC);
  Opened opened;
  if (e.ok() && write) e = fs.AreaOf(n).CheckWritable(n, "open for writing");
  if (e.ok()) {
    e = fs.AreaOf(n).Open(ino, n, OpenRequest{fi->flags, CallerOf(req)}, write,
                          &opened);
  }
  if (!e.ok()) return Refuse(req, "open", n.DebugPath(), e);
  SetOpened(fs, opened, fi);
  fuse_reply_open(req, fi);
}

void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
          fuse_file_info* fi) {
  Count(req, FuseOp::kRead);
  (void)ino;
  Filesystem& fs = Fs(req);
  std::shared_ptr<FileHandle> h = fs.FileOf(fi->fh);
  if (!h) return (void)fuse_reply_err(req, EBADF);
  std::string data;
  FsError e = fs.write_path().Read(*h, off, size, &data);
  if (!e.ok()) return Refuse(req, "read", WritePath::PathOf(*h), e);
  fuse_reply_buf(req, data.data(), data.size());
}

void Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size,
           off_t off, fuse_file_info* fi) {
  Count(req, FuseOp::kWrite);
  (void)ino;
  Filesystem& fs = Fs(req);
  std::shared_ptr<FileHandle> h = fs.FileOf(fi->fh);
  if (!h) return (void)fuse_reply_err(req, EBADF);
  FsError e = fs.write_path().Write(*h, buf, size, off);
  if (!e.ok()) return Refuse(req, "write", WritePath::PathOf(*h), e);
  fs.AwaitInvalidations();
  fuse_reply_write(req, size);
}

// Whose locks `ino`'s are (fs/lock_table.h): its node's, or, once its cell
// was removed while open, those it kept apart from a new file's.
std::optional<Node> LockKey(Filesystem& fs, fuse_ino_t ino) {
  if (std::optional<Node> orphan = fs.locks().OrphanKey(ino)) return orphan;
  return fs.inodes().Get(ino);
}

void Flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Count(req, FuseOp::kFlush);
  Filesystem& fs = Fs(req);
  if (fs.locks().used()) {
    // close() drops the fcntl locks of the closing process (its owner).
    if (std::optional<Node> n = LockKey(fs, ino)) {
      fs.locks().ReleaseOwner(*n, LockTable::Kind::kPosix, fi->lock_owner);
    }
  }
  std::shared_ptr<FileHandle> h = fs.FileOf(fi->fh);
  FsError e;
  if (h) e = fs.write_path().CommitIfDue(*h, /*at_close=*/true);
  if (!e.ok()) return Refuse(req, "close", WritePath::PathOf(*h), e);
  ReplyOk(req);
}

void Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Count(req, FuseOp::kRelease);
  Filesystem& fs = Fs(req);
  if (fs.locks().used()) {
    if (std::optional<Node> n = LockKey(fs, ino)) {
      // Readers opened before any lock was taken send no FLUSH
      // (FOPEN_NOFLUSH): their fcntl locks go with the open file; flock
      // locks go with it always.
      fs.locks().ReleaseHandle(*n, fi->fh);
      if (fi->flock_release) {
        fs.locks().ReleaseOwner(*n, LockTable::Kind::kFlock, fi->lock_owner);
      }
    }
  }
  std::shared_ptr<FileHandle> h = fs.FileOf(fi->fh);
  if (h) {
    fs.write_path().Release(*h);
    fs.DropFile(h.get());
  }
  ReplyOk(req);
}

// ---- Locks (fs/lock_table.h) ----
// Kept by node: a cell's readers and writers, on inodes of their own,
// lock one file.

LockTable::Lock LockOf(const struct flock& l, const fuse_file_info& fi) {
  LockTable::Lock k;
  k.write = l.l_type == F_WRLCK;
  k.first = static_cast<uint64_t>(l.l_start);
  k.last = l.l_len <= 0 ? LockTable::kToEnd
                        : static_cast<uint64_t>(l.l_start + l.l_len - 1);
  k.owner = fi.lock_owner;
  k.pid = l.l_pid;
  k.handle = fi.fh;
  return k;
}

void GetLk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi,
           struct flock* lock) {
  Count(req, FuseOp::kGetlk);
  Filesystem& fs = Fs(req);
  std::optional<Node> n = LockKey(fs, ino);
  if (!n) return (void)fuse_reply_err(req, ENOENT);
  struct flock out = *lock;
  std::optional<LockTable::Lock> c =
      fs.locks().Test(*n, LockTable::Kind::kPosix, LockOf(*lock, *fi));
  if (!c) {
    out.l_type = F_UNLCK;
  } else {
    out.l_type = c->write ? F_WRLCK : F_RDLCK;
    out.l_start = static_cast<off_t>(c->first);
    out.l_len = c->last == LockTable::kToEnd
                    ? 0
                    : static_cast<off_t>(c->last - c->first + 1);
    out.l_pid = c->pid;
  }
  fuse_reply_lock(req, &out);
}

// A waiting lock's request: its caller may be interrupted (a signal: the
// kernel sends INTERRUPT, and waits for the reply).
struct LockWait {
  LockTable* locks;
  std::atomic<uint64_t> waiter{0};
  std::atomic<bool> interrupted{false};
};

void LockInterrupted(fuse_req_t, void* data) {
  // Called with the request's lock held (libfuse), which the reply takes:
  // the cancel (and its EINTR reply) runs on a thread of its own.
  auto* w = static_cast<LockWait*>(data);
  w->interrupted = true;
  if (uint64_t id = w->waiter.load()) w->locks->CancelOnThread(id);
}

void SetLock(fuse_req_t req, const Node& n, LockTable::Kind kind,
             const LockTable::Lock& k, bool unlock, bool wait) {
  LockTable& locks = Fs(req).locks();
  if (!wait || unlock) {
    int rc = locks.Set(n, kind, k, unlock, false, nullptr, nullptr);
    fuse_reply_err(req, rc);
    return;
  }
  // Alive while this function runs and until the reply: a grant on
  // another thread may reply before Set returns here.
  auto w = std::make_shared<LockWait>();
  w->locks = &locks;
  fuse_req_interrupt_func(req, LockInterrupted, w.get());
  auto reply = [req, w](int err) {
    // No interrupt callback runs once this returns.
    fuse_req_interrupt_func(req, nullptr, nullptr);
    fuse_reply_err(req, err);
  };
  if (w->interrupted) return reply(EINTR);
  uint64_t waiter = 0;
  int rc = locks.Set(n, kind, k, false, true, reply, &waiter);
  if (rc >= 0) return reply(rc);
  w->waiter = waiter;
  // Interrupted before the waiter was known to the callback.
  if (w->interrupted) locks.Cancel(waiter);
}

void SetLk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi,
           struct flock* lock, int sleep) {
  Count(req, FuseOp::kSetlk);
  std::optional<Node> n = LockKey(Fs(req), ino);
  if (!n) return (void)fuse_reply_err(req, ENOENT);
  SetLock(req, *n, LockTable::Kind::kPosix, LockOf(*lock, *fi),
          lock->l_type == F_UNLCK, sleep != 0);
}

void Flock(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, int op) {
  Count(req, FuseOp::kSetlk);
  std::optional<Node> n = LockKey(Fs(req), ino);
  if (!n) return (void)fuse_reply_err(req, ENOENT);
  LockTable::Lock k;
  k.write = (op & LOCK_EX) != 0;
  k.owner = fi->lock_owner;
  k.pid = fuse_req_ctx(req)->pid;
  k.handle = fi->fh;
  SetLock(req, *n, LockTable::Kind::kFlock, k, (op & LOCK_UN) != 0,
          (op & LOCK_NB) == 0);
}

void Fsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi) {
  Count(req, FuseOp::kFsync);
  (void)ino;
  (void)datasync;
  Filesystem& fs = Fs(req);
  std::shared_ptr<FileHandle> h = fs.FileOf(fi->fh);
  FsError e;
  if (h) e = fs.write_path().CommitIfDue(*h, /*at_close=*/false);
  if (e.ok()) {
    Status s = fs.db()->Sync();
    if (!s.ok()) e = FsErrorFromStatus(s);
  }
  if (!e.ok()) {
    return Refuse(req, "fsync", h ? WritePath::PathOf(*h) : "?", e);
  }
  ReplyOk(req);
}

void Fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
               off_t length, fuse_file_info* fi) {
  Count(req, FuseOp::kFallocate);
  (void)mode;
  (void)offset;
  (void)length;
  Filesystem& fs = Fs(req);
  std::shared_ptr<FileHandle> h = fi != nullptr ? fs.FileOf(fi->fh) : nullptr;
  std::string path = h ? WritePath::PathOf(*h) : "inode " + std::to_string(ino);
  if (h) fs.write_path().Fallocate(*h);
  Refuse(req, "fallocate", path,
         FsError::Of(EOPNOTSUPP, "values are not preallocated"));
}

// ---- Directories ----

void OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Count(req, FuseOp::kOpendir);
  Filesystem& fs = Fs(req);
  Node n;
  FsError e = fs.NodeOf(ino, &n);
  // Existence only: a table's attributes read its first rows.
  if (e.ok()) e = fs.Exists(n, ino);
  if (e.ok() && !n.IsDirectory()) {
    e = FsError::Of(ENOTDIR, n.DebugPath() + " is a file");
  }
  if (!e.ok()) return Refuse(req, "opendir", n.DebugPath(), e);
  auto d = std::make_unique<DirHandle>(fs.db(), &fs.ephemeral(), n);
  if (DirHandle::NameLister lister = fs.AreaOf(n).Lister(n)) {
    d->set_lister(std::move(lister));
  }
  fs.AddDir(std::move(d), &fi->fh);
  fuse_reply_open(req, fi);
}

void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
             fuse_file_info* fi, bool plus) {
  Count(req, plus ? FuseOp::kReaddirplus : FuseOp::kReaddir);
  Filesystem& fs = Fs(req);
  DirHandle* d = fs.DirOf(fi->fh);
  if (d == nullptr) return (void)fuse_reply_err(req, EBADF);
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
        std::optional<uint64_t> known = fs.inodes().Find(de.node);
        // Not looked up yet: any stable nonzero number will do for d_ino.
        st.st_ino = known.has_value() ? fs.inodes().StatIno(*known)
                                      : (NodeHash()(de.node) | (1ull << 63));
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
        entry.ino = fs.inodes().Lookup(de.node);
        entry.generation = 1;
        fs.AreaOf(de.node).EntryStat(de, entry.ino, &entry.attr);
        entry.attr.st_ino = fs.inodes().StatIno(entry.ino);
        entry.entry_timeout = fs.EntryTimeout(de.node);
        entry.attr_timeout = fs.CellAttrTimeout(de.node, entry.ino);
      }
      fuse_add_direntry_plus(req, buf.data() + used, size - used, name, &entry,
                             de.offset);
    }
    used += need;
    return true;
  });
  if (!e.ok() && used == 0)
    return Refuse(req, "readdir", d->dir().DebugPath(), e);
  fuse_reply_buf(req, buf.data(), used);
}

void ReleaseDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Count(req, FuseOp::kReleasedir);
  (void)ino;
  Fs(req).TakeDir(fi->fh).reset();
  ReplyOk(req);
}

void FsyncDir(fuse_req_t req, fuse_ino_t ino, int datasync,
              fuse_file_info* fi) {
  Count(req, FuseOp::kFsyncdir);
  (void)ino;
  (void)datasync;
  (void)fi;
  Status s = Fs(req).db()->Sync();
  if (!s.ok()) return Refuse(req, "fsyncdir", "", FsErrorFromStatus(s));
  ReplyOk(req);
}

void StatFs(fuse_req_t req, fuse_ino_t ino) {
  Count(req, FuseOp::kStatfs);
  (void)ino;
  const std::string& datadir = Fs(req).options().datadir;
  struct statvfs sv;
  if (datadir.empty()) {
    // No local data directory (a remote store): a fixed, large free space
    // (1 PiB in 4 KiB blocks), so that df works and tools that check
    // before copying go ahead; the server refuses what it cannot hold.
    std::memset(&sv, 0, sizeof(sv));
    sv.f_bsize = sv.f_frsize = 4096;
    sv.f_blocks = sv.f_bfree = sv.f_bavail = (uint64_t{1} << 50) / 4096;
    sv.f_files = sv.f_ffree = sv.f_favail = uint64_t{1} << 32;
  } else if (statvfs(datadir.c_str(), &sv) != 0) {
    int err = errno;
    return Refuse(req, "statfs", datadir,
                  FsError::Of(err, std::string("statvfs: ") + strerror(err)));
  }
  sv.f_namemax = kMaxFileNameBytes;
  fuse_reply_statfs(req, &sv);
}

// ---- What the namespace does not have ----

void RefuseOp(fuse_req_t req, const char* op, int err, const char* why) {
  Refuse(req, op, "", FsError::Of(err, why));
}

// The same for a request on an inode: the log line names its path.
void RefuseOnInode(fuse_req_t req, fuse_ino_t ino, const char* op, int err,
                   const char* why) {
  Refuse(req, op, Fs(req).PathOfInode(ino), FsError::Of(err, why));
}

const fuse_lowlevel_ops kOps = [] {
  fuse_lowlevel_ops ops;
  std::memset(&ops, 0, sizeof(ops));
  ops.init = Init;
  ops.lookup = Lookup;
  ops.forget = Forget;
  ops.forget_multi = ForgetMulti;
  ops.getattr = GetAttr;
  ops.setattr = SetAttr;
  ops.readlink = [](fuse_req_t req, fuse_ino_t) {
    Count(req, FuseOp::kReadlink);
    RefuseOp(req, "readlink", EINVAL, "there are no symlinks");
  };
  ops.mknod = [](fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) {
    Count(req, FuseOp::kMknod);
    RefuseOp(req, "mknod", EPERM, "device nodes and fifos are not supported");
  };
  ops.mkdir = Mkdir;
  ops.unlink = Unlink;
  ops.rmdir = Rmdir;
  ops.symlink = [](fuse_req_t req, const char*, fuse_ino_t, const char*) {
    Count(req, FuseOp::kSymlink);
    RefuseOp(req, "symlink", EPERM, "symlinks are not supported");
  };
  ops.rename = Rename;
  ops.link = [](fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) {
    Count(req, FuseOp::kLink);
    RefuseOp(req, "link", EPERM, "hard links are not supported");
  };
  ops.open = Open;
  ops.read = Read;
  ops.write = Write;
  ops.flush = Flush;
  ops.release = Release;
  ops.fsync = Fsync;
  ops.opendir = OpenDir;
  ops.readdir = [](fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                   fuse_file_info* fi) {
    ReadDir(req, ino, size, off, fi, false);
  };
  ops.readdirplus = [](fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       fuse_file_info* fi) {
    ReadDir(req, ino, size, off, fi, true);
  };
  ops.releasedir = ReleaseDir;
  ops.fsyncdir = FsyncDir;
  ops.statfs = StatFs;
  ops.setxattr = [](fuse_req_t req, fuse_ino_t ino, const char*, const char*,
                    size_t, int) {
    Count(req, FuseOp::kSetxattr);
    RefuseOnInode(req, ino, "setxattr", ENOTSUP,
                  "extended attributes have no meaning");
  };
  // Probed by ls -l (ACLs, SELinux labels), cp -a, and by the kernel
  // itself before the first write to an existing file (security.capability,
  // to drop it): not logged. ENOSYS, not ENOTSUP: the kernel then answers
  // every later getxattr (listxattr) of the mount itself, with the same
  // EOPNOTSUPP the caller saw, and sends no more of them.
  ops.getxattr = [](fuse_req_t req, fuse_ino_t, const char*, size_t) {
    Count(req, FuseOp::kGetxattr);
    fuse_reply_err(req, ENOSYS);
  };
  ops.listxattr = [](fuse_req_t req, fuse_ino_t, size_t) {
    Count(req, FuseOp::kListxattr);
    fuse_reply_err(req, ENOSYS);
  };
  ops.removexattr = [](fuse_req_t req, fuse_ino_t ino, const char*) {
    Count(req, FuseOp::kRemovexattr);
    RefuseOnInode(req, ino, "removexattr", ENOTSUP,
                  "extended attributes have no meaning");
  };
  ops.create = Create;
  ops.fallocate = Fallocate;
  ops.getlk = GetLk;
  ops.setlk = SetLk;
  ops.flock = Flock;
  return ops;
}();

}  // namespace

const fuse_lowlevel_ops* FuseOperations() { return &kOps; }

}  // namespace tabletfs::fs
