// FaultInjectionEnv: the power-loss model and error injection.

#include "store/fault_env.h"

#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "store/env/mem_env.h"
#include "tests/util/gcc_bug_105329.h"

namespace tabletfs {
namespace {

class FaultEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(base_.CreateDir("/db").ok());
    ASSERT_TRUE(env_.SyncDir("/").ok());
  }

  // Writes `data` into a new file; syncs the data when sync_data, the
  // directory when sync_dir.
  void Write(const std::string& path, const std::string& data, bool sync_data,
             bool sync_dir) {
    auto file = env_.NewWritableFile(path);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    ASSERT_TRUE((*file)->Append(data).ok());
    if (sync_data) {
      ASSERT_TRUE((*file)->Sync().ok());
    }
    ASSERT_TRUE((*file)->Close().ok());
    if (sync_dir) {
      ASSERT_TRUE(env_.SyncDir("/db").ok());
    }
  }

  std::string Read(const std::string& path) {
    auto data = ReadFileToString(&base_, path);
    EXPECT_TRUE(data.ok()) << data.status().ToString();
    return data.ok() ? *data : "<missing>";
  }

  void PowerLoss() {
    env_.SetFilesystemActive(false);
    ASSERT_TRUE(env_.DropUnsyncedData().ok());
    env_.SetFilesystemActive(true);
  }

  MemEnv base_;
  FaultInjectionEnv env_{&base_};
};

TEST_F(FaultEnvTest, SyncedDataSurvives) {
  Write("/db/f", "durable", true, true);
  PowerLoss();
  EXPECT_EQ(Read("/db/f"), "durable");
}

TEST_F(FaultEnvTest, UnsyncedAppendsVanish) {
  auto file = env_.NewWritableFile("/db/log");
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE(env_.SyncDir("/db").ok());
  ASSERT_TRUE((*file)->Append("one").ok());
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Append("two").ok());
  ASSERT_TRUE((*file)->Flush().ok());  // a flush is no sync
  EXPECT_EQ(env_.SyncedSize("/db/log"), 3u);
  EXPECT_EQ(Read("/db/log"), "onetwo");
  file->reset();
  PowerLoss();
  EXPECT_EQ(Read("/db/log"), "one");
}

TEST_F(FaultEnvTest, AppendsToAnOldFileVanishUnlessSynced) {
  // A file the fault env never saw created counts as synced.
  ASSERT_TRUE(WriteStringToFile(&base_, "old", "/db/f", false).ok());
  {
    auto file = env_.NewAppendableFile("/db/f");
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->Append("new").ok());
  }
  PowerLoss();
  EXPECT_EQ(Read("/db/f"), "old");
}

TEST_F(FaultEnvTest, FileCreatedWithoutSyncDirVanishes) {
  Write("/db/f", "data", /*sync_data=*/true, /*sync_dir=*/false);
  EXPECT_TRUE(base_.FileExists("/db/f"));
  PowerLoss();
  EXPECT_FALSE(base_.FileExists("/db/f"));
}

TEST_F(FaultEnvTest, SyncDirOfAnotherDirectoryDoesNotHelp) {
  ASSERT_TRUE(env_.CreateDir("/db/sub").ok());
  Write("/db/sub/f", "data", true, /*sync_dir=*/true);  // syncs /db only
  PowerLoss();
  EXPECT_FALSE(base_.FileExists("/db/sub/f"));
  EXPECT_TRUE(base_.FileExists("/db/sub"));  // directories count as durable
}

TEST_F(FaultEnvTest, SyncedEntryWithUnsyncedDataIsEmpty) {
  Write("/db/f", "data", /*sync_data=*/false, /*sync_dir=*/true);
  PowerLoss();
  EXPECT_EQ(Read("/db/f"), "");
}

TEST_F(FaultEnvTest, RenameWithoutSyncDirIsUndone) {
  Write("/db/CURRENT", "MANIFEST-1", true, true);
  Write("/db/tmp", "MANIFEST-2", true, true);
  ASSERT_TRUE(env_.RenameFile("/db/tmp", "/db/CURRENT").ok());
  EXPECT_EQ(Read("/db/CURRENT"), "MANIFEST-2");
  PowerLoss();
  EXPECT_EQ(Read("/db/CURRENT"), "MANIFEST-1");
  EXPECT_EQ(Read("/db/tmp"), "MANIFEST-2");
}

