#include "fs/status_files.h"

#include <errno.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "fs/names.h"
#include "gtest/gtest.h"
#include "store/db.h"
#include "store/env/mem_env.h"

namespace tabletfs::fs {
namespace {

TabletInfo Tablet(std::string start, std::string end, uint64_t bytes,
                  uint64_t files, std::vector<std::string> samples = {}) {
  TabletInfo t;
  t.start_row = std::move(start);
  t.end_row = std::move(end);
  t.bytes = bytes;
  t.files = files;
  t.sample_rows = std::move(samples);
  return t;
}

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(text);
  while (std::getline(in, field, sep)) out.push_back(field);
  return out;
}

TEST(StatusFilesTest, OneTabletCoversTheTable) {
  EXPECT_EQ(FormatTablets("t", {Tablet("", "", 0, 0)}), "t\t-\t-\t0\t0\n");
  EXPECT_EQ(FormatTablets("t", {}), "");
}

TEST(StatusFilesTest, BoundariesAndSamplesAreRowNames) {
  const std::string long_key(300, 'k');
  std::string text = FormatTablets(
      "web", {Tablet("", "a/b", 10, 1, {"a", "a\tb"}),
              Tablet("a/b", "-", 12345678901, 22),
              Tablet("-", long_key, 7, 3, {std::string("\xff\x00", 2)}),
              Tablet(long_key, "", 1, 0)});
  EXPECT_EQ(text,
            "web\t-\ta%2Fb\t10\t1\ta\ta%09b\n"
            "web\ta%2Fb\t-\t12345678901\t22\n"
            "web\t-\t" +
                ShownName(long_key) + "\t7\t3\t%FF%00\n" + "web\t" +
                ShownName(long_key) + "\t-\t1\t0\n");
  // A long key is shown hashed, exactly as `ls TABLE` lists it.
  EXPECT_NE(ShownName(long_key), long_key);
  EXPECT_LE(ShownName(long_key).size(), kMaxShownNameBytes);
}

class StatusFilesDbTest : public ::testing::Test {
 protected:
  void Open(uint64_t tablet_split_bytes) {
    env_ = NewMemEnv();
    Options options;
    options.env = env_.get();
    options.tablet_split_bytes = tablet_split_bytes;
    auto db = DB::Open(options, "/db");
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
  }
  void Table(const std::string& table) {
    ASSERT_TRUE(db_->CreateTable(table).ok());
    ASSERT_TRUE(db_->CreateFamily(table, "f", FamilySettings()).ok());
  }
  void Put(const std::string& table, const std::string& row,
           const std::string& value) {
    RowMutation m(row);
    m.SetCell("f", "q", value);
    ASSERT_TRUE(db_->Apply(table, m, WriteOptions()).ok());
  }

  std::unique_ptr<Env> env_;
  std::unique_ptr<DB> db_;
};

TEST_F(StatusFilesDbTest, EveryTableByNameAndTheStats) {
  Open(128 << 20);
  Table("b");
  Table("a");
  Result<std::string> text = TabletsText(*db_, std::nullopt);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "a\t-\t-\t0\t0\nb\t-\t-\t0\t0\n");
  Put("b", "row", std::string(1000, 'x'));
  text = TabletsText(*db_, std::string("b"));
  ASSERT_TRUE(text.ok());
  std::vector<std::string> fields = Split(*text, '\t');
  ASSERT_EQ(fields.size(), 5u) << *text;
  EXPECT_GE(std::stoull(fields[3]), 1000u) << *text;  // the memtable counts

  EXPECT_TRUE(TabletsText(*db_, std::string("nope")).status().IsNotFound());
  std::string out;
  EXPECT_EQ(StatusFileText(*db_, "nope", &out).err, ENOENT);
  ASSERT_TRUE(StatusFileText(*db_, "tablets", &out).ok());
  EXPECT_EQ(out, *TabletsText(*db_, std::nullopt));
  ASSERT_TRUE(StatusFileText(*db_, "stats", &out).ok());
  EXPECT_NE(out.find("\ntablets 2\n"), std::string::npos) << out;
  EXPECT_EQ(out, db_->GetStats().ToString());
  // A mount's stats: the store's lines, then its FUSE requests.
  RequestCounts requests;
  requests.Add(FuseOp::kOpen);
  ASSERT_TRUE(StatusFileText(*db_, "stats", &out, &requests).ok());
  EXPECT_EQ(out, db_->GetStats().ToString() + "fuse_requests 1\nfuse_OPEN 1\n");
}

TEST_F(StatusFilesDbTest, SplitTabletsAreContiguousLines) {
  Open(4096);
  Table("t");
  // Incompressible values: the SSTables are as large as the data.
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 300; ++i) {
    std::string value;
    for (int j = 0; j < 100; ++j) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      value += static_cast<char>('!' + x % 90);
    }
    char row[16];
    snprintf(row, sizeof(row), "r/%04d", i);
    Put("t", row, value);
  }
  ASSERT_TRUE(db_->Flush().ok());
  ASSERT_TRUE(db_->WaitForIdle().ok());
  Result<std::string> text = TabletsText(*db_, std::nullopt);
  ASSERT_TRUE(text.ok());
  std::vector<std::string> lines = Split(*text, '\n');
  ASSERT_GT(lines.size(), 1u) << *text;
  std::string expected_start = "-";
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<std::string> f = Split(lines[i], '\t');
    ASSERT_GE(f.size(), 5u) << lines[i];
    EXPECT_EQ(f[0], "t");
    EXPECT_EQ(f[1], expected_start) << *text;
    if (i + 1 < lines.size()) {
      // An inner boundary: an encoded row ('/' is %2F), after START.
      EXPECT_EQ(f[2].rfind("r%2F", 0), 0u) << *text;
      if (f[1] != "-") {
        EXPECT_LT(f[1], f[2]);
      }
    } else {
      EXPECT_EQ(f[2], "-");
    }
    EXPECT_GT(std::stoull(f[3]), 0u);
    EXPECT_GE(std::stoull(f[4]), 1u);
    for (size_t s = 5; s < f.size(); ++s) {
      EXPECT_EQ(f[s].rfind("r%2F", 0), 0u) << lines[i];
      if (f[1] != "-") {
        EXPECT_GE(f[s], f[1]);
      }
      if (f[2] != "-") {
        EXPECT_LT(f[s], f[2]);
      }
    }
    expected_start = f[2];
  }
}

}  // namespace
}  // namespace tabletfs::fs
