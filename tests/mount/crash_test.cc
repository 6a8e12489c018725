// Durability through the mount: a closed file survives a crash (SIGKILL) of
// the daemon.
#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

class CrashTest : public MountFixture {};

TEST_F(CrashTest, SigkillRightAfterCloseKeepsEveryClosedFile) {
  CreateTable("t", {"f"});
  for (int round = 0; round < 10; round++) {
    Mount();
    ASSERT_EQ(Sh("mkdir -p t/r/f"), 0);
    std::string name = Path("t/r/f/q" + std::to_string(round));
    std::string content = "round " + std::to_string(round) + "\n";
    int fd = open(name.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, content.data(), content.size()),
              static_cast<ssize_t>(content.size()));
    ASSERT_EQ(close(fd), 0);
    KillDaemon();  // no pause between close() and the kill
  }
  Mount();
  for (int round = 0; round < 10; round++) {
    EXPECT_EQ(ReadFile(Path("t/r/f/q" + std::to_string(round))),
              "round " + std::to_string(round) + "\n");
  }
}

TEST_F(CrashTest, SigkillAfterABatchOfCloses) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && for i in $(seq 1 100); do echo $i > t/r/f/c$i; done");
  KillDaemon();
  Mount();
  EXPECT_EQ(ShOk("ls t/r/f | wc -l"), "100\n");
  EXPECT_EQ(ShOk("cat t/r/f/c77"), "77\n");
}

}  // namespace
}  // namespace tabletfs::testing
