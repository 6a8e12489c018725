#include "fs/stage.h"

#include <errno.h>

#include <algorithm>

#include "fs/names.h"
#include "store/util/hash.h"

namespace tabletfs::fs {
namespace {

FsError NotStaged(const Node& n) {
  return FsError::Of(ENOENT, "nothing staged at " + n.DebugPath());
}

}  // namespace

Stage::Row* Stage::FindRow(const Node& n) {
  auto it = rows_.find(RowKey(n.table, n.row));
  return it == rows_.end() ? nullptr : &it->second;
}

Stage::Family* Stage::FindFamily(const Node& n) {
  Row* r = FindRow(n);
  if (r == nullptr) return nullptr;
  auto it = r->families.find(n.family);
  return it == r->families.end() ? nullptr : &it->second;
}

Stage::Cell* Stage::FindCell(const Node& n) {
  Family* f = FindFamily(n);
  if (f == nullptr) return nullptr;
  auto it = f->cells.find(n.qualifier);
  return it == f->cells.end() ? nullptr : &it->second;
}

FsError Stage::Find(const Node& n, Found* out) {
  MutexLock lock(&mu_);
  *out = Found();
  Row* r = FindRow(n);
  switch (n.kind) {
    case NodeKind::kStageRow:
      if (r == nullptr) return NotStaged(n);
      *out = Found{true, 0, r->made};
      return FsError::Ok();
    case NodeKind::kStageFamily: {
      Family* f = FindFamily(n);
      if (f == nullptr) return NotStaged(n);
      *out = Found{true, 0, f->made};
      return FsError::Ok();
    }
    case NodeKind::kStageCell: {
      const Cell* c = FindCell(n);
      if (c == nullptr) return NotStaged(n);
      *out = Found{false, c->value.size(), c->set_mtime.value_or(c->staged_at)};
      return FsError::Ok();
    }
    case NodeKind::kStageRowMark: {
      bool has = false;
      if (r != nullptr) {
        if (!n.family.empty()) {
          has = r->deleted_families.count(n.family) != 0;
        } else {
          has = n.name == kDeleteMark ? r->delete_row : r->if_unchanged;
        }
      }
      if (!has) return NotStaged(n);
      *out = Found{false, 0, r->made};
      return FsError::Ok();
    }
    case NodeKind::kStageCellMark: {
      Family* f = FindFamily(n);
      if (f == nullptr || f->deleted.count(n.qualifier) == 0) {
        return NotStaged(n);
      }
      *out = Found{false, 0, f->made};
      return FsError::Ok();
    }
    default:
      *out = Found{true, 0, 0};
      return FsError::Ok();
  }
}

FsError Stage::Make(const Node& n, uint64_t fingerprint, int64_t now) {
  MutexLock lock(&mu_);
  if (n.kind == NodeKind::kStageRow) {
    Row& r = rows_[RowKey(n.table, n.row)];
    if (r.id != 0) return FsError::Of(EEXIST, n.DebugPath() + " is staged");
    r.id = next_id_++;
    r.made = now;
    r.fingerprint = fingerprint;
    return FsError::Ok();
  }
  Row* r = FindRow(n);
  if (r == nullptr) return NotStaged(n.Parent());
  if (!r->families.emplace(n.family, Family{now, {}, {}}).second) {
    return FsError::Of(EEXIST, n.DebugPath() + " is staged");
  }
  return FsError::Ok();
}

FsError Stage::Put(const Node& n, std::string value, int64_t now,
                   bool keep_mtime) {
  MutexLock lock(&mu_);
  Row* r = FindRow(n);
  if (r == nullptr) {
    return FsError::Of(ENOENT, "the staged row of " + n.DebugPath() +
                                   " was committed or aborted meanwhile");
  }
  if (n.kind == NodeKind::kStageRowMark) {
    if (!n.family.empty()) {
      r->deleted_families.insert(n.family);
    } else if (n.name == kDeleteMark) {
      r->delete_row = true;
    } else {
      r->if_unchanged = true;
    }
    return FsError::Ok();
  }
  Family* f = FindFamily(n);
  if (f == nullptr) {
    return FsError::Of(
        ENOENT, "the staged family directory of " + n.DebugPath() + " is gone");
  }
  if (n.kind == NodeKind::kStageCellMark) {
    if (auto it = f->cells.find(n.qualifier); it != f->cells.end()) {
      bytes_ -= it->second.value.size();
      f->cells.erase(it);
    }
    f->deleted.insert(n.qualifier);
    return FsError::Ok();
  }
  Cell& c = f->cells[n.qualifier];
  const uint64_t others = bytes_ - c.value.size();
  if (others + value.size() > kMaxBytes) {
    if (c.staged_at == 0) f->cells.erase(n.qualifier);
    return FsError::Of(ENOSPC, "the stage holds at most " +
                                   std::to_string(kMaxBytes >> 20) +
                                   " MiB; commit or abort staged rows first");
  }
  bytes_ = others + value.size();
  c.value = std::move(value);
  c.staged_at = now;
  if (!keep_mtime) c.set_mtime.reset();
  f->deleted.erase(n.qualifier);
  return FsError::Ok();
}

FsError Stage::Remove(const Node& n) {
  MutexLock lock(&mu_);
  Row* r = FindRow(n);
  if (r == nullptr) return NotStaged(n);
  switch (n.kind) {
    case NodeKind::kStageRow:
      if (!r->Empty()) {
        return FsError::Of(ENOTEMPTY, n.DebugPath() + " still stages changes");
      }
      rows_.erase(RowKey(n.table, n.row));
      handles_.erase(RowKey(n.table, n.row));
      return FsError::Ok();
    case NodeKind::kStageRowMark: {
      bool* flag = n.name == kDeleteMark ? &r->delete_row : &r->if_unchanged;
      if (!n.family.empty()) {
        if (r->deleted_families.erase(n.family) == 0) return NotStaged(n);
        return FsError::Ok();
      }
      if (!*flag) return NotStaged(n);
      *flag = false;
      return FsError::Ok();
    }
    default:
      break;
  }
  Family* f = FindFamily(n);
  if (f == nullptr) return NotStaged(n);
  switch (n.kind) {
    case NodeKind::kStageFamily:
      if (!f->cells.empty() || !f->deleted.empty()) {
        return FsError::Of(ENOTEMPTY, n.DebugPath() + " still stages changes");
      }
      r->families.erase(n.family);
      return FsError::Ok();
    case NodeKind::kStageCell: {
      auto it = f->cells.find(n.qualifier);
      if (it == f->cells.end()) return NotStaged(n);
      bytes_ -= it->second.value.size();
      f->cells.erase(it);
      return FsError::Ok();
    }
    case NodeKind::kStageCellMark:
      if (f->deleted.erase(n.qualifier) == 0) return NotStaged(n);
      return FsError::Ok();
    default:
      return FsError::Of(EPERM, n.DebugPath() + " cannot be removed");
  }
}

FsError Stage::Rename(const Node& from, const Node& to) {
  if (from.table != to.table || from.row != to.row) {
    return FsError::Of(EXDEV, "a staged cell moves only within its row");
  }
  MutexLock lock(&mu_);
  Family* src = FindFamily(from);
  Family* dst = FindFamily(to);
  if (src == nullptr) return NotStaged(from);
  if (dst == nullptr) return NotStaged(to.Parent());
  auto it = src->cells.find(from.qualifier);
  if (it == src->cells.end()) return NotStaged(from);
  if (from.family == to.family && from.qualifier == to.qualifier) {
    return FsError::Ok();
  }
  Cell moved = std::move(it->second);
  src->cells.erase(it);
  if (auto old = dst->cells.find(to.qualifier); old != dst->cells.end()) {
    bytes_ -= old->second.value.size();
  }
  dst->cells[to.qualifier] = std::move(moved);
  dst->deleted.erase(to.qualifier);
  return FsError::Ok();
}

FsError Stage::SetMtime(const Node& n, int64_t micros) {
  MutexLock lock(&mu_);
  Cell* c = FindCell(n);
  if (c == nullptr) return NotStaged(n);
  c->set_mtime = micros;
  return FsError::Ok();
}

FsError Stage::Truncate(const Node& n, uint64_t size, int64_t now) {
  std::string value;
  TABLETFS_FS_RETURN_IF_ERROR(Value(n, &value));
  value.resize(size);
  return Put(n, std::move(value), now);
}

FsError Stage::Value(const Node& n, std::string* out) {
  MutexLock lock(&mu_);
  const Cell* c = FindCell(n);
  if (c == nullptr) return NotStaged(n);
  *out = c->value;
  return FsError::Ok();
}

std::vector<std::pair<std::string, Node>> Stage::List(const Node& dir) {
  std::vector<std::pair<std::string, Node>> out;
  // A child of `dir` of `kind`, its other fields set by the caller.
  auto child = [&dir](NodeKind kind) {
    Node n;
    n.kind = kind;
    n.table = dir.table;
    n.row = dir.row;
    n.family = dir.family;
    return n;
  };
  auto add = [&out](Node n) { out.emplace_back(ListedName(n), std::move(n)); };
  MutexLock lock(&mu_);
  switch (dir.kind) {
    case NodeKind::kStageRoot:
      for (const auto& entry : rows_) {
        if (!out.empty() && out.back().second.table == entry.first.first) {
          continue;
        }
        Node n = child(NodeKind::kStageTable);
        n.table = entry.first.first;
        add(std::move(n));
      }
      break;
    case NodeKind::kStageTable:
      for (auto it = rows_.lower_bound(RowKey(dir.table, ""));
           it != rows_.end() && it->first.first == dir.table; ++it) {
        Node n = child(NodeKind::kStageRow);
        n.row = it->first.second;
        add(std::move(n));
      }
      break;
    case NodeKind::kStageRow: {
      Row* r = FindRow(dir);
      if (r == nullptr) break;
      for (const auto& entry : r->families) {
        Node n = child(NodeKind::kStageFamily);
        n.family = entry.first;
        add(std::move(n));
      }
      Node mark = child(NodeKind::kStageRowMark);
      mark.name = std::string(kDeleteMark);
      for (const std::string& family : r->deleted_families) {
        mark.family = family;
        add(mark);
      }
      mark.family.clear();
      if (r->delete_row) add(mark);
      if (r->if_unchanged) {
        mark.name = std::string(kIfUnchangedMark);
        add(mark);
      }
      break;
    }
    case NodeKind::kStageFamily: {
      Family* f = FindFamily(dir);
      if (f == nullptr) break;
      for (const auto& entry : f->cells) {
        Node n = child(NodeKind::kStageCell);
        n.qualifier = entry.first;
        add(std::move(n));
      }
      for (const std::string& qualifier : f->deleted) {
        Node n = child(NodeKind::kStageCellMark);
        n.qualifier = qualifier;
        n.name = std::string(kDeleteMark);
        add(std::move(n));
      }
      break;
    }
    default:
      break;
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

FsError Stage::Copy(const std::string& table, const std::string& row,
                    Row* out) {
  MutexLock lock(&mu_);
  auto it = rows_.find(RowKey(table, row));
  if (it == rows_.end()) {
    return FsError::Of(ENOENT,
                       "no staged row " + EncodeName(row) + " of " + table);
  }
  *out = it->second;
  return FsError::Ok();
}

void Stage::Erase(const std::string& table, const std::string& row,
                  uint64_t id) {
  MutexLock lock(&mu_);
  auto it = rows_.find(RowKey(table, row));
  if (it == rows_.end() || it->second.id != id) return;
  for (const auto& [name, f] : it->second.families) {
    for (const auto& [q, c] : f.cells) bytes_ -= c.value.size();
  }
  rows_.erase(it);
  handles_.erase(RowKey(table, row));
}

void Stage::Track(const Node& node, std::weak_ptr<FileHandle> h) {
  MutexLock lock(&mu_);
  auto& list = handles_[RowKey(node.table, node.row)];
  std::erase_if(list, [](const auto& w) { return w.expired(); });
  list.push_back(std::move(h));
}

std::vector<std::shared_ptr<FileHandle>> Stage::Handles(
    const std::string& table, const std::string& row) {
  MutexLock lock(&mu_);
  std::vector<std::shared_ptr<FileHandle>> out;
  auto it = handles_.find(RowKey(table, row));
  if (it == handles_.end()) return out;
  for (const auto& w : it->second) {
    if (auto h = w.lock()) out.push_back(std::move(h));
  }
  return out;
}

uint64_t Stage::bytes() {
  MutexLock lock(&mu_);
  return bytes_;
}

RowMutation StagedMutation(const std::string& row, const Stage::Row& staged,
                           int64_t timestamp) {
  RowMutation m(row);
  if (staged.delete_row) m.DeleteRow();
  for (const std::string& family : staged.deleted_families) {
    m.DeleteFamily(family);
  }
  for (const auto& [family, f] : staged.families) {
    for (const std::string& qualifier : f.deleted) {
      m.DeleteCell(family, qualifier);
    }
  }
  for (const auto& [family, f] : staged.families) {
    for (const auto& [qualifier, c] : f.cells) {
      if (timestamp == kServerTimestamp) {
        m.SetCell(family, qualifier, c.value);
      } else {
        m.SetCell(family, qualifier, timestamp, c.value);
      }
    }
  }
  return m;
}

uint64_t RowFingerprint(const tabletfs::Row& row) {
  uint64_t h = Hash64(row.key);
  for (const tabletfs::Cell& c : row.cells) {
    std::string part;
    part.append(c.family).push_back('\0');
    part.append(c.qualifier).push_back('\0');
    part.append(std::to_string(c.timestamp)).push_back('\0');
    part.append(std::to_string(Hash64(c.value)));
    h = Hash64(part, h);
  }
  return h;
}

}  // namespace tabletfs::fs
