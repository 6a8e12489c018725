#include "store/table/bloom_filter.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "store/util/hash.h"

namespace tabletfs {

namespace {

// A seed of its own, so filter bits are independent of block checksums.
constexpr uint64_t kBloomSeed = 0x626c6f6f6d2d7631;  // "bloom-v1"
constexpr int kMaxProbes = 30;

uint64_t BloomHash(std::string_view key) { return Hash64(key, kBloomSeed); }

// Double hashing: probe i tests bit (h1 + i * h2) mod bits, with h1 and h2
// the two halves of one 64-bit hash (Kirsch & Mitzenmacher). h2 is made odd
// so that probes never collapse onto one bit.
// h1 + i * h2 stays below 2^37 for i < 30, so stepping by h2 mod bits
// gives the same bits as the formula with two divisions instead of k. `fn`
// returns false to stop early.
template <typename Fn>
void ForEachProbe(uint64_t hash, int k, uint64_t bits, Fn fn) {
  uint64_t h1 = hash & 0xffffffff;
  uint64_t h2 = (hash >> 32) | 1;
  uint64_t bit = h1 % bits;
  const uint64_t step = h2 % bits;
  for (int i = 0; i < k; ++i) {
    if (!fn(bit)) return;
    bit += step;
    if (bit >= bits) bit -= bits;
  }
}

}  // namespace

BloomFilterBuilder::BloomFilterBuilder(int bits_per_key)
    : bits_per_key_(bits_per_key) {
  assert(bits_per_key_ >= 1);
}

void BloomFilterBuilder::AddKey(std::string_view key) {
  uint64_t h = BloomHash(key);
  // An SSTable adds two keys per entry (the row, then the cell or marker),
  // in key order: a repeat is always one of the last two hashes. Dropping
  // those keeps the count exact without sorting the hashes (which cost a
  // flush more than building the filter); a repeat that slipped through
  // would only make the filter a little larger.
  const size_t n = hashes_.size();
  if ((n >= 1 && hashes_[n - 1] == h) || (n >= 2 && hashes_[n - 2] == h)) {
    return;
  }
  hashes_.push_back(h);
}

std::string BloomFilterBuilder::Finish() {
  // k = bits_per_key * ln 2 minimizes the false-positive rate.
  int k = static_cast<int>(std::lround(bits_per_key_ * 0.69314718));
  k = std::clamp(k, 1, kMaxProbes);
  // At least 64 bits, so a tiny filter is not all ones.
  uint64_t bits = std::max<uint64_t>(64, hashes_.size() * bits_per_key_);
  uint64_t bytes = (bits + 7) / 8;
  bits = bytes * 8;
  std::string filter(bytes, '\0');
  for (uint64_t h : hashes_) {
    ForEachProbe(h, k, bits, [&](uint64_t bit) {
      filter[bit / 8] = static_cast<char>(filter[bit / 8] | (1 << (bit % 8)));
      return true;
    });
  }
  filter.push_back(static_cast<char>(k));
  hashes_.clear();
  return filter;
}

bool BloomFilterMayContain(std::string_view filter, std::string_view key) {
  if (filter.size() < 2) return true;
  int k = static_cast<uint8_t>(filter.back());
  if (k < 1 || k > kMaxProbes) return true;  // Reserved for new encodings.
  uint64_t bits = (filter.size() - 1) * 8;
  // A key not in the filter usually fails within its first probes: stop
  // at the first clear bit (each probe of a large filter is a cache miss).
  bool all_set = true;
  ForEachProbe(BloomHash(key), k, bits, [&](uint64_t bit) {
    all_set = (static_cast<uint8_t>(filter[bit / 8]) & (1 << (bit % 8))) != 0;
    return all_set;
  });
  return all_set;
}

}  // namespace tabletfs
