// `.versions` (DESIGN.md "Versions"): MOUNT/.versions/TABLE/ROW/FAMILY/Q@T,
// every version of every cell, newest first, as read-only files named by
// their timestamp. A view of the data tree (fs/data_tree.h); the one
// change it takes is rm of a version, which removes exactly that version.
#include <errno.h>

#include <memory>
#include <string>

#include "fs/area.h"
#include "fs/data_tree.h"

namespace tabletfs::fs {
namespace {

class VersionsArea : public DataTreeArea {
 public:
  using DataTreeArea::DataTreeArea;

  bool Owns(const Node& node) const override {
    return node.view == View::kVersions;
  }

  // Versions come and go without a kernel operation on them.
  bool Uncached(const Node& node) override {
    (void)node;
    return true;
  }

  FsError CheckWritable(const Node& node, const char* what) override {
    (void)node;
    return FsError::Of(EPERM, std::string(what) +
                                  ": versions under "
                                  ".versions never change; "
                                  "only rm of one works");
  }

  // rm of a version is the one change .versions takes.
  FsError CheckUnlinkIn(const Node& dir, const Node& child) override {
    if (child.kind == NodeKind::kCell) return FsError::Ok();
    return CheckWritable(dir, "unlink");
  }

  // rm .versions/TABLE/ROW/FAMILY/Q@T: exactly that version.
  FsError Unlink(const Node& n, const Caller& caller) override {
    if (n.kind != NodeKind::kCell) return Area::Unlink(n, caller);
    VersionStat v;
    TABLETFS_FS_RETURN_IF_ERROR(fs_->StatVersion(n, &v));
    if (!v.exists) return FsError::Of(ENOENT, "no version " + n.DebugPath());
    RowMutation m(n.row);
    m.DeleteVersion(n.family, n.qualifier, *n.at);
    auto r = db_->Apply(n.table, m, WriteOptions());
    if (!r.ok()) return FsErrorFromStatus(r.status());
    // The main tree's Q (and Q@T) changed without a kernel operation.
    Node plain = n;
    plain.view = View::kCurrent;
    plain.at.reset();
    if (auto ino = inodes_.Find(plain)) fs_->InvalidateInode(*ino);
    plain.at = n.at;
    if (auto ino = inodes_.Find(plain)) fs_->InvalidateInode(*ino);
    return FsError::Ok();
  }
};

}  // namespace

std::unique_ptr<Area> NewVersionsArea(Filesystem* fs) {
  return std::make_unique<VersionsArea>(fs);
}

}  // namespace tabletfs::fs
