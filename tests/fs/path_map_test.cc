#include "fs/path_map.h"

#include <errno.h>

#include "gtest/gtest.h"

namespace tabletfs::fs {
namespace {

Node Root() { return Node(); }

Node Child(const Node& parent, std::string_view name) {
  ParsedChild c;
  FsError e = ParseChild(parent, name, &c);
  EXPECT_TRUE(e.ok()) << name << ": " << e.ToString();
  return c.node;
}

int ChildErr(const Node& parent, std::string_view name) {
  ParsedChild c;
  return ParseChild(parent, name, &c).err;
}

TEST(PathMapTest, WalksTheNamespace) {
  Node table = Child(Root(), "webtable");
  EXPECT_EQ(table.kind, NodeKind::kTable);
  EXPECT_EQ(table.table, "webtable");
  Node row = Child(table, "com.cnn.www");
  EXPECT_EQ(row.kind, NodeKind::kRow);
  EXPECT_EQ(row.row, "com.cnn.www");
  Node family = Child(row, "anchor");
  EXPECT_EQ(family.kind, NodeKind::kFamily);
  Node cell = Child(family, "cnnsi.com");
  EXPECT_EQ(cell.kind, NodeKind::kCell);
  EXPECT_EQ(cell.qualifier, "cnnsi.com");
  EXPECT_FALSE(cell.at.has_value());
  EXPECT_EQ(cell.Parent(), family);
  EXPECT_EQ(family.Parent(), row);
  EXPECT_EQ(row.Parent(), table);
  EXPECT_EQ(table.Parent(), Root());
  EXPECT_EQ(cell.DebugPath(), "/webtable/com.cnn.www/anchor/cnnsi.com");
}

TEST(PathMapTest, DecodesEscapesAndVersions) {
  Node family = Child(Child(Child(Root(), "t"), "a%2Fb"), "f");
  EXPECT_EQ(family.row, "a/b");
  Node empty = Child(family, "%");
  EXPECT_EQ(empty.qualifier, "");
  Node version = Child(family, "q@1000");
  EXPECT_EQ(version.qualifier, "q");
  ASSERT_TRUE(version.at.has_value());
  EXPECT_EQ(*version.at, 1000);
  EXPECT_EQ(ListedName(version), "q@1000");
  EXPECT_EQ(ListedName(family.Parent()), "a%2Fb");
  EXPECT_EQ(ListedName(empty), "%");
  Node iso = Child(family, "q@1970-01-01T00:00:01Z");
  EXPECT_EQ(*iso.at, 1000000);
}

TEST(PathMapTest, RefusesBadNames) {
  Node table = Child(Root(), "t");
  Node row = Child(table, "r");
  Node family = Child(row, "f");
  EXPECT_EQ(ChildErr(Root(), "bad name"), EINVAL);
  EXPECT_EQ(ChildErr(Root(), "-x"), EINVAL);
  EXPECT_EQ(ChildErr(table, "%"), EINVAL);    // empty row key
  EXPECT_EQ(ChildErr(table, "%41"), EINVAL);  // not canonical
  EXPECT_EQ(ChildErr(table, "a@b"), EINVAL);  // '@' must be escaped
  EXPECT_EQ(ChildErr(row, "not/afamily"), EINVAL);
  EXPECT_EQ(ChildErr(family, "q@"), EINVAL);
  EXPECT_EQ(ChildErr(family, "q@zz"), EINVAL);
  EXPECT_EQ(ChildErr(family, std::string(235, 'a')), ENAMETOOLONG);
  EXPECT_EQ(ChildErr(Child(family, "q"), "x"), ENOTDIR);
  EXPECT_EQ(ChildErr(Child(Root(), ".tabletfs"), "nothing"), ENOENT);
}

TEST(PathMapTest, VersionsAndAtViews) {
  Node versions = Child(Root(), ".versions");
  EXPECT_EQ(versions.kind, NodeKind::kRoot);
  EXPECT_EQ(versions.view, View::kVersions);
  Node family = Child(Child(Child(versions, "t"), "r"), "f");
  EXPECT_EQ(family.view, View::kVersions);
  EXPECT_EQ(ChildErr(family, "q"), ENOENT);  // only Q@T there
  Node v = Child(family, "q@7");
  EXPECT_EQ(*v.at, 7);
  EXPECT_EQ(v.DebugPath(), "/.versions/t/r/f/q@7");
  EXPECT_EQ(ChildErr(versions, ".versions"), EINVAL);

  Node at_root = Child(Root(), ".at");
  EXPECT_EQ(at_root.kind, NodeKind::kAtRoot);
  EXPECT_EQ(ChildErr(at_root, "yesterday"), EINVAL);
  Node at = Child(at_root, "1970-01-01T00:00:01Z");
  EXPECT_EQ(at.kind, NodeKind::kRoot);
  EXPECT_EQ(at.view, View::kAt);
  EXPECT_EQ(at.view_at, 1000000);
  Node cell = Child(Child(Child(Child(at, "t"), "r"), "f"), "q");
  EXPECT_EQ(cell.view, View::kAt);
  EXPECT_EQ(cell.DebugPath(), "/.at/1000000/t/r/f/q");
  EXPECT_EQ(cell.Parent().Parent().Parent().Parent(), at);
  EXPECT_EQ(at.Parent(), at_root);

  // .prefix/TABLE/P/ROW/...: P decoded as a row name; the nodes of the
  // view name their prefix, so they differ from the same rows elsewhere.
  Node prefix_root = Child(Root(), ".prefix");
  EXPECT_EQ(prefix_root.kind, NodeKind::kPrefixRoot);
  EXPECT_EQ(ChildErr(prefix_root, "bad/name"), EINVAL);
  Node prefix_table = Child(prefix_root, "t");
  EXPECT_EQ(prefix_table.kind, NodeKind::kPrefixTable);
  EXPECT_EQ(prefix_table.table, "t");
  Node slice = Child(prefix_table, "a%2F");
  EXPECT_EQ(slice.kind, NodeKind::kTable);
  EXPECT_EQ(slice.view, View::kPrefix);
  EXPECT_EQ(slice.view_prefix, "a/");
  EXPECT_EQ(ListedName(slice), "a%2F");
  EXPECT_EQ(ChildErr(prefix_table, "a%~0123456789abcdef"), EINVAL);
  Node in_slice = Child(Child(Child(slice, "a%2Fb"), "f"), "q");
  EXPECT_EQ(in_slice.view, View::kPrefix);
  EXPECT_EQ(in_slice.view_prefix, "a/");
  EXPECT_EQ(in_slice.row, "a/b");
  EXPECT_EQ(in_slice.DebugPath(), "/.prefix/t/a%2F/a%2Fb/f/q");
  EXPECT_EQ(in_slice.Parent().Parent().Parent(), slice);
  EXPECT_EQ(slice.Parent(), prefix_table);
  EXPECT_EQ(prefix_table.Parent(), prefix_root);
  EXPECT_EQ(prefix_root.Parent(), Root());
  Node same_row = Child(Child(Child(Child(Root(), "t"), "a%2Fb"), "f"), "q");
  EXPECT_NE(in_slice, same_row);
  EXPECT_NE(NodeHash()(in_slice), NodeHash()(same_row));

  // .changes/TABLE[@T]: a file.
  Node changes_root = Child(Root(), ".changes");
  EXPECT_EQ(changes_root.kind, NodeKind::kChangesRoot);
  Node feed = Child(changes_root, "t");
  EXPECT_EQ(feed.kind, NodeKind::kChangesFile);
  EXPECT_FALSE(feed.IsDirectory());
  EXPECT_EQ(feed.DebugPath(), "/.changes/t");
  EXPECT_EQ(feed.Parent(), changes_root);
  Node since = Child(changes_root, "t@1000");
  EXPECT_EQ(since.table, "t");
  EXPECT_EQ(since.at, 1000);
  EXPECT_EQ(ListedName(since), "t@1000");
  EXPECT_EQ(ChildErr(changes_root, "bad/name"), EINVAL);
  EXPECT_EQ(ChildErr(feed, "x"), ENOTDIR);

  Node stats = Child(Child(Root(), ".tabletfs"), "stats");
  EXPECT_EQ(stats.kind, NodeKind::kStatusFile);
  EXPECT_FALSE(stats.IsDirectory());
  Node tablets = Child(Child(Root(), ".tabletfs"), "tablets");
  EXPECT_EQ(tablets.kind, NodeKind::kStatusFile);
  EXPECT_EQ(tablets.name, "tablets");
  EXPECT_EQ(ListedName(tablets), "tablets");
  EXPECT_EQ(tablets.DebugPath(), "/.tabletfs/tablets");
  EXPECT_EQ(ChildErr(tablets, "x"), ENOTDIR);
  EXPECT_EQ(ChildErr(Child(Root(), ".tabletfs"), "tablet"), ENOENT);
}

TEST(PathMapTest, SchemaTree) {
  Node schema = Child(Root(), ".schema");
  EXPECT_EQ(schema.kind, NodeKind::kSchemaRoot);
  Node table = Child(schema, "t");
  EXPECT_EQ(table.kind, NodeKind::kSchemaTable);
  Node family = Child(table, "f");
  EXPECT_EQ(family.kind, NodeKind::kSchemaFamily);
  EXPECT_FALSE(family.IsDirectory());
  EXPECT_EQ(family.DebugPath(), "/.schema/t/f");
  EXPECT_EQ(ChildErr(table, "bad name"), EINVAL);
  EXPECT_EQ(ChildErr(family, "x"), ENOTDIR);
}

TEST(PathMapTest, StageAndCommit) {
  Node stage = Child(Root(), ".stage");
  EXPECT_EQ(stage.kind, NodeKind::kStageRoot);
  Node row = Child(Child(stage, "t"), "a%2Fb");
  EXPECT_EQ(row.kind, NodeKind::kStageRow);
  EXPECT_EQ(row.row, "a/b");
  Node family = Child(row, "f");
  EXPECT_EQ(family.kind, NodeKind::kStageFamily);
  Node cell = Child(family, "q");
  EXPECT_EQ(cell.kind, NodeKind::kStageCell);
  EXPECT_EQ(cell.Parent(), family);
  EXPECT_EQ(family.Parent(), row);
  EXPECT_EQ(cell.DebugPath(), "/.stage/t/a%2Fb/f/q");
  // The marks: @delete of the row, of a family, of a cell; @if-unchanged.
  Node del_row = Child(row, "@delete");
  EXPECT_EQ(del_row.kind, NodeKind::kStageRowMark);
  EXPECT_EQ(del_row.family, "");
  EXPECT_EQ(ListedName(del_row), "@delete");
  Node del_family = Child(row, "f@delete");
  EXPECT_EQ(del_family.family, "f");
  EXPECT_EQ(del_family.Parent(), row);
  EXPECT_EQ(ListedName(del_family), "f@delete");
  EXPECT_EQ(Child(row, "@if-unchanged").name, "if-unchanged");
  Node del_cell = Child(family, "%@delete");  // the empty qualifier
  EXPECT_EQ(del_cell.kind, NodeKind::kStageCellMark);
  EXPECT_EQ(del_cell.qualifier, "");
  EXPECT_EQ(ListedName(del_cell), "%@delete");
  EXPECT_EQ(del_cell.Parent(), family);
  EXPECT_EQ(ChildErr(row, "f@later"), EINVAL);
  EXPECT_EQ(ChildErr(family, "@if-unchanged"), EINVAL);
  EXPECT_EQ(ChildErr(family, "q@1"), EINVAL);
  EXPECT_EQ(ChildErr(cell, "x"), ENOTDIR);
  EXPECT_EQ(ChildErr(Child(stage, "t"), "ab%~0123456789abcdef"), ENAMETOOLONG);
  // .commit/TABLE/ROW is only a name.
  Node commit_row = Child(Child(Child(Root(), ".commit"), "t"), "r");
  EXPECT_EQ(commit_row.kind, NodeKind::kCommitRow);
  EXPECT_EQ(commit_row.DebugPath(), "/.commit/t/r");
  EXPECT_EQ(ChildErr(commit_row, "f"), ENOENT);
}

TEST(PathMapTest, HashedNamesAreReportedForResolution) {
  Node family = Child(Child(Child(Root(), "t"), "r"), "f");
  std::string name = std::string(200, 'a') + "%~0123456789abcdef";
  ParsedChild c;
  ASSERT_TRUE(ParseChild(family, name, &c).ok());
  EXPECT_TRUE(c.hashed);
  EXPECT_EQ(c.hash, 0x0123456789abcdefull);
  EXPECT_EQ(c.node.qualifier, std::string(200, 'a'));
}

TEST(PathMapTest, NodesHashByValue) {
  NodeHash h;
  Node a = Child(Child(Root(), "t"), "r");
  Node b = Child(Child(Root(), "t"), "r");
  EXPECT_EQ(a, b);
  EXPECT_EQ(h(a), h(b));
  Node v1 = Child(Child(a, "f"), "q@1");
  Node v2 = Child(Child(a, "f"), "q@2");
  EXPECT_FALSE(v1 == v2);
}

}  // namespace
}  // namespace tabletfs::fs
