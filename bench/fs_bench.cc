// tabletfs_fsbench: the parts of the filesystem benchmark that a shell
// command cannot time on its own (bench/fs_bench.sh runs the rest).
//
//   tabletfs_fsbench create ROOT DIRS FILES [SEED]
//       Creates ROOT/rowNNN/f/fileNN (DIRS x FILES files of 1-200 seeded
//       bytes) with one open/write/close each, so the layout is tabletfs'
//       TABLE/ROW/FAMILY/QUALIFIER and the same tree on any filesystem.
//   tabletfs_fsbench stat PATH SECONDS
//       stat(2) on PATH in a loop for SECONDS.
//   tabletfs_fsbench open PATH SECONDS
//       open(2) read-only and close(2) of PATH in a loop for SECONDS: what a
//       cat of a cached file costs beyond its read.
//   tabletfs_fsbench write PATH MIB
//       Writes MIB MiB sequentially in 1 MiB writes (O_CREAT|O_TRUNC) and
//       closes: tabletfs commits at close, so close is part of the time.
//   tabletfs_fsbench read PATH
//       Reads PATH to its end in 1 MiB reads.
//   tabletfs_fsbench chunks DIR MIB
//       Writes one MIB-MiB buffer to new files in DIR (kept until the end,
//       then removed) in write(2) calls of 64 KiB, 1 MiB, 2 MiB and the
//       whole buffer, 4 rounds, one line per file: how the size of one
//       write into the page cache sets its speed (store/env/posix_env.cc
//       writes at most 1 MiB at a time because of it).
//
// Each prints one line, `fsbench {json}`, with seconds and a rate; errors go
// to stderr, naming the path and errno, with exit status 1.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int Fail(const char *what, const std::string &path) {
  std::fprintf(stderr, "tabletfs_fsbench: %s %s: %s\n", what, path.c_str(),
               std::strerror(errno));
  return 1;
}

bool ParseCount(const char *text, uint64_t *out) {
  char *end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') return false;
  *out = value;
  return true;
}

// Writes all of [data, data + size) to fd.
bool WriteAll(int fd, const char *data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

int Create(const std::string &root, uint64_t dirs, uint64_t files,
           uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::string alphabet =
      "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789\n";
  char content[200];
  uint64_t bytes = 0;
  Clock::time_point start = Clock::now();
  for (uint64_t d = 0; d < dirs; ++d) {
    char name[64];
    std::snprintf(name, sizeof name, "/row%03" PRIu64, d);
    std::string row = root + name;
    if (mkdir(row.c_str(), 0755) != 0) return Fail("mkdir", row);
    std::string family = row + "/f";
    if (mkdir(family.c_str(), 0755) != 0) return Fail("mkdir", family);
    for (uint64_t f = 0; f < files; ++f) {
      std::snprintf(name, sizeof name, "/file%02" PRIu64, f);
      std::string path = family + name;
      size_t size = 1 + rng() % 200;
      for (size_t i = 0; i < size; ++i) {
        content[i] = alphabet[rng() % alphabet.size()];
      }
      int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) return Fail("open", path);
      if (!WriteAll(fd, content, size)) {
        int saved = errno;
        close(fd);
        errno = saved;
        return Fail("write", path);
      }
      if (close(fd) != 0) return Fail("close", path);
      bytes += size;
    }
  }
  double seconds = Since(start);
  uint64_t total = dirs * files;
  std::printf("fsbench {\"op\":\"create\",\"files\":%" PRIu64
              ",\"bytes\":%" PRIu64 ",\"seconds\":%.6f,\"files_per_s\":%.1f}\n",
              total, bytes, seconds, seconds > 0 ? total / seconds : 0.0);
  return 0;
}

int StatLoop(const std::string &path, double seconds) {
  struct stat st;
  uint64_t calls = 0;
  Clock::time_point start = Clock::now();
  double elapsed = 0;
  do {
    for (int i = 0; i < 256; ++i) {
      if (stat(path.c_str(), &st) != 0) return Fail("stat", path);
    }
    calls += 256;
    elapsed = Since(start);
  } while (elapsed < seconds);
  std::printf("fsbench {\"op\":\"stat\",\"calls\":%" PRIu64
              ",\"seconds\":%.6f,\"calls_per_s\":%.1f}\n",
              calls, elapsed, calls / elapsed);
  return 0;
}

int WriteFile(const std::string &path, uint64_t mib) {
  std::vector<char> buffer(1 << 20);
  std::mt19937_64 rng(7);
  for (char &c : buffer) c = static_cast<char>(rng());
  Clock::time_point start = Clock::now();
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return Fail("open", path);
  for (uint64_t i = 0; i < mib; ++i) {
    buffer[0] = static_cast<char>(i);  // no two MiB alike
    if (!WriteAll(fd, buffer.data(), buffer.size())) {
      int saved = errno;
      close(fd);
      errno = saved;
      return Fail("write", path);
    }
  }
  if (close(fd) != 0) return Fail("close", path);
  double seconds = Since(start);
  std::printf("fsbench {\"op\":\"write\",\"bytes\":%" PRIu64
              ",\"seconds\":%.6f,\"mb_per_s\":%.3f}\n",
              mib << 20, seconds, (mib << 20) / seconds / 1e6);
  return 0;
}

