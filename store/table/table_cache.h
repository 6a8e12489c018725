// TableCache: the open SSTables of one directory, at most max_open_tables of
// them at a time (each holds a file descriptor; the process may hold 20,000),
// evicting the least recently used.
//
// File names: dir + "/" + the file number in at least 6 decimal digits +
// ".sst" (TableFileName()). Each table's block-cache id is its file number.
//
// References: the cache holds one std::shared_ptr per cached table; Get()
// returns another. A table evicted (by LRU or Evict()) while a caller or an
// iterator still holds it stays open and valid until the last holder lets
// go, so the bound is on tables the cache keeps, not on tables in use.
//
// Thread safety: every method may be called concurrently. Two threads asking
// for the same uncached table at once may both open it; one copy is kept.
#ifndef TABLETFS_STORE_TABLE_TABLE_CACHE_H_
#define TABLETFS_STORE_TABLE_TABLE_CACHE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "store/env.h"
#include "store/status.h"
#include "store/table/table.h"
#include "store/table/table_options.h"
#include "store/util/lru_cache.h"

namespace tabletfs {

// "dir/000042.sst".
std::string TableFileName(const std::string &dir, uint64_t file_number);

class TableCache {
 public:
  // `env` is not owned and must outlive the cache. REQUIRES:
  // max_open_tables >= 1.
  TableCache(Env *env, std::string dir, TableOptions options,
             int max_open_tables);
  TableCache(const TableCache &) = delete;
  TableCache &operator=(const TableCache &) = delete;

  // The open table of `file_number`, opening it when not cached.
  // file_size: the size recorded when the table was written.
  Result<std::shared_ptr<Table>> Get(uint64_t file_number, uint64_t file_size);

  // Drops the cached table (when its file is deleted). Holders keep theirs.
  void Evict(uint64_t file_number);

  // Tables the cache holds now (<= max_open_tables).
  size_t size() const { return cache_.size(); }

 private:
  Env *const env_;
  const std::string dir_;
  const TableOptions options_;
  LruCache<uint64_t, std::shared_ptr<Table>> cache_;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_TABLE_TABLE_CACHE_H_
