// Tablets at their edges (store/db/tablet.h, store/db/db_tablets.cc): with
// tiny tablet_split_bytes a table is cut into many tablets, and every read
// path must stay blind to that: full, range and prefix scans starting or
// ending exactly at tablet boundaries, point reads of boundary rows, rows
// with shared prefixes, \0 and 0xFF bytes; a scanner and a snapshot keep
// their view while their tablet splits under them; a row bigger than the
// threshold is never cut; deletes and compaction merge tablets back;
// tablets survive a reopen; a dropped table's tablets go with it.
//
// Every test compares with the reference implementation (store/reference/,
// the oracle: the same writes, the same reads) and prints its seed
// (TABLETFS_SEED=<n> reruns one).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "store/db.h"
#include "store/env/mem_env.h"
#include "store/reference/reference_bigtable.h"

namespace tabletfs {
namespace {

constexpr char kTable[] = "t";
const std::vector<std::string> kFamilies = {"f", "g"};

std::vector<uint64_t> Seeds(std::vector<uint64_t> defaults) {
  if (const char* s = std::getenv("TABLETFS_SEED")) {
    return {std::strtoull(s, nullptr, 10)};
  }
  return defaults;
}

// A row key printable in messages: \xNN for bytes outside 0x21..0x7e.
std::string Show(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c > 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

// One visible cell: the newest version (scan order: row, family in
// creation order, qualifier).
struct Entry {
  std::string row;
  int family = 0;  // index into kFamilies
  std::string qualifier;
  std::string value;
  auto operator<=>(const Entry&) const = default;
};

std::string Show(const Entry& e) {
  return Show(e.row) + "/" + kFamilies[e.family] + ":" + Show(e.qualifier) +
         "=" + Show(e.value.substr(0, 16));
}

// "<prefix><n>" (a helper: GCC 12 warns, wrongly, on "x" + to_string()).
std::string Numbered(const char* prefix, int n) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%s%d", prefix, n);
  return buf;
}

int FamilyIndex(std::string_view family) {
  for (size_t i = 0; i < kFamilies.size(); ++i) {
    if (kFamilies[i] == family) return static_cast<int>(i);
  }
  return -1;
}

// Reads a scanner to its end.
std::vector<Entry> Drain(Scanner* sc, size_t limit = SIZE_MAX) {
  std::vector<Entry> out;
  for (; sc->Valid() && out.size() < limit; sc->Next()) {
    auto value = sc->value();
    EXPECT_TRUE(value.ok()) << value.status().ToString();
    if (!value.ok()) break;
    out.push_back({std::string(sc->row()), FamilyIndex(sc->family()),
                   std::string(sc->qualifier()), std::string(*value)});
  }
  EXPECT_TRUE(sc->status().ok()) << sc->status().ToString();
  return out;
}

// The first difference of two scans, for failure messages.
std::string Diff(const std::vector<Entry>& got,
                 const std::vector<Entry>& want) {
  for (size_t i = 0; i < std::max(got.size(), want.size()); ++i) {
    if (i >= got.size())
      return "missing from " + std::to_string(i) + ": " + Show(want[i]);
    if (i >= want.size())
      return "extra at " + std::to_string(i) + ": " + Show(got[i]);
    if (got[i] != want[i]) {
      return "at " + std::to_string(i) + ": got " + Show(got[i]) + ", want " +
             Show(want[i]);
    }
  }
  return "equal";
}

class TabletTest : public testing::Test {
 protected:
  static constexpr uint64_t kSplitBytes = 4 << 10;

  void SetUp() override {
    options_.env = &env_;
    options_.space_reserve_bytes = 0;
    options_.memtable_bytes = 16 << 10;
    options_.target_file_bytes = 8 << 10;
    options_.block_size = 512;
    options_.large_value_bytes = 4096;
    options_.tablet_split_bytes = kSplitBytes;
    options_.logger = [this](LogLevel, std::string_view line) {
      std::lock_guard l(log_mu_);
      log_.emplace_back(line);
    };
    oracle_ = NewReferenceBigtable(ReferenceOptions());
    Reopen();
    MakeTable();
  }

  void Reopen() {
    db_.reset();
    auto db = DB::Open(options_, "/db");
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
  }

