// The daemon's command line, exit codes, pid files and mount.fuse3.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "gtest/gtest.h"
#include "mount/daemon/args.h"
#include "store/options.h"
#include "tests/util/gcc_bug_105329.h"
#include "tests/util/mount_fixture.h"

namespace tabletfs::testing {
namespace {

using daemon::DaemonArgs;
using daemon::ParseArgs;

bool Parse(std::vector<const char*> argv, DaemonArgs* out, std::string* error) {
  argv.insert(argv.begin(), "tabletfs");
  return ParseArgs(static_cast<int>(argv.size()), argv.data(), out, error);
}

TEST(DaemonArgsTest, SshfsShape) {
  DaemonArgs a;
  std::string error;
  ASSERT_TRUE(
      Parse({"-f", "-s", "-o", "allow_other,entry_timeout=5",
             "-omemtable_bytes=1024,block_cache_bytes=1048576", "data", "mnt"},
            &a, &error))
      << error;
  EXPECT_TRUE(a.foreground);
  EXPECT_TRUE(a.single_threaded);
  EXPECT_EQ(a.datadir, "data");
  EXPECT_EQ(a.mountpoint, "mnt");
  EXPECT_EQ(a.entry_timeout, 5.0);
  EXPECT_EQ(a.memtable_bytes, 1024u);
  EXPECT_EQ(a.block_cache_bytes, 1048576u);
  EXPECT_EQ(a.fuse_options, std::vector<std::string>{"allow_other"});
}

TEST(DaemonArgsTest, MountFuse3OptionsAreAcceptedOrIgnored) {
  DaemonArgs a;
  std::string error;
  ASSERT_TRUE(Parse(
      {"data", "mnt", "-o", "rw,dev,suid,defaults,_netdev,nofail"}, &a, &error))
      << error;
  EXPECT_EQ(a.fuse_options, (std::vector<std::string>{"rw", "dev", "suid"}));
}

TEST(DaemonArgsTest, Refusals) {
  DaemonArgs a;
  std::string error;
  EXPECT_FALSE(Parse({"data"}, &a, &error));
  EXPECT_FALSE(Parse({"-x", "data", "mnt"}, &a, &error));
  EXPECT_FALSE(Parse({"-o", "memtable_bytes=lots", "data", "mnt"}, &a, &error));
  EXPECT_NE(error.find("memtable_bytes"), std::string::npos);
  DaemonArgs h;
  EXPECT_TRUE(Parse({"--help"}, &h, &error));
  EXPECT_TRUE(h.help);
}

TEST(DaemonArgsTest, CommitInterval) {
  DaemonArgs a;
  std::string error;
  ASSERT_TRUE(Parse({"-o", "commit=1", "data", "mnt"}, &a, &error)) << error;
  EXPECT_EQ(a.commit_seconds, 1u);
  DaemonArgs off;
  ASSERT_TRUE(Parse({"-o", "commit=0", "data", "mnt"}, &off, &error));
  EXPECT_EQ(off.commit_seconds, 0u);
  DaemonArgs unset;
  ASSERT_TRUE(Parse({"data", "mnt"}, &unset, &error));
  EXPECT_FALSE(unset.commit_seconds.has_value());  // the store's 5 s
  for (const char* bad : {"commit=", "commit=1.5", "commit=-1", "commit=86401"}) {
    DaemonArgs b;
    EXPECT_FALSE(Parse({"-o", bad, "data", "mnt"}, &b, &error)) << bad;
    EXPECT_NE(error.find("option commit wants whole seconds"),
              std::string::npos)
        << error;
  }
}

TEST(DaemonArgsTest, SpinMicroseconds) {
  DaemonArgs unset;
  std::string error;
  ASSERT_TRUE(Parse({"data", "mnt"}, &unset, &error)) << error;
  EXPECT_EQ(unset.spin_us, 50u);
  DaemonArgs off;
  ASSERT_TRUE(Parse({"-o", "spin_us=0", "data", "mnt"}, &off, &error));
  EXPECT_EQ(off.spin_us, 0u);
  for (const char* bad : {"spin_us=", "spin_us=-1", "spin_us=100001"}) {
    DaemonArgs b;
    EXPECT_FALSE(Parse({"-o", bad, "data", "mnt"}, &b, &error)) << bad;
    EXPECT_NE(error.find("option spin_us wants microseconds"),
              std::string::npos)
        << error;
  }
}

TEST(DaemonArgsTest, Uring) {
  DaemonArgs unset;
  std::string error;
  ASSERT_TRUE(Parse({"data", "mnt"}, &unset, &error)) << error;
  EXPECT_FALSE(unset.io_uring);
  DaemonArgs on;
  ASSERT_TRUE(Parse({"-o", "uring", "data", "mnt"}, &on, &error)) << error;
  EXPECT_TRUE(on.io_uring);
}

TEST(DaemonArgsTest, StoreOption) {
  DaemonArgs a;
  std::string error;
  ASSERT_TRUE(Parse({"data", "mnt"}, &a, &error)) << error;
  EXPECT_EQ(a.store, daemon::StoreKind::kEngine);
  DaemonArgs m;
  ASSERT_TRUE(Parse({"-o", "store=memory,max_value_bytes=10", "data", "mnt"},
                    &m, &error))
      << error;
  EXPECT_EQ(m.store, daemon::StoreKind::kMemory);
  EXPECT_EQ(m.datadir, "data");  // still required: fstab's shape
  DaemonArgs none;
  EXPECT_FALSE(Parse({"-o", "store=memory", "mnt"}, &none, &error));
  DaemonArgs bad;
  EXPECT_FALSE(Parse({"-o", "store=disk", "data", "mnt"}, &bad, &error));
  EXPECT_NE(error.find("store wants engine or memory"), std::string::npos);
  for (const char* engine_only :
       {"memtable_bytes=1", "block_cache_bytes=1", "tablet_split_bytes=1",
        "space_reserve_bytes=1", "change_history_bytes=1", "commit=1"}) {
    DaemonArgs b;
    EXPECT_FALSE(Parse({"-o", "store=memory", "-o", engine_only, "data", "mnt"},
                       &b, &error))
        << engine_only;
    EXPECT_NE(error.find("store=memory has no use for it"), std::string::npos)
        << error;
  }
}

TEST(DaemonArgsTest, RemoteSource) {
  DaemonArgs a;
  std::string error;
  ASSERT_TRUE(Parse({"-o", "endpoint=127.0.0.1:8086,app_profile=batch",
                     "-o", "rpc_timeout=2.5,max_value_bytes=10",
                     "bigtable://proj/inst", "mnt"},
                    &a, &error))
      << error;
  EXPECT_TRUE(a.remote);
  EXPECT_EQ(a.project, "proj");
  EXPECT_EQ(a.instance, "inst");
  EXPECT_EQ(a.datadir, "");
  EXPECT_EQ(a.mountpoint, "mnt");
  EXPECT_EQ(a.endpoint, "127.0.0.1:8086");
  EXPECT_EQ(a.app_profile, "batch");
  EXPECT_EQ(a.rpc_timeout, 2.5);
  DaemonArgs cloud;  // no endpoint: the daemon picks the environment's
  ASSERT_TRUE(Parse({"bigtable://p/i/", "mnt"}, &cloud, &error)) << error;
  EXPECT_EQ(cloud.endpoint, "");
  EXPECT_EQ(cloud.rpc_timeout, 10.0);
  for (const char* source : {"bigtable://p", "bigtable://p/", "bigtable:///i",
                             "bigtable://p/i/x", "bigtable://"}) {
    DaemonArgs b;
    EXPECT_FALSE(Parse({source, "mnt"}, &b, &error)) << source;
    EXPECT_NE(error.find("bigtable://PROJECT/INSTANCE"), std::string::npos)
        << error;
  }
  for (const char* local_only :
       {"memtable_bytes=1", "block_cache_bytes=1", "tablet_split_bytes=1",
        "space_reserve_bytes=1", "change_history_bytes=1", "commit=1",
        "store=memory", "store=engine", "bigtable_api=127.0.0.1:1"}) {
    DaemonArgs b;
    EXPECT_FALSE(Parse({"-o", local_only, "bigtable://p/i", "mnt"}, &b, &error))
        << local_only;
    EXPECT_NE(error.find("is for a local store"), std::string::npos) << error;
  }
  for (const char* remote_only :
       {"endpoint=127.0.0.1:1", "app_profile=x", "rpc_timeout=1"}) {
    DaemonArgs b;
    EXPECT_FALSE(Parse({"-o", remote_only, "data", "mnt"}, &b, &error))
        << remote_only;
    EXPECT_NE(error.find("bigtable://PROJECT/INSTANCE source"),
              std::string::npos)
        << error;
  }
  for (const char* bad : {"rpc_timeout=0", "rpc_timeout=x", "rpc_timeout="}) {
    DaemonArgs b;
    EXPECT_FALSE(Parse({"-o", bad, "bigtable://p/i", "mnt"}, &b, &error))
        << bad;
  }
  DaemonArgs serve;
  EXPECT_FALSE(Parse({"--serve", "bigtable://p/i"}, &serve, &error));
}

class DaemonTest : public MountFixture {};

TEST_F(DaemonTest, ExitCodeSaysWhetherTheMountWorked) {
  Mount();
  EXPECT_EQ(ReadFile(datadir() + "/mountpoint"), mnt() + "\n");
  // A second daemon on the same data directory fails (the store's lock).
  std::string other = tmp() + "/other";
  mkdir(other.c_str(), 0755);
  std::string cmd =
      TabletfsBinary() + " " + datadir() + " " + other + " 2>/dev/null";
  EXPECT_NE(system(cmd.c_str()), 0);
  Unmount();
  EXPECT_FALSE(IsMounted());
  EXPECT_NE(access((datadir() + "/mount.pid").c_str(), F_OK), 0);
  // A mount point that does not exist.
  cmd = TabletfsBinary() + " " + datadir() + " " + tmp() + "/nowhere" +
        " 2>/dev/null";
  EXPECT_NE(system(cmd.c_str()), 0);
}

TEST_F(DaemonTest, VersionAndHelpExitZero) {
  std::string out;
  ASSERT_EQ(Sh(TabletfsBinary() + " -V", &out), 0);
  EXPECT_EQ(out.rfind("tabletfs ", 0), 0u) << out;
  EXPECT_NE(out.find("libfuse 3."), std::string::npos) << out;
  out.clear();
  ASSERT_EQ(Sh(TabletfsBinary() + " --help", &out), 0);
  EXPECT_NE(out.find("usage: tabletfs [options] DATADIR MOUNTPOINT"),
            std::string::npos)
      << out;
  // Issue 14 item 13: the value limit a `cp` of a larger file runs into
  // (EFBIG) is in --help, with the store's real default.
  ASSERT_EQ(Options().max_value_bytes, 64u << 20) << "update --help";
  EXPECT_NE(out.find("max_value_bytes=N      largest value, default 64 MiB"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("(EFBIG"), std::string::npos) << out;
  EXPECT_NE(Sh(TabletfsBinary() + " --no-such-option 2>/dev/null"), 0);
}

// In the foreground the log goes to stderr, one line per refused request
// saying why, so a shell user can find out what EPERM meant.
TEST_F(DaemonTest, ForegroundLogsEveryRefusalWithItsReason) {
  std::string log = tmp() + "/daemon.log";
  std::string cmd =
      TabletfsBinary() + " -f " + datadir() + " " + mnt() + " 2>" + log + " &";
  ASSERT_EQ(system(cmd.c_str()), 0);
  for (int i = 0; i < 2000 && !IsMounted(); i++) usleep(5000);
  ASSERT_TRUE(IsMounted());
  EXPECT_NE(Sh("mkdir t && echo x > t/file 2>/dev/null"), 0);
  ASSERT_EQ(system(("fusermount3 -u " + mnt()).c_str()), 0);
  for (int i = 0;
       i < 2000 && access((datadir() + "/mount.pid").c_str(), F_OK) == 0; i++) {
    usleep(5000);
  }
  std::string text = ReadFile(log);
  EXPECT_NE(text.find("create /t/file: EPERM: only directories may be in /t"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("unmounted"), std::string::npos) << text;
}

TEST_F(DaemonTest, RelativeDataDirIsMadeAbsolute) {
  std::string cmd = "cd " + tmp() + " && " + TabletfsBinary() + " data mnt";
  ASSERT_EQ(system(cmd.c_str()), 0);
  ASSERT_TRUE(IsMounted());
  EXPECT_EQ(ShOk("mkdir t && ls"), "t\n");
  ASSERT_EQ(system(("fusermount3 -u " + mnt()).c_str()), 0);
  // Wait for the daemon to let go of the store.
  for (int i = 0;
       i < 2000 && access((datadir() + "/mount.pid").c_str(), F_OK) == 0; i++) {
    usleep(5000);
  }
}

TEST_F(DaemonTest, ForegroundRunsUntilUnmounted) {
  pid_t pid = fork();
  if (pid == 0) {
    execl(TabletfsBinary().c_str(), "tabletfs", "-f", datadir().c_str(),
          mnt().c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  for (int i = 0; i < 2000 && !IsMounted(); i++) usleep(5000);
  ASSERT_TRUE(IsMounted());
  EXPECT_EQ(ShOk("mkdir t && ls"), "t\n");
  ASSERT_EQ(system(("fusermount3 -u " + mnt()).c_str()), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// -d (and -o debug) as with any libfuse filesystem: the daemon stays in the
// foreground (the process started is the one serving), libfuse prints
// every request and reply on stderr, tabletfs adds its debug-level lines
// (failed lookups), and an unmount ends it with exit code 0.
TEST_F(DaemonTest, DebugStaysInTheForegroundAndLogsEveryRequest) {
  const std::vector<std::vector<std::string>> options = {{"-d"},
                                                         {"-o", "debug"}};
  for (size_t i = 0; i < options.size(); i++) {
    const std::vector<std::string>& option = options[i];
    // GCC bug 105329: a false -Wrestrict in "t" + std::to_string(i).
    TABLETFS_GCC_BUG_105329_BEGIN
    const std::string table = "t" + std::to_string(i);
    TABLETFS_GCC_BUG_105329_END
    SCOPED_TRACE(option.back());
    std::string log = tmp() + "/debug.log";
    pid_t pid = fork();
    if (pid == 0) {
      FILE* f = freopen(log.c_str(), "w", stderr);
      if (f == nullptr) _exit(126);
      std::vector<std::string> argv = {TabletfsBinary()};
      argv.insert(argv.end(), option.begin(), option.end());
      argv.push_back(datadir());
      argv.push_back(mnt());
      std::vector<char*> args;
      for (std::string& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    ASSERT_GT(pid, 0);
    for (int i = 0; i < 2000 && !IsMounted(); i++) usleep(5000);
    ASSERT_TRUE(IsMounted());
    // Foreground: the process we started serves the mount.
    EXPECT_EQ(ReadFile(datadir() + "/mount.pid"), std::to_string(pid) + "\n");
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, WNOHANG), 0) << "the daemon exited";
    ShOk("mkdir " + table + " && ls " + table + " >/dev/null");
    EXPECT_NE(Sh("ls nosuch 2>/dev/null"), 0);
    // The replies of those requests were written before they returned.
    std::string text = ReadFile(log);
    EXPECT_NE(text.find("opcode: MKDIR"), std::string::npos) << text;
    EXPECT_NE(text.find("opcode: READDIR"), std::string::npos) << text;
    EXPECT_NE(text.find("opcode: LOOKUP"), std::string::npos) << text;
    EXPECT_NE(text.find("success, outsize:"), std::string::npos) << text;
    EXPECT_NE(text.find("error: -2 (No such file or directory)"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("tabletfs: debug: lookup /nosuch: ENOENT"),
              std::string::npos)
        << text;
    ASSERT_EQ(system(("fusermount3 -u " + mnt()).c_str()), 0);
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_FALSE(IsMounted());
    EXPECT_NE(access((datadir() + "/mount.pid").c_str(), F_OK), 0);
    text = ReadFile(log);
    EXPECT_NE(text.find("tabletfs: info: unmounted " + mnt()),
              std::string::npos)
        << text;
  }
  // Without it, a foreground daemon prints no requests.
  std::string log = tmp() + "/quiet.log";
  ASSERT_EQ(system((TabletfsBinary() + " -f " + datadir() + " " + mnt() +
                    " 2>" + log + " &")
                       .c_str()),
            0);
  for (int i = 0; i < 2000 && !IsMounted(); i++) usleep(5000);
  ASSERT_TRUE(IsMounted());
  ShOk("ls t0 >/dev/null");
  EXPECT_EQ(Sh("ls nosuch 2>/dev/null"), 2);
  ASSERT_EQ(system(("fusermount3 -u " + mnt()).c_str()), 0);
  for (int i = 0;
       i < 2000 && access((datadir() + "/mount.pid").c_str(), F_OK) == 0; i++) {
    usleep(5000);
  }
  std::string text = ReadFile(log);
  EXPECT_EQ(text.find("opcode:"), std::string::npos) << text;
  EXPECT_EQ(text.find("debug:"), std::string::npos) << text;
  EXPECT_NE(text.find("unmounted"), std::string::npos) << text;
}

// -o uring: the requests come over io_uring (fs/fuse_ring.h), and the
// shell's work is the same: names, small and large cells (writes of 1 MiB,
// the ring's largest request), renames, removals, writers at once, and a
// clean unmount. The kernel offers the ring only while its fuse module's
// enable_uring is Y: as root the test turns it on and leaves it on (turning
// it off fails every ring command of a mount using one; only mounts that
// ask for -o uring are affected).
TEST_F(DaemonTest, RequestsOverIoUring) {
  const char* knob = "/sys/module/fuse/parameters/enable_uring";
  if (access(knob, F_OK) != 0) {
    GTEST_SKIP() << "this kernel has no FUSE over io_uring (no " << knob << ")";
  }
  if (ReadFile(knob).rfind('Y', 0) != 0 &&
      Sh(std::string("echo Y > ") + knob) != 0) {
    GTEST_SKIP() << knob << " is N and cannot be set (not root)";
  }
  CreateTable("t", {"f"});
  std::string log = tmp() + "/daemon.log";
  std::string cmd = TabletfsBinary() + " -f -o uring " + datadir() + " " +
                    mnt() + " 2>" + log + " &";
  ASSERT_EQ(system(cmd.c_str()), 0);
  for (int i = 0; i < 2000 && !IsMounted(); i++) usleep(5000);
  ASSERT_TRUE(IsMounted());
  ShOk("mkdir -p t/r1/f && echo small > t/r1/f/a && cat t/r1/f/a");
  EXPECT_EQ(ShOk("cat t/r1/f/a"), "small\n");
  ShOk("head -c 3500000 /dev/urandom > " + tmp() + "/big");
  ShOk("dd if=" + tmp() + "/big of=t/r1/f/big bs=1M status=none");
  EXPECT_EQ(Sh("cmp " + tmp() + "/big t/r1/f/big"), 0);
  ShOk("mv t/r1/f/a t/r1/f/b");
  EXPECT_EQ(ShOk("ls t/r1/f"), "b\nbig\n");
  // Eight writers at once, 50 cells each.
  ShOk(
      "for w in 0 1 2 3 4 5 6 7; do (mkdir -p t/w$w/f && "
      "for i in $(seq 50); do echo $w.$i > t/w$w/f/c$i; done) & done; wait");
  EXPECT_EQ(ShOk("cat t/w*/f/c* | wc -l"), "400\n");
  EXPECT_EQ(ShOk("cat t/w5/f/c17"), "5.17\n");
  ShOk("rm -r t/w3");
  EXPECT_EQ(ShOk("ls t"), "r1\nw0\nw1\nw2\nw4\nw5\nw6\nw7\n");
  ASSERT_EQ(system(("fusermount3 -u " + mnt()).c_str()), 0);
  for (int i = 0;
       i < 2000 && access((datadir() + "/mount.pid").c_str(), F_OK) == 0; i++) {
    usleep(5000);
  }
  std::string text = ReadFile(log);
  EXPECT_NE(text.find("fuse: requests come over io_uring"), std::string::npos)
      << text;
  EXPECT_NE(text.find("unmounted"), std::string::npos) << text;
  // And what was written is there for the next mount.
  Mount();
  EXPECT_EQ(ShOk("cat t/r1/f/b"), "small\n");
  EXPECT_EQ(Sh("cmp " + tmp() + "/big t/r1/f/big"), 0);
  EXPECT_EQ(ShOk("cat t/w7/f/c50"), "7.50\n");
}

TEST_F(DaemonTest, SigtermUnmountsCleanly) {
  CreateTable("t", {"f"});
  Mount();
  ShOk("mkdir -p t/r/f && echo v > t/r/f/q");
  pid_t pid = daemon_pid();
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  for (int i = 0; i < 2000 && IsMounted(); i++) usleep(5000);
  EXPECT_FALSE(IsMounted());
  Unmount();  // waits for the process; nothing to unmount
  Mount();
  EXPECT_EQ(ShOk("cat t/r/f/q"), "v\n");
}

// mount(8) runs `mount.fuse3 DATADIR MNT -o rw,... -t fuse.tabletfs`, which
// runs `tabletfs DATADIR MNT -o rw,...` through /bin/sh. mount(8) clears
// PATH, so the daemon must be installed in the default PATH
// (/usr/local/bin) for `mount -t fuse.tabletfs` and fstab lines; here the
// helper is run as mount(8) runs it, with the build's bin on PATH.
TEST_F(DaemonTest, MountFuse3RunsTheDaemon) {
  const char* helper = access("/sbin/mount.fuse3", X_OK) == 0
                           ? "/sbin/mount.fuse3"
                           : "/usr/sbin/mount.fuse3";
  ASSERT_EQ(access(helper, X_OK), 0)
      << "mount.fuse3 is missing: install Debian's fuse3 (tests/run.sh does)";
  CreateTable("t", {"f"});
  std::string cmd = "PATH=" + std::string(TABLETFS_BIN_DIR) + ":$PATH " +
                    helper + " " + datadir() + " " + mnt() +
                    " -o rw,nosuid,nodev,noatime -t fuse.tabletfs";
  ASSERT_EQ(system(cmd.c_str()), 0);
  ASSERT_TRUE(IsMounted());
  EXPECT_EQ(ShOk("ls"), "t\n");
  EXPECT_EQ(ShOk("grep -c ' " + mnt() + " fuse.tabletfs ' /proc/mounts"),
            "1\n");
  ASSERT_EQ(system(("umount " + mnt()).c_str()), 0);
  for (int i = 0;
       i < 2000 && access((datadir() + "/mount.pid").c_str(), F_OK) == 0; i++) {
    usleep(5000);
  }
  EXPECT_FALSE(IsMounted());
}

// mount(8) runs /sbin/mount.fuse3 with a clean PATH, so the daemon must be
// installed (tests/run.sh runs `cmake --install` before the release tests).
bool DaemonInstalled() {
  return access("/usr/local/bin/tabletfs", X_OK) == 0 ||
         access("/usr/bin/tabletfs", X_OK) == 0;
}

TEST_F(DaemonTest, MountTypeFuseTabletfs) {
  ASSERT_TRUE(DaemonInstalled())
      << "tabletfs is not installed in mount(8)'s PATH: run "
         "`cmake --install build/release` (tests/run.sh does)";
  CreateTable("t", {"f"});
  std::string cmd = "mount -t fuse.tabletfs " + datadir() + " " + mnt();
  ASSERT_EQ(system(cmd.c_str()), 0);
  ASSERT_TRUE(IsMounted());
  EXPECT_EQ(ShOk("ls"), "t\n");
  ASSERT_EQ(system(("umount " + mnt()).c_str()), 0);
  for (int i = 0;
       i < 2000 && access((datadir() + "/mount.pid").c_str(), F_OK) == 0; i++) {
    usleep(5000);
  }
}

// The fstab line DESIGN.md promises, read from a private fstab (mount -T) so
// the test leaves /etc/fstab alone.
TEST_F(DaemonTest, FstabLineMounts) {
  ASSERT_TRUE(DaemonInstalled())
      << "tabletfs is not installed in mount(8)'s PATH: run "
         "`cmake --install build/release` (tests/run.sh does)";
  CreateTable("t", {"f"});
  std::string fstab = datadir() + ".fstab";
  {
    FILE* f = fopen(fstab.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fprintf(f, "%s %s fuse.tabletfs defaults 0 0\n", datadir().c_str(),
            mnt().c_str());
    fclose(f);
  }
  std::string cmd = "mount -T " + fstab + " " + mnt();
  ASSERT_EQ(system(cmd.c_str()), 0);
  ASSERT_TRUE(IsMounted());
  EXPECT_EQ(ShOk("ls"), "t\n");
  ASSERT_EQ(system(("umount " + mnt()).c_str()), 0);
  for (int i = 0;
       i < 2000 && access((datadir() + "/mount.pid").c_str(), F_OK) == 0; i++) {
    usleep(5000);
  }
  unlink(fstab.c_str());
}

}  // namespace
}  // namespace tabletfs::testing
