// The parts of DBImpl that move data out of the memtable: freezing,
// flushing, the background thread and the commit interval, and the
// maintenance calls that wait for them. Compaction is in db_compaction.cc,
// file lifetimes in db_files.cc. Policy: store/doc/compaction.md.
#include <algorithm>
#include <cassert>
#include <cinttypes>
#include <cstdio>
#include <thread>

#include "store/db/compaction_filter.h"
#include "store/db/db_impl.h"
#include "store/db/level_iterator.h"
#include "store/db/merger.h"
#include "store/table/table_builder.h"
#include "store/util/coding.h"
#include "store/wal/log_reader.h"

namespace tabletfs {

namespace {

// Level-0 files that stall writers (see kL0CompactionTrigger in
// db_compaction.cc).
constexpr int kL0StopWrites = 12;
// Level-0 files from which each write group waits 1 ms, once, before it
// goes on (LevelDB's kL0_SlowdownWritesTrigger): the background thread gets
// the core, and the delay is spread over many writes instead of one write
// waiting for whole compactions at kL0StopWrites.
constexpr int kL0SlowdownWrites = 8;
constexpr std::chrono::microseconds kL0SlowdownDelay{1000};
// Unsynced log bytes (with its value file's) past which the commit thread
// syncs the log early (LogUpkeep), at most.
constexpr uint64_t kLogBytesPerSync = 4 << 20;
// How often paused background work looks for free space that came back.
constexpr std::chrono::microseconds kPausedRetryInterval{1000000};

}  // namespace

// ---------------------------------------------------------------------------
// Recovery's flush, memtable freezing
// ---------------------------------------------------------------------------

uint64_t DBImpl::NewFileNumber() {
  MutexLock l(&mu_);
  return next_file_number_++;
}

std::map<uint32_t, std::shared_ptr<const TableState>> DBImpl::TablesById() {
  std::map<uint32_t, std::shared_ptr<const TableState>> out;
  for (const auto& [name, t] : tables_) out[t->id] = t;
  return out;
}

Status DBImpl::FinishRecovery(const std::vector<uint64_t>& old_logs) {
  // The replayed entries go to level 0 of their tablets now, so the old
  // logs can go and the next open replays only what is written from here.
  std::vector<std::shared_ptr<Tablet>> tablets;
  std::map<uint32_t, std::shared_ptr<const TableState>> tables;
  {
    MutexLock l(&mu_);
    for (const auto& [id, t] : tablets_) {
      if (t->mem->entries() > 0) tablets.push_back(t);
    }
    tables = TablesById();
  }
  VersionEdit edit;
  for (const auto& t : tablets) {
    // Recovery is single-threaded: nothing else touches the tablets.
    auto iter = NewSegmentIterator({{t->lo, t->hi, [mem = t->mem] {
                                       return MemTable::NewIterator(mem);
                                     }}});
    std::vector<FileMeta> outputs;
    TABLETFS_RETURN_IF_ERROR(WriteTables(iter.get(), tables, nullptr, 0,
                                         /*move_large_values=*/true, t->id,
                                         &outputs));
    edit.added_files.insert(edit.added_files.end(), outputs.begin(),
                            outputs.end());
  }
  // The values the replayed entries point at were maybe never synced
  // (written at commit, beside the log): durable before the manifest names
  // them and the logs go.
  std::set<uint64_t> values;
  {
    MutexLock l(&mu_);
    values.swap(replayed_value_files_);
  }
  for (uint64_t vf : values) {
    const std::string path = FileName(vf, ".vlf");
    Result<std::unique_ptr<WritableFile>> f = env_->NewAppendableFile(path);
    if (!f.ok()) return f.status().WithContext(path);
    TABLETFS_RETURN_IF_ERROR((*f)->Sync().WithContext(path));
    TABLETFS_RETURN_IF_ERROR((*f)->Close().WithContext(path));
  }
  uint64_t new_log = NewFileNumber();
  {
    MutexLock l(&mu_);
    edit.log_number = new_log;
    TABLETFS_RETURN_IF_ERROR(ApplyEdit(edit));
    for (const auto& [id, t] : tablets_) {
      t->mem = NewMemTable();
      t->mem_first_log = kNoLog;
      t->RefreshView();
    }
    if (!edit.added_files.empty()) ++stat_flushes_;
  }
  {
    MutexLock s(&schema_mu_);
    TABLETFS_RETURN_IF_ERROR(WriteNewManifest());
  }
  std::string path = FileName(new_log, ".log");
  TABLETFS_ASSIGN_OR_RETURN(auto file, env_->NewLogFile(path));
  {
    MutexLock lg(&log_mu_);
    log_ = std::make_unique<LogWriter>(std::move(file));
    log_synced_bytes_ = 0;
    log_synced_total_ = 0;
  }
  // The log's directory entry must be durable before a synced write in it
  // is acknowledged.
  TABLETFS_RETURN_IF_ERROR(env_->SyncDir(dir_));
  // The recovered logs are history now (Options::change_history_bytes):
  // their sizes count against its budget.
  std::map<uint64_t, uint64_t> old_sizes;
  for (uint64_t number : old_logs) {
    Result<uint64_t> size = env_->GetFileSize(FileName(number, ".log"));
    old_sizes[number] = size.ok() ? *size : 0;
  }
  {
    MutexLock l(&mu_);
    current_log_number_ = new_log;
    log_sizes_.insert(old_sizes.begin(), old_sizes.end());
    log_sizes_[new_log] = 0;
    log_starts_[new_log] = last_ts_;
  }
  if (!old_logs.empty()) {
    Log(LogLevel::kInfo,
        "recovered " + std::to_string(old_logs.size()) + " logs into " +
            std::to_string(edit.added_files.size()) + " level-0 files");
  }
  return RemoveOrphans();
}

void DBImpl::RollLogAfterFailure() {
  if (spare_log_ != nullptr) {
    // The roll's log is numbered above it: a new spare is made for the
    // roll's log instead.
    spare_log_.reset();
    env_->RemoveFile(FileName(spare_log_number_, ".log")).IgnoreError();
  }
  uint64_t number = next_file_number_++;
  newest_log_number_ = number;
  std::string path = FileName(number, ".log");
  auto file = env_->NewLogFile(path);
  if (!file.ok()) {
    bg_error_ = file.status().WithContext("replacing a failed log");
    return;
  }
  Status synced;
  {
    MutexLock lg(&log_mu_);
    AwaitLogIdle();  // a commit may be syncing the failed log
    // The failed log holds acknowledged writes before the failure: sync
    // what reached the kernel (a partial record at its end reads back as a
    // torn tail), so that, like every switched log, it is durable before
    // anything in the next one can be (the commit interval and synced
    // writes sync only the current log).
    synced = CloseLogValues();
    if (synced.ok() || synced.IsNotSupported()) synced = log_->SyncFlushed();
    log_ = std::make_unique<LogWriter>(std::move(*file));
    log_synced_bytes_ = 0;
    log_synced_total_ = 0;
  }
  if (!synced.ok() && !synced.IsNotSupported()) {
    bg_error_ = synced.WithContext("syncing a failed log");
  }
  current_log_number_ = number;
  log_file_bytes_ = 0;
  log_sizes_[number] = 0;
  log_starts_[number] = last_ts_;
  Status s = env_->SyncDir(dir_);
  if (!s.ok()) bg_error_ = s.WithContext("replacing a failed log");
}

Status DBImpl::SwitchLog() {
  // The commit thread's spare log when it has one (LogUpkeep): made, and
  // its directory entry synced, beside the writers.
  // It is numbered above every log made so far: LogUpkeep keeps it only
  // then, and RollLogAfterFailure drops it.
  uint64_t number = 0;
  std::unique_ptr<WritableFile> file;
  if (spare_log_ != nullptr) {
    assert(spare_log_number_ > newest_log_number_);
    number = spare_log_number_;
    newest_log_number_ = number;
    file = std::move(spare_log_);
  }
  const bool entry_synced = file != nullptr;
  if (file == nullptr) {
    // Creating the file under mu_ is rare (once per log) and keeps the
    // switch atomic for the queue.
    number = next_file_number_++;
    newest_log_number_ = number;  // a spare made meanwhile is passed
    Result<std::unique_ptr<WritableFile>> made =
        env_->NewLogFile(FileName(number, ".log"));
    if (!made.ok()) return made.status().WithContext("new log");
    file = std::move(*made);
  }
  // The new log's directory entry is made durable before the log is used,
  // and the old log is synced before it is closed: its writes may have
  // been acknowledged without sync, and a later DB::Sync() or synced write
  // only syncs the new log, yet promises durability for everything
  // acknowledged before it. Both run without mu_ (the leader's writers
  // wait; readers and the background thread do not): under a compaction's
  // writeback the directory's fsync alone took up to 380 ms, and a read
  // waited for all of it (docs/BENCHMARKS.md, "The read stall with splits
  // off"). The old log's sync waits for any sync beside the writers
  // (SyncLogConcurrently) of it to end; the early syncs (LogUpkeep) leave
  // it little to do.
  mu_.Unlock();
  Status s = entry_synced ? Status::OK() : env_->SyncDir(dir_);
  if (!s.ok()) {
    // Nothing was switched: the next group tries again with a new number.
    file.reset();
    env_->RemoveFile(FileName(number, ".log")).IgnoreError();
    mu_.Lock();
    return s.WithContext("new log");
  }
  {
    MutexLock lg(&log_mu_);
    AwaitLogIdle();        // a commit may be syncing the old log
    s = CloseLogValues();  // its values before it
    if (s.ok()) s = log_->Sync();
    if (s.ok()) s = log_->Close();
    if (s.ok()) {
      log_ = std::make_unique<LogWriter>(std::move(file));
      log_synced_bytes_ = 0;
      log_synced_total_ = 0;
    }
  }
  mu_.Lock();
  if (!s.ok()) {
    // The old log may now end in a partial sync: its entries' durability is
    // unknown, so the failure is sticky (LevelDB's bg_error_).
    if (bg_error_.ok()) bg_error_ = s.WithContext("syncing a full log");
    Log(LogLevel::kError, "log sync failed: " + s.ToString());
    return bg_error_;
  }
  ++stat_log_syncs_;
  current_log_number_ = number;
  log_file_bytes_ = 0;
  log_sizes_[number] = 0;
  log_starts_[number] = last_ts_;
  return Status::OK();
}

void DBImpl::FreezeTablet(Tablet* t, bool wake) {
  if (t->mem->entries() == 0) return;
  t->imm.push_back(t->FrozenMem(++freeze_order_));
  freezes_.fetch_add(1, std::memory_order_relaxed);
  t->mem = NewMemTable();
  t->RefreshView();
  ++tablet_generation_;
  t->mem_first_log = kNoLog;
  bg_paused_ = false;
  if (wake) {
    bg_cv_.Signal();
  } else {
    wake_after_group_ = true;
  }
}

uint64_t DBImpl::FrozenBytes() {
  uint64_t bytes = 0;
  std::set<const MemTable*> seen;
  for (const auto& [id, t] : tablets_) {
    for (const Immutable& i : t->imm) {
      if (seen.insert(i.mem.get()).second) {
        bytes += i.mem->ChargedBytes();
      }
    }
  }
  return bytes;
}

Status DBImpl::MakeRoomForWrite() {
  const uint64_t budget = std::max<uint64_t>(options_.memtable_bytes, 2);
  // Active memtables are frozen at half the budget, so a frozen one being
  // flushed and the active ones filling meanwhile stay within the budget
  // together (LevelDB's mem + imm at write_buffer_size each) while flushes
  // keep up. When they fall behind (flushes queue behind a compaction on
  // the one background thread), frozen memtables may hold up to one more
  // budget before writers stall.
  const uint64_t write_buffer = budget / 2;
  const uint64_t limit = 2 * budget;
  bool stalled = false;
  bool delayed = false;
  while (true) {
    if (!bg_error_.ok()) return bg_error_;
    if (!delayed && max_l0_ >= kL0SlowdownWrites && max_l0_ < kL0StopWrites) {
      delayed = true;
      ++stat_write_delays_;
      bg_cv_.Signal();
      mu_.Unlock();
      std::this_thread::sleep_for(kL0SlowdownDelay);
      mu_.Lock();
      continue;
    }
    bool stall = max_l0_ >= kL0StopWrites;
    if (!stall && mem_added_ >= mem_check_at_) {
      // Count exactly; past half the budget, freeze the largest memtable.
      // An empty memtable is never frozen, so a huge write always fits
      // after one freeze.
      uint64_t active = 0, largest_bytes = 0;
      Tablet* largest = nullptr;
      for (const auto& [id, t] : tablets_) {
        uint64_t bytes = t->mem->entries() > 0 ? t->mem->ChargedBytes() : 0;
        active += bytes;
        if (bytes > largest_bytes) {
          largest_bytes = bytes;
          largest = t.get();
        }
      }
      mem_added_ = active;
      const uint64_t frozen = FrozenBytes();
      if (frozen > 0 && frozen + active >= limit) {
        stall = true;  // the flushes must make room first
      } else if (active >= write_buffer && largest != nullptr) {
        FreezeTablet(largest, /*wake=*/false);
        mem_added_ -= largest_bytes;
        mem_check_at_ = 0;
        continue;
      } else {
        // mem_added_ grows by log record bytes, fewer than the memory the
        // entries take in a memtable: count again once a quarter of the
        // room left is used, so the count never runs far past the limit.
        uint64_t room = write_buffer > active ? write_buffer - active : 0;
        if (frozen > 0) room = std::min(room, limit - frozen - active);
        mem_check_at_ = active + std::max<uint64_t>(room / 4, 256);
      }
    }
    if (stall) {
      mem_check_at_ = 0;  // count again once woken
      // Flushes or compactions fell behind: wait rather than grow memory
      // or level 0 without bound.
      if (!stalled) ++stat_write_stalls_;
      stalled = true;
      const uint64_t unpaused_at = Unpause();
      Await(&done_cv_);
      if (PausedSince(unpaused_at)) {
        return Status::NoSpace("write stalled: background work is out of space",
                               dir_);
      }
      continue;
    }
    if (log_file_bytes_ >= LogBytesLimit()) {
      TABLETFS_RETURN_IF_ERROR(SwitchLog());
      // The logs kept for replay: past the bound, flush the tablets that
      // hold the oldest one, so it can go.
      uint64_t oldest = MinLiveLog();
      uint64_t kept = 0;
      for (const auto& [number, bytes] : log_sizes_) {
        if (number >= oldest) kept += bytes;
      }
      if (kept > options_.max_log_bytes) {
        for (const auto& [id, t] : tablets_) {
          if (t->mem_first_log <= oldest) FreezeTablet(t.get(), false);
        }
      }
    }
    return Status::OK();
  }
}

Status DBImpl::SyncOrFlushRequest(bool flush_memtable) {
  Writer w(&mu_);
  w.flush = flush_memtable;
  MutexLock l(&mu_);
  writers_.push_back(&w);
  while (&w != writers_.front()) Await(&w.cv);
  Status status = bg_error_;
  uint64_t target = 0;  // flush every memtable frozen up to this order
  if (status.ok() && flush_memtable) {
    // A fresh log first, so the flushes below record it as every tablet's
    // position and every older log can go once they finish.
    if (log_file_bytes_ > 0) status = SwitchLog();
    if (status.ok()) {
      for (const auto& [id, t] : tablets_) FreezeTablet(t.get());
      target = freeze_order_;
      mem_added_ = 0;
      mem_check_at_ = 0;
    }
  } else if (status.ok()) {
    mu_.Unlock();
    {
      MutexLock lg(&log_mu_);
      status = SyncLogValues();
      if (status.ok()) status = log_->Sync();
      if (status.ok()) {
        log_synced_bytes_ = log_->size();
        log_synced_total_ =
            log_->size() + (log_values_ ? log_values_->size() : 0);
      }
    }
    mu_.Lock();
    if (status.ok()) {
      ++stat_log_syncs_;
    } else {
      bg_error_ = status;
    }
  }
  writers_.pop_front();
  if (!writers_.empty()) writers_.front()->cv.Signal();
  if (target != 0) {
    const uint64_t unpaused_at = Unpause();
    auto pending = [&]() REQUIRES(mu_) {
      for (const auto& [id, t] : tablets_) {
        if (!t->imm.empty() && t->imm.front().order <= target) return true;
      }
      return false;
    };
    while (bg_error_.ok() && !PausedSince(unpaused_at) && pending()) {
      Await(&done_cv_);
    }
    if (bg_error_.ok() && bg_paused_ && pending()) {
      return Status::NoSpace("flush: out of space", dir_);
    }
    status = bg_error_;
  }
  return status;
}

// ---------------------------------------------------------------------------
// The background thread
// ---------------------------------------------------------------------------

void DBImpl::StartBackground() {
  bg_thread_ = std::thread([this] { BackgroundLoop(); });
  if (options_.commit_interval.count() > 0) {
    commit_thread_ = std::thread([this] { CommitLoop(); });
  }
}

void DBImpl::StopBackground() {
  {
    MutexLock l(&mu_);
    shutting_down_ = true;
    bg_cv_.SignalAll();
    commit_cv_.SignalAll();
  }
  if (bg_thread_.joinable()) bg_thread_.join();
  if (commit_thread_.joinable()) commit_thread_.join();
  closing_.store(true);
}

// ---------------------------------------------------------------------------
// The commit interval
// ---------------------------------------------------------------------------

void DBImpl::CommitLoop() {
  // Ticks on a fixed schedule (not "interval after the last sync"), so a
  // write waits at most one interval plus one sync for its commit.
  using Clock = std::chrono::steady_clock;
  const auto interval =
      std::chrono::duration_cast<Clock::duration>(options_.commit_interval);
  Clock::time_point next = Clock::now() + interval;
  MutexLock l(&mu_);
  while (!shutting_down_) {
    if (log_sync_wanted_ || spare_log_wanted_) {
      LogUpkeep();
      continue;
    }
    Clock::time_point now = Clock::now();
    if (now < next) {
      AwaitFor(
          &commit_cv_,
          std::chrono::duration_cast<std::chrono::microseconds>(next - now) +
              std::chrono::microseconds(1));
      continue;  // shutting down, or woken early: look again
    }
    // Behind (a slow sync, a stopped process): the next tick is an interval
    // from now, not a burst of missed ones.
    next += interval;
    if (next <= now) next = now + interval;
    mu_.Unlock();
    CommitLog().IgnoreError();  // sticky in bg_error_ and logged
    mu_.Lock();
  }
}

void DBImpl::RequestLogUpkeep(uint64_t unsynced) {
  if (options_.commit_interval.count() <= 0) return;  // no commit thread
  bool wake = false;
  // Every 4 MiB (an eighth of a smaller log): the switch's own sync of the
  // old log then covers at most that much.
  const uint64_t per_sync = std::clamp<uint64_t>(LogBytesLimit() / 8, 1,
                                                 kLogBytesPerSync);
  if (unsynced >= per_sync && !log_sync_wanted_) {
    log_sync_wanted_ = true;
    wake = true;
  }
  if (spare_log_ == nullptr && !spare_log_wanted_ &&
      spare_log_failed_during_ != current_log_number_ &&
      log_file_bytes_ >= LogBytesLimit() / 2) {
    spare_log_wanted_ = true;
    wake = true;
  }
  if (wake) commit_cv_.Signal();
}

void DBImpl::LogUpkeep() {
  if (log_sync_wanted_) {
    // Still wanted while it runs: the groups written meanwhile do not ask
    // for another sync at once.
    mu_.Unlock();
    CommitLog().IgnoreError();  // sticky in bg_error_ and logged
    mu_.Lock();
    log_sync_wanted_ = false;
  }
  if (!spare_log_wanted_) return;
  if (shutting_down_) {
    spare_log_wanted_ = false;
    return;
  }
  const uint64_t number = next_file_number_++;
  const std::string path = FileName(number, ".log");
  mu_.Unlock();
  Result<std::unique_ptr<WritableFile>> file = env_->NewLogFile(path);
  Status s = file.status();
  if (s.ok()) s = env_->SyncDir(dir_);
  mu_.Lock();
  spare_log_wanted_ = false;
  // Not if a switch or roll took a number after this one meanwhile (its
  // log may not be current yet: the switch runs without mu_ for a while).
  if (s.ok() && spare_log_ == nullptr &&
      number > std::max(newest_log_number_, current_log_number_) &&
      !shutting_down_) {
    spare_log_ = std::move(*file);
    spare_log_number_ = number;
    return;
  }
  // Not needed (a switch or roll made its own meanwhile) or not made: the
  // next switch makes its file itself, as without a commit thread.
  if (!s.ok()) {
    spare_log_failed_during_ = current_log_number_;
    Log(LogLevel::kWarning, "preparing the next log: " + s.ToString());
  }
  mu_.Unlock();
  if (file.ok()) {
    file->reset();
    env_->RemoveFile(path).IgnoreError();
  }
  mu_.Lock();
}

Status DBImpl::CommitLog() {
  {
    MutexLock l(&mu_);
    // After a failure the log's durability is unknown: nothing to promise.
    if (!bg_error_.ok()) return bg_error_;
  }
  bool synced = false;
  const auto start = std::chrono::steady_clock::now();
  Status s = SyncLogConcurrently(&synced);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  MutexLock l(&mu_);
  if (!s.ok()) {
    // As for any failed sync: what the log holds past its last good sync
    // may be gone, so nothing more is acknowledged (LevelDB's bg_error_).
    if (bg_error_.ok()) bg_error_ = s.WithContext("commit interval");
    Log(LogLevel::kError, "log sync failed: " + s.ToString());
    return bg_error_;
  }
  if (synced) {
    ++stat_commit_syncs_;
    stat_commit_sync_micros_ += static_cast<uint64_t>(micros.count());
  }
  return Status::OK();
}

Status DBImpl::SyncLogBeforeSchemaEdit() {
  bool synced = false;
  Status s = SyncLogConcurrently(&synced);
  MutexLock l(&mu_);
  if (!s.ok()) {
    if (bg_error_.ok()) {
      bg_error_ = s.WithContext("syncing the log before a schema change");
    }
    Log(LogLevel::kError, "log sync failed: " + s.ToString());
    return bg_error_;
  }
  if (synced) ++stat_log_syncs_;
  return Status::OK();
}

Status DBImpl::SyncLogConcurrently(bool* synced) {
  *synced = false;
  LogWriter* log;
  ValueFileWriter* values;
  uint64_t target, target_total;
  {
    MutexLock lg(&log_mu_);
    AwaitLogIdle();  // one such sync at a time
    if (log_ == nullptr || log_->size() <= log_synced_bytes_) {
      return Status::OK();
    }
    // Every acknowledged write is in log_ up to here, flushed to the OS by
    // its leader (or in an older log, synced when it was switched).
    log = log_.get();
    values = log_values_.get();
    target = log_->size();
    target_total = target + (log_values_ ? log_values_->size() : 0);
    log_syncing_ = true;
  }
  // The leader may append to `log` and `values` meanwhile; SwitchLog and
  // RollLogAfterFailure wait for log_syncing_ before closing them. The
  // values first: the records up to `target` may point at any value
  // flushed before them.
  Status s = values != nullptr ? values->SyncFlushed() : Status::OK();
  if (s.ok()) s = log->SyncFlushed();
  MutexLock lg(&log_mu_);
  log_syncing_ = false;
  log_idle_cv_.SignalAll();
  if (s.IsNotSupported()) {
    // An Env whose files cannot sync beside a writer: sync under log_mu_,
    // the leader waiting.
    target = log_->size();
    target_total = target + (log_values_ ? log_values_->size() : 0);
    s = SyncLogValues();
    if (s.ok()) s = log_->Sync();
  }
  if (!s.ok()) return s;
  log_synced_bytes_ = std::max(log_synced_bytes_, target);
  log_synced_total_ = std::max(log_synced_total_, target_total);
  *synced = true;
  return Status::OK();
}

bool DBImpl::NeedsCompaction() {
  Compaction c;
  return PickCompaction(&c);
}

std::shared_ptr<Tablet> DBImpl::NextFlush() {
  std::shared_ptr<Tablet> next;
  for (const auto& [id, t] : tablets_) {
    if (!t->imm.empty() &&
        (next == nullptr || t->imm.front().order < next->imm.front().order)) {
      next = t;
    }
  }
  return next;
}

bool DBImpl::HasBackgroundWork() {
  if (!bg_error_.ok() || bg_paused_) return false;
  return NextFlush() != nullptr || !reclaim_.empty() ||
         manual_requested_ > manual_completed_ || NeedsTabletChange() ||
         NeedsCompaction();
}

void DBImpl::BackgroundLoop() {
  MutexLock l(&mu_);
  while (true) {
    while (!shutting_down_ && !HasBackgroundWork()) {
      if (bg_paused_ && bg_error_.ok()) {
        if (!AwaitFor(&bg_cv_, kPausedRetryInterval)) MaybeResumePausedWork();
      } else {
        Await(&bg_cv_);
      }
    }
    if (shutting_down_) break;
    bg_busy_ = true;
    const uint64_t step = ++bg_steps_;
    Status s;
    bool changed = false;
    if (std::shared_ptr<Tablet> t = NextFlush()) {
      s = FlushImmutable(std::move(t));
    } else if (!reclaim_.empty()) {
      s = ReclaimStep();
    } else if (manual_requested_ > manual_completed_) {
      // One tablet per step, so flushes are not held up behind a long
      // manual compaction.
      if (manual_queue_.empty()) {
        manual_ticket_ = manual_requested_;
        for (const auto& [id, t] : tablets_) manual_queue_.push_back(id);
      }
      uint32_t id = manual_queue_.front();
      Compaction c;
      auto t = tablets_.find(id);
      if (t != tablets_.end()) PickTabletCompaction(t->second, true, &c);
      if (!c.inputs[0].empty()) s = RunCompaction(c);
      if (s.ok()) {
        manual_queue_.pop_front();
        if (manual_queue_.empty()) manual_completed_ = manual_ticket_;
      }
    } else if (s = MaybeChangeTablets(&changed); s.ok() && !changed) {
      Compaction c;
      if (PickCompaction(&c)) s = RunCompaction(c);
    }
    if (s.IsNoSpace()) {
      // Not sticky: work resumes when a write or request clears the pause,
      // or when free space grows (MaybeResumePausedWork).
      bg_paused_ = true;
      paused_step_ = step;
      Result<uint64_t> free_space = env_->GetFreeSpace(dir_);
      paused_free_space_ = free_space.ok() ? *free_space : 0;
      Log(LogLevel::kWarning, "background work paused: " + s.ToString());
    } else if (!s.ok() && bg_error_.ok()) {
      bg_error_ = s;
      Log(LogLevel::kError, "background error: " + s.ToString());
    }
    // Busy until the obsolete files are gone too: WaitForIdle then means
    // no file operation of the background thread is under way.
    mu_.Unlock();
    DeleteObsoleteFiles();
    mu_.Lock();
    bg_busy_ = false;
    done_cv_.SignalAll();
  }
}

uint64_t DBImpl::Unpause() {
  bg_paused_ = false;
  bg_cv_.Signal();
  return bg_steps_;
}

bool DBImpl::PausedSince(uint64_t unpaused_at) {
  if (!bg_paused_) return false;
  if (paused_step_ > unpaused_at) return true;
  // A step that began before the caller's Unpause() failed for space (the
  // disk may have been full then, not now): background work runs again.
  Unpause();
  return false;
}

void DBImpl::RequestReclaim(std::string_view table, std::string_view row) {
  auto it = tables_.find(table);
  if (it == tables_.end()) return;
  const uint32_t table_id = it->second->id;
  Tablet* t = FindTablet(table_id, RowPrefix(table_id, row));
  if (t == nullptr || reclaim_.count(t->id) != 0) return;
  reclaim_.emplace(t->id, false);
  bg_paused_ = false;
  bg_cv_.Signal();
}

Status DBImpl::ReclaimStep() {
  auto it = reclaim_.begin();
  auto found = tablets_.find(it->first);
  if (found == tablets_.end()) {  // split, merged or dropped since
    reclaim_.erase(it);
    return Status::OK();
  }
  std::shared_ptr<Tablet> t = found->second;
  if (!it->second) {
    // The deletion markers go to level 0 first (flushes run before this),
    // so the compaction sees them with what they delete.
    it->second = true;
    StartTabletChange();
    FreezeTablet(t.get());
    FinishTabletChange();
    return Status::OK();
  }
  reclaim_.erase(it);
  Compaction c;
  PickTabletCompaction(t, /*manual=*/true, &c);
  if (c.inputs[0].empty()) return Status::OK();
  Log(LogLevel::kInfo, "short of space: compacting tablet " +
                           std::to_string(t->id) + " to reclaim deleted data");
  // Not queued again when it fails for space: the next delete short of
  // space asks again, and a tablet too big to compact in the space left
  // must not starve the other tablets' reclaims and compactions.
  return RunCompaction(c);
}

void DBImpl::MaybeResumePausedWork() {
  uint64_t paused_at = paused_free_space_;
  mu_.Unlock();
  Result<uint64_t> free_space = env_->GetFreeSpace(dir_);
  mu_.Lock();
  if (!bg_paused_ || !free_space.ok() || *free_space <= paused_at) return;
  bg_paused_ = false;
  Log(LogLevel::kInfo, "free space grew from " + std::to_string(paused_at) +
                           " to " + std::to_string(*free_space) +
                           " bytes: retrying paused background work");
}

TableOptions DBImpl::MakeTableOptions() {
  TableOptions to;
  to.block_size = options_.block_size;
  to.group_size = options_.group_size;
  to.bloom_bits_per_key = options_.bloom_bits_per_key;
  to.block_cache = block_cache_.get();
  to.read_counters = &table_reads_;
  // Between two rows, the index key is the block's last row prefix and
  // 0x03: about 20 bytes where a whole internal key is 50 and more, so the
  // index a read searches is about half the size. Every key of a row has
  // 0x01 (row marker) or 0x02 (family) after its prefix, so this sorts
  // after the row's keys and before the next row's (row prefixes are
  // prefix-free). Not the next row's prefix, shorter as it is: a point
  // read seeks to its row's bare prefix, which would name the block before
  // a row that starts a block, and cost a read of it. RowPrefixView of it
  // is the last row's prefix, as the split and sample rows taken from
  // indexes need (SplitTablet, ListTablets). Inside a row, or for a key
  // that is not a well-formed row prefix and section: the block's last
  // key.
  to.index_separator = [](std::string_view last_of_block,
                          std::string_view first_of_next) {
    const std::string_view last_row = RowPrefixView(last_of_block);
    const std::string_view next_row = RowPrefixView(first_of_next);
    if (last_row.size() < last_of_block.size() &&
        static_cast<uint8_t>(last_of_block[last_row.size()]) < 0x03 &&
        next_row.size() < first_of_next.size() && last_row < next_row) {
      std::string separator(last_row);
      separator.push_back('\x03');
      return separator;
    }
    return std::string(last_of_block);
  };
  // See store/doc/key_format.md "Bloom filter keys": markers add keys of
  // their own so a cell read can tell whether a file may hold a marker
  // covering the cell.
  to.filter_keys = [](std::string_view key,
                      std::vector<std::string_view>* out) {
    ParsedKey p;
    if (!ParseInternalKey(key, &p)) {
      out->push_back(key);
      return;
    }
    out->push_back(p.row_prefix);
    switch (p.section) {
      case KeySection::kRowMarker:
        out->push_back(key.substr(0, p.row_prefix.size() + 1));
        break;
      case KeySection::kFamilyMarker:
        out->push_back(key.substr(0, p.row_prefix.size() + 5));
        break;
      default:
        out->push_back(p.cell_prefix);
        break;
    }
  };
  return to;
}

Status DBImpl::FlushImmutable(std::shared_ptr<Tablet> t) {
  if (leader_filling_) {
    // The memtable may have been frozen while the leader filled it (a
    // freeze, split or merge beside a group: StartTabletChange): it is
    // read whole only after that fill.
    AwaitFill();
    auto it = tablets_.find(t->id);
    if (it == tablets_.end() || it->second != t || t->imm.empty()) {
      return Status::OK();  // its table was dropped meanwhile
    }
  }
  Immutable imm = t->imm.front();
  auto tables = TablesById();
  // After this flush the tablet's oldest unflushed entry is in its next
  // frozen memtable or its active one (or, with none, in a later log), and
  // every entry of it sequenced before all of theirs is in its files. Not
  // the flushed memtable's last sequence: after a merge the frozen
  // memtables of the two halves interleave in sequence.
  uint64_t after = t->mem_first_log;
  uint64_t flushed_seq = t->mem_first_log == kNoLog
                             ? SequenceBeforeUnwritten()
                             : t->mem_first_seq - 1;
  for (size_t i = 1; i < t->imm.size(); ++i) {
    after = std::min(after, t->imm[i].first_log);
    flushed_seq = std::min(flushed_seq, t->imm[i].first_seq - 1);
  }
  if (after == kNoLog) after = current_log_number_;
  VersionEdit edit;
  edit.tablet_logs.emplace_back(t->id, after);
  edit.tablet_flushed_seqs.emplace_back(t->id, flushed_seq);
  edit.log_number = MinLiveLog(t.get(), after);
  edit.last_sequence = last_seq_;
  edit.last_timestamp = last_ts_;
  // The logs this flush retires may hold the only record of a version
  // older than its table.
  AddBackdated(&edit);
  std::string lo = t->lo, hi = t->hi;
  uint32_t id = t->id;
  mu_.Unlock();
  // A frozen memtable shared with a sibling (after a split) is written
  // only for this tablet's rows.
  auto iter = NewSegmentIterator(
      {{lo, hi, [mem = imm.mem] { return MemTable::NewIterator(mem); }}});
  Status s = WriteTables(iter.get(), tables, nullptr, 0,
                         /*move_large_values=*/true, id, &edit.added_files);
  // Writes to other tablets acknowledged before this memtable's last entry
  // may be only in the log; once the edit below is synced this memtable's
  // entries survive a power loss, so those writes must too, so that what
  // survives is a prefix of the writes across tablets
  // (store/doc/tablets.md). Older logs were synced when they were switched.
  // Beside the writers: a flush does not hold appends for an fsync.
  bool synced = false;
  Status log_sync;
  if (s.ok()) {
    log_sync = SyncLogConcurrently(&synced);
    s = log_sync;
  }
  if (s.ok()) {
    MutexLock sl(&schema_mu_);
    s = LogEdit(edit);
  }
  mu_.Lock();
  if (synced) ++stat_log_syncs_;
  if (!log_sync.ok()) {
    // As for any failed log sync (CommitLog): what the log holds past its
    // last good sync may be gone, so nothing more is acknowledged, whatever
    // the errno (a failed fdatasync is not reported twice).
    if (bg_error_.ok()) {
      bg_error_ = log_sync.WithContext("syncing the log before a flush");
    }
    Log(LogLevel::kError, "log sync failed: " + log_sync.ToString());
    return bg_error_;
  }
  if (!s.ok()) {
    // WriteTables removes its own outputs when it fails. When the manifest
    // write failed, the edit may be on disk and the next open may use the
    // new files: they stay (RemoveOrphans removes them at open otherwise).
    return s.WithContext("flush");
  }
  s = ApplyEdit(edit);
  std::erase_if(t->imm, [&](const Immutable& i) { return i.mem == imm.mem; });
  t->RefreshView();
  ++stat_flushes_;
  Log(LogLevel::kDebug, "flushed a memtable of tablet " + std::to_string(id) +
                            " into " + std::to_string(edit.added_files.size()) +
                            " level-0 files");
  return s;
}

// ---------------------------------------------------------------------------
// Maintenance calls
// ---------------------------------------------------------------------------

Status DBImpl::Flush() { return SyncOrFlushRequest(/*flush_memtable=*/true); }

Status DBImpl::CompactAll() {
  TABLETFS_RETURN_IF_ERROR(Flush());
  MutexLock l(&mu_);
  uint64_t ticket = ++manual_requested_;
  const uint64_t unpaused_at = Unpause();
  while (bg_error_.ok() && !PausedSince(unpaused_at) &&
         manual_completed_ < ticket) {
    Await(&done_cv_);
  }
  if (bg_error_.ok() && manual_completed_ < ticket) {
    return Status::NoSpace("compaction: out of space", dir_);
  }
  return bg_error_;
}

Status DBImpl::WaitForIdle() {
  MutexLock l(&mu_);
  while (bg_error_.ok() && !bg_paused_ &&
         (bg_busy_ || NextFlush() != nullptr || !reclaim_.empty() ||
          manual_requested_ > manual_completed_ || NeedsTabletChange() ||
          NeedsCompaction())) {
    bg_cv_.Signal();
    Await(&done_cv_);
  }
  return bg_error_;
}

Status DBImpl::Verify() {
  std::map<uint64_t, std::shared_ptr<const FileMeta>> files;
  {
    MutexLock l(&mu_);
    for (const auto& [id, t] : tablets_) {
      for (const auto& level : t->version->levels) {
        for (const auto& f : level) files[f->number] = f;
      }
    }
  }
  std::set<uint64_t> value_files;
  for (const auto& [number, f] : files) {
    Result<std::shared_ptr<Table>> t = table_cache_->Get(f->number, f->size);
    if (!t.ok()) return t.status();
    TABLETFS_RETURN_IF_ERROR((*t)->VerifyChecksums());
    value_files.insert(f->value_files.begin(), f->value_files.end());
  }
  for (uint64_t vf : value_files) {
    TABLETFS_RETURN_IF_ERROR(VerifyValueFile(env_, FileName(vf, ".vlf")));
  }
  // The manifest and the live logs: every record's checksum. A torn tail
  // is what an append in progress looks like, not damage.
  std::vector<std::string> logs;
  {
    MutexLock s(&schema_mu_);
    char name[32];
    std::snprintf(name, sizeof(name), "/MANIFEST-%06" PRIu64, manifest_number_);
    logs.push_back(dir_ + name);
  }
  uint64_t log_number;
  {
    MutexLock l(&mu_);
    log_number = log_number_;
  }
  TABLETFS_ASSIGN_OR_RETURN(std::vector<std::string> children,
                            env_->GetChildren(dir_));
  for (const std::string& name : children) {
    uint64_t number;
    if (name.ends_with(".log") &&
        std::sscanf(name.c_str(), "%" SCNu64, &number) == 1 &&
        number >= log_number) {
      logs.push_back(dir_ + "/" + name);
    }
  }
  for (const std::string& path : logs) {
    TABLETFS_ASSIGN_OR_RETURN(auto file, env_->NewSequentialFile(path));
    LogReader reader(std::move(file), path);
    std::string record;
    Status s;
    while (reader.ReadRecord(&record, &s)) {
    }
    TABLETFS_RETURN_IF_ERROR(s);
  }
  return Status::OK();
}

DbStats DBImpl::GetStats() {
  DbStats s;
  {
    MutexLock l(&files_mu_);
    for (const auto& [n, size] : value_file_sizes_) s.value_file_bytes += size;
  }
  {
    // Not inside mu_: the leader holds log_mu_ while it writes a group's
    // large values, and readers and writers would wait for mu_ meanwhile.
    MutexLock lg(&log_mu_);
    if (log_ != nullptr && log_->size() > log_synced_bytes_) {
      s.log_unsynced_bytes = log_->size() - log_synced_bytes_;
    }
  }
  MutexLock l(&mu_);
  std::set<const MemTable*> frozen;
  std::set<uint64_t> files;  // shared files once
  for (int level = 0; level < Version::kNumLevels; ++level) {
    s.levels.push_back({level, 0, 0});
  }
  for (const auto& [id, t] : tablets_) {
    s.memtable_bytes += t->mem->ApproximateMemoryUsage();
    for (const Immutable& imm : t->imm) {
      if (frozen.insert(imm.mem.get()).second) {
        s.memtable_bytes += imm.mem->ApproximateMemoryUsage();
      }
    }
    for (int level = 0; level < Version::kNumLevels; ++level) {
      for (const auto& f : t->version->levels[level]) {
        if (!files.insert(f->number).second) continue;
        ++s.levels[level].files;
        s.levels[level].bytes += f->size;
      }
    }
  }
  s.frozen_memtables = frozen.size();
  s.tablets = tablets_.size();
  s.tablet_splits = stat_splits_;
  s.tablet_merges = stat_merges_;
  s.tablet_max_pause_micros = stat_max_pause_micros_;
  s.log_bytes = log_file_bytes_;
  s.flushes = stat_flushes_;
  s.flushes_during_compactions = stat_flushes_during_compactions_;
  s.compactions = stat_compactions_;
  s.compactions_moved = stat_moves_;
  s.compactions_pending = NeedsCompaction() ? 1 : 0;
  s.bytes_written_by_user = stat_bytes_user_;
  s.bytes_written_to_disk = stat_bytes_disk_;
  s.log_syncs = stat_log_syncs_;
  s.commit_syncs = stat_commit_syncs_;
  s.commit_sync_micros = stat_commit_sync_micros_;
  s.space_reserve_bytes = space_reserve_;
  s.block_cache_hits = block_cache_->hits();
  s.block_cache_misses = block_cache_->misses();
  s.bloom_useful = stat_bloom_useful_.Load();
  s.memtable_filter_useful = stat_memtable_filter_useful_.Load();
  s.point_reads = stat_point_reads_.Load();
  s.scans = stat_scans_.Load();
  s.table_block_reads = table_reads_.block_reads.Load();
  s.table_read_bytes = table_reads_.block_read_bytes.Load();
  s.value_reads = stat_value_reads_.Load();
  s.value_read_bytes = stat_value_read_bytes_.Load();
  s.write_stalls = stat_write_stalls_;
  s.write_delays = stat_write_delays_;
  s.last_sequence = last_seq_;
  s.last_timestamp = last_ts_;
  if (!bg_error_.ok()) s.background_error = bg_error_.ToString();
  return s;
}

}  // namespace tabletfs
