#include "api/row_filter.h"

#include <gmock/gmock.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace tabletfs::api {
namespace {

namespace v2 = google::bigtable::v2;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

v2::RowFilter Parse(const std::string& text) {
  v2::RowFilter proto;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &proto))
      << text;
  return proto;
}

RowFilter MustCompile(const std::string& text) {
  Result<RowFilter> filter = RowFilter::Compile(Parse(text));
  EXPECT_TRUE(filter.ok()) << text << ": " << filter.status().ToString();
  return filter.ok() ? *filter : RowFilter();
}

// "family:qualifier@timestamp=value", then "[label,...]" when labelled.
std::string Describe(const FilteredCell& c) {
  std::string s = c.cell.family + ":" + c.cell.qualifier + "@" +
                  std::to_string(c.cell.timestamp) + "=" + c.cell.value;
  if (!c.labels.empty()) {
    s += "[";
    for (size_t i = 0; i < c.labels.size(); i++) {
      s += (i > 0 ? "," : "") + c.labels[i];
    }
    s += "]";
  }
  return s;
}

std::vector<std::string> Describe(const std::vector<FilteredCell>& cells) {
  std::vector<std::string> out;
  for (const FilteredCell& c : cells) out.push_back(Describe(c));
  return out;
}

// The output of the filter `text` on `row`, described.
std::vector<std::string> Output(const std::string& text, const Row& row) {
  return Describe(MustCompile(text).Apply(row));
}

// Families in the table's order "f2" before "f1" (not alphabetical), the
// same qualifier in both, several versions per column.
Row TestRow() {
  return Row{"row1",
             {{"f2", "a", 30, "v30"},
              {"f2", "a", 20, "v20"},
              {"f2", "a", 10, "v10"},
              {"f2", "b", 15, "b15"},
              {"f1", "a", 25, "x"},
              {"f1", "a", 5, "y"}}};
}

// The row of data.proto's Sink example.
Row ExampleRow() {
  return Row{"r", {{"A", "A", 1, "w"}, {"A", "B", 2, "x"}, {"B", "B", 4, "z"}}};
}

// The status of compiling `proto`, checked to be InvalidArgument.
std::string CompileError(const v2::RowFilter& proto) {
  Result<RowFilter> filter = RowFilter::Compile(proto);
  EXPECT_FALSE(filter.ok()) << proto.ShortDebugString();
  if (filter.ok()) return "";
  EXPECT_TRUE(filter.status().IsInvalidArgument())
      << filter.status().ToString();
  return filter.status().message();
}
std::string CompileError(const std::string& text) {
  return CompileError(Parse(text));
}

// ---- Trivial filters. ----

TEST(RowFilterTest, DefaultAndEmptyPassEverything) {
  const std::vector<std::string> all = {"f2:a@30=v30", "f2:a@20=v20",
                                        "f2:a@10=v10", "f2:b@15=b15",
                                        "f1:a@25=x",   "f1:a@5=y"};
  RowFilter none;
  EXPECT_TRUE(none.PassesAll());
  EXPECT_EQ(Describe(none.Apply(TestRow())), all);
  for (const char* text :
       {"", "pass_all_filter: true", "chain {}",
        "chain { filters { pass_all_filter: true } filters {} }"}) {
    RowFilter f = MustCompile(text);
    EXPECT_TRUE(f.PassesAll()) << text;
    EXPECT_EQ(Describe(f.Apply(TestRow())), all) << text;
  }
  EXPECT_FALSE(MustCompile("block_all_filter: true").PassesAll());
  EXPECT_FALSE(MustCompile("strip_value_transformer: true").PassesAll());
  EXPECT_FALSE(
      MustCompile(
          "chain { filters {} filters { cells_per_row_limit_filter: 1 } }")
          .PassesAll());
}

TEST(RowFilterTest, BlockAll) {
  EXPECT_THAT(Output("block_all_filter: true", TestRow()), IsEmpty());
}

