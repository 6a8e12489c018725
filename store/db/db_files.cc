// DBImpl: the lifetimes of SSTables and value files (live while a version
// holds them, deleted once obsolete, orphans removed at open) and reading
// large values from value files.
#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "store/db/db_impl.h"
#include "store/util/coding.h"

namespace tabletfs {

// ---------------------------------------------------------------------------
// File lifetimes
// ---------------------------------------------------------------------------

std::shared_ptr<const FileMeta> DBImpl::MakeLiveFile(const FileMeta& meta) {
  {
    MutexLock l(&files_mu_);
    for (uint64_t vf : meta.value_files) {
      if (value_file_refs_[vf] == 0) {
        // A log's value file may lose its last SSTable and gain another:
        // at run time a memtable holds it meanwhile (ValueFileUnheld), but
        // when the open replays the manifest's edits one by one, it is let
        // go in one edit and named again in a later one.
        std::erase(obsolete_value_files_, vf);
      }
      if (value_file_refs_[vf]++ == 0 && value_file_sizes_.count(vf) == 0) {
        Result<uint64_t> size = env_->GetFileSize(FileName(vf, ".vlf"));
        value_file_sizes_[vf] = size.ok() ? *size : 0;
      }
    }
  }
  // The last holder (a version, a reader's pinned state, a compaction) to
  // let go marks the file obsolete; the background thread deletes it.
  return std::shared_ptr<const FileMeta>(
      new FileMeta(meta), [this](const FileMeta* f) {
        FileReleased(f->number, f->value_files);
        delete f;
      });
}

void DBImpl::FileReleased(uint64_t number,
                          const std::vector<uint64_t>& value_files) {
  if (closing_.load()) return;  // the files stay for the next open
  MutexLock l(&files_mu_);
  obsolete_tables_.push_back(number);
  for (uint64_t vf : value_files) {
    auto it = value_file_refs_.find(vf);
    if (it != value_file_refs_.end() && --it->second == 0) {
      value_file_refs_.erase(it);
      // A memtable may still reference values there (ValueFileUnheld then
      // makes it obsolete).
      if (held_value_files_.count(vf) == 0) obsolete_value_files_.push_back(vf);
    }
  }
}

class DBImpl::ValueFileHold {
 public:
  ValueFileHold(DBImpl* db, uint64_t number) : db_(db), number_(number) {}
  ~ValueFileHold() { db_->ValueFileUnheld(number_); }
  ValueFileHold(const ValueFileHold&) = delete;
  ValueFileHold& operator=(const ValueFileHold&) = delete;

