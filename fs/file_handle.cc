#include "fs/file_handle.h"

#include <errno.h>

namespace tabletfs::fs {

FileHandle::FileHandle(uint64_t ino, Node node, Mode mode, std::string initial,
                       bool fresh, size_t max_value_bytes)
    : ino_(ino),
      kind_(node.kind),
      mode_(mode),
      max_value_bytes_(max_value_bytes) {
  MutexLock lock(&mu_);
  node_ = std::move(node);
  if (mode_ != Mode::kAppend) {
    buffer_ = std::move(initial);
  } else {
    append_base_ = initial.size();
  }
  fresh_ = fresh && mode_ != Mode::kRead;
}

FileHandle::FileHandle(uint64_t ino, Node node, Mode mode,
                       std::shared_ptr<OpenCell> cell, uint64_t descriptor)
    : ino_(ino),
      kind_(node.kind),
      mode_(mode),
      max_value_bytes_(0),
      cell_(std::move(cell)),
      descriptor_(descriptor) {
  MutexLock lock(&mu_);
  node_ = std::move(node);
}

std::string FileHandle::Read(off_t offset, size_t size) const {
  if (offset < 0 || static_cast<uint64_t>(offset) >= buffer_.size()) return {};
  return buffer_.substr(static_cast<size_t>(offset), size);
}

FsError FileHandle::Write(off_t offset, std::string_view data) {
  if (!failed_.ok()) {
    return FsError::Of(
        EIO, "an earlier commit of this file failed: " + failed_.reason);
  }
  if (refused_) {
    // Nothing of this handle is committed any more: accepting more bytes
    // would lose them silently.
    return FsError::Of(refused_errno_,
                       "an earlier write() to this descriptor was refused; "
                       "reopen the file to write it");
  }
  if (mode_ == Mode::kRead) {
    return FsError::Of(EBADF, "write to a read-only handle");
  }
  uint64_t end = mode_ == Mode::kAppend
                     ? append_base_ + buffer_.size() + data.size()
                     : static_cast<uint64_t>(offset) + data.size();
  if (offset < 0 || end > max_value_bytes_) {
    Refuse(EFBIG);
    return FsError::Of(EFBIG, ValueLimitReason(max_value_bytes_) +
                                  ": this write would end at " +
                                  std::to_string(end));
  }
  if (mode_ == Mode::kAppend) {
    buffer_.append(data);
  } else {
    if (end > buffer_.size()) buffer_.resize(end);
    buffer_.replace(static_cast<size_t>(offset), data.size(), data);
  }
  dirty_ = true;
  return FsError::Ok();
}

FsError FileHandle::Truncate(uint64_t size) {
  if (mode_ == Mode::kRead) {
    return FsError::Of(EBADF, "truncate through a read-only handle");
  }
  if (refused_) {
    return FsError::Of(refused_errno_,
                       "an earlier write() to this descriptor was refused");
  }
  if (size > max_value_bytes_) {
    Refuse(EFBIG);
    return FsError::Of(EFBIG, ValueLimitReason(max_value_bytes_));
  }
  if (mode_ == Mode::kAppend) {
    // Truncating an append handle means "truncate the cell" only when it
    // empties it; the open-time O_TRUNC path covers `>>` never truncating.
    if (size == 0) {
      buffer_.clear();
      append_base_ = 0;
      fresh_ = true;
    }
    return FsError::Ok();
  }
  buffer_.resize(size);
  dirty_ = true;
  return FsError::Ok();
}

bool FileHandle::NeedsCommit() const {
  if (refused_ || unlinked_ || mode_ == Mode::kRead) return false;
  return dirty_ || fresh_;
}

void FileHandle::Committed(int64_t timestamp) {
  committed_once_ = true;
  if (fresh_ && !dirty_ && buffer_.empty()) {
    placeholder_timestamp_ = timestamp;
  } else {
    placeholder_timestamp_.reset();
  }
  dirty_ = false;
  fresh_ = false;
  if (mode_ == Mode::kAppend) {
    append_base_ += buffer_.size();
    buffer_.clear();
  }
}

}  // namespace tabletfs::fs