TEST(RowFilterTest, EmptyRow) {
  Row empty{"k", {}};
  EXPECT_THAT(Output("interleave { filters { sink: true } filters {} }", empty),
              IsEmpty());
  EXPECT_THAT(Output("cells_per_row_offset_filter: 0", empty), IsEmpty());
}

// ---- Regexes. ----

TEST(RowFilterTest, RowKeyRegexMatchesTheWholeKey) {
  EXPECT_EQ(Output("row_key_regex_filter: 'row1'", TestRow()).size(), 6u);
  EXPECT_EQ(Output("row_key_regex_filter: 'r.*'", TestRow()).size(), 6u);
  EXPECT_THAT(Output("row_key_regex_filter: 'row'", TestRow()), IsEmpty());
  EXPECT_THAT(Output("row_key_regex_filter: 'ow1'", TestRow()), IsEmpty());
  // An alternation is anchored as a whole.
  EXPECT_THAT(Output("row_key_regex_filter: 'x|row'", TestRow()), IsEmpty());
}

TEST(RowFilterTest, RowKeyRegexOverBinaryBytes) {
  Row row{std::string("a\nb\xff\x00", 5), {{"f", "q", 1, "v"}}};
  // `.` does not match a newline, `\C` matches any byte.
  EXPECT_THAT(Output(R"(row_key_regex_filter: 'a.b\\C\\C')", row), IsEmpty());
  EXPECT_EQ(Output(R"(row_key_regex_filter: 'a\\Cb\\C\\C')", row).size(), 1u);
  // A raw byte in the pattern is that byte (Latin-1), so is \xff and \x00.
  EXPECT_EQ(Output(R"(row_key_regex_filter: 'a\nb\377\\x00')", row).size(), 1u);
  EXPECT_EQ(Output(R"(row_key_regex_filter: 'a\nb\\xff\\x00')", row).size(),
            1u);
  EXPECT_EQ(
      Output(R"(row_key_regex_filter: 'a\nb[\200-\377]\000')", row).size(), 1u);
}

TEST(RowFilterTest, FamilyNameRegex) {
  EXPECT_THAT(Output("family_name_regex_filter: 'f1'", TestRow()),
              ElementsAre("f1:a@25=x", "f1:a@5=y"));
  EXPECT_THAT(Output("family_name_regex_filter: 'f'", TestRow()), IsEmpty());
  EXPECT_EQ(Output("family_name_regex_filter: 'f[12]'", TestRow()).size(), 6u);
}

TEST(RowFilterTest, ColumnQualifierRegexOverBinaryBytes) {
  Row row{"k",
          {{"f", std::string("\xff\x00q", 3), 3, "1"},
           {"f", "a\nb", 2, "2"},
           {"f", "aXb", 1, "3"}}};
  EXPECT_THAT(Output(R"(column_qualifier_regex_filter: '\\xff\\x00q')", row),
              ElementsAre(std::string("f:\xff\x00q@3=1", 9)));
  EXPECT_THAT(Output(R"(column_qualifier_regex_filter: 'a.b')", row),
              ElementsAre("f:aXb@1=3"));
  EXPECT_THAT(Output(R"(column_qualifier_regex_filter: 'a\\Cb')", row),
              ElementsAre("f:a\nb@2=2", "f:aXb@1=3"));
  EXPECT_EQ(Output(R"(column_qualifier_regex_filter: '\\C*')", row).size(), 3u);
}

TEST(RowFilterTest, ValueRegex) {
  EXPECT_THAT(Output("value_regex_filter: 'v[12]0'", TestRow()),
              ElementsAre("f2:a@20=v20", "f2:a@10=v10"));
  EXPECT_THAT(Output("value_regex_filter: 'v'", TestRow()), IsEmpty());
  Row row{"k", {{"f", "q", 1, std::string("\x00\x01\xfe", 3)}}};
  EXPECT_EQ(Output(R"(value_regex_filter: '\\x00\\x01\\xfe')", row).size(), 1u);
  EXPECT_EQ(Output(R"(value_regex_filter: '\\C{3}')", row).size(), 1u);
  EXPECT_THAT(Output(R"(value_regex_filter: '\\C{2}')", row), IsEmpty());
}

