// Model test: random mutations of every kind against a simple in-memory
// model of the data model's semantics, compared through every read path
// after flushes, compactions and reopens.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "store/db.h"
#include "store/env/mem_env.h"

namespace tabletfs {
namespace {

const std::vector<std::string> kFamilies = {"f", "g", "h"};

// The model: per cell, per timestamp, the newest entry (put or
// delete-version) with its sequence; markers by sequence.
class Model {
 public:
  using CellKey = std::tuple<std::string, int, std::string>;  // row, fam idx, q
  struct Entry {
    uint64_t seq;
    bool put;
    std::string value;
  };

  void Apply(const RowMutation& m, int64_t server_ts) {
    const std::string& row = m.row();
    for (const auto& op : m.ops()) {
      uint64_t seq = ++seq_;
      int fam = FamilyIndex(op.family);
      int64_t ts = op.timestamp == kServerTimestamp ? server_ts : op.timestamp;
      switch (op.type) {
        case RowMutation::OpType::kSetCell:
          cells_[{row, fam, op.qualifier}][ts] = {seq, true, op.value};
          break;
        case RowMutation::OpType::kDeleteVersion:
          cells_[{row, fam, op.qualifier}][ts] = {seq, false, ""};
          break;
        case RowMutation::OpType::kDeleteCell:
          cell_del_[{row, fam, op.qualifier}] = seq;
          break;
        case RowMutation::OpType::kDeleteFamily:
          fam_del_[{row, fam}] = seq;
          break;
        case RowMutation::OpType::kDeleteRow:
          row_del_[row] = seq;
          break;
      }
    }
  }

  // "row|family|qualifier|ts=value" lines in scan order.
  std::vector<std::string> Read(const std::string& start,
                                const std::string& end,
                                const std::string& prefix,
                                std::optional<int64_t> at,
                                uint32_t max_versions) const {
    std::vector<std::string> out;
    for (const auto& [key, versions] : cells_) {
      const auto& [row, fam, q] = key;
      if (row < start || (!end.empty() && row >= end)) continue;
      if (row.compare(0, prefix.size(), prefix) != 0) continue;
      uint64_t mask = Get(row_del_, row);
      mask = std::max(mask, Get(fam_del_, std::make_pair(row, fam)));
      mask = std::max(mask, Get(cell_del_, key));
      uint32_t n = 0;
      for (auto it = versions.rbegin(); it != versions.rend(); ++it) {
        const auto& [ts, e] = *it;
        if (!e.put || e.seq <= mask) continue;
        if (at && ts > *at) continue;
        if (max_versions != 0 && n >= max_versions) break;
        ++n;
        out.push_back(row + "|" + kFamilies[fam] + "|" + q + "|" +
                      std::to_string(ts) + "=" + e.value);
      }
    }
    return out;
  }

 private:
  static int FamilyIndex(const std::string& f) {
    for (size_t i = 0; i < kFamilies.size(); ++i) {
      if (kFamilies[i] == f) return static_cast<int>(i);
    }
    return -1;
  }
  template <typename M, typename K>
  static uint64_t Get(const M& m, const K& k) {
    auto it = m.find(k);
    return it == m.end() ? 0 : it->second;
  }

  uint64_t seq_ = 0;
  // Rows then family index then qualifier: the store's scan order.
  std::map<CellKey, std::map<int64_t, Entry>> cells_;
  std::map<std::string, uint64_t> row_del_;
  std::map<std::pair<std::string, int>, uint64_t> fam_del_;
  std::map<CellKey, uint64_t> cell_del_;
};

// One tablet per table (splits off), or tiny tablets: hundreds of splits
// and merges under the same writes, scans and deletes.
struct ModelParam {
  const char* name;
  uint64_t tablet_split_bytes;
  int rows;         // row keys drawn from r0 .. r<rows-1>
  int purge_every;  // ops between deletions of a block of rows (0: never)
  int ops;
};

class DBModelTest : public testing::TestWithParam<ModelParam> {
 protected:
  void SetUp() override {
    options_.env = &env_;
    options_.space_reserve_bytes = 0;
    options_.memtable_bytes = 16 << 10;
    options_.target_file_bytes = 8 << 10;
    options_.block_size = 1024;
    options_.large_value_bytes = 300;
    options_.tablet_split_bytes = GetParam().tablet_split_bytes;
    Reopen();
    ASSERT_TRUE(db_->CreateTable("t").ok());
    for (const auto& f : kFamilies) {
      ASSERT_TRUE(db_->CreateFamily("t", f, FamilySettings()).ok());
    }
  }

  void Reopen() {
    if (db_ != nullptr) {
      DbStats stats = db_->GetStats();
      splits_ += stats.tablet_splits;
      merges_ += stats.tablet_merges;
    }
    db_.reset();
    auto db = DB::Open(options_, "/db");
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
  }

