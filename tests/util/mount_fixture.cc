#include "tests/util/mount_fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/util/bigtable_server.h"

namespace tabletfs::testing {
namespace {

void ShortPause() {
  struct timespec ts = {0, 5 * 1000 * 1000};
  nanosleep(&ts, nullptr);
}

bool ProcessGone(pid_t pid) {
  if (kill(pid, 0) != 0) return true;
  // Reparented daemons may linger as zombies when nobody reaps them.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  size_t close = line.rfind(')');
  if (close == std::string::npos || line.size() < close + 3) return true;
  if (line[close + 2] != 'Z') return false;
  // A killed leader is a zombie while its other threads still exit and
  // hold the process's files (the store's flock): wait for them too.
  std::error_code ec;
  size_t threads = 0;
  for (auto it = std::filesystem::directory_iterator(
           "/proc/" + std::to_string(pid) + "/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    threads++;
  }
  return threads <= 1;
}

int RunProgram(const std::vector<std::string>& argv) {
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> args;
    for (const std::string& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int64_t MicrosAfterEveryWrite() {
  const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  return (now / 1000000 + 2) * 1000000;
}

std::string TabletfsBinary() {
  return std::string(TABLETFS_BIN_DIR) + "/tabletfs";
}

void MountFixture::SetUp() {
  char tmpl[] = "/tmp/tabletfs_mount_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  tmp_ = tmpl;
  // Other users (allow_other tests) must be able to reach the mount point.
  ASSERT_EQ(chmod(tmp_.c_str(), 0755), 0);
  datadir_ = tmp_ + "/data";
  mnt_ = tmp_ + "/mnt";
  ASSERT_EQ(mkdir(mnt_.c_str(), 0755), 0);
  if (!remote()) return;
  if (store_ == MountStore::kEmulator && EmulatorBinary().empty()) {
    GTEST_SKIP() << "cbtemulator is not installed (set CBTEMULATOR)";
  }
  server_ = std::make_unique<BigtableServer>(
      store_ == MountStore::kEmulator ? BigtableServer::kEmulator
                                      : BigtableServer::kServer,
      tmp_ + "/server", tmp_ + "/server.log");
  ASSERT_TRUE(server_->Start())
      << "the server did not start: " << server_->Log();
  source_ = "bigtable://p/i";
}

void MountFixture::TearDown() {
  // Unmount while the server still answers (a stopped one is continued).
  if (server_ != nullptr) server_->Resume();
  if (mounted_) Unmount();
  server_.reset();
  if (!tmp_.empty()) RunProgram({"rm", "-rf", tmp_});  // empty: no SetUp
}

std::string StoreName(const ::testing::TestParamInfo<MountStore>& info) {
  switch (info.param) {
    case MountStore::kEngine:
      return "engine";
    case MountStore::kMemory:
      return "memory";
    case MountStore::kEmulator:
      return "emulator";
    case MountStore::kServer:
      return "server";
  }
  return "unknown";
}

bool LongTestsRequested() {
  const char* long_tests = std::getenv("TABLETFS_LONG_TESTS");
  return long_tests != nullptr && *long_tests != '\0' &&
         std::string(long_tests) != "0";
}

std::vector<std::string> MountFixture::RemoteArgs() const {
  if (server_ == nullptr) return {};
  std::string options = "endpoint=" + server_->endpoint();
  if (rpc_timeout_ > 0) {
    std::ostringstream seconds;
    seconds << rpc_timeout_;
    options += ",rpc_timeout=" + seconds.str();
  }
  return {"-o", options};
}

std::vector<std::string> MountFixture::StoreArgs(
    const std::vector<std::string>& extra) {
  std::vector<std::string> args = extra;
  if (store_ == MountStore::kMemory && source_.empty()) {
    args.insert(args.begin(), {"-o", "store=memory"});
  }
  if (remote()) {
    std::vector<std::string> remote_args = RemoteArgs();
    args.insert(args.begin(), remote_args.begin(), remote_args.end());
  }
  return args;
}

void MountFixture::RunPendingSeeds() {
  std::vector<std::string> seeds;
  seeds.swap(pending_seeds_);
  for (const std::string& cmd : seeds) ShOk(cmd);
}

namespace {

// `text` quoted for /bin/sh.
std::string Quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

std::unique_ptr<DB> MountFixture::OpenDb() {
  EXPECT_EQ(store_, MountStore::kEngine) << "OpenDb needs the engine";
  if (store_ != MountStore::kEngine) return nullptr;
  Options options;
  auto db = DB::Open(options, datadir_);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  if (!db.ok()) return nullptr;
  return std::move(db).value();
}

void MountFixture::CreateTable(const std::string& table,
                               const std::vector<std::string>& families) {
  if (store_ != MountStore::kEngine) {
    std::string cmd = "mkdir " + Quoted(table);
    for (const std::string& f : families) {
      cmd += " && touch " + Quoted(".schema/" + table + "/" + f);
    }
    pending_seeds_.push_back(cmd);
    if (mounted_) RunPendingSeeds();
    return;
  }
  auto db = OpenDb();
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(db->CreateTable(table).ok());
  for (const std::string& f : families) {
    ASSERT_TRUE(db->CreateFamily(table, f, FamilySettings()).ok());
  }
}

void MountFixture::PutCells(const std::string& table,
                            const std::vector<SeedCell>& cells) {
  if (store_ != MountStore::kEngine) {
    std::string cmd = "true";
    for (const SeedCell& c : cells) {
      std::string dir = table + "/" + c.row + "/" + c.family;
      cmd +=
          " && mkdir -p " + Quoted(dir) + " && printf %s " + Quoted(c.value) +
          " > " +
          Quoted(dir + "/" + c.qualifier + "@" + std::to_string(c.timestamp));
    }
    pending_seeds_.push_back(cmd);
    if (mounted_) RunPendingSeeds();
    return;
  }
  auto db = OpenDb();
  ASSERT_NE(db, nullptr);
  for (const SeedCell& c : cells) {
    RowMutation m(c.row);
    m.SetCell(c.family, c.qualifier, c.timestamp, c.value);
    ASSERT_TRUE(db->Apply(table, m, WriteOptions()).ok());
  }
}

int MountFixture::TryMount(const std::vector<std::string>& extra_args) {
  // A remote mount has no DATADIR, so no mount.pid to find its daemon by.
  if (remote()) return TryMountForeground(extra_args, {}, daemon_log());
  std::vector<std::string> argv = {TabletfsBinary()};
  std::vector<std::string> extra = StoreArgs(extra_args);
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(datadir_);
  argv.push_back(mnt_);
  int rc = RunProgram(argv);
  if (rc != 0) return rc;
  mounted_ = true;
  std::ifstream pid_file(datadir_ + "/mount.pid");
  long pid = -1;
  pid_file >> pid;
  daemon_pid_ = static_cast<pid_t>(pid);
  RunPendingSeeds();
  return 0;
}

int MountFixture::TryMountForeground(const std::vector<std::string>& extra_args,
                                     const std::vector<std::string>& env,
                                     const std::string& log) {
  std::vector<std::string> argv = {TabletfsBinary(), "-f"};
  std::vector<std::string> extra = StoreArgs(extra_args);
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(source_.empty() ? datadir_ : source_);
  argv.push_back(mnt_);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) dup2(fd, 2);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const std::string& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  if (pid < 0) return -1;
  // Bounded: 20 s.
  for (int i = 0; i < 4000; i++) {
    if (IsMounted()) {
      mounted_ = true;
      daemon_pid_ = pid;
      daemon_is_child_ = true;
      RunPendingSeeds();
      return 0;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    ShortPause();
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

void MountFixture::Mount(const std::vector<std::string>& extra_args) {
  ASSERT_EQ(TryMount(extra_args), 0) << "tabletfs failed to mount";
  ASSERT_TRUE(IsMounted());
  ASSERT_GT(daemon_pid_, 0);
}

bool MountFixture::IsMounted() const {
  struct stat a, b;
  if (stat(mnt_.c_str(), &a) != 0) return false;
  if (stat(tmp_.c_str(), &b) != 0) return false;
  return a.st_dev != b.st_dev;
}

bool MountFixture::InMountTable() const {
  return ReadFile("/proc/self/mounts").find(" " + mnt_ + " fuse") !=
         std::string::npos;
}

void MountFixture::WaitForDaemonExit() {
  if (daemon_pid_ <= 0) return;
  // Bounded: 20 s.
  for (int i = 0; i < 4000 && !ProcessGone(daemon_pid_); i++) ShortPause();
  EXPECT_TRUE(ProcessGone(daemon_pid_)) << "the daemon did not exit";
  if (daemon_is_child_) waitpid(daemon_pid_, nullptr, WNOHANG);
  daemon_is_child_ = false;
  daemon_pid_ = -1;
}

void MountFixture::Unmount() {
  if (!mounted_) return;
  mounted_ = false;
  // Already unmounted (SIGTERM to the daemon, umount): just wait for it.
  // From the mount table: a stat of the mount point fails (EIO) while a
  // remote mount's server does not answer.
  if (!InMountTable()) {
    WaitForDaemonExit();
    return;
  }
  // A process that used the mount and was just killed, or a path lookup
  // in flight, holds it for a moment: busy for 2 s is a leak.
  bool unmounted = false;
  for (int i = 0; i < 20 && !unmounted; i++) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    unmounted = RunProgram({"fusermount3", "-u", mnt_}) == 0;
  }
  if (!unmounted) {
    ADD_FAILURE() << "fusermount3 -u failed for 2 s (busy); users of the "
                     "mount: "
                  << MountUsers() << "; lazy unmount";
    RunProgram({"fusermount3", "-uz", mnt_});
  }
  WaitForDaemonExit();
}

std::string MountFixture::MountUsers() const {
  std::string users;
  std::error_code ec;
  auto inside = [this](const std::filesystem::path& p) {
    std::error_code e;
    const std::string target = std::filesystem::read_symlink(p, e).string();
    return !e && target.compare(0, mnt_.size(), mnt_) == 0;
  };
  for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    bool uses = inside(proc.path() / "cwd");
    for (const auto& fd :
         std::filesystem::directory_iterator(proc.path() / "fd", ec)) {
      uses = uses || inside(fd.path());
    }
    if (uses) {
      users += pid + " (" + ReadFile("/proc/" + pid + "/comm");
      if (!users.empty() && users.back() == '\n') users.pop_back();
      users += ") ";
    }
  }
  return users.empty() ? "none found" : users;
}

void MountFixture::KillDaemon() {
  ASSERT_GT(daemon_pid_, 0);
  kill(daemon_pid_, SIGKILL);
  WaitForDaemonExit();
  RunProgram({"fusermount3", "-uz", mnt_});
  mounted_ = false;
}

int MountFixture::Sh(const std::string& command, std::string* out) {
  std::string full = "cd '" + mnt_ + "' || exit 99\n" + command;
  FILE* p = popen(full.c_str(), "r");
  if (p == nullptr) return -1;
  std::string result;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) result.append(buf, n);
  int status = pclose(p);
  if (out != nullptr) *out = std::move(result);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

std::string MountFixture::ShOk(const std::string& command) {
  std::string out;
  int rc = Sh(command, &out);
  EXPECT_EQ(rc, 0) << "command failed: " << command << "\noutput: " << out;
  return out;
}

bool MountFixture::GoneSoon(const std::string& rel) const {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (access(Path(rel).c_str(), F_OK) == 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::vector<std::string> MountFixture::FollowLines(int fd, size_t lines) {
  std::string text;
  for (int i = 0; i < 1000 && static_cast<size_t>(std::count(
                                  text.begin(), text.end(), '\n')) < lines;
       i++) {
    struct stat st;
    if (fstat(fd, &st) != 0) break;
    if (static_cast<size_t>(st.st_size) <= text.size()) {
      usleep(10000);
      continue;
    }
    std::string buf(static_cast<size_t>(st.st_size) - text.size(), '\0');
    ssize_t n =
        pread(fd, buf.data(), buf.size(), static_cast<off_t>(text.size()));
    if (n <= 0) break;
    text.append(buf.data(), static_cast<size_t>(n));
  }
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string MountFixture::Untimed(const std::string& line) {
  size_t t = line.find(",\"timestamp\":");
  if (t == std::string::npos) return line;
  size_t end = line.find_first_of(",}", t + 1);
  return line.substr(0, t) + line.substr(end);
}

std::string MountFixture::ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void MountFixture::WriteFile(const std::string& path,
                             const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

}  // namespace tabletfs::testing