TEST_F(FaultEnvTest, RenameOfAnUnsyncedNewFileLeavesNothing) {
  // The manifest pattern without its final SyncDir: the temp file's entry
  // was never synced either, so neither name survives.
  Write("/db/tmp", "MANIFEST-1", true, false);
  ASSERT_TRUE(env_.RenameFile("/db/tmp", "/db/CURRENT").ok());
  PowerLoss();
  EXPECT_FALSE(base_.FileExists("/db/CURRENT"));
  EXPECT_FALSE(base_.FileExists("/db/tmp"));
}

TEST_F(FaultEnvTest, RenameFollowedBySyncDirIsDurable) {
  Write("/db/CURRENT", "MANIFEST-1", true, true);
  Write("/db/tmp", "MANIFEST-2", true, false);
  ASSERT_TRUE(env_.RenameFile("/db/tmp", "/db/CURRENT").ok());
  ASSERT_TRUE(env_.SyncDir("/db").ok());
  PowerLoss();
  EXPECT_EQ(Read("/db/CURRENT"), "MANIFEST-2");
  EXPECT_FALSE(base_.FileExists("/db/tmp"));
}

TEST_F(FaultEnvTest, RenameAcrossDirectoriesNeedsBothSynced) {
  ASSERT_TRUE(env_.CreateDir("/db/a").ok());
  ASSERT_TRUE(env_.CreateDir("/db/b").ok());
  Write("/db/a/f", "x", true, false);
  ASSERT_TRUE(env_.SyncDir("/db/a").ok());
  ASSERT_TRUE(env_.RenameFile("/db/a/f", "/db/b/f").ok());
  ASSERT_TRUE(env_.SyncDir("/db/b").ok());
  PowerLoss();
  EXPECT_EQ(Read("/db/a/f"), "x");
  EXPECT_FALSE(base_.FileExists("/db/b/f"));
}

TEST_F(FaultEnvTest, RemovalWithoutSyncDirIsUndone) {
  Write("/db/000005.sst", "table", true, true);
  ASSERT_TRUE(env_.RemoveFile("/db/000005.sst").ok());
  EXPECT_FALSE(base_.FileExists("/db/000005.sst"));
  PowerLoss();
  EXPECT_EQ(Read("/db/000005.sst"), "table");

  ASSERT_TRUE(env_.RemoveFile("/db/000005.sst").ok());
  ASSERT_TRUE(env_.SyncDir("/db").ok());
  PowerLoss();
  EXPECT_FALSE(base_.FileExists("/db/000005.sst"));
}

TEST_F(FaultEnvTest, RemovedThenRecreatedComesBackOld) {
  Write("/db/f", "old", true, true);
  ASSERT_TRUE(env_.RemoveFile("/db/f").ok());
  Write("/db/f", "new", true, false);
  PowerLoss();
  EXPECT_EQ(Read("/db/f"), "old");
}

TEST_F(FaultEnvTest, CreatedThenRemovedLeavesNoTrace) {
  Write("/db/f", "old", true, true);
  Write("/db/tmp", "tmp", true, false);
  ASSERT_TRUE(env_.RemoveFile("/db/tmp").ok());
  PowerLoss();
  EXPECT_FALSE(base_.FileExists("/db/tmp"));
  EXPECT_EQ(Read("/db/f"), "old");
}

TEST_F(FaultEnvTest, ModelResetsAfterDrop) {
  Write("/db/f", "abc", false, false);
  PowerLoss();
  EXPECT_FALSE(base_.FileExists("/db/f"));
  // A second drop changes nothing: everything left counts as synced.
  Write("/db/g", "kept", true, true);
  PowerLoss();
  PowerLoss();
  EXPECT_EQ(Read("/db/g"), "kept");
}

