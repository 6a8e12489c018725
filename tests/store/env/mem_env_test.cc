// MemEnv: POSIX-like namespace, shared files, the settable clock and the
// disk-full simulation.

#include "store/env/mem_env.h"

#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tabletfs {
namespace {

class MemEnvTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(env_.CreateDir("/db").ok()); }

  std::string Read(const std::string& path) {
    auto data = ReadFileToString(&env_, path);
    EXPECT_TRUE(data.ok()) << data.status().ToString();
    return data.ok() ? *data : "";
  }

  MemEnv env_;
};

TEST_F(MemEnvTest, NewMemEnvIsEmpty) {
  std::unique_ptr<Env> env = NewMemEnv();
  auto children = env->GetChildren("/");
  ASSERT_TRUE(children.ok());
  EXPECT_TRUE(children->empty());
  EXPECT_TRUE(env->FileExists("/"));
}

TEST_F(MemEnvTest, WriteReadAppendTruncate) {
  ASSERT_TRUE(WriteStringToFile(&env_, "hello", "/db/f", true).ok());
  EXPECT_EQ(Read("/db/f"), "hello");
  {
    auto file = env_.NewAppendableFile("/db/f");
    ASSERT_TRUE(file.ok());
    EXPECT_EQ((*file)->Size(), 5u);
    ASSERT_TRUE((*file)->Append(" world").ok());
    EXPECT_EQ((*file)->Size(), 11u);
    ASSERT_TRUE((*file)->Close().ok());
    EXPECT_TRUE((*file)->Append("x").IsIOError());
  }
  EXPECT_EQ(Read("/db/f"), "hello world");
  auto size = env_.GetFileSize("/db/f");
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 11u);
  ASSERT_TRUE(env_.TruncateFile("/db/f", 5).ok());
  EXPECT_EQ(Read("/db/f"), "hello");
  ASSERT_TRUE(env_.TruncateFile("/db/f", 7).ok());
  EXPECT_EQ(Read("/db/f"), std::string("hello\0\0", 7));
  {
    auto file = env_.NewWritableFile("/db/f");
    ASSERT_TRUE(file.ok());
    EXPECT_EQ((*file)->Size(), 0u);
  }
  EXPECT_EQ(Read("/db/f"), "");
}

TEST_F(MemEnvTest, ReadsAtEdges) {
  ASSERT_TRUE(WriteStringToFile(&env_, "0123456789", "/db/f", false).ok());
  auto random = env_.NewRandomAccessFile("/db/f");
  ASSERT_TRUE(random.ok());
  char scratch[16];
  std::string_view result;
  ASSERT_TRUE((*random)->Read(8, 5, &result, scratch).ok());
  EXPECT_EQ(result, "89");
  ASSERT_TRUE((*random)->Read(10, 5, &result, scratch).ok());
  EXPECT_EQ(result, "");
  ASSERT_TRUE((*random)->Read(99, 5, &result, scratch).ok());
  EXPECT_EQ(result, "");

  auto seq = env_.NewSequentialFile("/db/f");
  ASSERT_TRUE(seq.ok());
  ASSERT_TRUE((*seq)->Skip(3).ok());
  ASSERT_TRUE((*seq)->Read(4, &result, scratch).ok());
  EXPECT_EQ(result, "3456");
  ASSERT_TRUE((*seq)->Skip(100).ok());
  ASSERT_TRUE((*seq)->Read(4, &result, scratch).ok());
  EXPECT_EQ(result, "");
}

TEST_F(MemEnvTest, HandlesShareOneFile) {
  auto writer = env_.NewWritableFile("/db/log");
  ASSERT_TRUE(writer.ok());
  auto reader = env_.NewRandomAccessFile("/db/log");
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE((*writer)->Append("abc").ok());
  char scratch[8];
  std::string_view result;
  ASSERT_TRUE((*reader)->Read(0, 8, &result, scratch).ok());
  EXPECT_EQ(result, "abc");
  // Removed while open: both handles keep working on the unlinked file.
  ASSERT_TRUE(env_.RemoveFile("/db/log").ok());
  EXPECT_FALSE(env_.FileExists("/db/log"));
  ASSERT_TRUE((*writer)->Append("d").ok());
  ASSERT_TRUE((*reader)->Read(0, 8, &result, scratch).ok());
  EXPECT_EQ(result, "abcd");
}

