#include "tests/util/tree_text.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace tabletfs::testing {
namespace {

std::string Content(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string TreeText(const std::string& root, const std::string& rel) {
  auto path = [&](const std::string& r) {
    return r.empty() ? root : root + "/" + r;
  };
  DIR* d = opendir(path(rel).c_str());
  if (d == nullptr) return rel + ": opendir " + strerror(errno) + "\n";
  std::vector<std::string> names;
  while (struct dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string& n : names) {
    std::string child = rel.empty() ? n : rel + "/" + n;
    struct stat st;
    if (lstat(path(child).c_str(), &st) != 0) {
      out += child + ": lstat " + strerror(errno) + "\n";
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      out += child + "/ mode " + std::to_string(st.st_mode) + "\n";
      out += TreeText(root, child);
    } else {
      out += child + " mode " + std::to_string(st.st_mode) + " mtime " +
             std::to_string(st.st_mtim.tv_sec) + "." +
             std::to_string(st.st_mtim.tv_nsec) + " = " + Content(path(child)) +
             "\n";
    }
  }
  return out;
}

}  // namespace tabletfs::testing
