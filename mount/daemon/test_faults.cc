#include "mount/daemon/test_faults.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "fs/log.h"

namespace tabletfs::daemon {
namespace {

constexpr FaultOp kAllOps[] = {
    FaultOp::kRead,   FaultOp::kAppend,   FaultOp::kFlush,  FaultOp::kSync,
    FaultOp::kRename, FaultOp::kRemove,   FaultOp::kCreate, FaultOp::kSyncDir,
    FaultOp::kLock,   FaultOp::kTruncate, FaultOp::kOpen,   FaultOp::kClose,
};
static_assert(std::size(kAllOps) == kNumFaultOps);

bool ParseOp(const std::string& name, FaultOp* op) {
  for (FaultOp candidate : kAllOps) {
    if (FaultOpName(candidate) == name) {
      *op = candidate;
      return true;
    }
  }
  return false;
}

// A decimal byte count, all digits.
bool ParseBytes(const std::string& text, uint64_t* out) {
  if (text.empty() ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  errno = 0;
  *out = std::strtoull(text.c_str(), nullptr, 10);
  return errno == 0;
}

sigset_t Usr2() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR2);
  return set;
}

}  // namespace

std::unique_ptr<TestFaults> TestFaults::FromEnvironment() {
  const char* path = std::getenv(kTestFaultsVariable);
  if (path == nullptr || *path == '\0') return nullptr;
  return std::make_unique<TestFaults>(path);
}

TestFaults::TestFaults(std::string control_path)
    : control_path_(std::move(control_path)), env_(Env::Default()) {
  // Blocked here, before any thread exists, so that every thread inherits
  // the mask and SIGUSR2 reaches only sigwait() in Run(), never a handler
  // running inside a store or FUSE thread.
  sigset_t set = Usr2();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  fs::Log(LogLevel::kWarning, std::string("test hook: ") + kTestFaultsVariable +
                                  "=" + control_path_ +
                                  ": the store runs on a fault-injecting Env");
  Load();
  thread_ = std::thread([this] { Run(); });
}

TestFaults::~TestFaults() {
  stopping_.store(true);
  pthread_kill(thread_.native_handle(), SIGUSR2);
  thread_.join();
  WriteState("");
}

void TestFaults::Run() {
  sigset_t set = Usr2();
  while (true) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (stopping_.load()) return;
    Load();
  }
}

Status TestFaults::Apply(const std::string& text, FaultInjectionEnv* env,
                         std::string* summary, bool* power_cut) {
  env->ClearFaults();
  bool cut = false;
  std::optional<uint64_t> disk_size;
  struct Rule {
    FaultOp op;
    bool nospace;
    std::string target;
  };
  std::vector<Rule> rules;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (size_t hash = line.find('#'); hash != std::string::npos) {
      line.resize(hash);
    }
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    if (w.empty()) continue;
    if (w.size() == 1 && w[0] == "powercut") {
      cut = true;
      continue;
    }
    if (w[0] == "disksize") {
      uint64_t bytes = 0;
      if (w.size() != 2 || !ParseBytes(w[1], &bytes)) {
        return Status::InvalidArgument("line " + std::to_string(number) +
                                       ": \"" + line +
                                       "\" is not disksize BYTES");
      }
      disk_size = bytes;
      continue;
    }
    Rule rule{FaultOp::kRead, false, ""};
    size_t i = 0;
    if (w[0] == "nospace") {
      rule.nospace = true;
      i = 1;
    }
    if (i >= w.size() || !ParseOp(w[i], &rule.op) || w.size() > i + 2) {
      return Status::InvalidArgument("line " + std::to_string(number) + ": \"" +
                                     line + "\" is not [nospace] OP [TARGET]");
    }
    if (i + 1 < w.size()) rule.target = w[i + 1];
    rules.push_back(std::move(rule));
  }
  summary->clear();
  for (const Rule& rule : rules) {
    const std::string message =
        "injected by " + std::string(kTestFaultsVariable) +
        (rule.target.empty() ? "" : " (" + rule.target + ")");
    env->FailAll(
        rule.op,
        rule.nospace ? Status::NoSpace(message) : Status::IOError(message),
        rule.target);
    if (!summary->empty()) summary->append(", ");
    if (rule.nospace) summary->append("nospace ");
    summary->append(FaultOpName(rule.op));
    if (!rule.target.empty()) summary->append(" " + rule.target);
  }
  if (disk_size.has_value()) {
    env->SetDiskSize(*disk_size);
    if (!summary->empty()) summary->append(", ");
    summary->append("disksize " + std::to_string(*disk_size));
  }
  if (cut) summary->append(summary->empty() ? "powercut" : ", powercut");
  if (summary->empty()) *summary = "none";
  if (power_cut != nullptr) *power_cut = cut;
  return Status::OK();
}

void TestFaults::Load() {
  std::string text;
  {
    std::ifstream in(control_path_, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  std::string summary;
  bool power_cut = false;
  Status s = Apply(text, &env_, &summary, &power_cut);
  ++loads_;
  if (s.ok()) {
    fs::Log(LogLevel::kWarning, "test hook: faults now: " + summary);
  } else {
    fs::Log(LogLevel::kError, "test hook: " + control_path_ + ": " +
                                  s.ToString() + "; no faults now");
  }
  WriteState(s.ok() ? "" : s.ToString());
  if (s.ok() && power_cut) PowerCut();
}

void TestFaults::PowerCut() {
  // The store's threads go on running until the exit, but the env refuses
  // every write from here on, so nothing reaches the disk after the drop.
  env_.SetFilesystemActive(false);
  Status s = env_.DropUnsyncedData();
  fs::Log(s.ok() ? LogLevel::kWarning : LogLevel::kError,
          "test hook: power cut: " +
              (s.ok() ? std::string("unsynced data dropped") : s.ToString()) +
              "; exiting");
  WriteState(s.ok() ? "" : s.ToString());
  // No destructor, no unmount, no final sync: what a power cut allows.
  std::fflush(nullptr);
  _exit(s.ok() ? 0 : 1);
}

void TestFaults::WriteState(const std::string& error) {
  std::string state = "loads " + std::to_string(loads_) + "\n";
  if (!error.empty()) state += "error " + error + "\n";
  for (FaultOp op : kAllOps) {
    state += std::string(FaultOpName(op)) + " calls " +
             std::to_string(env_.CallCount(op)) + " injected " +
             std::to_string(env_.InjectedFailureCount(op)) + "\n";
  }
  const std::string path = control_path_ + ".state";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << state;
    if (!out.good()) return;
  }
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace tabletfs::daemon
