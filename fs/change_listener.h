// ChangeListener: the mount as a subscriber of the store's change events
// (store/changes.h), so that a write through another door (the C++ API on
// the same store, later the API server) reaches the kernel's caches: the
// attributes, pages and names the kernel holds for the cells, rows,
// families and tables it changed, and the committed value open readers
// hold (OpenCells::Changed).
//
// The mount's own writes are tagged with its origin (fs/origin_bigtable.h)
// and skipped here: the request that wrote invalidated what it changed
// before replying, and each notice is a write to /dev/fuse.
//
// Per event, only nodes the kernel knows matter: the cell and its family,
// row and table directories are looked up in the inode table (a hash
// lookup each; nothing more for nodes the kernel does not hold). A known
// node gets an inode notice (attributes, pages, open read states); after a
// delete, a known node that no longer exists (its area's Stat says so)
// also loses its name (an entry notice), so `stat` and `cat` stop finding
// it. Deletes of a family or a row and schema drops reach every known node
// below them (one pass over the inode table per batch). A batch that
// reports lost events (the subscription fell behind) refreshes every known
// node of the data tree and `.schema`: never stale cache left silently.
//
// Coherence bound: notices are sent from the invalidator's thread, so a
// write through another door is visible through the mount once the
// listener and the invalidator have caught up (milliseconds when idle),
// not when the write returns. A lookup or getattr that read the store
// before the write and replies after the notice can still leave the old
// attributes cached until its timeout (entry_timeout, attr_timeout), as
// for a concurrent request during the mount's own writes.
//
// Thread safety: the constructor starts a thread that reads the
// subscription and calls Filesystem's invalidation helpers; the destructor
// stops it. Destroy it before the Filesystem's invalidator and before the
// store.
#ifndef TABLETFS_FS_CHANGE_LISTENER_H_
#define TABLETFS_FS_CHANGE_LISTENER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "store/bigtable.h"

namespace tabletfs::fs {

class Filesystem;

class ChangeListener {
 public:
  // Subscribes to every table of `store`, without the events of the
  // mount's own writes (`own_origin`), and starts the thread. On
  // failure logs why and listens to nothing (the mount then is coherent
  // only with its own writes, as before): at info level when the store
  // sends no events at all (Subscribe is NotSupported, as a remote
  // store's), since that is how such a store works, not a fault.
  ChangeListener(Filesystem* fs, Bigtable* store, uint64_t own_origin);
  ~ChangeListener();
  ChangeListener(const ChangeListener&) = delete;
  ChangeListener& operator=(const ChangeListener&) = delete;

  // Queue bound of the subscription: a burst of writes through other
  // doors larger than this, arriving faster than the listener drains,
  // costs one full refresh.
  static constexpr size_t kMaxQueuedEvents = 16384;

 private:
  class Pass;
  void Run();

  Filesystem* const fs_;
  std::unique_ptr<ChangeSubscription> subscription_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_CHANGE_LISTENER_H_
