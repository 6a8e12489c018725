#include "fs/dir_times_cache.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "fs/origin_bigtable.h"
#include "gtest/gtest.h"
#include "store/env/mem_env.h"
#include "store/reference/reference_bigtable.h"
#include "tests/fs/dir_times_scan.h"

namespace tabletfs::fs {
namespace {

// `prefix` and `n` ("q3"), appended: GCC 12 warns falsely (-Wrestrict,
// bug 105329) about "q" + std::to_string(n).
std::string Named(const char* prefix, uint64_t n) {
  std::string name(prefix);
  name += std::to_string(n);
  return name;
}

using std::chrono::hours;
using std::chrono::milliseconds;

// The cache behind the mount's origin wrapper, over the reference store:
// every write goes through the wrapper, as the mount's do, and what the
// cache keeps must always equal a fresh scan.
class DirTimesCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(hours(1)); }

  void Open(std::chrono::steady_clock::duration max_age) {
    env_ = NewMemEnv();
    ReferenceOptions options;
    options.clock = env_.get();
    store_ = NewReferenceBigtable(options);
    cache_ = std::make_unique<DirTimesCache>(max_age);
    db_ = NewOriginBigtable(store_.get(), 1, cache_.get());
    ASSERT_TRUE(db_->CreateTable("t").ok());
    ASSERT_TRUE(db_->CreateFamily("t", "f", FamilySettings()).ok());
    ASSERT_TRUE(db_->CreateFamily("t", "g", FamilySettings()).ok());
  }

  // The family directory's DirTimes as a GETATTR scans them.
  DirTimes Scanned(const std::string& row, const std::string& family) {
    return ScannedFamilyTimes(store_.get(), row, family);
  }

  // A GETATTR as DataTreeArea::DirTimesOf makes it: the cache, else a
  // scan that fills it.
  DirTimes Getattr(const std::string& row, const std::string& family) {
    if (auto found = cache_->Find("t", row, family)) return *found;
    DirTimesCache::Scan scan = cache_->StartScan("t", row, family);
    DirTimes t = Scanned(row, family);
    scan.Found(t);
    return t;
  }

  void ExpectKeptIsFresh(const std::string& row, const std::string& family) {
    std::optional<DirTimes> kept = cache_->Find("t", row, family);
    if (!kept.has_value()) return;
    DirTimes fresh = Scanned(row, family);
    EXPECT_EQ(kept->newest, fresh.newest) << row << "/" << family;
    EXPECT_EQ(kept->entries, fresh.entries) << row << "/" << family;
  }

  void Set(const std::string& q) {
    RowMutation m("r");
    m.SetCell("f", q, "v");
    ASSERT_TRUE(db_->Apply("t", m, WriteOptions()).ok());
  }
  // A delete in another row (rm -r removing a row's cells).
  void DeleteIn(const std::string& row) {
    RowMutation m(row);
    m.DeleteCell("f", "q");
    ASSERT_TRUE(db_->Apply("t", m, WriteOptions()).ok());
  }
  void Delete(const std::string& q) {
    RowMutation m("r");
    m.DeleteCell("f", q);
    ASSERT_TRUE(db_->Apply("t", m, WriteOptions()).ok());
  }

  std::unique_ptr<Env> env_;
  std::unique_ptr<Bigtable> store_;
  std::unique_ptr<DirTimesCache> cache_;
  std::unique_ptr<Bigtable> db_;
};

TEST_F(DirTimesCacheTest, FollowsCreatesAndRemovesWithoutScanning) {
  for (int i = 0; i < 20; i++) Set(Named("q", i));
  Getattr("r", "f");
  ASSERT_EQ(cache_->kept_scans(), 1u);
  // Created and removed one at a time, as cp and rm -r do, each followed
  // by the GETATTR the kernel makes: no scan after the first.
  for (int i = 20; i < 60; i++) {
    Set(Named("q", i));
    ExpectKeptIsFresh("r", "f");
    Getattr("r", "f");
  }
  for (int i = 0; i < 59; i++) {
    Delete(Named("q", i));
    ExpectKeptIsFresh("r", "f");
    Getattr("r", "f");
  }
  EXPECT_EQ(cache_->kept_scans(), 1u);
  // The newest cell going: only a scan knows the next newest.
  Set("a");
  Getattr("r", "f");
  Delete("a");
  EXPECT_FALSE(cache_->Find("t", "r", "f").has_value());
  EXPECT_EQ(Getattr("r", "f").entries, Scanned("r", "f").entries);
  EXPECT_EQ(cache_->kept_scans(), 2u);
}

