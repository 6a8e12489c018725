// DBImpl: the engine behind tabletfs::DB (store/db.h), which implements the
// data-model interface (store/bigtable.h).
//
// Layout of a database directory:
//   LOCK               exclusive lock (Env::LockFile)
//   CURRENT            name of the live manifest, e.g. "MANIFEST-000004\n"
//   MANIFEST-NNNNNN    version edits (store/doc/manifest_format.md)
//   NNNNNN.log         commit log (store/doc/log_format.md); records as in
//                      store/doc/key_format.md "Log records"
//   NNNNNN.sst         SSTables (store/doc/table_format.md)
//
// Source files, by concern: db_impl.cc (open, close, schema, maintenance
// requests), db_recovery.cc (manifest, log replay), db_write.cc (the
// write queue and its group commit), db_read.cc (reads, scanners,
// snapshots), db_tablets.cc (splits and merges), db_background.cc
// (freezing, flushing, the background thread, the commit interval),
// db_compaction.cc (writing SSTables, picking and running compactions),
// db_files.cc (file lifetimes, value files).
//
// Concurrency: one mutex (mu_) guards the engine state; it is never held
// across file I/O. Writers queue (writers_); the front writer commits a
// group: it assigns sequence numbers and timestamps under mu_, then writes
// and syncs the log and fills the memtable without mu_ (it is the only
// memtable writer), then publishes the new last sequence. Read-modify-write
// operations and Apply serialize per row through row_locks_ (a striped
// lock), so Append / Increment / CheckAndMutate see no interleaved write to
// their row. Schema changes serialize through schema_mu_, taken before mu_.
// The commit thread (Options::commit_interval) syncs the log beside the
// writers: it holds log_mu_ only to pick the log and to record the result,
// never across the sync, and a log is closed or replaced only while no such
// sync runs (log_syncing_).
#ifndef TABLETFS_STORE_DB_DB_IMPL_H_
#define TABLETFS_STORE_DB_DB_IMPL_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "store/db.h"
#include "store/db/cell_cursor.h"
#include "store/db/log_record.h"
#include "store/db/memtable.h"
#include "store/db/schema_state.h"
#include "store/db/tablet.h"
#include "store/db/version_edit.h"
#include "store/env.h"
#include "store/table/block_cache.h"
#include "store/table/table_cache.h"
#include "store/util/change_hub.h"
#include "store/util/lru_cache.h"
#include "store/util/mutex.h"
#include "store/util/striped_counter.h"
#include "store/wal/log_writer.h"
#include "store/wal/value_file.h"

namespace tabletfs {

class CompactionFilter;
class ValueFileReader;

class DBImpl final : public DB {
 public:
  DBImpl(const Options& options, std::string dir);
  ~DBImpl() override;

  // Called once by DB::Open.
  Status OpenAndRecover();

  Status CreateTable(std::string_view table) override;
  Status DeleteTable(std::string_view table) override;
  Result<std::vector<std::string>> ListTables() override;
  Result<TableInfo> GetTable(std::string_view table) override;
  Status CreateFamily(std::string_view table, std::string_view family,
                      const FamilySettings& settings) override;
  Status UpdateFamily(std::string_view table, std::string_view family,
                      const FamilySettings& settings) override;
  Status DeleteFamily(std::string_view table, std::string_view family) override;
  Result<std::vector<FamilyInfo>> ListFamilies(std::string_view table) override;
  Result<FamilySettings> GetFamily(std::string_view table,
                                   std::string_view family) override;

  Result<int64_t> Apply(std::string_view table, const RowMutation& mutation,
                        const WriteOptions& options) override;
  Result<AppendResult> Append(std::string_view table, std::string_view row,
                              std::string_view family,
                              std::string_view qualifier, std::string_view data,
                              const WriteOptions& options) override;
  Result<int64_t> Increment(std::string_view table, std::string_view row,
                            std::string_view family, std::string_view qualifier,
                            int64_t delta,
                            const WriteOptions& options) override;
  Result<bool> CheckAndMutate(std::string_view table, std::string_view row,
                              const CellCondition& condition,
                              const RowMutation& if_true,
                              const RowMutation& if_false,
                              const WriteOptions& options) override;

  std::vector<Result<int64_t>> ApplyBatch(
      std::string_view table, const std::vector<RowMutation>& mutations,
      const WriteOptions& options) override;
  Result<RewriteResult> RewriteRow(std::string_view table,
                                   std::string_view row,
                                   const ReadOptions& read,
                                   const RowRewrite& rewrite,
                                   const WriteOptions& options) override;

  Result<Row> ReadRow(std::string_view table, std::string_view row,
                      const ReadOptions& options) override;
  Result<std::vector<Cell>> ReadCell(std::string_view table,
                                     std::string_view row,
                                     std::string_view family,
                                     std::string_view qualifier,
                                     const ReadOptions& options) override;
  Result<std::optional<CellStat>> StatCell(std::string_view table,
                                           std::string_view row,
                                           std::string_view family,
                                           std::string_view qualifier,
                                           const ReadOptions& options) override;
  Result<std::unique_ptr<Scanner>> NewScanner(
      std::string_view table, const ScanOptions& options) override;
  std::shared_ptr<const Snapshot> GetSnapshot() override;
  Result<std::vector<TabletInfo>> ListTablets(std::string_view table) override;

  Status Sync() override;
  Status Flush() override;
  Status CompactAll() override;
  Status WaitForIdle() override;
  Status Verify() override;
  DbStats GetStats() override;
  Result<std::unique_ptr<ChangeSubscription>> Subscribe(
      const SubscribeOptions& options) override;
  Status StickyError() override;
  int64_t LastTimestamp() override;

  // For SnapshotImpl.
  void ReleaseSnapshot(uint64_t seq) EXCLUDES(mu_);

