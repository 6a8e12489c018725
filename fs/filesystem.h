// Filesystem: the state one mounted namespace shares across its FUSE
// callbacks (fs/fuse_ops.cc), its namespace areas (fs/area.h) and its write
// path (fs/write_path.h) — the inode table, the open cells, the directories
// made by mkdir, the mtimes, the invalidator, the open handles — and the
// helpers all of them use: resolving names, stat building, reading the
// version a node names, cache lifetimes, invalidation and refusal logging.
// Private to fs/: mount/ sees only fs/session.h. No FUSE header here: the
// callbacks decode FUSE's types into the plain ones below.
//
// Thread safety: every method may be called from any thread; the lock order
// is the one at the top of fs/inode_table.h. handles_mu_ is held only to
// find, register or drop a handle, never while a handle's or a cell's lock
// is taken. Store calls are never made under it.
#ifndef TABLETFS_FS_FILESYSTEM_H_
#define TABLETFS_FS_FILESYSTEM_H_

#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "fs/change_listener.h"
#include "fs/dir_handle.h"
#include "fs/dir_times_cache.h"
#include "fs/ephemeral_dirs.h"
#include "fs/errors.h"
#include "fs/file_handle.h"
#include "fs/inode_table.h"
#include "fs/invalidator.h"
#include "fs/lock_table.h"
#include "fs/mtimes.h"
#include "fs/names.h"
#include "fs/open_cells.h"
#include "fs/path_map.h"
#include "fs/request_counts.h"
#include "fs/session.h"
#include "store/bigtable.h"
#include "store/util/mutex.h"

struct fuse_session;

namespace tabletfs::fs {

class Area;
class WritePath;

// Through the filesystem, `Q@T` may be at most this far in the future.
inline constexpr int64_t kFutureLimitMicros = 3600LL * 1000 * 1000;

int64_t NowMicros();
struct timespec MicrosToTimespec(int64_t micros);
int64_t TimespecToMicros(const struct timespec& ts);
// The smallest row key after `row` (the scan end of one row).
std::string RowEnd(std::string_view row);
mode_t FileMode(const FamilySettings& s);
// Directories get the family's mode plus x wherever r is set.
mode_t DirMode(const FamilySettings& s);
// The path of `name` in directory `parent`, for log lines: "/t", not "//t".
std::string ChildPath(const Node& parent, std::string_view name);

// The newest visible version of one cell (at T for `Q@T`).
struct CellVersion {
  bool exists = false;
  int64_t timestamp = 0;
  std::string value;
};

// The same without the value (Filesystem::StatVersion).
struct VersionStat {
  bool exists = false;
  int64_t timestamp = 0;
  uint64_t size = 0;
};

// Who makes a request (fuse_req_ctx).
struct Caller {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;  // the calling thread; 0: unknown
};

// A name's entry as the kernel is given it (fuse_entry_param without the
// generation, which is always 1).
struct Entry {
  uint64_t ino = 0;
  struct stat attr;
  double entry_timeout = 0;
  double attr_timeout = 0;
};

// An open or a create: what it asks (decoded from fuse_file_info) ...
struct OpenRequest {
  int flags = 0;  // open(2) flags
  Caller caller;
};
// ... and what it answers: the handle and how the kernel does its I/O.
struct Opened {
  std::shared_ptr<FileHandle> handle;
  bool direct_io = false;
  bool keep_cache = false;
};

class Filesystem {
 public:
  Filesystem(Bigtable* db, const SessionOptions& options);
  ~Filesystem();
  Filesystem(const Filesystem&) = delete;
  Filesystem& operator=(const Filesystem&) = delete;

  // The session is mounted: start the invalidator, the listener of the
  // store's change events (fs/change_listener.h) and the test hooks.
  void Start(fuse_session* se);
  // Stops the change listener, commits what open files still hold (as
  // RELEASE would) and drops every handle, so nothing refers to the store
  // after the session ends.
  void Stop();

  // The namespace area that owns `node` (fs/area.h). Every node has one.
  Area& AreaOf(const Node& node);
  WritePath& write_path() { return *write_path_; }

