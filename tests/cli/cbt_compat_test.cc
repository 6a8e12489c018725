// tabletctl against cbt itself: one session of cbt's table and data
// commands runs through Google's cbt against the Bigtable emulator
// (cbtemulator, from the Google Cloud SDK) and through tabletctl on a data
// directory, and every command's standard output must be the same bytes
// (and both must succeed or both fail). Standard error is not compared: cbt
// logs its errors with a date.
//
// Needs cbt on PATH and the emulator (TABLETFS_CBTEMULATOR, or the SDK's
// platform/bigtable-emulator/cbtemulator); skipped with a message when they
// are missing. One cbt call takes about 0.7 s: the session takes ~15 s.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

struct Output {
  int code = -1;
  std::string out;
};

// Runs argv with extra environment entries; stdout captured, stderr dropped.
Output RunProgram(const std::vector<std::string>& argv,
           const std::vector<std::string>& env = {}) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], 1);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  Output result;
  char buf[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], buf, sizeof(buf))) > 0) result.out.append(buf, n);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string FindEmulator() {
  if (const char* e = getenv("TABLETFS_CBTEMULATOR"); e != nullptr && *e) {
    return e;
  }
  for (const char* sdk : {"/usr/lib/google-cloud-sdk", "/usr/share/google-cloud-sdk",
                          "/opt/google-cloud-sdk"}) {
    const std::string path =
        std::string(sdk) + "/platform/bigtable-emulator/cbtemulator";
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

bool HaveCbt() { return RunProgram({"sh", "-c", "command -v cbt"}).code == 0; }

class CbtCompatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string emulator = FindEmulator();
    if (emulator.empty() || !HaveCbt()) {
      GTEST_SKIP() << "cbt or cbtemulator not installed (Debian: "
                      "google-cloud-cli-cbt, "
                      "google-cloud-cli-bigtable-emulator)";
    }
    char tmpl[] = "/tmp/cbt_compat_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // The emulator on a free port; it prints "... running on HOST:PORT".
    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    emulator_ = fork();
    ASSERT_GE(emulator_, 0);
    if (emulator_ == 0) {
      dup2(pipe_fds[1], 1);
      dup2(pipe_fds[1], 2);
      close(pipe_fds[0]);
      close(pipe_fds[1]);
      execl(emulator.c_str(), emulator.c_str(), "-host", "127.0.0.1", "-port",
            "0", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(pipe_fds[1]);
    std::string banner;
    pollfd p{pipe_fds[0], POLLIN, 0};
    while (banner.find('\n') == std::string::npos &&
           poll(&p, 1, 20'000) == 1) {
      char buf[256];
      const ssize_t n = read(pipe_fds[0], buf, sizeof(buf));
      if (n <= 0) break;
      banner.append(buf, n);
    }
    emulator_out_ = pipe_fds[0];
    const size_t at = banner.find("running on ");
    ASSERT_NE(at, std::string::npos) << "emulator said: " << banner;
    host_ = banner.substr(at + 11, banner.find('\n', at) - at - 11);
  }

  void TearDown() override {
    if (emulator_ > 0) {
      kill(emulator_, SIGTERM);
      waitpid(emulator_, nullptr, 0);
    }
    if (emulator_out_ >= 0) close(emulator_out_);
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  Output Cbt(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"cbt", "-project", "p", "-instance", "i"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProgram(argv, {"BIGTABLE_EMULATOR_HOST=" + host_, "TZ=UTC",
                      "HOME=" + dir_});
  }

  Output Tabletctl(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {std::string(TABLETFS_BIN_DIR) + "/tabletctl",
                                     "-d", dir_ + "/data"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProgram(argv);
  }

  std::string dir_;
  std::string host_;
  pid_t emulator_ = -1;
  int emulator_out_ = -1;
};

std::string T(int seconds) {  // 2026-01-01T00:00:00Z + seconds, in µs
  return std::to_string(1767225600000000LL + seconds * 1000000LL);
}

TEST_F(CbtCompatTest, SameSessionSameOutput) {
  // Every command of cbt's that tabletctl has, each once or twice (a cbt
  // call costs ~0.7 s, so the session stays short).
  const std::vector<std::vector<std::string>> session = {
      {"createtable", "webtable",
       "families=contents:maxversions=3,anchor,meta:maxage=3650d||"
       "maxversions=2"},
      {"createfamily", "webtable", "b_family"},
      {"setgcpolicy", "webtable", "b_family", "maxage=36h", "or",
       "maxversions=1", "force"},
      {"ls", "webtable"},
      {"set", "webtable", "com.cnn.www", "contents:=<html>v1@" + T(3),
       "contents:=<html>v2@" + T(5), "anchor:cnnsi.com=CNN@" + T(9),
       "anchor:my.look.ca=CNN.com@" + T(8), "meta:lang=en@" + T(1),
       "b_family:z=john@example.com@" + T(2)},
      {"set", "webtable", "com.example.www",
       "anchor:www.iana.org=example domains@" + T(4)},
      {"set", "webtable", "org.wikipedia.en", "contents:=<html>wp@" + T(7),
       "meta:=tab\there \"quoted\" \xc3\xbcn\xc3\xaf@" + T(7)},
      {"lookup", "webtable", "com.cnn.www", "columns=anchor:cnnsi.com,contents:",
       "cells-per-column=1"},
      {"read", "webtable"},
      {"read", "webtable", "start=com.example.www", "end=org", "count=5"},
      {"count", "webtable", "prefix=com."},
      {"deletecolumn", "webtable", "com.cnn.www", "anchor", "my.look.ca"},
      {"deletecolumn", "webtable", "com.cnn.www", "nosuchfamily", "x"},
      {"deletefamily", "webtable", "b_family"},
      {"lookup", "webtable", "com.cnn.www"},
      {"deleterow", "webtable", "com.example.www"},
      {"deleteallrows", "webtable"},
      {"count", "webtable"},
      {"deletetable", "webtable"},
      {"ls"},
  };
  for (const auto& command : session) {
    std::string shown;
    for (const std::string& a : command) shown += " " + a;
    const Output cbt = Cbt(command);
    const Output ours = Tabletctl(command);
    EXPECT_EQ(ours.out, cbt.out) << shown;
    EXPECT_EQ(ours.code == 0, cbt.code == 0)
        << shown << ": tabletctl exit " << ours.code << ", cbt exit "
        << cbt.code;
  }
}

}  // namespace