 private:
  DBImpl* const db_;
  const uint64_t number_;
};

std::shared_ptr<const void> DBImpl::NewValueFileHold(uint64_t number) {
  {
    MutexLock l(&files_mu_);
    held_value_files_.insert(number);
  }
  return std::make_shared<const ValueFileHold>(this, number);
}

void DBImpl::ValueFileUnheld(uint64_t number) {
  if (closing_.load()) return;  // the file stays for the next open
  MutexLock l(&files_mu_);
  held_value_files_.erase(number);
  // Obsolete unless an SSTable took its values over (a flush).
  if (value_file_refs_.count(number) == 0) {
    obsolete_value_files_.push_back(number);
  }
}

Status DBImpl::SyncLogValues() {
  return log_values_ == nullptr ? Status::OK() : log_values_->Sync();
}

Status DBImpl::CloseLogValues() {
  if (log_values_ == nullptr) return Status::OK();
  // What the leader flushed: after a failed append (RollLogAfterFailure)
  // the writer's own Sync() would refuse, yet the values before the
  // failure belong to acknowledged writes.
  Status s = log_values_->SyncFlushed();
  if (s.IsNotSupported()) s = log_values_->Sync();
  // Close() repeats a failed append's error: the sync above is what counts.
  log_values_->Close().IgnoreError();
  {
    // Its size as an SSTable first named it, while it still grew.
    MutexLock f(&files_mu_);
    auto it = value_file_sizes_.find(log_values_->file_number());
    if (it != value_file_sizes_.end()) it->second = log_values_->size();
  }
  log_values_.reset();
  log_values_hold_.reset();
  return s;
}

void DBImpl::DeleteObsoleteFiles() {
  std::vector<uint64_t> tables, values;
  {
    MutexLock l(&files_mu_);
    tables.swap(obsolete_tables_);
    values.swap(obsolete_value_files_);
    for (uint64_t vf : values) value_file_sizes_.erase(vf);
  }
  for (uint64_t vf : values) value_readers_.Erase(vf);
  for (uint64_t n : tables) {
    table_cache_->Evict(n);
    env_->RemoveFile(TableFileName(dir_, n)).IgnoreError();
  }
  for (uint64_t n : values) env_->RemoveFile(FileName(n, ".vlf")).IgnoreError();
  // Logs older than the manifest's log number hold only flushed entries;
  // the newest of them stay for the change history.
  uint64_t log_number;
  {
    MutexLock l(&mu_);
    log_number = KeptLogFloor();
    std::erase_if(live_files_,
                  [](const auto& e) { return e.second.expired(); });
  }
  Result<std::vector<std::string>> children = env_->GetChildren(dir_);
  if (!children.ok()) return;
  for (const std::string& name : *children) {
    uint64_t number;
    if (name.ends_with(".log") && name[0] >= '0' && name[0] <= '9' &&
        std::sscanf(name.c_str(), "%" SCNu64, &number) == 1 &&
        number < log_number) {
      env_->RemoveFile(dir_ + "/" + name).IgnoreError();
      Log(LogLevel::kDebug, "deleted flushed log " + name);
    }
  }
}

Status DBImpl::RemoveOrphans() {
  std::set<uint64_t> live_tables, live_values;
  uint64_t log_number, manifest;
  {
    MutexLock s(&schema_mu_);
    manifest = manifest_number_;
  }
  {
    MutexLock l(&mu_);
    log_number = KeptLogFloor();
    for (const auto& [id, t] : tablets_) {
      for (const auto& level : t->version->levels) {
        for (const auto& f : level) {
          live_tables.insert(f->number);
          live_values.insert(f->value_files.begin(), f->value_files.end());
        }
      }
    }
  }
  {
    MutexLock f(&files_mu_);
    live_values.insert(held_value_files_.begin(), held_value_files_.end());
  }
  TABLETFS_ASSIGN_OR_RETURN(std::vector<std::string> children,
                            env_->GetChildren(dir_));
  for (const std::string& name : children) {
    uint64_t number = 0;
    bool remove = false;
    if (name.starts_with("MANIFEST-")) {
      remove = std::sscanf(name.c_str() + 9, "%" SCNu64, &number) == 1 &&
               number != manifest;
    } else if (name == "CURRENT.tmp") {
      remove = true;
    } else if (std::sscanf(name.c_str(), "%" SCNu64, &number) == 1) {
      if (name.ends_with(".sst")) remove = live_tables.count(number) == 0;
      if (name.ends_with(".vlf")) remove = live_values.count(number) == 0;
      if (name.ends_with(".log")) remove = number < log_number;
    }
    if (remove) {
      Log(LogLevel::kInfo, "removing obsolete file " + name);
      env_->RemoveFile(dir_ + "/" + name).IgnoreError();
    }
  }
  return Status::OK();
}

uint64_t DBImpl::KeptLogFloor() {
  const uint64_t budget = space_short_.load(std::memory_order_relaxed)
                              ? 0
                              : options_.change_history_bytes;
  uint64_t floor = log_number_;
  uint64_t kept = 0;
  // The newest flushed logs that fit the budget (none when it is 0, also
  // a log still empty: which logs a cleanup removes must not depend on
  // when a log switch met a write).
  for (auto it = log_starts_.lower_bound(log_number_);
       budget > 0 && it != log_starts_.begin();) {
    --it;
    auto size = log_sizes_.find(it->first);
    kept += size == log_sizes_.end() ? 0 : size->second;
    if (kept > budget) break;
    floor = it->first;
  }
  if (!history_pins_.empty()) floor = std::min(floor, *history_pins_.begin());
  std::erase_if(log_starts_, [&](const auto& e) { return e.first < floor; });
  std::erase_if(log_sizes_, [&](const auto& e) { return e.first < floor; });
  return floor;
}

// ---------------------------------------------------------------------------
// Reads from files
// ---------------------------------------------------------------------------

uint64_t DBImpl::ValueRefSize(std::string_view ref) {
  Result<ValueRef> r = ValueRef::DecodeFrom(ref);
  return r.ok() ? r->size : 0;
}

Result<std::shared_ptr<ValueFileReader>> DBImpl::GetValueReader(uint64_t number,
                                                                uint64_t end) {
  if (std::optional<std::shared_ptr<ValueFileReader>> cached =
          value_readers_.Lookup(number)) {
    if ((*cached)->size() >= end) return *cached;
  }
  TABLETFS_ASSIGN_OR_RETURN(
      std::unique_ptr<ValueFileReader> reader,
      ValueFileReader::Open(env_, FileName(number, ".vlf")));
  std::shared_ptr<ValueFileReader> shared = std::move(reader);
  value_readers_.Insert(number, shared, 1);
  return shared;
}

Result<std::string> DBImpl::LoadValue(EntryKind kind, std::string_view raw) {
  if (kind == EntryKind::kPut) return std::string(raw);
  TABLETFS_ASSIGN_OR_RETURN(ValueRef ref, ValueRef::DecodeFrom(raw));
  TABLETFS_ASSIGN_OR_RETURN(
      std::shared_ptr<ValueFileReader> reader,
      GetValueReader(ref.file_number, ref.offset + ref.size));
  stat_value_reads_.Add();
  stat_value_read_bytes_.Add(ref.size);
  return reader->Read(ref);
}

Result<DBImpl::ReplayedValue> DBImpl::CheckReplayedValue(const ValueRef& ref,
                                                         bool may_be_torn) {
  Result<std::shared_ptr<ValueFileReader>> reader =
      GetValueReader(ref.file_number, ref.offset + ref.size);
  if (!reader.ok()) {
    // The file and its name were synced when it was made: the engine
    // deleted it, once no memtable or SSTable named it any more.
    if (reader.status().IsNotFound()) return ReplayedValue::kGone;
    return reader.status();
  }
  // Only the newest log's value file can hold bytes never synced (a log
  // switch syncs the old one's), and a power cut leaves them cut short (the
  // file ends before them) or, on a filesystem that shows unwritten blocks
  // as zeros, with an entry header of zeros (never a real header: it holds
  // checksums). Any other damage may be to synced bytes: Corruption.
  const std::string path = FileName(ref.file_number, ".vlf");
  if ((*reader)->size() < ref.offset + ref.size) {
    if (may_be_torn) return ReplayedValue::kTorn;
    return Status::Corruption(path, "value at offset " +
                                        std::to_string(ref.offset) +
                                        " cut short");
  }
  Status s = (*reader)->Read(ref).status();
  if (s.ok()) return ReplayedValue::kIntact;
  if (may_be_torn) {
    Result<std::unique_ptr<RandomAccessFile>> file =
        env_->NewRandomAccessFile(path);
    char scratch[kValueEntryHeaderSize];
    std::string_view header;
    if (file.ok() &&
        (*file)
            ->Read(ref.offset - kValueEntryHeaderSize, kValueEntryHeaderSize,
                   &header, scratch)
            .ok() &&
        header.size() == kValueEntryHeaderSize &&
        header.find_first_not_of('\0') == std::string_view::npos) {
      return ReplayedValue::kTorn;
    }
  }
  return s;
}

}  // namespace tabletfs
