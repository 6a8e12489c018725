// OpenCell: the one open state of a cell that every descriptor of it shares
// (DESIGN.md "Writing"), and OpenCells, the registry that finds it by inode.
// This is the write path of cells, in one place.
//
// Writers. All descriptors that write a cell share one pending value, as
// on a local disk, where each writer sees the others' bytes at once. It
// starts from the newest committed value (empty after O_TRUNC or when the
// cell is created), read from the store when a descriptor first needs it
// (so a write-only open alone, as `touch` does, reads no bytes); random
// writes and truncates change it. Commit() stores
// the whole pending value as one new version, stamped at least 1 µs after
// the newest version the cell has, so that a write always becomes current;
// a commit of exactly the newest version's bytes adds no version.
// The caller (fs/write_path.cc) commits on each close (FLUSH), fsync and
// msync(MS_SYNC) of a descriptor when something is new, and at RELEASE for
// what is left (the last unmap of a closed descriptor). A created or
// truncated open that has written nothing commits its empty value at
// RELEASE (or fsync), not at a close: the shell's `>` closes the original
// descriptor after dup2 and before the command writes, and that close must
// not show an empty version while the command runs. A commit never
// drops bytes another descriptor wrote: there is only one value.
//
// Appenders. While no descriptor of the cell reads or writes at an offset,
// the O_APPEND descriptors keep only the bytes appended since the last
// commit, in the order they were written (one list for the cell, as the
// one value: a local file holds them in that order), and a commit through
// any of them stores them all through the store's atomic append, so
// appenders in several processes never lose a line and a close commits
// what every descriptor appended before it. When a descriptor needs the
// whole value (a plain writer opens, an appender reads or truncates, an
// O_APPEND|O_TRUNC open), the pending appends are folded into the one
// pending value and appends go to its end from then on (never to the
// offset the kernel sends: for O_APPEND that is the inode's size as the
// kernel last saw it, which a reader's stat sets to the committed size).
//
// Refusals. A descriptor whose write was refused (EFBIG, ENOSPC, EIO, or a
// refused fallocate) commits nothing from then on and its later writes fail
// with the same errno. When the cell's last commit was the empty value a
// created or truncated open made before its first write (an fsync before
// writing), the refusal removes that version again: an existing cell keeps
// its value and a created name is not kept.
//
// Readers. A descriptor opened read-only never sees the pending value: each
// Read() returns bytes of the newest committed version at that moment. The
// version is cached and read again from the store only after the cell
// changed (Changed(), called wherever the daemon invalidates the kernel's
// copy of the inode, and by each commit) or a reader's open read a newer
// one (Attach: an open follows every commit the store shows, also one
// whose Changed() is still to come). A cell removed while open keeps
// serving what its readers last saw, as an unlinked file does. A reader
// without the page cache (opened while writers were) keeps the version it
// started a pass from: it moves to the newest at a read from offset 0 or
// past the end of its version, so that a read() the kernel splits into
// several requests, and a sequential pass like `cat`, sees one version,
// while `tail -f` (reading past the end) follows a growing cell.
//
// Thread safety: OpenCells may be used from any thread. Every OpenCell
// method REQUIRES its mu() except Changed() and the const accessors; the
// store is called with mu() held (commits of one cell are serialized), so
// mu() comes before every other fs lock, the registry's included: Put() and
// Changed() are called with a cell's mu() held, and the registry never takes
// a cell's mu() (see the lock order in fs/inode_table.h).
#ifndef TABLETFS_FS_OPEN_CELLS_H_
#define TABLETFS_FS_OPEN_CELLS_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fs/errors.h"
#include "fs/path_map.h"
#include "store/bigtable.h"
#include "store/util/mutex.h"

namespace tabletfs::fs {

// The newest committed version of one cell as a caller read it.
struct CommittedVersion {
  bool exists = false;
  int64_t timestamp = 0;
  // The value's size; `value` holds the bytes unless `value_read` is false
  // (writers that do not read load the bytes when they first need them).
  uint64_t size = 0;
  bool value_read = true;
  std::string value;
};

class OpenCell {
 public:
  enum class Access { kRead, kWrite, kAppend };

