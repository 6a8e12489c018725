// Change events (store/changes.h) through the data-model interface, over
// every implementation: what each write publishes, commit order under
// concurrent writers, and a subscriber that never reads not holding
// writers back. Runs under TSan (a *concurrency_test).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "store/bigtable.h"
#include "store/db.h"
#include "store/env/mem_env.h"
#include "store/reference/reference_bigtable.h"
#include "tests/util/gcc_bug_105329.h"

namespace tabletfs {
namespace {

using std::chrono::microseconds;

constexpr microseconds kNoWait{0};

// The implementations under test, by name.
std::unique_ptr<Bigtable> OpenStore(const std::string& name, Env* env) {
  if (name == "engine") {
    Options options;
    options.env = env;
    options.space_reserve_bytes = 0;
    options.memtable_bytes = 64 << 10;
    auto db = DB::Open(options, "/db");
    if (!db.ok()) return nullptr;
    return std::move(*db);
  }
  if (name == "reference") {
    ReferenceOptions options;
    options.clock = env;
    return NewReferenceBigtable(options);
  }
  return nullptr;
}

ChangeEvent Event(std::string row, std::string family, std::string qualifier,
                  int64_t ts, ChangeKind kind,
                  std::optional<std::string> value = std::nullopt) {
  ChangeEvent e;
  TABLETFS_GCC_BUG_105329_BEGIN
  e.table = "t";
  TABLETFS_GCC_BUG_105329_END
  e.row = std::move(row);
  e.family = std::move(family);
  e.qualifier = std::move(qualifier);
  e.timestamp = ts;
  e.kind = kind;
  e.value = std::move(value);
  return e;
}

class ChangesTest : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    store_ = OpenStore(GetParam(), &env_);
    ASSERT_NE(store_, nullptr);
    ASSERT_TRUE(store_->CreateTable("t").ok());
    ASSERT_TRUE(store_->CreateFamily("t", "f", FamilySettings()).ok());
    ASSERT_TRUE(store_->CreateFamily("t", "g", FamilySettings()).ok());
  }

  std::unique_ptr<ChangeSubscription> Subscribe(size_t queue = 1 << 20,
                                                std::string table = "") {
    SubscribeOptions so;
    so.max_queued_events = queue;
    so.table = std::move(table);
    auto sub = store_->Subscribe(so);
    EXPECT_TRUE(sub.ok()) << sub.status().ToString();
    return sub.ok() ? std::move(*sub) : nullptr;
  }

  // Reads until `n` events arrived or a 60 s deadline passed.
  static std::vector<ChangeEvent> ReadN(ChangeSubscription* sub, size_t n) {
    std::vector<ChangeEvent> got;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (got.size() < n && std::chrono::steady_clock::now() < deadline) {
      ChangeBatch b = sub->Read(microseconds(100000));
      EXPECT_EQ(b.lost, 0u);
      for (ChangeEvent& e : b.events) got.push_back(std::move(e));
    }
    return got;
  }

  MemEnv env_;
  std::unique_ptr<Bigtable> store_;
};

