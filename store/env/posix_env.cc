// The POSIX Env: Env::Default().
//
// Every descriptor is opened with O_CLOEXEC (the daemon may fork helpers) and
// owned by a ScopedFd, so no error path leaks one. Every syscall that can be
// interrupted is retried on EINTR. Errors name the operation and the path and
// carry strerror(); ENOSPC and EDQUOT become NoSpace so the engine can tell a
// full disk (recoverable) from a failing one (sticky).

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "store/env.h"
#include "store/util/mutex.h"

namespace tabletfs {
namespace {

// Bytes a PosixWritableFile collects before handing them to write(2). Large
// enough that the log's small records cost one syscall per group commit, small
// enough that a process crash loses little that the caller had not flushed.
constexpr size_t kWritableBufferBytes = 64 << 10;

// Owns a file descriptor; closes it when destroyed.
class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(ScopedFd&& other) noexcept : fd_(other.Release()) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() { Reset(-1); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset(int fd) {
    // close(2) is not retried on EINTR: on Linux the descriptor is released
    // either way, and a retry could close a descriptor another thread just
    // received.
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Owns a DIR* from opendir(3).
class ScopedDir {
 public:
  explicit ScopedDir(DIR* dir) : dir_(dir) {}
  ScopedDir(const ScopedDir&) = delete;
  ScopedDir& operator=(const ScopedDir&) = delete;
  ~ScopedDir() {
    if (dir_ != nullptr) ::closedir(dir_);
  }
  DIR* get() const { return dir_; }

