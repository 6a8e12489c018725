// A Bloom filter over byte strings, built with XXH64 and double hashing
// (bit i = h1 + i * h2 mod m, from one 64-bit hash), with k probes chosen
// from bits_per_key (k = round(bits_per_key * ln 2), 1..30).
//
// An SSTable holds one filter for the whole table; at 10 bits per key the
// false-positive rate is about 1%. One filter per table is fine for tables up
// to ~64 MiB (a few hundred thousand filter keys: well under 1 MiB of filter,
// loaded once when the table is opened). Larger tables would want
// per-block filters (a new format version).
//
// Encoding: the bit array (m / 8 bytes, bit j in byte j / 8, position
// j % 8) followed by one byte k. A k above 30 is reserved: readers treat such
// a filter as matching everything.
//
// Thread safety: BloomFilterBuilder one thread at a time; BloomFilterMayContain
// is a pure function.
#ifndef TABLETFS_STORE_TABLE_BLOOM_FILTER_H_
#define TABLETFS_STORE_TABLE_BLOOM_FILTER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tabletfs {

class BloomFilterBuilder {
 public:
  // REQUIRES: bits_per_key >= 1.
  explicit BloomFilterBuilder(int bits_per_key);

  // Adds a key. A key equal to one of the last two added is counted once
  // (an SSTable's keys come in order, two per entry); keys are kept as
  // 8-byte hashes until Finish().
  void AddKey(std::string_view key);
  size_t NumHashes() const { return hashes_.size(); }

  // Returns the encoded filter and empties the builder.
  std::string Finish();

 private:
  const int bits_per_key_;
  std::vector<uint64_t> hashes_;
};

// False only when `key` was certainly not added to the filter that `filter`
// encodes. A filter built from no keys matches nothing; a malformed one
// (under 2 bytes) or one with a reserved k matches everything.
bool BloomFilterMayContain(std::string_view filter, std::string_view key);

}  // namespace tabletfs

#endif  // TABLETFS_STORE_TABLE_BLOOM_FILTER_H_
