// DBImpl: change subscriptions (store/changes.h). Live events are published
// by the write path (db_write.cc); a subscription that starts in the past
// (SubscribeOptions::since) first reads that past from the commit logs the
// engine keeps (KeptLogFloor), lazily, one batch per Read, then goes on
// with the live events queued since it was registered.
#include <algorithm>

#include "store/db/db_impl.h"
#include "store/db/key_format.h"
#include "store/db/log_record.h"
#include "store/wal/log_reader.h"

namespace tabletfs {

// Reads the logs from first_log on, up to the record of sequence end_seq
// (the last one committed when it was registered, under mu_, where commits
// publish): the live queue holds exactly what came after. The logs it has
// still to read are pinned (history_pins_) so they are not deleted under
// it.
class DBImpl::HistorySubscription final : public ChangeSubscription {
 public:
  HistorySubscription(
      DBImpl* db, const SubscribeOptions& options,
      std::unique_ptr<ChangeSubscription> live,
      std::map<uint32_t, std::shared_ptr<const TableState>> tables,
      std::vector<uint64_t> logs, uint64_t end_seq)
      : db_(db),
        since_(*options.since),
        max_events_(options.max_queued_events),
        max_bytes_(options.max_queued_bytes),
        values_(options.values),
        exclude_origin_(options.exclude_origin),
        live_(std::move(live)),
        tables_(std::move(tables)),
        logs_(std::move(logs)),
        end_seq_(end_seq) {}
  ~HistorySubscription() override { Unpin(); }

  ChangeBatch Read(std::chrono::microseconds timeout) override {
    if (!history_done_) {
      ChangeBatch batch;
      Status s = ReadHistory(&batch.events);
      if (!s.ok()) {
        db_->Log(LogLevel::kError,
                 "change history: " + s.ToString() +
                     "; the subscription skips to the live changes");
        FinishHistory();
        batch.lost = 1;
      }
      batch.past = !batch.events.empty();
      if (batch.past || batch.lost != 0) return batch;
    }
    return live_->Read(timeout);
  }
  void Wake() override { live_->Wake(); }

 private:
  // Appends the events of whole records, up to max_events_ (or one record
  // more), to *events; sets history_done_ at the end of the past.
  Status ReadHistory(std::vector<ChangeEvent>* events) {
    std::string record;
    LogRecord decoded;
    size_t bytes = 0;
    while (!history_done_ && events->size() < max_events_ &&
           bytes < max_bytes_) {
      if (reader_ == nullptr) {
        if (next_log_ == logs_.size()) {
          FinishHistory();
          break;
        }
        path_ = db_->FileName(logs_[next_log_], ".log");
        TABLETFS_ASSIGN_OR_RETURN(auto file,
                                  db_->env_->NewSequentialFile(path_));
        reader_ = std::make_unique<LogReader>(std::move(file), path_);
      }
      Status s;
      if (!reader_->ReadRecord(&record, &s)) {
        TABLETFS_RETURN_IF_ERROR(s);
        // The end of this log (a torn tail only where a failed write
        // replaced the log): on with the next one.
        reader_.reset();
        ++next_log_;
        Repin();
        continue;
      }
      TABLETFS_RETURN_IF_ERROR(DecodeLogRecord(record, path_, &decoded));
      if (decoded.last_seq > end_seq_) {
        FinishHistory();
        break;
      }
      bytes += record.size();
      AppendRecordEvents(decoded, events);
      if (decoded.last_seq == end_seq_) FinishHistory();
    }
    return Status::OK();
  }

  void AppendRecordEvents(const LogRecord& record,
                          std::vector<ChangeEvent>* events) const {
    size_t i = 0;
    for (const LogRecordWrite& w : record.writes) {
      const size_t end = i + w.entries;
      const bool wanted = w.timestamp >= since_ &&
                          (exclude_origin_ == 0 || w.origin != exclude_origin_);
      for (; wanted && i < end; ++i) {
        AppendEntryEvent(record.entries[i], w, events);
      }
      i = end;
    }
  }

