// Concurrency: parallel writers and readers, read-modify-write contention,
// scanners across flushes and compactions. Runs under TSan.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/db.h"
#include "store/db/db_impl.h"
#include "store/env/mem_env.h"
#include "store/fault_env.h"
#include "tests/util/gcc_bug_105329.h"

namespace tabletfs {
namespace {

class DBConcurrencyTest : public testing::Test {
 protected:
  void SetUp() override {
    options_.env = &env_;
    options_.space_reserve_bytes = 0;
    options_.memtable_bytes = 32 << 10;
    options_.target_file_bytes = 16 << 10;
    options_.block_size = 1024;
    auto db = DB::Open(options_, "/db");
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
    ASSERT_TRUE(db_->CreateTable("t").ok());
    ASSERT_TRUE(db_->CreateFamily("t", "f", FamilySettings()).ok());
    ASSERT_TRUE(db_->CreateFamily("t", "g", FamilySettings()).ok());
  }

  MemEnv env_;
  Options options_;
  std::unique_ptr<DB> db_;
};

// A row another thread's write just put in the memtable is found by a point
// read that starts after the write returned: the memtable's row filter,
// which point reads consult first, holds it (across the filter's growth:
// thousands of rows in one memtable).
TEST(DBConcurrencyFilterTest, ReadsFindRowsJustWrittenByAnotherThread) {
  MemEnv env;
  Options options;
  options.env = &env;
  options.space_reserve_bytes = 0;
  options.memtable_bytes = 8 << 20;
  auto opened = DB::Open(options, "/db");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<DB> db = std::move(*opened);
  ASSERT_TRUE(db->CreateTable("t").ok());
  ASSERT_TRUE(db->CreateFamily("t", "f", FamilySettings()).ok());
  constexpr int kRows = 6000;
  std::atomic<int> written{0};  // rows [0, written) are acknowledged
  std::atomic<int> missed{0};
  std::thread reader([&] {
    int read = 0;
    while (read < kRows) {
      const int n = written.load();
      if (n == read) {
        std::this_thread::yield();
        continue;
      }
      // The newest row, then a row written earlier.
      for (int i : {n - 1, read}) {
        auto cells =
            db->ReadCell("t", std::string("row").append(std::to_string(i)), "f",
                         "q", ReadOptions());
        if (!cells.ok() || cells->size() != 1) missed.fetch_add(1);
      }
      read = n;
    }
  });
  for (int i = 0; i < kRows; ++i) {
    RowMutation m(std::string("row").append(std::to_string(i)));
    m.SetCell("f", "q", std::string("v").append(std::to_string(i)));
    ASSERT_TRUE(db->Apply("t", m, WriteOptions()).ok());
    written.store(i + 1);
  }
  reader.join();
  EXPECT_EQ(missed.load(), 0);
  EXPECT_EQ(db->GetStats().flushes, 0u) << "the rows must stay in memory";
}

TEST_F(DBConcurrencyTest, ReadersNeverSeePartOfARowMutation) {
  constexpr int kWriters = 3;
  constexpr int kOpsPerWriter = 600;
  constexpr int kRows = 8;
  std::atomic<int> writers_done{0};
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kOpsPerWriter; ++i) {
        std::string row = "row" + std::to_string((i + w) % kRows);
        std::string value =
            std::to_string(w) + ":" + std::to_string(i) + std::string(50, 'x');
        RowMutation m(row);
        // Every cell of the row gets the same value in one mutation.
        m.SetCell("f", "a", value)
            .SetCell("f", "b", value)
            .SetCell("g", "c", value);
        WriteOptions wo;
        wo.sync = (i % 50 == 0);
        auto r = db_->Apply("t", m, wo);
        if (!r.ok()) bad++;
      }
      writers_done++;
    });
  }
  auto check_row = [&](const Row& row) {
    if (row.cells.empty()) return;
    if (row.cells.size() != 3) {
      bad++;
      return;
    }
    for (const Cell& c : row.cells) {
      if (c.value != row.cells[0].value) bad++;
    }
  };
  threads.emplace_back([&] {
    while (writers_done.load() < kWriters) {
      for (int r = 0; r < kRows; ++r) {
        auto row = db_->ReadRow("t", "row" + std::to_string(r), ReadOptions());
        if (!row.ok()) {
          bad++;
          continue;
        }
        check_row(*row);
      }
    }
  });
  threads.emplace_back([&] {
    while (writers_done.load() < kWriters) {
      auto s = db_->NewScanner("t", ScanOptions());
      if (!s.ok()) {
        bad++;
        continue;
      }
      Scanner& sc = **s;
      while (sc.Valid()) {
        Row row;
        if (!sc.ReadRow(&row).ok()) bad++;
        check_row(row);
      }
      if (!sc.status().ok()) bad++;
    }
  });
  threads.emplace_back([&] {
    while (writers_done.load() < kWriters) {
      if (!db_->Flush().ok()) bad++;
      if (!db_->CompactAll().ok()) bad++;
      (void)db_->GetStats();
    }
  });
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  ASSERT_TRUE(db_->WaitForIdle().ok());
  ASSERT_TRUE(db_->Verify().ok());
  EXPECT_GT(db_->GetStats().flushes, 0u);
}

