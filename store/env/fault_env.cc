#include "store/fault_env.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "store/env/env_path.h"

namespace tabletfs {

using env_path::Normalize;
using env_path::Parent;

std::string_view FaultOpName(FaultOp op) {
  switch (op) {
    case FaultOp::kRead:
      return "read";
    case FaultOp::kAppend:
      return "append";
    case FaultOp::kFlush:
      return "flush";
    case FaultOp::kSync:
      return "sync";
    case FaultOp::kRename:
      return "rename";
    case FaultOp::kRemove:
      return "remove";
    case FaultOp::kCreate:
      return "create";
    case FaultOp::kSyncDir:
      return "syncdir";
    case FaultOp::kLock:
      return "lock";
    case FaultOp::kTruncate:
      return "truncate";
    case FaultOp::kOpen:
      return "open";
    case FaultOp::kClose:
      return "close";
  }
  return "unknown";
}

class FaultInjectionEnv::FaultSequentialFile final : public SequentialFile {
 public:
  FaultSequentialFile(FaultInjectionEnv* env, std::string path,
                      std::unique_ptr<SequentialFile> base)
      : env_(env), path_(std::move(path)), base_(std::move(base)) {}

  Status Read(size_t n, std::string_view* result, char* scratch) override {
    if (Status s = env_->BeginOp(FaultOp::kRead, "read " + path_); !s.ok()) {
      *result = {};
      return s;
    }
    return base_->Read(n, result, scratch);
  }
  Status Skip(uint64_t n) override {
    TABLETFS_RETURN_IF_ERROR(env_->BeginOp(FaultOp::kRead, "skip " + path_));
    return base_->Skip(n);
  }

 private:
  FaultInjectionEnv* const env_;
  const std::string path_;
  const std::unique_ptr<SequentialFile> base_;
};

class FaultInjectionEnv::FaultRandomAccessFile final : public RandomAccessFile {
 public:
  FaultRandomAccessFile(FaultInjectionEnv* env, std::string path,
                        std::unique_ptr<RandomAccessFile> base)
      : env_(env), path_(std::move(path)), base_(std::move(base)) {}

  Status Read(uint64_t offset, size_t n, std::string_view* result,
              char* scratch) const override {
    if (Status s = env_->BeginOp(FaultOp::kRead, "read " + path_); !s.ok()) {
      *result = {};
      return s;
    }
    return base_->Read(offset, n, result, scratch);
  }

 private:
  FaultInjectionEnv* const env_;
  const std::string path_;
  const std::unique_ptr<RandomAccessFile> base_;
};

class FaultInjectionEnv::FaultWritableFile final : public WritableFile {
 public:
  FaultWritableFile(FaultInjectionEnv* env, std::string path, uint64_t id,
                    std::unique_ptr<WritableFile> base)
      : env_(env), path_(std::move(path)), id_(id), base_(std::move(base)) {}

  Status Append(std::string_view data) override {
    return env_->FileAppend(base_.get(), path_, data);
  }
  Status Flush() override {
    TABLETFS_RETURN_IF_ERROR(env_->FileOp(FaultOp::kFlush, "flush " + path_));
    TABLETFS_RETURN_IF_ERROR(base_->Flush());
    env_->FileFlushed(base_.get(), &flushed_);
    return Status::OK();
  }
  Status Sync() override {
    TABLETFS_RETURN_IF_ERROR(env_->FileSync(base_.get(), id_, path_));
    env_->FileFlushed(base_.get(), &flushed_);
    return Status::OK();
  }
  Status SyncFlushed() override {
    return env_->FileSyncFlushed(base_.get(), id_, path_, &flushed_);
  }
  Status Close() override {
    TABLETFS_RETURN_IF_ERROR(env_->FileOp(FaultOp::kClose, "close " + path_));
    return base_->Close();
  }
  uint64_t Size() const override { return base_->Size(); }

