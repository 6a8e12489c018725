// Helpers for the engine reliability tests (tests/store/reliability/): a
// workload of random row mutations whose every cell version can be traced
// back to the mutation that wrote it, and a checker that compares a
// database with what was written.
//
// Each mutation gets a unique id and writes 1-4 cells of one row, all at
// timestamp == id, with values "m<id>/<family>:<qualifier>/<padding>". So a
// version found in the database names its mutation, and a mutation is
// all-or-nothing exactly when either every one of its cells holds the
// version at its timestamp or none does.
//
// Thread safety: one test thread.
#ifndef TABLETFS_TESTS_STORE_RELIABILITY_RELIABILITY_UTIL_H_
#define TABLETFS_TESTS_STORE_RELIABILITY_RELIABILITY_UTIL_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "store/db.h"
#include "store/env.h"
#include "store/options.h"
#include "tests/util/gcc_bug_105329.h"

namespace tabletfs::reliability {

inline constexpr char kDir[] = "/db";
inline constexpr char kTable[] = "t";

// Seeds: TABLETFS_SEED=<n> runs that one seed; otherwise `defaults`.
inline std::vector<uint64_t> Seeds(std::vector<uint64_t> defaults) {
  if (const char* s = std::getenv("TABLETFS_SEED")) {
    return {std::strtoull(s, nullptr, 10)};
  }
  return defaults;
}

// Small sizes so that a few hundred mutations flush memtables, write
// several SSTables and value files, and compact.
inline Options SmallOptions(Env* env) {
  Options o;
  o.env = env;
  o.memtable_bytes = 32 << 10;
  o.block_size = 1024;
  o.block_cache_bytes = 256 << 10;
  o.target_file_bytes = 64 << 10;
  o.large_value_bytes = 2048;
  o.space_reserve_bytes = 0;
  // No commit thread: its syncs would come at times that differ from run to
  // run, and these tests count and fail disk calls one by one. The commit
  // interval has its own tests (tests/store/db/db_durability_test.cc).
  o.commit_interval = std::chrono::milliseconds(0);
  if (std::getenv("TABLETFS_TEST_LOG") != nullptr) {
    // TABLETFS_TEST_LOG=1: the engine's event lines on stderr.
    o.logger = [](LogLevel level, std::string_view line) {
      std::fprintf(stderr, "[engine %d] %.*s\n", static_cast<int>(level),
                   static_cast<int>(line.size()), line.data());
    };
  }
  return o;
}

struct CellWrite {
  std::string family;
  std::string qualifier;
  std::string value;
};

struct Mutation {
  int64_t id = 0;  // also the timestamp of every cell it writes
  std::string row;
  std::vector<CellWrite> cells;
  bool sync = false;
};

class Workload {
 public:
  explicit Workload(uint64_t seed) : rng_(seed) {}

  std::mt19937_64& rng() { return rng_; }
  bool OneIn(int n) { return rng_() % n == 0; }

  // A new mutation with the next id.
  // GCC bug 105329: a false -Wrestrict in "r" + std::to_string(...) and the
  // like, below.
  TABLETFS_GCC_BUG_105329_BEGIN
  Mutation Next() {
    Mutation m;
    m.id = ++last_id_;
    m.row = "r" + std::to_string(rng_() % 40);
    std::set<std::pair<std::string, std::string>> used;
    int n = 1 + static_cast<int>(rng_() % 4);
    for (int i = 0; i < n; ++i) {
      std::string family = rng_() % 2 ? "f" : "g";
      std::string qualifier = "q" + std::to_string(rng_() % 5);
      if (!used.insert({family, qualifier}).second) continue;
      size_t pad = OneIn(10) ? 2048 + rng_() % 4096 : rng_() % 300;
      std::string value = "m" + std::to_string(m.id) + "/" + family + ":" +
                          qualifier + "/" +
                          std::string(pad, static_cast<char>('a' + m.id % 26));
      m.cells.push_back({family, qualifier, value});
    }
    m.sync = OneIn(5);
    return m;
  }
  TABLETFS_GCC_BUG_105329_END

