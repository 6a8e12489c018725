#include "store/env/mem_env.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "store/env/env_path.h"

namespace tabletfs {
namespace {

using env_path::BaseName;
using env_path::Normalize;
using env_path::Parent;

bool IsRoot(const std::string& path) { return path == "/" || path == "."; }

Status Errno(std::string_view op, const std::string& path, int err) {
  std::string context(op);
  context.append(" ");
  context.append(path);
  if (err == ENOENT) return Status::NotFound(context, std::strerror(err));
  if (err == ENOSPC) return Status::NoSpace(context, std::strerror(err));
  return Status::IOError(context, std::strerror(err));
}

}  // namespace

namespace mem_env_internal {

// One file's content. Shared by the namespace entry and every open handle,
// so a removed or replaced file stays readable through handles opened
// before, as on POSIX.
struct MemFile {
  Mutex mu;
  std::string data GUARDED_BY(mu);
  // False once no name refers to the file; its bytes then no longer count
  // against the env's space.
  bool linked GUARDED_BY(mu) = true;
};

namespace {

class MemSequentialFile final : public SequentialFile {
 public:
  explicit MemSequentialFile(std::shared_ptr<MemFile> file)
      : file_(std::move(file)) {}

  Status Read(size_t n, std::string_view* result, char* scratch) override {
    MutexLock lock(&file_->mu);
    size_t size = file_->data.size();
    size_t avail = pos_ < size ? size - pos_ : 0;
    size_t got = std::min(n, avail);
    if (got > 0) std::memcpy(scratch, file_->data.data() + pos_, got);
    pos_ += got;
    *result = std::string_view(scratch, got);
    return Status::OK();
  }

  Status Skip(uint64_t n) override {
    // Like lseek(2), skipping past the end is allowed; reads there are empty.
    pos_ += n;
    return Status::OK();
  }

 private:
  const std::shared_ptr<MemFile> file_;
  uint64_t pos_ = 0;
};

class MemRandomAccessFile final : public RandomAccessFile {
 public:
  explicit MemRandomAccessFile(std::shared_ptr<MemFile> file)
      : file_(std::move(file)) {}

  Status Read(uint64_t offset, size_t n, std::string_view* result,
              char* scratch) const override {
    // Copies into scratch: the content may grow (and move) under a writer.
    MutexLock lock(&file_->mu);
    size_t size = file_->data.size();
    size_t avail = offset < size ? size - offset : 0;
    size_t got = std::min(n, avail);
    if (got > 0) std::memcpy(scratch, file_->data.data() + offset, got);
    *result = std::string_view(scratch, got);
    return Status::OK();
  }

 private:
  const std::shared_ptr<MemFile> file_;
};

}  // namespace

class MemWritableFile final : public WritableFile {
 public:
  MemWritableFile(MemEnv* env, std::string path, std::shared_ptr<MemFile> file)
      : env_(env), path_(std::move(path)), file_(std::move(file)) {}

  Status Append(std::string_view data) override {
    if (closed_) return Closed("append");
    return env_->AppendTo(file_.get(), path_, data);
  }
  Status Flush() override { return closed_ ? Closed("flush") : Status::OK(); }
  Status Sync() override { return closed_ ? Closed("sync") : Status::OK(); }
  Status SyncFlushed() override {
    return closed_ ? Closed("sync") : Status::OK();
  }
  Status Close() override {
    closed_ = true;
    return Status::OK();
  }
  uint64_t Size() const override {
    MutexLock lock(&file_->mu);
    return file_->data.size();
  }

 private:
  Status Closed(std::string_view op) const {
    return Status::IOError(std::string(op) + " " + path_, "file is closed");
  }

  MemEnv* const env_;
  const std::string path_;
  const std::shared_ptr<MemFile> file_;
  bool closed_ = false;
};

class MemFileLock final : public FileLock {
 public:
  MemFileLock(MemEnv* env, std::string path)
      : env_(env), path_(std::move(path)) {}
  ~MemFileLock() override { env_->Unlock(path_); }

