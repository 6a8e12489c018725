// Round trips of a remote mount (issue 19): the RPCs one shell operation
// sends, counted by the mount's `.tabletfs/stats` (api/remote_bigtable.h),
// against a `tabletfs --serve` daemon and Google's emulator on loopback
// (started by MountFixture, tests/util/bigtable_server.h).
// With the directories in the kernel's cache (entry and attribute timeouts
// of 30 s here) and the client's read cache expired (0.1 s): a `cat` of a
// cell is one ReadRows, the listing of a table one streamed ReadRows
// however many rows and readdir calls it takes (with the getattr of the
// table the kernel sends beside it), and a written cell one MutateRow at
// close. Needs
// root (FUSE); the emulator's half is skipped where it is not installed.
#include <chrono>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

using Counters = std::map<std::string, uint64_t>;

// The server (MountFixture starts it), mounted with long kernel caches,
// and the table t with family f.
class RemoteRpcsFixture : public MountFixture {
 protected:
  void SetUp() override {
    MountFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    Mount({"-o", "attr_timeout=30,entry_timeout=30"});
    ShOk("mkdir t && touch .schema/t/f && mkdir -p t/r/f");
  }

  // The counters of `.tabletfs/stats` (reading it sends no RPC).
  Counters Stats() {
    Counters out;
    std::istringstream in(ReadFile(Path(".tabletfs/stats")));
    std::string key, value;
    while (in >> key >> value) {
      if (value.find_first_not_of("0123456789") == std::string::npos) {
        out[key] = std::stoull(value);
      }
    }
    return out;
  }

  // The RPCs `command` sends, by RPC ("ReadRows" ...) and in all ("rpcs"),
  // once the client's read cache (0.1 s) has expired; the kernel's caches
  // (30 s) hold what an earlier command looked up.
  Counters Rpcs(const std::string& command) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    Counters before = Stats();
    ShOk(command);
    Counters out;
    for (const auto& [key, n] : Stats()) {
      const uint64_t d = n - before[key];
      if (key == "rpcs") {
        out[key] = d;
      } else if (key.ends_with("_rpcs") && d != 0) {
        out[key.substr(0, key.size() - 5)] = d;
      }
    }
    return out;
  }

  static std::string Show(const Counters& c) {
    std::string s;
    for (const auto& [k, v] : c) s += k + "=" + std::to_string(v) + " ";
    return s;
  }
};

using RemoteRpcsTest = OverStores<RemoteRpcsFixture>;

TEST_P(RemoteRpcsTest, CatOfACellIsOneReadRows) {
  ShOk("printf hello > t/r/f/q && printf other > t/r/f/p");
  EXPECT_EQ(ShOk("cat t/r/f/q"), "hello");  // the kernel learns the names
  // LOOKUP, OPEN, GETATTR and READ: the open's read, nothing else (and
  // the table's families, when the client's copy is older than its 1 s).
  Counters c = Rpcs("cat t/r/f/q");
  EXPECT_EQ(c["ReadRows"], 1u) << Show(c);
  EXPECT_LE(c["GetTable"], 1u) << Show(c);
  EXPECT_EQ(c["rpcs"], c["ReadRows"] + c["GetTable"]) << Show(c);
  // A cell the kernel has not looked up: its LOOKUP reads it, the OPEN
  // right after is served from that.
  c = Rpcs("cat t/r/f/p");
  EXPECT_EQ(c["ReadRows"], 1u) << Show(c);
  EXPECT_EQ(c["rpcs"], c["ReadRows"] + c["GetTable"]) << Show(c);
  EXPECT_EQ(ShOk("cat t/r/f/p"), "other");
}

TEST_P(RemoteRpcsTest, LsOfATableIsOneStreamedReadRows) {
  // More rows than one READDIRPLUS reply holds (about 25 of these): a
  // dozen readdir calls, one stream (row keys and timestamps, strip-value
  // filter).
  ShOk(
      "for i in $(seq 100 399); do mkdir -p t/r$i/f && echo x > t/r$i/f/q; "
      "done");
  EXPECT_EQ(ShOk("ls t | wc -l"), "301\n");
  for (const char* ls : {"ls t > /dev/null", "ls -l t > /dev/null"}) {
    // The kernel asks for t's attributes between OPENDIR and the first
    // READDIRPLUS (a readdir changed t's atime): the table's mtime, from
    // its first rows, opens the stream that the listing then takes over
    // (api/remote_bigtable.cc ParkedStreams). Its families may have left
    // the client's cache (1 s) meanwhile: then one GetTable.
    Counters c = Rpcs(ls);
    EXPECT_EQ(c["ReadRows"], 1u) << ls << ": " << Show(c);
    EXPECT_LE(c["GetTable"], 1u) << ls << ": " << Show(c);
    EXPECT_EQ(c["rpcs"], c["ReadRows"] + c["GetTable"])
        << ls << ": " << Show(c);
  }
}

TEST_P(RemoteRpcsTest, AWrittenCellIsOneMutateRowAtClose) {
  ShOk("printf one > t/r/f/q && ls t/r/f > /dev/null");
  // A cell the kernel knows: the open reads it, the close writes it.
  Counters c = Rpcs("printf two > t/r/f/q");
  EXPECT_EQ(c["MutateRow"], 1u) << Show(c);
  EXPECT_LE(c["rpcs"] - c["GetTable"], 2u) << Show(c);
  // A new cell: its LOOKUP finds nothing, the close writes it.
  c = Rpcs("printf new > t/r/f/n");
  EXPECT_EQ(c["MutateRow"], 1u) << Show(c);
  EXPECT_LE(c["rpcs"] - c["GetTable"], 2u) << Show(c);
  // Written through this client: read back at once, whatever the caches.
  EXPECT_EQ(ShOk("cat t/r/f/q t/r/f/n"), "twonew");
}

// The stats file itself: what the client sent, per RPC, and no RPC to
// read it.
TEST_P(RemoteRpcsTest, StatsShowCountsLatenciesBytesAndErrors) {
  ShOk("printf v > t/r/f/q && cat t/r/f/q");
  std::string text = ReadFile(Path(".tabletfs/stats"));
  EXPECT_EQ(text.rfind("store remote\nendpoint 127.0.0.1:", 0), 0u) << text;
  Counters s = Stats();
  EXPECT_GT(s["rpcs"], 0u) << text;
  EXPECT_GT(s["MutateRow_rpcs"], 0u) << text;
  EXPECT_GT(s["MutateRow_bytes_sent"], 0u) << text;
  EXPECT_GT(s["ReadRows_bytes_received"], 0u) << text;
  EXPECT_GT(s["ReadRows_latency_p50_us"], 0u) << text;
  EXPECT_GE(s["ReadRows_latency_p99_us"], s["ReadRows_latency_p50_us"]) << text;
  EXPECT_GE(s["ReadRows_latency_max_us"], s["ReadRows_latency_p99_us"]) << text;
  // `mkdir t` asked for the table first: NOT_FOUND, counted by code.
  EXPECT_GE(s["errors_NOT_FOUND"], 1u) << text;
  EXPECT_EQ(s["rpc_errors"], s["errors_NOT_FOUND"]) << text;
  EXPECT_EQ(Stats()["rpcs"], s["rpcs"]) << "reading the stats sent an RPC";
}

INSTANTIATE_TEST_SUITE_P(, RemoteRpcsTest, RemoteBackends(), StoreName);

}  // namespace
}  // namespace tabletfs::testing