  // The table, in the engine and in the oracle.
  void MakeTable() {
    for (Bigtable* store : {static_cast<Bigtable*>(db_.get()), oracle_.get()}) {
      ASSERT_TRUE(store->CreateTable(kTable).ok());
      for (const auto& f : kFamilies) {
        ASSERT_TRUE(store->CreateFamily(kTable, f, FamilySettings()).ok());
      }
    }
  }

  // Next seed: the table dropped and made again, in both.
  void RemakeTable() {
    ASSERT_TRUE(db_->DeleteTable(kTable).ok());
    ASSERT_TRUE(oracle_->DeleteTable(kTable).ok());
    MakeTable();
  }

  void Put(const std::string& row, int family, const std::string& qualifier,
           const std::string& value) {
    RowMutation m(row);
    m.SetCell(kFamilies[family], qualifier, value);
    auto r = db_->Apply(kTable, m, WriteOptions());
    ASSERT_TRUE(r.ok()) << Show(row) << ": " << r.status().ToString();
    ASSERT_TRUE(oracle_->Apply(kTable, m, WriteOptions()).ok());
  }

  void DeleteRow(const std::string& row) {
    RowMutation m(row);
    m.DeleteRow();
    ASSERT_TRUE(db_->Apply(kTable, m, WriteOptions()).ok());
    ASSERT_TRUE(oracle_->Apply(kTable, m, WriteOptions()).ok());
  }

  // A value naming its cell, padded to `size` bytes.
  std::string Value(const std::string& row, int n, size_t size) {
    std::string v = Show(row) + "#" + std::to_string(n) + "#";
    v.resize(std::max(size, v.size()), static_cast<char>('a' + n % 26));
    return v;
  }

  // The newest version of every cell of `store` in range, as Entries.
  static std::vector<Entry> ScanOf(Bigtable& store, const std::string& start,
                                   const std::string& end,
                                   const std::string& prefix,
                                   const Snapshot* snapshot) {
    ScanOptions so;
    so.start_row = start;
    so.end_row = end;
    so.prefix = prefix;
    so.read.snapshot = snapshot;
    auto sc = store.NewScanner(kTable, so);
    EXPECT_TRUE(sc.ok()) << sc.status().ToString();
    if (!sc.ok()) return {};
    return Drain(sc->get());
  }
  std::vector<Entry> Scan(const std::string& start, const std::string& end,
                          const std::string& prefix = "",
                          const Snapshot* snapshot = nullptr) {
    return ScanOf(*db_, start, end, prefix, snapshot);
  }
  // What the engine's Scan must return: the oracle's (`snapshot`, when
  // given, is one of the oracle's).
  std::vector<Entry> OracleScan(const std::string& start,
                                const std::string& end,
                                const std::string& prefix = "",
                                const Snapshot* snapshot = nullptr) {
    return ScanOf(*oracle_, start, end, prefix, snapshot);
  }

  std::vector<TabletInfo> Tablets() {
    auto t = db_->ListTablets(kTable);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : std::vector<TabletInfo>();
  }

  // Contiguous, ordered ranges covering the table; sample rows inside their
  // range, strictly increasing; bytes and files sane.
  void CheckTabletList(const std::vector<TabletInfo>& tablets) {
    ASSERT_FALSE(tablets.empty());
    EXPECT_EQ(tablets.front().start_row, "");
    EXPECT_EQ(tablets.back().end_row, "");
    DbStats stats = db_->GetStats();
    uint64_t files = 0;
    for (const LevelStats& l : stats.levels) files += l.files;
    uint64_t listed_files = 0;
    for (size_t i = 0; i < tablets.size(); ++i) {
      const TabletInfo& t = tablets[i];
      SCOPED_TRACE("tablet " + std::to_string(i) + " [" + Show(t.start_row) +
                   ", " + Show(t.end_row) + ")");
      if (i + 1 < tablets.size()) {
        EXPECT_EQ(t.end_row, tablets[i + 1].start_row);
        EXPECT_LT(t.start_row, t.end_row);
      }
      for (size_t k = 0; k < t.sample_rows.size(); ++k) {
        const std::string& s = t.sample_rows[k];
        EXPECT_GT(s, t.start_row) << "sample row " << Show(s);
        if (!t.end_row.empty()) {
          EXPECT_LT(s, t.end_row) << "sample row " << Show(s);
        }
        if (k > 0) {
          EXPECT_LT(t.sample_rows[k - 1], s) << "sample rows out of order";
        }
      }
      EXPECT_LE(t.sample_rows.size(), 8u);
      if (t.files > 0) {
        EXPECT_GT(t.bytes, 0u);
      }
      listed_files += t.files;
    }
    // A file shared by the two halves of a split is listed by both.
    EXPECT_GE(listed_files, files);
    std::vector<std::string> tables = *db_->ListTables();
    if (tables.size() == 1) {
      EXPECT_EQ(stats.tablets, tablets.size());
    }
  }

