#include "store/stats.h"

#include <sstream>

namespace tabletfs {

std::string DbStats::ToString() const {
  std::ostringstream out;
  out << "memtable_bytes " << memtable_bytes << "\n";
  out << "frozen_memtables " << frozen_memtables << "\n";
  uint64_t sst_files = 0, sst_bytes = 0;
  for (const LevelStats &l : levels) {
    out << "level" << l.level << "_files " << l.files << "\n";
    out << "level" << l.level << "_bytes " << l.bytes << "\n";
    sst_files += l.files;
    sst_bytes += l.bytes;
  }
  out << "sstable_files " << sst_files << "\n";
  out << "sstable_bytes " << sst_bytes << "\n";
  out << "value_file_bytes " << value_file_bytes << "\n";
  out << "log_bytes " << log_bytes << "\n";
  out << "flushes " << flushes << "\n";
  out << "flushes_during_compactions " << flushes_during_compactions << "\n";
  out << "compactions " << compactions << "\n";
  out << "compactions_moved " << compactions_moved << "\n";
  out << "compactions_pending " << compactions_pending << "\n";
  out << "bytes_written_by_user " << bytes_written_by_user << "\n";
  out << "bytes_written_to_disk " << bytes_written_to_disk << "\n";
  if (bytes_written_by_user > 0) {
    out << "write_amplification "
        << static_cast<double>(bytes_written_to_disk) /
               static_cast<double>(bytes_written_by_user)
        << "\n";
  } else {
    out << "write_amplification 0\n";
  }
  out << "log_syncs " << log_syncs << "\n";
  out << "commit_syncs " << commit_syncs << "\n";
  out << "commit_sync_micros " << commit_sync_micros << "\n";
  out << "log_unsynced_bytes " << log_unsynced_bytes << "\n";
  out << "space_reserve_bytes " << space_reserve_bytes << "\n";
  out << "block_cache_hits " << block_cache_hits << "\n";
  out << "block_cache_misses " << block_cache_misses << "\n";
  uint64_t lookups = block_cache_hits + block_cache_misses;
  out << "block_cache_hit_rate "
      << (lookups == 0 ? 0.0
                       : static_cast<double>(block_cache_hits) /
                             static_cast<double>(lookups))
      << "\n";
  out << "bloom_useful " << bloom_useful << "\n";
  out << "memtable_filter_useful " << memtable_filter_useful << "\n";
  out << "point_reads " << point_reads << "\n";
  out << "scans " << scans << "\n";
  out << "table_block_reads " << table_block_reads << "\n";
  out << "table_read_bytes " << table_read_bytes << "\n";
  out << "value_reads " << value_reads << "\n";
  out << "value_read_bytes " << value_read_bytes << "\n";
  out << "write_stalls " << write_stalls << "\n";
  out << "write_delays " << write_delays << "\n";
  out << "tablets " << tablets << "\n";
  out << "tablet_splits " << tablet_splits << "\n";
  out << "tablet_merges " << tablet_merges << "\n";
  out << "tablet_max_pause_micros " << tablet_max_pause_micros << "\n";
  out << "last_sequence " << last_sequence << "\n";
  out << "last_timestamp " << last_timestamp << "\n";
  out << "background_error "
      << (background_error.empty() ? "none" : background_error) << "\n";
  return out.str();
}

}  // namespace tabletfs
