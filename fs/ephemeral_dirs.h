// EphemeralDirs: row and family directories that exist only in memory — made
// by mkdir, or left empty by removing their last cell — until rmdir or
// unmount (DESIGN.md "Writing", "Directories"). The store has no empty rows
// or empty families in a row, so these are never persisted: a row made by
// mkdir and never written is gone after a remount.
//
// It also holds the cells created by a handle that is still open and has
// committed nothing yet, so that listings show them at once, as a local disk
// does (counted: several handles may create one name).
//
// Thread safety: all methods may be called concurrently. See the lock order
// in fs/inode_table.h.
#ifndef TABLETFS_FS_EPHEMERAL_DIRS_H_
#define TABLETFS_FS_EPHEMERAL_DIRS_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "store/util/mutex.h"

namespace tabletfs::fs {

class EphemeralDirs {
 public:
  EphemeralDirs() = default;
  EphemeralDirs(const EphemeralDirs&) = delete;
  EphemeralDirs& operator=(const EphemeralDirs&) = delete;

  void AddRow(std::string_view table, std::string_view row);
  // Adds the family directory and its row.
  void AddFamily(std::string_view table, std::string_view row,
                 std::string_view family);
  bool HasRow(std::string_view table, std::string_view row);
  bool HasFamily(std::string_view table, std::string_view row,
                 std::string_view family);
  // Whether the row holds any ephemeral family directory.
  bool RowHasFamilies(std::string_view table, std::string_view row);
  bool TableHasRows(std::string_view table);
  // The first ephemeral row of `table` greater than `after` (or >= when
  // !exclusive), for merging into a streaming listing.
  std::optional<std::string> NextRow(std::string_view table,
                                     std::string_view after, bool exclusive);
  std::vector<std::string> Families(std::string_view table,
                                    std::string_view row);
  void AddCell(std::string_view table, std::string_view row,
               std::string_view family, std::string_view qualifier);
  void RemoveCell(std::string_view table, std::string_view row,
                  std::string_view family, std::string_view qualifier);
  // The first created-and-open qualifier of the family greater than `after`
  // (or >= when !exclusive).
  std::optional<std::string> NextCell(std::string_view table,
                                      std::string_view row,
                                      std::string_view family,
                                      std::string_view after, bool exclusive);
  // Removal returns whether it was there.
  bool RemoveRow(std::string_view table, std::string_view row);
  bool RemoveFamily(std::string_view table, std::string_view row,
                    std::string_view family);
  void RemoveTable(std::string_view table);

 private:
  Mutex mu_;
  // table -> row -> families
  std::map<std::string, std::map<std::string, std::set<std::string>>,
           std::less<>>
      tables_ GUARDED_BY(mu_);
  // (table, row, family) -> qualifier -> number of open creators.
  std::map<std::tuple<std::string, std::string, std::string>,
           std::map<std::string, int>>
      cells_ GUARDED_BY(mu_);
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_EPHEMERAL_DIRS_H_