  // REQUIRES: `db` outlives the cell. `node` is a cell of the main tree
  // (Q or Q@T).
  OpenCell(Bigtable* db, uint64_t ino, Node node, size_t max_value_bytes);
  OpenCell(const OpenCell&) = delete;
  OpenCell& operator=(const OpenCell&) = delete;

  uint64_t ino() const { return ino_; }
  Mutex* mu() RETURN_CAPABILITY(mu_) { return &mu_; }

  // ---- Descriptors ----
  // Adds a descriptor; returns its id. `newest` is the cell's newest
  // committed version, read by the caller with mu() held (for Q@T writers:
  // the version at exactly T). `truncate`: O_TRUNC empties the pending
  // value. `create`: the open creates the cell (it then commits an empty
  // value even when nothing is written). `page_cache`: the kernel caches
  // the descriptor's pages (writers: mappings; readers: see above).
  uint64_t Attach(Access access, CommittedVersion newest, bool truncate,
                  bool create, bool page_cache) REQUIRES(mu_);
  // Removes a descriptor (after its last commit).
  void Detach(uint64_t id) REQUIRES(mu_);
  bool HasWriters() const REQUIRES(mu_) { return writers_ > 0; }
  bool HasReaders() const REQUIRES(mu_) {
    return descriptors_.size() > static_cast<size_t>(writers_);
  }
  int writers() const REQUIRES(mu_) { return writers_; }
  // Readers that read through the page cache (opened while no writer was).
  bool HasCachedReaders() const REQUIRES(mu_) { return cached_readers_ > 0; }
  bool HasPageCacheWriters() const REQUIRES(mu_) {
    return page_cache_writers_ > 0;
  }
  bool IsWriter(uint64_t id) const REQUIRES(mu_);
  bool IsPageCache(uint64_t id) const REQUIRES(mu_);
  // The same counts without the lock, for an open of another inode of the
  // cell, which holds that inode's cell lock (WritePath::MoveToOwnInode):
  // a snapshot, exact once the opens and releases in flight are done.
  bool WritersNow() const {
    return writers_now_.load(std::memory_order_acquire) > 0;
  }
  bool IdleNow() const {
    return descriptors_now_.load(std::memory_order_acquire) == 0;
  }

  // ---- Data ----
  // Reads up to `size` bytes at `offset`: the pending value for a writer,
  // the newest committed version for a reader.
  FsError Read(uint64_t id, off_t offset, size_t size, std::string* out)
      REQUIRES(mu_);
  // EFBIG past the value limit (the descriptor is then refused).
  FsError Write(uint64_t id, off_t offset, std::string_view data)
      REQUIRES(mu_);
  // Through descriptor `id`, or (id 0) by path while writers are open.
  FsError Truncate(uint64_t id, uint64_t size) REQUIRES(mu_);
  // The descriptor's write was refused with `err`: see "Refusals" above.
  void Refuse(uint64_t id, int err) REQUIRES(mu_);
  // What a stat shows while writers hold something not committed: the
  // pending size (the writers' fstat must see their own writes). nullopt
  // when nothing is pending.
  std::optional<uint64_t> PendingSize() const REQUIRES(mu_);
  // The size of the version readers see (nullopt: never loaded).
  std::optional<uint64_t> CommittedSize() const REQUIRES(mu_);
  // The size descriptor `id` sees (also after the cell was removed).
  uint64_t SizeFor(uint64_t id) const REQUIRES(mu_);
  // The size the next commit would give (for the space check).
  uint64_t SizeAfterWrite(uint64_t id, off_t offset, size_t size) const
      REQUIRES(mu_);

