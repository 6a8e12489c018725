// Real-mount tests of file mtimes kept apart from version timestamps
// (issue 16 items 2 and 3, fs/mtimes.h): a write always becomes current,
// utimensat sets an mtime that creates no version, and cp -a, tar x,
// tar --overwrite and rsync -a (with and without --inplace) converge: a
// second run transfers nothing and adds no version.
#include <string>

#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

class MtimeFixture : public MountFixture {
 protected:
  void SetUp() override {
    MountFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    CreateTable("t", {"f"});
    Mount();
  }
  // Every stored version of the table, as `.versions` lists them.
  std::string AllVersions() {
    return ShOk("find .versions/t -type f | sort");
  }
  // A source tree with old, future and mixed mtimes.
  std::string MakeSource() {
    std::string src = tmp() + "/src";
    ShOk("mkdir -p " + src + "/r/f && cd " + src +
         "/r/f && echo old > old && touch -d 2001-02-03T04:05:06Z old && "
         "echo future > future && touch -d 2099-01-01T00:00:00Z future && "
         "echo now > now && echo mixed > mixed && "
         "touch -d '2015-06-07 08:09:10.123456789' mixed");
    return src;
  }
  // Names, sizes and mtimes to `digits` decimals (µs: what the store
  // keeps; tar keeps seconds).
  std::string Listing(const std::string& dir, int digits = 6) {
    return ShOk("cd '" + dir +
                "' && find . -type f -printf '%p %s %T@\\n' | sort | "
                "awk '{split($3, t, \".\"); print $1, $2, t[1] \".\" "
                "substr(t[2], 1, " + std::to_string(digits) + ")}'");
  }
};

// Over the engine, the memory store and a remote Bigtable (the emulator
// and a tabletfs server).
using MtimeTest = OverStores<MtimeFixture>;
// A remount that finds the data again: the engine's only.
using MtimeEngineTest = MtimeFixture;

TEST_P(MtimeTest, AWriteIsCurrentWhateverTheMtimesAndVersionsSay) {
  ShOk("mkdir -p t/r/f && echo base > t/r/f/f");
  ShOk("touch -d 2099-01-01 t/r/f/f");
  EXPECT_EQ(ShOk("date -r t/r/f/f +%Y"), "2099\n");
  EXPECT_EQ(ShOk("cat t/r/f/f"), "base\n");
  ShOk("echo later > t/r/f/f");
  EXPECT_EQ(ShOk("cat t/r/f/f"), "later\n");
  EXPECT_NE(ShOk("date -r t/r/f/f +%Y"), "2099\n");  // the commit's time
  ShOk("touch -d 1999-01-01 t/r/f/f && echo more >> t/r/f/f");
  EXPECT_EQ(ShOk("cat t/r/f/f"), "later\nmore\n");
  EXPECT_EQ(ShOk("ls .versions/t/r/f | wc -l"), "3\n");
  // The same bytes again add no version, through `>` too.
  ShOk("printf 'later\\nmore\\n' > t/r/f/f && cp t/r/f/f " + tmp() +
       "/copy && cp " + tmp() + "/copy t/r/f/f");
  EXPECT_EQ(ShOk("ls .versions/t/r/f | wc -l"), "3\n");
  // A version in the future (written at T, up to an hour ahead): writes
  // and appends still become current, stamped above it.
  ShOk("echo ahead > t/r/f/g@$(( ($(date +%s) + 1800) * 1000000 ))");
  EXPECT_EQ(ShOk("cat t/r/f/g"), "ahead\n");
  ShOk("echo edited > t/r/f/g");
  EXPECT_EQ(ShOk("cat t/r/f/g"), "edited\n");
  ShOk("echo appended >> t/r/f/g");
  EXPECT_EQ(ShOk("cat t/r/f/g"), "edited\nappended\n");
  ShOk("sed -i s/edited/sed/ t/r/f/g");
  EXPECT_EQ(ShOk("cat t/r/f/g"), "sed\nappended\n");
}

