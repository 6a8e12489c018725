// fs/change_feed.h without FUSE, in the TSan build (ctest -L concurrency):
// writers on several threads and readers of one table's feed at once; every
// reader reads the same text, every change once, each writer's in its order.
// Also the lines of the kinds the mount tests do not make.
#include <errno.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fs/change_feed.h"
#include "store/bigtable.h"
#include "store/reference/reference_bigtable.h"

namespace tabletfs::fs {
namespace {

class ChangeFeedConcurrencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = NewReferenceBigtable(ReferenceOptions());
    ASSERT_TRUE(db_->CreateTable("t").ok());
    ASSERT_TRUE(db_->CreateFamily("t", "f", FamilySettings()).ok());
  }

  // Reads `feed` from offset 0 until it holds `lines` lines (10 s at most).
  static std::string ReadAll(ChangeFeed& feed, size_t lines) {
    std::string text;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) <
               lines &&
           std::chrono::steady_clock::now() < deadline) {
      std::string more;
      FsError e = feed.Read(static_cast<off_t>(text.size()), 1 << 16, &more);
      if (!e.ok()) return "error: " + e.ToString();
      if (more.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      text += more;
    }
    return text;
  }

  std::unique_ptr<Bigtable> db_;
};

// TABLE@T needs a store that keeps past changes: the reference store does
// not (the mount tests read the engine's), and says so.
TEST_F(ChangeFeedConcurrencyTest, AFeedAtTNeedsAStoreThatKeepsThePast) {
  ChangeFeeds feeds(db_.get());
  std::shared_ptr<ChangeFeed> feed;
  FsError e = feeds.Open("t", 1000, &feed);
  EXPECT_EQ(e.err, ENOTSUP) << e.ToString();
  EXPECT_NE(e.reason.find(".changes/t@1000"), std::string::npos) << e.reason;
  EXPECT_EQ(feeds.Find("t", 1000), nullptr);
}

TEST_F(ChangeFeedConcurrencyTest, ReadersSeeEveryWriteOnceInCommitOrder) {
  constexpr int kWriters = 4, kWrites = 300, kReaders = 3;
  ChangeFeeds feeds(db_.get());
  std::vector<std::shared_ptr<ChangeFeed>> opened(kReaders);
  for (auto& f : opened) ASSERT_TRUE(feeds.Open("t", std::nullopt, &f).ok());
  EXPECT_EQ(opened[0], opened[2]) << "one feed per table";
  std::vector<std::string> texts(kReaders);
  std::vector<std::thread> threads;
  for (int r = 0; r < kReaders; r++) {
    threads.emplace_back(
        [&, r] { texts[r] = ReadAll(*opened[r], kWriters * kWrites); });
  }
  for (int w = 0; w < kWriters; w++) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kWrites; i++) {
        RowMutation m(std::string("row").append(std::to_string(w)));
        m.SetCell("f", std::string("q").append(std::to_string(i)),
                  std::string("w").append(std::to_string(w)));
        ASSERT_TRUE(db_->Apply("t", m, WriteOptions()).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(std::count(texts[0].begin(), texts[0].end(), '\n'),
            kWriters * kWrites)
      << texts[0].substr(0, 300);
  for (int r = 1; r < kReaders; r++) EXPECT_EQ(texts[r], texts[0]);
  EXPECT_EQ(opened[0]->size(), texts[0].size());
  // Each writer's qualifiers in the order it wrote them.
  std::vector<int> next(kWriters, 0);
  std::istringstream in(texts[0]);
  for (std::string line; std::getline(in, line);) {
    const size_t row = line.find("\"row\":\"row");
    ASSERT_NE(row, std::string::npos) << line;
    const int w = line[row + 10] - '0';
    ASSERT_GE(w, 0);
    ASSERT_LT(w, kWriters);
    const std::string qualifier = std::string("\"qualifier\":\"q")
                                      .append(std::to_string(next[w]))
                                      .append("\"");
    EXPECT_NE(line.find(qualifier), std::string::npos) << line;
    next[w]++;
  }
  // The last reader gone, the feed stops; the next open starts anew.
  opened.clear();
  EXPECT_EQ(feeds.Find("t", std::nullopt), nullptr);
  std::shared_ptr<ChangeFeed> again;
  ASSERT_TRUE(feeds.Open("t", std::nullopt, &again).ok());
  EXPECT_EQ(again->size(), 0u);
}

TEST(ChangeFeedLineTest, KindsWithoutCells) {
  ChangeEvent row{"t", "r\xff",     "", "", 5, ChangeKind::kDeleteRow,
                  0,   std::nullopt};
  EXPECT_EQ(ChangeFeed::Line(row, nullptr),
            "{\"kind\":\"delete-row\",\"row_base64\":\"cv8=\","
            "\"timestamp\":5}\n");
  ChangeEvent family{"t", "r",         "f", "", 6, ChangeKind::kDeleteFamily,
                     0,   std::nullopt};
  EXPECT_EQ(ChangeFeed::Line(family, nullptr),
            "{\"kind\":\"delete-family\",\"row\":\"r\",\"family\":\"f\","
            "\"timestamp\":6}\n");
  ChangeEvent table{"t", "",          "", "", 7, ChangeKind::kDropTable,
                    0,   std::nullopt};
  EXPECT_EQ(ChangeFeed::Line(table, nullptr),
            "{\"kind\":\"drop-table\",\"timestamp\":7}\n");
  ChangeEvent gone{"t", "r",         "f", "q\n", 8, ChangeKind::kSetCell,
                   0,   std::nullopt};
  EXPECT_EQ(ChangeFeed::Line(gone, nullptr),
            "{\"kind\":\"set\",\"row\":\"r\",\"family\":\"f\","
            "\"qualifier\":\"q\\n\",\"timestamp\":8,\"value_gone\":true}\n");
}

// A set's line shows the value its event carries, also when the version
// is gone by the time the line is made (written then deleted at once, as a
// temporary file renamed away); a value the event does not carry (larger
// than kMaxEventValueBytes) is read from the store, and said to be gone.
TEST_F(ChangeFeedConcurrencyTest, ALineShowsTheValueTheEventCarries) {
  SubscribeOptions so;
  so.table = "t";
  auto sub = db_->Subscribe(so);
  ASSERT_TRUE(sub.ok());
  RowMutation m("r");
  m.SetCell("f", "small", "written")
      .SetCell("f", "large", std::string(kMaxEventValueBytes + 1, 'x'));
  ASSERT_TRUE(db_->Apply("t", m, WriteOptions()).ok());
  ASSERT_TRUE(
      db_->Apply("t", RowMutation("r").DeleteRow(), WriteOptions()).ok());
  ChangeBatch batch = (*sub)->Read(std::chrono::seconds(0));
  ASSERT_EQ(batch.events.size(), 3u);
  std::istringstream lines(ChangeFeed::Lines(db_.get(), batch));
  std::string small, large;
  std::getline(lines, small);
  std::getline(lines, large);
  EXPECT_NE(small.find("\"value\":\"written\""), std::string::npos) << small;
  EXPECT_NE(large.find("\"value_gone\":true"), std::string::npos) << large;
}

}  // namespace
}  // namespace tabletfs::fs