TEST_P(ChangesTest, EveryDoorPublishesItsOperationsInOrder) {
  auto sub = Subscribe();
  ASSERT_NE(sub, nullptr);
  RowMutation m("r1");
  m.SetCell("f", "a", "x")
      .SetCell("g", "b", 42, "y")
      .DeleteVersion("f", "a", 7)
      .DeleteCell("g", "c")
      .DeleteFamily("f")
      .DeleteRow();
  auto ts = store_->Apply("t", m, WriteOptions());
  ASSERT_TRUE(ts.ok()) << ts.status().ToString();
  auto appended =
      store_->Append("t", "r2", "f", "log", "line\n", WriteOptions());
  ASSERT_TRUE(appended.ok());
  auto inc = store_->Increment("t", "r2", "g", "n", 5, WriteOptions());
  ASSERT_TRUE(inc.ok());
  CellCondition cond;
  cond.family = "g";
  cond.qualifier = "n";
  RowMutation yes("r2"), no("r2");
  yes.DeleteCell("f", "log");
  no.SetCell("f", "never", "z");
  auto held = store_->CheckAndMutate("t", "r2", cond, yes, no, WriteOptions());
  ASSERT_TRUE(held.ok() && *held);
  // A refused write publishes nothing.
  RowMutation bad("r3");
  bad.SetCell("nope", "q", "v");
  EXPECT_FALSE(store_->Apply("t", bad, WriteOptions()).ok());
  ASSERT_TRUE(store_->DeleteFamily("t", "g").ok());
  ASSERT_TRUE(store_->DeleteTable("t").ok());

  ChangeBatch b = sub->Read(kNoWait);
  EXPECT_EQ(b.lost, 0u);
  ASSERT_EQ(b.events.size(), 11u);
  const int64_t t0 = *ts;
  EXPECT_EQ(b.events[0], Event("r1", "f", "a", t0, ChangeKind::kSetCell, "x"));
  EXPECT_EQ(b.events[1], Event("r1", "g", "b", 42, ChangeKind::kSetCell, "y"));
  EXPECT_EQ(b.events[2], Event("r1", "f", "a", 7, ChangeKind::kDeleteVersion));
  EXPECT_EQ(b.events[3], Event("r1", "g", "c", t0, ChangeKind::kDeleteCell));
  EXPECT_EQ(b.events[4], Event("r1", "f", "", t0, ChangeKind::kDeleteFamily));
  EXPECT_EQ(b.events[5], Event("r1", "", "", t0, ChangeKind::kDeleteRow));
  EXPECT_EQ(b.events[6], Event("r2", "f", "log", appended->timestamp,
                               ChangeKind::kSetCell, "line\n"));
  EXPECT_EQ(b.events[7].kind, ChangeKind::kSetCell);
  EXPECT_EQ(b.events[7].qualifier, "n");
  EXPECT_GT(b.events[7].timestamp, appended->timestamp);
  EXPECT_EQ(b.events[8].kind, ChangeKind::kDeleteCell);
  EXPECT_EQ(b.events[8].qualifier, "log");
  EXPECT_GT(b.events[8].timestamp, b.events[7].timestamp);
  EXPECT_EQ(b.events[9],
            Event("", "g", "", b.events[8].timestamp, ChangeKind::kDropFamily));
  EXPECT_EQ(b.events[10],
            Event("", "", "", b.events[8].timestamp, ChangeKind::kDropTable));
  EXPECT_EQ(ChangeKindName(b.events[10].kind), "drop-table");
}

TEST_P(ChangesTest, ConcurrentWritersArriveInCommitOrder) {
  auto sub = Subscribe();
  ASSERT_NE(sub, nullptr);
  constexpr int kThreads = 4;
  constexpr int kWrites = 300;
  // Per writer, the server timestamp each write returned.
  std::vector<std::vector<int64_t>> acked(kThreads);
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kWrites; ++i) {
        // Two operations, so a mutation's events must stay together.
        RowMutation m("row" + std::to_string((w * 7 + i) % 13));
        m.SetCell("f", std::to_string(w) + "." + std::to_string(i), "v");
        m.SetCell("g", std::to_string(w), "v");
        auto ts = store_->Apply("t", m, WriteOptions());
        ASSERT_TRUE(ts.ok()) << ts.status().ToString();
        acked[w].push_back(*ts);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<ChangeEvent> got = ReadN(sub.get(), 2 * kThreads * kWrites);
  ASSERT_EQ(got.size(), 2u * kThreads * kWrites);

  // Server timestamps strictly increase in commit order: the stream's
  // mutations must come in increasing timestamp order, each one whole.
  std::vector<int> next(kThreads, 0);
  int64_t last_ts = 0;
  for (size_t k = 0; k < got.size(); k += 2) {
    const ChangeEvent& first = got[k];
    const ChangeEvent& second = got[k + 1];
    ASSERT_EQ(first.family, "f") << "at " << k;
    ASSERT_EQ(second.family, "g") << "at " << k;
    ASSERT_EQ(first.row, second.row);
    ASSERT_EQ(first.timestamp, second.timestamp);
    ASSERT_GT(first.timestamp, last_ts) << "out of commit order at " << k;
    last_ts = first.timestamp;
    const int w = std::stoi(second.qualifier);
    ASSERT_LT(next[w], kWrites);
    // Each writer's writes in its own order, with the acknowledged
    // timestamp.
    EXPECT_EQ(first.qualifier,
              std::to_string(w) + "." + std::to_string(next[w]));
    EXPECT_EQ(first.timestamp, acked[w][next[w]]);
    ++next[w];
  }
  EXPECT_EQ(sub->Read(kNoWait).events.size(), 0u);
}

