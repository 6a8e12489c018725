// Row-atomic commits from the shell (issue 21, fs/stage_area.cc): staging
// under .stage/TABLE/ROW, `mv` onto .commit/TABLE/ (one mutation, one
// timestamp), `rm -r` aborting, deletions and the @if-unchanged condition,
// the refusals, the everyday tools (cp -r, cp -a, rsync, tar) into the
// stage, a reader that never sees part of a commit, and kill -9 at every
// step. Over the engine and the memory store; the remote servers in
// StageRemoteTest. Needs root (FUSE).
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

class StageFixture : public MountFixture {
 protected:
  // A table t with families f and g, and a row r holding f:a=old, f:b=old,
  // g:x=keep.
  void MountWithRow() {
    CreateTable("t", {"f", "g"});
    PutCells("t", {{"r", "f", "a", 1000, "old"},
                   {"r", "f", "b", 1000, "old"},
                   {"r", "g", "x", 1000, "keep"}});
    Mount();
  }
  // The versions of t/r/FAMILY/QUALIFIER: their timestamps, newest first.
  std::vector<std::string> Versions(const std::string& cell) {
    std::string out;
    Sh("ls .versions/t/r/" + cell.substr(0, cell.find('/')) + " | grep '^" +
           cell.substr(cell.find('/') + 1) + "@' | cut -d@ -f2 | sort -rn",
       &out);
    std::vector<std::string> stamps;
    for (size_t start = 0, nl; (nl = out.find('\n', start)) != out.npos;
         start = nl + 1) {
      stamps.push_back(out.substr(start, nl - start));
    }
    return stamps;
  }
  // The cells of t/r (directories made by mkdir outlive their cells).
  std::string Cells() { return ShOk("cd t/r && find . -type f | sort"); }
};

using StageTest = OverStores<StageFixture>;

TEST_P(StageTest, TheCommitAppliesEverythingStagedAtOnce) {
  MountWithRow();
  ShOk(
      "mkdir -p .stage/t/r/f && printf new-a > .stage/t/r/f/a && "
      "printf new-c > .stage/t/r/f/c && touch .stage/t/r/f/b@delete "
      "&& touch .stage/t/r/g@delete");
  // Staged: listed under .stage, invisible in the table.
  EXPECT_EQ(ShOk("ls .stage/ .stage/t .stage/t/r .stage/t/r/f"),
            ".stage/:\nt\n\n.stage/t:\nr\n\n.stage/t/r:\nf\ng@delete\n\n"
            ".stage/t/r/f:\na\nb@delete\nc\n");
  EXPECT_EQ(ShOk("cat .stage/t/r/f/a"), "new-a");
  EXPECT_EQ(ShOk("cat t/r/f/a t/r/f/b t/r/g/x"), "oldoldkeep");
  EXPECT_NE(Sh("cat t/r/f/c 2>/dev/null"), 0);

  // The kernel moved the row's entry onto .commit/t/r, which never exists.
  ShOk("mv .stage/t/r .commit/t/ && ! stat .commit/t/r 2>/dev/null");
  EXPECT_EQ(ShOk("cat t/r/f/a t/r/f/c"), "new-anew-c");
  EXPECT_NE(Sh("cat t/r/f/b 2>/dev/null"), 0);
  EXPECT_NE(Sh("cat t/r/g/x 2>/dev/null"), 0);
  // One timestamp for the row's new versions; the old version stays.
  std::vector<std::string> a = Versions("f/a"), c = Versions("f/c");
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(a[0], c[0]);
  // The staged row is gone; nothing is left under .stage or .commit.
  EXPECT_EQ(ShOk("ls .stage/t .commit/t"), ".commit/t:\n\n.stage/t:\n");
  EXPECT_NE(Sh("ls -d .stage/t/r 2>/dev/null"), 0);
  // The same row can be staged again at once.
  ShOk(
      "mkdir -p .stage/t/r/f && printf again > .stage/t/r/f/a && "
      "mv .stage/t/r .commit/t/");
  EXPECT_EQ(ShOk("cat t/r/f/a"), "again");
}

TEST_P(StageTest, ARowDeletionGoesBeforeTheStagedCells) {
  MountWithRow();
  ShOk(
      "mkdir -p .stage/t/r/g && touch .stage/t/r/@delete && "
      "printf only > .stage/t/r/g/y && mv .stage/t/r .commit/t");
  EXPECT_EQ(Cells(), "./g/y\n");
  EXPECT_EQ(ShOk("cat t/r/g/y"), "only");
}

