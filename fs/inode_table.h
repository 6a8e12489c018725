// InodeTable: our own inode numbers for the nodes of the namespace, with the
// exact lookup counting the FUSE low-level protocol requires (each entry
// reply adds one, FORGET removes what the kernel says; an inode is freed at
// zero). Inode numbers are never reused while the daemon runs, so a stale
// kernel inode can never name another node.
//
// Lock order in fs/ (outermost first):
//   1. OpenCell::mu_        (one cell's shared open state) or
//      FileHandle::mu_      (one open `.schema` or status file); store
//                           calls are made under them (commits of one
//                           file are serialized); unlink and rename
//                           hold several OpenCell::mu_, taken in the
//                           order of their inode numbers
//   1a. WritePath::attach_mu_ (a stripe: a writer's open decides whose
//                           writers it joins, and attaches, under it)
//   2. OpenCells::mu_       (the registry of open states, by inode)
//   3. DirHandle::mu_       (one open directory's cursor)
//   4. EphemeralDirs::mu_   (directories made by mkdir)
//   5. InodeTable::mu_      (this table)
//   6. Invalidator::mu_     (the notice queue)
//   LockTable::mu_ (fcntl and flock locks) is a leaf: taken under any of
//   them, it takes nothing.
// Store calls are never made while 1a or 2 to 6 is held; every lock is released
// before a reply is sent to the kernel.
//
// Thread safety: all methods may be called concurrently.
#ifndef TABLETFS_FS_INODE_TABLE_H_
#define TABLETFS_FS_INODE_TABLE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fs/path_map.h"
#include "store/util/mutex.h"

namespace tabletfs::fs {

class InodeTable {
 public:
  static constexpr uint64_t kRootInode = 1;

  InodeTable();
  InodeTable(const InodeTable&) = delete;
  InodeTable& operator=(const InodeTable&) = delete;

  // The inode of `node`, created when missing, with its lookup count raised
  // by `count` (0: look up without counting, e.g. for "." entries).
  uint64_t Lookup(const Node& node, uint64_t count = 1);
  // The inode currently bound to `node`, if any; counts unchanged.
  std::optional<uint64_t> Find(const Node& node);
  // The node of `ino`; nullopt when the inode is unknown (forgotten).
  std::optional<Node> Get(uint64_t ino);
  // Lowers the lookup count; the inode is freed when it reaches zero (then
  // true). The root is never freed.
  bool Forget(uint64_t ino, uint64_t count);
  // A rename moved `from` to `to`: the inode of `from` now names `to` (the
  // kernel moved its dentry); an inode that named `to` keeps its node but is
  // no longer found by it.
  void Rebind(const Node& from, const Node& to);
  // `node` was removed while `ino` (bound to it) is still open: the inode
  // keeps its node but is no longer found by it, so that a file created
  // under the name gets a new inode.
  void Unbind(const Node& node, uint64_t ino);
  // A writer opens `ino`, bound to the cell `node`, while readers read it
  // through the page cache (fs/write_path.cc, "a writer's own inode"): the
  // inode is no longer found by `node`, so that the next lookup binds a new
  // inode to it, but unlike Unbind it still follows the cell: Retired(n)
  // lists it until it is freed, unbound, or renamed along with the cell.
  // False (and no change) when `ino` is not the inode bound to `node`.
  bool Retire(const Node& node, uint64_t ino);
  // The retired inode `ino` of `node` is bound to it again, and the inode
  // bound until now is retired in its place (an open moved to the cell's
  // inode of its kind, fs/write_path.cc). False (and no change) when `ino`
  // is not a retired inode of `node`.
  bool Restore(const Node& node, uint64_t ino);
  // The other inodes that follow the same cell as `ino`: its retired
  // inodes, and when `ino` is retired itself, the bound one too. Empty
  // unless some inode is retired.
  std::vector<uint64_t> RetiredAlike(uint64_t ino);
  // The retired inodes that follow `node`.
  std::vector<uint64_t> Retired(const Node& node);
  // The number `stat` shows for `ino`: `ino` itself, except for an inode
  // bound to a cell while another inode retired from it is known: then
  // the first inode's number, so that a cell keeps its st_ino across a
  // writer's own inode (`tail -F` and rsync compare st_ino).
  uint64_t StatIno(uint64_t ino);

  // For keep_cache: records that a reader opened `ino` at this version and
  // says whether the previous open saw the same version.
  bool SameVersionAsLastOpen(uint64_t ino, int64_t timestamp, uint64_t size);

  // The inodes of a family's nodes in every view (family directories,
  // cells, versions), for invalidation after its settings changed.
  std::vector<uint64_t> InodesOfFamily(const std::string& table,
                                       const std::string& family);
  // Every inode whose node `match` accepts, with its node: one pass over
  // the table, for rare wide changes (fs/change_listener.h). `match` runs
  // under the table's lock: it must not call back into the table.
  std::vector<std::pair<uint64_t, Node>> Matching(
      const std::function<bool(const Node&)>& match);

  // For tests and stats.
  uint64_t LookupCount(uint64_t ino);
  size_t size();

 private:
  struct Entry {
    Node node;
    uint64_t lookups = 0;
    int64_t opened_timestamp = INT64_MIN;
    uint64_t opened_size = 0;
    bool retired = false;
    uint64_t stat_ino = 0;  // StatIno; 0: the inode's own number
  };

  // Takes `ino` (whose entry is `e`) off retired_.
  void EraseRetired(uint64_t ino, Entry& e) REQUIRES(mu_);
  // `ino` of `node` moved (Retire, Restore): remembers the number stat
  // shows for the cell.
  void NoteMoved(const Node& node, uint64_t ino) REQUIRES(mu_);

  Mutex mu_;
  // Set at the first Retire: until then StatIno, RetiredAlike and Retired
  // (on every reply, commit and open) take no lock.
  std::atomic<bool> ever_retired_{false};
  uint64_t next_inode_ GUARDED_BY(mu_) = kRootInode + 1;
  std::unordered_map<uint64_t, Entry> by_inode_ GUARDED_BY(mu_);
  std::unordered_map<Node, uint64_t, NodeHash> by_node_ GUARDED_BY(mu_);
  // Retired inodes (Retire) by the cell they follow.
  std::unordered_multimap<Node, uint64_t, NodeHash> retired_ GUARDED_BY(mu_);
  // The number stat shows for each cell whose inode moved: a new inode of
  // the cell shows it too, also when the kernel forgot the moved one
  // before the new one was looked up (an open that moves retires an
  // inode no one else holds, and its FORGET can come first). Entries of
  // cells with no inode left are pruned as the map grows.
  struct Moved {
    uint64_t stat_ino;
    std::chrono::steady_clock::time_point at;
  };
  std::unordered_map<Node, Moved, NodeHash> moved_ GUARDED_BY(mu_);
  size_t prune_at_ GUARDED_BY(mu_) = 4096;
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_INODE_TABLE_H_
