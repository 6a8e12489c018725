#include "fs/request_counts.h"

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tabletfs::fs {
namespace {

TEST(RequestCountsTest, EmptyShowsOnlyTheTotal) {
  RequestCounts c;
  EXPECT_EQ(c.Text(), "fuse_requests 0\n");
}

TEST(RequestCountsTest, ShowsEachKindCountedInOpcodeOrder) {
  RequestCounts c;
  c.Add(FuseOp::kRelease);
  c.Add(FuseOp::kLookup);
  c.Add(FuseOp::kLookup);
  c.Add(FuseOp::kCreate);
  EXPECT_EQ(c.Get(FuseOp::kLookup), 2u);
  EXPECT_EQ(c.Get(FuseOp::kGetattr), 0u);
  EXPECT_EQ(c.Text(),
            "fuse_requests 4\n"
            "fuse_LOOKUP 2\n"
            "fuse_RELEASE 1\n"
            "fuse_CREATE 1\n");
}

TEST(RequestCountsTest, NamesAreTheKernelsOpcodesAndDistinct) {
  std::set<std::string> names;
  for (int i = 0; i < static_cast<int>(FuseOp::kCount); i++) {
    std::string name(FuseOpName(static_cast<FuseOp>(i)));
    EXPECT_FALSE(name.empty());
    EXPECT_EQ(name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_"),
              std::string::npos)
        << name;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(FuseOp::kCount));
  EXPECT_EQ(FuseOpName(FuseOp::kInit), "INIT");
  EXPECT_EQ(FuseOpName(FuseOp::kBatchForget), "BATCH_FORGET");
  EXPECT_EQ(FuseOpName(FuseOp::kReaddirplus), "READDIRPLUS");
  EXPECT_EQ(FuseOpName(FuseOp::kFallocate), "FALLOCATE");
}

TEST(RequestCountsTest, CountsFromManyThreadsAddUp) {
  RequestCounts c;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&c] {
      for (int i = 0; i < 10000; i++) c.Add(FuseOp::kGetattr);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(c.Text(), "fuse_requests 40000\nfuse_GETATTR 40000\n");
}

}  // namespace
}  // namespace tabletfs::fs
