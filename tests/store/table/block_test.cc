#include "store/table/block.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "store/table/block_builder.h"
#include "store/util/coding.h"

namespace tabletfs {
namespace {

std::shared_ptr<const Block> Build(const std::map<std::string, std::string>& kv,
                                   int restart_interval) {
  BlockBuilder builder(restart_interval);
  for (const auto& [k, v] : kv) builder.Add(k, v);
  Result<std::shared_ptr<const Block>> block =
      Block::Create(std::string(builder.Finish()), "test: block at offset 0");
  EXPECT_TRUE(block.ok()) << block.status().ToString();
  return block.ok() ? *block : nullptr;
}

std::map<std::string, std::string> SharedPrefixKeys(int n) {
  std::map<std::string, std::string> kv;
  for (int i = 0; i < n; ++i) {
    char key[64];
    std::snprintf(key, sizeof(key), "row%05d/family:qualifier%d", i / 3, i % 3);
    kv[key] = "value" + std::to_string(i) + std::string(i % 7, 'v');
  }
  return kv;
}

TEST(BlockTest, Empty) {
  BlockBuilder builder(16);
  EXPECT_TRUE(builder.empty());
  auto block = Build({}, 16);
  ASSERT_NE(block, nullptr);
  auto it = Block::NewIterator(block);
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  it->Seek("anything");
  EXPECT_FALSE(it->Valid());
  it->Seek("");
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
}

TEST(BlockTest, OneKey) {
  auto block = Build({{"key", "value"}}, 16);
  auto it = Block::NewIterator(block);
  it->SeekToFirst();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "key");
  EXPECT_EQ(it->value(), "value");
  it->Next();
  EXPECT_FALSE(it->Valid());
  it->Seek("");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "key");
  it->Seek("key");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "key");
  it->Seek("kez");
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
}

TEST(BlockTest, EmptyKeyAndValue) {
  auto block = Build({{"", ""}, {std::string("\0", 1), "x"}}, 16);
  auto it = Block::NewIterator(block);
  it->SeekToFirst();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "");
  EXPECT_EQ(it->value(), "");
  it->Next();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), std::string_view("\0", 1));
}

class BlockRoundTripTest : public ::testing::TestWithParam<int> {};

TEST_P(BlockRoundTripTest, ManyKeysWithSharedPrefixes) {
  const int restart_interval = GetParam();
  auto kv = SharedPrefixKeys(1000);
  auto block = Build(kv, restart_interval);
  ASSERT_NE(block, nullptr);

  // Prefix compression pays: the block is much smaller than the keys.
  size_t raw = 0;
  for (const auto& [k, v] : kv) raw += k.size() + v.size();
  if (restart_interval >= 16) {
    EXPECT_LT(block->size(), raw * 3 / 4);
  }

  auto it = Block::NewIterator(block);
  auto expected = kv.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++expected) {
    ASSERT_NE(expected, kv.end());
    EXPECT_EQ(it->key(), expected->first);
    EXPECT_EQ(it->value(), expected->second);
  }
  EXPECT_EQ(expected, kv.end());
  EXPECT_TRUE(it->status().ok());

  for (auto e = kv.begin(); e != kv.end(); ++e) {
    // Exactly at the key.
    it->Seek(e->first);
    ASSERT_TRUE(it->Valid());
    EXPECT_EQ(it->key(), e->first);
    EXPECT_EQ(it->value(), e->second);
    // Just after it: the next key.
    it->Seek(e->first + std::string(1, '\0'));
    auto next = std::next(e);
    if (next == kv.end()) {
      EXPECT_FALSE(it->Valid());
    } else {
      ASSERT_TRUE(it->Valid());
      EXPECT_EQ(it->key(), next->first);
    }
    // Just before it (a strict prefix sorts first): the key itself.
    std::string before = e->first.substr(0, e->first.size() - 1);
    it->Seek(before);
    ASSERT_TRUE(it->Valid());
    if (e == kv.begin() || std::prev(e)->first < before) {
      EXPECT_EQ(it->key(), e->first);
    }
  }
  it->Seek("");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), kv.begin()->first);
  it->Seek("\xff");
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
}

INSTANTIATE_TEST_SUITE_P(RestartIntervals, BlockRoundTripTest,
                         ::testing::Values(1, 2, 16, 1000));

TEST(BlockTest, IteratorKeepsBlockAlive) {
  auto kv = SharedPrefixKeys(100);
  auto block = Build(kv, 16);
  auto it = Block::NewIterator(std::move(block));
  block.reset();
  it->Seek(kv.rbegin()->first);
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), kv.rbegin()->second);
}

TEST(BlockTest, BadRestartArrayIsCorruption) {
  EXPECT_TRUE(
      Block::Create("", "f: block at offset 7").status().IsCorruption());
  std::string contents;
  PutFixed32(&contents, 5);  // Five restarts in a 4-byte block.
  auto r = Block::Create(contents, "f: block at offset 7");
  ASSERT_TRUE(r.status().IsCorruption());
  EXPECT_NE(r.status().message().find("f: block at offset 7"),
            std::string::npos);

  BlockBuilder builder(1);
  builder.Add("a", "1");
  builder.Add("b", "2");
  std::string good(builder.Finish());
  std::string bad = good;
  // The second restart points past the entries.
  EncodeFixed32(bad.data() + bad.size() - 8, 1000);
  EXPECT_TRUE(Block::Create(bad, "f").status().IsCorruption());
}

// Damaged entries must yield Corruption (or different but in-bounds data),
// never a crash or a read outside the block (ASan checks the latter).
TEST(BlockTest, DamagedEntriesNeverCrash) {
  auto kv = SharedPrefixKeys(60);
  BlockBuilder builder(4);
  for (const auto& [k, v] : kv) builder.Add(k, v);
  const std::string good(builder.Finish());
  std::mt19937 rng(301);
  int corrupt = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bad = good;
    size_t pos = rng() % bad.size();
    bad[pos] = static_cast<char>(rng());
    auto block = Block::Create(bad, "f: block at offset 0");
    if (!block.ok()) {
      ++corrupt;
      continue;
    }
    auto it = Block::NewIterator(*block);
    int n = 0;
    for (it->SeekToFirst(); it->Valid() && n < 1000; it->Next()) ++n;
    if (!it->status().ok()) {
      ++corrupt;
      EXPECT_TRUE(it->status().IsCorruption());
      EXPECT_NE(it->status().message().find("f: block at offset 0"),
                std::string::npos);
    }
    for (const auto& [k, v] : kv) it->Seek(k);
  }
  EXPECT_GT(corrupt, 0);
}

}  // namespace
}  // namespace tabletfs
