// FaultInjectionEnv: wraps a base Env (usually a MemEnv) to model power loss
// and to inject errors. The fault model is described in store/doc/env.md.
//
// Power loss. The env tracks, per file, how many bytes are synced (appended
// before the last WritableFile::Sync() of the file, or flushed before the
// start of its last SyncFlushed()), and per directory the
// entry changes (file creation, RenameFile, RemoveFile) not yet followed by
// SyncDir() of that directory. DropUnsyncedData() rewrites the base env into
// the state a power loss would leave:
//   - every unsynced entry change is undone, newest first: a file created
//     since its directory's last sync disappears, an unsynced rename is
//     reversed (a file it replaced comes back), an unsynced removal is
//     reversed (the file comes back with its synced bytes);
//   - every remaining file is cut to its synced size.
// Files the env has not seen created (they existed in the base env before)
// count as fully synced, entries included. Directory creation and removal,
// TruncateFile and the truncation done by NewWritableFile are taken as
// durable at once. Afterwards everything counts as synced.
//
// A typical crash test:
//   env.SetFilesystemActive(false);   // the "power" goes: writes now fail
//   db.reset();                       // close the database
//   ASSERT_TRUE(env.DropUnsyncedData().ok());
//   env.SetFilesystemActive(true);
//   ... reopen and check that everything synced survived.
// Destroy (or stop using) the files opened before DropUnsyncedData():
// writes through them afterwards land in the rewritten files.
//
// Errors. Every call of an operation (FaultOp) is counted. InjectError()
// makes one future call fail, FailAll() every call (or every call on a
// matching path) until ClearFaults(). A failed call has no effect on the
// base env. While the filesystem is inactive, every operation that would
// change the base env fails IOError.
//
// Public, like LevelDB's helpers/memenv: the engine's tests and the
// daemon's test hook (mount/daemon/test_faults.h) use it.
//
// Thread safety: all methods are thread-safe; the files follow the rules of
// store/env.h. REQUIRES: the base env outlives this env, and this env
// outlives every file and lock it returned.
#ifndef TABLETFS_STORE_FAULT_ENV_H_
#define TABLETFS_STORE_FAULT_ENV_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "store/env.h"
#include "store/env/mem_env.h"
#include "store/util/mutex.h"

namespace tabletfs {

// The operations that can be counted and made to fail.
enum class FaultOp {
  kRead = 0,  // SequentialFile::Read/Skip, RandomAccessFile::Read
  kAppend,    // WritableFile::Append
  kFlush,     // WritableFile::Flush
  kSync,      // WritableFile::Sync
  kRename,    // Env::RenameFile
  kRemove,    // Env::RemoveFile, Env::RemoveDir
  kCreate,    // Env::NewWritableFile, NewAppendableFile, CreateDir
  kSyncDir,   // Env::SyncDir
  kLock,      // Env::LockFile
  kTruncate,  // Env::TruncateFile
  kOpen,      // Env::NewSequentialFile, NewRandomAccessFile
  kClose,     // WritableFile::Close
};
inline constexpr int kNumFaultOps = 12;

// "read", "append", ... (for test names and messages).
std::string_view FaultOpName(FaultOp op);

class FaultInjectionEnv : public Env {
 public:
  // `base` is not owned.
  explicit FaultInjectionEnv(Env* base);
  ~FaultInjectionEnv() override;

  Env* base() const { return base_; }

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
  // The base's answer, or what SetFreeSpace() left when the base is not a
  // MemEnv.
  Result<uint64_t> GetFreeSpace(const std::string& path) override;
  // The base's answer, or what SetDiskSize() set.
  Result<uint64_t> GetDiskSize(const std::string& path) override;
  // The base's clock.
  int64_t NowMicros() override;

  // Rewrites the base env into the state a power loss at this moment would
  // leave (see the file comment). Errors of the base env are returned; the
  // model is then reset anyway.
  Status DropUnsyncedData() EXCLUDES(mu_);

  // Synced bytes of the file now at `path` (whether its entry is synced
  // or not); nullopt when there is no such file.
  std::optional<uint64_t> SyncedSize(const std::string& path) EXCLUDES(mu_);

  // When false, every operation that would change the base env fails
  // IOError ("filesystem inactive"); reads still work.
  void SetFilesystemActive(bool active) EXCLUDES(mu_);
  bool IsFilesystemActive() EXCLUDES(mu_);

  // Makes the nth call of `op` from now (nth >= 1: 1 is the next call) fail
  // with `error` (which must not be OK), once. Several injections may be
  // pending.
  void InjectError(FaultOp op, int nth, Status error) EXCLUDES(mu_);
  // Makes every call of `op` fail with `error` until ClearFaults(). With a
  // non-empty `target`, only the calls whose operand contains it: the path
  // ("/db/000012.sst" matches ".sst"), for a rename "FROM -> TO". A second
  // FailAll() of one op and target replaces the first; different targets
  // add up.
  void FailAll(FaultOp op, Status error, std::string target = {}) EXCLUDES(mu_);
  // Drops pending injections and FailAll() settings; counters stay.
  void ClearFaults() EXCLUDES(mu_);

