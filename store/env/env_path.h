// Path helpers shared by the in-memory and fault-injection Envs (internal to
// store/env/). Pure functions; thread-safe.
#ifndef TABLETFS_STORE_ENV_ENV_PATH_H_
#define TABLETFS_STORE_ENV_ENV_PATH_H_

#include <string>
#include <string_view>

namespace tabletfs::env_path {

// "a//b/./c/" -> "a/b/c"; "" and "./" -> "."; "//" -> "/". ".." stays a
// plain component: these Envs never walk up.
inline std::string Normalize(std::string_view path) {
  bool absolute = !path.empty() && path[0] == '/';
  std::string out = absolute ? "/" : "";
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view part = path.substr(i, j - i);
    if (!part.empty() && part != ".") {
      if (!out.empty() && out.back() != '/') out.push_back('/');
      out.append(part);
    }
    i = j + 1;
  }
  if (out.empty()) out = ".";
  return out;
}

// Parent of a normalized path: "a/b" -> "a", "a" -> ".", "/a" -> "/".
inline std::string Parent(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Last component of a normalized path.
inline std::string BaseName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace tabletfs::env_path

#endif  // TABLETFS_STORE_ENV_ENV_PATH_H_