  // The tablets' boundary rows (start rows but the first).
  std::vector<std::string> Boundaries() {
    std::vector<std::string> out;
    for (const TabletInfo& t : Tablets()) {
      if (!t.start_row.empty()) out.push_back(t.start_row);
    }
    return out;
  }

  // Scans with every boundary as start, end and prefix, and point reads of
  // the rows at and next to every boundary, against the oracle.
  void CheckReadsAtBoundaries() {
    std::vector<std::string> bounds = Boundaries();
    std::vector<Entry> all = Scan("", "");
    ASSERT_EQ(all, OracleScan("", ""))
        << Diff(all, OracleScan("", ""));
    std::vector<std::string> starts = {""};
    starts.insert(starts.end(), bounds.begin(), bounds.end());
    for (size_t i = 0; i < starts.size(); ++i) {
      const std::string& b = starts[i];
      const std::string next = i + 1 < starts.size() ? starts[i + 1] : "";
      SCOPED_TRACE("boundary " + Show(b));
      // Exactly one tablet; from the boundary to the end; up to it; the
      // two tablets around it; from just after it.
      std::vector<std::pair<std::string, std::string>> ranges = {
          {b, next}, {b, ""}, {"", b}, {b + '\0', next}};
      if (i > 0) ranges.push_back({starts[i - 1], next});
      for (const auto& [s, e] : ranges) {
        if (!e.empty() && s >= e) continue;
        std::vector<Entry> got = Scan(s, e);
        std::vector<Entry> want = OracleScan(s, e);
        ASSERT_EQ(got, want) << "scan [" << Show(s) << ", " << Show(e)
                             << "): " << Diff(got, want);
      }
      // Prefixes of the boundary row, the whole row included.
      for (size_t n = 1; n <= b.size(); ++n) {
        std::string p = b.substr(0, n);
        std::vector<Entry> got = Scan("", "", p);
        std::vector<Entry> want = OracleScan("", "", p);
        ASSERT_EQ(got, want) << "prefix " << Show(p) << ": " << Diff(got, want);
      }
      if (b.empty()) continue;
      // The boundary row and the oracle's rows right before and after it.
      std::vector<std::string> rows = {b};
      std::vector<Entry> before_b = OracleScan("", b);
      if (!before_b.empty()) rows.push_back(before_b.back().row);
      std::vector<Entry> after_b = OracleScan(b + '\0', "");
      if (!after_b.empty()) rows.push_back(after_b.front().row);
      for (const std::string& row : rows) {
        auto r = db_->ReadRow(kTable, row, ReadOptions());
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        std::vector<Entry> got;
        for (const Cell& c : r->cells) {
          got.push_back({row, FamilyIndex(c.family), c.qualifier, c.value});
        }
        std::vector<Entry> want = OracleScan(row, row + '\0');
        ASSERT_EQ(got, want)
            << "ReadRow " << Show(row) << ": " << Diff(got, want);
        for (const Entry& e : want) {
          auto cell = db_->ReadCell(kTable, row, kFamilies[e.family],
                                    e.qualifier, ReadOptions());
          ASSERT_TRUE(cell.ok()) << cell.status().ToString();
          ASSERT_EQ(cell->size(), 1u) << "ReadCell " << Show(e);
          EXPECT_EQ((*cell)[0].value, e.value);
        }
      }
    }
  }

  size_t LogLines(std::string_view needle) {
    std::lock_guard l(log_mu_);
    return std::count_if(log_.begin(), log_.end(), [&](const std::string& s) {
      return s.find(needle) != std::string::npos;
    });
  }

