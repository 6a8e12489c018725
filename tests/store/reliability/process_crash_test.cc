// A process that dies without closing its database (a crash, kill -9), on
// a real directory: the POSIX Env writes commit logs through a mapping of
// space allocated ahead (Env::NewLogFile), so the dead process's logs end
// in zeros rather than at their last record. Every write it had
// acknowledged is there after reopening, and a clean close leaves no
// zeros.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "store/db.h"
#include "store/env.h"

namespace tabletfs {
namespace {

constexpr int kRows = 4000;

std::string Row(int i) { return "row" + std::to_string(i); }
std::string Value(int i) {
  return std::to_string(i) +
         std::string(static_cast<size_t>(400 + i % 300), 'v');
}

Options SmallLogs() {
  Options o;
  o.space_reserve_bytes = 0;
  // Logs of 1 MiB, so the child switches logs (and makes spares) often.
  o.memtable_bytes = 1 << 20;
  return o;
}

class ProcessCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = getenv("TMPDIR");
    std::string templ = std::string(tmp != nullptr ? tmp : "/tmp") +
                        "/process_crash_test.XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override {
    auto children = env_->GetChildren(dir_);
    if (children.ok()) {
      for (const std::string& name : *children) {
        env_->RemoveFile(dir_ + "/" + name).IgnoreError();
      }
    }
    env_->RemoveDir(dir_).IgnoreError();
  }

  // Names of the logs that end in 64 zero bytes: the allocated rest (a
  // record here ends with a value's bytes).
  std::vector<std::string> LogsEndingInZeros() {
    std::vector<std::string> logs;
    auto children = env_->GetChildren(dir_);
    EXPECT_TRUE(children.ok());
    if (!children.ok()) return logs;
    for (const std::string& name : *children) {
      if (!name.ends_with(".log")) continue;
      auto data = ReadFileToString(env_, dir_ + "/" + name);
      EXPECT_TRUE(data.ok());
      if (data.ok() && data->size() >= 64 &&
          data->find_first_not_of('\0', data->size() - 64) ==
              std::string::npos) {
        logs.push_back(name);
      }
    }
    return logs;
  }

  Env* env_ = Env::Default();
  std::string dir_;
};

TEST_F(ProcessCrashTest, EveryAcknowledgedWriteSurvivesAProcessThatDies) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto db = DB::Open(SmallLogs(), dir_);
    if (!db.ok()) _exit(10);
    if (!(*db)->CreateTable("t").ok()) _exit(11);
    if (!(*db)->CreateFamily("t", "f", FamilySettings()).ok()) _exit(12);
    for (int i = 0; i < kRows; ++i) {
      RowMutation m(Row(i));
      m.SetCell("f", "q", 1, Value(i));
      if (!(*db)->Apply("t", m, WriteOptions()).ok()) _exit(13);
    }
    _exit(0);  // no close, no sync: as a crash of the process
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus));
  ASSERT_EQ(WEXITSTATUS(wstatus), 0);
  // The test is about logs left with their allocated rest.
  EXPECT_FALSE(LogsEndingInZeros().empty());

  {
    auto db = DB::Open(SmallLogs(), dir_);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    for (int i = 0; i < kRows; ++i) {
      auto row = (*db)->ReadRow("t", Row(i), ReadOptions());
      ASSERT_TRUE(row.ok()) << row.status().ToString();
      ASSERT_EQ(row->cells.size(), 1u) << Row(i);
      ASSERT_EQ(row->cells[0].value, Value(i)) << Row(i);
    }
  }
  EXPECT_EQ(LogsEndingInZeros(), std::vector<std::string>());
  auto db = DB::Open(SmallLogs(), dir_);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto row = (*db)->ReadRow("t", Row(kRows - 1), ReadOptions());
  ASSERT_TRUE(row.ok()) << row.status().ToString();
  ASSERT_EQ(row->cells.size(), 1u);
  EXPECT_EQ(row->cells[0].value, Value(kRows - 1));
}

}  // namespace
}  // namespace tabletfs