// Random writes of every kind through the wrapper, with GETATTRs between
// them: whatever the cache keeps equals a fresh scan.
TEST_F(DirTimesCacheTest, KeptTimesEqualAFreshScanUnderRandomWrites) {
  std::mt19937 rng(20);
  const std::vector<std::string> rows = {"r", "s"};
  const std::vector<std::string> families = {"f", "g"};
  auto pick = [&](const std::vector<std::string>& v) {
    return v[rng() % v.size()];
  };
  int64_t explicit_ts = 1000;
  for (int step = 0; step < 4000; step++) {
    const std::string row = pick(rows);
    const std::string family = pick(families);
    const std::string q = Named("q", rng() % 8);
    RowMutation m(row);
    switch (rng() % 10) {
      case 0:
      case 1:
        m.SetCell(family, q, "v");
        break;
      case 2:
        // An old or a new explicit timestamp.
        m.SetCell(family, q, (rng() % 2 == 0 ? 1 : explicit_ts += 7) * 1000,
                  "v");
        break;
      case 3:
      case 4:
        m.DeleteCell(family, q);
        break;
      case 5: {
        // The newest version, or one below it, then perhaps a new one (the
        // mount's placeholder replaced at close).
        ReadOptions ro;
        ro.max_versions = 2;
        auto versions = store_->ReadCell("t", row, family, q, ro);
        ASSERT_TRUE(versions.ok());
        if (versions->empty()) continue;
        m.DeleteVersion(family, q,
                        (*versions)[rng() % versions->size()].timestamp);
        if (rng() % 2 == 0) m.SetCell(family, q, "w");
        break;
      }
      case 6: {
        auto r = db_->Append("t", row, family, q, "+", WriteOptions());
        ASSERT_TRUE(r.ok());
        break;
      }
      case 7:
        if (rng() % 8 == 0) {
          m.DeleteRow();
        } else {
          m.DeleteCell(family, q).SetCell(pick(families), "q9", "x");
        }
        break;
      default: {
        CellCondition c;
        c.family = family;
        c.qualifier = q;
        RowMutation yes(row);
        yes.SetCell(family, q + "c", "y");
        auto r = db_->CheckAndMutate("t", row, c, yes, RowMutation(row),
                                     WriteOptions());
        ASSERT_TRUE(r.ok());
        break;
      }
    }
    if (!m.empty()) {
      ASSERT_TRUE(db_->Apply("t", m, WriteOptions()).ok());
    }
    for (const std::string& r : rows) {
      for (const std::string& f : families) {
        ExpectKeptIsFresh(r, f);
        if (rng() % 2 == 0) Getattr(r, f);
      }
    }
    if (HasFailure()) FAIL() << "at step " << step;
  }
  // It did keep and follow, not only scan.
  EXPECT_GT(cache_->hits(), 1000u);
}

TEST_F(DirTimesCacheTest, AScanAWriteOverlapsIsNotKept) {
  Set("a");
  {
    DirTimesCache::Scan scan = cache_->StartScan("t", "r", "f");
    DirTimes before = Scanned("r", "f");
    Set("b");  // lands while the scan runs
    scan.Found(before);
  }
  EXPECT_FALSE(cache_->Find("t", "r", "f").has_value());
  // A write of another directory does not spoil it.
  {
    DirTimesCache::Scan scan = cache_->StartScan("t", "r", "f");
    DirTimes before = Scanned("r", "f");
    RowMutation m("r");
    m.SetCell("g", "x", "v");
    ASSERT_TRUE(db_->Apply("t", m, WriteOptions()).ok());
    scan.Found(before);
  }
  EXPECT_TRUE(cache_->Find("t", "r", "f").has_value());
  // A scan that starts while a write of its directory is in flight.
  RowMutation m("r");
  m.SetCell("f", "c", "v");
  {
    DirTimesCache::Write w = cache_->Begin(store_.get(), "t", m);
    ASSERT_TRUE(store_->Apply("t", m, WriteOptions()).ok());
    DirTimesCache::Scan scan = cache_->StartScan("t", "s", "f");
    DirTimesCache::Scan same = cache_->StartScan("t", "r", "f");
    scan.Found(Scanned("s", "f"));
    same.Found(Scanned("r", "f"));
    // Not told how it went: the write is not followed.
  }
  EXPECT_FALSE(cache_->Find("t", "r", "f").has_value());
  EXPECT_TRUE(cache_->Find("t", "s", "f").has_value());
}

