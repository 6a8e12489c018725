#include "store/table/table_cache.h"

#include <cassert>
#include <cstdio>

namespace tabletfs {

std::string TableFileName(const std::string& dir, uint64_t file_number) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "/%06llu.sst",
                static_cast<unsigned long long>(file_number));
  return dir + buf;
}

TableCache::TableCache(Env* env, std::string dir, TableOptions options,
                       int max_open_tables)
    : env_(env),
      dir_(std::move(dir)),
      options_(std::move(options)),
      cache_(static_cast<size_t>(max_open_tables)) {
  assert(max_open_tables >= 1);
}

Result<std::shared_ptr<Table>> TableCache::Get(uint64_t file_number,
                                               uint64_t file_size) {
  if (std::optional<std::shared_ptr<Table>> table =
          cache_.Lookup(file_number)) {
    return std::move(*table);
  }
  // Opened without any lock held: opening reads the footer, the index and
  // the filter, and other tables' readers must not wait for that.
  std::string name = TableFileName(dir_, file_number);
  TABLETFS_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                            env_->NewRandomAccessFile(name));
  TABLETFS_ASSIGN_OR_RETURN(
      std::shared_ptr<Table> table,
      Table::Open(options_, std::move(file), file_size, file_number, name));
  cache_.Insert(file_number, table, 1);
  return table;
}

void TableCache::Evict(uint64_t file_number) { cache_.Erase(file_number); }

}  // namespace tabletfs
