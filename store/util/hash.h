// Hashing for checksums, Bloom filters and long-name digests: xxHash's
// XXH64 (Debian's libxxhash), so every checksum in every on-disk format is
// the same well-known function.
//
// Thread safety: pure functions.
#ifndef TABLETFS_STORE_UTIL_HASH_H_
#define TABLETFS_STORE_UTIL_HASH_H_

#include <cstdint>
#include <string_view>

namespace tabletfs {

// XXH64 of data with the given seed.
uint64_t Hash64(std::string_view data, uint64_t seed = 0);

// The checksum stored in on-disk formats: XXH64 with seed 0, of the bytes
// the format names. Kept as a separate name so formats read clearly.
inline uint64_t Checksum64(std::string_view data) { return Hash64(data, 0); }

}  // namespace tabletfs

#endif  // TABLETFS_STORE_UTIL_HASH_H_