  // ---- Commits ----
  // Whether a commit through `id` is due: something written or truncated
  // since the last commit (or created and never committed), the
  // descriptor a writer not refused, the cell not removed.
  bool NeedsCommit(uint64_t id) const REQUIRES(mu_);
  // At a close (FLUSH): NeedsCommit(), except that the empty value of a
  // created or truncated open that has written nothing is due only at its
  // RELEASE (or an fsync), when no dup of the descriptor can write any more.
  bool NeedsCommitAtClose(uint64_t id) const REQUIRES(mu_);
  // At RELEASE, which the kernel sends after the close returned (and after
  // the last unmap): only what came through descriptor `id` since its close
  // (a mapping's pages written back at the unmap) is due, never what other
  // writers wrote since; they commit at their own close. (The kernel sends
  // written-back pages through the first writable descriptor of the inode
  // it finds: when another is open, that one commits them at its close.)
  bool NeedsCommitAtRelease(uint64_t id) const REQUIRES(mu_);
  // The descriptor's close (FLUSH) or fsync was served: what it wrote so far
  // is committed or was due at that moment (for a close: unless only the
  // empty value was due, which then waits for RELEASE).
  void Flushed(uint64_t id, bool at_close) REQUIRES(mu_);
  // Whether a descriptor was closed with only its empty value due, which
  // its RELEASE commits. The kernel sends RELEASE after the last close()
  // returned, so `: > f; cat f` could open f before it arrives.
  bool HasEmptyAwaitingRelease() const REQUIRES(mu_);
  // Waits (releasing mu()) until no such descriptor is left, at most
  // `timeout`; false on timeout (a dup of the descriptor is still open,
  // as while `cmd > f` runs: readers then see the old value). Only a
  // multi-threaded session may wait: RELEASE is served by another thread.
  bool AwaitEmptyRelease(std::chrono::microseconds timeout) REQUIRES(mu_);
  // Waits (releasing mu()) while a reader reads through the page cache, at
  // most `timeout`: a writer's open right after `cat f` then keeps the
  // cell's inode (fs/write_path.cc, readers and writers on inodes of
  // their own) once that reader's RELEASE came.
  // Readers send no FLUSH (FOPEN_NOFLUSH), so a closed reader is told from
  // an open one only by its RELEASE: beside a reader still open the wait
  // runs out.
  void AwaitCachedReadersRelease(std::chrono::microseconds timeout)
      REQUIRES(mu_);
  // Commits for descriptor `id`; on failure the cell's later writes report
  // EIO. *committed_at gets the new version's timestamp.
  FsError Commit(uint64_t id, int64_t* committed_at) REQUIRES(mu_);

  // ---- Names ----
  const Node& node() const REQUIRES(mu_) { return node_; }
  // The cell was removed (or replaced by a rename onto it) while open:
  // commit nothing from now on; readers keep what they saw.
  void Unlinked() REQUIRES(mu_) { unlinked_ = true; }
  bool unlinked() const REQUIRES(mu_) { return unlinked_; }
  // The cell was renamed to `to`: later commits go there.
  void Renamed(Node to) REQUIRES(mu_) {
    node_ = std::move(to);
    placeholder_timestamp_.reset();
  }
  // The cell was created by an open and is listed from memory until its
  // last writer closes (fs/ephemeral_dirs.h).
  void set_listed_while_open(bool listed) REQUIRES(mu_) {
    listed_while_open_ = listed;
  }
  bool listed_while_open() const REQUIRES(mu_) { return listed_while_open_; }
  // Whether a commit of the cell through this open state ever succeeded.
  bool committed_once() const REQUIRES(mu_) { return committed_once_; }
  // A utimensat while data is pending (cp -a sets times before it closes):
  // the mtime of the version the next commit makes (fs/mtimes.h).
  void SetPendingMtime(int64_t micros) REQUIRES(mu_) {
    pending_mtime_ = micros;
  }
  std::optional<int64_t> pending_mtime() const REQUIRES(mu_) {
    return pending_mtime_;
  }
  // After a commit: the pending mtime for its version, once.
  std::optional<int64_t> TakePendingMtime() REQUIRES(mu_) {
    std::optional<int64_t> m = pending_mtime_;
    pending_mtime_.reset();
    return m;
  }
  bool HasPending() const REQUIRES(mu_) { return PendingSize().has_value(); }