TEST_P(ChangesTest, ASubscriberThatNeverReadsDoesNotStallWriters) {
  auto stalled = Subscribe(/*queue=*/16);
  auto reader = Subscribe();
  ASSERT_NE(stalled, nullptr);
  ASSERT_NE(reader, nullptr);
  constexpr int kThreads = 2;
  constexpr int kWrites = 1000;
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kWrites; ++i) {
        // GCC bug 105329: a false -Wrestrict in "r" + std::to_string(w).
        TABLETFS_GCC_BUG_105329_BEGIN
        RowMutation m("r" + std::to_string(w));
        TABLETFS_GCC_BUG_105329_END
        m.SetCell("f", std::to_string(i), "v");
        ASSERT_TRUE(store_->Apply("t", m, WriteOptions()).ok());
      }
    });
  }
  // Were a writer blocked on the full queue, these would never end.
  for (std::thread& t : threads) t.join();
  std::vector<ChangeEvent> all = ReadN(reader.get(), kThreads * kWrites);
  ASSERT_EQ(all.size(), size_t{kThreads * kWrites});

  // The stalled subscriber holds the first 16 and learns of the rest.
  ChangeBatch b = stalled->Read(kNoWait);
  ASSERT_EQ(b.events.size(), 16u);
  EXPECT_EQ(b.lost, uint64_t{kThreads * kWrites} - 16);
  for (size_t k = 0; k < 16; ++k) EXPECT_EQ(b.events[k], all[k]);
  // Having caught up, it gets what comes next.
  RowMutation m("after");
  m.SetCell("f", "q", "v");
  auto ts = store_->Apply("t", m, WriteOptions());
  ASSERT_TRUE(ts.ok());
  b = stalled->Read(kNoWait);
  EXPECT_EQ(b.lost, 0u);
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_EQ(b.events[0],
            Event("after", "f", "q", *ts, ChangeKind::kSetCell, "v"));
}

TEST_P(ChangesTest, FilterByTableWakeAndUnsubscribe) {
  ASSERT_TRUE(store_->CreateTable("u").ok());
  ASSERT_TRUE(store_->CreateFamily("u", "f", FamilySettings()).ok());
  auto only_u = Subscribe(1 << 10, "u");
  ASSERT_NE(only_u, nullptr);
  SubscribeOptions zero;
  zero.max_queued_events = 0;
  EXPECT_TRUE(store_->Subscribe(zero).status().IsInvalidArgument());

  RowMutation m("r");
  m.SetCell("f", "q", "v");
  ASSERT_TRUE(store_->Apply("t", m, WriteOptions()).ok());
  ASSERT_TRUE(store_->Apply("u", m, WriteOptions()).ok());
  ChangeBatch b = only_u->Read(kNoWait);
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_EQ(b.events[0].table, "u");

  // Wake() makes a waiting (here: the next) Read return at once.
  only_u->Wake();
  b = only_u->Read(std::chrono::hours(1));
  EXPECT_TRUE(b.events.empty());
  EXPECT_EQ(b.lost, 0u);

  // Writes go on after the subscriber left.
  only_u.reset();
  ASSERT_TRUE(store_->Apply("u", m, WriteOptions()).ok());
}