 private:
  DIR* dir_;
};

// "<op> <path>: <strerror>" with the code that fits the errno.
Status PosixError(std::string_view op, const std::string& path, int err) {
  std::string context(op);
  context.append(" ");
  context.append(path);
  const char* reason = std::strerror(err);
  switch (err) {
    case ENOENT:
      return Status::NotFound(context, reason);
    case ENOSPC:
    case EDQUOT:
      return Status::NoSpace(context, reason);
    default:
      return Status::IOError(context, reason);
  }
}

int OpenRetrying(const char* path, int flags, mode_t mode = 0644) {
  int fd;
  do {
    fd = ::open(path, flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

// Writes all of data at the descriptor's offset, at most 1 MiB per write(2):
// on Debian 12's kernel (6.1, ext4) one write of 2 MiB or more into the page
// cache ran at ~400 MB/s once some data was dirty, against ~4 GB/s in 1 MiB
// pieces (bench/write_chunks.cc; docs/BENCHMARKS.md, "Large values written
// once"). Returns 0 or an errno.
int WriteFully(int fd, const char* data, size_t n) {
  constexpr size_t kMaxWrite = 1 << 20;
  while (n > 0) {
    ssize_t w = ::write(fd, data, std::min(n, kMaxWrite));
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    // write(2) to a regular file returns 0 only for n == 0; anything else
    // would loop forever.
    if (w == 0) return EIO;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}

std::string DirName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

class PosixSequentialFile final : public SequentialFile {
 public:
  PosixSequentialFile(std::string path, ScopedFd fd)
      : path_(std::move(path)), fd_(std::move(fd)) {}

  Status Read(size_t n, std::string_view* result, char* scratch) override {
    // Loops because read(2) may return less than asked before the end of the
    // file (signals, pipes, some filesystems); our contract says a short
    // result means end of file.
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::read(fd_.get(), scratch + got, n - got);
      if (r < 0) {
        if (errno == EINTR) continue;
        *result = {};
        return PosixError("read", path_, errno);
      }
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    *result = std::string_view(scratch, got);
    return Status::OK();
  }

  Status Skip(uint64_t n) override {
    if (::lseek(fd_.get(), static_cast<off_t>(n), SEEK_CUR) < 0) {
      return PosixError("lseek", path_, errno);
    }
    return Status::OK();
  }

 private:
  const std::string path_;
  ScopedFd fd_;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, ScopedFd fd)
      : path_(std::move(path)), fd_(std::move(fd)) {}

  // pread(2) carries its own offset, so concurrent readers share one
  // descriptor without a lock.
  Status Read(uint64_t offset, size_t n, std::string_view* result,
              char* scratch) const override {
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(fd_.get(), scratch + got, n - got,
                          static_cast<off_t>(offset + got));
      if (r < 0) {
        if (errno == EINTR) continue;
        *result = {};
        return PosixError("pread", path_, errno)
            .WithContext("offset " + std::to_string(offset + got));
      }
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    *result = std::string_view(scratch, got);
    return Status::OK();
  }

 private:
  const std::string path_;
  const ScopedFd fd_;
};

// Mapped read-only files (SSTables, value files) at most, process-wide: a
// mapping needs no descriptor once made, so this bounds address space and
// the kernel's map count (vm.max_map_count, 65,530 by default), not
// descriptors. Past it files are read with pread(2). LevelDB allows 1,000;
// here the table and value-file caches may each hold max_open_tables (1,000
// by default), and evicted files stay mapped while an iterator holds them.
constexpr int kMaxMappedFiles = 4096;
std::atomic<int> mapped_files_left{kMaxMappedFiles};

// A whole read-only file mapped into memory: a read is a bounds check and a
// pointer into the mapping, no system call and no copy, and the page cache
// serves it (LevelDB's PosixMmapReadableFile). The descriptor is closed
// once mapped. Files read this way never change or shrink while open
// (SSTables and value files are immutable), so no access faults past the
// end. The cost: a disk error while the kernel fills a page is a SIGBUS,
// not an IOError (store/doc/env.md).
class PosixMmapRandomAccessFile final : public RandomAccessFile {
 public:
  PosixMmapRandomAccessFile(std::string path, const char* base, size_t size)
      : path_(std::move(path)), base_(base), size_(size) {}
  ~PosixMmapRandomAccessFile() override {
    ::munmap(const_cast<char*>(base_), size_);
    mapped_files_left.fetch_add(1, std::memory_order_relaxed);
  }

  Status Read(uint64_t offset, size_t n, std::string_view* result,
              char* /*scratch*/) const override {
    if (offset > size_) {
      *result = {};
      return Status::OK();  // past the end: an empty read, as pread's
    }
    *result =
        std::string_view(base_ + offset, std::min<uint64_t>(n, size_ - offset));
    return Status::OK();
  }

  bool ReadsInPlace() const override { return true; }

  void DropReadPages(uint64_t offset, size_t n) const override {
    // From the page holding `offset` (a one-pass reader is done with the
    // bytes before it) to the last page the range fills, or to the end of
    // the file. MADV_DONTNEED on a shared file mapping only unmaps pages:
    // a later access maps them again from the page cache, so nothing is
    // lost whoever reads them next.
    static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    if (offset >= size_) return;
    uint64_t end = std::min<uint64_t>(offset + n, size_);
    uint64_t first = offset / page * page;
    uint64_t last =
        end == size_ ? (end + page - 1) / page * page : end / page * page;
    if (first >= last) return;
    ::madvise(const_cast<char*>(base_) + first, last - first, MADV_DONTNEED);
  }

 private:
  const std::string path_;
  const char* const base_;
  const size_t size_;
};

// What the POSIX Env's appendable files share: the descriptor, the sticky
// error and the syncs.
//
// Errors are sticky: after a failed write(2) or allocation the file's tail
// is unknown (part of the data may have reached it), and after a failed
// fdatasync(2) Linux may already have dropped the dirty pages and marked
// them clean, so a second fdatasync would report success for data that is
// gone (the "fsyncgate" behaviour). Either way, a later Append/Flush/Sync
// that succeeded would describe a file with a hole in it as durable. So the
// first error is remembered and returned by every later call but Close().
class PosixAppendFile : public WritableFile {
 public:
  Status Flush() final {
    if (!fd_.valid()) return ClosedError("flush");
    return HandOver();
  }

  Status Sync() final {
    if (!fd_.valid()) return ClosedError("sync");
    if (int err = flushed_sync_errno_.load(); err != 0) {
      return Fail(PosixError("fdatasync", path_, err));
    }
    TABLETFS_RETURN_IF_ERROR(HandOver());
    // fdatasync covers the data and the size; the directory entry of a new
    // file is the caller's business (SyncDir).
    if (int err = DataSync(); err != 0) {
      return Fail(PosixError("fdatasync", path_, err));
    }
    return Status::OK();
  }

  // Touches only the descriptor (never the data or error_, which the
  // appending thread owns) and the atomic that makes a failure sticky.
  Status SyncFlushed() final {
    if (!fd_.valid()) return ClosedError("sync");
    if (int err = DataSync(); err != 0) {
      flushed_sync_errno_.store(err);
      return PosixError("fdatasync", path_, err);
    }
    return Status::OK();
  }

 protected:
  PosixAppendFile(std::string path, ScopedFd fd)
      : path_(std::move(path)), fd_(std::move(fd)) {}

  // Hands every appended byte to the OS, or returns the sticky error.
  virtual Status HandOver() = 0;

  int DataSync() {
    int r;
    do {
      r = ::fdatasync(fd_.get());
    } while (r < 0 && errno == EINTR);
    return r < 0 ? errno : 0;
  }

  Status Fail(Status s) {
    if (error_.ok()) error_ = s;
    return s;
  }

  Status ClosedError(std::string_view op) const {
    return Status::IOError(std::string(op) + " " + path_, "file is closed");
  }

  const std::string path_;
  ScopedFd fd_;
  Status error_;  // Sticky: the first write, allocation or sync error.
  // A failed SyncFlushed(), made sticky by the next Sync().
  std::atomic<int> flushed_sync_errno_{0};
};

// A file appended to through a user-space buffer and write(2).
class PosixWritableFile final : public PosixAppendFile {
 public:
  PosixWritableFile(std::string path, ScopedFd fd, uint64_t initial_size)
      : PosixAppendFile(std::move(path), std::move(fd)), size_(initial_size) {
    buffer_.reserve(kWritableBufferBytes);
  }

  ~PosixWritableFile() override {
    if (fd_.valid()) Close().IgnoreError();
  }

  Status Append(std::string_view data) override {
    if (!fd_.valid()) return ClosedError("append");
    if (!error_.ok()) return error_;
    size_t room = kWritableBufferBytes - buffer_.size();
    if (data.size() <= room) {
      buffer_.append(data);
      size_ += data.size();
      return Status::OK();
    }
    // Fill the buffer, write it, then either buffer the rest or, when the
    // rest alone exceeds the buffer, write it straight from the caller's
    // memory instead of copying it twice.
    buffer_.append(data.substr(0, room));
    size_ += room;
    data.remove_prefix(room);
    TABLETFS_RETURN_IF_ERROR(HandOver());
    if (data.size() <= kWritableBufferBytes) {
      buffer_.append(data);
      size_ += data.size();
      return Status::OK();
    }
    if (int err = WriteFully(fd_.get(), data.data(), data.size()); err != 0) {
      return Fail(PosixError("write", path_, err)
                      .WithContext("at offset " + std::to_string(size_)));
    }
    size_ += data.size();
    return Status::OK();
  }

  Status Close() override {
    if (!fd_.valid()) return Status::OK();
    Status s = HandOver();
    int fd = fd_.Release();
    if (::close(fd) < 0 && s.ok()) s = PosixError("close", path_, errno);
    return s;
  }

  uint64_t Size() const override { return size_; }

 private:
  // Writes the buffer out. Returns the sticky error, if any, without
  // writing: bytes after a hole must not reach the file.
  Status HandOver() override {
    if (!error_.ok()) {
      buffer_.clear();
      return error_;
    }
    if (buffer_.empty()) return Status::OK();
    const uint64_t offset = size_ - buffer_.size();
    int err = WriteFully(fd_.get(), buffer_.data(), buffer_.size());
    // On failure the buffer is dropped too: the file's tail is unknown
    // (write(2) may have written part of it).
    buffer_.clear();
    if (err != 0) {
      return Fail(PosixError("write", path_, err)
                      .WithContext("at offset " + std::to_string(offset)));
    }
    return Status::OK();
  }

  std::string buffer_;
  uint64_t size_;
};

// A commit log appended through a shared mapping (Env::NewLogFile). An
// append copies into the file's page-cache pages, so it survives a crash
// of the process once the copy ends, with no system call: a write(2) per
// commit was half of a small-write fill's time (docs/BENCHMARKS.md,
// twenty-first session). The file is mapped a chunk at a time, and its
// space is allocated (fallocate, which also extends it) before any byte is
// copied there, so a full disk fails the append that needs the space,
// never a store into the mapping (a store past the file's end, or into
// space the filesystem cannot provide, raises SIGBUS). Until Close() cuts
// it, the file ends in the zeros of the allocated but unwritten rest of
// its chunk, which the log reader takes as a torn tail
// (store/doc/log_format.md). fdatasync writes back the pages the mapping
// dirtied as it does those write(2) dirtied.
class PosixMappedLogFile final : public PosixAppendFile {
 public:
  static constexpr size_t kChunkBytes = 1 << 20;
  static constexpr size_t kPageBytes = 4096;

  // Maps the first chunk of the empty file `fd` names and allocates its
  // first page. On failure returns nullptr with *err set, and leaves `fd`
  // with the caller.
  static std::unique_ptr<PosixMappedLogFile> Open(const std::string& path,
                                                  ScopedFd* fd, int* err) {
    auto file = std::unique_ptr<PosixMappedLogFile>(
        new PosixMappedLogFile(path, std::move(*fd)));
    *err = file->MapChunk(0);
    if (*err == 0) *err = file->Allocate(kPageBytes, kPageBytes);
    if (*err != 0) {
      file->Unmap();
      *fd = std::move(file->fd_);
      return nullptr;
    }
    return file;
  }

  ~PosixMappedLogFile() override {
    if (fd_.valid()) Close().IgnoreError();
  }

  Status Append(std::string_view data) override {
    if (!fd_.valid()) return ClosedError("append");
    if (!error_.ok()) return error_;
    while (!data.empty()) {
      const uint64_t chunk_end = map_offset_ + kChunkBytes;
      if (size_ == chunk_end) {
        if (int err = MapChunk(size_); err != 0) {
          return Fail(PosixError("mmap", path_, err)
                          .WithContext("at offset " + std::to_string(size_)));
        }
        continue;
      }
      const size_t n = static_cast<size_t>(
          std::min<uint64_t>(data.size(), chunk_end - size_));
      if (size_ + n > allocated_) {
        // The rest of the chunk, or when the disk cannot spare that, the
        // pages this copy needs.
        int err = Allocate(chunk_end, size_ + n);
        if (err != 0) {
          return Fail(PosixError("fallocate", path_, err)
                          .WithContext("at offset " + std::to_string(size_)));
        }
      }
      std::memcpy(map_ + (size_ - map_offset_), data.data(), n);
      size_ += n;
      data.remove_prefix(n);
    }
    return Status::OK();
  }

  // Unmaps and cuts the file at its appended size (not synced: when a
  // crash loses the cut, the zeros left read as a torn tail).
  Status Close() override {
    if (!fd_.valid()) return Status::OK();
    Status s = error_;
    Unmap();
    if (::ftruncate(fd_.get(), static_cast<off_t>(size_)) < 0 && s.ok()) {
      s = PosixError("ftruncate", path_, errno);
    }
    int fd = fd_.Release();
    if (::close(fd) < 0 && s.ok()) s = PosixError("close", path_, errno);
    return s;
  }

  uint64_t Size() const override { return size_; }

 private:
  PosixMappedLogFile(std::string path, ScopedFd fd)
      : PosixAppendFile(std::move(path), std::move(fd)) {}

  // Appended bytes are in the page cache already: nothing to hand over.
  Status HandOver() override { return error_; }

  // Maps kChunkBytes of the file from `offset` in place of the chunk mapped
  // before (mapping past the file's end is allowed; touching it is not).
  // Returns 0 or an errno.
  int MapChunk(uint64_t offset) {
    void* p = ::mmap(nullptr, kChunkBytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                     fd_.get(), static_cast<off_t>(offset));
    if (p == MAP_FAILED) return errno;
    Unmap();
    map_ = static_cast<char*>(p);
    map_offset_ = offset;
    return 0;
  }

  // Allocates the file up to `want` bytes, or failing that up to `need`
  // rounded up to a page. Returns 0 or an errno.
  int Allocate(uint64_t want, uint64_t need) {
    const uint64_t pages = (need + kPageBytes - 1) / kPageBytes * kPageBytes;
    int err = Extend(want);
    if (err != 0 && pages < want) err = Extend(pages);
    return err;
  }

  int Extend(uint64_t end) {
    if (end <= allocated_) return 0;
    int r;
    do {
      r = ::fallocate(fd_.get(), 0, static_cast<off_t>(allocated_),
                      static_cast<off_t>(end - allocated_));
    } while (r < 0 && errno == EINTR);
    if (r < 0) return errno;
    allocated_ = end;
    return 0;
  }

  void Unmap() {
    if (map_ != nullptr) ::munmap(map_, kChunkBytes);
    map_ = nullptr;
  }

  char* map_ = nullptr;  // kChunkBytes of the file from map_offset_
  uint64_t map_offset_ = 0;
  uint64_t allocated_ = 0;  // the file's size: allocated space
  uint64_t size_ = 0;       // bytes appended
};

// Paths locked by this process. flock(2) already refuses a second lock taken
// through another open file description, even in the same process, but not on
// every filesystem (NFS emulates it with fcntl locks, which a process never
// conflicts with), so we check here first.
class LockTable {
 public:
  bool Insert(const std::string& path) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return paths_.insert(path).second;
  }
  void Remove(const std::string& path) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    paths_.erase(path);
  }

 private:
  Mutex mu_;
  std::set<std::string> paths_ GUARDED_BY(mu_);
};

class PosixFileLock final : public FileLock {
 public:
  PosixFileLock(LockTable* table, std::string path, ScopedFd fd)
      : table_(table), path_(std::move(path)), fd_(std::move(fd)) {}
  ~PosixFileLock() override {
    // The file stays: removing it would let a process that opened it before
    // the removal and one that creates a new one both "hold" the lock.
    ::flock(fd_.get(), LOCK_UN);
    fd_.Reset(-1);
    table_->Remove(path_);
  }

 private:
  LockTable* const table_;
  const std::string path_;
  ScopedFd fd_;
};

std::string BusyMessage(const std::string& path, const std::string& holder) {
  return "database " + DirName(path) + " is locked by " + holder;
}

// The pid recorded in a lock file, as text, or "another process" when the
// holder has not written it yet (or the file is unreadable).
std::string ReadLockHolder(int fd) {
  char buf[32];
  ssize_t r;
  do {
    r = ::pread(fd, buf, sizeof(buf) - 1, 0);
  } while (r < 0 && errno == EINTR);
  if (r <= 0) return "another process";
  std::string pid(buf, static_cast<size_t>(r));
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) {
    pid.pop_back();
  }
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) {
    return "another process";
  }
  return "pid " + pid;
}

class PosixEnv final : public Env {
 public:
  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(
      const std::string& path) override {
    ScopedFd fd(OpenRetrying(path.c_str(), O_RDONLY));
    if (!fd.valid()) return PosixError("open", path, errno);
    return std::unique_ptr<SequentialFile>(
        std::make_unique<PosixSequentialFile>(path, std::move(fd)));
  }

  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    ScopedFd fd(OpenRetrying(path.c_str(), O_RDONLY));
    if (!fd.valid()) return PosixError("open", path, errno);
    if (mapped_files_left.fetch_sub(1, std::memory_order_relaxed) > 0) {
      struct stat st;
      if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) &&
          st.st_size > 0) {
        size_t size = static_cast<size_t>(st.st_size);
        void* base = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
        if (base != MAP_FAILED) {
          return std::unique_ptr<RandomAccessFile>(
              std::make_unique<PosixMmapRandomAccessFile>(
                  path, static_cast<const char*>(base), size));
        }
      }
      // Empty, special or not mappable: read it with pread.
    }
    mapped_files_left.fetch_add(1, std::memory_order_relaxed);
    return std::unique_ptr<RandomAccessFile>(
        std::make_unique<PosixRandomAccessFile>(path, std::move(fd)));
  }

