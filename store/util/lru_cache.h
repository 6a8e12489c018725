// LruCache: a thread-safe map with a capacity, evicting the least recently
// used entries once the sum of the entries' charges exceeds it; and
// ShardedLruCache, which spreads keys over 16 such caches by hash so that
// threads seldom wait for one another.
//
// Values are copied out (V is meant to be a std::shared_ptr): an entry
// evicted or erased while a caller still holds its value stays alive in that
// caller's copy. An entry whose charge alone exceeds the capacity is not
// kept.
//
// Thread safety: every method may be called concurrently.
#ifndef TABLETFS_STORE_UTIL_LRU_CACHE_H_
#define TABLETFS_STORE_UTIL_LRU_CACHE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <list>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>

#include "store/util/mutex.h"

namespace tabletfs {

template <typename K, typename V, typename Hash = std::hash<K>>
class LruCache {
 public:
  explicit LruCache(size_t capacity) : capacity_(capacity) {}
  LruCache(const LruCache &) = delete;
  LruCache &operator=(const LruCache &) = delete;

  // Inserts or replaces the entry of `key`, makes it the most recently used
  // and evicts as needed.
  void Insert(const K &key, V value, size_t charge) EXCLUDES(mu_) {
    // Evicted values are destroyed after the lock is released: destroying
    // one may be slow (closing a file).
    List evicted;
    MutexLock lock(&mu_);
    auto it = map_.find(key);
    if (it != map_.end()) {
      usage_ -= it->second->charge;
      evicted.splice(evicted.end(), lru_, it->second);
      map_.erase(it);
    }
    if (charge > capacity_) return;
    lru_.push_front(Entry{key, std::move(value), charge});
    map_.emplace(key, lru_.begin());
    usage_ += charge;
    while (usage_ > capacity_ && !lru_.empty()) {
      auto victim = std::prev(lru_.end());
      usage_ -= victim->charge;
      map_.erase(victim->key);
      evicted.splice(evicted.end(), lru_, victim);
    }
  }

  // The value of `key` (now the most recently used), or nullopt.
  std::optional<V> Lookup(const K &key) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return std::nullopt;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->value;
  }

  void Erase(const K &key) EXCLUDES(mu_) {
    List erased;  // Destroyed after the lock is released.
    MutexLock lock(&mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return;
    usage_ -= it->second->charge;
    erased.splice(erased.end(), lru_, it->second);
    map_.erase(it);
  }

  // Sum of the charges of the entries held.
  size_t usage() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return usage_;
  }
  size_t size() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return map_.size();
  }
  size_t capacity() const { return capacity_; }

 private:
  struct Entry {
    K key;
    V value;
    size_t charge;
  };
  using List = std::list<Entry>;

  const size_t capacity_;
  mutable Mutex mu_;
  List lru_ GUARDED_BY(mu_);  // Most recently used first.
  std::unordered_map<K, typename List::iterator, Hash> map_ GUARDED_BY(mu_);
  size_t usage_ GUARDED_BY(mu_) = 0;
};

template <typename K, typename V, typename Hash = std::hash<K>>
class ShardedLruCache {
 public:
  static constexpr int kShards = 16;

  // Each shard gets capacity / kShards (rounded up), so the total stays
  // within capacity + kShards bytes.
  explicit ShardedLruCache(size_t capacity) {
    for (auto &shard : shards_) {
      shard = std::make_unique<LruCache<K, V, Hash>>((capacity + kShards - 1) /
                                                     kShards);
    }
  }

  void Insert(const K &key, V value, size_t charge) {
    Shard(key).Insert(key, std::move(value), charge);
  }
  std::optional<V> Lookup(const K &key) { return Shard(key).Lookup(key); }
  void Erase(const K &key) { Shard(key).Erase(key); }
  size_t usage() const {
    size_t total = 0;
    for (const auto &shard : shards_) total += shard->usage();
    return total;
  }
  size_t size() const {
    size_t total = 0;
    for (const auto &shard : shards_) total += shard->size();
    return total;
  }

 private:
  LruCache<K, V, Hash> &Shard(const K &key) {
    // Mix the hash: std::hash of an integer is the identity.
    uint64_t h = Hash()(key) * 0x9e3779b97f4a7c15ull;
    return *shards_[(h >> 60) % kShards];
  }

  std::array<std::unique_ptr<LruCache<K, V, Hash>>, kShards> shards_;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_UTIL_LRU_CACHE_H_
