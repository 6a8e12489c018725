// The contract of the data-model interface (store/bigtable.h), checked on
// every implementation with the same test bodies: errors for bad input,
// reads as of T, deletes and later writes, GC policies on read, snapshots,
// read-modify-write, tablets. A new implementation joins the list in
// OpenStore and must pass unchanged.
#include "store/bigtable.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "store/db.h"
#include "store/env/mem_env.h"
#include "store/reference/reference_bigtable.h"
#include "store/util/hash.h"

namespace tabletfs {
namespace {

constexpr int64_t kSecond = 1000000;

std::unique_ptr<Bigtable> OpenStore(const std::string& name, MemEnv* env) {
  if (name == "engine") {
    Options options;
    options.env = env;
    options.space_reserve_bytes = 0;
    options.max_value_bytes = 1000;
    auto db = DB::Open(options, "/db");
    if (!db.ok()) return nullptr;
    return std::move(*db);
  }
  if (name == "reference") {
    ReferenceOptions options;
    options.clock = env;
    options.max_value_bytes = 1000;
    return NewReferenceBigtable(options);
  }
  return nullptr;
}

class BigtableTest : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    env_.SetNowMicros(1000 * kSecond);
    store_ = OpenStore(GetParam(), &env_);
    ASSERT_NE(store_, nullptr);
    ASSERT_TRUE(store_->CreateTable("t").ok());
    ASSERT_TRUE(store_->CreateFamily("t", "f", FamilySettings()).ok());
  }

  int64_t Set(const std::string& row, const std::string& q, int64_t ts,
              const std::string& value, const std::string& family = "f") {
    RowMutation m(row);
    if (ts == kServerTimestamp) {
      m.SetCell(family, q, value);
    } else {
      m.SetCell(family, q, ts, value);
    }
    auto r = store_->Apply("t", m, WriteOptions());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : 0;
  }

  // "ts=value" of every visible version of f:q in `row` (ro.max_versions
  // is ignored).
  std::vector<std::string> Versions(const std::string& row,
                                    const std::string& q, ReadOptions ro = {},
                                    const std::string& family = "f") {
    ro.max_versions = 0;
    auto cells = store_->ReadCell("t", row, family, q, ro);
    EXPECT_TRUE(cells.ok()) << cells.status().ToString();
    std::vector<std::string> out;
    if (!cells.ok()) return out;
    for (const Cell& c : *cells) {
      out.push_back(std::to_string(c.timestamp) + "=" + c.value);
    }
    return out;
  }

  MemEnv env_;
  std::unique_ptr<Bigtable> store_;
};

TEST_P(BigtableTest, BadInputGetsTheDocumentedStatus) {
  EXPECT_TRUE(store_->CreateTable("bad name").IsInvalidArgument());
  EXPECT_TRUE(store_->CreateTable("t").IsAlreadyExists());
  EXPECT_TRUE(store_->DeleteTable("nope").IsNotFound());
  EXPECT_TRUE(store_->CreateFamily("t", "f", {}).IsAlreadyExists());
  EXPECT_TRUE(store_->CreateFamily("nope", "f", {}).IsNotFound());
  EXPECT_TRUE(store_->CreateFamily("t", "-f", {}).IsInvalidArgument());
  EXPECT_TRUE(store_->UpdateFamily("t", "g", {}).IsNotFound());
  EXPECT_TRUE(store_->DeleteFamily("t", "g").IsNotFound());
  EXPECT_TRUE(store_->GetFamily("t", "g").status().IsNotFound());
  EXPECT_TRUE(store_->ListFamilies("nope").status().IsNotFound());

  RowMutation empty("r");
  EXPECT_TRUE(store_->Apply("t", empty, {}).status().IsInvalidArgument());
  RowMutation unknown_family("r");
  unknown_family.SetCell("g", "q", "v");
  EXPECT_TRUE(
      store_->Apply("t", unknown_family, {}).status().IsInvalidArgument());
  RowMutation too_big("r");
  too_big.SetCell("f", "q", std::string(1001, 'x'));
  EXPECT_TRUE(store_->Apply("t", too_big, {}).status().IsInvalidArgument());
  RowMutation no_row("");
  no_row.SetCell("f", "q", "v");
  EXPECT_TRUE(store_->Apply("t", no_row, {}).status().IsInvalidArgument());
  RowMutation fine("r");
  fine.SetCell("f", "q", "v");
  EXPECT_TRUE(store_->Apply("nope", fine, {}).status().IsNotFound());

  EXPECT_TRUE(store_->ReadRow("nope", "r", {}).status().IsNotFound());
  EXPECT_TRUE(store_->ReadRow("t", "", {}).status().IsInvalidArgument());
  EXPECT_TRUE(store_->ReadCell("t", "r", "g", "q", {}).status().IsNotFound());
  EXPECT_TRUE(store_->NewScanner("nope", {}).status().IsNotFound());
  EXPECT_TRUE(store_->ListTablets("nope").status().IsNotFound());
  EXPECT_TRUE(
      store_->Append("t", "r", "g", "q", "x", {}).status().IsNotFound());
  Set("r", "eight", kServerTimestamp, "not8");
  EXPECT_TRUE(store_->Increment("t", "r", "f", "eight", 1, {})
                  .status()
                  .IsInvalidArgument());
  RowMutation other_row("s");
  other_row.SetCell("f", "q", "v");
  EXPECT_TRUE(
      store_->CheckAndMutate("t", "r", {}, other_row, RowMutation("r"), {})
          .status()
          .IsInvalidArgument());
  // Nothing refused changed anything.
  auto row = store_->ReadRow("t", "r", {});
  ASSERT_TRUE(row.ok());
  ASSERT_EQ(row->cells.size(), 1u);
  EXPECT_EQ(row->cells[0].qualifier, "eight");
}

