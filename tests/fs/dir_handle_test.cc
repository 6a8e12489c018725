#include "fs/dir_handle.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "store/db.h"
#include "store/env/mem_env.h"
#include "store/reference/reference_bigtable.h"

namespace tabletfs::fs {
namespace {

// The same tests over the engine and over the reference implementation
// (store/reference/): directory listings need only the data-model
// interface.
class DirHandleTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    env_ = NewMemEnv();
    if (GetParam() == "engine") {
      Options options;
      options.env = env_.get();
      auto db = DB::Open(options, "/db");
      ASSERT_TRUE(db.ok()) << db.status().ToString();
      db_ = std::move(db).value();
    } else {
      ReferenceOptions options;
      options.clock = env_.get();
      db_ = NewReferenceBigtable(options);
    }
    ASSERT_TRUE(db_->CreateTable("t").ok());
    ASSERT_TRUE(db_->CreateFamily("t", "f", FamilySettings()).ok());
    ASSERT_TRUE(db_->CreateFamily("t", "g", FamilySettings()).ok());
  }

  void Put(const std::string& row, const std::string& family,
           const std::string& q) {
    RowMutation m(row);
    m.SetCell(family, q, "v" + q);
    ASSERT_TRUE(db_->Apply("t", m, WriteOptions()).ok());
  }
  void Delete(const std::string& row) {
    RowMutation m(row);
    m.DeleteRow();
    ASSERT_TRUE(db_->Apply("t", m, WriteOptions()).ok());
  }

  static Node TableNode() {
    Node n;
    n.kind = NodeKind::kTable;
    n.table = "t";
    return n;
  }

  // Reads at most `max` entries after `offset`; returns the names and sets
  // *last to the offset of the last one.
  std::vector<std::string> ReadSome(DirHandle* d, off_t offset, size_t max,
                                    off_t* last) {
    std::vector<std::string> names;
    FsError e = d->Read(offset, [&](const DirEntry& de) {
      if (names.size() == max) return false;
      names.push_back(de.name);
      *last = de.offset;
      return true;
    });
    EXPECT_TRUE(e.ok()) << e.ToString();
    return names;
  }

  std::unique_ptr<Env> env_;
  std::unique_ptr<Bigtable> db_;
  EphemeralDirs ephemeral_;
};

TEST_P(DirHandleTest, ListsRowsInOrderWithDots) {
  Put("b", "f", "q");
  Put("a", "f", "q");
  Put("c", "g", "q");
  DirHandle d(db_.get(), &ephemeral_, TableNode());
  off_t last = 0;
  EXPECT_EQ(ReadSome(&d, 0, 100, &last),
            (std::vector<std::string>{".", "..", "a", "b", "c"}));
  EXPECT_EQ(last, 5);
  EXPECT_TRUE(ReadSome(&d, last, 100, &last).empty());
}

TEST_P(DirHandleTest, ResumesByKeyWhileRowsComeAndGo) {
  for (char c = 'a'; c <= 'j'; c++) Put(std::string(1, c), "f", "q");
  DirHandle d(db_.get(), &ephemeral_, TableNode());
  off_t last = 0;
  std::vector<std::string> seen = ReadSome(&d, 0, 5, &last);  // . .. a b c
  ASSERT_EQ(seen.back(), "c");
  Delete("d");
  Delete("b");
  Put("cc", "f", "q");  // after c: may or may not be seen, never repeated
  Put("a0", "f", "q");  // before c: never seen in this pass
  std::vector<std::string> more;
  for (;;) {
    std::vector<std::string> batch = ReadSome(&d, last, 2, &last);
    if (batch.empty()) break;
    more.insert(more.end(), batch.begin(), batch.end());
  }
  seen.insert(seen.end(), more.begin(), more.end());
  std::vector<std::string> rows(seen.begin() + 2, seen.end());
  for (size_t i = 1; i < rows.size(); i++) {
    EXPECT_LT(rows[i - 1], rows[i]) << "repeated or out of order";
  }
  for (std::string must : {"a", "c", "e", "f", "g", "h", "i", "j"}) {
    EXPECT_NE(std::find(rows.begin(), rows.end(), must), rows.end()) << must;
  }
}

