// `.changes/TABLE` (issue 21, fs/change_feed.h): the kinds of change and how
// each is written, values cut above 64 KiB or in base64, a reader that
// stops reading (writers go on; it is told with EIO once its bytes left the
// feed's 8 MiB window), a feed that starts at a time in the past
// (`.changes/TABLE@T`), and the refusals. The doors and their order:
// ApiMountTest.ChangeFeedShowsWritesFromEveryDoorInOrder. Needs root (FUSE).
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "fs/timestamp.h"
#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

class ChangeFeedTest : public MountFixture {};

TEST_F(ChangeFeedTest, EveryKindOfChangeIsALine) {
  CreateTable("t", {"f", "g"});
  Mount();
  ShOk(
      "mkdir -p t/r/f t/r/g t/s/f && printf old > t/r/f/q && "
      "printf keep > t/r/g/k && printf s > t/s/f/x");
  std::string older = ShOk("ls .versions/t/r/f");
  older.pop_back();
  int fd = open(Path(".changes/t").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0) << strerror(errno);
  ShOk("printf new > t/r/f/q");                              // set
  ShOk("rm .versions/t/r/f/" + older);                       // delete-version
  ShOk("printf '\\377\\001' > t/r/f/bin");                   // set, not UTF-8
  ShOk("rm t/r/f/bin");                                      // delete-cell
  ShOk("head -c 70000 /dev/zero | tr '\\0' v > t/r/f/big");  // set, cut
  ShOk("rm -r t/s");       // the row's cells go
  ShOk("rm .schema/t/g");  // drop-family
  std::vector<std::string> lines = FollowLines(fd, 7);
  close(fd);
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(Untimed(lines[0]),
            "{\"kind\":\"set\",\"row\":\"r\",\"family\":\"f\","
            "\"qualifier\":\"q\",\"value\":\"new\"}");
  EXPECT_EQ(Untimed(lines[1]),
            "{\"kind\":\"delete-version\",\"row\":\"r\",\"family\":\"f\","
            "\"qualifier\":\"q\"}");
  EXPECT_NE(lines[1].find(",\"timestamp\":" + older.substr(2) + "}"),
            std::string::npos)
      << lines[1] << " " << older;
  EXPECT_EQ(Untimed(lines[2]),
            "{\"kind\":\"set\",\"row\":\"r\",\"family\":\"f\","
            "\"qualifier\":\"bin\",\"value_base64\":\"/wE=\"}");
  EXPECT_EQ(Untimed(lines[3]),
            "{\"kind\":\"delete-cell\",\"row\":\"r\",\"family\":\"f\","
            "\"qualifier\":\"bin\"}");
  // (Compared as a bool: a failure would print 64 KiB.)
  EXPECT_TRUE(Untimed(lines[4]) ==
              "{\"kind\":\"set\",\"row\":\"r\",\"family\":\"f\","
              "\"qualifier\":\"big\",\"value\":\"" +
                  std::string(65536, 'v') +
                  "\",\"value_size\":70000,\"value_cut\":true}")
      << Untimed(lines[4]).substr(0, 200);
  EXPECT_EQ(Untimed(lines[5]),
            "{\"kind\":\"delete-cell\",\"row\":\"s\",\"family\":\"f\","
            "\"qualifier\":\"x\"}");
  EXPECT_EQ(Untimed(lines[6]), "{\"kind\":\"drop-family\",\"family\":\"g\"}");
}

