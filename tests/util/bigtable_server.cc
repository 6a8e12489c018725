#include "tests/util/bigtable_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  return a;
}

// The state letter of /proc/PID/stat ('T': stopped), or 0.
char ProcessState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return 0;
  return stat[paren + 2];
}

}  // namespace

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

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a = Loopback(0);
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
  if (fd < 0) return false;
  sockaddr_in a = Loopback(port);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

BigtableServer::BigtableServer(Kind kind, std::string data_dir, std::string log)
    : kind_(kind), data_dir_(std::move(data_dir)), log_(std::move(log)) {}

BigtableServer::~BigtableServer() {
  Resume();
  Stop();
}

std::string BigtableServer::endpoint() const {
  return "127.0.0.1:" + std::to_string(port_);
}

std::string BigtableServer::Log() const {
  std::ifstream in(log_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool BigtableServer::Start() {
  if (pid_ > 0) return true;
  if (port_ < 0) port_ = FreePort();
  if (port_ < 0) return false;
  std::vector<std::string> argv;
  if (kind_ == kEmulator) {
    argv = {EmulatorBinary(), "-host", "127.0.0.1", "-port",
            std::to_string(port_)};
  } else {
    argv = {TabletfsBinary(), "--serve", "-o", "bigtable_api=" + endpoint(),
            data_dir_};
  }
  if (argv[0].empty()) return false;
  pid_ = fork();
  if (pid_ == 0) {
    int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
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
  if (pid_ < 0) return false;
  // Bounded: 20 s (an ASan build on a loaded machine starts slowly).
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!Accepts(port_)) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_ ||
        std::chrono::steady_clock::now() > deadline) {
      Stop(SIGKILL);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void BigtableServer::Stop(int sig) {
  if (pid_ <= 0) return;
  if (paused_ && sig != SIGKILL) Resume();
  kill(pid_, sig);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  paused_ = false;
}

void BigtableServer::Pause() {
  if (pid_ <= 0 || paused_) return;
  kill(pid_, SIGSTOP);
  paused_ = true;
  // The signal is delivered asynchronously: wait for state T (1 s at most).
  for (int i = 0; i < 1000 && ProcessState(pid_) != 'T'; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void BigtableServer::Resume() {
  if (pid_ <= 0 || !paused_) return;
  kill(pid_, SIGCONT);
  paused_ = false;
}

}  // namespace tabletfs::testing
