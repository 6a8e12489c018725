// tabletctl watch (mount/cli/watch.cc): on a store of its own it prints
// the `.changes` lines (fs/change_feed.h) of the writes through that store,
// in order; its refusals; and against Google's emulator, which has no
// change streams, a clear error. Through a live mount's socket, with
// writes from every door: ApiMountTest.TabletctlWatchShowsWritesFromEveryDoor.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fs/change_feed.h"
#include "mount/cli/commands.h"
#include "store/db.h"
#include "store/env/mem_env.h"
#include "tests/util/bigtable_server.h"

namespace tabletfs::cli {
namespace {

class CliWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.env = &env_;
    options_.space_reserve_bytes = 0;
    auto db = DB::Open(options_, "/data");
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    Run({"createtable", "t", "families=f"});
  }

  int Run(const Args& args, std::string* out = nullptr,
          std::string* err = nullptr) {
    std::ostringstream o, e;
    const int code = RunCommand(*db_, args, o, e);
    if (out != nullptr) *out = o.str();
    if (err != nullptr) *err = e.str();
    return code;
  }

  MemEnv env_;
  Options options_;
  std::unique_ptr<DB> db_;
};

// Writes through tabletctl's commands on the store watch opened: N lines,
// the feed's, in commit order. watch subscribes at some point during the
// writes; what it shows is a run of them without a gap.
TEST_F(CliWatchTest, PrintsTheFeedsLinesInCommitOrder) {
  std::ostringstream out, err;
  std::atomic<bool> done{false};
  int code = -1;
  std::thread watch([&] {
    code = Watch(*db_, {"t", "count=6"}, out, err);
    done = true;
  });
  int written = 0;
  for (; !done && written < 100000; written++) {
    const std::string n = std::to_string(written);
    if (written % 2 == 0) {
      ASSERT_EQ(Run({"set", "t", "r" + n, "f:q=v" + n + "@" + n}), kExitOk);
    } else {
      ASSERT_EQ(Run({"deleterow", "t", "r" + std::to_string(written - 1)}),
                kExitOk);
    }
    usleep(1000);
  }
  watch.join();
  ASSERT_EQ(code, kExitOk) << err.str();
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line + "\n");
  ASSERT_EQ(lines.size(), 6u) << out.str();
  // Which write came first: the row of the first line.
  const size_t at = lines[0].find("\"row\":\"r") + 8;
  int first = std::stoi(lines[0].substr(at));
  if (lines[0].find("\"kind\":\"delete-row\"") != std::string::npos) first++;
  for (int i = 0; i < 6; i++) {
    const int w = first + i;
    ChangeEvent e;
    e.table = "t";
    if (w % 2 == 0) {
      e.row = "r" + std::to_string(w);
      e.family = "f";
      e.qualifier = "q";
      e.timestamp = w;
      const std::string value = "v" + std::to_string(w);
      EXPECT_EQ(lines[i], fs::ChangeFeed::Line(e, &value));
    } else {
      // A delete carries its commit's server timestamp: not known here.
      e.row = "r" + std::to_string(w - 1);
      e.kind = ChangeKind::kDeleteRow;
      const std::string want = fs::ChangeFeed::Line(e, nullptr);
      EXPECT_EQ(lines[i].substr(0, lines[i].find("\"timestamp\"")),
                want.substr(0, want.find("\"timestamp\"")));
    }
  }
}

TEST_F(CliWatchTest, Refusals) {
  std::string err;
  EXPECT_EQ(Run({"watch"}, nullptr, &err), kExitUsage);
  EXPECT_NE(err.find("missing TABLE"), std::string::npos) << err;
  EXPECT_EQ(Run({"watch", "t", "count=0"}, nullptr, &err), kExitUsage);
  EXPECT_EQ(Run({"watch", "t", "every=1"}, nullptr, &err), kExitUsage);
  EXPECT_EQ(Run({"watch", "nope"}, nullptr, &err), kExitFailure);
  EXPECT_NE(err.find("nope"), std::string::npos) << err;
}

// Google's emulator serves no change streams (and crashes on
// ReadChangeStream): watch asks first, says so and exits; the emulator
// lives on.
TEST(CliWatchEmulatorTest, SaysTheServerStreamsNoChanges) {
  if (testing::EmulatorBinary().empty()) {
    GTEST_SKIP() << "cbtemulator is not installed (set CBTEMULATOR)";
  }
  char tmpl[] = "/tmp/tabletctl_watch_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  {
    testing::BigtableServer emulator(testing::BigtableServer::kEmulator,
                                     dir + "/data", dir + "/emulator.log");
    ASSERT_TRUE(emulator.Start()) << emulator.Log();
    const std::string ctl = std::string(TABLETFS_BIN_DIR) +
                            "/tabletctl -endpoint " + emulator.endpoint() +
                            " -project p -instance i ";
    ASSERT_EQ(system((ctl + "createtable t families=f").c_str()), 0);
    const int status =
        system((ctl + "watch t > " + dir + "/out 2> " + dir + "/err").c_str());
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), kExitFailure);
    std::ifstream in(dir + "/err");
    std::string err((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
    EXPECT_NE(err.find("tabletctl watch: "), std::string::npos) << err;
    EXPECT_NE(err.find("does not say it streams changes"), std::string::npos)
        << err;
    EXPECT_NE(err.find("ReadChangeStream"), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_EQ(system((ctl + "ls > /dev/null").c_str()), 0) << emulator.Log();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tabletfs::cli
