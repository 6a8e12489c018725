// Hashing for checksums, Bloom filters and long-name digests: xxHash
// (Debian's libxxhash), so every checksum in every on-disk format is a
// well-known function. XXH64 is the original one (logs, manifests, footers,
// format-1 tables); XXH3's 64-bit variant hashes the same bytes about twice
// as fast on long inputs and much faster on short keys, and is used by
// format-2 table blocks and their Bloom filters.
//
// Thread safety: pure functions.
#ifndef TABLETFS_STORE_UTIL_HASH_H_
#define TABLETFS_STORE_UTIL_HASH_H_

#include <cstdint>
#include <string_view>

namespace tabletfs {

// XXH64 of data with the given seed.
uint64_t Hash64(std::string_view data, uint64_t seed = 0);

// XXH3_64bits of data with the given seed (XXH3_64bits_withSeed).
uint64_t Hash3(std::string_view data, uint64_t seed = 0);

// The checksum stored in on-disk formats: XXH64 with seed 0, of the bytes
// the format names. Kept as a separate name so formats read clearly.
inline uint64_t Checksum64(std::string_view data) { return Hash64(data, 0); }

// XXH3_64bits with seed 0: the block checksum of format-2 tables. The same
// value as Hash3(data, 0), computed with the widest vector instructions the
// CPU has (libxxhash's run-time dispatch): Debian builds the library for
// baseline x86-64, where a 12 KB block took 2.2 us against 0.3 us with
// AVX2 (docs/BENCHMARKS.md).
uint64_t Checksum3(std::string_view data);

}  // namespace tabletfs

#endif  // TABLETFS_STORE_UTIL_HASH_H_