// ---- Ranges. ----

TEST(RowFilterTest, ColumnRangeBounds) {
  const Row row{"k",
                {{"f", "a", 1, ""},
                 {"f", "b", 1, ""},
                 {"f", "c", 1, ""},
                 {"f", "\x80", 1, ""},
                 {"g", "b", 1, ""}}};
  auto quals = [&](const std::string& range) {
    std::vector<std::string> out;
    for (const FilteredCell& c :
         MustCompile("column_range_filter { " + range + " }").Apply(row)) {
      out.push_back(c.cell.family + ":" + c.cell.qualifier);
    }
    return out;
  };
  EXPECT_THAT(quals("family_name: 'f'"),
              ElementsAre("f:a", "f:b", "f:c", "f:\x80"));
  EXPECT_THAT(quals("family_name: 'g'"), ElementsAre("g:b"));
  EXPECT_THAT(quals("family_name: 'f' start_qualifier_closed: 'b' "
                    "end_qualifier_closed: 'c'"),
              ElementsAre("f:b", "f:c"));
  EXPECT_THAT(quals("family_name: 'f' start_qualifier_open: 'b' "
                    "end_qualifier_closed: 'c'"),
              ElementsAre("f:c"));
  EXPECT_THAT(quals("family_name: 'f' start_qualifier_closed: 'a' "
                    "end_qualifier_open: 'c'"),
              ElementsAre("f:a", "f:b"));
  EXPECT_THAT(quals("family_name: 'f' start_qualifier_open: 'a' "
                    "end_qualifier_open: 'c'"),
              ElementsAre("f:b"));
  // Bytes compare unsigned: \x80 sorts after every ASCII qualifier.
  EXPECT_THAT(quals("family_name: 'f' start_qualifier_open: 'c'"),
              ElementsAre("f:\x80"));
  EXPECT_THAT(quals("family_name: 'f' end_qualifier_open: 'b'"),
              ElementsAre("f:a"));
  // An inverted or empty range matches nothing.
  EXPECT_THAT(quals("family_name: 'f' start_qualifier_closed: 'c' "
                    "end_qualifier_closed: 'a'"),
              IsEmpty());
  EXPECT_THAT(quals("family_name: 'f' start_qualifier_closed: 'b' "
                    "end_qualifier_open: 'b'"),
              IsEmpty());
  EXPECT_THAT(quals("family_name: 'nope'"), IsEmpty());
}

TEST(RowFilterTest, TimestampRange) {
  EXPECT_THAT(Output("timestamp_range_filter { start_timestamp_micros: 15 "
                     "end_timestamp_micros: 25 }",
                     TestRow()),
              ElementsAre("f2:a@20=v20", "f2:b@15=b15"));
  // End 0: no upper bound; start unset: 0.
  EXPECT_THAT(Output("timestamp_range_filter { start_timestamp_micros: 25 }",
                     TestRow()),
              ElementsAre("f2:a@30=v30", "f1:a@25=x"));
  EXPECT_THAT(
      Output("timestamp_range_filter { end_timestamp_micros: 10 }", TestRow()),
      ElementsAre("f1:a@5=y"));
  EXPECT_EQ(Output("timestamp_range_filter {}", TestRow()).size(), 6u);
  // Microsecond precision (the store keeps microseconds).
  EXPECT_THAT(Output("timestamp_range_filter { start_timestamp_micros: 29 "
                     "end_timestamp_micros: 31 }",
                     TestRow()),
              ElementsAre("f2:a@30=v30"));
}

