// FsError: how the fs layer reports a refusal — an errno for the kernel and a
// reason for the log line. Many refusals (ENOTEMPTY, EXDEV, EROFS,
// ENAMETOOLONG...) have no store Status code, so the fs layer does not use
// Status for its own decisions; a store Status is mapped to an errno once, at
// the boundary, by ErrnoFromStatus / FsErrorFromStatus.
//
// Thread safety: plain values and pure functions.
#ifndef TABLETFS_FS_ERRORS_H_
#define TABLETFS_FS_ERRORS_H_

#include <cstdint>
#include <string>
#include <utility>

#include "store/status.h"

namespace tabletfs::fs {

struct [[nodiscard]] FsError {
  // 0 for success, otherwise a positive errno value (ENOENT, EINVAL...).
  int err = 0;
  // Why, for the log: what was refused and what was expected. Empty when ok.
  std::string reason;

  bool ok() const { return err == 0; }

  static FsError Ok() { return FsError(); }
  // REQUIRES: err > 0.
  static FsError Of(int err, std::string reason) {
    FsError e;
    e.err = err;
    e.reason = std::move(reason);
    return e;
  }

  // "ENOENT: <reason>" or "OK", for log lines and test failures.
  std::string ToString() const;

  // Marks that the caller looked at the error and chose to drop it.
  void IgnoreError() const {}
};

// The errno a store Status becomes at the fs boundary:
// OK→0, NotFound→ENOENT, AlreadyExists→EEXIST, InvalidArgument→EINVAL,
// Corruption→EIO, IOError→EIO, NoSpace→ENOSPC, NotSupported→EOPNOTSUPP,
// Busy→EIO. Busy is a store that cannot serve now (a remote server that is
// unreachable or timed out, a store another process holds): to the shell
// that is an I/O error, as an NFS soft mount reports an unreachable
// server, not the EBUSY of a mount point in use; the log line says which.
int ErrnoFromStatus(const Status& s);

// ErrnoFromStatus(s) with s.ToString() as the reason; Ok() for an OK status.
FsError FsErrorFromStatus(const Status& s);

// EFBIG's reason: "a value may hold at most 64 MiB (67108864 bytes; the
// mount option -o max_value_bytes=N sets the limit)", or "... at most 1000
// bytes (the mount option ...)" for a limit that is no whole MiB.
std::string ValueLimitReason(uint64_t max_value_bytes);

// The symbolic name of an errno value ("ENOENT"), or "errno N" when unknown.
std::string ErrnoName(int err);

}  // namespace tabletfs::fs

// Evaluates `expr` (an FsError); returns it from the enclosing function when
// it is not ok.
#define TABLETFS_FS_RETURN_IF_ERROR(expr) \
  do {                                    \
    ::tabletfs::fs::FsError _fe = (expr); \
    if (!_fe.ok()) return _fe;            \
  } while (0)

#endif  // TABLETFS_FS_ERRORS_H_
