// The crash loop through the mount (issue 9): a writer process creates,
// overwrites (`> f`), appends to, removes and renames cells, sometimes with
// fsync, while the daemon is SIGKILLed at a random moment; after each kill
// the store is mounted again and checked against a model of every operation
// whose close()/rename()/unlink() had returned:
//   - every acknowledged file holds exactly what it was given, or the result
//     of the one operation in flight at the kill (never a mix of both, never
//     a partial value: each line names its file and generation and carries
//     a checksum);
//   - no removed cell comes back, no cell appears that nobody wrote;
//   - the store opens without complaint (mount, .tabletfs/stats, and at the
//     end `tabletctl check`).
//
// TABLETFS_CRASH_KILLS=N sets the number of kills (default 60);
// TABLETFS_SEED=n reruns one seed. tests/stress/crash_loop.sh runs thousands.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

constexpr int kRows = 3;
constexpr int kQualifiers = 12;
const char* const kFamilies[] = {"f", "g"};

uint64_t EnvNumber(const char* name, uint64_t fallback) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return strtoull(v, nullptr, 10);
}

// FNV-1a, enough to tell a torn or mixed line from a whole one.
uint32_t Checksum(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

// One self-describing line: the file it was written to, its generation, a
// padding that makes values of different sizes, and a checksum of the rest.
std::string Line(const std::string& file, uint64_t gen, int part) {
  std::string body = file + " gen=" + std::to_string(gen) +
                     " part=" + std::to_string(part) + " " +
                     std::string(static_cast<size_t>((gen * 7 + part) % 300) +
                                     // Now and then a value past the large
                                     // value threshold (value files).
                                     (gen % 41 == 0 ? 300000 : 0),
                                 static_cast<char>('a' + gen % 26));
  char sum[16];
  snprintf(sum, sizeof(sum), "%08x", Checksum(body));
  return body + " crc=" + sum + "\n";
}

// The content of an overwrite with `parts` lines (written by that many
// write() calls).
std::string Value(const std::string& file, uint64_t gen, int parts) {
  std::string v;
  for (int p = 0; p < parts; p++) v += Line(file, gen, p);
  return v;
}

// Every line of `content` is whole and its checksum matches.
bool LinesAreWhole(const std::string& content, std::string* bad) {
  size_t start = 0;
  while (start < content.size()) {
    size_t nl = content.find('\n', start);
    if (nl == std::string::npos) {
      *bad = "unterminated line: " + content.substr(start, 80);
      return false;
    }
    std::string line = content.substr(start, nl - start);
    size_t crc = line.rfind(" crc=");
    if (crc == std::string::npos || line.substr(crc + 5) != [&] {
          char sum[16];
          snprintf(sum, sizeof(sum), "%08x", Checksum(line.substr(0, crc)));
          return std::string(sum);
        }()) {
      *bad = "bad checksum: " + line.substr(0, 80);
      return false;
    }
    start = nl + 1;
  }
  return true;
}

enum class Op { kWrite, kAppend, kRemove, kRename, kFsyncDir };

// One operation, as the writer records it (text, one line) before starting
// it ("I ...") and after it returned ("D").
struct Record {
  Op op = Op::kWrite;
  std::string a, b;  // files relative to the mount
  uint64_t gen = 0;
  int parts = 0;
  bool fsync = false;

  std::string Encode() const {
    std::ostringstream o;
    o << "I " << static_cast<int>(op) << " " << a << " "
      << (b.empty() ? "-" : b) << " " << gen << " " << parts << " " << fsync
      << "\n";
    return o.str();
  }
  static Record Decode(const std::string& line) {
    std::istringstream in(line);
    Record r;
    std::string tag;
    int op;
    in >> tag >> op >> r.a >> r.b >> r.gen >> r.parts >> r.fsync;
    r.op = static_cast<Op>(op);
    if (r.b == "-") r.b.clear();
    return r;
  }
};

using Model = std::map<std::string, std::string>;  // file -> content

void Apply(const Record& r, Model* m) {
  switch (r.op) {
    case Op::kWrite:
      (*m)[r.a] = Value(r.a, r.gen, r.parts);
      break;
    case Op::kAppend:
      (*m)[r.a] += Line(r.a, r.gen, 0);
      break;
    case Op::kRemove:
      m->erase(r.a);
      break;
    case Op::kRename: {
      std::string v = (*m)[r.a];
      m->erase(r.a);
      (*m)[r.b] = v;
      break;
    }
    case Op::kFsyncDir:
      break;
  }
}

std::string FileName(int row, int family, int q) {
  return "t/r" + std::to_string(row) + "/" + kFamilies[family] + "/q" +
         std::to_string(q);
}

bool WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

uint64_t NowNanos() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<uint64_t>(ts.tv_nsec);
}

