// GC policies: reads and compaction agree, before and after compaction,
// reopen and policy changes.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "store/db.h"
#include "store/env/mem_env.h"
#include "tests/store/db/mem_db_test.h"
#include "tests/util/gcc_bug_105329.h"

namespace tabletfs {
namespace {

constexpr int64_t kHour = 3600LL * 1000000;

class DBGcTest : public MemDbTest {
 protected:
  void SetUp() override {
    MemDbTest::SetUp();
    ASSERT_TRUE(db_->CreateTable("t").ok());
  }
  void Family(const std::string& name, const std::string& policy) {
    FamilySettings s;
    auto p = GcPolicy::Parse(policy);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    s.gc_policy = *p;
    ASSERT_TRUE(db_->CreateFamily("t", name, s).ok());
  }
  void SetPolicy(const std::string& name, const std::string& policy) {
    FamilySettings s = *db_->GetFamily("t", name);
    s.gc_policy = *GcPolicy::Parse(policy);
    ASSERT_TRUE(db_->UpdateFamily("t", name, s).ok());
  }
  void Put(const std::string& family, int64_t ts, const std::string& value) {
    RowMutation m("r");
    m.SetCell(family, "q", ts, value);
    ASSERT_TRUE(db_->Apply("t", m, WriteOptions()).ok());
  }
  // Timestamps of the visible versions, newest first, read three ways:
  // directly, after a flush and after a full compaction must all agree.
  std::string Versions(const std::string& family,
                       std::optional<int64_t> at = std::nullopt) {
    ReadOptions ro;
    ro.max_versions = 0;
    ro.at = at;
    auto cells = db_->ReadCell("t", "r", family, "q", ro);
    if (!cells.ok()) return cells.status().ToString();
    std::string out;
    for (const Cell& c : *cells) {
      if (!out.empty()) out += ",";
      out += c.value;
    }
    return out;
  }
  std::string VersionsEverywhere(const std::string& family) {
    std::string before = Versions(family);
    EXPECT_TRUE(db_->Flush().ok());
    EXPECT_EQ(Versions(family), before) << "after flush";
    EXPECT_TRUE(db_->CompactAll().ok());
    EXPECT_EQ(Versions(family), before) << "after compaction";
    Reopen();
    EXPECT_EQ(Versions(family), before) << "after reopen";
    return before;
  }

};

TEST_F(DBGcTest, MaxVersions) {
  Family("f", "maxversions=2");
  // GCC bug 105329: a false -Wrestrict in "v" + std::to_string(ts).
  TABLETFS_GCC_BUG_105329_BEGIN
  for (int ts = 1; ts <= 4; ++ts) Put("f", ts, "v" + std::to_string(ts));
  TABLETFS_GCC_BUG_105329_END
  EXPECT_EQ(VersionsEverywhere("f"), "v4,v3");
  // Collected versions stay collected for reads in the past too.
  EXPECT_EQ(Versions("f", 2), "");
  EXPECT_EQ(Versions("f", 3), "v3");
}

TEST_F(DBGcTest, MaxAgeWithControlledClock) {
  Family("f", "maxage=1h");
  int64_t now = env_.NowMicros();
  Put("f", now - 2 * kHour, "old");
  Put("f", now - kHour / 2, "recent");
  Put("f", now, "new");
  EXPECT_EQ(VersionsEverywhere("f"), "new,recent");
  env_.AdvanceMicros(kHour);
  EXPECT_EQ(Versions("f"), "new");
  EXPECT_EQ(VersionsEverywhere("f"), "new");
  env_.AdvanceMicros(kHour);
  EXPECT_EQ(VersionsEverywhere("f"), "");
}

TEST_F(DBGcTest, AndOr) {
  Family("and", "maxversions=1 and maxage=1h");
  Family("or", "maxversions=2 or maxage=1h");
  int64_t now = env_.NowMicros();
  for (const char* f : {"and", "or"}) {
    Put(f, now - 3 * kHour, "a");
    Put(f, now - 2 * kHour / 3, "b");  // 40 minutes old
    Put(f, now - kHour / 3, "c");      // 20 minutes old
  }
  // and: collected only when both rank >= 1 and age >= 1h: just "a".
  EXPECT_EQ(VersionsEverywhere("and"), "c,b");
  // or: rank >= 2 ("a") or age >= 1h ("a").
  EXPECT_EQ(VersionsEverywhere("or"), "c,b");
  env_.AdvanceMicros(kHour / 2);  // b is 70 minutes old, c 50
  EXPECT_EQ(VersionsEverywhere("and"), "c");
  EXPECT_EQ(VersionsEverywhere("or"), "c");
}

TEST_F(DBGcTest, RelaxingAPolicyBringsNothingBack) {
  Family("f", "never");
  Put("f", 1, "v1");
  Put("f", 2, "v2");
  Put("f", 3, "v3");
  SetPolicy("f", "maxversions=1");
  EXPECT_EQ(Versions("f"), "v3");
  SetPolicy("f", "never");
  EXPECT_EQ(Versions("f"), "v3");
  // Versions written under the relaxed policy are kept, and do not push
  // v3 out under the old one.
  Put("f", 4, "v4");
  Put("f", 5, "v5");
  EXPECT_EQ(VersionsEverywhere("f"), "v5,v4,v3");
  // The policy history survives reopen (it is in the manifest).
  Reopen();
  EXPECT_EQ(Versions("f"), "v5,v4,v3");
}

// A thread's reads reuse one cursor, which decides how a family collects
// when it meets the family: a read after a policy change uses the new one.
TEST_F(DBGcTest, ThePolicyOfAChangedFamilyAppliesToTheNextRead) {
  Family("f", "never");
  Family("g", "maxversions=2");
  for (const char* family : {"f", "g"}) {
    Put(family, 1, "v1");
    Put(family, 2, "v2");
    Put(family, 3, "v3");
  }
  EXPECT_EQ(Versions("f"), "v3,v2,v1");
  EXPECT_EQ(Versions("g"), "v3,v2");
  SetPolicy("f", "maxversions=2");
  SetPolicy("g", "never");
  EXPECT_EQ(Versions("f"), "v3,v2");
  EXPECT_EQ(Versions("g"), "v3,v2");  // relaxing brings nothing back
  SetPolicy("f", "maxversions=1");
  EXPECT_EQ(Versions("f"), "v3");
  EXPECT_EQ(VersionsEverywhere("f"), "v3");
}

TEST_F(DBGcTest, CollectedBeforeCompactionStaysCollectedAfterPolicyChange) {
  Family("f", "maxversions=1");
  Put("f", 1, "v1");
  Put("f", 2, "v2");
  ASSERT_TRUE(db_->CompactAll().ok());
  SetPolicy("f", "maxversions=5");
  EXPECT_EQ(VersionsEverywhere("f"), "v2");
}

TEST_F(DBGcTest, NeverKeepsEverything) {
  Family("f", "never");
  for (int ts = 1; ts <= 50; ++ts) Put("f", ts, std::to_string(ts));
  std::string all = VersionsEverywhere("f");
  EXPECT_EQ(std::count(all.begin(), all.end(), ','), 49);
}

}  // namespace
}  // namespace tabletfs
