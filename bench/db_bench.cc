// tabletfs_dbbench: one db_bench-style workload on one engine per run, so
// that peak RSS and the process's I/O counters belong to that workload alone.
//
//   tabletfs_dbbench --engine=tabletfs|leveldb|rocksdb
//       --workload=fillseq|fillrandom|overwrite|readrandom|readmissing|
//                  readseq|seekrandom|mixed
//       --db=DIR [--num=N] [--reads=R] [--value_size=B]
//       [--compressible_fraction=F] [--threads=T] [--sync] [--matched]
//       [--write_buffer_size=B --block_size=B --cache_size=B --bloom_bits=N]
//       [--seed=S] [--label=TEXT] [--commit_interval_ms=N]
//
// Prints one line, `dbbench {json}`, on stdout; errors go to stderr with a
// non-zero exit. Keys are 16 bytes ("%016u" of an index in [0, num)), values
// are slices of a seeded pool that compresses to about
// compressible_fraction of its size (as db_bench's RandomGenerator), so all
// engines see the same bytes. fillrandom writes every index once in a seeded
// random order; overwrite writes `num` seeded random indexes; the read
// workloads (readrandom, readmissing, seekrandom = Seek + 10 Next, mixed =
// 90% reads and 10% overwrites) run `reads` operations (default num) on a
// database a fill left in DIR; readseq scans it all.
//
// Fill and overwrite runs are timed twice: until the last write returns and
// until the engine reports no flush or compaction running or pending (the
// headline figure). Disk bytes (allocated blocks under DIR) are taken then,
// before closing. Write amplification is reported two ways: bytes the process
// dirtied in the page cache (/proc/self/io write_bytes: page-granular, by
// write(2) or through a mapping, as tabletfs writes its commit log) per user
// byte, the same measure for every engine, and the engine's own figure where
// it has one.
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/engine.h"

namespace tabletfs::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kKeySize = 16;

struct Flags {
  std::string engine;
  std::string workload;
  std::string db;
  std::string label;
  uint64_t num = 1000000;
  uint64_t reads = 0;  // 0: num
  size_t value_size = 100;
  double compressible_fraction = 0.5;
  int threads = 1;
  uint64_t seed = 301;
  EngineConfig config;
};

bool ParseUint(std::string_view text, uint64_t *out) {
  if (text.empty()) return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = value;
  return true;
}

// --name=value or --name (for booleans). Returns an error message or "".
std::string ParseFlags(int argc, char **argv, Flags *flags) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.substr(0, 2) != "--")
      return "unexpected argument " + std::string(arg);
    arg.remove_prefix(2);
    std::string_view name = arg, value;
    bool has_value = false;
    if (size_t eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    uint64_t n = 0;
    auto number = [&](uint64_t *out) {
      if (!has_value || !ParseUint(value, &n)) return false;
      *out = n;
      return true;
    };
    auto boolean = [&](bool *out) {
      if (!has_value || value == "1" || value == "true") {
        *out = true;
      } else if (value == "0" || value == "false") {
        *out = false;
      } else {
        return false;
      }
      return true;
    };
    uint64_t tmp = 0;
    bool ok = true;
    if (name == "engine") {
      flags->engine = value;
    } else if (name == "workload") {
      flags->workload = value;
    } else if (name == "db") {
      flags->db = value;
    } else if (name == "label") {
      flags->label = value;
    } else if (name == "num") {
      ok = number(&flags->num);
    } else if (name == "reads") {
      ok = number(&flags->reads);
    } else if (name == "value_size") {
      ok = number(&tmp);
      flags->value_size = tmp;
    } else if (name == "threads") {
      ok = number(&tmp) && tmp >= 1 && tmp <= 64;
      flags->threads = static_cast<int>(tmp);
    } else if (name == "seed") {
      ok = number(&flags->seed);
    } else if (name == "compressible_fraction") {
      char *end = nullptr;
      std::string text(value);
      flags->compressible_fraction = std::strtod(text.c_str(), &end);
      ok = has_value && end != text.c_str() && *end == '\0' &&
           flags->compressible_fraction > 0 &&
           flags->compressible_fraction <= 1;
    } else if (name == "sync") {
      ok = boolean(&flags->config.sync);
    } else if (name == "matched") {
      ok = boolean(&flags->config.matched);
    } else if (name == "write_buffer_size") {
      ok = number(&tmp);
      flags->config.write_buffer_bytes = tmp;
    } else if (name == "block_size") {
      ok = number(&tmp);
      flags->config.block_bytes = tmp;
    } else if (name == "cache_size") {
      ok = number(&tmp);
      flags->config.cache_bytes = tmp;
    } else if (name == "commit_interval_ms") {
      // tabletfs: the commit interval (0: off); unset: the store's 5 s.
      ok = number(&tmp) && tmp <= 86400000;
      flags->config.commit_interval_ms = static_cast<int64_t>(tmp);
    } else if (name == "bloom_bits") {
      ok = number(&tmp);
      flags->config.bloom_bits = static_cast<int>(tmp);
    } else {
      return "unknown flag --" + std::string(name);
    }
    if (!ok) return "bad value for --" + std::string(name);
  }
  if (flags->engine.empty() || flags->workload.empty() || flags->db.empty()) {
    return "--engine, --workload and --db are required";
  }
  if (flags->num == 0) return "--num must be > 0";
  if (flags->reads == 0) flags->reads = flags->num;
  return "";
}

