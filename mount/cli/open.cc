#include "mount/cli/open.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace tabletfs::cli {
namespace {

// The first line of a small file, without trailing blanks; empty when the
// file is missing.
std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  while (!line.empty() &&
         (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
    line.pop_back();
  }
  return line;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

Status DescribeBusy(const std::string& dir, const Status& busy) {
  const std::string mount = FirstLine(dir + "/mountpoint");
  const std::string pid = FirstLine(dir + "/mount.pid");
  if (!mount.empty()) {
    std::string text = dir + " is mounted at " + mount + " by tabletfs";
    if (!pid.empty()) text += " (pid " + pid + ")";
    text +=
        ": use the mount, or unmount it first (fusermount3 -u " + mount + ")";
    return Status::Busy(text);
  }
  return Status::Busy(dir + " is in use by another process (" + busy.message() +
                      ")");
}

Result<std::unique_ptr<DB>> OpenDatabase(const std::string& dir,
                                         bool create_if_missing) {
  if (!create_if_missing && !IsDirectory(dir)) {
    return Status::NotFound(dir + ": no such data directory");
  }
  Options options;
  options.create_if_missing = create_if_missing;
  auto db = DB::Open(options, dir);
  if (!db.ok() && db.status().IsBusy()) {
    return DescribeBusy(dir, db.status());
  }
  return db;
}

}  // namespace tabletfs::cli
