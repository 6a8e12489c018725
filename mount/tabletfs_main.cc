// tabletfs: mounts a tabletfs data directory (see mount/daemon/args.h).
#include <cstdio>
#include <string>

#include "fs/session.h"
#include "mount/daemon/args.h"
#include "mount/daemon/daemon.h"

int main(int argc, char** argv) {
  tabletfs::daemon::DaemonArgs args;
  std::string error;
  if (!tabletfs::daemon::ParseArgs(argc, argv, &args, &error)) {
    std::fprintf(stderr, "tabletfs: %s\n%s", error.c_str(),
                 tabletfs::daemon::Usage("tabletfs").c_str());
    return 2;
  }
  if (args.help) {
    std::printf("%s\nFUSE options:\n",
                tabletfs::daemon::Usage("tabletfs").c_str());
    std::fflush(stdout);
    tabletfs::fs::Session::PrintFuseHelp();
    return 0;
  }
  if (args.version) {
    std::printf("tabletfs 0.1.0 (libfuse %s)\n",
                tabletfs::fs::Session::FuseVersion().c_str());
    return 0;
  }
  return tabletfs::daemon::RunDaemon(args);
}
