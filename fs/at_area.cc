// `.at` (DESIGN.md "Reading the past"): MOUNT/.at/T/TABLE/ROW/FAMILY/Q, the
// data tree as it was at time T, read-only. `.at/` itself lists nothing;
// `.at/T/` holds the tables that existed at T. A view of the data tree
// (fs/data_tree.h) whose reads are made as of T (Filesystem::ReadAt).
#include <errno.h>

#include <memory>
#include <string>

#include "fs/area.h"
#include "fs/data_tree.h"

namespace tabletfs::fs {
namespace {

class AtArea : public DataTreeArea {
 public:
  using DataTreeArea::DataTreeArea;

  bool Owns(const Node& node) const override {
    return node.kind == NodeKind::kAtRoot || node.view == View::kAt;
  }

  // The past as seen from now changes (GC) without a kernel operation.
  bool Uncached(const Node& node) override {
    (void)node;
    return true;
  }

  FsError CheckWritable(const Node& node, const char* what) override {
    return FsError::Of(EROFS, std::string(what) + ": " + node.DebugPath() +
                                  " is a read-only view of the past");
  }

  FsError Stat(const Node& node, uint64_t ino, struct stat* st) override {
    if (node.kind == NodeKind::kAtRoot) {
      fs_->DirStat(ino, S_IFDIR | 0755, fs_->uid(), fs_->gid(), st);
      return FsError::Ok();
    }
    if (node.kind == NodeKind::kTable) {
      // .at/T/ holds only the tables that existed at T.
      auto info = db_->GetTable(node.table);
      if (!info.ok()) return FsErrorFromStatus(info.status());
      if (info->since_micros > node.view_at) {
        return FsError::Of(ENOENT, "table " + node.table +
                                       " did not exist yet at " +
                                       std::to_string(node.view_at));
      }
      fs_->DirStat(ino, S_IFDIR | 0755, fs_->uid(), fs_->gid(), st);
      return FsError::Ok();
    }
    return DataTreeArea::Stat(node, ino, st);
  }
};

}  // namespace

std::unique_ptr<Area> NewAtArea(Filesystem* fs) {
  return std::make_unique<AtArea>(fs);
}

}  // namespace tabletfs::fs