TEST_P(StageTest, RmRAbortsAndNothingChanges) {
  MountWithRow();
  ShOk(
      "mkdir -p .stage/t/r/f && printf never > .stage/t/r/f/a && "
      "touch .stage/t/r/@delete");
  ShOk("rm -r .stage/t/r");
  EXPECT_EQ(ShOk("ls .stage/"), "");
  EXPECT_EQ(ShOk("cat t/r/f/a t/r/f/b t/r/g/x"), "oldoldkeep");
  EXPECT_EQ(Versions("f/a").size(), 1u);
  // A cell and its @delete exclude each other; rm of one unstages it.
  ShOk(
      "mkdir -p .stage/t/r/f && printf x > .stage/t/r/f/a && "
      "touch .stage/t/r/f/a@delete");
  EXPECT_EQ(ShOk("ls .stage/t/r/f"), "a@delete\n");
  EXPECT_NE(Sh("cat .stage/t/r/f/a 2>/dev/null"), 0);  // not even cached
  ShOk("printf y > .stage/t/r/f/a");
  EXPECT_EQ(ShOk("ls .stage/t/r/f"), "a\n");
  EXPECT_NE(Sh("stat .stage/t/r/f/a@delete 2>/dev/null"), 0);
  ShOk("rm .stage/t/r/f/a && mv .stage/t/r .commit/t/");
  EXPECT_EQ(ShOk("cat t/r/f/a"), "old");
}

TEST_P(StageTest, IfUnchangedCommitsOnlyOverTheRowItWasStagedOn) {
  MountWithRow();
  // Unchanged since the mkdir: commits.
  ShOk(
      "mkdir -p .stage/t/r/f && touch .stage/t/r/@if-unchanged && "
      "printf 1 > .stage/t/r/f/a && mv .stage/t/r .commit/t/");
  EXPECT_EQ(ShOk("cat t/r/f/a"), "1");
  // A write to the row after the mkdir: ECANCELED, nothing applied, the
  // row stays staged.
  ShOk(
      "mkdir -p .stage/t/r/f && touch .stage/t/r/@if-unchanged && "
      "printf 2 > .stage/t/r/f/a");
  ShOk("printf other > t/r/g/x");
  std::string err;
  EXPECT_NE(Sh("mv .stage/t/r .commit/t/ 2>&1", &err), 0);
  EXPECT_NE(err.find("Operation canceled"), std::string::npos) << err;
  EXPECT_EQ(ShOk("cat t/r/f/a"), "1");
  EXPECT_EQ(ShOk("cat .stage/t/r/f/a"), "2");
  // A deletion is a change too.
  ShOk(
      "rm -r .stage/t/r && mkdir -p .stage/t/r/f && "
      "touch .stage/t/r/@if-unchanged && printf 3 > .stage/t/r/f/a");
  ShOk("rm t/r/f/b");
  EXPECT_NE(Sh("mv .stage/t/r .commit/t/ 2>/dev/null"), 0);
  // Without the condition the same commit goes through.
  ShOk("rm .stage/t/r/@if-unchanged && mv .stage/t/r .commit/t/");
  EXPECT_EQ(ShOk("cat t/r/f/a"), "3");
}

