#include "store/table/block_cache.h"

#include <utility>

namespace tabletfs {

namespace {

// Both fields mixed (offsets of one table differ in their low bits, file
// numbers in theirs), then MurmurHash3's finalizer: the top 4 bits pick the
// shard, the low bits the slot.
uint64_t HashKey(uint64_t cache_id, uint64_t offset) {
  uint64_t h = (cache_id * 0x9e3779b97f4a7c15ull) ^ offset;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

// Where an insert keeps the blocks it removes until the shard's lock is
// released: destroying a block frees its buffers, which need not wait for
// the lock's other users. An insert evicts one or two blocks as a rule.
class Dropped {
 public:
  void Add(std::shared_ptr<const Block> block) {
    if (n_ < inline_.size()) {
      inline_[n_++] = std::move(block);
    } else {
      more_.push_back(std::move(block));
    }
  }

 private:
  std::array<std::shared_ptr<const Block>, 4> inline_;
  size_t n_ = 0;
  std::vector<std::shared_ptr<const Block>> more_;
};

}  // namespace

BlockCache::BlockCache(size_t capacity_bytes) : capacity_(capacity_bytes) {
  for (auto& shard : shards_) {
    shard = std::make_unique<Shard>((capacity_bytes + kShards - 1) / kShards);
  }
}

std::shared_ptr<const Block> BlockCache::Lookup(uint64_t cache_id,
                                                uint64_t offset, bool count) {
  const uint64_t hash = HashKey(cache_id, offset);
  std::shared_ptr<const Block> block =
      ShardOf(hash).Lookup(cache_id, offset, hash);
  if (count) {
    (block != nullptr ? hits_ : misses_)
        .fetch_add(1, std::memory_order_relaxed);
  }
  return block;
}

void BlockCache::Insert(uint64_t cache_id, uint64_t offset,
                        std::shared_ptr<const Block> block) {
  const uint64_t hash = HashKey(cache_id, offset);
  ShardOf(hash).Insert(cache_id, offset, hash, std::move(block));
}

size_t BlockCache::usage() const {
  size_t total = 0;
  for (const auto& shard : shards_) total += shard->usage();
  return total;
}

size_t BlockCache::size() const {
  size_t total = 0;
  for (const auto& shard : shards_) total += shard->size();
  return total;
}

// --- Shard ------------------------------------------------------------------

size_t BlockCache::Shard::Find(uint64_t cache_id, uint64_t offset,
                               uint64_t hash) const {
  // At most half the slots are taken (Grow), so the probe ends.
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.block == nullptr || (s.cache_id == cache_id && s.offset == offset)) {
      return i;
    }
  }
}

std::shared_ptr<const Block> BlockCache::Shard::Lookup(uint64_t cache_id,
                                                       uint64_t offset,
                                                       uint64_t hash) {
  MutexLock l(&mu_);
  if (slots_.empty()) return nullptr;
  Slot& s = slots_[Find(cache_id, offset, hash)];
  if (s.block == nullptr) return nullptr;
  if (!s.referenced) s.referenced = true;
  return s.block;
}

void BlockCache::Shard::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_ = std::vector<Slot>(old.empty() ? 16 : 2 * old.size());
  const size_t mask = slots_.size() - 1;
  for (Slot& s : old) {
    if (s.block == nullptr) continue;
    size_t i = s.hash & mask;
    while (slots_[i].block != nullptr) i = (i + 1) & mask;
    slots_[i] = std::move(s);
  }
  hand_ = 0;
}

void BlockCache::Shard::RemoveAt(size_t i, std::shared_ptr<const Block>* out) {
  const size_t mask = slots_.size() - 1;
  usage_ -= slots_[i].charge;
  --count_;
  *out = std::move(slots_[i].block);
  // Backward-shift deletion: an entry later in the probe run moves into the
  // hole unless its home slot lies cyclically in (hole, j], where a probe
  // from its home would stop at the hole before reaching it.
  size_t hole = i;
  for (size_t j = (i + 1) & mask; slots_[j].block != nullptr;
       j = (j + 1) & mask) {
    const size_t home = slots_[j].hash & mask;
    const bool stays =
        hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (!stays) {
      slots_[hole] = std::move(slots_[j]);
      hole = j;
    }
  }
  slots_[hole] = Slot{};
}

void BlockCache::Shard::Insert(uint64_t cache_id, uint64_t offset,
                               uint64_t hash,
                               std::shared_ptr<const Block> block) {
  const size_t charge = block->size();
  Dropped dropped;  // declared before the lock: destroyed after its release
  MutexLock l(&mu_);
  if (!slots_.empty()) {
    size_t i = Find(cache_id, offset, hash);
    if (slots_[i].block != nullptr) {
      std::shared_ptr<const Block> old;
      RemoveAt(i, &old);
      dropped.Add(std::move(old));
    }
  }
  if (charge > capacity_) {
    dropped.Add(std::move(block));
    return;
  }
  if (2 * (count_ + 1) > slots_.size()) Grow();
  // A new entry starts unreferenced: a block read once (a scan's) goes
  // before one read again, and a sweep always meets an entry it may evict
  // before it comes round to a block hit since the last sweep.
  slots_[Find(cache_id, offset, hash)] =
      Slot{cache_id, offset, std::move(block), charge,
           static_cast<uint32_t>(hash), /*referenced=*/false};
  ++count_;
  usage_ += charge;
  const size_t mask = slots_.size() - 1;
  while (usage_ > capacity_) {
    Slot& s = slots_[hand_];
    if (s.block == nullptr) {
      hand_ = (hand_ + 1) & mask;
    } else if (s.referenced) {
      s.referenced = false;
      hand_ = (hand_ + 1) & mask;
    } else {
      // A later entry may move into hand_: it is looked at next.
      std::shared_ptr<const Block> victim;
      RemoveAt(hand_, &victim);
      dropped.Add(std::move(victim));
    }
  }
}

size_t BlockCache::Shard::usage() const {
  MutexLock l(&mu_);
  return usage_;
}

size_t BlockCache::Shard::size() const {
  MutexLock l(&mu_);
  return count_;
}

}  // namespace tabletfs