  std::vector<std::string> Scan(const std::string& start,
                                const std::string& end,
                                const std::string& prefix,
                                std::optional<int64_t> at,
                                uint32_t max_versions,
                                const Snapshot* snapshot = nullptr) {
    ScanOptions so;
    so.read.snapshot = snapshot;
    so.start_row = start;
    so.end_row = end;
    so.prefix = prefix;
    so.read.at = at;
    so.read.max_versions = max_versions;
    auto s = db_->NewScanner("t", so);
    EXPECT_TRUE(s.ok());
    std::vector<std::string> out;
    for (Scanner& sc = **s; sc.Valid(); sc.Next()) {
      auto v = sc.value();
      EXPECT_TRUE(v.ok()) << v.status().ToString();
      if (!v.ok()) break;
      EXPECT_EQ(sc.value_size(), v->size());
      out.push_back(std::string(sc.row()) + "|" + std::string(sc.family()) +
                    "|" + std::string(sc.qualifier()) + "|" +
                    std::to_string(sc.timestamp()) + "=" + std::string(*v));
    }
    EXPECT_TRUE((*s)->status().ok()) << (*s)->status().ToString();
    return out;
  }

  MemEnv env_;
  Options options_;
  std::unique_ptr<DB> db_;
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
    std::string r = "r" + std::to_string(pick(param.rows));
    if (pick(10) == 0) r.push_back('\0');
    return r;
  };
  auto qual = [&] {
    static const char* q[] = {"", "a", "b", "long-qualifier", "\x01"};
    return std::string(q[pick(5)]);
  };

  Model model;
  // Live snapshots and the model as it was when each was taken.
  std::vector<std::pair<std::shared_ptr<const Snapshot>, Model>> snapshots;
  const int kOps = param.ops;
  for (int i = 0; i < kOps; ++i) {
    if (param.purge_every > 0 &&
        i % param.purge_every == param.purge_every - 1) {
      // Delete a block of rows, so tablets shrink and merge.
      int first = pick(param.rows);
      for (int k = 0; k < param.rows / 3; ++k) {
        RowMutation d("r" + std::to_string((first + k) % param.rows));
        d.DeleteRow();
        auto r = db_->Apply("t", d, WriteOptions());
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        model.Apply(d, *r);
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
        std::string value = "v" + std::to_string(i) + "." + std::to_string(j);
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
    model.Apply(m, *r);

    int action = pick(1000);
    if (action >= 990 && snapshots.size() < 3) {
      snapshots.emplace_back(db_->GetSnapshot(), model);
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
      ASSERT_EQ(Scan("", "", "", std::nullopt, 0),
                model.Read("", "", "", std::nullopt, 0))
          << "full scan after op " << i;
      for (size_t k = 0; k < snapshots.size(); ++k) {
        ASSERT_EQ(Scan("", "", "", std::nullopt, 0, snapshots[k].first.get()),
                  snapshots[k].second.Read("", "", "", std::nullopt, 0))
            << "snapshot " << k << " after op " << i;
      }
      std::string p = "r" + std::to_string(pick(10));
      std::optional<int64_t> at;
      if (pick(2) == 0) at = 1 + pick(14);
      uint32_t mv = pick(3);
      ASSERT_EQ(Scan("", "", p, at, mv), model.Read("", "", p, at, mv))
          << "prefix scan " << p << " after op " << i;
      std::string a = row_name(), b = row_name();
      if (b < a) std::swap(a, b);
      ASSERT_EQ(Scan(a, b, "", at, mv), model.Read(a, b, "", at, mv))
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
        std::vector<std::string> want;
        std::string end = row;
        end.push_back('\0');
        for (const std::string& line :
             model.Read(row, end, "", ro.at, ro.max_versions)) {
          if (line.starts_with(row + "|" + kFamilies[fam] + "|" + q + "|")) {
            want.push_back(line);
          }
        }
        ASSERT_EQ(got, want)
            << "ReadCell " << row << " at " << ro.at.value_or(-1) << " mv "
            << ro.max_versions << " after op " << i << " all: "
            << testing::PrintToString(model.Read(row, end, "", std::nullopt, 0))
            << testing::PrintToString(Scan(row, end, "", std::nullopt, 0));
        auto full = db_->ReadRow("t", row, ro);
        ASSERT_TRUE(full.ok());
        ASSERT_EQ(full->cells.size(),
                  model.Read(row, end, "", ro.at, ro.max_versions).size());
      }
    }
  }
  Status cs = db_->CompactAll();
  ASSERT_TRUE(cs.ok()) << cs.ToString();
  ASSERT_EQ(Scan("", "", "", std::nullopt, 0),
            model.Read("", "", "", std::nullopt, 0));
  for (const auto& [snap, old] : snapshots) {
    ASSERT_EQ(Scan("", "", "", std::nullopt, 0, snap.get()),
              old.Read("", "", "", std::nullopt, 0));
  }
  snapshots.clear();
  ASSERT_TRUE(db_->Verify().ok());
  DbStats stats = db_->GetStats();
  EXPECT_GT(stats.flushes, 0u);
  EXPECT_GT(stats.compactions, 0u);
  Reopen();
  ASSERT_EQ(Scan("", "", "", std::nullopt, 0),
            model.Read("", "", "", std::nullopt, 0));
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
  std::printf("%s: %llu splits, %llu merges, %zu tablets at the end\n",
              param.name, static_cast<unsigned long long>(splits_),
              static_cast<unsigned long long>(merges_), tablets->size());
  if (param.purge_every > 0) {
    EXPECT_GE(splits_, 150u);
    EXPECT_GE(merges_, 40u);
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