// A point read skips empty memtables (and reads nothing when every one is
// empty and no file's filter passes). A write another thread saw
// acknowledged must still be found: with 32 KiB memtables the active one
// is often new and empty, and the row just written is in a frozen one or
// the first entry of the new one.
TEST_F(DBConcurrencyTest, AReaderFindsEveryRowAnotherThreadWrote) {
  constexpr int kRows = 3000;
  std::atomic<int> written{-1};
  std::atomic<bool> failed{false};
  std::thread writer([&] {
    for (int i = 0; i < kRows && !failed.load(); ++i) {
      RowMutation m(std::string("row").append(std::to_string(i)));
      m.SetCell("f", "q", std::string(100, 'x'));
      if (!db_->Apply("t", m, WriteOptions()).ok()) {
        failed.store(true);
        break;
      }
      written.store(i, std::memory_order_release);
    }
  });
  int checked = 0;
  for (int last = -1; last < kRows - 1 && !failed.load();) {
    last = written.load(std::memory_order_acquire);
    if (last < 0) continue;
    // The newest row and a missing neighbour, both as cell and row reads.
    const std::string row = "row" + std::to_string(last);
    auto cells = db_->ReadCell("t", row, "f", "q", ReadOptions());
    auto whole = db_->ReadRow("t", row, ReadOptions());
    auto missing = db_->ReadCell("t", row + "m", "f", "q", ReadOptions());
    if (!cells.ok() || cells->size() != 1 || !whole.ok() ||
        whole->cells.size() != 1 || !missing.ok() || !missing->empty()) {
      ADD_FAILURE() << row << " read wrong after its write was acknowledged";
      failed.store(true);
    }
    ++checked;
  }
  writer.join();
  EXPECT_FALSE(failed.load());
  EXPECT_GT(checked, 10);
  ASSERT_TRUE(db_->WaitForIdle().ok());
  EXPECT_GT(db_->GetStats().flushes, 5u) << db_->GetStats().ToString();
}

TEST_F(DBConcurrencyTest, ReadModifyWriteIsAtomic) {
  constexpr int kThreads = 4;
  constexpr int kOps = 200;
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kOps; ++i) {
        if (!db_->Increment("t", "counter", "f", "n", 1, WriteOptions()).ok()) {
          bad++;
        }
        std::string line = std::to_string(t) + "." + std::to_string(i) + "\n";
        if (!db_->Append("t", "log", "f", "lines", line, WriteOptions()).ok()) {
          bad++;
        }
        // Plain writes to the same row interleave with the RMW ops.
        RowMutation m("counter");
        m.SetCell("g", "other", std::to_string(i));
        if (!db_->Apply("t", m, WriteOptions()).ok()) bad++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(*db_->Increment("t", "counter", "f", "n", 0, WriteOptions()),
            kThreads * kOps);
  auto cells = db_->ReadCell("t", "log", "f", "lines", ReadOptions());
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(cells->size(), 1u);
  std::set<std::string> lines;
  std::string all = (*cells)[0].value;
  size_t start = 0;
  for (size_t nl; (nl = all.find('\n', start)) != std::string::npos;
       start = nl + 1) {
    lines.insert(all.substr(start, nl - start));
  }
  EXPECT_EQ(lines.size(), static_cast<size_t>(kThreads * kOps));
}

