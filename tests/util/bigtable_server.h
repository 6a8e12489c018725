// BigtableServer: a Bigtable v2 server for tests, a child process on a free
// loopback port: Google's emulator (cbtemulator, from the gcloud SDK) or a
// `tabletfs --serve` daemon serving the API on a data directory of its own.
// Mount tests run a `bigtable://p/i` mount against it (MountFixture with
// MountStore::kEmulator or kServer); remote tests kill, stop and restart it.
//
//   BigtableServer server(BigtableServer::kServer, tmp + "/server",
//                         tmp + "/server.log");
//   ASSERT_TRUE(server.Start()) << server.Log();
//   ... -o endpoint=<server.endpoint()> ...
//   server.Stop(SIGKILL);     // dead: nothing listens on the port
//   ASSERT_TRUE(server.Start());  // back, on the same port (and data)
//
// The port is chosen at the first Start() and kept across restarts, so a
// mount reconnects to the server it had. The emulator keeps its data in
// memory (a restart starts empty); the tabletfs server keeps it in its
// data directory (a restart, even after SIGKILL, finds every write it
// acknowledged: a process crash loses nothing the log was given).
//
// Thread safety: one thread drives a server object.
#ifndef TABLETFS_TESTS_UTIL_BIGTABLE_SERVER_H_
#define TABLETFS_TESTS_UTIL_BIGTABLE_SERVER_H_

#include <sys/types.h>

#include <string>

namespace tabletfs::testing {

// cbtemulator: $CBTEMULATOR, else the gcloud SDK's; "" when not installed.
std::string EmulatorBinary();
// cbt: $CBT, else /usr/bin/cbt or /usr/local/bin/cbt; "" when not installed.
std::string CbtBinary();
// A loopback TCP port nobody listens on now (the kernel's choice); -1 on
// failure.
int FreePort();
// Whether something accepts TCP connections on 127.0.0.1:port.
bool Accepts(int port);

class BigtableServer {
 public:
  enum Kind { kEmulator, kServer };

  // `data_dir`: the tabletfs server's DATADIR (made by the server); `log`:
  // the server's stdout and stderr, appended.
  BigtableServer(Kind kind, std::string data_dir, std::string log);
  BigtableServer(const BigtableServer&) = delete;
  BigtableServer& operator=(const BigtableServer&) = delete;
  // Continues a stopped server, then Stop().
  ~BigtableServer();

  // Starts the server (not running) and waits until it accepts
  // connections, 20 s at most. false when it did not: Log() says why.
  [[nodiscard]] bool Start();
  // Sends `sig` (SIGTERM: a clean exit; SIGKILL: a crash) and reaps it.
  // Nothing when not running.
  void Stop(int sig = 15 /* SIGTERM */);
  // SIGSTOP, and waits until the kernel shows it stopped: connected,
  // answering nothing. Resume() continues it.
  void Pause();
  void Resume();

  Kind kind() const { return kind_; }
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  // "127.0.0.1:PORT", for -o endpoint= and BIGTABLE_EMULATOR_HOST.
  std::string endpoint() const;
  std::string Log() const;

 private:
  Kind kind_;
  std::string data_dir_;
  std::string log_;
  int port_ = -1;
  pid_t pid_ = -1;
  bool paused_ = false;
};

}  // namespace tabletfs::testing

#endif  // TABLETFS_TESTS_UTIL_BIGTABLE_SERVER_H_
