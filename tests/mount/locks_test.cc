// fcntl and flock locks through the mount (fs/lock_table.h): the daemon
// keeps them per cell, so a cell's readers and writers, on inodes of their
// own, lock one file, as on a local disk.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

class LocksTest : public MountFixture {
 protected:
  void SetUp() override {
    MountFixture::SetUp();
    CreateTable("t", {"f"});
    Mount();
    ShOk("mkdir -p t/r/f && printf 0123456789 > t/r/f/c");
    path_ = Path("t/r/f/c");
  }
  std::string path_;
};

int RangeLock(int fd, int cmd, short type, off_t start, off_t len) {
  struct flock l {};
  l.l_type = type;
  l.l_whence = SEEK_SET;
  l.l_start = start;
  l.l_len = len;
  return fcntl(fd, cmd, &l);
}

// flock between a reader and a writer, in both orders, in one process (two
// open files): they exclude each other as on a local disk.
TEST_F(LocksTest, FlockOfAReaderAndAWriterExcludeEachOther) {
  int r = open(path_.c_str(), O_RDONLY);
  ASSERT_GE(r, 0);
  ASSERT_EQ(flock(r, LOCK_SH), 0);
  int w = open(path_.c_str(), O_RDWR);
  ASSERT_GE(w, 0);
  EXPECT_EQ(flock(w, LOCK_EX | LOCK_NB), -1);
  EXPECT_EQ(errno, EWOULDBLOCK);
  // Its lock goes with its last close, when the kernel's RELEASE reaches
  // the daemon, which FUSE sends after close() has returned: a moment
  // later (README "Writing").
  close(r);
  int got = -1;
  for (int i = 0; i < 200 && got != 0; ++i) {
    got = flock(w, LOCK_EX | LOCK_NB);
    if (got != 0) usleep(5000);
  }
  EXPECT_EQ(got, 0) << strerror(errno);
  r = open(path_.c_str(), O_RDONLY);
  ASSERT_GE(r, 0);
  EXPECT_EQ(flock(r, LOCK_SH | LOCK_NB), -1);
  EXPECT_EQ(errno, EWOULDBLOCK);
  EXPECT_EQ(flock(w, LOCK_UN), 0);
  EXPECT_EQ(flock(r, LOCK_SH | LOCK_NB), 0);
  close(r);
  close(w);
}

