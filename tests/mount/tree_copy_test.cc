// Whole trees in and out of the schema through the shell: `rm -r
// .schema/TABLE`, `cp -a` of a table tree with -o auto_families, and the
// log lines that tell a user what to do when a tree does not fit, such as
// rows listed under hashed names (issue 14, items 9, 11, 12 and 13).
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "store/db.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

class TreeCopyFixture : public MountFixture {
 protected:
  // Mounts in the foreground so that the daemon's log lands in log_.
  void MountLogged(const std::vector<std::string>& args = {}) {
    log_ = daemon_log();
    ASSERT_EQ(TryMountForeground(args, {}, log_), 0) << ReadFile(log_);
  }
  std::string Log() { return ReadFile(log_); }

  std::string log_;
};

// Run over the engine, the memory store and a remote Bigtable (the
// emulator and a tabletfs server): OverStores, AllBackends.
using TreeCopyTest = OverStores<TreeCopyFixture>;
// Tests that need the engine: the API before mounting, or a remount that
// finds the data again.
using TreeCopyEngineTest = TreeCopyFixture;

TEST_F(TreeCopyEngineTest, RmRecursiveOfASchemaTableDropsTheWholeTable) {
  CreateTable("t", {"a", "b"});
  CreateTable("keep", {"f"});
  Mount();
  ShOk("mkdir -p t/r/a && echo 1 > t/r/a/q && mkdir -p t/r/b && "
       "echo 2 > t/r/b/q");
  // With families left, rmdir refuses and changes nothing.
  EXPECT_NE(Sh("rmdir .schema/t 2>/dev/null"), 0);
  EXPECT_EQ(ShOk("cat t/r/a/q"), "1\n");
  EXPECT_EQ(ShOk("ls .schema/t"), "a\nb\n");

  // rm -r removes each family, then the table itself: one whole success.
  EXPECT_EQ(Sh("rm -r .schema/t"), 0);
  EXPECT_EQ(ShOk("ls"), "keep\n");
  EXPECT_NE(Sh("ls .schema/t 2>/dev/null"), 0);
  // And mkdir .schema/TABLE makes a table, so a .schema tree copies back.
  ShOk("mkdir .schema/t2 && touch .schema/t2/f");
  EXPECT_EQ(ShOk("ls"), "keep\nt2\n");
  Unmount();
  Mount();
  EXPECT_EQ(ShOk("ls"), "keep\nt2\n");
  EXPECT_EQ(ShOk("ls .schema/t2"), "f\n");
}

TEST_P(TreeCopyTest, UnknownFamilyLogNamesTheSchemaFileAndTheOption) {
  CreateTable("t", {"f"});
  MountLogged();
  std::string out;
  EXPECT_NE(Sh("mkdir -p t/r/fa 2>&1", &out), 0);
  EXPECT_NE(out.find("No such file or directory"), std::string::npos) << out;
  const std::string log = Log();
  EXPECT_NE(log.find("touch " + mnt() + "/.schema/t/fa"), std::string::npos)
      << log;
  EXPECT_NE(log.find("-o auto_families"), std::string::npos) << log;
}