int WriteChunks(const std::string &dir, uint64_t mib) {
  const size_t size = mib << 20;
  std::vector<char> buffer(size);
  std::mt19937_64 rng(7);
  for (char &c : buffer) c = static_cast<char>(rng());
  std::vector<std::string> made;
  int status = 0;
  for (int round = 0; round < 4 && status == 0; ++round) {
    for (size_t chunk : {size_t{64} << 10, size_t{1} << 20, size_t{2} << 20,
                         size}) {
      std::string path = dir + "/chunks" + std::to_string(made.size());
      int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) {
        status = Fail("open", path);
        break;
      }
      made.push_back(path);
      Clock::time_point start = Clock::now();
      bool ok = true;
      for (size_t off = 0; ok && off < size; off += chunk) {
        ok = WriteAll(fd, buffer.data() + off, std::min(chunk, size - off));
      }
      double seconds = Since(start);
      close(fd);
      if (!ok) {
        status = Fail("write", path);
        break;
      }
      std::printf("fsbench {\"op\":\"chunks\",\"round\":%d,\"chunk\":%zu,"
                  "\"bytes\":%zu,\"seconds\":%.6f,\"mb_per_s\":%.3f}\n",
                  round, chunk, size, seconds, size / seconds / 1e6);
    }
  }
  for (const std::string &path : made) unlink(path.c_str());
  return status;
}

int ReadFile(const std::string &path) {
  std::vector<char> buffer(1 << 20);
  Clock::time_point start = Clock::now();
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return Fail("open", path);
  uint64_t bytes = 0;
  for (;;) {
    ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      close(fd);
      errno = saved;
      return Fail("read", path);
    }
    if (n == 0) break;
    bytes += static_cast<uint64_t>(n);
  }
  close(fd);
  double seconds = Since(start);
  std::printf("fsbench {\"op\":\"read\",\"bytes\":%" PRIu64
              ",\"seconds\":%.6f,\"mb_per_s\":%.3f}\n",
              bytes, seconds, bytes / seconds / 1e6);
  return 0;
}

int OpenLoop(const std::string &path, double seconds) {
  uint64_t calls = 0;
  Clock::time_point start = Clock::now();
  double elapsed = 0;
  do {
    for (int i = 0; i < 64; ++i) {
      int fd = open(path.c_str(), O_RDONLY);
      if (fd < 0) return Fail("open", path);
      if (close(fd) != 0) return Fail("close", path);
    }
    calls += 64;
    elapsed = Since(start);
  } while (elapsed < seconds);
  std::printf("fsbench {\"op\":\"open\",\"calls\":%" PRIu64
              ",\"seconds\":%.6f,\"calls_per_s\":%.1f,\"us_per_call\":%.2f}\n",
              calls, elapsed, calls / elapsed, elapsed * 1e6 / calls);
  return 0;
}

int Usage() {
  std::fprintf(stderr,
               "usage: tabletfs_fsbench create ROOT DIRS FILES [SEED]\n"
               "       tabletfs_fsbench stat PATH SECONDS\n"
               "       tabletfs_fsbench open PATH SECONDS\n"
               "       tabletfs_fsbench write PATH MIB\n"
               "       tabletfs_fsbench read PATH\n"
               "       tabletfs_fsbench chunks DIR MIB\n");
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) return Usage();
  std::string command = argv[1];
  std::string path = argv[2];
  uint64_t a = 0, b = 0, seed = 1;
  if (command == "create" && (argc == 5 || argc == 6) &&
      ParseCount(argv[3], &a) && ParseCount(argv[4], &b) &&
      (argc == 5 || ParseCount(argv[5], &seed))) {
    return Create(path, a, b, seed);
  }
  if ((command == "stat" || command == "open") && argc == 4) {
    char *end = nullptr;
    double seconds = std::strtod(argv[3], &end);
    if (end != argv[3] && *end == '\0' && seconds > 0) {
      return command == "stat" ? StatLoop(path, seconds)
                               : OpenLoop(path, seconds);
    }
  }
  if (command == "write" && argc == 4 && ParseCount(argv[3], &a) && a > 0) {
    return WriteFile(path, a);
  }
  if (command == "read" && argc == 3) return ReadFile(path);
  if (command == "chunks" && argc == 4 && ParseCount(argv[3], &a) && a > 0) {
    return WriteChunks(path, a);
  }
  return Usage();
}
