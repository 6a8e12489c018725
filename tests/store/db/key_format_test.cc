#include "store/db/key_format.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace tabletfs {
namespace {

TEST(KeyFormatTest, EscapeRoundTripsAndPreservesOrder) {
  std::vector<std::string> rows = {"",
                                   std::string("\0", 1),
                                   "a",
                                   std::string("a\0", 2),
                                   std::string("a\0b", 3),
                                   "a\x01",
                                   "ab",
                                   "b",
                                   "\xff",
                                   std::string("\xff\0", 2)};
  std::vector<std::string> sorted = rows;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::string> encoded;
  for (const auto& r : sorted) {
    std::string e;
    AppendEscaped(&e, r);
    EXPECT_EQ(Unescape(e), r);
    encoded.push_back(e);
  }
  EXPECT_TRUE(std::is_sorted(encoded.begin(), encoded.end()));
}

TEST(KeyFormatTest, ParsesEveryKind) {
  ParsedKey p;
  std::string row("r\0w", 3);
  // Parsed views point into the key: keep each key alive while checking.
  std::string k1 = RowMarkerKey(7, row, 42);
  ASSERT_TRUE(ParseInternalKey(k1, &p));
  EXPECT_EQ(p.table_id, 7u);
  EXPECT_EQ(Unescape(p.row_enc), row);
  EXPECT_EQ(p.section, KeySection::kRowMarker);
  EXPECT_EQ(p.seq, 42u);
  EXPECT_EQ(p.kind, EntryKind::kDeleteRow);

  std::string k2 = FamilyMarkerKey(7, row, 9, 43);
  ASSERT_TRUE(ParseInternalKey(k2, &p));
  EXPECT_EQ(p.section, KeySection::kFamilyMarker);
  EXPECT_EQ(p.family_id, 9u);

  std::string k3 = CellMarkerKey(7, row, 9, "q", 44);
  ASSERT_TRUE(ParseInternalKey(k3, &p));
  EXPECT_EQ(p.section, KeySection::kCellMarker);
  EXPECT_EQ(Unescape(p.qualifier_enc), "q");

  std::string k4 =
      VersionKey(7, row, 9, "", -5, kMaxSequence, EntryKind::kPutValueRef);
  ASSERT_TRUE(ParseInternalKey(k4, &p));
  EXPECT_EQ(p.section, KeySection::kVersion);
  EXPECT_EQ(p.timestamp, -5);
  EXPECT_EQ(p.seq, kMaxSequence);
  EXPECT_EQ(p.kind, EntryKind::kPutValueRef);
  EXPECT_EQ(p.cell_prefix, CellPrefix(7, row, 9, ""));
  EXPECT_EQ(p.row_prefix, RowPrefix(7, row));

  // Parts without a 0x00 byte are plain: copied, not decoded.
  EXPECT_FALSE(p.row_plain);  // "r\0w"
  EXPECT_TRUE(p.qualifier_plain);
  std::string k5 =
      VersionKey(7, "row", 9, std::string("q\0", 2), 1, 1, EntryKind::kPut);
  ASSERT_TRUE(ParseInternalKey(k5, &p));
  EXPECT_TRUE(p.row_plain);
  EXPECT_FALSE(p.qualifier_plain);
  std::string part = "stale";
  AssignUnescaped(p.row_enc, p.row_plain, &part);
  EXPECT_EQ(part, "row");
  AssignUnescaped(p.qualifier_enc, p.qualifier_plain, &part);
  EXPECT_EQ(part, std::string("q\0", 2));
  AssignUnescaped(std::string("\0\x01", 2), true, &part);  // the empty part
  EXPECT_EQ(part, "");

  EXPECT_FALSE(ParseInternalKey("", &p));
  EXPECT_FALSE(ParseInternalKey(RowPrefix(7, row), &p));
  std::string truncated = VersionKey(7, row, 9, "q", 1, 1, EntryKind::kPut);
  truncated.pop_back();
  EXPECT_FALSE(ParseInternalKey(truncated, &p));
}

TEST(KeyFormatTest, MarkersSortBeforeWhatTheyCoverAndVersionsNewestFirst) {
  std::string row_marker = RowMarkerKey(1, "row", 1);
  std::string fam_marker = FamilyMarkerKey(1, "row", 2, 1);
  std::string cell_marker = CellMarkerKey(1, "row", 2, "q", 1);
  std::string v_new = VersionKey(1, "row", 2, "q", 100, 1, EntryKind::kPut);
  std::string v_old = VersionKey(1, "row", 2, "q", -100, 2, EntryKind::kPut);
  std::string v_old_low_seq =
      VersionKey(1, "row", 2, "q", -100, 1, EntryKind::kPut);
  std::string next_q = VersionKey(1, "row", 2, "q\x01", 5, 1, EntryKind::kPut);
  std::string next_fam = FamilyMarkerKey(1, "row", 3, 1);
  std::string next_row = RowMarkerKey(1, "row\x01", 9);
  std::vector<std::string> keys = {row_marker, fam_marker, cell_marker,
                                   v_new,      v_old,      v_old_low_seq,
                                   next_q,     next_fam,   next_row};
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  // A higher sequence sorts first.
  EXPECT_LT(RowMarkerKey(1, "row", 5), RowMarkerKey(1, "row", 4));
}

TEST(KeyFormatTest, RandomQualifiersKeepOrder) {
  std::mt19937 rng(std::random_device{}());
  uint32_t seed = rng();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::printf("KeyFormatTest seed %u\n", seed);
  std::mt19937 r(seed);
  for (int i = 0; i < 2000; ++i) {
    auto gen = [&] {
      std::string s(r() % 4, '\0');
      for (char& c : s)
        c = "\0\x01\xff"
            "a"[r() % 4];
      return s;
    };
    std::string a = gen(), b = gen();
    std::string ka = VersionKey(1, "r", 1, a, 0, 1, EntryKind::kPut);
    std::string kb = VersionKey(1, "r", 1, b, 0, 1, EntryKind::kPut);
    EXPECT_EQ(a < b, ka < kb) << "a=" << a.size() << " b=" << b.size();
  }
}

}  // namespace
}  // namespace tabletfs
