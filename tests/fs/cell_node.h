// A cell of the main tree, t/r/f/Q, for the tests of fs/ tables keyed by
// node (InodeTable, LockTable).
#ifndef TABLETFS_TESTS_FS_CELL_NODE_H_
#define TABLETFS_TESTS_FS_CELL_NODE_H_

#include <string>
#include <utility>

#include "fs/path_map.h"
#include "tests/util/gcc_bug_105329.h"

namespace tabletfs::fs {

// GCC bug 105329: a false -Wrestrict in the short-string assignments below.
TABLETFS_GCC_BUG_105329_BEGIN
inline Node Cell(std::string q) {
  Node n;
  n.kind = NodeKind::kCell;
  n.table = "t";
  n.row = "r";
  n.family = "f";
  n.qualifier = std::move(q);
  return n;
}
TABLETFS_GCC_BUG_105329_END

}  // namespace tabletfs::fs

#endif  // TABLETFS_TESTS_FS_CELL_NODE_H_
