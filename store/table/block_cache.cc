#include "store/table/block_cache.h"

namespace tabletfs {

size_t BlockCache::KeyHash::operator()(const Key& k) const {
  // Offsets of one table share their low bits rarely and their high bits
  // always: mix both fields before ShardedLruCache picks a shard.
  uint64_t h = k.cache_id * 0x9e3779b97f4a7c15ull;
  h ^= k.offset + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
  return static_cast<size_t>(h);
}

BlockCache::BlockCache(size_t capacity_bytes)
    : capacity_(capacity_bytes), cache_(capacity_bytes) {}

std::shared_ptr<const Block> BlockCache::Lookup(uint64_t cache_id,
                                                uint64_t offset) {
  std::optional<std::shared_ptr<const Block>> block =
      cache_.Lookup(Key{cache_id, offset});
  if (!block) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  return std::move(*block);
}

void BlockCache::Insert(uint64_t cache_id, uint64_t offset,
                        std::shared_ptr<const Block> block) {
  size_t charge = block->size();
  cache_.Insert(Key{cache_id, offset}, std::move(block), charge);
}

}  // namespace tabletfs
