// tabletfs_tabletbench: the longest pause a tablet split or merge imposes
// on readers and writers (issue 6: target under 10 ms).
//
//   tabletfs_tabletbench --db=DIR [--split_bytes=B] [--num=N]
//       [--value_size=B] [--writers=W] [--delete_fraction=F] [--seed=S]
//       [--label=TEXT]
//
// One table, keys "%016llu" of an index in [0, num), one cell f:v of
// value_size bytes (half compressible). Phase 1: W writer threads write
// every index once in a seeded random order, so every tablet grows and
// splits, while one reader thread reads random rows (and every 64th
// operation scans 20 rows from a random key) until the writers are done.
// Phase 2 (merges): the writers delete the first delete_fraction of the
// key space (one DeleteRow per key, in random order), then CompactAll
// drops the deleted data and the emptied tablets merge, the reader still
// running. --split_bytes=0 turns splits and merges off (tablet_split_bytes
// at its maximum): the baseline. Every operation's latency is recorded.
//
// Prints one line, `tabletbench {json}`: splits, merges, tablets at the
// end, the engine's tablet_max_pause_micros (the longest time writers were
// held back for a split, merge or freeze), and per kind (write, delete,
// read = point read, scan = 20-row scan; reads and scans also per phase,
// e.g. read_writephase, scan_deletephase) the count, max, p99.9 and p99
// latency in microseconds, plus the run's seconds. Errors go to stderr with
// a non-zero exit.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "store/db.h"

namespace tabletfs::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kTable = "bench";

struct Flags {
  std::string db;
  std::string label;
  uint64_t split_bytes = 4ull << 20;
  uint64_t num = 1000000;
  size_t value_size = 1000;
  int writers = 2;
  double delete_fraction = 0.9;
  uint64_t seed = 301;
};

bool ParseUint(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = value;
  return true;
}

std::string ParseFlags(int argc, char** argv, Flags* flags) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.substr(0, 2) != "--")
      return "unexpected argument " + std::string(arg);
    arg.remove_prefix(2);
    size_t eq = arg.find('=');
    std::string_view name = arg.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? "" : arg.substr(eq + 1);
    uint64_t u = 0;
    bool ok = true;
    if (name == "db") {
      flags->db = value;
    } else if (name == "label") {
      flags->label = value;
    } else if (name == "split_bytes") {
      ok = ParseUint(value, &flags->split_bytes);
    } else if (name == "num") {
      ok = ParseUint(value, &flags->num) && flags->num > 0;
    } else if (name == "value_size") {
      ok = ParseUint(value, &u);
      flags->value_size = u;
    } else if (name == "writers") {
      ok = ParseUint(value, &u) && u >= 1 && u <= 64;
      flags->writers = static_cast<int>(u);
    } else if (name == "delete_fraction") {
      char* end = nullptr;
      std::string v(value);
      flags->delete_fraction = std::strtod(v.c_str(), &end);
      ok = !v.empty() && *end == '\0' && flags->delete_fraction >= 0 &&
           flags->delete_fraction <= 1;
    } else if (name == "seed") {
      ok = ParseUint(value, &flags->seed);
    } else {
      return "unknown flag --" + std::string(name);
    }
    if (!ok) return "bad value for --" + std::string(name);
  }
  if (flags->db.empty()) return "--db is required";
  return "";
}

std::string Key(uint64_t index) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016" PRIu64, index);
  return buf;
}

// Latencies of one kind of operation, in nanoseconds.
struct Latencies {
  std::vector<uint64_t> nanos;
  void Add(Clock::duration d) {
    auto n = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    nanos.push_back(static_cast<uint64_t>(std::max<int64_t>(n, 0)));
  }
  void Merge(const Latencies& o) {
    nanos.insert(nanos.end(), o.nanos.begin(), o.nanos.end());
  }
  // "kind_count":..,"kind_max_us":..,"kind_p999_us":..,"kind_p99_us":..
  std::string Json(const char* kind) {
    std::sort(nanos.begin(), nanos.end());
    auto at = [&](double q) -> double {
      if (nanos.empty()) return 0;
      size_t i = static_cast<size_t>(q * static_cast<double>(nanos.size() - 1));
      return nanos[i] / 1000.0;
    };
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "\"%s_count\":%zu,\"%s_max_us\":%.1f,\"%s_p999_us\":%.1f,"
                  "\"%s_p99_us\":%.1f",
                  kind, nanos.size(), kind, nanos.empty() ? 0.0 : at(1.0), kind,
                  at(0.999), kind, at(0.99));
    return buf;
  }
};