  Result<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path) override {
    ScopedFd fd(OpenRetrying(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC));
    if (!fd.valid()) return PosixError("open", path, errno);
    return std::unique_ptr<WritableFile>(
        std::make_unique<PosixWritableFile>(path, std::move(fd), 0));
  }

  Result<std::unique_ptr<WritableFile>> NewLogFile(
      const std::string& path) override {
    ScopedFd fd(OpenRetrying(path.c_str(), O_RDWR | O_CREAT | O_TRUNC));
    if (!fd.valid()) return PosixError("open", path, errno);
    int err = 0;
    if (auto mapped = PosixMappedLogFile::Open(path, &fd, &err)) {
      return std::unique_ptr<WritableFile>(std::move(mapped));
    }
    if (err != EOPNOTSUPP && err != ENODEV && err != EINVAL) {
      return PosixError("preparing the log", path, err);
    }
    // A filesystem that cannot allocate space ahead or map a file for
    // writing: a write(2) per record.
    return std::unique_ptr<WritableFile>(
        std::make_unique<PosixWritableFile>(path, std::move(fd), 0));
  }

  Result<std::unique_ptr<WritableFile>> NewAppendableFile(
      const std::string& path) override {
    ScopedFd fd(OpenRetrying(path.c_str(), O_WRONLY | O_CREAT | O_APPEND));
    if (!fd.valid()) return PosixError("open", path, errno);
    struct stat st;
    if (::fstat(fd.get(), &st) < 0) return PosixError("fstat", path, errno);
    return std::unique_ptr<WritableFile>(std::make_unique<PosixWritableFile>(
        path, std::move(fd), static_cast<uint64_t>(st.st_size)));
  }

  bool FileExists(const std::string& path) override {
    return ::access(path.c_str(), F_OK) == 0;
  }

  Result<std::vector<std::string>> GetChildren(
      const std::string& dir) override {
    ScopedDir d(::opendir(dir.c_str()));
    if (d.get() == nullptr) return PosixError("opendir", dir, errno);
    std::vector<std::string> names;
    for (;;) {
      errno = 0;
      struct dirent* entry = ::readdir(d.get());
      if (entry == nullptr) {
        if (errno != 0) return PosixError("readdir", dir, errno);
        break;
      }
      std::string_view name(entry->d_name);
      if (name == "." || name == "..") continue;
      names.emplace_back(name);
    }
    return names;
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) < 0) return PosixError("unlink", path, errno);
    return Status::OK();
  }

  Status CreateDir(const std::string& dir) override {
    if (::mkdir(dir.c_str(), 0755) == 0) return Status::OK();
    int err = errno;
    if (err == EEXIST) {
      struct stat st;
      if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        return Status::OK();
      }
    }
    return PosixError("mkdir", dir, err);
  }

  Status RemoveDir(const std::string& dir) override {
    if (::rmdir(dir.c_str()) < 0) return PosixError("rmdir", dir, errno);
    return Status::OK();
  }

  Result<uint64_t> GetFileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) < 0) return PosixError("stat", path, errno);
    return static_cast<uint64_t>(st.st_size);
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) < 0) {
      return PosixError("rename", from + " -> " + to, errno);
    }
    return Status::OK();
  }

  Status TruncateFile(const std::string& path, uint64_t size) override {
    int r;
    do {
      r = ::truncate(path.c_str(), static_cast<off_t>(size));
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
      return PosixError("truncate", path, errno)
          .WithContext("to " + std::to_string(size) + " bytes");
    }
    return Status::OK();
  }

  Status SyncDir(const std::string& dir) override {
    ScopedFd fd(OpenRetrying(dir.c_str(), O_RDONLY | O_DIRECTORY));
    if (!fd.valid()) return PosixError("open directory", dir, errno);
    int r;
    do {
      r = ::fsync(fd.get());
    } while (r < 0 && errno == EINTR);
    if (r < 0) return PosixError("fsync directory", dir, errno);
    return Status::OK();
  }

  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    ScopedFd fd(OpenRetrying(path.c_str(), O_RDWR | O_CREAT));
    if (!fd.valid()) return PosixError("open lock file", path, errno);
    if (!locks_.Insert(path)) {
      return Status::Busy(BusyMessage(path, ReadLockHolder(fd.get())),
                          "held by this process");
    }
    int r;
    do {
      r = ::flock(fd.get(), LOCK_EX | LOCK_NB);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
      int err = errno;
      locks_.Remove(path);
      if (err == EWOULDBLOCK) {
        return Status::Busy(BusyMessage(path, ReadLockHolder(fd.get())));
      }
      return PosixError("flock", path, err);
    }
    // The lock is ours: record our pid for whoever is refused next. The
    // previous holder's pid is replaced, not appended to.
    std::string pid = std::to_string(::getpid()) + "\n";
    int err = 0;
    if (::ftruncate(fd.get(), 0) < 0) {
      err = errno;
    } else {
      ssize_t w;
      do {
        w = ::pwrite(fd.get(), pid.data(), pid.size(), 0);
      } while (w < 0 && errno == EINTR);
      if (w < 0) {
        err = errno;
      } else if (static_cast<size_t>(w) != pid.size()) {
        err = ENOSPC;
      }
    }
    if (err != 0) {
      ::flock(fd.get(), LOCK_UN);
      locks_.Remove(path);
      return PosixError("write pid to lock file", path, err);
    }
    return std::unique_ptr<FileLock>(
        std::make_unique<PosixFileLock>(&locks_, path, std::move(fd)));
  }

  bool FreeSpaceIsCostly() const override { return true; }

  Result<uint64_t> GetFreeSpace(const std::string& path) override {
    struct statvfs st;
    int r;
    do {
      r = ::statvfs(path.c_str(), &st);
    } while (r < 0 && errno == EINTR);
    if (r < 0) return PosixError("statvfs", path, errno);
    return static_cast<uint64_t>(st.f_bavail) *
           static_cast<uint64_t>(st.f_frsize);
  }

  Result<uint64_t> GetDiskSize(const std::string& path) override {
    struct statvfs st;
    int r;
    do {
      r = ::statvfs(path.c_str(), &st);
    } while (r < 0 && errno == EINTR);
    if (r < 0) return PosixError("statvfs", path, errno);
    return static_cast<uint64_t>(st.f_blocks) *
           static_cast<uint64_t>(st.f_frsize);
  }

  int64_t NowMicros() override {
    struct timespec ts;
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
  }

 private:
  LockTable locks_;
};

}  // namespace

Env* Env::Default() {
  // Leaked on purpose: background threads and static destructors of other
  // translation units may still use it while the process exits.
  static Env* const env = new PosixEnv();
  return env;
}

}  // namespace tabletfs