  // What the commit thread does once per interval, run now on the caller's
  // thread (tests drive the interval with it, without waiting for time to
  // pass): syncs the log when anything was written since its last sync.
  // A failure is sticky (BackgroundError).
  Status CommitForTesting() EXCLUDES(mu_, log_mu_) { return CommitLog(); }
  // Whether the commit thread has log upkeep (an early sync, the next
  // log's file) asked of it and not yet done.
  bool LogUpkeepPendingForTesting() EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return log_sync_wanted_ || spare_log_wanted_;
  }
  // Makes each leader sleep halfway through filling memtables, so that
  // tests can split, merge and flush beside a fill (0: no pause).
  void SetFillPauseForTesting(std::chrono::microseconds pause) {
    fill_pause_for_testing_.store(pause.count(), std::memory_order_relaxed);
  }

 private:
  // A queued write (mutation != nullptr) or sync / flush request.
  struct Writer {
    explicit Writer(Mutex* mu) : cv(mu) {}
    std::string_view table;
    const RowMutation* mutation = nullptr;
    bool sync = false;
    uint64_t origin = 0;  // WriteOptions::origin, for the change events
    bool flush = false;
    bool done = false;
    Status status;
    int64_t timestamp = 0;
    CondVar cv;
  };
  class SnapshotImpl;
  class ScannerImpl;
  class HistorySubscription;

  // Everything a read needs, pinned under mu_ and used without it: the
  // tablets that cover the rows read, in row order.
  struct ReadState {
    std::shared_ptr<const TableState> table;
    std::vector<std::shared_ptr<const TabletView>> tablets;
    uint64_t view_seq = 0;
    uint64_t epoch_view = kMaxSequence;
    // Lets go of the table and the tablets' views, keeping the vector's
    // capacity for the thread's next point read.
    void Unpin();
  };
  // What a point read reuses from the previous one on its thread
  // (db_read.cc).
  struct PointScratch;
  class PointScratchLease;

  // CondVar::Wait names the CondVar's own mutex, which the analysis cannot
  // tie to mu_; this states the real requirement.
  void Await(CondVar* cv) REQUIRES(mu_) NO_THREAD_SAFETY_ANALYSIS {
    cv->Wait();
  }
  // Await for at most `timeout`; false when it timed out.
  bool AwaitFor(CondVar* cv, std::chrono::microseconds timeout) REQUIRES(mu_)
      NO_THREAD_SAFETY_ANALYSIS {
    return cv->WaitFor(timeout);
  }
  // While background work is paused for lack of space, looks at the free
  // space every kPausedRetryInterval and clears the pause once there is
  // more than when it paused, so an idle store retries without a write.
  void MaybeResumePausedWork() REQUIRES(mu_);

  // Pins into *state the tablets of `table` holding rows in [first_row,
  // end_row) (empty: unbounded), or with one_row only the tablet holding
  // first_row. *state may be one a read before used (its vectors are
  // reused).
  Status PinReadState(std::string_view table, const ReadOptions& options,
                      std::string_view first_row, std::string_view end_row,
                      bool one_row, ReadState* state) EXCLUDES(mu_);
  // A scan cursor over the tablets of `state`.
  std::unique_ptr<CellCursor> NewCursor(const ReadState& state,
                                        const ReadOptions& options,
                                        std::string start_row,
                                        std::string end_row,
                                        std::string prefix);
  // Starts *cursor on a point read of `row` (ReadRow, ReadCell): over the
  // memtables and only the files that may hold the row (Bloom keys
  // row_prefix, then one of cell_keys when not empty), ending at the
  // stop_key the caller set in cursor->mutable_options(). use_filter:
  // apply options.families / columns. False, with *cursor untouched, when
  // nothing could hold the row (every memtable empty, no file's filter
  // passes): the read finds nothing.
  [[nodiscard]] bool StartPointCursor(
      const ReadState& state, const ReadOptions& options, std::string_view row,
      std::string_view row_prefix, std::span<const std::string_view> cell_keys,
      bool use_filter, CellCursor* cursor);
  // An iterator over the memtables and files of one tablet (not clipped).
  std::unique_ptr<Iterator> NewTabletIterator(const TabletView& view);
  static uint64_t ValueRefSize(std::string_view ref);
  // The versions of one cell on a point read (ReadCell, StatCell), newest
  // first: `visit(cursor, &more)` for each until it clears `more` or
  // fails.
  template <typename Visit>
  Status VisitCell(std::string_view table, std::string_view row,
                   std::string_view family, std::string_view qualifier,
                   const ReadOptions& options, Visit visit);
  // Resolves a value of a cursor position (large values: M2).
  Result<std::string> LoadValue(EntryKind kind, std::string_view raw);

  // Publishes the change events of the writers of `group` that committed.
  // REQUIRES: the group's leader, after it committed, before the next
  // group starts (so events keep commit order).
  void PublishGroup(const std::vector<Writer*>& group) REQUIRES(mu_);
  // Publishes a schema drop (family empty: the table).
  void PublishDrop(std::string_view table, std::string_view family)
      REQUIRES(mu_);
  // The write group (db_write.cc), in the order the leader runs it.
  //
  // One entry of a group's log record, routed to its tablet's memtable.
  struct GroupEntry {
    std::string key;
    std::string_view value;
    MemTable* mem = nullptr;  // nullptr: its table is gone
    uint32_t table_id = 0;
    // Not 0: the value went to the log's value file (WriteLargeValues),
    // `value` is its reference and this is its size.
    uint64_t held_bytes = 0;
  };
  // What a leader commits: the entries of its group's writers, the last
  // sequence number and timestamp they use, and the memtables they go to
  // (kept alive even if their table is dropped meanwhile).
  struct GroupBatch {
    std::vector<GroupEntry> entries;
    // The writes that committed entries, each with its entries' count.
    std::vector<LogRecordWrite> writes;
    std::vector<std::shared_ptr<MemTable>> mems;
    // The log record (CommitGroup): values written from where they are,
    // each with its offset in the record's small parts, and the pieces.
    std::vector<std::pair<size_t, std::string_view>> in_place;
    std::vector<std::string_view> pieces;
    // Values moved to the log's value file: their references (the entries'
    // values point here), the file's hold for the memtables, and a file
    // number reserved under mu_ in case the file must be made.
    std::vector<std::string> refs;
    std::shared_ptr<const void> hold;
    uint64_t value_file_number = 0;
    uint64_t first_seq = 0;  // of its first entry
    uint64_t seq = 0;        // of its last entry
    int64_t ts = 0;
    bool sync = false;

