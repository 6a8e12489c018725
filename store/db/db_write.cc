// DBImpl: the write path. Validation, the space reserve, the write queue
// whose leader commits a group (log record, memtables, change events), and
// the read-modify-write operations that serialize per row.
#include <algorithm>
#include <deque>
#include <optional>

#include "store/db/db_impl.h"
#include "store/db/log_record.h"
#include "store/util/coding.h"
#include "store/util/hash.h"

namespace tabletfs {

namespace {

constexpr size_t kMaxGroupBytes = 1 << 20;
// The entries a thread's group batch keeps room for between groups.
constexpr size_t kKeptGroupEntries = 4096;
// Values this long go to the log from where they are, not copied into the
// group's record first.
constexpr size_t kLogValueInPlaceBytes = 64 << 10;

bool AddsData(const RowMutation& m) {
  for (const RowMutation::Op& op : m.ops()) {
    if (op.type == RowMutation::OpType::kSetCell) return true;
  }
  return false;
}

}  // namespace

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
    Log(LogLevel::kInfo,
        "space reserve: " + std::to_string(*options_.space_reserve_bytes) +
            " bytes (space_reserve_bytes)");
    return *options_.space_reserve_bytes;
  }
  Result<uint64_t> size = env_->GetDiskSize(dir_);
  if (!size.ok()) {
    // Unknown (an Env without sizes): the largest default, as before sizes
    // were looked at.
    Log(LogLevel::kInfo,
        "space reserve: " + std::to_string(kMaxDefaultReserve) +
            " bytes (filesystem size unknown: " + size.status().ToString() +
            ")");
    return kMaxDefaultReserve;
  }
  // A few percent, like ext4's root reserve, so a small disk is not all
  // reserve; a filesystem that reports no size at all gets none: writes
  // then fail only with the disk's own ENOSPC.
  uint64_t reserve = std::min(kMaxDefaultReserve, *size / 32);
  std::string why =
      *size == 0 ? std::string("the filesystem reports no size")
      : reserve == kMaxDefaultReserve
          ? "the most by default; 1/32 of the " + std::to_string(*size) +
                "-byte filesystem is more"
          : "1/32 of the " + std::to_string(*size) + "-byte filesystem";
  Log(LogLevel::kInfo, "space reserve: " + std::to_string(reserve) +
                           " bytes (" + why +
                           "; set it with space_reserve_bytes)");
  return reserve;
}

Result<uint64_t> DBImpl::FreeSpaceFor(uint64_t adding) {
  // Trusted for 50 ms, and only while the estimate stays above twice the
  // reserve plus 16 MiB: near the reserve every write asks the disk.
  constexpr int64_t kFreshMicros = 50000;
  constexpr uint64_t kMargin = 16u << 20;
  if (!env_->FreeSpaceIsCostly()) return env_->GetFreeSpace(dir_);
  MutexLock l(&space_mu_);
  const int64_t now = env_->NowMicros();
  // A write costs its bytes twice: in the log and, later, in an SSTable.
  const uint64_t cost = 2 * adding;
  const uint64_t spent = space_written_since_ + cost;
  const uint64_t estimate = space_free_ > spent ? space_free_ - spent : 0;
  if (space_checked_micros_ != 0 && now >= space_checked_micros_ &&
      now - space_checked_micros_ < kFreshMicros &&
      estimate > 2 * space_reserve_ + kMargin) {
    space_written_since_ = spent;
    return estimate;
  }
  Result<uint64_t> free_space = env_->GetFreeSpace(dir_);
  if (!free_space.ok()) {
    space_checked_micros_ = 0;
    return free_space;
  }
  space_free_ = *free_space;
  space_checked_micros_ = now;
  space_written_since_ = cost;
  return *free_space;
}

