// Every tabletctl command through the mount/cli functions, on a real
// database in a temporary directory.
#include "mount/cli/commands.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "store/db.h"
#include "store/env/mem_env.h"

namespace tabletfs::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

class CommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tabletctl_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    Reopen();
  }
  void TearDown() override {
    db_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    db_.reset();
    auto db = DB::Open(Options(), dir_ + "/data");
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
  }

  Outcome Run(std::vector<std::string> args) {
    std::ostringstream out, err;
    const int code = RunCommand(*db_, args, out, err);
    return {code, out.str(), err.str()};
  }
  // Runs a command that must succeed; returns its output.
  std::string Ok(std::vector<std::string> args) {
    Outcome o = Run(args);
    EXPECT_EQ(o.code, kExitOk) << args[0] << ": " << o.err;
    EXPECT_EQ(o.err, "") << args[0];
    return o.out;
  }

  void MakeWebtable() {
    Ok({"createtable", "webtable", "families=contents:maxversions=3,anchor"});
    Ok({"set", "webtable", "com.cnn.www", "contents:=<html>a@3",
        "contents:=<html>b@5", "contents:=<html>c@6", "anchor:cnnsi.com=CNN@9",
        "anchor:my.look.ca=CNN.com@8"});
    Ok({"set", "webtable", "com.example.www", "contents:=<html>ex@4"});
    Ok({"set", "webtable", "org.wikipedia.en", "contents:=<html>wp@7",
        "anchor:com.cnn.www=Wikipedia@7"});
  }

  std::string TempFile(const std::string& name) { return dir_ + "/" + name; }

  std::string dir_;
  std::unique_ptr<DB> db_;
};

TEST_F(CommandsTest, CreateListDeleteTables) {
  EXPECT_EQ(Ok({"ls"}), "");
  Ok({"createtable", "b"});
  Ok({"createtable", "a", "families=f1,f2:maxversions=2"});
  EXPECT_EQ(Ok({"ls"}), "a\nb\n");
  // cbt's layout (Go's tabwriter with tabs), checked against cbt and its
  // emulator: families by name, Bigtable's policy text, a Value Type.
  EXPECT_EQ(Ok({"ls", "a"}),
            "Family Name\tGC Policy\t\tValue Type\n"
            "-----------\t---------\t\t----------\n"
            "f1\t\t\t\t\t{}\n"
            "f2\t\tversions() > 2\t\t{}\n");
  Outcome again = Run({"createtable", "a"});
  EXPECT_EQ(again.code, kExitFailure);
  EXPECT_THAT(again.err, StartsWith("tabletctl createtable: AlreadyExists"));
  Ok({"deletetable", "b"});
  EXPECT_EQ(Ok({"ls"}), "a\n");
  EXPECT_EQ(Run({"deletetable", "b"}).code, kExitFailure);
  EXPECT_EQ(Run({"ls", "nope"}).code, kExitFailure);
}

TEST_F(CommandsTest, FamiliesAndGcPolicy) {
  Ok({"createtable", "t"});
  Ok({"createfamily", "t", "a"});
  Ok({"createfamily", "t", "b:maxversions=1"});
  Ok({"createfamily", "t", "c", "maxage=7d", "or", "maxversions=2"});
  Ok({"setgcpolicy", "t", "a", "maxage=1h", "and", "maxversions=5"});
  EXPECT_EQ(Ok({"ls", "t"}),
            "Family Name\tGC Policy\t\t\t\tValue Type\n"
            "-----------\t---------\t\t\t\t----------\n"
            "a\t\t(age() > 1h && versions() > 5)\t\t{}\n"
            "b\t\tversions() > 1\t\t\t\t{}\n"
            "c\t\t(age() > 7d || versions() > 2)\t\t{}\n");
  // cbt's operators and its 'force'.
  Ok({"setgcpolicy", "t", "b", "maxage=90m||maxversions=3", "force"});
  EXPECT_THAT(Ok({"ls", "t"}),
              HasSubstr("\nb\t\t(age() > 90m || versions() > 3)\t\t{}\n"));
  Ok({"setgcpolicy", "t", "a", "never"});
  EXPECT_THAT(Ok({"ls", "t"}), HasSubstr("\na\t\t\t\t\t\t\t{}\n"));
  Ok({"deletefamily", "t", "b"});
  EXPECT_THAT(Ok({"ls", "t"}), Not(HasSubstr("\nb\t")));

  Outcome bad = Run({"setgcpolicy", "t", "a", "maxversions=x"});
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_THAT(bad.err, StartsWith("tabletctl setgcpolicy: "));
  EXPECT_EQ(Run({"setgcpolicy", "t", "zz", "never"}).code, kExitFailure);
  EXPECT_EQ(Run({"createfamily", "t", "bad name"}).code, kExitFailure);
  EXPECT_EQ(Run({"deletefamily", "t"}).code, kExitUsage);
}

