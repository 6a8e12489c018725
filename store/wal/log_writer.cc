#include "store/wal/log_writer.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "store/util/coding.h"
#include "store/util/hash.h"
#include "store/wal/log_format.h"

namespace tabletfs {

LogWriter::LogWriter(std::unique_ptr<WritableFile> file, uint64_t initial_size)
    : file_(std::move(file)),
      size_(initial_size),
      block_offset_(initial_size % kLogBlockSize) {}

LogWriter::LogWriter(std::unique_ptr<WritableFile> file, uint64_t initial_size,
                     Env* env, std::string dir)
    : file_(std::move(file)),
      size_(initial_size),
      block_offset_(initial_size % kLogBlockSize),
      env_(env),
      dir_(std::move(dir)),
      dir_synced_(env == nullptr) {}

LogWriter::~LogWriter() = default;

Status LogWriter::Fail(Status status) {
  if (error_.ok()) error_ = status;
  return status;
}

Status LogWriter::AddRecord(std::string_view payload) {
  if (!error_.ok()) return error_;
  if (closed_)
    return Status::InvalidArgument("log writer: AddRecord after Close");
  bool first = true;
  // An empty record still emits one (empty) kFull fragment, hence do/while.
  do {
    size_t left_in_block = kLogBlockSize - block_offset_;
    if (left_in_block < kLogHeaderSize) {
      // Too small for a header: pad with zeros, which readers skip.
      if (left_in_block > 0) {
        static constexpr char kZeros[kLogHeaderSize] = {};
        Status s = file_->Append(std::string_view(kZeros, left_in_block));
        if (!s.ok()) return Fail(s.WithContext("log writer: block trailer"));
        size_ += left_in_block;
      }
      block_offset_ = 0;
      left_in_block = kLogBlockSize;
    }
    size_t n = std::min(payload.size(), left_in_block - kLogHeaderSize);
    bool last = n == payload.size();
    LogFragmentType type = first && last ? LogFragmentType::kFull
                           : first       ? LogFragmentType::kFirst
                           : last        ? LogFragmentType::kLast
                                         : LogFragmentType::kMiddle;
    TABLETFS_RETURN_IF_ERROR(
        EmitFragment(static_cast<uint8_t>(type), payload.substr(0, n)));
    payload.remove_prefix(n);
    first = false;
  } while (!payload.empty());
  return Status::OK();
}

Status LogWriter::EmitFragment(uint8_t type, std::string_view payload) {
  assert(payload.size() <= kLogMaxFragmentPayload);
  assert(block_offset_ + kLogHeaderSize + payload.size() <= kLogBlockSize);
  // Build header and payload in one buffer so the checksum covers length,
  // type and payload as one contiguous run and the file sees one Append.
  fragment_.resize(kLogHeaderSize);
  fragment_[kLogChecksumSize] = static_cast<char>(payload.size() & 0xff);
  fragment_[kLogChecksumSize + 1] = static_cast<char>(payload.size() >> 8);
  fragment_[kLogChecksumSize + 2] = static_cast<char>(type);
  fragment_.append(payload);
  EncodeFixed64(
      fragment_.data(),
      Checksum64(std::string_view(fragment_).substr(kLogChecksumSize)));
  Status s = file_->Append(fragment_);
  if (!s.ok()) {
    return Fail(
        s.WithContext("log writer: append at offset " + std::to_string(size_)));
  }
  size_ += kLogHeaderSize + payload.size();
  block_offset_ += kLogHeaderSize + payload.size();
  return Status::OK();
}

Status LogWriter::Flush() {
  if (!error_.ok()) return error_;
  if (closed_) return Status::InvalidArgument("log writer: Flush after Close");
  Status s = file_->Flush();
  if (!s.ok()) return Fail(s.WithContext("log writer: flush"));
  return s;
}

Status LogWriter::Sync() {
  if (!error_.ok()) return error_;
  if (closed_) return Status::InvalidArgument("log writer: Sync after Close");
  Status s = file_->Sync();
  if (!s.ok()) return Fail(s.WithContext("log writer: sync"));
  if (!dir_synced_) {
    s = env_->SyncDir(dir_);
    // Sticky like any sync failure: whether the name reached the disk is
    // unknown.
    if (!s.ok()) return Fail(s.WithContext("log writer: sync directory"));
    dir_synced_ = true;
  }
  return s;
}

Status LogWriter::SyncFlushed() {
  // Reads no member the appending thread writes: only file_, set once.
  Status s = file_->SyncFlushed();
  if (!s.ok()) return s.WithContext("log writer: sync");
  return s;
}

Status LogWriter::Close() {
  if (closed_) return error_;
  closed_ = true;
  Status s = file_->Close();
  if (!s.ok()) return Fail(s.WithContext("log writer: close"));
  return error_;
}

}  // namespace tabletfs