TEST_F(DBConcurrencyTest, ScannerKeepsItsViewAcrossFlushAndCompaction) {
  for (int i = 0; i < 200; ++i) {
    // GCC bug 105329: a false -Wrestrict in "r" + std::to_string(1000 + i).
    TABLETFS_GCC_BUG_105329_BEGIN
    RowMutation m("r" + std::to_string(1000 + i));
    TABLETFS_GCC_BUG_105329_END
    m.SetCell("f", "q", 1, "before");
    ASSERT_TRUE(db_->Apply("t", m, WriteOptions()).ok());
  }
  auto s = db_->NewScanner("t", ScanOptions());
  ASSERT_TRUE(s.ok());
  std::thread writer([&] {
    for (int i = 0; i < 200; ++i) {
      // GCC bug 105329: a false -Wrestrict in "r" + std::to_string(1000 + i).
      TABLETFS_GCC_BUG_105329_BEGIN
      RowMutation m("r" + std::to_string(1000 + i));
      TABLETFS_GCC_BUG_105329_END
      m.DeleteRow();
      m.SetCell("f", "q", 2, "after");
      ASSERT_TRUE(db_->Apply("t", m, WriteOptions()).ok());
    }
    ASSERT_TRUE(db_->CompactAll().ok());
  });
  int n = 0;
  for (Scanner& sc = **s; sc.Valid(); sc.Next()) {
    EXPECT_EQ(*sc.value(), "before");
    ++n;
  }
  writer.join();
  EXPECT_TRUE((*s)->status().ok());
  EXPECT_EQ(n, 200);
  s->reset();
  auto after = db_->NewScanner("t", ScanOptions());
  ASSERT_TRUE(after.ok());
  n = 0;
  for (Scanner& sc = **after; sc.Valid(); sc.Next()) {
    EXPECT_EQ(*sc.value(), "after");
    ++n;
  }
  EXPECT_EQ(n, 200);
}

// Tiny tablets on `env`: they split, merge, freeze and flush often.
Options TinyTabletOptions(Env* env, size_t memtable_bytes,
                          size_t split_bytes) {
  Options options;
  options.env = env;
  options.space_reserve_bytes = 0;
  options.memtable_bytes = memtable_bytes;
  options.target_file_bytes = 8 << 10;
  options.block_size = 1024;
  options.tablet_split_bytes = split_bytes;
  return options;
}

// Opens /db with table t and its family f.
std::unique_ptr<DB> OpenWithTable(const Options& options) {
  auto opened = DB::Open(options, "/db");
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  if (!opened.ok()) return nullptr;
  std::unique_ptr<DB> db = std::move(*opened);
  EXPECT_TRUE(db->CreateTable("t").ok());
  EXPECT_TRUE(db->CreateFamily("t", "f", FamilySettings()).ok());
  return db;
}

