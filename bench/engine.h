// Engine: the few operations the db_bench-style workloads need, implemented
// once per engine (tabletfs, LevelDB, RocksDB) so that every workload runs
// the same code on the same keys and values whatever the engine.
//
// tabletfs stores each key as a row of table "bench" with one cell, family
// "f", qualifier "v", under the GC policy maxversions=1, so that it keeps what
// the other two keep: the newest value of each key.
//
// Thread safety: Put, Get and NewCursor may be called from several threads
// at once (each engine's own DB allows it); a Cursor is used by one thread.
// Open and Close are called once, from one thread.
#ifndef TABLETFS_BENCH_ENGINE_H_
#define TABLETFS_BENCH_ENGINE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "store/status.h"

namespace tabletfs::bench {

struct EngineConfig {
  // false: each engine's defaults. true: the sizes below for all three.
  bool matched = false;
  size_t write_buffer_bytes = 64u << 20;
  size_t block_bytes = 4u << 10;
  size_t cache_bytes = 64u << 20;
  int bloom_bits = 10;
  // Every write syncs the log before it returns.
  bool sync = false;
  // tabletfs only: Options::commit_interval in milliseconds (0: off);
  // negative: the store's default (5 s).
  int64_t commit_interval_ms = -1;
};

// Counters an engine reports about itself; -1 where it reports nothing.
struct EngineReport {
  double write_amplification = -1;
  std::string detail;  // free text (no spaces), e.g. files per level
};

// Iterates the keys in order. Positioned at construction: call Seek or
// SeekToFirst first.
class Cursor {
 public:
  virtual ~Cursor() = default;
  virtual void SeekToFirst() = 0;
  virtual void Seek(std::string_view key) = 0;
  virtual bool Valid() const = 0;
  virtual void Next() = 0;
  // REQUIRES: Valid(). Valid until the cursor moves.
  virtual std::string_view key() const = 0;
  // The value's length (reads the value). REQUIRES: Valid().
  virtual size_t ValueSize() = 0;
  // Not OK once the iteration hit an error.
  virtual Status status() const = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;

  // Opens or creates the database in `dir`.
  virtual Status Open(const std::string &dir, const EngineConfig &config) = 0;
  // Writes (inserts or replaces) one key.
  virtual Status Put(std::string_view key, std::string_view value) = 0;
  // Reads one key: *found says whether it exists, *value_size its length.
  virtual Status Get(std::string_view key, bool *found, size_t *value_size) = 0;
  virtual std::unique_ptr<Cursor> NewCursor() = 0;
  // Returns once no flush or compaction is running or pending (as far as
  // the engine tells: see each implementation); *idle_at is when that
  // became true (an engine that needs a quiet period to tell does not
  // count the period).
  virtual Status WaitForIdle(
      std::chrono::steady_clock::time_point *idle_at) = 0;
  virtual EngineReport Report() = 0;
  // Closes the database (the destructor does too).
  virtual Status Close() = 0;
};

// One per engine, each in its own engine_<name>.cc.
std::unique_ptr<Engine> NewTabletfsEngine();
std::unique_ptr<Engine> NewLevelDbEngine();
std::unique_ptr<Engine> NewRocksDbEngine();

}  // namespace tabletfs::bench

#endif  // TABLETFS_BENCH_ENGINE_H_
