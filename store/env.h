// Env: every file operation and the clock of the store go through this
// interface, so tests can run in memory, inject errors, fill the disk and
// drop unsynced data (see store/env/mem_env.h, store/fault_env.h).
//
// Paths are plain strings; "/" separates components.
//
// Thread safety: an Env is safe for concurrent use. A RandomAccessFile is
// safe for concurrent Read(). SequentialFile and WritableFile objects are
// used by one thread at a time.
#ifndef TABLETFS_STORE_ENV_H_
#define TABLETFS_STORE_ENV_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "store/status.h"

namespace tabletfs {

// Reads a file from start to end (the log, the manifest).
class SequentialFile {
 public:
  SequentialFile() = default;
  SequentialFile(const SequentialFile &) = delete;
  SequentialFile &operator=(const SequentialFile &) = delete;
  virtual ~SequentialFile() = default;

  // Reads up to n bytes. *result points into scratch (at least n bytes) or
  // into memory the file owns, valid until the next call. A short or empty
  // result means end of file.
  virtual Status Read(size_t n, std::string_view *result, char *scratch) = 0;
  virtual Status Skip(uint64_t n) = 0;
};

// Reads a file at offsets (SSTables, value files).
class RandomAccessFile {
 public:
  RandomAccessFile() = default;
  RandomAccessFile(const RandomAccessFile &) = delete;
  RandomAccessFile &operator=(const RandomAccessFile &) = delete;
  virtual ~RandomAccessFile() = default;

  // Reads up to n bytes at offset. *result points into scratch (at least n
  // bytes) or into memory the file owns for its lifetime. Thread-safe.
  // When ReadsInPlace(), scratch may be nullptr.
  virtual Status Read(uint64_t offset, size_t n, std::string_view *result,
                      char *scratch) const = 0;

  // True when Read() always returns memory the file owns (a mapped file)
  // and never touches scratch: a reader may then skip allocating one.
  virtual bool ReadsInPlace() const { return false; }

  // A hint from a one-pass reader (a compaction's input) that it is done
  // with the bytes up to offset + n: a mapped file drops the pages holding
  // them from the process, not from the page cache, so the read does not
  // grow the process's resident memory by the file's size. Thread-safe;
  // other readers of the same bytes stay correct.
  virtual void DropReadPages(uint64_t /*offset*/, size_t /*n*/) const {}
};

// Writes a file sequentially. Data is durable only after Sync(); a crash of
// the process loses nothing that Flush() handed to the OS.
class WritableFile {
 public:
  WritableFile() = default;
  WritableFile(const WritableFile &) = delete;
  WritableFile &operator=(const WritableFile &) = delete;
  virtual ~WritableFile() = default;

  virtual Status Append(std::string_view data) = 0;
  // Hands buffered data to the OS (survives a crash of the process).
  virtual Status Flush() = 0;
  // Makes everything appended durable (survives power loss).
  virtual Status Sync() = 0;
  // Makes the bytes that earlier Flush() (or Sync()) calls handed to the OS
  // durable, leaving buffered bytes alone. The one call that may run while
  // another thread calls Append() or Flush() on the file (never Close()), so
  // a background thread can sync a log that writers keep appending to. A
  // failure is not sticky here; the file's later Sync() fails too, and the
  // caller must take every byte after its last good sync as lost.
  // NotSupported by files that cannot (the default).
  virtual Status SyncFlushed();
  virtual Status Close() = 0;
  // Bytes appended so far, including any the file held when opened.
  virtual uint64_t Size() const = 0;
};

// An exclusive lock on a database directory; released when destroyed.
class FileLock {
 public:
  FileLock() = default;
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;
  virtual ~FileLock() = default;
};

class Env {
 public:
  Env() = default;
  Env(const Env &) = delete;
  Env &operator=(const Env &) = delete;
  virtual ~Env() = default;

  // The process-wide POSIX Env. Never destroyed.
  static Env *Default();

  virtual Result<std::unique_ptr<SequentialFile>> NewSequentialFile(
      const std::string &path) = 0;
  virtual Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string &path) = 0;
  // Creates or truncates.
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string &path) = 0;
  // Opens for appending, creating when missing.
  virtual Result<std::unique_ptr<WritableFile>> NewAppendableFile(
      const std::string &path) = 0;
  // Creates or truncates a commit log: appended to in small records, each
  // of which must survive a crash of the process once Flush() returns.
  // NewWritableFile unless an Env does better: the POSIX Env appends
  // through a shared mapping of space it preallocates a MiB at a time, with
  // no system call per record, so until Close() the file may end in zeros,
  // which a log reader takes as a torn tail.
  virtual Result<std::unique_ptr<WritableFile>> NewLogFile(
      const std::string &path) {
    return NewWritableFile(path);
  }

  virtual bool FileExists(const std::string &path) = 0;
  // Names (not paths) of the entries of dir, without "." and "..".
  virtual Result<std::vector<std::string>> GetChildren(
      const std::string &dir) = 0;
  virtual Status RemoveFile(const std::string &path) = 0;
  // OK when the directory exists already.
  virtual Status CreateDir(const std::string &dir) = 0;
  virtual Status RemoveDir(const std::string &dir) = 0;
  virtual Result<uint64_t> GetFileSize(const std::string &path) = 0;
  // Atomically replaces `to`. Durable only after SyncDir() of the parent.
  virtual Status RenameFile(const std::string &from, const std::string &to) = 0;
  // Truncates an existing file to `size` bytes (log recovery).
  virtual Status TruncateFile(const std::string &path, uint64_t size) = 0;
  // Makes the directory's entries (creations, renames, removals) durable.
  virtual Status SyncDir(const std::string &dir) = 0;

  // Takes an exclusive lock on `path` (created if missing) and records this
  // process's pid in it. Busy, naming the holder's pid, when another
  // process or another open in this process holds it.
  virtual Result<std::unique_ptr<FileLock>> LockFile(
      const std::string &path) = 0;

  // Bytes available to an unprivileged writer on the filesystem holding
  // `path`.
  virtual Result<uint64_t> GetFreeSpace(const std::string &path) = 0;
  // True when GetFreeSpace costs a system call, so that a caller asking
  // before every write may trust a recent answer far from any limit (the
  // engine does: DBImpl::FreeSpaceFor). False (exact every time) by
  // default, as test Envs need.
  virtual bool FreeSpaceIsCostly() const { return false; }
  // Total size of the filesystem holding `path` (0: it reports none, as some
  // FUSE and network filesystems do). NotSupported by default.
  virtual Result<uint64_t> GetDiskSize(const std::string &path);

  // Wall clock, microseconds since the epoch. Tests replace it.
  virtual int64_t NowMicros() = 0;
};

// Helpers over any Env.
Status WriteStringToFile(Env *env, std::string_view data,
                         const std::string &path, bool sync);
Result<std::string> ReadFileToString(Env *env, const std::string &path);

}  // namespace tabletfs

#endif  // TABLETFS_STORE_ENV_H_
