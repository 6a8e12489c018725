// The text conventions of tabletctl: cbt's escapes and timestamps, the
// @suffix rule of `set`, columns=, base64, CSV and JSON.
#include "mount/cli/text.h"

#include <gtest/gtest.h>

#include <sstream>

#include "mount/cli/args.h"
#include "mount/cli/csv.h"
#include "mount/cli/json.h"

namespace tabletfs::cli {
namespace {

TEST(QuoteBytesTest, MatchesGoPercentQ) {
  EXPECT_EQ(QuoteBytes("CNN"), "\"CNN\"");
  EXPECT_EQ(QuoteBytes(""), "\"\"");
  EXPECT_EQ(QuoteBytes("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(QuoteBytes("\n\t\r\a\b\f\v"), "\"\\n\\t\\r\\a\\b\\f\\v\"");
  EXPECT_EQ(QuoteBytes(std::string("\x00\x01\x7f", 3)), "\"\\x00\\x01\\x7f\"");
  EXPECT_EQ(QuoteBytes("\xff\xfe"), "\"\\xff\\xfe\"");
  EXPECT_EQ(QuoteBytes("Kundenname \xc3\xa4"), "\"Kundenname \xc3\xa4\"");
  // An overlong form and a surrogate are not valid UTF-8: byte escapes.
  EXPECT_EQ(QuoteBytes("\xc0\xaf"), "\"\\xc0\\xaf\"");
  EXPECT_EQ(QuoteBytes("\xed\xa0\x80"), "\"\\xed\\xa0\\x80\"");
  // C1 control U+0085.
  EXPECT_EQ(QuoteBytes("\xc2\x85"), "\"\\u0085\"");
}

TEST(ShowKeyTest, PlainKeysStayPlain) {
  EXPECT_EQ(ShowKey("com.cnn.www"), "com.cnn.www");
  EXPECT_EQ(ShowKey("with space\\and \"quotes\""),
            "with space\\and \"quotes\"");
  EXPECT_EQ(ShowKey(""), "");
  EXPECT_EQ(ShowKey("\"starts with a quote"), "\"\\\"starts with a quote\"");
  EXPECT_EQ(ShowKey(std::string("a\0b", 3)), "\"a\\x00b\"");
  EXPECT_EQ(ShowKey("line\nbreak"), "\"line\\nbreak\"");
}

TEST(TimestampTest, CbtLayoutInUtc) {
  EXPECT_EQ(FormatCbtTimestamp(0), "1970/01/01-00:00:00.000000");
  EXPECT_EQ(FormatCbtTimestamp(6), "1970/01/01-00:00:00.000006");
  // 2026-11-21T10:00:00.123456Z
  EXPECT_EQ(FormatCbtTimestamp(1795255200123456), "2026/11/21-10:00:00.123456");
  EXPECT_EQ(FormatCbtTimestamp(-1), "1969/12/31-23:59:59.999999");
}

TEST(TimestampTest, ParseTime) {
  EXPECT_EQ(*ParseTime("15"), 15);
  EXPECT_EQ(*ParseTime("2026-11-21T10:00:00.123456Z"), 1795255200123456);
  EXPECT_TRUE(ParseTime("yesterday").status().IsInvalidArgument());
  EXPECT_TRUE(ParseTime("").status().IsInvalidArgument());
}

TEST(IntegerTest, ParseInt64) {
  EXPECT_EQ(ParseInt64("42"), 42);
  EXPECT_EQ(ParseInt64("-3"), -3);
  EXPECT_FALSE(ParseInt64("+3"));
  EXPECT_FALSE(ParseInt64("example.com"));
  EXPECT_FALSE(ParseInt64("12a"));
  EXPECT_FALSE(ParseInt64(""));
  EXPECT_FALSE(ParseInt64("99999999999999999999"));
  EXPECT_EQ(ParseUint64("7"), 7u);
  EXPECT_FALSE(ParseUint64("-7"));
}

TEST(SetArgTest, TrailingIntegerIsTimestamp) {
  auto cell = ParseSetArg("contents:=<html>@6");
  ASSERT_TRUE(cell.ok()) << cell.status().ToString();
  EXPECT_EQ(cell->family, "contents");
  EXPECT_EQ(cell->qualifier, "");
  EXPECT_EQ(cell->value, "<html>");
  EXPECT_EQ(cell->timestamp, 6);
}

TEST(SetArgTest, EmailIsAPlainValue) {
  auto cell = ParseSetArg("ContactInfo:EA=john@example.com");
  ASSERT_TRUE(cell.ok());
  EXPECT_EQ(cell->family, "ContactInfo");
  EXPECT_EQ(cell->qualifier, "EA");
  EXPECT_EQ(cell->value, "john@example.com");
  EXPECT_FALSE(cell->timestamp);
}

TEST(SetArgTest, OnlyTheLastAtCounts) {
  auto cell = ParseSetArg("f:q=a@b@12");
  ASSERT_TRUE(cell.ok());
  EXPECT_EQ(cell->value, "a@b");
  EXPECT_EQ(cell->timestamp, 12);
  cell = ParseSetArg("f:q=a@12@b");
  ASSERT_TRUE(cell.ok());
  EXPECT_EQ(cell->value, "a@12@b");
  EXPECT_FALSE(cell->timestamp);
  cell = ParseSetArg("f:q=@");
  ASSERT_TRUE(cell.ok());
  EXPECT_EQ(cell->value, "@");
}

TEST(SetArgTest, QualifierRunsToFirstEquals) {
  auto cell = ParseSetArg("f:a:b=c=d");
  ASSERT_TRUE(cell.ok());
  EXPECT_EQ(cell->family, "f");
  EXPECT_EQ(cell->qualifier, "a:b");
  EXPECT_EQ(cell->value, "c=d");
  cell = ParseSetArg("f:q=");
  ASSERT_TRUE(cell.ok());
  EXPECT_EQ(cell->value, "");
}

TEST(SetArgTest, Malformed) {
  EXPECT_TRUE(ParseSetArg("noequals").status().IsInvalidArgument());
  EXPECT_TRUE(ParseSetArg("f=v").status().IsInvalidArgument());
  EXPECT_TRUE(ParseSetArg(":q=v").status().IsInvalidArgument());
  EXPECT_TRUE(ParseSetArg("f:q").status().IsInvalidArgument());
}

TEST(OptionsTest, KeyValue) {
  std::vector<std::string> args = {"t", "count=3", "prefix=com."};
  auto options = ParseOptions(args, 1, {"count", "prefix"});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->at("count"), "3");
  EXPECT_EQ(options->at("prefix"), "com.");
  args = {"t", "limit=3"};
  auto bad = ParseOptions(args, 1, {"count"});
  EXPECT_TRUE(bad.status().IsInvalidArgument());
  EXPECT_NE(bad.status().message().find("unknown argument 'limit='"),
            std::string::npos);
  args = {"t", "oops"};
  EXPECT_TRUE(ParseOptions(args, 1, {"count"}).status().IsInvalidArgument());
}

TEST(CellsPerColumnTest, Positive) {
  EXPECT_EQ(*ParseCellsPerColumn("2"), 2u);
  EXPECT_FALSE(ParseCellsPerColumn("0").ok());
  EXPECT_FALSE(ParseCellsPerColumn("x").ok());
}

TEST(Base64Test, RoundTrip) {
  for (std::string s : {std::string(""), std::string("f"), std::string("fo"),
                        std::string("foo"), std::string("foob"),
                        std::string("\x00\xff\x80", 3)}) {
    auto decoded = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, s);
  }
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_FALSE(Base64Decode("Zm9").ok());
  EXPECT_FALSE(Base64Decode("Z!9v").ok());
  EXPECT_FALSE(Base64Decode("Z=9v").ok());
}

TEST(JsonTest, QuoteAndParseRoundTrip) {
  const std::string text = "a\"b\\c\n\x01\x7f \xc3\xa4";
  auto parsed = ParseJson(JsonQuote(text));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->string, text);
}

