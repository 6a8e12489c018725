// WritePath: the one place where open files are read, written, committed
// and released (DESIGN.md "Writing"), for every area that accepts writes:
// cells of the main tree through their shared open state (fs/open_cells.h),
// and files that buffer their value in the handle (`.schema` files), whose
// area checks and commits the buffer (Area::CheckWrite, Area::Commit).
// Commits happen at each close (FLUSH) and fsync of a descriptor with
// something new, and at RELEASE for what is left; open states follow their
// cell through unlink and rename (LockedCells).
//
// Thread safety: every method may be called from any thread. A cell's or a
// handle's mutex is taken here, first in the lock order of
// fs/inode_table.h; methods marked REQUIRES are called with it held.
#ifndef TABLETFS_FS_WRITE_PATH_H_
#define TABLETFS_FS_WRITE_PATH_H_

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fs/errors.h"
#include "fs/file_handle.h"
#include "fs/filesystem.h"
#include "fs/open_cells.h"
#include "fs/path_map.h"
#include "store/util/mutex.h"

namespace tabletfs::fs {

class WritePath {
 public:
  // REQUIRES: `fs` outlives the write path.
  explicit WritePath(Filesystem* fs) : fs_(fs) {}
  WritePath(const WritePath&) = delete;
  WritePath& operator=(const WritePath&) = delete;

  // ---- Opening cells of the main tree on their shared open state ----
  // open(2) of the cell `n` (inode `ino`); `write`: for writing.
  FsError OpenCellFile(uint64_t ino, const Node& n, const OpenRequest& request,
                       bool write, Opened* out);
  // create(2) of the cell `n`.
  FsError CreateCell(const Node& n, const OpenRequest& request, Opened* out,
                     Entry* entry);

  // ---- Descriptors ----
  FsError Read(FileHandle& h, off_t offset, size_t size, std::string* out);
  FsError Write(FileHandle& h, const char* buf, size_t size, off_t off);
  // ftruncate through the writable descriptor `h`.
  FsError Truncate(FileHandle& h, uint64_t size);
  // FLUSH (`at_close`) and FSYNC: commits what the descriptor has new (at a
  // close, the empty value of a fresh open waits for RELEASE).
  FsError CommitIfDue(FileHandle& h, bool at_close);
  // RELEASE: commits what is left and detaches the descriptor.
  void Release(FileHandle& h);
  // fallocate is refused: a writer refuses its writes from then on.
  void Fallocate(FileHandle& h);
  // At unmount: commits what the handles hold (as RELEASE would).
  void CommitAtUnmount(const std::vector<std::shared_ptr<FileHandle>>& files);
  // The path of the file `h` writes to, for log lines.
  static std::string PathOf(FileHandle& h);
  // The size descriptor `h` sees (also after its file was removed).
  static uint64_t SizeOf(FileHandle& h);
  // Whether `h` reads a cell's committed versions (not a writer).
  static bool IsCellReader(FileHandle& h);
  // The inode whose open state the descriptor `h` (if any) of inode `ino`
  // uses: another inode's, for a writer that joined the writers there
  // (OpenCellFile); else `ino`.
  static uint64_t StateInode(uint64_t ino, const FileHandle* h) {
    return h != nullptr && h->cell() ? h->cell()->ino() : ino;
  }

  // ---- Commits ----
  // Commits the open cell for its descriptor `descriptor` (0: by path) and
  // invalidates what the kernel cached of it.
  FsError CommitCell(OpenCell& c, uint64_t descriptor) REQUIRES(c.mu());
  // Commits a handle's buffer through its area.
  FsError Commit(FileHandle& h) REQUIRES(h.mu());

  // ---- Name changes ----
  // The open states of the cells an unlink or rename changes, locked from
  // before the store is read until they follow the change, so that no close
  // commits in between (to a removed name, or to the old name of a moved
  // cell). Each is held (OpenCells::Get) while locked, so that an open of
  // the name racing with the change finds it and waits. Locked in inode
  // order (the lock order in fs/inode_table.h).
  class LockedCells {
   public:
    // The open states of `nodes` (made when none is open) and, with
    // `with_versions`, those of the Q@T names of nodes[0].
    LockedCells(Filesystem* fs, const std::vector<Node>& nodes,
                bool with_versions);
    ~LockedCells();
    LockedCells(const LockedCells&) = delete;
    LockedCells& operator=(const LockedCells&) = delete;
    const std::vector<std::shared_ptr<OpenCell>>& cells() const {
      return cells_;
    }

