// Change subscriptions that start in the past (SubscribeOptions::since)
// taken while writers commit and logs roll and flush: each one sees every
// write since its start exactly once, in each writer's order, the past and
// the live part joined without a gap or a duplicate. Runs under TSan.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "store/db.h"
#include "store/env/mem_env.h"

namespace tabletfs {
namespace {

using std::chrono::microseconds;

TEST(DBChangesConcurrencyTest, SubscribersJoiningMidStreamMissNothing) {
  MemEnv env;
  Options options;
  options.env = &env;
  options.space_reserve_bytes = 0;
  options.memtable_bytes = 16 << 10;  // logs roll and tablets flush often
  auto opened = DB::Open(options, "/db");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<DB> db = std::move(*opened);
  ASSERT_TRUE(db->CreateTable("t").ok());
  ASSERT_TRUE(db->CreateFamily("t", "f", FamilySettings()).ok());

  constexpr int kWriters = 4;
  constexpr int kWrites = 1500;
  const int64_t start = db->LastTimestamp() + 1;
  std::atomic<int> written{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kWrites; ++i) {
        RowMutation m(std::string("w").append(std::to_string(w)));
        m.SetCell("f", std::to_string(i), "v");
        ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
        written.fetch_add(1);
      }
    });
  }
  std::thread flusher([&] {
    while (written.load() < kWriters * kWrites) {
      ASSERT_TRUE(db->Flush().ok());
      std::this_thread::yield();
    }
  });
  // Subscribers join at several points of the stream, all from `start`.
  std::vector<std::unique_ptr<ChangeSubscription>> subs;
  for (int joined = 0; joined < 5;) {
    if (written.load() < joined * kWriters * kWrites / 5) {
      std::this_thread::yield();
      continue;
    }
    SubscribeOptions so;
    so.table = "t";
    so.since = start;
    so.max_queued_events = 1 << 20;
    auto sub = db->Subscribe(so);
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    subs.push_back(std::move(*sub));
    ++joined;
  }
  for (auto& t : writers) t.join();
  flusher.join();
  // The past each one read spans flushed logs.
  EXPECT_GE(db->GetStats().flushes, 5u);

  for (size_t s = 0; s < subs.size(); ++s) {
    std::map<std::string, int> next;  // per writer: the next write expected
    size_t events = 0;
    for (;;) {
      ChangeBatch b = subs[s]->Read(microseconds(0));
      ASSERT_EQ(b.lost, 0u) << "subscriber " << s;
      if (b.events.empty()) break;
      for (const ChangeEvent& e : b.events) {
        ASSERT_EQ(e.qualifier, std::to_string(next[e.row]))
            << "subscriber " << s << ", writer " << e.row;
        ++next[e.row];
        ++events;
      }
    }
    EXPECT_EQ(events, size_t{kWriters * kWrites}) << "subscriber " << s;
  }
}

}  // namespace
}  // namespace tabletfs