    // Empty again; the vectors keep their capacity.
    void Clear() {
      entries.clear();
      writes.clear();
      mems.clear();
      in_place.clear();
      pieces.clear();
      refs.clear();
      hold.reset();
      value_file_number = 0;
      first_seq = 0;
      seq = 0;
      ts = 0;
      sync = false;
    }
  };
  // NotFound, InvalidArgument or NoSpace for a write that can be refused
  // before it queues; *reclaim as CheckSpace.
  Status CheckBeforeQueueing(std::string_view table,
                             const RowMutation& mutation, bool* reclaim)
      EXCLUDES(mu_);
  // Commits the group at the front of writers_, led by `self`, and marks
  // its writers done.
  void LeadGroup(Writer* self) REQUIRES(mu_);
  // Into *group: the writers at the front of writers_ that one log record
  // takes (up to kMaxGroupBytes, never a sync or flush request);
  // *group_bytes their size.
  void TakeGroup(std::vector<Writer*>* group, size_t* group_bytes)
      REQUIRES(mu_);
  // Revalidates each writer, assigns timestamps and sequence numbers, and
  // builds the routed entries into *batch.
  void PrepareGroup(const std::vector<Writer*>& group, GroupBatch* batch)
      REQUIRES(mu_);
  // The internal key (and value) of one operation.
  static void AppendOpEntry(const TableState& t, const std::string& row,
                            const RowMutation::Op& op, uint64_t seq,
                            int64_t server_ts,
                            std::vector<GroupEntry>* entries);
  // The active memtable of the tablet holding `key` (a row prefix or an
  // internal key) of table `table_id`, kept alive in batch->mems; nullptr
  // when the table is gone. An empty memtable takes the current log and
  // batch->first_seq as its first.
  MemTable* RouteEntry(uint32_t table_id, std::string_view key,
                       GroupBatch* batch) REQUIRES(mu_);
  // Writes the log record (without mu_), fills the memtables, then
  // publishes the group or handles the failure. Returns the log's status.
  Status CommitGroup(const std::vector<Writer*>& group, size_t group_bytes,
                     GroupBatch* batch) REQUIRES(mu_);
  // Moves the batch's puts of at least large_value_bytes to the log's value
  // file (made on first use, with batch->value_file_number): each such
  // entry becomes a reference (kind 6) to its value there, flushed to the
  // OS before the log record holds it (store/doc/value_file_format.md,
  // "Values written at commit").
  Status WriteLargeValues(GroupBatch* batch) EXCLUDES(mu_, log_mu_);
  // Makes the log's value file durable: before any sync of the log, whose
  // records may point into it.
  Status SyncLogValues() REQUIRES(log_mu_);
  // The log's value file ends with its log (SwitchLog, RollLogAfterFailure,
  // close): synced, then closed; the memtables' holds keep the file until
  // they are flushed.
  Status CloseLogValues() REQUIRES(log_mu_);
  // Appends the record that is `record`'s pieces one after another; the
  // log's size and its value file's after it.
  // *unsynced: the log's bytes not yet known to be synced.
  Status AppendToLog(std::span<const std::string_view> record, bool sync,
                     uint64_t* log_bytes, uint64_t* value_bytes,
                     uint64_t* unsynced) EXCLUDES(mu_, log_mu_);
  // After a group's append: asks the commit thread for an early sync of the
  // log, or for the next log's file, when they are due (LogUpkeep).
  void RequestLogUpkeep(uint64_t unsynced) REQUIRES(mu_);
  // Fills the memtables without mu_ (leader_filling_ set), routing again
  // when the tablets changed since `routed` (a tablet_generation_).
  void FillMemtables(uint64_t routed, GroupBatch* batch) REQUIRES(mu_);
  // Marks the group's writers done (with `status` when it failed), wakes
  // them and the next leader.
  void FinishGroup(const std::vector<Writer*>& group, const Status& status,
                   Writer* self) REQUIRES(mu_);
  // Validates `mutation` for `table` without changing anything.
  Status ValidateMutation(const TableState& table, const RowMutation& m) const;
  // Queues and commits; REQUIRES: the row lock of the mutation's row held
  // by the caller.
  Result<int64_t> WriteLocked(std::string_view table,
                              const RowMutation& mutation,
                              const WriteOptions& options) EXCLUDES(mu_);
  Mutex* RowLock(std::string_view table, std::string_view row);
  // NoSpace when `m` adds data and the free space is below the reserve.
  // *reclaim: `m` only deletes and the free space is below twice the
  // reserve, so its tablet should be compacted to give the space back.
  Status CheckSpace(const RowMutation& m, bool* reclaim);
  // Asks the background thread to flush and compact the tablet holding
  // `row` of `table`, so deleted data leaves the disk.
  void RequestReclaim(std::string_view table, std::string_view row)
      REQUIRES(mu_);
  // One step of a requested reclaim: the first visit of a tablet freezes
  // its memtable (flushed before the next step), the second compacts all
  // its files into its deepest level.
  Status ReclaimStep() REQUIRES(mu_);

