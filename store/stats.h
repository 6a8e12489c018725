// DbStats: the engine's state for operators (.tabletfs/stats, tabletctl
// stats).
//
// Thread safety: a plain value, a copy taken under the engine's lock.
#ifndef TABLETFS_STORE_STATS_H_
#define TABLETFS_STORE_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tabletfs {

struct LevelStats {
  int level = 0;
  uint64_t files = 0;
  uint64_t bytes = 0;
};

struct DbStats {
  uint64_t memtable_bytes = 0;  // active + frozen
  uint64_t frozen_memtables = 0;
  std::vector<LevelStats> levels;
  uint64_t value_file_bytes = 0;
  uint64_t log_bytes = 0;
  uint64_t flushes = 0;
  // Of those, flushes run between the entries of a compaction (which
  // would otherwise have waited for it).
  uint64_t flushes_during_compactions = 0;
  uint64_t compactions = 0;
  // Of the compactions, those that moved files down a level unchanged.
  uint64_t compactions_moved = 0;
  uint64_t compactions_pending = 0;
  uint64_t bytes_written_by_user = 0;  // keys + values applied
  uint64_t bytes_written_to_disk = 0;  // log + flush + compaction output
  // Syncs of the log a write, Sync(), a log switch, a flush or a schema
  // change asked for; and those of the commit thread (each interval, and
  // every 4 MiB of log written, which keeps a log switch's own sync
  // short).
  uint64_t log_syncs = 0;
  uint64_t commit_syncs = 0;
  // Time the commit thread spent in those syncs (beside the writers).
  uint64_t commit_sync_micros = 0;
  // Bytes of the current log not yet synced: acknowledged writes that a
  // power cut now could lose (0 once the commit interval has passed).
  uint64_t log_unsynced_bytes = 0;
  // Writes that add data fail below this much free space (Options).
  uint64_t space_reserve_bytes = 0;
  // Data blocks that reads wanted and found in the block cache, and that
  // they did not (one-pass reads, as a compaction's, are not counted).
  uint64_t block_cache_hits = 0;
  uint64_t block_cache_misses = 0;
  uint64_t bloom_useful = 0;  // lookups a filter answered
  // Point reads that skipped a memtable its row filter said did not hold
  // the row (MemTable::MayHoldRow).
  uint64_t memtable_filter_useful = 0;
  // Reads since open: point reads (ReadRow, ReadCell and the reads inside
  // Append, Increment, CheckAndMutate), scanners opened, and the data
  // blocks readers fetched from table files (block-cache misses that went
  // to the file, compactions included) with their stored bytes, and the
  // large values read from value files with their bytes.
  uint64_t point_reads = 0;
  uint64_t scans = 0;
  uint64_t table_block_reads = 0;
  uint64_t table_read_bytes = 0;
  uint64_t value_reads = 0;
  uint64_t value_read_bytes = 0;
  uint64_t write_stalls = 0;
  // Write groups delayed 1 ms because level 0 grew (before a stall).
  uint64_t write_delays = 0;
  uint64_t tablets = 0;
  uint64_t tablet_splits = 0;  // since open
  uint64_t tablet_merges = 0;
  // Longest time writers were held back for a split, merge or freeze.
  uint64_t tablet_max_pause_micros = 0;
  uint64_t last_sequence = 0;
  int64_t last_timestamp = 0;
  std::string background_error;  // empty when none

  // "key value" lines, one per field, for .tabletfs/stats.
  std::string ToString() const;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_STATS_H_
