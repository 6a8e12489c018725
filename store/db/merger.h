// A merging iterator: the sorted union of several internal-key iterators
// (memtables and SSTables), in memcmp order of keys.
//
// Thread safety: one thread at a time, like every Iterator.
#ifndef TABLETFS_STORE_DB_MERGER_H_
#define TABLETFS_STORE_DB_MERGER_H_

#include <memory>
#include <vector>

#include "store/util/iterator.h"

namespace tabletfs {

// Takes ownership of the children. Equal keys from different children are
// all returned, in child order.
std::unique_ptr<Iterator> NewMergingIterator(
    std::vector<std::unique_ptr<Iterator>> children);

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_MERGER_H_