TEST(JsonTest, Objects) {
  auto v = ParseJson(
      R"( {"row":"r","timestamp":-5,"n":1.5,"a":[1,{"x":null}],"b":true} )");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->Find("row")->string, "r");
  EXPECT_TRUE(v->Find("timestamp")->is_integer);
  EXPECT_EQ(v->Find("timestamp")->integer, -5);
  EXPECT_FALSE(v->Find("n")->is_integer);
  EXPECT_EQ(v->Find("a")->array.size(), 2u);
  EXPECT_EQ(v->Find("missing"), nullptr);
  auto u = ParseJson(R"("\u00e4\ud83d\ude00")");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->string, "\xc3\xa4\xf0\x9f\x98\x80");
}

TEST(JsonTest, Errors) {
  EXPECT_FALSE(ParseJson("{").ok());
  EXPECT_FALSE(ParseJson("{\"a\":1,}").ok());
  EXPECT_FALSE(ParseJson("\"\\ud800\"").ok());
  EXPECT_FALSE(ParseJson("\"\xff\"").ok());
  EXPECT_FALSE(ParseJson("1 2").ok());
  EXPECT_FALSE(ParseJson(std::string(100, '[') + std::string(100, ']')).ok());
}

std::vector<std::vector<CsvField>> ReadAll(const std::string& text,
                                           Status* status) {
  std::istringstream in(text);
  CsvReader reader(in);
  std::vector<std::vector<CsvField>> records;
  std::vector<CsvField> record;
  while (reader.Next(&record)) records.push_back(record);
  *status = reader.status();
  return records;
}

TEST(CsvTest, QuotedFieldsAndEmptyLines) {
  Status s;
  auto records = ReadAll(
      ",fam,\r\n\nkey,\"a,b\",\"\"\nk2,\"multi\nline \"\"q\"\"\",x", &s);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(records.size(), 3u);
  ASSERT_EQ(records[0].size(), 3u);
  EXPECT_EQ(records[0][0].text, "");
  EXPECT_FALSE(records[0][0].quoted);
  EXPECT_EQ(records[1][1].text, "a,b");
  EXPECT_EQ(records[1][2].text, "");
  EXPECT_TRUE(records[1][2].quoted);
  EXPECT_EQ(records[2][1].text, "multi\nline \"q\"");
  EXPECT_EQ(records[2][2].text, "x");
}

TEST(CsvTest, Errors) {
  Status s;
  ReadAll("a,\"open", &s);
  EXPECT_TRUE(s.IsInvalidArgument());
  ReadAll("a,\"x\"y\n", &s);
  EXPECT_TRUE(s.IsInvalidArgument());
}

TEST(CsvTest, WriteThenRead) {
  const std::vector<std::string> fields = {"plain",
                                           "",
                                           "a,b",
                                           "q\"q",
                                           "line\nbreak",
                                           " pad ",
                                           std::string("\x00\xff", 2)};
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line.push_back(',');
    AppendCsvField(&line, fields[i], /*force_quotes=*/fields[i].empty());
  }
  Status s;
  auto records = ReadAll(line + "\n", &s);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(records.size(), 1u);
  ASSERT_EQ(records[0].size(), fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    EXPECT_EQ(records[0][i].text, fields[i]) << i;
  }
  EXPECT_TRUE(records[0][1].quoted);
}

}  // namespace
}  // namespace tabletfs::cli
