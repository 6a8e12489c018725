// Session: the FUSE session serving one store (any implementation of the
// data-model interface, store/bigtable.h) at one mount point — the only
// interface mount/ needs, so that nothing outside fs/ includes FUSE headers.
//
//   auto session = Session::Create(db.get(), options);   // parses -o options
//   session->Mount();             // the mount point shows the store now
//   session->Loop();              // until fusermount3 -u, SIGINT or SIGTERM
//   session.reset();              // unmounts, commits open files
//   db.reset();                   // then the store closes
//
// Thread safety: one thread drives a Session; Loop() serves requests on as
// many threads as it needs.
#ifndef TABLETFS_FS_SESSION_H_
#define TABLETFS_FS_SESSION_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fs/errors.h"
#include "fs/status_files.h"
#include "store/bigtable.h"

namespace tabletfs::fs {

struct SessionOptions {
  // Absolute path of the data directory (statfs, the space reserve).
  // Empty: the store keeps no data on this machine (a remote store):
  // statfs reports a large fixed free space and writes are never refused
  // for local space.
  std::string datadir;
  // The source /proc/mounts shows (fsname); empty: `datadir`.
  std::string fsname;
  // Absolute path of the mount point.
  std::string mountpoint;
  // FUSE mount and session options ("allow_other", "max_read=N", ...),
  // passed to libfuse, which refuses unknown ones.
  std::vector<std::string> fuse_options;
  bool debug = false;            // -d: libfuse logs every request
  bool single_threaded = false;  // -s
  // How long the thread reading requests spins before it sleeps
  // (FuseLoopOptions::spin); not used with single_threaded.
  std::chrono::microseconds spin{50};
  // FUSE over io_uring where the kernel offers it (FuseLoopOptions).
  bool io_uring = false;
  // Kernel cache lifetimes of names and attributes, seconds (0 for `@T`
  // names whatever these say).
  double entry_timeout = 1.0;
  double attr_timeout = 1.0;
  // -o auto_families: mkdir of a family that is not in the schema creates
  // it with default settings (as touch .schema/TABLE/FAMILY would), so a
  // copied tree brings its families along. Off: ENOENT.
  bool auto_families = false;
  // The store's value limit (Options::max_value_bytes): EFBIG beyond it.
  size_t max_value_bytes = 64u << 20;
  // Below this much free space in the data directory, write() fails with
  // ENOSPC: the store's reserve in force (DbStats::space_reserve_bytes).
  uint64_t space_reserve_bytes = 64u << 20;
};

class Session {
 public:
  // Creates the FUSE session (no mount yet) and installs the SIGINT, SIGTERM
  // and SIGHUP handlers that end Loop(). REQUIRES: `db` outlives the Session.
  static FsError Create(Bigtable* db, const SessionOptions& options,
                        std::unique_ptr<Session>* out);
  // Unmounts when mounted, commits what open files hold, frees everything.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  FsError Mount();
  // Serves requests until unmounted or signalled. Returns 0 or an errno.
  int Loop();

  // libfuse's help for its own options, to stdout.
  static void PrintFuseHelp();
  static std::string FuseVersion();

  class Impl;

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_SESSION_H_