  // ---- The kernel's attributes ----
  // Attributes of the cell went to the kernel with a nonzero timeout while
  // writers were open: the size in them may be the one before the next
  // commit (appenders keep their bytes out of it), and the kernel trusts it
  // until the commit's notice arrives, so that commit's reply must wait for
  // the notice. A write drops the kernel's size and times itself (the
  // kernel does so after every write reply), so it clears the mark.
  void MarkKernelAttrs() REQUIRES(mu_) { kernel_attrs_ = true; }
  void KernelAttrsDroppedByWrite() REQUIRES(mu_) { kernel_attrs_ = false; }
  // Whether the mark is set; clears it.
  bool TakeKernelAttrs() REQUIRES(mu_) {
    return std::exchange(kernel_attrs_, false);
  }

  // The cell may have changed in the store (any thread, no lock): readers
  // read it again.
  void Changed() { generation_.fetch_add(1, std::memory_order_relaxed); }

 private:
  struct Descriptor {
    Access access = Access::kRead;
    bool page_cache = false;
    bool refused = false;
    int refused_errno = 0;
    // Wrote (or truncated, or created the cell) since its last close.
    bool wrote = false;
    // Opened with O_TRUNC or created the cell: while nothing is written,
    // its close leaves the empty value to its RELEASE.
    bool opened_fresh = false;
    // Closed while only its empty value was due (see Flushed()).
    bool empty_awaits_release = false;
    // A reader without the page cache: the version it reads, and where
    // its last READ ended (OpenCell::Read).
    std::shared_ptr<const std::string> pinned;
    uint64_t read_end = 0;
  };

  Descriptor* Find(uint64_t id) REQUIRES(mu_);
  const Descriptor* Find(uint64_t id) const REQUIRES(mu_);
  // The pending appends, concatenated in write order.
  std::string PendingAppends() const REQUIRES(mu_);
  // Faults in `buffer`'s room up to past `end` (a large pending value's
  // next bytes) in one call; bytes below populated_ are done.
  void PopulateRoom(std::string* buffer, uint64_t end) REQUIRES(mu_);
  // Folds the committed value and the pending appends into value_.
  void Load(std::string committed) REQUIRES(mu_);
  FsError LoadFromStore() REQUIRES(mu_);
  // Re-reads the newest committed version for readers when it changed.
  FsError RefreshCommitted() REQUIRES(mu_);
  FsError CommitValue(int64_t* committed_at) REQUIRES(mu_);
  // Stores every pending append (unloaded append mode) at the end of the
  // newest version, through the store's atomic append.
  FsError CommitAppend(int64_t* committed_at) REQUIRES(mu_);
  // The newest committed version: for a `Q@T` cell, the one at exactly T
  // (what its writers start from), or with `as_of`, the newest at or
  // before T (what its readers read).
  FsError ReadNewest(CommittedVersion* out, bool as_of = false) REQUIRES(mu_);
  // Only the empty value of a fresh open is due through `id`: nothing was
  // written or truncated since it was created or truncated.
  bool OnlyEmptyDue(uint64_t id) const REQUIRES(mu_);
  void Fail(const FsError& e) REQUIRES(mu_) { failed_ = e; }
  // CondVar::WaitFor names the CondVar's own mutex, which the analysis
  // cannot match with mu_.
  bool WaitDetached(std::chrono::microseconds timeout) REQUIRES(mu_)
      NO_THREAD_SAFETY_ANALYSIS {
    return detached_.WaitFor(timeout);
  }

  Bigtable* const db_;
  const uint64_t ino_;
  const size_t max_value_bytes_;
  std::atomic<uint64_t> generation_{1};

  mutable Mutex mu_;
  // Signalled when a descriptor detaches (AwaitEmptyRelease).
  CondVar detached_{&mu_};
  Node node_ GUARDED_BY(mu_);
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Descriptor> descriptors_ GUARDED_BY(mu_);
  int writers_ GUARDED_BY(mu_) = 0;
  int page_cache_writers_ GUARDED_BY(mu_) = 0;
  int cached_readers_ GUARDED_BY(mu_) = 0;
  // writers_ and descriptors_.size(), for WritersNow() and IdleNow().
  std::atomic<int> writers_now_{0};
  std::atomic<size_t> descriptors_now_{0};