TEST_F(FaultEnvTest, InactiveFilesystemRefusesWrites) {
  auto file = env_.NewWritableFile("/db/f");
  ASSERT_TRUE(file.ok());
  env_.SetFilesystemActive(false);
  EXPECT_FALSE(env_.IsFilesystemActive());
  Status s = (*file)->Append("x");
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find("/db/f"), std::string::npos);
  EXPECT_TRUE((*file)->Sync().IsIOError());
  EXPECT_TRUE(env_.NewWritableFile("/db/g").status().IsIOError());
  EXPECT_TRUE(env_.RenameFile("/db/f", "/db/g").IsIOError());
  EXPECT_TRUE(env_.RemoveFile("/db/f").IsIOError());
  EXPECT_TRUE(env_.SyncDir("/db").IsIOError());
  EXPECT_TRUE(env_.CreateDir("/db/d").IsIOError());
  // Reads still work.
  EXPECT_TRUE(env_.NewSequentialFile("/db/f").ok());
  EXPECT_TRUE(env_.FileExists("/db/f"));
  EXPECT_EQ(Read("/db/f"), "");
  env_.SetFilesystemActive(true);
  EXPECT_TRUE((*file)->Append("x").ok());
}

TEST_F(FaultEnvTest, InjectedErrorFiresOnTheNthCallExactly) {
  auto file = env_.NewWritableFile("/db/f");
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("a").ok());
  EXPECT_EQ(env_.CallCount(FaultOp::kAppend), 1u);
  env_.InjectError(FaultOp::kAppend, 3, Status::IOError("disk on fire"));
  EXPECT_TRUE((*file)->Append("b").ok());
  EXPECT_TRUE((*file)->Append("c").ok());
  Status s = (*file)->Append("d");
  EXPECT_TRUE(s.IsIOError());
  EXPECT_NE(s.message().find("disk on fire"), std::string::npos);
  EXPECT_NE(s.message().find("/db/f"), std::string::npos) << s.ToString();
  EXPECT_TRUE((*file)->Append("e").ok());  // once only
  EXPECT_EQ(env_.CallCount(FaultOp::kAppend), 5u);
  EXPECT_EQ(env_.InjectedFailureCount(FaultOp::kAppend), 1u);
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Read("/db/f"), "abce");  // the failed call had no effect
}