 private:
  FaultInjectionEnv* const env_;
  const std::string path_;
  const uint64_t id_;
  const std::unique_ptr<WritableFile> base_;
  // Bytes handed to the base by Flush() or Sync(): what SyncFlushed()
  // covers. Guarded by the env's mu_.
  uint64_t flushed_ = 0;
};

FaultInjectionEnv::FaultInjectionEnv(Env* base)
    : base_(base), mem_base_(dynamic_cast<MemEnv*>(base)) {}

FaultInjectionEnv::~FaultInjectionEnv() = default;

namespace {

// Whether `op` changes the base env (and so fails while the filesystem is
// inactive). Close only releases the handle: the data it could write was
// refused at Append().
bool Writes(FaultOp op) {
  switch (op) {
    case FaultOp::kRead:
    case FaultOp::kOpen:
    case FaultOp::kLock:
    case FaultOp::kClose:
      return false;
    default:
      return true;
  }
}

}  // namespace

Status FaultInjectionEnv::BeginOpLocked(FaultOp op, std::string_view what) {
  const int i = static_cast<int>(op);
  uint64_t call = ++calls_[i];
  for (const FailRule& rule : fail_all_[i]) {
    if (rule.target.empty() || what.find(rule.target) != what.npos) {
      ++injected_[i];
      return rule.error.WithContext(what);
    }
  }
  auto it = pending_errors_[i].find(call);
  if (it != pending_errors_[i].end()) {
    Status error = it->second.WithContext(what);
    pending_errors_[i].erase(it);
    // Several injections aimed at one call fire on successive calls.
    auto [first, last] = pending_errors_[i].equal_range(call);
    std::vector<Status> later;
    for (auto jt = first; jt != last; ++jt) later.push_back(jt->second);
    pending_errors_[i].erase(first, last);
    for (Status& e : later) pending_errors_[i].emplace(call + 1, std::move(e));
    ++injected_[i];
    return error;
  }
  if (Writes(op) && !active_) {
    return Status::IOError(what, "filesystem inactive (simulated power loss)");
  }
  return Status::OK();
}

Status FaultInjectionEnv::BeginOp(FaultOp op, std::string_view what) {
  MutexLock lock(&mu_);
  return BeginOpLocked(op, what);
}

Status FaultInjectionEnv::FileOp(FaultOp op, std::string_view what) {
  return BeginOp(op, what);
}

Status FaultInjectionEnv::FileAppend(WritableFile* base,
                                     const std::string& path,
                                     std::string_view data) {
  MutexLock lock(&mu_);
  TABLETFS_RETURN_IF_ERROR(BeginOpLocked(FaultOp::kAppend, "append " + path));
  if (free_space_.has_value() && data.size() > *free_space_) {
    return Status::NoSpace("append " + path,
                           "no space left on device (simulated)");
  }
  TABLETFS_RETURN_IF_ERROR(base->Append(data));
  if (free_space_.has_value()) *free_space_ -= data.size();
  return Status::OK();
}

Status FaultInjectionEnv::FileSync(WritableFile* base, uint64_t id,
                                   const std::string& path) {
  uint64_t delay = 0;
  {
    MutexLock lock(&mu_);
    if (path.find(sync_delay_target_) != std::string::npos) {
      delay = sync_delay_micros_;
    }
  }
  if (delay > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay));
  MutexLock lock(&mu_);
  TABLETFS_RETURN_IF_ERROR(BeginOpLocked(FaultOp::kSync, "sync " + path));
  TABLETFS_RETURN_IF_ERROR(base->Sync());
  // The model is reset by DropUnsyncedData(); a handle from before then has
  // an id the model no longer knows, and its file counts as synced anyway.
  auto it = files_.find(id);
  if (it != files_.end()) it->second.synced_size = base->Size();
  return Status::OK();
}

void FaultInjectionEnv::FileFlushed(WritableFile* base, uint64_t* flushed) {
  MutexLock lock(&mu_);
  *flushed = base->Size();
}