// fcntl byte ranges between processes: a child holds a write lock on bytes
// 0-4 through a writer; this process's reader is refused there, told who
// holds it, and granted elsewhere; a blocked F_SETLKW is granted when the
// child closes its descriptor.
TEST_F(LocksTest, FcntlRangesBetweenProcessesAndAWaitGrantedAtClose) {
  int locked[2], go[2];
  ASSERT_EQ(pipe(locked), 0);
  ASSERT_EQ(pipe(go), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int w = open(path_.c_str(), O_RDWR);
    if (w < 0 || RangeLock(w, F_SETLK, F_WRLCK, 0, 5) != 0) _exit(1);
    char c = 'x';
    if (write(locked[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(2);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    close(w);  // drops the lock
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(locked[0], &c, 1), 1);
  int r = open(path_.c_str(), O_RDONLY);
  ASSERT_GE(r, 0);
  EXPECT_EQ(RangeLock(r, F_SETLK, F_RDLCK, 4, 1), -1);
  EXPECT_TRUE(errno == EAGAIN || errno == EACCES) << strerror(errno);
  struct flock l {};
  l.l_type = F_RDLCK;
  l.l_whence = SEEK_SET;
  l.l_start = 2;
  l.l_len = 1;
  ASSERT_EQ(fcntl(r, F_GETLK, &l), 0);
  EXPECT_EQ(l.l_type, F_WRLCK);
  EXPECT_EQ(l.l_start, 0);
  EXPECT_EQ(l.l_len, 5);
  EXPECT_EQ(l.l_pid, child);
  EXPECT_EQ(RangeLock(r, F_SETLK, F_RDLCK, 5, 5), 0) << strerror(errno);
  ASSERT_EQ(write(go[1], "g", 1), 1);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(RangeLock(r, F_SETLKW, F_RDLCK, 0, 5), 0) << strerror(errno);
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(200));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // The reader's locks go at its close (no FLUSH: at its RELEASE).
  close(r);
  int w = open(path_.c_str(), O_RDWR);
  ASSERT_GE(w, 0);
  bool got = false;
  for (int i = 0; i < 100 && !got; i++) {
    got = RangeLock(w, F_SETLK, F_WRLCK, 0, 0) == 0;
    if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(got);
  close(w);
  close(locked[0]);
  close(locked[1]);
  close(go[0]);
  close(go[1]);
}

// A lock holder's file removed and made again: the new file is another
// file, with no lock (as on a local disk), and the holder's lock still
// works on the file it holds open.
TEST_F(LocksTest, ANewFileUnderARemovedLockedNameIsUnlocked) {
  int held = open(path_.c_str(), O_RDWR);
  ASSERT_GE(held, 0);
  ASSERT_EQ(flock(held, LOCK_EX), 0);
  ShOk("rm t/r/f/c && printf new > t/r/f/c");
  int fresh = open(path_.c_str(), O_RDWR);
  ASSERT_GE(fresh, 0);
  EXPECT_EQ(flock(fresh, LOCK_EX | LOCK_NB), 0) << strerror(errno);
  EXPECT_EQ(flock(held, LOCK_UN), 0);
  EXPECT_EQ(flock(held, LOCK_SH | LOCK_NB), 0) << strerror(errno);
  close(fresh);
  close(held);
}

void OnAlarm(int) {}

// A wait the caller gives up on (a signal) ends in EINTR, and the lock it
// waited for is not taken later behind its back.
TEST_F(LocksTest, AnInterruptedWaitEndsInEintr) {
  int w = open(path_.c_str(), O_RDWR);
  ASSERT_GE(w, 0);
  ASSERT_EQ(flock(w, LOCK_EX), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    struct sigaction sa {};
    sa.sa_handler = OnAlarm;  // no SA_RESTART: the wait returns EINTR
    sigaction(SIGALRM, &sa, nullptr);
    int r = open(path_.c_str(), O_RDONLY);
    if (r < 0) _exit(1);
    alarm(1);
    int rc = flock(r, LOCK_SH);
    _exit(rc == -1 && errno == EINTR ? 0 : 2);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(flock(w, LOCK_UN), 0);
  int r = open(path_.c_str(), O_RDONLY);
  ASSERT_GE(r, 0);
  EXPECT_EQ(flock(r, LOCK_EX | LOCK_NB), 0) << strerror(errno);
  close(r);
  close(w);
}

// sqlite's locking across a read-only connection and a writing one that
// opened after it: the writer's exclusive transaction keeps the reader
// out ("database is locked"), as on a local disk (with the kernel's
// locks, kept per inode, the reader read during the write).
TEST_F(LocksTest, SqliteReadOnlyConnectionSeesTheWritersLock) {
  const std::string db = Path("t/r/f/db");
  ShOk("sqlite3 " + db + " 'create table x(v); insert into x values (1);'");
  // The reader in this process, the writer in a child (sqlite coordinates
  // the connections of one process itself).
  const std::string script =
      "import os, sqlite3, sys\n"
      "r = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True,"
      " timeout=0)\n"
      "print(r.execute('select count(*) from x').fetchall()[0][0])\n"
      "locked_r, locked_w = os.pipe()\n"
      "go_r, go_w = os.pipe()\n"
      "if os.fork() == 0:\n"
      "    w = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)\n"
      "    w.execute('begin exclusive')\n"
      "    w.execute('insert into x values (2)')\n"
      "    os.write(locked_w, b'x')\n"
      "    os.read(go_r, 1)\n"
      "    w.execute('commit')\n"
      "    os._exit(0)\n"
      "os.read(locked_r, 1)\n"
      "try:\n"
      "    r.execute('select count(*) from x').fetchall()\n"
      "    print('read during the write')\n"
      "except sqlite3.OperationalError as e:\n"
      "    print(e)\n"
      "os.write(go_w, b'g')\n"
      "os.wait()\n"
      "print(r.execute('select count(*) from x').fetchall()[0][0])\n";
  const std::string file = tmp() + "/ro.py";
  std::ofstream(file) << script;
  EXPECT_EQ(ShOk("python3 " + file + " " + db), "1\ndatabase is locked\n2\n");
}

}  // namespace
}  // namespace tabletfs::testing