TEST(RowFilterTest, ValueRange) {
  const Row row{"k",
                {{"f", "q", 5, ""},
                 {"f", "q", 4, "a"},
                 {"f", "q", 3, "b"},
                 {"f", "q", 2, "c"},
                 {"f", "q", 1, "\xff"}}};
  auto values = [&](const std::string& range) {
    std::vector<std::string> out;
    for (const FilteredCell& c :
         MustCompile("value_range_filter { " + range + " }").Apply(row)) {
      out.push_back(c.cell.value);
    }
    return out;
  };
  EXPECT_THAT(values(""), ElementsAre("", "a", "b", "c", "\xff"));
  EXPECT_THAT(values("start_value_closed: 'a' end_value_closed: 'b'"),
              ElementsAre("a", "b"));
  EXPECT_THAT(values("start_value_open: 'a' end_value_open: 'c'"),
              ElementsAre("b"));
  EXPECT_THAT(values("start_value_open: ''"),
              ElementsAre("a", "b", "c", "\xff"));
  EXPECT_THAT(values("end_value_open: 'a'"), ElementsAre(""));
  EXPECT_THAT(values("start_value_closed: 'c'"), ElementsAre("c", "\xff"));
  EXPECT_THAT(values("start_value_closed: 'c' end_value_open: 'b'"), IsEmpty());
}

// ---- Limits. ----

TEST(RowFilterTest, CellsPerRowOffsetAndLimit) {
  EXPECT_THAT(Output("cells_per_row_offset_filter: 4", TestRow()),
              ElementsAre("f1:a@25=x", "f1:a@5=y"));
  EXPECT_EQ(Output("cells_per_row_offset_filter: 0", TestRow()).size(), 6u);
  EXPECT_THAT(Output("cells_per_row_offset_filter: 6", TestRow()), IsEmpty());
  EXPECT_THAT(Output("cells_per_row_offset_filter: 100", TestRow()), IsEmpty());

  EXPECT_THAT(Output("cells_per_row_limit_filter: 2", TestRow()),
              ElementsAre("f2:a@30=v30", "f2:a@20=v20"));
  EXPECT_THAT(Output("cells_per_row_limit_filter: 0", TestRow()), IsEmpty());
  EXPECT_EQ(Output("cells_per_row_limit_filter: 100", TestRow()).size(), 6u);

  // Offset then limit: a page of the row.
  EXPECT_THAT(Output("chain { filters { cells_per_row_offset_filter: 2 } "
                     "filters { cells_per_row_limit_filter: 3 } }",
                     TestRow()),
              ElementsAre("f2:a@10=v10", "f2:b@15=b15", "f1:a@25=x"));
}

TEST(RowFilterTest, CellsPerColumnLimit) {
  // The same qualifier in two families is two columns.
  EXPECT_THAT(Output("cells_per_column_limit_filter: 1", TestRow()),
              ElementsAre("f2:a@30=v30", "f2:b@15=b15", "f1:a@25=x"));
  EXPECT_THAT(Output("cells_per_column_limit_filter: 2", TestRow()),
              ElementsAre("f2:a@30=v30", "f2:a@20=v20", "f2:b@15=b15",
                          "f1:a@25=x", "f1:a@5=y"));
  EXPECT_THAT(Output("cells_per_column_limit_filter: 0", TestRow()), IsEmpty());
}

TEST(RowFilterTest, LimitsCountDuplicatesOneByOne) {
  const std::string twice =
      "interleave { filters {} filters { pass_all_filter: true } }";
  EXPECT_THAT(
      Output("chain { filters { " + twice +
                 " } filters { cells_per_column_limit_filter: 3 } }",
             TestRow()),
      ElementsAre("f2:a@30=v30", "f2:a@30=v30", "f2:a@20=v20", "f2:b@15=b15",
                  "f2:b@15=b15", "f1:a@25=x", "f1:a@25=x", "f1:a@5=y"));
  EXPECT_THAT(Output("chain { filters { " + twice +
                         " } filters { cells_per_row_limit_filter: 3 } }",
                     TestRow()),
              ElementsAre("f2:a@30=v30", "f2:a@30=v30", "f2:a@20=v20"));
  EXPECT_THAT(Output("chain { filters { " + twice +
                         " } filters { cells_per_row_offset_filter: 9 } }",
                     TestRow()),
              ElementsAre("f1:a@25=x", "f1:a@5=y", "f1:a@5=y"));
}

// ---- Transformers. ----

