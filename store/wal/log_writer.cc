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

Status LogWriter::AddRecord(std::span<const std::string_view> pieces) {
  if (!error_.ok()) return error_;
  if (closed_)
    return Status::InvalidArgument("log writer: AddRecord after Close");
  size_t left = 0;
  for (std::string_view p : pieces) left += p.size();
  size_t piece = 0, offset = 0;  // where the next fragment's bytes start
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
    size_t n = std::min(left, left_in_block - kLogHeaderSize);
    bool last = n == left;
    LogFragmentType type = first && last ? LogFragmentType::kFull
                           : first       ? LogFragmentType::kFirst
                           : last        ? LogFragmentType::kLast
                                         : LogFragmentType::kMiddle;
    TABLETFS_RETURN_IF_ERROR(EmitFragment(static_cast<uint8_t>(type), pieces,
                                          &piece, &offset, n));
    left -= n;
    first = false;
  } while (left > 0);
  return Status::OK();
}

Status LogWriter::EmitFragment(uint8_t type,
                               std::span<const std::string_view> pieces,
                               size_t* piece, size_t* offset, size_t n) {
  assert(n <= kLogMaxFragmentPayload);
  assert(block_offset_ + kLogHeaderSize + n <= kLogBlockSize);
  // Build header and payload in one buffer so the checksum covers length,
  // type and payload as one contiguous run and the file sees one Append.
  fragment_.resize(kLogHeaderSize);
  fragment_[kLogChecksumSize] = static_cast<char>(n & 0xff);
  fragment_[kLogChecksumSize + 1] = static_cast<char>(n >> 8);
  fragment_[kLogChecksumSize + 2] = static_cast<char>(type);
  for (size_t want = n; want > 0;) {
    std::string_view p = pieces[*piece].substr(*offset);
    const size_t take = std::min(want, p.size());
    fragment_.append(p.substr(0, take));
    want -= take;
    *offset += take;
    if (*offset == pieces[*piece].size()) {
      ++*piece;
      *offset = 0;
    }
  }
  EncodeFixed64(
      fragment_.data(),
      Checksum64(std::string_view(fragment_).substr(kLogChecksumSize)));
  Status s = file_->Append(fragment_);
  if (!s.ok()) {
    return Fail(
        s.WithContext("log writer: append at offset " + std::to_string(size_)));
  }
  size_ += kLogHeaderSize + n;
  block_offset_ += kLogHeaderSize + n;
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