  MemEnv env_;
  Options options_;
  std::unique_ptr<DB> db_;
  // The reference implementation, given every write the engine gets.
  std::unique_ptr<Bigtable> oracle_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

// Row keys that stress byte order: shared prefixes of several lengths, \0
// inside and at the end, 0xFF inside and at the end, one-byte rows.
std::vector<std::string> AwkwardRows(std::mt19937_64& rng, int n) {
  const std::vector<std::string> stems = {"a",
                                          "ab",
                                          "abc",
                                          std::string("a\0", 2),
                                          std::string("a\0\0", 3),
                                          "a\xff",
                                          "a\xff\xff",
                                          "b",
                                          std::string("b\0c", 3),
                                          "\xff",
                                          "\xff\xff",
                                          std::string(1, '\0'),
                                          std::string("\0\xff", 2),
                                          "zz"};
  std::set<std::string> rows;
  while (static_cast<int>(rows.size()) < n) {
    std::string row = stems[rng() % stems.size()];
    switch (rng() % 4) {
      case 0:
        break;
      case 1:
        row += std::to_string(rng() % 100);
        break;
      case 2:
        row += std::string(1, static_cast<char>(rng() % 256));
        break;
      case 3:
        row += stems[rng() % stems.size()] + std::to_string(rng() % 10);
        break;
    }
    rows.insert(row);
  }
  std::vector<std::string> out(rows.begin(), rows.end());
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

// (a) Many tablets over awkward row keys: every scan and point read at the
// boundaries equals the model, with data in memtables, in SSTables, and
// split between them, and after a reopen.
TEST_F(TabletTest, ReadsAcrossTabletBoundariesMatchTheModel) {
  for (uint64_t seed : Seeds({1, 2})) {
    SCOPED_TRACE("seed " + std::to_string(seed) +
                 " (rerun with TABLETFS_SEED=" + std::to_string(seed) + ")");
    std::printf("tablet boundaries: seed %llu\n",
                static_cast<unsigned long long>(seed));
    std::mt19937_64 rng(seed);
    std::vector<std::string> rows = AwkwardRows(rng, 300);
    for (size_t i = 0; i < rows.size(); ++i) {
      for (int c = 0; c < 1 + static_cast<int>(rng() % 3); ++c) {
        Put(rows[i], static_cast<int>(rng() % 2), Numbered("q", c),
            Value(rows[i], c, 20 + rng() % 150));
      }
    }
    ASSERT_TRUE(db_->WaitForIdle().ok());
    std::vector<TabletInfo> tablets = Tablets();
    CheckTabletList(tablets);
    std::printf("tablet boundaries: %zu rows, %zu tablets, %llu splits\n",
                rows.size(), tablets.size(),
                static_cast<unsigned long long>(db_->GetStats().tablet_splits));
    ASSERT_GE(tablets.size(), 8u);
    CheckReadsAtBoundaries();
    ASSERT_FALSE(HasFatalFailure());

    // Overwrites and new cells, unflushed: memtables over SSTables in
    // every tablet.
    for (size_t i = 0; i < rows.size(); i += 3) {
      Put(rows[i], 0, "q0", Value(rows[i], 50, 30));
      Put(rows[i], 1, "new", Value(rows[i], 51, 10));
    }
    CheckReadsAtBoundaries();
    ASSERT_FALSE(HasFatalFailure());

    // (e) A reopen keeps the tablets (every boundary) and the data. The
    // recovery flushes what the log held, which may split a tablet at once
    // (a boundary more), racing the listing below.
    ASSERT_TRUE(db_->WaitForIdle().ok());
    std::vector<std::string> before = Boundaries();
    Reopen();
    std::vector<std::string> after = Boundaries();
    EXPECT_TRUE(std::includes(after.begin(), after.end(), before.begin(),
                              before.end()))
        << testing::PrintToString(after) << " lost boundaries of "
        << testing::PrintToString(before);
    CheckReadsAtBoundaries();
    ASSERT_FALSE(HasFatalFailure());
    // At rest: a split the reopen resumes would race the listing.
    ASSERT_TRUE(db_->WaitForIdle().ok());
    CheckTabletList(Tablets());

    // Next seed: a fresh table.
    RemakeTable();
  }
}

// (b) A scanner and a snapshot taken before a split read exactly the state
// at their start, in order, without duplicates, while the tablet they are
// reading (and the ones ahead) split and compact under them.
TEST_F(TabletTest, ScanWhileItsTabletSplits) {
  for (uint64_t seed : Seeds({3, 4, 5})) {
    SCOPED_TRACE("seed " + std::to_string(seed) +
                 " (rerun with TABLETFS_SEED=" + std::to_string(seed) + ")");
    std::printf("scan while splitting: seed %llu\n",
                static_cast<unsigned long long>(seed));
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 120; ++i) {
      char row[16];
      std::snprintf(row, sizeof(row), "r%04d", i * 10);
      Put(row, static_cast<int>(rng() % 2), "q", Value(row, i, 60));
    }
    ASSERT_TRUE(db_->WaitForIdle().ok());
    std::vector<TabletInfo> tablets = Tablets();
    ASSERT_GE(tablets.size(), 2u);
    const std::shared_ptr<const Snapshot> at_start = oracle_->GetSnapshot();
    const uint64_t splits_before = db_->GetStats().tablet_splits;

    auto scanner = db_->NewScanner(kTable, ScanOptions());
    ASSERT_TRUE(scanner.ok()) << scanner.status().ToString();
    std::shared_ptr<const Snapshot> snapshot = db_->GetSnapshot();
    // Part of the first tablet.
    std::vector<Entry> got = Drain(scanner->get(), 10);
    ASSERT_EQ(got.size(), 10u);
    const std::string reading = got.back().row;

    // Rows between the existing ones in every tablet, the one being read
    // included; overwrites; deletes: each tablet passes the threshold.
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 120; ++i) {
        char row[16];
        std::snprintf(row, sizeof(row), "r%04d", i * 10 + 1 + round);
        Put(row, 0, "q", Value(row, i, 100));
        if (rng() % 4 == 0) {
          std::snprintf(row, sizeof(row), "r%04d", i * 10);
          Put(row, 1, "q", Value(row, i + 1000, 40));
        }
        if (rng() % 10 == 0) {
          std::snprintf(row, sizeof(row), "r%04d", i * 10);
          DeleteRow(row);
        }
      }
      ASSERT_TRUE(db_->WaitForIdle().ok());
    }
    const uint64_t splits = db_->GetStats().tablet_splits - splits_before;
    std::vector<TabletInfo> after = Tablets();
    std::printf(
        "scan while splitting: %zu tablets -> %zu, %llu splits under "
        "the scanner (reading row %s)\n",
        tablets.size(), after.size(), static_cast<unsigned long long>(splits),
        reading.c_str());
    ASSERT_GT(splits, 0u);
    // The tablet being read has split: a boundary now lies after the
    // scanner's row within its old range.
    bool split_ahead = false;
    for (const TabletInfo& t : after) {
      split_ahead |=
          t.start_row > reading &&
          (tablets[0].end_row.empty() || t.start_row < tablets[0].end_row);
    }
    EXPECT_TRUE(split_ahead) << "the scanner's own tablet did not split";