TEST_F(MtimeEngineTest, MtimesSurviveRemountAndFollowRenames) {
  ShOk("mkdir -p t/r/f && echo a > t/r/f/a && touch -d @1234567890 t/r/f/a");
  std::string versions = AllVersions();
  ShOk("mv t/r/f/a t/r/f/b");
  EXPECT_EQ(ShOk("stat -c %Y t/r/f/b"), "1234567890\n");
  Unmount();
  Mount();
  EXPECT_EQ(ShOk("stat -c %Y t/r/f/b"), "1234567890\n");
  EXPECT_EQ(ShOk("ls -l --time-style=+%s t/r/f | awk 'NR>1{print $6}'"),
            "1234567890\n");
  // The table that holds them is nobody's data.
  EXPECT_EQ(ShOk("ls"), "t\n");
  EXPECT_NE(Sh("mkdir _tabletfs_mtimes 2>/dev/null"), 0);
  EXPECT_NE(Sh("ls _tabletfs_mtimes 2>/dev/null"), 0);
}

// A table's mtime follows the newest cell of its first rows. After rows at
// its start are removed, the daemon starts the table's scan where the last
// one found its first cell (DirTimesCache::FirstRow); a new row before
// that must still count.
TEST_P(MtimeTest, ATablesMtimeSeesANewRowBeforeTheRemovedOnes) {
  ShOk("mkdir -p t/b/f t/c/f && echo 1 > t/b/f/q && echo 2 > t/c/f/q");
  ShOk("rm -r t/b && mkdir -p t/a/f");
  // A second later, the table's scan keeps row c as its first. Then a
  // cell of row a, and a new row (its mkdir makes the kernel ask for the
  // table's attributes again), within the kept row's age (1 s).
  ShOk("sleep 1.1 && stat t > /dev/null && echo 3 > t/a/f/q && mkdir t/d");
  EXPECT_EQ(ShOk("date -r t +%s"), ShOk("date -r t/a/f/q +%s"));
  EXPECT_NE(ShOk("date -r t +%s"), ShOk("date -r t/c/f/q +%s"));
}

TEST_P(MtimeTest, RsyncConvergesWithAndWithoutInplace) {
  std::string src = MakeSource();
  for (const char* inplace : {"", " --inplace"}) {
    SCOPED_TRACE(inplace);
    ShOk("rm -rf t/r && mkdir -p t/r");
    ShOk(std::string("rsync -a") + inplace + " " + src + "/ t/");
    EXPECT_EQ(Listing(mnt() + "/t"), Listing(src));
    std::string versions = AllVersions();
    EXPECT_EQ(ShOk(std::string("rsync -a -i") + inplace + " " + src +
                   "/ t/ | grep -v '^\\.d' ; true"),
              "");
    EXPECT_EQ(AllVersions(), versions);
    // A changed source file is sent, with its mtime.
    ShOk("echo changed > " + src + "/r/f/now && touch -d @1000000000 " + src +
         "/r/f/now");
    ShOk(std::string("rsync -a") + inplace + " " + src + "/ t/");
    EXPECT_EQ(ShOk("cat t/r/f/now; stat -c %Y t/r/f/now"),
              "changed\n1000000000\n");
    ShOk("echo now > " + src + "/r/f/now");
  }
}

TEST_P(MtimeTest, CpArchiveAndTarConverge) {
  std::string src = MakeSource();
  ShOk("cp -a " + src + "/r t/");
  EXPECT_EQ(Listing(mnt() + "/t"), Listing(src));
  std::string versions = AllVersions();
  ShOk("cp -a " + src + "/r t/");
  EXPECT_EQ(Listing(mnt() + "/t"), Listing(src));
  EXPECT_EQ(AllVersions(), versions);
  // tar x, then tar --overwrite twice: no differences, no new versions.
  ShOk("tar -C " + src + " -cf " + tmp() + "/a.tar r");
  ShOk("rm -r t/r && tar -C t -xf " + tmp() + "/a.tar");
  EXPECT_EQ(Listing(mnt() + "/t", 0), Listing(src, 0));
  versions = AllVersions();
  for (int i = 0; i < 2; i++) {
    ShOk("tar -C t --overwrite -xf " + tmp() + "/a.tar");
    EXPECT_EQ(ShOk("tar -C t -df " + tmp() + "/a.tar 2>&1; true"), "");
    EXPECT_EQ(AllVersions(), versions);
  }
}

INSTANTIATE_TEST_SUITE_P(, MtimeTest, AllBackends(), StoreName);

}  // namespace
}  // namespace tabletfs::testing
