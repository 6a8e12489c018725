// Many processes at once through the mount, with plain syscalls: the daemon
// under stress (run under ThreadSanitizer by the `tsan` part of
// tests/run.sh, where TABLETFS_BIN_DIR holds the TSan-built daemon).
//
// The daemon sends its stderr to /dev/null once it is detached, so TSan
// reports are sent to files instead (TSAN_OPTIONS log_path, inherited by
// the daemon): none may exist after the unmount.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

constexpr int kChildren = 8;
constexpr int kSharedCells = 4;
constexpr double kSeconds = 2.5;

double Now() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct Rng {
  uint64_t s;
  uint64_t Next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  int Below(int n) { return static_cast<int>(Next() % n); }
};

bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += n;
  }
  return true;
}

// open + write + (fsync) + close; true when all of it succeeded.
bool WriteCell(const std::string& path, int flags, const std::string& data,
               bool sync) {
  int fd = open(path.c_str(), flags, 0644);
  if (fd < 0) return false;
  bool ok = WriteAll(fd, data);
  if (sync && fsync(fd) != 0) ok = false;
  if (close(fd) != 0) ok = false;
  return ok;
}

void ReadCellFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  char buf[4096];
  while (read(fd, buf, sizeof(buf)) > 0) {
  }
  close(fd);
}

void ListDir(const std::string& path) {
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return;
  while (readdir(d) != nullptr) {
  }
  closedir(d);
}

