// Command-line arguments of the daemon, in the shape of sshfs:
//
//   tabletfs [options] DATADIR MOUNTPOINT
//   tabletfs [options] bigtable://PROJECT/INSTANCE MOUNTPOINT
//                                        a remote Bigtable
//                                        (api/remote_bigtable.h)
//   tabletfs [options] --serve DATADIR   the Bigtable API only, no mount
//     -f             stay in the foreground (logs to stderr)
//     -d             debug: log every request (implies -f)
//     -s             single-threaded
//     -o opt[,opt]   FUSE options (allow_other, ...) and ours:
//                    entry_timeout=SECONDS, attr_timeout=SECONDS,
//                    memtable_bytes=N, block_cache_bytes=N,
//                    tablet_split_bytes=N,
//                    max_value_bytes=N, space_reserve_bytes=N,
//                    change_history_bytes=N,
//                    commit=SECONDS, auto_families, spin_us=N, uring,
//                    store=engine|memory, bigtable_api=HOST:PORT,
//                    bigtable_api_tls_cert=, bigtable_api_tls_key=,
//                    bigtable_api_token_file=;
//                    for a bigtable:// source only: endpoint=HOST:PORT,
//                    app_profile=ID, rpc_timeout=SECONDS
//     -h, --help     -V, --version
//
// Options that mount(8) and mount.fuse3 pass for every mount and that mean
// nothing here (defaults, auto, noauto, user, users, nouser, _netdev,
// nofail, x-*, comment=*) are accepted and ignored.
//
// Thread safety: pure functions.
#ifndef TABLETFS_MOUNT_DAEMON_ARGS_H_
#define TABLETFS_MOUNT_DAEMON_ARGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tabletfs::daemon {

// What the mount serves (-o store=).
enum class StoreKind {
  // The engine (store/db.h) in DATADIR, opened or created: the default.
  kEngine,
  // The reference implementation (store/reference/): a scratch store in
  // memory, empty at mount and gone at unmount. DATADIR is still required
  // (fstab lines and `mount -t fuse.tabletfs` always pass one, and so the
  // command line keeps one shape); it holds only mount.pid and mountpoint,
  // and statfs reports its filesystem. No store file is read or written.
  kMemory,
};

struct DaemonArgs {
  // The data directory; empty for a remote source.
  std::string datadir;
  // bigtable://PROJECT/INSTANCE: the mount serves that Bigtable through the
  // remote client instead of a store in DATADIR (which there is none of).
  bool remote = false;
  std::string project;   // remote: PROJECT
  std::string instance;  // remote: INSTANCE
  // remote: -o endpoint=HOST:PORT, plaintext; empty: $BIGTABLE_EMULATOR_HOST
  // when set (plaintext), else Cloud Bigtable over TLS (the daemon decides:
  // parsing reads no environment).
  std::string endpoint;
  std::string app_profile;  // remote: -o app_profile=
  double rpc_timeout = 10;  // remote: -o rpc_timeout=SECONDS, > 0
  // The remote-only options given (endpoint, app_profile, rpc_timeout), to
  // refuse them for a DATADIR.
  std::vector<std::string> remote_options;
  std::string mountpoint;
  bool foreground = false;
  bool debug = false;
  bool single_threaded = false;
  bool help = false;
  bool version = false;
  // Passed to libfuse as they are.
  std::vector<std::string> fuse_options;
  double entry_timeout = 1.0;
  double attr_timeout = 1.0;
  // How long the thread reading FUSE requests spins for the next one
  // before it sleeps (fs/fuse_loop.h); 0: it sleeps at once.
  uint32_t spin_us = 50;
  // -o uring: requests over io_uring where the kernel offers it
  // (fs/fuse_ring.h); else through /dev/fuse.
  bool io_uring = false;
  std::optional<uint64_t> memtable_bytes;
  std::optional<uint64_t> block_cache_bytes;
  std::optional<uint64_t> tablet_split_bytes;
  std::optional<uint64_t> max_value_bytes;
  std::optional<uint64_t> space_reserve_bytes;
  std::optional<uint64_t> change_history_bytes;
  // The commit interval (ext4's commit=): 0 turns it off.
  std::optional<uint64_t> commit_seconds;
  bool auto_families = false;  // -o auto_families
  StoreKind store = StoreKind::kEngine;
  bool store_given = false;  // -o store= was given
  // --serve: no mount; the Bigtable API alone, in the foreground.
  bool serve_only = false;
  // The Bigtable API on TCP (it is always on DATADIR/bigtable.sock).
  std::string bigtable_api;
  std::string bigtable_api_tls_cert;
  std::string bigtable_api_tls_key;
  std::string bigtable_api_token_file;
};

// Parses argv (argv[0] is the program). Returns false with *error set to a
// message for the user when the arguments are wrong; the engine's options
// (memtable_bytes, block_cache_bytes, tablet_split_bytes,
// space_reserve_bytes,
// change_history_bytes, commit) are
// wrong with store=memory, which has no memtable, tablets, disk or log, and
// with a bigtable:// source, which takes no store= and serves no API
// either (bigtable_api*, --serve); endpoint, app_profile and rpc_timeout
// are wrong without one.
bool ParseArgs(int argc, const char* const* argv, DaemonArgs* out,
               std::string* error);

// The usage text (our part; libfuse prints its own options after it).
std::string Usage(const std::string& program);

}  // namespace tabletfs::daemon

#endif  // TABLETFS_MOUNT_DAEMON_ARGS_H_
