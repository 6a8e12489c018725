#include "store/table/bloom_filter.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "store/util/hash.h"

namespace tabletfs {

namespace {

// Seeds of their own, so filter bits are independent of block checksums.
constexpr uint64_t kWholeTableSeed = 0x626c6f6f6d2d7631;  // "bloom-v1"
constexpr uint64_t kBlockedSeed = 0x626c6f6f6d2d7632;     // "bloom-v2"
constexpr int kMaxProbes = 30;

uint64_t BloomHash(std::string_view key, BloomLayout layout) {
  return layout == BloomLayout::kWholeTable ? Hash64(key, kWholeTableSeed)
                                            : Hash3(key, kBlockedSeed);
}

// Whole-table layout. Double hashing: probe i tests bit (h1 + i * h2) mod
// bits, with h1 and h2 the two halves of one 64-bit hash (Kirsch &
// Mitzenmacher). h2 is made odd so that probes never collapse onto one bit.
// h1 + i * h2 stays below 2^37 for i < 30, so stepping by h2 mod bits
// gives the same bits as the formula with two divisions instead of k. `fn`
// returns false to stop early.
template <typename Fn>
void ForEachWholeTableProbe(uint64_t hash, int k, uint64_t bits, Fn fn) {
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

bool TestBit(std::string_view filter, uint64_t bit) {
  return (static_cast<uint8_t>(filter[bit / 8]) & (1u << (bit % 8))) != 0;
}

}  // namespace

BloomFilterBuilder::BloomFilterBuilder(int bits_per_key, BloomLayout layout)
    : bits_per_key_(bits_per_key), layout_(layout) {
  assert(bits_per_key_ >= 1);
}

void BloomFilterBuilder::AddKey(std::string_view key) {
  uint64_t h = BloomHash(key, layout_);
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
  const uint64_t wanted = hashes_.size() * bits_per_key_;
  std::string filter;
  auto set = [&filter](uint64_t bit) {
    filter[bit / 8] = static_cast<char>(filter[bit / 8] | (1 << (bit % 8)));
    return true;
  };
  if (layout_ == BloomLayout::kWholeTable) {
    // At least 64 bits, so a tiny filter is not all ones.
    uint64_t bytes = (std::max<uint64_t>(64, wanted) + 7) / 8;
    filter.assign(bytes, '\0');
    for (uint64_t h : hashes_) ForEachWholeTableProbe(h, k, bytes * 8, set);
  } else {
    uint64_t blocks =
        std::max<uint64_t>(1, (wanted + kBloomBlockBits - 1) / kBloomBlockBits);
    filter.assign(blocks * kBloomBlockBytes, '\0');
    for (uint64_t h : hashes_) ForEachBlockedBloomProbe(h, k, blocks, set);
  }
  filter.push_back(static_cast<char>(k));
  hashes_.clear();
  return filter;
}

uint64_t BloomKey::hash(BloomLayout layout) const {
  const int i = layout == BloomLayout::kWholeTable ? 0 : 1;
  if (!hashed_[i]) {
    hashes_[i] = BloomHash(key_, layout);
    hashed_[i] = true;
  }
  return hashes_[i];
}

void BloomFilterPrefetch(std::string_view filter, const BloomKey& key,
                         BloomLayout layout) {
  if (layout != BloomLayout::kCacheLineBlocked || filter.size() < 2) return;
  const uint64_t bytes = filter.size() - 1;
  if (bytes % kBloomBlockBytes != 0) return;
  const uint64_t block =
      BloomBlockOf(key.hash(layout), bytes / kBloomBlockBytes);
  __builtin_prefetch(filter.data() + block * kBloomBlockBytes);
}

bool BloomFilterMayContain(std::string_view filter, const BloomKey& key,
                           BloomLayout layout) {
  if (filter.size() < 2) return true;
  int k = static_cast<uint8_t>(filter.back());
  if (k < 1 || k > kMaxProbes) return true;  // Reserved for new encodings.
  const uint64_t bytes = filter.size() - 1;
  // A key not in the filter usually fails within its first probes: stop
  // at the first clear bit.
  bool all_set = true;
  auto test = [&](uint64_t bit) { return all_set = TestBit(filter, bit); };
  if (layout == BloomLayout::kWholeTable) {
    ForEachWholeTableProbe(key.hash(layout), k, bytes * 8, test);
  } else {
    if (bytes % kBloomBlockBytes != 0) return true;  // Malformed.
    ForEachBlockedBloomProbe(key.hash(layout), k, bytes / kBloomBlockBytes,
                             test);
  }
  return all_set;
}

}  // namespace tabletfs
