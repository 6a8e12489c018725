#include "fs/area.h"

#include <errno.h>

#include <string>

namespace tabletfs::fs {

Area::Area(Filesystem* fs)
    : fs_(fs),
      db_(fs->db()),
      options_(fs->options()),
      inodes_(fs->inodes()),
      ephemeral_(fs->ephemeral()),
      open_cells_(fs->open_cells()),
      mtimes_(fs->mtimes()) {}

void Area::EntryStat(const DirEntry& de, uint64_t ino, struct stat* st) {
  (void)de;
  fs_->DirStat(ino, S_IFDIR | 0755, fs_->uid(), fs_->gid(), st);
}

// The defaults refuse as the namespace refuses what an area does not have.

FsError Area::Mkdir(const Node& parent, const Node& node,
                    const Caller& caller) {
  (void)node;
  (void)caller;
  return FsError::Of(EPERM,
                     "directories cannot be made in " + parent.DebugPath());
}

FsError Area::Rmdir(const Node& node) {
  return FsError::Of(EPERM, node.DebugPath() + " cannot be removed");
}

FsError Area::Unlink(const Node& node, const Caller& caller) {
  (void)caller;
  return FsError::Of(EISDIR, node.DebugPath() + " is a directory");
}

FsError Area::Rename(const Node& from, const Node& to, bool noreplace) {
  (void)to;
  (void)noreplace;
  return FsError::Of(EPERM,
                     "only cells can be renamed, not " + from.DebugPath());
}

FsError Area::Truncate(const Node& node, uint64_t ino, uint64_t size,
                       FileHandle* h) {
  (void)ino;
  (void)size;
  (void)h;
  return FsError::Of(EISDIR, node.DebugPath() + " is a directory");
}

FsError Area::Create(const Node& parent, const Node& node,
                     const OpenRequest& request, Opened* out, Entry* entry) {
  (void)node;
  (void)request;
  (void)out;
  (void)entry;
  return FsError::Of(EPERM, "files cannot be made in " + parent.DebugPath());
}

FsError Area::Open(uint64_t ino, const Node& node, const OpenRequest& request,
                   bool write, Opened* out) {
  (void)ino;
  (void)request;
  (void)write;
  (void)out;
  return FsError::Of(EISDIR, node.DebugPath() + " is a directory");
}

FsError Area::Commit(FileHandle& h) {
  return FsError::Of(EPERM, h.node().DebugPath() + " is not written");
}

}  // namespace tabletfs::fs
