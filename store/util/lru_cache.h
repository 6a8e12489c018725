// LruCache: a thread-safe map with a capacity, evicting the least recently
// used entries once the sum of the entries' charges exceeds it (the table
// cache's and the value-file readers'; the block cache is its own,
// store/table/block_cache.h).
//
// Values are copied out (V is meant to be a std::shared_ptr): an entry
// evicted or erased while a caller still holds its value stays alive in that
// caller's copy. An entry whose charge alone exceeds the capacity is not
// kept.
//
// Thread safety: every method may be called concurrently.
#ifndef TABLETFS_STORE_UTIL_LRU_CACHE_H_
#define TABLETFS_STORE_UTIL_LRU_CACHE_H_

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

}  // namespace tabletfs

#endif  // TABLETFS_STORE_UTIL_LRU_CACHE_H_
