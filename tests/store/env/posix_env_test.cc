// Env::Default(): the POSIX Env against a real temporary directory.

#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "store/env.h"
#include "store/wal/log_reader.h"
#include "store/wal/log_writer.h"

namespace tabletfs {
namespace {

class PosixEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = getenv("TMPDIR");
    std::string templ =
        std::string(tmp != nullptr ? tmp : "/tmp") + "/posix_env_test.XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override {
    auto children = env_->GetChildren(dir_);
    if (children.ok()) {
      for (const std::string& name : *children) {
        std::string path = dir_ + "/" + name;
        if (!env_->RemoveFile(path).ok()) {
          // A sub-directory made by a test: one level is enough here.
          auto inner = env_->GetChildren(path);
          if (inner.ok()) {
            for (const std::string& n : *inner) {
              env_->RemoveFile(path + "/" + n).IgnoreError();
            }
          }
          env_->RemoveDir(path).IgnoreError();
        }
      }
    }
    env_->RemoveDir(dir_).IgnoreError();
  }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  std::string Read(const std::string& name) {
    auto data = ReadFileToString(env_, Path(name));
    EXPECT_TRUE(data.ok()) << data.status().ToString();
    return data.ok() ? *data : "";
  }

  Env* env_ = Env::Default();
  std::string dir_;
};

TEST_F(PosixEnvTest, DefaultIsOneInstance) {
  EXPECT_EQ(Env::Default(), Env::Default());
}

TEST_F(PosixEnvTest, WriteThenReadBack) {
  ASSERT_TRUE(WriteStringToFile(env_, "hello world", Path("f"), true).ok());
  EXPECT_EQ(Read("f"), "hello world");
  auto size = env_->GetFileSize(Path("f"));
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 11u);
  EXPECT_TRUE(env_->FileExists(Path("f")));
  EXPECT_FALSE(env_->FileExists(Path("g")));
}

TEST_F(PosixEnvTest, LargeAppendsCrossTheBuffer) {
  auto file = env_->NewWritableFile(Path("big"));
  ASSERT_TRUE(file.ok());
  std::string expected;
  // A small piece, then one bigger than the 64 KiB buffer, then one that
  // exactly fills what is left.
  for (size_t n : {size_t{10}, size_t{200000}, size_t{65536 - 10}, size_t{1}}) {
    std::string piece(n, static_cast<char>('a' + expected.size() % 26));
    ASSERT_TRUE((*file)->Append(piece).ok());
    expected += piece;
    EXPECT_EQ((*file)->Size(), expected.size());
  }
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Read("big"), expected);
}

TEST_F(PosixEnvTest, FlushMakesDataVisibleBeforeClose) {
  auto file = env_->NewWritableFile(Path("f"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("abc").ok());
  EXPECT_EQ(Read("f"), "");  // still in the user-space buffer
  ASSERT_TRUE((*file)->Flush().ok());
  EXPECT_EQ(Read("f"), "abc");
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_FALSE((*file)->Append("x").ok());
}

// A write that fails (here EFBIG past RLIMIT_FSIZE) leaves the file's tail
// unknown. Later appends, flushes and syncs must keep failing: once the limit
// is lifted they would otherwise write after the lost bytes and report a file
// with a hole in it as written and synced. Runs in a child so the limit and
// the ignored SIGXFSZ touch no other test (nor gtest's output file).
TEST_F(PosixEnvTest, WriteErrorsAreSticky) {
  const std::string path = Path("sticky");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old;
    if (getrlimit(RLIMIT_FSIZE, &old) != 0) _exit(10);
    struct rlimit limited = old;
    limited.rlim_cur = 100000;
    if (setrlimit(RLIMIT_FSIZE, &limited) != 0) _exit(11);
    auto file = Env::Default()->NewWritableFile(path);
    if (!file.ok()) _exit(12);
    // 64 KiB fill the buffer and are written; the direct write of the rest
    // stops at the limit.
    if ((*file)->Append(std::string(200000, 'a')).ok()) _exit(13);
    if (setrlimit(RLIMIT_FSIZE, &old) != 0) _exit(14);
    if ((*file)->Append("tail").ok()) _exit(15);
    if ((*file)->Flush().ok()) _exit(16);
    if ((*file)->Sync().ok()) _exit(17);
    (*file)->Close().IgnoreError();
    struct stat st;
    if (stat(path.c_str(), &st) != 0) _exit(18);
    // Nothing was written after the failure.
    if (st.st_size != 100000) _exit(19);
    _exit(0);
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0)
      << "13: the big append succeeded; 15/16/17: append/flush/sync after "
         "the failure succeeded; 19: bytes written after the failure";
}