  // The pending value (valid once loaded_).
  bool loaded_ GUARDED_BY(mu_) = false;
  std::string value_ GUARDED_BY(mu_);
  // The buffer PopulateRoom last populated, and how far.
  uintptr_t populated_base_ GUARDED_BY(mu_) = 0;
  uint64_t populated_ GUARDED_BY(mu_) = 0;
  // Writes and truncates so far, and how many of them are committed.
  uint64_t changes_ GUARDED_BY(mu_) = 0;
  uint64_t committed_changes_ GUARDED_BY(mu_) = 0;
  // Created or truncated and not committed since.
  bool fresh_ GUARDED_BY(mu_) = false;
  bool unlinked_ GUARDED_BY(mu_) = false;
  bool listed_while_open_ GUARDED_BY(mu_) = false;
  bool kernel_attrs_ GUARDED_BY(mu_) = false;
  bool committed_once_ GUARDED_BY(mu_) = false;
  FsError failed_ GUARDED_BY(mu_);
  std::optional<int64_t> pending_mtime_ GUARDED_BY(mu_);
  // The timestamp of the empty version the last commit made for a fresh
  // open that had written nothing: the next commit replaces it (so
  // `echo x > new` makes one version) and a refusal removes it.
  std::optional<int64_t> placeholder_timestamp_ GUARDED_BY(mu_);
  // Unloaded append mode: the bytes appended since the last commit, in
  // write order, each run with the descriptor that appended it (a refusal
  // drops that descriptor's runs).
  std::vector<std::pair<uint64_t, std::string>> appends_ GUARDED_BY(mu_);
  uint64_t appends_size_ GUARDED_BY(mu_) = 0;
  // Size of the committed value plus the pending appends (unloaded append
  // mode), so that write() refuses a value past the limit early.
  uint64_t append_base_ GUARDED_BY(mu_) = 0;
  // The newest version's timestamp as last known (commits stamp above it).
  std::optional<int64_t> newest_timestamp_ GUARDED_BY(mu_);
  // The newest version's size and hash, when known, so that a commit of
  // the same bytes adds no version (a second `cp -a` or `tar x`).
  std::optional<uint64_t> newest_size_ GUARDED_BY(mu_);
  std::optional<uint64_t> newest_hash_ GUARDED_BY(mu_);
  uint64_t newest_generation_ GUARDED_BY(mu_) = 0;

  // What readers see: the newest committed version, as of generation
  // committed_generation_.
  std::shared_ptr<const std::string> committed_ GUARDED_BY(mu_);
  uint64_t committed_generation_ GUARDED_BY(mu_) = 0;
};

class OpenCells {
 public:
  OpenCells(Bigtable* db, size_t max_value_bytes)
      : db_(db), max_value_bytes_(max_value_bytes) {}
  OpenCells(const OpenCells&) = delete;
  OpenCells& operator=(const OpenCells&) = delete;

  // The open state of `ino` (made for `node` when none is open), counting
  // one more holder. Pair with Put().
  std::shared_ptr<OpenCell> Get(uint64_t ino, const Node& node);
  void Put(const std::shared_ptr<OpenCell>& cell);
  // The open state of `ino`, if any (not counted).
  std::shared_ptr<OpenCell> Find(uint64_t ino);
  // Every open state (for rename, unlink and unmount).
  std::vector<std::shared_ptr<OpenCell>> All();
  // The cell of `ino` may have changed in the store.
  void Changed(uint64_t ino) {
    if (auto c = Find(ino)) c->Changed();
  }

 private:
  struct Entry {
    std::shared_ptr<OpenCell> cell;
    int holders = 0;
  };
  Bigtable* const db_;
  const size_t max_value_bytes_;
  Mutex mu_;
  std::unordered_map<uint64_t, Entry> by_ino_ GUARDED_BY(mu_);
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_OPEN_CELLS_H_
