#include "store/util/hash.h"

#include <xxhash.h>
#if defined(__x86_64__)
#define XXH_DISPATCH_DISABLE_REPLACE
#include <xxh_x86dispatch.h>
#endif

namespace tabletfs {

uint64_t Hash64(std::string_view data, uint64_t seed) {
  return XXH64(data.data(), data.size(), seed);
}

uint64_t Hash3(std::string_view data, uint64_t seed) {
  return XXH3_64bits_withSeed(data.data(), data.size(), seed);
}

uint64_t Checksum3(std::string_view data) {
#if defined(__x86_64__)
  return XXH3_64bits_dispatch(data.data(), data.size());
#else
  return XXH3_64bits(data.data(), data.size());
#endif
}

}  // namespace tabletfs
