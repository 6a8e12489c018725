// Bigtable: the data model of the Bigtable paper (OSDI 2006, section 3:
// the client API) as one abstract interface, and nothing else. Everything
// above the store speaks only this: the filesystem (fs/), the CLI's data
// commands, and later the API server and the remote client. The local
// engine (store/db.h: DB, which extends this with maintenance and
// introspection) implements it, and so does the in-memory reference
// implementation (store/reference/reference_bigtable.h), the oracle of the
// engine's model tests. A new implementation passes the same tests.
//
// The model (../shared/DESIGN.md "Data model"): a store holds tables; a
// table is a sparse sorted map
//   (row: bytes, family:qualifier: bytes, timestamp: int64 µs) -> value
// Families are created before use and carry the GC policy. Rows sort
// bytewise; within a row, families in the order they were created,
// qualifiers bytewise, versions newest first ("scan order").
//
// Atomicity. Every write of one row is atomic: Apply, Append, Increment and
// CheckAndMutate change one row all or nothing, as seen by any reader and
// after a crash. Nothing is atomic across rows or tables. Schema changes
// (tables, families) are each atomic and durable when they return.
//
// Ordering. Writes are totally ordered ("commit order"): a write that
// returned is visible to every read that starts after it; a read never
// sees a later write without every earlier one. The operations of one
// RowMutation apply in the order they were added.
//
// Timestamps. int64 microseconds since the epoch. A cell version's
// timestamp is chosen by the client (RowMutation::SetCell with a timestamp,
// any int64 value that is a multiple of TimestampGranularityMicros()) or,
// for kServerTimestamp, by the store when the write
// commits: max(wall clock, previous server timestamp + 1) over the whole
// store, so server timestamps strictly increase in commit order, never
// repeat (also across reopening the store), and all server-timestamped
// operations of one write share one. A delete removes the versions that
// exist when it is applied, whatever their timestamps: a later write, even
// at an older timestamp, is visible.
//
// Errors. Every call returns a Status (or a Result holding one); bad input
// changes nothing. Per call below; in general:
//   NotFound         an unknown table (any call naming one), an unknown
//                    family where a family is named outright
//   InvalidArgument  a bad name (schema.h: ValidateTableName,
//                    ValidateFamilyName, ValidateRowKey), an empty
//                    mutation, a mutation naming an unknown family, a value
//                    above the store's limit, a snapshot of another store
//   AlreadyExists    creating a table or family that exists
//   NoSpace          a write that adds data while the store is short of
//                    space (deletes are still accepted)
//   IOError, Corruption  the store failed; a failure that the store cannot
//                    recover from without reopening is sticky: every later
//                    write reports it (StickyError())
// An error of a write means it was not applied, except an IOError or
// NoSpace from writing the commit log itself, whose outcome the store could
// not learn: such a write may still appear after a crash, as with any lost
// acknowledgement.
//
// Thread safety: every method may be called concurrently from any thread.
// Scanners are used by one thread at a time. The store must outlive the
// Scanners, Snapshots and change subscriptions it hands out.
//
// Change events: every committed change is published to subscribers in
// commit order (Subscribe, store/changes.h), so a write through one door
// is seen through every other.
#ifndef TABLETFS_STORE_BIGTABLE_H_
#define TABLETFS_STORE_BIGTABLE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/cell.h"
#include "store/changes.h"
#include "store/options.h"
#include "store/row_mutation.h"
#include "store/scanner.h"
#include "store/schema.h"
#include "store/status.h"

namespace tabletfs {

// A consistent point-in-time view of the cell data for reads
// (ReadOptions::snapshot): every read through it sees the writes committed
// before GetSnapshot() and none after. Reads still use the current schema
// (a table dropped since is NotFound). Only the store that made it accepts
// it (InvalidArgument otherwise).
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

// A tablet: a contiguous row range of a table, the unit of load balancing
// (store/doc/tablets.md for the engine's). An implementation without
// tablets reports one tablet covering the table.
struct TabletInfo {
  // [start_row, end_row); empty start_row: from the table's first row,
  // empty end_row: past its last row.
  std::string start_row;
  std::string end_row;
  // Approximate bytes of its data.
  uint64_t bytes = 0;
  // Files holding its data (the engine's SSTables); 0 when kept in memory.
  uint64_t files = 0;
  // Up to 8 row keys inside the range, in order, splitting its data into
  // about equal parts (Bigtable's SampleRowKeys). May be empty.
  std::vector<std::string> sample_rows;
};

// Builds the mutation of one row from the row's current content
// (Bigtable::RewriteRow). Returns the mutation to apply (empty: write
// nothing) or an error, which RewriteRow returns as is.
using RowRewrite = std::function<Result<RowMutation>(const Row &current)>;

struct RewriteResult {
  bool written = false;   // false: the rewrite returned an empty mutation
  int64_t timestamp = 0;  // the write's server timestamp, when written
};

struct AppendResult {
  int64_t timestamp = 0;    // of the new version
  uint64_t value_size = 0;  // length of the new value
};

class Bigtable {
 public:
  Bigtable() = default;
  Bigtable(const Bigtable &) = delete;
  Bigtable &operator=(const Bigtable &) = delete;
  virtual ~Bigtable() = default;