  // Entries of tables and families dropped since (or of other tables) have
  // no event: their data is gone.
  void AppendEntryEvent(const LogRecordEntry& entry,
                        const LogRecordWrite& write,
                        std::vector<ChangeEvent>* events) const {
    ParsedKey parsed;
    if (!ParseInternalKey(entry.key, &parsed)) return;  // replay checked it
    auto t = tables_.find(parsed.table_id);
    if (t == tables_.end()) return;
    const FamilyState* family = nullptr;
    if (parsed.section != KeySection::kRowMarker) {
      family = t->second->FindFamilyById(parsed.family_id);
      if (family == nullptr) return;
    }
    ChangeEvent& e = events->emplace_back();
    e.table = t->second->name;
    e.row = Unescape(parsed.row_enc);
    e.timestamp = write.timestamp;
    e.origin = write.origin;
    if (family != nullptr) e.family = family->name;
    switch (parsed.section) {
      case KeySection::kRowMarker:
        e.kind = ChangeKind::kDeleteRow;
        break;
      case KeySection::kFamilyMarker:
        e.kind = ChangeKind::kDeleteFamily;
        break;
      case KeySection::kCellMarker:
        e.kind = ChangeKind::kDeleteCell;
        e.qualifier = Unescape(parsed.qualifier_enc);
        break;
      case KeySection::kVersion:
        e.kind = parsed.kind == EntryKind::kDeleteVersion
                     ? ChangeKind::kDeleteVersion
                     : ChangeKind::kSetCell;
        e.qualifier = Unescape(parsed.qualifier_enc);
        e.timestamp = parsed.timestamp;
        // A large value the log holds as a reference is read by the
        // subscriber, as a live event's.
        if (values_ && parsed.kind == EntryKind::kPut &&
            entry.value.size() <= kMaxEventValueBytes) {
          e.value = std::string(entry.value);
        }
        break;
    }
  }

  void FinishHistory() {
    history_done_ = true;
    reader_.reset();
    Unpin();
  }

  // Moves the pin to logs_[next_log_], or drops it past the last log.
  void Repin() {
    MutexLock l(&db_->mu_);
    db_->history_pins_.erase(db_->history_pins_.find(logs_[next_log_ - 1]));
    if (next_log_ < logs_.size()) db_->history_pins_.insert(logs_[next_log_]);
  }

  void Unpin() {
    if (pin_released_) return;
    pin_released_ = true;
    if (next_log_ >= logs_.size()) return;
    MutexLock l(&db_->mu_);
    db_->history_pins_.erase(db_->history_pins_.find(logs_[next_log_]));
  }

  DBImpl* const db_;
  const int64_t since_;
  const size_t max_events_;
  const size_t max_bytes_;
  const bool values_;
  const uint64_t exclude_origin_;
  const std::unique_ptr<ChangeSubscription> live_;
  // The tables whose events are wanted, by id, as of the subscription.
  const std::map<uint32_t, std::shared_ptr<const TableState>> tables_;
  const std::vector<uint64_t> logs_;
  const uint64_t end_seq_;
  size_t next_log_ = 0;  // logs_[next_log_] is pinned until it is read
  std::string path_;
  std::unique_ptr<LogReader> reader_;
  bool history_done_ = false;
  bool pin_released_ = false;
};

Result<std::unique_ptr<ChangeSubscription>> DBImpl::Subscribe(
    const SubscribeOptions& options) {
  if (!options.since) return changes_.Subscribe(options);
  const int64_t since = *options.since;
  MutexLock l(&mu_);
  // Flushed logs past the history budget are forgotten now, not when the
  // background thread next deletes files: the answer does not depend on
  // its timing.
  KeptLogFloor();
  // Every commit after a log's start is in that log or a later one.
  const int64_t oldest =
      (log_starts_.empty() ? last_ts_ : log_starts_.begin()->second) + 1;
  if (since < oldest) {
    return Status::NotFound(
        "changes before " + std::to_string(oldest) +
        " are no longer held (the oldest commit log kept starts there; "
        "change_history_bytes keeps more); a start at " +
        std::to_string(since) + " is older");
  }
  // Registered under mu_, where commits publish: the live queue takes
  // every commit after the end below, the logs hold every one up to it
  // (not last_seq_ itself: UpdateFamily may have raised it into the group
  // being written, which is published live when it lands).
  TABLETFS_ASSIGN_OR_RETURN(std::unique_ptr<ChangeSubscription> live,
                            changes_.Subscribe(options));
  std::map<uint32_t, std::shared_ptr<const TableState>> tables;
  if (options.table.empty()) {
    tables = TablesById();
  } else if (auto it = tables_.find(options.table); it != tables_.end()) {
    tables[it->second->id] = it->second;
  }
  // From the newest log that starts before `since`: older ones hold only
  // earlier commits.
  std::vector<uint64_t> logs;
  for (const auto& [number, start] : log_starts_) {
    if (start < since) logs.clear();
    logs.push_back(number);
  }
  if (last_seq_ == 0 || tables.empty()) logs.clear();
  if (!logs.empty()) history_pins_.insert(logs.front());
  return std::unique_ptr<ChangeSubscription>(
      std::make_unique<HistorySubscription>(this, options, std::move(live),
                                            std::move(tables), std::move(logs),
                                            SequenceBeforeUnwritten()));
}

}  // namespace tabletfs