// A table records when it was created: the clock, but never before a
// server timestamp already handed out.
TEST_P(BigtableTest, TablesKnowWhenTheyWereCreated) {
  auto t = store_->GetTable("t");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(*t, (TableInfo{"t", 1000 * kSecond}));
  env_.SetNowMicros(2000 * kSecond);
  ASSERT_TRUE(store_->CreateTable("u").ok());
  EXPECT_EQ(store_->GetTable("u")->since_micros, 2000 * kSecond);
  // The clock went back: the table is still no older than the last write.
  const int64_t written = Set("r", "q", kServerTimestamp, "v");
  env_.SetNowMicros(1500 * kSecond);
  ASSERT_TRUE(store_->CreateTable("v").ok());
  EXPECT_EQ(store_->GetTable("v")->since_micros, written);
  EXPECT_TRUE(store_->GetTable("nope").status().IsNotFound());
  // A version written at a client timestamp before the creation: the table
  // exists since then (it holds data of that time). Newer ones change
  // nothing, nor do deletes.
  Set("r", "q", 1200 * kSecond, "x");
  EXPECT_EQ(store_->GetTable("t")->since_micros, 1000 * kSecond);
  Set("r", "q", 5 * kSecond, "old");
  RowMutation del("r");
  del.DeleteVersion("f", "q", 1 * kSecond);
  ASSERT_TRUE(store_->Apply("t", del, WriteOptions()).ok());
  EXPECT_EQ(store_->GetTable("t")->since_micros, 5 * kSecond);
  ASSERT_TRUE(store_->DeleteTable("u").ok());
  EXPECT_TRUE(store_->GetTable("u").status().IsNotFound());
}

TEST_P(BigtableTest, ReadsAsOfTAndDeletesThenLaterWrites) {
  // DESIGN.md's example: versions 15 -> y and 4 -> m.
  Set("aaaaa", "foo", 15, "y");
  Set("aaaaa", "foo", 4, "m");
  ReadOptions ro;
  EXPECT_EQ(Versions("aaaaa", "foo"),
            (std::vector<std::string>{"15=y", "4=m"}));
  ro.max_versions = 1;
  auto newest = store_->ReadCell("t", "aaaaa", "f", "foo", ro);
  ASSERT_TRUE(newest.ok());
  ASSERT_EQ(newest->size(), 1u);
  EXPECT_EQ((*newest)[0].value, "y");
  ro.at = 10;
  EXPECT_EQ(Versions("aaaaa", "foo", ro), (std::vector<std::string>{"4=m"}));
  ro.at = 2;
  EXPECT_TRUE(Versions("aaaaa", "foo", ro).empty());

  // A delete removes what exists; a later write at an older time shows.
  RowMutation del("aaaaa");
  del.DeleteCell("f", "foo");
  ASSERT_TRUE(store_->Apply("t", del, {}).ok());
  EXPECT_TRUE(Versions("aaaaa", "foo").empty());
  Set("aaaaa", "foo", 1, "old");
  EXPECT_EQ(Versions("aaaaa", "foo"), (std::vector<std::string>{"1=old"}));

  // Server timestamps strictly increase even when the clock stands still.
  int64_t a = Set("r", "q", kServerTimestamp, "1");
  int64_t b = Set("r", "q", kServerTimestamp, "2");
  EXPECT_GT(b, a);
  EXPECT_GE(a, 1000 * kSecond);
}

