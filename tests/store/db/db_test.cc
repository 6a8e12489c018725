#include "store/db.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store/env.h"
#include "store/env/mem_env.h"
#include "store/util/coding.h"
#include "store/util/hash.h"
#include "tests/store/db/mem_db_test.h"

namespace tabletfs {
namespace {

class DBTest : public MemDbTest {
 protected:
  void MakeTable(const std::string& table,
                 const std::vector<std::string>& families) {
    ASSERT_TRUE(db_->CreateTable(table).ok());
    for (const auto& f : families) {
      ASSERT_TRUE(db_->CreateFamily(table, f, FamilySettings()).ok());
    }
  }

  int64_t Put(const std::string& table, const std::string& row,
              const std::string& family, const std::string& qualifier,
              int64_t ts, const std::string& value) {
    RowMutation m(row);
    m.SetCell(family, qualifier, ts, value);
    auto r = db_->Apply(table, m, WriteOptions());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : 0;
  }

  // "ts:value" of every visible version of the cell, newest first.
  std::string Get(const std::string& table, const std::string& row,
                  const std::string& family, const std::string& qualifier,
                  ReadOptions ro = ReadOptions()) {
    auto cells = db_->ReadCell(table, row, family, qualifier, ro);
    if (!cells.ok()) return cells.status().ToString();
    std::string out;
    for (const Cell& c : *cells) {
      if (!out.empty()) out += ",";
      out += std::to_string(c.timestamp) + ":" + c.value;
    }
    return out;
  }

  // The level-0 tests' rows.
  static std::string RowKey(int i) {
    return std::string("row").append(std::to_string(i));
  }
  // Table t (family f) with versions 1 ("v1") and 2 ("v2") of f:q in rows
  // RowKey(0) to RowKey(rows - 1), each version flushed on its own: two level-0
  // files that both hold every row.
  void FillTwoLevelZeroFiles(int rows) {
    MakeTable("t", {"f"});
    for (int version = 1; version <= 2; ++version) {
      const std::string value =
          std::string("v").append(std::to_string(version));
      for (int i = 0; i < rows; ++i)
        Put("t", RowKey(i), "f", "q", version, value);
      ASSERT_TRUE(db_->Flush().ok());
    }
    ASSERT_TRUE(db_->WaitForIdle().ok());
    ASSERT_EQ(LevelZeroFiles(), 2u) << db_->GetStats().ToString();
  }
  size_t LevelZeroFiles() {
    DbStats stats = db_->GetStats();
    return stats.levels.empty() ? 0 : stats.levels[0].files;
  }