  // ---- Schema. Each call is atomic and durable when it returns. ----

  // InvalidArgument for a bad name, AlreadyExists when it exists.
  virtual Status CreateTable(std::string_view table) = 0;
  // Drops the table and all its data. NotFound when it does not exist.
  virtual Status DeleteTable(std::string_view table) = 0;
  // The names of every table, sorted bytewise.
  virtual Result<std::vector<std::string>> ListTables() = 0;
  // The table's name and since when it exists (TableInfo::since_micros;
  // views of the past, such as the filesystem's `.at/T/`, show only the
  // tables that existed at T). NotFound for an unknown table.
  virtual Result<TableInfo> GetTable(std::string_view table) = 0;
  // Adds a family at the end of the table's family order. InvalidArgument
  // for a bad name, NotFound for an unknown table, AlreadyExists.
  virtual Status CreateFamily(std::string_view table, std::string_view family,
                              const FamilySettings &settings) = 0;
  // Replaces the family's settings. A new GC policy applies to versions
  // written after the change; a version the old policy already collects
  // stays collected (relaxing a policy brings nothing back). NotFound for
  // an unknown table or family.
  virtual Status UpdateFamily(std::string_view table, std::string_view family,
                              const FamilySettings &settings) = 0;
  // Drops the family and its data in every row. NotFound for an unknown
  // table or family. A family created again later with the same name starts
  // empty, at the end of the family order.
  virtual Status DeleteFamily(std::string_view table,
                              std::string_view family) = 0;
  // In creation order (the order of families within a row). NotFound for
  // an unknown table.
  virtual Result<std::vector<FamilyInfo>> ListFamilies(
      std::string_view table) = 0;
  // NotFound for an unknown table or family.
  virtual Result<FamilySettings> GetFamily(std::string_view table,
                                           std::string_view family) = 0;

  // ---- Writes. Each changes one row atomically (see the top). ----

  // Applies every operation of `mutation` atomically, in order. Returns the
  // server timestamp of this write (assigned even when no operation uses
  // it). NotFound for an unknown table; InvalidArgument for an empty
  // mutation, a bad row key, an unknown family, a value above the limit;
  // NoSpace; nothing changes then. With options.sync the write is durable
  // (survives power loss) when this returns, otherwise once Sync() returns
  // or the store syncs on its own.
  virtual Result<int64_t> Apply(std::string_view table,
                                const RowMutation &mutation,
                                const WriteOptions &options) = 0;
  // Applies each mutation as Apply would, each atomically on its own row,
  // in order; result i is Apply's for mutations[i]. Nothing is atomic
  // across rows, but the store may commit them together, at far less cost
  // than one Apply each (the API's MutateRows uses it). The default calls
  // Apply for each.
  virtual std::vector<Result<int64_t>> ApplyBatch(
      std::string_view table, const std::vector<RowMutation> &mutations,
      const WriteOptions &options) {
    std::vector<Result<int64_t>> out;
    out.reserve(mutations.size());
    for (const RowMutation &m : mutations) {
      out.push_back(Apply(table, m, options));
    }
    return out;
  }
  // Atomically appends `data` to the newest visible value of the cell
  // (empty when absent) as a new version at a server timestamp: concurrent
  // appends never lose one another. NotFound for an unknown table or
  // family; InvalidArgument when the result would pass the value limit.
  virtual Result<AppendResult> Append(std::string_view table,
                                      std::string_view row,
                                      std::string_view family,
                                      std::string_view qualifier,
                                      std::string_view data,
                                      const WriteOptions &options) = 0;
  // Atomically adds `delta` to the cell's 64-bit big-endian two's
  // complement integer (absent: 0), wrapping on overflow, and writes it as
  // a new version at a server timestamp. Returns the new value. NotFound
  // for an unknown table or family; InvalidArgument when the newest value
  // is not 8 bytes.
  virtual Result<int64_t> Increment(std::string_view table,
                                    std::string_view row,
                                    std::string_view family,
                                    std::string_view qualifier, int64_t delta,
                                    const WriteOptions &options) = 0;
  // Atomically evaluates `condition` on `row` and applies `if_true` when it
  // holds, else `if_false` (either may be empty: then nothing is written).
  // Returns whether it held. InvalidArgument when a non-empty mutation is
  // for another row or invalid for Apply; NotFound for an unknown table or
  // an unknown condition family.
  virtual Result<bool> CheckAndMutate(std::string_view table,
                                      std::string_view row,
                                      const CellCondition &condition,
                                      const RowMutation &if_true,
                                      const RowMutation &if_false,
                                      const WriteOptions &options) = 0;

