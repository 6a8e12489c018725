// Mtimes: the file mtimes that utimensat set, kept apart from the version
// timestamps (DESIGN.md "Writing"; issue 16). A cell's st_mtime is its
// newest version's commit time unless an mtime was set for exactly that
// version; setting one creates no version and reorders nothing, and a new
// version (a write) starts again from its commit time.
//
// Where they live: in the store, through the data-model interface only, so
// they survive remounts and go wherever the cells go (the local engine, a
// remote Bigtable): one table, kTable, that the filesystem never lists
// and refuses to create or name, with one family kFamily (GC: the newest
// version only). Row key: the cell's table, row, family and qualifier, each
// as a varint32 length and its bytes. Its one column (qualifier empty) has
// a version at the data version's timestamp, value the mtime in
// microseconds as 8 bytes big-endian. A record for an older version is
// dead (the newest data version has no record) and is dropped by the GC
// policy at the next record of the cell. User tables never hold any of it,
// so reads of them through the API see only user data.
//
// Root, table, row and family directories (rsync -a sets their mtimes)
// work the same way: their "version" is the fingerprint of their entries
// (fs/dir_handle.h DirTimes), and their row key holds only the table and
// row (and family) fields: a table's only the table, the root's an empty
// table name.
//
// Cost: a table none of whose cells has a set mtime costs one scan of
// kTable at the first stat in it, then nothing (remembered per table).
//
// Thread safety: all methods may be called concurrently.
#ifndef TABLETFS_FS_MTIMES_H_
#define TABLETFS_FS_MTIMES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "fs/errors.h"
#include "fs/names.h"
#include "fs/path_map.h"
#include "store/bigtable.h"
#include "store/util/mutex.h"

namespace tabletfs::fs {

class Mtimes {
 public:
  static constexpr const char* kTable = kReservedTableName;
  static constexpr char kFamily[] = "m";

  // REQUIRES: `db` outlives this object.
  explicit Mtimes(Bigtable* db) : db_(db) {}
  Mtimes(const Mtimes&) = delete;
  Mtimes& operator=(const Mtimes&) = delete;

  // The mtime of `cell` (main tree, no `@T`) whose newest version has
  // timestamp `version`: the one set for that version, else `version`.
  int64_t Get(const Node& cell, int64_t version);
  // The mtime set for `version` of `node` (a cell or a root, table, row or
  // family directory), if any.
  std::optional<int64_t> Find(const Node& node, int64_t version);
  // Sets the mtime of the version `version` of `node`. For a directory
  // `version` is the fingerprint of its entries (DirTimes), in no order:
  // the record replaces any other.
  FsError Set(const Node& node, int64_t version, int64_t mtime);

 private:
  // Whether any cell of `table` may have a record (false: none has).
  bool MayHave(const std::string& table);
  static std::string Key(const Node& node);
  // The record's timestamp for `version`: rounded down to the store's
  // granularity (a cell's versions already are; a directory's fingerprint
  // is any number >= 0, and loses its low digits on a remote store).
  int64_t Stored(int64_t version) const;

  Bigtable* const db_;
  Mutex mu_;
  std::unordered_map<std::string, bool> may_have_ GUARDED_BY(mu_);
  bool created_ GUARDED_BY(mu_) = false;
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_MTIMES_H_
