#include "fs/dir_handle.h"

#include <errno.h>

#include <algorithm>
#include <chrono>
#include <iterator>

#include "fs/names.h"
#include "store/util/hash.h"

namespace tabletfs::fs {
namespace {

void SortByName(std::vector<DirEntry>* names) {
  std::sort(
      names->begin(), names->end(),
      [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
}

// The exclusive end of the scan range holding exactly `row`.
std::string RowEnd(std::string_view row) {
  std::string end(row);
  end.push_back('\0');
  return end;
}

// DirTimes with `newest` whose entries are `names` (in any order).
DirTimes Fingerprint(std::vector<std::string> names,
                     std::optional<int64_t> newest) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  uint64_t hash = 0;
  for (const std::string& name : names) {
    hash = Hash64(name, hash ^ name.size());
  }
  DirTimes t;
  t.newest = newest;
  t.entries = static_cast<int64_t>(hash >> 1);
  return t;
}

}  // namespace

DirHandle::DirHandle(Bigtable* db, EphemeralDirs* ephemeral, Node dir)
    : db_(db), ephemeral_(ephemeral), dir_(std::move(dir)) {}

void DirHandle::Remember(const Position& pos) {
  remembered_.push_back(pos);
  while (remembered_.size() > kRememberedEntries) remembered_.pop_front();
}

FsError DirHandle::Reposition(const Position& pos) {
  last_ = pos;
  scanner_positioned_ = false;
  peeked_.reset();
  if (pos.offset == 0) {
    // A new pass (opendir or rewinddir) sees the current state.
    remembered_.clear();
    names_loaded_ = false;
    scanner_.reset();
  }
  return FsError::Ok();
}

Node DirHandle::ChildBase(NodeKind kind) const {
  Node n;
  n.kind = kind;
  n.table = dir_.table;
  n.row = dir_.row;
  n.family = dir_.family;
  n.view = dir_.view;
  n.view_at = dir_.view_at;
  n.view_prefix = dir_.view_prefix;
  return n;
}

ReadOptions DirHandle::ViewReadOptions() const {
  ReadOptions ro;
  ro.max_versions = dir_.view == View::kVersions ? 0 : 1;
  if (dir_.view == View::kAt) ro.at = dir_.view_at;
  return ro;
}

FsError DirHandle::Read(off_t offset,
                        const std::function<bool(const DirEntry&)>& emit) {
  MutexLock lock(&mu_);
  if (offset == 0) {
    TABLETFS_FS_RETURN_IF_ERROR(Reposition(Position()));
  } else if (offset != last_.offset) {
    auto it = std::find_if(
        remembered_.begin(), remembered_.end(),
        [offset](const Position& p) { return p.offset == offset; });
    if (it != remembered_.end()) {
      // The stream after this offset is produced again, and the offsets
      // after it go to the entries produced now: when directories made by
      // mkdir or files still being created came or went meanwhile, they
      // name other entries than before. The kernel resumes from what it
      // passed on last, so only the new ones may be found again.
      Position pos = *it;
      remembered_.erase(std::next(it), remembered_.end());
      TABLETFS_FS_RETURN_IF_ERROR(Reposition(pos));
    } else if (offset > 0 && offset <= max_offset_) {
      // seekdir() to a telldir() older than the remembered window: a new
      // pass from the start, skipping that many entries. Exact when the
      // directory did not change since; never an error.
      TABLETFS_FS_RETURN_IF_ERROR(Reposition(Position()));
      while (last_.offset < offset) {
        DirEntry e;
        Position next;
        bool end = false;
        TABLETFS_FS_RETURN_IF_ERROR(Step(&e, &next, &end));
        if (end) break;
        last_ = std::move(next);
        Remember(last_);
      }
    } else {
      return FsError::Of(EINVAL, "readdir of " + dir_.DebugPath() +
                                     ": offset " + std::to_string(offset) +
                                     " was never returned");
    }
  }
  for (;;) {
    DirEntry e;
    Position next;
    bool end = false;
    TABLETFS_FS_RETURN_IF_ERROR(Step(&e, &next, &end));
    if (end) return FsError::Ok();
    if (!emit(e)) return FsError::Ok();
    last_ = std::move(next);
    max_offset_ = std::max(max_offset_, last_.offset);
    Remember(last_);
  }
}

FsError DirHandle::Step(DirEntry* out, Position* next, bool* end) {
  DirEntry& e = *out;
  next->offset = last_.offset + 1;
  if (last_.offset == 0) {
    e.name = ".";
    e.is_dot = true;
    next->phase = Phase::kDot;
  } else if (last_.phase == Phase::kDot) {
    e.name = "..";
    e.is_dot = true;
    next->phase = Phase::kDotDot;
  } else {
    std::optional<DirEntry> entry;
    TABLETFS_FS_RETURN_IF_ERROR(NextEntry(&entry));
    if (!entry.has_value()) {
      *end = true;
      return FsError::Ok();
    }
    e = std::move(*entry);
    next->phase = Phase::kEntries;
    // Names resume by name (NextEntry's names path): a lister's, and the
    // status files; the store's entries by their node's own part.
    if (lister_ || e.node.kind == NodeKind::kStatusFile) {
      next->key = e.name;
    } else {
      switch (e.node.kind) {
        case NodeKind::kTable:
        case NodeKind::kSchemaTable:
          next->key = e.node.table;
          break;
        case NodeKind::kRow:
          next->key = e.node.row;
          break;
        case NodeKind::kFamily:
        case NodeKind::kSchemaFamily:
          next->key = e.node.family;
          break;
        default:
          next->key = e.node.qualifier;
          next->timestamp = e.node.at.value_or(0);
          break;
      }
    }
  }
  e.offset = next->offset;
  return FsError::Ok();
}

FsError DirHandle::LoadNames() {
  names_.clear();
  if (lister_) {
    TABLETFS_FS_RETURN_IF_ERROR(lister_(&names_));
    SortByName(&names_);
    names_loaded_ = true;
    return FsError::Ok();
  }
  switch (dir_.kind) {
    case NodeKind::kRoot:
    case NodeKind::kSchemaRoot: {
      auto tables = db_->ListTables();
      if (!tables.ok()) return FsErrorFromStatus(tables.status());
      for (const std::string& t : *tables) {
        if (t == kReservedTableName) continue;
        if (dir_.view == View::kAt) {
          // .at/T/ lists only the tables that existed at T.
          auto info = db_->GetTable(t);
          if (info.status().IsNotFound()) continue;  // dropped meanwhile
          if (!info.ok()) return FsErrorFromStatus(info.status());
          if (info->since_micros > dir_.view_at) continue;
        }
        DirEntry e;
        e.name = t;
        e.node =
            ChildBase(dir_.kind == NodeKind::kRoot ? NodeKind::kTable
                                                   : NodeKind::kSchemaTable);
        e.node.table = t;
        if (dir_.kind == NodeKind::kRoot) {
          // The table's mtime, as Stat gives it (bounded: ScanTableTimes).
          ScanOptions so;
          so.read = ViewReadOptions();
          so.read.max_versions = 1;
          so.content = ScanContent::kNoValues;
          auto scanner = db_->NewScanner(t, so);
          if (scanner.status().IsNotFound()) continue;  // dropped meanwhile
          if (!scanner.ok()) return FsErrorFromStatus(scanner.status());
          (*scanner)->SeekToFirst();
          DirTimes times = ScanTableTimes(
              **scanner, dir_.view == View::kCurrent ? ephemeral_ : nullptr, t);
          if (!(*scanner)->status().ok()) {
            return FsErrorFromStatus((*scanner)->status());
          }
          e.has_timestamp = times.newest.has_value();
          e.timestamp = times.newest.value_or(0);
          e.entries = times.entries;
        }
        names_.push_back(std::move(e));
      }
      break;
    }
    case NodeKind::kStatusDir:
      for (std::string_view name : kStatusFileNames) {
        DirEntry e;
        e.name = std::string(name);
        e.node.kind = NodeKind::kStatusFile;
        e.node.name = e.name;
        names_.push_back(std::move(e));
      }
      break;
    case NodeKind::kSchemaTable: {
      auto families = db_->ListFamilies(dir_.table);
      if (!families.ok()) return FsErrorFromStatus(families.status());
      for (const FamilyInfo& f : *families) {
        DirEntry e;
        e.name = f.name;
        e.node.kind = NodeKind::kSchemaFamily;
        e.node.table = dir_.table;
        e.node.family = f.name;
        e.settings = f.settings;
        names_.push_back(std::move(e));
      }
      break;
    }
    case NodeKind::kRow: {
      auto families = db_->ListFamilies(dir_.table);
      if (!families.ok()) return FsErrorFromStatus(families.status());
      ScanOptions so;
      so.read = ViewReadOptions();
      so.read.max_versions = 1;
      so.content = ScanContent::kNoValues;
      so.start_row = dir_.row;
      so.end_row = RowEnd(dir_.row);
      auto scanner = db_->NewScanner(dir_.table, so);
      if (!scanner.ok()) return FsErrorFromStatus(scanner.status());
      std::vector<std::string> ephemeral;
      if (dir_.view == View::kCurrent) {
        ephemeral = ephemeral_->Families(dir_.table, dir_.row);
      }
      for (const FamilyInfo& f : *families) {
        (*scanner)->Seek(dir_.row, f.name);
        DirTimes times = ScanDirTimes(**scanner, dir_.row, f.name);
        bool has_cells = times.newest.has_value();
        if (!(*scanner)->status().ok()) {
          return FsErrorFromStatus((*scanner)->status());
        }
        if (!has_cells && std::find(ephemeral.begin(), ephemeral.end(),
                                    f.name) == ephemeral.end()) {
          continue;
        }
        DirEntry e;
        e.name = f.name;
        e.node = ChildBase(NodeKind::kFamily);
        e.node.family = f.name;
        e.settings = f.settings;
        e.has_timestamp = has_cells;
        e.timestamp = times.newest.value_or(0);
        e.entries = times.entries;
        names_.push_back(std::move(e));
      }
      break;
    }
    default:
      break;
  }
  SortByName(&names_);
  names_loaded_ = true;
  return FsError::Ok();
}

FsError DirHandle::NextEntry(std::optional<DirEntry>* out) {
  out->reset();
  switch (dir_.kind) {
    case NodeKind::kTable:
      return NextRowEntry(out);
    case NodeKind::kFamily:
      return NextQualifierEntry(out);
    case NodeKind::kCell:
    case NodeKind::kSchemaFamily:
    case NodeKind::kStatusFile:
    case NodeKind::kChangesFile:
      return FsError::Of(ENOTDIR, dir_.DebugPath() + " is a file");
    case NodeKind::kAtRoot:
    case NodeKind::kPrefixRoot:
    case NodeKind::kPrefixTable:
    case NodeKind::kChangesRoot:
      return FsError::Ok();  // .at/, .prefix/, .prefix/TABLE/, .changes/
    default:
      break;
  }
  if (!names_loaded_) TABLETFS_FS_RETURN_IF_ERROR(LoadNames());
  // Names are unique and sorted: the first one after the last key.
  auto it = names_.begin();
  if (last_.phase == Phase::kEntries) {
    it = std::upper_bound(
        names_.begin(), names_.end(), last_.key,
        [](const std::string& k, const DirEntry& e) { return k < e.name; });
  }
  if (it != names_.end()) *out = *it;
  return FsError::Ok();
}

uint64_t QualifierHash(std::string_view qualifier) {
  return Hash64(qualifier, qualifier.size());
}

DirTimes ScanDirTimes(Scanner& s, std::string_view row, std::string_view family,
                      std::vector<std::string> made) {
  DirTimes t;
  uint64_t hash = 0;
  std::string last;  // the last entry name seen
  bool any = false;
  while (s.Valid() && s.row() == row &&
         (family.empty() || s.family() == family)) {
    t.newest = std::max(t.newest.value_or(s.timestamp()), s.timestamp());
    std::string_view name = family.empty() ? s.family() : s.qualifier();
    if (!any || name != last) {
      last = std::string(name);
      any = true;
      if (family.empty()) {
        made.push_back(last);  // a row's few families: hashed sorted below
      } else {
        hash ^= QualifierHash(last);
      }
    }
    s.NextColumn();
  }
  if (family.empty()) return Fingerprint(std::move(made), t.newest);
  t.entries = static_cast<int64_t>(hash >> 1);
  return t;
}

DirTimes ScanTableTimes(Scanner& s, EphemeralDirs* made,
                        std::string_view table) {
  std::optional<int64_t> newest;
  std::vector<std::string> rows;
  size_t cells = 0;
  bool cut = false;  // rows past the ones read exist
  while (s.Valid()) {
    if (cells == kTableTimesCells) {
      cut = true;
      break;
    }
    if (rows.empty() || s.row() != rows.back()) {
      if (rows.size() == kTableTimesRows) {
        cut = true;
        break;
      }
      rows.emplace_back(s.row());
    }
    newest = std::max(newest.value_or(s.timestamp()), s.timestamp());
    cells++;
    s.NextColumn();
  }
  if (made != nullptr) {
    // The rows made by mkdir within the same first part of the table.
    std::optional<std::string> row = made->NextRow(table, {}, false);
    for (size_t n = 0; row.has_value() && n < kTableTimesRows; n++) {
      if (cut && !rows.empty() && *row > rows.back()) break;
      rows.push_back(*row);
      row = made->NextRow(table, rows.back(), true);
    }
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    if (rows.size() > kTableTimesRows) rows.resize(kTableTimesRows);
  }
  return Fingerprint(std::move(rows), newest);
}

DirTimes RootDirTimes(const std::vector<std::string>& tables) {
  return Fingerprint(tables, std::nullopt);
}

FsError DirHandle::NextRowEntry(std::optional<DirEntry>* out) {
  const bool after = last_.phase == Phase::kEntries;
  if (peeked_.has_value() && scanner_positioned_ &&
      peeked_after_ == last_.offset) {
    *out = *peeked_;
    return FsError::Ok();
  }
  peeked_.reset();
  if (!scanner_) {
    ScanOptions so;
    so.read = ViewReadOptions();
    so.read.max_versions = 1;
    // Row names and times: one streamed read without values.
    so.content = ScanContent::kNoValues;
    if (dir_.view == View::kPrefix) so.prefix = dir_.view_prefix;
    auto scanner = db_->NewScanner(dir_.table, so);
    if (!scanner.ok()) return FsErrorFromStatus(scanner.status());
    scanner_ = std::move(scanner).value();
    scanner_positioned_ = false;
  }
  if (!scanner_positioned_) {
    if (after) {
      scanner_->Seek(last_.key);
    } else {
      scanner_->SeekToFirst();
    }
    scanner_positioned_ = true;
  }
  while (after && scanner_->Valid() &&
         std::string_view(scanner_->row()) <= std::string_view(last_.key)) {
    scanner_->NextRow();
  }
  if (!scanner_->status().ok()) return FsErrorFromStatus(scanner_->status());
  std::optional<std::string> row;
  if (scanner_->Valid()) row = std::string(scanner_->row());
  std::optional<std::string> made;
  if (dir_.view == View::kCurrent) {
    made = ephemeral_->NextRow(dir_.table, last_.key, after);
  }
  if (made.has_value() && (!row.has_value() || *made < *row)) row = made;
  if (!row.has_value()) return FsError::Ok();
  DirEntry e;
  {
    // The row's mtime, as Stat gives it; the scanner moves to the next row
    // (or stays, for a row made by mkdir that has no cells).
    DirTimes times = ScanDirTimes(*scanner_, *row, {},
                                  dir_.view == View::kCurrent
                                      ? ephemeral_->Families(dir_.table, *row)
                                      : std::vector<std::string>());
    if (!scanner_->status().ok()) {
      return FsErrorFromStatus(scanner_->status());
    }
    e.has_timestamp = times.newest.has_value();
    e.timestamp = times.newest.value_or(0);
    e.entries = times.entries;
  }
  e.name = ShownName(*row);
  e.node = ChildBase(NodeKind::kRow);
  e.node.row = std::move(*row);
  peeked_ = e;
  peeked_after_ = last_.offset;
  *out = std::move(e);
  return FsError::Ok();
}

FsError DirHandle::NextQualifierEntry(std::optional<DirEntry>* out) {
  const bool after = last_.phase == Phase::kEntries;
  const bool versions = dir_.view == View::kVersions;
  if (!scanner_) {
    ScanOptions so;
    so.read = ViewReadOptions();
    so.read.families = {dir_.family};
    so.start_row = dir_.row;
    so.end_row = RowEnd(dir_.row);
    auto scanner = db_->NewScanner(dir_.table, so);
    if (!scanner.ok()) return FsErrorFromStatus(scanner.status());
    scanner_ = std::move(scanner).value();
    scanner_positioned_ = false;
    auto settings = db_->GetFamily(dir_.table, dir_.family);
    if (!settings.ok()) return FsErrorFromStatus(settings.status());
    family_settings_ = *settings;
  }
  if (!scanner_positioned_) {
    scanner_->Seek(dir_.row, dir_.family, after ? last_.key : std::string());
    scanner_positioned_ = true;
  }
  // Skip what was returned: qualifiers up to the last one, and under
  // .versions the versions of the last qualifier down to the last T.
  while (after && scanner_->Valid() && scanner_->row() == dir_.row &&
         scanner_->family() == dir_.family) {
    std::string_view q = scanner_->qualifier();
    if (q < std::string_view(last_.key)) {
      scanner_->NextColumn();
    } else if (q == std::string_view(last_.key)) {
      if (versions && scanner_->timestamp() < last_.timestamp) break;
      if (versions) {
        scanner_->Next();
      } else {
        scanner_->NextColumn();
      }
    } else {
      break;
    }
  }
  if (!scanner_->status().ok()) return FsErrorFromStatus(scanner_->status());
  const bool stored = scanner_->Valid() && scanner_->row() == dir_.row &&
                      scanner_->family() == dir_.family;
  // Cells created by a handle still open come first when they sort first
  // (the same name in the store is listed once, from the store).
  std::optional<std::string> created;
  if (dir_.view == View::kCurrent) {
    created = ephemeral_->NextCell(dir_.table, dir_.row, dir_.family, last_.key,
                                   after);
  }
  if (created.has_value() &&
      (!stored || std::string_view(*created) < scanner_->qualifier())) {
    DirEntry e;
    e.node = ChildBase(NodeKind::kCell);
    e.node.qualifier = std::move(*created);
    e.name = ShownName(e.node.qualifier);
    e.timestamp = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    e.settings = family_settings_;
    *out = std::move(e);
    return FsError::Ok();
  }
  if (!stored) return FsError::Ok();
  DirEntry e;
  e.node = ChildBase(NodeKind::kCell);
  e.node.qualifier = std::string(scanner_->qualifier());
  e.name = ShownName(e.node.qualifier);
  if (versions) {
    e.node.at = scanner_->timestamp();
    e.name = VersionName(e.name, scanner_->timestamp());
  }
  e.size = scanner_->value_size();
  e.timestamp = scanner_->timestamp();
  e.settings = family_settings_;
  *out = std::move(e);
  return FsError::Ok();
}

}  // namespace tabletfs::fs
