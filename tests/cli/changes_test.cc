// Change events (store/changes.h) from the CLI's door: tabletctl commands
// run on a store publish their changes like the C++ API does, interleaved
// in commit order.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "mount/cli/commands.h"
#include "store/db.h"
#include "store/env/mem_env.h"

namespace tabletfs::cli {
namespace {

std::string Show(const ChangeEvent& e) {
  return std::string(ChangeKindName(e.kind)) + " " + e.table + "/" + e.row +
         "/" + e.family + ":" + e.qualifier;
}

TEST(CliChangesTest, CommandsAndTheApiPublishInCommitOrder) {
  MemEnv env;
  Options options;
  options.env = &env;
  options.space_reserve_bytes = 0;
  auto db = DB::Open(options, "/data");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto sub = (*db)->Subscribe(SubscribeOptions());
  ASSERT_TRUE(sub.ok());

  auto run = [&](std::vector<std::string> args) {
    std::ostringstream out, err;
    EXPECT_EQ(RunCommand(**db, args, out, err), kExitOk)
        << args[0] << ": " << err.str();
  };
  run({"createtable", "t", "families=f,g"});
  run({"set", "t", "r1", "f:a=1", "g:b=2"});
  RowMutation m("r2");
  m.SetCell("f", "c", 7, "api");
  ASSERT_TRUE((*db)->Apply("t", m, WriteOptions()).ok());
  run({"deleterow", "t", "r1"});
  run({"deletefamily", "t", "g"});

  ChangeBatch b = (*sub)->Read(std::chrono::microseconds(0));
  EXPECT_EQ(b.lost, 0u);
  std::vector<std::string> shown;
  for (const ChangeEvent& e : b.events) shown.push_back(Show(e));
  EXPECT_EQ(shown,
            (std::vector<std::string>{
                "set-cell t/r1/f:a", "set-cell t/r1/g:b", "set-cell t/r2/f:c",
                "delete-row t/r1/:", "drop-family t//g:"}));
  ASSERT_EQ(b.events.size(), 5u);
  // One mutation, one server timestamp; later commits, later ones.
  EXPECT_EQ(b.events[0].timestamp, b.events[1].timestamp);
  EXPECT_EQ(b.events[2].timestamp, 7);
  EXPECT_GT(b.events[3].timestamp, b.events[1].timestamp);
}

}  // namespace
}  // namespace tabletfs::cli