  // Atomically reads `row` (as ReadRow with `read`, which may name neither
  // a snapshot nor `at`: InvalidArgument), calls `rewrite` with it while no
  // other write of the row can come between, and applies the mutation it
  // returns, as Apply would. Check-and-mutate on any predicate of the row,
  // read-modify-write of several cells and deletes of a range of versions
  // are built on it (the API server does). `rewrite` runs on the calling
  // thread, once, and must not call the store. Errors as Apply's, plus
  // InvalidArgument when the mutation is for another row, plus any error
  // `rewrite` returns; nothing is written then.
  virtual Result<RewriteResult> RewriteRow(std::string_view table,
                                           std::string_view row,
                                           const ReadOptions &read,
                                           const RowRewrite &rewrite,
                                           const WriteOptions &options) = 0;

  // ---- Reads. ----
  // A version is visible when no delete applied after it removed it, the
  // family's GC policy does not collect it (at the time of the read), and
  // it passes the ReadOptions: `at` (newest version <= T per cell),
  // families / columns (names not in the schema match nothing),
  // max_versions, snapshot.

  // The visible versions of one row in scan order (no cells: the row does
  // not exist). NotFound for an unknown table; InvalidArgument for a bad
  // row key.
  virtual Result<Row> ReadRow(std::string_view table, std::string_view row,
                              const ReadOptions &options) = 0;
  // The visible versions of one cell, newest first (empty: none). NotFound
  // for an unknown table or family; InvalidArgument for a bad row key.
  // options.families and options.columns are ignored.
  virtual Result<std::vector<Cell>> ReadCell(std::string_view table,
                                             std::string_view row,
                                             std::string_view family,
                                             std::string_view qualifier,
                                             const ReadOptions &options) = 0;
  // The newest visible version of one cell, without its value: its
  // timestamp and value size (nullopt: none), for a stat(2) that must not
  // read a 64 MiB value. options.max_versions, families and columns are
  // ignored. Errors as ReadCell. This default reads the value (ReadCell)
  // and gives its XXH64 too; a store that knows sizes apart from values
  // answers without it.
  virtual Result<std::optional<CellStat>> StatCell(std::string_view table,
                                                   std::string_view row,
                                                   std::string_view family,
                                                   std::string_view qualifier,
                                                   const ReadOptions &options);
  // A scanner over the rows of `table` in ScanOptions' range, positioned
  // at the first visible version; it reads one consistent state (the
  // snapshot's, or the latest when it was made). NotFound for an unknown
  // table.
  virtual Result<std::unique_ptr<Scanner>> NewScanner(
      std::string_view table, const ScanOptions &options) = 0;
  // The current state, for consistent multi-call reads. Released when the
  // last reference goes.
  virtual std::shared_ptr<const Snapshot> GetSnapshot() = 0;
  // The tablets of `table` in row order: contiguous, covering every row.
  // NotFound for an unknown table.
  virtual Result<std::vector<TabletInfo>> ListTablets(
      std::string_view table) = 0;

  // ---- Change events (store/changes.h). ----

  // Subscribes to the events of every change committed after this returns,
  // in commit order, through whatever door; destroying the subscription
  // unsubscribes. A subscriber that does not keep up loses events (it is
  // told how many), it never holds writers back. The table need not exist.
  // InvalidArgument when options.max_queued_events is 0.
  virtual Result<std::unique_ptr<ChangeSubscription>> Subscribe(
      const SubscribeOptions &options) = 0;

  // ---- Timestamp granularity. ----

  // The unit, in microseconds, of the cell timestamps this store keeps:
  // explicit timestamps of writes must be multiples of it (others are
  // refused as the implementation says, nothing written), and the
  // timestamps it assigns are multiples of it. 1 (the default, the local
  // engine and the reference implementation): any microsecond. 1000: whole
  // milliseconds (Cloud Bigtable's MILLIS table granularity, the emulator,
  // and so api/remote_bigtable.h). Constant for the store's lifetime.
  // Callers that choose timestamps (the filesystem's `Q@T` writes and its
  // "just above the newest version") round to it, always down for a given
  // T and up for "above", so the same T always names the same version.
  virtual int64_t TimestampGranularityMicros() const { return 1; }

  // ---- Introspection. ----

  // What the store tells operators about its own work, for the mount's
  // `.tabletfs/stats`: "key value" lines, each ending in '\n', keys
  // without spaces. Every implementation but the engine begins with
  // "store KIND" (memory, remote); the engine's text is DbStats::ToString
  // (store/stats.h), whose first lines scripts read as numbers. Each
  // reports what it has: the engine its DbStats, the reference
  // implementation its tables and bytes, the remote client its RPCs
  // (counts, latencies, bytes and errors per method,
  // api/remote_bigtable.h). Cheap enough for every stat of the file: it
  // reads counters and never the data (a remote store sends no RPC for
  // it). Any thread.
  virtual std::string StatsText() = 0;

  // ---- Durability and health. ----

  // Makes every write acknowledged so far durable (survives power loss).
  virtual Status Sync() = 0;
  // OK, or the error that every write now fails with and keeps failing
  // with until the store is reopened (a failed log write, corruption).
  // Cheap: callers use it to refuse early.
  virtual Status StickyError() = 0;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_BIGTABLE_H_
