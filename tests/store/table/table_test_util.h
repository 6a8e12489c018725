// Test helpers for store/table: in-memory files whose bytes a test can read
// and damage, and a small Env over them that counts open RandomAccessFiles
// (to check the table cache's bound on open files).
//
// Thread safety: StringEnv is thread-safe; a StringSink belongs to one
// thread.
#ifndef TABLETFS_TESTS_STORE_TABLE_TABLE_TEST_UTIL_H_
#define TABLETFS_TESTS_STORE_TABLE_TABLE_TEST_UTIL_H_

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "store/env.h"
#include "store/util/mutex.h"

namespace tabletfs::table_test {

// Appends to a string the test owns.
class StringSink final : public WritableFile {
 public:
  explicit StringSink(std::string* contents) : contents_(contents) {}
  Status Append(std::string_view data) override {
    contents_->append(data);
    return Status::OK();
  }
  Status Flush() override { return Status::OK(); }
  Status Sync() override { return Status::OK(); }
  Status Close() override { return Status::OK(); }
  uint64_t Size() const override { return contents_->size(); }

 private:
  std::string* const contents_;
};

// Reads an immutable snapshot of bytes; decrements *open_count when
// destroyed (when given). in_place: returns its own bytes and never
// touches scratch, as a mapped file does (ReadsInPlace()).
class StringSource final : public RandomAccessFile {
 public:
  explicit StringSource(std::shared_ptr<const std::string> contents,
                        std::atomic<int>* open_count = nullptr,
                        bool in_place = false)
      : contents_(std::move(contents)),
        open_count_(open_count),
        in_place_(in_place) {
    if (open_count_ != nullptr) open_count_->fetch_add(1);
  }
  ~StringSource() override {
    if (open_count_ != nullptr) open_count_->fetch_sub(1);
  }
  Status Read(uint64_t offset, size_t n, std::string_view* result,
              char* scratch) const override {
    if (offset > contents_->size()) {
      return Status::IOError("read past end of file");
    }
    size_t len = std::min<uint64_t>(n, contents_->size() - offset);
    if (in_place_) {
      *result = std::string_view(contents_->data() + offset, len);
      return Status::OK();
    }
    std::memcpy(scratch, contents_->data() + offset, len);
    *result = std::string_view(scratch, len);
    return Status::OK();
  }
  bool ReadsInPlace() const override { return in_place_; }

 private:
  const std::shared_ptr<const std::string> contents_;
  std::atomic<int>* const open_count_;
  const bool in_place_;
};

// Files are put in whole by the test; only NewRandomAccessFile and
// GetFileSize work.
class StringEnv final : public Env {
 public:
  void PutFile(const std::string& path, std::string contents) {
    MutexLock lock(&mu_);
    files_[path] = std::make_shared<const std::string>(std::move(contents));
  }
  int open_files() const { return open_files_.load(); }
  int total_opens() const { return total_opens_.load(); }

  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    MutexLock lock(&mu_);
    auto it = files_.find(path);
    if (it == files_.end()) return Status::NotFound(path, "no such file");
    total_opens_.fetch_add(1);
    return std::unique_ptr<RandomAccessFile>(
        std::make_unique<StringSource>(it->second, &open_files_));
  }
  Result<uint64_t> GetFileSize(const std::string& path) override {
    MutexLock lock(&mu_);
    auto it = files_.find(path);
    if (it == files_.end()) return Status::NotFound(path, "no such file");
    return uint64_t{it->second->size()};
  }

  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(
      const std::string&) override {
    return Status::NotSupported("StringEnv");
  }
  Result<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string&) override {
    return Status::NotSupported("StringEnv");
  }
  Result<std::unique_ptr<WritableFile>> NewAppendableFile(
      const std::string&) override {
    return Status::NotSupported("StringEnv");
  }
  bool FileExists(const std::string& path) override {
    MutexLock lock(&mu_);
    return files_.count(path) > 0;
  }
  Result<std::vector<std::string>> GetChildren(const std::string&) override {
    return Status::NotSupported("StringEnv");
  }
  Status RemoveFile(const std::string&) override {
    return Status::NotSupported("StringEnv");
  }
  Status CreateDir(const std::string&) override { return Status::OK(); }
  Status RemoveDir(const std::string&) override {
    return Status::NotSupported("StringEnv");
  }
  Status RenameFile(const std::string&, const std::string&) override {
    return Status::NotSupported("StringEnv");
  }
  Status TruncateFile(const std::string&, uint64_t) override {
    return Status::NotSupported("StringEnv");
  }
  Status SyncDir(const std::string&) override { return Status::OK(); }
  Result<std::unique_ptr<FileLock>> LockFile(const std::string&) override {
    return Status::NotSupported("StringEnv");
  }
  Result<uint64_t> GetFreeSpace(const std::string&) override {
    return uint64_t{1} << 40;
  }
  int64_t NowMicros() override { return 0; }

 private:
  Mutex mu_;
  std::map<std::string, std::shared_ptr<const std::string>> files_
      GUARDED_BY(mu_);
  std::atomic<int> open_files_{0};
  std::atomic<int> total_opens_{0};
};

}  // namespace tabletfs::table_test

#endif  // TABLETFS_TESTS_STORE_TABLE_TABLE_TEST_UTIL_H_
