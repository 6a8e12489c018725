// Iterator: the internal sorted key/value stream that memtables, SSTable
// blocks, SSTables and merges all present. Keys are internal keys (see
// store/doc/key_format.md) compared bytewise (memcmp order).
//
// Thread safety: one thread at a time.
#ifndef TABLETFS_STORE_UTIL_ITERATOR_H_
#define TABLETFS_STORE_UTIL_ITERATOR_H_

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "store/status.h"

namespace tabletfs {

class Iterator {
 public:
  Iterator() = default;
  Iterator(const Iterator &) = delete;
  Iterator &operator=(const Iterator &) = delete;
  virtual ~Iterator();

  virtual bool Valid() const = 0;
  virtual void SeekToFirst() = 0;
  // Positions at the first key >= target.
  virtual void Seek(std::string_view target) = 0;
  // REQUIRES: Valid().
  virtual void Next() = 0;
  // REQUIRES: Valid(). Valid until the iterator moves.
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  // Not OK once the iterator met an error (then !Valid()).
  virtual Status status() const = 0;

  // Runs `fn` when the iterator is destroyed (releases what it pins).
  void RegisterCleanup(std::function<void()> fn);

 private:
  std::vector<std::function<void()>> cleanups_;
};

// An iterator over nothing, with the given status.
std::unique_ptr<Iterator> NewEmptyIterator(Status status = Status::OK());

}  // namespace tabletfs

#endif  // TABLETFS_STORE_UTIL_ITERATOR_H_