Status FaultInjectionEnv::FileSyncFlushed(WritableFile* base, uint64_t id,
                                          const std::string& path,
                                          const uint64_t* flushed) {
  // What was flushed when the sync began is what it covers: appends that
  // race with it may or may not reach the disk, so the model says not. The
  // call is counted before the delay, so a test can tell that a sync is
  // under way (CallCount) while it sleeps.
  uint64_t covered;
  uint64_t delay = 0;
  {
    MutexLock lock(&mu_);
    TABLETFS_RETURN_IF_ERROR(BeginOpLocked(FaultOp::kSync, "sync " + path));
    covered = *flushed;
    if (path.find(sync_delay_target_) != std::string::npos) {
      delay = sync_delay_micros_;
    }
  }
  if (delay > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay));
  // Without mu_, as a real fdatasync runs beside the writer's appends.
  TABLETFS_RETURN_IF_ERROR(base->SyncFlushed());
  MutexLock lock(&mu_);
  auto it = files_.find(id);
  if (it != files_.end()) {
    it->second.synced_size = std::max(it->second.synced_size, covered);
  }
  return Status::OK();
}

uint64_t FaultInjectionEnv::TrackLocked(const std::string& path) {
  auto it = paths_.find(path);
  if (it != paths_.end()) return it->second;
  Result<uint64_t> size = base_->GetFileSize(path);
  if (!size.ok()) return 0;
  uint64_t id = next_file_id_++;
  files_[id].synced_size = *size;
  paths_[path] = id;
  return id;
}

void FaultInjectionEnv::UntrackLocked(const std::string& path) {
  auto it = paths_.find(path);
  if (it == paths_.end()) return;
  files_.erase(it->second);
  paths_.erase(it);
}

Result<std::string> FaultInjectionEnv::ReadSyncedLocked(const std::string& path,
                                                        uint64_t id) {
  uint64_t want = files_[id].synced_size;
  TABLETFS_ASSIGN_OR_RETURN(auto file, base_->NewSequentialFile(path));
  std::string data;
  data.resize(want);
  size_t got = 0;
  while (got < want) {
    std::string_view fragment;
    TABLETFS_RETURN_IF_ERROR(file->Read(want - got, &fragment, &data[got]));
    if (fragment.empty()) break;
    if (fragment.data() != &data[got]) {
      std::copy(fragment.begin(), fragment.end(), data.begin() + got);
    }
    got += fragment.size();
  }
  data.resize(got);
  return data;
}

Result<std::unique_ptr<SequentialFile>> FaultInjectionEnv::NewSequentialFile(
    const std::string& path) {
  TABLETFS_RETURN_IF_ERROR(BeginOp(FaultOp::kOpen, "open " + path));
  TABLETFS_ASSIGN_OR_RETURN(auto file, base_->NewSequentialFile(path));
  return std::unique_ptr<SequentialFile>(
      std::make_unique<FaultSequentialFile>(this, path, std::move(file)));
}

Result<std::unique_ptr<RandomAccessFile>>
FaultInjectionEnv::NewRandomAccessFile(const std::string& path) {
  TABLETFS_RETURN_IF_ERROR(BeginOp(FaultOp::kOpen, "open " + path));
  TABLETFS_ASSIGN_OR_RETURN(auto file, base_->NewRandomAccessFile(path));
  return std::unique_ptr<RandomAccessFile>(
      std::make_unique<FaultRandomAccessFile>(this, path, std::move(file)));
}

Result<std::unique_ptr<WritableFile>> FaultInjectionEnv::OpenWritable(
    const std::string& path, bool truncate) {
  MutexLock lock(&mu_);
  TABLETFS_RETURN_IF_ERROR(BeginOpLocked(FaultOp::kCreate, "open " + path));
  const std::string p = Normalize(path);
  const bool existed = base_->FileExists(path);
  Result<std::unique_ptr<WritableFile>> file =
      truncate ? base_->NewWritableFile(path) : base_->NewAppendableFile(path);
  if (!file.ok()) return file.status();
  uint64_t id;
  if (existed) {
    id = TrackLocked(p);
    // Truncation is taken as durable at once (see the header).
    if (truncate) files_[id].synced_size = 0;
  } else {
    id = next_file_id_++;
    files_[id].synced_size = 0;
    paths_[p] = id;
    EntryChange change;
    change.kind = EntryChange::Kind::kCreate;
    change.path = p;
    change.file = id;
    change.dirs.insert(Parent(p));
    changes_.push_back(std::move(change));
  }
  return std::unique_ptr<WritableFile>(std::make_unique<FaultWritableFile>(
      this, path, id, std::move(file).value()));
}

