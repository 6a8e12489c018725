// The LevelDB engine for the benchmark (Debian's libleveldb-dev).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/engine.h"
#include "leveldb/cache.h"
#include "leveldb/db.h"
#include "leveldb/filter_policy.h"
#include "leveldb/options.h"

namespace tabletfs::bench {
namespace {

Status FromLevelDb(const leveldb::Status &s) {
  if (s.ok()) return Status::OK();
  return Status::IOError("leveldb", s.ToString());
}

std::string_view View(const leveldb::Slice &s) { return {s.data(), s.size()}; }

class LevelDbCursor : public Cursor {
 public:
  explicit LevelDbCursor(leveldb::Iterator *it) : it_(it) {}
  void SeekToFirst() override { it_->SeekToFirst(); }
  void Seek(std::string_view key) override {
    it_->Seek(leveldb::Slice(key.data(), key.size()));
  }
  bool Valid() const override { return it_->Valid(); }
  void Next() override { it_->Next(); }
  std::string_view key() const override { return View(it_->key()); }
  size_t ValueSize() override { return it_->value().size(); }
  Status status() const override { return FromLevelDb(it_->status()); }

 private:
  std::unique_ptr<leveldb::Iterator> it_;
};

// The per-level rows of the "leveldb.stats" property:
//   Level  Files Size(MB) Time(sec) Read(MB) Write(MB)
struct LevelRow {
  int level = 0;
  double files = 0, size_mb = 0, time_s = 0, read_mb = 0, write_mb = 0;
};

std::vector<LevelRow> ParseStats(const std::string &text) {
  std::vector<LevelRow> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    LevelRow row;
    if (std::sscanf(line.c_str(), " %d %lf %lf %lf %lf %lf", &row.level,
                    &row.files, &row.size_mb, &row.time_s, &row.read_mb,
                    &row.write_mb) == 6) {
      rows.push_back(row);
    }
  }
  return rows;
}

class LevelDbEngine : public Engine {
 public:
  ~LevelDbEngine() override { (void)Close(); }

  Status Open(const std::string &dir, const EngineConfig &config) override {
    leveldb::Options options;
    options.create_if_missing = true;
    if (config.matched) {
      options.write_buffer_size = config.write_buffer_bytes;
      options.block_size = config.block_bytes;
      cache_.reset(leveldb::NewLRUCache(config.cache_bytes));
      options.block_cache = cache_.get();
      filter_.reset(leveldb::NewBloomFilterPolicy(config.bloom_bits));
      options.filter_policy = filter_.get();
    }
    write_options_.sync = config.sync;
    leveldb::DB *db = nullptr;
    leveldb::Status s = leveldb::DB::Open(options, dir, &db);
    if (!s.ok()) return FromLevelDb(s);
    db_.reset(db);
    return Status::OK();
  }

  Status Put(std::string_view key, std::string_view value) override {
    return FromLevelDb(db_->Put(write_options_,
                                leveldb::Slice(key.data(), key.size()),
                                leveldb::Slice(value.data(), value.size())));
  }

  Status Get(std::string_view key, bool *found, size_t *value_size) override {
    std::string value;
    leveldb::Status s = db_->Get(
        leveldb::ReadOptions(), leveldb::Slice(key.data(), key.size()), &value);
    *found = s.ok();
    *value_size = value.size();
    if (s.IsNotFound()) return Status::OK();
    return FromLevelDb(s);
  }

  std::unique_ptr<Cursor> NewCursor() override {
    return std::make_unique<LevelDbCursor>(
        db_->NewIterator(leveldb::ReadOptions()));
  }

  // LevelDB has no "compaction pending" property. Idle is judged from
  // "leveldb.stats": no level over its compaction trigger (4 level-0 files;
  // 10 MiB x 10^(L-1) for level L >= 1, its MaxBytesForLevel) and the
  // statistics unchanged for 300 ms, which covers a memtable flush or a
  // compaction still running. The quiet period is not counted: idle is the
  // first poll that saw the final state.
  Status WaitForIdle(std::chrono::steady_clock::time_point *idle_at) override {
    using Clock = std::chrono::steady_clock;
    std::string last;
    Clock::time_point stable_since = Clock::now();
    for (;;) {
      std::string stats;
      if (!db_->GetProperty("leveldb.stats", &stats)) {
        return Status::IOError("leveldb", "no leveldb.stats property");
      }
      bool over = false;
      for (const LevelRow &row : ParseStats(stats)) {
        if (row.level == 0) {
          over |= row.files >= 4;
        } else if (row.level < 6) {
          over |= row.size_mb > 10.0 * std::pow(10.0, row.level - 1);
        }
      }
      Clock::time_point now = Clock::now();
      if (stats != last || over) {
        last = stats;
        stable_since = now;
      } else if (now - stable_since >= std::chrono::milliseconds(300)) {
        *idle_at = stable_since;
        return Status::OK();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  EngineReport Report() override {
    EngineReport report;
    std::string stats;
    if (!db_->GetProperty("leveldb.stats", &stats)) return report;
    std::string files;
    double write_mb = 0;
    for (const LevelRow &row : ParseStats(stats)) {
      if (!files.empty()) files += ',';
      files += std::to_string(static_cast<int>(row.files));
      write_mb += row.write_mb;
    }
    // LevelDB counts flush and compaction output, not its log: the
    // engine-reported figure leaves the log out (see BENCHMARKS.md).
    report.detail = "files_per_level=" + (files.empty() ? "-" : files) +
                    ";flush_compaction_write_mb=" +
                    std::to_string(static_cast<int64_t>(write_mb));
    return report;
  }

  Status Close() override {
    db_.reset();
    return Status::OK();
  }

 private:
  // Declared before db_ so that they outlive it.
  std::unique_ptr<leveldb::Cache> cache_;
  std::unique_ptr<const leveldb::FilterPolicy> filter_;
  std::unique_ptr<leveldb::DB> db_;
  leveldb::WriteOptions write_options_;
};

}  // namespace

std::unique_ptr<Engine> NewLevelDbEngine() {
  return std::make_unique<LevelDbEngine>();
}

}  // namespace tabletfs::bench