TEST_P(TreeCopyTest, AutoFamiliesLetCpACopyATableTree) {
  const std::string src = tmp() + "/src";
  ASSERT_EQ(system(("mkdir -p " + src + "/t/r1/fa " + src + "/t/r1/fb " +
                    src + "/t/r2/fa && echo one > " + src +
                    "/t/r1/fa/q1 && echo two > " + src +
                    "/t/r1/fb/q2 && echo three > " + src + "/t/r2/fa/q3 && "
                    "touch -d 2026-01-01T00:00:00Z " + src + "/t/*/*/*")
                       .c_str()),
            0);
  MountLogged({"-o", "auto_families"});
  std::string out;
  ASSERT_EQ(Sh("cp -a " + src + "/t . 2>&1", &out), 0) << out << Log();
  EXPECT_EQ(Sh("diff -r " + src + "/t t"), 0);
  // The families are in the schema with default settings.
  EXPECT_EQ(ShOk("ls .schema/t"), "fa\nfb\n");
  EXPECT_NE(ShOk("cat .schema/t/fa").find("gcpolicy = never"),
            std::string::npos);
  EXPECT_NE(Log().find("auto_families"), std::string::npos);
  // Cell mtimes came along.
  struct stat st;
  ASSERT_EQ(stat(Path("t/r1/fa/q1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mtime, 1767225600);
}

TEST_P(TreeCopyTest, RefusalLogLinesNameThePath) {
  CreateTable("t", {"f"});
  MountLogged({"-o", "max_value_bytes=1000"});
  ShOk("mkdir -p t/r/f && echo v > t/r/f/q");
  const std::string cell = Path("t/r/f/q");
  EXPECT_EQ(setxattr(cell.c_str(), "user.x", "1", 1, 0), -1);
  EXPECT_EQ(errno, ENOTSUP);
  int fd = open(cell.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(fallocate(fd, 0, 0, 4096), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  close(fd);
  std::string out;
  EXPECT_NE(Sh("head -c 2000 /dev/zero > t/r/f/big 2>&1", &out), 0);
  const std::string log = Log();
  EXPECT_NE(log.find("setxattr /t/r/f/q"), std::string::npos) << log;
  EXPECT_NE(log.find("fallocate /t/r/f/q"), std::string::npos) << log;
  // EFBIG says the limit and the option that sets it.
  EXPECT_NE(log.find("at most 1000 bytes"), std::string::npos) << log;
  EXPECT_NE(log.find("-o max_value_bytes=N"), std::string::npos) << log;
}

TEST_F(TreeCopyEngineTest, HashedRowNamesCannotBeCopiedBackAndSaySo) {
  CreateTable("t", {"f"});
  CreateTable("t2", {"f"});
  const std::string long_key(300, 'k');
  {
    auto db = OpenDb();
    RowMutation m(long_key);
    m.SetCell("f", "q", "v");
    ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
  }
  MountLogged();
  const std::string listed = ShOk("ls t");
  ASSERT_NE(listed.find("%~"), std::string::npos) << listed;
  const std::string name = listed.substr(0, listed.size() - 1);
  // Out of the mount: fine.
  ASSERT_EQ(Sh("cp -a t/" + name + " " + tmp() + "/"), 0);
  // Back into another table: the key cannot come from the name.
  std::string out;
  EXPECT_NE(Sh("cp -a " + tmp() + "/" + name + " t2/ 2>&1", &out), 0);
  EXPECT_NE(out.find("File name too long"), std::string::npos) << out;
  EXPECT_EQ(ShOk("ls t2"), "");
  const std::string log = Log();
  EXPECT_NE(log.find("tabletctl export"), std::string::npos) << log;
  EXPECT_NE(log.find("tabletctl import"), std::string::npos) << log;
  // Into its own table the name resolves to the key: the copy works.
  EXPECT_EQ(Sh("cp -a " + tmp() + "/" + name + "/f/q t/" + name +
               "/f/q2"),
            0);
  EXPECT_EQ(ShOk("cat t/" + name + "/f/q2"), "v");
}

// Tables, rows and families have mtimes (issue 14 item 13; fs/dir_handle.h
// DirTimes): the one utimensat set while the directory's entries stay the
// same (rsync -a sets every directory's), else the newest commit time of
// its cells; the mount root keeps the one set for its tables as they are.
// So a second rsync itemizes no directory (it itemized `.d..t` for each on
// every run), and stat and ls -l agree.
TEST_F(TreeCopyEngineTest, DirectoryMtimesSurviveASecondRsync) {
  const std::string src = tmp() + "/src";
  ASSERT_EQ(system(("mkdir -p " + src + "/r1/fa " + src + "/r1/fb " + src +
                    "/r2/fa && echo one > " + src + "/r1/fa/q1 && echo two > " +
                    src + "/r1/fb/q2 && echo three > " + src +
                    "/r2/fa/q3 && touch -d @1700000000 " + src +
                    "/*/*/* && touch -d @1600000000 " + src + "/*/* " + src +
                    "/* " + src)
                       .c_str()),
            0);
  CreateTable("t", {"fa", "fb"});
  Mount();
  ShOk("rsync -a " + src + "/ t/");
  EXPECT_EQ(ShOk("rsync -ai " + src + "/ t/"), "");
  EXPECT_EQ(ShOk("stat -c %Y t t/r1 t/r1/fa t/r2/fa"),
            "1600000000\n1600000000\n1600000000\n1600000000\n");
  // ls -l (attributes from readdir) says what stat says.
  EXPECT_EQ(ShOk("ls -l --time-style=+%s t | awk 'NR>1{print $6}'"),
            "1600000000\n1600000000\n");
  EXPECT_EQ(ShOk("ls -l --time-style=+%s t/r1 | awk 'NR>1{print $6}'"),
            "1600000000\n1600000000\n");
  // A new cell changes the entries of its family, not of its row: the
  // family's mtime is now the new cell's commit time, as on a local disk.
  ShOk("echo four > t/r1/fa/q4");
  const std::string now = ShOk("stat -c %Y t/r1/fa/q4");
  EXPECT_EQ(ShOk("stat -c %Y t t/r1 t/r1/fa t/r1/fb"),
            "1600000000\n1600000000\n" + now + "1600000000\n");
  // Overwriting a file changes no directory's entries.
  ShOk("touch -d @1600000000 t/r1/fa");
  ShOk("echo five > t/r1/fa/q4");
  EXPECT_EQ(ShOk("stat -c %Y t/r1/fa"), "1600000000\n");
  // A row that no utimensat touched: its newest cell's commit time. They
  // survive a remount.
  ShOk("mkdir -p t/r3/fb && echo six > t/r3/fb/q");
  const std::string r3 = ShOk("stat -c %Y t/r3/fb/q");
  Unmount();
  Mount();
  EXPECT_EQ(ShOk("stat -c %Y t/r1 t/r1/fa t/r3 t/r3/fb"),
            "1600000000\n1600000000\n" + r3 + r3);
  EXPECT_EQ(ShOk("ls -l --time-style=+%s t | awk 'NR>1{print $6}'"),
            "1600000000\n1600000000\n" + r3);
  // A new row changes the table's entries: its newest commit time.
  EXPECT_EQ(ShOk("stat -c %Y t"), r3);

  // A tree of two new tables into the mount root: the second run itemizes
  // nothing, the root included.
  const std::string src2 = tmp() + "/src2";
  ASSERT_EQ(system(("mkdir -p " + src2 + "/u1/a/f " + src2 + "/u1/b/f " +
                    src2 + "/u2/c/g && echo 1 > " + src2 +
                    "/u1/a/f/q && echo 2 > " + src2 + "/u1/b/f/q && echo 3 > " +
                    src2 + "/u2/c/g/q && touch -d @1700000000 " + src2 +
                    "/*/*/*/* " + src2 + "/*/*/* " + src2 +
                    "/*/* && touch -d @1500000000 " + src2 +
                    "/u1 && touch -d @1500000001 " + src2 +
                    "/u2 && touch -d @1400000000 " + src2)
                       .c_str()),
            0);
  Unmount();
  Mount({"-o", "auto_families"});
  ShOk("rsync -a " + src2 + "/ ./");
  EXPECT_EQ(ShOk("rsync -ai " + src2 + "/ ./"), "");
  EXPECT_EQ(ShOk("stat -c %Y . u1 u2 u1/a"),
            "1400000000\n1500000000\n1500000001\n1700000000\n");
  EXPECT_EQ(ShOk("ls -l --time-style=+%s | awk 'NR>1{print $6}'"),
            r3 + "1500000000\n1500000001\n");
  Unmount();
  Mount({"-o", "auto_families"});
  EXPECT_EQ(ShOk("rsync -ai " + src2 + "/ ./"), "");
}

INSTANTIATE_TEST_SUITE_P(, TreeCopyTest, AllBackends(), StoreName);

}  // namespace
}  // namespace tabletfs::testing