TEST_F(CommandsTest, LookupPrintsCbtLayout) {
  // Families sorted by name (anchor was created after contents), an empty
  // line after the row: byte for byte what cbt prints against its emulator.
  MakeWebtable();
  EXPECT_EQ(Ok({"lookup", "webtable", "com.cnn.www"}),
            "----------------------------------------\n"
            "com.cnn.www\n"
            "  anchor:cnnsi.com                         @ "
            "1970/01/01-00:00:00.000009\n"
            "    \"CNN\"\n"
            "  anchor:my.look.ca                        @ "
            "1970/01/01-00:00:00.000008\n"
            "    \"CNN.com\"\n"
            "  contents:                                @ "
            "1970/01/01-00:00:00.000006\n"
            "    \"<html>c\"\n"
            "  contents:                                @ "
            "1970/01/01-00:00:00.000005\n"
            "    \"<html>b\"\n"
            "  contents:                                @ "
            "1970/01/01-00:00:00.000003\n"
            "    \"<html>a\"\n"
            "\n");
  // read sorts each row's families the same way.
  const std::string read = Ok({"read", "webtable", "prefix=org."});
  EXPECT_LT(read.find("anchor:com.cnn.www"), read.find("contents:"));
  EXPECT_THAT(read, testing::EndsWith("\"<html>wp\"\n\n"));
}

TEST_F(CommandsTest, DeleteColumnTakesCbtArguments) {
  MakeWebtable();
  // cbt's form: FAMILY and COLUMN as two arguments; every version goes.
  Ok({"deletecolumn", "webtable", "com.cnn.www", "contents", ""});
  std::string out = Ok({"lookup", "webtable", "com.cnn.www"});
  EXPECT_THAT(out, Not(HasSubstr("contents:")));
  EXPECT_THAT(out, HasSubstr("anchor:cnnsi.com"));
  // FAMILY:COLUMN as one argument.
  Ok({"deletecolumn", "webtable", "com.cnn.www", "anchor:cnnsi.com"});
  out = Ok({"lookup", "webtable", "com.cnn.www"});
  EXPECT_THAT(out, Not(HasSubstr("cnnsi.com")));
  EXPECT_THAT(out, HasSubstr("anchor:my.look.ca"));
  // A missing row or cell is fine (as in cbt); unknown table or family not.
  Ok({"deletecolumn", "webtable", "no.such.row", "anchor", "x"});
  EXPECT_EQ(Run({"deletecolumn", "webtable", "com.cnn.www", "nofam", "x"}).code,
            kExitFailure);
  EXPECT_EQ(Run({"deletecolumn", "nope", "r", "anchor", "x"}).code,
            kExitFailure);
  EXPECT_EQ(Run({"deletecolumn", "webtable", "r", "anchor"}).code, kExitUsage);
  EXPECT_EQ(Run({"deletecolumn", "webtable", "r", "a", "b", "c"}).code,
            kExitUsage);
  EXPECT_EQ(Ok({"count", "webtable"}), "3\n");
  EXPECT_EQ(Ok({"count", "webtable", "prefix=com."}), "2\n");
}