// A log file (Env::NewLogFile) is appended through a mapping of space
// allocated a MiB at a time: appends of every size, across chunk
// boundaries, read back as written, and Close() cuts the allocated rest.
TEST_F(PosixEnvTest, LogFilesReadBackAcrossChunksAndCloseCutsTheRest) {
  auto file = env_->NewLogFile(Path("000001.log"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  std::string expected;
  std::mt19937 rng(3);
  // Small records, a piece larger than a whole chunk, and a piece ending
  // exactly at a chunk boundary.
  std::vector<size_t> sizes;
  for (int i = 0; i < 3000; ++i) sizes.push_back(rng() % 700);
  sizes.push_back((3u << 20) / 2);
  const size_t so_far = std::accumulate(sizes.begin(), sizes.end(), size_t{0});
  sizes.push_back((4u << 20) - so_far);
  sizes.push_back(10);
  for (size_t n : sizes) {
    std::string piece(n, '\0');
    for (char& c : piece) c = static_cast<char>('a' + rng() % 26);
    ASSERT_TRUE((*file)->Append(piece).ok());
    expected += piece;
    ASSERT_EQ((*file)->Size(), expected.size());
  }
  ASSERT_TRUE((*file)->Flush().ok());
  // Before Close: what was appended, then the zeros of the allocated rest.
  std::string open = Read("000001.log");
  ASSERT_GE(open.size(), expected.size());
  EXPECT_EQ(open.substr(0, expected.size()), expected);
  EXPECT_EQ(open.find_first_not_of('\0', expected.size()), std::string::npos);
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Read("000001.log"), expected);
  EXPECT_FALSE((*file)->Append("x").ok());
}

// A process that dies without closing its log leaves records it flushed and
// the zeros after them: a reader returns every record, then a torn tail.
TEST_F(PosixEnvTest, ALogLeftOpenByADeadProcessReadsBackToItsLastRecord) {
  const std::string path = Path("000002.log");
  constexpr int kRecords = 5000;
  auto record = [](int i) {
    return std::to_string(i) + std::string(static_cast<size_t>(i % 400), 'r');
  };
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto file = Env::Default()->NewLogFile(path);
    if (!file.ok()) _exit(10);
    LogWriter writer(std::move(*file));
    for (int i = 0; i < kRecords; ++i) {
      if (!writer.AddRecord(record(i)).ok() || !writer.Flush().ok()) _exit(11);
    }
    _exit(0);  // no Close: the mapping's pages are the file's
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus));
  ASSERT_EQ(WEXITSTATUS(wstatus), 0);
  const std::string contents = Read("000002.log");
  ASSERT_FALSE(contents.empty());
  EXPECT_EQ(contents.back(), '\0') << "the allocated rest was not left";
  auto source = env_->NewSequentialFile(path);
  ASSERT_TRUE(source.ok());
  LogReader reader(std::move(*source), path);
  std::string got;
  Status s;
  int n = 0;
  while (reader.ReadRecord(&got, &s)) {
    ASSERT_EQ(got, record(n)) << "record " << n;
    ++n;
  }
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(n, kRecords);
  EXPECT_TRUE(reader.torn_tail());
  EXPECT_TRUE(reader.zero_tail());
}