// The writer: runs in a forked child until a syscall fails (the daemon was
// killed) or `max_ops` are done. Records go to `log_fd` (a local file); an
// error is recorded as "E op file errno when(CLOCK_MONOTONIC ns) text".
// Exits 0 on ENOTCONN/ECONNABORTED (the kill), 2 on any other error, 3 when
// it ran out of operations.
[[noreturn]] void Writer(const std::string& mnt, Model model, uint64_t gen,
                         uint64_t seed, int log_fd, int max_ops) {
  std::mt19937_64 rng(seed);
  auto fail = [&](const char* what, const std::string& file) {
    int err = errno;
    std::string line = std::string("E ") + what + " " + file + " " +
                       std::to_string(err) + " " + std::to_string(NowNanos()) +
                       " " + strerror(err) + "\n";
    WriteAll(log_fd, line);
    _exit(err == ENOTCONN || err == ECONNABORTED ? 0 : 2);
  };
  for (int row = 0; row < kRows; row++) {
    for (int f = 0; f < 2; f++) {
      std::string dir = mnt + "/t/r" + std::to_string(row);
      if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) fail("mkdir", dir);
      dir += std::string("/") + kFamilies[f];
      if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) fail("mkdir", dir);
    }
  }
  for (int i = 0; i < max_ops; i++) {
    Record r;
    int row = static_cast<int>(rng() % kRows);
    r.a = FileName(row, static_cast<int>(rng() % 2),
                   static_cast<int>(rng() % kQualifiers));
    bool exists = model.count(r.a) != 0;
    int dice = static_cast<int>(rng() % 100);
    if (!exists || dice < 40) {
      r.op = Op::kWrite;
    } else if (dice < 60) {
      r.op = Op::kAppend;
    } else if (dice < 75) {
      r.op = Op::kRemove;
    } else if (dice < 97) {
      r.op = Op::kRename;
      do {
        r.b = FileName(row, static_cast<int>(rng() % 2),
                       static_cast<int>(rng() % kQualifiers));
      } while (r.b == r.a);
    } else {
      r.op = Op::kFsyncDir;
    }
    r.gen = ++gen;
    r.parts = 1 + static_cast<int>(rng() % 4);
    r.fsync = rng() % 10 == 0;
    if (!WriteAll(log_fd, r.Encode())) _exit(4);
    std::string a = mnt + "/" + r.a;
    switch (r.op) {
      case Op::kWrite:
      case Op::kAppend: {
        int flags = r.op == Op::kWrite ? O_CREAT | O_WRONLY | O_TRUNC
                                       : O_WRONLY | O_APPEND;
        int fd = open(a.c_str(), flags, 0644);
        if (fd < 0) fail("open", r.a);
        if (r.op == Op::kWrite) {
          for (int p = 0; p < r.parts; p++) {
            if (!WriteAll(fd, Line(r.a, r.gen, p))) fail("write", r.a);
          }
        } else if (!WriteAll(fd, Line(r.a, r.gen, 0))) {
          fail("write", r.a);
        }
        if (r.fsync && fsync(fd) != 0) fail("fsync", r.a);
        if (close(fd) != 0) fail("close", r.a);
        break;
      }
      case Op::kRemove:
        if (unlink(a.c_str()) != 0) fail("unlink", r.a);
        break;
      case Op::kRename: {
        std::string b = mnt + "/" + r.b;
        if (rename(a.c_str(), b.c_str()) != 0) fail("rename", r.a);
        break;
      }
      case Op::kFsyncDir: {
        std::string dir = a.substr(0, a.rfind('/'));
        int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
        if (fd < 0) fail("opendir", dir);
        if (fsync(fd) != 0) fail("fsyncdir", dir);
        close(fd);
        break;
      }
    }
    Apply(r, &model);
    if (!WriteAll(log_fd, "D\n")) _exit(4);
  }
  _exit(3);
}

void PauseMicros(uint64_t us) {
  struct timespec ts = {static_cast<time_t>(us / 1000000),
                        static_cast<long>((us % 1000000) * 1000)};
  nanosleep(&ts, nullptr);
}