TEST_F(CommandsTest, LookupOptions) {
  MakeWebtable();
  // at=5: versions at or before 5 only.
  std::string out = Ok({"lookup", "webtable", "com.cnn.www", "at=5",
                        "columns=contents:", "cells-per-column=1"});
  EXPECT_THAT(out, HasSubstr("\"<html>b\""));
  EXPECT_THAT(out, Not(HasSubstr("<html>a")));
  EXPECT_THAT(out, Not(HasSubstr("anchor")));
  out = Ok({"lookup", "webtable", "com.cnn.www", "columns=anchor:cnnsi.com"});
  EXPECT_THAT(out, HasSubstr("\"CNN\""));
  EXPECT_THAT(out, Not(HasSubstr("CNN.com")));
  EXPECT_THAT(out, Not(HasSubstr("contents")));
  // A bare qualifier matches it in any family.
  out = Ok({"lookup", "webtable", "com.cnn.www", "columns=my.look.ca"});
  EXPECT_THAT(out, HasSubstr("CNN.com"));
  EXPECT_THAT(out, Not(HasSubstr("contents")));
  // ISO-8601 times work too.
  out = Ok(
      {"lookup", "webtable", "com.cnn.www", "at=1970-01-01T00:00:00.000004Z"});
  EXPECT_THAT(out, HasSubstr("<html>a"));
  EXPECT_THAT(out, Not(HasSubstr("<html>b")));

  Outcome missing = Run({"lookup", "webtable", "com.nope"});
  EXPECT_EQ(missing.code, kExitFailure);
  EXPECT_EQ(missing.out, "");
  EXPECT_THAT(missing.err, HasSubstr("no row com.nope"));
  EXPECT_EQ(Run({"lookup", "webtable", "r", "at=yesterday"}).code, kExitUsage);
  EXPECT_EQ(Run({"lookup", "webtable", "r", "cells-per-column=0"}).code,
            kExitUsage);
  EXPECT_EQ(Run({"lookup", "webtable"}).code, kExitUsage);
  EXPECT_EQ(Run({"lookup", "nope", "r"}).code, kExitFailure);
}

TEST_F(CommandsTest, ReadRangesAndCount) {
  MakeWebtable();
  std::string out = Ok({"read", "webtable", "cells-per-column=1"});
  // Per row: dashes, key, two lines per cell, an empty line.
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'),
            3 * 3 + 2 * 2 + 4 + 2 * 2);
  EXPECT_LT(out.find("com.cnn.www"), out.find("com.example.www"));
  EXPECT_LT(out.find("com.example.www"), out.find("org.wikipedia.en"));
  out = Ok({"read", "webtable", "prefix=com."});
  EXPECT_THAT(out, Not(HasSubstr("org.wikipedia.en")));
  out = Ok({"read", "webtable", "start=com.example.www", "end=org"});
  EXPECT_THAT(out, HasSubstr("com.example.www"));
  EXPECT_THAT(out, Not(HasSubstr("com.cnn.www")));
  EXPECT_THAT(out, Not(HasSubstr("org.wikipedia.en")));
  out = Ok({"read", "webtable", "count=2"});
  EXPECT_THAT(out, HasSubstr("com.example.www"));
  EXPECT_THAT(out, Not(HasSubstr("org.wikipedia.en")));
  EXPECT_EQ(Ok({"read", "webtable", "count=0"}), "");
  EXPECT_EQ(Ok({"count", "webtable"}), "3\n");

  Outcome bad = Run({"read", "webtable", "limit=3"});
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_THAT(bad.err, HasSubstr("unknown argument 'limit='"));
  EXPECT_THAT(bad.err, HasSubstr("usage: tabletctl read TABLE"));
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1);
  EXPECT_EQ(Run({"read", "webtable", "count=-1"}).code, kExitUsage);
  EXPECT_EQ(Run({"count"}).code, kExitUsage);
  EXPECT_EQ(Run({"count", "nope"}).code, kExitFailure);
}

TEST_F(CommandsTest, SetAtSuffixRule) {
  Ok({"createtable", "customer", "families=Kundenname,ContactInfo"});
  Ok({"set", "customer", "00001", "ContactInfo:EA=john@example.com",
      "Kundenname:MN=T@10"});
  const std::string out = Ok({"lookup", "customer", "00001"});
  EXPECT_THAT(out, HasSubstr("\"john@example.com\""));
  EXPECT_THAT(out, HasSubstr("Kundenname:MN                            @ "
                             "1970/01/01-00:00:00.000010\n    \"T\"\n"));
}