// Every row of `rows` holds cell f:q, by point reads and by a scan of
// table t, in *db and again after a reopen (which replaces *db).
void ExpectRowsBeforeAndAfterReopen(const Options& options,
                                    const std::vector<std::string>& rows,
                                    std::unique_ptr<DB>* db) {
  const DbStats stats = (*db)->GetStats();
  EXPECT_GE(stats.tablet_splits, 5u);
  for (int pass = 0; pass < 2; ++pass) {
    int missing = 0;
    for (const std::string& row : rows) {
      auto cells = (*db)->ReadCell("t", row, "f", "q", ReadOptions());
      ASSERT_TRUE(cells.ok()) << cells.status().ToString();
      if (cells->size() != 1) ++missing;
    }
    auto scanner = (*db)->NewScanner("t", ScanOptions());
    ASSERT_TRUE(scanner.ok());
    size_t scanned = 0;
    for (; (*scanner)->Valid(); (*scanner)->Next()) ++scanned;
    scanner->reset();
    EXPECT_EQ(missing, 0) << "pass " << pass << ", " << stats.tablet_splits
                          << " splits, " << stats.tablet_merges << " merges, "
                          << stats.flushes << " flushes";
    EXPECT_EQ(scanned, rows.size()) << "pass " << pass;
    db->reset();
    auto again = DB::Open(options, "/db");
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    *db = std::move(*again);
  }
}

// Writers append to the log without holding up splits, merges and freezes,
// which may replace the memtables their entries were routed to: the leader
// routes them again before it fills memtables. Slow synced log writes (a
// delay on every log sync) keep that window open while tiny tablets split,
// merge and freeze; every acknowledged write must be there, before and
// after a reopen.
TEST(DBTabletConcurrencyTest, WritesRoutedBeforeASplitLandInTheRightTablet) {
  MemEnv mem;
  FaultInjectionEnv env(&mem);
  env.SetSyncDelay(300, ".log");
  const Options options = TinyTabletOptions(&env, 16 << 10, 6 << 10);
  std::unique_ptr<DB> db = OpenWithTable(options);
  ASSERT_NE(db, nullptr);

  constexpr int kWriters = 4;
  constexpr int kRowsPerWriter = 250;
  auto row = [](int w, int i) {
    // Interleaved keys, so every tablet takes writes from every writer.
    char buf[32];
    std::snprintf(buf, sizeof(buf), "r%04d-%d", i, w);
    return std::string(buf);
  };
  std::atomic<bool> failed{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kRowsPerWriter && !failed; ++i) {
        RowMutation m(row(w, i));
        m.SetCell("f", "q", 1, std::string(100, static_cast<char>('a' + w)));
        WriteOptions wo;
        wo.sync = i % 4 == 0;
        if (!db->Apply("t", m, wo).ok()) failed = true;
      }
    });
  }
  for (auto& t : writers) t.join();
  ASSERT_FALSE(failed);
  ASSERT_TRUE(db->WaitForIdle().ok());
  std::vector<std::string> rows;
  for (int w = 0; w < kWriters; ++w) {
    for (int i = 0; i < kRowsPerWriter; ++i) rows.push_back(row(w, i));
  }
  ExpectRowsBeforeAndAfterReopen(options, rows, &db);
}