  static RowMutation ToRowMutation(const Mutation& m) {
    RowMutation rm(m.row);
    for (const CellWrite& c : m.cells) {
      rm.SetCell(c.family, c.qualifier, m.id, c.value);
    }
    return rm;
  }

 private:
  std::mt19937_64 rng_;
  int64_t last_id_ = 0;
};

// Creates kTable with families f and g (schema writes are durable).
inline Status CreateSchema(Bigtable* db) {
  Status s = db->CreateTable(kTable);
  if (!s.ok()) return s;
  s = db->CreateFamily(kTable, "f", FamilySettings());
  if (!s.ok()) return s;
  return db->CreateFamily(kTable, "g", FamilySettings());
}

// What a database holds, compared with what was written.
struct CheckResult {
  Status read_error;                // first read error (then nothing else)
  std::vector<std::string> errors;  // broken promises, human-readable
  std::set<int64_t> present;        // mutations found whole
  uint64_t versions = 0;            // cell versions read
};

// Reads every row of kTable (all versions) and checks:
//   - every version belongs to a mutation in `written` with exactly the
//     value written (never wrong or invented data);
//   - every mutation is all-or-nothing;
//   - every id in `must_survive` is present.
inline CheckResult CheckDb(DB* db, const std::map<int64_t, Mutation>& written,
                           const std::set<int64_t>& must_survive) {
  CheckResult out;
  // (row, family, qualifier, ts) -> value
  std::map<std::tuple<std::string, std::string, std::string, int64_t>,
           std::string>
      found;
  ScanOptions so;
  so.read.max_versions = 0;
  auto scanner = db->NewScanner(kTable, so);
  if (!scanner.ok()) {
    out.read_error = scanner.status();
    return out;
  }
  Scanner& sc = **scanner;
  for (; sc.Valid(); sc.Next()) {
    auto value = sc.value();
    if (!value.ok()) {
      out.read_error = value.status();
      return out;
    }
    found[{std::string(sc.row()), std::string(sc.family()),
           std::string(sc.qualifier()), sc.timestamp()}] = std::string(*value);
    ++out.versions;
  }
  if (!sc.status().ok()) {
    out.read_error = sc.status();
    return out;
  }
  std::map<int64_t, size_t> cells_found;
  for (const auto& [key, value] : found) {
    const auto& [row, family, qualifier, ts] = key;
    auto it = written.find(ts);
    bool ok = false;
    if (it != written.end() && it->second.row == row) {
      for (const CellWrite& c : it->second.cells) {
        if (c.family == family && c.qualifier == qualifier &&
            c.value == value) {
          ok = true;
        }
      }
    }
    if (!ok) {
      out.errors.push_back("unexpected version " + row + "/" + family + ":" +
                           qualifier + "@" + std::to_string(ts) + " = '" +
                           value.substr(0, 40) + "'");
    } else {
      ++cells_found[ts];
    }
  }
  for (const auto& [id, n] : cells_found) {
    const Mutation& m = written.at(id);
    if (n != m.cells.size()) {
      out.errors.push_back("mutation " + std::to_string(id) +
                           " is partial: " + std::to_string(n) + " of " +
                           std::to_string(m.cells.size()) + " cells");
    } else {
      out.present.insert(id);
    }
  }
  for (int64_t id : must_survive) {
    if (cells_found.count(id) == 0) {
      out.errors.push_back("acknowledged durable mutation " +
                           std::to_string(id) + " (row " + written.at(id).row +
                           ") is lost");
    }
  }
  return out;
}

// The first few errors, one per line.
inline std::string Describe(const CheckResult& r, size_t max = 8) {
  std::string s;
  if (!r.read_error.ok()) s += "read error: " + r.read_error.ToString() + "\n";
  for (size_t i = 0; i < r.errors.size() && i < max; ++i) {
    s += r.errors[i] + "\n";
  }
  if (r.errors.size() > max) {
    s += "... " + std::to_string(r.errors.size() - max) + " more\n";
  }
  return s;
}

}  // namespace tabletfs::reliability

#endif  // TABLETFS_TESTS_STORE_RELIABILITY_RELIABILITY_UTIL_H_