// A log that cannot get space fails the append that needs it, with an
// error and no signal (a store into a mapping past the file's end would
// raise SIGBUS), and stays failed. Short of a whole chunk it takes the
// pages an append needs. In a child, as WriteErrorsAreSticky.
TEST_F(PosixEnvTest, ALogShortOfSpaceFailsItsAppendAndStaysFailed) {
  const std::string path = Path("000003.log");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit limited;
    if (getrlimit(RLIMIT_FSIZE, &limited) != 0) _exit(10);
    limited.rlim_cur = 100000;
    if (setrlimit(RLIMIT_FSIZE, &limited) != 0) _exit(11);
    auto file = Env::Default()->NewLogFile(path);
    if (!file.ok()) _exit(12);
    // A MiB is past the limit; the pages for 50,000 bytes are not.
    if (!(*file)->Append(std::string(50000, 'a')).ok()) _exit(13);
    if ((*file)->Append(std::string(60000, 'b')).ok()) _exit(14);
    if ((*file)->Append("c").ok()) _exit(15);
    if ((*file)->Flush().ok()) _exit(16);
    if ((*file)->Sync().ok()) _exit(17);
    (*file)->Close().IgnoreError();
    struct stat st;
    if (stat(path.c_str(), &st) != 0) _exit(18);
    if (st.st_size != 50000) _exit(19);
    _exit(0);
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus)) << "killed by signal " << WTERMSIG(wstatus);
  EXPECT_EQ(WEXITSTATUS(wstatus), 0)
      << "13: the append within the limit failed; 14: the append past it "
         "succeeded; 15/16/17: append/flush/sync after the failure "
         "succeeded; 19: the file was not cut at what was appended";
}

TEST_F(PosixEnvTest, AppendableKeepsWritableTruncates) {
  ASSERT_TRUE(WriteStringToFile(env_, "one", Path("f"), false).ok());
  {
    auto file = env_->NewAppendableFile(Path("f"));
    ASSERT_TRUE(file.ok());
    EXPECT_EQ((*file)->Size(), 3u);
    ASSERT_TRUE((*file)->Append("two").ok());
    EXPECT_EQ((*file)->Size(), 6u);
    ASSERT_TRUE((*file)->Close().ok());
  }
  EXPECT_EQ(Read("f"), "onetwo");
  {
    auto file = env_->NewWritableFile(Path("f"));
    ASSERT_TRUE(file.ok());
    EXPECT_EQ((*file)->Size(), 0u);
    ASSERT_TRUE((*file)->Append("3").ok());
    // The destructor closes and flushes.
  }
  EXPECT_EQ(Read("f"), "3");
  // Appendable creates a missing file.
  auto file = env_->NewAppendableFile(Path("new"));
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->Size(), 0u);
}

TEST_F(PosixEnvTest, MissingFilesAreNotFoundWithThePath) {
  auto seq = env_->NewSequentialFile(Path("missing"));
  ASSERT_FALSE(seq.ok());
  EXPECT_TRUE(seq.status().IsNotFound()) << seq.status().ToString();
  EXPECT_NE(seq.status().message().find(Path("missing")), std::string::npos);
  EXPECT_NE(seq.status().message().find("No such file"), std::string::npos);
  EXPECT_TRUE(env_->NewRandomAccessFile(Path("missing")).status().IsNotFound());
  EXPECT_TRUE(env_->GetFileSize(Path("missing")).status().IsNotFound());
  EXPECT_TRUE(env_->RemoveFile(Path("missing")).IsNotFound());
  EXPECT_TRUE(env_->GetChildren(Path("missing")).status().IsNotFound());
  EXPECT_TRUE(env_->NewWritableFile(Path("nodir/f")).status().IsNotFound());
  EXPECT_TRUE(ReadFileToString(env_, Path("missing")).status().IsNotFound());
}