Result<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewWritableFile(
    const std::string& path) {
  return OpenWritable(path, /*truncate=*/true);
}

Result<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewAppendableFile(
    const std::string& path) {
  return OpenWritable(path, /*truncate=*/false);
}

bool FaultInjectionEnv::FileExists(const std::string& path) {
  return base_->FileExists(path);
}

Result<std::vector<std::string>> FaultInjectionEnv::GetChildren(
    const std::string& dir) {
  return base_->GetChildren(dir);
}

Status FaultInjectionEnv::RemoveFile(const std::string& path) {
  MutexLock lock(&mu_);
  TABLETFS_RETURN_IF_ERROR(BeginOpLocked(FaultOp::kRemove, "unlink " + path));
  const std::string p = Normalize(path);
  const bool was_tracked = paths_.count(p) > 0;
  const uint64_t id = TrackLocked(p);
  if (id == 0) return base_->RemoveFile(path);  // reports the error

  // A file created since the last sync of its directory and removed again
  // leaves no trace after a power loss: cancel the creation instead of
  // recording (and saving the bytes for) a removal to undo.
  for (auto it = changes_.rbegin(); it != changes_.rend(); ++it) {
    if (it->path != p && it->to != p) continue;
    if (it->kind == EntryChange::Kind::kCreate && it->file == id &&
        it->path == p) {
      TABLETFS_RETURN_IF_ERROR(base_->RemoveFile(path));
      changes_.erase(std::next(it).base());
      UntrackLocked(p);
      return Status::OK();
    }
    break;
  }

  Result<std::string> saved = ReadSyncedLocked(p, id);
  Status s = saved.ok() ? base_->RemoveFile(path) : saved.status();
  if (!s.ok()) {
    if (!was_tracked) UntrackLocked(p);
    return s;
  }
  paths_.erase(p);
  EntryChange change;
  change.kind = EntryChange::Kind::kRemove;
  change.path = p;
  change.file = id;
  change.saved = std::move(saved).value();
  change.dirs.insert(Parent(p));
  changes_.push_back(std::move(change));
  return Status::OK();
}

Status FaultInjectionEnv::CreateDir(const std::string& dir) {
  MutexLock lock(&mu_);
  TABLETFS_RETURN_IF_ERROR(BeginOpLocked(FaultOp::kCreate, "mkdir " + dir));
  return base_->CreateDir(dir);
}

Status FaultInjectionEnv::RemoveDir(const std::string& dir) {
  MutexLock lock(&mu_);
  TABLETFS_RETURN_IF_ERROR(BeginOpLocked(FaultOp::kRemove, "rmdir " + dir));
  return base_->RemoveDir(dir);
}

Result<uint64_t> FaultInjectionEnv::GetFileSize(const std::string& path) {
  return base_->GetFileSize(path);
}

Status FaultInjectionEnv::RenameFile(const std::string& from,
                                     const std::string& to) {
  MutexLock lock(&mu_);
  TABLETFS_RETURN_IF_ERROR(
      BeginOpLocked(FaultOp::kRename, "rename " + from + " -> " + to));
  const std::string f = Normalize(from);
  const std::string t = Normalize(to);
  if (f == t) return base_->RenameFile(from, to);
  const bool from_tracked = paths_.count(f) > 0;
  const uint64_t id = TrackLocked(f);
  if (id == 0) return base_->RenameFile(from, to);  // reports the error
  const bool to_tracked = paths_.count(t) > 0;
  const uint64_t replaced = base_->FileExists(to) ? TrackLocked(t) : 0;
  std::optional<std::string> saved;
  Status s;
  if (replaced != 0) {
    Result<std::string> r = ReadSyncedLocked(t, replaced);
    if (r.ok()) {
      saved = std::move(r).value();
    } else {
      s = r.status();
    }
  }
  if (s.ok()) s = base_->RenameFile(from, to);
  if (!s.ok()) {
    if (!from_tracked) UntrackLocked(f);
    if (!to_tracked) UntrackLocked(t);
    return s;
  }
  paths_.erase(f);
  paths_[t] = id;
  EntryChange change;
  change.kind = EntryChange::Kind::kRename;
  change.path = f;
  change.to = t;
  change.file = id;
  change.replaced = replaced;
  change.saved = std::move(saved);
  change.dirs.insert(Parent(f));
  change.dirs.insert(Parent(t));
  changes_.push_back(std::move(change));
  return Status::OK();
}

