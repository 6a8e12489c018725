#include "fs/mtimes.h"

#include "fs/log.h"
#include "fs/timestamp.h"

namespace tabletfs::fs {
namespace {

void PutLengthPrefixed(std::string* out, std::string_view s) {
  uint32_t n = static_cast<uint32_t>(s.size());
  while (n >= 0x80) {
    out->push_back(static_cast<char>(n | 0x80));
    n >>= 7;
  }
  out->push_back(static_cast<char>(n));
  out->append(s);
}

std::string Encode(int64_t micros) {
  std::string out(8, '\0');
  uint64_t v = static_cast<uint64_t>(micros);
  for (int i = 7; i >= 0; i--) {
    out[static_cast<size_t>(i)] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  return out;
}

std::optional<int64_t> Decode(std::string_view s) {
  if (s.size() != 8) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) v = (v << 8) | static_cast<uint8_t>(c);
  return static_cast<int64_t>(v);
}

}  // namespace

std::string Mtimes::Key(const Node& node) {
  std::string key;
  PutLengthPrefixed(&key, node.table);  // the root: "" (no table is)
  if (node.kind == NodeKind::kRoot || node.kind == NodeKind::kTable) {
    return key;
  }
  PutLengthPrefixed(&key, node.row);
  if (node.kind == NodeKind::kRow) return key;
  PutLengthPrefixed(&key, node.family);
  if (node.kind == NodeKind::kFamily) return key;
  PutLengthPrefixed(&key, node.qualifier);
  return key;
}

int64_t Mtimes::Stored(int64_t version) const {
  return FloorToGranularity(version, db_->TimestampGranularityMicros());
}

bool Mtimes::MayHave(const std::string& table) {
  {
    MutexLock lock(&mu_);
    auto it = may_have_.find(table);
    if (it != may_have_.end()) return it->second;
  }
  ScanOptions so;
  PutLengthPrefixed(&so.prefix, table);
  so.content = ScanContent::kRows;
  bool has = true;  // when the scan fails, look records up
  auto scanner = db_->NewScanner(kTable, so);
  if (!scanner.ok()) {
    has = !scanner.status().IsNotFound();  // no table yet: no records
  } else {
    (*scanner)->SeekToFirst();
    if ((*scanner)->status().ok()) has = (*scanner)->Valid();
  }
  MutexLock lock(&mu_);
  auto [it, inserted] = may_have_.emplace(table, has);
  if (!inserted && has) it->second = true;
  return it->second;
}

int64_t Mtimes::Get(const Node& cell, int64_t version) {
  return Find(cell, version).value_or(version);
}

std::optional<int64_t> Mtimes::Find(const Node& node, int64_t version) {
  if (!MayHave(node.table)) return std::nullopt;
  version = Stored(version);
  ReadOptions ro;
  ro.max_versions = 1;
  ro.at = version;
  auto cells = db_->ReadCell(kTable, Key(node), kFamily, "", ro);
  if (!cells.ok() || cells->empty() || (*cells)[0].timestamp != version) {
    return std::nullopt;
  }
  return Decode((*cells)[0].value);
}

FsError Mtimes::Set(const Node& cell, int64_t version, int64_t mtime) {
  version = Stored(version);
  bool created;
  {
    MutexLock lock(&mu_);
    created = created_;
    may_have_[cell.table] = true;
  }
  if (!created) {
    Status s = db_->CreateTable(kTable);
    if (!s.ok() && !s.IsAlreadyExists()) return FsErrorFromStatus(s);
    FamilySettings settings;
    settings.gc_policy = GcPolicy::MaxVersions(1);
    s = db_->CreateFamily(kTable, kFamily, settings);
    if (!s.ok() && !s.IsAlreadyExists()) return FsErrorFromStatus(s);
    MutexLock lock(&mu_);
    created_ = true;
  }
  RowMutation m(Key(cell));
  // A directory's fingerprints come in no order: the GC (newest only)
  // would collect a new record below an old one.
  if (cell.kind != NodeKind::kCell) m.DeleteCell(kFamily, "");
  m.SetCell(kFamily, "", version, Encode(mtime));
  auto r = db_->Apply(kTable, m, WriteOptions());
  if (!r.ok()) return FsErrorFromStatus(r.status());
  return FsError::Ok();
}

}  // namespace tabletfs::fs
