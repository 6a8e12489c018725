// A concatenating iterator over the files of one level >= 1 (sorted by key
// and disjoint): at most one file is open at a time, and a Seek touches one
// file instead of every file of the level.
//
// Thread safety: one thread at a time, like every Iterator.
#ifndef TABLETFS_STORE_DB_LEVEL_ITERATOR_H_
#define TABLETFS_STORE_DB_LEVEL_ITERATOR_H_

#include <functional>
#include <memory>
#include <vector>

#include "store/db/version_edit.h"
#include "store/util/iterator.h"

namespace tabletfs {

// `open` returns an iterator over one file (an empty iterator carrying the
// error when the file cannot be opened). `files` must be sorted by smallest
// key with disjoint ranges; the iterator keeps them alive.
std::unique_ptr<Iterator> NewLevelIterator(
    std::vector<std::shared_ptr<const FileMeta>> files,
    std::function<std::unique_ptr<Iterator>(const FileMeta&)> open);

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_LEVEL_ITERATOR_H_