Status FaultInjectionEnv::TruncateFile(const std::string& path, uint64_t size) {
  MutexLock lock(&mu_);
  TABLETFS_RETURN_IF_ERROR(
      BeginOpLocked(FaultOp::kTruncate, "truncate " + path));
  TABLETFS_RETURN_IF_ERROR(base_->TruncateFile(path, size));
  auto it = paths_.find(Normalize(path));
  if (it != paths_.end()) {
    uint64_t& synced = files_[it->second].synced_size;
    synced = std::min(synced, size);
  }
  return Status::OK();
}

Status FaultInjectionEnv::SyncDir(const std::string& dir) {
  MutexLock lock(&mu_);
  TABLETFS_RETURN_IF_ERROR(
      BeginOpLocked(FaultOp::kSyncDir, "fsync directory " + dir));
  TABLETFS_RETURN_IF_ERROR(base_->SyncDir(dir));
  const std::string d = Normalize(dir);
  for (EntryChange& change : changes_) change.dirs.erase(d);
  changes_.erase(std::remove_if(changes_.begin(), changes_.end(),
                                [](const EntryChange& change) {
                                  return change.dirs.empty();
                                }),
                 changes_.end());
  return Status::OK();
}

Result<std::unique_ptr<FileLock>> FaultInjectionEnv::LockFile(
    const std::string& path) {
  TABLETFS_RETURN_IF_ERROR(BeginOp(FaultOp::kLock, "lock " + path));
  return base_->LockFile(path);
}

Result<uint64_t> FaultInjectionEnv::GetFreeSpace(const std::string& path) {
  {
    MutexLock lock(&mu_);
    if (free_space_.has_value()) return *free_space_;
  }
  return base_->GetFreeSpace(path);
}

Result<uint64_t> FaultInjectionEnv::GetDiskSize(const std::string& path) {
  {
    MutexLock lock(&mu_);
    if (disk_size_.has_value()) return *disk_size_;
  }
  return base_->GetDiskSize(path);
}

void FaultInjectionEnv::SetDiskSize(uint64_t bytes) {
  MutexLock lock(&mu_);
  disk_size_ = bytes;
}

int64_t FaultInjectionEnv::NowMicros() { return base_->NowMicros(); }

Status FaultInjectionEnv::DropUnsyncedData() {
  MutexLock lock(&mu_);
  Status result;
  auto keep_first = [&result](Status s, std::string_view what) {
    if (result.ok() && !s.ok()) {
      result = s.WithContext("drop unsynced data: " + std::string(what));
    }
  };
  // Undo the entry changes newest first, so each undo finds the namespace
  // as the change left it.
  for (auto it = changes_.rbegin(); it != changes_.rend(); ++it) {
    const EntryChange& change = *it;
    switch (change.kind) {
      case EntryChange::Kind::kCreate: {
        Status s = base_->RemoveFile(change.path);
        if (!s.IsNotFound()) keep_first(s, "undo create");
        paths_.erase(change.path);
        break;
      }
      case EntryChange::Kind::kRemove:
        keep_first(WriteStringToFile(base_, *change.saved, change.path,
                                     /*sync=*/false),
                   "undo remove");
        paths_[change.path] = change.file;
        files_[change.file].synced_size = change.saved->size();
        break;
      case EntryChange::Kind::kRename:
        keep_first(base_->RenameFile(change.to, change.path), "undo rename");
        paths_.erase(change.to);
        paths_[change.path] = change.file;
        if (change.replaced != 0) {
          keep_first(WriteStringToFile(base_, *change.saved, change.to,
                                       /*sync=*/false),
                     "undo rename");
          paths_[change.to] = change.replaced;
          files_[change.replaced].synced_size = change.saved->size();
        }
        break;
    }
  }
  // Then cut every file the model knows to its synced bytes.
  for (const auto& [path, id] : paths_) {
    const uint64_t synced = files_[id].synced_size;
    Result<uint64_t> size = base_->GetFileSize(path);
    if (!size.ok()) {
      keep_first(size.status(), "stat");
      continue;
    }
    if (*size > synced) {
      keep_first(base_->TruncateFile(path, synced), "truncate");
    }
  }
  // Everything left is durable now, which is what untracked files mean.
  changes_.clear();
  paths_.clear();
  files_.clear();
  return result;
}