TEST_P(DirHandleTest, ResumesFromAnEarlierOffsetAndRewinds) {
  for (char c = 'a'; c <= 'e'; c++) Put(std::string(1, c), "f", "q");
  DirHandle d(db_.get(), &ephemeral_, TableNode());
  off_t last = 0;
  ReadSome(&d, 0, 4, &last);  // . .. a b  (b at offset 4)
  off_t after_a = 3;
  EXPECT_EQ(ReadSome(&d, after_a, 2, &last),
            (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(ReadSome(&d, 0, 3, &last),
            (std::vector<std::string>{".", "..", "a"}));
  FsError e = d.Read(999, [](const DirEntry&) { return true; });
  EXPECT_EQ(e.err, EINVAL);
}

TEST_P(DirHandleTest, MergesDirectoriesMadeByMkdir) {
  Put("b", "f", "q");
  ephemeral_.AddRow("t", "a");
  ephemeral_.AddRow("t", "b");
  ephemeral_.AddRow("t", "c");
  DirHandle d(db_.get(), &ephemeral_, TableNode());
  off_t last = 0;
  EXPECT_EQ(ReadSome(&d, 0, 100, &last),
            (std::vector<std::string>{".", "..", "a", "b", "c"}));
}

TEST_P(DirHandleTest, ListsFamiliesOfARowAndQualifiersOfAFamily) {
  Put("r", "g", "z");
  Put("r", "g", "");
  Put("r", "g", "a/b");
  Node row;
  row.kind = NodeKind::kRow;
  row.table = "t";
  row.row = "r";
  DirHandle rd(db_.get(), &ephemeral_, row);
  off_t last = 0;
  EXPECT_EQ(ReadSome(&rd, 0, 100, &last),
            (std::vector<std::string>{".", "..", "g"}));
  Node family = row;
  family.kind = NodeKind::kFamily;
  family.family = "g";
  DirHandle fd(db_.get(), &ephemeral_, family);
  std::vector<DirEntry> entries;
  ASSERT_TRUE(fd.Read(0, [&](const DirEntry& de) {
                  entries.push_back(de);
                  return true;
                }).ok());
  ASSERT_EQ(entries.size(), 5u);
  EXPECT_EQ(entries[2].name, "%");
  EXPECT_EQ(entries[3].name, "a%2Fb");
  EXPECT_EQ(entries[3].node.qualifier, "a/b");
  EXPECT_EQ(entries[3].size, 4u);
  EXPECT_EQ(entries[4].name, "z");
  ASSERT_TRUE(entries[4].settings.has_value());
}

TEST_P(DirHandleTest, StreamsManyQualifiersInSmallBatches) {
  RowMutation m("r");
  for (int i = 0; i < 3000; i++) {
    char q[16];
    snprintf(q, sizeof(q), "q%05d", i);
    m.SetCell("f", q, "v");
  }
  ASSERT_TRUE(db_->Apply("t", m, WriteOptions()).ok());
  Node family;
  family.kind = NodeKind::kFamily;
  family.table = "t";
  family.row = "r";
  family.family = "f";
  DirHandle d(db_.get(), &ephemeral_, family);
  off_t last = 0;
  size_t total = 0;
  std::string prev;
  for (;;) {
    std::vector<std::string> batch = ReadSome(&d, last, 7, &last);
    if (batch.empty()) break;
    for (const std::string& n : batch) {
      if (n == "." || n == "..") continue;
      EXPECT_LT(prev, n);
      prev = n;
      total++;
    }
  }
  EXPECT_EQ(total, 3000u);
}

// The kernel asks for more entries than a small getdents buffer takes and
// resumes from the last one it passed on, so the same offsets are handed
// out again, for other names when directories made by mkdir (merged live,
// not from the pass's snapshot) came or went meanwhile. A resume must go
// on from the name most recently given that offset.
TEST_P(DirHandleTest, ResumesFromAReissuedOffset) {
  for (char c = 'a'; c <= 'j'; c++) Put(std::string(1, c), "f", "q");
  DirHandle d(db_.get(), &ephemeral_, TableNode());
  off_t last = 0;
  // One reply: . .. a b c d e (offsets 1 to 7); the caller took up to b.
  ASSERT_EQ(ReadSome(&d, 0, 7, &last),
            (std::vector<std::string>{".", "..", "a", "b", "c", "d", "e"}));
  ephemeral_.AddRow("t", "bb");
  // From b's offset (4): bb c d now have offsets 5 to 7; the caller took
  // up to c (6), which was d's offset in the first reply.
  ASSERT_EQ(ReadSome(&d, 4, 3, &last),
            (std::vector<std::string>{"bb", "c", "d"}));
  EXPECT_EQ(ReadSome(&d, 6, 2, &last), (std::vector<std::string>{"d", "e"}));
  // And the other way: a row gone, so an offset now names a later row.
  ASSERT_TRUE(ephemeral_.RemoveRow("t", "bb"));
  ASSERT_EQ(ReadSome(&d, 4, 3, &last),
            (std::vector<std::string>{"c", "d", "e"}));
  // The caller took up to c (5, bb's before): d next, not c again.
  EXPECT_EQ(ReadSome(&d, 5, 1, &last), (std::vector<std::string>{"d"}));
}

// seekdir() to a telldir() taken more than kRememberedEntries entries ago
// (a program that walks a huge table and comes back) must not fail.
TEST_P(DirHandleTest, ResumesFromAnOffsetOlderThanTheRememberedWindow) {
  const int kRows = static_cast<int>(DirHandle::kRememberedEntries) + 500;
  std::vector<std::string> rows;
  for (int i = 0; i < kRows; i++) {
    char r[16];
    snprintf(r, sizeof(r), "r%06d", i);
    rows.push_back(r);
  }
  for (const std::string& r : rows) Put(r, "f", "q");
  DirHandle d(db_.get(), &ephemeral_, TableNode());
  off_t last = 0;
  std::vector<std::string> all;
  for (;;) {
    std::vector<std::string> batch = ReadSome(&d, last, 100, &last);
    if (batch.empty()) break;
    all.insert(all.end(), batch.begin(), batch.end());
  }
  ASSERT_EQ(all.size(), rows.size() + 2);
  // Offset 12 is the 10th row's: the listing goes on with the 11th.
  EXPECT_EQ(ReadSome(&d, 12, 2, &last),
            (std::vector<std::string>{rows[10], rows[11]}));
  EXPECT_EQ(last, 14);
  // And from there on as usual, to the end.
  std::vector<std::string> rest = ReadSome(&d, last, kRows, &last);
  ASSERT_EQ(rest.size(), rows.size() - 12);
  EXPECT_EQ(rest.back(), rows.back());
  // An offset never handed out is still refused.
  FsError e = d.Read(kRows + 100, [](const DirEntry&) { return true; });
  EXPECT_EQ(e.err, EINVAL);
}

INSTANTIATE_TEST_SUITE_P(Implementations, DirHandleTest,
                         ::testing::Values("engine", "reference"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace tabletfs::fs
