#include "store/db/memtable.h"

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

// Bits per hash and probes of a GrowingBloomFilter segment: an SSTable
// filter's at 10 bits a key (k = round(10 ln 2)), in its blocked layout.
constexpr uint64_t kBitsPerHash = 10;
constexpr int kProbes = 7;

}  // namespace

void GrowingBloomFilter::Add(uint64_t hash, Arena* arena) {
  int n = count_.load(std::memory_order_relaxed);
  if (room_ == 0 && n < kMaxSegments) {
    const uint64_t hashes = kFirstHashes << (2 * n);
    const auto blocks = static_cast<uint32_t>(
        (hashes * kBitsPerHash + kBloomBlockBits - 1) / kBloomBlockBits);
    const size_t bytes = size_t{blocks} * kBloomBlockBytes;
    char* raw = arena->AllocateAligned(bytes + kBloomBlockBytes - 1);
    const auto addr = reinterpret_cast<uintptr_t>(raw);
    char* aligned =
        raw + ((kBloomBlockBytes - addr % kBloomBlockBytes) % kBloomBlockBytes);
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
  ForEachBlockedBloomProbe(hash, kProbes, seg.blocks, [&seg](uint64_t bit) {
    std::atomic<uint64_t>& word = seg.words[bit / 64];
    // The one writer: no read-modify-write needed.
    word.store(
        word.load(std::memory_order_relaxed) | (uint64_t{1} << (bit % 64)),
        std::memory_order_relaxed);
    return true;
  });
}

bool GrowingBloomFilter::MayContain(uint64_t hash) const {
  const int n = count_.load(std::memory_order_acquire);
  // Newest first: it holds the most hashes.
  for (int s = n - 1; s >= 0; --s) {
    const Segment& seg = segments_[s];
    bool all = true;
    ForEachBlockedBloomProbe(hash, kProbes, seg.blocks, [&](uint64_t bit) {
      return all = (seg.words[bit / 64].load(std::memory_order_relaxed) >>
                    (bit % 64)) &
                   1;
    });
    if (all) return true;
  }
  return false;
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
  const uint64_t row_hash =
      BloomKey(RowPrefixView(key)).hash(BloomLayout::kCacheLineBlocked);
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