std::unique_ptr<Engine> NewEngine(std::string_view name) {
  if (name == "tabletfs") return NewTabletfsEngine();
  if (name == "leveldb") return NewLevelDbEngine();
  if (name == "rocksdb") return NewRocksDbEngine();
  return nullptr;
}

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Keys and values, a pure function of the flags and the seed.
class Data {
 public:
  Data(const Flags &flags) : value_size_(flags.value_size), seed_(flags.seed) {
    // As db_bench's RandomGenerator: 100-byte pieces, each a random printable
    // string of 100 * fraction bytes repeated, so a compressor gets the
    // value down to about `fraction` of its size.
    std::mt19937_64 rng(flags.seed);
    size_t size = std::max<size_t>(1u << 20, value_size_ * 4);
    size_t piece = 100;
    size_t random_len = std::max<size_t>(
        1, static_cast<size_t>(piece * flags.compressible_fraction));
    while (pool_.size() < size) {
      std::string random(random_len, ' ');
      for (char &c : random) c = static_cast<char>(' ' + rng() % 95);
      for (size_t i = 0; i < piece; ++i) pool_ += random[i % random_len];
    }
  }

  static void Key(uint64_t index, char *out) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%016" PRIu64, index);
    std::memcpy(out, buffer, kKeySize);
  }
  // Sorts between existing keys and never equals one.
  static void MissingKey(uint64_t index, char *out) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%015" PRIu64 "x", index);
    std::memcpy(out, buffer, kKeySize);
  }
  // `version` 0 for fills, 1 for overwrites.
  std::string_view Value(uint64_t index, uint64_t version) const {
    uint64_t span = pool_.size() - value_size_ + 1;
    uint64_t offset = Mix(seed_ ^ (index * 2 + version)) % span;
    return std::string_view(pool_).substr(offset, value_size_);
  }

 private:
  size_t value_size_;
  uint64_t seed_;
  std::string pool_;
};

// What the worker threads add up.
struct Totals {
  std::atomic<uint64_t> ops{0};
  std::atomic<uint64_t> found{0};
  std::atomic<uint64_t> bytes{0};
  std::mutex mu;
  Status error;  // the first one

  void Fail(const Status &s) {
    std::lock_guard<std::mutex> lock(mu);
    if (error.ok()) error = s;
  }
  bool failed() {
    std::lock_guard<std::mutex> lock(mu);
    return !error.ok();
  }
};

// Allocated bytes (st_blocks) and apparent bytes (st_size) of the files
// under dir. They differ where an engine preallocates (RocksDB's log).
uint64_t DiskBytes(const std::string &dir, uint64_t *apparent) {
  uint64_t total = 0;
  *apparent = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator();
       it.increment(ec)) {
    struct stat st;
    if (lstat(it->path().c_str(), &st) == 0) {
      total += static_cast<uint64_t>(st.st_blocks) * 512;
      if (S_ISREG(st.st_mode)) *apparent += static_cast<uint64_t>(st.st_size);
    }
  }
  return total;
}

// Bytes of page-cache pages this process dirtied, whether by write(2) or
// through a shared mapping (/proc/self/io write_bytes).
uint64_t DirtiedBytes() {
  std::ifstream in("/proc/self/io");
  std::string name;
  uint64_t value = 0;
  while (in >> name >> value) {
    if (name == "write_bytes:") return value;
  }
  return 0;
}

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Runs `body(thread, rng)` on flags.threads threads and waits.
template <typename Body>
void RunThreads(const Flags &flags, uint64_t workload_salt, Body body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < flags.threads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(
          Mix(flags.seed ^ (workload_salt << 8) ^ static_cast<uint64_t>(t)));
      body(t, rng);
    });
  }
  for (std::thread &thread : threads) thread.join();
}