std::optional<uint64_t> FaultInjectionEnv::SyncedSize(const std::string& path) {
  MutexLock lock(&mu_);
  const std::string p = Normalize(path);
  auto it = paths_.find(p);
  if (it != paths_.end()) return files_[it->second].synced_size;
  Result<uint64_t> size = base_->GetFileSize(path);
  if (!size.ok()) return std::nullopt;
  return *size;
}

void FaultInjectionEnv::SetFilesystemActive(bool active) {
  MutexLock lock(&mu_);
  active_ = active;
}

bool FaultInjectionEnv::IsFilesystemActive() {
  MutexLock lock(&mu_);
  return active_;
}

void FaultInjectionEnv::InjectError(FaultOp op, int nth, Status error) {
  assert(nth >= 1);
  assert(!error.ok());
  if (error.ok()) error = Status::IOError("injected error");
  MutexLock lock(&mu_);
  const int i = static_cast<int>(op);
  pending_errors_[i].emplace(
      calls_[i] + static_cast<uint64_t>(std::max(nth, 1)), std::move(error));
}

void FaultInjectionEnv::FailAll(FaultOp op, Status error, std::string target) {
  assert(!error.ok());
  if (error.ok()) error = Status::IOError("injected error");
  MutexLock lock(&mu_);
  std::vector<FailRule>& rules = fail_all_[static_cast<int>(op)];
  for (FailRule& rule : rules) {
    if (rule.target == target) {
      rule.error = std::move(error);
      return;
    }
  }
  rules.push_back({std::move(target), std::move(error)});
}

void FaultInjectionEnv::ClearFaults() {
  MutexLock lock(&mu_);
  for (auto& pending : pending_errors_) pending.clear();
  for (auto& rules : fail_all_) rules.clear();
}

uint64_t FaultInjectionEnv::CallCount(FaultOp op) {
  MutexLock lock(&mu_);
  return calls_[static_cast<int>(op)];
}

uint64_t FaultInjectionEnv::InjectedFailureCount(FaultOp op) {
  MutexLock lock(&mu_);
  return injected_[static_cast<int>(op)];
}

void FaultInjectionEnv::ResetCounters() {
  MutexLock lock(&mu_);
  // Pending injections are relative to the counters: keep their distance.
  for (int i = 0; i < kNumFaultOps; ++i) {
    std::multimap<uint64_t, Status> shifted;
    for (auto& [call, error] : pending_errors_[i]) {
      shifted.emplace(call - calls_[i], std::move(error));
    }
    pending_errors_[i] = std::move(shifted);
    calls_[i] = 0;
    injected_[i] = 0;
  }
}

void FaultInjectionEnv::SetFreeSpace(uint64_t bytes) {
  if (mem_base_ != nullptr) {
    mem_base_->SetFreeSpace(bytes);
    return;
  }
  MutexLock lock(&mu_);
  free_space_ = bytes;
}

void FaultInjectionEnv::SetSyncDelay(uint64_t micros, std::string target) {
  MutexLock lock(&mu_);
  sync_delay_micros_ = micros;
  sync_delay_target_ = std::move(target);
}

}  // namespace tabletfs