// The body of child `c`: a random mix of operations until the deadline.
// Acknowledged appends are written, one line each, to `own_log` (appends to
// the child's own cell) and `shared_log` (appends to the shared log cell).
// Only syscalls: this runs in a forked copy of the test process.
void ChildMain(const std::string& mnt, int c, const std::string& own_log,
               const std::string& shared_log) {
  alarm(60);  // a hung request must not hang the test
  int own_fd = open(own_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int shared_fd = open(shared_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (own_fd < 0 || shared_fd < 0) _exit(2);
  Rng rng{0x9e3779b97f4a7c15ull * (c + 1)};
  const std::string t = mnt + "/t/";
  const std::string my_row = t + "r" + std::to_string(c % 2) + "/";
  const std::string own_cell = my_row + "f/app" + std::to_string(c);
  const double deadline = Now() + kSeconds;
  int own_failures = 0;
  for (int i = 0; Now() < deadline; i++) {
    const std::string row = t + "r" + std::to_string(rng.Below(2)) + "/";
    const std::string shared =
        row + "f/w" + std::to_string(rng.Below(kSharedCells));
    const std::string tag = std::to_string(c) + ":" + std::to_string(i);
    switch (rng.Below(10)) {
      case 0:  // create + write + close (overwrite)
        WriteCell(shared, O_WRONLY | O_CREAT | O_TRUNC, "w " + tag + "\n",
                  false);
        break;
      case 1:  // append to this child's own cell
      case 2: {
        std::string line = "a " + tag + "\n";
        if (WriteCell(own_cell, O_WRONLY | O_APPEND, line, false)) {
          WriteAll(own_fd, line);
        } else {
          own_failures++;
        }
        break;
      }
      case 3: {  // append to the shared log
        std::string line = "L " + tag + "\n";
        if (WriteCell(t + "r0/f/log", O_WRONLY | O_CREAT | O_APPEND, line,
                      false)) {
          WriteAll(shared_fd, line);
        }
        break;
      }
      case 4:
        ReadCellFile(shared);
        ReadCellFile(own_cell);
        break;
      case 5:  // readdir of the rows, the families and the cells
        ListDir(t);
        ListDir(row);
        ListDir(row + "f");
        ListDir(row + "g");
        break;
      case 6: {  // rename within a row: a fresh cell, or a shared one
        std::string from = row + "g/s" + tag;
        if (rng.Below(2) == 0 &&
            WriteCell(from, O_WRONLY | O_CREAT | O_TRUNC, tag, false)) {
          rename(from.c_str(),
                 (row + "g/m" + std::to_string(rng.Below(3))).c_str());
        } else {
          rename(
              shared.c_str(),
              (row + "f/w" + std::to_string(rng.Below(kSharedCells))).c_str());
        }
        break;
      }
      case 7:  // unlink
        unlink((rng.Below(2) == 0 ? shared
                                  : row + "g/m" + std::to_string(rng.Below(3)))
                   .c_str());
        break;
      case 8: {
        struct stat st;
        stat(shared.c_str(), &st);
        stat(own_cell.c_str(), &st);
        stat(row.c_str(), &st);
        break;
      }
      case 9:  // write + fsync + close
        WriteCell(shared, O_WRONLY | O_CREAT | O_TRUNC, "s " + tag + "\n",
                  true);
        break;
    }
  }
  close(own_fd);
  close(shared_fd);
  _exit(own_failures == 0 ? 0 : 3);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

class MountConcurrencyTest : public MountFixture {
 protected:
  // Mounts with TSan reports going to tmp()/tsan.<pid>.
  void MountWithTsanLog() {
    const char* old = getenv("TSAN_OPTIONS");
    const std::string saved = old != nullptr ? old : "";
    const bool had = old != nullptr;
    std::string opts = saved;
    if (!opts.empty()) opts += ":";
    opts += "log_path=" + tmp() + "/tsan";
    setenv("TSAN_OPTIONS", opts.c_str(), 1);
    Mount();
    if (had) {
      setenv("TSAN_OPTIONS", saved.c_str(), 1);
    } else {
      unsetenv("TSAN_OPTIONS");
    }
  }

  // The text of every TSan report file in tmp().
  std::string TsanReports() {
    std::string all;
    for (const auto& entry : std::filesystem::directory_iterator(tmp())) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("tsan", 0) == 0) {
        all += "== " + name + "\n" + ReadFile(entry.path().string());
      }
    }
    return all;
  }

  std::string Latest(DB& db, const std::string& row, const std::string& q) {
    auto cells = db.ReadCell("t", row, "f", q, ReadOptions());
    EXPECT_TRUE(cells.ok()) << row << "/f/" << q;
    if (!cells.ok() || cells->empty()) return "";
    return cells->front().value;
  }
};

TEST_F(MountConcurrencyTest, ManyProcessesMixedSyscalls) {
  CreateTable("t", {"f", "g"});
  MountWithTsanLog();
  std::string setup = "mkdir -p t/r0/f t/r0/g t/r1/f t/r1/g && : > t/r0/f/log";
  for (int c = 0; c < kChildren; c++) {
    setup +=
        " && : > t/r" + std::to_string(c % 2) + "/f/app" + std::to_string(c);
  }
  ShOk(setup);

  std::vector<pid_t> pids;
  for (int c = 0; c < kChildren; c++) {
    const std::string base = tmp() + "/child" + std::to_string(c);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) ChildMain(mnt(), c, base + ".own", base + ".shared");
    pids.push_back(pid);
  }
  for (int c = 0; c < kChildren; c++) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[c], &status, 0), pids[c]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "child " << c << " status " << status
        << " (3: an append to its own cell failed)";
  }
  // Still serving after the storm.
  EXPECT_EQ(ShOk("ls t | sort | tr '\\n' ' '"), "r0 r1 ");

  Unmount();
  struct stat st;
  EXPECT_NE(stat((datadir() + "/mount.pid").c_str(), &st), 0)
      << "mount.pid left behind: the daemon did not exit cleanly";
  EXPECT_EQ(TsanReports(), "");

  auto db = OpenDb();
  ASSERT_NE(db, nullptr);
  const std::string log = Latest(*db, "r0", "log");
  std::map<std::string, int> in_log;
  for (const std::string& line : Lines(log)) in_log[line]++;
  size_t acked_shared = 0;
  for (int c = 0; c < kChildren; c++) {
    const std::string base = tmp() + "/child" + std::to_string(c);
    // The child's own cell: exactly its acknowledged appends, in order.
    const std::string own = ReadFile(base + ".own");
    EXPECT_FALSE(own.empty()) << "child " << c << " appended nothing";
    const std::string own_row = std::string("r") + std::to_string(c % 2);
    const std::string own_cell = std::string("app") + std::to_string(c);
    EXPECT_EQ(Latest(*db, own_row, own_cell), own) << "child " << c;
    // The shared log: every acknowledged line exactly once.
    for (const std::string& line : Lines(ReadFile(base + ".shared"))) {
      acked_shared++;
      EXPECT_EQ(in_log[line], 1) << "shared log line '" << line << "'";
    }
  }
  EXPECT_GT(acked_shared, 0u);
}

}  // namespace
}  // namespace tabletfs::testing