TEST(RowFilterTest, StripValue) {
  EXPECT_THAT(Output("chain { filters { family_name_regex_filter: 'f1' } "
                     "filters { strip_value_transformer: true } }",
                     TestRow()),
              ElementsAre("f1:a@25=", "f1:a@5="));
  // A filter after the strip sees the empty value.
  EXPECT_EQ(Output("chain { filters { strip_value_transformer: true } "
                   "filters { value_regex_filter: '' } }",
                   TestRow())
                .size(),
            6u);
  EXPECT_THAT(
      Output("chain { filters { strip_value_transformer: true } "
             "filters { value_range_filter { start_value_open: '' } } }",
             TestRow()),
      IsEmpty());
}

TEST(RowFilterTest, Labels) {
  EXPECT_THAT(Output("chain { filters { column_qualifier_regex_filter: 'b' } "
                     "filters { apply_label_transformer: 'bee-2' } }",
                     TestRow()),
              ElementsAre("f2:b@15=b15[bee-2]"));
  // Each interleaved copy has its own label; a strip keeps it.
  EXPECT_THAT(
      Output(
          "interleave {"
          "  filters { chain { filters { family_name_regex_filter: 'f1' }"
          "                    filters { apply_label_transformer: 'one' } } }"
          "  filters { chain { filters { column_qualifier_regex_filter: 'b' }"
          "                    filters { strip_value_transformer: true }"
          "                    filters { apply_label_transformer: 'two' } } }"
          "  filters { chain { filters { cells_per_row_offset_filter: 5 }"
          "                    filters { apply_label_transformer: 'three' }"
          "                    filters { strip_value_transformer: true } } } }",
          TestRow()),
      ElementsAre("f2:b@15=[two]", "f1:a@25=x[one]", "f1:a@5=y[one]",
                  "f1:a@5=[three]"));
}

// ---- Composition. ----

TEST(RowFilterTest, ChainNarrowsInSequence) {
  EXPECT_THAT(Output("chain { filters { family_name_regex_filter: 'f2' } "
                     "filters { column_qualifier_regex_filter: 'a' } "
                     "filters { cells_per_column_limit_filter: 2 } "
                     "filters { cells_per_row_offset_filter: 1 } }",
                     TestRow()),
              ElementsAre("f2:a@20=v20"));
  EXPECT_THAT(Output("chain { filters { block_all_filter: true } "
                     "filters { pass_all_filter: true } }",
                     TestRow()),
              IsEmpty());
}

TEST(RowFilterTest, InterleaveMergesInInputOrderKeepingDuplicates) {
  // Copies of one input cell come in sub-filter order.
  EXPECT_THAT(
      Output(
          "interleave {"
          "  filters { chain { filters { column_qualifier_regex_filter: 'b' }"
          "                    filters { apply_label_transformer: 'first' } } }"
          "  filters { chain { filters { family_name_regex_filter: 'f2' }"
          "                    filters { apply_label_transformer: 'second' } } "
          "}"
          "  filters { value_regex_filter: 'v30|x' } }",
          TestRow()),
      ElementsAre("f2:a@30=v30[second]", "f2:a@30=v30", "f2:a@20=v20[second]",
                  "f2:a@10=v10[second]", "f2:b@15=b15[first]",
                  "f2:b@15=b15[second]", "f1:a@25=x"));
  EXPECT_THAT(Output("interleave {}", TestRow()), IsEmpty());
  EXPECT_THAT(Output("interleave { filters { cells_per_row_limit_filter: 1 } }",
                     TestRow()),
              ElementsAre("f2:a@30=v30"));
}

TEST(RowFilterTest, ChainOfInterleaves) {
  EXPECT_THAT(Output("chain {"
                     "  filters { interleave {"
                     "    filters { family_name_regex_filter: 'f1' }"
                     "    filters { column_qualifier_regex_filter: 'b' } } }"
                     "  filters { interleave {"
                     "    filters { cells_per_column_limit_filter: 1 }"
                     "    filters { value_regex_filter: 'y' } } } }",
                     TestRow()),
              ElementsAre("f2:b@15=b15", "f1:a@25=x", "f1:a@5=y"));
}

