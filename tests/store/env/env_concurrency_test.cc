// The Envs under concurrent use (run under TSan in the concurrency build).

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "store/env.h"
#include "store/env/mem_env.h"
#include "store/fault_env.h"

namespace tabletfs {
namespace {

constexpr int kThreads = 4;

TEST(EnvConcurrencyTest, FaultEnvWritersSyncersAndDirSyncs) {
  MemEnv base;
  FaultInjectionEnv env(&base);
  ASSERT_TRUE(env.CreateDir("/db").ok());
  std::atomic<bool> stop{false};
  std::thread dir_syncer([&] {
    while (!stop.load()) ASSERT_TRUE(env.SyncDir("/db").ok());
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&env, t] {
      for (int i = 0; i < 20; ++i) {
        std::string tmp = "/db/tmp" + std::to_string(t);
        std::string name =
            "/db/f" + std::to_string(t) + "_" + std::to_string(i);
        auto file = env.NewWritableFile(tmp);
        ASSERT_TRUE(file.ok());
        ASSERT_TRUE((*file)->Append("record").ok());
        ASSERT_TRUE((*file)->Sync().ok());
        ASSERT_TRUE((*file)->Close().ok());
        ASSERT_TRUE(env.RenameFile(tmp, name).ok());
        if (i % 2 == 0) {
          ASSERT_TRUE(env.RemoveFile(name).ok());
        }
        env.CallCount(FaultOp::kSync);
      }
    });
  }
  for (auto& w : writers) w.join();
  stop.store(true);
  dir_syncer.join();
  // After a final SyncDir everything is durable: a power loss keeps the
  // odd-numbered files, each with its synced record.
  ASSERT_TRUE(env.SyncDir("/db").ok());
  env.SetFilesystemActive(false);
  ASSERT_TRUE(env.DropUnsyncedData().ok());
  auto children = base.GetChildren("/db");
  ASSERT_TRUE(children.ok());
  EXPECT_EQ(children->size(), size_t{kThreads} * 10);
  for (const std::string& name : *children) {
    auto data = ReadFileToString(&base, "/db/" + name);
    ASSERT_TRUE(data.ok());
    EXPECT_EQ(*data, "record") << name;
  }
  EXPECT_EQ(env.CallCount(FaultOp::kSync), uint64_t{kThreads} * 20);
}

TEST(EnvConcurrencyTest, PosixConcurrentPreadsAndOneLockWinner) {
  Env* env = Env::Default();
  const char* tmp = getenv("TMPDIR");
  std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") +
                    "/env_concurrency_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::string data;
  for (int i = 0; i < 4096; ++i) data.push_back(static_cast<char>(i % 251));
  ASSERT_TRUE(WriteStringToFile(env, data, dir + "/f", false).ok());
  auto file = env->NewRandomAccessFile(dir + "/f");
  ASSERT_TRUE(file.ok());

  std::atomic<int> winners{0};
  std::vector<std::unique_ptr<FileLock>> locks(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      char scratch[64];
      for (int i = 0; i < 200; ++i) {
        uint64_t offset = (t * 997 + i * 61) % (data.size() - 64);
        std::string_view result;
        ASSERT_TRUE((*file)->Read(offset, 64, &result, scratch).ok());
        ASSERT_EQ(result, std::string_view(data).substr(offset, 64));
      }
      auto lock = env->LockFile(dir + "/LOCK");
      if (lock.ok()) {
        winners.fetch_add(1);
        locks[t] = std::move(lock).value();
      } else {
        EXPECT_TRUE(lock.status().IsBusy()) << lock.status().ToString();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(winners.load(), 1);
  locks.clear();
  ASSERT_TRUE(env->RemoveFile(dir + "/f").ok());
  ASSERT_TRUE(env->RemoveFile(dir + "/LOCK").ok());
  ASSERT_TRUE(env->RemoveDir(dir).ok());
}

TEST(EnvConcurrencyTest, MemEnvClockAndSpace) {
  MemEnv env;
  ASSERT_TRUE(env.CreateDir("/db").ok());
  env.SetFreeSpace(kThreads * 100);
  std::vector<std::thread> threads;
  std::atomic<int> refused{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto file = env.NewWritableFile("/db/f" + std::to_string(t));
      ASSERT_TRUE(file.ok());
      // Each thread asks for 150 bytes in 10-byte appends: 600 asked, 400
      // available, so exactly 20 appends are refused overall.
      for (int i = 0; i < 15; ++i) {
        Status s = (*file)->Append("0123456789");
        if (!s.ok()) {
          EXPECT_TRUE(s.IsNoSpace());
          refused.fetch_add(1);
        }
        env.AdvanceMicros(1);
        env.GetFreeSpace("/db").status().IgnoreError();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(refused.load(), 20);
  EXPECT_EQ(*env.GetFreeSpace("/db"), 0u);
  EXPECT_EQ(env.NowMicros(), MemEnv::kDefaultNowMicros + kThreads * 15);
}

}  // namespace
}  // namespace tabletfs
