// Options for opening a database, writing and reading.
//
// Thread safety: plain values.
#ifndef TABLETFS_STORE_OPTIONS_H_
#define TABLETFS_STORE_OPTIONS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tabletfs {

class Env;
class Snapshot;

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

struct Options {
  // All file I/O and the clock. nullptr: Env::Default(). Not owned; must
  // outlive the database.
  Env *env = nullptr;

  // Receives one line per notable event (recovery, flush, compaction,
  // background errors). nullptr: events are dropped.
  std::function<void(LogLevel, std::string_view)> logger;

  bool create_if_missing = true;

  // Memtable budget: once the active memtables of all tablets hold half of
  // it, the largest is frozen and flushed, so while flushes keep up, active
  // and frozen memtables together stay within it. Writes stall (instead of
  // growing memory) while frozen and active memtables together hold twice
  // it (flushes behind). Also the size of one log file.
  size_t memtable_bytes = 64u << 20;
  // Bound on the logs kept for replay: past it, the tablets whose entries
  // hold the oldest log are flushed, so one cold tablet never pins the log
  // and recovery stays short.
  uint64_t max_log_bytes = 256ull << 20;
  // Commit logs kept after their entries were flushed, for change
  // subscriptions that start in the past (SubscribeOptions::since): the
  // newest flushed logs, up to this many bytes, stay on disk beside the
  // live ones (the logs recovered at open count as flushed). 0: the past
  // reaches only as far as the live logs. The disk cost is at most this
  // much more log; short of space (less than twice space_reserve_bytes
  // free) none is kept, so deletes give their space back.
  uint64_t change_history_bytes = 64u << 20;

  // Target uncompressed size of an SSTable data block, the unit a point
  // read decodes, and of a group of blocks, the unit the block cache keeps
  // and a scan steps by (TableOptions::block_size and group_size).
  size_t block_size = 4u << 10;
  size_t group_size = 16u << 10;
  // Memory bound of the uncompressed-block cache. LevelDB's 8 MiB: a larger
  // cache pays when the blocks read again fit in it, and costs every read
  // when they do not (store/doc/table_format.md, "The block cache's size").
  size_t block_cache_bytes = 8u << 20;
  // Bound on SSTables kept open, and separately on value files kept open
  // (each holds one file descriptor): at most 2x this many descriptors.
  int max_open_tables = 1000;
  int bloom_bits_per_key = 10;
  // Target size of one SSTable written by compaction.
  size_t target_file_bytes = 64u << 20;

  // Largest value accepted (InvalidArgument above it; EFBIG in fs/).
  size_t max_value_bytes = 64u << 20;
  // Values of at least this size are stored in value files, referenced from
  // SSTables, so compaction does not rewrite them.
  size_t large_value_bytes = 256u << 10;

  // Writes that add data fail with NoSpace while the free space of the
  // data directory's filesystem is below this; deletes and compaction may
  // use the reserve. Unset: 1/32 of the filesystem's size (about 3%, as
  // ext4 keeps 5% for root), at most 64 MiB; none on a filesystem that
  // reports a size of 0 (some FUSE and network filesystems), which then
  // refuses writes only when the disk itself is full. DbStats names the
  // reserve in force.
  std::optional<uint64_t> space_reserve_bytes;

  // The commit interval (ext4's commit=): a background thread syncs the log
  // this often when anything was written since its last sync, so a write
  // acknowledged without WriteOptions::sync survives power loss once this
  // much time has passed, and what survives is always a prefix of the
  // writes. Writers never wait for it. 0: off (only synced writes, Sync(),
  // flushes, schema changes and closing make the log durable).
  std::chrono::milliseconds commit_interval{5000};

  // A tablet splits (at a middle row) once its data passes this many bytes;
  // adjacent tablets merge when together under a quarter of it
  // (store/doc/tablets.md).
  uint64_t tablet_split_bytes = 128ull << 20;
};

struct WriteOptions {
  // false: the write survives a crash of the process once acknowledged,
  // and power loss once Options::commit_interval has passed.
  // true: it survives power loss at once (the log is synced before
  // returning).
  bool sync = false;
  // Who writes, copied into the change events of this write
  // (ChangeEvent::origin, store/changes.h), so that a subscriber can tell
  // its own writes from those of other doors (the mount skips its own: it
  // invalidated the kernel's cache for them already). 0: no one in
  // particular. The store gives it no other meaning.
  uint64_t origin = 0;
};

// A column: family and qualifier.
struct Column {
  std::string family;
  std::string qualifier;
};

struct ReadOptions {
  // Read as of time T: per cell, the newest version with timestamp <= T.
  std::optional<int64_t> at;
  // Restrict to these families and these columns (a cell passes when its
  // family is listed or its column is). Both empty: everything.
  std::vector<std::string> families;
  std::vector<Column> columns;
  // Versions per cell, newest first. 0: all.
  uint32_t max_versions = 1;
  // Read this snapshot instead of the latest state. Not owned.
  const Snapshot *snapshot = nullptr;
};

// What a scan's caller reads of each row (ScanOptions::content): a promise
// that lets a store send less. A store may ignore it and give everything
// (the engine and the reference implementation read values only when
// asked anyway); a remote store (api/remote_bigtable.h) sends only what
// is promised, as Bigtable's strip-value and cells-per-row filters.
// Persisted nowhere.
enum class ScanContent {
  // Every cell the read options select, with its value.
  kCells,
  // The same cells, without values: the caller reads no value() and no
  // value_size() (they may be empty and 0). Names and timestamps, for
  // listings and directory times.
  kNoValues,
  // Which rows hold a cell the read options select: the caller reads only
  // row() (and, with ReadOptions::families of one family, family()) of
  // the first cell of each row, and moves with NextRow() or a Seek to
  // another row. Each row may come with only one cell, without a value.
  kRows,
};

struct ScanOptions {
  ReadOptions read;
  // Rows in [start_row, end_row); empty end_row: to the end of the table.
  std::string start_row;
  std::string end_row;
  // Only rows beginning with prefix (combined with the range).
  std::string prefix;
  // What the caller reads (above).
  ScanContent content = ScanContent::kCells;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_OPTIONS_H_