TEST(RowFilterTest, ConditionChoosesABranch) {
  const std::string branches =
      "true_filter { family_name_regex_filter: 'f1' } "
      "false_filter { column_qualifier_regex_filter: 'b' }";
  EXPECT_THAT(
      Output("condition { predicate_filter { value_regex_filter: 'v20' } " +
                 branches + " }",
             TestRow()),
      ElementsAre("f1:a@25=x", "f1:a@5=y"));
  EXPECT_THAT(
      Output("condition { predicate_filter { value_regex_filter: 'v2' } " +
                 branches + " }",
             TestRow()),
      ElementsAre("f2:b@15=b15"));
  // A missing branch outputs nothing.
  EXPECT_THAT(
      Output("condition { predicate_filter { value_regex_filter: 'v20' } "
             "false_filter { pass_all_filter: true } }",
             TestRow()),
      IsEmpty());
  EXPECT_THAT(Output("condition { predicate_filter { block_all_filter: true } "
                     "true_filter { pass_all_filter: true } }",
                     TestRow()),
              IsEmpty());
  // A missing predicate passes everything: the true branch.
  EXPECT_THAT(Output("condition { " + branches + " }", TestRow()),
              ElementsAre("f1:a@25=x", "f1:a@5=y"));
}

TEST(RowFilterTest, ConditionWithChainPredicateSeesItsOwnInput) {
  // The predicate and the branches see the condition's input (the f2 cells),
  // not the row: no f2 cell is valued 'x', so the false branch runs on f2.
  const std::string condition =
      "condition {"
      "  predicate_filter { chain {"
      "    filters { column_qualifier_regex_filter: 'a' }"
      "    filters { value_regex_filter: '%s' } } }"
      "  true_filter { cells_per_row_limit_filter: 1 }"
      "  false_filter { strip_value_transformer: true } }";
  auto with = [&](const std::string& value) {
    std::string c = condition;
    c.replace(c.find("%s"), 2, value);
    return "chain { filters { family_name_regex_filter: 'f2' } filters { " + c +
           " } }";
  };
  EXPECT_THAT(Output(with("x"), TestRow()),
              ElementsAre("f2:a@30=", "f2:a@20=", "f2:a@10=", "f2:b@15="));
  EXPECT_THAT(Output(with("v10"), TestRow()), ElementsAre("f2:a@30=v30"));
}

TEST(RowFilterTest, SinkAsInDataProtoExample) {
  // Chain(FamilyRegex("A"), Interleave(All(), Chain(Label("foo"), Sink())),
  //       QualifierRegex("B"))
  EXPECT_THAT(
      Output("chain {"
             "  filters { family_name_regex_filter: 'A' }"
             "  filters { interleave {"
             "    filters { pass_all_filter: true }"
             "    filters { chain { filters { apply_label_transformer: 'foo' }"
             "                      filters { sink: true } } } } }"
             "  filters { column_qualifier_regex_filter: 'B' } }",
             ExampleRow()),
      ElementsAre("A:A@1=w[foo]", "A:B@2=x[foo]", "A:B@2=x"));
}

TEST(RowFilterTest, SinkBypassesItsParents) {
  // What reaches the sink is output even though the chain blocks it after.
  EXPECT_THAT(
      Output("chain { filters { family_name_regex_filter: 'A' } "
             "filters { sink: true } filters { block_all_filter: true } }",
             ExampleRow()),
      ElementsAre("A:A@1=w", "A:B@2=x"));
  EXPECT_EQ(Output("sink: true", ExampleRow()).size(), 3u);
  // Two sinks and the root's output merge in input order.
  EXPECT_THAT(
      Output(
          "interleave {"
          "  filters { chain { filters { value_regex_filter: 'z' }"
          "                    filters { apply_label_transformer: 'one' }"
          "                    filters { sink: true } } }"
          "  filters { chain { filters { value_regex_filter: 'w|z' }"
          "                    filters { apply_label_transformer: 'two' }"
          "                    filters { sink: true } } }"
          "  filters { chain { filters { strip_value_transformer: true }"
          "                    filters { cells_per_row_limit_filter: 4 } } } }",
          ExampleRow()),
      ElementsAre("A:A@1=w[two]", "A:A@1=", "A:B@2=", "B:B@4=z[one]",
                  "B:B@4=z[two]", "B:B@4="));
}