// A reader that stops reading never holds writers up: the feed keeps its
// last 8 MiB; bytes older than that are gone for the reader (EIO, and the
// log says why), what is newer it reads on.
TEST_F(ChangeFeedTest, AReaderThatStopsFallsOutOfTheWindow) {
  CreateTable("t", {"f"});
  ASSERT_EQ(TryMountForeground({}, {}, daemon_log()), 0);
  ShOk("mkdir -p t/r/f");
  int fd = open(Path(".changes/t").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  // 13 MB of lines (values of 4,000 bytes), read by nobody.
  ShOk(
      "v=$(head -c 4000 /dev/zero | tr '\\0' x); for i in $(seq 3300); do "
      "printf %s \"$v\" > t/r/f/q$i; done");
  struct stat st;
  for (int i = 0; i < 2000; i++) {  // 20 s: the feed may lag under ASan
    ASSERT_EQ(fstat(fd, &st), 0);
    if (st.st_size > (12 << 20)) break;
    usleep(10000);
  }
  ASSERT_GT(st.st_size, 12 << 20);
  char buf[4096];
  errno = 0;
  EXPECT_EQ(pread(fd, buf, sizeof(buf), 0), -1);
  EXPECT_EQ(errno, EIO);
  // The newest lines are there (the feed may still be growing: the text
  // always ends with a whole line, so the last 100 bytes of a size it
  // had end one).
  const off_t tail = st.st_size - 100;
  ssize_t n = pread(fd, buf, 100, tail);
  ASSERT_EQ(n, 100);
  EXPECT_EQ(std::string(buf + n - 2, 2), "}\n");
  close(fd);
  EXPECT_NE(ReadFile(daemon_log()).find("fell"), std::string::npos);
  // Every write landed.
  EXPECT_EQ(ShOk("ls t/r/f | wc -l"), "3300\n");
}

TEST_F(ChangeFeedTest, Refusals) {
  CreateTable("t", {"f"});
  Mount();
  std::string out;
  EXPECT_NE(Sh("cat .changes/nosuch 2>&1", &out), 0);
  EXPECT_NE(out.find("No such file or directory"), std::string::npos) << out;
  EXPECT_NE(Sh("(printf x > .changes/t) 2>&1", &out), 0);
  EXPECT_NE(out.find("Read-only file system"), std::string::npos) << out;
  EXPECT_NE(Sh("ls .changes/t/x 2>&1", &out), 0);
  EXPECT_NE(out.find("Not a directory"), std::string::npos) << out;
  EXPECT_EQ(ShOk("ls -A .changes; ls -A | grep -c changes || true"), "0\n");
  // Nobody reading: an empty file.
  EXPECT_EQ(ShOk("stat -c '%s %F' .changes/t"), "0 regular empty file\n");
}

// On a remote mount the feed reads the server's ReadChangeStream
// (api/remote_bigtable.h): a tabletfs server's shows the changes as a
// local feed does, and its end is the feed's last line; Google's emulator
// has no change streams (ENOTSUP).
class ChangeFeedRemoteTest : public OverStores<ChangeFeedTest> {};

TEST_P(ChangeFeedRemoteTest, ReadsTheServersChangeStream) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");
  int fd = open(Path(".changes/t").c_str(), O_RDONLY);
  if (store() == MountStore::kEmulator) {
    EXPECT_EQ(fd, -1);
    EXPECT_EQ(errno, ENOTSUP);
    return;
  }
  ASSERT_GE(fd, 0) << strerror(errno);
  ShOk("printf one > t/r/f/a");
  std::vector<std::string> lines = FollowLines(fd, 1);
  ShOk("rm t/r/f/a");
  lines = FollowLines(fd, 2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(Untimed(lines[0]),
            "{\"kind\":\"set\",\"row\":\"r\",\"family\":\"f\","
            "\"qualifier\":\"a\",\"value\":\"one\"}");
  EXPECT_EQ(Untimed(lines[1]),
            "{\"kind\":\"delete-cell\",\"row\":\"r\",\"family\":\"f\","
            "\"qualifier\":\"a\"}");
  server()->Stop();
  lines = FollowLines(fd, 3);
  close(fd);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(lines[2].starts_with("{\"error\":\"")) << lines[2];
  EXPECT_NE(lines[2].find("ReadChangeStream"), std::string::npos) << lines[2];
}

INSTANTIATE_TEST_SUITE_P(, ChangeFeedRemoteTest,
                         ::testing::Values(MountStore::kEmulator,
                                           MountStore::kServer),
                         StoreName);

// `.changes/TABLE@T` starts with what was committed since T, the writes of
// an earlier session (from the log recovered at mount) and of this one, in
// commit order, then goes on live; every reader of one TABLE@T name reads
// the same text.
TEST_F(ChangeFeedTest, AFeedAtTStartsWithThePastThenGoesOnLive) {
  const int64_t before =
      std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  CreateTable("t", {"f"});
  // Before the mount, at a version timestamp long past: the feed goes by
  // commit time.
  PutCells("t", {{"r", "f", "a", 5, "one"}});
  Mount();
  ShOk("printf two > t/r/f/b && printf three > t/r/f/c");
  const std::string name = ".changes/t@" + fs::FormatIso8601(before);
  int fd = open(Path(name).c_str(), O_RDONLY);
  ASSERT_GE(fd, 0) << name << ": " << strerror(errno);
  ShOk("printf four > t/r/f/d");
  std::vector<std::string> lines = FollowLines(fd, 4);
  ASSERT_EQ(lines.size(), 4u);
  const char* const expected[][2] = {
      {"a", "one"}, {"b", "two"}, {"c", "three"}, {"d", "four"}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(Untimed(lines[i]),
              std::string("{\"kind\":\"set\",\"row\":\"r\",\"family\":"
                          "\"f\",\"qualifier\":\"") +
                  expected[i][0] + "\",\"value\":\"" + expected[i][1] + "\"}");
  }
  // A second reader of the same name reads the same text from its start.
  int fd2 = open(Path(name).c_str(), O_RDONLY);
  ASSERT_GE(fd2, 0);
  EXPECT_EQ(FollowLines(fd2, 4), lines);
  close(fd2);
  close(fd);
  // A later start sees less: T is the commit time of the third write.
  size_t t = lines[2].find("\"timestamp\":");
  ASSERT_NE(t, std::string::npos);
  const std::string third =
      lines[2].substr(t + 12, lines[2].find_first_of(",}", t) - t - 12);
  fd = open(Path(".changes/t@" + third).c_str(), O_RDONLY);
  ASSERT_GE(fd, 0) << strerror(errno);
  lines = FollowLines(fd, 2);
  close(fd);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("\"value\":\"three\""), std::string::npos);
  EXPECT_NE(lines[1].find("\"value\":\"four\""), std::string::npos);
}

