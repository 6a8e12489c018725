// `.schema` (DESIGN.md "Schema and access"): MOUNT/.schema/TABLE/FAMILY, one
// file per column family holding its settings as text (fs/schema_text.h).
// mkdir of a table directory creates the table, touch of a family file
// creates the family with defaults owned by its creator, writing the file
// changes its settings at close (each complete line validated as it
// arrives), chmod and chown set the family's mode and owner, rm drops the
// family, and rmdir of a table without families drops the table.
#include <errno.h>
#include <fcntl.h>

#include <memory>
#include <string>
#include <string_view>

#include "fs/area.h"
#include "fs/log.h"
#include "fs/schema_text.h"
#include "fs/write_path.h"

namespace tabletfs::fs {
namespace {

class SchemaArea : public Area {
 public:
  using Area::Area;

  bool Owns(const Node& node) const override {
    return node.kind == NodeKind::kSchemaRoot ||
           node.kind == NodeKind::kSchemaTable ||
           node.kind == NodeKind::kSchemaFamily;
  }

  FsError Stat(const Node& node, uint64_t ino, struct stat* st) override {
    switch (node.kind) {
      case NodeKind::kSchemaTable:
        TABLETFS_FS_RETURN_IF_ERROR(fs_->TableExists(node.table));
        break;
      case NodeKind::kSchemaFamily: {
        auto settings = db_->GetFamily(node.table, node.family);
        if (!settings.ok()) return FsErrorFromStatus(settings.status());
        fs_->FileStat(ino, *settings, FormatFamilySettings(*settings).size(),
                      fs_->start_time(), st);
        return FsError::Ok();
      }
      default:
        break;
    }
    fs_->DirStat(ino, S_IFDIR | 0755, fs_->uid(), fs_->gid(), st);
    return FsError::Ok();
  }

  void EntryStat(const DirEntry& de, uint64_t ino, struct stat* st) override {
    if (de.node.kind == NodeKind::kSchemaFamily && de.settings.has_value()) {
      fs_->FileStat(ino, *de.settings,
                    FormatFamilySettings(*de.settings).size(),
                    fs_->start_time(), st);
      return;
    }
    Area::EntryStat(de, ino, st);
  }

  // Families keep their names.
  FsError CheckRenameIn(const Node& dir) override {
    if (dir.kind == NodeKind::kSchemaTable) {
      return FsError::Of(EPERM, "families are not renamed");
    }
    return FsError::Ok();
  }

  FsError Mkdir(const Node& parent, const Node& n,
                const Caller& caller) override {
    if (n.kind != NodeKind::kSchemaTable) {
      return Area::Mkdir(parent, n, caller);
    }
    // mkdir TABLE and mkdir .schema/TABLE both create the table.
    Status s = db_->CreateTable(n.table);
    if (!s.ok()) return FsErrorFromStatus(s);
    return FsError::Ok();
  }

  FsError Rmdir(const Node& n) override {
    if (n.kind == NodeKind::kSchemaFamily) {
      return FsError::Of(ENOTDIR, n.DebugPath() + " is a file");
    }
    if (n.kind != NodeKind::kSchemaTable) return Area::Rmdir(n);
    // The table without families has no data left: dropping it
    // completes `rm -r .schema/TABLE` (which first removed each family
    // file) as one whole. With families left: ENOTEMPTY, nothing done.
    TABLETFS_FS_RETURN_IF_ERROR(fs_->TableExists(n.table));
    auto families = db_->ListFamilies(n.table);
    if (!families.ok()) return FsErrorFromStatus(families.status());
    if (!families->empty()) {
      return FsError::Of(ENOTEMPTY, n.DebugPath() + " still has " +
                                        std::to_string(families->size()) +
                                        " families");
    }
    FsError e;
    Status s = db_->DeleteTable(n.table);
    if (!s.ok()) e = FsErrorFromStatus(s);
    ephemeral_.RemoveTable(n.table);
    if (e.ok()) {
      Log(LogLevel::kInfo, "rmdir " + n.DebugPath() + ": dropped table " +
                               n.table + " (it had no families left)");
    }
    return e;
  }

  FsError Unlink(const Node& n, const Caller& caller) override {
    if (n.kind != NodeKind::kSchemaFamily) return Area::Unlink(n, caller);
    auto settings = db_->GetFamily(n.table, n.family);
    if (!settings.ok()) return FsErrorFromStatus(settings.status());
    TABLETFS_FS_RETURN_IF_ERROR(fs_->CheckSchemaOwner(caller, *settings, n));
    Status s = db_->DeleteFamily(n.table, n.family);
    if (!s.ok()) return FsErrorFromStatus(s);
    return FsError::Ok();
  }

