#include "store/table/table_cache.h"

#include <gtest/gtest.h>

#include <string>

#include "store/table/block_cache.h"
#include "store/table/table_builder.h"
#include "tests/store/table/table_test_util.h"
#include "tests/util/gcc_bug_105329.h"

namespace tabletfs {
namespace {

using table_test::StringEnv;
using table_test::StringSink;

constexpr char kDir[] = "/db";

std::string Key(uint64_t file, int i) {
  return "file" + std::to_string(file) + "/row" + std::to_string(1000 + i);
}

// Writes table `file` with 50 entries; returns its size.
uint64_t PutTable(StringEnv* env, uint64_t file, const TableOptions& options) {
  std::string contents;
  StringSink sink(&contents);
  TableBuilder builder(options, &sink);
  // GCC bug 105329: a false -Wrestrict in "v" + Key(file, i).
  TABLETFS_GCC_BUG_105329_BEGIN
  for (int i = 0; i < 50; ++i) builder.Add(Key(file, i), "v" + Key(file, i));
  TABLETFS_GCC_BUG_105329_END
  EXPECT_TRUE(builder.Finish().ok());
  env->PutFile(TableFileName(kDir, file), contents);
  return contents.size();
}

TEST(TableCacheTest, FileName) {
  EXPECT_EQ(TableFileName("/db", 42), "/db/000042.sst");
  EXPECT_EQ(TableFileName("d", 1234567), "d/1234567.sst");
}

TEST(TableCacheTest, OpenTablesStayBounded) {
  StringEnv env;
  TableOptions options;
  std::vector<uint64_t> sizes;
  for (uint64_t f = 0; f < 40; ++f) sizes.push_back(PutTable(&env, f, options));

  const int kMaxOpen = 5;
  TableCache cache(&env, kDir, options, kMaxOpen);
  for (int round = 0; round < 3; ++round) {
    for (uint64_t f = 0; f < 40; ++f) {
      auto table = cache.Get(f, sizes[f]);
      ASSERT_TRUE(table.ok()) << table.status().ToString();
      auto it = (*table)->NewIterator();
      it->Seek(Key(f, 7));
      ASSERT_TRUE(it->Valid());
      // GCC bug 105329: a false -Wrestrict in "v" + Key(f, 7).
      TABLETFS_GCC_BUG_105329_BEGIN
      EXPECT_EQ(it->value(), "v" + Key(f, 7));
      TABLETFS_GCC_BUG_105329_END
      // One more than the bound may be open: the table just handed out.
      EXPECT_LE(env.open_files(), kMaxOpen + 1);
      EXPECT_LE(cache.size(), static_cast<size_t>(kMaxOpen));
    }
    EXPECT_LE(env.open_files(), kMaxOpen);
  }
  EXPECT_EQ(cache.size(), static_cast<size_t>(kMaxOpen));
}

TEST(TableCacheTest, HitsDoNotReopen) {
  StringEnv env;
  TableOptions options;
  uint64_t size = PutTable(&env, 3, options);
  TableCache cache(&env, kDir, options, 10);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(cache.Get(3, size).ok());
  EXPECT_EQ(env.total_opens(), 1);
  EXPECT_EQ(env.open_files(), 1);
  cache.Evict(3);
  EXPECT_EQ(env.open_files(), 0);
  ASSERT_TRUE(cache.Get(3, size).ok());
  EXPECT_EQ(env.total_opens(), 2);
}

TEST(TableCacheTest, PinnedTableSurvivesEviction) {
  StringEnv env;
  BlockCache blocks(1 << 20);
  TableOptions options;
  options.block_cache = &blocks;
  uint64_t size0 = PutTable(&env, 0, options);
  uint64_t size1 = PutTable(&env, 1, options);
  TableCache cache(&env, kDir, options, 1);

  auto table = cache.Get(0, size0);
  ASSERT_TRUE(table.ok());
  auto it = (*table)->NewIterator();
  table = Status::NotFound("released");
  cache.Evict(0);
  ASSERT_TRUE(cache.Get(1, size1).ok());  // Would evict table 0 anyway.
  EXPECT_EQ(env.open_files(), 2);         // Table 0 is pinned by `it`.
  int n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
  EXPECT_EQ(n, 50);
  it.reset();
  EXPECT_EQ(env.open_files(), 1);
}

TEST(TableCacheTest, Errors) {
  StringEnv env;
  TableOptions options;
  TableCache cache(&env, kDir, options, 4);
  EXPECT_TRUE(cache.Get(9, 100).status().IsNotFound());
  env.PutFile(TableFileName(kDir, 9), std::string(100, 'x'));
  auto bad = cache.Get(9, 100);
  EXPECT_TRUE(bad.status().IsCorruption());
  EXPECT_NE(bad.status().message().find("/db/000009.sst"), std::string::npos);
  // Failures are not cached and hold no file open.
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(env.open_files(), 0);
}

}  // namespace
}  // namespace tabletfs
