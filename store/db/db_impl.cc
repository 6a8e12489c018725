// DBImpl: opening and closing, the schema, maintenance requests. The rest
// of the engine is by concern: db_recovery.cc (manifest and log replay),
// db_write.cc (the write queue), db_read.cc (reads, scanners, snapshots),
// db_tablets.cc (splits and merges), db_background.cc (flushes and
// compactions).
#include "store/db/db_impl.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace tabletfs {

// ---------------------------------------------------------------------------
// Open and close
// ---------------------------------------------------------------------------

Result<std::unique_ptr<DB>> DB::Open(const Options& options,
                                     const std::string& dir) {
  auto db = std::make_unique<DBImpl>(options, dir);
  TABLETFS_RETURN_IF_ERROR(db->OpenAndRecover());
  return std::unique_ptr<DB>(std::move(db));
}

DBImpl::DBImpl(const Options& options, std::string dir)
    : options_(options),
      env_(options.env != nullptr ? options.env : Env::Default()),
      dir_(std::move(dir)),
      value_readers_(
          static_cast<size_t>(std::max(1, options.max_open_tables))) {
  block_cache_ = std::make_unique<BlockCache>(options_.block_cache_bytes);
  table_cache_ = std::make_unique<TableCache>(
      env_, dir_, MakeTableOptions(), std::max(1, options_.max_open_tables));
}

DBImpl::~DBImpl() {
  StopBackground();
  {
    // The commit thread's spare log, never used (the next open would only
    // replay it empty).
    MutexLock l(&mu_);
    if (spare_log_ != nullptr) {
      spare_log_.reset();
      env_->RemoveFile(FileName(spare_log_number_, ".log")).IgnoreError();
    }
  }
  MutexLock l(&log_mu_);
  if (log_ != nullptr) {
    // Closing syncs so a clean shutdown never loses an acknowledged write.
    CloseLogValues().IgnoreError();
    log_->Sync().IgnoreError();
    log_->Close().IgnoreError();
  }
}

std::string DBImpl::FileName(uint64_t number, const char* suffix) const {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "/%06" PRIu64 "%s", number, suffix);
  return dir_ + buf;
}

void DBImpl::Log(LogLevel level, const std::string& line) {
  if (options_.logger) options_.logger(level, line);
}

Status DBImpl::OpenAndRecover() {
  if (options_.create_if_missing) {
    TABLETFS_RETURN_IF_ERROR(env_->CreateDir(dir_).WithContext(dir_));
  }
  {
    auto lock = env_->LockFile(dir_ + "/LOCK");
    if (!lock.ok()) return lock.status().WithContext("opening " + dir_);
    lock_ = std::move(*lock);
  }
  space_reserve_ = ResolveSpaceReserve();
  bool exists = env_->FileExists(dir_ + "/CURRENT");
  if (!exists && !options_.create_if_missing) {
    return Status::NotFound("no database (CURRENT missing)", dir_);
  }
  std::vector<uint64_t> old_logs;
  {
    MutexLock l(&mu_);
    if (exists) TABLETFS_RETURN_IF_ERROR(RecoverManifest());
    TABLETFS_RETURN_IF_ERROR(RecoverLogs(&old_logs));
  }
  TABLETFS_RETURN_IF_ERROR(FinishRecovery(old_logs));
  StartBackground();
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------

Status DBImpl::CreateTable(std::string_view table) {
  TABLETFS_RETURN_IF_ERROR(ValidateTableName(table));
  MutexLock s(&schema_mu_);
  VersionEdit edit;
  {
    MutexLock l(&mu_);
    if (tables_.count(table) != 0) {
      return Status::AlreadyExists("table exists", table);
    }
    // Never before a server timestamp already handed out, so no cell
    // written at a server timestamp is older than its table.
    const int64_t created = std::max(env_->NowMicros(), last_ts_);
    edit.created_tables.push_back(
        {next_schema_id_, std::string(table), created});
    edit.next_schema_id = next_schema_id_ + 1;
  }
  TABLETFS_RETURN_IF_ERROR(SyncLogBeforeSchemaEdit());
  TABLETFS_RETURN_IF_ERROR(LogEdit(edit));
  MutexLock l(&mu_);
  return ApplyEdit(edit);
}

Status DBImpl::DeleteTable(std::string_view table) {
  MutexLock s(&schema_mu_);
  VersionEdit edit;
  {
    MutexLock l(&mu_);
    auto it = tables_.find(table);
    if (it == tables_.end()) return Status::NotFound("no such table", table);
    edit.dropped_tables.push_back(it->second->id);
  }
  TABLETFS_RETURN_IF_ERROR(SyncLogBeforeSchemaEdit());
  TABLETFS_RETURN_IF_ERROR(LogEdit(edit));
  MutexLock l(&mu_);
  TABLETFS_RETURN_IF_ERROR(ApplyEdit(edit));
  PublishDrop(table, {});
  return Status::OK();
}

Result<std::vector<std::string>> DBImpl::ListTables() {
  MutexLock l(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, t] : tables_) names.push_back(name);
  return names;
}

