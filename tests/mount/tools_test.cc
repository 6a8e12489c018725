// Real-mount tests with the tools people copy trees with: cp, tar, rsync,
// find, grep, diff; over the engine, the memory store and a remote
// Bigtable (the emulator and a tabletfs server).
#include <string>

#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

class ToolsFixture : public MountFixture {
 protected:
  // A tree shaped like a table: ROW/FAMILY/QUALIFIER files under tmp()/src.
  void MakeSourceTree() {
    std::string src = tmp() + "/src";
    std::string cmd = "mkdir -p " + src + "/row1/f " + src + "/row1/g " + src +
                      "/row2/f && "
                      "echo one > " +
                      src +
                      "/row1/f/a && "
                      "printf 'two\\nlines\\n' > " +
                      src +
                      "/row1/f/b && "
                      "head -c 200000 /dev/urandom > " +
                      src +
                      "/row1/g/big && "
                      ": > " +
                      src +
                      "/row2/f/empty && "
                      "echo 'spaces ok' > '" +
                      src + "/row2/f/with space'";
    ASSERT_EQ(system(cmd.c_str()), 0);
  }
};

using ToolsTest = OverStores<ToolsFixture>;
// Keys too long for a name, put in the store through the API: the
// engine's.
using ToolsEngineTest = ToolsFixture;

TEST_P(ToolsTest, CpRecursiveInAndOutIsEqual) {
  CreateTable("t", {"f", "g"});
  MakeSourceTree();
  Mount();
  ShOk("cp -r " + tmp() + "/src/. t/");
  ShOk("diff -r " + tmp() + "/src t");
  ShOk("cp -r t " + tmp() + "/out");
  ShOk("diff -r " + tmp() + "/src " + tmp() + "/out");
  EXPECT_EQ(ShOk("find t -type f | wc -l"), "5\n");
  EXPECT_EQ(ShOk("grep -rl lines t"), "t/row1/f/b\n");
  EXPECT_EQ(ShOk("grep -r ok t"), "t/row2/f/with space:spaces ok\n");
  // du counts cell sizes (st_blocks = ceil(size / 512)).
  EXPECT_EQ(ShOk("du -s --block-size=512 t/row1/g | cut -f1"), "391\n");
}

TEST_P(ToolsTest, CpArchiveAndTarRoundTrip) {
  CreateTable("t", {"f", "g"});
  CreateTable("u", {"f", "g"});
  MakeSourceTree();
  Mount();
  ShOk("cp -a " + tmp() + "/src/. t/");
  ShOk("diff -r " + tmp() + "/src t");
  // cp -a keeps mtimes: the cells were stamped with the source's times.
  EXPECT_EQ(ShOk("stat -c %Y t/row1/f/a"),
            ShOk("stat -c %Y " + tmp() + "/src/row1/f/a"));
  ShOk("tar -C t -cf " + tmp() + "/t.tar .");
  ShOk("tar -C u -xf " + tmp() + "/t.tar");
  ShOk("diff -r t u");
}

TEST_P(ToolsTest, SecondRsyncTransfersNothing) {
  CreateTable("t", {"f", "g"});
  MakeSourceTree();
  Mount();
  ShOk("rsync -a --inplace " + tmp() + "/src/ t/");
  ShOk("diff -r " + tmp() + "/src t");
  std::string out =
      ShOk("rsync -a --inplace --itemize-changes " + tmp() + "/src/ t/");
  // Directories may show attribute-only lines; no file is sent again.
  EXPECT_EQ(out.find(">f"), std::string::npos) << out;
}

TEST_P(ToolsTest, FindNewer) {
  CreateTable("t", {"f"});
  PutCells("t",
           {{"r", "f", "old", 1000000, "o"}, {"r", "f", "new", 3000000, "n"}});
  Mount();
  ShOk("touch -d @2 " + tmp() + "/ref");
  EXPECT_EQ(ShOk("find t -type f -newer " + tmp() + "/ref"), "t/r/f/new\n");
}

TEST_F(ToolsEngineTest, ThousandByteKeysRoundTrip) {
  CreateTable("t", {"f"});
  std::string row(1000, 'r');
  std::string qualifier(1000, 'q');
  {
    auto db = OpenDb();
    RowMutation m(row);
    m.SetCell("f", qualifier, "long");
    ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
  }
  CreateTable("u", {"f"});
  Mount();
  std::string listed = ShOk("ls t");
  ASSERT_LE(listed.size(), 236u);
  EXPECT_NE(listed.find("%~"), std::string::npos);
  EXPECT_EQ(ShOk("cat t/*/f/*"), "long");
  ShOk("cp -r t " + tmp() + "/out");
  ShOk("diff -r t " + tmp() + "/out");
  // Back in: the hashed names resolve to the existing keys.
  ShOk("cp -r " + tmp() + "/out/. t/");
  EXPECT_EQ(ShOk("ls t/* | wc -l"), "1\n");
  // A new name that long is refused: keys that long come through the API.
  EXPECT_NE(Sh("cp -r " + tmp() + "/out/. u/ 2>/dev/null"), 0);
}

INSTANTIATE_TEST_SUITE_P(, ToolsTest, AllBackends(), StoreName);

}  // namespace
}  // namespace tabletfs::testing