TEST_P(BigtableTest, GcPoliciesApplyOnReadAndRelaxingBringsNothingBack) {
  FamilySettings two;
  two.gc_policy = GcPolicy::MaxVersions(2);
  ASSERT_TRUE(store_->UpdateFamily("t", "f", two).ok());
  Set("r", "q", 1, "a");
  Set("r", "q", 2, "b");
  Set("r", "q", 3, "c");
  EXPECT_EQ(Versions("r", "q"), (std::vector<std::string>{"3=c", "2=b"}));
  // Relaxed: the version collected stays collected.
  ASSERT_TRUE(store_->UpdateFamily("t", "f", FamilySettings()).ok());
  EXPECT_EQ(Versions("r", "q"), (std::vector<std::string>{"3=c", "2=b"}));
  auto settings = store_->GetFamily("t", "f");
  ASSERT_TRUE(settings.ok());
  EXPECT_TRUE(settings->gc_policy.IsNever());

  // maxage: versions older than the age vanish as the clock moves.
  ASSERT_TRUE(store_->CreateFamily("t", "age", {}).ok());
  FamilySettings hour;
  hour.gc_policy = GcPolicy::MaxAge(3600 * kSecond);
  ASSERT_TRUE(store_->UpdateFamily("t", "age", hour).ok());
  const int64_t now = env_.NowMicros();
  Set("r", "q", now - 10 * kSecond, "recent", "age");
  Set("r", "q", now - 7200 * kSecond, "old", "age");
  EXPECT_EQ(Versions("r", "q", {}, "age"),
            (std::vector<std::string>{std::to_string(now - 10 * kSecond) +
                                      "=recent"}));
  env_.SetNowMicros(now + 3600 * kSecond);
  EXPECT_TRUE(Versions("r", "q", {}, "age").empty());
}

TEST_P(BigtableTest, SnapshotsScansAndFamilyOrder) {
  ASSERT_TRUE(store_->CreateFamily("t", "a", {}).ok());  // after f
  Set("r1", "q", 5, "one");
  Set("r2", "q", 5, "two", "a");
  Set("r2", "p", 5, "two-f");
  auto snap = store_->GetSnapshot();
  Set("r1", "q", 6, "one-later");
  RowMutation del("r2");
  del.DeleteRow();
  ASSERT_TRUE(store_->Apply("t", del, {}).ok());

  ScanOptions so;
  so.read.max_versions = 0;
  so.read.snapshot = snap.get();
  auto sc = store_->NewScanner("t", so);
  ASSERT_TRUE(sc.ok());
  std::vector<std::string> seen;
  for (Scanner& s = **sc; s.Valid(); s.Next()) {
    seen.push_back(std::string(s.row()) + "/" + std::string(s.family()) + ":" +
                   std::string(s.qualifier()) + "=" + std::string(*s.value()));
  }
  // Families in creation order (f before a), as of the snapshot.
  EXPECT_EQ(seen, (std::vector<std::string>{"r1/f:q=one", "r2/f:p=two-f",
                                            "r2/a:q=two"}));
  (*sc)->Seek("r2", "a");
  ASSERT_TRUE((*sc)->Valid());
  EXPECT_EQ((*sc)->family(), "a");
  (*sc)->NextRow();
  EXPECT_FALSE((*sc)->Valid());

  so.read.snapshot = nullptr;
  sc = store_->NewScanner("t", so);
  ASSERT_TRUE(sc.ok());
  int versions = 0;
  for (Scanner& s = **sc; s.Valid(); s.Next()) ++versions;
  EXPECT_EQ(versions, 2);  // r1's two versions; r2 is gone

  auto tablets = store_->ListTablets("t");
  ASSERT_TRUE(tablets.ok());
  ASSERT_FALSE(tablets->empty());
  EXPECT_EQ(tablets->front().start_row, "");
  EXPECT_EQ(tablets->back().end_row, "");
}

