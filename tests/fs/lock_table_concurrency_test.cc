// LockTable under threads (run under TSan by the concurrency label):
// exclusive flock locks taken with waits, granted from other threads'
// unlocks, and cancels racing grants, never let two holders in at once and
// answer every waiter exactly once.
#include <errno.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "fs/lock_table.h"
#include "gtest/gtest.h"

namespace tabletfs::fs {
namespace {

using Kind = LockTable::Kind;

TEST(LockTableConcurrencyTest, WaitersGrantedAcrossThreadsExcludeEachOther) {
  LockTable t;
  Node n;
  n.kind = NodeKind::kCell;
  n.table = "t";
  std::atomic<int> inside{0}, overlaps{0}, granted{0}, cancelled{0};
  constexpr int kThreads = 4, kRounds = 300;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; i++) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < kRounds; round++) {
        LockTable::Lock l;
        l.owner = static_cast<uint64_t>(i + 1);
        l.write = true;
        std::mutex mu;
        std::condition_variable cv;
        int answer = -1;
        uint64_t waiter = 0;
        int rc = t.Set(
            n, Kind::kFlock, l, false, true,
            [&](int err) {
              std::lock_guard<std::mutex> lock(mu);
              answer = err;
              cv.notify_all();
            },
            &waiter);
        if (rc == -1 && round % 7 == 3) t.Cancel(waiter);  // races a grant
        if (rc == -1) {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return answer != -1; });
          rc = answer;
        }
        if (rc == EINTR) {
          cancelled++;
          continue;
        }
        ASSERT_EQ(rc, 0);
        granted++;
        if (inside.fetch_add(1) != 0) overlaps++;
        std::this_thread::yield();
        inside.fetch_sub(1);
        t.Set(n, Kind::kFlock, l, true, false, nullptr, nullptr);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(granted.load() + cancelled.load(), kThreads * kRounds);
  EXPECT_EQ(t.LocksOn(n, Kind::kFlock), 0u);
}

}  // namespace
}  // namespace tabletfs::fs
