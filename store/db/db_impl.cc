#include "store/db/db_impl.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "store/db/level_iterator.h"
#include "store/db/merger.h"
#include "store/util/coding.h"
#include "store/util/hash.h"
#include "store/wal/log_reader.h"

namespace tabletfs {

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

namespace {

constexpr size_t kMaxGroupBytes = 1 << 20;

bool ParseFileName(const std::string& name, uint64_t* number,
                   std::string* suffix) {
  size_t dot = name.find('.');
  if (dot == std::string::npos || dot == 0) return false;
  uint64_t n = 0;
  for (size_t i = 0; i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    n = n * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  *number = n;
  *suffix = name.substr(dot);
  return true;
}

bool AddsData(const RowMutation& m) {
  for (const RowMutation::Op& op : m.ops()) {
    if (op.type == RowMutation::OpType::kSetCell) return true;
  }
  return false;
}

}  // namespace

class DBImpl::SnapshotImpl final : public Snapshot {
 public:
  SnapshotImpl(DBImpl* db, uint64_t seq) : db_(db), seq_(seq) {}
  ~SnapshotImpl() override { db_->ReleaseSnapshot(seq_); }
  uint64_t seq() const { return seq_; }

 private:
  DBImpl* const db_;
  const uint64_t seq_;
};

class DBImpl::ScannerImpl final : public Scanner {
 public:
  ScannerImpl(DBImpl* db, ReadState state, std::unique_ptr<CellCursor> cursor)
      : db_(db), state_(std::move(state)), cursor_(std::move(cursor)) {}

  void Seek(std::string_view row, std::string_view family,
            std::string_view qualifier) override {
    cursor_->Seek(row, family, qualifier);
  }
  void SeekToFirst() override { cursor_->SeekToFirst(); }
  bool Valid() const override { return cursor_->Valid(); }
  void Next() override { cursor_->Next(); }
  void NextColumn() override { cursor_->NextColumn(); }
  void NextFamily() override { cursor_->NextFamily(); }
  void NextRow() override { cursor_->NextRow(); }
  std::string_view row() const override { return cursor_->row(); }
  std::string_view family() const override { return cursor_->family(); }
  std::string_view qualifier() const override { return cursor_->qualifier(); }
  int64_t timestamp() const override { return cursor_->timestamp(); }
  uint64_t value_size() const override {
    if (cursor_->kind() == EntryKind::kPut) return cursor_->raw_value().size();
    return DBImpl::ValueRefSize(cursor_->raw_value());
  }
  Result<std::string_view> value() override {
    if (cursor_->kind() == EntryKind::kPut) return cursor_->raw_value();
    Result<std::string> v =
        db_->LoadValue(cursor_->kind(), cursor_->raw_value());
    if (!v.ok()) return v.status();
    loaded_ = std::move(*v);
    return std::string_view(loaded_);
  }
  Status status() const override { return cursor_->status(); }

