// VersionEdit encoding and decoding (store/doc/manifest_format.md): round
// trips, and the range checks a checksummed but malformed record must fail.
#include "store/db/version_edit.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/util/gcc_bug_105329.h"

namespace tabletfs {
namespace {

VersionEdit EditAddingAt(int level) {
  VersionEdit edit;
  FileMeta f;
  f.tablet_id = 1;
  f.level = level;
  f.number = 9;
  f.size = 100;
  f.smallest = "a";
  // GCC bug 105329: a false -Wrestrict in the inlined copy of the FileMeta's
  // strings.
  TABLETFS_GCC_BUG_105329_BEGIN
  f.largest = "z";
  TABLETFS_GCC_BUG_105329_END
  edit.added_files.push_back(f);
  return edit;
}

TEST(VersionEditTest, RoundTripsEveryLevel) {
  for (int level = 0; level < kNumLevels; ++level) {
    VersionEdit edit = EditAddingAt(level);
    edit.deleted_files.push_back({level, 5});
    std::string record;
    edit.EncodeTo(&record);
    VersionEdit decoded;
    ASSERT_TRUE(decoded.DecodeFrom(record, "MANIFEST-000001").ok());
    ASSERT_EQ(decoded.added_files.size(), 1u);
    EXPECT_EQ(decoded.added_files[0].level, level);
    ASSERT_EQ(decoded.deleted_files.size(), 1u);
    EXPECT_EQ(decoded.deleted_files[0].level, level);
  }
}

// A plain file (only puts, each cell once) is written as kAddPlainFile and
// reads back plain; others, and kAddFile of older manifests, are not.
TEST(VersionEditTest, PlainFilesRoundTrip) {
  for (bool plain : {false, true}) {
    VersionEdit edit = EditAddingAt(2);
    edit.added_files[0].plain = plain;
    std::string record;
    edit.EncodeTo(&record);
    EXPECT_EQ(static_cast<uint8_t>(record[0]),
              plain ? VersionEdit::kAddPlainFile : VersionEdit::kAddFile);
    VersionEdit decoded;
    ASSERT_TRUE(decoded.DecodeFrom(record, "MANIFEST-000001").ok());
    ASSERT_EQ(decoded.added_files.size(), 1u);
    EXPECT_EQ(decoded.added_files[0].plain, plain);
    EXPECT_EQ(decoded.added_files[0].number, 9u);
    EXPECT_EQ(decoded.added_files[0].largest, "z");
  }
}

// A record with a level the engine does not have (7-15 were accepted and
// indexed Version::levels out of bounds: RELIABILITY.md bug 7) is
// Corruption naming the file.
TEST(VersionEditTest, RejectsLevelsBeyondTheLast) {
  for (int level : {kNumLevels, 8, 15, 16, 1000}) {
    SCOPED_TRACE("level " + std::to_string(level));
    std::string record;
    EditAddingAt(level).EncodeTo(&record);
    VersionEdit decoded;
    Status s = decoded.DecodeFrom(record, "MANIFEST-000001");
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_NE(s.ToString().find("MANIFEST-000001"), std::string::npos);

    VersionEdit deleting;
    deleting.deleted_files.push_back({level, 5});
    record.clear();
    deleting.EncodeTo(&record);
    s = decoded.DecodeFrom(record, "MANIFEST-000001");
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  }
}

// The bytes of store/doc/manifest_format.md's create_table example.
TEST(VersionEditTest, CreateTableRecordsItsCreationTime) {
  VersionEdit edit;
  edit.created_tables.push_back({1, "t", 1700000000000000});
  std::string record;
  edit.EncodeTo(&record);
  EXPECT_EQ(record, std::string("\x0f\x01\x01t\x80\x80\xf9\xc0\xc1\xc4\x82\x03",
                                12));
  VersionEdit decoded;
  ASSERT_TRUE(decoded.DecodeFrom(record, "MANIFEST-000001").ok());
  ASSERT_EQ(decoded.created_tables.size(), 1u);
  EXPECT_EQ(decoded.created_tables[0].id, 1u);
  EXPECT_EQ(decoded.created_tables[0].name, "t");
  EXPECT_EQ(decoded.created_tables[0].created_micros, 1700000000000000);
}

// Manifests written before tables recorded their creation (tag 10) still
// open: such a table counts as created at time 0.
TEST(VersionEditTest, OldCreateTableReadsAsCreatedAtZero) {
  VersionEdit decoded;
  ASSERT_TRUE(
      decoded.DecodeFrom(std::string("\x0a\x01\x01t", 4), "MANIFEST-000001")
          .ok());
  ASSERT_EQ(decoded.created_tables.size(), 1u);
  EXPECT_EQ(decoded.created_tables[0].name, "t");
  EXPECT_EQ(decoded.created_tables[0].created_micros, 0);
  // A truncated new record is Corruption, not a table created at 0.
  Status s = decoded.DecodeFrom(std::string("\x0f\x01\x01t", 4),
                                "MANIFEST-000001");
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
}

}  // namespace
// A flush records, per tablet, the log position and the sequence up to
// which its entries are in its SSTables (tags 33 and 34).
TEST(VersionEditTest, TabletFlushPositionsRoundTrip) {
  VersionEdit edit;
  edit.tablet_logs.emplace_back(7, 12);
  edit.tablet_flushed_seqs.emplace_back(7, 300);
  std::string record;
  edit.EncodeTo(&record);
  EXPECT_EQ(record, std::string("\x21\x07\x0c\x22\x07\xac\x02", 7));
  VersionEdit decoded;
  ASSERT_TRUE(decoded.DecodeFrom(record, "MANIFEST-000001").ok());
  EXPECT_EQ(decoded.tablet_logs, edit.tablet_logs);
  EXPECT_EQ(decoded.tablet_flushed_seqs, edit.tablet_flushed_seqs);
  Status s = decoded.DecodeFrom(record.substr(0, record.size() - 1),
                                "MANIFEST-000001");
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
}

}  // namespace tabletfs