Status DBImpl::CheckSpace(const RowMutation& m, bool* reclaim) {
  *reclaim = false;
  if (space_reserve_ == 0) return Status::OK();
  Result<uint64_t> free_space = FreeSpaceFor(m.ByteSize());
  // Short of space, the logs kept for the change history go first.
  space_short_.store(free_space.ok() && *free_space / 2 < space_reserve_,
                     std::memory_order_relaxed);
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
  // A group's writers mostly share one origin: ask the hub once per run.
  std::optional<uint64_t> asked;
  bool wanted = false;
  const bool values = changes_.WantsValues();
  for (const Writer* x : group) {
    if (!x->status.ok()) continue;  // refused when revalidated
    if (asked != x->origin) {
      asked = x->origin;
      wanted = changes_.WantsOrigin(x->origin);
    }
    if (!wanted) continue;  // nobody listens
    ChangeHub::AppendMutationEvents(x->table, *x->mutation, x->timestamp,
                                    x->origin, values, &events);
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

Result<int64_t> DBImpl::Apply(std::string_view table,
                              const RowMutation& mutation,
                              const WriteOptions& options) {
  MutexLock row_lock(RowLock(table, mutation.row()));
  return WriteLocked(table, mutation, options);
}

std::vector<Result<int64_t>> DBImpl::ApplyBatch(
    std::string_view table, const std::vector<RowMutation>& mutations,
    const WriteOptions& options) {
  std::vector<Result<int64_t>> out(mutations.size(), int64_t{0});
  // Every row's lock, each stripe once and in index order (Apply and the
  // read-modify-writes take one stripe: no deadlock).
  static_assert(kRowLockStripes <= 64, "the stripes are a 64-bit set");
  uint64_t set = 0;
  for (const RowMutation& m : mutations) {
    set |= uint64_t{1} << (RowLock(table, m.row()) - row_locks_);
  }
  std::vector<size_t> stripes;
  for (size_t i = 0; i < kRowLockStripes; i++) {
    if (set >> i & 1) stripes.push_back(i);
  }
  LockStripes(stripes);
  // The valid mutations queue one after another, so that leaders take
  // them in groups of up to kMaxGroupBytes: one log append per group. The
  // table is looked up once; the writers live in one deque (stable
  // addresses, few allocations); writer_of[i] is mutation i's, or -1.
  std::shared_ptr<const TableState> t;
  {
    MutexLock l(&mu_);
    auto it = tables_.find(table);
    if (it != tables_.end()) t = it->second;
  }
  std::deque<Writer> writers;
  std::vector<ptrdiff_t> writer_of(mutations.size(), -1);
  std::vector<bool> reclaim(mutations.size(), false);
  for (size_t i = 0; i < mutations.size(); i++) {
    bool r = false;
    Status s = t == nullptr ? Status::NotFound("no such table", table)
                            : ValidateMutation(*t, mutations[i]);
    if (s.ok()) s = CheckSpace(mutations[i], &r);
    if (!s.ok()) {
      out[i] = s;
      continue;
    }
    reclaim[i] = r;
    Writer& w = writers.emplace_back(&mu_);
    w.table = table;
    w.mutation = &mutations[i];
    w.sync = options.sync;
    w.origin = options.origin;
    writer_of[i] = static_cast<ptrdiff_t>(writers.size() - 1);
  }
  {
    MutexLock l(&mu_);
    for (Writer& w : writers) writers_.push_back(&w);
    for (Writer& w : writers) {
      while (!w.done && &w != writers_.front()) Await(&w.cv);
      if (!w.done) LeadGroup(&w);
    }
    for (size_t i = 0; i < mutations.size(); i++) {
      if (writer_of[i] < 0) continue;
      const Writer& w = writers[static_cast<size_t>(writer_of[i])];
      if (!w.status.ok()) {
        out[i] = w.status;
      } else {
        out[i] = w.timestamp;
        if (reclaim[i]) RequestReclaim(table, mutations[i].row());
      }
    }
  }
  UnlockStripes(stripes);
  return out;
}

// The analysis cannot follow a variable set of locks.
void DBImpl::LockStripes(const std::vector<size_t>& stripes)
    NO_THREAD_SAFETY_ANALYSIS {
  for (size_t i : stripes) row_locks_[i].Lock();
}

void DBImpl::UnlockStripes(const std::vector<size_t>& stripes)
    NO_THREAD_SAFETY_ANALYSIS {
  for (size_t i : stripes) row_locks_[i].Unlock();
}

Status DBImpl::CheckBeforeQueueing(std::string_view table,
                                   const RowMutation& mutation, bool* reclaim) {
  std::shared_ptr<const TableState> t;
  {
    MutexLock l(&mu_);
    auto it = tables_.find(table);
    if (it == tables_.end()) return Status::NotFound("no such table", table);
    t = it->second;
  }
  TABLETFS_RETURN_IF_ERROR(ValidateMutation(*t, mutation));
  return CheckSpace(mutation, reclaim);
}

Result<int64_t> DBImpl::WriteLocked(std::string_view table,
                                    const RowMutation& mutation,
                                    const WriteOptions& options) {
  // Fail early, before queueing, for what needs no ordering.
  bool reclaim = false;
  TABLETFS_RETURN_IF_ERROR(CheckBeforeQueueing(table, mutation, &reclaim));

  Writer w(&mu_);
  w.table = table;
  w.mutation = &mutation;
  w.sync = options.sync;
  w.origin = options.origin;

  MutexLock l(&mu_);
  writers_.push_back(&w);
  while (!w.done && &w != writers_.front()) Await(&w.cv);
  // Not done by a leader before it: this writer leads the next group.
  if (!w.done) LeadGroup(&w);
  if (!w.status.ok()) return w.status;
  if (reclaim) RequestReclaim(table, mutation.row());
  return w.timestamp;
}

void DBImpl::LeadGroup(Writer* self) {
  Status status = bg_error_;
  if (status.ok()) status = MakeRoomForWrite();
  // The group and its batch are the leading thread's, kept from its last
  // group (a thread leads one group at a time): their vectors keep their
  // capacity, so a write allocates none of them.
  thread_local std::vector<Writer*> group;
  thread_local GroupBatch batch;
  size_t group_bytes = 0;
  TakeGroup(&group, &group_bytes);
  if (status.ok()) {
    PrepareGroup(group, &batch);
    if (!batch.entries.empty()) {
      status = CommitGroup(group, group_bytes, &batch);
    }
  }
  if (wake_after_group_) {
    // Only now: a flush started during the log write would size the
    // tablets (for a split or merge) with or without this group's entries,
    // as the timing fell.
    wake_after_group_ = false;
    bg_cv_.Signal();
  }
  FinishGroup(group, status, self);
  group.clear();
  batch.Clear();  // unpins the memtables
  if (batch.entries.capacity() > kKeptGroupEntries) {
    // A group of many small operations (up to kMaxGroupBytes of row
    // deletes: ~100,000 entries) would keep megabytes per thread.
    std::vector<GroupEntry>().swap(batch.entries);
  }
}

void DBImpl::TakeGroup(std::vector<Writer*>* group, size_t* group_bytes) {
  group->clear();
  *group_bytes = 0;
  for (Writer* x : writers_) {
    if (x->mutation == nullptr) break;  // a Flush request: handled alone
    if (!group->empty() &&
        *group_bytes + x->mutation->ByteSize() > kMaxGroupBytes) {
      break;
    }
    group->push_back(x);
    *group_bytes += x->mutation->ByteSize();
  }
}

MemTable* DBImpl::RouteEntry(uint32_t table_id, std::string_view key,
                             GroupBatch* batch) {
  Tablet* tablet = FindTablet(table_id, key);
  if (tablet == nullptr) return nullptr;
  if (tablet->mem_first_log == kNoLog) {
    tablet->mem_first_log = current_log_number_;
    tablet->mem_first_seq = batch->first_seq;
  }
  if (batch->mems.empty() || batch->mems.back() != tablet->mem) {
    batch->mems.push_back(tablet->mem);
  }
  return tablet->mem.get();
}

void DBImpl::PrepareGroup(const std::vector<Writer*>& group,
                          GroupBatch* batch) {
  batch->seq = last_seq_;
  batch->first_seq = last_seq_ + 1;
  batch->ts = last_ts_;
  const int64_t now = env_->NowMicros();
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
    batch->ts = std::max(now, batch->ts + 1);
    x->timestamp = batch->ts;
    for (const RowMutation::Op& op : x->mutation->ops()) {
      if (op.type != RowMutation::OpType::kSetCell) continue;
      if (op.timestamp != kServerTimestamp && op.timestamp < t.created_micros) {
        NoteVersionWritten(t.id, op.timestamp);
      }
      if (op.value.size() >= options_.large_value_bytes &&
          batch->value_file_number == 0) {
        // In case the log's value file must be made (WriteLargeValues runs
        // without mu_); unused numbers are simply skipped.
        batch->value_file_number = next_file_number_++;
      }
    }
    batch->sync = batch->sync || x->sync;
    const std::string& row = x->mutation->row();
    const size_t first_entry = batch->entries.size();
    for (const RowMutation::Op& op : x->mutation->ops()) {
      AppendOpEntry(t, row, op, ++batch->seq, x->timestamp, &batch->entries);
    }
    if (batch->entries.size() > first_entry) {
      // Routed by its first key: every key of the row lies in the tablet
      // that holds the row's prefix (tablets split between rows).
      MemTable* mem = RouteEntry(t.id, batch->entries[first_entry].key, batch);
      for (size_t i = first_entry; i < batch->entries.size(); ++i) {
        batch->entries[i].mem = mem;
        batch->entries[i].table_id = t.id;
      }
    }
    batch->writes.push_back(
        {static_cast<uint32_t>(batch->entries.size() - first_entry),
         x->timestamp, x->origin});
  }
  // Timestamps are consumed even when the log write fails later, so a
  // timestamp is never handed out twice.
  last_ts_ = batch->ts;
}

void DBImpl::AppendOpEntry(const TableState& t, const std::string& row,
                           const RowMutation::Op& op, uint64_t seq,
                           int64_t server_ts,
                           std::vector<GroupEntry>* entries) {
  uint32_t fid = 0;
  if (op.type != RowMutation::OpType::kDeleteRow) {
    fid = t.FindFamily(op.family)->id;
  }
  const int64_t ts =
      op.timestamp == kServerTimestamp ? server_ts : op.timestamp;
  switch (op.type) {
    case RowMutation::OpType::kSetCell:
      entries->push_back(
          {VersionKey(t.id, row, fid, op.qualifier, ts, seq, EntryKind::kPut),
           op.value});
      break;
    case RowMutation::OpType::kDeleteVersion:
      entries->push_back({VersionKey(t.id, row, fid, op.qualifier, ts, seq,
                                     EntryKind::kDeleteVersion),
                          {}});
      break;
    case RowMutation::OpType::kDeleteCell:
      entries->push_back(
          {CellMarkerKey(t.id, row, fid, op.qualifier, seq), {}});
      break;
    case RowMutation::OpType::kDeleteFamily:
      entries->push_back({FamilyMarkerKey(t.id, row, fid, seq), {}});
      break;
    case RowMutation::OpType::kDeleteRow:
      entries->push_back({RowMarkerKey(t.id, row, seq), {}});
      break;
  }
}

Status DBImpl::CommitGroup(const std::vector<Writer*>& group,
                           size_t group_bytes, GroupBatch* batch) {
  const uint64_t routed = tablet_generation_;
  inflight_first_seq_ = batch->first_seq;
  // Only the leader writes to the log and its value file. A split, merge or
  // freeze may change the tablets meanwhile (the writes can block for
  // milliseconds; they are kept out of their pause).
  mu_.Unlock();
  Status status;
  if (batch->value_file_number != 0) status = WriteLargeValues(batch);
  // The record: its small parts in `record`, and values of
  // kLogValueInPlaceBytes or more where they are, each at its offset in
  // `record` (a 64 MiB cell below large_value_bytes is not copied into the
  // record first).
  std::string record;
  auto& in_place = batch->in_place;
  size_t record_bytes = 30 + 12 * batch->writes.size();
  for (const GroupEntry& e : batch->entries) {
    record_bytes += e.key.size() + 10;
    if (e.value.size() < kLogValueInPlaceBytes) record_bytes += e.value.size();
  }
  record.reserve(record_bytes);
  AppendLogRecordHeader(&record, batch->seq, batch->ts);
  for (const GroupEntry& e : batch->entries) {
    if (e.value.size() < kLogValueInPlaceBytes) {
      AppendLogRecordEntry(&record, e.key, e.value);
    } else {
      AppendLogRecordEntryKey(&record, e.key, e.value.size());
      in_place.emplace_back(record.size(), e.value);
    }
  }
  AppendLogRecordWrites(&record, batch->ts, batch->writes);
  auto& pieces = batch->pieces;
  size_t record_size = record.size(), done = 0;
  for (const auto& [offset, value] : in_place) {
    pieces.push_back(std::string_view(record).substr(done, offset - done));
    pieces.push_back(value);
    done = offset;
    record_size += value.size();
  }
  pieces.push_back(std::string_view(record).substr(done));
  if (batch->value_file_number != 0) {
    for (const GroupEntry& e : batch->entries) record_size += e.held_bytes;
  }
  uint64_t log_bytes = 0, value_bytes = 0, unsynced = 0;
  if (status.ok()) {
    status = AppendToLog(pieces, batch->sync, &log_bytes, &value_bytes,
                         &unsynced);
  }
  mu_.Lock();
  if (status.ok()) FillMemtables(routed, batch);
  leader_filling_ = false;
  if (fill_waiters_ > 0) fill_cv_.SignalAll();
  inflight_first_seq_ = 0;
  // max: UpdateFamily may have taken a number meanwhile (its `since`).
  if (status.ok()) {
    last_seq_ = std::max(last_seq_, batch->seq);
    if (changes_.HasSubscribers()) PublishGroup(group);
    mem_added_ += record_size;
    stat_bytes_user_ += group_bytes;
    stat_bytes_disk_ += record_size;
    if (batch->sync) ++stat_log_syncs_;
    // The log's value file counts with it for the switch (a log is
    // switched by size), not for the change history, which keeps the
    // logs, not the values.
    log_file_bytes_ = log_bytes + value_bytes;
    log_sizes_[current_log_number_] = log_bytes;
    RequestLogUpkeep(unsynced);
    // A tablet that its memtable takes past the split threshold splits
    // now, not after the next flush (which waits for memtable_bytes).
    const MemTable* last = nullptr;
    for (const GroupEntry& e : batch->entries) {
      if (e.mem == nullptr || e.mem == last) continue;
      last = e.mem;
      if (WakeForSplit(e.table_id, e.key)) break;
    }
  } else if (status.IsNoSpace()) {
    // The numbers are burnt, never reused: the record may have reached
    // the old log whole (then it replays after a crash, like any write
    // whose outcome the caller could not learn).
    last_seq_ = std::max(last_seq_, batch->seq);
    // The log may end in a partial record; it reads back as a torn tail
    // only if nothing follows it, so later writes go to a new log. The
    // failure is not sticky: the write can be retried once space returns.
    RollLogAfterFailure();
  } else {
    bg_error_ = status;
    Log(LogLevel::kError, "log write failed: " + status.ToString());
  }
  return status;
}

Status DBImpl::AppendToLog(std::span<const std::string_view> record,
                           bool sync, uint64_t* log_bytes,
                           uint64_t* value_bytes, uint64_t* unsynced) {
  MutexLock lg(&log_mu_);
  Status status = log_->AddRecord(record);
  if (status.ok() && sync) status = SyncLogValues();
  if (status.ok()) status = sync ? log_->Sync() : log_->Flush();
  *log_bytes = log_->size();
  *value_bytes = log_values_ ? log_values_->size() : 0;
  if (status.ok() && sync) {
    log_synced_bytes_ = *log_bytes;
    log_synced_total_ = *log_bytes + *value_bytes;
  }
  *unsynced = *log_bytes + *value_bytes - log_synced_total_;
  return status;
}

Status DBImpl::WriteLargeValues(GroupBatch* batch) {
  size_t moved = 0;
  for (const GroupEntry& e : batch->entries) {
    if (e.value.size() >= options_.large_value_bytes &&
        KindOf(e.key) == EntryKind::kPut) {
      ++moved;
    }
  }
  if (moved == 0) return Status::OK();
  batch->refs.reserve(moved);  // the entries point into them
  MutexLock lg(&log_mu_);
  if (log_values_ == nullptr) {
    const std::string path = FileName(batch->value_file_number, ".vlf");
    Result<std::unique_ptr<ValueFileWriter>> w = ValueFileWriter::Create(
        env_, path, batch->value_file_number, kValueFileMayEndTorn);
    if (!w.ok()) return w.status();
    // The header and the file's name durable now: later syncs of the file
    // run beside the leader's appends (SyncFlushed), which cannot sync the
    // directory.
    Status s = (*w)->Sync();
    if (!s.ok()) {
      env_->RemoveFile(path).IgnoreError();
      return s;
    }
    log_values_ = std::move(*w);
    log_values_hold_ = NewValueFileHold(batch->value_file_number);
  }
  for (GroupEntry& e : batch->entries) {
    if (e.value.size() < options_.large_value_bytes ||
        KindOf(e.key) != EntryKind::kPut) {
      continue;
    }
    Result<ValueRef> ref = log_values_->Add(e.value);
    if (!ref.ok()) return ref.status();
    std::string& encoded = batch->refs.emplace_back();
    ref->EncodeTo(&encoded);
    SetKind(&e.key, EntryKind::kPutValueRef);
    e.held_bytes = e.value.size();
    e.value = encoded;
  }
  batch->hold = log_values_hold_;
  // Before the log record that points at the values is written.
  return log_values_->Flush();
}

void DBImpl::FillMemtables(uint64_t routed, GroupBatch* batch) {
  // The memtables are filled without mu_: route again if the tablets
  // changed since the entries were routed. Once filling, the memtables
  // routed to are filled even if a split, merge or freeze replaces them
  // meanwhile (StartTabletChange): no writer waits for that.
  if (tablet_generation_ != routed) {
    batch->mems.clear();
    // nullptr: the table was dropped meanwhile.
    for (GroupEntry& e : batch->entries) {
      e.mem = RouteEntry(e.table_id, e.key, batch);
    }
  }
  leader_filling_ = true;
  ++fills_;
  mu_.Unlock();
  const int64_t pause = fill_pause_for_testing_.load(std::memory_order_relaxed);
  const size_t n = batch->entries.size();
  for (size_t i = 0; i < n; ++i) {
    if (pause > 0 && i == n / 2) {
      std::this_thread::sleep_for(std::chrono::microseconds(pause));
    }
    const GroupEntry& e = batch->entries[i];
    if (e.mem == nullptr) continue;
    e.mem->Add(e.key, e.value);
    if (e.held_bytes != 0) e.mem->Hold(batch->hold, e.held_bytes);
  }
  mu_.Lock();
}

void DBImpl::FinishGroup(const std::vector<Writer*>& group,
                         const Status& status, Writer* self) {
  for (Writer* x : group) {
    if (!status.ok()) x->status = status;
    x->done = true;
    if (x != self) x->cv.Signal();
    writers_.pop_front();
  }
  if (!writers_.empty()) writers_.front()->cv.Signal();
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

Result<RewriteResult> DBImpl::RewriteRow(std::string_view table,
                                         std::string_view row,
                                         const ReadOptions& read,
                                         const RowRewrite& rewrite,
                                         const WriteOptions& options) {
  TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
  if (read.snapshot != nullptr || read.at.has_value()) {
    return Status::InvalidArgument(
        "RewriteRow reads the current row: no snapshot, no time");
  }
  MutexLock row_lock(RowLock(table, row));
  TABLETFS_ASSIGN_OR_RETURN(Row current, ReadRow(table, row, read));
  TABLETFS_ASSIGN_OR_RETURN(RowMutation m, rewrite(current));
  if (m.empty()) return RewriteResult{};
  if (m.row() != row) {
    return Status::InvalidArgument("RewriteRow: mutation for row '" + m.row() +
                                   "' differs from the read row");
  }
  TABLETFS_ASSIGN_OR_RETURN(int64_t ts, WriteLocked(table, m, options));
  return RewriteResult{true, ts};
}

}  // namespace tabletfs
