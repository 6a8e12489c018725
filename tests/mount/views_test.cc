// Real-mount tests of issue 5: `.versions`, `.at/T`, `.schema` content and
// access, `.tabletfs/stats`, and invalidation after changes the kernel did
// not see.
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

class ViewsTest : public MountFixture {
 protected:
  // r/f/q with versions at 1 s, 2 s, 3 s: "v1", "v2", "v3".
  void PutVersions() {
    CreateTable("t", {"f", "g"});
    auto db = OpenDb();
    for (int i = 1; i <= 3; i++) {
      RowMutation m("r");
      m.SetCell("f", "q", i * 1000000LL, "v" + std::to_string(i));
      ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
    }
    RowMutation m("r");
    m.SetCell("g", "late", 5000000, "L");
    ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
  }
};

TEST_F(ViewsTest, VersionsListEveryVersionNewestFirst) {
  PutVersions();
  Mount();
  EXPECT_EQ(ShOk("ls -f .versions/t/r/f | grep -v '^\\.'"),
            "q@3000000\nq@2000000\nq@1000000\n");
  EXPECT_EQ(ShOk("cat .versions/t/r/f/q@2000000"), "v2");
  EXPECT_EQ(ShOk("stat -c %Y .versions/t/r/f/q@1000000"), "1\n");
  EXPECT_EQ(ShOk("ls .versions"), "t\n");
  EXPECT_EQ(ShOk("ls .versions/t/r"), "f\ng\n");
  EXPECT_NE(Sh("cat .versions/t/r/f/q 2>/dev/null"), 0);
  // Versions never change; rm removes exactly one.
  EXPECT_NE(Sh("echo x > .versions/t/r/f/q@2000000 2>/dev/null"), 0);
  ShOk("cat t/r/f/q");  // the kernel caches q now
  ShOk("rm .versions/t/r/f/q@3000000");
  EXPECT_EQ(ShOk("ls .versions/t/r/f"), "q@1000000\nq@2000000\n");
  EXPECT_EQ(ShOk("cat t/r/f/q"), "v2");  // the main tree saw it at once
  EXPECT_EQ(ShOk("stat -c %Y t/r/f/q"), "2\n");
}

TEST_F(ViewsTest, AtShowsThePastReadOnly) {
  PutVersions();
  Mount();
  EXPECT_EQ(ShOk("ls .at"), "");
  EXPECT_EQ(ShOk("cat .at/1500000/t/r/f/q"), "v1");
  EXPECT_EQ(ShOk("cat .at/1970-01-01T00:00:02Z/t/r/f/q"), "v2");
  EXPECT_EQ(ShOk("cat .at/1970-01-01T00:00:02.5Z/t/r/f/q@1500000"), "v1");
  EXPECT_EQ(ShOk("ls .at/4000000/t/r"), "f\n");  // g's cell came at 5 s
  EXPECT_EQ(ShOk("ls .at/6000000/t/r"), "f\ng\n");
  EXPECT_NE(Sh("ls .at/500000/t/r 2>/dev/null"), 0);  // no row yet
  EXPECT_EQ(ShOk("ls .at/500000/t"), "");
  ShOk("diff -r .at/2000000/t .at/2000000/t");
  EXPECT_NE(Sh("diff -r .at/1000000/t .at/3000000/t > /dev/null"), 0);
  errno = 0;
  EXPECT_EQ(open(Path(".at/1500000/t/r/f/q").c_str(), O_WRONLY), -1);
  EXPECT_EQ(errno, EROFS);
  EXPECT_EQ(mkdir(Path(".at/1500000/t/new").c_str(), 0755), -1);
  EXPECT_EQ(errno, EROFS);
  EXPECT_EQ(unlink(Path(".at/1500000/t/r/f/q").c_str()), -1);
  EXPECT_EQ(errno, EROFS);
  EXPECT_NE(Sh("ls .at/yesterday 2>/dev/null"), 0);
  EXPECT_EQ(ShOk("ls -a | tr '\\n' ' '"), ". .. t ");
}

TEST_F(ViewsTest, AVersionWriteChangesTheCachedCell) {
  PutVersions();
  Mount();
  EXPECT_EQ(ShOk("cat t/r/f/q"), "v3");
  ShOk("printf v4 > t/r/f/q@4000000");
  EXPECT_EQ(ShOk("cat t/r/f/q"), "v4");
  EXPECT_EQ(ShOk("stat -c %Y t/r/f/q"), "4\n");
}

