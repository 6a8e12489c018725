// StripedCounter: a statistic that many threads add to, each thread to one
// of a few cache-line-sized stripes, summed when read. Every point read adds
// to several counters (reads, block-cache hits or misses, filter answers);
// as plain atomics, two threads reading at once moved each counter's cache
// line between their CPUs at every add (docs/BENCHMARKS.md, twenty-third
// session).
//
// Thread safety: Add() and Load() from any thread. Load() is a sum of
// relaxed loads: exact once the adds it should count have happened before
// it, otherwise a value the counter passed through or will.
#ifndef TABLETFS_STORE_UTIL_STRIPED_COUNTER_H_
#define TABLETFS_STORE_UTIL_STRIPED_COUNTER_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tabletfs {

class StripedCounter {
 public:
  void Add(uint64_t n = 1) {
    stripes_[Stripe()].value.fetch_add(n, std::memory_order_relaxed);
  }

  uint64_t Load() const {
    uint64_t sum = 0;
    for (const Slot& s : stripes_) {
      sum += s.value.load(std::memory_order_relaxed);
    }
    return sum;
  }

 private:
  // More stripes than this machine's CPUs; threads beyond share them.
  static constexpr size_t kStripes = 8;
  // Two cache lines each: CPUs fetch lines in adjacent pairs, so stripes
  // one line apart would still move between two threads' CPUs.
  struct alignas(128) Slot {
    std::atomic<uint64_t> value{0};
  };

  // The calling thread's stripe, handed out round robin as threads first
  // add to any counter.
  static size_t Stripe() {
    static std::atomic<size_t> next{0};
    thread_local const size_t stripe =
        next.fetch_add(1, std::memory_order_relaxed) % kStripes;
    return stripe;
  }

  std::array<Slot, kStripes> stripes_;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_UTIL_STRIPED_COUNTER_H_