TEST_P(BigtableTest, ReadModifyWrite) {
  auto a = store_->Append("t", "r", "f", "log", "one\n", {});
  ASSERT_TRUE(a.ok());
  a = store_->Append("t", "r", "f", "log", "two\n", {});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->value_size, 8u);
  auto cells = store_->ReadCell("t", "r", "f", "log", {});
  ASSERT_TRUE(cells.ok());
  EXPECT_EQ((*cells)[0].value, "one\ntwo\n");
  EXPECT_EQ((*cells)[0].timestamp, a->timestamp);

  auto n = store_->Increment("t", "r", "f", "n", 5, {});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 5);
  n = store_->Increment("t", "r", "f", "n", -7, {});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, -2);

  CellCondition c;
  c.family = "f";
  c.qualifier = "log";
  c.op = CellCondition::Op::kEquals;
  c.value = "nope";
  RowMutation yes("r"), no("r");
  yes.SetCell("f", "result", "yes");
  no.SetCell("f", "result", "no");
  auto held = store_->CheckAndMutate("t", "r", c, yes, no, {});
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(*held);
  EXPECT_EQ(Versions("r", "result").size(), 1u);
  cells = store_->ReadCell("t", "r", "f", "result", {});
  ASSERT_TRUE(cells.ok());
  EXPECT_EQ((*cells)[0].value, "no");
}

// ApplyBatch: each mutation as Apply would do it, refused ones changing
// nothing and not holding the others back.
TEST_P(BigtableTest, ApplyBatchAppliesEachRowOnItsOwn) {
  std::vector<RowMutation> batch;
  for (const char* row : {"a", "b", "c"}) {
    batch.emplace_back(row).SetCell("f", "q", 100, std::string("v") + row);
  }
  batch[1].SetCell("nofamily", "q", "x");  // refused as a whole
  batch.emplace_back("");                   // a bad key, an empty mutation
  batch.emplace_back("a").SetCell("f", "q", 200, "second");
  auto results = store_->ApplyBatch("t", batch, WriteOptions());
  ASSERT_EQ(results.size(), 5u);
  EXPECT_TRUE(results[0].ok());
  EXPECT_TRUE(results[1].status().IsInvalidArgument());
  EXPECT_TRUE(results[2].ok());
  EXPECT_TRUE(results[3].status().IsInvalidArgument());
  EXPECT_TRUE(results[4].ok());
  EXPECT_LT(*results[0], *results[4]);  // in order
  EXPECT_EQ(Versions("a", "q"),
            (std::vector<std::string>{"200=second", "100=va"}));
  EXPECT_TRUE(Versions("b", "q").empty());
  EXPECT_EQ(Versions("c", "q"), (std::vector<std::string>{"100=vc"}));
  auto none = store_->ApplyBatch("nope", batch, WriteOptions());
  ASSERT_EQ(none.size(), 5u);
  EXPECT_TRUE(none[0].status().IsNotFound());
}

// A stricter GC policy hides older versions from every read that starts
// after the change, snapshots included (a snapshot taken before keeps what
// it saw), with no write in between.
TEST_P(BigtableTest, AStricterPolicyAppliesToSnapshotsTakenAfterIt) {
  Set("r", "q", 1000, "old");
  Set("r", "q", 2000, "new");
  std::shared_ptr<const Snapshot> before = store_->GetSnapshot();
  FamilySettings stricter;
  stricter.gc_policy = GcPolicy::MaxVersions(1);
  ASSERT_TRUE(store_->UpdateFamily("t", "f", stricter).ok());
  std::shared_ptr<const Snapshot> after = store_->GetSnapshot();
  ReadOptions ro;
  ro.snapshot = after.get();
  EXPECT_EQ(Versions("r", "q", ro), (std::vector<std::string>{"2000=new"}));
  EXPECT_EQ(Versions("r", "q"), (std::vector<std::string>{"2000=new"}));
  ro.snapshot = before.get();
  EXPECT_EQ(Versions("r", "q", ro),
            (std::vector<std::string>{"2000=new", "1000=old"}));
}

