// `.changes` (DESIGN.md "Change feed", issue 21): MOUNT/.changes/TABLE, a
// read-only file whose text is one JSON line per change committed to TABLE
// while it is open (fs/change_feed.h), so `tail -f MOUNT/.changes/TABLE`
// follows a table's writes from every door; MOUNT/.changes/TABLE@T starts
// with the changes committed since T that the store still holds (older:
// ENODATA). `.changes/` lists nothing.
// Never cached by the kernel (its size grows without a kernel operation),
// read with direct I/O.
//
// The live feeds are this area's own state (the exception to fs/area.h's
// rule): they start and stop with their readers, and nothing else of the
// filesystem needs them.
#include <errno.h>

#include <memory>
#include <string>

#include "fs/area.h"
#include "fs/change_feed.h"

namespace tabletfs::fs {
namespace {

class ChangesArea : public Area {
 public:
  explicit ChangesArea(Filesystem* fs) : Area(fs), feeds_(db_) {}

  bool Owns(const Node& node) const override {
    return node.kind == NodeKind::kChangesRoot ||
           node.kind == NodeKind::kChangesFile;
  }

  bool Uncached(const Node& node) override {
    (void)node;
    return true;
  }

  FsError CheckWritable(const Node& node, const char* what) override {
    return FsError::Of(EROFS, std::string(what) + ": " + node.DebugPath() +
                                  " is a read-only feed of changes");
  }

  FsError Stat(const Node& node, uint64_t ino, struct stat* st) override {
    if (node.kind == NodeKind::kChangesRoot) {
      fs_->DirStat(ino, S_IFDIR | 0555, fs_->uid(), fs_->gid(), st);
      return FsError::Ok();
    }
    TABLETFS_FS_RETURN_IF_ERROR(fs_->TableExists(node.table));
    // The feed's text so far (none while nobody reads it).
    uint64_t size = 0;
    int64_t mtime = fs_->start_time();
    if (std::shared_ptr<ChangeFeed> feed = feeds_.Find(node.table, node.at)) {
      size = feed->size();
      mtime = feed->mtime();
    }
    fs_->FileStat(ino, FamilySettings(), size, mtime, st);
    st->st_mode = S_IFREG | 0444;
    st->st_uid = fs_->uid();
    st->st_gid = fs_->gid();
    return FsError::Ok();
  }

  FsError Open(uint64_t ino, const Node& n, const OpenRequest& request,
               bool write, Opened* out) override {
    if (n.kind != NodeKind::kChangesFile) {
      return Area::Open(ino, n, request, write, out);
    }
    if (write) return CheckWritable(n, "open for writing");
    TABLETFS_FS_RETURN_IF_ERROR(fs_->TableExists(n.table));
    std::shared_ptr<ChangeFeed> feed;
    TABLETFS_FS_RETURN_IF_ERROR(feeds_.Open(n.table, n.at, &feed));
    out->handle =
        fs_->NewBufferHandle(ino, n, FileHandle::Mode::kRead, {}, false);
    out->handle->set_source(std::move(feed));
    out->direct_io = true;
    return FsError::Ok();
  }

 private:
  ChangeFeeds feeds_;
};

}  // namespace

std::unique_ptr<Area> NewChangesArea(Filesystem* fs) {
  return std::make_unique<ChangesArea>(fs);
}

}  // namespace tabletfs::fs