TEST(RowFilterTest, RowSampleIsAllOrNothingPerRow) {
  RowFilter f = MustCompile("row_sample_filter: 0.5");
  int kept = 0;
  const int kRows = 2000;
  for (int i = 0; i < kRows; i++) {
    size_t n = f.Apply(TestRow()).size();
    ASSERT_TRUE(n == 0 || n == 6) << n;
    kept += n == 6 ? 1 : 0;
  }
  // Binomial(2000, 0.5): mean 1000, standard deviation 22.
  EXPECT_GT(kept, 800);
  EXPECT_LT(kept, 1200);
  RowFilter rare = MustCompile("row_sample_filter: 1e-300");
  EXPECT_THAT(Describe(rare.Apply(TestRow())), IsEmpty());
}

TEST(RowFilterTest, ApplyConcurrently) {
  const RowFilter f = MustCompile(
      "interleave { filters { row_sample_filter: 0.999999 } "
      "filters { chain { filters { family_name_regex_filter: 'f1' } "
      "filters { apply_label_transformer: 'l' } } } }");
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; i++) {
        std::vector<FilteredCell> out = f.Apply(TestRow());
        if (out.size() != 8 && out.size() != 2) wrong[t]++;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

// ---- Compile errors. ----

TEST(RowFilterCompileTest, BadRegexSaysWhichAndWhy) {
  std::string e = CompileError("row_key_regex_filter: 'a(b'");
  EXPECT_NE(e.find("filter.row_key_regex_filter"), std::string::npos) << e;
  EXPECT_NE(e.find("a(b"), std::string::npos) << e;
  EXPECT_NE(e.find("missing )"), std::string::npos) << e;
  e = CompileError("family_name_regex_filter: '[f'");
  EXPECT_NE(e.find("family_name_regex_filter"), std::string::npos) << e;
  EXPECT_NE(e.find("missing ]"), std::string::npos) << e;
  e = CompileError(R"(column_qualifier_regex_filter: '\377*+')");
  EXPECT_NE(e.find("column_qualifier_regex_filter"), std::string::npos) << e;
  EXPECT_NE(e.find("\\xff*+"), std::string::npos) << e;
  e = CompileError(R"(value_regex_filter: '\\')");
  EXPECT_NE(e.find("value_regex_filter"), std::string::npos) << e;
  // A nested error names its path.
  e = CompileError(
      "chain { filters {} filters { interleave { filters { "
      "value_regex_filter: '(?P<x' } } } }");
  EXPECT_NE(
      e.find(
          "filter.chain.filters[1].interleave.filters[0].value_regex_filter"),
      std::string::npos)
      << e;
  e = CompileError(
      "condition { true_filter { row_key_regex_filter: 'x{2,1}' } }");
  EXPECT_NE(e.find("filter.condition.true_filter.row_key_regex_filter"),
            std::string::npos)
      << e;
}

TEST(RowFilterCompileTest, FamilyRegexWithColon) {
  std::string e = CompileError("family_name_regex_filter: 'f:'");
  EXPECT_NE(e.find("':'"), std::string::npos) << e;
  CompileError("family_name_regex_filter: '[^:]'");
}

TEST(RowFilterCompileTest, RowSampleOutsideZeroOne) {
  for (double p :
       {0.0, 1.0, -0.5, 1.5, std::numeric_limits<double>::quiet_NaN(),
        std::numeric_limits<double>::infinity()}) {
    v2::RowFilter f;
    f.set_row_sample_filter(p);
    std::string e = CompileError(f);
    EXPECT_NE(e.find("row_sample_filter"), std::string::npos) << p << " " << e;
  }
}

TEST(RowFilterCompileTest, NegativeLimitsAndOffsets) {
  for (const char* field :
       {"cells_per_row_offset_filter", "cells_per_row_limit_filter",
        "cells_per_column_limit_filter"}) {
    std::string e = CompileError(std::string(field) + ": -1");
    EXPECT_NE(e.find(field), std::string::npos) << e;
    EXPECT_NE(e.find("negative"), std::string::npos) << e;
  }
}

TEST(RowFilterCompileTest, NegativeTimestampBounds) {
  CompileError("timestamp_range_filter { start_timestamp_micros: -1000 }");
  CompileError("timestamp_range_filter { end_timestamp_micros: -1 }");
}

TEST(RowFilterCompileTest, ColumnRangeWithoutFamily) {
  std::string e =
      CompileError("column_range_filter { start_qualifier_closed: 'a' }");
  EXPECT_NE(e.find("family_name"), std::string::npos) << e;
}

TEST(RowFilterCompileTest, Labels) {
  for (const char* bad :
       {"''", "'Upper'", "'under_score'", "'sixteen-chars-xx'", "'sp ace'"}) {
    std::string e =
        CompileError(std::string("apply_label_transformer: ") + bad);
    EXPECT_NE(e.find("apply_label_transformer"), std::string::npos) << e;
  }
  MustCompile("apply_label_transformer: 'fifteen-chars-x'");
  MustCompile("apply_label_transformer: '0-9'");
  // A chain may hold one sub-filter that labels, however deep the label is.
  std::string e = CompileError(
      "chain { filters { apply_label_transformer: 'a' } "
      "filters { interleave { filters { apply_label_transformer: 'b' } "
      "filters {} } } }");
  EXPECT_NE(e.find("filter.chain"), std::string::npos) << e;
  EXPECT_NE(e.find("label"), std::string::npos) << e;
  CompileError(
      "chain { filters { apply_label_transformer: 'a' } filters { condition { "
      "predicate_filter {} false_filter { apply_label_transformer: 'b' } } } "
      "}");
  // An interleave may; and a label in a predicate never reaches the output.
  MustCompile(
      "interleave { filters { apply_label_transformer: 'a' } "
      "filters { apply_label_transformer: 'b' } }");
  MustCompile(
      "chain { filters { apply_label_transformer: 'a' } filters { condition { "
      "predicate_filter { apply_label_transformer: 'b' } "
      "true_filter {} } } }");
}

TEST(RowFilterCompileTest, SinkInsideACondition) {
  for (const char* where :
       {"predicate_filter", "true_filter", "false_filter"}) {
    std::string e = CompileError(std::string("condition { ") + where +
                                 " { chain { filters {} filters { sink: true } "
                                 "} } }");
    EXPECT_NE(e.find(std::string("filter.condition.") + where +
                     ".chain.filters[1].sink"),
              std::string::npos)
        << e;
  }
  // Also under a condition nested in an interleave.
  CompileError(
      "interleave { filters { sink: true } filters { condition { true_filter "
      "{ interleave { filters { sink: true } } } } } }");
}

TEST(RowFilterCompileTest, BooleansSetToFalse) {
  for (const char* field : {"sink", "pass_all_filter", "block_all_filter",
                            "strip_value_transformer"}) {
    std::string e = CompileError(std::string(field) + ": false");
    EXPECT_NE(e.find(field), std::string::npos) << e;
  }
}

TEST(RowFilterCompileTest, NestingDepthAndSize) {
  // 20 levels are fine, 21 are not.
  auto nested = [](int levels) {
    std::string text = "pass_all_filter: true";
    for (int i = 1; i < levels; i++) {
      text = "chain { filters { " + text + " } }";
    }
    return text;
  };
  EXPECT_TRUE(MustCompile(nested(20)).PassesAll());
  std::string e = CompileError(nested(21));
  EXPECT_NE(e.find("20"), std::string::npos) << e;

  v2::RowFilter big;
  big.set_value_regex_filter(std::string(20480, 'a'));
  e = CompileError(big);
  EXPECT_NE(e.find("20480"), std::string::npos) << e;
  v2::RowFilter fits;
  fits.set_value_regex_filter(std::string(20000, 'a'));
  EXPECT_TRUE(RowFilter::Compile(fits).ok());
}

}  // namespace
}  // namespace tabletfs::api