  // Manifest.
  Status RecoverManifest() REQUIRES(mu_);
  Status ApplyEdit(const VersionEdit& edit) REQUIRES(mu_);
  // Corruption naming the first SSTable or value file of version_ that is
  // missing from the directory; `manifest` names the manifest read.
  Status CheckLiveFilesExist(const std::string& manifest) REQUIRES(mu_);
  // Appends `edit` (and syncs); starts a new manifest when none is open.
  Status LogEdit(const VersionEdit& edit) REQUIRES(schema_mu_) EXCLUDES(mu_);
  Status WriteNewManifest() REQUIRES(schema_mu_) EXCLUDES(mu_);
  VersionEdit SnapshotEdit() REQUIRES(mu_);
  // Adds the table_since record of every table with a version older than
  // its creation to *edit.
  void AddBackdated(VersionEdit* edit) REQUIRES(mu_);
  // A version at `timestamp` was written into table `table_id`.
  void NoteVersionWritten(uint32_t table_id, int64_t timestamp) REQUIRES(mu_) {
    auto [it, added] = backdated_.emplace(table_id, timestamp);
    if (!added) it->second = std::min(it->second, timestamp);
  }
  Status RecoverLogs(std::vector<uint64_t>* old_logs) REQUIRES(mu_);
  // An empty memtable whose arena's blocks grow to a 64th of the memtable
  // budget, between 4 and 64 KiB: a memtable freezes at most one block
  // past its share of the budget.
  std::shared_ptr<MemTable> NewMemTable() const {
    return std::make_shared<MemTable>(
        std::clamp<size_t>(options_.memtable_bytes / 64, Arena::kFirstBlockSize,
                           size_t{64} << 10));
  }
  // Tablets (db_tablets.cc).
  std::shared_ptr<Tablet> NewTablet(uint32_t table_id, uint32_t id,
                                    std::string start_row, std::string end_row)
      REQUIRES(mu_);
  void AddTablet(std::shared_ptr<Tablet> t) REQUIRES(mu_);
  void RemoveTablet(uint32_t id) REQUIRES(mu_);
  // The tablet of `table_id` whose range holds `key` (an internal key or a
  // row prefix); nullptr when the table has none.
  Tablet* FindTablet(uint32_t table_id, std::string_view key) REQUIRES(mu_);
  void SetVersion(Tablet* t, std::shared_ptr<const Version> v) REQUIRES(mu_);
  // The live FileMeta of `meta.number` (one object per file and level
  // however many tablets hold it), made live when new.
  std::shared_ptr<const FileMeta> GetLiveFile(const FileMeta& meta)
      REQUIRES(mu_);
  Status ApplyTabletEdits(const VersionEdit& edit) REQUIRES(mu_);
  // The steps of ApplyTabletEdits, in its order (db_tablets.cc): tablet
  // records (a snapshot edit's, replacing a table's tablets), one split,
  // one merge (either skipped when its table was dropped since), and the
  // files added and deleted. Corruption for records that cannot apply.
  Status ApplyTabletRecords(const VersionEdit& edit) REQUIRES(mu_);
  Status ApplySplit(const VersionEdit::SplitRecord& sp) REQUIRES(mu_);
  Status ApplyMerge(const VersionEdit::MergeRecord& m) REQUIRES(mu_);
  Status ApplyFileChanges(const VersionEdit& edit) REQUIRES(mu_);
  // The oldest log holding an unflushed entry of any tablet, with tablet
  // `except` (when not null) taken to start at `except_log`.
  uint64_t MinLiveLog(const Tablet* except = nullptr,
                      uint64_t except_log = kNoLog) REQUIRES(mu_);
  // Freezes t's memtable when not empty (a leader filling it meanwhile
  // finishes its group there: StartTabletChange). With `wake` false the
  // background thread is not woken: the leader wakes it once its group is
  // in the memtables (wake_after_group_).
  void FreezeTablet(Tablet* t, bool wake = true) REQUIRES(mu_);
  // Bracket a change of tablets or of their active memtables (a split,
  // merge or freeze by the background thread), made under mu_ without
  // releasing it: writers wait for mu_, nothing else. A leader may be
  // filling memtables meanwhile (without mu_): it fills the ones it routed
  // its group to, frozen or not, so a memtable routed to counts as holding
  // entries (Tablet::MemInUse) and a flush waits for that fill
  // (AwaitFillOf). Records the longest such pause.
  void StartTabletChange() REQUIRES(mu_);
  void FinishTabletChange() REQUIRES(mu_);
  // Waits for the fill in progress, if any, to end: after it no entry
  // reaches a memtable frozen now.
  void AwaitFill() REQUIRES(mu_);
  // Splits or merges one tablet when one is due (db_tablets.cc); true when
  // it did (or tried) something.
  bool NeedsTabletChange() REQUIRES(mu_);
  // After a write into the tablet holding `key` of table `table_id`: when
  // that tablet (memtables included) is past tablet_split_bytes, wakes the
  // background thread to freeze and split it, and returns true.
  bool WakeForSplit(uint32_t table_id, std::string_view key) REQUIRES(mu_);
  Status MaybeChangeTablets(bool* did) REQUIRES(mu_);
  Status SplitTablet(std::shared_ptr<Tablet> t) REQUIRES(mu_);
  Status MergeTablets(std::shared_ptr<Tablet> a, std::shared_ptr<Tablet> b)
      REQUIRES(mu_);
  // After log replay: persists the recovered state, opens a new log and
  // deletes what is obsolete.
  Status FinishRecovery(const std::vector<uint64_t>& old_logs);
  // Replaces a log whose append failed (it may end in a partial record),
  // after syncing what of it reached the kernel.
  void RollLogAfterFailure() REQUIRES(mu_);
  static void SortLevels(Version* v);
  // Makes room in memory for a write: freezes the largest memtable when
  // the memtables pass the budget, flushes the tablets pinning the oldest
  // log when the logs pass max_log_bytes, switches to a new log when the
  // current one is full, stalls while flushes fall behind. REQUIRES: leader
  // of the write queue.
  Status MakeRoomForWrite() REQUIRES(mu_);
  // Frozen memtable bytes (shared ones once).
  uint64_t FrozenBytes() REQUIRES(mu_);
  // Queues a request behind every pending write: syncs the log, and with
  // flush_memtable freezes the memtable and waits for its flush.
  Status SyncOrFlushRequest(bool flush_memtable) EXCLUDES(mu_);
  void StartBackground() EXCLUDES(mu_);
  void StopBackground() EXCLUDES(mu_);