  std::string Scan(const std::string& table, ScanOptions so = ScanOptions()) {
    auto s = db_->NewScanner(table, so);
    if (!s.ok()) return s.status().ToString();
    std::string out;
    Scanner& sc = **s;
    for (; sc.Valid(); sc.Next()) {
      if (!out.empty()) out += " ";
      out += std::string(sc.row()) + "/" + std::string(sc.family()) + ":" +
             std::string(sc.qualifier()) + "@" +
             std::to_string(sc.timestamp()) + "=" + std::string(*sc.value());
    }
    EXPECT_TRUE(sc.status().ok()) << sc.status().ToString();
    return out;
  }
};

TEST_F(DBTest, PaperWebtable) {
  MakeTable("webtable", {"contents", "anchor"});
  Put("webtable", "com.cnn.www", "contents", "", 3, "<html>t3");
  Put("webtable", "com.cnn.www", "contents", "", 5, "<html>t5");
  Put("webtable", "com.cnn.www", "contents", "", 6, "<html>t6");
  Put("webtable", "com.cnn.www", "anchor", "cnnsi.com", 9, "CNN");
  Put("webtable", "com.cnn.www", "anchor", "my.look.ca", 8, "CNN.com");

  EXPECT_EQ(Get("webtable", "com.cnn.www", "contents", ""), "6:<html>t6");
  ReadOptions all;
  all.max_versions = 0;
  EXPECT_EQ(Get("webtable", "com.cnn.www", "contents", "", all),
            "6:<html>t6,5:<html>t5,3:<html>t3");
  ReadOptions at5 = all;
  at5.at = 5;
  EXPECT_EQ(Get("webtable", "com.cnn.www", "contents", "", at5),
            "5:<html>t5,3:<html>t3");

  auto row = db_->ReadRow("webtable", "com.cnn.www", ReadOptions());
  ASSERT_TRUE(row.ok());
  ASSERT_EQ(row->cells.size(), 3u);
  // Families in creation order, qualifiers bytewise.
  EXPECT_EQ(row->cells[0].family, "contents");
  EXPECT_EQ(row->cells[1].qualifier, "cnnsi.com");
  EXPECT_EQ(row->cells[2].qualifier, "my.look.ca");
  EXPECT_EQ(row->cells[2].value, "CNN.com");
}

// StatCell (a stat(2) through the mount) gives a value's size from its
// ref: the value file is not read. With the file's bytes gone, only a read
// of the value notices.
TEST_F(DBTest, StatCellReadsNoValueFile) {
  options_.large_value_bytes = 1000;
  Reopen();
  MakeTable("t", {"f"});
  Put("t", "r", "f", "big", 7, std::string(5000, 'v'));
  Put("t", "r", "f", "small", 8, "tiny");
  ASSERT_TRUE(db_->Flush().ok());  // the refs live in an SSTable now
  db_.reset();
  auto children = env_.GetChildren("/db");
  ASSERT_TRUE(children.ok());
  int value_files = 0;
  for (const std::string& name : *children) {
    if (!name.ends_with(".vlf")) continue;
    ASSERT_TRUE(env_.TruncateFile("/db/" + name, 0).ok());
    value_files++;
  }
  ASSERT_GT(value_files, 0);
  Reopen();
  auto big = db_->StatCell("t", "r", "f", "big", ReadOptions());
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  // With the value's XXH64, which its ref holds (a commit compares it).
  EXPECT_EQ(*big, (CellStat{7, 5000, Hash64(std::string(5000, 'v'))}));
  auto small = db_->StatCell("t", "r", "f", "small", ReadOptions());
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(*small, (CellStat{8, 4, std::nullopt}));
  EXPECT_FALSE(db_->ReadCell("t", "r", "f", "big", ReadOptions()).ok());
}

TEST_F(DBTest, PaperReadAtTime) {
  MakeTable("t", {"A"});
  Put("t", "aaaaa", "A", "foo", 15, "y");
  Put("t", "aaaaa", "A", "foo", 4, "m");
  EXPECT_EQ(Get("t", "aaaaa", "A", "foo"), "15:y");
  ReadOptions ro;
  ro.at = 10;
  EXPECT_EQ(Get("t", "aaaaa", "A", "foo", ro), "4:m");
  ro.at = 2;
  EXPECT_EQ(Get("t", "aaaaa", "A", "foo", ro), "");
  ro.at = 15;
  EXPECT_EQ(Get("t", "aaaaa", "A", "foo", ro), "15:y");
}

TEST_F(DBTest, SchemaCalls) {
  EXPECT_TRUE(db_->CreateTable("b").ok());
  EXPECT_TRUE(db_->CreateTable("a").ok());
  EXPECT_TRUE(db_->CreateTable("a").IsAlreadyExists());
  EXPECT_TRUE(db_->CreateTable("").IsInvalidArgument());
  EXPECT_TRUE(db_->CreateTable("bad/name").IsInvalidArgument());
  EXPECT_TRUE(db_->CreateTable(std::string(51, 'x')).IsInvalidArgument());
  EXPECT_EQ(*db_->ListTables(), (std::vector<std::string>{"a", "b"}));

  FamilySettings s;
  s.gc_policy = GcPolicy::MaxVersions(2);
  s.mode = 0600;
  EXPECT_TRUE(db_->CreateFamily("a", "zeta", FamilySettings()).ok());
  EXPECT_TRUE(db_->CreateFamily("a", "alpha", s).ok());
  EXPECT_TRUE(db_->CreateFamily("a", "alpha", s).IsAlreadyExists());
  EXPECT_TRUE(db_->CreateFamily("a", ".x", s).IsInvalidArgument());
  EXPECT_TRUE(db_->CreateFamily("nope", "f", s).IsNotFound());
  auto fams = db_->ListFamilies("a");
  ASSERT_TRUE(fams.ok());
  ASSERT_EQ(fams->size(), 2u);
  EXPECT_EQ((*fams)[0].name, "zeta");  // creation order
  EXPECT_EQ((*fams)[1].name, "alpha");
  EXPECT_EQ((*fams)[1].settings, s);
  EXPECT_TRUE(db_->ListFamilies("nope").status().IsNotFound());
  EXPECT_TRUE(db_->GetFamily("a", "nope").status().IsNotFound());

  s.gc_policy = GcPolicy::Never();
  EXPECT_TRUE(db_->UpdateFamily("a", "alpha", s).ok());
  EXPECT_EQ(*db_->GetFamily("a", "alpha"), s);
  EXPECT_TRUE(db_->UpdateFamily("a", "nope", s).IsNotFound());

  Reopen();
  EXPECT_EQ(*db_->ListTables(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(*db_->GetFamily("a", "alpha"), s);
  EXPECT_EQ((*db_->ListFamilies("a"))[0].name, "zeta");

  EXPECT_TRUE(db_->DeleteTable("b").ok());
  EXPECT_TRUE(db_->DeleteTable("b").IsNotFound());
  EXPECT_TRUE(db_->DeleteFamily("a", "zeta").ok());
  EXPECT_TRUE(db_->DeleteFamily("a", "zeta").IsNotFound());
  Reopen();
  EXPECT_EQ(*db_->ListTables(), (std::vector<std::string>{"a"}));
  EXPECT_EQ(db_->ListFamilies("a")->size(), 1u);
}

TEST_F(DBTest, DroppedTableAndFamilyDataIsGoneEvenWhenRecreated) {
  MakeTable("t", {"f", "g"});
  Put("t", "r", "f", "q", 1, "v");
  Put("t", "r", "g", "q", 1, "w");
  ASSERT_TRUE(db_->DeleteFamily("t", "f").ok());
  EXPECT_TRUE(Get("t", "r", "f", "q").find("NotFound") != std::string::npos);
  ASSERT_TRUE(db_->CreateFamily("t", "f", FamilySettings()).ok());
  EXPECT_EQ(Get("t", "r", "f", "q"), "");
  EXPECT_EQ(Get("t", "r", "g", "q"), "1:w");
  ASSERT_TRUE(db_->DeleteTable("t").ok());
  MakeTable("t", {"g"});
  EXPECT_EQ(Get("t", "r", "g", "q"), "");
  Reopen();
  EXPECT_EQ(Get("t", "r", "g", "q"), "");
}

// Since when a table exists (GetTable) survives reopening: its creation
// through the manifest, a version older than it through the log, through
// the flush that retires the log, and through the next open.
TEST_F(DBTest, ATableKnowsSinceWhenItExistsAcrossReopens) {
  constexpr int64_t kSecond = 1000000;
  env_.SetNowMicros(1000 * kSecond);
  MakeTable("t", {"f"});
  MakeTable("u", {"f"});
  Reopen();
  EXPECT_EQ(db_->GetTable("t")->since_micros, 1000 * kSecond);
  Put("t", "r", "f", "q", 5 * kSecond, "old");     // older than the table
  Put("u", "r", "f", "q", 2000 * kSecond, "new");  // not older
  Reopen();                                        // from the log
  EXPECT_EQ(db_->GetTable("t")->since_micros, 5 * kSecond);
  EXPECT_EQ(db_->GetTable("u")->since_micros, 1000 * kSecond);
  Put("t", "r", "f", "q", 3 * kSecond, "older");
  ASSERT_TRUE(db_->Flush().ok());  // retires the log holding it
  Reopen();
  EXPECT_EQ(db_->GetTable("t")->since_micros, 3 * kSecond);
  Reopen();
  EXPECT_EQ(db_->GetTable("t")->since_micros, 3 * kSecond);
  // A table made again is new.
  ASSERT_TRUE(db_->DeleteTable("t").ok());
  env_.SetNowMicros(3000 * kSecond);
  MakeTable("t", {"f"});
  Reopen();
  EXPECT_EQ(db_->GetTable("t")->since_micros, 3000 * kSecond);
}

TEST_F(DBTest, BadInputsChangeNothing) {
  MakeTable("t", {"f"});
  WriteOptions wo;
  RowMutation empty("r");
  EXPECT_TRUE(db_->Apply("t", empty, wo).status().IsInvalidArgument());
  RowMutation no_row("");
  no_row.SetCell("f", "q", "v");
  EXPECT_TRUE(db_->Apply("t", no_row, wo).status().IsInvalidArgument());
  RowMutation long_row(std::string(kMaxRowKeyBytes + 1, 'r'));
  long_row.SetCell("f", "q", "v");
  EXPECT_TRUE(db_->Apply("t", long_row, wo).status().IsInvalidArgument());
  RowMutation max_row(std::string(kMaxRowKeyBytes, 'r'));
  max_row.SetCell("f", "q", "v");
  EXPECT_TRUE(db_->Apply("t", max_row, wo).ok());
  RowMutation unknown_family("r");
  unknown_family.SetCell("f", "q", 1, "v").SetCell("nope", "q", "v");
  EXPECT_TRUE(db_->Apply("t", unknown_family, wo).status().IsInvalidArgument());
  RowMutation ok("r");
  ok.SetCell("f", "q", 1, "v");
  EXPECT_TRUE(db_->Apply("nope", ok, wo).status().IsNotFound());

  options_.max_value_bytes = 10;
  Reopen();
  RowMutation big("r");
  big.SetCell("f", "q", 2, std::string(11, 'x'));
  EXPECT_TRUE(db_->Apply("t", big, wo).status().IsInvalidArgument());
  RowMutation at_limit("r");
  at_limit.SetCell("f", "q2", 2, std::string(10, 'x'));
  EXPECT_TRUE(db_->Apply("t", at_limit, wo).ok());

  // Only the two good writes exist.
  auto row = db_->ReadRow("t", "r", ReadOptions());
  ASSERT_TRUE(row.ok());
  ASSERT_EQ(row->cells.size(), 1u);
  EXPECT_EQ(row->cells[0].qualifier, "q2");
  EXPECT_TRUE(
      db_->ReadRow("t", "", ReadOptions()).status().IsInvalidArgument());
  EXPECT_TRUE(db_->ReadRow("nope", "r", ReadOptions()).status().IsNotFound());
  EXPECT_TRUE(db_->NewScanner("nope", ScanOptions()).status().IsNotFound());
  EXPECT_TRUE(db_->ReadCell("t", "r", "nope", "q", ReadOptions())
                  .status()
                  .IsNotFound());
}

TEST_F(DBTest, DeletesMaskBySequence) {
  MakeTable("t", {"f", "g"});
  Put("t", "r", "f", "q", 100, "new");
  RowMutation del("r");
  del.DeleteCell("f", "q");
  ASSERT_TRUE(db_->Apply("t", del, WriteOptions()).ok());
  EXPECT_EQ(Get("t", "r", "f", "q"), "");
  // A later put with an older timestamp stays visible.
  Put("t", "r", "f", "q", 50, "old-but-later");
  EXPECT_EQ(Get("t", "r", "f", "q"), "50:old-but-later");

  Put("t", "r", "g", "x", 7, "gx");
  RowMutation delrow("r");
  delrow.DeleteRow();
  ASSERT_TRUE(db_->Apply("t", delrow, WriteOptions()).ok());
  EXPECT_TRUE(db_->ReadRow("t", "r", ReadOptions())->cells.empty());
  Put("t", "r", "g", "x", 1, "after");
  EXPECT_EQ(Get("t", "r", "g", "x"), "1:after");
  EXPECT_EQ(Get("t", "r", "f", "q"), "");

  // Delete-version hides only that timestamp; a later put there replaces.
  Put("t", "v", "f", "q", 1, "one");
  Put("t", "v", "f", "q", 2, "two");
  RowMutation dv("v");
  dv.DeleteVersion("f", "q", 2);
  ASSERT_TRUE(db_->Apply("t", dv, WriteOptions()).ok());
  EXPECT_EQ(Get("t", "v", "f", "q"), "1:one");
  Put("t", "v", "f", "q", 2, "two-again");
  Put("t", "v", "f", "q", 1, "one-replaced");
  ReadOptions all;
  all.max_versions = 0;
  EXPECT_EQ(Get("t", "v", "f", "q", all), "2:two-again,1:one-replaced");

  // Delete family in one row.
  Put("t", "w", "f", "a", 1, "fa");
  Put("t", "w", "g", "a", 1, "ga");
  RowMutation df("w");
  df.DeleteFamily("f");
  ASSERT_TRUE(db_->Apply("t", df, WriteOptions()).ok());
  EXPECT_EQ(Get("t", "w", "f", "a"), "");
  EXPECT_EQ(Get("t", "w", "g", "a"), "1:ga");

  // Ops in one mutation apply in order: delete then set leaves the value.
  RowMutation order("o");
  order.SetCell("f", "q", 5, "first")
      .DeleteCell("f", "q")
      .SetCell("f", "q", 3, "kept");
  ASSERT_TRUE(db_->Apply("t", order, WriteOptions()).ok());
  EXPECT_EQ(Get("t", "o", "f", "q", all), "3:kept");

  Reopen();
  EXPECT_EQ(Get("t", "o", "f", "q", all), "3:kept");
  EXPECT_EQ(Get("t", "r", "g", "x"), "1:after");
  EXPECT_EQ(Get("t", "v", "f", "q", all), "2:two-again,1:one-replaced");
}

TEST_F(DBTest, ServerTimestampsIncreaseAndSurviveReopen) {
  MakeTable("t", {"f"});
  env_.SetNowMicros(1000);
  RowMutation m("r");
  m.SetCell("f", "q", "a");
  int64_t t1 = *db_->Apply("t", m, WriteOptions());
  int64_t t2 = *db_->Apply("t", m, WriteOptions());
  EXPECT_EQ(t1, 1000);
  EXPECT_EQ(t2, 1001);
  EXPECT_EQ(db_->LastTimestamp(), 1001);
  Reopen();
  EXPECT_EQ(db_->LastTimestamp(), 1001);
  int64_t t3 = *db_->Apply("t", m, WriteOptions());
  EXPECT_EQ(t3, 1002);
  env_.SetNowMicros(5000);
  EXPECT_EQ(*db_->Apply("t", m, WriteOptions()), 5000);
  ReadOptions all;
  all.max_versions = 0;
  EXPECT_EQ(Get("t", "r", "f", "q", all), "5000:a,1002:a,1001:a,1000:a");
}

// A flush does not switch the log (all tablets share it), so the log a
// reopen replays holds entries the flush already wrote: they are skipped by
// sequence, not written into level 0 a second time. Before, the reopen
// rewrote every row of the log into a new level-0 file beside the flushed
// ones, and point reads searched both until a compaction.
TEST_F(DBTest, ReopenReplaysOnlyWhatNoFlushWrote) {
  std::vector<std::string> lines;
  std::mutex mu;
  options_.memtable_bytes = 16 << 10;
  options_.logger = [&](LogLevel, std::string_view line) {
    std::lock_guard l(mu);
    lines.emplace_back(line);
  };
  Reopen();
  MakeTable("t", {"f"});
  constexpr int kRows = 1000;
  const std::string value(100, 'v');
  for (int i = 0; i < kRows; ++i) {
    Put("t", "row" + std::to_string(i), "f", "q", 1, value);
  }
  ASSERT_TRUE(db_->WaitForIdle().ok());
  ASSERT_GE(db_->GetStats().flushes, 2u) << "the test needs flushes by size";
  Put("t", "last", "f", "q", 1, "after the flushes");
  {
    std::lock_guard l(mu);
    lines.clear();
  }
  Reopen();
  // Each write is one record of one entry. With one tablet the manifest's
  // log_number is the tablet's own, so every skipped entry was skipped by
  // its sequence.
  unsigned long long records = 0, skipped = 0;
  for (const std::string& line : lines) {
    size_t at = line.find(".log: ");
    if (line.rfind("replayed ", 0) != 0 || at == std::string::npos) continue;
    unsigned long long r = 0, k = 0;
    ASSERT_EQ(std::sscanf(line.c_str() + at, ".log: %llu records, %llu entries",
                          &r, &k),
              2)
        << line;
    records += r;
    skipped += k;
  }
  ASSERT_GT(records, 0u) << testing::PrintToString(lines);
  EXPECT_GT(skipped, 0u) << testing::PrintToString(lines);
  // What comes back is the active memtable's: less than the half of
  // memtable_bytes at which a memtable freezes (one write: ~150 bytes).
  EXPECT_LE((records - skipped) * 150, options_.memtable_bytes / 2)
      << testing::PrintToString(lines);
  for (int i = 0; i < kRows; i += 37) {
    EXPECT_EQ(Get("t", "row" + std::to_string(i), "f", "q"), "1:" + value);
  }
  EXPECT_EQ(Get("t", "last", "f", "q"), "1:after the flushes");
  options_.logger = nullptr;
  Reopen();
  EXPECT_EQ(Get("t", "row999", "f", "q"), "1:" + value);
  EXPECT_TRUE(db_->Verify().ok());
}

// Values of 64 KiB and more go to the log from where they are, between
// the record's small parts (CommitGroup): a group mixing them with small
// entries, in one record, reads back whole before and after a replay.
TEST_F(DBTest, LargeValuesInOneRecordSurviveReplay) {
  MakeTable("t", {"f"});
  // Sizes around kLogValueInPlaceBytes (64 KiB), bytes that differ.
  std::vector<std::string> values;
  for (size_t size :
       {10, (64 << 10) - 1, 64 << 10, 1 << 20, 3, (1 << 20) + 7, 0}) {
    std::string v(size, '\0');
    for (size_t k = 0; k < size; ++k) {
      v[k] = static_cast<char>(k % 251 + values.size());
    }
    values.push_back(std::move(v));
  }
  // Row i is "r" and i ("r" + std::to_string(i) meets GCC bug 105329's
  // false -Wrestrict here).
  auto row_of = [](size_t i) {
    return std::string("r").append(std::to_string(i));
  };
  std::vector<RowMutation> batch;
  for (size_t i = 0; i < values.size(); ++i) {
    RowMutation m(row_of(i));
    m.SetCell("f", "q", 1, values[i]);
    m.SetCell("f", "p", 1, std::to_string(i));
    batch.push_back(std::move(m));
  }
  for (const auto& r : db_->ApplyBatch("t", batch, WriteOptions())) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < values.size(); ++i) {
      const std::string row = row_of(i);
      ASSERT_EQ(Get("t", row, "f", "q"), "1:" + values[i]) << row;
      ASSERT_EQ(Get("t", row, "f", "p"), "1:" + std::to_string(i)) << row;
    }
    Reopen();  // replays the log
  }
}

// Rows overwritten after a flush are in two level-0 files... or one and
// level 1: every point read searches both, though level 0 is under the
// 4-file trigger. Reads that search level 0 and another file past
// ReadCompactionThreshold (1,000 here) compact level 0 (LevelDB's seek
// compaction); later reads search one file.
TEST_F(DBTest, ReadsThatSearchTwoFilesCompactLevelZero) {
  constexpr int kRows = 2000;
  FillTwoLevelZeroFiles(kRows);
  const uint64_t compactions = db_->GetStats().compactions;
  for (int i = 0; i < kRows; ++i) {
    ASSERT_EQ(Get("t", RowKey(i), "f", "q"), "2:v2");
  }
  ASSERT_TRUE(db_->WaitForIdle().ok());
  DbStats stats = db_->GetStats();
  EXPECT_GT(stats.compactions, compactions) << stats.ToString();
  EXPECT_EQ(LevelZeroFiles(), 0u) << stats.ToString();
  ReadOptions all;
  all.max_versions = 0;
  for (int i = 0; i < kRows; i += 97) {
    EXPECT_EQ(Get("t", RowKey(i), "f", "q", all), "2:v2,1:v1");
  }
}

// Reads of missing rows search no file, but with two level-0 files whose
// ranges hold the row each probes both files' Bloom filters (and a deeper
// level's): they count toward the same compaction.
TEST_F(DBTest, ReadsThatProbeTwoLevelZeroFiltersCompactLevelZero) {
  constexpr int kRows = 2000;
  FillTwoLevelZeroFiles(kRows);
  const uint64_t compactions = db_->GetStats().compactions;
  for (int i = 0; i < kRows; ++i) {
    // "row<i>m" sorts inside both files' ranges and is in neither.
    auto cells =
        db_->ReadCell("t", RowKey(i).append("m"), "f", "q", ReadOptions());
    ASSERT_TRUE(cells.ok()) << cells.status().ToString();
    ASSERT_TRUE(cells->empty());
  }
  ASSERT_TRUE(db_->WaitForIdle().ok());
  DbStats stats = db_->GetStats();
  EXPECT_GT(stats.compactions, compactions) << stats.ToString();
  EXPECT_EQ(LevelZeroFiles(), 0u) << stats.ToString();
  EXPECT_EQ(Get("t", RowKey(7), "f", "q"), "2:v2");
}

TEST_F(DBTest, AppendIncrementCheckAndMutate) {
  MakeTable("t", {"f"});
  WriteOptions wo;
  auto a1 = db_->Append("t", "r", "f", "log", "one\n", wo);
  ASSERT_TRUE(a1.ok());
  EXPECT_EQ(a1->value_size, 4u);
  auto a2 = db_->Append("t", "r", "f", "log", "two\n", wo);
  ASSERT_TRUE(a2.ok());
  EXPECT_GT(a2->timestamp, a1->timestamp);
  EXPECT_EQ(a2->value_size, 8u);
  EXPECT_EQ((*db_->ReadCell("t", "r", "f", "log", ReadOptions()))[0].value,
            "one\ntwo\n");
  EXPECT_TRUE(
      db_->Append("t", "r", "nope", "log", "x", wo).status().IsNotFound() ||
      db_->Append("t", "r", "nope", "log", "x", wo)
          .status()
          .IsInvalidArgument());
  EXPECT_TRUE(
      db_->Append("t", "", "f", "log", "x", wo).status().IsInvalidArgument());

  EXPECT_EQ(*db_->Increment("t", "r", "f", "n", 5, wo), 5);
  EXPECT_EQ(*db_->Increment("t", "r", "f", "n", -7, wo), -2);
  ASSERT_TRUE(db_->Append("t", "r", "f", "log", "3", wo).ok());  // 9 bytes
  EXPECT_TRUE(
      db_->Increment("t", "r", "f", "log", 1, wo).status().IsInvalidArgument());

  CellCondition c;
  c.family = "f";
  c.qualifier = "flag";
  c.op = CellCondition::Op::kNotExists;
  RowMutation set("r");
  set.SetCell("f", "flag", "set");
  RowMutation other("r");
  other.SetCell("f", "flag2", "was-set");
  EXPECT_TRUE(*db_->CheckAndMutate("t", "r", c, set, other, wo));
  EXPECT_FALSE(*db_->CheckAndMutate("t", "r", c, set, other, wo));
  EXPECT_EQ((*db_->ReadCell("t", "r", "f", "flag2", ReadOptions()))[0].value,
            "was-set");
  c.op = CellCondition::Op::kEquals;
  c.value = "set";
  RowMutation none("r");
  EXPECT_TRUE(*db_->CheckAndMutate("t", "r", c, none, none, wo));
  c.value = "other";
  EXPECT_FALSE(*db_->CheckAndMutate("t", "r", c, none, none, wo));
  RowMutation wrong_row("x");
  wrong_row.SetCell("f", "q", "v");
  EXPECT_TRUE(db_->CheckAndMutate("t", "r", c, wrong_row, none, wo)
                  .status()
                  .IsInvalidArgument());
}

TEST_F(DBTest, ScannerRangesAndSkips) {
  MakeTable("t", {"a", "b"});
  for (std::string row : {"r1", "r2", "s1", "s2"}) {
    Put("t", row, "a", "x", 2, row + "ax2");
    Put("t", row, "a", "x", 1, row + "ax1");
    Put("t", row, "a", "y", 1, row + "ay");
    Put("t", row, "b", "z", 1, row + "bz");
  }
  ScanOptions so;
  so.prefix = "s";
  EXPECT_EQ(Scan("t", so),
            "s1/a:x@2=s1ax2 s1/a:y@1=s1ay s1/b:z@1=s1bz "
            "s2/a:x@2=s2ax2 s2/a:y@1=s2ay s2/b:z@1=s2bz");
  so = ScanOptions();
  so.start_row = "r2";
  so.end_row = "s2";
  so.read.families = {"b"};
  EXPECT_EQ(Scan("t", so), "r2/b:z@1=r2bz s1/b:z@1=s1bz");
  so = ScanOptions();
  so.read.columns = {{"a", "y"}};
  so.read.families = {"b"};
  so.end_row = "r2";
  EXPECT_EQ(Scan("t", so), "r1/a:y@1=r1ay r1/b:z@1=r1bz");
  so = ScanOptions();
  so.read.max_versions = 2;
  so.end_row = "r2";
  EXPECT_EQ(Scan("t", so),
            "r1/a:x@2=r1ax2 r1/a:x@1=r1ax1 r1/a:y@1=r1ay r1/b:z@1=r1bz");

  auto s = db_->NewScanner("t", ScanOptions());
  ASSERT_TRUE(s.ok());
  Scanner& sc = **s;
  ASSERT_TRUE(sc.Valid());
  EXPECT_EQ(sc.row(), "r1");
  sc.NextFamily();
  EXPECT_EQ(sc.family(), "b");
  sc.NextRow();
  EXPECT_EQ(sc.row(), "r2");
  sc.NextColumn();
  EXPECT_EQ(sc.qualifier(), "y");
  sc.Seek("s1", "b");
  EXPECT_EQ(sc.row(), "s1");
  EXPECT_EQ(sc.family(), "b");
  sc.Seek("r", "a", "y");  // row "r" does not exist: next row's start
  EXPECT_EQ(sc.row(), "r1");
  EXPECT_EQ(sc.qualifier(), "x");
  sc.Seek("r1", "a", "xx");
  EXPECT_EQ(sc.qualifier(), "y");
  sc.Seek("r1", "nope", "q");
  EXPECT_EQ(sc.family(), "a");
  Row row;
  ASSERT_TRUE(sc.ReadRow(&row).ok());
  EXPECT_EQ(row.key, "r1");
  EXPECT_EQ(row.cells.size(), 3u);
  EXPECT_EQ(sc.row(), "r2");
  sc.Seek("zzz");
  EXPECT_FALSE(sc.Valid());
  EXPECT_TRUE(sc.status().ok());
}

TEST_F(DBTest, SnapshotSeesThePast) {
  MakeTable("t", {"f"});
  Put("t", "r", "f", "q", 1, "before");
  auto snap = db_->GetSnapshot();
  Put("t", "r", "f", "q", 2, "after");
  RowMutation del("r");
  del.DeleteRow();
  ASSERT_TRUE(db_->Apply("t", del, WriteOptions()).ok());
  ReadOptions ro;
  ro.snapshot = snap.get();
  EXPECT_EQ(Get("t", "r", "f", "q", ro), "1:before");
  EXPECT_EQ(Get("t", "r", "f", "q"), "");
  snap.reset();
}

TEST_F(DBTest, SecondOpenIsBusy) {
  auto second = DB::Open(options_, "/db");
  EXPECT_TRUE(second.status().IsBusy()) << second.status().ToString();
}

TEST_F(DBTest, OpenWithoutCreateFails) {
  Options o = options_;
  o.create_if_missing = false;
  EXPECT_FALSE(DB::Open(o, "/other").ok());
}

TEST_F(DBTest, EmptyValueAndBinaryKeys) {
  MakeTable("t", {"f"});
  std::string row("\0\xff\0", 3);
  std::string q("\0", 1);
  Put("t", row, "f", q, 1, "");
  Put("t", row, "f", "", 1, std::string("\0v", 2));
  auto r = db_->ReadRow("t", row, ReadOptions());
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->cells.size(), 2u);
  EXPECT_EQ(r->cells[0].qualifier, "");
  EXPECT_EQ(r->cells[0].value, std::string("\0v", 2));
  EXPECT_EQ(r->cells[1].qualifier, q);
  EXPECT_EQ(r->cells[1].value, "");
  EXPECT_TRUE(
      db_->ReadRow("t", std::string("\0", 1), ReadOptions())->cells.empty());
}

TEST_F(DBTest, SnapshotSurvivesFlushAndCompaction) {
  MakeTable("t", {"f"});
  FamilySettings one;
  one.gc_policy = GcPolicy::MaxVersions(1);
  ASSERT_TRUE(db_->CreateFamily("t", "g", one).ok());
  Put("t", "r", "f", "q", 1, "v1");
  Put("t", "r", "g", "q", 1, "g1");
  Put("t", "gone", "f", "q", 1, "here");
  auto snap = db_->GetSnapshot();
  Put("t", "r", "f", "q", 2, "v2");
  Put("t", "r", "g", "q", 2, "g2");
  RowMutation del("gone");
  del.DeleteRow();
  ASSERT_TRUE(db_->Apply("t", del, WriteOptions()).ok());
  ASSERT_TRUE(db_->CompactAll().ok());
  ReadOptions at_snap;
  at_snap.snapshot = snap.get();
  at_snap.max_versions = 0;
  EXPECT_EQ(Get("t", "r", "f", "q", at_snap), "1:v1");
  EXPECT_EQ(Get("t", "r", "g", "q", at_snap), "1:g1");
  EXPECT_EQ(Get("t", "gone", "f", "q", at_snap), "1:here");
  ReadOptions all;
  all.max_versions = 0;
  EXPECT_EQ(Get("t", "r", "f", "q", all), "2:v2,1:v1");
  EXPECT_EQ(Get("t", "r", "g", "q", all), "2:g2");
  EXPECT_EQ(Get("t", "gone", "f", "q"), "");
  // Released, the next compaction may drop what only the snapshot saw.
  snap.reset();
  ASSERT_TRUE(db_->CompactAll().ok());
  EXPECT_EQ(Get("t", "r", "g", "q", all), "2:g2");
  EXPECT_EQ(Get("t", "gone", "f", "q"), "");
}

TEST_F(DBTest, StatsCountReadsAndTheirBlockFetches) {
  MakeTable("t", {"f"});
  Put("t", "r", "f", "q", 1, "v1");
  ASSERT_TRUE(db_->CompactAll().ok());
  Reopen();  // an empty block cache
  DbStats before = db_->GetStats();
  EXPECT_EQ(Get("t", "r", "f", "q"), "1:v1");
  DbStats cold = db_->GetStats();
  EXPECT_EQ(cold.point_reads, before.point_reads + 1);
  EXPECT_EQ(cold.table_block_reads, before.table_block_reads + 1);
  EXPECT_GT(cold.table_read_bytes, before.table_read_bytes);
  EXPECT_EQ(cold.block_cache_misses, before.block_cache_misses + 1);
  // The second read of the row is served by the block cache.
  EXPECT_EQ(Get("t", "r", "f", "q"), "1:v1");
  DbStats warm = db_->GetStats();
  EXPECT_EQ(warm.point_reads, cold.point_reads + 1);
  EXPECT_EQ(warm.table_block_reads, cold.table_block_reads);
  EXPECT_EQ(warm.table_read_bytes, cold.table_read_bytes);
  EXPECT_EQ(warm.block_cache_hits, cold.block_cache_hits + 1);
  EXPECT_EQ(Scan("t"), "r/f:q@1=v1");
  EXPECT_EQ(db_->GetStats().scans, warm.scans + 1);
  std::string text = db_->GetStats().ToString();
  EXPECT_NE(text.find("\npoint_reads 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\ntable_block_reads "), std::string::npos) << text;
}

TEST_F(DBTest, PointReadsSkipAMemtableThatDoesNotHoldTheRow) {
  MakeTable("t", {"f"});
  const int rows = 3000;  // past the filter's first segment (1,024 rows)
  for (int i = 0; i < rows; ++i) Put("t", RowKey(i), "f", "q", 1, "m");
  ASSERT_EQ(db_->GetStats().flushes, 0u) << "the rows must be in memory";
  const DbStats before = db_->GetStats();
  for (int i = 0; i < rows; ++i) {
    ASSERT_EQ(Get("t", RowKey(i), "f", "q"), "1:m") << RowKey(i);
  }
  const DbStats found = db_->GetStats();
  // Rows the memtable holds never skip it.
  EXPECT_EQ(found.memtable_filter_useful, before.memtable_filter_useful);
  for (int i = 0; i < rows; ++i)
    EXPECT_EQ(
        Get("t", std::string("absent").append(std::to_string(i)), "f", "q"),
        "");
  const DbStats absent = db_->GetStats();
  // About 1 % of the absent rows pass the filter.
  EXPECT_GE(absent.memtable_filter_useful - found.memtable_filter_useful,
            static_cast<uint64_t>(rows) * 95 / 100);
  EXPECT_NE(absent.ToString().find("\nmemtable_filter_useful "),
            std::string::npos);
  // A row read (ReadRow) goes the same way.
  auto row = db_->ReadRow("t", RowKey(7), ReadOptions());
  ASSERT_TRUE(row.ok());
  ASSERT_EQ(row->cells.size(), 1u);
  EXPECT_EQ(row->cells[0].value, "m");
}

// A MemEnv whose SSTable creations wait until Open() is called: flushes
// hold still, so writes must stall on the memtable budget.
class GatedTableEnv : public MemEnv {
 public:
  Result<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path) override {
    if (path.ends_with(".sst")) {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [this] { return open_; });
    }
    return MemEnv::NewWritableFile(path);
  }
  void Open() {
    std::lock_guard<std::mutex> l(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Active memtables are frozen at half of memtable_bytes (they were frozen
// at the whole budget, so a frozen one being flushed and the active ones
// filling could hold twice the budget in a fill).
TEST(DBMemoryTest, MemtablesFreezeAtHalfTheBudget) {
  GatedTableEnv env;  // flushes wait: the frozen memtable stays
  Options o;
  o.env = &env;
  o.space_reserve_bytes = 0;
  o.commit_interval = std::chrono::milliseconds(0);
  o.memtable_bytes = 256 << 10;
  auto opened = DB::Open(o, "/db");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<DB> db = std::move(*opened);
  ASSERT_TRUE(db->CreateTable("t").ok());
  ASSERT_TRUE(db->CreateFamily("t", "f", FamilySettings()).ok());
  uint64_t before_freeze = 0;
  for (int i = 0; i < 1000 && db->GetStats().frozen_memtables == 0; ++i) {
    before_freeze = db->GetStats().memtable_bytes;
    RowMutation m("row" + std::to_string(i));
    m.SetCell("f", "q", std::string(100, 'v'));
    ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
  }
  EXPECT_EQ(db->GetStats().frozen_memtables, 1u);
  EXPECT_GE(before_freeze, o.memtable_bytes / 2 - 8192);
  EXPECT_LE(before_freeze, o.memtable_bytes / 2 + 8192);
  env.Open();
  ASSERT_TRUE(db->WaitForIdle().ok());
}

// While flushes fall behind, writers stall once frozen and active
// memtables hold twice the budget (they used to go on until frozen ones
// alone held twice the budget, plus a full active one).
TEST(DBMemoryTest, MemtablesStayBoundedWhileFlushesLag) {
  GatedTableEnv env;
  Options o;
  o.env = &env;
  o.space_reserve_bytes = 0;
  o.commit_interval = std::chrono::milliseconds(0);
  o.memtable_bytes = 256 << 10;
  auto opened = DB::Open(o, "/db");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<DB> db = std::move(*opened);
  ASSERT_TRUE(db->CreateTable("t").ok());
  ASSERT_TRUE(db->CreateFamily("t", "f", FamilySettings()).ok());
  std::thread writer([&] {
    for (int i = 0; i < 10000; ++i) {
      RowMutation m("row" + std::to_string(i));
      m.SetCell("f", "q", std::string(100, 'v'));
      ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
    }
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (db->GetStats().write_stalls == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  DbStats stalled = db->GetStats();
  env.Open();
  writer.join();
  EXPECT_GE(stalled.write_stalls, 1u);
  EXPECT_GE(stalled.frozen_memtables, 3u);  // frozen at half the budget
  // One write and one arena block of slack past twice the budget.
  EXPECT_LE(stalled.memtable_bytes, 2 * o.memtable_bytes + 8192)
      << stalled.ToString();
  ASSERT_TRUE(db->WaitForIdle().ok());
}

// Every read of an SSTable takes `delay`: compactions become slow.
class SlowTableReadEnv : public MemEnv {
 public:
  explicit SlowTableReadEnv(std::chrono::microseconds delay) : delay_(delay) {}
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    auto file = MemEnv::NewRandomAccessFile(path);
    if (!file.ok() || !path.ends_with(".sst")) return file;
    return std::unique_ptr<RandomAccessFile>(
        std::make_unique<Slow>(std::move(*file), delay_));
  }

 private:
  class Slow : public RandomAccessFile {
   public:
    Slow(std::unique_ptr<RandomAccessFile> file,
         std::chrono::microseconds delay)
        : file_(std::move(file)), delay_(delay) {}
    Status Read(uint64_t offset, size_t n, std::string_view* result,
                char* scratch) const override {
      std::this_thread::sleep_for(delay_);
      return file_->Read(offset, n, result, scratch);
    }
    bool ReadsInPlace() const override { return file_->ReadsInPlace(); }

   private:
    std::unique_ptr<RandomAccessFile> file_;
    std::chrono::microseconds delay_;
  };
  std::chrono::microseconds delay_;
};

// A compaction runs on the one background thread; memtables frozen while
// it runs are flushed between its entries (as in LevelDB), not after it,
// so writers do not stall for its whole length. Compactions here read
// every block 200 us late while a writer freezes a memtable every ~120
// writes.
TEST(DBCompactionTest, FlushesRunWhileACompactionRuns) {
  SlowTableReadEnv env(std::chrono::microseconds(200));
  Options o;
  o.env = &env;
  o.space_reserve_bytes = 0;
  o.commit_interval = std::chrono::milliseconds(0);
  o.memtable_bytes = 64 << 10;
  o.target_file_bytes = 64 << 10;
  o.block_size = 1024;
  auto opened = DB::Open(o, "/db");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<DB> db = std::move(*opened);
  ASSERT_TRUE(db->CreateTable("t").ok());
  ASSERT_TRUE(db->CreateFamily("t", "f", FamilySettings()).ok());
  auto value = [](int i) {
    return std::string(200, static_cast<char>('a' + i % 26));
  };
  constexpr int kRows = 6000;
  for (int i = 0; i < kRows; ++i) {
    RowMutation m("row" + std::to_string(i));
    m.SetCell("f", "q", value(i));
    ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
  }
  ASSERT_TRUE(db->WaitForIdle().ok());
  DbStats stats = db->GetStats();
  EXPECT_GT(stats.compactions, 0u) << stats.ToString();
  EXPECT_GT(stats.flushes_during_compactions, 0u) << stats.ToString();
  EXPECT_LE(stats.flushes_during_compactions, stats.flushes);
  for (int i = 0; i < kRows; i += 7) {
    auto cells =
        db->ReadCell("t", "row" + std::to_string(i), "f", "q", ReadOptions());
    ASSERT_TRUE(cells.ok()) << cells.status().ToString();
    ASSERT_EQ(cells->size(), 1u) << i;
    EXPECT_EQ((*cells)[0].value, value(i)) << i;
  }
  EXPECT_TRUE(db->Verify().ok());
}

// Rows written in order: each flush's file holds rows after all earlier
// ones, so compactions move files down a level instead of rewriting them
// (LevelDB's trivial move), and what they hold, the files on disk and the
// manifest stay right across a reopen.
class DBMoveTest : public DBTest {
 protected:
  DBMoveTest() {
    options_.commit_interval = std::chrono::milliseconds(0);
    options_.memtable_bytes = 64 << 10;
    options_.target_file_bytes = 64 << 10;
    options_.block_size = 1024;
  }
  static std::string Row(int i) {
    char name[16];
    snprintf(name, sizeof(name), "row%06d", i);
    return name;
  }
  // Incompressible, so the files hold about what was written.
  static std::string Value(int i) {
    uint64_t x = 0x9E3779B97F4A7C15ull * (i + 1);
    std::string v(200, ' ');
    for (char& c : v) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      c = static_cast<char>('0' + x % 75);
    }
    return v;
  }
  // The .sst files in the directory: every one is in a level, and every
  // level's file is there.
  void ExpectFilesMatchLevels() {
    auto children = env_.GetChildren("/db");
    ASSERT_TRUE(children.ok());
    uint64_t ssts = 0;
    for (const std::string& name : *children) ssts += name.ends_with(".sst");
    uint64_t in_levels = 0;
    for (const LevelStats& l : db_->GetStats().levels) in_levels += l.files;
    EXPECT_EQ(ssts, in_levels) << db_->GetStats().ToString();
  }
};

TEST_F(DBMoveTest, RowsWrittenInOrderMoveDownWithoutARewrite) {
  MakeTable("t", {"f"});
  constexpr int kRows = 8000;  // ~1.7 MB: levels 1 and 2
  for (int i = 0; i < kRows; ++i) Put("t", Row(i), "f", "q", 1, Value(i));
  ASSERT_TRUE(db_->WaitForIdle().ok());
  DbStats stats = db_->GetStats();
  EXPECT_GT(stats.compactions_moved, 0u) << stats.ToString();
  // Every compaction was a move: nothing was written twice.
  EXPECT_EQ(stats.compactions, stats.compactions_moved) << stats.ToString();
  ASSERT_GE(stats.levels.size(), 3u);
  EXPECT_GT(stats.levels[2].files, 0u) << stats.ToString();
  ExpectFilesMatchLevels();
  for (int reopen = 0; reopen < 2; ++reopen) {
    for (int i = 0; i < kRows; i += 13) {
      ASSERT_EQ(Get("t", Row(i), "f", "q"), "1:" + Value(i)) << i;
    }
    EXPECT_TRUE(db_->Verify().ok());
    // The moves are in the manifest: the same levels after a reopen (with
    // nothing left in the log to replay).
    ASSERT_TRUE(db_->Flush().ok());
    ASSERT_TRUE(db_->WaitForIdle().ok());
    const DbStats before = db_->GetStats();
    Reopen();
    ASSERT_TRUE(db_->WaitForIdle().ok());
    const DbStats after = db_->GetStats();
    ASSERT_EQ(after.levels.size(), before.levels.size());
    for (size_t l = 0; l < after.levels.size(); ++l) {
      EXPECT_EQ(after.levels[l].files, before.levels[l].files) << l;
    }
    ExpectFilesMatchLevels();
  }
  // A moved file that a later compaction rewrites is deleted once, after
  // it is out of every level.
  ASSERT_TRUE(db_->CompactAll().ok());
  ASSERT_TRUE(db_->WaitForIdle().ok());
  ExpectFilesMatchLevels();
  for (int i = 0; i < kRows; i += 13) {
    ASSERT_EQ(Get("t", Row(i), "f", "q"), "1:" + Value(i)) << i;
  }
}

// A file that holds markers or a second version of a cell is not moved to
// the bottom: there a rewrite drops what they hide.
TEST_F(DBMoveTest, FilesWithMarkersOrOlderVersionsAreRewrittenAtTheBottom) {
  MakeTable("t", {"f"});
  constexpr int kRows = 8000;
  for (int i = 0; i < kRows; ++i) {
    Put("t", Row(i), "f", "q", 1, Value(i));
    if (i % 10 == 0) {
      Put("t", Row(i), "f", "q", 2, Value(i + 1));
    } else if (i % 10 == 5) {
      RowMutation m(Row(i));
      m.DeleteRow();
      ASSERT_TRUE(db_->Apply("t", m, WriteOptions()).ok());
    }
  }
  ASSERT_TRUE(db_->WaitForIdle().ok());
  DbStats stats = db_->GetStats();
  EXPECT_GT(stats.compactions, stats.compactions_moved) << stats.ToString();
  ExpectFilesMatchLevels();
  ReadOptions all;
  all.max_versions = 0;
  for (int i = 0; i < kRows; i += 5) {
    const std::string want = i % 10 == 0
                                 ? "2:" + Value(i + 1) + ",1:" + Value(i)
                             : i % 10 == 5 ? ""
                                           : "1:" + Value(i);
    ASSERT_EQ(Get("t", Row(i), "f", "q", all), want) << i;
  }
  EXPECT_TRUE(db_->Verify().ok());
}

// maxage collects a cell's only version: files of a family that has it are
// rewritten at the bottom, plain or not, and what expired is gone from disk.
TEST_F(DBMoveTest, FilesOfAFamilyWithMaxAgeAreRewrittenAtTheBottom) {
  ASSERT_TRUE(db_->CreateTable("t").ok());
  FamilySettings settings;
  auto policy = GcPolicy::Parse("maxage=1h");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  settings.gc_policy = *policy;
  ASSERT_TRUE(db_->CreateFamily("t", "f", settings).ok());
  constexpr int kRows = 8000;
  for (int i = 0; i < kRows; ++i) Put("t", Row(i), "f", "q", 1, Value(i));
  ASSERT_TRUE(db_->WaitForIdle().ok());
  DbStats stats = db_->GetStats();
  EXPECT_GT(stats.compactions, stats.compactions_moved) << stats.ToString();
  // Timestamp 1 (1970) is long expired: the bottom rewrites dropped it.
  EXPECT_EQ(Get("t", Row(0), "f", "q"), "");
  uint64_t bytes = 0;
  for (size_t l = 1; l < stats.levels.size(); ++l) {
    bytes += stats.levels[l].bytes;
  }
  EXPECT_LT(bytes, uint64_t{kRows} * 200 / 2) << stats.ToString();
  ExpectFilesMatchLevels();
}

TEST(DBPosixTest, WorksOnTheRealFilesystem) {
  std::string dir = testing::TempDir() + "tabletfs_db_posix_test_" +
                    std::to_string(::getpid());
  Options o;
  o.space_reserve_bytes = 0;
  o.memtable_bytes = 16 << 10;
  {
    auto db = DB::Open(o, dir);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE((*db)->CreateTable("t").ok());
    ASSERT_TRUE((*db)->CreateFamily("t", "f", FamilySettings()).ok());
    for (int i = 0; i < 500; ++i) {
      RowMutation m("row" + std::to_string(i));
      m.SetCell("f", "q", std::string(100, 'a' + i % 26));
      WriteOptions wo;
      wo.sync = i % 100 == 0;
      ASSERT_TRUE((*db)->Apply("t", m, wo).ok());
    }
    ASSERT_TRUE((*db)->CompactAll().ok());
    // A second open of a held directory is refused.
    EXPECT_TRUE(DB::Open(o, dir).status().IsBusy());
  }
  {
    auto db = DB::Open(o, dir);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    auto s = (*db)->NewScanner("t", ScanOptions());
    ASSERT_TRUE(s.ok());
    int n = 0;
    for (; (*s)->Valid(); (*s)->Next()) ++n;
    EXPECT_EQ(n, 500);
    s->reset();
    EXPECT_TRUE((*db)->Verify().ok());
  }
  Env* env = Env::Default();
  auto children = env->GetChildren(dir);
  if (children.ok()) {
    for (const auto& c : *children)
      env->RemoveFile(dir + "/" + c).IgnoreError();
  }
  env->RemoveDir(dir).IgnoreError();
}

}  // namespace
}  // namespace tabletfs