 private:
  MemEnv* const env_;
  const std::string path_;
};

}  // namespace mem_env_internal

using mem_env_internal::MemFile;

MemEnv::MemEnv() = default;
MemEnv::~MemEnv() = default;

bool MemEnv::IsDirLocked(const std::string& path) const {
  return IsRoot(path) || dirs_.count(path) > 0;
}

Status MemEnv::CheckParentLocked(const std::string& op,
                                 const std::string& display,
                                 const std::string& path) const {
  std::string parent = Parent(path);
  if (IsDirLocked(parent)) return Status::OK();
  if (files_.count(parent) > 0) {
    return Errno(op, display, ENOTDIR);
  }
  return Status::NotFound(op + " " + display,
                          "parent directory " + parent + " does not exist");
}

void MemEnv::UnlinkLocked(MemFile* file) {
  MutexLock lock(&file->mu);
  if (!file->linked) return;
  file->linked = false;
  used_ -= file->data.size();
}

Result<std::shared_ptr<MemFile>> MemEnv::FindFile(const std::string& op,
                                                  const std::string& path) {
  std::string p = Normalize(path);
  MutexLock lock(&mu_);
  auto it = files_.find(p);
  if (it != files_.end()) return it->second;
  if (IsDirLocked(p)) return Errno(op, path, EISDIR);
  return Errno(op, path, ENOENT);
}

Result<std::shared_ptr<MemFile>> MemEnv::OpenForWrite(const std::string& path,
                                                      bool truncate) {
  std::string p = Normalize(path);
  MutexLock lock(&mu_);
  if (IsDirLocked(p)) return Errno("open", path, EISDIR);
  auto it = files_.find(p);
  if (it != files_.end()) {
    if (truncate) {
      // O_TRUNC empties the existing file, which handles opened before see.
      MemFile* file = it->second.get();
      MutexLock file_lock(&file->mu);
      used_ -= file->data.size();
      file->data.clear();
      file->data.shrink_to_fit();
    }
    return it->second;
  }
  TABLETFS_RETURN_IF_ERROR(CheckParentLocked("open", path, p));
  auto file = std::make_shared<MemFile>();
  files_.emplace(p, file);
  return file;
}

Status MemEnv::AppendTo(MemFile* file, const std::string& path,
                        std::string_view data) {
  MutexLock lock(&mu_);
  MutexLock file_lock(&file->mu);
  if (file->linked) {
    if (data.size() > capacity_ - used_) {
      return Status::NoSpace(
          "append " + path, "no space left on device (" +
                                std::to_string(data.size()) + " bytes asked, " +
                                std::to_string(capacity_ - used_) + " free)");
    }
    used_ += data.size();
  }
  file->data.append(data);
  return Status::OK();
}

void MemEnv::Unlock(const std::string& path) {
  MutexLock lock(&mu_);
  locks_.erase(path);
}

Result<std::unique_ptr<SequentialFile>> MemEnv::NewSequentialFile(
    const std::string& path) {
  TABLETFS_ASSIGN_OR_RETURN(auto file, FindFile("open", path));
  return std::unique_ptr<SequentialFile>(
      std::make_unique<mem_env_internal::MemSequentialFile>(std::move(file)));
}

Result<std::unique_ptr<RandomAccessFile>> MemEnv::NewRandomAccessFile(
    const std::string& path) {
  TABLETFS_ASSIGN_OR_RETURN(auto file, FindFile("open", path));
  return std::unique_ptr<RandomAccessFile>(
      std::make_unique<mem_env_internal::MemRandomAccessFile>(std::move(file)));
}

Result<std::unique_ptr<WritableFile>> MemEnv::NewWritableFile(
    const std::string& path) {
  TABLETFS_ASSIGN_OR_RETURN(auto file, OpenForWrite(path, /*truncate=*/true));
  return std::unique_ptr<WritableFile>(
      std::make_unique<mem_env_internal::MemWritableFile>(this, path,
                                                          std::move(file)));
}

Result<std::unique_ptr<WritableFile>> MemEnv::NewAppendableFile(
    const std::string& path) {
  TABLETFS_ASSIGN_OR_RETURN(auto file, OpenForWrite(path, /*truncate=*/false));
  return std::unique_ptr<WritableFile>(
      std::make_unique<mem_env_internal::MemWritableFile>(this, path,
                                                          std::move(file)));
}

bool MemEnv::FileExists(const std::string& path) {
  std::string p = Normalize(path);
  MutexLock lock(&mu_);
  return files_.count(p) > 0 || IsDirLocked(p);
}

Result<std::vector<std::string>> MemEnv::GetChildren(const std::string& dir) {
  std::string d = Normalize(dir);
  MutexLock lock(&mu_);
  if (!IsDirLocked(d)) {
    if (files_.count(d) > 0) {
      return Errno("opendir", dir, ENOTDIR);
    }
    return Errno("opendir", dir, ENOENT);
  }
  std::vector<std::string> names;
  for (const auto& [path, file] : files_) {
    if (Parent(path) == d) {
      names.push_back(BaseName(path));
    }
  }
  for (const std::string& path : dirs_) {
    if (Parent(path) == d) {
      names.push_back(BaseName(path));
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

Status MemEnv::RemoveFile(const std::string& path) {
  std::string p = Normalize(path);
  MutexLock lock(&mu_);
  auto it = files_.find(p);
  if (it == files_.end()) {
    return Errno("unlink", path, IsDirLocked(p) ? EISDIR : ENOENT);
  }
  UnlinkLocked(it->second.get());
  files_.erase(it);
  return Status::OK();
}

Status MemEnv::CreateDir(const std::string& dir) {
  std::string d = Normalize(dir);
  MutexLock lock(&mu_);
  if (IsDirLocked(d)) return Status::OK();
  if (files_.count(d) > 0) return Errno("mkdir", dir, EEXIST);
  TABLETFS_RETURN_IF_ERROR(CheckParentLocked("mkdir", dir, d));
  dirs_.insert(d);
  return Status::OK();
}

Status MemEnv::RemoveDir(const std::string& dir) {
  std::string d = Normalize(dir);
  MutexLock lock(&mu_);
  if (IsRoot(d)) return Errno("rmdir", dir, EBUSY);
  if (dirs_.count(d) == 0) {
    return Errno("rmdir", dir, files_.count(d) > 0 ? ENOTDIR : ENOENT);
  }
  for (const auto& [path, file] : files_) {
    if (Parent(path) == d) {
      return Errno("rmdir", dir, ENOTEMPTY);
    }
  }
  for (const std::string& path : dirs_) {
    if (Parent(path) == d) {
      return Errno("rmdir", dir, ENOTEMPTY);
    }
  }
  dirs_.erase(d);
  return Status::OK();
}

Result<uint64_t> MemEnv::GetFileSize(const std::string& path) {
  TABLETFS_ASSIGN_OR_RETURN(auto file, FindFile("stat", path));
  MutexLock lock(&file->mu);
  return static_cast<uint64_t>(file->data.size());
}

Status MemEnv::RenameFile(const std::string& from, const std::string& to) {
  std::string f = Normalize(from);
  std::string t = Normalize(to);
  const std::string what = from + " -> " + to;
  MutexLock lock(&mu_);
  auto src = files_.find(f);
  if (src == files_.end()) {
    // Renaming directories is not needed by the store; say so rather than
    // pretend.
    if (IsDirLocked(f)) {
      return Status::NotSupported("rename " + what,
                                  "MemEnv renames files only");
    }
    return Errno("rename", what, ENOENT);
  }
  if (IsDirLocked(t)) return Errno("rename", what, EISDIR);
  TABLETFS_RETURN_IF_ERROR(CheckParentLocked("rename", what, t));
  if (f == t) return Status::OK();
  std::shared_ptr<MemFile> file = src->second;
  files_.erase(src);
  auto dst = files_.find(t);
  if (dst != files_.end()) {
    UnlinkLocked(dst->second.get());
    dst->second = std::move(file);
  } else {
    files_.emplace(t, std::move(file));
  }
  return Status::OK();
}

Status MemEnv::TruncateFile(const std::string& path, uint64_t size) {
  std::string p = Normalize(path);
  MutexLock lock(&mu_);
  auto it = files_.find(p);
  if (it == files_.end()) {
    return Errno("truncate", path, IsDirLocked(p) ? EISDIR : ENOENT);
  }
  MemFile* file = it->second.get();
  MutexLock file_lock(&file->mu);
  uint64_t old_size = file->data.size();
  if (size > old_size && size - old_size > capacity_ - used_) {
    return Errno("truncate", path, ENOSPC);
  }
  used_ = used_ - old_size + size;
  file->data.resize(size, '\0');
  return Status::OK();
}

Status MemEnv::SyncDir(const std::string& dir) {
  std::string d = Normalize(dir);
  MutexLock lock(&mu_);
  if (IsDirLocked(d)) return Status::OK();
  return Errno("open directory", dir, files_.count(d) > 0 ? ENOTDIR : ENOENT);
}

Result<std::unique_ptr<FileLock>> MemEnv::LockFile(const std::string& path) {
  std::string p = Normalize(path);
  const std::string pid = std::to_string(::getpid());
  {
    MutexLock lock(&mu_);
    if (locks_.count(p) > 0) {
      return Status::Busy("database " + Parent(p) + " is locked by pid " + pid);
    }
    if (IsDirLocked(p)) {
      return Errno("open lock file", path, EISDIR);
    }
    TABLETFS_RETURN_IF_ERROR(CheckParentLocked("open lock file", path, p));
    auto& slot = files_[p];
    if (slot == nullptr) slot = std::make_shared<MemFile>();
    MemFile* file = slot.get();
    MutexLock file_lock(&file->mu);
    used_ -= file->data.size();
    file->data = pid + "\n";
    used_ += file->data.size();
    locks_.insert(p);
  }
  return std::unique_ptr<FileLock>(
      std::make_unique<mem_env_internal::MemFileLock>(this, p));
}

Result<uint64_t> MemEnv::GetFreeSpace(const std::string& /*path*/) {
  MutexLock lock(&mu_);
  return capacity_ - used_;
}

int64_t MemEnv::NowMicros() { return now_micros_.load(); }

void MemEnv::SetNowMicros(int64_t micros) { now_micros_.store(micros); }

void MemEnv::AdvanceMicros(int64_t micros) { now_micros_.fetch_add(micros); }

void MemEnv::SetFreeSpace(uint64_t bytes) {
  MutexLock lock(&mu_);
  capacity_ = used_ + bytes;
}

uint64_t MemEnv::BytesUsed() {
  MutexLock lock(&mu_);
  return used_;
}

std::unique_ptr<Env> NewMemEnv() { return std::make_unique<MemEnv>(); }

}  // namespace tabletfs
