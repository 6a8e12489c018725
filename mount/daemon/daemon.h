// The daemon's life: open the store, mount, serve, unmount, close.
//
// Without -f the process forks first: the child opens the store (the store's
// flock and background threads then belong to the process that stays), mounts,
// records DATADIR/mount.pid and DATADIR/mountpoint, and tells the parent
// through a pipe; the parent exits 0 only then, so the exit code says whether
// the mount worked.
//
// Thread safety: called once, from main.
#ifndef TABLETFS_MOUNT_DAEMON_DAEMON_H_
#define TABLETFS_MOUNT_DAEMON_DAEMON_H_

#include "mount/daemon/args.h"

namespace tabletfs::daemon {

// Returns the process exit code.
int RunDaemon(const DaemonArgs& args);

}  // namespace tabletfs::daemon

#endif  // TABLETFS_MOUNT_DAEMON_DAEMON_H_