TEST_F(DirTimesCacheTest, TwoWritesOfOneDirectoryAtOnceForgetIt) {
  Set("a");
  Getattr("r", "f");
  RowMutation one("r");
  one.SetCell("f", "b", "v");
  RowMutation two("r");
  two.DeleteCell("f", "b");
  DirTimesCache::Write w1 = cache_->Begin(store_.get(), "t", one);
  DirTimesCache::Write w2 = cache_->Begin(store_.get(), "t", two);
  // Applied in the order the cache cannot see.
  auto r2 = store_->Apply("t", two, WriteOptions());
  auto r1 = store_->Apply("t", one, WriteOptions());
  ASSERT_TRUE(r1.ok() && r2.ok());
  w2.Done(*r2);
  w1.Done(*r1);
  EXPECT_FALSE(cache_->Find("t", "r", "f").has_value());
  EXPECT_EQ(Getattr("r", "f").entries, Scanned("r", "f").entries);
}

TEST_F(DirTimesCacheTest, OtherDoorsAndSchemaChangesForget) {
  Set("a");
  Getattr("r", "f");
  Getattr("s", "f");
  ChangeEvent e;
  e.table = "t";
  e.row = "r";
  e.family = "f";
  e.qualifier = "b";
  e.kind = ChangeKind::kSetCell;
  cache_->Forget(e);
  EXPECT_FALSE(cache_->Find("t", "r", "f").has_value());
  EXPECT_TRUE(cache_->Find("t", "s", "f").has_value());
  e.kind = ChangeKind::kDropTable;
  cache_->Forget(e);
  EXPECT_FALSE(cache_->Find("t", "s", "f").has_value());

  Getattr("r", "f");
  Getattr("r", "g");
  ASSERT_TRUE(db_->UpdateFamily("t", "g", FamilySettings()).ok());
  EXPECT_FALSE(cache_->Find("t", "r", "f").has_value());
  EXPECT_FALSE(cache_->Find("t", "r", "g").has_value());

  Getattr("r", "f");
  cache_->ForgetAll();
  EXPECT_FALSE(cache_->Find("t", "r", "f").has_value());
}

TEST_F(DirTimesCacheTest, AMutationOfManyCellsForgetsItsRow) {
  Set("a");
  Getattr("r", "f");
  RowMutation few("r");
  for (size_t i = 0; i < DirTimesCache::kMaxFollowedOps; i++) {
    few.SetCell("f", Named("b", i), "v");
  }
  ASSERT_TRUE(db_->Apply("t", few, WriteOptions()).ok());
  ExpectKeptIsFresh("r", "f");
  ASSERT_TRUE(cache_->Find("t", "r", "f").has_value());
  // A staged row's commit: forgotten, not followed op by op.
  RowMutation many("r");
  for (size_t i = 0; i <= DirTimesCache::kMaxFollowedOps; i++) {
    many.SetCell("f", Named("c", i), "v");
  }
  ASSERT_TRUE(db_->Apply("t", many, WriteOptions()).ok());
  EXPECT_FALSE(cache_->Find("t", "r", "f").has_value());
}