TEST_F(CommandsTest, SetErrors) {
  Ok({"createtable", "t", "families=f"});
  Outcome o = Run({"set", "t", "r", "novalue"});
  EXPECT_EQ(o.code, kExitUsage);
  EXPECT_THAT(o.err, HasSubstr("expected FAMILY:QUALIFIER=VALUE[@TS]"));
  o = Run({"set", "t", "r", "nofamily:q=v"});
  EXPECT_EQ(o.code, kExitFailure);
  EXPECT_THAT(o.err, StartsWith("tabletctl set: "));
  EXPECT_EQ(Run({"set", "t", "r"}).code, kExitUsage);
  EXPECT_EQ(Run({"set", "nope", "r", "f:q=v"}).code, kExitFailure);
  // Nothing of a refused mutation is applied.
  EXPECT_EQ(Run({"set", "t", "r", "f:q=v", "nofamily:q=v"}).code, kExitFailure);
  EXPECT_EQ(Ok({"count", "t"}), "0\n");
}

TEST_F(CommandsTest, BinaryAndEmptyQualifierShownEscaped) {
  Ok({"createtable", "t", "families=f"});
  Ok({"set", "t", std::string("k\x01\xff", 3), "f:=line1\nline2\t\x02@1"});
  EXPECT_EQ(Ok({"read", "t"}),
            "----------------------------------------\n"
            "\"k\\x01\\xff\"\n"
            "  f:                                       @ "
            "1970/01/01-00:00:00.000001\n"
            "    \"line1\\nline2\\t\\x02\"\n"
            "\n");
}

TEST_F(CommandsTest, DeleteRowAndAllRows) {
  MakeWebtable();
  Ok({"deleterow", "webtable", "com.cnn.www"});
  EXPECT_EQ(Ok({"count", "webtable"}), "2\n");
  EXPECT_EQ(Run({"lookup", "webtable", "com.cnn.www"}).code, kExitFailure);
  Ok({"deleteallrows", "webtable"});
  EXPECT_EQ(Ok({"count", "webtable"}), "0\n");
  // The schema stays.
  EXPECT_THAT(Ok({"ls", "webtable"}), HasSubstr("contents"));
  EXPECT_EQ(Run({"deleterow", "webtable"}).code, kExitUsage);
  EXPECT_EQ(Run({"deleteallrows", "nope"}).code, kExitFailure);
}

TEST_F(CommandsTest, JsonlRoundTripIsLossless) {
  MakeWebtable();
  const std::string binary_row("bin\x00\xff", 5);
  Ok({"set", "webtable", binary_row,
      std::string("anchor:q\xfe=v\x80\x00@42", 16), "contents:=@43"});
  const std::string file = TempFile("web.jsonl");
  EXPECT_EQ(Ok({"export", "webtable", file}),
            "exported 4 rows (10 cells) to " + file + "\n");
  std::ifstream in(file);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first,
            "{\"table\":\"webtable\",\"families\":[{\"name\":\"contents\","
            "\"gcpolicy\":\"maxversions=3\"},{\"name\":\"anchor\","
            "\"gcpolicy\":\"never\"}]}");
  std::string second;
  std::getline(in, second);
  EXPECT_EQ(second,
            "{\"row_base64\":\"YmluAP8=\",\"family\":\"contents\","
            "\"qualifier\":\"\",\"timestamp\":43,\"value\":\"\"}");

  Outcome imported = Run({"import", "copy", file});
  EXPECT_EQ(imported.code, kExitOk) << imported.err;
  EXPECT_EQ(imported.out, "imported 4 rows (10 cells) into copy\n");
  EXPECT_THAT(Ok({"ls", "copy"}), HasSubstr("\ncontents\tversions() > 3\t"));
  // Same versions, timestamps and bytes.
  const auto versions = [](const std::string& jsonl) {
    return jsonl.substr(jsonl.find('\n') + 1);
  };
  EXPECT_EQ(versions(Ok({"export", "copy", "format=jsonl"})),
            versions(Ok({"export", "webtable", "format=jsonl"})));
  EXPECT_EQ(Ok({"read", "copy"}), Ok({"read", "webtable"}));
}

