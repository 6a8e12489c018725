// `.tabletfs/tablets` through a real mount (issue 6, "Visible"): a table
// written through the mount with a tiny split threshold splits into
// tablets; the file lists them as contiguous ranges covering the table, in
// row order, named as `ls TABLE` names rows; no data is lost to the splits;
// and the tablets are still there after a remount.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fs/names.h"
#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

constexpr int kRows = 2000;
constexpr size_t kValueBytes = 300;  // 600 KB in all: about 16 splits

// memtable_bytes is small too: the engine looks at tablet sizes only when
// its background thread wakes, which a write does not do until a memtable
// fills, so with the default 64 MiB memtable nothing would ever split
// (an engine bug, reported on issue 6). The threshold is 64 KiB, not less:
// at 16 KiB (a few 4 KiB blocks) the engine splits and merges without end
// (hundreds of each for these 600 KB; also reported).
const std::vector<std::string> kMountOptions = {
    "-o", "tablet_split_bytes=65536,memtable_bytes=131072"};

struct TabletLine {
  std::string table, start, end;
  uint64_t bytes = 0, files = 0;
  std::vector<std::string> samples;
};

std::vector<std::string> SplitOn(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(text);
  while (std::getline(in, field, sep)) out.push_back(field);
  return out;
}

std::string RowName(int i) {
  char name[32];
  snprintf(name, sizeof(name), "k%%2F%05d", i);  // the key "k/NNNNN"
  return name;
}

// Incompressible, so the SSTables hold about what was written.
std::string Value(int i) {
  uint64_t x = 0x9E3779B97F4A7C15ull * (i + 1);
  std::string v = "row " + std::to_string(i) + ":";
  while (v.size() < kValueBytes) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v += static_cast<char>('0' + x % 75);
  }
  v += '\n';
  return v;
}

// The key a listed row name stands for.
std::string Key(const std::string& name) {
  fs::ParsedName parsed;
  fs::FsError e = fs::ParseRowName(name, &parsed);
  EXPECT_TRUE(e.ok()) << name << ": " << e.ToString();
  EXPECT_FALSE(parsed.hashed) << name;
  return parsed.key;
}

class TabletsTest : public MountFixture {
 protected:
  std::vector<TabletLine> Tablets() {
    std::vector<TabletLine> out;
    for (const std::string& line :
         SplitOn(ReadFile(Path(".tabletfs/tablets")), '\n')) {
      std::vector<std::string> f = SplitOn(line, '\t');
      EXPECT_GE(f.size(), 5u) << line;
      if (f.size() < 5) continue;
      TabletLine t;
      t.table = f[0];
      t.start = f[1];
      t.end = f[2];
      t.bytes = std::stoull(f[3]);
      t.files = std::stoull(f[4]);
      t.samples.assign(f.begin() + 5, f.end());
      out.push_back(std::move(t));
    }
    return out;
  }

  // Polls until `.tabletfs/tablets` shows more than one tablet, the engine
  // has no flush or compaction left to do, and the list has not changed
  // for a second (the background thread is done: it decides splits only
  // when it wakes). One unchanged 200 ms poll was not enough under ASan on
  // a loaded machine: a compaction still running then split once more.
  // Fails after 30 s.
  std::vector<TabletLine> WaitForSettledSplits() {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::string last;
    int unchanged = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      std::string text = ReadFile(Path(".tabletfs/tablets"));
      std::string stats = ReadFile(Path(".tabletfs/stats"));
      const bool idle =
          stats.find("\ncompactions_pending 0\n") != std::string::npos &&
          stats.find("\nfrozen_memtables 0\n") != std::string::npos;
      unchanged = (text == last && idle) ? unchanged + 1 : 0;
      if (std::count(text.begin(), text.end(), '\n') > 1 && unchanged >= 5) {
        return Tablets();
      }
      last = text;
      usleep(200 * 1000);
    }
    ADD_FAILURE() << "no settled split within 30 s:\n"
                  << last << ReadFile(Path(".tabletfs/stats"));
    return {};
  }

  // Ranges chain from '-' to '-', each START < END, boundaries and samples
  // are rows of the table that the mount resolves by the listed name.
  void ExpectContiguousCover(const std::vector<TabletLine>& tablets) {
    ASSERT_GT(tablets.size(), 1u);
    EXPECT_EQ(tablets.front().start, "-");
    EXPECT_EQ(tablets.back().end, "-");
    uint64_t bytes = 0;
    for (size_t i = 0; i < tablets.size(); ++i) {
      const TabletLine& t = tablets[i];
      EXPECT_EQ(t.table, "t");
      bytes += t.bytes;
      if (i + 1 < tablets.size()) {
        EXPECT_EQ(t.end, tablets[i + 1].start) << "tablet " << i;
        EXPECT_NE(t.end, "-") << "tablet " << i;
        struct stat st;
        EXPECT_EQ(stat(Path("t/" + t.end).c_str(), &st), 0) << t.end;
        EXPECT_TRUE(S_ISDIR(st.st_mode)) << t.end;
      }
      if (i > 0 && i + 1 < tablets.size()) {
        EXPECT_LT(Key(t.start), Key(t.end)) << "tablet " << i;
      }
      for (const std::string& s : t.samples) {
        if (i > 0) {
          EXPECT_GE(Key(s), Key(t.start)) << s;
        }
        if (i + 1 < tablets.size()) {
          EXPECT_LT(Key(s), Key(t.end)) << s;
        }
        EXPECT_EQ(access(Path("t/" + s).c_str(), F_OK), 0) << s;
      }
    }
    // Incompressible values: the tablets hold at least half of them.
    EXPECT_GT(bytes, kRows * kValueBytes / 2);
  }

  // Every row written is listed once and reads back.
  void ExpectAllRows() {
    EXPECT_EQ(ShOk("ls t | wc -l"), std::to_string(kRows) + "\n");
    std::string all;
    for (int i = 0; i < kRows; ++i) all += Value(i);
    std::string got = ShOk("LC_ALL=C cat t/*/f/q");
    EXPECT_EQ(got.size(), all.size());
    EXPECT_TRUE(got == all) << "rows differ from what was written";
  }
};

