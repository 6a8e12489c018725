// Real-mount tests of big directories: streaming listings of 100,000 rows
// and of a row with 100,000 cells.
#include <string>

#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

class ScaleTest : public MountFixture {};

std::string Key(int i) {
  char buf[16];
  snprintf(buf, sizeof(buf), "k%07d", i);
  return buf;
}

TEST_F(ScaleTest, TableWithManyRowsListsFully) {
  constexpr int kRows = 100000;
  CreateTable("t", {"f"});
  {
    auto db = OpenDb();
    for (int i = 0; i < kRows; i++) {
      RowMutation m(Key(i));
      m.SetCell("f", "q", "v");
      ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
    }
  }
  Mount();
  EXPECT_EQ(ShOk("ls t | wc -l"), std::to_string(kRows) + "\n");
  EXPECT_EQ(ShOk("ls -f t | sed -n 3p"), Key(0) + "\n");
  EXPECT_EQ(ShOk("ls t | tail -1"), Key(kRows - 1) + "\n");
  EXPECT_EQ(ShOk("ls t | sort -c && echo sorted"), "sorted\n");
}

TEST_F(ScaleTest, RowWithManyCellsListsFully) {
  constexpr int kCells = 100000;
  CreateTable("t", {"f"});
  {
    auto db = OpenDb();
    for (int i = 0; i < kCells; i += 1000) {
      RowMutation m("r");
      for (int j = i; j < i + 1000; j++) m.SetCell("f", Key(j), "v");
      ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
    }
  }
  Mount();
  EXPECT_EQ(ShOk("ls t/r/f | wc -l"), std::to_string(kCells) + "\n");
  EXPECT_EQ(ShOk("ls -l t/r/f | tail -1 | awk '{print $5, $9}'"),
            "1 " + Key(kCells - 1) + "\n");
  EXPECT_EQ(ShOk("find t -type f | wc -l"), std::to_string(kCells) + "\n");
}

}  // namespace
}  // namespace tabletfs::testing
