// Command-line arguments of the daemon, in the shape of sshfs:
//
//   tabletfs [options] DATADIR MOUNTPOINT
//     -f             stay in the foreground (logs to stderr)
//     -d             debug: log every request (implies -f)
//     -s             single-threaded
//     -o opt[,opt]   FUSE options (allow_other, ...) and ours:
//                    entry_timeout=SECONDS, attr_timeout=SECONDS,
//                    memtable_bytes=N, tablet_split_bytes=N,
//                    max_value_bytes=N, space_reserve_bytes=N,
//                    commit=SECONDS
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

struct DaemonArgs {
  std::string datadir;
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
  std::optional<uint64_t> memtable_bytes;
  std::optional<uint64_t> tablet_split_bytes;
  std::optional<uint64_t> max_value_bytes;
  std::optional<uint64_t> space_reserve_bytes;
  // The commit interval (ext4's commit=): 0 turns it off.
  std::optional<uint64_t> commit_seconds;
  bool auto_families = false;  // -o auto_families
};

// Parses argv (argv[0] is the program). Returns false with *error set to a
// message for the user when the arguments are wrong.
bool ParseArgs(int argc, const char* const* argv, DaemonArgs* out,
               std::string* error);

// The usage text (our part; libfuse prints its own options after it).
std::string Usage(const std::string& program);

}  // namespace tabletfs::daemon

#endif  // TABLETFS_MOUNT_DAEMON_ARGS_H_
