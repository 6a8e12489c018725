// StripedCounter: adds from many threads at once all count. Runs under TSan.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "store/util/striped_counter.h"

namespace tabletfs {
namespace {

TEST(StripedCounterTest, CountsEveryAddFromEveryThread) {
  StripedCounter counter;
  EXPECT_EQ(counter.Load(), 0u);
  // More threads than stripes: some share one.
  constexpr int kThreads = 12;
  constexpr int kAdds = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&counter, t] {
      for (int i = 0; i < kAdds; ++i) counter.Add(t % 2 == 0 ? 1 : 3);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter.Load(), uint64_t{kThreads / 2} * kAdds * (1 + 3));
}

}  // namespace
}  // namespace tabletfs