TEST_F(CommandsTest, CsvRoundTripNewestValues) {
  MakeWebtable();
  Ok({"set", "webtable", "com.empty", "anchor:=", "contents:=x,\"y\"\nz@1"});
  const std::string csv = Ok({"export", "webtable"});
  EXPECT_EQ(csv,
            ",contents,anchor,,,\n"
            ",,,cnnsi.com,com.cnn.www,my.look.ca\n"
            "com.cnn.www,<html>c,,CNN,,CNN.com\n"
            "com.empty,\"x,\"\"y\"\"\nz\",\"\",,,\n"
            "com.example.www,<html>ex,,,,\n"
            "org.wikipedia.en,<html>wp,,,Wikipedia,\n");
  const std::string file = TempFile("web.csv");
  {
    std::ofstream f(file);
    f << csv;
  }
  Outcome imported = Run({"import", "copy", file});
  ASSERT_EQ(imported.code, kExitOk) << imported.err;
  EXPECT_EQ(imported.out, "imported 4 rows (8 cells) into copy\n");
  EXPECT_EQ(Ok({"export", "copy", "format=csv"}), csv);
  // The empty qualifier and the empty value survived.
  EXPECT_THAT(Ok({"lookup", "copy", "com.empty"}),
              HasSubstr("  anchor:                                  @ "));
}

TEST_F(CommandsTest, CsvImportCbtLayout) {
  // The example of `cbt import --help`.
  const std::string file = TempFile("cbt.csv");
  {
    std::ofstream f(file);
    f << ",column-family-1,,column-family-2,\n"
         ",column-qualifier-1,column-qualifier-2,column-qualifier-3,"
         "column-qualifier-4\n"
         "a,TRUE,,,FALSE\n"
         "b,,,TRUE,FALSE\n";
  }
  Outcome o = Run({"import", "t", file, "format=csv"});
  ASSERT_EQ(o.code, kExitOk) << o.err;
  EXPECT_THAT(o.err, HasSubstr("created table 't'"));
  EXPECT_EQ(o.out, "imported 2 rows (4 cells) into t\n");
  std::string out = Ok({"lookup", "t", "a"});
  EXPECT_THAT(out, HasSubstr("column-family-1:column-qualifier-1"));
  EXPECT_THAT(out, HasSubstr("column-family-2:column-qualifier-4"));
  out = Ok({"lookup", "t", "b"});
  EXPECT_THAT(out, HasSubstr("column-family-2:column-qualifier-3"));

  // column-family=: only the qualifier header.
  const std::string single = TempFile("single.csv");
  {
    std::ofstream f(single);
    f << ",FN,LN\n00001,John,Smith\n";
  }
  o = Run({"import", "customer", single, "column-family=Kundenname"});
  ASSERT_EQ(o.code, kExitOk) << o.err;
  EXPECT_THAT(Ok({"lookup", "customer", "00001"}), HasSubstr("Kundenname:LN"));
}

TEST_F(CommandsTest, ImportErrors) {
  Outcome o = Run({"import", "t", TempFile("missing.csv")});
  EXPECT_EQ(o.code, kExitFailure);
  EXPECT_THAT(o.err, HasSubstr("cannot open"));
  EXPECT_EQ(Run({"import", "t"}).code, kExitUsage);
  EXPECT_EQ(Run({"import", "t", "x", "format=xml"}).code, kExitUsage);
  EXPECT_EQ(Run({"import", "bad/name", "x"}).code, kExitUsage);

  const std::string csv = TempFile("bad.csv");
  {
    std::ofstream f(csv);
    f << ",f\n,q\nr1,v\nr2,v,extra\n";
  }
  o = Run({"import", "t", csv});
  EXPECT_EQ(o.code, kExitFailure);
  EXPECT_THAT(o.err, HasSubstr(csv + ":4: 3 fields"));

  const std::string jsonl = TempFile("bad.jsonl");
  {
    std::ofstream f(jsonl);
    f << "{\"row\":\"r\",\"family\":\"f\",\"value\":\"v\"}\n"
         "{\"row\":\"r\",\"family\":\"f\",\"timestamp\":\"x\"}\n";
  }
  o = Run({"import", "t", jsonl});
  EXPECT_EQ(o.code, kExitFailure);
  EXPECT_THAT(o.err, HasSubstr(jsonl + ":2: "));
  EXPECT_THAT(o.err, HasSubstr("timestamp"));
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1);
}

