// MemEnv: an Env that keeps every file in memory, with a settable clock and
// a settable amount of free space. For tests: fast, deterministic, and able
// to simulate a full disk.
//
// Semantics follow POSIX where the store can tell the difference:
// - Directories exist only once created; "/" and "." always exist. Creating
//   a file or directory whose parent is missing fails NotFound, GetChildren
//   of a missing directory fails NotFound, RemoveDir of a non-empty one fails
//   IOError. Paths are normalized ("a//b/" is "a/b").
// - Files are shared by path: two handles on one path see one content; an
//   open handle keeps working after its file was removed or replaced by a
//   rename (it then refers to the unlinked file), as an open descriptor does.
//   NewWritableFile on an existing path truncates that file in place.
// - Data is visible to readers as soon as Append() returns; Flush() and
//   Sync() have nothing to do (use FaultInjectionEnv to model power loss).
// - Space: the bytes of all files reachable by a name count against a
//   capacity. GetFreeSpace() reports what is left; an Append() that does not
//   fit fails NoSpace and writes nothing. Removing or truncating files frees
//   space. By default the env holds up to 1 TiB.
// - Locks are in-process: a second LockFile() of a held path fails Busy
//   naming this process's pid.
// - The clock starts at kDefaultNowMicros and moves only when told to.
//
// Thread safety: all methods are thread-safe. Files follow the rules of
// store/env.h. REQUIRES: the MemEnv outlives every file and lock it returned.
#ifndef TABLETFS_STORE_ENV_MEM_ENV_H_
#define TABLETFS_STORE_ENV_MEM_ENV_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "store/env.h"
#include "store/util/mutex.h"

namespace tabletfs {

namespace mem_env_internal {
struct MemFile;
class MemWritableFile;
class MemFileLock;
}  // namespace mem_env_internal

class MemEnv : public Env {
 public:
  // 2026-11-21T10:00:00Z in microseconds since the epoch.
  static constexpr int64_t kDefaultNowMicros = 1795255200LL * 1000000;
  // Free space of a new MemEnv: 1 TiB.
  static constexpr uint64_t kDefaultFreeSpace = uint64_t{1} << 40;

  MemEnv();
  ~MemEnv() override;

  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(
      const std::string& path) override;
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> NewAppendableFile(
      const std::string& path) override;
  bool FileExists(const std::string& path) override;
  Result<std::vector<std::string>> GetChildren(const std::string& dir) override;
  Status RemoveFile(const std::string& path) override;
  Status CreateDir(const std::string& dir) override;
  Status RemoveDir(const std::string& dir) override;
  Result<uint64_t> GetFileSize(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status TruncateFile(const std::string& path, uint64_t size) override;
  Status SyncDir(const std::string& dir) override;
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;
  Result<uint64_t> GetFreeSpace(const std::string& path) override;
  int64_t NowMicros() override;

  // The clock. NowMicros() returns exactly what was set, plus advances.
  void SetNowMicros(int64_t micros);
  void AdvanceMicros(int64_t micros);

  // From now on GetFreeSpace() reports `bytes`, and appends may add at most
  // `bytes` more before failing NoSpace (space freed later is reusable).
  void SetFreeSpace(uint64_t bytes);

  // Total bytes of the files reachable by a name.
  uint64_t BytesUsed();

 private:
  friend class mem_env_internal::MemWritableFile;
  friend class mem_env_internal::MemFileLock;

  // Appends to `file`, charging the space when the file is linked.
  Status AppendTo(mem_env_internal::MemFile* file, const std::string& path,
                  std::string_view data) EXCLUDES(mu_);
  void Unlock(const std::string& path) EXCLUDES(mu_);
  // Creates (or, with truncate, empties) the file at a normalized path.
  Result<std::shared_ptr<mem_env_internal::MemFile>> OpenForWrite(
      const std::string& path, bool truncate) EXCLUDES(mu_);
  Result<std::shared_ptr<mem_env_internal::MemFile>> FindFile(
      const std::string& op, const std::string& path) EXCLUDES(mu_);
  // Marks `file` unlinked and releases its space.
  void UnlinkLocked(mem_env_internal::MemFile* file) REQUIRES(mu_);
  bool IsDirLocked(const std::string& path) const REQUIRES(mu_);
  // OK when the parent of the normalized `path` is a directory; `display`
  // names the operand in the error.
  Status CheckParentLocked(const std::string& op, const std::string& display,
                           const std::string& path) const REQUIRES(mu_);

  Mutex mu_;
  std::map<std::string, std::shared_ptr<mem_env_internal::MemFile>> files_
      GUARDED_BY(mu_);
  std::set<std::string> dirs_ GUARDED_BY(mu_);
  std::set<std::string> locks_ GUARDED_BY(mu_);
  uint64_t used_ GUARDED_BY(mu_) = 0;
  uint64_t capacity_ GUARDED_BY(mu_) = kDefaultFreeSpace;
  std::atomic<int64_t> now_micros_{kDefaultNowMicros};
};

// A new, empty MemEnv.
std::unique_ptr<Env> NewMemEnv();

}  // namespace tabletfs

#endif  // TABLETFS_STORE_ENV_MEM_ENV_H_
