// The table of FUSE low-level callbacks (fs/fuse_ops.cc) that a session
// (fs/session.cc) serves with. Their userdata is the session's Filesystem
// (fs/filesystem.h). Private to fs/.
//
// Thread safety: the table is immutable; the callbacks may run on any
// number of libfuse's threads at once.
#ifndef TABLETFS_FS_FUSE_OPS_H_
#define TABLETFS_FS_FUSE_OPS_H_

struct fuse_lowlevel_ops;

namespace tabletfs::fs {

// Valid for the life of the process.
const fuse_lowlevel_ops* FuseOperations();

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_FUSE_OPS_H_