TEST_F(TabletsTest, SplitTabletsCoverTheTableAndSurviveARemount) {
  CreateTable("t", {"f"});
  Mount(kMountOptions);
  EXPECT_EQ(ShOk("cat .tabletfs/tablets"), "t\t-\t-\t0\t0\n");
  for (int i = 0; i < kRows; ++i) {
    const std::string row = Path("t/" + RowName(i));
    ASSERT_EQ(mkdir(row.c_str(), 0755), 0) << row << ": " << strerror(errno);
    ASSERT_EQ(mkdir((row + "/f").c_str(), 0755), 0) << strerror(errno);
    WriteFile(row + "/f/q", Value(i));
  }
  std::vector<TabletLine> before = WaitForSettledSplits();
  ASSERT_NO_FATAL_FAILURE(ExpectContiguousCover(before));
  ExpectAllRows();

  // The shell tools: one line per tablet, no header.
  EXPECT_EQ(ShOk("wc -l < .tabletfs/tablets"),
            std::to_string(before.size()) + "\n");
  EXPECT_EQ(ShOk("grep -c '^t\t' .tabletfs/tablets"),
            std::to_string(before.size()) + "\n");
  EXPECT_EQ(ShOk("cut -f2 .tabletfs/tablets | head -1"), "-\n");
  // Generated: refused like stats.
  EXPECT_EQ(open(Path(".tabletfs/tablets").c_str(), O_WRONLY), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(Sh("sh -c 'echo x > .tabletfs/tablets' 2>/dev/null"), 0);
  EXPECT_NE(Sh("rm -f .tabletfs/tablets 2>/dev/null"), 0);

  // The tablets are in the manifest: every boundary is still there after a
  // remount. (Not necessarily only those: recovery flushes what the log
  // held, and a tablet that passed the threshold in its memtable alone,
  // unnoticed for the reason above, may split then.)
  Unmount();
  Mount(kMountOptions);
  std::vector<TabletLine> after = Tablets();
  ASSERT_NO_FATAL_FAILURE(ExpectContiguousCover(after));
  EXPECT_GE(after.size(), before.size());
  std::set<std::string> ends;
  for (const TabletLine& t : after) ends.insert(t.end);
  for (const TabletLine& t : before) {
    EXPECT_EQ(ends.count(t.end), 1u) << "boundary " << t.end << " is gone";
  }
  ExpectAllRows();
}

// Issue 14 item 2: a tablet splits when its data, memtable included,
// passes the threshold, with the default memtable (64 MiB, far more than
// these 6 MB). 3,000 rows of 2,000 incompressible bytes written through
// the mount are two tablets or more within seconds.
TEST_F(TabletsTest, SplitsWithoutAFlushWhenTheMemtableAlonePasses) {
  CreateTable("t", {"f"});
  Mount({"-o", "tablet_split_bytes=262144"});
  constexpr int kBigRows = 3000;
  auto value = [](int i) {
    std::string v;
    while (v.size() < 2000) v += Value(i * 7 + static_cast<int>(v.size()));
    v.resize(2000);
    return v;
  };
  for (int i = 0; i < kBigRows; ++i) {
    const std::string row = Path("t/" + RowName(i));
    ASSERT_EQ(mkdir(row.c_str(), 0755), 0) << row << ": " << strerror(errno);
    ASSERT_EQ(mkdir((row + "/f").c_str(), 0755), 0) << strerror(errno);
    WriteFile(row + "/f/q", value(i));
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(5);
  size_t tablets = 0;
  std::string text;
  while (std::chrono::steady_clock::now() < deadline) {
    text = ReadFile(Path(".tabletfs/tablets"));
    tablets = 0;
    for (const std::string& line : SplitOn(text, '\n')) {
      if (line.starts_with("t\t")) ++tablets;
    }
    if (tablets >= 2) break;
    usleep(50 * 1000);
  }
  EXPECT_GE(tablets, 2u) << text << ReadFile(Path(".tabletfs/stats"));
  EXPECT_EQ(ShOk("ls t | wc -l"), std::to_string(kBigRows) + "\n");
  EXPECT_EQ(ReadFile(Path("t/" + RowName(kBigRows - 1) + "/f/q")),
            value(kBigRows - 1));
}

}  // namespace
}  // namespace tabletfs::testing