  // ---- Background work (db_background.cc, db_compaction.cc,
  // db_files.cc) ----
  struct Compaction {
    std::shared_ptr<Tablet> tablet;
    int level = 0;  // input level; inputs[1] come from level + 1
    int output_level = 1;
    std::vector<std::shared_ptr<const FileMeta>> inputs[2];
    bool bottom = false;
    bool manual = false;
  };
  void BackgroundLoop() EXCLUDES(mu_);
  // Clears a pause of background work and wakes it; returns bg_steps_.
  uint64_t Unpause() REQUIRES(mu_);
  // Whether background work is paused by a step started after the
  // Unpause() that returned `unpaused_at`; a pause by an earlier step
  // (begun while the disk was still full) is cleared again instead.
  bool PausedSince(uint64_t unpaused_at) REQUIRES(mu_);
  bool HasBackgroundWork() REQUIRES(mu_);
  bool NeedsCompaction() REQUIRES(mu_);
  // A log is switched once it and its value file hold this many bytes.
  uint64_t LogBytesLimit() const {
    return std::max<uint64_t>(options_.memtable_bytes, 2);
  }
  // Syncs and closes the log and starts a new one: the spare log when the
  // commit thread prepared one, else a file made now. REQUIRES: front of
  // writers_.
  Status SwitchLog() REQUIRES(mu_);
  // The tablet whose oldest frozen memtable is the oldest (nullptr: none).
  std::shared_ptr<Tablet> NextFlush() REQUIRES(mu_);
  // Flushes t->imm.front() (unlocks mu_ while writing).
  Status FlushImmutable(std::shared_ptr<Tablet> t) REQUIRES(mu_);
  // A sequence below every entry not yet in a memtable: last_seq_, or below
  // the group being written to the log (UpdateFamily may have taken a
  // number above its first meanwhile). Flushes, reads, snapshots and
  // change subscriptions take it, never a number inside that group.
  uint64_t SequenceBeforeUnwritten() REQUIRES(mu_) {
    return inflight_first_seq_ == 0
               ? last_seq_
               : std::min(last_seq_, inflight_first_seq_ - 1);
  }
  // The commit thread: CommitLog() every options_.commit_interval until
  // shutdown, and LogUpkeep() whenever a leader asks for it.
  void CommitLoop() EXCLUDES(mu_);
  // Keeps a log switch short for the writers waiting on it: syncs the log
  // beside them once 4 MiB are unsynced (kLogBytesPerSync; so the switch's
  // sync of the old log has little left to do), and makes the next log's
  // file, its directory entry synced, once the log is half full (so the
  // switch syncs no directory). Unlocks mu_ meanwhile.
  void LogUpkeep() REQUIRES(mu_);
  // Syncs the log when anything was written since its last sync, without
  // holding mu_ or log_mu_ across the sync (SyncLogConcurrently); a failure
  // is sticky.
  Status CommitLog() EXCLUDES(mu_, log_mu_);
  // Makes every record in the log so far durable, writers appending on
  // meanwhile. *synced: whether it synced (false: nothing new). Not sticky
  // by itself: the caller records a failure.
  Status SyncLogConcurrently(bool* synced) EXCLUDES(mu_, log_mu_);
  // Waits until no SyncLogConcurrently is syncing log_, so it may be
  // closed or replaced.
  void AwaitLogIdle() REQUIRES(log_mu_) NO_THREAD_SAFETY_ANALYSIS {
    while (log_syncing_) log_idle_cv_.Wait();
  }
  // Schema changes: the log is synced before their manifest edit, so a
  // change never survives a power cut that loses a write acknowledged
  // before it (what survives is a prefix).
  Status SyncLogBeforeSchemaEdit() EXCLUDES(mu_, log_mu_);
  // The space reserve in force: options_.space_reserve_bytes, or scaled
  // with the size of the data directory's filesystem (see options.h).
  uint64_t ResolveSpaceReserve();
  bool PickCompaction(Compaction* c) REQUIRES(mu_);
  void PickTabletCompaction(std::shared_ptr<Tablet> t, bool manual,
                            Compaction* c) REQUIRES(mu_);
  // The files of t's shallowest level holding any that a split left shared
  // with a sibling (rows outside t's range), rewritten clipped to t's range
  // into the same level. REQUIRES: t->foreign_files.
  void PickTrimCompaction(std::shared_ptr<Tablet> t, Compaction* c)
      REQUIRES(mu_);
  Status RunCompaction(const Compaction& c) REQUIRES(mu_);
  // Whether `c` may move its files down a level instead of rewriting them:
  // its inputs overlap nothing in the output level nor each other, a
  // rewrite would drop nothing (not the bottom, or plain files), and the
  // level below the output holds little of their rows.
  bool MovesWithoutRewrite(const Compaction& c) REQUIRES(mu_);
  // Moves the files of `c.inputs[0]` to `c.output_level` in one edit.
  Status MoveFiles(const Compaction& c) REQUIRES(mu_);
  // Writes the entries of `iter` that `filter` keeps (all when null) into
  // new SSTables of tablet `tablet_id` at `level`, cut at row boundaries
  // after target_file_bytes. With move_large_values, values of
  // at least large_value_bytes go to a new value file. Files are synced.
  Status WriteTables(
      Iterator* iter,
      const std::map<uint32_t, std::shared_ptr<const TableState>>& tables,
      class CompactionFilter* filter, int level, bool move_large_values,
      uint32_t tablet_id, std::vector<FileMeta>* outputs) EXCLUDES(mu_);
  class TableOutputs;
  // The entries of `iter` that `filter` keeps, added to `out`
  // (WriteTables' loop). The iterator's or the files' error.
  Status AddEntries(Iterator* iter, CompactionFilter* filter,
                    bool move_large_values, TableOutputs* out) EXCLUDES(mu_);
  // Flushes every frozen memtable, from inside a compaction's loop (on the
  // background thread: nothing else changes the tablets meanwhile).
  Status FlushDuringCompaction() EXCLUDES(mu_);
  // Table options whose compression, per block, is that of the family of
  // its first key in `tables` (lz4 for markers and unknown families).
  // REQUIRES: `tables` outlives the options.
  TableOptions TableOptionsFor(
      const std::map<uint32_t, std::shared_ptr<const TableState>>& tables);
  std::map<uint32_t, std::shared_ptr<const TableState>> TablesById()
      REQUIRES(mu_);
  uint64_t NewFileNumber() EXCLUDES(mu_);
  // A FileMeta whose last holder marks its files obsolete.
  std::shared_ptr<const FileMeta> MakeLiveFile(const FileMeta& meta);
  void FileReleased(uint64_t number, const std::vector<uint64_t>& value_files)
      EXCLUDES(files_mu_);
  void DeleteObsoleteFiles() EXCLUDES(mu_, files_mu_);
  // At open: removes files no version references (outputs of a crashed
  // flush or compaction, flushed logs, old manifests).
  Status RemoveOrphans() EXCLUDES(mu_, files_mu_);
  // A reader of value file `number` that reaches at least byte `end` (the
  // log's value file grows after a reader maps it: a reader that ends
  // before `end` is replaced).
  Result<std::shared_ptr<ValueFileReader>> GetValueReader(uint64_t number,
                                                          uint64_t end)
      EXCLUDES(files_mu_);
  // A memtable's hold on a value file written at commit: while any memtable
  // references values there, the file stays though no SSTable names it.
  class ValueFileHold;
  std::shared_ptr<const void> NewValueFileHold(uint64_t number)
      EXCLUDES(files_mu_);
  void ValueFileUnheld(uint64_t number) EXCLUDES(files_mu_);
  // At replay, what is where a replayed entry's value should be: kIntact;
  // kGone when its file is gone (the engine deleted it after every value
  // there was dropped by a compaction: an entry that a merged tablet's
  // replay brings back, store/doc/tablets.md); kTorn when, in the newest
  // log's value file (`may_be_torn`), the value is cut short or its entry
  // header reads as zeros (a power cut before that file's sync, so the
  // record pointing at it was never synced either).
  // Corruption for any other damage.
  enum class ReplayedValue { kIntact, kGone, kTorn };
  Result<ReplayedValue> CheckReplayedValue(const ValueRef& ref,
                                           bool may_be_torn);
  TableOptions MakeTableOptions();
  // Adds the record's entries to their tablets' memtables; counts in
  // *skipped those already in the tablets' SSTables, and those whose value
  // file is gone. Adds none and sets *values_torn when a value an entry
  // points at is torn (CheckReplayedValue, with `may_be_torn`).
  Status ReplayLogRecord(const LogRecord& record, uint64_t log_number,
                         bool may_be_torn, uint64_t* skipped,
                         bool* values_torn) REQUIRES(mu_);
  // The oldest log to keep: the live ones (from log_number_), the newest
  // flushed ones within options_.change_history_bytes (none while
  // space_short_), and every one a change subscription still reads
  // (history_pins_). Forgets the older ones in log_starts_ and log_sizes_;
  // the caller deletes their files.
  uint64_t KeptLogFloor() REQUIRES(mu_);
  std::string FileName(uint64_t number, const char* suffix) const;
  void Log(LogLevel level, const std::string& line);

