// Opening a data directory for tabletctl, and explaining why it cannot be.
//
// A mounted data directory is locked by its tabletfs daemon, which records
// the mount point in DATADIR/mountpoint and its pid in DATADIR/mount.pid.
// tabletctl does not go through the mount: it refuses with one line that
// names the mount point, so the user can use the mount or unmount first.
//
// Thread safety: functions without shared state.
#ifndef TABLETFS_MOUNT_CLI_OPEN_H_
#define TABLETFS_MOUNT_CLI_OPEN_H_

#include <memory>
#include <string>

#include "store/db.h"
#include "store/status.h"

namespace tabletfs::cli {

// DB::Open with tabletctl's options. Without `create_if_missing`, a
// directory that holds no database is NotFound. A Busy status is rewritten
// by DescribeBusy.
Result<std::unique_ptr<DB>> OpenDatabase(const std::string& dir,
                                         bool create_if_missing);

// "DATADIR is mounted at MOUNT by tabletfs (pid N): use the mount, or
// unmount it first" from DATADIR/mountpoint and DATADIR/mount.pid when
// present, else "DATADIR is in use by another process (<busy>)".
Status DescribeBusy(const std::string& dir, const Status& busy);

}  // namespace tabletfs::cli

#endif  // TABLETFS_MOUNT_CLI_OPEN_H_