TEST_F(MemEnvTest, DirectoriesFollowPosix) {
  // Parent must exist.
  Status s = env_.NewWritableFile("/nodir/f").status();
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_NE(s.message().find("/nodir"), std::string::npos);
  EXPECT_TRUE(env_.CreateDir("/a/b").IsNotFound());
  EXPECT_TRUE(env_.GetChildren("/nodir").status().IsNotFound());
  EXPECT_TRUE(env_.RemoveDir("/nodir").IsNotFound());
  EXPECT_TRUE(env_.SyncDir("/nodir").IsNotFound());

  ASSERT_TRUE(env_.CreateDir("/db").ok());  // exists: OK
  ASSERT_TRUE(env_.CreateDir("/db/sub/").ok());
  ASSERT_TRUE(WriteStringToFile(&env_, "x", "/db/b", false).ok());
  ASSERT_TRUE(WriteStringToFile(&env_, "x", "//db/./a", false).ok());
  ASSERT_TRUE(WriteStringToFile(&env_, "x", "/db/sub/c", false).ok());
  auto children = env_.GetChildren("/db/");
  ASSERT_TRUE(children.ok());
  EXPECT_EQ(*children, (std::vector<std::string>{"a", "b", "sub"}));
  EXPECT_TRUE(env_.FileExists("/db/sub"));
  EXPECT_TRUE(env_.SyncDir("/db").ok());

  // A file where a directory is expected and the reverse.
  EXPECT_FALSE(env_.CreateDir("/db/a").ok());
  EXPECT_TRUE(env_.GetChildren("/db/a").status().IsIOError());
  EXPECT_TRUE(env_.NewWritableFile("/db/a/x").status().IsIOError());
  EXPECT_TRUE(env_.NewWritableFile("/db/sub").status().IsIOError());
  EXPECT_TRUE(env_.RemoveFile("/db/sub").IsIOError());

  s = env_.RemoveDir("/db/sub");
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find("not empty"), std::string::npos);
  ASSERT_TRUE(env_.RemoveFile("/db/sub/c").ok());
  ASSERT_TRUE(env_.RemoveDir("/db/sub").ok());
  EXPECT_FALSE(env_.FileExists("/db/sub"));
}

TEST_F(MemEnvTest, RelativePathsLiveUnderDot) {
  ASSERT_TRUE(WriteStringToFile(&env_, "x", "top", false).ok());
  ASSERT_TRUE(env_.CreateDir("rel").ok());
  ASSERT_TRUE(WriteStringToFile(&env_, "y", "rel/f", false).ok());
  auto children = env_.GetChildren(".");
  ASSERT_TRUE(children.ok());
  EXPECT_EQ(*children, (std::vector<std::string>{"rel", "top"}));
  EXPECT_EQ(Read("./rel/f"), "y");
}

TEST_F(MemEnvTest, RenameReplacesAndKeepsOpenHandles) {
  ASSERT_TRUE(WriteStringToFile(&env_, "old", "/db/CURRENT", false).ok());
  auto old_reader = env_.NewRandomAccessFile("/db/CURRENT");
  ASSERT_TRUE(old_reader.ok());
  ASSERT_TRUE(WriteStringToFile(&env_, "new", "/db/tmp", false).ok());
  ASSERT_TRUE(env_.RenameFile("/db/tmp", "/db/CURRENT").ok());
  EXPECT_FALSE(env_.FileExists("/db/tmp"));
  EXPECT_EQ(Read("/db/CURRENT"), "new");
  char scratch[8];
  std::string_view result;
  ASSERT_TRUE((*old_reader)->Read(0, 8, &result, scratch).ok());
  EXPECT_EQ(result, "old");
  EXPECT_EQ(env_.BytesUsed(), 3u);  // the replaced file is gone

  EXPECT_TRUE(env_.RenameFile("/db/missing", "/db/x").IsNotFound());
  EXPECT_TRUE(env_.RenameFile("/db/CURRENT", "/nodir/x").IsNotFound());
  ASSERT_TRUE(env_.RenameFile("/db/CURRENT", "/db/CURRENT").ok());
  EXPECT_EQ(Read("/db/CURRENT"), "new");
}

