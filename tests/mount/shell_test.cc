// Real-mount tests: the daemon serves a temporary data directory and the
// real shell tools drive it (issue 4 "Tests").
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

class ShellFixture : public MountFixture {
 protected:
  // Table t with family f, mounted with `mount_args`, and the directories
  // t/r/f made through the mount.
  void MountTableWithRow(const std::vector<std::string>& mount_args = {}) {
    CreateTable("t", {"f"});
    Mount(mount_args);
    ShOk("mkdir -p t/r/f");
  }

  // Unmounts and returns every stored version of cell t/r/f/`qualifier`,
  // newest first, read through the API.
  std::vector<Cell> StoredVersions(const std::string& qualifier) {
    Unmount();
    auto db = OpenDb();
    if (db == nullptr) return {};
    ReadOptions ro;
    ro.max_versions = 0;
    auto cells = db->ReadCell("t", "r", "f", qualifier, ro);
    EXPECT_TRUE(cells.ok()) << cells.status().ToString();
    return cells.ok() ? *cells : std::vector<Cell>();
  }
};

// stat, ls -l, touch, `>` and rm of a large cell read none of its value:
// the size comes from the value's ref (Bigtable::StatCell), and an open
// for writing reads the bytes only when it writes. Before, each LOOKUP of
// a 64 MiB cell read all 64 MiB, an open after a lookup read them twice,
// and `touch` or `echo x > f` read them to throw them away. cat reads it.
TEST_F(ShellFixture, MetadataOfALargeCellReadsNoneOfItsValue) {
  MountTableWithRow();
  const std::string value(3u << 20, 'b');  // in a value file (over 256 KiB)
  WriteFile(Path("t/r/f/big"), value);
  Unmount();
  Mount();  // nothing cached in the kernel
  auto value_reads = [&] {
    std::istringstream in(ReadFile(Path(".tabletfs/stats")));
    std::string key;
    uint64_t n = 0;
    while (in >> key) {
      if (key == "value_reads" && in >> n) return n;
      in.ignore(1 << 20, '\n');
    }
    ADD_FAILURE() << "no value_reads in .tabletfs/stats";
    return n;
  };
  const uint64_t before = value_reads();
  EXPECT_EQ(ShOk("stat -c %s t/r/f/big"), "3145728\n");
  EXPECT_NE(ShOk("ls -l t/r/f").find("3145728 "), std::string::npos);
  ShOk("touch -m -d @1000000 t/r/f/big && test t/r/f/big -ot t/r/f");
  EXPECT_EQ(value_reads(), before);
  EXPECT_EQ(ShOk("cat t/r/f/big | wc -c"), "3145728\n");
  const uint64_t after_cat = value_reads();
  EXPECT_GT(after_cat, before);
  // A commit compares its bytes with the newest version's by the hash the
  // value's reference keeps: the same 3 MiB again add no version, other
  // bytes of the same size do, and neither reads the old value.
  auto versions = [&] {
    return ShOk("ls .versions/t/r/f | grep -c '^big@' || true");
  };
  EXPECT_EQ(versions(), "1\n");
  WriteFile(Path("t/r/f/big"), value);
  EXPECT_EQ(versions(), "1\n");
  WriteFile(Path("t/r/f/big"), std::string(3u << 20, 'c'));
  EXPECT_EQ(versions(), "2\n");
  EXPECT_EQ(value_reads(), after_cat);
  // A truncating open needs none of the old bytes either.
  ShOk("echo x > t/r/f/big");
  EXPECT_EQ(ReadFile(Path("t/r/f/big")), "x\n");
  ShOk("rm t/r/f/big");
  EXPECT_EQ(value_reads(), after_cat);
}

// The paper's Webtable, through the API.
void PutWebtable(DB* db) {
  ASSERT_TRUE(db->CreateTable("webtable").ok());
  ASSERT_TRUE(db->CreateFamily("webtable", "contents", FamilySettings()).ok());
  ASSERT_TRUE(db->CreateFamily("webtable", "anchor", FamilySettings()).ok());
  for (int64_t t : {3, 5, 6}) {
    RowMutation m("com.cnn.www");
    m.SetCell("contents", "", t * 1000000,
              "<html>v" + std::to_string(t) + "</html>");
    ASSERT_TRUE(db->Apply("webtable", m, WriteOptions()).ok());
  }
  RowMutation m("com.cnn.www");
  m.SetCell("anchor", "cnnsi.com", 9000000, "CNN");
  m.SetCell("anchor", "my.look.ca", 8000000, "CNN.com");
  ASSERT_TRUE(db->Apply("webtable", m, WriteOptions()).ok());
  RowMutation m2("com.example");
  m2.SetCell("contents", "", "<html>example</html>");
  ASSERT_TRUE(db->Apply("webtable", m2, WriteOptions()).ok());
}