// A failed import changes nothing: the whole file is checked before the
// table or any family is created (issue 14, item 10).
TEST_F(CommandsTest, FailedImportCreatesNothing) {
  const std::string garbage = TempFile("garbage.jsonl");
  {
    std::ofstream f(garbage);
    f << "this is not JSON\n";
  }
  Outcome o = Run({"import", "NEW", garbage});
  EXPECT_EQ(o.code, kExitFailure);
  EXPECT_THAT(o.err, HasSubstr(garbage + ":1: "));
  EXPECT_THAT(o.err, HasSubstr("nothing imported"));
  EXPECT_THAT(o.err, Not(HasSubstr("created table")));
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1);
  EXPECT_EQ(Ok({"ls"}), "");

  // Good lines before a bad one are not written either, and neither the
  // declared nor the used families are created in an existing table.
  Ok({"createtable", "old", "families=f"});
  const std::string old_families = Ok({"ls", "old"});
  ASSERT_THAT(old_families, HasSubstr("\nf\t"));
  const std::string late = TempFile("late.jsonl");
  {
    std::ofstream f(late);
    f << "{\"table\":\"x\",\"families\":[{\"name\":\"g\",\"gcpolicy\":"
         "\"maxversions=1\"}]}\n"
         "{\"row\":\"r1\",\"family\":\"f\",\"value\":\"v\"}\n"
         "{\"row\":\"r2\",\"family\":\"h\",\"value\":\"v\"}\n"
         "{\"row\":\"r3\",\"family\":\"bad family\",\"value\":\"v\"}\n";
  }
  o = Run({"import", "old", late});
  EXPECT_EQ(o.code, kExitFailure);
  EXPECT_THAT(o.err, HasSubstr(late + ":4: "));
  EXPECT_EQ(Ok({"count", "old"}), "0\n");
  // `ls TABLE` prints a tab after each family name: no g, no h.
  EXPECT_EQ(Ok({"ls", "old"}), old_families);

  // CSV: a bad last line, an empty row key.
  const std::string csv = TempFile("late.csv");
  {
    std::ofstream f(csv);
    f << ",f\n,q\nr1,v\n,v\n";
  }
  o = Run({"import", "NEW", csv});
  EXPECT_EQ(o.code, kExitFailure);
  EXPECT_THAT(o.err, HasSubstr(csv + ":4: empty row key"));
  EXPECT_EQ(Ok({"ls"}), "old\n");

  // A row key the store refuses (longer than 64 KiB).
  const std::string long_key = TempFile("long.jsonl");
  {
    std::ofstream f(long_key);
    f << "{\"row\":\"" << std::string(kMaxRowKeyBytes + 1, 'k')
      << "\",\"family\":\"f\",\"value\":\"v\"}\n";
  }
  EXPECT_EQ(Run({"import", "NEW", long_key}).code, kExitFailure);
  EXPECT_EQ(Ok({"ls"}), "old\n");

  // Garbage on standard input (`import NEW -`, spooled before the check),
  // read as CSV (the default) and as JSON lines.
  for (const char* format : {"format=csv", "format=jsonl"}) {
    SCOPED_TRACE(format);
    std::istringstream garbage_in("this is not JSON either\n");
    std::streambuf* const saved_cin = std::cin.rdbuf(garbage_in.rdbuf());
    o = Run({"import", "NEW", "-", format});
    std::cin.rdbuf(saved_cin);
    EXPECT_EQ(o.code, kExitFailure);
    EXPECT_THAT(o.err, HasSubstr("<stdin>"));
    EXPECT_THAT(o.err, HasSubstr("nothing imported"));
    EXPECT_THAT(o.err, Not(HasSubstr("created table")));
    EXPECT_EQ(Ok({"ls"}), "old\n");
  }
}