  const Options options_;
  Env* const env_;
  const std::string dir_;
  std::unique_ptr<FileLock> lock_;
  // Set before members are destroyed: released files are then left alone.
  std::atomic<bool> closing_{false};
  // Before the caches: every table they hold counts its reads here.
  TableReadCounters table_reads_;
  std::unique_ptr<BlockCache> block_cache_;
  std::unique_ptr<TableCache> table_cache_;
  // Bumped by reads, on many threads at once.
  StripedCounter stat_bloom_useful_;
  StripedCounter stat_memtable_filter_useful_;
  StripedCounter stat_point_reads_;
  StripedCounter stat_scans_;
  StripedCounter stat_value_reads_;
  StripedCounter stat_value_read_bytes_;

  // Leaf lock for file lifetimes (taken inside mu_ when a version dies).
  Mutex files_mu_ ACQUIRED_AFTER(mu_);
  std::vector<uint64_t> obsolete_tables_ GUARDED_BY(files_mu_);
  std::vector<uint64_t> obsolete_value_files_ GUARDED_BY(files_mu_);
  std::map<uint64_t, int> value_file_refs_ GUARDED_BY(files_mu_);
  std::map<uint64_t, uint64_t> value_file_sizes_ GUARDED_BY(files_mu_);
  // Value files written at commit that a memtable still holds
  // (ValueFileHold): not obsolete when their last SSTable goes.
  std::set<uint64_t> held_value_files_ GUARDED_BY(files_mu_);
  // Value files the replayed log entries point into: synced before the
  // recovery's flush names them in the manifest.
  std::set<uint64_t> replayed_value_files_ GUARDED_BY(mu_);
  // Open value files, bounded like the TableCache (max_open_tables, charge
  // 1 each), so open descriptors stay within 2 * max_open_tables however
  // many value files exist. Has its own lock; taken inside files_mu_.
  LruCache<uint64_t, std::shared_ptr<ValueFileReader>> value_readers_;

