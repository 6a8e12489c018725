// Stage: the rows staged for row-atomic commits (MOUNT/.stage, issue 21;
// README "Row-atomic commits"), kept in memory until `mv` onto `.commit`
// applies one of them as one row mutation (fs/stage_area.cc) or `rm -r`
// aborts it. Nothing staged is in the store, so a crash before the commit
// leaves nothing behind, and readers of the table never see staged bytes.
//
// A staged row is made by mkdir and holds family directories (made by
// mkdir, only for families of the schema), cells in them (files whose
// closed bytes are staged), and marks: `@delete` (delete the row),
// `FAMILY@delete` (delete the family's cells in the row), `Q@delete` in a
// family directory (delete the cell), `@if-unchanged` (commit only if the
// row's committed content is what it was when the row was staged). A cell
// and its `@delete` mark exclude each other: making one removes the other.
//
// The staged bytes of all rows are bounded (kMaxBytes): past it, staging a
// cell fails with ENOSPC.
//
// Thread safety: all methods may be called concurrently (one mutex). The
// file handles tracked per row are only stored here; their own locks are
// never taken under the stage's.
#ifndef TABLETFS_FS_STAGE_H_
#define TABLETFS_FS_STAGE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fs/errors.h"
#include "fs/file_handle.h"
#include "fs/path_map.h"
#include "store/cell.h"
#include "store/row_mutation.h"
#include "store/util/mutex.h"

namespace tabletfs::fs {

class Stage {
 public:
  static constexpr uint64_t kMaxBytes = 256u << 20;

  struct Cell {
    std::string value;
    int64_t staged_at = 0;             // the last close that staged it
    std::optional<int64_t> set_mtime;  // by utimensat (cp -a, rsync, tar)
  };
  struct Family {
    int64_t made = 0;
    std::map<std::string, Cell> cells;  // by qualifier
    std::set<std::string> deleted;      // qualifiers marked Q@delete
  };
  struct Row {
    uint64_t id = 0;  // unique per staging, so a commit erases its own
    int64_t made = 0;
    // The row's committed content when staging began (RowFingerprint).
    uint64_t fingerprint = 0;
    bool delete_row = false;                 // @delete
    bool if_unchanged = false;               // @if-unchanged
    std::set<std::string> deleted_families;  // FAMILY@delete
    std::map<std::string, Family> families;  // family directories
    bool Empty() const {
      return !delete_row && !if_unchanged && deleted_families.empty() &&
             families.empty();
    }
  };

  // What a stage node is, for stat.
  struct Found {
    bool directory = false;
    uint64_t size = 0;
    int64_t mtime = 0;
  };

  Stage() = default;
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;

  // ENOENT unless `node` (a kStageRow, kStageFamily, kStageCell or mark;
  // kStageTable and kStageRoot always exist here) is staged.
  FsError Find(const Node& node, Found* out);
  // mkdir of a kStageRow (`fingerprint`: the committed row now) or a
  // kStageFamily (its row must be staged). EEXIST when staged already.
  FsError Make(const Node& dir, uint64_t fingerprint, int64_t now);
  // Stages `value` as the cell's bytes (kStageCell), or a mark; removes the
  // opposite of a cell (Q and Q@delete). The mtime utimensat set is kept
  // when `keep_mtime` (a close after cp -a's futimens), else dropped (a
  // create or truncate). ENOENT when its row or family directory is not
  // staged (committed or aborted meanwhile); ENOSPC past kMaxBytes.
  FsError Put(const Node& node, std::string value, int64_t now,
              bool keep_mtime = false);
  // rm of a cell or a mark, rmdir of a family directory or a row (ENOTEMPTY
  // unless empty).
  FsError Remove(const Node& node);
  // A cell's new name in the same row (rsync's temporary file); replaces
  // the destination. EXDEV across rows.
  FsError Rename(const Node& from, const Node& to);
  FsError SetMtime(const Node& cell, int64_t micros);
  FsError Truncate(const Node& cell, uint64_t size, int64_t now);
  // The staged value of a cell.
  FsError Value(const Node& cell, std::string* out);

  // The names in a stage directory, sorted: tables with staged rows, rows,
  // a row's family directories and marks, a family's cells and marks.
  std::vector<std::pair<std::string, Node>> List(const Node& dir);

  // A copy of the staged row (ENOENT when none), and its removal once
  // committed, when it is still the staging `id`.
  FsError Copy(const std::string& table, const std::string& row, Row* out);
  void Erase(const std::string& table, const std::string& row, uint64_t id);

  // The open write handles of staged files of a row: the commit refuses
  // while one holds bytes not staged yet, and detaches them after.
  void Track(const Node& node, std::weak_ptr<FileHandle> h);
  std::vector<std::shared_ptr<FileHandle>> Handles(const std::string& table,
                                                   const std::string& row);

  // Bytes staged in all rows.
  uint64_t bytes();

 private:
  using RowKey = std::pair<std::string, std::string>;  // table, row
  Row* FindRow(const Node& n) REQUIRES(mu_);
  Family* FindFamily(const Node& n) REQUIRES(mu_);
  Cell* FindCell(const Node& n) REQUIRES(mu_);

  Mutex mu_;
  std::map<RowKey, Row> rows_ GUARDED_BY(mu_);
  std::map<RowKey, std::vector<std::weak_ptr<FileHandle>>> handles_
      GUARDED_BY(mu_);
  uint64_t bytes_ GUARDED_BY(mu_) = 0;
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
};

// The mutation a staged row commits: its row deletion, family deletions,
// cell deletions, then its cells, in that order, every cell at `timestamp`
// (kServerTimestamp: the store's).
RowMutation StagedMutation(const std::string& row, const Stage::Row& staged,
                           int64_t timestamp);

// A fingerprint of a row's content (every visible version: column,
// timestamp, value), to tell whether it changed.
uint64_t RowFingerprint(const tabletfs::Row& row);

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_STAGE_H_