  // The store, as the mount writes it: every write carries the mount's
  // origin (fs/origin_bigtable.h), so its change events are known as ours.
  Bigtable* db() const { return db_; }
  // The family directories' times, kept between requests.
  DirTimesCache& dir_times() { return dir_times_; }
  uint64_t origin() const { return origin_; }
  const SessionOptions& options() const { return options_; }
  uid_t uid() const { return uid_; }
  gid_t gid() const { return gid_; }
  int64_t start_time() const { return start_time_; }
  InodeTable& inodes() { return inodes_; }
  EphemeralDirs& ephemeral() { return ephemeral_; }
  OpenCells& open_cells() { return open_cells_; }
  LockTable& locks() { return locks_; }
  Mtimes& mtimes() { return mtimes_; }
  // The FUSE requests served so far, by kind (fs/fuse_ops.cc counts them).
  RequestCounts& requests() { return requests_; }
  // Test hook (Start): how long unlink and rename of a cell pause between
  // the store's change and the open states following it.
  std::chrono::milliseconds name_change_delay() const {
    return name_change_delay_;
  }

  // ---- Nodes and names ----
  // The node of an inode the kernel names; ENOENT for one we freed (the
  // kernel never does that when it counts right).
  FsError NodeOf(uint64_t ino, Node* out);
  // The path of an inode for log lines ("inode N" when unknown).
  std::string PathOfInode(uint64_t ino);
  // Parses `name` in `parent` and resolves a hashed (long) name to its key.
  FsError Resolve(const Node& parent, std::string_view name, Node* out);
  // A lookup of `node` was forgotten `count` times.
  void Forget(uint64_t ino, uint64_t count);

  // ---- Attributes ----
  void DirStat(uint64_t ino, mode_t mode, uid_t uid, gid_t gid,
               struct stat* st);
  void FileStat(uint64_t ino, const FamilySettings& s, uint64_t size,
                int64_t timestamp, struct stat* st);
  // A cell's mtime (and atime) as set by utimensat; ctime stays the
  // version's commit time.
  static void SetMtime(struct stat* st, int64_t micros) {
    st->st_atim = st->st_mtim = MicrosToTimespec(micros);
  }
  // Existence and attributes of a node (its area's Stat).
  FsError Stat(const Node& node, uint64_t ino, struct stat* st);
  // Whether a node exists (its area's Exists).
  FsError Exists(const Node& node, uint64_t ino);
  // Fills an entry reply for `node`, counting one lookup.
  FsError MakeEntry(const Node& node, Entry* e);
  double EntryTimeout(const Node& node);
  double AttrTimeout(const Node& node);
  // AttrTimeout, or 0 while writers and readers of the cell `ino` are
  // open; marks an open cell whose attributes the kernel may now cache
  // (OpenCell::MarkKernelAttrs). Call it for a reply to the kernel only.
  double CellAttrTimeout(const Node& node, uint64_t ino);
  // The same for a cell whose open state the caller holds locked.
  double OpenCellAttrTimeout(const Node& node, OpenCell& c) REQUIRES(c.mu());

  // ---- The store ----
  FsError TableExists(std::string_view table);
  FsError RowHasCells(const Node& row_node, bool* has);
  FsError FamilyHasCells(const Node& family_node, bool* has);
  // The time a read of `node` is made at: `Q@T` and `.at/T` (the earlier of
  // the two when both).
  static std::optional<int64_t> ReadAt(const Node& node) {
    if (node.view == View::kAt) {
      return node.at.has_value() ? std::min(*node.at, node.view_at)
                                 : node.view_at;
    }
    return node.at;
  }
  // The version `cell` names: the newest (as of its read time), and under
  // .versions exactly the one at its T.
  FsError ReadVersion(const Node& cell, CellVersion* out);
  // The same version's timestamp and size, without reading its value (a
  // stat of a 64 MiB cell reads no 64 MiB).
  FsError StatVersion(const Node& cell, VersionStat* out);
  FsError CheckFuture(const Node& node);
  // EIO after a sticky store failure; ENOSPC when committing `bytes` more
  // would take the data directory's free space below the reserve.
  FsError CheckSpace(uint64_t bytes);
  // EACCES unless the caller is root or owns the family.
  FsError CheckSchemaOwner(const Caller& caller, const FamilySettings& s,
                           const Node& node);