  // Serializes schema changes and manifest writes. Taken before mu_.
  Mutex schema_mu_ ACQUIRED_BEFORE(mu_);
  std::unique_ptr<LogWriter> manifest_ GUARDED_BY(schema_mu_);
  uint64_t manifest_number_ GUARDED_BY(schema_mu_) = 0;

  Mutex mu_;
  std::map<std::string, std::shared_ptr<const TableState>, std::less<>> tables_
      GUARDED_BY(mu_);
  uint32_t next_schema_id_ GUARDED_BY(mu_) = 1;
  uint64_t next_file_number_ GUARDED_BY(mu_) = 1;
  uint64_t log_number_ GUARDED_BY(mu_) = 0;
  uint64_t last_seq_ GUARDED_BY(mu_) = 0;
  int64_t last_ts_ GUARDED_BY(mu_) = 0;
  // Per table id: the oldest timestamp of a version written into it, when
  // older than the table's creation (a client timestamp in the past). The
  // table then counts as existing from that time on (GetTable). Durable:
  // every flush edit and snapshot edit records it (table_since records).
  std::map<uint32_t, int64_t> backdated_ GUARDED_BY(mu_);
  // Tablets by id, and per table id in row order.
  std::map<uint32_t, std::shared_ptr<Tablet>> tablets_ GUARDED_BY(mu_);
  std::map<uint32_t, std::vector<std::shared_ptr<Tablet>>> table_tablets_
      GUARDED_BY(mu_);
  std::map<uint64_t, std::weak_ptr<const FileMeta>> live_files_ GUARDED_BY(mu_);
  uint64_t freeze_order_ GUARDED_BY(mu_) = 0;
  // Bytes written to active memtables since they were last counted.
  uint64_t mem_added_ GUARDED_BY(mu_) = 0;
  // MakeRoomForWrite counts the memtables again once mem_added_ reaches it.
  uint64_t mem_check_at_ GUARDED_BY(mu_) = 0;
  // Most level-0 files of any tablet.
  int max_l0_ GUARDED_BY(mu_) = 0;
  // Sizes of the logs kept: written in this session or recovered at open.
  std::map<uint64_t, uint64_t> log_sizes_ GUARDED_BY(mu_);
  // Every kept log (live, or flushed and kept for the change history) by
  // number: the last server timestamp assigned before its first record, so
  // every commit after that time is in it or a later log. The oldest entry
  // bounds how far back a change subscription may start.
  std::map<uint64_t, int64_t> log_starts_ GUARDED_BY(mu_);
  // The first log each change subscription reading the past still needs
  // (db_changes.cc): kept until it has read them.
  std::multiset<uint64_t> history_pins_ GUARDED_BY(mu_);
  // The last write found less than twice the space reserve free
  // (CheckSpace): then no flushed log is kept for the change history.
  std::atomic<bool> space_short_{false};
  uint64_t current_log_number_ GUARDED_BY(mu_) = 0;
  // The leader fills memtables without mu_ while leader_filling_; fills_
  // counts the fills started, fill_waiters_ the flushes waiting for one to
  // end (AwaitFill).
  bool leader_filling_ GUARDED_BY(mu_) = false;
  uint64_t fills_ GUARDED_BY(mu_) = 0;
  int fill_waiters_ GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> fill_pause_for_testing_{0};
  // Changes whenever a tablet's active memtable is replaced (freeze, split,
  // merge, tablets added or removed): the leader routes its entries again
  // when it changed during its log write.
  uint64_t tablet_generation_ GUARDED_BY(mu_) = 0;
  uint64_t tablet_change_start_ GUARDED_BY(mu_) = 0;
  CondVar fill_cv_{&mu_};
  std::multiset<uint64_t> snapshots_ GUARDED_BY(mu_);
  Status bg_error_ GUARDED_BY(mu_);
  std::thread bg_thread_;
  CondVar bg_cv_{&mu_};    // wakes the background thread
  std::thread commit_thread_;
  CondVar commit_cv_{&mu_};  // wakes the commit thread (shutdown, upkeep)
  // Asked of the commit thread by RequestLogUpkeep: an early log sync, and
  // the next log's file (spare_log_wanted_ stays set while it is made).
  bool log_sync_wanted_ GUARDED_BY(mu_) = false;
  bool spare_log_wanted_ GUARDED_BY(mu_) = false;
  // The next log, made with its directory entry synced, numbered above
  // the current log (a roll after a failed append drops it).
  std::unique_ptr<WritableFile> spare_log_ GUARDED_BY(mu_);
  uint64_t spare_log_number_ GUARDED_BY(mu_) = 0;
  // The number of the newest log a switch or roll made (it is current once
  // the switch ends): a spare numbered below it is never used.
  uint64_t newest_log_number_ GUARDED_BY(mu_) = 0;
  // The log during which making the spare failed: not tried again (nor
  // logged again) until the next switch.
  uint64_t spare_log_failed_during_ GUARDED_BY(mu_) = 0;
  // Set at open, before any thread starts; read-only afterwards.
  uint64_t space_reserve_ = 0;
  // The free space of the data directory's filesystem for a write adding
  // `adding` bytes: statfs, or while far above the reserve a recent
  // answer less what was written since (a statfs per write cost as much
  // as the rest of the write).
  Result<uint64_t> FreeSpaceFor(uint64_t adding) EXCLUDES(space_mu_);
  Mutex space_mu_;
  uint64_t space_free_ GUARDED_BY(space_mu_) = 0;
  int64_t space_checked_micros_ GUARDED_BY(space_mu_) = 0;
  uint64_t space_written_since_ GUARDED_BY(space_mu_) = 0;
  // Tablets to compact because data was deleted below the space reserve;
  // true once the tablet's memtable was frozen for it.
  std::map<uint32_t, bool> reclaim_ GUARDED_BY(mu_);
  // Free space of the data directory when background work last paused.
  uint64_t paused_free_space_ GUARDED_BY(mu_) = 0;
  CondVar done_cv_{&mu_};  // background work finished a step
  bool shutting_down_ GUARDED_BY(mu_) = false;
  bool bg_busy_ GUARDED_BY(mu_) = false;
  // A leader froze a memtable before its log write: it wakes the
  // background thread when its group is done, so the flush (and the tablet
  // sizes looked at after it) never race the group's memtable fill.
  bool wake_after_group_ GUARDED_BY(mu_) = false;
  // Out of space in the background: retried once a write or a request
  // clears it, not sticky.
  bool bg_paused_ GUARDED_BY(mu_) = false;
  // Background steps started, and the one that paused background work: a
  // write or request that cleared the pause fails for space only when a
  // step started after that (Unpause, PausedSince).
  uint64_t bg_steps_ GUARDED_BY(mu_) = 0;
  uint64_t paused_step_ GUARDED_BY(mu_) = 0;
  uint64_t manual_requested_ GUARDED_BY(mu_) = 0;
  uint64_t manual_completed_ GUARDED_BY(mu_) = 0;
  // Tablets a manual compaction still has to compact, for ticket
  // manual_ticket_.
  std::deque<uint32_t> manual_queue_ GUARDED_BY(mu_);
  uint64_t manual_ticket_ GUARDED_BY(mu_) = 0;

