// Model test: random mutations of every kind applied to the engine and to
// the reference implementation (store/reference/, the oracle), compared
// through every read path after flushes, compactions and reopens.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "store/db.h"
#include "store/reference/reference_bigtable.h"
#include "tests/store/db/mem_db_test.h"
#include "tests/util/gcc_bug_105329.h"

namespace tabletfs {
namespace {

const std::vector<std::string> kFamilies = {"f", "g", "h"};

// The oracle takes every write with the timestamp the engine assigned, so
// both hold the same versions.
RowMutation WithTimestamp(const RowMutation& m, int64_t server_ts) {
  RowMutation out(m.row());
  for (const RowMutation::Op& op : m.ops()) {
    const int64_t ts =
        op.timestamp == kServerTimestamp ? server_ts : op.timestamp;
    switch (op.type) {
      case RowMutation::OpType::kSetCell:
        out.SetCell(op.family, op.qualifier, ts, op.value);
        break;
      case RowMutation::OpType::kDeleteVersion:
        out.DeleteVersion(op.family, op.qualifier, ts);
        break;
      case RowMutation::OpType::kDeleteCell:
        out.DeleteCell(op.family, op.qualifier);
        break;
      case RowMutation::OpType::kDeleteFamily:
        out.DeleteFamily(op.family);
        break;
      case RowMutation::OpType::kDeleteRow:
        out.DeleteRow();
        break;
    }
  }
  return out;
}

// "row|family|qualifier|ts=value" lines of a scan of table "t", in scan
// order.
std::vector<std::string> Scan(Bigtable& store, const std::string& start,
                              const std::string& end, const std::string& prefix,
                              std::optional<int64_t> at, uint32_t max_versions,
                              const Snapshot* snapshot = nullptr) {
  ScanOptions so;
  so.read.snapshot = snapshot;
  so.start_row = start;
  so.end_row = end;
  so.prefix = prefix;
  so.read.at = at;
  so.read.max_versions = max_versions;
  auto s = store.NewScanner("t", so);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  std::vector<std::string> out;
  if (!s.ok()) return out;
  for (Scanner& sc = **s; sc.Valid(); sc.Next()) {
    auto v = sc.value();
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    if (!v.ok()) break;
    EXPECT_EQ(sc.value_size(), v->size());
    out.push_back(std::string(sc.row()) + "|" + std::string(sc.family()) + "|" +
                  std::string(sc.qualifier()) + "|" +
                  std::to_string(sc.timestamp()) + "=" + std::string(*v));
  }
  EXPECT_TRUE((*s)->status().ok()) << (*s)->status().ToString();
  return out;
}

// One tablet per table (splits off), or tiny tablets: hundreds of splits
// and merges under the same writes, scans and deletes.
struct ModelParam {
  const char* name;
  uint64_t tablet_split_bytes;
  int rows;         // row keys drawn from r0 .. r<rows-1>
  int purge_every;  // ops between deletions of a block of rows (0: never)
  int ops;
};

// MemDbTest's database, with small memtables, files and blocks so that a
// few thousand operations flush, compact, split and merge.
class DBModelTest : public MemDbTest,
                    public testing::WithParamInterface<ModelParam> {
 protected:
  void SetUp() override {
    options_.memtable_bytes = 16 << 10;
    options_.target_file_bytes = 8 << 10;
    options_.block_size = 1024;
    options_.large_value_bytes = 300;
    options_.tablet_split_bytes = GetParam().tablet_split_bytes;
    Reopen();
    ReferenceOptions ro;
    ro.clock = &env_;
    ro.max_value_bytes = options_.max_value_bytes;
    oracle_ = NewReferenceBigtable(ro);
    for (Bigtable* store : {static_cast<Bigtable*>(db_.get()), oracle_.get()}) {
      ASSERT_TRUE(store->CreateTable("t").ok());
      for (const auto& f : kFamilies) {
        ASSERT_TRUE(store->CreateFamily("t", f, FamilySettings()).ok());
      }
    }
  }

  // Applies to the oracle what the engine applied at `server_ts`.
  void ApplyToOracle(const RowMutation& m, int64_t server_ts) {
    auto r = oracle_->Apply("t", WithTimestamp(m, server_ts), WriteOptions());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  // MemDbTest::Reopen, counting the splits and merges of the open closed.
  void Reopen() {
    if (db_ != nullptr) {
      DbStats stats = db_->GetStats();
      splits_ += stats.tablet_splits;
      merges_ += stats.tablet_merges;
    }
    MemDbTest::Reopen();
  }

  // The reference implementation (store/reference/): what the engine must
  // read back.
  std::unique_ptr<Bigtable> oracle_;
  uint64_t splits_ = 0;  // over all opens
  uint64_t merges_ = 0;
};

TEST_P(DBModelTest, RandomMutationsMatchModel) {
  const ModelParam& param = GetParam();
  uint32_t seed = std::random_device{}();
  if (const char* s = std::getenv("TABLETFS_SEED")) seed = std::stoul(s);
  std::printf("DBModelTest seed %u (rerun with TABLETFS_SEED=%u)\n", seed,
              seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  auto row_name = [&] {
    // GCC bug 105329: a false -Wrestrict in "r" + std::to_string(...).
    TABLETFS_GCC_BUG_105329_BEGIN
    std::string r = "r" + std::to_string(pick(param.rows));
    TABLETFS_GCC_BUG_105329_END
    if (pick(10) == 0) r.push_back('\0');
    return r;
  };
  auto qual = [&] {
    static const char* q[] = {"", "a", "b", "long-qualifier", "\x01"};
    return std::string(q[pick(5)]);
  };

  // Live snapshots of the engine and of the oracle, taken together.
  std::vector<std::pair<std::shared_ptr<const Snapshot>,
                        std::shared_ptr<const Snapshot>>>
      snapshots;
  const int kOps = param.ops;
  for (int i = 0; i < kOps; ++i) {
    if (param.purge_every > 0 &&
        i % param.purge_every == param.purge_every - 1) {
      // Delete a block of rows, so tablets shrink and merge.
      int first = pick(param.rows);
      for (int k = 0; k < param.rows / 3; ++k) {
        // GCC bug 105329: a false -Wrestrict in "r" + std::to_string(...).
        TABLETFS_GCC_BUG_105329_BEGIN
        RowMutation d("r" + std::to_string((first + k) % param.rows));
        TABLETFS_GCC_BUG_105329_END
        d.DeleteRow();
        auto r = db_->Apply("t", d, WriteOptions());
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ApplyToOracle(d, *r);
      }
      if (pick(2) == 0) {
        // Compaction drops what the deletions hide, so the tablets shrink.
        Status cs = db_->CompactAll();
        ASSERT_TRUE(cs.ok()) << cs.ToString();
      }
    }
    RowMutation m(row_name());
    int nops = 1 + pick(3);
    for (int j = 0; j < nops; ++j) {
      const std::string& fam = kFamilies[pick(3)];
      int kind = pick(20);
      bool server = pick(3) == 0;
      int64_t ts = 1 + pick(12);
      if (kind < 12) {
        // GCC bug 105329: a false -Wrestrict in "v" + std::to_string(i).
        TABLETFS_GCC_BUG_105329_BEGIN
        std::string value = "v" + std::to_string(i) + "." + std::to_string(j);
        TABLETFS_GCC_BUG_105329_END
        if (pick(40) == 0) value.append(400, 'L');  // a large value
        if (server) {
          m.SetCell(fam, qual(), value);
        } else {
          m.SetCell(fam, qual(), ts, value);
        }
      } else if (kind < 15) {
        m.DeleteVersion(fam, qual(), ts);
      } else if (kind < 18) {
        m.DeleteCell(fam, qual());
      } else if (kind < 19) {
        m.DeleteFamily(fam);
      } else {
        m.DeleteRow();
      }
    }
    env_.AdvanceMicros(1 + pick(3));
    auto r = db_->Apply("t", m, WriteOptions());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ApplyToOracle(m, *r);

    int action = pick(1000);
    if (action >= 990 && snapshots.size() < 3) {
      snapshots.emplace_back(db_->GetSnapshot(), oracle_->GetSnapshot());
    } else if (action >= 980 && !snapshots.empty()) {
      snapshots.erase(snapshots.begin() + pick(snapshots.size()));
    }
    if (action < 5) {
      ASSERT_TRUE(db_->Flush().ok());
    } else if (action < 8) {
      Status cs = db_->CompactAll();
      ASSERT_TRUE(cs.ok()) << cs.ToString();
    } else if (action < 11) {
      snapshots.clear();  // snapshots do not outlive the database
      Reopen();
    }
    if (i % 100 == 99 || i == kOps - 1) {
      ASSERT_EQ(Scan(*db_, "", "", "", std::nullopt, 0),
                Scan(*oracle_, "", "", "", std::nullopt, 0))
          << "full scan after op " << i;
      for (size_t k = 0; k < snapshots.size(); ++k) {
        ASSERT_EQ(
            Scan(*db_, "", "", "", std::nullopt, 0, snapshots[k].first.get()),
            Scan(*oracle_, "", "", "", std::nullopt, 0,
                 snapshots[k].second.get()))
            << "snapshot " << k << " after op " << i;
      }
      std::string p = "r" + std::to_string(pick(10));
      std::optional<int64_t> at;
      if (pick(2) == 0) at = 1 + pick(14);
      uint32_t mv = pick(3);
      ASSERT_EQ(Scan(*db_, "", "", p, at, mv),
                Scan(*oracle_, "", "", p, at, mv))
          << "prefix scan " << p << " after op " << i;
      std::string a = row_name(), b = row_name();
      if (b < a) std::swap(a, b);
      ASSERT_EQ(Scan(*db_, a, b, "", at, mv), Scan(*oracle_, a, b, "", at, mv))
          << "range scan after op " << i;
      for (int k = 0; k < 20; ++k) {
        std::string row = row_name();
        std::string q = qual();
        int fam = pick(3);
        ReadOptions ro;
        ro.max_versions = pick(3);
        if (pick(2) == 0) ro.at = 1 + pick(14);
        auto cells = db_->ReadCell("t", row, kFamilies[fam], q, ro);
        ASSERT_TRUE(cells.ok());
        std::vector<std::string> got;
        for (const Cell& c : *cells) {
          got.push_back(row + "|" + c.family + "|" + c.qualifier + "|" +
                        std::to_string(c.timestamp) + "=" + c.value);
        }
        auto want_cells = oracle_->ReadCell("t", row, kFamilies[fam], q, ro);
        ASSERT_TRUE(want_cells.ok());
        std::vector<std::string> want;
        for (const Cell& c : *want_cells) {
          want.push_back(row + "|" + c.family + "|" + c.qualifier + "|" +
                         std::to_string(c.timestamp) + "=" + c.value);
        }
        std::string end = row;
        end.push_back('\0');
        ASSERT_EQ(got, want)
            << "ReadCell " << row << " at " << ro.at.value_or(-1) << " mv "
            << ro.max_versions << " after op " << i << " all: "
            << testing::PrintToString(
                   Scan(*oracle_, row, end, "", std::nullopt, 0))
            << testing::PrintToString(
                   Scan(*db_, row, end, "", std::nullopt, 0));
        auto full = db_->ReadRow("t", row, ro);
        ASSERT_TRUE(full.ok());
        auto want_row = oracle_->ReadRow("t", row, ro);
        ASSERT_TRUE(want_row.ok());
        ASSERT_EQ(full->cells, want_row->cells)
            << "ReadRow " << row << " after op " << i;
      }
    }
  }
  Status cs = db_->CompactAll();
  ASSERT_TRUE(cs.ok()) << cs.ToString();
  ASSERT_EQ(Scan(*db_, "", "", "", std::nullopt, 0),
            Scan(*oracle_, "", "", "", std::nullopt, 0));
  for (const auto& [snap, old] : snapshots) {
    ASSERT_EQ(Scan(*db_, "", "", "", std::nullopt, 0, snap.get()),
              Scan(*oracle_, "", "", "", std::nullopt, 0, old.get()));
  }
  snapshots.clear();
  ASSERT_TRUE(db_->Verify().ok());
  DbStats stats = db_->GetStats();
  EXPECT_GT(stats.flushes, 0u);
  EXPECT_GT(stats.compactions, 0u);
  Reopen();
  ASSERT_EQ(Scan(*db_, "", "", "", std::nullopt, 0),
            Scan(*oracle_, "", "", "", std::nullopt, 0));
  auto tablets = db_->ListTablets("t");
  ASSERT_TRUE(tablets.ok());
  // Contiguous ranges covering the table.
  ASSERT_FALSE(tablets->empty());
  EXPECT_EQ(tablets->front().start_row, "");
  EXPECT_EQ(tablets->back().end_row, "");
  for (size_t k = 1; k < tablets->size(); ++k) {
    EXPECT_EQ((*tablets)[k - 1].end_row, (*tablets)[k].start_row);
    EXPECT_LT((*tablets)[k].start_row, (*tablets)[k].end_row.empty()
                                           ? std::string(1, '\xff')
                                           : (*tablets)[k].end_row);
  }
  ASSERT_TRUE(db_->WaitForIdle().ok());
  tablets = db_->ListTablets("t");
  ASSERT_TRUE(tablets.ok());
  DbStats last = db_->GetStats();
  splits_ += last.tablet_splits;
  merges_ += last.tablet_merges;
  std::printf("%s: %llu splits, %llu merges, %zu tablets at the end\n",
              param.name, static_cast<unsigned long long>(splits_),
              static_cast<unsigned long long>(merges_), tablets->size());
  if (param.purge_every > 0) {
    // Coverage, not a schedule: a split comes when the background thread
    // gets to a tablet past the threshold (a write wakes it), so how far
    // past it a tablet grows first, and so the counts, follow thread
    // timing even for one seed (135-206 splits, 32-65 merges over 200
    // release runs). The floors ask for the scale the workload is for.
    EXPECT_GE(splits_, 100u);
    EXPECT_GE(merges_, 20u);
  } else {
    EXPECT_EQ(splits_ + merges_, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tablets, DBModelTest,
    testing::Values(ModelParam{"one_tablet", 1ull << 40, 40, 0, 3000},
                    ModelParam{"tiny_tablets", 1536, 300, 150, 6000}),
    [](const testing::TestParamInfo<ModelParam>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace tabletfs
