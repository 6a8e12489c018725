// OriginBigtable: a store seen through one writer's name. Every write made
// through it carries WriteOptions::origin = `origin`, so the change events
// of those writes name it (ChangeEvent::origin) and the writer can skip its
// own events (fs/change_listener.h). Everything else is forwarded as is;
// snapshots are the wrapped store's and work with either.
//
// The mount wraps its store once (Filesystem's constructor) instead of
// setting the origin at each call site: no area, write path or helper can
// forget it. For the same reason the wrapper tells the mount's cache of
// directory times (fs/dir_times_cache.h) of every write, before it is
// applied and after.
//
// Thread safety: as the wrapped store's.
#ifndef TABLETFS_FS_ORIGIN_BIGTABLE_H_
#define TABLETFS_FS_ORIGIN_BIGTABLE_H_

#include <cstdint>
#include <memory>

#include "fs/dir_times_cache.h"
#include "store/bigtable.h"

namespace tabletfs::fs {

// A fresh origin, never 0, unique in this process.
uint64_t NewOrigin();

// REQUIRES: `store` and `dir_times` outlive the result.
std::unique_ptr<Bigtable> NewOriginBigtable(Bigtable* store, uint64_t origin,
                                            DirTimesCache* dir_times);

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_ORIGIN_BIGTABLE_H_
