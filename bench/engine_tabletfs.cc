// The tabletfs engine for the benchmark: each key is a row of table "bench"
// with one cell f:v (see engine.h).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "bench/engine.h"
#include "store/db.h"

namespace tabletfs::bench {
namespace {

constexpr std::string_view kTable = "bench";
constexpr std::string_view kFamily = "f";
constexpr std::string_view kQualifier = "v";

class TabletfsCursor : public Cursor {
 public:
  explicit TabletfsCursor(std::unique_ptr<Scanner> scanner)
      : scanner_(std::move(scanner)) {}

  void SeekToFirst() override { scanner_->SeekToFirst(); }
  void Seek(std::string_view key) override { scanner_->Seek(key); }
  bool Valid() const override { return status_.ok() && scanner_->Valid(); }
  void Next() override { scanner_->NextRow(); }
  std::string_view key() const override { return scanner_->row(); }
  size_t ValueSize() override {
    Result<std::string_view> value = scanner_->value();
    if (!value.ok()) {
      status_ = value.status();
      return 0;
    }
    return value->size();
  }
  Status status() const override {
    if (!status_.ok()) return status_;
    return scanner_->status();
  }

 private:
  std::unique_ptr<Scanner> scanner_;
  Status status_;
};

// A cursor that only reports the error that kept it from being made.
class ErrorCursor : public Cursor {
 public:
  explicit ErrorCursor(Status status) : status_(std::move(status)) {}
  void SeekToFirst() override {}
  void Seek(std::string_view) override {}
  bool Valid() const override { return false; }
  void Next() override {}
  std::string_view key() const override { return {}; }
  size_t ValueSize() override { return 0; }
  Status status() const override { return status_; }

 private:
  Status status_;
};

class TabletfsEngine : public Engine {
 public:
  Status Open(const std::string &dir, const EngineConfig &config) override {
    Options options;
    options.create_if_missing = true;
    // TABLETFS_BENCH_LOG=1: the engine's log lines (flushes, compactions,
    // splits) on stderr, to see what a run did.
    if (const char *log = std::getenv("TABLETFS_BENCH_LOG");
        log != nullptr && std::string_view(log) == "1") {
      options.logger = [](LogLevel, std::string_view line) {
        std::fprintf(stderr, "tabletfs: %.*s\n", static_cast<int>(line.size()),
                     line.data());
      };
    }
    if (config.matched) {
      options.memtable_bytes = config.write_buffer_bytes;
      options.block_size = config.block_bytes;
      options.block_cache_bytes = config.cache_bytes;
      options.bloom_bits_per_key = config.bloom_bits;
    }
    if (config.commit_interval_ms >= 0) {
      options.commit_interval =
          std::chrono::milliseconds(config.commit_interval_ms);
    }
    write_options_.sync = config.sync;
    Result<std::unique_ptr<DB>> db = DB::Open(options, dir);
    if (!db.ok()) return db.status();
    db_ = std::move(db).value();

    Status s = db_->CreateTable(kTable);
    if (!s.ok() && s.code() != Status::Code::kAlreadyExists) return s;
    FamilySettings settings;
    settings.gc_policy = GcPolicy::MaxVersions(1);
    s = db_->CreateFamily(kTable, kFamily, settings);
    if (!s.ok() && s.code() != Status::Code::kAlreadyExists) return s;
    return Status::OK();
  }

  Status Put(std::string_view key, std::string_view value) override {
    RowMutation mutation{std::string(key)};
    mutation.SetCell(kFamily, kQualifier, value);
    Result<int64_t> applied = db_->Apply(kTable, mutation, write_options_);
    return applied.ok() ? Status::OK() : applied.status();
  }

  Status Get(std::string_view key, bool *found, size_t *value_size) override {
    Result<std::vector<Cell>> cells =
        db_->ReadCell(kTable, key, kFamily, kQualifier, ReadOptions());
    if (!cells.ok()) return cells.status();
    *found = !cells->empty();
    *value_size = *found ? cells->front().value.size() : 0;
    return Status::OK();
  }

  std::unique_ptr<Cursor> NewCursor() override {
    Result<std::unique_ptr<Scanner>> scanner =
        db_->NewScanner(kTable, ScanOptions());
    if (!scanner.ok()) return std::make_unique<ErrorCursor>(scanner.status());
    return std::make_unique<TabletfsCursor>(std::move(scanner).value());
  }

  Status WaitForIdle(std::chrono::steady_clock::time_point *idle_at) override {
    Status s = db_->WaitForIdle();
    *idle_at = std::chrono::steady_clock::now();
    return s;
  }

  EngineReport Report() override {
    EngineReport report;
    DbStats stats = db_->GetStats();
    if (stats.bytes_written_by_user > 0) {
      report.write_amplification =
          static_cast<double>(stats.bytes_written_to_disk) /
          static_cast<double>(stats.bytes_written_by_user);
    }
    std::string files;
    for (const LevelStats &level : stats.levels) {
      if (!files.empty()) files += ',';
      files += std::to_string(level.files);
    }
    report.detail =
        "files_per_level=" + (files.empty() ? "-" : files) +
        ";flushes=" + std::to_string(stats.flushes) +
        ";compactions=" + std::to_string(stats.compactions) +
        ";stalls=" + std::to_string(stats.write_stalls) +
        ";delays=" + std::to_string(stats.write_delays) +
        ";point_reads=" + std::to_string(stats.point_reads) +
        ";bloom_useful=" + std::to_string(stats.bloom_useful) +
        ";memtable_filter_useful=" +
        std::to_string(stats.memtable_filter_useful) +
        ";table_block_reads=" + std::to_string(stats.table_block_reads) +
        ";table_read_bytes=" + std::to_string(stats.table_read_bytes) +
        ";cache_hits=" + std::to_string(stats.block_cache_hits) +
        ";cache_misses=" + std::to_string(stats.block_cache_misses) +
        ";commit_syncs=" + std::to_string(stats.commit_syncs) +
        ";commit_sync_ms=" + std::to_string(stats.commit_sync_micros / 1000);
    return report;
  }

  Status Close() override {
    if (db_ == nullptr) return Status::OK();
    Status s = db_->BackgroundError();
    db_.reset();
    return s;
  }

 private:
  std::unique_ptr<DB> db_;
  WriteOptions write_options_;
};

}  // namespace

std::unique_ptr<Engine> NewTabletfsEngine() {
  return std::make_unique<TabletfsEngine>();
}

}  // namespace tabletfs::bench
