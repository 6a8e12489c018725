// Bloom filters over byte strings, in the two layouts SSTables have used
// (store/doc/table_format.md, "Filter block"). k probes, with k chosen from
// bits_per_key (k = round(bits_per_key * ln 2), 1..30); at 10 bits per key
// the false-positive rate is about 1%.
//
// - kWholeTable (format 1): one bit array for the whole table, XXH64 and
//   double hashing over all of it (bit i = h1 + i * h2 mod m). Every probe
//   of a multi-MiB filter is a cache miss: up to k per key.
// - kCacheLineBlocked (formats 2 and 3): the bits are cut into 64-byte
//   blocks; one XXH3 hash picks a block and all k probes stay in it, so a
//   probe of a key
//   costs one cache miss (the caller keeps the filter 64-byte aligned). It
//   pays for that with a slightly higher false-positive rate at the same
//   size (about 0.95% at 10 bits per key, against 0.8%).
//
// Encoding: the bit array (whole-table: m / 8 bytes, bit j in byte j / 8,
// position j % 8; blocked: a whole number of 64-byte blocks, bits numbered
// the same way within each block) followed by one byte k. A k above 30 is
// reserved: readers treat such a filter as matching everything.
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

// Which encoding a filter has; a table's format version implies it.
enum class BloomLayout { kWholeTable, kCacheLineBlocked };

// Bytes per block of a kCacheLineBlocked filter: one cache line.
inline constexpr size_t kBloomBlockBytes = 64;
inline constexpr uint64_t kBloomBlockBits = kBloomBlockBytes * 8;

// The kCacheLineBlocked layout, for filters built here and for others that
// keep the same bits in their own storage (a memtable's, which it sets as
// rows arrive): the high 32 bits of the hash pick the block (a multiply
// and a shift map them evenly onto [0, blocks) without a division); the
// low 32 bits give the k probes, each the top 9 bits of a running product
// with an odd constant (the 32-bit golden ratio: multiplying by an odd
// number loses no state and moves low bits up). `fn(bit)` gets each bit's
// number counted from the filter's start, and returns false to stop.
inline uint64_t BloomBlockOf(uint64_t hash, uint64_t blocks) {
  return ((hash >> 32) * blocks) >> 32;
}

template <typename Fn>
void ForEachBlockedBloomProbe(uint64_t hash, int k, uint64_t blocks, Fn fn) {
  const uint64_t base = BloomBlockOf(hash, blocks) * kBloomBlockBits;
  uint32_t h = static_cast<uint32_t>(hash);
  for (int i = 0; i < k; ++i) {
    if (!fn(base + (h >> 23))) return;
    h *= 0x9e3779b9u;
  }
}

class BloomFilterBuilder {
 public:
  // REQUIRES: bits_per_key >= 1.
  BloomFilterBuilder(int bits_per_key, BloomLayout layout);

  // Adds a key. A key equal to one of the last two added is counted once
  // (an SSTable's keys come in order, two per entry); keys are kept as
  // 8-byte hashes until Finish().
  void AddKey(std::string_view key);
  size_t NumHashes() const { return hashes_.size(); }

  // Returns the encoded filter and empties the builder.
  std::string Finish();

 private:
  const int bits_per_key_;
  const BloomLayout layout_;
  std::vector<uint64_t> hashes_;
};

// A key to probe in filters, hashed once per layout when first needed: a
// point read probes one row in the filters of several tables. The viewed
// bytes must outlive it. Not thread-safe (the hashes are cached).
class BloomKey {
 public:
  explicit BloomKey(std::string_view key) : key_(key) {}
  uint64_t hash(BloomLayout layout) const;

 private:
  const std::string_view key_;
  mutable uint64_t hashes_[2] = {0, 0};
  mutable bool hashed_[2] = {false, false};
};

// False only when `key` was certainly not added to the filter that `filter`
// encodes in `layout`. A filter built from no keys matches nothing; a
// malformed one (under 2 bytes, or a blocked filter that is not whole
// blocks) or one with a reserved k matches everything.
bool BloomFilterMayContain(std::string_view filter, const BloomKey &key,
                           BloomLayout layout);

// Starts loading the cache line that BloomFilterMayContain(filter, key,
// kCacheLineBlocked) will read, so that probes of several filters wait for
// memory together. Does nothing for the whole-table layout or a malformed
// filter. Never reads the filter.
void BloomFilterPrefetch(std::string_view filter, const BloomKey &key,
                         BloomLayout layout);

}  // namespace tabletfs

#endif  // TABLETFS_STORE_TABLE_BLOOM_FILTER_H_
