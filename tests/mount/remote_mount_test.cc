// A mount of a remote Bigtable (`tabletfs bigtable://p/i MNT -o endpoint=`)
// against two servers, the same test bodies: Google's emulator
// (cbtemulator) and a `tabletfs --serve` daemon's API, each started on a
// free loopback port by the test. The shell works on the mount as on a
// local one (tables, rows, families, cells, `Q@T` at whole milliseconds,
// `.versions`, `.schema`); cbt sees what the mount wrote and the mount
// what cbt wrote; a server killed or stopped mid-session costs the shell
// an EIO within rpc_timeout, never a hang, and the daemon stays up and
// serves again once the server is back. Needs root (FUSE); skipped where
// cbtemulator (or, for the cbt test, cbt) is not installed.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

enum class RemoteServer { kEmulator, kTabletfs };

std::string ServerName(const ::testing::TestParamInfo<RemoteServer>& info) {
  return info.param == RemoteServer::kEmulator ? "emulator" : "tabletfs";
}

std::string EmulatorBinary() {
  if (const char* e = std::getenv("CBTEMULATOR")) return e;
  for (const char* sdk :
       {"/usr/lib/google-cloud-sdk", "/usr/share/google-cloud-sdk",
        "/opt/google-cloud-sdk"}) {
    std::string path =
        std::string(sdk) + "/platform/bigtable-emulator/cbtemulator";
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

std::string CbtBinary() {
  if (const char* e = std::getenv("CBT")) return e;
  for (const char* path : {"/usr/bin/cbt", "/usr/local/bin/cbt"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

// A loopback port nobody listens on now (the kernel's choice).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

bool Accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

// errno of reading all of `path` (0: read it, *out holds it).
int ReadErrno(const std::string& path, std::string* out = nullptr) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return errno;
  std::string data;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) data.append(buf, n);
  int err = n < 0 ? errno : 0;
  close(fd);
  if (out != nullptr) *out = data;
  return err;
}

class RemoteMountTest : public MountFixture,
                        public ::testing::WithParamInterface<RemoteServer> {
 protected:
  static constexpr double kRpcTimeoutSeconds = 2;

  void SetUp() override {
    MountFixture::SetUp();
    if (GetParam() == RemoteServer::kEmulator && EmulatorBinary().empty()) {
      GTEST_SKIP() << "cbtemulator not installed (set CBTEMULATOR)";
    }
    server_data_ = tmp() + "/server";
    log_ = tmp() + "/daemon.log";
    port_ = FreePort();
    ASSERT_GT(port_, 0);
    StartServer();
    set_source("bigtable://p/i");
    ASSERT_EQ(TryMountForeground(
                  {"-o", "endpoint=127.0.0.1:" + std::to_string(port_) +
                             ",rpc_timeout=2"},
                  {}, log_),
              0)
        << ReadFile(log_);
  }

  void TearDown() override {
    if (server_pid_ > 0) kill(server_pid_, SIGCONT);
    MountFixture::TearDown();  // unmounts while the server still answers
    StopServer();
  }

  // Starts the server on port_ and waits until it accepts (10 s at most).
  void StartServer() {
    std::vector<std::string> argv;
    if (GetParam() == RemoteServer::kEmulator) {
      argv = {EmulatorBinary(), "-host", "127.0.0.1", "-port",
              std::to_string(port_)};
    } else {
      argv = {TabletfsBinary(), "--serve", "-o",
              "bigtable_api=127.0.0.1:" + std::to_string(port_), server_data_};
    }
    const std::string server_log = tmp() + "/server.log";
    server_pid_ = fork();
    if (server_pid_ == 0) {
      int fd = open(server_log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      std::vector<char*> args;
      for (std::string& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    ASSERT_GT(server_pid_, 0);
    for (int i = 0; i < 1000 && !Accepts(port_); i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(Accepts(port_)) << ReadFile(server_log);
  }

  void StopServer(int sig = SIGTERM) {
    if (server_pid_ <= 0) return;
    kill(server_pid_, sig);
    waitpid(server_pid_, nullptr, 0);
    server_pid_ = -1;
  }

  // cbt against the server; returns its exit status, stdout in *out.
  int Cbt(const std::string& args, std::string* out) {
    const std::string cmd =
        "HOME='" + tmp() +
        "' BIGTABLE_EMULATOR_HOST=127.0.0.1:" + std::to_string(port_) +
        " timeout 30 " + CbtBinary() +
        " -creds /dev/null -project p -instance i " + args + " 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return -1;
    std::string result;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) result.append(buf, n);
    int status = pclose(p);
    *out = result;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  }

  // The table t with family f, made through the mount.
  void MakeTable() { ShOk("mkdir t && touch .schema/t/f && mkdir -p t/r/f"); }

  bool DaemonAlive() const { return kill(daemon_pid(), 0) == 0; }
  // From the mount table: a stat of the mount point itself needs the
  // server.
  bool StillMounted() const {
    return ReadFile("/proc/self/mounts")
               .find(" " + mnt() + " fuse.tabletfs ") != std::string::npos;
  }

  int port_ = -1;
  pid_t server_pid_ = -1;
  std::string server_data_;
  std::string log_;
};

TEST_P(RemoteMountTest, ShellMakesListsReadsAndRemoves) {
  MakeTable();
  ShOk("echo hello > t/r/f/q");
  EXPECT_EQ(ShOk("cat t/r/f/q"), "hello\n");
  EXPECT_EQ(ShOk("ls"), "t\n");
  EXPECT_EQ(ShOk("ls t"), "r\n");
  EXPECT_EQ(ShOk("ls t/r"), "f\n");
  EXPECT_EQ(ShOk("ls t/r/f"), "q\n");
  EXPECT_EQ(ShOk("stat -c %s t/r/f/q"), "6\n");
  ShOk("echo again > t/r/f/q");
  EXPECT_EQ(ShOk("cat t/r/f/q"), "again\n");
  // Two versions, both at whole milliseconds, newest first.
  const std::string versions = ShOk("ls .versions/t/r/f");
  ASSERT_EQ(ShOk("ls .versions/t/r/f | wc -l"), "2\n") << versions;
  EXPECT_EQ(ShOk("ls .versions/t/r/f | grep -vc '000$' || true"), "0\n")
      << versions;
  ShOk("rm t/r/f/q");
  EXPECT_NE(Sh("test -e t/r/f/q"), 0);
  EXPECT_EQ(ShOk("ls t/r/f"), "");
  ShOk("rmdir t/r/f t/r");
  // The store's things a remote has not: no API, no change events; said
  // once each in the log.
  const std::string log = ReadFile(log_);
  EXPECT_NE(log.find("no Bigtable API served for a remote mount"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("the store sends no change events"), std::string::npos)
      << log;
  EXPECT_EQ(access((tmp() + "/data").c_str(), F_OK), -1) << "no DATADIR";
}

TEST_P(RemoteMountTest, VersionsAtExplicitTimesAreWholeMilliseconds) {
  MakeTable();
  ShOk("printf v1 > t/r/f/q@1700000000123000");
  EXPECT_EQ(ShOk("cat t/r/f/q@1700000000123000"), "v1");
  // A T inside the same millisecond names the same version: rounded down,
  // the same way every time (it replaces v1).
  ShOk("printf v2 > t/r/f/q@1700000000123456");
  EXPECT_EQ(ShOk("ls .versions/t/r/f"), "q@1700000000123000\n");
  EXPECT_EQ(ShOk("cat .versions/t/r/f/q@1700000000123000"), "v2");
  EXPECT_EQ(ShOk("cat t/r/f/q@1700000000123999"), "v2");
  EXPECT_NE(Sh("cat t/r/f/q@1700000000122999"), 0);  // nothing before it
  // ISO-8601 with a fraction, too.
  ShOk("printf v3 > 't/r/f/q@2023-11-14T22:13:21.5Z'");
  EXPECT_EQ(ShOk("cat t/r/f/q@1700000001500000"), "v3");
  EXPECT_EQ(ShOk("cat t/r/f/q"), "v3");
  EXPECT_EQ(ShOk("ls -U .versions/t/r/f"),
            "q@1700000001500000\nq@1700000000123000\n");
  // A write through the mount goes above a version in the future, a whole
  // millisecond above it.
  ShOk("printf future > t/r/f/p@" +
       std::to_string((time(nullptr) + 600) * int64_t{1000000} + 123456));
  ShOk("printf now > t/r/f/p");
  EXPECT_EQ(ShOk("cat t/r/f/p"), "now");
  EXPECT_EQ(ShOk("ls .versions/t/r/f | grep '^p@' | grep -vc '000$' || true"),
            "0\n");
  // rm of one version; touch -d keeps its microseconds (an mtime, not a
  // version).
  ShOk("rm .versions/t/r/f/q@1700000000123000");
  EXPECT_EQ(ShOk("ls .versions/t/r/f | grep '^q@'"), "q@1700000001500000\n");
  ShOk("touch -d '2020-01-01 00:00:00.123456Z' t/r/f/q");
  EXPECT_EQ(ShOk("TZ=UTC stat -c %y t/r/f/q"),
            "2020-01-01 00:00:00.123456000 +0000\n");
  EXPECT_EQ(ShOk("cat t/r/f/q"), "v3");
}

TEST_P(RemoteMountTest, SchemaKeepsGcPolicyAndRefusesTheRest) {
  MakeTable();
  EXPECT_NE(ShOk("cat .schema/t/f").find("gcpolicy = never"),
            std::string::npos);
  ShOk("echo 'gcpolicy = maxversions=2' > .schema/t/f");
  EXPECT_NE(ShOk("cat .schema/t/f").find("gcpolicy = maxversions=2"),
            std::string::npos)
      << ShOk("cat .schema/t/f");
  // What the server does not keep: EOPNOTSUPP, and the log says why.
  std::string out;
  EXPECT_NE(Sh("chmod 600 .schema/t/f 2>&1", &out), 0);
  EXPECT_NE(out.find("Operation not supported"), std::string::npos) << out;
  // A settings change commits at close, which the shell does not check.
  int fd = open(Path(".schema/t/f").c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_EQ(write(fd, "compression = none\n", 19), 19);
  EXPECT_EQ(close(fd), -1);
  EXPECT_EQ(errno, EOPNOTSUPP) << strerror(errno);
  const std::string log = ReadFile(log_);
  EXPECT_NE(log.find("keeps only a family's GC policy"), std::string::npos)
      << log;
  EXPECT_NE(ShOk("cat .schema/t/f").find("compression = lz4"),
            std::string::npos);
  // chmod of a cell or a row changes nothing anywhere: it succeeds.
  ShOk("echo x > t/r/f/q && chmod 600 t/r/f/q && chmod 700 t/r");
  ShOk("rm .schema/t/f");
  EXPECT_NE(Sh("test -e .schema/t/f"), 0);
}

TEST_P(RemoteMountTest, CbtAndTheMountSeeEachOther) {
  if (CbtBinary().empty()) GTEST_SKIP() << "cbt not installed (set CBT)";
  MakeTable();
  ShOk("printf from-mount > t/r/f/q");
  std::string out;
  ASSERT_EQ(Cbt("read t", &out), 0);
  EXPECT_NE(out.find("\"from-mount\""), std::string::npos) << out;
  ASSERT_EQ(Cbt("set t r2 f:x=from-cbt", &out), 0) << out;
  // A name the kernel has not cached: at once.
  EXPECT_EQ(ShOk("cat t/r2/f/x"), "from-cbt");
  ASSERT_EQ(Cbt("set t r2 f:x=again", &out), 0) << out;
  // `.versions` asks the server: at once.
  EXPECT_EQ(ShOk("ls .versions/t/r2/f | wc -l"), "2\n");
  // The cached cell: once the attribute timeout (1 s) has passed.
  std::string value;
  for (int i = 0; i < 100 && value != "again"; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_EQ(ReadErrno(Path("t/r2/f/x"), &value), 0);
  }
  EXPECT_EQ(value, "again");
  // A GC policy set through the mount is the server's.
  ShOk("echo 'gcpolicy = maxversions=3' > .schema/t/f");
  ASSERT_EQ(Cbt("ls t", &out), 0);
  EXPECT_NE(out.find("versions() > 3"), std::string::npos) << out;
}

TEST_P(RemoteMountTest, DeadServerGivesEioInTimeAndTheMountRecovers) {
  MakeTable();
  ShOk("printf kept > t/r/f/q");
  // A writer open across the server's death: its close reports it.
  int writer =
      open(Path("t/r/f/w").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(writer, 0) << strerror(errno);
  ASSERT_EQ(write(writer, "lost", 4), 4);
  StopServer(SIGKILL);
  // What the mount answered in the last second may be answered again from
  // its read cache (README "Round trips"): past that, every request asks
  // the server.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  const auto start = std::chrono::steady_clock::now();
  const int read_err = ReadErrno(Path("t/r/f/q"));
  EXPECT_TRUE(read_err == EIO || read_err == ETIMEDOUT) << strerror(read_err);
  EXPECT_EQ(close(writer), -1);
  EXPECT_TRUE(errno == EIO || errno == ETIMEDOUT) << strerror(errno);
  struct stat st;
  EXPECT_EQ(stat(Path("t/r/nothing-cached").c_str(), &st), -1);
  EXPECT_TRUE(errno == EIO || errno == ETIMEDOUT) << strerror(errno);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(seconds, 3 * kRpcTimeoutSeconds) << "three failed requests";
  EXPECT_TRUE(DaemonAlive());
  EXPECT_TRUE(StillMounted());
  // Back on the same port (tabletfs: on the same data, so the cell is
  // there again; the emulator starts empty).
  StartServer();
  const bool same_data = GetParam() == RemoteServer::kTabletfs;
  std::string value;
  int err = -1;
  for (int i = 0; i < 100 && err != 0; i++) {
    err = same_data ? ReadErrno(Path("t/r/f/q"), &value)
                    : (mkdir(Path("t2").c_str(), 0755) == 0 ? 0 : errno);
    if (err != 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(err, 0) << strerror(err);
  if (same_data) {
    EXPECT_EQ(value, "kept");
    ShOk("printf new > t/r/f/q");
    EXPECT_EQ(ShOk("cat t/r/f/q"), "new");
  } else {
    ShOk("touch .schema/t2/f && mkdir -p t2/r/f && printf new > t2/r/f/q");
    EXPECT_EQ(ShOk("cat t2/r/f/q"), "new");
  }
}

TEST_P(RemoteMountTest, HungServerTimesOutWithinRpcTimeout) {
  MakeTable();
  ShOk("printf x > t/r/f/q");
  kill(server_pid_, SIGSTOP);  // connected, answering nothing
  // Stopped for sure (the signal is delivered asynchronously): state T.
  for (int i = 0; i < 1000; i++) {
    const std::string stat =
        ReadFile("/proc/" + std::to_string(server_pid_) + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size() &&
        stat[paren + 2] == 'T') {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const auto start = std::chrono::steady_clock::now();
  struct stat st;
  EXPECT_EQ(stat(Path("t/uncached-row").c_str(), &st), -1);
  EXPECT_TRUE(errno == EIO || errno == ETIMEDOUT) << strerror(errno);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_GE(seconds, kRpcTimeoutSeconds * 0.9);
  EXPECT_LT(seconds, 2 * kRpcTimeoutSeconds + 1) << "one deadline, not more";
  kill(server_pid_, SIGCONT);
  EXPECT_TRUE(DaemonAlive());
  std::string value;
  int err = -1;
  for (int i = 0; i < 100 && err != 0; i++) {
    err = ReadErrno(Path("t/r/f/q"), &value);
    if (err != 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(err, 0) << strerror(err);
  EXPECT_EQ(value, "x");
}

INSTANTIATE_TEST_SUITE_P(, RemoteMountTest,
                         ::testing::Values(RemoteServer::kEmulator,
                                           RemoteServer::kTabletfs),
                         ServerName);

}  // namespace
}  // namespace tabletfs::testing