TEST_P(StageTest, Refusals) {
  MountWithRow();
  std::string err;
  // A missing table or family: ENOENT at once.
  EXPECT_NE(Sh("mkdir -p .stage/nosuch/r 2>&1", &err), 0);
  EXPECT_NE(err.find("No such file or directory"), std::string::npos) << err;
  EXPECT_NE(Sh("mkdir -p .stage/t/r/nofam 2>&1", &err), 0);
  EXPECT_NE(err.find("No such file or directory"), std::string::npos) << err;
  EXPECT_NE(Sh("touch .stage/t/r/nofam@delete 2>&1", &err), 0);
  EXPECT_NE(err.find("No such file or directory"), std::string::npos) << err;
  // A cell outside a family directory; bytes in a mark; a bad mark.
  EXPECT_NE(Sh("printf x > .stage/t/r/file 2>/dev/null"), 0);
  ShOk("mkdir -p .stage/t/r/f && touch .stage/t/r/@delete");
  int mark = open(Path(".stage/t/r/@delete").c_str(), O_WRONLY);
  ASSERT_GE(mark, 0) << strerror(errno);
  EXPECT_EQ(write(mark, "x", 1), -1);
  EXPECT_EQ(errno, EINVAL);
  close(mark);
  EXPECT_NE(Sh("touch .stage/t/r/f/q@later 2>&1", &err), 0);
  EXPECT_NE(err.find("Invalid argument"), std::string::npos) << err;
  // A commit to another row or table; anything made in .commit.
  EXPECT_NE(Sh("mv .stage/t/r .commit/t/other 2>&1", &err), 0);
  EXPECT_NE(err.find("Operation not permitted"), std::string::npos) << err;
  EXPECT_NE(Sh("mkdir .commit/t/r 2>/dev/null"), 0);
  EXPECT_NE(Sh("touch .commit/t/x 2>/dev/null"), 0);
  // Nothing of it reached the table, and the row is still staged.
  EXPECT_EQ(ShOk("cat t/r/f/a t/r/f/b t/r/g/x"), "oldoldkeep");
  EXPECT_EQ(ShOk("ls .stage/t/r"), "@delete\nf\n");
  // A descriptor with bytes not staged yet holds the commit back (EBUSY):
  // close it first.
  int fd = open(Path(".stage/t/r/f/a").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_EQ(write(fd, "late", 4), 4);
  EXPECT_NE(rename(Path(".stage/t/r").c_str(), Path(".commit/t/r").c_str()), 0);
  EXPECT_EQ(errno, EBUSY);
  ASSERT_EQ(close(fd), 0);
  ASSERT_EQ(rename(Path(".stage/t/r").c_str(), Path(".commit/t/r").c_str()), 0)
      << strerror(errno);
  EXPECT_EQ(Cells(), "./f/a\n");
  EXPECT_EQ(ShOk("cat t/r/f/a"), "late");
}

TEST_P(StageTest, CopyToolsStageAndKeepMtimes) {
  MountWithRow();
  const std::string src = tmp() + "/src";
  ASSERT_EQ(system(("mkdir -p " + src + "/f " + src + "/g && printf A > " +
                    src + "/f/a && printf B > " + src + "/g/b && touch -d " +
                    "'2020-01-02 03:04:05' " + src + "/f/a " + src + "/g/b")
                       .c_str()),
            0);
  ShOk("cp -r " + src + " .stage/t/r1 && mv .stage/t/r1 .commit/t/");
  EXPECT_EQ(ShOk("cat t/r1/f/a t/r1/g/b"), "AB");
  ShOk("cp -a " + src + " .stage/t/r2 && mv .stage/t/r2 .commit/t/");
  ShOk("rsync -a " + src + "/ .stage/t/r3/ && mv .stage/t/r3 .commit/t/");
  ShOk("mkdir .stage/t/r4 && tar -C " + src +
       " -cf - . | tar -C .stage/t/r4 -xf - && mv .stage/t/r4 .commit/t/");
  for (const char* row : {"r2", "r3", "r4"}) {
    EXPECT_EQ(ShOk(std::string("cat t/") + row + "/f/a t/" + row + "/g/b"),
              "AB");
    EXPECT_EQ(
        ShOk(std::string("date -u -r t/") + row + "/f/a +%Y-%m-%dT%H:%M:%S"),
        ShOk("date -u -r " + src + "/f/a +%Y-%m-%dT%H:%M:%S"))
        << row;
  }
  EXPECT_EQ(ShOk("ls .stage/"), "");
}

INSTANTIATE_TEST_SUITE_P(, StageTest, AllStores(), StoreName);

// A reader of the row's three cells, reading them one after the other
// while commits of all three go on, sees rounds that never decrease along
// its reads: a commit that showed a cell before another would show up as
// a later cell older than an earlier one. The engine only: thousands of
// rounds. The reader reads with O_DIRECT: through the page cache, a read
// racing a commit can be cut at the size the kernel had from the version
// before (issue 16's open problem, any write shows it), which is not what
// this test is about.
class StageAtomicityTest : public MountFixture {};

TEST_F(StageAtomicityTest, AReaderNeverSeesPartOfACommit) {
  CreateTable("t", {"f"});
  Mount();
  ShOk(
      "mkdir -p .stage/t/r/f && printf 0 > .stage/t/r/f/a && "
      "printf 0 > .stage/t/r/f/b && printf 0 > .stage/t/r/f/c && "
      "mv .stage/t/r .commit/t/");
  constexpr int kRounds = 2000;
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::string failure;
  std::thread reader([&] {
    auto read_round = [&](const char* q) {
      char buf[32];
      int fd =
          open(Path(std::string("t/r/f/") + q).c_str(), O_RDONLY | O_DIRECT);
      if (fd < 0) return -1;
      ssize_t n = read(fd, buf, sizeof(buf) - 1);
      close(fd);
      if (n <= 0) return -1;
      buf[n] = '\0';
      return atoi(buf);
    };
    while (!done.load() && failure.empty()) {
      int a = read_round("a"), b = read_round("b"), c = read_round("c");
      if (a < 0 || b < a || c < b) {
        failure = "read a=" + std::to_string(a) + " b=" + std::to_string(b) +
                  " c=" + std::to_string(c);
      }
      reads++;
    }
  });
  for (int round = 1; round <= kRounds && failure.empty(); round++) {
    const std::string n = std::to_string(round);
    ASSERT_EQ(mkdir(Path(".stage/t/r").c_str(), 0755), 0) << strerror(errno);
    ASSERT_EQ(mkdir(Path(".stage/t/r/f").c_str(), 0755), 0);
    for (const char* q : {"c", "a", "b"}) {
      WriteFile(Path(std::string(".stage/t/r/f/") + q), n);
    }
    ASSERT_EQ(rename(Path(".stage/t/r").c_str(), Path(".commit/t/r").c_str()),
              0)
        << strerror(errno);
  }
  done = true;
  reader.join();
  EXPECT_EQ(failure, "");
  EXPECT_GT(reads.load(), 100);
  EXPECT_EQ(ReadFile(Path("t/r/f/a")), std::to_string(kRounds));
}

// kill -9 of the daemon at each step of a staged commit: before the mv
// returned, nothing of it after the remount (and nothing staged); after,
// all of it.
TEST_F(StageAtomicityTest, KillAtEveryStepOfACommit) {
  CreateTable("t", {"f", "g"});
  PutCells("t", {{"r", "f", "a", 1000, "old"}, {"r", "g", "x", 1000, "old"}});
  const std::vector<std::string> steps = {
      "mkdir -p .stage/t/r/f",       "printf new > .stage/t/r/f/a",
      "printf new > .stage/t/r/f/b", "touch .stage/t/r/g@delete",
      "mv .stage/t/r .commit/t/",
  };
  for (size_t kill_after = 0; kill_after <= steps.size(); kill_after++) {
    SCOPED_TRACE("killed after step " + std::to_string(kill_after));
    Mount();
    for (size_t i = 0; i < kill_after; i++) ShOk(steps[i]);
    KillDaemon();
    Mount();
    EXPECT_EQ(ShOk("ls .stage/"), "");
    if (kill_after == steps.size()) {
      EXPECT_EQ(ShOk("cat t/r/f/a t/r/f/b"), "newnew");
      EXPECT_NE(Sh("cat t/r/g/x 2>/dev/null"), 0);
      // Back to the start for nothing else: this was the last round.
    } else {
      EXPECT_EQ(ShOk("cat t/r/f/a t/r/g/x"), "oldold");
      EXPECT_NE(Sh("cat t/r/f/b 2>/dev/null"), 0);
    }
    Unmount();
  }
}

// Over a remote Bigtable (the emulator, a tabletfs server): a commit is
// one MutateRow; @if-unchanged needs an atomic read-then-write the API
// does not have, and says so.
class StageRemoteFixture : public MountFixture {};
using StageRemoteTest = OverStores<StageRemoteFixture>;

TEST_P(StageRemoteTest, CommitsAndRefusesTheCondition) {
  CreateTable("t", {"f"});
  PutCells("t", {{"r", "f", "a", 1000, "old"}});
  Mount();
  ShOk(
      "mkdir -p .stage/t/r/f && printf new-a > .stage/t/r/f/a && "
      "printf new-b > .stage/t/r/f/b && mv .stage/t/r .commit/t/");
  EXPECT_EQ(ShOk("cat t/r/f/a t/r/f/b"), "new-anew-b");
  ShOk(
      "mkdir -p .stage/t/r/f && touch .stage/t/r/@if-unchanged && "
      "printf x > .stage/t/r/f/a");
  std::string err;
  EXPECT_NE(Sh("mv .stage/t/r .commit/t/ 2>&1", &err), 0);
  EXPECT_NE(err.find("not supported"), std::string::npos) << err;
  EXPECT_EQ(ShOk("cat t/r/f/a"), "new-a");
}

INSTANTIATE_TEST_SUITE_P(, StageRemoteTest, RemoteBackends(), StoreName);

}  // namespace
}  // namespace tabletfs::testing