TEST_F(PosixEnvTest, RandomReadPastEndIsShort) {
  ASSERT_TRUE(WriteStringToFile(env_, "0123456789", Path("f"), false).ok());
  auto file = env_->NewRandomAccessFile(Path("f"));
  ASSERT_TRUE(file.ok());
  char scratch[32];
  std::string_view result;
  ASSERT_TRUE((*file)->Read(2, 3, &result, scratch).ok());
  EXPECT_EQ(result, "234");
  ASSERT_TRUE((*file)->Read(7, 10, &result, scratch).ok());
  EXPECT_EQ(result, "789");
  ASSERT_TRUE((*file)->Read(10, 5, &result, scratch).ok());
  EXPECT_EQ(result, "");
  ASSERT_TRUE((*file)->Read(1000, 5, &result, scratch).ok());
  EXPECT_EQ(result, "");
}

// Table and value files are mapped: a read is served from the mapping, and
// an open file holds no descriptor. Past the process-wide bound on mappings
// (4,096) files are read with pread, as correctly.
TEST_F(PosixEnvTest, RandomAccessFilesAreMappedWithoutADescriptor) {
  auto open_fds = [] {
    auto fds = Env::Default()->GetChildren("/proc/self/fd");
    return fds.ok() ? fds->size() : size_t{0};
  };
  ASSERT_TRUE(WriteStringToFile(env_, "0123456789", Path("f"), false).ok());
  size_t before = open_fds();
  std::vector<std::unique_ptr<RandomAccessFile>> files;
  for (int i = 0; i < 4200; ++i) {
    auto file = env_->NewRandomAccessFile(Path("f"));
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    files.push_back(std::move(*file));
  }
  // The first 4,096 hold no descriptor; the rest hold one each.
  EXPECT_LE(open_fds() - before, 4200u - 4096u);
  char scratch[32];
  for (const auto& file : {files.front().get(), files.back().get()}) {
    std::string_view result;
    ASSERT_TRUE(file->Read(7, 10, &result, scratch).ok());
    EXPECT_EQ(result, "789");
  }
  files.clear();
  EXPECT_EQ(open_fds(), before);
  // Mappings released with their files are available again.
  auto again = env_->NewRandomAccessFile(Path("f"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(open_fds(), before);
}

TEST_F(PosixEnvTest, SequentialReadAndSkip) {
  ASSERT_TRUE(WriteStringToFile(env_, "0123456789", Path("f"), false).ok());
  auto file = env_->NewSequentialFile(Path("f"));
  ASSERT_TRUE(file.ok());
  char scratch[32];
  std::string_view result;
  ASSERT_TRUE((*file)->Read(3, &result, scratch).ok());
  EXPECT_EQ(result, "012");
  ASSERT_TRUE((*file)->Skip(4).ok());
  ASSERT_TRUE((*file)->Read(10, &result, scratch).ok());
  EXPECT_EQ(result, "789");
  ASSERT_TRUE((*file)->Read(10, &result, scratch).ok());
  EXPECT_EQ(result, "");
}

TEST_F(PosixEnvTest, RenameReplacesTheTarget) {
  ASSERT_TRUE(WriteStringToFile(env_, "new", Path("tmp"), true).ok());
  ASSERT_TRUE(WriteStringToFile(env_, "old", Path("CURRENT"), true).ok());
  ASSERT_TRUE(env_->RenameFile(Path("tmp"), Path("CURRENT")).ok());
  ASSERT_TRUE(env_->SyncDir(dir_).ok());
  EXPECT_EQ(Read("CURRENT"), "new");
  EXPECT_FALSE(env_->FileExists(Path("tmp")));
  Status s = env_->RenameFile(Path("tmp"), Path("x"));
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_NE(s.message().find(Path("tmp")), std::string::npos);
}

TEST_F(PosixEnvTest, ChildrenAndDirectories) {
  ASSERT_TRUE(env_->CreateDir(Path("sub")).ok());
  ASSERT_TRUE(env_->CreateDir(Path("sub")).ok());  // exists: OK
  ASSERT_TRUE(WriteStringToFile(env_, "", Path("a"), false).ok());
  ASSERT_TRUE(WriteStringToFile(env_, "x", Path("sub/b"), false).ok());
  auto children = env_->GetChildren(dir_);
  ASSERT_TRUE(children.ok());
  std::sort(children->begin(), children->end());
  EXPECT_EQ(*children, (std::vector<std::string>{"a", "sub"}));
  // A file in the way of a directory.
  EXPECT_FALSE(env_->CreateDir(Path("a")).ok());
  Status s = env_->RemoveDir(Path("sub"));
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  ASSERT_TRUE(env_->RemoveFile(Path("sub/b")).ok());
  ASSERT_TRUE(env_->RemoveDir(Path("sub")).ok());
  EXPECT_FALSE(env_->FileExists(Path("sub")));
  EXPECT_TRUE(env_->SyncDir(Path("sub")).IsNotFound());
}

TEST_F(PosixEnvTest, TruncateFile) {
  ASSERT_TRUE(WriteStringToFile(env_, "0123456789", Path("f"), false).ok());
  ASSERT_TRUE(env_->TruncateFile(Path("f"), 4).ok());
  EXPECT_EQ(Read("f"), "0123");
  EXPECT_TRUE(env_->TruncateFile(Path("missing"), 0).IsNotFound());
}

TEST_F(PosixEnvTest, FreeSpaceAndClock) {
  auto free = env_->GetFreeSpace(dir_);
  ASSERT_TRUE(free.ok()) << free.status().ToString();
  EXPECT_GT(*free, 0u);
  EXPECT_TRUE(env_->GetFreeSpace(Path("missing")).status().IsNotFound());
  int64_t a = env_->NowMicros();
  int64_t b = env_->NowMicros();
  EXPECT_LE(a, b);
  EXPECT_GT(a, int64_t{1600000000} * 1000000);  // after 2020
}

TEST_F(PosixEnvTest, LockConflictInProcessNamesOurPid) {
  auto lock = env_->LockFile(Path("LOCK"));
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  EXPECT_EQ(Read("LOCK"), std::to_string(getpid()) + "\n");
  auto again = env_->LockFile(Path("LOCK"));
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(again.status().IsBusy());
  EXPECT_NE(
      again.status().message().find("database " + dir_ + " is locked by pid " +
                                    std::to_string(getpid())),
      std::string::npos)
      << again.status().ToString();
  lock->reset();
  auto after = env_->LockFile(Path("LOCK"));
  EXPECT_TRUE(after.ok()) << after.status().ToString();
}

TEST_F(PosixEnvTest, LockSamePathSpelledDifferentlyStillConflicts) {
  // Not the same string, so only flock(2) can see the conflict: locks on
  // separate open file descriptions conflict even within one process.
  auto lock = env_->LockFile(Path("LOCK"));
  ASSERT_TRUE(lock.ok());
  auto again = env_->LockFile(dir_ + "/./LOCK");
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(again.status().IsBusy()) << again.status().ToString();
}

TEST_F(PosixEnvTest, LockConflictAcrossProcessesNamesTheHolder) {
  int ready[2];
  int done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child takes the lock, reports, and holds it until told to exit.
    auto lock = Env::Default()->LockFile(Path("LOCK"));
    char c = lock.ok() ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    (void)!read(done[0], &c, 1);
    _exit(lock.ok() ? 0 : 1);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  auto lock = env_->LockFile(Path("LOCK"));
  ASSERT_FALSE(lock.ok());
  EXPECT_TRUE(lock.status().IsBusy());
  EXPECT_NE(
      lock.status().message().find("is locked by pid " + std::to_string(child)),
      std::string::npos)
      << lock.status().ToString();
  ASSERT_EQ(write(done[1], "x", 1), 1);
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  for (int fd : {ready[0], ready[1], done[0], done[1]}) close(fd);
  // The holder is gone, and so is its lock.
  auto after = env_->LockFile(Path("LOCK"));
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(Read("LOCK"), std::to_string(getpid()) + "\n");
}

}  // namespace
}  // namespace tabletfs