    std::vector<Entry> rest = Drain(scanner->get());
    got.insert(got.end(), rest.begin(), rest.end());
    std::vector<Entry> want = OracleScan("", "", "", at_start.get());
    EXPECT_TRUE(std::is_sorted(got.begin(), got.end()) &&
                std::adjacent_find(got.begin(), got.end()) == got.end())
        << "out of order or duplicated";
    EXPECT_EQ(got, want) << "the scanner opened before the split: "
                         << Diff(got, want);
    scanner->reset();

    // A scanner on the snapshot, opened after the split.
    std::vector<Entry> snap = Scan("", "", "", snapshot.get());
    EXPECT_EQ(snap, want) << "snapshot scan: " << Diff(snap, want);
    // Point reads on the snapshot, in the new tablets.
    for (int i = 0; i < 120; i += 7) {
      char row[16];
      std::snprintf(row, sizeof(row), "r%04d", i * 10);
      ReadOptions ro;
      ro.snapshot = snapshot.get();
      auto r = db_->ReadRow(kTable, row, ro);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      std::vector<Entry> cells;
      for (const Cell& c : r->cells) {
        cells.push_back({row, FamilyIndex(c.family), c.qualifier, c.value});
      }
      EXPECT_EQ(cells,
                OracleScan(row, std::string(row) + '\0', "", at_start.get()))
          << "snapshot ReadRow " << row;
    }
    snapshot.reset();
    // And the present.
    std::vector<Entry> now = Scan("", "");
    ASSERT_EQ(now, OracleScan("", ""))
        << Diff(now, OracleScan("", ""));