int Run(const Flags &flags) {
  std::unique_ptr<Engine> engine = NewEngine(flags.engine);
  if (engine == nullptr) {
    std::fprintf(stderr, "tabletfs_dbbench: unknown engine '%s'\n",
                 flags.engine.c_str());
    return 2;
  }
  const std::string &w = flags.workload;
  bool fill = w == "fillseq" || w == "fillrandom";
  bool writes = fill || w == "overwrite";
  bool known = writes || w == "readrandom" || w == "readmissing" ||
               w == "readseq" || w == "seekrandom" || w == "mixed";
  if (!known) {
    std::fprintf(stderr, "tabletfs_dbbench: unknown workload '%s'\n",
                 w.c_str());
    return 2;
  }
  if (!fill && !std::filesystem::exists(flags.db)) {
    std::fprintf(stderr,
                 "tabletfs_dbbench: %s needs a database that a fill left in "
                 "%s\n",
                 w.c_str(), flags.db.c_str());
    return 2;
  }

  Data data(flags);
  std::vector<uint32_t> order;
  if (w == "fillrandom") {
    order.resize(flags.num);
    for (uint64_t i = 0; i < flags.num; ++i)
      order[i] = static_cast<uint32_t>(i);
    std::mt19937_64 rng(Mix(flags.seed ^ 0xf111));
    std::shuffle(order.begin(), order.end(), rng);
  }

  Status s = engine->Open(flags.db, flags.config);
  if (!s.ok()) {
    std::fprintf(stderr, "tabletfs_dbbench: open %s: %s\n", flags.db.c_str(),
                 s.ToString().c_str());
    return 1;
  }

  Totals totals;
  uint64_t dirtied_before = DirtiedBytes();
  Clock::time_point start = Clock::now();
  const int threads = flags.threads;

  if (writes) {
    RunThreads(flags, fill ? 1 : 2, [&](int t, std::mt19937_64 &rng) {
      char key[kKeySize];
      for (uint64_t i = static_cast<uint64_t>(t); i < flags.num;
           i += static_cast<uint64_t>(threads)) {
        uint64_t index = w == "fillseq"      ? i
                         : w == "fillrandom" ? order[i]
                                             : rng() % flags.num;
        Data::Key(index, key);
        std::string_view value = data.Value(index, fill ? 0 : 1);
        Status put = engine->Put(std::string_view(key, kKeySize), value);
        if (!put.ok()) {
          totals.Fail(put);
          return;
        }
        totals.ops.fetch_add(1, std::memory_order_relaxed);
        totals.bytes.fetch_add(kKeySize + value.size(),
                               std::memory_order_relaxed);
      }
    });
  } else if (w == "readseq") {
    std::unique_ptr<Cursor> cursor = engine->NewCursor();
    uint64_t ops = 0, bytes = 0;
    for (cursor->SeekToFirst(); cursor->Valid(); cursor->Next()) {
      bytes += cursor->key().size() + cursor->ValueSize();
      ++ops;
    }
    if (!cursor->status().ok()) totals.Fail(cursor->status());
    totals.ops = ops;
    totals.found = ops;
    totals.bytes = bytes;
  } else {
    uint64_t salt = w == "readrandom"    ? 3
                    : w == "readmissing" ? 4
                    : w == "seekrandom"  ? 5
                                         : 6;
    RunThreads(flags, salt, [&](int t, std::mt19937_64 &rng) {
      char key[kKeySize];
      std::unique_ptr<Cursor> cursor;
      if (w == "seekrandom") cursor = engine->NewCursor();
      uint64_t ops = 0, found = 0, bytes = 0;
      for (uint64_t i = static_cast<uint64_t>(t); i < flags.reads;
           i += static_cast<uint64_t>(threads)) {
        uint64_t index = rng() % flags.num;
        Status op;
        if (w == "mixed" && rng() % 10 == 0) {
          Data::Key(index, key);
          std::string_view value = data.Value(index, 1);
          op = engine->Put(std::string_view(key, kKeySize), value);
          bytes += kKeySize + value.size();
        } else if (w == "seekrandom") {
          Data::Key(index, key);
          cursor->Seek(std::string_view(key, kKeySize));
          for (int n = 0; n < 11 && cursor->Valid(); ++n) {
            if (n > 0) cursor->Next();
            if (!cursor->Valid()) break;
            bytes += cursor->key().size() + cursor->ValueSize();
          }
          if (cursor->Valid() || index + 10 >= flags.num) ++found;
          op = cursor->status();
        } else {
          if (w == "readmissing") {
            Data::MissingKey(index, key);
          } else {
            Data::Key(index, key);
          }
          bool hit = false;
          size_t value_size = 0;
          op = engine->Get(std::string_view(key, kKeySize), &hit, &value_size);
          if (hit) {
            ++found;
            bytes += kKeySize + value_size;
          }
        }
        if (!op.ok()) {
          totals.Fail(op);
          break;
        }
        ++ops;
      }
      totals.ops += ops;
      totals.found += found;
      totals.bytes += bytes;
    });
  }

  Clock::time_point last_write = Clock::now();
  Clock::time_point idle = last_write;
  if (!totals.failed() && writes) {
    Status settle = engine->WaitForIdle(&idle);
    if (!settle.ok()) totals.Fail(settle);
    idle = std::max(idle, last_write);
  }
  uint64_t dirtied = DirtiedBytes() - dirtied_before;
  EngineReport report = engine->Report();
  // Before Close: RocksDB flushes its memtable at close, the others do not.
  uint64_t apparent_bytes = 0;
  uint64_t disk_bytes = DiskBytes(flags.db, &apparent_bytes);
  Status closed = engine->Close();
  if (!closed.ok()) totals.Fail(closed);
  if (totals.failed()) {
    std::fprintf(stderr, "tabletfs_dbbench: %s on %s: %s\n", w.c_str(),
                 flags.engine.c_str(), totals.error.ToString().c_str());
    return 1;
  }

  struct rusage usage;
  long peak_rss_kb = getrusage(RUSAGE_SELF, &usage) == 0 ? usage.ru_maxrss : -1;
  double last_write_s =
      std::chrono::duration<double>(last_write - start).count();
  double idle_s = std::chrono::duration<double>(idle - start).count();
  double elapsed_s = writes ? idle_s : last_write_s;
  uint64_t ops = totals.ops.load();
  uint64_t bytes = totals.bytes.load();
  uint64_t user_bytes = writes ? bytes : 0;
  double wamp_io =
      writes && bytes > 0 ? static_cast<double>(dirtied) / bytes : -1;

  char line[2048];
  std::snprintf(
      line, sizeof line,
      "dbbench {\"engine\":%s,\"workload\":%s,\"label\":%s,\"num\":%" PRIu64
      ",\"ops\":%" PRIu64 ",\"found\":%" PRIu64
      ",\"key_size\":%zu,\"value_size\":%zu,\"threads\":%d,\"sync\":%d,"
      "\"matched\":%d,\"elapsed_s\":%.6f,\"last_write_s\":%.6f,"
      "\"idle_s\":%.6f,\"ops_per_s\":%.1f,\"ops_per_s_last_write\":%.1f,"
      "\"mb_per_s\":%.3f,\"bytes\":%" PRIu64 ",\"user_bytes\":%" PRIu64
      ",\"disk_bytes\":%" PRIu64 ",\"disk_apparent_bytes\":%" PRIu64
      ",\"peak_rss_kb\":%ld,\"io_write_bytes\":%" PRIu64
      ",\"wamp_io\":%.3f,\"wamp_engine\":%.3f,\"detail\":%s}\n",
      JsonString(flags.engine).c_str(), JsonString(w).c_str(),
      JsonString(flags.label).c_str(), flags.num, ops, totals.found.load(),
      kKeySize, flags.value_size, flags.threads, flags.config.sync ? 1 : 0,
      flags.config.matched ? 1 : 0, elapsed_s, last_write_s,
      writes ? idle_s : 0.0, elapsed_s > 0 ? ops / elapsed_s : 0.0,
      last_write_s > 0 ? ops / last_write_s : 0.0,
      elapsed_s > 0 ? bytes / elapsed_s / 1e6 : 0.0, bytes, user_bytes,
      disk_bytes, apparent_bytes, peak_rss_kb, dirtied, wamp_io,
      report.write_amplification, JsonString(report.detail).c_str());
  std::fputs(line, stdout);
  return 0;
}

}  // namespace
}  // namespace tabletfs::bench

int main(int argc, char **argv) {
  tabletfs::bench::Flags flags;
  std::string error = tabletfs::bench::ParseFlags(argc, argv, &flags);
  if (!error.empty()) {
    std::fprintf(stderr, "tabletfs_dbbench: %s (see bench/db_bench.cc)\n",
                 error.c_str());
    return 2;
  }
  return tabletfs::bench::Run(flags);
}