  // ---- Invalidation ----
  // The kernel's attributes and pages of `ino` are stale (the store did
  // not change). `await`: the reply waits for it (AwaitInvalidations).
  void InvalidateKernel(uint64_t ino, bool await = true);
  // `ino` may have changed in the store: the kernel's copy and the
  // committed value open readers hold.
  void InvalidateInode(uint64_t ino, bool await = true);
  // Drops the kernel's dentry of `node` (when its directory has an inode).
  void ForgetName(const Node& node, bool await = true);
  // After a change to `cell` the kernel did not see: its inode, and for a
  // `Q@T` write the inode of Q too.
  void InvalidateCell(const Node& cell, uint64_t ino);
  // After a family's settings changed (GC policy, owner, mode): every
  // cached node of that family.
  void InvalidateFamily(const std::string& table, const std::string& family);
  // Waits (bounded) until the notices this thread queued for the request
  // being served were sent, so that its reply comes after them
  // (fs/invalidator.h says why the wait is bounded).
  void AwaitInvalidations();
  // Logs a refused request at the level its errno deserves.
  void LogRefused(const char* op, const std::string& what, const FsError& e);

  // ---- Handles ----
  void AddFile(std::shared_ptr<FileHandle> h, uint64_t* fh);
  std::shared_ptr<FileHandle> FileOf(uint64_t fh);
  void DropFile(FileHandle* h);
  void AddDir(std::unique_ptr<DirHandle> d, uint64_t* fh);
  DirHandle* DirOf(uint64_t fh);
  std::unique_ptr<DirHandle> TakeDir(uint64_t fh);
  std::shared_ptr<FileHandle> NewBufferHandle(uint64_t ino, const Node& node,
                                              FileHandle::Mode mode,
                                              std::string initial, bool fresh);
  // Whether `ino` is a created file released without a commit that the
  // kernel still knows (vanished_).
  bool Vanished(uint64_t ino);
  // The cell of `ino` exists again, or is gone for good: no longer vanished.
  // Returns whether it was.
  bool ForgetVanished(uint64_t ino);
  void MarkVanished(uint64_t ino);

 private:
  FsError ResolveHashedRow(const Node& parent, const ParsedName& parsed,
                           std::string* row);
  FsError ResolveHashedQualifier(const Node& parent, const ParsedName& parsed,
                                 std::string* qualifier);

  // The last notice the request served by this thread queued.
  static thread_local uint64_t last_ticket_;

  // db_ is the store seen through the mount's origin (tagged_), which
  // tells dir_times_ of every write.
  const uint64_t origin_;
  DirTimesCache dir_times_;
  const std::unique_ptr<Bigtable> tagged_;
  Bigtable* const db_;
  const SessionOptions options_;
  const uid_t uid_;
  const gid_t gid_;
  const int64_t start_time_;

  InodeTable inodes_;
  EphemeralDirs ephemeral_;
  OpenCells open_cells_{db_, options_.max_value_bytes};
  LockTable locks_;
  Mtimes mtimes_{db_};
  RequestCounts requests_;
  std::unique_ptr<Invalidator> invalidator_;
  // Writes through other doors (Start to Stop); uses invalidator_.
  std::unique_ptr<ChangeListener> listener_;
  std::chrono::milliseconds name_change_delay_{0};  // test hook (Start)
  // The namespace areas, asked in order (the first that owns a node).
  std::vector<std::unique_ptr<Area>> areas_;
  std::unique_ptr<WritePath> write_path_;

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
  // empty file would exist. Never listed, and never found by a lookup of
  // its name (MakeEntry).
  std::unordered_set<uint64_t> vanished_ GUARDED_BY(handles_mu_);
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_FILESYSTEM_H_