Result<TableInfo> DBImpl::GetTable(std::string_view table) {
  MutexLock l(&mu_);
  auto it = tables_.find(table);
  if (it == tables_.end()) return Status::NotFound("no such table", table);
  int64_t since = it->second->created_micros;
  auto b = backdated_.find(it->second->id);
  if (b != backdated_.end()) since = std::min(since, b->second);
  return TableInfo{it->second->name, since};
}

Status DBImpl::CreateFamily(std::string_view table, std::string_view family,
                            const FamilySettings& settings) {
  TABLETFS_RETURN_IF_ERROR(ValidateFamilyName(family));
  MutexLock s(&schema_mu_);
  VersionEdit edit;
  {
    MutexLock l(&mu_);
    auto it = tables_.find(table);
    if (it == tables_.end()) return Status::NotFound("no such table", table);
    if (it->second->FindFamily(family) != nullptr) {
      return Status::AlreadyExists(
          "family exists", std::string(table) + ":" + std::string(family));
    }
    VersionEdit::FamilyRecord r;
    r.table_id = it->second->id;
    r.family_id = next_schema_id_;
    r.name = std::string(family);
    r.settings = settings;
    r.since = 0;
    edit.families.emplace_back(true, r);
    edit.next_schema_id = next_schema_id_ + 1;
  }
  TABLETFS_RETURN_IF_ERROR(SyncLogBeforeSchemaEdit());
  TABLETFS_RETURN_IF_ERROR(LogEdit(edit));
  MutexLock l(&mu_);
  return ApplyEdit(edit);
}

Status DBImpl::UpdateFamily(std::string_view table, std::string_view family,
                            const FamilySettings& settings) {
  MutexLock s(&schema_mu_);
  VersionEdit edit;
  {
    MutexLock l(&mu_);
    auto it = tables_.find(table);
    if (it == tables_.end()) return Status::NotFound("no such table", table);
    const FamilyState* fs = it->second->FindFamily(family);
    if (fs == nullptr) {
      return Status::NotFound("no such family",
                              std::string(table) + ":" + std::string(family));
    }
    VersionEdit::FamilyRecord r;
    r.table_id = it->second->id;
    r.family_id = fs->id;
    r.settings = settings;
    // The change takes a sequence number of its own: a snapshot taken
    // after it (seq >= since) applies the new policy, one taken before
    // does not. Writes in flight (numbered above the old last_seq_) count
    // as written under the new policy. The manifest records the number, so
    // the store never hands it out again after a restart.
    r.since = ++last_seq_;
    edit.last_sequence = last_seq_;
    edit.families.emplace_back(false, r);
  }
  TABLETFS_RETURN_IF_ERROR(SyncLogBeforeSchemaEdit());
  TABLETFS_RETURN_IF_ERROR(LogEdit(edit));
  MutexLock l(&mu_);
  return ApplyEdit(edit);
}

Status DBImpl::DeleteFamily(std::string_view table, std::string_view family) {
  MutexLock s(&schema_mu_);
  VersionEdit edit;
  {
    MutexLock l(&mu_);
    auto it = tables_.find(table);
    if (it == tables_.end()) return Status::NotFound("no such table", table);
    const FamilyState* fs = it->second->FindFamily(family);
    if (fs == nullptr) {
      return Status::NotFound("no such family",
                              std::string(table) + ":" + std::string(family));
    }
    edit.dropped_families.emplace_back(it->second->id, fs->id);
  }
  TABLETFS_RETURN_IF_ERROR(SyncLogBeforeSchemaEdit());
  TABLETFS_RETURN_IF_ERROR(LogEdit(edit));
  MutexLock l(&mu_);
  TABLETFS_RETURN_IF_ERROR(ApplyEdit(edit));
  PublishDrop(table, family);
  return Status::OK();
}

Result<std::vector<FamilyInfo>> DBImpl::ListFamilies(std::string_view table) {
  MutexLock l(&mu_);
  auto it = tables_.find(table);
  if (it == tables_.end()) return Status::NotFound("no such table", table);
  std::vector<FamilyInfo> out;
  for (const FamilyState& f : it->second->families) {
    out.push_back({f.name, f.settings});
  }
  return out;
}

Result<FamilySettings> DBImpl::GetFamily(std::string_view table,
                                         std::string_view family) {
  MutexLock l(&mu_);
  auto it = tables_.find(table);
  if (it == tables_.end()) return Status::NotFound("no such table", table);
  const FamilyState* fs = it->second->FindFamily(family);
  if (fs == nullptr) {
    return Status::NotFound("no such family",
                            std::string(table) + ":" + std::string(family));
  }
  return fs->settings;
}

// ---------------------------------------------------------------------------
// Maintenance
// ---------------------------------------------------------------------------

Status DBImpl::Sync() {
  // A sync goes through the write queue like a write, so it orders after
  // every acknowledged write and never races the leader on log_.
  return SyncOrFlushRequest(/*flush_memtable=*/false);
}

Status DBImpl::StickyError() {
  MutexLock l(&mu_);
  return bg_error_;
}

int64_t DBImpl::LastTimestamp() {
  MutexLock l(&mu_);
  return last_ts_;
}

}  // namespace tabletfs