class CrashLoopTest : public MountFixture {
 protected:
  // On failure the data directory is kept for a reproducer.
  void TearDown() override {
    if (HasFailure()) {
      Unmount();
      std::string kept = "/tmp/tabletfs_crash_loop_failed_" +
                         std::to_string(getpid()) + "_" +
                         std::to_string(time(nullptr));
      std::string cmd = "cp -a '" + datadir() + "' '" + kept + "'";
      if (system(cmd.c_str()) == 0) {
        std::cout << "data directory kept in " << kept << std::endl;
      }
    }
    MountFixture::TearDown();
  }

  // Every file on the mount under t/, with its content.
  Model ReadTree(std::string* error) {
    Model tree;
    for (int row = 0; row < kRows; row++) {
      for (int f = 0; f < 2; f++) {
        std::string rel = "t/r" + std::to_string(row) + "/" + kFamilies[f];
        DIR* d = opendir(Path(rel).c_str());
        if (d == nullptr) {
          if (errno != ENOENT) *error += "opendir " + rel + " failed\n";
          continue;
        }
        while (struct dirent* e = readdir(d)) {
          std::string name = e->d_name;
          if (name == "." || name == "..") continue;
          std::string file = rel + "/" + name;
          int fd = open(Path(file).c_str(), O_RDONLY);
          if (fd < 0) {
            *error += "listed but cannot open " + file + ": " +
                      strerror(errno) + "\n";
            continue;
          }
          std::string content;
          char buf[65536];
          ssize_t n;
          while ((n = read(fd, buf, sizeof(buf))) > 0) content.append(buf, n);
          if (n < 0) *error += "read " + file + " failed\n";
          close(fd);
          tree[file] = content;
        }
        closedir(d);
      }
    }
    return tree;
  }
};

