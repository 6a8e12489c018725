// The real tabletctl binary: global options, exit codes, one-line errors,
// pipes, and the refusal while a daemon holds the data directory.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "store/db.h"

namespace tabletfs {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class TabletctlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tabletctl_bin_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    data_ = dir_ + "/data";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs tabletctl with `args`; `env_datadir` sets TABLETFS_DATADIR (empty:
  // unset); `stdin_path` feeds standard input.
  Outcome Run(const std::vector<std::string>& args,
              const std::string& env_datadir = "",
              const std::string& stdin_path = "/dev/null") {
    const std::string out_path = dir_ + "/stdout";
    const std::string err_path = dir_ + "/stderr";
    const std::string binary = std::string(TABLETFS_BIN_DIR) + "/tabletctl";
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      const int in = open(stdin_path.c_str(), O_RDONLY);
      const int out =
          open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err =
          open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in < 0 || out < 0 || err < 0) _exit(127);
      dup2(in, 0);
      dup2(out, 1);
      dup2(err, 2);
      unsetenv("BIGTABLE_EMULATOR_HOST");  // would stand in for -endpoint
      if (env_datadir.empty()) {
        unsetenv("TABLETFS_DATADIR");
      } else {
        setenv("TABLETFS_DATADIR", env_datadir.c_str(), 1);
      }
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    Outcome o;
    int status = 0;
    waitpid(pid, &status, 0);
    o.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    o.out = Slurp(out_path);
    o.err = Slurp(err_path);
    return o;
  }

  Outcome Ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"-d", data_});
    return Run(args);
  }

  static int Lines(const std::string& s) {
    return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
  }

  std::string dir_;
  std::string data_;
};

TEST_F(TabletctlTest, UsageAndHelp) {
  Outcome o = Run({});
  EXPECT_EQ(o.code, 2);
  EXPECT_THAT(o.err, StartsWith("usage: tabletctl"));
  o = Run({"--help"});
  EXPECT_EQ(o.code, 0);
  EXPECT_THAT(o.out, HasSubstr("deleteallrows"));
  o = Run({"help", "set"});
  EXPECT_EQ(o.code, 0);
  EXPECT_THAT(o.out, HasSubstr("john@example.com"));
  // --help needs no data directory.
  o = Run({"lookup", "--help"});
  EXPECT_EQ(o.code, 0);
  EXPECT_THAT(o.out, StartsWith("usage: tabletctl [-d DATADIR] lookup TABLE"));
}