// A table scan's first row is kept as where the next may start, until a
// write could have put cells before it.
TEST_F(DirTimesCacheTest, ATablesFirstRowIsKeptUntilAWriteBeforeIt) {
  std::optional<std::string> first;
  auto scan_finds = [&](const std::string& row) {
    DirTimesCache::Scan scan = cache_->StartTableScan("t", &first);
    scan.FoundFirstRow(row);
  };
  // Not while nothing was deleted before it: a scan from the start skips
  // nothing then.
  scan_finds("m");
  EXPECT_FALSE(cache_->FirstRow("t").has_value());
  DeleteIn("b");
  scan_finds("m");
  EXPECT_EQ(cache_->FirstRow("t"), "m");
  EXPECT_FALSE(cache_->FirstRow("u").has_value());
  // Writes at or after it, and deletes anywhere, keep it.
  RowMutation later("z");
  later.SetCell("f", "q", "v");
  ASSERT_TRUE(db_->Apply("t", later, WriteOptions()).ok());
  RowMutation same("m");
  same.SetCell("f", "q", "v");
  ASSERT_TRUE(db_->Apply("t", same, WriteOptions()).ok());
  EXPECT_EQ(cache_->FirstRow("t"), "m");
  // A write of a row before it drops it.
  RowMutation before("a");
  before.SetCell("f", "q", "v");
  ASSERT_TRUE(db_->Apply("t", before, WriteOptions()).ok());
  EXPECT_FALSE(cache_->FirstRow("t").has_value());

  // A scan that started at the kept row, and a write before it meanwhile.
  scan_finds("m");
  {
    DirTimesCache::Scan scan = cache_->StartTableScan("t", &first);
    EXPECT_EQ(first, "m");
    ASSERT_TRUE(db_->Apply("t", before, WriteOptions()).ok());
    scan.FoundFirstRow("m");
  }
  EXPECT_FALSE(cache_->FirstRow("t").has_value());
  // A scan a write of the table overlaps is not kept, wherever it wrote.
  {
    DirTimesCache::Scan scan = cache_->StartTableScan("t", &first);
    ASSERT_TRUE(db_->Apply("t", later, WriteOptions()).ok());
    scan.FoundFirstRow("m");
  }
  EXPECT_FALSE(cache_->FirstRow("t").has_value());
  // Nor one that starts while a write is in flight.
  {
    DirTimesCache::Write w = cache_->Begin(store_.get(), "t", later);
    scan_finds("m");
  }
  EXPECT_FALSE(cache_->FirstRow("t").has_value());

  // Row-wide writes and other doors' changes of the table drop it.
  scan_finds("m");
  CellCondition c;
  c.family = "f";
  c.qualifier = "q";
  ASSERT_TRUE(
      db_->CheckAndMutate("t", "z", c, later, RowMutation("z"), WriteOptions())
          .ok());
  EXPECT_FALSE(cache_->FirstRow("t").has_value());
  scan_finds("m");
  ChangeEvent e;
  e.table = "t";
  e.row = "z";
  e.family = "f";
  e.kind = ChangeKind::kSetCell;
  cache_->Forget(e);
  EXPECT_FALSE(cache_->FirstRow("t").has_value());
}

TEST_F(DirTimesCacheTest, EntriesLiveAtMostMaxAge) {
  Open(milliseconds(20));
  Set("a");
  Getattr("r", "f");
  std::optional<std::string> first;
  DeleteIn("a");
  cache_->StartTableScan("t", &first).FoundFirstRow("r");
  EXPECT_TRUE(cache_->Find("t", "r", "f").has_value());
  EXPECT_TRUE(cache_->FirstRow("t").has_value());
  std::this_thread::sleep_for(milliseconds(60));
  EXPECT_FALSE(cache_->Find("t", "r", "f").has_value());
  EXPECT_FALSE(cache_->FirstRow("t").has_value());

  Open(std::chrono::steady_clock::duration::zero());  // keeps nothing
  Set("a");
  Getattr("r", "f");
  EXPECT_FALSE(cache_->Find("t", "r", "f").has_value());
  EXPECT_EQ(cache_->kept_scans(), 0u);
}

// Over a store without change events, age is all that bounds a kept first
// row: a scan that started at it must not make it younger.
TEST_F(DirTimesCacheTest, AScanFromTheKeptFirstRowDoesNotRenewIt) {
  Open(milliseconds(1000));
  std::optional<std::string> first;
  DeleteIn("a");
  cache_->StartTableScan("t", &first).FoundFirstRow("r");  // from the start
  EXPECT_FALSE(first.has_value());
  std::this_thread::sleep_for(milliseconds(600));
  cache_->StartTableScan("t", &first).FoundFirstRow("r");
  EXPECT_EQ(first, "r");
  std::this_thread::sleep_for(milliseconds(600));
  EXPECT_FALSE(cache_->FirstRow("t").has_value());
}

TEST_F(DirTimesCacheTest, KeepsAtMostMaxEntries) {
  for (size_t i = 0; i <= DirTimesCache::kMaxEntries; i++) {
    Getattr(Named("r", i), "f");
  }
  EXPECT_FALSE(cache_->Find("t", "r0", "f").has_value());
  EXPECT_TRUE(cache_->Find("t", "r1", "f").has_value());
}

}  // namespace
}  // namespace tabletfs::fs
