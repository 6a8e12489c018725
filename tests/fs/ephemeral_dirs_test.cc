#include "fs/ephemeral_dirs.h"

#include "gtest/gtest.h"

namespace tabletfs::fs {
namespace {

TEST(EphemeralDirsTest, RowsAndFamilies) {
  EphemeralDirs d;
  d.AddRow("t", "b");
  d.AddFamily("t", "a", "f");
  EXPECT_TRUE(d.HasRow("t", "a"));  // a family brings its row
  EXPECT_TRUE(d.HasFamily("t", "a", "f"));
  EXPECT_FALSE(d.HasFamily("t", "b", "f"));
  EXPECT_TRUE(d.RowHasFamilies("t", "a"));
  EXPECT_FALSE(d.RowHasFamilies("t", "b"));
  EXPECT_EQ(d.NextRow("t", "", false), "a");
  EXPECT_EQ(d.NextRow("t", "a", true), "b");
  EXPECT_EQ(d.NextRow("t", "b", true), std::nullopt);
  EXPECT_EQ(d.NextRow("u", "", false), std::nullopt);
  // Removing the family leaves the row listed (emptied, not removed).
  EXPECT_TRUE(d.RemoveFamily("t", "a", "f"));
  EXPECT_FALSE(d.RemoveFamily("t", "a", "f"));
  EXPECT_TRUE(d.HasRow("t", "a"));
  EXPECT_TRUE(d.RemoveRow("t", "a"));
  EXPECT_TRUE(d.TableHasRows("t"));
  d.RemoveTable("t");
  EXPECT_FALSE(d.TableHasRows("t"));
}

TEST(EphemeralDirsTest, CellsCreatedByOpenHandlesAreCounted) {
  EphemeralDirs d;
  d.AddCell("t", "r", "f", "b");
  d.AddCell("t", "r", "f", "a");
  d.AddCell("t", "r", "f", "a");  // a second creator of the same name
  EXPECT_EQ(d.NextCell("t", "r", "f", "", false), "a");
  EXPECT_EQ(d.NextCell("t", "r", "f", "a", false), "a");
  EXPECT_EQ(d.NextCell("t", "r", "f", "a", true), "b");
  EXPECT_EQ(d.NextCell("t", "r", "g", "", false), std::nullopt);
  EXPECT_EQ(d.NextCell("t", std::string("r\0", 2), "f", "", false),
            std::nullopt);
  d.RemoveCell("t", "r", "f", "a");
  EXPECT_EQ(d.NextCell("t", "r", "f", "", false), "a");  // one creator left
  d.RemoveCell("t", "r", "f", "a");
  EXPECT_EQ(d.NextCell("t", "r", "f", "", false), "b");
  d.RemoveCell("t", "r", "f", "b");
  d.RemoveCell("t", "r", "f", "b");  // harmless
  EXPECT_EQ(d.NextCell("t", "r", "f", "", false), std::nullopt);
}

}  // namespace
}  // namespace tabletfs::fs
