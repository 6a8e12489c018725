#include "store/table/table_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "store/table/block_builder.h"
#include "store/util/coding.h"

namespace tabletfs {
namespace {

// An index block as TableBuilder writes it (a restart at every entry):
// entry i names a block at offset 100 * i in a group starting at 400 * (i / 4).
std::string IndexBlock(const std::vector<std::string>& keys) {
  BlockBuilder builder(1);
  for (size_t i = 0; i < keys.size(); ++i) {
    IndexEntry entry;
    entry.handle = {100 * i, 90};
    entry.group = 400 * (i / 4);
    std::string value;
    entry.EncodeTo(&value);
    builder.Add(keys[i], value);
  }
  return std::string(builder.Finish());
}

Result<TableIndex> Decode(std::string_view block_contents) {
  Result<std::shared_ptr<const Block>> block =
      Block::Create(block_contents, "test: block at offset 0");
  if (!block.ok()) return block.status();
  return TableIndex::Decode(*block);
}

// The answer Find must give: the first key >= target.
size_t Expected(const std::vector<std::string>& keys, std::string_view target) {
  return std::lower_bound(keys.begin(), keys.end(), target) - keys.begin();
}

TEST(TableIndexTest, DecodesEveryEntry) {
  const std::vector<std::string> keys = {"apple", "banana", "cherry", "date",
                                         "elder"};
  Result<TableIndex> index = Decode(IndexBlock(keys));
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  ASSERT_EQ(index->size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(index->key(i), keys[i]);
    EXPECT_EQ(index->entry(i).handle.offset, 100 * i);
    EXPECT_EQ(index->entry(i).handle.size, 90u);
    EXPECT_EQ(index->entry(i).group, 400 * (i / 4));
  }
}

TEST(TableIndexTest, FindsTheFirstKeyAtOrAfterTheTarget) {
  // The keys share the prefix "row0": targets outside it sort before or
  // after every key, and targets inside it are decided by their words.
  const std::vector<std::string> keys = {"row01", "row02/a", "row02/b", "row03",
                                         "row0999"};
  Result<TableIndex> index = Decode(IndexBlock(keys));
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  for (std::string_view target :
       {"", "a", "row", "row0", "row00", "row01", "row010", "row02", "row02/",
        "row02/a", "row02/a0", "row02/b", "row02/c", "row03", "row04",
        "row0999", "row09999", "row1", "s"}) {
    EXPECT_EQ(index->Find(target), Expected(keys, target)) << target;
  }
}

TEST(TableIndexTest, KeysSharingMoreThanAWordAfterThePrefixAreComparedWhole) {
  // Every key here has the same 8 bytes after the shared prefix "k", and
  // some end inside the word or hold zero bytes (a word pads a short key
  // with zeros): the search falls to comparing keys.
  std::vector<std::string> keys = {"k",
                                   "k0123456",
                                   std::string("k0123456\0", 9),
                                   "k01234567",
                                   "k01234567a",
                                   "k01234567b",
                                   "k01234567b\xff",
                                   "k0123458"};
  std::sort(keys.begin(), keys.end());
  Result<TableIndex> index = Decode(IndexBlock(keys));
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  std::vector<std::string> targets = keys;
  for (const std::string& k : keys) {
    targets.push_back(k + std::string(1, '\0'));
    targets.push_back(k + "5");
    if (!k.empty()) targets.push_back(k.substr(0, k.size() - 1));
  }
  targets.push_back(std::string("k0123456\0\0", 10));
  for (const std::string& target : targets) {
    EXPECT_EQ(index->Find(target), Expected(keys, target)) << target;
  }
}

TEST(TableIndexTest, FindAgreesWithABinarySearchOfTheKeys) {
  std::mt19937 rng(7);
  // Keys from a small alphabet with a long shared prefix: many share
  // their words, many are prefixes of others.
  auto random_key = [&rng] {
    std::string key = "table/";
    const size_t n = rng() % 12;
    for (size_t i = 0; i < n; ++i) key.push_back("\0ab\xff"[rng() % 4]);
    return key;
  };
  for (int round = 0; round < 50; ++round) {
    std::vector<std::string> keys;
    const int n = 1 + static_cast<int>(rng() % 200);
    for (int i = 0; i < n; ++i) keys.push_back(random_key());
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    Result<TableIndex> index = Decode(IndexBlock(keys));
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    for (int t = 0; t < 200; ++t) {
      std::string target =
          t % 3 == 0 ? keys[rng() % keys.size()] : random_key();
      if (t % 5 == 0) target = target.substr(0, rng() % (target.size() + 1));
      ASSERT_EQ(index->Find(target), Expected(keys, target)) << target;
    }
  }
}

TEST(TableIndexTest, AnEmptyIndexFindsNothing) {
  Result<TableIndex> index = Decode(IndexBlock({}));
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_EQ(index->size(), 0u);
  EXPECT_EQ(index->Find("any"), 0u);
}

// An entry of a block with a restart at every entry.
void PutEntry(std::string* block, std::string_view key,
              std::string_view value) {
  PutVarint32(block, 0);
  PutVarint32(block, static_cast<uint32_t>(key.size()));
  PutVarint32(block, static_cast<uint32_t>(value.size()));
  block->append(key);
  block->append(value);
}

std::string WithRestarts(std::string entries,
                         const std::vector<uint32_t>& restarts) {
  for (uint32_t r : restarts) PutFixed32(&entries, r);
  PutFixed32(&entries, static_cast<uint32_t>(restarts.size()));
  return entries;
}

TEST(TableIndexTest, KeysOutOfOrderAreCorruption) {
  std::string handle;
  IndexEntry{{0, 10}, 0}.EncodeTo(&handle);
  std::string entries;
  PutEntry(&entries, "b", handle);
  const uint32_t second = static_cast<uint32_t>(entries.size());
  PutEntry(&entries, "a", handle);
  Result<TableIndex> index = Decode(WithRestarts(entries, {0, second}));
  ASSERT_FALSE(index.ok());
  EXPECT_TRUE(index.status().IsCorruption()) << index.status().ToString();
  EXPECT_NE(index.status().ToString().find("out of order at entry 1"),
            std::string::npos)
      << index.status().ToString();
}

TEST(TableIndexTest, AValueThatIsNotAnIndexEntryIsCorruption) {
  std::string entries;
  PutEntry(&entries, "a", "\xff");  // a varint cut short
  Result<TableIndex> index = Decode(WithRestarts(entries, {0}));
  ASSERT_FALSE(index.ok());
  EXPECT_TRUE(index.status().IsCorruption()) << index.status().ToString();
  EXPECT_NE(index.status().ToString().find("bad block handle at entry 0"),
            std::string::npos)
      << index.status().ToString();
  EXPECT_NE(index.status().ToString().find("test: block at offset 0"),
            std::string::npos)
      << index.status().ToString();
}

}  // namespace
}  // namespace tabletfs