    RemakeTable();
  }
}

// (c) A row bigger than the threshold is never cut: it stays in one tablet
// (which cannot split below it) and reads back whole, while the rows
// around it split into tablets of their own.
TEST_F(TabletTest, ASplitNeverCutsARow) {
  // Rows before and after, split into tablets of their own; then the big
  // row between them. (Written after the big row, neighbours can wait in
  // its tablet: a split that finds no row to split at is not tried again
  // until the tablet has doubled.)
  for (int i = 0; i < 60; ++i) {
    Put(Numbered("a", 100 + i), 0, "q", Value("a", i, 150));
    Put(Numbered("z", 100 + i), 1, "q", Value("z", i, 150));
  }
  ASSERT_TRUE(db_->WaitForIdle().ok());
  for (int c = 0; c < 300; ++c) {
    char q[16];
    std::snprintf(q, sizeof(q), "q%04d", c);
    Put("big", c % 2, q, Value("big", c, 100));
  }
  ASSERT_TRUE(db_->WaitForIdle().ok());
  // More of the big row, after it has been through splits and compactions.
  for (int c = 300; c < 400; ++c) {
    char q[16];
    std::snprintf(q, sizeof(q), "q%04d", c);
    Put("big", c % 2, q, Value("big", c, 100));
  }
  ASSERT_TRUE(db_->WaitForIdle().ok());

  std::vector<TabletInfo> tablets = Tablets();
  CheckTabletList(tablets);
  const TabletInfo* holder = nullptr;
  size_t before = 0, after = 0;
  for (const TabletInfo& t : tablets) {
    bool starts_before = t.start_row <= "big";
    bool ends_after = t.end_row.empty() || t.end_row > "big";
    if (starts_before && ends_after) {
      EXPECT_EQ(holder, nullptr) << "two tablets hold row big";
      holder = &t;
    } else if (!ends_after) {
      ++before;
    } else {
      ++after;
    }
  }
  ASSERT_NE(holder, nullptr);
  std::printf(
      "big row: %zu tablets (%zu before, %zu after the big row's), "
      "its tablet [%s, %s) holds %llu bytes\n",
      tablets.size(), before, after, Show(holder->start_row).c_str(),
      Show(holder->end_row).c_str(),
      static_cast<unsigned long long>(holder->bytes));
  EXPECT_GT(holder->bytes, kSplitBytes) << "the big row's tablet is smaller "
                                           "than the row";
  EXPECT_GE(before, 1u) << "the rows before the big row did not split off";
  EXPECT_GE(after, 1u) << "the rows after the big row did not split off";
  EXPECT_GT(LogLines("no row to split at"), 0u);

  auto row = db_->ReadRow(kTable, "big", ReadOptions());
  ASSERT_TRUE(row.ok()) << row.status().ToString();
  EXPECT_EQ(row->cells.size(), 400u);
  std::vector<Entry> got = Scan("", "");
  ASSERT_EQ(got, OracleScan("", ""))
      << Diff(got, OracleScan("", ""));
  CheckReadsAtBoundaries();
}

// (d) Deleting most rows and compacting merges tablets back; the listing
// stays sane, and idle tablets are neither over the threshold (unless one
// row holds it) nor small enough to merge with a neighbour.
TEST_F(TabletTest, DeletesAndCompactionMergeTablets) {
  for (uint64_t seed : Seeds({6, 7})) {
    SCOPED_TRACE("seed " + std::to_string(seed) +
                 " (rerun with TABLETFS_SEED=" + std::to_string(seed) + ")");
    std::printf("merges: seed %llu\n", static_cast<unsigned long long>(seed));
    std::mt19937_64 rng(seed);
    std::vector<std::string> rows;
    for (int i = 0; i < 400; ++i) {
      char row[16];
      std::snprintf(row, sizeof(row), "m%05d",
                    static_cast<int>(rng() % 100000));
      rows.push_back(row);
      Put(row, static_cast<int>(rng() % 2), "q", Value(row, i, 80));
    }
    ASSERT_TRUE(db_->WaitForIdle().ok());
    std::vector<TabletInfo> many = Tablets();
    CheckTabletList(many);
    ASSERT_GE(many.size(), 6u);
    const DbStats before = db_->GetStats();

    auto check_idle = [&](const std::vector<TabletInfo>& tablets) {
      for (size_t i = 0; i < tablets.size(); ++i) {
        const TabletInfo& t = tablets[i];
        EXPECT_LE(t.bytes, kSplitBytes)
            << "idle tablet [" << Show(t.start_row) << ", " << Show(t.end_row)
            << ") is over the threshold";
        if (i + 1 < tablets.size()) {
          EXPECT_GE(t.bytes + tablets[i + 1].bytes, kSplitBytes / 4)
              << "idle neighbours [" << Show(t.start_row) << ", "
              << Show(tablets[i + 1].end_row) << ") should have merged";
        }
      }
    };
    check_idle(many);

    // Delete 95% of the rows: all but every twentieth.
    std::vector<std::string> sorted(rows);
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (i % 20 != 0) DeleteRow(sorted[i]);
    }
    ASSERT_TRUE(db_->CompactAll().ok());
    ASSERT_TRUE(db_->WaitForIdle().ok());
    std::vector<TabletInfo> few = Tablets();
    const DbStats stats = db_->GetStats();
    std::printf(
        "merges: %zu tablets -> %zu after deleting 95%% of %zu rows, "
        "%llu merges\n",
        many.size(), few.size(), sorted.size(),
        static_cast<unsigned long long>(stats.tablet_merges -
                                        before.tablet_merges));
    // Fewer tablets, by merges; how many fewer depends on where the
    // background splits fell while the rows went in (8 to 13 tablets, then
    // 3 to 5 in 40 runs under ASan), so no ratio is asserted. check_idle
    // below asserts the merge rule itself: no two neighbours are left
    // that together fall under a quarter of the threshold.
    EXPECT_LT(few.size(), many.size());
    EXPECT_GT(stats.tablet_merges, before.tablet_merges);
    CheckTabletList(few);
    check_idle(few);
    uint64_t bytes = 0;
    for (const TabletInfo& t : few) bytes += t.bytes;
    uint64_t level_bytes = stats.memtable_bytes;
    for (const LevelStats& l : stats.levels) level_bytes += l.bytes;
    EXPECT_LE(bytes, level_bytes) << "the tablets list more bytes than exist";
    CheckReadsAtBoundaries();
    ASSERT_FALSE(HasFatalFailure());

    // Writing the rows back splits again.
    for (size_t i = 0; i < sorted.size(); ++i) {
      Put(sorted[i], 0, "back", Value(sorted[i], 7, 80));
    }
    ASSERT_TRUE(db_->WaitForIdle().ok());
    EXPECT_GT(db_->GetStats().tablet_splits, stats.tablet_splits);
    CheckTabletList(Tablets());
    CheckReadsAtBoundaries();
    ASSERT_FALSE(HasFatalFailure());

    RemakeTable();
  }
}