// When the store refuses a write the check could not foresee, the import
// removes the table and families it created.
TEST_F(CommandsTest, ImportFailingInTheStoreRemovesWhatItCreated) {
  db_.reset();
  Options small;
  small.max_value_bytes = 8;  // the check allows Options()'s 64 MiB
  auto db = DB::Open(small, dir_ + "/data");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  db_ = std::move(*db);
  const std::string file = TempFile("big.jsonl");
  {
    std::ofstream f(file);
    f << "{\"row\":\"r1\",\"family\":\"f\",\"value\":\"small\"}\n"
         "{\"row\":\"r2\",\"family\":\"f\",\"value\":\"larger than 8\"}\n";
  }
  Outcome o = Run({"import", "NEW", file});
  EXPECT_EQ(o.code, kExitFailure);
  EXPECT_THAT(o.err, HasSubstr("removed the table it created"));
  EXPECT_EQ(Ok({"ls"}), "");

  Ok({"createtable", "old", "families=f"});
  const std::string old_families = Ok({"ls", "old"});
  {
    std::ofstream f(file);
    f << "{\"row\":\"r1\",\"family\":\"g\",\"value\":\"small\"}\n"
         "{\"row\":\"r2\",\"family\":\"g\",\"value\":\"larger than 8\"}\n";
  }
  o = Run({"import", "old", file});
  EXPECT_EQ(o.code, kExitFailure);
  EXPECT_THAT(o.err, HasSubstr("removed family 'g'"));
  EXPECT_EQ(Ok({"ls", "old"}), old_families);
  EXPECT_EQ(Ok({"count", "old"}), "0\n");
}

TEST_F(CommandsTest, ExportErrorsAndAt) {
  MakeWebtable();
  EXPECT_EQ(Run({"export", "nope"}).code, kExitFailure);
  EXPECT_EQ(Run({"export", "webtable", "format=xml"}).code, kExitUsage);
  EXPECT_EQ(Run({"export"}).code, kExitUsage);
  Outcome o = Run({"export", "webtable", dir_ + "/no/such/dir/x.csv"});
  EXPECT_EQ(o.code, kExitFailure);
  EXPECT_THAT(o.err, HasSubstr("cannot create"));
  const std::string at5 = Ok({"export", "webtable", "at=5", "format=jsonl"});
  EXPECT_THAT(at5, HasSubstr("\"timestamp\":5"));
  EXPECT_THAT(at5, Not(HasSubstr("\"timestamp\":6")));
}

TEST_F(CommandsTest, MaintenanceCommands) {
  MakeWebtable();
  EXPECT_THAT(Ok({"compact"}), StartsWith("compacted: "));
  EXPECT_THAT(Ok({"check"}), StartsWith("ok: "));
  EXPECT_THAT(Ok({"stats"}), HasSubstr("memtable_bytes "));
  EXPECT_EQ(Run({"stats", "x"}).code, kExitUsage);
  EXPECT_EQ(Run({"compact", "x"}).code, kExitUsage);
  EXPECT_EQ(Run({"check", "x"}).code, kExitUsage);
  // Data survives compaction and reopening.
  Reopen();
  EXPECT_EQ(Ok({"count", "webtable"}), "3\n");
}

TEST_F(CommandsTest, TabletsOfEveryTableOrOne) {
  Ok({"createtable", "b", "families=f"});
  Ok({"createtable", "a"});
  EXPECT_EQ(Ok({"tablets"}), "a\t-\t-\t0\t0\nb\t-\t-\t0\t0\n");
  EXPECT_EQ(Ok({"tablets", "a"}), "a\t-\t-\t0\t0\n");
  Ok({"set", "b", "r", "f:q=" + std::string(500, 'v')});
  const std::string b = Ok({"tablets", "b"});
  EXPECT_THAT(b, StartsWith("b\t-\t-\t"));
  EXPECT_GE(std::stoull(b.substr(6)), 500u) << b;  // BYTES counts the memtable

  Outcome o = Run({"tablets", "nope"});
  EXPECT_EQ(o.code, kExitFailure);
  EXPECT_THAT(o.err, StartsWith("tabletctl tablets: "));
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(Run({"tablets", "a", "b"}).code, kExitUsage);
  o = Run({"tablets", "--help"});
  EXPECT_EQ(o.code, kExitOk);
  EXPECT_THAT(o.out, HasSubstr("TABLE START END BYTES FILES [SAMPLE...]"));
}

