// Status and Result<T>: how every fallible operation of the store reports
// its outcome. No exceptions cross the API.
//
// A Status is OK or carries a code and a message with context (the file, the
// offset, what was expected). Result<T> holds a T or a non-OK Status, in the
// shape of absl::StatusOr.
//
// Thread safety: immutable values; distinct objects may be used from any
// thread, one object may be read concurrently.
#ifndef TABLETFS_STORE_STATUS_H_
#define TABLETFS_STORE_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace tabletfs {

class [[nodiscard]] Status {
 public:
  // Persisted nowhere, but mapped to errno values in fs/: do not renumber
  // without updating that map.
  enum class Code {
    kOk = 0,
    kNotFound = 1,
    kAlreadyExists = 2,
    kInvalidArgument = 3,
    kCorruption = 4,
    kIOError = 5,
    kNoSpace = 6,
    kNotSupported = 7,
    kBusy = 8,
  };

  Status() = default;

  static Status OK() { return Status(); }
  static Status NotFound(std::string_view msg, std::string_view detail = {}) {
    return Status(Code::kNotFound, msg, detail);
  }
  static Status AlreadyExists(std::string_view msg,
                              std::string_view detail = {}) {
    return Status(Code::kAlreadyExists, msg, detail);
  }
  static Status InvalidArgument(std::string_view msg,
                                std::string_view detail = {}) {
    return Status(Code::kInvalidArgument, msg, detail);
  }
  static Status Corruption(std::string_view msg, std::string_view detail = {}) {
    return Status(Code::kCorruption, msg, detail);
  }
  static Status IOError(std::string_view msg, std::string_view detail = {}) {
    return Status(Code::kIOError, msg, detail);
  }
  static Status NoSpace(std::string_view msg, std::string_view detail = {}) {
    return Status(Code::kNoSpace, msg, detail);
  }
  static Status NotSupported(std::string_view msg,
                             std::string_view detail = {}) {
    return Status(Code::kNotSupported, msg, detail);
  }
  static Status Busy(std::string_view msg, std::string_view detail = {}) {
    return Status(Code::kBusy, msg, detail);
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsAlreadyExists() const { return code_ == Code::kAlreadyExists; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsIOError() const { return code_ == Code::kIOError; }
  bool IsNoSpace() const { return code_ == Code::kNoSpace; }
  bool IsNotSupported() const { return code_ == Code::kNotSupported; }
  bool IsBusy() const { return code_ == Code::kBusy; }

  // The message without the code name.
  const std::string &message() const { return message_; }

  // "Corruption: <message>", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is prefixed by `context: `. OK stays OK.
  Status WithContext(std::string_view context) const;

  // Marks that the caller looked at the status and chose to drop it.
  void IgnoreError() const {}

 private:
  Status(Code code, std::string_view msg, std::string_view detail);

  Code code_ = Code::kOk;
  std::string message_;
};

std::string_view StatusCodeName(Status::Code code);

// Holds a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  // REQUIRES: !status.ok()
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok());
    if (status_.ok()) status_ = Status::InvalidArgument("Result from OK");
  }
  Result(T value) : value_(std::move(value)) {}  // NOLINT
  template <typename U, typename = std::enable_if_t<
                            std::is_constructible_v<T, U &&> &&
                            !std::is_same_v<std::decay_t<U>, T> &&
                            !std::is_same_v<std::decay_t<U>, Status>>>
  Result(U &&value) : value_(std::forward<U>(value)) {}  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status &status() const { return status_; }

  // REQUIRES: ok()
  T &value() & {
    assert(ok());
    return *value_;
  }
  const T &value() const & {
    assert(ok());
    return *value_;
  }
  T &&value() && {
    assert(ok());
    return std::move(*value_);
  }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T &&operator*() && { return std::move(*this).value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace tabletfs

// Evaluates `expr` (a Status); returns it from the enclosing function when
// it is not OK.
#define TABLETFS_RETURN_IF_ERROR(expr) \
  do {                                 \
    ::tabletfs::Status _st = (expr);   \
    if (!_st.ok()) return _st;         \
  } while (0)

#define TABLETFS_CONCAT_INNER_(a, b) a##b
#define TABLETFS_CONCAT_(a, b) TABLETFS_CONCAT_INNER_(a, b)

// `TABLETFS_ASSIGN_OR_RETURN(auto x, ResultExpr());` declares x from the
// value or returns the error status.
#define TABLETFS_ASSIGN_OR_RETURN(lhs, expr) \
  TABLETFS_ASSIGN_OR_RETURN_IMPL_(TABLETFS_CONCAT_(_res_, __LINE__), lhs, expr)
#define TABLETFS_ASSIGN_OR_RETURN_IMPL_(res, lhs, expr) \
  auto res = (expr);                                    \
  if (!res.ok()) return res.status();                   \
  lhs = std::move(res).value()

#endif  // TABLETFS_STORE_STATUS_H_