  std::deque<Writer*> writers_ GUARDED_BY(mu_);
  // The commit log. Only the front writer of writers_ appends to it or
  // replaces it; log_mu_ is held around every use but the sync beside the
  // writers (SyncLogConcurrently, which log_syncing_ announces).
  // Taken without mu_, or inside it (never mu_ inside log_mu_).
  Mutex log_mu_ ACQUIRED_AFTER(mu_);
  std::unique_ptr<LogWriter> log_ GUARDED_BY(log_mu_);
  // Bytes of log_ known to be synced.
  uint64_t log_synced_bytes_ GUARDED_BY(log_mu_) = 0;
  // Bytes of log_ and its value file together at their last sync (for the
  // early sync, RequestLogUpkeep).
  uint64_t log_synced_total_ GUARDED_BY(log_mu_) = 0;
  // A SyncLogConcurrently is syncing log_ without log_mu_: log_ must not be
  // closed or replaced until it ends (log_idle_cv_).
  bool log_syncing_ GUARDED_BY(log_mu_) = false;
  CondVar log_idle_cv_{&log_mu_};
  // The current log's value file (WriteLargeValues; nullptr until its first
  // value) and the hold the memtables referencing it share.
  std::unique_ptr<ValueFileWriter> log_values_ GUARDED_BY(log_mu_);
  std::shared_ptr<const void> log_values_hold_ GUARDED_BY(log_mu_);
  uint64_t log_file_bytes_ GUARDED_BY(mu_) = 0;

  // Change events (store/changes.h); published under mu_ in commit order.
  ChangeHub changes_;

  // Locks (unlocks) the row-lock stripes of `stripes`, sorted ascending.
  void LockStripes(const std::vector<size_t>& stripes);
  void UnlockStripes(const std::vector<size_t>& stripes);
  static constexpr int kRowLockStripes = 64;
  Mutex row_locks_[kRowLockStripes];

  // Stats.
  uint64_t stat_bytes_user_ GUARDED_BY(mu_) = 0;
  uint64_t stat_bytes_disk_ GUARDED_BY(mu_) = 0;
  uint64_t stat_log_syncs_ GUARDED_BY(mu_) = 0;
  uint64_t stat_commit_syncs_ GUARDED_BY(mu_) = 0;
  uint64_t stat_commit_sync_micros_ GUARDED_BY(mu_) = 0;
  // The first sequence of the group a leader is writing to the log (0:
  // none), from its CommitGroup's unlock until its memtables are filled.
  uint64_t inflight_first_seq_ GUARDED_BY(mu_) = 0;
  uint64_t stat_flushes_ GUARDED_BY(mu_) = 0;
  // Memtables frozen (FreezeTablet): a compaction watches it, without mu_,
  // for flushes to run between its entries.
  std::atomic<uint64_t> freezes_{0};
  uint64_t stat_flushes_during_compactions_ GUARDED_BY(mu_) = 0;
  uint64_t stat_compactions_ GUARDED_BY(mu_) = 0;
  uint64_t stat_moves_ GUARDED_BY(mu_) = 0;  // of those, moves
  uint64_t stat_write_stalls_ GUARDED_BY(mu_) = 0;
  uint64_t stat_write_delays_ GUARDED_BY(mu_) = 0;
  uint64_t stat_splits_ GUARDED_BY(mu_) = 0;
  uint64_t stat_merges_ GUARDED_BY(mu_) = 0;
  uint64_t stat_max_pause_micros_ GUARDED_BY(mu_) = 0;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_DB_IMPL_H_