TEST_F(CommandsTest, TabletsAfterSplits) {
  // In memory: the many small splits and merges of a tiny threshold cost
  // seconds of fsyncs on a disk.
  std::unique_ptr<Env> env = NewMemEnv();
  Options options;
  options.env = env.get();
  options.tablet_split_bytes = 4096;
  auto opened = DB::Open(options, "/split");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  DB& db = **opened;
  ASSERT_TRUE(db.CreateTable("t").ok());
  ASSERT_TRUE(db.CreateFamily("t", "f", FamilySettings()).ok());
  uint64_t x = 2463534242;
  for (int i = 0; i < 300; ++i) {
    std::string value;
    for (int j = 0; j < 100; ++j) {
      x ^= x << 13, x ^= x >> 17, x ^= x << 5;
      value += static_cast<char>('a' + x % 26);
    }
    char row[16];
    snprintf(row, sizeof(row), "row %03d", i);
    RowMutation m(row);
    m.SetCell("f", "q", value);
    ASSERT_TRUE(db.Apply("t", m, WriteOptions()).ok());
  }
  ASSERT_TRUE(db.Flush().ok());
  ASSERT_TRUE(db.WaitForIdle().ok());
  std::ostringstream out, err;
  ASSERT_EQ(RunCommand(db, {"tablets", "t"}, out, err), kExitOk) << err.str();
  // One line per tablet; the ranges chain from '-' to '-' through rows
  // named as the mount names them ("row 042": spaces are kept).
  std::istringstream lines(out.str());
  std::string line, expected_start = "-";
  int n = 0;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string table, start, end;
    ASSERT_TRUE(std::getline(fields, table, '\t'));
    ASSERT_TRUE(std::getline(fields, start, '\t'));
    ASSERT_TRUE(std::getline(fields, end, '\t'));
    EXPECT_EQ(table, "t");
    EXPECT_EQ(start, expected_start) << out.str();
    if (end != "-") {
      EXPECT_THAT(end, StartsWith("row "));
      EXPECT_EQ(end.size(), 7u) << end;
    }
    expected_start = end;
    ++n;
  }
  EXPECT_EQ(expected_start, "-") << out.str();
  EXPECT_GT(n, 1) << out.str();
  EXPECT_EQ(static_cast<size_t>(n), db.ListTablets("t")->size());
}

TEST_F(CommandsTest, DumpTableAndLog) {
  Ok({"createtable", "t", "families=f"});
  Ok({"set", "t", "r1", "f:q=v@5"});
  ASSERT_TRUE(db_->Flush().ok());
  Ok({"set", "t", "r2", "f:q=w@6"});
  std::string sst, log;
  for (const auto& e : std::filesystem::directory_iterator(dir_ + "/data")) {
    const std::string p = e.path().string();
    if (p.size() > 4 && p.substr(p.size() - 4) == ".sst") sst = p;
    if (p.size() > 4 && p.substr(p.size() - 4) == ".log")
      log = std::max(log, p);
  }
  ASSERT_FALSE(sst.empty());
  EXPECT_THAT(Ok({"dump", sst}), HasSubstr(" qualifier=q ts=5 seq="));
  EXPECT_THAT(Ok({"dump", sst}), HasSubstr(" put \"v\"\n1 entry shown of "));
  ASSERT_FALSE(log.empty());
  // The live log (the newest), written through a mapping: its records, then
  // the space allocated ahead.
  const std::string dumped = Ok({"dump", log});
  EXPECT_THAT(dumped, HasSubstr("record 1 at offset 0: "));
  EXPECT_THAT(dumped, HasSubstr(" shown of " + log + "; zeros after offset "));
  EXPECT_THAT(dumped, HasSubstr("(space allocated ahead, or lost pages)"));
  EXPECT_EQ(Run({"dump"}).code, kExitUsage);
  EXPECT_EQ(Run({"dump", dir_ + "/data/CURRENT"}).code, kExitUsage);
  EXPECT_EQ(Run({"dump", dir_ + "/nope.sst"}).code, kExitFailure);
  EXPECT_EQ(Run({"dump", sst, "count=x"}).code, kExitUsage);
}

TEST_F(CommandsTest, HelpAndUnknownCommands) {
  for (const Command& c : Commands()) {
    Outcome o = Run({std::string(c.name), "--help"});
    EXPECT_EQ(o.code, kExitOk) << c.name;
    EXPECT_THAT(o.out, StartsWith("usage: tabletctl [-d DATADIR] " +
                                  std::string(c.name)));
  }
  Outcome o = Run({"frobnicate"});
  EXPECT_EQ(o.code, kExitUsage);
  EXPECT_THAT(o.err, HasSubstr("unknown command 'frobnicate'"));
}

}  // namespace
}  // namespace tabletfs::cli