TEST_F(MemEnvTest, ClockIsSettableAndDeterministic) {
  EXPECT_EQ(env_.NowMicros(), MemEnv::kDefaultNowMicros);
  EXPECT_EQ(env_.NowMicros(), int64_t{1795255200} * 1000000);
  env_.AdvanceMicros(5);
  EXPECT_EQ(env_.NowMicros(), MemEnv::kDefaultNowMicros + 5);
  env_.SetNowMicros(42);
  EXPECT_EQ(env_.NowMicros(), 42);
}

TEST_F(MemEnvTest, DiskFullFailsAppendsUntilSpaceIsFreed) {
  auto free = env_.GetFreeSpace("/db");
  ASSERT_TRUE(free.ok());
  EXPECT_EQ(*free, MemEnv::kDefaultFreeSpace);

  ASSERT_TRUE(WriteStringToFile(&env_, "12345", "/db/old", false).ok());
  env_.SetFreeSpace(10);
  EXPECT_EQ(*env_.GetFreeSpace("/db"), 10u);
  auto file = env_.NewWritableFile("/db/log");
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("abcdefgh").ok());
  EXPECT_EQ(*env_.GetFreeSpace("/db"), 2u);
  Status s = (*file)->Append("xyz");
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_NE(s.message().find("/db/log"), std::string::npos);
  EXPECT_EQ((*file)->Size(), 8u);  // nothing of the failed append
  ASSERT_TRUE((*file)->Append("xy").ok());
  EXPECT_TRUE((*file)->Append("z").IsNoSpace());
  // Removing a file gives its space back.
  ASSERT_TRUE(env_.RemoveFile("/db/old").ok());
  EXPECT_EQ(*env_.GetFreeSpace("/db"), 5u);
  EXPECT_TRUE((*file)->Append("z").ok());
  // A failed WriteStringToFile leaves no file behind.
  EXPECT_TRUE(WriteStringToFile(&env_, "too long", "/db/x", true).IsNoSpace());
  EXPECT_FALSE(env_.FileExists("/db/x"));
  // Truncation frees too; growing by truncate is charged.
  ASSERT_TRUE(env_.TruncateFile("/db/log", 0).ok());
  EXPECT_EQ(*env_.GetFreeSpace("/db"), 15u);
  EXPECT_TRUE(env_.TruncateFile("/db/log", 16).IsNoSpace());
}

TEST_F(MemEnvTest, LocksAreExclusiveInProcess) {
  auto lock = env_.LockFile("/db/LOCK");
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  EXPECT_EQ(Read("/db/LOCK"), std::to_string(getpid()) + "\n");
  auto again = env_.LockFile("/db//LOCK");
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(again.status().IsBusy());
  EXPECT_EQ(again.status().message(),
            "database /db is locked by pid " + std::to_string(getpid()));
  lock->reset();
  EXPECT_TRUE(env_.LockFile("/db/LOCK").ok());
  EXPECT_TRUE(env_.LockFile("/nodir/LOCK").status().IsNotFound());
}

TEST_F(MemEnvTest, ConcurrentAppendersAndReaders) {
  constexpr int kThreads = 4;
  constexpr int kAppends = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      std::string path = "/db/f" + std::to_string(t);
      auto file = env_.NewWritableFile(path);
      ASSERT_TRUE(file.ok());
      auto reader = env_.NewRandomAccessFile(path);
      ASSERT_TRUE(reader.ok());
      char scratch[4];
      for (int i = 0; i < kAppends; ++i) {
        ASSERT_TRUE((*file)->Append("abcd").ok());
        std::string_view result;
        ASSERT_TRUE((*reader)->Read(4 * i, 4, &result, scratch).ok());
        ASSERT_EQ(result, "abcd");
        env_.FileExists("/db/f0");
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(env_.BytesUsed(), uint64_t{kThreads} * kAppends * 4);
  auto children = env_.GetChildren("/db");
  ASSERT_TRUE(children.ok());
  EXPECT_EQ(children->size(), size_t{kThreads});
}

}  // namespace
}  // namespace tabletfs
