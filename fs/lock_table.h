// LockTable: the fcntl (POSIX record) and flock locks of the mount's files,
// kept by the daemon per node, not per kernel inode. The kernel's own locks
// (what it does when the daemon serves none) live on its inode, and the
// readers and the writers of a cell are on inodes of their own
// (fs/write_path.cc): a writer's exclusive lock would not see a reader's
// shared one. Here they meet, as on a local disk.
//
// A lock that must wait (F_SETLKW, flock without LOCK_NB) takes no thread:
// it is queued with its reply, and granted in order when the locks in its
// way go (an unlock, a close). Cancel takes it back (the caller got a
// signal: EINTR). No deadlock detection (EDEADLK is never returned). As
// on Linux, a flock conversion (shared to exclusive or back) drops the
// old lock first, so two holders upgrading at once do not wait for each
// other.
//
// Thread safety: all methods may be called concurrently. Its lock is a leaf
// (fs/inode_table.h): nothing else is taken under it, and replies run
// after it is released.
#ifndef TABLETFS_FS_LOCK_TABLE_H_
#define TABLETFS_FS_LOCK_TABLE_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "fs/path_map.h"
#include "store/util/mutex.h"

namespace tabletfs::fs {

class LockTable {
 public:
  enum class Kind { kPosix, kFlock };
  static constexpr uint64_t kToEnd = UINT64_MAX;  // `last` of a lock to EOF

  struct Lock {
    bool write = false;  // F_WRLCK / LOCK_EX; else F_RDLCK / LOCK_SH
    uint64_t first = 0;  // byte range, both ends included (flock: all)
    uint64_t last = kToEnd;
    uint64_t owner = 0;   // the kernel's lock owner
    pid_t pid = 0;        // for F_GETLK
    uint64_t handle = 0;  // the open file it was taken through
  };

  // The lock that keeps `want` from being set, if any (F_GETLK).
  std::optional<Lock> Test(const Node& node, Kind kind, const Lock& want);

  // Sets `want` (replacing what its owner held on that range), or with
  // `unlock`, removes the owner's locks on the range. Returns 0 when done;
  // EAGAIN when another owner's lock is in the way and `wait` is false;
  // with `wait`, -1: `reply` is called later (0 once set, EINTR once
  // cancelled) and *waiter names it for Cancel.
  int Set(const Node& node, Kind kind, const Lock& want, bool unlock, bool wait,
          std::function<void(int)> reply, uint64_t* waiter);
  // A waiting lock's caller was interrupted: replies EINTR, unless it was
  // granted already.
  void Cancel(uint64_t waiter);
  // Removes the locks `owner` holds on `node` (a close: FLUSH, or the
  // RELEASE of a file that takes flock locks along); with `handle` != 0
  // only those taken through that open file.
  void ReleaseOwner(const Node& node, Kind kind, uint64_t owner,
                    uint64_t handle = 0);
  // Removes every POSIX lock taken through the open file `handle` (its
  // RELEASE: a reader opened before any lock was taken sends no FLUSH,
  // FOPEN_NOFLUSH).
  void ReleaseHandle(const Node& node, uint64_t handle);
  // A rename moved `from` to `to`: its locks and waiters go along (those
  // of a replaced `to` stay with them).
  void Rebind(const Node& from, const Node& to);
  // `node` was removed (or replaced by a rename) while open through
  // `inos`: its locks stay with its open files, apart from those of a new
  // file under the name, as on a local disk. OrphanKey gives them.
  void Orphan(const Node& node, const std::vector<uint64_t>& inos);
  // The key of `ino`'s locks when its cell was removed while open.
  std::optional<Node> OrphanKey(uint64_t ino);
  // The kernel forgot `ino`.
  void ForgetInode(uint64_t ino);

  // A cancel runs on a thread of its own (fs/fuse_ops.cc); the table
  // outlives them all.
  void CancelOnThread(uint64_t waiter);
  ~LockTable();

  // Whether a lock was ever set: until then a close has none to release.
  bool used() const { return used_.load(std::memory_order_acquire); }

  // For tests.
  size_t LocksOn(const Node& node, Kind kind);

 private:
  struct Waiter {
    uint64_t id;
    Kind kind;
    Lock want;
    std::function<void(int)> reply;
  };
  struct NodeLocks {
    std::vector<Lock> posix;
    std::vector<Lock> flock;
    std::list<Waiter> waiters;
  };
  using Replies = std::vector<std::pair<std::function<void(int)>, int>>;

  static std::vector<Lock>& Of(NodeLocks& n, Kind kind) {
    return kind == Kind::kPosix ? n.posix : n.flock;
  }
  static const Lock* Conflict(const std::vector<Lock>& held, const Lock& want);
  static void Apply(std::vector<Lock>& held, const Lock& want, bool unlock);
  // Grants the waiters that can go now, in order; drops `node`'s entry
  // when it holds nothing.
  void Wake(const Node& node, Replies* replies) REQUIRES(mu_);
  static void Send(Replies& replies);

  std::atomic<bool> used_{false};
  std::atomic<int> cancels_running_{0};
  Mutex mu_;
  std::unordered_map<Node, NodeLocks, NodeHash> nodes_ GUARDED_BY(mu_);
  uint64_t next_waiter_ GUARDED_BY(mu_) = 1;
  // Which node each waiter waits on, for Cancel.
  std::unordered_map<uint64_t, Node> waiting_ GUARDED_BY(mu_);
  // The inodes of removed cells, by the key their locks moved to.
  std::unordered_map<uint64_t, Node> orphans_ GUARDED_BY(mu_);
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_LOCK_TABLE_H_