TEST_F(CrashLoopTest, SigkillAtRandomMomentsLosesNothingAcknowledged) {
  const uint64_t seed = EnvNumber("TABLETFS_SEED", std::random_device{}());
  const int kills = static_cast<int>(EnvNumber("TABLETFS_CRASH_KILLS", 60));
  std::cout << "seed " << seed << " (TABLETFS_SEED), " << kills
            << " kills (TABLETFS_CRASH_KILLS)" << std::endl;
  std::mt19937_64 rng(seed);
  CreateTable("t", {"f", "g"});

  // Small memtables on some mounts, so that flushes and compactions are
  // killed too.
  auto mount_args = [&]() -> std::vector<std::string> {
    if (rng() % 2 == 0) return {"-o", "memtable_bytes=32768"};
    return {};
  };
  Mount(mount_args());
  ASSERT_FALSE(HasFatalFailure());

  Model model;
  uint64_t gen = 0;
  uint64_t ops_acknowledged = 0, files_verified = 0, in_flight_applied = 0,
           in_flight_lost = 0;
  std::map<int, int> errors_after_kill;  // errno -> count
  std::string log_path = tmp() + "/writer.log";
  for (int kill_no = 0; kill_no < kills; kill_no++) {
    SCOPED_TRACE("kill " + std::to_string(kill_no) + ", seed " +
                 std::to_string(seed));
    int log_fd =
        open(log_path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_APPEND, 0644);
    ASSERT_GE(log_fd, 0);
    uint64_t writer_seed = rng();
    pid_t writer = fork();
    ASSERT_GE(writer, 0);
    if (writer == 0) Writer(mnt(), model, gen, writer_seed, log_fd, 100000);
    close(log_fd);

    // A random moment: mostly early (right after a few operations, within
    // a commit), sometimes later with more data.
    uint64_t delay_us = rng() % 4 == 0 ? rng() % 200000 : rng() % 40000;
    PauseMicros(delay_us);
    int status = 0;
    ASSERT_EQ(waitpid(writer, &status, WNOHANG), 0)
        << "the writer stopped before the kill: " << ReadFile(log_path);
    const uint64_t killed_at = NowNanos();
    KillDaemon();
    // Bounded: every syscall on an aborted connection fails at once.
    pid_t got = 0;
    for (int i = 0; i < 2000 && got == 0; i++) {
      got = waitpid(writer, &status, WNOHANG);
      if (got == 0) PauseMicros(5000);
    }
    if (got == 0) {
      kill(writer, SIGKILL);
      waitpid(writer, &status, 0);
      FAIL() << "the writer hung after the kill";
    }
    std::string writer_log = ReadFile(log_path);
    size_t last_op = writer_log.rfind("I ");
    std::string tail =
        writer_log.substr(last_op == std::string::npos ? 0 : last_op);
    ASSERT_TRUE(WIFEXITED(status)) << status;
    if (WEXITSTATUS(status) == 2) {
      // After the kill any error is fair: the kernel reports a write() that
      // spans several FUSE requests and loses the connection midway as EIO,
      // and once the lazy unmount is done paths resolve to the empty mount
      // point (ENOENT). An error from before the kill is a failure.
      size_t e = writer_log.rfind("E ");
      ASSERT_NE(e, std::string::npos);
      std::istringstream in(writer_log.substr(e + 2));
      std::string what, file;
      int err = 0;
      uint64_t when = 0;
      in >> what >> file >> err >> when;
      EXPECT_GE(when, killed_at)
          << "the writer failed with an unexpected error: " << tail
          << "killed at " << killed_at;
      errors_after_kill[err]++;
    } else {
      ASSERT_EQ(WEXITSTATUS(status), 0) << tail;
    }

    // Replay the acknowledged operations; keep the one in flight.
    std::istringstream log(ReadFile(log_path));
    std::string line;
    std::optional<Record> pending;
    while (std::getline(log, line)) {
      if (line.rfind("I ", 0) == 0) {
        ASSERT_FALSE(pending.has_value()) << "two operations in flight";
        pending = Record::Decode(line);
        gen = std::max(gen, pending->gen);
      } else if (line == "D") {
        ASSERT_TRUE(pending.has_value());
        Apply(*pending, &model);
        ops_acknowledged++;
        pending.reset();
      }
    }
    Model if_applied = model;
    if (pending.has_value()) Apply(*pending, &if_applied);

    Mount(mount_args());
    ASSERT_FALSE(HasFatalFailure()) << "the store did not mount again";
    std::string error;
    Model tree = ReadTree(&error);
    ASSERT_EQ(error, "");
    bool applied = false;
    if (tree != model) {
      if (tree != if_applied) {
        std::ostringstream diff;
        std::set<std::string> names;
        for (auto& [k, v] : tree) names.insert(k);
        for (auto& [k, v] : model) names.insert(k);
        for (auto& [k, v] : if_applied) names.insert(k);
        for (const std::string& n : names) {
          auto show = [&](const Model& m) {
            auto it = m.find(n);
            if (it == m.end()) return std::string("(absent)");
            std::string whole;
            if (!LinesAreWhole(it->second, &whole)) return "TORN " + whole;
            return std::to_string(it->second.size()) + " bytes, " +
                   it->second.substr(0, it->second.find(" part="));
          };
          auto a = tree.find(n), b = model.find(n), c = if_applied.find(n);
          bool same_b = (a == tree.end()) == (b == model.end()) &&
                        (a == tree.end() || a->second == b->second);
          bool same_c = (a == tree.end()) == (c == if_applied.end()) &&
                        (a == tree.end() || a->second == c->second);
          if (!same_b || !same_c) {
            diff << n << ": mount " << show(tree) << "; acknowledged "
                 << show(model) << "; with the pending op " << show(if_applied)
                 << "\n";
          }
        }
        FAIL() << "after the kill the tree is neither the acknowledged state "
                  "nor that plus the operation in flight ("
               << (pending ? pending->Encode() : "none") << ")\n"
               << diff.str();
      }
      applied = true;
      in_flight_applied++;
    }
    if (applied) model = if_applied;
    if (!applied && if_applied != model) in_flight_lost++;
    for (auto& [name, content] : tree) {
      std::string bad;
      ASSERT_TRUE(LinesAreWhole(content, &bad)) << name << ": " << bad;
      files_verified++;
    }
    std::string stats = ReadFile(Path(".tabletfs/stats"));
    EXPECT_NE(stats.find("background_error none\n"), std::string::npos)
        << stats;
  }
  Unmount();
  std::string check_cmd = std::string(TABLETFS_BIN_DIR) + "/tabletctl -d '" +
                          datadir() + "' check > /dev/null";
  EXPECT_EQ(system(check_cmd.c_str()), 0) << "tabletctl check found damage";
  std::cout << kills << " kills survived, " << ops_acknowledged
            << " operations acknowledged, " << in_flight_applied
            << " in-flight operations found applied, " << files_verified
            << " files verified, " << model.size() << " files at the end, "
            << in_flight_lost << " in-flight operations found not applied";
  for (auto [err, n] : errors_after_kill) {
    std::cout << ", " << n << " x " << strerror(err) << " after a kill";
  }
  std::cout << std::endl;
}

}  // namespace
}  // namespace tabletfs::testing