// A split, merge or freeze does not wait for the leader filling memtables:
// it freezes a memtable the leader still fills (MemInUse keeps one the
// leader routed to but has not filled yet), and the flush of a frozen
// memtable waits for that fill (AwaitFill). Tiny tablets split, merge and
// freeze beside fills (each leader sleeps halfway through its fill);
// every acknowledged row must be there, before and after a reopen.
TEST(DBTabletConcurrencyTest, SplitsAndFreezesBesideAFillLoseNothing) {
  MemEnv mem;
  const Options options = TinyTabletOptions(&mem, 64 << 10, 16 << 10);
  std::unique_ptr<DB> db = OpenWithTable(options);
  ASSERT_NE(db, nullptr);
  static_cast<DBImpl*>(db.get())->SetFillPauseForTesting(
      std::chrono::microseconds(2000));

  // Batches of 20 rows: ApplyBatch locks each row's lock stripe, and
  // TSan's deadlock detector counts at most 64 locks held at once.
  constexpr int kWriters = 3;
  constexpr int kBatches = 60;
  constexpr int kRowsPerBatch = 20;
  auto row = [](int w, int b, int i) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "r%03d-%02d-%d", i, b, w);
    return std::string(buf);
  };
  std::atomic<bool> failed{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int b = 0; b < kBatches && !failed; ++b) {
        std::vector<RowMutation> batch;
        for (int i = 0; i < kRowsPerBatch; ++i) {
          RowMutation& m = batch.emplace_back(row(w, b, i));
          m.SetCell("f", "q", 1, std::string(60, static_cast<char>('a' + w)));
        }
        for (const auto& r : db->ApplyBatch("t", batch, WriteOptions())) {
          if (!r.ok()) failed = true;
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  ASSERT_FALSE(failed);
  ASSERT_TRUE(db->WaitForIdle().ok());
  std::vector<std::string> rows;
  for (int w = 0; w < kWriters; ++w) {
    for (int b = 0; b < kBatches; ++b) {
      for (int i = 0; i < kRowsPerBatch; ++i) rows.push_back(row(w, b, i));
    }
  }
  ExpectRowsBeforeAndAfterReopen(options, rows, &db);
}

// A directory sync that blocks the thread named by Arm() until Release():
// a disk whose fsync of the directory waits behind a compaction's
// writeback (it took up to 380 ms in the tablet benchmark).
class BlockingSyncDirEnv : public FaultInjectionEnv {
 public:
  using FaultInjectionEnv::FaultInjectionEnv;

  void Arm(std::thread::id thread) {
    std::lock_guard<std::mutex> l(mu_);
    thread_ = thread;
  }
  // True once the armed thread is blocked in SyncDir (false after 10 s).
  bool AwaitBlocked() {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::seconds(10), [&] { return blocked_; });
  }
  // Whether the armed thread is blocked in SyncDir now.
  bool BlockedNow() {
    std::lock_guard<std::mutex> l(mu_);
    return blocked_ && !released_;
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu_);
    released_ = true;
    cv_.notify_all();
  }

  Status SyncDir(const std::string& dir) override {
    {
      std::unique_lock<std::mutex> l(mu_);
      if (std::this_thread::get_id() == thread_ && !released_) {
        blocked_ = true;
        cv_.notify_all();
        cv_.wait(l, [&] { return released_; });
      }
    }
    return FaultInjectionEnv::SyncDir(dir);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread::id thread_;
  bool blocked_ = false;
  bool released_ = false;
};

// The log switch tests' options: logs of 32 KiB (the memtable's size)
// over `env`.
Options LogSwitchOptions(Env* env, std::chrono::milliseconds commit_interval) {
  Options options;
  options.env = env;
  options.space_reserve_bytes = 0;
  options.memtable_bytes = 32 << 10;  // also the size of one log
  options.commit_interval = commit_interval;
  return options;
}

// The log switch tests' write of row i: 400 of them are ~100 KiB of log.
RowMutation LogSwitchWrite(int i) {
  RowMutation m(std::string("row").append(std::to_string(i)));
  m.SetCell("f", "q", std::string(200, 'x'));
  return m;
}

// Every 37th of the first `rows` rows LogSwitchWrite wrote reads back.
void ExpectRowsWritten(DB* db, int rows) {
  for (int i = 0; i < rows; i += 37) {
    Result<Row> row = db->ReadRow(
        "t", std::string("row").append(std::to_string(i)), ReadOptions());
    ASSERT_TRUE(row.ok()) << row.status().ToString();
    EXPECT_EQ(row->cells.size(), 1u) << i;
  }
}