TEST_F(TabletctlTest, BadInvocationsAreOneLine) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"frobnicate"}, {"--frob", "ls"}, {"-d"}, {"help", "frob"}}) {
    Outcome o = Run(args);
    EXPECT_EQ(o.code, 2) << args[0];
    EXPECT_EQ(Lines(o.err), 1) << o.err;
    EXPECT_THAT(o.err, StartsWith("tabletctl: ")) << o.err;
    EXPECT_EQ(o.out, "");
  }
  Outcome o = Run({"ls"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err,
            "tabletctl: no data directory: pass -d DATADIR or set "
            "TABLETFS_DATADIR (or -endpoint HOST:PORT)\n");
  o = Run({"-endpoint"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "tabletctl: -endpoint needs a value\n");
  // The engine's maintenance has no meaning on an endpoint.
  o = Run({"-endpoint", "127.0.0.1:1", "compact"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err,
            "tabletctl compact: works on a data directory's engine, not on "
            "a Bigtable endpoint\n");
  o = Ctl({"ls"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "tabletctl: " + data_ + ": no such data directory\n");
  EXPECT_FALSE(std::filesystem::exists(data_));
}

TEST_F(TabletctlTest, DumpNeedsNoDataDirectory) {
  Outcome o = Run({"dump", dir_ + "/000001.sst"});
  EXPECT_EQ(o.code, 1);
  EXPECT_THAT(o.err, StartsWith("tabletctl dump: NotFound"));
  EXPECT_EQ(Lines(o.err), 1);
}

TEST_F(TabletctlTest, CommandsThroughTheBinary) {
  Outcome o =
      Ctl({"createtable", "customer", "families=Kundenname,ContactInfo"});
  ASSERT_EQ(o.code, 0) << o.err;
  o = Ctl({"set", "customer", "00001", "Kundenname:MN=T@1",
           "Kundenname:MN=Timothy@2", "ContactInfo:EA=john@example.com"});
  ASSERT_EQ(o.code, 0) << o.err;
  // TABLETFS_DATADIR stands in for -d.
  o = Run({"lookup", "customer", "00001", "columns=Kundenname:MN"}, data_);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out,
            "----------------------------------------\n"
            "00001\n"
            "  Kundenname:MN                            @ "
            "1970/01/01-00:00:00.000002\n"
            "    \"Timothy\"\n"
            "  Kundenname:MN                            @ "
            "1970/01/01-00:00:00.000001\n"
            "    \"T\"\n"
            "\n");
  EXPECT_EQ(o.err, "");
  o = Ctl({"count", "customer"});
  EXPECT_EQ(o.out, "1\n");

  o = Ctl({"set", "customer", "00001", "garbage"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(Lines(o.err), 1);
  EXPECT_THAT(o.err, StartsWith("tabletctl set: bad cell 'garbage'"));
  o = Ctl({"set", "customer", "00001", "NoSuchFamily:x=1"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(Lines(o.err), 1);
  o = Ctl({"lookup", "customer", "00009"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "");
  o = Ctl({"createtable", "empty"});
  ASSERT_EQ(o.code, 0) << o.err;
  o = Ctl({"tablets", "empty"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "empty\t-\t-\t0\t0\n");
  o = Ctl({"tablets"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(Lines(o.out), 2) << o.out;
  EXPECT_THAT(o.out, StartsWith("customer\t-\t-\t"));
  o = Ctl({"tablets", "nope"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(Lines(o.err), 1);
  EXPECT_THAT(o.err, StartsWith("tabletctl tablets: "));
  o = Ctl({"check"});
  EXPECT_EQ(o.code, 0) << o.err;
  o = Ctl({"compact"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.err, "");  // no progress bar when stderr is not a terminal
}

TEST_F(TabletctlTest, ExportToStdoutImportFromStdin) {
  ASSERT_EQ(Ctl({"createtable", "t", "families=f"}).code, 0);
  ASSERT_EQ(Ctl({"set", "t", "r1", "f:a=1@5", "f:a=2@6", "f:=x"}).code, 0);
  Outcome exported = Ctl({"export", "t", "format=jsonl"});
  ASSERT_EQ(exported.code, 0) << exported.err;
  EXPECT_EQ(exported.err, "");
  EXPECT_EQ(Lines(exported.out), 4);
  const std::string file = dir_ + "/t.jsonl";
  {
    std::ofstream f(file);
    f << exported.out;
  }
  Outcome imported =
      Run({"-d", data_, "import", "t2", "-", "format=jsonl"}, "", file);
  ASSERT_EQ(imported.code, 0) << imported.err;
  EXPECT_EQ(imported.out, "imported 1 row (3 cells) into t2\n");
  EXPECT_EQ(Ctl({"read", "t2"}).out, Ctl({"read", "t"}).out);
}

TEST_F(TabletctlTest, RefusesWhileMountedAndNamesTheMountPoint) {
  auto db = DB::Open(Options(), data_);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  // Without the daemon's files: the lock holder is still named.
  Outcome o = Ctl({"ls"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(Lines(o.err), 1);
  EXPECT_THAT(o.err, HasSubstr("is in use by another process"));
  // As the daemon records them.
  {
    std::ofstream(data_ + "/mountpoint") << "/mnt/tables\n";
    std::ofstream(data_ + "/mount.pid") << "4242\n";
  }
  o = Ctl({"ls"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "tabletctl: " + data_ +
                       " is mounted at /mnt/tables by tabletfs (pid 4242): "
                       "use the mount, or unmount it first (fusermount3 -u "
                       "/mnt/tables)\n");
  db->reset();
  o = Ctl({"ls"});
  EXPECT_EQ(o.code, 0) << o.err;
}

}  // namespace
}  // namespace tabletfs