// The past of a TABLE@T feed comes at the reader's pace: a past of more
// than the 8 MiB window, read by a reader that stops for a while after its
// first bytes, is read whole (a live feed's text would have left the
// window, EIO).
TEST_F(ChangeFeedTest, APastLargerThanTheWindowIsReadWhole) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");
  const std::string name =
      ".changes/t@" + ShOk("date -u +%s000000 | tr -d '\\n'");
  // 11 MB of lines (values of 16,000 bytes).
  ShOk(
      "v=$(head -c 16000 /dev/zero | tr '\\0' x); for i in $(seq 700); do "
      "printf %s \"$v\" > t/r/f/q$i; done");
  int fd = open(Path(name).c_str(), O_RDONLY);
  ASSERT_GE(fd, 0) << name << ": " << strerror(errno);
  std::string text(4096, '\0');
  ssize_t n = 0;
  for (int i = 0; i < 1000 && n <= 0; i++) {  // the first line comes
    n = pread(fd, text.data(), text.size(), 0);
    if (n <= 0) usleep(10000);
  }
  ASSERT_GT(n, 0);
  text.resize(static_cast<size_t>(n));
  sleep(2);  // unpaced, the feed would run 11 MB ahead meanwhile
  std::vector<char> buf(1 << 20);
  for (int idle = 0; idle < 500;) {
    ssize_t got =
        pread(fd, buf.data(), buf.size(), static_cast<off_t>(text.size()));
    ASSERT_GE(got, 0) << strerror(errno) << " at " << text.size();
    if (got == 0) {
      if (std::count(text.begin(), text.end(), '\n') >= 700) break;
      ++idle;
      usleep(10000);
      continue;
    }
    text.append(buf.data(), static_cast<size_t>(got));
  }
  close(fd);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 700);
  EXPECT_EQ(text.find("\"lost\""), std::string::npos);
  EXPECT_NE(text.find("\"qualifier\":\"q700\""), std::string::npos);
}

// A start older than the store still holds says so: ENODATA, and the log
// names the oldest start it holds, which opens.
TEST_F(ChangeFeedTest, AStartOlderThanTheStoreHoldsIsNoData) {
  CreateTable("t", {"f"});
  PutCells("t", {{"r", "f", "a", 5, "one"}});
  // The log of that write is recovered at the mount, and not kept.
  ASSERT_EQ(
      TryMountForeground({"-o", "change_history_bytes=0"}, {}, daemon_log()),
      0);
  std::string out;
  EXPECT_NE(Sh("cat .changes/t@1000 2>&1", &out), 0);
  EXPECT_NE(out.find("No data available"), std::string::npos) << out;
  EXPECT_NE(Sh("cat .changes/t@1970-01-01T00:00:00Z 2>&1", &out), 0);
  EXPECT_NE(out.find("No data available"), std::string::npos) << out;
  const std::string log = ReadFile(daemon_log());
  const std::string said = "changes before ";
  size_t at = log.find(said);
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_NE(log.find("are no longer held", at), std::string::npos) << log;
  const std::string oldest = log.substr(
      at + said.size(), log.find(' ', at + said.size()) - at - said.size());
  EXPECT_EQ(ShOk("cat .changes/t@" + oldest + "; echo ok"), "ok\n");
  // Not a table: ENOENT first.
  EXPECT_NE(Sh("cat .changes/nosuch@1000 2>&1", &out), 0);
  EXPECT_NE(out.find("No such file or directory"), std::string::npos) << out;
}

}  // namespace
}  // namespace tabletfs::testing