 private:
  DBImpl* const db_;
  ReadState state_;  // pins the memtables and files the cursor reads
  std::unique_ptr<CellCursor> cursor_;
  std::string loaded_;
};

// ---------------------------------------------------------------------------
// Open, recovery, manifest
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
  MutexLock l(&log_mu_);
  if (log_ != nullptr) {
    // Closing syncs so a clean shutdown never loses an acknowledged write.
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

Status DBImpl::RecoverManifest() {
  TABLETFS_ASSIGN_OR_RETURN(std::string current,
                            ReadFileToString(env_, dir_ + "/CURRENT"));
  if (current.empty() || current.back() != '\n') {
    return Status::Corruption("CURRENT does not end in a newline",
                              dir_ + "/CURRENT");
  }
  current.pop_back();
  std::string path = dir_ + "/" + current;
  TABLETFS_ASSIGN_OR_RETURN(auto file, env_->NewSequentialFile(path));
  LogReader reader(std::move(file), path);
  std::string record;
  Status s;
  int edits = 0;
  while (reader.ReadRecord(&record, &s)) {
    VersionEdit edit;
    TABLETFS_RETURN_IF_ERROR(edit.DecodeFrom(record, path));
    TABLETFS_RETURN_IF_ERROR(ApplyEdit(edit));
    ++edits;
  }
  TABLETFS_RETURN_IF_ERROR(s);
  if (edits == 0) return Status::Corruption("manifest holds no edit", path);
  Status missing = CheckLiveFilesExist(path);
  if (reader.torn_tail()) {
    // A crash inside an append leaves a torn last record, and then that
    // edit never took effect: files are deleted (obsolete tables, flushed
    // logs) only after the edit that obsoletes them is synced, so the
    // state before it is still whole on disk. A damaged synced last record
    // looks the same to the reader, but its edit was acted upon: then the
    // older state names files that are gone. So with a damaged tail, every
    // file of the recovered version, and the oldest log it still needs,
    // must exist; otherwise the tail was not torn, it is corruption.
    uint64_t offset = reader.LastRecordEndOffset();
    if (missing.ok() && log_number_ != 0 &&
        !env_->FileExists(FileName(log_number_, ".log"))) {
      missing = Status::Corruption("log named by the manifest is missing",
                                   FileName(log_number_, ".log"));
    }
    if (!missing.ok()) {
      return Status::Corruption(
          "damaged last record at offset " + std::to_string(offset) +
              " is not a torn tail: the edits before it name a file that is "
              "gone (" +
              missing.ToString() + ")",
          path);
    }
    Log(LogLevel::kWarning, "manifest " + path +
                                ": torn tail dropped after offset " +
                                std::to_string(offset));
  }
  TABLETFS_RETURN_IF_ERROR(missing);
  Log(LogLevel::kInfo, "recovered " + path + ": " + std::to_string(edits) +
                           " edits, last sequence " +
                           std::to_string(last_seq_));
  return Status::OK();
}

Status DBImpl::CheckLiveFilesExist(const std::string& manifest) {
  // A missing file is damage that reads would otherwise report later as
  // NotFound, one key at a time; name it now.
  std::set<uint64_t> value_files;
  for (const auto& [id, t] : tablets_) {
    for (const auto& level : t->version->levels) {
      for (const auto& f : level) {
        std::string path = TableFileName(dir_, f->number);
        if (!env_->FileExists(path)) {
          return Status::Corruption(
              "SSTable named by the manifest is missing (" + manifest + ")",
              path);
        }
        value_files.insert(f->value_files.begin(), f->value_files.end());
      }
    }
  }
  for (uint64_t vf : value_files) {
    std::string path = FileName(vf, ".vlf");
    if (!env_->FileExists(path)) {
      return Status::Corruption(
          "value file named by the manifest is missing (" + manifest + ")",
          path);
    }
  }
  return Status::OK();
}

Status DBImpl::ApplyEdit(const VersionEdit& edit) {
  if (edit.log_number) log_number_ = std::max(log_number_, *edit.log_number);
  if (edit.next_file_number) {
    next_file_number_ = std::max(next_file_number_, *edit.next_file_number);
  }
  if (edit.last_sequence) last_seq_ = std::max(last_seq_, *edit.last_sequence);
  if (edit.last_timestamp) last_ts_ = std::max(last_ts_, *edit.last_timestamp);
  if (edit.next_schema_id) {
    next_schema_id_ = std::max(next_schema_id_, *edit.next_schema_id);
  }
  auto find_by_id = [this](uint32_t id) REQUIRES(mu_) {
    for (auto it = tables_.begin(); it != tables_.end(); ++it) {
      if (it->second->id == id) return it;
    }
    return tables_.end();
  };
  for (const auto& t : edit.created_tables) {
    auto state = std::make_shared<TableState>();
    state->id = t.id;
    state->name = t.name;
    tables_[t.name] = std::move(state);
    next_schema_id_ = std::max(next_schema_id_, t.id + 1);
    // A new table has one tablet, numbered like the table.
    AddTablet(NewTablet(t.id, t.id, "", ""));
  }
  for (uint32_t id : edit.dropped_tables) {
    auto it = find_by_id(id);
    if (it != tables_.end()) tables_.erase(it);
    auto tablets = table_tablets_.find(id);
    if (tablets != table_tablets_.end()) {
      for (const auto& t : tablets->second) tablets_.erase(t->id);
      table_tablets_.erase(tablets);
    }
  }
  for (const auto& [created, f] : edit.families) {
    auto it = find_by_id(f.table_id);
    if (it == tables_.end()) {
      return Status::Corruption("manifest: family edit for unknown table id " +
                                std::to_string(f.table_id));
    }
    auto copy = std::make_shared<TableState>(*it->second);
    if (created) {
      FamilyState fs;
      fs.id = f.family_id;
      fs.name = f.name;
      fs.settings = f.settings;
      fs.epochs.push_back({f.since, f.settings.gc_policy});
      copy->families.push_back(std::move(fs));
      next_schema_id_ = std::max(next_schema_id_, f.family_id + 1);
    } else {
      for (FamilyState& fs : copy->families) {
        if (fs.id != f.family_id) continue;
        if (!(fs.settings.gc_policy == f.settings.gc_policy)) {
          fs.epochs.push_back({f.since, f.settings.gc_policy});
        }
        fs.settings = f.settings;
      }
    }
    it->second = std::move(copy);
  }
  for (const auto& [table_id, family_id] : edit.dropped_families) {
    auto it = find_by_id(table_id);
    if (it == tables_.end()) continue;
    auto copy = std::make_shared<TableState>(*it->second);
    std::erase_if(copy->families, [id = family_id](const FamilyState& fs) {
      return fs.id == id;
    });
    it->second = std::move(copy);
  }
  return ApplyTabletEdits(edit);
}

void DBImpl::SortLevels(Version* v) {
  // Level 0 newest (highest number) first: newer files hold newer entries,
  // which the merge does not need but overlap checks and stats read better.
  std::sort(v->levels[0].begin(), v->levels[0].end(),
            [](const auto& a, const auto& b) { return a->number > b->number; });
  for (int level = 1; level < Version::kNumLevels; ++level) {
    std::sort(
        v->levels[level].begin(), v->levels[level].end(),
        [](const auto& a, const auto& b) { return a->smallest < b->smallest; });
  }
}

VersionEdit DBImpl::SnapshotEdit() {
  VersionEdit edit;
  edit.log_number = log_number_;
  edit.next_file_number = next_file_number_;
  edit.last_sequence = last_seq_;
  edit.last_timestamp = last_ts_;
  edit.next_schema_id = next_schema_id_;
  // Tables by id so ids are recreated in order.
  std::vector<std::shared_ptr<const TableState>> tables;
  for (const auto& [name, t] : tables_) tables.push_back(t);
  std::sort(tables.begin(), tables.end(),
            [](const auto& a, const auto& b) { return a->id < b->id; });
  for (const auto& t : tables) {
    edit.created_tables.push_back({t->id, t->name});
    for (const FamilyState& f : t->families) {
      // The first epoch creates the family; later ones replay the history
      // of its GC policy.
      for (size_t i = 0; i < f.epochs.size(); ++i) {
        VersionEdit::FamilyRecord r;
        r.table_id = t->id;
        r.family_id = f.id;
        r.name = f.name;
        r.settings = f.settings;
        r.settings.gc_policy = f.epochs[i].policy;
        r.since = f.epochs[i].since;
        edit.families.emplace_back(i == 0, r);
      }
    }
  }
  for (const auto& [table_id, tablets] : table_tablets_) {
    for (const auto& t : tablets) {
      edit.tablets.push_back(
          {table_id, t->id, t->start_row, t->end_row, t->log_number});
      for (const auto& level : t->version->levels) {
        for (const auto& f : level) {
          edit.added_files.push_back(*f);
          edit.added_files.back().tablet_id = t->id;
        }
      }
    }
  }
  return edit;
}

Status DBImpl::WriteNewManifest() {
  uint64_t number;
  VersionEdit edit;
  {
    MutexLock l(&mu_);
    number = next_file_number_++;
    edit = SnapshotEdit();
  }
  char name[32];
  std::snprintf(name, sizeof(name), "MANIFEST-%06" PRIu64, number);
  std::string path = dir_ + "/" + name;
  TABLETFS_ASSIGN_OR_RETURN(auto file, env_->NewWritableFile(path));
  auto writer = std::make_unique<LogWriter>(std::move(file));
  std::string record;
  edit.EncodeTo(&record);
  TABLETFS_RETURN_IF_ERROR(writer->AddRecord(record).WithContext(path));
  TABLETFS_RETURN_IF_ERROR(writer->Sync().WithContext(path));
  // CURRENT is replaced atomically: write a temporary, sync it, rename, and
  // sync the directory so the rename itself survives power loss.
  std::string tmp = dir_ + "/CURRENT.tmp";
  TABLETFS_RETURN_IF_ERROR(
      WriteStringToFile(env_, std::string(name) + "\n", tmp, /*sync=*/true));
  TABLETFS_RETURN_IF_ERROR(env_->RenameFile(tmp, dir_ + "/CURRENT"));
  TABLETFS_RETURN_IF_ERROR(env_->SyncDir(dir_));
  uint64_t old = manifest_number_;
  manifest_ = std::move(writer);
  manifest_number_ = number;
  if (old != 0) {
    char old_name[32];
    std::snprintf(old_name, sizeof(old_name), "/MANIFEST-%06" PRIu64, old);
    env_->RemoveFile(dir_ + old_name).IgnoreError();
  }
  return Status::OK();
}

Status DBImpl::LogEdit(const VersionEdit& edit) {
  {
    // After a failed manifest write the file may or may not hold the edit:
    // no later edit may build on either guess (see the failure path below).
    MutexLock l(&mu_);
    if (!bg_error_.ok()) return bg_error_;
  }
  if (manifest_ == nullptr || manifest_->size() > (64u << 20)) {
    // The snapshot written by WriteNewManifest already includes `edit` only
    // when applied; apply-after-log keeps the order: log, then apply.
    TABLETFS_RETURN_IF_ERROR(WriteNewManifest());
  }
  // Every edit carries the file-number high-water mark, so no number handed
  // out before it (a table, a value file, a log) is ever handed out again.
  VersionEdit stamped = edit;
  {
    MutexLock l(&mu_);
    stamped.next_file_number = next_file_number_;
  }
  std::string record;
  stamped.EncodeTo(&record);
  Status s = manifest_->AddRecord(record);
  if (s.ok()) s = manifest_->Sync();
  if (!s.ok()) {
    // The manifest may now end in a partial record, or hold the whole edit
    // (a failed sync says nothing about what reached the disk): the next
    // open may or may not apply it. So the caller must keep every file the
    // edit adds, and the error is sticky (LevelDB's bg_error_): nothing
    // more is committed in this session, and the next open recovers from
    // whatever the manifest holds and starts a fresh one. Running out of
    // space is the exception: it is retried once space returns, and that
    // retry starts a fresh manifest (a snapshot of the state in memory,
    // which does not hold the failed edit) before anything else is logged.
    manifest_.reset();
    s = s.WithContext("manifest " + std::to_string(manifest_number_));
    if (!s.IsNoSpace()) {
      MutexLock l(&mu_);
      if (bg_error_.ok()) bg_error_ = s;
      Log(LogLevel::kError, "manifest write failed: " + s.ToString());
    }
    return s;
  }
  return Status::OK();
}

Status DBImpl::RecoverLogs(std::vector<uint64_t>* old_logs) {
  TABLETFS_ASSIGN_OR_RETURN(std::vector<std::string> children,
                            env_->GetChildren(dir_));
  std::vector<uint64_t> logs;
  for (const std::string& name : children) {
    uint64_t number;
    std::string suffix;
    if (!ParseFileName(name, &number, &suffix)) continue;
    // Any numbered file, even an orphan, keeps its number from reuse.
    next_file_number_ = std::max(next_file_number_, number + 1);
    if (suffix == ".log" && number >= log_number_) logs.push_back(number);
  }
  std::sort(logs.begin(), logs.end());
  for (uint64_t number : logs) {
    std::string path = FileName(number, ".log");
    TABLETFS_ASSIGN_OR_RETURN(auto file, env_->NewSequentialFile(path));
    LogReader reader(std::move(file), path);
    std::string record;
    Status s;
    uint64_t records = 0;
    while (reader.ReadRecord(&record, &s)) {
      TABLETFS_RETURN_IF_ERROR(ReplayLogRecord(record, path, number));
      ++records;
    }
    TABLETFS_RETURN_IF_ERROR(s);
    if (reader.torn_tail()) {
      Log(LogLevel::kWarning, "log " + path +
                                  ": torn tail dropped after offset " +
                                  std::to_string(reader.LastRecordEndOffset()));
      TABLETFS_RETURN_IF_ERROR(
          env_->TruncateFile(path, reader.LastRecordEndOffset()));
    }
    Log(LogLevel::kInfo,
        "replayed " + path + ": " + std::to_string(records) + " records");
    old_logs->push_back(number);
  }
  return Status::OK();
}

// Log record: varint64 last_sequence, varint64 last_timestamp (two's
// complement), then entries: length-prefixed internal key, length-prefixed
// value. See store/doc/key_format.md.
Status DBImpl::ReplayLogRecord(std::string_view record,
                               const std::string& where, uint64_t log_number) {
  std::string_view in = record;
  uint64_t seq = 0, ts = 0;
  if (!GetVarint64(&in, &seq) || !GetVarint64(&in, &ts)) {
    return Status::Corruption("log record: bad header", where);
  }
  while (!in.empty()) {
    std::string_view key, value;
    ParsedKey parsed;
    if (!GetLengthPrefixed(&in, &key) || !GetLengthPrefixed(&in, &value) ||
        !ParseInternalKey(key, &parsed)) {
      return Status::Corruption("log record: bad entry", where);
    }
    // Into the tablet that holds the row now; not when that tablet's
    // entries from this log are already in its SSTables, nor for a table
    // dropped since.
    Tablet* t = FindTablet(parsed.table_id, key);
    if (t == nullptr || log_number < t->log_number) continue;
    t->mem->Add(key, value);
    if (t->mem_first_log == kNoLog) t->mem_first_log = log_number;
  }
  last_seq_ = std::max(last_seq_, seq);
  last_ts_ = std::max(last_ts_, static_cast<int64_t>(ts));
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
    edit.created_tables.push_back({next_schema_id_, std::string(table)});
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
    // The first sequence number written after the change; writes in flight
    // (numbered above last_seq_) count as written under the new policy.
    r.since = last_seq_ + 1;
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
// Writes
// ---------------------------------------------------------------------------

Mutex* DBImpl::RowLock(std::string_view table, std::string_view row) {
  uint64_t h = Hash64(row, Hash64(table));
  return &row_locks_[h % kRowLockStripes];
}

Status DBImpl::ValidateMutation(const TableState& table,
                                const RowMutation& m) const {
  if (m.empty()) return Status::InvalidArgument("empty mutation");
  TABLETFS_RETURN_IF_ERROR(ValidateRowKey(m.row()));
  for (const RowMutation::Op& op : m.ops()) {
    if (op.type < RowMutation::OpType::kSetCell ||
        op.type > RowMutation::OpType::kDeleteRow) {
      return Status::InvalidArgument("unknown mutation op");
    }
    if (op.type == RowMutation::OpType::kDeleteRow) continue;
    if (table.FindFamily(op.family) == nullptr) {
      return Status::InvalidArgument("unknown family",
                                     table.name + ":" + op.family);
    }
    if (op.type == RowMutation::OpType::kSetCell &&
        op.value.size() > options_.max_value_bytes) {
      return Status::InvalidArgument("value of " +
                                     std::to_string(op.value.size()) +
                                     " bytes is above the limit of " +
                                     std::to_string(options_.max_value_bytes));
    }
  }
  return Status::OK();
}

uint64_t DBImpl::ResolveSpaceReserve() {
  constexpr uint64_t kMaxDefaultReserve = 64u << 20;
  if (options_.space_reserve_bytes.has_value()) {
    Log(LogLevel::kInfo, "space reserve: " +
                             std::to_string(*options_.space_reserve_bytes) +
                             " bytes (space_reserve_bytes)");
    return *options_.space_reserve_bytes;
  }
  Result<uint64_t> size = env_->GetDiskSize(dir_);
  if (!size.ok()) {
    // Unknown (an Env without sizes): the largest default, as before sizes
    // were looked at.
    Log(LogLevel::kInfo, "space reserve: " + std::to_string(kMaxDefaultReserve) +
                             " bytes (filesystem size unknown: " +
                             size.status().ToString() + ")");
    return kMaxDefaultReserve;
  }
  // A few percent, like ext4's root reserve, so a small disk is not all
  // reserve; a filesystem that reports no size at all gets none: writes
  // then fail only with the disk's own ENOSPC.
  uint64_t reserve = std::min(kMaxDefaultReserve, *size / 32);
  Log(LogLevel::kInfo,
      "space reserve: " + std::to_string(reserve) + " bytes (" +
          (*size == 0 ? std::string("the filesystem reports no size")
                      : "1/32 of the " + std::to_string(*size) +
                            "-byte filesystem, at most 64 MiB") +
          "; set it with space_reserve_bytes)");
  return reserve;
}

Status DBImpl::CheckSpace(const RowMutation& m, bool* reclaim) {
  *reclaim = false;
  if (space_reserve_ == 0) return Status::OK();
  Result<uint64_t> free_space = env_->GetFreeSpace(dir_);
  if (!AddsData(m)) {
    // A delete always goes in (the reserve is for it). Short of space (less
    // than twice the reserve free: writers are refused a little before the
    // reserve is reached) it also asks for the space of what it deletes.
    *reclaim = free_space.ok() && *free_space / 2 < space_reserve_;
    return Status::OK();
  }
  if (!free_space.ok()) return free_space.status();
  if (*free_space < space_reserve_) {
    return Status::NoSpace("free space " + std::to_string(*free_space) +
                               " bytes is below the space reserve of " +
                               std::to_string(space_reserve_) +
                               " bytes (option space_reserve_bytes)",
                           dir_);
  }
  return Status::OK();
}

void DBImpl::PublishGroup(const std::vector<Writer*>& group) {
  std::vector<ChangeEvent> events;
  for (const Writer* x : group) {
    if (!x->status.ok()) continue;  // refused when revalidated
    ChangeHub::AppendMutationEvents(x->table, *x->mutation, x->timestamp,
                                    &events);
  }
  changes_.Publish(events);
}

void DBImpl::PublishDrop(std::string_view table, std::string_view family) {
  if (!changes_.HasSubscribers()) return;
  ChangeEvent e;
  e.table = std::string(table);
  e.family = std::string(family);
  e.kind = family.empty() ? ChangeKind::kDropTable : ChangeKind::kDropFamily;
  e.timestamp = last_ts_;
  changes_.Publish({e});
}

Result<std::unique_ptr<ChangeSubscription>> DBImpl::Subscribe(
    const SubscribeOptions& options) {
  return changes_.Subscribe(options);
}

Result<int64_t> DBImpl::Apply(std::string_view table,
                              const RowMutation& mutation,
                              const WriteOptions& options) {
  MutexLock row_lock(RowLock(table, mutation.row()));
  return WriteLocked(table, mutation, options);
}

Result<int64_t> DBImpl::WriteLocked(std::string_view table,
                                    const RowMutation& mutation,
                                    const WriteOptions& options) {
  bool reclaim = false;
  {
    // Fail early, before queueing, for what needs no ordering.
    std::shared_ptr<const TableState> t;
    {
      MutexLock l(&mu_);
      auto it = tables_.find(table);
      if (it == tables_.end()) return Status::NotFound("no such table", table);
      t = it->second;
    }
    TABLETFS_RETURN_IF_ERROR(ValidateMutation(*t, mutation));
    TABLETFS_RETURN_IF_ERROR(CheckSpace(mutation, &reclaim));
  }

  Writer w(&mu_);
  w.table = table;
  w.mutation = &mutation;
  w.sync = options.sync;

  MutexLock l(&mu_);
  writers_.push_back(&w);
  while (!w.done && &w != writers_.front()) Await(&w.cv);
  if (w.done) {
    if (!w.status.ok()) return w.status;
    if (reclaim) RequestReclaim(table, mutation.row());
    return w.timestamp;
  }

  // This writer leads a group. A split or merge in progress goes first.
  while (writers_quiesced_) Await(&fill_cv_);
  Status status = bg_error_;
  if (status.ok()) status = MakeRoomForWrite();
  while (writers_quiesced_) Await(&fill_cv_);
  std::vector<Writer*> group;
  size_t group_bytes = 0;
  for (Writer* x : writers_) {
    if (x->mutation == nullptr) break;  // a Flush request: handled alone
    if (!group.empty() &&
        group_bytes + x->mutation->ByteSize() > kMaxGroupBytes) {
      break;
    }
    group.push_back(x);
    group_bytes += x->mutation->ByteSize();
  }

  std::string record;
  struct Entry {
    std::string key;
    std::string_view value;
    MemTable* mem = nullptr;
    uint32_t table_id = 0;
  };
  std::vector<Entry> entries;
  // Keeps the memtables filled alive even if their table is dropped
  // meanwhile.
  std::vector<std::shared_ptr<MemTable>> mems;
  // The active memtable of the tablet holding `key` (a row prefix or an
  // internal key) of table `table_id`, kept alive in `mems`; nullptr when
  // the table is gone.
  auto route = [&](uint32_t table_id,
                   std::string_view key) REQUIRES(mu_) -> MemTable* {
    Tablet* tablet = FindTablet(table_id, key);
    if (tablet == nullptr) return nullptr;
    if (tablet->mem_first_log == kNoLog) {
      tablet->mem_first_log = current_log_number_;
    }
    if (mems.empty() || mems.back() != tablet->mem) {
      mems.push_back(tablet->mem);
    }
    return tablet->mem.get();
  };
  uint64_t seq = last_seq_;
  int64_t ts = last_ts_;
  bool sync = false;
  if (status.ok()) {
    int64_t now = env_->NowMicros();
    for (Writer* x : group) {
      auto it = tables_.find(x->table);
      if (it == tables_.end()) {
        x->status = Status::NotFound("no such table", x->table);
        continue;
      }
      const TableState& t = *it->second;
      // Revalidated here, under mu_, so a family dropped since the early
      // check cannot be written.
      x->status = ValidateMutation(t, *x->mutation);
      if (!x->status.ok()) continue;
      ts = std::max(now, ts + 1);
      x->timestamp = ts;
      sync = sync || x->sync;
      const std::string& row = x->mutation->row();
      MemTable* mem = route(t.id, RowPrefix(t.id, row));
      size_t first_entry = entries.size();
      for (const RowMutation::Op& op : x->mutation->ops()) {
        ++seq;
        uint32_t fid = 0;
        if (op.type != RowMutation::OpType::kDeleteRow) {
          fid = t.FindFamily(op.family)->id;
        }
        int64_t op_ts = op.timestamp == kServerTimestamp ? ts : op.timestamp;
        switch (op.type) {
          case RowMutation::OpType::kSetCell:
            entries.push_back({VersionKey(t.id, row, fid, op.qualifier, op_ts,
                                          seq, EntryKind::kPut),
                               op.value});
            break;
          case RowMutation::OpType::kDeleteVersion:
            entries.push_back({VersionKey(t.id, row, fid, op.qualifier, op_ts,
                                          seq, EntryKind::kDeleteVersion),
                               {}});
            break;
          case RowMutation::OpType::kDeleteCell:
            entries.push_back(
                {CellMarkerKey(t.id, row, fid, op.qualifier, seq), {}});
            break;
          case RowMutation::OpType::kDeleteFamily:
            entries.push_back({FamilyMarkerKey(t.id, row, fid, seq), {}});
            break;
          case RowMutation::OpType::kDeleteRow:
            entries.push_back({RowMarkerKey(t.id, row, seq), {}});
            break;
        }
      }
      for (size_t i = first_entry; i < entries.size(); ++i) {
        entries[i].mem = mem;
        entries[i].table_id = t.id;
      }
    }
    // Timestamps are consumed even when the log write fails below, so a
    // timestamp is never handed out twice.
    last_ts_ = ts;
  }

  if (status.ok() && !entries.empty()) {
    PutVarint64(&record, seq);
    PutVarint64(&record, static_cast<uint64_t>(ts));
    for (const Entry& e : entries) {
      PutLengthPrefixed(&record, e.key);
      PutLengthPrefixed(&record, e.value);
    }
    uint64_t user_bytes = group_bytes;
    const uint64_t routed = tablet_generation_;
    mu_.Unlock();
    // Only the leader appends to the log. A split, merge or freeze may
    // change the tablets meanwhile (the log write can block for
    // milliseconds; it is kept out of their pause).
    uint64_t log_bytes = 0;
    {
      MutexLock lg(&log_mu_);
      status = log_->AddRecord(record);
      if (status.ok()) status = sync ? log_->Sync() : log_->Flush();
      log_bytes = log_->size();
      if (status.ok() && sync) log_synced_bytes_ = log_bytes;
    }
    mu_.Lock();
    if (status.ok()) {
      // The memtables are filled without mu_, and the tablets do not change
      // while leader_filling_ (QuiesceWriters waits for it): route again if
      // they changed since the entries were routed.
      while (writers_quiesced_) Await(&fill_cv_);
      if (tablet_generation_ != routed) {
        mems.clear();
        // nullptr: the table was dropped meanwhile.
        for (Entry& e : entries) e.mem = route(e.table_id, e.key);
      }
      leader_filling_ = true;
      mu_.Unlock();
      for (const Entry& e : entries) {
        if (e.mem != nullptr) e.mem->Add(e.key, e.value);
      }
      mu_.Lock();
    }
    leader_filling_ = false;
    if (writers_quiesced_) fill_cv_.SignalAll();
    if (status.ok()) {
      last_seq_ = seq;
      if (changes_.HasSubscribers()) PublishGroup(group);
      mem_added_ += record.size();
      stat_bytes_user_ += user_bytes;
      stat_bytes_disk_ += record.size();
      if (sync) ++stat_log_syncs_;
      log_file_bytes_ = log_bytes;
      log_sizes_[current_log_number_] = log_file_bytes_;
    } else if (status.IsNoSpace()) {
      // The numbers are burnt, never reused: the record may have reached
      // the old log whole (then it replays after a crash, like any write
      // whose outcome the caller could not learn).
      last_seq_ = seq;
      // The log may end in a partial record; it reads back as a torn tail
      // only if nothing follows it, so later writes go to a new log. The
      // failure is not sticky: the write can be retried once space returns.
      RollLogAfterFailure();
    } else {
      bg_error_ = status;
      Log(LogLevel::kError, "log write failed: " + status.ToString());
    }
  }

  for (Writer* x : group) {
    if (!status.ok()) x->status = status;
    x->done = true;
    if (x != &w) x->cv.Signal();
    writers_.pop_front();
  }
  if (!writers_.empty()) writers_.front()->cv.Signal();
  if (!w.status.ok()) return w.status;
  if (reclaim) RequestReclaim(table, mutation.row());
  return w.timestamp;
}

Result<AppendResult> DBImpl::Append(std::string_view table,
                                    std::string_view row,
                                    std::string_view family,
                                    std::string_view qualifier,
                                    std::string_view data,
                                    const WriteOptions& options) {
  TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
  MutexLock row_lock(RowLock(table, row));
  ReadOptions ro;
  TABLETFS_ASSIGN_OR_RETURN(std::vector<Cell> cells,
                            ReadCell(table, row, family, qualifier, ro));
  std::string value = cells.empty() ? std::string() : std::move(cells[0].value);
  if (value.size() + data.size() > options_.max_value_bytes) {
    return Status::InvalidArgument("appended value of " +
                                   std::to_string(value.size() + data.size()) +
                                   " bytes is above the limit of " +
                                   std::to_string(options_.max_value_bytes));
  }
  value.append(data);
  RowMutation m{std::string(row)};
  m.SetCell(family, qualifier, value);
  TABLETFS_ASSIGN_OR_RETURN(int64_t ts, WriteLocked(table, m, options));
  return AppendResult{ts, value.size()};
}

Result<int64_t> DBImpl::Increment(std::string_view table, std::string_view row,
                                  std::string_view family,
                                  std::string_view qualifier, int64_t delta,
                                  const WriteOptions& options) {
  TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
  MutexLock row_lock(RowLock(table, row));
  ReadOptions ro;
  TABLETFS_ASSIGN_OR_RETURN(std::vector<Cell> cells,
                            ReadCell(table, row, family, qualifier, ro));
  uint64_t current = 0;
  if (!cells.empty()) {
    if (cells[0].value.size() != 8) {
      return Status::InvalidArgument(
          "increment: value is " + std::to_string(cells[0].value.size()) +
              " bytes, expected an 8-byte big-endian integer",
          std::string(family) + ":" + std::string(qualifier));
    }
    current = DecodeBigEndian64(cells[0].value.data());
  }
  // Wraps around like two's complement arithmetic.
  uint64_t next = current + static_cast<uint64_t>(delta);
  std::string encoded;
  PutBigEndian64(&encoded, next);
  RowMutation m{std::string(row)};
  m.SetCell(family, qualifier, encoded);
  TABLETFS_RETURN_IF_ERROR(WriteLocked(table, m, options).status());
  return static_cast<int64_t>(next);
}

Result<bool> DBImpl::CheckAndMutate(std::string_view table,
                                    std::string_view row,
                                    const CellCondition& condition,
                                    const RowMutation& if_true,
                                    const RowMutation& if_false,
                                    const WriteOptions& options) {
  TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
  for (const RowMutation* m : {&if_true, &if_false}) {
    if (!m->empty() && m->row() != row) {
      return Status::InvalidArgument("CheckAndMutate: mutation for row '" +
                                     m->row() +
                                     "' differs from the checked row");
    }
  }
  {
    std::shared_ptr<const TableState> t;
    {
      MutexLock l(&mu_);
      auto it = tables_.find(table);
      if (it == tables_.end()) return Status::NotFound("no such table", table);
      t = it->second;
    }
    for (const RowMutation* m : {&if_true, &if_false}) {
      if (!m->empty()) TABLETFS_RETURN_IF_ERROR(ValidateMutation(*t, *m));
    }
  }
  MutexLock row_lock(RowLock(table, row));
  ReadOptions ro;
  TABLETFS_ASSIGN_OR_RETURN(
      std::vector<Cell> cells,
      ReadCell(table, row, condition.family, condition.qualifier, ro));
  bool holds = false;
  switch (condition.op) {
    case CellCondition::Op::kExists:
      holds = !cells.empty();
      break;
    case CellCondition::Op::kNotExists:
      holds = cells.empty();
      break;
    case CellCondition::Op::kEquals:
      holds = !cells.empty() && cells[0].value == condition.value;
      break;
  }
  const RowMutation& chosen = holds ? if_true : if_false;
  if (!chosen.empty()) {
    TABLETFS_RETURN_IF_ERROR(WriteLocked(table, chosen, options).status());
  }
  return holds;
}

// ---------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------

Result<DBImpl::ReadState> DBImpl::PinReadState(std::string_view table,
                                               const ReadOptions& options,
                                               std::string_view first_row,
                                               std::string_view end_row,
                                               bool one_row) {
  ReadState state;
  const SnapshotImpl* snap = nullptr;
  if (options.snapshot != nullptr) {
    snap = dynamic_cast<const SnapshotImpl*>(options.snapshot);
    if (snap == nullptr) {
      return Status::InvalidArgument("snapshot from another database");
    }
  }
  MutexLock l(&mu_);
  auto it = tables_.find(table);
  if (it == tables_.end()) return Status::NotFound("no such table", table);
  state.table = it->second;
  uint32_t id = state.table->id;
  std::string lo =
      first_row.empty() ? TableLowKey(id) : RowPrefix(id, first_row);
  std::string hi = end_row.empty() ? TableHighKey(id) : RowPrefix(id, end_row);
  auto pin = [&state](const Tablet& t) {
    TabletView& v = state.tablets.emplace_back();
    v.lo = t.lo;
    v.hi = t.hi;
    v.mems.reserve(t.imm.size() + 1);
    v.mems.push_back(t.mem);
    for (auto imm = t.imm.rbegin(); imm != t.imm.rend(); ++imm) {
      v.mems.push_back(imm->mem);
    }
    v.version = t.version;
  };
  if (one_row) {
    pin(*FindTablet(id, lo));
  } else {
    for (const auto& t : table_tablets_[id]) {
      if (t->lo < hi && lo < t->hi) pin(*t);
    }
  }
  state.view_seq = snap != nullptr ? snap->seq() : last_seq_;
  state.epoch_view = snap != nullptr ? snap->seq() : kMaxSequence;
  return state;
}

std::unique_ptr<Iterator> DBImpl::NewTabletIterator(const TabletView& view) {
  std::vector<std::unique_ptr<Iterator>> children;
  for (const auto& m : view.mems) children.push_back(MemTable::NewIterator(m));
  for (int level = 0; level < Version::kNumLevels; ++level) {
    const auto& files = view.version->levels[level];
    if (files.empty()) continue;
    if (level == 0 || files.size() == 1) {
      for (const auto& f : files) {
        Result<std::shared_ptr<Table>> t =
            table_cache_->Get(f->number, f->size);
        children.push_back(t.ok() ? (*t)->NewIterator()
                                  : NewEmptyIterator(t.status()));
      }
    } else {
      // Disjoint files of one level: one child that opens a file at a
      // time, so a seek touches one file of the level, not all of them.
      children.push_back(NewLevelIterator(
          files, [this](const FileMeta& f) -> std::unique_ptr<Iterator> {
            Result<std::shared_ptr<Table>> t =
                table_cache_->Get(f.number, f.size);
            if (!t.ok()) return NewEmptyIterator(t.status());
            return (*t)->NewIterator();
          }));
    }
  }
  return NewMergingIterator(std::move(children));
}

std::unique_ptr<CellCursor> DBImpl::NewCursor(const ReadState& state,
                                              const ReadOptions& options,
                                              std::string start_row,
                                              std::string end_row,
                                              std::string prefix) {
  // Tablets in row order, each clipped to its range: the scan crosses
  // their boundaries in order and opens a tablet only when it gets there.
  std::vector<IteratorSegment> segments;
  for (const TabletView& view : state.tablets) {
    segments.push_back(
        {view.lo, view.hi, [this, view] { return NewTabletIterator(view); }});
  }
  CursorOptions co;
  co.view_seq = state.view_seq;
  co.epoch_view_seq = state.epoch_view;
  co.now_micros = env_->NowMicros();
  co.at = options.at;
  co.max_versions = options.max_versions;
  co.families = options.families;
  co.columns = options.columns;
  co.start_row = std::move(start_row);
  co.end_row = std::move(end_row);
  co.prefix = std::move(prefix);
  return std::make_unique<CellCursor>(NewSegmentIterator(std::move(segments)),
                                      state.table, std::move(co));
}

namespace {

// The row prefix of an internal key (the whole key when malformed), without
// copying it.
std::string_view RowPrefixView(std::string_view key) {
  ParsedKey p;
  return ParseInternalKey(key, &p) ? p.row_prefix : key;
}

// The file iterators of a point read of one row (LevelDB's Version::Get):
// only files whose rows include it, at most one per level >= 1 (found by
// binary search, levels >= 1 being sorted and disjoint by row), and only
// those whose Bloom filter may hold `row_prefix` and, when `cell_keys` is not
// empty, one of them. The row prefix goes first: every key adds it, so one
// probe rules out a file that holds nothing of the row.
void AddPointFileIterators(TableCache* cache, const Version& version,
                           std::string_view row_prefix,
                           const std::vector<std::string>& cell_keys,
                           std::atomic<uint64_t>* bloom_useful,
                           std::vector<std::unique_ptr<Iterator>>* children) {
  auto add = [&](const FileMeta& f) {
    Result<std::shared_ptr<Table>> t = cache->Get(f.number, f.size);
    if (!t.ok()) {
      children->push_back(NewEmptyIterator(t.status()));
      return;
    }
    const Table& table = **t;
    bool may_contain = table.MayContain(row_prefix);
    if (may_contain && !cell_keys.empty()) {
      may_contain = false;
      for (const std::string& k : cell_keys) {
        if (table.MayContain(k)) {
          may_contain = true;
          break;
        }
      }
    }
    if (!may_contain) {
      bloom_useful->fetch_add(1, std::memory_order_relaxed);
      return;
    }
    children->push_back(table.NewIterator());
  };
  for (const auto& f : version.levels[0]) {
    if (row_prefix < RowPrefixView(f->smallest) ||
        row_prefix > RowPrefixView(f->largest)) {
      continue;
    }
    add(*f);
  }
  for (int level = 1; level < Version::kNumLevels; ++level) {
    const auto& files = version.levels[level];
    auto it = std::lower_bound(
        files.begin(), files.end(), row_prefix,
        [](const std::shared_ptr<const FileMeta>& f, std::string_view rp) {
          return RowPrefixView(f->largest) < rp;
        });
    if (it == files.end()) continue;
    const FileMeta& f = **it;
    if (row_prefix < RowPrefixView(f.smallest)) {
      continue;
    }
    add(f);
  }
}

}  // namespace

std::unique_ptr<CellCursor> DBImpl::NewPointCursor(
    const ReadState& state, const ReadOptions& options, std::string_view row,
    std::string_view row_prefix, const std::vector<std::string>& cell_keys,
    std::string stop_key, bool use_filter) {
  // The row lies in one tablet (PinReadState with one_row).
  const TabletView& view = state.tablets.front();
  std::vector<std::unique_ptr<Iterator>> children;
  children.reserve(view.mems.size() + 4);
  for (const auto& m : view.mems) children.push_back(MemTable::NewIterator(m));
  AddPointFileIterators(table_cache_.get(), *view.version, row_prefix,
                        cell_keys, &stat_bloom_useful_, &children);
  CursorOptions co;
  co.view_seq = state.view_seq;
  co.epoch_view_seq = state.epoch_view;
  co.now_micros = env_->NowMicros();
  co.at = options.at;
  co.max_versions = options.max_versions;
  if (use_filter) {
    co.families = options.families;
    co.columns = options.columns;
  }
  co.start_row.assign(row);
  co.end_row.reserve(row.size() + 1);
  co.end_row.assign(row);
  co.end_row.push_back('\0');  // the first row after `row`
  co.stop_key = std::move(stop_key);
  return std::make_unique<CellCursor>(NewMergingIterator(std::move(children)),
                                      state.table, std::move(co));
}

Result<Row> DBImpl::ReadRow(std::string_view table, std::string_view row,
                            const ReadOptions& options) {
  TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
  TABLETFS_ASSIGN_OR_RETURN(ReadState state,
                            PinReadState(table, options, row, {}, true));
  std::string row_prefix = RowPrefix(state.table->id, row);
  std::string stop = row_prefix;
  stop.push_back('\x03');  // after every key of the row
  auto cursor = NewPointCursor(state, options, row, row_prefix, {},
                               std::move(stop), /*use_filter=*/true);
  Row out;
  out.key = std::string(row);
  for (cursor->Seek(row); cursor->Valid(); cursor->Next()) {
    Cell c;
    c.family = cursor->family();
    c.qualifier = cursor->qualifier();
    c.timestamp = cursor->timestamp();
    TABLETFS_ASSIGN_OR_RETURN(c.value,
                              LoadValue(cursor->kind(), cursor->raw_value()));
    out.cells.push_back(std::move(c));
  }
  TABLETFS_RETURN_IF_ERROR(cursor->status());
  return out;
}

Result<std::vector<Cell>> DBImpl::ReadCell(std::string_view table,
                                           std::string_view row,
                                           std::string_view family,
                                           std::string_view qualifier,
                                           const ReadOptions& options) {
  TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
  TABLETFS_ASSIGN_OR_RETURN(ReadState state,
                            PinReadState(table, options, row, {}, true));
  const FamilyState* fs = state.table->FindFamily(family);
  if (fs == nullptr) {
    return Status::NotFound("no such family",
                            std::string(table) + ":" + std::string(family));
  }
  // A file matters when it may hold the cell or a row / family marker of
  // the row (their own Bloom keys, see store/doc/key_format.md).
  std::string row_prefix = RowPrefix(state.table->id, row);
  std::vector<std::string> bloom_keys(3);
  bloom_keys[1] = row_prefix + '\x01';  // row markers
  bloom_keys[2] = row_prefix + '\x02';
  PutBigEndian32(&bloom_keys[2], fs->id);  // the family prefix
  bloom_keys[0] = bloom_keys[2] + '\x02';
  AppendEscaped(&bloom_keys[0], qualifier);  // the cell prefix
  std::string stop = bloom_keys[0];
  stop.push_back('\x03');  // after every key of the cell
  // No family / column filter: Seek goes straight to the cell (past the
  // row's and the family's markers) and stop ends the read after it.
  auto cursor = NewPointCursor(state, options, row, row_prefix, bloom_keys,
                               std::move(stop), /*use_filter=*/false);
  std::vector<Cell> out;
  for (cursor->Seek(row, family, qualifier);
       cursor->Valid() && cursor->family_id() == fs->id &&
       cursor->qualifier() == qualifier;
       cursor->Next()) {
    Cell c;
    c.family = cursor->family();
    c.qualifier = cursor->qualifier();
    c.timestamp = cursor->timestamp();
    TABLETFS_ASSIGN_OR_RETURN(c.value,
                              LoadValue(cursor->kind(), cursor->raw_value()));
    out.push_back(std::move(c));
  }
  TABLETFS_RETURN_IF_ERROR(cursor->status());
  return out;
}

Result<std::unique_ptr<Scanner>> DBImpl::NewScanner(
    std::string_view table, const ScanOptions& options) {
  // Rows with the prefix sort at or after it.
  std::string_view first_row = options.start_row;
  if (options.prefix > first_row) first_row = options.prefix;
  TABLETFS_ASSIGN_OR_RETURN(
      ReadState state,
      PinReadState(table, options.read, first_row, options.end_row, false));
  auto cursor = NewCursor(state, options.read, options.start_row,
                          options.end_row, options.prefix);
  cursor->SeekToFirst();
  return std::unique_ptr<Scanner>(
      std::make_unique<ScannerImpl>(this, std::move(state), std::move(cursor)));
}

std::shared_ptr<const Snapshot> DBImpl::GetSnapshot() {
  MutexLock l(&mu_);
  snapshots_.insert(last_seq_);
  return std::make_shared<SnapshotImpl>(this, last_seq_);
}

void DBImpl::ReleaseSnapshot(uint64_t seq) {
  MutexLock l(&mu_);
  auto it = snapshots_.find(seq);
  if (it != snapshots_.end()) snapshots_.erase(it);
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