// Run over the engine, the memory store and a remote Bigtable (the
// emulator and a tabletfs server): OverStores, AllBackends.
using ShellTest = OverStores<ShellFixture>;
// Tests that need the engine: the API before mounting, or a remount that
// finds the data again.
using ShellEngineTest = ShellFixture;

TEST_F(ShellEngineTest, ListsAndReadsWhatTheApiWrote) {
  {
    auto db = OpenDb();
    ASSERT_NE(db, nullptr);
    PutWebtable(db.get());
  }
  Mount();
  EXPECT_EQ(ShOk("ls"), "webtable\n");
  EXPECT_EQ(ShOk("ls webtable"), "com.cnn.www\ncom.example\n");
  EXPECT_EQ(ShOk("ls webtable/com.cnn.www"), "anchor\ncontents\n");
  EXPECT_EQ(ShOk("ls webtable/com.cnn.www/anchor"), "cnnsi.com\nmy.look.ca\n");
  EXPECT_EQ(ShOk("ls -A webtable/com.cnn.www/contents"), "%\n");
  EXPECT_EQ(ShOk("cat webtable/com.cnn.www/contents/%"), "<html>v6</html>");
  EXPECT_EQ(ShOk("cat webtable/com.cnn.www/contents/%@5000000"),
            "<html>v5</html>");
  EXPECT_EQ(ShOk("cat webtable/com.cnn.www/contents/%@1970-01-01T00:00:04Z"),
            "<html>v3</html>");
  EXPECT_NE(Sh("cat webtable/com.cnn.www/contents/%@2000000 2>/dev/null"), 0);
  EXPECT_EQ(ShOk("grep -r CNN . | sort"),
            "./webtable/com.cnn.www/anchor/cnnsi.com:CNN\n"
            "./webtable/com.cnn.www/anchor/my.look.ca:CNN.com\n");
  EXPECT_EQ(ShOk("find . -type f | wc -l"), "4\n");
  EXPECT_EQ(ShOk("find . -type d | wc -l"), "7\n");
  // The reserved names are reached by name only.
  EXPECT_EQ(ShOk("ls -a | tr '\\n' ' '"), ". .. webtable ");
  EXPECT_EQ(ShOk("ls .schema"), "webtable\n");
  EXPECT_EQ(ShOk("ls .schema/webtable"), "anchor\ncontents\n");

  struct stat st;
  ASSERT_EQ(stat(Path("webtable/com.cnn.www/anchor/cnnsi.com").c_str(), &st),
            0);
  EXPECT_EQ(st.st_size, 3);
  EXPECT_EQ(st.st_mtime, 9);
  EXPECT_EQ(st.st_blocks, 1);
  EXPECT_EQ(st.st_nlink, 1u);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ASSERT_EQ(stat(Path("webtable/com.cnn.www/anchor").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  EXPECT_EQ(st.st_nlink, 1u);
}

TEST_F(ShellEngineTest, FromAnEmptyMountToCells) {
  Mount();
  ShOk("mkdir t && touch .schema/t/f && mkdir -p t/r1/f");
  ShOk("echo hello > t/r1/f/q");
  EXPECT_EQ(ShOk("cat t/r1/f/q"), "hello\n");
  ShOk("echo world >> t/r1/f/q");
  EXPECT_EQ(ShOk("cat t/r1/f/q"), "hello\nworld\n");
  EXPECT_EQ(ShOk("stat -c %s t/r1/f/q"), "12\n");
  ShOk("echo new > t/r1/f/q");
  EXPECT_EQ(ShOk("cat t/r1/f/q"), "new\n");
  EXPECT_EQ(ShOk("ls -l t/r1/f | awk 'NR>1 {print $1, $5, $9}'"),
            "-rw-r--r-- 4 q\n");
  // Names that need encoding.
  ShOk("echo x > 't/r1/f/a%2Fb' && echo y > 't/r1/f/%'");
  EXPECT_EQ(ShOk("ls t/r1/f"), "%\na%2Fb\nq\n");
  EXPECT_NE(Sh("echo z > t/r1/f/%41 2>/dev/null"), 0);
  // Unmount and remount: everything is still there.
  Unmount();
  Mount();
  EXPECT_EQ(ShOk("cat t/r1/f/q t/r1/f/a%2Fb t/r1/f/%"), "new\nx\ny\n");
}

TEST_P(ShellTest, RefusalsCarryTheDesignedErrno) {
  MountTableWithRow();
  ShOk("echo v > t/r/f/q");
  auto err = [&](int rc) { return rc == 0 ? 0 : errno; };
  EXPECT_EQ(err(mkdir(Path("bad name").c_str(), 0755)), EINVAL);
  EXPECT_EQ(err(mkdir(Path("t/r/nofamily").c_str(), 0755)), ENOENT);
  EXPECT_EQ(err(mkdir(Path("t/r/f/d").c_str(), 0755)), EPERM);
  EXPECT_EQ(err(open(Path("t/file").c_str(), O_CREAT | O_WRONLY, 0644)), EPERM);
  EXPECT_EQ(err(open(Path("file").c_str(), O_CREAT | O_WRONLY, 0644)), EPERM);
  EXPECT_EQ(err(open(Path("t/r/file").c_str(), O_CREAT | O_WRONLY, 0644)),
            EPERM);
  EXPECT_EQ(err(symlink("q", Path("t/r/f/s").c_str())), EPERM);
  EXPECT_EQ(err(link(Path("t/r/f/q").c_str(), Path("t/r/f/l").c_str())), EPERM);
  EXPECT_EQ(err(mknod(Path("t/r/f/p").c_str(), S_IFIFO | 0644, 0)), EPERM);
  EXPECT_EQ(err(setxattr(Path("t/r/f/q").c_str(), "user.x", "1", 1, 0)),
            ENOTSUP);
  EXPECT_EQ(err(rmdir(Path("t").c_str())), ENOTEMPTY);
  EXPECT_EQ(err(rmdir(Path("t/r").c_str())), ENOTEMPTY);
  EXPECT_EQ(err(rename(Path("t/r").c_str(), Path("t/r2").c_str())), EPERM);
  EXPECT_EQ(err(rename(Path("t").c_str(), Path("u").c_str())), EPERM);
  EXPECT_EQ(err(unlink(Path("t/r/f/q@4102444800000000").c_str())), EPERM);
  EXPECT_EQ(err(open(Path("t/r/f/q@%zz").c_str(), O_RDONLY)), EINVAL);
  std::string future = "t/r/f/q@" + std::to_string(4102444800000000LL);
  EXPECT_EQ(err(open(Path(future).c_str(), O_CREAT | O_WRONLY, 0644)), EINVAL);
  std::string long_name(235, 'a');
  EXPECT_EQ(
      err(open(Path("t/r/f/" + long_name).c_str(), O_CREAT | O_WRONLY, 0644)),
      ENAMETOOLONG);
  int fd = open(Path("t/r/f/q").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(err(fallocate(fd, 0, 0, 100)), EOPNOTSUPP);
  close(fd);
  EXPECT_EQ(ShOk("cat t/r/f/q"), "v\n");
  EXPECT_EQ(ShOk("ls t/r/f"), "q\n");
}

TEST_P(ShellTest, RmMvAndDirectoriesBehaveAsOnALocalDisk) {
  CreateTable("t", {"f", "g"});
  Mount();
  ShOk("mkdir -p t/r/f t/r/g t/s/f && echo 1 > t/r/f/a && echo 2 > t/r/f/b");
  // mv within a row, also across families.
  ShOk("mv t/r/f/a t/r/f/c");
  EXPECT_EQ(ShOk("ls t/r/f"), "b\nc\n");
  ShOk("mv t/r/f/c t/r/g/c");
  EXPECT_EQ(ShOk("cat t/r/g/c"), "1\n");
  // mv -n onto an existing cell refuses (changes nothing).
  Sh("mv -n t/r/f/b t/r/g/c");
  EXPECT_EQ(ShOk("cat t/r/g/c t/r/f/b"), "1\n2\n");
  EXPECT_EQ(renameat2(AT_FDCWD, Path("t/r/f/b").c_str(), AT_FDCWD,
                      Path("t/r/g/c").c_str(), RENAME_NOREPLACE),
            -1);
  EXPECT_EQ(errno, EEXIST);
  EXPECT_EQ(renameat2(AT_FDCWD, Path("t/r/f/b").c_str(), AT_FDCWD,
                      Path("t/r/g/c").c_str(), RENAME_EXCHANGE),
            -1);
  EXPECT_EQ(errno, EINVAL);
  // Across rows: EXDEV, and mv copies instead.
  EXPECT_EQ(rename(Path("t/r/f/b").c_str(), Path("t/s/f/b").c_str()), -1);
  EXPECT_EQ(errno, EXDEV);
  ShOk("mv t/r/f/b t/s/f/b");
  EXPECT_EQ(ShOk("cat t/s/f/b"), "2\n");
  // The emptied family directory stays until rmdir.
  EXPECT_EQ(ShOk("ls t/r"), "f\ng\n");
  ShOk("rmdir t/r/f");
  EXPECT_EQ(ShOk("ls t/r"), "g\n");
  ShOk("rm -r t/r");
  EXPECT_EQ(ShOk("ls t"), "s\n");
  ShOk("rm -r t/s");
  EXPECT_EQ(ShOk("ls t"), "");
  ShOk("rmdir t");
  EXPECT_EQ(ShOk("ls"), "");
}

// A removed directory's inode is dead in the kernel, and the kernel keeps
// it while anything holds it: here a descriptor, in the CI failure that
// found this a RELEASEDIR still in flight (`rm -rf t/r && mkdir -p t/r`,
// then rsync's mkdir of t/r/f failed with ENOENT). A directory made again
// under the name is a new one that takes new entries.
TEST_P(ShellTest, ADirectoryMadeAgainAfterRmdirTakesNewEntries) {
  CreateTable("t", {"f"});
  CreateTable("u", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f u/r && echo 1 > t/r/f/a");
  struct Case {
    const char* dir;     // removed while a descriptor holds it
    const char* remake;  // makes it again
    const char* fill;    // then creates something inside
  };
  for (const Case& c :
       {Case{"t/r", "mkdir t/r", "mkdir t/r/f && echo 2 > t/r/f/b"},
        Case{"t/r/f", "mkdir t/r/f", "echo 3 > t/r/f/c"},
        Case{"u", "mkdir u", "mkdir u/r"}}) {
    SCOPED_TRACE(c.dir);
    int fd = open(Path(c.dir).c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(fd, 0) << strerror(errno);
    ShOk(std::string("rm -rf ") + c.dir + " && " + c.remake);
    EXPECT_EQ(Sh(c.fill), 0);
    close(fd);
  }
  EXPECT_EQ(ShOk("ls t/r/f && ls u"), "c\nr\n");
}

TEST_F(ShellEngineTest, RowMadeByMkdirIsGoneAfterRemount) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir t/empty && mkdir -p t/full/f && echo x > t/full/f/q");
  EXPECT_EQ(ShOk("ls t"), "empty\nfull\n");
  Unmount();
  Mount();
  EXPECT_EQ(ShOk("ls t"), "full\n");
}

TEST_P(ShellTest, DdWithSeeksAndTruncate) {
  MountTableWithRow();
  ShOk("printf 0123456789 > t/r/f/q");
  ShOk("printf AB | dd of=t/r/f/q bs=1 seek=3 conv=notrunc status=none");
  EXPECT_EQ(ShOk("cat t/r/f/q"), "012AB56789");
  ShOk("printf Z | dd of=t/r/f/q bs=1 seek=12 conv=notrunc status=none");
  EXPECT_EQ(ReadFile(Path("t/r/f/q")), std::string("012AB56789\0\0Z", 13));
  EXPECT_EQ(ShOk("dd if=t/r/f/q bs=1 skip=3 count=2 status=none"), "AB");
  ShOk("truncate -s 4 t/r/f/q");
  EXPECT_EQ(ShOk("cat t/r/f/q"), "012A");
  // Random writes, truncate and read-back through one handle.
  int fd = open(Path("t/r/f/q").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, "xy", 2, 1), 2);
  ASSERT_EQ(ftruncate(fd, 3), 0);
  char buf[16] = {};
  ASSERT_EQ(pread(fd, buf, sizeof(buf), 0), 3);
  EXPECT_EQ(std::string(buf, 3), "0xy");
  ASSERT_EQ(close(fd), 0);
  EXPECT_EQ(ShOk("cat t/r/f/q"), "0xy");
}

TEST_F(ShellEngineTest, TouchAndTruncateMakeEmptyCellsThatSurviveRemount) {
  MountTableWithRow();
  ShOk("touch t/r/f/a && : > t/r/f/b");
  EXPECT_EQ(ShOk("ls t/r/f"), "a\nb\n");
  Unmount();
  Mount();
  EXPECT_EQ(ShOk("ls t/r/f"), "a\nb\n");
  EXPECT_EQ(ShOk("stat -c %s t/r/f/a t/r/f/b"), "0\n0\n");
}

TEST_F(ShellEngineTest, TouchOfAnExistingCellMakesNoNewVersion) {
  CreateTable("t", {"f"});
  {
    auto db = OpenDb();
    RowMutation m("r");
    m.SetCell("f", "q", 1000000, "old");
    m.SetCell("f", "q", 2000000, "new");
    ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
  }
  Mount();
  // The mtime is the file's, apart from the version timestamps: any time,
  // older than the version before it too, and nothing is re-stamped.
  ShOk("touch -d @100 t/r/f/q");
  EXPECT_EQ(ShOk("stat -c %Y t/r/f/q"), "100\n");
  ShOk("touch -d @1 t/r/f/q");
  EXPECT_EQ(ShOk("stat -c %Y t/r/f/q"), "1\n");
  ShOk("chmod 600 t/r/f/q && chown nobody t/r/f/q");  // succeed, no effect
  EXPECT_EQ(ShOk("stat -c %a t/r/f/q"), "644\n");
  EXPECT_EQ(ShOk("ls .versions/t/r/f"), "q@1000000\nq@2000000\n");
  std::vector<Cell> cells = StoredVersions("q");
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].timestamp, 2000000);
  EXPECT_EQ(cells[0].value, "new");
}

TEST_P(ShellTest, VersionNamesWriteExactTimestamps) {
  MountTableWithRow();
  ShOk("echo now > t/r/f/q && echo old > t/r/f/q@1000000");
  EXPECT_EQ(ShOk("cat t/r/f/q@1000000"), "old\n");
  EXPECT_EQ(ShOk("cat t/r/f/q@1970-01-01T00:00:01.5Z"), "old\n");
  EXPECT_EQ(ShOk("cat t/r/f/q"), "now\n");
  EXPECT_EQ(ShOk("ls t/r/f"), "q\n");
  EXPECT_EQ(ShOk("stat -c %Y t/r/f/q@1000000"), "1\n");
}

TEST_F(ShellEngineTest, RedirectsOntoNewFilesMakeOneVersion) {
  MountTableWithRow();
  ShOk("echo a > t/r/f/w && echo b >> t/r/f/x");
  for (const char* q : {"w", "x"}) {
    EXPECT_EQ(StoredVersions(q).size(), 1u) << q;
  }
}

TEST_F(ShellEngineTest, SedInPlaceKeepsHistory) {
  MountTableWithRow();
  ShOk("echo aaa > t/r/f/q && sed -i s/a/b/ t/r/f/q");
  EXPECT_EQ(ShOk("cat t/r/f/q"), "baa\n");
  std::vector<Cell> cells = StoredVersions("q");
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[1].value, "aaa\n");
}

