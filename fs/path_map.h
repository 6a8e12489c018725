// The path <-> key mapping of DESIGN.md "The filesystem namespace": what each
// name in each directory refers to (a table, a row, a family, a cell, a cell
// version, a `.schema` entry) and the name each node is listed under. A pure
// mapping: no FUSE, no store access. Whether a node exists is decided by the
// caller (the namespace areas, fs/area.h) against the store.
//
// Thread safety: plain values and pure functions.
#ifndef TABLETFS_FS_PATH_MAP_H_
#define TABLETFS_FS_PATH_MAP_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fs/errors.h"

namespace tabletfs::fs {

enum class NodeKind : uint8_t {
  kRoot,          // MOUNT/
  kTable,         // MOUNT/TABLE/
  kRow,           // MOUNT/TABLE/ROW/
  kFamily,        // MOUNT/TABLE/ROW/FAMILY/
  kCell,          // MOUNT/TABLE/ROW/FAMILY/QUALIFIER[@T]
  kSchemaRoot,    // MOUNT/.schema/
  kSchemaTable,   // MOUNT/.schema/TABLE/
  kSchemaFamily,  // MOUNT/.schema/TABLE/FAMILY (a file)
  kAtRoot,        // MOUNT/.at/ (lists nothing)
  kPrefixRoot,    // MOUNT/.prefix/ (lists nothing)
  kPrefixTable,   // MOUNT/.prefix/TABLE/ (lists nothing: names are prefixes)
  kChangesRoot,   // MOUNT/.changes/ (lists nothing)
  kChangesFile,   // MOUNT/.changes/TABLE[@T] (a file: the table's changes)
  kStatusDir,     // MOUNT/.tabletfs/
  kStatusFile,    // MOUNT/.tabletfs/NAME
  // The staging area of row-atomic commits (fs/stage.h):
  kStageRoot,    // MOUNT/.stage/ (lists the tables with staged rows)
  kStageTable,   // MOUNT/.stage/TABLE/
  kStageRow,     // MOUNT/.stage/TABLE/ROW/
  kStageFamily,  // MOUNT/.stage/TABLE/ROW/FAMILY/
  kStageCell,    // MOUNT/.stage/TABLE/ROW/FAMILY/QUALIFIER (a file)
  // A staged deletion or condition (a file; `name` says which):
  //   ROW/@delete        the row (family empty, name "delete")
  //   ROW/FAMILY@delete  the family's cells in the row (name "delete")
  //   ROW/@if-unchanged  the commit's condition (name "if-unchanged")
  kStageRowMark,
  kStageCellMark,  // ROW/FAMILY/QUALIFIER@delete: the cell
  kCommitRoot,     // MOUNT/.commit/ (lists nothing)
  kCommitTable,    // MOUNT/.commit/TABLE/ (lists nothing)
  kCommitRow,      // MOUNT/.commit/TABLE/ROW: a rename target, never exists
};

// Which tree a node of the data (kRoot..kCell) belongs to:
//   kCurrent   MOUNT/...            the newest versions, read-write
//   kVersions  MOUNT/.versions/...  every version as QUALIFIER@T (kCell
//                                   with `at` = exactly T), newest first
//   kAt        MOUNT/.at/T/...      read-only, as of time view_at
//   kPrefix    MOUNT/.prefix/TABLE/P/...  read-only, the newest versions of
//                                   the rows whose key starts with
//                                   view_prefix; the view's kTable node is
//                                   the directory P
enum class View : uint8_t { kCurrent, kVersions, kAt, kPrefix };

// One node of the namespace. Which fields are set depends on `kind`:
// table for everything below the root, row from kRow, family from kFamily
// (and kSchemaFamily), qualifier for kCell. `at` is set for `QUALIFIER@T`.
struct Node {
  NodeKind kind = NodeKind::kRoot;
  std::string table;
  std::string row;
  std::string family;
  std::string qualifier;
  std::optional<int64_t> at;
  View view = View::kCurrent;
  int64_t view_at = 0;      // kAt
  std::string view_prefix;  // kPrefix (a row key prefix, not empty)
  std::string name;         // kStatusFile; kStage*Mark: what the mark says

  bool operator==(const Node& other) const = default;

  bool IsDirectory() const {
    return kind != NodeKind::kCell && kind != NodeKind::kSchemaFamily &&
           kind != NodeKind::kStatusFile && kind != NodeKind::kChangesFile &&
           kind != NodeKind::kStageCell && kind != NodeKind::kStageRowMark &&
           kind != NodeKind::kStageCellMark;
  }
  // The node one level up (the root for the root).
  Node Parent() const;
  // "table/row-name/family/qualifier@T" with names as listed, for log lines.
  std::string DebugPath() const;
};

struct NodeHash {
  size_t operator()(const Node& node) const;
};

// The reserved names of the root: reached by name, never listed.
inline constexpr std::string_view kSchemaDirName = ".schema";
inline constexpr std::string_view kVersionsDirName = ".versions";
inline constexpr std::string_view kAtDirName = ".at";
inline constexpr std::string_view kPrefixDirName = ".prefix";
inline constexpr std::string_view kChangesDirName = ".changes";
inline constexpr std::string_view kStatusDirName = ".tabletfs";
inline constexpr std::string_view kStageDirName = ".stage";
inline constexpr std::string_view kCommitDirName = ".commit";
// The marks of the staging area: NAME@delete, @if-unchanged.
inline constexpr std::string_view kDeleteMark = "delete";
inline constexpr std::string_view kIfUnchangedMark = "if-unchanged";
// The files of `.tabletfs/` (their text: fs/status_files.h), sorted as `ls`
// lists them.
inline constexpr std::string_view kStatsFileName = "stats";
inline constexpr std::string_view kTabletsFileName = "tablets";
inline constexpr std::string_view kStatusFileNames[] = {kStatsFileName,
                                                        kTabletsFileName};

// What `name` in directory `parent` refers to. For a hashed name (a long key
// shown as "PREFIX%~HASH"), *hashed is set to the parsed name and the key
// field of *out holds only the prefix: the caller resolves it against the
// store (HashedNameMatches). Errors, per DESIGN.md "Names":
//   ENOTDIR for a name inside a file node, EINVAL for a bad name or T,
//   ENAMETOOLONG for a name longer than any listed name, ENOENT for a
//   name that cannot exist (a `.tabletfs` file we do not have, a name
//   without `@T` under `.versions`).
struct ParsedChild {
  Node node;
  bool hashed = false;
  uint64_t hash = 0;
};
FsError ParseChild(const Node& parent, std::string_view name, ParsedChild* out);

// The name `node` is listed under in its parent (ShownName of its key,
// "NAME@T" for a version). REQUIRES: node.kind != kRoot.
std::string ListedName(const Node& node);

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_PATH_MAP_H_
