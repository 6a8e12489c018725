// Reading the engine's files alone, without opening the database, for
// debugging tools (`tabletctl dump`): the entries of one SSTable and the
// records of one commit log, decoded as far as the file itself allows.
// Internal keys name tables and families by their numeric ids, as stored
// (store/doc/key_format.md); the formats are store/doc/table_format.md and
// store/doc/log_format.md.
//
// This is engine maintenance: code above the store reads data through the
// data-model interface (store/bigtable.h) instead.
//
// Thread safety: functions without shared state; the callbacks run on the
// calling thread.
#ifndef TABLETFS_STORE_ENGINE_FILES_H_
#define TABLETFS_STORE_ENGINE_FILES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "store/status.h"

namespace tabletfs {

class Env;

// One entry of an SSTable.
struct TableFileEntry {
  // False when the key is not a well-formed internal key: only raw_key is
  // set then.
  bool well_formed = false;
  std::string_view raw_key;
  uint32_t table_id = 0;
  std::string row;
  bool has_family = false;  // not a row marker
  uint32_t family_id = 0;
  bool has_qualifier = false;  // a cell marker or a version
  std::string qualifier;
  bool has_timestamp = false;  // a version
  int64_t timestamp = 0;
  uint64_t seq = 0;
  // "put", "delete-version", "delete-cell", "delete-family", "delete-row",
  // "put-value-ref".
  std::string_view kind;
  bool has_value = false;  // a put: the value bytes or the value-file ref
  std::string_view value;
};

// Calls `fn` for each entry of the SSTable at `path` in key order, until it
// returns false. Views are valid during the call. *file_bytes gets the
// file's size. The file's errors (IOError, Corruption naming the block).
Status ForEachTableFileEntry(
    Env* env, const std::string& path, uint64_t* file_bytes,
    const std::function<bool(const TableFileEntry&)>& fn);

// One record of a commit log and where it starts.
struct LogFileRecord {
  uint64_t offset = 0;
  std::string_view bytes;
};

// Calls `fn` for each intact record of the commit log at `path`, until it
// returns false. *torn_tail_offset gets the offset after which a torn tail
// was dropped, or -1 when the log ends cleanly (or reading stopped early);
// *zero_tail whether that tail was all zeros (LogReader::zero_tail()).
Status ForEachLogFileRecord(
    Env* env, const std::string& path, int64_t* torn_tail_offset,
    bool* zero_tail, const std::function<bool(const LogFileRecord&)>& fn);

}  // namespace tabletfs

#endif  // TABLETFS_STORE_ENGINE_FILES_H_