// (f) A dropped table's tablets go with it: the recreated table starts with
// one empty tablet, also after a reopen, and none of the old data shows.
// A tablet past tablet_split_bytes splits while its data is still in the
// memtable: it does not wait for a flush, which memtable_bytes (64 MiB
// here) would put off indefinitely (issue 14, item 2). Without the fix the
// tablet stayed whole; the wait polls with a deadline and never calls
// WaitForIdle, which would look for a split itself.
TEST_F(TabletTest, SplitsWhileItsDataIsInTheMemtable) {
  db_.reset();
  options_.memtable_bytes = 64 << 20;
  options_.tablet_split_bytes = 256 << 10;
  Reopen();
  // 3,000 rows of 2,000 bytes: about 6 MB, 24 times the threshold.
  for (int i = 0; i < 3000; ++i) {
    Put(Numbered("m", 10000 + i), 0, "q", Value("m", i, 2000));
  }
  std::vector<TabletInfo> tablets = Tablets();
  for (int waited_ms = 0; tablets.size() < 2 && waited_ms < 20000;
       waited_ms += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    tablets = Tablets();
  }
  EXPECT_GE(tablets.size(), 2u);
  // The split came without WaitForIdle (which would make it itself); the
  // listing is compared with GetStats() only at rest, where no compaction
  // or further split runs between the two.
  ASSERT_TRUE(db_->WaitForIdle().ok());
  CheckTabletList(Tablets());
  CheckReadsAtBoundaries();
}