  FsError Truncate(const Node& n, uint64_t ino, uint64_t size,
                   FileHandle* h) override {
    if (n.kind != NodeKind::kSchemaFamily) {
      return Area::Truncate(n, ino, size, h);
    }
    if (h != nullptr && h->writable()) {
      return fs_->write_path().Truncate(*h, size);
    }
    return FsError::Ok();  // an empty commit changes nothing
  }

  // The family's owner and mode (DESIGN.md "Schema and access").
  FsError SetOwnership(const Node& n, const Ownership& o,
                       const Caller& caller) override {
    if (n.kind != NodeKind::kSchemaFamily) return FsError::Ok();
    auto settings = db_->GetFamily(n.table, n.family);
    if (!settings.ok()) return FsErrorFromStatus(settings.status());
    TABLETFS_FS_RETURN_IF_ERROR(fs_->CheckSchemaOwner(caller, *settings, n));
    FamilySettings next = *settings;
    if (o.mode.has_value()) next.mode = *o.mode & 07777;
    if (o.uid.has_value()) next.owner_uid = *o.uid;
    if (o.gid.has_value()) next.owner_gid = *o.gid;
    Status s = db_->UpdateFamily(n.table, n.family, next);
    if (!s.ok()) return FsErrorFromStatus(s);
    fs_->InvalidateFamily(n.table, n.family);
    return FsError::Ok();
  }

  FsError Create(const Node& parent, const Node& n, const OpenRequest& request,
                 Opened* out, Entry* entry) override {
    if (n.kind != NodeKind::kSchemaFamily) {
      return Area::Create(parent, n, request, out, entry);
    }
    // touch .schema/TABLE/FAMILY creates the family with defaults, owned
    // by the creator.
    FamilySettings s;
    s.owner_uid = request.caller.uid;
    s.owner_gid = request.caller.gid;
    s.mode = 0644;
    Status st = db_->CreateFamily(n.table, n.family, s);
    if (st.IsAlreadyExists() && !(request.flags & O_EXCL)) st = Status::OK();
    if (!st.ok()) return FsErrorFromStatus(st);
    auto settings = db_->GetFamily(n.table, n.family);
    if (!settings.ok()) return FsErrorFromStatus(settings.status());
    TABLETFS_FS_RETURN_IF_ERROR(fs_->MakeEntry(n, entry));
    std::string text = (request.flags & O_TRUNC)
                           ? std::string()
                           : FormatFamilySettings(*settings);
    out->handle = fs_->NewBufferHandle(entry->ino, n, FileHandle::Mode::kWrite,
                                       std::move(text), false);
    out->direct_io = true;
    return FsError::Ok();
  }

  FsError Open(uint64_t ino, const Node& n, const OpenRequest& request,
               bool write, Opened* out) override {
    if (n.kind != NodeKind::kSchemaFamily) {
      return Area::Open(ino, n, request, write, out);
    }
    auto settings = db_->GetFamily(n.table, n.family);
    if (!settings.ok()) return FsErrorFromStatus(settings.status());
    if (write) {
      TABLETFS_FS_RETURN_IF_ERROR(
          fs_->CheckSchemaOwner(request.caller, *settings, n));
    }
    bool trunc = write && (request.flags & O_TRUNC);
    out->handle = fs_->NewBufferHandle(
        ino, n, write ? FileHandle::Mode::kWrite : FileHandle::Mode::kRead,
        trunc ? std::string() : FormatFamilySettings(*settings), false);
    out->direct_io = true;
    return FsError::Ok();
  }

  // Each complete line is validated as it arrives.
  FsError CheckWrite(const Node& node, std::string_view data) override {
    (void)node;
    FsError e;
    size_t start = 0;
    for (size_t nl = data.find('\n'); nl != std::string_view::npos && e.ok();
         nl = data.find('\n', start)) {
      e = ValidateSettingsLine(data.substr(start, nl - start));
      start = nl + 1;
    }
    return e;
  }

  FsError Commit(FileHandle& h) REQUIRES(h.mu()) override {
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
      fs_->InvalidateFamily(n.table, n.family);
    }
    h.Committed(0);
    fs_->InvalidateInode(h.ino());
    return FsError::Ok();
  }
};

}  // namespace

std::unique_ptr<Area> NewSchemaArea(Filesystem* fs) {
  return std::make_unique<SchemaArea>(fs);
}

}  // namespace tabletfs::fs
