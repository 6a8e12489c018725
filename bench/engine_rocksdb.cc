// The RocksDB engine for the benchmark (Debian's librocksdb-dev, which is
// built with assertions enabled: a floor, not RocksDB at its best).
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "bench/engine.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"

namespace tabletfs::bench {
namespace {

Status FromRocksDb(const rocksdb::Status &s) {
  if (s.ok()) return Status::OK();
  return Status::IOError("rocksdb", s.ToString());
}

class RocksDbCursor : public Cursor {
 public:
  explicit RocksDbCursor(rocksdb::Iterator *it) : it_(it) {}
  void SeekToFirst() override { it_->SeekToFirst(); }
  void Seek(std::string_view key) override {
    it_->Seek(rocksdb::Slice(key.data(), key.size()));
  }
  bool Valid() const override { return it_->Valid(); }
  void Next() override { it_->Next(); }
  std::string_view key() const override {
    rocksdb::Slice k = it_->key();
    return {k.data(), k.size()};
  }
  size_t ValueSize() override { return it_->value().size(); }
  Status status() const override { return FromRocksDb(it_->status()); }

 private:
  std::unique_ptr<rocksdb::Iterator> it_;
};

double MapNumber(const std::map<std::string, std::string> &map,
                 const std::string &key) {
  auto it = map.find(key);
  if (it == map.end()) return -1;
  return std::strtod(it->second.c_str(), nullptr);
}

class RocksDbEngine : public Engine {
 public:
  ~RocksDbEngine() override { (void)Close(); }

  Status Open(const std::string &dir, const EngineConfig &config) override {
    rocksdb::Options options;
    options.create_if_missing = true;
    if (config.matched) {
      options.write_buffer_size = config.write_buffer_bytes;
      rocksdb::BlockBasedTableOptions table;
      table.block_size = config.block_bytes;
      table.block_cache = rocksdb::NewLRUCache(config.cache_bytes);
      table.filter_policy.reset(
          rocksdb::NewBloomFilterPolicy(config.bloom_bits));
      options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
    }
    write_options_.sync = config.sync;
    rocksdb::DB *db = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(options, dir, &db);
    if (!s.ok()) return FromRocksDb(s);
    db_.reset(db);
    return Status::OK();
  }

  Status Put(std::string_view key, std::string_view value) override {
    return FromRocksDb(db_->Put(write_options_,
                                rocksdb::Slice(key.data(), key.size()),
                                rocksdb::Slice(value.data(), value.size())));
  }

  Status Get(std::string_view key, bool *found, size_t *value_size) override {
    rocksdb::PinnableSlice value;
    rocksdb::Status s =
        db_->Get(rocksdb::ReadOptions(), db_->DefaultColumnFamily(),
                 rocksdb::Slice(key.data(), key.size()), &value);
    *found = s.ok();
    *value_size = value.size();
    if (s.IsNotFound()) return Status::OK();
    return FromRocksDb(s);
  }

  std::unique_ptr<Cursor> NewCursor() override {
    return std::make_unique<RocksDbCursor>(
        db_->NewIterator(rocksdb::ReadOptions()));
  }

  // Polls RocksDB's own properties until no flush or compaction is pending
  // or running (RocksDB 7.8 has no WaitForCompact).
  Status WaitForIdle(std::chrono::steady_clock::time_point *idle_at) override {
    static const char *const kBusy[] = {
        "rocksdb.compaction-pending", "rocksdb.num-running-compactions",
        "rocksdb.num-running-flushes", "rocksdb.mem-table-flush-pending"};
    for (;;) {
      bool busy = false;
      for (const char *property : kBusy) {
        uint64_t value = 0;
        if (!db_->GetIntProperty(property, &value)) {
          return Status::IOError("rocksdb",
                                 std::string("no property ") + property);
        }
        busy |= value != 0;
      }
      if (!busy) {
        *idle_at = std::chrono::steady_clock::now();
        return Status::OK();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // (log bytes + flush and compaction output) / user bytes, from the
  // "rocksdb.dbstats" and "rocksdb.cfstats" maps.
  EngineReport Report() override {
    EngineReport report;
    std::map<std::string, std::string> db_stats, cf_stats;
    if (!db_->GetMapProperty("rocksdb.dbstats", &db_stats) ||
        !db_->GetMapProperty("rocksdb.cfstats", &cf_stats)) {
      return report;
    }
    double user = MapNumber(db_stats, "db.user_bytes_written");
    double wal = MapNumber(db_stats, "db.wal_bytes_written");
    double compaction_gb = MapNumber(cf_stats, "compaction.Sum.WriteGB");
    if (user > 0 && wal >= 0 && compaction_gb >= 0) {
      report.write_amplification =
          (wal + compaction_gb * static_cast<double>(1ull << 30)) / user;
    }
    std::string files;
    for (int level = 0; level < 7; ++level) {
      std::string value;
      if (!db_->GetProperty(
              "rocksdb.num-files-at-level" + std::to_string(level), &value)) {
        break;
      }
      if (!files.empty()) files += ',';
      files += value;
    }
    report.detail = "files_per_level=" + (files.empty() ? "-" : files);
    return report;
  }

  Status Close() override {
    if (db_ == nullptr) return Status::OK();
    Status s = FromRocksDb(db_->Close());
    db_.reset();
    return s;
  }

 private:
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::WriteOptions write_options_;
};

}  // namespace

std::unique_ptr<Engine> NewRocksDbEngine() {
  return std::make_unique<RocksDbEngine>();
}

}  // namespace tabletfs::bench