TEST_F(ViewsTest, SchemaContentChangesSettings) {
  PutVersions();
  Mount();
  EXPECT_EQ(ShOk("cat .schema/t/f"), "gcpolicy = never\ncompression = lz4\n");
  ShOk("echo 'gcpolicy = maxversions=1' > .schema/t/f");
  EXPECT_EQ(ShOk("cat .schema/t/f"),
            "gcpolicy = maxversions=1\ncompression = lz4\n");
  // Collected versions vanish from reads at once.
  EXPECT_EQ(ShOk("ls .versions/t/r/f"), "q@3000000\n");
  EXPECT_NE(Sh("cat t/r/f/q@2000000 2>/dev/null"), 0);
  // Invalid content: EINVAL from write(), nothing changes.
  EXPECT_NE(Sh("echo 'gcpolicy = sometimes' > .schema/t/f 2>/dev/null"), 0);
  EXPECT_NE(Sh("echo 'colour = blue' >> .schema/t/f 2>/dev/null"), 0);
  EXPECT_EQ(ShOk("cat .schema/t/f"),
            "gcpolicy = maxversions=1\ncompression = lz4\n");
  EXPECT_NE(Sh("mv .schema/t/f .schema/t/h 2>/dev/null"), 0);
  // rm drops the family and its data.
  ShOk("rm .schema/t/g");
  EXPECT_EQ(ShOk("ls .schema/t"), "f\n");
  EXPECT_EQ(ShOk("ls t/r"), "f\n");
}

TEST_F(ViewsTest, FamilyOwnerAndModeApplyEverywhere) {
  PutVersions();
  Mount({"-o", "allow_other"});
  struct passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  ShOk("chmod 600 .schema/t/f");
  EXPECT_EQ(ShOk("stat -c %a t/r/f/q t/r/f .versions/t/r/f/q@1000000 "
                 ".at/2000000/t/r/f/q"),
            "600\n700\n600\n600\n");
  auto as_nobody = [&](const std::string& path) {
    pid_t pid = fork();
    if (pid == 0) {
      if (setgid(nobody->pw_gid) != 0 || setuid(nobody->pw_uid) != 0) _exit(2);
      int fd = open(path.c_str(), O_RDONLY);
      _exit(fd >= 0 ? 0 : (errno == EACCES ? 1 : 3));
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WEXITSTATUS(status);
  };
  EXPECT_EQ(as_nobody(Path("t/r/g/late")), 0);  // g is still 0644
  EXPECT_EQ(as_nobody(Path("t/r/f/q")), 1);
  EXPECT_EQ(as_nobody(Path(".versions/t/r/f/q@1000000")), 1);
  EXPECT_EQ(as_nobody(Path(".at/2000000/t/r/f/q")), 1);
  ShOk("chown nobody .schema/t/f && chmod 644 .schema/t/f");
  EXPECT_EQ(ShOk("stat -c %U:%a t/r/f/q"), "nobody:644\n");
  EXPECT_EQ(as_nobody(Path("t/r/f/q")), 0);
}

TEST_F(ViewsTest, MaxageExpiryIsSeenWithoutACacheDelay) {
  CreateTable("t", {"f"});
  Mount();
  ShOk(
      "echo 'gcpolicy = maxage=1s' > .schema/t/f && mkdir -p t/r/f && "
      "echo v > t/r/f/q");
  EXPECT_EQ(ShOk("cat t/r/f/q"), "v\n");
  // Expires about a second after it was written; poll (bounded) for it.
  bool gone = false;
  for (int i = 0; i < 300 && !gone; i++) {
    gone = Sh("test -e t/r/f/q") != 0;
    if (!gone) usleep(10000);
  }
  EXPECT_TRUE(gone);
  EXPECT_NE(Sh("cat t/r/f/q 2>/dev/null"), 0);
  EXPECT_EQ(ShOk("ls .versions/t/r/f 2>/dev/null; true"), "");
}

TEST_F(ViewsTest, StatsFile) {
  CreateTable("t", {"f"});
  Mount();
  std::string stats = ShOk("cat .tabletfs/stats");
  EXPECT_NE(stats.find("memtable"), std::string::npos) << stats;
  EXPECT_EQ(ShOk("ls .tabletfs"), "stats\n");
  EXPECT_NE(Sh("echo x > .tabletfs/stats 2>/dev/null"), 0);
}

}  // namespace
}  // namespace tabletfs::testing
