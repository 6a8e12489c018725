// FileHandle: one open file (descriptor), DESIGN.md "Writing".
//
// A cell of the main tree (Q, and Q@T when written) is opened on its shared
// open state (fs/open_cells.h): the handle then holds only the OpenCell and
// its descriptor id there, and everything below about buffers applies to
// the other files (`.schema` files, status files, and versions read under
// Q@T, `.versions` and `.at`).
//
// A write handle holds the whole value in a buffer: it starts from the
// newest value (empty with O_TRUNC or when created), and random writes,
// truncates and reads go to the buffer as on a regular file. The buffer is
// committed as one new version by the caller (fs/write_path.cc) on FLUSH when
// the handle wrote since its last commit, and on RELEASE for what is left. A
// handle that created or truncated the file and wrote nothing commits an
// empty value. An O_APPEND handle keeps only the bytes written since its
// last commit and commits them through the store's atomic append. A handle
// whose write was refused commits nothing.
//
// A read handle holds the bytes of the version it opened.
//
// As on a local disk, a handle follows its file: when the cell is renamed
// while the handle is open, Renamed() points its commits at the new name;
// when the cell is removed (or replaced by a rename onto it), Unlinked()
// makes the handle commit nothing ever again, while reads and writes
// through it still work on its buffer.
//
// Thread safety: the caller holds mu() around every method but the
// accessors of const members.
#ifndef TABLETFS_FS_FILE_HANDLE_H_
#define TABLETFS_FS_FILE_HANDLE_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fs/errors.h"
#include "fs/open_cells.h"
#include "fs/path_map.h"
#include "store/util/mutex.h"

namespace tabletfs::fs {

class FileHandle {
 public:
  enum class Mode { kRead, kWrite, kAppend };

  // Where a generated file's bytes come from when they grow while it is
  // open (a `.changes` feed, fs/change_feed.h): reads go to it, not to
  // the buffer. Read() may be called from any thread.
  class Source {
   public:
    virtual ~Source() = default;
    virtual FsError Read(off_t offset, size_t size, std::string* out) = 0;
  };

  // `initial`: the value the handle starts from (ignored for kAppend).
  // `fresh`: the open created or truncated the file.
  FileHandle(uint64_t ino, Node node, Mode mode, std::string initial,
             bool fresh, size_t max_value_bytes);
  // A descriptor `descriptor` of the open cell `cell`.
  FileHandle(uint64_t ino, Node node, Mode mode,
             std::shared_ptr<OpenCell> cell, uint64_t descriptor);
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;

  uint64_t ino() const { return ino_; }
  // The node commits go to (changes with Renamed()).
  const Node& node() const REQUIRES(mu_) { return node_; }
  // The node's kind never changes.
  NodeKind kind() const { return kind_; }
  Mode mode() const { return mode_; }
  bool writable() const { return mode_ != Mode::kRead; }
  Mutex* mu() RETURN_CAPABILITY(mu_) { return &mu_; }
  // The shared open state, for cells of the main tree (else nullptr); set
  // at construction.
  const std::shared_ptr<OpenCell>& cell() const { return cell_; }
  // A read handle's source (set before the handle is shared; else nullptr).
  void set_source(std::shared_ptr<Source> source) {
    source_ = std::move(source);
  }
  const std::shared_ptr<Source>& source() const { return source_; }
  uint64_t descriptor() const { return descriptor_; }

  // Reads up to `size` bytes at `offset` of the buffer (for kAppend: of the
  // bytes not committed yet, which is all such a handle has).
  std::string Read(off_t offset, size_t size) const REQUIRES(mu_);
  // EFBIG past the value limit (the handle then commits nothing).
  FsError Write(off_t offset, std::string_view data) REQUIRES(mu_);
  FsError Truncate(uint64_t size) REQUIRES(mu_);

  // The handle creates its cell: it commits (an empty value if nothing
  // else) even when it writes nothing.
  void SetFresh() REQUIRES(mu_) { fresh_ = mode_ != Mode::kRead; }
  // A write() was refused with `err` (EFBIG here, ENOSPC or EIO before it
  // reached the handle): the handle commits nothing from now on, and later
  // writes fail with `err` too rather than vanish.
  void Refuse(int err) REQUIRES(mu_) {
    refused_ = true;
    refused_errno_ = err;
  }
  // Whether a commit is due: wrote since the last commit, or fresh and never
  // committed; never after a refused write or once unlinked.
  bool NeedsCommit() const REQUIRES(mu_);
  // The bytes to commit (the whole value, or for kAppend the appended data).
  const std::string& buffer() const REQUIRES(mu_) { return buffer_; }
  // The commit succeeded (its version has `timestamp`): nothing is due until
  // the next write.
  void Committed(int64_t timestamp) REQUIRES(mu_);
  // When the last commit was the empty value of a fresh handle that had not
  // written yet (the shell's `>` closes a dup before writing), its
  // timestamp: the next commit of this handle replaces that version instead
  // of adding one, so `echo x > new` makes one version.
  std::optional<int64_t> placeholder_timestamp() const REQUIRES(mu_) {
    return placeholder_timestamp_;
  }
  // The cell was removed while open: commit nothing from now on.
  void Unlinked() REQUIRES(mu_) { unlinked_ = true; }
  bool unlinked() const REQUIRES(mu_) { return unlinked_; }
  // The cell was renamed to `to` (same kind) while open: later commits go
  // there. The placeholder belonged to the old name and is forgotten.
  void Renamed(Node to) REQUIRES(mu_) {
    node_ = std::move(to);
    placeholder_timestamp_.reset();
  }
  // The handle created its cell, which listings show until the handle is
  // released (fs/ephemeral_dirs.h).
  void set_listed_while_open(bool listed) REQUIRES(mu_) {
    listed_while_open_ = listed;
  }
  bool listed_while_open() const REQUIRES(mu_) { return listed_while_open_; }
  // Whether a commit of this handle ever succeeded.
  bool committed_once() const REQUIRES(mu_) { return committed_once_; }
  // The size a stat through this handle shows.
  uint64_t size() const REQUIRES(mu_) { return buffer_.size(); }
  // Set when a commit failed: later writes report EIO.
  void SetFailed(FsError error) REQUIRES(mu_) { failed_ = std::move(error); }

 private:
  const uint64_t ino_;
  const NodeKind kind_;
  const Mode mode_;
  const size_t max_value_bytes_;
  const std::shared_ptr<OpenCell> cell_;
  std::shared_ptr<Source> source_;
  const uint64_t descriptor_ = 0;

  mutable Mutex mu_;
  Node node_ GUARDED_BY(mu_);
  std::string buffer_ GUARDED_BY(mu_);
  // kAppend: the size of the cell when the handle opened plus what it has
  // committed since, so that write() refuses a value past the limit early
  // (the store checks again at commit: other appenders may have grown it).
  uint64_t append_base_ GUARDED_BY(mu_) = 0;
  bool dirty_ GUARDED_BY(mu_) = false;
  bool fresh_ GUARDED_BY(mu_) = false;
  bool refused_ GUARDED_BY(mu_) = false;
  int refused_errno_ GUARDED_BY(mu_) = 0;
  bool unlinked_ GUARDED_BY(mu_) = false;
  bool listed_while_open_ GUARDED_BY(mu_) = false;
  bool committed_once_ GUARDED_BY(mu_) = false;
  FsError failed_ GUARDED_BY(mu_);
  std::optional<int64_t> placeholder_timestamp_ GUARDED_BY(mu_);
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_FILE_HANDLE_H_