   private:
    Filesystem* const fs_;
    std::vector<std::shared_ptr<OpenCell>> cells_;
  };
  // As on a local disk: writers of a removed cell commit nothing more, and
  // the name is free for a new file: the next create of it gets a new inode
  // and open state, while the open descriptors keep the removed one. With
  // `with_versions` (rm Q removes every version), also the writers of its
  // Q@T names.
  void OrphanWriters(const LockedCells& locked, const Node& cell,
                     bool with_versions);
  // As on a local disk: writers of a renamed cell commit to its new name.
  void MoveWriters(const LockedCells& locked, const Node& from, const Node& to);
  // Whether `cell` was created by a descriptor still open that committed
  // nothing yet (it exists, empty, for unlink and rename).
  bool CreatedAndOpen(const LockedCells& locked, const Node& cell);

 private:
  // The version an open of `n` starts from; `value`: with its bytes, else
  // only its size (NeedsBytesAtOpen); for a `Q@T` writer, the version at
  // exactly T, for a reader, as of T.
  FsError ReadForOpen(const Node& n, bool value, bool write,
                      CommittedVersion* out);
  // OpenCellFile's passes over the open of `ino`: kFirst the open as it
  // came (it may wait for releases and move to another inode); kJoin
  // attaches it to the writers of `state_ino`, or, when they all closed,
  // names `ino` in *join; kAgain opens it on `ino` again, moving nothing.
  // Unless kJoin, a writer's open with `may_join` that finds writers of
  // the cell on another inode names that inode in *join instead.
  enum class OpenPass { kFirst, kJoin, kAgain };
  FsError OpenCellOn(uint64_t ino, const Node& n, const OpenRequest& request,
                     bool write, OpenPass pass, uint64_t state_ino,
                     bool may_join, Opened* out, std::optional<uint64_t>* join);
  // CreateCell's passes, as OpenCellOn's (kAgain creates on `ino`,
  // joining nothing).
  FsError CreateCellOn(uint64_t ino, const Node& n, const OpenRequest& request,
                       const FamilySettings& settings, OpenPass pass,
                       uint64_t state_ino, Opened* out, Entry* entry,
                       std::optional<uint64_t>* join);
  // Whether a kJoin pass may attach to `cell`, the writers' state it chose
  // for an open of `n`.
  static bool Joinable(OpenCell& cell, const Node& n) REQUIRES(cell.mu());
  // The lock a writer's open of `n` decides and attaches under (striped).
  std::mutex& AttachMutex(const Node& n);
  FsError WriteCell(FileHandle& h, const char* buf, size_t size, off_t off);
  void ReleaseCell(FileHandle& h);
  // A created cell stops being listed from memory (it is in the store, or
  // gone).
  void Unlist(OpenCell& c) REQUIRES(c.mu());

  // Readers and writers on inodes of their own (OpenCellFile): moves the
  // open of `ino` for `write` to the cell's inode of its kind when `ino`
  // holds descriptors of the other kind (for a writer: readers, or no
  // writers while another inode of the cell has them). That inode is
  // bound to `n` (InodeTable::Restore), or none is and the next lookup
  // makes one (InodeTable::Retire); the open's caller is then due to
  // retry. False when the open stays on `ino`.
  bool MoveToOwnInode(const Node& n, uint64_t ino, OpenCell& cell, bool write,
                      pid_t pid) REQUIRES(cell.mu());
  // The cell's inodes other than `ino` (`bound`, the one bound to its
  // name, and `retired`, InodeTable::Retired), each with its open state,
  // if any.
  std::vector<std::pair<uint64_t, std::shared_ptr<OpenCell>>> OtherInodes(
      uint64_t ino, std::optional<uint64_t> bound,
      const std::vector<uint64_t>& retired);
  // The inode other than `ino` on which writers of the cell are open, if
  // any: readers of `ino` then read around the page cache, as beside
  // writers on their own inode, and a writer's open that stays on `ino`
  // joins them (OpenCellFile).
  std::optional<uint64_t> WritersInode(const Node& n, uint64_t ino);
  // Opens moved to another inode of the cell are due to come again from
  // the same thread (the kernel's LOOKUP_REVAL retry): TakeDue says
  // whether this open is that retry (it is never moved again: its ESTALE
  // would reach the caller). For kRetryDue after a writer moved, readers
  // of the cell read around the page cache (WriterDue), so the retry
  // finds no page-cache reader where it lands.
  void SetDue(const Node& n, pid_t pid, bool write);
  bool TakeDue(const Node& n, pid_t pid, bool write);
  bool WriterDue(const Node& n);

  Filesystem* const fs_;
  struct Due {
    pid_t pid;
    bool write;
    std::chrono::steady_clock::time_point at;  // when the open moved
  };
  // Taken under a cell's mu(), before the inode table's and the open
  // cells registry's locks.
  std::array<std::mutex, 64> attach_mu_;
  Mutex due_mu_;  // a leaf: taken under a cell's mu(), takes nothing
  std::unordered_map<Node, std::vector<Due>, NodeHash> due_ GUARDED_BY(due_mu_);
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_WRITE_PATH_H_