[[noreturn]] void Die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "tabletfs_tabletbench: %s: %s\n", what.c_str(),
               s.ToString().c_str());
  std::exit(1);
}

int Run(const Flags& flags) {
  std::error_code ec;
  std::filesystem::remove_all(flags.db, ec);
  Options options;
  options.create_if_missing = true;
  options.tablet_split_bytes = flags.split_bytes == 0
                                   ? std::numeric_limits<uint64_t>::max()
                                   : flags.split_bytes;
  auto opened = DB::Open(options, flags.db);
  if (!opened.ok()) Die("open " + flags.db, opened.status());
  std::unique_ptr<DB> db = std::move(opened).value();
  Status s = db->CreateTable(kTable);
  if (s.ok()) {
    FamilySettings settings;
    settings.gc_policy = GcPolicy::MaxVersions(1);
    s = db->CreateFamily(kTable, "f", settings);
  }
  if (!s.ok()) Die("schema", s);

  // A value pool that compresses to about half (as db_bench's).
  std::mt19937_64 pool_rng(flags.seed);
  std::string pool;
  while (pool.size() < flags.value_size + (1 << 20)) {
    std::string chunk(100, ' ');
    for (size_t i = 0; i < 50; ++i) {
      chunk[i] = static_cast<char>(' ' + pool_rng() % 95);
    }
    pool += chunk;
  }

  // Each index once, in a seeded random order, dealt out to the writers.
  std::vector<uint64_t> order(flags.num);
  for (uint64_t i = 0; i < flags.num; ++i) order[i] = i;
  std::mt19937_64 rng(flags.seed);
  std::shuffle(order.begin(), order.end(), rng);
  const uint64_t deletes = static_cast<uint64_t>(
      flags.delete_fraction * static_cast<double>(flags.num));
  std::vector<uint64_t> delete_order;
  for (uint64_t i = 0; i < deletes; ++i) delete_order.push_back(i);
  std::shuffle(delete_order.begin(), delete_order.end(), rng);

  std::vector<Latencies> write_lat(flags.writers), delete_lat(flags.writers);
  // Point reads and 20-row scans, each per phase: a scan in the delete phase
  // may have to step over every deleted row after its start key (until
  // the compaction drops them), which no point read does.
  Latencies read_lat[2], scan_lat[2];
  std::atomic<int> phase{0};
  std::atomic<bool> stop_reader{false};
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> reads_found{0};

  std::thread reader([&] {
    std::mt19937_64 r(flags.seed + 1000);
    uint64_t n = 0;
    while (!stop_reader.load(std::memory_order_relaxed)) {
      std::string key = Key(r() % flags.num);
      auto start = Clock::now();
      if (++n % 64 == 0) {
        ScanOptions so;
        so.start_row = key;
        auto sc = db->NewScanner(kTable, so);
        if (!sc.ok()) {
          std::fprintf(stderr, "scan: %s\n", sc.status().ToString().c_str());
          failed = true;
          return;
        }
        for (int i = 0; i < 20 && (*sc)->Valid(); ++i) (*sc)->NextRow();
        if (!(*sc)->status().ok()) {
          std::fprintf(stderr, "scan: %s\n",
                       (*sc)->status().ToString().c_str());
          failed = true;
          return;
        }
      } else {
        auto row = db->ReadRow(kTable, key, ReadOptions());
        if (!row.ok()) {
          std::fprintf(stderr, "read: %s\n", row.status().ToString().c_str());
          failed = true;
          return;
        }
        if (!row->cells.empty()) ++reads_found;
      }
      int p = phase.load(std::memory_order_relaxed);
      (n % 64 == 0 ? scan_lat : read_lat)[p].Add(Clock::now() - start);
    }
  });

  auto run_writers = [&](const std::vector<uint64_t>& indexes, bool del,
                         std::vector<Latencies>* lat) {
    std::vector<std::thread> threads;
    for (int w = 0; w < flags.writers; ++w) {
      threads.emplace_back([&, w] {
        std::mt19937_64 r(flags.seed + 1 + w);
        for (size_t i = w; i < indexes.size() && !failed; i += flags.writers) {
          RowMutation m(Key(indexes[i]));
          if (del) {
            m.DeleteRow();
          } else {
            size_t offset = r() % (pool.size() - flags.value_size);
            m.SetCell("f", "v",
                      std::string_view(pool).substr(offset, flags.value_size));
          }
          auto start = Clock::now();
          auto res = db->Apply(kTable, m, WriteOptions());
          (*lat)[w].Add(Clock::now() - start);
          if (!res.ok()) {
            std::fprintf(stderr, "write: %s\n",
                         res.status().ToString().c_str());
            failed = true;
          }
        }
      });
    }
    for (auto& t : threads) t.join();
  };

  auto t0 = Clock::now();
  run_writers(order, false, &write_lat);
  if (!failed) s = db->WaitForIdle();
  if (!s.ok()) Die("wait for idle", s);
  DbStats after_writes = db->GetStats();
  auto t1 = Clock::now();
  phase = 1;
  if (!failed && deletes > 0) {
    run_writers(delete_order, true, &delete_lat);
    if (!failed) s = db->CompactAll();
    if (s.ok() && !failed) s = db->WaitForIdle();
    if (!s.ok()) Die("compact", s);
  }
  auto t2 = Clock::now();
  stop_reader = true;
  reader.join();
  if (failed) return 1;
  DbStats stats = db->GetStats();

  Latencies writes, dels, reads, scans;
  for (const auto& l : read_lat) reads.Merge(l);
  for (const auto& l : scan_lat) scans.Merge(l);
  for (const auto& l : write_lat) writes.Merge(l);
  for (const auto& l : delete_lat) dels.Merge(l);
  auto secs = [](Clock::duration d) {
    return std::chrono::duration<double>(d).count();
  };
  std::printf(
      "tabletbench {\"label\":\"%s\",\"split_bytes\":%" PRIu64
      ",\"num\":%" PRIu64
      ",\"value_size\":%zu,\"writers\":%d,\"deletes\":%" PRIu64
      ",\"splits\":%" PRIu64 ",\"merges\":%" PRIu64 ",\"tablets_peak\":%" PRIu64
      ",\"tablets\":%" PRIu64 ",\"max_pause_us\":%" PRIu64
      ",\"write_stalls\":%" PRIu64 ",\"write_delays\":%" PRIu64
      ",\"flushes\":%" PRIu64 ",\"flushes_during_compactions\":%" PRIu64
      ",\"write_seconds\":%.2f,\"delete_seconds\":%.2f,\"reads_found\":%" PRIu64
      ",%s,%s,%s,%s,%s,%s,%s,%s}\n",
      flags.label.c_str(), flags.split_bytes, flags.num, flags.value_size,
      flags.writers, deletes, stats.tablet_splits, stats.tablet_merges,
      after_writes.tablets, stats.tablets, stats.tablet_max_pause_micros,
      after_writes.write_stalls, after_writes.write_delays,
      after_writes.flushes, after_writes.flushes_during_compactions,
      secs(t1 - t0), secs(t2 - t1), reads_found.load(),
      writes.Json("write").c_str(), dels.Json("delete").c_str(),
      reads.Json("read").c_str(), scans.Json("scan").c_str(),
      read_lat[0].Json("read_writephase").c_str(),
      read_lat[1].Json("read_deletephase").c_str(),
      scan_lat[0].Json("scan_writephase").c_str(),
      scan_lat[1].Json("scan_deletephase").c_str());
  db.reset();
  std::filesystem::remove_all(flags.db, ec);
  return 0;
}

}  // namespace
}  // namespace tabletfs::bench

int main(int argc, char** argv) {
  tabletfs::bench::Flags flags;
  std::string error = tabletfs::bench::ParseFlags(argc, argv, &flags);
  if (!error.empty()) {
    std::fprintf(stderr, "tabletfs_tabletbench: %s\n", error.c_str());
    return 2;
  }
  return tabletfs::bench::Run(flags);
}
