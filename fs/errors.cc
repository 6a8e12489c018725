#include "fs/errors.h"

#include <cerrno>

namespace tabletfs::fs {

std::string FsError::ToString() const {
  if (ok()) return "OK";
  return ErrnoName(err) + ": " + reason;
}

int ErrnoFromStatus(const Status& s) {
  switch (s.code()) {
    case Status::Code::kOk:
      return 0;
    case Status::Code::kNotFound:
      return ENOENT;
    case Status::Code::kAlreadyExists:
      return EEXIST;
    case Status::Code::kInvalidArgument:
      return EINVAL;
    case Status::Code::kCorruption:
    case Status::Code::kIOError:
      return EIO;
    case Status::Code::kNoSpace:
      return ENOSPC;
    case Status::Code::kNotSupported:
      return EOPNOTSUPP;
    case Status::Code::kBusy:
      return EIO;  // errors.h says why not EBUSY
  }
  // A code added to Status without updating this map: fail loudly but
  // safely for the caller.
  return EIO;
}

FsError FsErrorFromStatus(const Status& s) {
  if (s.ok()) return FsError::Ok();
  return FsError::Of(ErrnoFromStatus(s), s.ToString());
}

std::string ErrnoName(int err) {
  switch (err) {
    case 0:
      return "OK";
    case EPERM:
      return "EPERM";
    case ENOENT:
      return "ENOENT";
    case EIO:
      return "EIO";
    case EBADF:
      return "EBADF";
    case EAGAIN:
      return "EAGAIN";
    case ENOMEM:
      return "ENOMEM";
    case EACCES:
      return "EACCES";
    case EBUSY:
      return "EBUSY";
    case EEXIST:
      return "EEXIST";
    case EXDEV:
      return "EXDEV";
    case ENOTDIR:
      return "ENOTDIR";
    case EISDIR:
      return "EISDIR";
    case EINVAL:
      return "EINVAL";
    case EFBIG:
      return "EFBIG";
    case ENOSPC:
      return "ENOSPC";
    case EROFS:
      return "EROFS";
    case ERANGE:
      return "ERANGE";
    case ENAMETOOLONG:
      return "ENAMETOOLONG";
    case ENOSYS:
      return "ENOSYS";
    case ENOTEMPTY:
      return "ENOTEMPTY";
    case ENODATA:
      return "ENODATA";
    case EOPNOTSUPP:  // == ENOTSUP on Linux
      return "EOPNOTSUPP";
    case EMLINK:
      return "EMLINK";
    case ENXIO:
      return "ENXIO";
    case ESTALE:
      return "ESTALE";
  }
  return "errno " + std::to_string(err);
}

std::string ValueLimitReason(uint64_t max_value_bytes) {
  std::string limit = std::to_string(max_value_bytes) + " bytes (";
  if (max_value_bytes >= (1u << 20) && max_value_bytes % (1u << 20) == 0) {
    limit = std::to_string(max_value_bytes >> 20) + " MiB (" +
            std::to_string(max_value_bytes) + " bytes; ";
  }
  return "a value may hold at most " + limit +
         "the mount option -o max_value_bytes=N sets the limit)";
}

}  // namespace tabletfs::fs
