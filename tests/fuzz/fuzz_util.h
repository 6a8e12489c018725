// Helpers shared by the libFuzzer targets in tests/fuzz/: in-memory files
// over a byte string, a deterministic byte generator, and a check macro
// that reports a broken property and aborts (libFuzzer then saves the input
// as crash-<sha1>, the reproducer).
//
// Thread safety: one fuzzer thread; the files are not shared.
#ifndef TABLETFS_TESTS_FUZZ_FUZZ_UTIL_H_
#define TABLETFS_TESTS_FUZZ_FUZZ_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "store/env.h"
#include "store/status.h"

// Aborts with the failed condition and a message when `cond` is false.
#define FUZZ_CHECK(cond, ...)                                          \
  do {                                                                 \
    if (!(cond)) {                                                     \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: ", __FILE__, \
                   __LINE__, #cond);                                   \
      std::fprintf(stderr, __VA_ARGS__);                               \
      std::fprintf(stderr, "\n");                                      \
      std::abort();                                                    \
    }                                                                  \
  } while (0)

namespace tabletfs::fuzz {

// Reads a string the caller keeps alive, copying through scratch as a real
// file would (a short read means end of file, store/env.h).
class StringSequentialFile final : public SequentialFile {
 public:
  explicit StringSequentialFile(std::string_view contents)
      : contents_(contents) {}
  Status Read(size_t n, std::string_view* result, char* scratch) override {
    size_t len = std::min(n, contents_.size() - pos_);
    std::memcpy(scratch, contents_.data() + pos_, len);
    *result = std::string_view(scratch, len);
    pos_ += len;
    return Status::OK();
  }
  Status Skip(uint64_t n) override {
    pos_ += std::min<uint64_t>(n, contents_.size() - pos_);
    return Status::OK();
  }

 private:
  std::string_view contents_;
  size_t pos_ = 0;
};

// Random access over a string the caller keeps alive.
class StringRandomAccessFile final : public RandomAccessFile {
 public:
  explicit StringRandomAccessFile(std::string_view contents)
      : contents_(contents) {}
  Status Read(uint64_t offset, size_t n, std::string_view* result,
              char* scratch) const override {
    if (offset > contents_.size()) {
      return Status::IOError("fuzz file", "read past end of file");
    }
    size_t len = std::min<uint64_t>(n, contents_.size() - offset);
    std::memcpy(scratch, contents_.data() + offset, len);
    *result = std::string_view(scratch, len);
    return Status::OK();
  }

 private:
  std::string_view contents_;
};

// Appends to a string the caller owns.
class StringWritableFile final : public WritableFile {
 public:
  explicit StringWritableFile(std::string* contents) : contents_(contents) {}
  Status Append(std::string_view data) override {
    contents_->append(data);
    return Status::OK();
  }
  Status Flush() override { return Status::OK(); }
  Status Sync() override { return Status::OK(); }
  Status Close() override { return Status::OK(); }
  uint64_t Size() const override { return contents_->size(); }

 private:
  std::string* contents_;
};

// `n` pseudo-random bytes from `seed` (splitmix64). Used for payloads so
// that the fuzzer cannot plant intact checksummed frames inside them, which
// the formats document as a known limit rather than a bug.
inline std::string PseudoRandomBytes(uint64_t seed, size_t n) {
  std::string out(n, '\0');
  uint64_t x = seed;
  for (size_t i = 0; i < n; i += 8) {
    x += 0x9E3779B97F4A7C15ULL;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    std::memcpy(&out[i], &z, std::min<size_t>(8, n - i));
  }
  return out;
}

}  // namespace tabletfs::fuzz

#endif  // TABLETFS_TESTS_FUZZ_FUZZ_UTIL_H_