// RewriteRow: the rewrite sees the row as it is and its mutation applies
// with no write in between; an empty mutation or an error writes nothing.
TEST_P(BigtableTest, RewriteRowSeesTheRowAndAppliesItsMutation) {
  Set("r", "a", 10, "one");
  Set("r", "a", 20, "two");
  Set("r", "b", 30, "three");
  ReadOptions all;
  all.max_versions = 0;
  // Delete the versions of a in [15, 25): only the one at 20.
  auto r = store_->RewriteRow(
      "t", "r", all,
      [](const Row& row) -> Result<RowMutation> {
        EXPECT_EQ(row.cells.size(), 3u);
        RowMutation m(row.key);
        for (const Cell& c : row.cells) {
          if (c.qualifier == "a" && c.timestamp >= 15 && c.timestamp < 25) {
            m.DeleteVersion(c.family, c.qualifier, c.timestamp);
          }
        }
        return m;
      },
      {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->written);
  EXPECT_GT(r->timestamp, 0);
  EXPECT_EQ(Versions("r", "a"), (std::vector<std::string>{"10=one"}));
  // Nothing to do: nothing written.
  r = store_->RewriteRow(
      "t", "r", all,
      [](const Row& row) -> Result<RowMutation> { return RowMutation(row.key); },
      {});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->written);
  // An error of the rewrite, a mutation of another row, a missing table, a
  // read of the past: refused, nothing written.
  auto set_b = [](const Row& row) -> Result<RowMutation> {
    RowMutation m(row.key == "r" ? "s" : row.key);
    m.SetCell("f", "b", "new");
    return m;
  };
  EXPECT_TRUE(store_->RewriteRow("t", "r", all, set_b, {})
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(store_->RewriteRow(
                        "t", "r", all,
                        [](const Row&) -> Result<RowMutation> {
                          return Status::InvalidArgument("no");
                        },
                        {})
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(store_->RewriteRow("nope", "r", all, set_b, {})
                  .status()
                  .IsNotFound());
  ReadOptions past = all;
  past.at = 5;
  EXPECT_TRUE(store_->RewriteRow("t", "r", past, set_b, {})
                  .status()
                  .IsInvalidArgument());
  EXPECT_EQ(Versions("r", "b"), (std::vector<std::string>{"30=three"}));
}

// StatCell: the newest visible version's timestamp and value size, as of
// T, with ReadCell's errors.
TEST_P(BigtableTest, StatCellIsTheNewestVersionWithoutItsValue) {
  Set("r", "q", 10, "one");
  Set("r", "q", 20, "second");
  auto stat = [&](const std::string& q, ReadOptions ro = {}) {
    return store_->StatCell("t", "r", "f", q, ro);
  };
  auto newest = stat("q");
  ASSERT_TRUE(newest.ok()) << newest.status().ToString();
  EXPECT_EQ((*newest)->value_size, 6u);
  EXPECT_EQ((*newest)->timestamp, 20);
  // A hash, when given, is the value's XXH64 (a commit trusts it).
  if ((*newest)->value_xxh64.has_value()) {
    EXPECT_EQ(*(*newest)->value_xxh64, Hash64("second"));
  }
  ReadOptions past;
  past.at = 15;
  past.max_versions = 0;  // ignored: one version
  auto then = stat("q", past);
  ASSERT_TRUE(then.ok());
  EXPECT_EQ((*then)->value_size, 3u);
  EXPECT_EQ((*then)->timestamp, 10);
  past.at = 5;
  auto before = stat("q", past);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(*before, std::nullopt);
  auto none = stat("nothing");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, std::nullopt);
  RowMutation del("r");
  del.DeleteCell("f", "q");
  ASSERT_TRUE(store_->Apply("t", del, WriteOptions()).ok());
  auto deleted = stat("q");
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, std::nullopt);
  EXPECT_TRUE(
      store_->StatCell("nope", "r", "f", "q", {}).status().IsNotFound());
  EXPECT_TRUE(
      store_->StatCell("t", "r", "nope", "q", {}).status().IsNotFound());
  EXPECT_TRUE(
      store_->StatCell("t", "", "f", "q", {}).status().IsInvalidArgument());
}

INSTANTIATE_TEST_SUITE_P(Implementations, BigtableTest,
                         testing::Values("engine", "reference"),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace tabletfs