TEST_P(ShellTest, FsyncStatfsAndDf) {
  MountTableWithRow();
  ShOk("printf abc | dd of=t/r/f/q conv=fsync status=none");
  ShOk("sync t/r/f/q && sync t/r/f");  // fsync and fsyncdir
  EXPECT_EQ(ShOk("cat t/r/f/q"), "abc");
  EXPECT_EQ(ShOk("stat -f -c %l ."), "255\n");
  // df shows the data directory's filesystem; a remote mount has none
  // (README "Mounting a remote Bigtable": a fixed 1 PiB free).
  if (!remote()) {
    EXPECT_EQ(ShOk("stat -f -c %b ."), ShOk("stat -f -c %b " + datadir()));
  }
  ShOk("df . > /dev/null");
}

TEST_F(ShellEngineTest, EarlyErrorsComeFromWrite) {
  MountTableWithRow({"-o", "max_value_bytes=1000"});
  ShOk("echo small > t/r/f/q");
  int fd = open(Path("t/r/f/q").c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  std::string big(2000, 'x');
  errno = 0;
  EXPECT_EQ(write(fd, big.data(), big.size()), -1);
  EXPECT_EQ(errno, EFBIG);
  close(fd);
  // A handle whose write was refused commits nothing.
  EXPECT_EQ(ShOk("cat t/r/f/q"), "small\n");
  Unmount();
  // A reserve larger than any disk: every write is ENOSPC.
  Mount({"-o", "space_reserve_bytes=1000000000000000000"});
  fd = open(Path("t/r/f/q").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  errno = 0;
  EXPECT_EQ(write(fd, "x", 1), -1);
  EXPECT_EQ(errno, ENOSPC);
  close(fd);
  EXPECT_EQ(ShOk("cat t/r/f/q"), "small\n");
  // Deletes still work below the reserve.
  ShOk("rm t/r/f/q");
}

INSTANTIATE_TEST_SUITE_P(, ShellTest, AllBackends(), StoreName);

}  // namespace
}  // namespace tabletfs::testing