  // Calls of `op` since construction or ResetCounters(), failed ones
  // included.
  uint64_t CallCount(FaultOp op) EXCLUDES(mu_);
  // Calls of `op` that failed because of InjectError() or FailAll().
  uint64_t InjectedFailureCount(FaultOp op) EXCLUDES(mu_);
  void ResetCounters() EXCLUDES(mu_);

  // Disk-full simulation: forwarded to the base when it is a MemEnv.
  // Otherwise this env reports `bytes` free from now on and fails appends
  // beyond them with NoSpace (removals do not give space back).
  void SetFreeSpace(uint64_t bytes) EXCLUDES(mu_);

  // The filesystem size GetDiskSize() reports from now on.
  void SetDiskSize(uint64_t bytes) EXCLUDES(mu_);

  // A slow disk: every WritableFile::Sync() or SyncFlushed() whose path
  // contains `target` (all files when empty) sleeps `micros` before it
  // syncs, without holding this env's lock, so races that a fast MemEnv
  // hides get time to happen. A SyncFlushed() counts as a sync call before
  // it sleeps. 0 turns it off.
  void SetSyncDelay(uint64_t micros, std::string target = {}) EXCLUDES(mu_);

 private:
  class FaultSequentialFile;
  class FaultRandomAccessFile;
  class FaultWritableFile;

  // What the model knows of one file (an inode: renames keep it).
  struct FileState {
    uint64_t synced_size = 0;
  };

  // One directory-entry change not yet made durable by SyncDir().
  struct EntryChange {
    enum class Kind { kCreate, kRemove, kRename };
    Kind kind;
    std::string path;   // kCreate, kRemove: the name; kRename: the source
    std::string to;     // kRename: the destination
    uint64_t file = 0;  // the file created, removed or renamed
    // kRemove: the removed file's synced bytes; kRename: those of the file
    // the rename replaced, when it replaced one.
    std::optional<std::string> saved;
    uint64_t replaced = 0;  // kRename: the replaced file, 0 if none
    // Directories whose SyncDir() is still needed (two for a rename across
    // directories).
    std::set<std::string> dirs;
  };

  // Counts a call of `op`; returns the error it must fail with (an injected
  // one, or IOError while the filesystem is inactive and `op` writes), or OK.
  // `what` ("append db/LOG") prefixes the error.
  Status BeginOp(FaultOp op, std::string_view what) EXCLUDES(mu_);
  Status BeginOpLocked(FaultOp op, std::string_view what) REQUIRES(mu_);
  Status FileOp(FaultOp op, std::string_view what) EXCLUDES(mu_);
  // WritableFile::Append and Sync of the files this env returned.
  Status FileAppend(WritableFile* base, const std::string& path,
                    std::string_view data) EXCLUDES(mu_);
  Status FileSync(WritableFile* base, uint64_t id, const std::string& path)
      EXCLUDES(mu_);
  // WritableFile::SyncFlushed: syncs the `*flushed` bytes that Flush() or
  // Sync() handed to the base when it begins, the base's sync running
  // without mu_ (appends may race with it, as on a real disk).
  Status FileSyncFlushed(WritableFile* base, uint64_t id,
                         const std::string& path, const uint64_t* flushed)
      EXCLUDES(mu_);
  void FileFlushed(WritableFile* base, uint64_t* flushed) EXCLUDES(mu_);
  Result<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path,
                                                     bool truncate)
      EXCLUDES(mu_);

  // The id of the file at `path`, registering a file that existed before as
  // fully synced. 0 when there is no such file.
  uint64_t TrackLocked(const std::string& path) REQUIRES(mu_);
  // Forgets the file at `path`.
  void UntrackLocked(const std::string& path) REQUIRES(mu_);
  // The synced bytes of the file at `path` (read from the base env).
  Result<std::string> ReadSyncedLocked(const std::string& path, uint64_t id)
      REQUIRES(mu_);

  Env* const base_;
  MemEnv* const mem_base_;  // base_ when it is a MemEnv, else nullptr

  Mutex mu_;
  bool active_ GUARDED_BY(mu_) = true;
  std::array<uint64_t, kNumFaultOps> calls_ GUARDED_BY(mu_) = {};
  std::array<uint64_t, kNumFaultOps> injected_ GUARDED_BY(mu_) = {};
  // Per op: call number (in calls_ terms) -> error.
  std::array<std::multimap<uint64_t, Status>, kNumFaultOps> pending_errors_
      GUARDED_BY(mu_);
  // What FailAll() set up, per op.
  struct FailRule {
    std::string target;  // empty: every call
    Status error;
  };
  std::array<std::vector<FailRule>, kNumFaultOps> fail_all_ GUARDED_BY(mu_);
  std::optional<uint64_t> free_space_ GUARDED_BY(mu_);
  std::optional<uint64_t> disk_size_ GUARDED_BY(mu_);
  uint64_t sync_delay_micros_ GUARDED_BY(mu_) = 0;
  std::string sync_delay_target_ GUARDED_BY(mu_);

  uint64_t next_file_id_ GUARDED_BY(mu_) = 1;
  std::map<uint64_t, FileState> files_ GUARDED_BY(mu_);
  // Normalized path -> file id, for the files the model tracks.
  std::map<std::string, uint64_t> paths_ GUARDED_BY(mu_);
  // Unsynced entry changes, oldest first.
  std::vector<EntryChange> changes_ GUARDED_BY(mu_);
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_FAULT_ENV_H_
