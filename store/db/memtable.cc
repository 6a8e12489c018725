#include "store/db/memtable.h"

#include <xxhash.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "store/db/key_format.h"
#include "store/util/coding.h"

namespace tabletfs {

namespace {

// Entry layout in the arena: varint32 key length, key, varint32 value
// length, value. A lone key (Seek target) is encoded the same way with an
// empty value.
std::string_view DecodeLengthPrefixed(const char* p) {
  uint32_t len = 0;
  // The bytes are ours, written by EncodeEntry, so the varint is well-formed.
  const char* q = p;
  int shift = 0;
  while (true) {
    uint8_t b = static_cast<uint8_t>(*q++);
    len |= uint32_t{b & 0x7fu} << shift;
    if (b < 0x80) break;
    shift += 7;
  }
  return std::string_view(q, len);
}

// Bits per hash and probes of a GrowingBloomFilter segment: k = 6 is the
// best for 10 bits per key in 512-bit blocks.
constexpr uint64_t kBitsPerHash = 10;
constexpr int kProbes = 6;
constexpr uint32_t kBlockBits = 512;
constexpr size_t kBlockBytes = kBlockBits / 8;

// The block of a segment of `blocks` blocks that `hash` probes (its high
// half, mapped onto [0, blocks) by multiplication), and the probes within
// it (its low half, as LevelDB's double hashing).
size_t BlockOf(uint64_t hash, uint32_t blocks) {
  return static_cast<size_t>(((hash >> 32) * blocks) >> 32);
}

}  // namespace

void GrowingBloomFilter::Add(uint64_t hash, Arena* arena) {
  int n = count_.load(std::memory_order_relaxed);
  if (room_ == 0 && n < kMaxSegments) {
    const uint64_t hashes = kFirstHashes << (2 * n);
    const auto blocks = static_cast<uint32_t>(
        (hashes * kBitsPerHash + kBlockBits - 1) / kBlockBits);
    const size_t bytes = size_t{blocks} * kBlockBytes;
    char* raw = arena->AllocateAligned(bytes + kBlockBytes - 1);
    const auto addr = reinterpret_cast<uintptr_t>(raw);
    char* aligned = raw + ((kBlockBytes - addr % kBlockBytes) % kBlockBytes);
    auto* words = reinterpret_cast<std::atomic<uint64_t>*>(aligned);
    for (size_t i = 0; i < bytes / 8; ++i) {
      new (&words[i]) std::atomic<uint64_t>(0);
    }
    segments_[n] = {words, blocks};
    room_ = hashes;
    count_.store(++n, std::memory_order_release);
  }
  // The last segment takes whatever comes after it is full (the rate of
  // false positives grows; 4 G rows in one memtable are not expected).
  if (room_ > 0) --room_;
  const Segment& seg = segments_[n - 1];
  std::atomic<uint64_t>* block = seg.words + BlockOf(hash, seg.blocks) * 8;
  auto h = static_cast<uint32_t>(hash);
  const uint32_t delta = (h >> 17) | (h << 15);
  for (int i = 0; i < kProbes; ++i) {
    const uint32_t bit = h % kBlockBits;
    std::atomic<uint64_t>& word = block[bit / 64];
    // The one writer: no read-modify-write needed.
    word.store(
        word.load(std::memory_order_relaxed) | (uint64_t{1} << (bit % 64)),
        std::memory_order_relaxed);
    h += delta;
  }
}

bool GrowingBloomFilter::MayContain(uint64_t hash) const {
  const int n = count_.load(std::memory_order_acquire);
  // Newest first: it holds the most hashes.
  for (int s = n - 1; s >= 0; --s) {
    const Segment& seg = segments_[s];
    const std::atomic<uint64_t>* block =
        seg.words + BlockOf(hash, seg.blocks) * 8;
    auto h = static_cast<uint32_t>(hash);
    const uint32_t delta = (h >> 17) | (h << 15);
    bool all = true;
    for (int i = 0; i < kProbes && all; ++i) {
      const uint32_t bit = h % kBlockBits;
      all = (block[bit / 64].load(std::memory_order_relaxed) >> (bit % 64)) & 1;
      h += delta;
    }
    if (all) return true;
  }
  return false;
}

uint64_t MemTable::RowHash(std::string_view row_prefix) {
  return XXH3_64bits(row_prefix.data(), row_prefix.size());
}

int MemTable::KeyComparator::operator()(const char* a, const char* b) const {
  std::string_view ka = DecodeLengthPrefixed(a);
  std::string_view kb = DecodeLengthPrefixed(b);
  return ka.compare(kb);
}

namespace {

// Writes v as a varint32 at p; returns the byte after it.
char* EncodeVarint32(char* p, uint32_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

int Varint32Length(uint32_t v) {
  int n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

}  // namespace

void MemTable::Add(std::string_view key, std::string_view value) {
  const auto klen = static_cast<uint32_t>(key.size());
  const auto vlen = static_cast<uint32_t>(value.size());
  size_t total = Varint32Length(klen) + key.size() + Varint32Length(vlen) +
                 value.size();
  // The row goes into the filter before the entry into the skip list: a
  // reader that finds the entry also finds its row in the filter.
  const uint64_t row_hash = RowHash(RowPrefixView(key));
  if (!any_row_ || row_hash != last_row_hash_) {
    rows_.Add(row_hash, &arena_);
    last_row_hash_ = row_hash;
    any_row_ = true;
  }
  char* buf = arena_.Allocate(total);
  char* p = EncodeVarint32(buf, klen);
  std::memcpy(p, key.data(), key.size());
  p = EncodeVarint32(p + key.size(), vlen);
  if (!value.empty()) std::memcpy(p, value.data(), value.size());
  table_.Insert(buf);
  entries_.fetch_add(1, std::memory_order_relaxed);
  data_bytes_.fetch_add(key.size() + value.size(), std::memory_order_relaxed);
}

class MemTable::MemIterator final : public Iterator {
 public:
  explicit MemIterator(std::shared_ptr<MemTable> mem)
      : mem_(std::move(mem)), iter_(&mem_->table_) {}

  bool Valid() const override { return iter_.Valid(); }
  void SeekToFirst() override { iter_.SeekToFirst(); }
  void Seek(std::string_view target) override {
    // The skip list compares length-prefixed keys. A key of a usual size
    // is prefixed on the stack: a point read seeks each memtable once, and
    // an allocation for it was one of a read's ~30.
    char stack[128];
    char* buf = stack;
    if (target.size() + 5 > sizeof(stack)) {
      scratch_.resize(target.size() + 5);
      buf = scratch_.data();
    }
    char* p = EncodeVarint32(buf, static_cast<uint32_t>(target.size()));
    std::memcpy(p, target.data(), target.size());
    iter_.Seek(buf);
  }
  void Next() override { iter_.Next(); }
  std::string_view key() const override {
    return DecodeLengthPrefixed(iter_.key());
  }
  std::string_view value() const override {
    std::string_view k = key();
    return DecodeLengthPrefixed(k.data() + k.size());
  }
  Status status() const override { return Status::OK(); }

 private:
  std::shared_ptr<MemTable> mem_;
  Table::Iterator iter_;
  std::string scratch_;
};

std::unique_ptr<Iterator> MemTable::NewIterator(
    std::shared_ptr<MemTable> self) {
  return std::make_unique<MemIterator>(std::move(self));
}

}  // namespace tabletfs
