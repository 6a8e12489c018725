// DB: a database directory holding tables of the Bigtable data model on a
// log-structured sorted store (see ../shared/DESIGN.md "Data model").
//
// Tables contain rows; rows contain cells (family:qualifier) with versions
// at int64 microsecond timestamps. Every write of one row is atomic.
//
// Thread safety: all methods may be called concurrently. A DB must outlive
// its Scanners and Snapshots. Destroying the DB closes it: background work
// stops, the log is synced; nothing the log does not hold is flushed.
#ifndef TABLETFS_STORE_DB_H_
#define TABLETFS_STORE_DB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "store/cell.h"
#include "store/options.h"
#include "store/row_mutation.h"
#include "store/scanner.h"
#include "store/schema.h"
#include "store/stats.h"
#include "store/status.h"

namespace tabletfs {

// A consistent point-in-time view for reads (ReadOptions::snapshot).
class Snapshot {
 public:
  virtual ~Snapshot() = default;
};

// A condition on one cell for CheckAndMutate, evaluated on the newest
// visible version.
struct CellCondition {
  enum class Op { kExists, kNotExists, kEquals };
  std::string family;
  std::string qualifier;
  Op op = Op::kExists;
  std::string value;  // kEquals
};

// A tablet: a contiguous row range of a table, the unit of compaction
// (store/doc/tablets.md).
struct TabletInfo {
  // [start_row, end_row); empty start_row: from the table's first row,
  // empty end_row: past its last row.
  std::string start_row;
  std::string end_row;
  // Bytes of its data: SSTables (the part in its range) and memtables.
  uint64_t bytes = 0;
  uint64_t files = 0;  // SSTables
  // Up to 8 row keys inside the range, in order, splitting its SSTable
  // data into about equal parts (Bigtable's SampleRowKeys).
  std::vector<std::string> sample_rows;
};

struct AppendResult {
  int64_t timestamp = 0;    // of the new version
  uint64_t value_size = 0;  // length of the new value
};

class DB {
 public:
  // Opens (creating when missing and options.create_if_missing) the
  // database in `dir`, taking an exclusive lock: Busy naming the holder's
  // pid when another open holds it. Recovers the log.
  static Result<std::unique_ptr<DB>> Open(const Options &options,
                                          const std::string &dir);

  DB() = default;
  DB(const DB &) = delete;
  DB &operator=(const DB &) = delete;
  virtual ~DB() = default;

  // ---- Schema (durable and atomic) ----
  virtual Status CreateTable(std::string_view table) = 0;
  // Drops the table and all its data.
  virtual Status DeleteTable(std::string_view table) = 0;
  // Sorted by name.
  virtual Result<std::vector<std::string>> ListTables() = 0;
  virtual Status CreateFamily(std::string_view table, std::string_view family,
                              const FamilySettings &settings) = 0;
  virtual Status UpdateFamily(std::string_view table, std::string_view family,
                              const FamilySettings &settings) = 0;
  // Drops the family and its data in every row.
  virtual Status DeleteFamily(std::string_view table,
                              std::string_view family) = 0;
  // In creation order (the order of families within a row).
  virtual Result<std::vector<FamilyInfo>> ListFamilies(
      std::string_view table) = 0;
  virtual Result<FamilySettings> GetFamily(std::string_view table,
                                           std::string_view family) = 0;

  // ---- Writes ----
  // Applies all operations of `mutation` atomically. Returns the timestamp
  // assigned to server-timestamped operations (assigned even when there are
  // none). InvalidArgument for an empty mutation, a bad row key, an unknown
  // family, a value above the limit; nothing changes then.
  virtual Result<int64_t> Apply(std::string_view table,
                                const RowMutation &mutation,
                                const WriteOptions &options) = 0;
  // Atomically appends `data` to the newest value of the cell (empty when
  // absent) as a new version at a server timestamp.
  virtual Result<AppendResult> Append(std::string_view table,
                                      std::string_view row,
                                      std::string_view family,
                                      std::string_view qualifier,
                                      std::string_view data,
                                      const WriteOptions &options) = 0;
  // Atomically adds `delta` to the cell's 64-bit big-endian integer (absent:
  // 0) and writes it as a new version. InvalidArgument when the value is
  // not 8 bytes. Returns the new value.
  virtual Result<int64_t> Increment(std::string_view table,
                                    std::string_view row,
                                    std::string_view family,
                                    std::string_view qualifier, int64_t delta,
                                    const WriteOptions &options) = 0;
  // Atomically applies `if_true` when the condition holds on `row`, else
  // `if_false` (either may be empty). Returns whether it held.
  virtual Result<bool> CheckAndMutate(std::string_view table,
                                      std::string_view row,
                                      const CellCondition &condition,
                                      const RowMutation &if_true,
                                      const RowMutation &if_false,
                                      const WriteOptions &options) = 0;

  // ---- Reads ----
  // The visible versions of one row (no cells: the row does not exist).
  virtual Result<Row> ReadRow(std::string_view table, std::string_view row,
                              const ReadOptions &options) = 0;
  // The visible versions of one cell, newest first (empty: none).
  virtual Result<std::vector<Cell>> ReadCell(std::string_view table,
                                             std::string_view row,
                                             std::string_view family,
                                             std::string_view qualifier,
                                             const ReadOptions &options) = 0;
  virtual Result<std::unique_ptr<Scanner>> NewScanner(
      std::string_view table, const ScanOptions &options) = 0;
  // The current state, for consistent multi-call reads.
  virtual std::shared_ptr<const Snapshot> GetSnapshot() = 0;
  // The tablets of `table` in row order (they cover all its rows).
  virtual Result<std::vector<TabletInfo>> ListTablets(
      std::string_view table) = 0;

  // ---- Maintenance ----
  // Makes every acknowledged write durable (survives power loss).
  virtual Status Sync() = 0;
  // Writes the memtables to SSTables and waits.
  virtual Status Flush() = 0;
  // Compacts everything into the fewest files, applying GC and deletions;
  // waits.
  virtual Status CompactAll() = 0;
  // Blocks until no flush or compaction is running or pending.
  virtual Status WaitForIdle() = 0;
  // Verifies every checksum of every live file; the first damage found.
  virtual Status Verify() = 0;
  virtual DbStats GetStats() = 0;
  // The sticky background error (OK when none).
  virtual Status BackgroundError() = 0;
  // The next server timestamp would be > this.
  virtual int64_t LastTimestamp() = 0;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_H_