// After a split of rows written in order, only the file across the split
// row is rewritten: every file wholly in one half keeps its number.
TEST_F(TabletTest, ASplitRewritesOnlyTheFilesAcrossItsRow) {
  db_.reset();
  options_.tablet_split_bytes = 64 << 20;  // none while loading
  Reopen();
  for (int i = 0; i < 400; ++i) {
    Put(Numbered("s", 10000 + i), 0, "q", Value("s", i, 200));
  }
  ASSERT_TRUE(db_->Flush().ok());
  ASSERT_TRUE(db_->WaitForIdle().ok());
  auto sst_files = [this] {
    std::set<std::string> files;
    auto children = env_.GetChildren("/db");
    EXPECT_TRUE(children.ok());
    if (!children.ok()) return files;
    for (const std::string& name : *children) {
      if (name.ends_with(".sst")) files.insert(name);
    }
    return files;
  };
  const std::set<std::string> before = sst_files();
  ASSERT_GE(before.size(), 6u);
  std::vector<TabletInfo> tablets = Tablets();
  ASSERT_EQ(tablets.size(), 1u);
  // One split: each half stays under the threshold.
  db_.reset();
  options_.tablet_split_bytes = tablets[0].bytes * 2 / 3;
  Reopen();
  Put(Numbered("s", 10400), 0, "q", Value("s", 400, 200));
  ASSERT_TRUE(db_->WaitForIdle().ok());
  ASSERT_EQ(Tablets().size(), 2u);
  const std::set<std::string> after = sst_files();
  std::vector<std::string> rewritten;
  for (const std::string& name : before) {
    if (!after.contains(name)) rewritten.push_back(name);
  }
  EXPECT_LE(rewritten.size(), 1u)
      << rewritten.size() << " of " << before.size() << " files rewritten";
  CheckTabletList(Tablets());
  CheckReadsAtBoundaries();
  EXPECT_EQ(Scan("", ""), OracleScan("", ""));
}

TEST_F(TabletTest, DroppedTableTabletsVanish) {
  for (int i = 0; i < 300; ++i) {
    Put(Numbered("d", 1000 + i), 0, "q", Value("d", i, 80));
  }
  ASSERT_TRUE(db_->WaitForIdle().ok());
  ASSERT_GE(Tablets().size(), 4u);
  ASSERT_TRUE(db_->CreateTable("other").ok());
  ASSERT_TRUE(db_->DeleteTable(kTable).ok());
  ASSERT_TRUE(oracle_->DeleteTable(kTable).ok());
  auto gone = db_->ListTablets(kTable);
  EXPECT_TRUE(gone.status().IsNotFound()) << gone.status().ToString();
  EXPECT_EQ(db_->GetStats().tablets, 1u) << "only table other's tablet";

  MakeTable();
  std::vector<TabletInfo> fresh = Tablets();
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0].start_row, "");
  EXPECT_EQ(fresh[0].end_row, "");
  EXPECT_EQ(fresh[0].files, 0u);
  EXPECT_EQ(fresh[0].bytes, 0u);
  EXPECT_TRUE(fresh[0].sample_rows.empty());
  EXPECT_TRUE(Scan("", "").empty());
  ASSERT_TRUE(db_->WaitForIdle().ok());
  Reopen();
  fresh = Tablets();
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0].files, 0u);
  EXPECT_TRUE(Scan("", "").empty());
  EXPECT_EQ(db_->GetStats().tablets, 2u);

  // The new table splits on its own, with nothing of the old one.
  for (int i = 0; i < 100; ++i) {
    Put(Numbered("d", 1000 + i * 3), 1, "new", Value("n", i, 80));
  }
  ASSERT_TRUE(db_->WaitForIdle().ok());
  std::vector<Entry> got = Scan("", "");
  EXPECT_EQ(got, OracleScan("", ""))
      << Diff(got, OracleScan("", ""));
  CheckTabletList(Tablets());
  EXPECT_TRUE(db_->Verify().ok());
}

}  // namespace
}  // namespace tabletfs