// A set's event carries the value written up to kMaxEventValueBytes, so a
// subscriber has it after the version is gone; larger values, and every
// value for a subscriber that wants none, are left out. The queue is
// bounded in bytes as well as in events.
TEST_P(ChangesTest, ValuesUpToTheLimitAreCarriedAndTheQueueIsBoundedInBytes) {
  auto all = Subscribe();
  SubscribeOptions names_only;
  names_only.values = false;
  auto names = store_->Subscribe(names_only);
  ASSERT_TRUE(names.ok());
  SubscribeOptions small;
  small.max_queued_bytes = kMaxEventValueBytes;
  auto bounded = store_->Subscribe(small);
  ASSERT_TRUE(bounded.ok());
  small.max_queued_bytes = 0;
  EXPECT_TRUE(store_->Subscribe(small).status().IsInvalidArgument());

  const std::string fits(kMaxEventValueBytes, 'a');
  const std::string larger(kMaxEventValueBytes + 1, 'b');
  RowMutation m("r");
  m.SetCell("f", "fits", fits).SetCell("f", "larger", larger);
  ASSERT_TRUE(store_->Apply("t", m, WriteOptions()).ok());
  RowMutation gone("r");
  gone.DeleteRow();
  ASSERT_TRUE(store_->Apply("t", gone, WriteOptions()).ok());

  ChangeBatch b = all->Read(kNoWait);
  ASSERT_EQ(b.events.size(), 3u);
  EXPECT_EQ(b.events[0].value, fits);
  EXPECT_EQ(b.events[1].value, std::nullopt);
  EXPECT_EQ(b.events[2].value, std::nullopt);  // a delete has none
  b = (*names)->Read(kNoWait);
  ASSERT_EQ(b.events.size(), 3u);
  EXPECT_EQ(b.events[0].value, std::nullopt);
  // The first event fills the bounded queue (an empty queue takes one of
  // any size): the rest is lost, and counted.
  b = (*bounded)->Read(kNoWait);
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_EQ(b.events[0].value, fits);
  EXPECT_EQ(b.lost, 2u);
}

// A door skips its own writes (SubscribeOptions::exclude_origin): they are
// not queued for it, while another subscriber still gets them.
TEST_P(ChangesTest, ExcludedOriginIsNotQueued) {
  SubscribeOptions so;
  so.exclude_origin = 7;
  auto door = store_->Subscribe(so);
  ASSERT_TRUE(door.ok());
  RowMutation m("r");
  m.SetCell("f", "q", "v");
  WriteOptions own;
  own.origin = 7;
  ASSERT_TRUE(store_->Apply("t", m, own).ok());
  ChangeBatch b = (*door)->Read(kNoWait);
  EXPECT_TRUE(b.events.empty());
  EXPECT_EQ(b.lost, 0u);

  auto all = Subscribe();
  ASSERT_NE(all, nullptr);
  WriteOptions other;
  other.origin = 8;
  ASSERT_TRUE(store_->Apply("t", m, own).ok());
  ASSERT_TRUE(store_->Apply("t", m, other).ok());
  b = (*door)->Read(kNoWait);
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_EQ(b.events[0].origin, 8u);
  std::vector<ChangeEvent> got = ReadN(all.get(), 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].origin, 7u);
  EXPECT_EQ(got[1].origin, 8u);
}

// A start in the past (SubscribeOptions::since): the engine reads it from
// its logs (tests/store/db/db_changes_test.cc), the reference store keeps
// none and says so.
TEST_P(ChangesTest, AStartInThePastIsServedOrNotSupported) {
  RowMutation m("r");
  m.SetCell("f", "q", "v");
  auto ts = store_->Apply("t", m, WriteOptions());
  ASSERT_TRUE(ts.ok());
  SubscribeOptions so;
  so.since = *ts;
  auto sub = store_->Subscribe(so);
  if (GetParam() == "reference") {
    EXPECT_TRUE(sub.status().IsNotSupported()) << sub.status().ToString();
    return;
  }
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  ChangeBatch b = (*sub)->Read(kNoWait);
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_EQ(b.events[0], Event("r", "f", "q", *ts, ChangeKind::kSetCell, "v"));
}

INSTANTIATE_TEST_SUITE_P(Implementations, ChangesTest,
                         testing::Values("engine", "reference"),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace tabletfs
