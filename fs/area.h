// Area: one namespace area of DESIGN.md "The filesystem namespace" — the
// tables, rows, families and cells (fs/tables_area.cc), `.schema`
// (fs/schema_area.cc), `.versions` (fs/versions_area.cc), `.at`
// (fs/at_area.cc), `.prefix` (fs/prefix_area.cc), `.changes`
// (fs/changes_area.cc), `.stage` and `.commit` (fs/stage_area.cc),
// `.tabletfs` (fs/status_area.cc) — behind one small
// interface. The FUSE callbacks (fs/fuse_ops.cc) decode a request, find the
// node's area (Filesystem::AreaOf, by the Node's kind and view) and reply
// with what it answers; they never switch on a node's kind. Every operation
// has a default that refuses as the namespace refuses what an area does not
// have, so an area implements only what it supports. Reads and writes of
// open files, commits and releases go through the one write path
// (fs/write_path.h); an area whose files buffer their value in the handle
// (`.schema`) gives it CheckWrite() and Commit().
//
// Which node a request is about: Lookup, Stat, Open, Truncate, SetMtime,
// SetOwnership go to the area of the node itself; Mkdir, Rmdir, Unlink,
// Create and Rename to the area of the named child (after the parent's area
// allowed the change: CheckWritable, CheckUnlinkIn, CheckRenameIn).
//
// To add an area: a file implementing this interface with a factory
// declared below, registered in Filesystem's constructor
// (fs/filesystem.cc), its names parsed in fs/path_map.cc.
//
// Thread safety: an area holds no state of its own beyond the Filesystem's
// (fs/filesystem.h), except `.changes` (its live feeds); every method may
// be called from any thread.
#ifndef TABLETFS_FS_AREA_H_
#define TABLETFS_FS_AREA_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "fs/dir_handle.h"
#include "fs/errors.h"
#include "fs/file_handle.h"
#include "fs/filesystem.h"
#include "fs/path_map.h"
#include "store/bigtable.h"

namespace tabletfs::fs {

// chmod and chown: what they set.
struct Ownership {
  std::optional<mode_t> mode;
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
};

class Area {
 public:
  explicit Area(Filesystem* fs);
  virtual ~Area() = default;
  Area(const Area&) = delete;
  Area& operator=(const Area&) = delete;

  // Whether `node` belongs to this area.
  virtual bool Owns(const Node& node) const = 0;

  // ---- Names and attributes ----
  // Existence and attributes of `node` (inode `ino`, 0 when it has none
  // yet). ENOENT when it does not exist.
  virtual FsError Stat(const Node& node, uint64_t ino, struct stat* st) = 0;
  // Existence only (opendir), where that is cheaper than Stat. Default:
  // Stat.
  virtual FsError Exists(const Node& node, uint64_t ino) {
    struct stat st;
    return Stat(node, ino, &st);
  }
  // getattr, through the open descriptor `h` when the kernel names one.
  virtual FsError StatOpen(const Node& node, uint64_t ino, FileHandle* h,
                           struct stat* st) {
    (void)h;
    return Stat(node, ino, st);
  }
  // The attributes of a listed entry (readdirplus), from what the listing
  // read. Default: a directory of the mount's owner.
  virtual void EntryStat(const DirEntry& de, uint64_t ino, struct stat* st);
  // Where the listing of directory `node` comes from when not from the
  // store (DirHandle::NameLister). Default: none.
  virtual DirHandle::NameLister Lister(const Node& node) {
    (void)node;
    return nullptr;
  }
  // Whether the kernel may not cache `node`'s name and attributes (it
  // changes without a kernel operation on it).
  virtual bool Uncached(const Node& node) {
    (void)node;
    return false;
  }

  // ---- Changes ----
  // Refuses changes to `node` or in it (EROFS, EPERM) where the area is
  // read-only. `what` names the operation for the reason.
  virtual FsError CheckWritable(const Node& node, const char* what) {
    (void)node;
    (void)what;
    return FsError::Ok();
  }
  // Whether `child` may be removed from directory `dir` of this area.
  virtual FsError CheckUnlinkIn(const Node& dir, const Node& child) {
    (void)child;
    return CheckWritable(dir, "unlink");
  }
  // Whether a rename may take a name from or into directory `dir`.
  virtual FsError CheckRenameIn(const Node& dir) {
    (void)dir;
    return FsError::Ok();
  }
  virtual FsError Mkdir(const Node& parent, const Node& node,
                        const Caller& caller);
  virtual FsError Rmdir(const Node& node);
  virtual FsError Unlink(const Node& node, const Caller& caller);
  // REQUIRES: both nodes resolved in writable directories.
  virtual FsError Rename(const Node& from, const Node& to, bool noreplace);
  // truncate(2) or ftruncate through `h` (nullptr: by path).
  virtual FsError Truncate(const Node& node, uint64_t ino, uint64_t size,
                           FileHandle* h);
  // utimensat. Default: ignored.
  virtual FsError SetMtime(const Node& node, uint64_t ino, int64_t micros) {
    (void)node;
    (void)ino;
    (void)micros;
    return FsError::Ok();
  }
  // chmod, chown. Default: ignored.
  virtual FsError SetOwnership(const Node& node, const Ownership& o,
                               const Caller& caller) {
    (void)node;
    (void)o;
    (void)caller;
    return FsError::Ok();
  }

  // ---- Files ----
  // create(2) of `node` in `parent`: the entry and the open handle.
  virtual FsError Create(const Node& parent, const Node& node,
                         const OpenRequest& request, Opened* out, Entry* entry);
  // open(2) of `node`; `write`: for writing or truncating.
  virtual FsError Open(uint64_t ino, const Node& node,
                       const OpenRequest& request, bool write, Opened* out);
  // For files that buffer in their handle: each write's bytes before they
  // are taken (the write path refuses the write with the error) ...
  virtual FsError CheckWrite(const Node& node, std::string_view data) {
    (void)node;
    (void)data;
    return FsError::Ok();
  }
  // ... and the commit of the buffer (at close, fsync, release).
  virtual FsError Commit(FileHandle& h) REQUIRES(h.mu());

 protected:
  Filesystem* const fs_;
  Bigtable* const db_;
  // The Filesystem's shared state, under the names its helpers use.
  const SessionOptions& options_;
  InodeTable& inodes_;
  EphemeralDirs& ephemeral_;
  OpenCells& open_cells_;
  Mtimes& mtimes_;
};

// The areas, registered in this order by Filesystem (the first that owns a
// node gets it).
std::unique_ptr<Area> NewSchemaArea(Filesystem* fs);
std::unique_ptr<Area> NewStatusArea(Filesystem* fs);
std::unique_ptr<Area> NewAtArea(Filesystem* fs);
std::unique_ptr<Area> NewPrefixArea(Filesystem* fs);
std::unique_ptr<Area> NewChangesArea(Filesystem* fs);
std::unique_ptr<Area> NewStageArea(Filesystem* fs);
std::unique_ptr<Area> NewVersionsArea(Filesystem* fs);
std::unique_ptr<Area> NewTablesArea(Filesystem* fs);

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_AREA_H_
