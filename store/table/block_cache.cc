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

// Where an insert keeps the groups it removes until the shard's lock is
// released: destroying a group frees its blocks, which need not wait for
// the lock's other users. An insert evicts one or two groups as a rule.
class Dropped {
 public:
  void Add(std::shared_ptr<BlockGroup> group) {
    if (n_ < inline_.size()) {
      inline_[n_++] = std::move(group);
    } else {
      more_.push_back(std::move(group));
    }
  }

 private:
  std::array<std::shared_ptr<BlockGroup>, 4> inline_;
  size_t n_ = 0;
  std::vector<std::shared_ptr<BlockGroup>> more_;
};

}  // namespace

// --- BlockGroup -------------------------------------------------------------

std::shared_ptr<const Block> BlockGroup::Find(uint64_t offset) const {
  MutexLock l(&mu_);
  for (size_t i = 0; i < count_; ++i) {
    if (blocks_[i].offset == offset) return blocks_[i].block;
  }
  return nullptr;
}

bool BlockGroup::Add(uint64_t offset, std::shared_ptr<const Block>* block) {
  MutexLock l(&mu_);
  for (size_t i = 0; i < count_; ++i) {
    if (blocks_[i].offset == offset) {
      *block = blocks_[i].block;
      return false;
    }
  }
  if (count_ == blocks_.size()) return false;
  bytes_ += (*block)->size();
  blocks_[count_++] = Entry{offset, *block};
  return true;
}

size_t BlockGroup::size() const {
  MutexLock l(&mu_);
  return bytes_;
}

// --- BlockCache -------------------------------------------------------------

BlockCache::BlockCache(size_t capacity_bytes) : capacity_(capacity_bytes) {
  for (auto& shard : shards_) {
    // Rounded up, without overflowing near SIZE_MAX.
    shard = std::make_unique<Shard>(capacity_bytes / kShards +
                                    (capacity_bytes % kShards != 0));
  }
}

std::shared_ptr<BlockGroup> BlockCache::Lookup(uint64_t cache_id,
                                               uint64_t offset) {
  const uint64_t hash = HashKey(cache_id, offset);
  return ShardOf(hash).Lookup(cache_id, offset, hash);
}

std::shared_ptr<BlockGroup> BlockCache::Insert(
    uint64_t cache_id, uint64_t offset, std::shared_ptr<BlockGroup> group) {
  const uint64_t hash = HashKey(cache_id, offset);
  return ShardOf(hash).Insert(cache_id, offset, hash, std::move(group));
}

void BlockCache::AddCharge(uint64_t cache_id, uint64_t offset,
                           const BlockGroup* group, size_t bytes) {
  const uint64_t hash = HashKey(cache_id, offset);
  ShardOf(hash).AddCharge(cache_id, offset, hash, group, bytes);
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
    if (s.group == nullptr || (s.cache_id == cache_id && s.offset == offset)) {
      return i;
    }
  }
}

std::shared_ptr<BlockGroup> BlockCache::Shard::Lookup(uint64_t cache_id,
                                                      uint64_t offset,
                                                      uint64_t hash) {
  MutexLock l(&mu_);
  if (slots_.empty()) return nullptr;
  Slot& s = slots_[Find(cache_id, offset, hash)];
  if (s.group == nullptr) return nullptr;
  if (!s.referenced) s.referenced = true;
  return s.group;
}

void BlockCache::Shard::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_ = std::vector<Slot>(old.empty() ? 16 : 2 * old.size());
  const size_t mask = slots_.size() - 1;
  for (Slot& s : old) {
    if (s.group == nullptr) continue;
    size_t i = s.hash & mask;
    while (slots_[i].group != nullptr) i = (i + 1) & mask;
    slots_[i] = std::move(s);
  }
  hand_ = 0;
}

void BlockCache::Shard::RemoveAt(size_t i, std::shared_ptr<BlockGroup>* out) {
  const size_t mask = slots_.size() - 1;
  usage_ -= slots_[i].charge;
  --count_;
  *out = std::move(slots_[i].group);
  // Backward-shift deletion: an entry later in the probe run moves into the
  // hole unless its home slot lies cyclically in (hole, j], where a probe
  // from its home would stop at the hole before reaching it.
  size_t hole = i;
  for (size_t j = (i + 1) & mask; slots_[j].group != nullptr;
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

std::shared_ptr<BlockGroup> BlockCache::Shard::Insert(
    uint64_t cache_id, uint64_t offset, uint64_t hash,
    std::shared_ptr<BlockGroup> group) {
  const size_t charge = group->size();
  Dropped dropped;  // declared before the lock: destroyed after its release
  MutexLock l(&mu_);
  if (!slots_.empty()) {
    Slot& held = slots_[Find(cache_id, offset, hash)];
    if (held.group != nullptr) {
      if (!held.referenced) held.referenced = true;
      return held.group;
    }
  }
  if (charge > capacity_) return group;
  if (2 * (count_ + 1) > slots_.size()) Grow();
  // A new entry starts unreferenced: a group read once (a scan's) goes
  // before one read again, and a sweep always meets an entry it may evict
  // before it comes round to a group hit since the last sweep.
  slots_[Find(cache_id, offset, hash)] = Slot{cache_id,
                                              offset,
                                              group,
                                              charge,
                                              static_cast<uint32_t>(hash),
                                              /*referenced=*/false};
  ++count_;
  usage_ += charge;
  EvictToCapacity(&dropped);
  return group;
}

void BlockCache::Shard::AddCharge(uint64_t cache_id, uint64_t offset,
                                  uint64_t hash, const BlockGroup* group,
                                  size_t bytes) {
  Dropped dropped;
  MutexLock l(&mu_);
  if (slots_.empty()) return;
  const size_t i = Find(cache_id, offset, hash);
  if (slots_[i].group.get() != group) return;
  slots_[i].charge += bytes;
  usage_ += bytes;
  if (slots_[i].charge > capacity_) {
    std::shared_ptr<BlockGroup> whole;
    RemoveAt(i, &whole);
    dropped.Add(std::move(whole));
  }
  EvictToCapacity(&dropped);
}

template <typename Out>
void BlockCache::Shard::EvictToCapacity(Out* out) {
  const size_t mask = slots_.size() - 1;
  while (usage_ > capacity_) {
    Slot& s = slots_[hand_];
    if (s.group == nullptr) {
      hand_ = (hand_ + 1) & mask;
    } else if (s.referenced) {
      s.referenced = false;
      hand_ = (hand_ + 1) & mask;
    } else {
      // A later entry may move into hand_: it is looked at next.
      std::shared_ptr<BlockGroup> victim;
      RemoveAt(hand_, &victim);
      out->Add(std::move(victim));
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