TEST_F(FaultEnvTest, EachOpCountsAndFails) {
  Write("/db/f", "data", true, true);
  struct Case {
    FaultOp op;
    std::function<Status()> call;
  };
  std::unique_ptr<WritableFile> w;
  std::vector<Case> cases = {
      {FaultOp::kCreate,
       [&] { return env_.NewWritableFile("/db/w").status(); }},
      {FaultOp::kCreate, [&] { return env_.CreateDir("/db/d"); }},
      {FaultOp::kOpen,
       [&] { return env_.NewRandomAccessFile("/db/f").status(); }},
      {FaultOp::kRead,
       [&] { return ReadFileToString(&env_, "/db/f").status(); }},
      {FaultOp::kRename, [&] { return env_.RenameFile("/db/f", "/db/g"); }},
      {FaultOp::kRemove, [&] { return env_.RemoveFile("/db/f"); }},
      {FaultOp::kSyncDir, [&] { return env_.SyncDir("/db"); }},
      {FaultOp::kTruncate, [&] { return env_.TruncateFile("/db/f", 1); }},
      {FaultOp::kLock, [&] { return env_.LockFile("/db/LOCK").status(); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(FaultOpName(c.op)));
    uint64_t before = env_.CallCount(c.op);
    env_.InjectError(c.op, 1, Status::IOError("injected"));
    Status s = c.call();
    EXPECT_TRUE(s.IsIOError()) << s.ToString();
    EXPECT_NE(s.message().find("injected"), std::string::npos);
    EXPECT_EQ(env_.CallCount(c.op), before + 1);
  }
  // Nothing changed.
  EXPECT_EQ(Read("/db/f"), "data");
  EXPECT_FALSE(base_.FileExists("/db/w"));
  EXPECT_FALSE(base_.FileExists("/db/d"));
  EXPECT_FALSE(base_.FileExists("/db/g"));

  auto file = env_.NewAppendableFile("/db/f");
  ASSERT_TRUE(file.ok());
  for (FaultOp op :
       {FaultOp::kAppend, FaultOp::kFlush, FaultOp::kSync, FaultOp::kClose}) {
    SCOPED_TRACE(std::string(FaultOpName(op)));
    env_.InjectError(op, 1, Status::NoSpace("full"));
    Status s;
    switch (op) {
      case FaultOp::kAppend:
        s = (*file)->Append("x");
        break;
      case FaultOp::kFlush:
        s = (*file)->Flush();
        break;
      case FaultOp::kSync:
        s = (*file)->Sync();
        break;
      default:
        s = (*file)->Close();
        break;
    }
    EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  }
}

TEST_F(FaultEnvTest, FailedSyncLeavesDataUnsynced) {
  auto file = env_.NewWritableFile("/db/log");
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE(env_.SyncDir("/db").ok());
  ASSERT_TRUE((*file)->Append("abc").ok());
  env_.InjectError(FaultOp::kSync, 1, Status::IOError("fsync failed"));
  EXPECT_TRUE((*file)->Sync().IsIOError());
  file->reset();
  PowerLoss();
  EXPECT_EQ(Read("/db/log"), "");
}

TEST_F(FaultEnvTest, FailAllUntilCleared) {
  env_.FailAll(FaultOp::kSyncDir, Status::IOError("no"));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(env_.SyncDir("/db").IsIOError());
  EXPECT_EQ(env_.InjectedFailureCount(FaultOp::kSyncDir), 3u);
  env_.InjectError(FaultOp::kRename, 1, Status::IOError("no"));
  env_.ClearFaults();
  EXPECT_TRUE(env_.SyncDir("/db").ok());
  Write("/db/a", "", false, false);
  EXPECT_TRUE(env_.RenameFile("/db/a", "/db/b").ok());
}

// A target limits FailAll() to the calls on matching paths (the daemon's
// test hook fails "sync .sst" or "rename CURRENT" this way).
TEST_F(FaultEnvTest, FailAllOnMatchingPathsOnly) {
  Write("/db/a.log", "x", false, false);
  Write("/db/b.sst", "y", false, false);
  env_.FailAll(FaultOp::kRename, Status::IOError("no"), "CURRENT");
  env_.FailAll(FaultOp::kRemove, Status::IOError("no"), ".sst");
  env_.FailAll(FaultOp::kRemove, Status::NoSpace("full"), ".sst");
  EXPECT_TRUE(env_.RenameFile("/db/a.log", "/db/c.log").ok());
  Status s = env_.RenameFile("/db/c.log", "/db/CURRENT");
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.ToString().find("/db/c.log -> /db/CURRENT"), std::string::npos)
      << s.ToString();
  EXPECT_TRUE(base_.FileExists("/db/c.log"));
  // The second rule for ".sst" replaced the first.
  EXPECT_TRUE(env_.RemoveFile("/db/b.sst").IsNoSpace());
  EXPECT_TRUE(base_.FileExists("/db/b.sst"));
  EXPECT_EQ(env_.InjectedFailureCount(FaultOp::kRename), 1u);
  EXPECT_EQ(env_.InjectedFailureCount(FaultOp::kRemove), 1u);
  env_.ClearFaults();
  EXPECT_TRUE(env_.RemoveFile("/db/b.sst").ok());
  EXPECT_TRUE(env_.RenameFile("/db/c.log", "/db/CURRENT").ok());
}

TEST_F(FaultEnvTest, TwoInjectionsOnOneCallFireInTurn) {
  env_.InjectError(FaultOp::kSyncDir, 1, Status::IOError("first"));
  env_.InjectError(FaultOp::kSyncDir, 1, Status::NoSpace("second"));
  EXPECT_TRUE(env_.SyncDir("/db").IsIOError());
  EXPECT_TRUE(env_.SyncDir("/db").IsNoSpace());
  EXPECT_TRUE(env_.SyncDir("/db").ok());
}

TEST_F(FaultEnvTest, ResetCountersKeepsPendingDistance) {
  EXPECT_TRUE(env_.SyncDir("/db").ok());
  env_.InjectError(FaultOp::kSyncDir, 2, Status::IOError("x"));
  env_.ResetCounters();
  EXPECT_EQ(env_.CallCount(FaultOp::kSyncDir), 0u);
  EXPECT_TRUE(env_.SyncDir("/db").ok());
  EXPECT_TRUE(env_.SyncDir("/db").IsIOError());
}

