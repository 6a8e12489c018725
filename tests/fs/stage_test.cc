#include "fs/stage.h"

#include <errno.h>

#include "gtest/gtest.h"

namespace tabletfs::fs {
namespace {

Node StageNode(NodeKind kind, std::string row, std::string family = "",
               std::string qualifier = "", std::string mark = "") {
  Node n;
  n.kind = kind;
  n.table.push_back('t');  // not = "t": GCC 12 -Wrestrict (bug 105329)
  n.row = std::move(row);
  n.family = std::move(family);
  n.qualifier = std::move(qualifier);
  n.name = std::move(mark);
  return n;
}

std::vector<std::string> Names(Stage& stage, const Node& dir) {
  std::vector<std::string> out;
  for (auto& [name, node] : stage.List(dir)) out.push_back(name);
  return out;
}

TEST(StageTest, StagesCellsAndMarksOfARow) {
  Stage s;
  const Node row = StageNode(NodeKind::kStageRow, "r");
  const Node family = StageNode(NodeKind::kStageFamily, "r", "f");
  const Node a = StageNode(NodeKind::kStageCell, "r", "f", "a");
  EXPECT_EQ(s.Make(family, 0, 1).err, ENOENT);  // its row first
  ASSERT_TRUE(s.Make(row, 42, 1).ok());
  EXPECT_EQ(s.Make(row, 42, 1).err, EEXIST);
  EXPECT_EQ(s.Put(a, "x", 2).err, ENOENT);  // its family directory first
  ASSERT_TRUE(s.Make(family, 0, 1).ok());
  ASSERT_TRUE(s.Put(a, "value", 2).ok());
  ASSERT_TRUE(s.Put(StageNode(NodeKind::kStageRowMark, "r", "g", "",
                              std::string(kDeleteMark)),
                    "", 2)
                  .ok());
  ASSERT_TRUE(s.Put(StageNode(NodeKind::kStageRowMark, "r", "", "",
                              std::string(kIfUnchangedMark)),
                    "", 2)
                  .ok());
  EXPECT_EQ(Names(s, StageNode(NodeKind::kStageRoot, "")),
            std::vector<std::string>{"t"});
  EXPECT_EQ(Names(s, row),
            (std::vector<std::string>{"@if-unchanged", "f", "g@delete"}));
  EXPECT_EQ(s.bytes(), 5u);
  // A cell and its @delete exclude each other.
  const Node a_del = StageNode(NodeKind::kStageCellMark, "r", "f", "a",
                               std::string(kDeleteMark));
  ASSERT_TRUE(s.Put(a_del, "", 3).ok());
  EXPECT_EQ(Names(s, family), std::vector<std::string>{"a@delete"});
  EXPECT_EQ(s.bytes(), 0u);
  ASSERT_TRUE(s.Put(a, "v2", 4).ok());
  EXPECT_EQ(Names(s, family), std::vector<std::string>{"a"});

  Stage::Row copy;
  ASSERT_TRUE(s.Copy("t", "r", &copy).ok());
  EXPECT_EQ(copy.fingerprint, 42u);
  EXPECT_TRUE(copy.if_unchanged);
  RowMutation m = StagedMutation("r", copy, kServerTimestamp);
  ASSERT_EQ(m.ops().size(), 2u);  // deletions first
  EXPECT_EQ(m.ops()[0].type, RowMutation::OpType::kDeleteFamily);
  EXPECT_EQ(m.ops()[0].family, "g");
  EXPECT_EQ(m.ops()[1].type, RowMutation::OpType::kSetCell);
  EXPECT_EQ(m.ops()[1].value, "v2");

  // rmdir only when empty; Erase takes the row only for its own staging.
  EXPECT_EQ(s.Remove(row).err, ENOTEMPTY);
  EXPECT_EQ(s.Remove(family).err, ENOTEMPTY);
  s.Erase("t", "r", copy.id + 1);
  EXPECT_TRUE(s.Copy("t", "r", &copy).ok());
  s.Erase("t", "r", copy.id);
  EXPECT_EQ(s.Copy("t", "r", &copy).err, ENOENT);
  EXPECT_EQ(s.bytes(), 0u);
  EXPECT_TRUE(Names(s, StageNode(NodeKind::kStageRoot, "")).empty());
}

TEST(StageTest, RenamesWithinARowAndKeepsSetMtimes) {
  Stage s;
  const Node tmp = StageNode(NodeKind::kStageCell, "r", "f", ".a.XYZ");
  const Node a = StageNode(NodeKind::kStageCell, "r", "f", "a");
  ASSERT_TRUE(s.Make(StageNode(NodeKind::kStageRow, "r"), 0, 1).ok());
  ASSERT_TRUE(s.Make(StageNode(NodeKind::kStageFamily, "r", "f"), 0, 1).ok());
  ASSERT_TRUE(s.Put(tmp, "rsync", 5).ok());
  ASSERT_TRUE(s.SetMtime(tmp, 1000).ok());
  ASSERT_TRUE(s.Put(tmp, "rsync", 6, /*keep_mtime=*/true).ok());
  ASSERT_TRUE(s.Rename(tmp, a).ok());
  Stage::Found f;
  ASSERT_TRUE(s.Find(a, &f).ok());
  EXPECT_EQ(f.size, 5u);
  EXPECT_EQ(f.mtime, 1000);
  EXPECT_EQ(s.Find(tmp, &f).err, ENOENT);
  EXPECT_EQ(s.Rename(a, StageNode(NodeKind::kStageCell, "other", "f", "a")).err,
            EXDEV);
  ASSERT_TRUE(s.Truncate(a, 2, 7).ok());  // a truncate drops the set mtime
  ASSERT_TRUE(s.Find(a, &f).ok());
  EXPECT_EQ(f.size, 2u);
  EXPECT_EQ(f.mtime, 7);
}

TEST(StageTest, StagedBytesAreBounded) {
  Stage s;
  ASSERT_TRUE(s.Make(StageNode(NodeKind::kStageRow, "r"), 0, 1).ok());
  ASSERT_TRUE(s.Make(StageNode(NodeKind::kStageFamily, "r", "f"), 0, 1).ok());
  const std::string big(Stage::kMaxBytes / 2, 'x');
  ASSERT_TRUE(
      s.Put(StageNode(NodeKind::kStageCell, "r", "f", "a"), big, 1).ok());
  ASSERT_TRUE(
      s.Put(StageNode(NodeKind::kStageCell, "r", "f", "b"), big, 1).ok());
  EXPECT_EQ(s.Put(StageNode(NodeKind::kStageCell, "r", "f", "c"), "1", 1).err,
            ENOSPC);
  EXPECT_EQ(Names(s, StageNode(NodeKind::kStageFamily, "r", "f")),
            (std::vector<std::string>{"a", "b"}));
  // Replacing a value counts only the difference.
  ASSERT_TRUE(
      s.Put(StageNode(NodeKind::kStageCell, "r", "f", "b"), "", 1).ok());
  ASSERT_TRUE(
      s.Put(StageNode(NodeKind::kStageCell, "r", "f", "c"), "1", 1).ok());
  EXPECT_EQ(s.bytes(), big.size() + 1);
}

TEST(StageTest, RowFingerprintSeesEveryChange) {
  tabletfs::Row row;
  row.key = "r";
  row.cells.push_back({"f", "a", 10, "v"});
  const uint64_t base = RowFingerprint(row);
  tabletfs::Row other = row;
  other.cells[0].value = "w";
  EXPECT_NE(RowFingerprint(other), base);
  other = row;
  other.cells[0].timestamp = 11;
  EXPECT_NE(RowFingerprint(other), base);
  other = row;
  other.cells.push_back({"f", "b", 10, "v"});
  EXPECT_NE(RowFingerprint(other), base);
  EXPECT_EQ(RowFingerprint(row), base);
}

}  // namespace
}  // namespace tabletfs::fs
