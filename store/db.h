// DB: the local engine. A database directory holding tables of the Bigtable
// data model on a log-structured sorted store (store/doc/). It implements
// the data-model interface (store/bigtable.h: every read and write, their
// contract) and adds what only an engine has: opening a directory,
// flushes, compactions, checksum verification and statistics. Code that
// only reads and writes data holds a Bigtable; only maintenance (tabletctl
// compact, check, stats; the engine's own tests) asks for a DB.
//
// Thread safety: all methods may be called concurrently. A DB must outlive
// its Scanners, Snapshots and subscriptions. Destroying the DB closes it:
// background work stops, the log is synced; nothing the log does not hold
// is flushed.
#ifndef TABLETFS_STORE_DB_H_
#define TABLETFS_STORE_DB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "store/bigtable.h"
#include "store/cell.h"
#include "store/options.h"
#include "store/row_mutation.h"
#include "store/scanner.h"
#include "store/schema.h"
#include "store/stats.h"
#include "store/status.h"

namespace tabletfs {

class DB : public Bigtable {
 public:
  // Opens (creating when missing and options.create_if_missing) the
  // database in `dir`, taking an exclusive lock: Busy naming the holder's
  // pid when another open holds it. Recovers the log.
  static Result<std::unique_ptr<DB>> Open(const Options &options,
                                          const std::string &dir);

  DB() = default;
  ~DB() override = default;

  // ---- Maintenance ----
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
  // GetStats() as text (DbStats::ToString).
  std::string StatsText() override { return GetStats().ToString(); }
  // The sticky background error (OK when none): the engine's name for
  // StickyError().
  Status BackgroundError() { return StickyError(); }
  // The next server timestamp would be > this.
  virtual int64_t LastTimestamp() = 0;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_H_
