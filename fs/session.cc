// Session: the FUSE session serving one Filesystem at one mount point
// (fs/session.h): libfuse's options, mount, loop and teardown.
#define FUSE_USE_VERSION 314

#include "fs/session.h"

#include <fuse_lowlevel.h>

#include <string>
#include <vector>

#include "fs/filesystem.h"
#include "fs/fuse_loop.h"
#include "fs/fuse_ops.h"
#include "fs/log.h"

namespace tabletfs::fs {

class Session::Impl {
 public:
  Impl(Bigtable* db, const SessionOptions& options)
      : options_(options), fs_(db, options) {}

  ~Impl() {
    if (session_ != nullptr) {
      // Commit open files and stop the invalidator while the session
      // exists; then unmount.
      fs_.Stop();
      if (mounted_) fuse_session_unmount(session_);
      if (signals_) fuse_remove_signal_handlers(session_);
      fuse_session_destroy(session_);
    }
  }

  FsError Create() {
    std::vector<std::string> argv_storage = {"tabletfs"};
    if (options_.debug) argv_storage.push_back("-d");
    std::string opts = "default_permissions,subtype=tabletfs,fsname=" +
                       EscapeOption(options_.fsname.empty() ? options_.datadir
                                                            : options_.fsname);
    for (const std::string& o : options_.fuse_options) opts += "," + o;
    argv_storage.push_back("-o");
    argv_storage.push_back(opts);
    std::vector<char*> argv;
    for (std::string& a : argv_storage) argv.push_back(a.data());
    fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
    session_ = fuse_session_new(&args, FuseOperations(),
                                sizeof(fuse_lowlevel_ops), &fs_);
    fuse_opt_free_args(&args);
    if (session_ == nullptr) {
      return FsError::Of(EINVAL, "libfuse refused the options '" + opts +
                                     "' (its message is above)");
    }
    if (fuse_set_signal_handlers(session_) != 0) {
      return FsError::Of(EIO, "cannot install the signal handlers");
    }
    signals_ = true;
    return FsError::Ok();
  }

  FsError Mount() {
    if (fuse_session_mount(session_, options_.mountpoint.c_str()) != 0) {
      return FsError::Of(EIO, "cannot mount at " + options_.mountpoint +
                                  " (libfuse's message is above)");
    }
    mounted_ = true;
    fs_.Start(session_);
    return FsError::Ok();
  }

  int Loop() {
    int rc;
    if (options_.single_threaded) {
      if (options_.io_uring) {
        Log(LogLevel::kWarning,
            "fuse: -s serves requests through /dev/fuse: -o uring is not "
            "used");
      }
      rc = fuse_session_loop(session_);
    } else {
      FuseLoopOptions loop;
      loop.spin = options_.spin;
      loop.io_uring = options_.io_uring;
      return RunFuseLoop(session_, loop);
    }
    return rc < 0 ? -rc : 0;
  }

 private:
  // fsname goes through libfuse's comma-separated option parser.
  static std::string EscapeOption(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == ',' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    return out;
  }

  const SessionOptions options_;
  Filesystem fs_;
  fuse_session* session_ = nullptr;
  bool mounted_ = false;
  bool signals_ = false;
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

FsError Session::Create(Bigtable* db, const SessionOptions& options,
                        std::unique_ptr<Session>* out) {
  auto impl = std::make_unique<Impl>(db, options);
  TABLETFS_FS_RETURN_IF_ERROR(impl->Create());
  out->reset(new Session(std::move(impl)));
  return FsError::Ok();
}

FsError Session::Mount() { return impl_->Mount(); }
int Session::Loop() { return impl_->Loop(); }

void Session::PrintFuseHelp() { fuse_lowlevel_help(); }

std::string Session::FuseVersion() { return fuse_pkgversion(); }

}  // namespace tabletfs::fs