// The way a durability test enumerates call sites: count the calls of a
// workload once, then fail each of them in turn.
TEST_F(FaultEnvTest, EnumerateEachCallSite) {
  auto workload = [this]() -> Status {
    // GCC bug 105329: a false -Wrestrict in "v" + std::to_string(i).
    TABLETFS_GCC_BUG_105329_BEGIN
    for (int i = 0; i < 3; ++i) {
      TABLETFS_RETURN_IF_ERROR(WriteStringToFile(
          &env_, "v" + std::to_string(i), "/db/f" + std::to_string(i), true));
    }
    TABLETFS_GCC_BUG_105329_END
    return env_.SyncDir("/db");
  };
  env_.ResetCounters();
  ASSERT_TRUE(workload().ok());
  const uint64_t syncs = env_.CallCount(FaultOp::kSync);
  EXPECT_EQ(syncs, 3u);
  for (uint64_t n = 1; n <= syncs; ++n) {
    env_.InjectError(FaultOp::kSync, static_cast<int>(n),
                     Status::IOError("sync " + std::to_string(n)));
    Status s = workload();
    EXPECT_TRUE(s.IsIOError());
    EXPECT_NE(s.message().find("sync " + std::to_string(n)), std::string::npos);
    // WriteStringToFile removed the file whose sync failed.
    EXPECT_FALSE(base_.FileExists("/db/f" + std::to_string(n - 1)));
  }
}

TEST_F(FaultEnvTest, DiskFullPassesThroughToMemEnv) {
  env_.SetFreeSpace(4);
  EXPECT_EQ(*env_.GetFreeSpace("/db"), 4u);
  EXPECT_EQ(*base_.GetFreeSpace("/db"), 4u);
  auto file = env_.NewWritableFile("/db/f");
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE((*file)->Append("abcd").ok());
  EXPECT_TRUE((*file)->Append("e").IsNoSpace());
}

TEST_F(FaultEnvTest, DiskFullOnANonMemBase) {
  // A FaultInjectionEnv over another FaultInjectionEnv: the outer one
  // cannot forward, so it simulates.
  FaultInjectionEnv outer(&env_);
  outer.SetFreeSpace(3);
  EXPECT_EQ(*outer.GetFreeSpace("/db"), 3u);
  auto file = outer.NewWritableFile("/db/f");
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE((*file)->Append("ab").ok());
  EXPECT_TRUE((*file)->Append("cd").IsNoSpace());
  EXPECT_TRUE((*file)->Append("c").ok());
  EXPECT_EQ(*outer.GetFreeSpace("/db"), 0u);
}

// The worked example of store/doc/env.md.
TEST_F(FaultEnvTest, WorkedExampleFromTheDoc) {
  for (bool final_sync : {false, true}) {
    SCOPED_TRACE(final_sync ? "with final SyncDir" : "without");
    Write("/db/CURRENT", "M-1", true, true);
    Write("/db/tmp", "M-2", true, false);
    ASSERT_TRUE(env_.RenameFile("/db/tmp", "/db/CURRENT").ok());
    {
      auto log = env_.NewAppendableFile("/db/LOG");
      ASSERT_TRUE(log.ok());
      ASSERT_TRUE((*log)->Append("abc").ok());
      ASSERT_TRUE((*log)->Sync().ok());
      ASSERT_TRUE((*log)->Append("def").ok());
    }
    if (final_sync) {
      ASSERT_TRUE(env_.SyncDir("/db").ok());
    }
    PowerLoss();
    auto children = base_.GetChildren("/db");
    ASSERT_TRUE(children.ok());
    if (final_sync) {
      EXPECT_EQ(*children, (std::vector<std::string>{"CURRENT", "LOG"}));
      EXPECT_EQ(Read("/db/CURRENT"), "M-2");
      EXPECT_EQ(Read("/db/LOG"), "abc");
    } else {
      EXPECT_EQ(*children, (std::vector<std::string>{"CURRENT"}));
      EXPECT_EQ(Read("/db/CURRENT"), "M-1");
    }
    ASSERT_TRUE(base_.RemoveFile("/db/CURRENT").ok());
    base_.RemoveFile("/db/LOG").IgnoreError();
  }
}

TEST_F(FaultEnvTest, ClockComesFromTheBase) {
  base_.SetNowMicros(123);
  EXPECT_EQ(env_.NowMicros(), 123);
}

}  // namespace
}  // namespace tabletfs
