#include "mount/daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <syslog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>

#include "api/remote_bigtable.h"
#include "api/server.h"
#include "fs/fuse_loop.h"
#include "fs/log.h"
#include "fs/session.h"
#include "mount/daemon/test_faults.h"
#include "store/db.h"
#include "store/reference/reference_bigtable.h"

namespace tabletfs::daemon {
namespace {

std::string Absolute(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  if (ec) return path;
  return p.lexically_normal().string();
}

void LogToStderr(LogLevel level, std::string_view line) {
  static const char* const kNames[] = {"debug", "info", "warning", "error"};
  std::fprintf(stderr, "tabletfs: %s: %.*s\n", kNames[static_cast<int>(level)],
               static_cast<int>(line.size()), line.data());
}

void LogToSyslog(LogLevel level, std::string_view line) {
  static const int kPriorities[] = {LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERR};
  syslog(kPriorities[static_cast<int>(level)], "%.*s",
         static_cast<int>(line.size()), line.data());
}

bool WriteFile(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content;
    if (!out.good()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

// Removes the pid files when they still name this process.
void RemovePidFiles(const std::string& datadir) {
  std::ifstream in(datadir + "/mount.pid");
  long pid = 0;
  if (in >> pid && pid == static_cast<long>(getpid())) {
    std::remove((datadir + "/mount.pid").c_str());
    std::remove((datadir + "/mountpoint").c_str());
  }
}

void Report(int fd, char status) {
  if (fd < 0) return;
  ssize_t n = write(fd, &status, 1);
  (void)n;
  close(fd);
}

// The store a session serves, and what the session is told about it.
struct OpenedStore {
  std::unique_ptr<Bigtable> store;
  size_t max_value_bytes = 0;
  uint64_t space_reserve_bytes = 0;
};

// Opens (or creates) the engine in `datadir`, on `env` (nullptr: the
// default Env).
Status OpenEngine(const DaemonArgs& args, const std::string& datadir,
                  Env* env, OpenedStore* out) {
  Options options;
  if (env != nullptr) options.env = env;
  options.logger = [](LogLevel level, std::string_view line) {
    fs::Log(level, line);
  };
  if (args.memtable_bytes) options.memtable_bytes = *args.memtable_bytes;
  if (args.block_cache_bytes) {
    options.block_cache_bytes = *args.block_cache_bytes;
  }
  if (args.tablet_split_bytes) {
    options.tablet_split_bytes = *args.tablet_split_bytes;
  }
  if (args.max_value_bytes) options.max_value_bytes = *args.max_value_bytes;
  if (args.space_reserve_bytes) {
    options.space_reserve_bytes = *args.space_reserve_bytes;
  }
  if (args.change_history_bytes) {
    options.change_history_bytes = *args.change_history_bytes;
  }
  if (args.commit_seconds) {
    options.commit_interval = std::chrono::seconds(*args.commit_seconds);
  }
  auto db = DB::Open(options, datadir);
  if (!db.ok()) return db.status();
  DB* engine = db->get();
  out->max_value_bytes = options.max_value_bytes;
  // The reserve the store resolved (scaled with the disk when not set).
  out->space_reserve_bytes = engine->GetStats().space_reserve_bytes;
  out->store = std::move(db).value();
  return Status::OK();
}

// The reference implementation, in memory; `datadir` is only made to exist
// (it holds the pid files).
Status OpenMemory(const DaemonArgs& args, const std::string& datadir,
                  OpenedStore* out) {
  std::error_code ec;
  std::filesystem::create_directories(datadir, ec);
  if (ec) return Status::IOError(datadir, ec.message());
  ReferenceOptions options;
  if (args.max_value_bytes) options.max_value_bytes = *args.max_value_bytes;
  out->store = NewReferenceBigtable(options);
  out->max_value_bytes = options.max_value_bytes;
  // Nothing is written to the disk, so no free space is kept for it.
  out->space_reserve_bytes = 0;
  return Status::OK();
}

// The source's name: bigtable://PROJECT/INSTANCE.
std::string RemoteSource(const DaemonArgs& args) {
  return "bigtable://" + args.project + "/" + args.instance;
}

// A remote Bigtable (api/remote_bigtable.h): -o endpoint= or
// $BIGTABLE_EMULATOR_HOST in plaintext (every Bigtable client's
// convention), else Cloud Bigtable over TLS with Google's default
// credentials. Connects lazily: an unreachable server shows up at the
// first request, as EIO or EBUSY, not here.
Status OpenRemote(const DaemonArgs& args, OpenedStore* out) {
  api::RemoteOptions options;
  options.project = args.project;
  options.instance = args.instance;
  options.app_profile = args.app_profile;
  // At least 1 ms: ParseArgs accepts any positive number of seconds.
  options.rpc_timeout = std::chrono::milliseconds(
      std::max<int64_t>(1, static_cast<int64_t>(args.rpc_timeout * 1000)));
  // Long enough for the requests of one operation (a LOOKUP and the OPEN
  // after it, the OPENs of a listing's cells), short beside the kernel's
  // own caches: none when they are off.
  options.read_cache_ttl = std::chrono::milliseconds(static_cast<int64_t>(
      std::min({0.1, args.attr_timeout, args.entry_timeout}) * 1000));
  // Families change rarely: as long as the kernel keeps attributes.
  options.schema_cache_ttl = std::chrono::milliseconds(static_cast<int64_t>(
      std::min({1.0, args.attr_timeout, args.entry_timeout}) * 1000));
  const char* emulator = std::getenv("BIGTABLE_EMULATOR_HOST");
  std::string how;
  if (!args.endpoint.empty()) {
    options.endpoint = args.endpoint;
    how = args.endpoint + " (-o endpoint, plaintext)";
  } else if (emulator != nullptr && *emulator != '\0') {
    options.endpoint = emulator;
    how = options.endpoint + " (BIGTABLE_EMULATOR_HOST, plaintext)";
  } else {
    options.endpoint = "bigtable.googleapis.com:443";
    options.admin_endpoint = "bigtableadmin.googleapis.com:443";
    options.plaintext = false;
    how = "Cloud Bigtable (TLS, Google default credentials)";
  }
  // gRPC advances a connection attempt only while some thread polls its
  // channel; the mount's calls fail fast while the server is down, so a
  // restarted server was found only by gRPC's backup poller, every 5 s
  // (4-9 s to recover, measured). Poll every 100 ms instead. Read once,
  // when gRPC initializes (the first channel, just below); a value the
  // user set wins.
  setenv("GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS", "100",
         /*overwrite=*/0);
  // A request that waits for the server hands the FUSE device to another
  // thread first, so requests behind it do not wait the loop's watchdog.
  options.before_wait = fs::FuseLoopWillWait;
  auto store = api::ConnectBigtable(options);
  if (!store.ok()) return store.status();
  out->store = std::move(store).value();
  // The server enforces its own limit; this one only makes write() refuse
  // early (EFBIG) what the server would refuse at close.
  out->max_value_bytes =
      args.max_value_bytes ? *args.max_value_bytes : Options().max_value_bytes;
  out->space_reserve_bytes = 0;  // no local disk to keep free
  fs::Log(LogLevel::kInfo,
          RemoteSource(args) + " at " + how + ", rpc_timeout " +
              std::to_string(options.rpc_timeout.count()) + " ms" +
              (args.app_profile.empty() ? std::string()
                                        : ", app profile " + args.app_profile));
  return Status::OK();
}

// Starts the Bigtable API on `store`: always on DATADIR/bigtable.sock, on
// TCP when asked.
Result<std::unique_ptr<api::ApiServer>> StartApi(const DaemonArgs& args,
                                                 const std::string& datadir,
                                                 Bigtable* store) {
  api::ApiOptions options;
  options.unix_socket = datadir + "/bigtable.sock";
  options.tcp_address = args.bigtable_api;
  options.tls_cert_file = args.bigtable_api_tls_cert;
  options.tls_key_file = args.bigtable_api_tls_key;
  options.token_file = args.bigtable_api_token_file;
  options.logger = [](LogLevel level, std::string_view line) {
    fs::Log(level, line);
  };
  return api::ApiServer::Start(store, options);
}

// --serve: the API alone until SIGTERM or SIGINT.
int ServeApiOnly(const DaemonArgs& args, const std::string& datadir) {
  // Blocked before any thread starts, so that every thread inherits the
  // mask and sigwait below receives them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  OpenedStore opened;
  Status s = args.store == StoreKind::kMemory
                 ? OpenMemory(args, datadir, &opened)
                 : OpenEngine(args, datadir, nullptr, &opened);
  if (!s.ok()) {
    fs::Log(LogLevel::kError, "cannot open " + datadir + ": " + s.ToString());
    return 1;
  }
  auto server = StartApi(args, datadir, opened.store.get());
  if (!server.ok()) {
    fs::Log(LogLevel::kError, "cannot serve the Bigtable API: " +
                                  server.status().ToString());
    return 1;
  }
  fs::Log(LogLevel::kInfo, "serving " + datadir + " (no mount)");
  int sig = 0;
  sigwait(&stop, &sig);
  fs::Log(LogLevel::kInfo, std::string("stopping on ") + strsignal(sig));
  (*server)->Shutdown();
  server->reset();
  opened.store.reset();  // the store closes: the log is synced
  return 0;
}

// Opens, mounts and serves. `ready_fd` (-1 in the foreground) gets one byte
// once mounted (0) or on failure (1).
int Serve(const DaemonArgs& args, const std::string& datadir,
          const std::string& mountpoint, int ready_fd) {
  // Test hook: TABLETFS_TEST_FAULTS=<control file> runs the store on a
  // fault-injecting Env that a test switches while the mount is live (see
  // test_faults.h, docs/RELIABILITY.md). Unset, as in any real use, it is
  // nullptr and the store gets the default Env. Created before anything
  // starts a thread, destroyed after the store.
  std::unique_ptr<TestFaults> test_faults = TestFaults::FromEnvironment();
  // What the logs and /proc/mounts call the source.
  const std::string source = args.remote ? RemoteSource(args) : datadir;
  OpenedStore opened;
  Status s =
      args.remote ? OpenRemote(args, &opened)
      : args.store == StoreKind::kMemory
          ? OpenMemory(args, datadir, &opened)
          : OpenEngine(args, datadir,
                       test_faults ? test_faults->env() : nullptr, &opened);
  if (!s.ok()) {
    fs::Log(LogLevel::kError, "cannot open " + source + ": " + s.ToString());
    Report(ready_fd, 1);
    return 1;
  }
  std::unique_ptr<Bigtable>& db = opened.store;

  fs::SessionOptions so;
  so.datadir = datadir;  // empty for a remote source
  so.fsname = source;
  so.mountpoint = mountpoint;
  so.fuse_options = args.fuse_options;
  so.debug = args.debug;
  so.single_threaded = args.single_threaded;
  so.spin = std::chrono::microseconds(args.spin_us);
  so.io_uring = args.io_uring;
  so.entry_timeout = args.entry_timeout;
  so.attr_timeout = args.attr_timeout;
  so.max_value_bytes = opened.max_value_bytes;
  so.space_reserve_bytes = opened.space_reserve_bytes;
  so.auto_families = args.auto_families;
  std::unique_ptr<fs::Session> session;
  fs::FsError e = fs::Session::Create(db.get(), so, &session);
  // The API before the mount, so that a refused address fails the mount
  // instead of leaving one without it. It writes to the store directly:
  // the mount learns of its writes from the store's change events.
  std::unique_ptr<api::ApiServer> api_server;
  if (e.ok() && args.remote) {
    // The server has its own API; serving the remote client again would
    // add a hop and a second place to secure.
    fs::Log(LogLevel::kInfo,
            "no Bigtable API served for a remote mount: use the server's");
  } else if (e.ok()) {
    auto started = StartApi(args, datadir, db.get());
    if (!started.ok()) {
      e = fs::FsError::Of(EINVAL, "the Bigtable API: " +
                                      started.status().ToString());
    } else {
      api_server = std::move(started).value();
    }
  }
  if (e.ok()) e = session->Mount();
  if (!e.ok()) {
    api_server.reset();
    fs::Log(LogLevel::kError, "cannot mount " + source + " at " + mountpoint +
                                  ": " + e.ToString());
    session.reset();
    db.reset();
    Report(ready_fd, 1);
    return 1;
  }
  // A remote source has no DATADIR to record them in.
  if (!args.remote &&
      (!WriteFile(datadir + "/mount.pid", std::to_string(getpid()) + "\n") ||
       !WriteFile(datadir + "/mountpoint", mountpoint + "\n"))) {
    fs::Log(LogLevel::kWarning,
            "cannot record the pid and mount point in " + datadir);
  }
  fs::Log(LogLevel::kInfo, "mounted " + source + " at " + mountpoint);
  if (ready_fd >= 0) {
    // Detached from here on: the parent exits, logs go to syslog.
    fs::SetLogSink(LogToSyslog, LogLevel::kInfo);
    int null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      dup2(null_fd, 0);
      dup2(null_fd, 1);
      dup2(null_fd, 2);
      if (null_fd > 2) close(null_fd);
    }
    Report(ready_fd, 0);
  }
  int rc = session->Loop();
  api_server.reset();  // calls in flight finish or are cancelled
  session.reset();  // unmounts and commits what open files held
  db.reset();       // the store closes: the log is synced
  fs::Log(LogLevel::kInfo, "unmounted " + mountpoint);
  // Last: a waiter for mount.pid to go sees every line above.
  if (!args.remote) RemovePidFiles(datadir);
  return rc == 0 ? 0 : 1;
}

}  // namespace

int RunDaemon(const DaemonArgs& args) {
  const std::string datadir = args.remote ? "" : Absolute(args.datadir);
  const std::string mountpoint = Absolute(args.mountpoint);
  fs::SetLogSink(LogToStderr, args.debug ? LogLevel::kDebug : LogLevel::kInfo);
  if (args.serve_only) return ServeApiOnly(args, datadir);
  if (args.foreground) return Serve(args, datadir, mountpoint, -1);

  openlog("tabletfs", LOG_PID, LOG_DAEMON);
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    std::perror("tabletfs: pipe");
    return 1;
  }
  // Fork before anything starts a thread: the store's threads and its flock
  // must belong to the process that stays.
  pid_t pid = fork();
  if (pid < 0) {
    std::perror("tabletfs: fork");
    return 1;
  }
  if (pid > 0) {
    close(pipe_fds[1]);
    char status = 1;
    ssize_t n;
    do {
      n = read(pipe_fds[0], &status, 1);
    } while (n < 0 && errno == EINTR);
    return n == 1 && status == 0 ? 0 : 1;
  }
  close(pipe_fds[0]);
  setsid();
  int rc = Serve(args, datadir, mountpoint, pipe_fds[1]);
  std::fflush(nullptr);
  _exit(rc);
}

}  // namespace tabletfs::daemon
