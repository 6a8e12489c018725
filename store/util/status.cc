#include "store/status.h"

namespace tabletfs {

std::string_view StatusCodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk:
      return "OK";
    case Status::Code::kNotFound:
      return "NotFound";
    case Status::Code::kAlreadyExists:
      return "AlreadyExists";
    case Status::Code::kInvalidArgument:
      return "InvalidArgument";
    case Status::Code::kCorruption:
      return "Corruption";
    case Status::Code::kIOError:
      return "IOError";
    case Status::Code::kNoSpace:
      return "NoSpace";
    case Status::Code::kNotSupported:
      return "NotSupported";
    case Status::Code::kBusy:
      return "Busy";
  }
  return "Unknown";
}

Status::Status(Code code, std::string_view msg, std::string_view detail)
    : code_(code), message_(msg) {
  if (!detail.empty()) {
    message_.append(": ");
    message_.append(detail);
  }
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(StatusCodeName(code_));
  s.append(": ");
  s.append(message_);
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m.append(": ");
  m.append(message_);
  return Status(code_, m, {});
}

}  // namespace tabletfs