// Without a commit thread to prepare the next log, a log switch makes the
// new log's directory entry durable on the write path, but not under the
// database's lock: a point read made meanwhile answers at once (it waited
// for the whole fsync before).
TEST(DBLogSwitchTest, AReadDoesNotWaitForALogSwitchsDirectorySync) {
  MemEnv base;
  BlockingSyncDirEnv env(&base);
  // No commit thread: no spare log.
  std::unique_ptr<DB> db =
      OpenWithTable(LogSwitchOptions(&env, std::chrono::milliseconds(0)));
  ASSERT_NE(db, nullptr);
  RowMutation first("first");
  first.SetCell("f", "q", "v");
  ASSERT_TRUE(db->Apply("t", first, WriteOptions()).ok());

  constexpr int kRows = 400;  // ~100 KiB of log: at least one switch
  std::atomic<int> failed_writes{0};
  std::atomic<bool> armed{false};
  std::thread writer([&] {
    while (!armed.load()) std::this_thread::yield();
    for (int i = 0; i < kRows; ++i) {
      if (!db->Apply("t", LogSwitchWrite(i), WriteOptions()).ok()) {
        ++failed_writes;
      }
    }
  });
  env.Arm(writer.get_id());
  armed = true;
  const bool blocked = env.AwaitBlocked();
  std::future<bool> read;
  if (blocked) {
    read = std::async(std::launch::async, [&] {
      Result<Row> row = db->ReadRow("t", "first", ReadOptions());
      return row.ok() && row->cells.size() == 1 && row->cells[0].value == "v";
    });
  }
  const bool answered =
      blocked && read.wait_for(std::chrono::seconds(5)) ==
                     std::future_status::ready;
  env.Release();
  writer.join();
  ASSERT_TRUE(blocked) << "the writer never synced the directory";
  EXPECT_TRUE(answered) << "the read waited for the directory sync";
  EXPECT_TRUE(read.get());
  EXPECT_EQ(failed_writes.load(), 0);
  ExpectRowsWritten(db.get(), kRows);
}

// With the commit thread, a log switch takes the log the thread made
// beside the writers (its directory entry synced), and the thread syncs
// the log every eighth of it: the writing thread never syncs the
// directory, and the switch's own sync of the old log has at most that
// much left.
TEST(DBLogSwitchTest, TheCommitThreadPreparesTheNextLogAndSyncsEarly) {
  MemEnv base;
  BlockingSyncDirEnv env(&base);
  // No tick of the commit interval in the test.
  const Options options = LogSwitchOptions(&env, std::chrono::hours(1));
  std::unique_ptr<DB> db = OpenWithTable(options);
  ASSERT_NE(db, nullptr);
  auto* impl = static_cast<DBImpl*>(db.get());
  auto logs = [&] {
    std::set<std::string> out;
    Result<std::vector<std::string>> children = env.GetChildren("/db");
    if (!children.ok()) return out;
    for (const std::string& name : *children) {
      if (name.ends_with(".log")) out.insert(name);
    }
    return out;
  };
  const std::set<std::string> before = logs();
  // The writes run on a thread of their own, armed: a directory sync made
  // by it blocks until this thread notices and releases it.
  std::atomic<bool> done{false};
  std::atomic<int> failed_writes{0};
  std::thread writer([&] {
    for (int i = 0; i < 400; ++i) {  // three switches
      if (!db->Apply("t", LogSwitchWrite(i), WriteOptions()).ok()) {
        ++failed_writes;
      }
      // Each request is served before the next write, as it would be
      // well before the log fills up at any real size.
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (impl->LogUpkeepPendingForTesting() &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    }
    done = true;
  });
  env.Arm(writer.get_id());
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool writer_synced_directory = false;
  while (!done.load() && std::chrono::steady_clock::now() < give_up) {
    if (env.BlockedNow()) {
      writer_synced_directory = true;
      env.Release();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  env.Release();
  writer.join();
  EXPECT_FALSE(writer_synced_directory);
  EXPECT_EQ(failed_writes.load(), 0);
  // It switched logs, and synced early: no interval passed, yet the log
  // was synced beside the writer.
  std::set<std::string> after = logs();
  EXPECT_NE(after, before);
  EXPECT_GT(db->GetStats().commit_syncs, 0u) << db->GetStats().ToString();
  ExpectRowsWritten(db.get(), 400);
  // Closing removes the spare log it did not use: a reopen finds the rows
  // and no empty log.
  db.reset();
  for (const std::string& name : logs()) {
    EXPECT_GT(*base.GetFileSize("/db/" + name), 0u) << name;
  }
  auto opened = DB::Open(options, "/db");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Result<Row> last = (*opened)->ReadRow("t", "row399", ReadOptions());
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  EXPECT_EQ(last->cells.size(), 1u);
}

}  // namespace
}  // namespace tabletfs
