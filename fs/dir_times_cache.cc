#include "fs/dir_times_cache.h"

#include <algorithm>
#include <utility>

namespace tabletfs::fs {
namespace {

void AppendPart(std::string* key, std::string_view part) {
  const uint32_t n = static_cast<uint32_t>(part.size());
  key->append(reinterpret_cast<const char*>(&n), sizeof n);
  key->append(part);
}

}  // namespace

DirTimesCache::DirTimesCache(std::chrono::steady_clock::duration max_age)
    : max_age_(max_age) {}

// Keys are length-prefixed, so that a table's and a row's directories
// share a prefix whatever bytes their names hold.
std::string DirTimesCache::Prefix(std::string_view table,
                                  std::optional<std::string_view> row) {
  std::string key;
  AppendPart(&key, table);
  if (row.has_value()) AppendPart(&key, *row);
  return key;
}

std::string DirTimesCache::Key(std::string_view table, std::string_view row,
                               std::string_view family) {
  std::string key = Prefix(table, row);
  key.append(family);
  return key;
}

std::optional<DirTimes> DirTimesCache::Find(std::string_view table,
                                            std::string_view row,
                                            std::string_view family) {
  if (max_age_.count() == 0) return std::nullopt;
  const std::string key = Key(table, row, family);
  MutexLock l(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  if (std::chrono::steady_clock::now() - it->second.loaded > max_age_) {
    EraseLocked(key);
    return std::nullopt;
  }
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  hits_++;
  return it->second.times;
}

DirTimesCache::Scan DirTimesCache::StartScan(std::string_view table,
                                             std::string_view row,
                                             std::string_view family) {
  if (max_age_.count() == 0) return Scan(nullptr, {});
  PendingScan p;
  p.key = Key(table, row, family);
  MutexLock l(&mu_);
  // A write in flight may be applied under the scan, or not.
  p.spoiled = wide_writes_ > 0 || writing_.contains(p.key);
  scans_.push_front(std::move(p));
  return Scan(this, scans_.begin());
}

DirTimesCache::Scan::Scan(Scan&& other) noexcept
    : cache_(std::exchange(other.cache_, nullptr)), it_(other.it_) {}

DirTimesCache::Scan::~Scan() {
  if (cache_ != nullptr) cache_->EndScan(this, nullptr, nullptr);
}

void DirTimesCache::Scan::Found(const DirTimes& times) {
  if (cache_ != nullptr) cache_->EndScan(this, &times, nullptr);
  cache_ = nullptr;
}

void DirTimesCache::Scan::FoundFirstRow(std::string_view row) {
  if (cache_ != nullptr) cache_->EndScan(this, nullptr, &row);
  cache_ = nullptr;
}

std::optional<std::string> DirTimesCache::FirstRow(std::string_view table) {
  std::optional<std::string> first;
  StartTableScan(table, &first);
  return first;
}

DirTimesCache::Scan DirTimesCache::StartTableScan(
    std::string_view table, std::optional<std::string>* first_row) {
  first_row->reset();
  if (max_age_.count() == 0) return Scan(nullptr, {});
  PendingScan p;
  p.key = std::string(table);
  p.table = true;
  MutexLock l(&mu_);
  auto it = first_rows_.find(p.key);
  if (it != first_rows_.end()) {
    if (std::chrono::steady_clock::now() - it->second.loaded > max_age_) {
      first_rows_.erase(it);
    } else {
      *first_row = it->second.row;
      p.from_hint_loaded = it->second.loaded;
    }
  }
  // Which rows a write in flight adds cells to is not known here.
  p.spoiled = wide_writes_ > 0 || !writing_.empty();
  scans_.push_front(std::move(p));
  return Scan(this, scans_.begin());
}

void DirTimesCache::EndScan(Scan* scan, const DirTimes* found,
                            const std::string_view* first_row) {
  MutexLock l(&mu_);
  PendingScan p = std::move(*scan->it_);
  scans_.erase(scan->it_);
  if (p.spoiled) return;
  if (p.table) {
    auto deleted = lowest_deleted_.find(p.key);
    const bool skips =
        p.from_hint_loaded.has_value() ||
        (first_row != nullptr && deleted != lowest_deleted_.end() &&
         deleted->second < *first_row);
    if (first_row != nullptr && skips) {
      // Only a scan from the table's start renews the age: other doors'
      // writes before a kept row reach a store without events that way.
      first_rows_[p.key] = {
          std::string(*first_row),
          p.from_hint_loaded.value_or(std::chrono::steady_clock::now())};
    }
    return;
  }
  if (found == nullptr) return;
  auto [it, fresh] = entries_.try_emplace(p.key);
  Entry& e = it->second;
  if (fresh) {
    lru_.push_front(p.key);
    e.lru = lru_.begin();
  } else {
    lru_.splice(lru_.begin(), lru_, e.lru);
  }
  e.times = *found;
  e.loaded = std::chrono::steady_clock::now();
  e.poisoned = false;
  kept_scans_++;
  while (entries_.size() > kMaxEntries) {
    const std::string oldest = lru_.back();
    EraseLocked(oldest);
  }
}

DirTimesCache::Write::Write(Write&& other) noexcept
    : cache_(std::exchange(other.cache_, nullptr)),
      mutation_(other.mutation_),
      dirs_(std::move(other.dirs_)),
      cells_(std::move(other.cells_)),
      wide_(other.wide_) {}

DirTimesCache::Write::~Write() { Done(std::nullopt); }

void DirTimesCache::Write::Done(std::optional<int64_t> server_timestamp) {
  if (cache_ != nullptr) cache_->End(this, server_timestamp);
  cache_ = nullptr;
}

DirTimesCache::Write DirTimesCache::Begin(Bigtable* store,
                                          std::string_view table,
                                          const RowMutation& mutation) {
  if (max_age_.count() == 0) return Write(nullptr);
  if (mutation.ops().size() > kMaxFollowedOps) {
    return BeginWide(table, mutation.row());
  }
  for (const RowMutation::Op& op : mutation.ops()) {
    if (op.type == RowMutation::OpType::kDeleteFamily ||
        op.type == RowMutation::OpType::kDeleteRow) {
      return BeginWide(table, mutation.row());
    }
  }
  Write w(this);
  w.mutation_ = &mutation;
  std::vector<bool> kept;  // by dir: an entry to follow
  {
    MutexLock l(&mu_);
    WriteBeginsLocked(table, mutation.row());
    for (const RowMutation::Op& op : mutation.ops()) {
      if (op.type != RowMutation::OpType::kSetCell) {
        DeletesLocked(table, mutation.row());
      }
    }
    for (const RowMutation::Op& op : mutation.ops()) {
      std::string key = Key(table, mutation.row(), op.family);
      if (std::find(w.dirs_.begin(), w.dirs_.end(), key) != w.dirs_.end()) {
        continue;
      }
      for (PendingScan& p : scans_) {
        if (!p.table && p.key == key) p.spoiled = true;
      }
      const bool alone = ++writing_[key] == 1;
      auto it = entries_.find(key);
      if (it != entries_.end() && !alone) it->second.poisoned = true;
      kept.push_back(it != entries_.end() && alone);
      w.dirs_.push_back(std::move(key));
    }
  }
  // What the cells of kept directories held before: read outside the lock
  // (another write of the same directory poisons its entry meanwhile).
  for (const RowMutation::Op& op : mutation.ops()) {
    const size_t dir = std::find(w.dirs_.begin(), w.dirs_.end(),
                                 Key(table, mutation.row(), op.family)) -
                       w.dirs_.begin();
    if (!kept[dir]) continue;
    bool seen = false;
    for (const Write::CellBefore& c : w.cells_) {
      seen = seen || (c.dir == dir && c.qualifier == op.qualifier);
    }
    if (seen) continue;
    Write::CellBefore c;
    c.dir = dir;
    c.family = op.family;
    c.qualifier = op.qualifier;
    auto stat = store->StatCell(table, mutation.row(), op.family, op.qualifier,
                                ReadOptions());
    c.known = stat.ok();
    if (stat.ok() && stat->has_value()) c.newest = (*stat)->timestamp;
    w.cells_.push_back(std::move(c));
  }
  return w;
}

DirTimesCache::Write DirTimesCache::BeginWide(
    std::string_view table, std::optional<std::string_view> row) {
  if (max_age_.count() == 0) return Write(nullptr);
  Write w(this);
  w.wide_ = true;
  MutexLock l(&mu_);
  wide_writes_++;
  for (PendingScan& p : scans_) p.spoiled = true;
  ForgetPrefixLocked(Prefix(table, row));
  // A row-wide write may add cells anywhere in its row.
  first_rows_.erase(std::string(table));
  if (row.has_value()) DeletesLocked(table, *row);
  return w;
}

void DirTimesCache::DeletesLocked(std::string_view table,
                                  std::string_view row) {
  auto [it, fresh] = lowest_deleted_.try_emplace(std::string(table), row);
  if (!fresh && row < it->second) it->second = std::string(row);
}

void DirTimesCache::WriteBeginsLocked(std::string_view table,
                                      std::optional<std::string_view> row) {
  for (PendingScan& p : scans_) {
    if (p.table && p.key == table) p.spoiled = true;
  }
  auto it = first_rows_.find(std::string(table));
  if (it != first_rows_.end() && (!row.has_value() || *row < it->second.row)) {
    first_rows_.erase(it);
  }
}

void DirTimesCache::End(Write* w, std::optional<int64_t> server_timestamp) {
  MutexLock l(&mu_);
  if (w->wide_) {
    wide_writes_--;
    return;
  }
  for (size_t i = 0; i < w->dirs_.size(); i++) {
    const std::string& key = w->dirs_[i];
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      const bool followed = server_timestamp.has_value() &&
                            !it->second.poisoned &&
                            FollowLocked(*w, i, *server_timestamp, &it->second);
      if (!followed) EraseLocked(key);
    }
    auto n = writing_.find(key);
    if (--n->second == 0) writing_.erase(n);
  }
}

bool DirTimesCache::FollowLocked(const Write& w, size_t dir,
                                 int64_t server_timestamp, Entry* e) {
  DirTimes t = e->times;
  bool any = false;
  for (const Write::CellBefore& c : w.cells_) {
    if (c.dir != dir) continue;
    any = true;
    if (!c.known) return false;
    // The cell through the mutation's operations on it, in order. After
    // its newest version is deleted, what remains is unknown (below
    // `bound`) until a version at or above `bound` is set.
    bool known = true;
    bool exists = c.newest.has_value();
    int64_t newest = c.newest.value_or(0);
    int64_t bound = 0;
    for (const RowMutation::Op& op : w.mutation_->ops()) {
      if (op.family != c.family || op.qualifier != c.qualifier) continue;
      const int64_t ts =
          op.timestamp == kServerTimestamp ? server_timestamp : op.timestamp;
      switch (op.type) {
        case RowMutation::OpType::kSetCell:
          if (known) {
            newest = exists ? std::max(newest, ts) : ts;
            exists = true;
          } else if (ts >= bound) {
            known = exists = true;
            newest = ts;
          }
          break;
        case RowMutation::OpType::kDeleteCell:
          known = true;
          exists = false;
          break;
        case RowMutation::OpType::kDeleteVersion:
          if (known && exists && ts == newest) {
            known = false;
            bound = ts;
          }
          break;
        default:
          return false;  // Begin made row-wide writes wide
      }
    }
    if (!known) return false;
    if (exists != c.newest.has_value()) {
      t.entries ^= static_cast<int64_t>(QualifierHash(c.qualifier) >> 1);
    }
    // The cell held the directory's newest timestamp and now holds less:
    // only a scan knows the next newest.
    if (c.newest.has_value() && t.newest == c.newest &&
        (!exists || newest < *c.newest)) {
      return false;
    }
    if (exists) t.newest = std::max(t.newest.value_or(newest), newest);
  }
  if (!any) return false;  // kept after Begin: not this write's to follow
  e->times = t;
  return true;
}

void DirTimesCache::Forget(const ChangeEvent& event) {
  MutexLock l(&mu_);
  WriteBeginsLocked(event.table, std::nullopt);
  if (event.kind != ChangeKind::kSetCell && !event.row.empty()) {
    DeletesLocked(event.table, event.row);
  }
  std::string prefix;
  switch (event.kind) {
    case ChangeKind::kSetCell:
    case ChangeKind::kDeleteVersion:
    case ChangeKind::kDeleteCell:
    case ChangeKind::kDeleteFamily:
      prefix = Key(event.table, event.row, event.family);
      EraseLocked(prefix);
      for (PendingScan& p : scans_) {
        if (!p.table && p.key == prefix) p.spoiled = true;
      }
      return;
    case ChangeKind::kDeleteRow:
      prefix = Prefix(event.table, event.row);
      break;
    case ChangeKind::kDropFamily:
    case ChangeKind::kDropTable:
      prefix = Prefix(event.table, std::nullopt);
      break;
  }
  ForgetPrefixLocked(prefix);
  for (PendingScan& p : scans_) {
    if (!p.table && p.key.starts_with(prefix)) p.spoiled = true;
  }
}

void DirTimesCache::ForgetAll() {
  MutexLock l(&mu_);
  entries_.clear();
  lru_.clear();
  first_rows_.clear();
  for (PendingScan& p : scans_) p.spoiled = true;
}

void DirTimesCache::EraseLocked(const std::string& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

void DirTimesCache::ForgetPrefixLocked(const std::string& prefix) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->first.starts_with(prefix)) {
      lru_.erase(it->second.lru);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

size_t DirTimesCache::kept_scans() const {
  MutexLock l(&mu_);
  return kept_scans_;
}

size_t DirTimesCache::hits() const {
  MutexLock l(&mu_);
  return hits_;
}

}  // namespace tabletfs::fs
