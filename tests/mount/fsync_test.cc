// fsync really syncs (issue 9): `log_syncs` in .tabletfs/stats counts the
// commit log's syncs; fsync and fsyncdir through the mount must move it. At
// unmount the daemon exits with its counters, so there the test watches the
// daemon's own syscalls with strace: the commit log is fsync'ed or
// fdatasync'ed before the daemon is gone.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

class FsyncTest : public MountFixture {
 protected:
  uint64_t LogSyncs() {
    std::istringstream in(ReadFile(Path(".tabletfs/stats")));
    std::string key;
    uint64_t value;
    while (in >> key >> value) {
      if (key == "log_syncs") return value;
      in.ignore(1 << 20, '\n');
      in.clear();
    }
    ADD_FAILURE() << "no log_syncs in .tabletfs/stats";
    return 0;
  }

  int OpenWrite(const std::string& rel, const std::string& content) {
    int fd = open(Path(rel).c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    EXPECT_GE(fd, 0) << rel;
    EXPECT_EQ(write(fd, content.data(), content.size()),
              static_cast<ssize_t>(content.size()));
    return fd;
  }
};

TEST_F(FsyncTest, FsyncAndFsyncdirSyncTheLog) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f");

  // A close commits without a sync (the design: a closed file survives a
  // daemon crash, an fsync'ed one survives power loss).
  uint64_t before = LogSyncs();
  int fd = OpenWrite("t/r/f/plain", "plain\n");
  ASSERT_EQ(close(fd), 0);
  EXPECT_EQ(LogSyncs(), before) << "a plain close synced the log";

  // fsync of a written descriptor: commits and syncs.
  before = LogSyncs();
  fd = OpenWrite("t/r/f/a", "synced\n");
  ASSERT_EQ(fsync(fd), 0);
  uint64_t after_fsync = LogSyncs();
  EXPECT_GT(after_fsync, before) << "fsync did not sync the log";
  ASSERT_EQ(close(fd), 0);

  // fdatasync too.
  fd = OpenWrite("t/r/f/b", "datasynced\n");
  ASSERT_EQ(fdatasync(fd), 0);
  uint64_t after_fdatasync = LogSyncs();
  EXPECT_GT(after_fdatasync, after_fsync) << "fdatasync did not sync";
  ASSERT_EQ(close(fd), 0);

  // fsync of a read-only descriptor of a closed file (what `sync FILE` does
  // after `cp`): the file's version is in the log; the log is synced.
  ShOk("echo later > t/r/f/c");
  fd = open(Path("t/r/f/c").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fsync(fd), 0);
  uint64_t after_ro = LogSyncs();
  EXPECT_GT(after_ro, after_fdatasync) << "fsync of a reader did not sync";
  close(fd);

  // fsyncdir, on a family and on a table directory.
  ShOk("echo d > t/r/f/d");
  for (const char* dir : {"t/r/f", "t"}) {
    uint64_t b = LogSyncs();
    int dfd = open(Path(dir).c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(dfd, 0);
    ASSERT_EQ(fsync(dfd), 0);
    close(dfd);
    EXPECT_GT(LogSyncs(), b) << "fsyncdir of " << dir << " did not sync";
  }
  // sync(1) on the mount reaches FUSE only as syncfs, which FUSE does not
  // send; `sync FILE` is fsync (above).
}

TEST_F(FsyncTest, UnmountSyncsTheLog) {
  ASSERT_EQ(system("command -v strace > /dev/null 2>&1"), 0)
      << "strace is missing: install it (tests/run.sh does)";
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && echo unsynced > t/r/f/a");

  // Watch the daemon's syncs (every thread, file names shown by -y).
  std::string trace = tmp() + "/strace.out";
  pid_t tracer = fork();
  ASSERT_GE(tracer, 0);
  if (tracer == 0) {
    std::string pid = std::to_string(daemon_pid());
    execlp("strace", "strace", "-f", "-y", "-qq", "-e",
           "trace=fsync,fdatasync,sync_file_range", "-o", trace.c_str(), "-p",
           pid.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Bounded wait for strace to be attached (TracerPid of the daemon).
  bool attached = false;
  for (int i = 0; i < 2000 && !attached; i++) {
    std::istringstream status(
        ReadFile("/proc/" + std::to_string(daemon_pid()) + "/status"));
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("TracerPid:", 0) == 0) {
        attached = std::atoi(line.c_str() + 10) == tracer;
      }
    }
    if (!attached) {
      struct timespec ts = {0, 5 * 1000 * 1000};
      nanosleep(&ts, nullptr);
    }
  }
  if (!attached) {
    kill(tracer, SIGKILL);
    waitpid(tracer, nullptr, 0);
    GTEST_SKIP() << "strace could not attach (ptrace not permitted?)";
  }
  Unmount();
  int status = 0;
  waitpid(tracer, &status, 0);  // strace ends with the daemon
  std::string syscalls = ReadFile(trace);
  bool log_synced = false;
  std::istringstream lines(syscalls);
  std::string line;
  while (std::getline(lines, line)) {
    if ((line.find("fsync(") != std::string::npos ||
         line.find("fdatasync(") != std::string::npos) &&
        line.find(".log>") != std::string::npos &&
        line.find("= 0") != std::string::npos) {
      log_synced = true;
    }
  }
  EXPECT_TRUE(log_synced) << "no successful sync of the commit log at "
                             "unmount; the daemon's syncs:\n"
                          << syscalls;
}

}  // namespace
}  // namespace tabletfs::testing
