// DBImpl: opening a directory. The manifest (read, applied, rewritten),
// the commit log replayed into the tablets, and the checks that the live
// files exist (store/doc/manifest_format.md, store/doc/log_format.md).
#include <cinttypes>
#include <cstdio>
#include <optional>

#include "store/db/db_impl.h"
#include "store/db/log_record.h"
#include "store/util/coding.h"
#include "store/wal/log_reader.h"

namespace tabletfs {

namespace {

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

// Whether the log at `path` holds any byte but zeros: a log written through
// a mapping (Env::NewLogFile) is allocated ahead, so a log made and never
// written (a spare, or the log a crash came just after) is zeros, not
// empty. An unreadable log counts as written.
bool LogHoldsBytes(Env* env, const std::string& path) {
  Result<std::unique_ptr<SequentialFile>> file = env->NewSequentialFile(path);
  if (!file.ok()) return true;
  std::string scratch(64 << 10, '\0');
  while (true) {
    std::string_view got;
    if (!(*file)->Read(scratch.size(), &got, scratch.data()).ok()) return true;
    if (got.empty()) return false;
    if (got.find_first_not_of('\0') != std::string_view::npos) return true;
  }
}

}  // namespace

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
    state->created_micros = t.created_micros;
    tables_[t.name] = std::move(state);
    next_schema_id_ = std::max(next_schema_id_, t.id + 1);
    // A new table has one tablet, numbered like the table.
    AddTablet(NewTablet(t.id, t.id, "", ""));
  }
  for (uint32_t id : edit.dropped_tables) {
    auto it = find_by_id(id);
    if (it != tables_.end()) tables_.erase(it);
    backdated_.erase(id);
    auto tablets = table_tablets_.find(id);
    if (tablets != table_tablets_.end()) {
      for (const auto& t : tablets->second) tablets_.erase(t->id);
      table_tablets_.erase(tablets);
    }
  }
  for (const auto& [id, since] : edit.table_since) {
    if (find_by_id(id) == tables_.end()) continue;  // dropped since
    auto [it, added] = backdated_.emplace(id, since);
    if (!added) it->second = std::min(it->second, since);
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
    edit.created_tables.push_back({t->id, t->name, t->created_micros});
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
  AddBackdated(&edit);
  for (const auto& [table_id, tablets] : table_tablets_) {
    for (const auto& t : tablets) {
      edit.tablets.push_back(
          {table_id, t->id, t->start_row, t->end_row, t->log_number});
      if (t->flushed_seq > 0) {
        edit.tablet_flushed_seqs.emplace_back(t->id, t->flushed_seq);
      }
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

void DBImpl::AddBackdated(VersionEdit* edit) {
  for (const auto& [id, since] : backdated_) {
    edit->table_since.emplace_back(id, since);
  }
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
  // The manifest's last timestamp: every commit after it went to the log
  // it names (log_number_) or a later one.
  const int64_t manifest_ts = last_ts_;
  // Per log, the commit time of its first write (none: no record).
  std::vector<std::optional<int64_t>> first_commits;
  // Set at a record whose value never reached the disk: it and everything
  // logged after it were never synced, so replay ends there.
  bool values_torn = false;
  // Values in the newest log's value file may be torn by a power cut (the
  // newest log with records: a switch makes the next log before it syncs
  // the old one's values).
  size_t newest = 0;
  for (size_t i = 0; i < logs.size(); ++i) {
    if (LogHoldsBytes(env_, FileName(logs[i], ".log"))) newest = i;
  }
  for (size_t log_index = 0; log_index < logs.size(); ++log_index) {
    const uint64_t number = logs[log_index];
    const bool may_be_torn = log_index >= newest;
    std::string path = FileName(number, ".log");
    std::optional<int64_t>& first = first_commits.emplace_back();
    if (values_torn) {
      Log(LogLevel::kWarning, "log " + path +
                                  ": dropped whole, written after a record "
                                  "whose value was lost");
      TABLETFS_RETURN_IF_ERROR(env_->TruncateFile(path, 0));
      old_logs->push_back(number);
      continue;
    }
    TABLETFS_ASSIGN_OR_RETURN(auto file, env_->NewSequentialFile(path));
    LogReader reader(std::move(file), path);
    std::string record;
    LogRecord decoded;
    Status s;
    uint64_t records = 0;
    uint64_t skipped = 0;
    uint64_t record_start = 0;  // the end of the last record replayed
    while (reader.ReadRecord(&record, &s)) {
      TABLETFS_RETURN_IF_ERROR(DecodeLogRecord(record, path, &decoded));
      TABLETFS_RETURN_IF_ERROR(ReplayLogRecord(decoded, number, may_be_torn,
                                               &skipped, &values_torn));
      if (values_torn) break;
      if (!first && !decoded.writes.empty()) {
        first = decoded.writes.front().timestamp;
      }
      ++records;
      record_start = reader.LastRecordEndOffset();
    }
    TABLETFS_RETURN_IF_ERROR(s);
    if (values_torn) {
      // As a torn tail: a power cut before the value file's sync (the
      // value is synced before any sync of a log record pointing at it).
      Log(LogLevel::kWarning, "log " + path +
                                  ": a record's value was lost (value file not "
                                  "synced); replay ends at offset " +
                                  std::to_string(record_start));
      TABLETFS_RETURN_IF_ERROR(env_->TruncateFile(path, record_start));
    } else if (reader.zero_tail()) {
      // What a mapped log leaves when its process dies (Env::NewLogFile).
      Log(LogLevel::kInfo,
          "log " + path + ": zeros after offset " +
              std::to_string(reader.LastRecordEndOffset()) +
              " cut (space allocated ahead, or pages a power cut lost)");
      TABLETFS_RETURN_IF_ERROR(
          env_->TruncateFile(path, reader.LastRecordEndOffset()));
    } else if (reader.torn_tail()) {
      Log(LogLevel::kWarning, "log " + path +
                                  ": torn tail dropped after offset " +
                                  std::to_string(reader.LastRecordEndOffset()));
      TABLETFS_RETURN_IF_ERROR(
          env_->TruncateFile(path, reader.LastRecordEndOffset()));
    }
    Log(LogLevel::kInfo, "replayed " + path + ": " + std::to_string(records) +
                             " records, " + std::to_string(skipped) +
                             " entries of them already in tables");
    old_logs->push_back(number);
  }
  // The recovered logs stay for the change history (FinishRecovery), each
  // with a time after which every commit is in it or a later log: just
  // before the first commit it or a later log holds (commit order is
  // timestamp order), and for the oldest also the manifest's time.
  int64_t start = last_ts_;
  for (size_t i = logs.size(); i-- > 0;) {
    if (first_commits[i]) start = *first_commits[i] - 1;
    log_starts_[logs[i]] = i == 0 ? std::min(start, manifest_ts) : start;
  }
  // Only versions older than their table are worth remembering.
  for (const auto& [name, t] : tables_) {
    auto it = backdated_.find(t->id);
    if (it != backdated_.end() && it->second >= t->created_micros) {
      backdated_.erase(it);
    }
  }
  return Status::OK();
}

Status DBImpl::ReplayLogRecord(const LogRecord& record, uint64_t log_number,
                               bool may_be_torn, uint64_t* skipped,
                               bool* values_torn) {
  // First the values the entries to replay point at (written at commit,
  // beside the log: store/doc/value_file_format.md): the record replays
  // whole or not at all, without the entries whose value is gone.
  std::vector<size_t> gone;
  for (size_t i = 0; i < record.entries.size(); ++i) {
    const LogRecordEntry& entry = record.entries[i];
    // The kind is the key's last byte: only references are parsed here.
    if (entry.key.empty() || KindOf(entry.key) != EntryKind::kPutValueRef) {
      continue;
    }
    ParsedKey parsed;
    if (!ParseInternalKey(entry.key, &parsed)) continue;  // refused below
    const Tablet* t = FindTablet(parsed.table_id, entry.key);
    if (t == nullptr || log_number < t->log_number ||
        parsed.seq <= t->flushed_seq) {
      continue;
    }
    TABLETFS_ASSIGN_OR_RETURN(ValueRef ref, ValueRef::DecodeFrom(entry.value));
    TABLETFS_ASSIGN_OR_RETURN(ReplayedValue found,
                              CheckReplayedValue(ref, may_be_torn));
    if (found == ReplayedValue::kTorn) {
      *values_torn = true;
      return Status::OK();
    }
    if (found == ReplayedValue::kGone) {
      gone.push_back(i);
    } else {
      replayed_value_files_.insert(ref.file_number);
    }
  }
  size_t next_gone = 0;
  for (size_t i = 0; i < record.entries.size(); ++i) {
    const LogRecordEntry& entry = record.entries[i];
    if (next_gone < gone.size() && gone[next_gone] == i) {
      ++next_gone;
      ++*skipped;
      continue;
    }
    const std::string_view key = entry.key;
    ParsedKey parsed;
    if (!ParseInternalKey(key, &parsed)) {
      return Status::Corruption("log record: bad entry key",
                                FileName(log_number, ".log"));
    }
    // Into the tablet that holds the row now, unless that tablet's entries
    // from this log, or up to this sequence, are already in its SSTables;
    // not at all for a table dropped since.
    Tablet* t = FindTablet(parsed.table_id, key);
    if (t == nullptr) continue;
    if (log_number < t->log_number || parsed.seq <= t->flushed_seq) {
      ++*skipped;
      continue;
    }
    if (parsed.section == KeySection::kVersion &&
        (parsed.kind == EntryKind::kPut ||
         parsed.kind == EntryKind::kPutValueRef)) {
      // Every table's oldest replayed version; RecoverLogs keeps those
      // older than their table.
      NoteVersionWritten(parsed.table_id, parsed.timestamp);
    }
    t->mem->Add(key, entry.value);
    if (t->mem_first_log == kNoLog) {
      t->mem_first_log = log_number;
      t->mem_first_seq = parsed.seq;
    }
  }
  last_seq_ = std::max(last_seq_, record.last_seq);
  last_ts_ = std::max(last_ts_, record.last_ts);
  return Status::OK();
}

}  // namespace tabletfs
