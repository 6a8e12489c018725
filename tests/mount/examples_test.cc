// The programs and scripts in examples/ run to completion and build what
// they say: the paper's Webtable and HBase's customer table, through the
// API, through tabletctl and through the mount. The scripts mount and
// unmount by themselves (into fresh temporary directories).
#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace tabletfs::testing {
namespace {

struct CommandRun {
  int exit_code = -1;
  std::string output;
};

// Runs `command` under sh with the build's binaries first on PATH; stdout
// and stderr together.
CommandRun RunCommand(const std::string& command) {
  std::string full = "PATH=" TABLETFS_BIN_DIR
                     ":$PATH TABLETFS_BIN_DIR=" TABLETFS_BIN_DIR " " +
                     command + " 2>&1";
  CommandRun run;
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) {
    run.output.append(buf.data(), n);
  }
  int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

class ExamplesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tabletfs_examples_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf " + dir_;
    ASSERT_EQ(system(cmd.c_str()), 0);
  }
  std::string dir_;
};

TEST_F(ExamplesTest, WebtableThroughTheApi) {
  CommandRun built =
      RunCommand(std::string(TABLETFS_BIN_DIR) + "/webtable " + dir_);
  ASSERT_EQ(built.exit_code, 0) << built.output;
  CommandRun shown =
      RunCommand("tabletctl -d " + dir_ +
                 " lookup webtable com.cnn.www cells-per-column=3");
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  for (const char* want : {"v1</html>", "v2</html>", "v3</html>",
                           "anchor:cnnsi.com", "anchor:my.look.ca"}) {
    EXPECT_NE(shown.output.find(want), std::string::npos) << want;
  }
}

TEST_F(ExamplesTest, CustomerThroughTheApi) {
  CommandRun built =
      RunCommand(std::string(TABLETFS_BIN_DIR) + "/customer " + dir_);
  ASSERT_EQ(built.exit_code, 0) << built.output;
  CommandRun shown = RunCommand("tabletctl -d " + dir_ +
                                " lookup customer 00001 cells-per-column=2");
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_NE(shown.output.find("\"Timothy\""), std::string::npos);
  EXPECT_NE(shown.output.find("\"T\""), std::string::npos);
}

// Each script checks its own results and exits non-zero on any mismatch.
TEST_F(ExamplesTest, ScriptsThroughTabletctlAndTheMount) {
  for (const char* script : {"webtable_cli.sh", "customer_cli.sh",
                             "webtable_mount.sh", "customer_mount.sh"}) {
    std::string data = dir_ + "/" + script + ".data";
    std::string mnt = dir_ + "/" + script + ".mnt";
    ASSERT_EQ(mkdir(mnt.c_str(), 0755), 0);
    CommandRun run = RunCommand(std::string(TABLETFS_SOURCE_DIR) +
                                "/examples/" + script + " " + data + " " + mnt);
    EXPECT_EQ(run.exit_code, 0) << script << "\n" << run.output;
  }
}

}  // namespace
}  // namespace tabletfs::testing
