#include "store/db/merger.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace tabletfs {
namespace {

// Sorted (key, value) pairs. key() views a buffer that the next move
// overwrites, as a block iterator's does, so a merge that kept a stale
// view would read the wrong key.
class VectorIterator final : public Iterator {
 public:
  explicit VectorIterator(std::vector<std::pair<std::string, std::string>> kv,
                          Status status = Status::OK(),
                          size_t fail_at = SIZE_MAX)
      : kv_(std::move(kv)), status_(std::move(status)), fail_at_(fail_at) {}

  bool Valid() const override { return status_.ok() && pos_ < kv_.size(); }
  void SeekToFirst() override { Load(0); }
  void Seek(std::string_view target) override {
    auto it = std::lower_bound(
        kv_.begin(), kv_.end(), target,
        [](const auto& entry, std::string_view t) { return entry.first < t; });
    Load(static_cast<size_t>(it - kv_.begin()));
  }
  void Next() override { Load(pos_ + 1); }
  std::string_view key() const override { return key_; }
  std::string_view value() const override { return kv_[pos_].second; }
  Status status() const override { return status_; }

 private:
  void Load(size_t pos) {
    pos_ = pos;
    if (pos_ >= fail_at_) status_ = Status::Corruption("bad block");
    key_.assign(pos_ < kv_.size() ? kv_[pos_].first : std::string(8, '#'));
  }

  std::vector<std::pair<std::string, std::string>> kv_;
  Status status_;
  size_t fail_at_;  // the position at which the iterator fails
  size_t pos_ = 0;
  std::string key_;
};

using Entry =
    std::tuple<std::string, size_t, std::string>;  // key, child, value

std::vector<Entry> Drain(Iterator* it) {
  std::vector<Entry> out;
  for (; it->Valid(); it->Next()) {
    std::string value(it->value());
    size_t child = std::stoul(value.substr(0, value.find(':')));
    out.emplace_back(std::string(it->key()), child, value);
  }
  return out;
}

TEST(MergerTest, MatchesAStableSortOfTheChildrenAtEverySeek) {
  uint32_t seed = std::random_device{}();
  std::printf("MergerTest seed %u\n", seed);
  std::mt19937 rng(seed);
  for (int round = 0; round < 200; ++round) {
    size_t n = rng() % 7;  // 0..6 children
    std::vector<std::unique_ptr<Iterator>> children;
    std::vector<Entry> model;
    for (size_t c = 0; c < n; ++c) {
      // Keys from a small alphabet, so children share many of them.
      std::vector<std::string> keys;
      size_t count = rng() % 40;
      for (size_t i = 0; i < count; ++i) {
        keys.push_back(
            std::string(1 + rng() % 3, static_cast<char>('a' + rng() % 4)));
      }
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      std::vector<std::pair<std::string, std::string>> kv;
      for (size_t i = 0; i < keys.size(); ++i) {
        std::string value = std::to_string(c);
        value.append(":");
        value.append(std::to_string(i));
        kv.emplace_back(keys[i], value);
        model.emplace_back(keys[i], c, value);
      }
      children.push_back(std::make_unique<VectorIterator>(std::move(kv)));
    }
    std::sort(model.begin(), model.end());  // by key, then child
    std::unique_ptr<Iterator> merged = NewMergingIterator(std::move(children));

    merged->SeekToFirst();
    ASSERT_EQ(Drain(merged.get()), model) << "round " << round;
    ASSERT_TRUE(merged->status().ok());

    for (int s = 0; s < 5; ++s) {
      std::string target(rng() % 4, static_cast<char>('a' + rng() % 5));
      auto first = std::find_if(
          model.begin(), model.end(),
          [&](const Entry& e) { return std::get<0>(e) >= target; });
      merged->Seek(target);
      ASSERT_EQ(Drain(merged.get()), std::vector<Entry>(first, model.end()))
          << "round " << round << " seek '" << target << "'";
    }
  }
}

TEST(MergerTest, AFailedChildEndsValidityAndReportsItsError) {
  std::vector<std::unique_ptr<Iterator>> children;
  children.push_back(std::make_unique<VectorIterator>(
      std::vector<std::pair<std::string, std::string>>{{"a", "0:0"},
                                                       {"c", "0:1"}}));
  children.push_back(std::make_unique<VectorIterator>(
      std::vector<std::pair<std::string, std::string>>{{"b", "1:0"}},
      Status::Corruption("bad block")));
  std::unique_ptr<Iterator> merged = NewMergingIterator(std::move(children));
  merged->SeekToFirst();
  std::vector<Entry> seen = Drain(merged.get());
  ASSERT_EQ(seen.size(), 2u);  // the failed child contributes nothing
  EXPECT_EQ(std::get<0>(seen[0]), "a");
  EXPECT_EQ(std::get<0>(seen[1]), "c");
  EXPECT_FALSE(merged->status().ok());
}

TEST(MergerTest, AChildFailingMidwayLeavesTheOthersInOrder) {
  std::vector<std::unique_ptr<Iterator>> children;
  children.push_back(std::make_unique<VectorIterator>(
      std::vector<std::pair<std::string, std::string>>{
          {"a", "0:0"}, {"c", "0:1"}, {"e", "0:2"}, {"g", "0:3"}}));
  // Fails when it moves past "d".
  children.push_back(std::make_unique<VectorIterator>(
      std::vector<std::pair<std::string, std::string>>{
          {"b", "1:0"}, {"d", "1:1"}, {"f", "1:2"}},
      Status::OK(), /*fail_at=*/2));
  std::unique_ptr<Iterator> merged = NewMergingIterator(std::move(children));
  merged->SeekToFirst();
  std::string keys;
  for (const Entry& e : Drain(merged.get())) keys += std::get<0>(e);
  EXPECT_EQ(keys, "abcdeg");
  EXPECT_TRUE(merged->status().IsCorruption());
}

}  // namespace
}  // namespace tabletfs
