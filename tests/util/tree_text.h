// TreeText: a directory tree as text, for tests that check a request
// changed nothing (compare the text before and after).
//
// Thread safety: a free function with no state; the tree should not change
// while it is read.
#ifndef TABLETFS_TESTS_UTIL_TREE_TEXT_H_
#define TABLETFS_TESTS_UTIL_TREE_TEXT_H_

#include <string>

namespace tabletfs::testing {

// ROOT/rel and everything below it, one line per entry in name order: a
// directory with its mode, a file with its mode, mtime and content; an
// entry that cannot be read with the error ("" is ROOT itself).
std::string TreeText(const std::string& root, const std::string& rel);

}  // namespace tabletfs::testing

#endif  // TABLETFS_TESTS_UTIL_TREE_TEXT_H_
