// `.tabletfs` (DESIGN.md "The filesystem namespace"): MOUNT/.tabletfs/NAME,
// generated read-only files about the store (their text: fs/status_files.h).
// Their content changes without a kernel operation on them: never cached,
// read with direct I/O, the text fixed at open.
#include <errno.h>

#include <memory>
#include <string>

#include "fs/area.h"
#include "fs/status_files.h"

namespace tabletfs::fs {
namespace {

class StatusArea : public Area {
 public:
  using Area::Area;

  bool Owns(const Node& node) const override {
    return node.kind == NodeKind::kStatusDir ||
           node.kind == NodeKind::kStatusFile;
  }

  bool Uncached(const Node& node) override {
    (void)node;
    return true;
  }

  FsError Stat(const Node& node, uint64_t ino, struct stat* st) override {
    if (node.kind == NodeKind::kStatusFile) {
      // Generated content, read with direct I/O: the size is a hint.
      std::string text;
      TABLETFS_FS_RETURN_IF_ERROR(
          StatusFileText(*db_, node.name, &text, &fs_->requests()));
      FileStat(ino, text.size(), st);
      return FsError::Ok();
    }
    fs_->DirStat(ino, S_IFDIR | 0755, fs_->uid(), fs_->gid(), st);
    return FsError::Ok();
  }

  void EntryStat(const DirEntry& de, uint64_t ino, struct stat* st) override {
    if (de.node.kind == NodeKind::kStatusFile) {
      FileStat(ino, 0, st);
      return;
    }
    Area::EntryStat(de, ino, st);
  }

  FsError CheckWritable(const Node& node, const char* what) override {
    return FsError::Of(
        EPERM, std::string(what) + ": " + node.DebugPath() + " is generated");
  }

  FsError Open(uint64_t ino, const Node& n, const OpenRequest& request,
               bool write, Opened* out) override {
    if (n.kind != NodeKind::kStatusFile) {
      return Area::Open(ino, n, request, write, out);
    }
    // The text is fixed at open: one read sees one consistent state.
    std::string text;
    TABLETFS_FS_RETURN_IF_ERROR(
        StatusFileText(*db_, n.name, &text, &fs_->requests()));
    out->handle = fs_->NewBufferHandle(ino, n, FileHandle::Mode::kRead,
                                       std::move(text), false);
    out->direct_io = true;
    return FsError::Ok();
  }

 private:
  // A read-only file of the mount's owner, dated now.
  void FileStat(uint64_t ino, uint64_t size, struct stat* st) {
    fs_->FileStat(ino, FamilySettings(), size, NowMicros(), st);
    st->st_mode = S_IFREG | 0444;
    st->st_uid = fs_->uid();
    st->st_gid = fs_->gid();
  }
};

}  // namespace

std::unique_ptr<Area> NewStatusArea(Filesystem* fs) {
  return std::make_unique<StatusArea>(fs);
}

}  // namespace tabletfs::fs
