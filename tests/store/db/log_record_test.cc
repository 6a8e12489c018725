// The payload of a commit-log record (store/db/log_record.h, format in
// store/doc/key_format.md "Log records"): round trips, records of format 1
// (before writes were recorded), and malformed records.
#include "store/db/log_record.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "store/util/coding.h"

namespace tabletfs {
namespace {

TEST(LogRecordTest, WritesRoundTripWithTheirTimestampsAndOrigins) {
  std::string record;
  AppendLogRecordHeader(&record, 12, 1000);
  AppendLogRecordEntry(&record, "k1", "v1");
  AppendLogRecordEntry(&record, "k2", "");
  AppendLogRecordEntry(&record, "k3", "v3");
  AppendLogRecordWrites(&record, 1000, {{2, 999, 7}, {1, 1000, 0}});
  LogRecord decoded;
  ASSERT_TRUE(DecodeLogRecord(record, "x", &decoded).ok());
  EXPECT_EQ(decoded.last_seq, 12u);
  EXPECT_EQ(decoded.last_ts, 1000);
  ASSERT_EQ(decoded.entries.size(), 3u);
  EXPECT_EQ(decoded.entries[1].key, "k2");
  EXPECT_EQ(decoded.entries[2].value, "v3");
  ASSERT_EQ(decoded.writes.size(), 2u);
  EXPECT_EQ(decoded.writes[0].entries, 2u);
  EXPECT_EQ(decoded.writes[0].timestamp, 999);
  EXPECT_EQ(decoded.writes[0].origin, 7u);
  EXPECT_EQ(decoded.writes[1].timestamp, 1000);
}

TEST(LogRecordTest, TheWorkedExampleOfTheFormatDoc) {
  // store/doc/key_format.md "Log records": two writes, 3 and 1 entries.
  std::string record;
  AppendLogRecordHeader(&record, 9, 1795255200000001);
  AppendLogRecordEntry(&record, "a", "1");
  AppendLogRecordEntry(&record, "b", "");
  AppendLogRecordEntry(&record, "c", "");
  AppendLogRecordEntry(&record, "d", "2");
  AppendLogRecordWrites(&record, 1795255200000001,
                        {{3, 1795255200000000, 0}, {1, 1795255200000001, 4}});
  std::string tail = record.substr(record.size() - 8);
  EXPECT_EQ(tail, std::string("\x00\x02\x03\x01\x00\x01\x00\x04", 8));
}

TEST(LogRecordTest, AFormatOneRecordIsOneWriteAtItsLastTimestamp) {
  std::string record;
  AppendLogRecordHeader(&record, 3, 77);
  AppendLogRecordEntry(&record, "k1", "v1");
  AppendLogRecordEntry(&record, "k2", "v2");
  LogRecord decoded;
  ASSERT_TRUE(DecodeLogRecord(record, "x", &decoded).ok());
  ASSERT_EQ(decoded.writes.size(), 1u);
  EXPECT_EQ(decoded.writes[0].entries, 2u);
  EXPECT_EQ(decoded.writes[0].timestamp, 77);
  EXPECT_EQ(decoded.writes[0].origin, 0u);
}

TEST(LogRecordTest, MalformedRecordsAreCorruptionNamingTheFile) {
  LogRecord decoded;
  Status s = DecodeLogRecord("", "000007.log", &decoded);
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.ToString().find("000007.log"), std::string::npos);

  std::string record;
  AppendLogRecordHeader(&record, 3, 77);
  AppendLogRecordEntry(&record, "k1", "v1");
  std::string short_writes = record;
  AppendLogRecordWrites(&short_writes, 77, {{2, 77, 0}});
  EXPECT_TRUE(DecodeLogRecord(short_writes, "x", &decoded).IsCorruption());
  std::string trailing = record;
  AppendLogRecordWrites(&trailing, 77, {{1, 77, 0}});
  trailing.push_back('\x01');
  EXPECT_TRUE(DecodeLogRecord(trailing, "x", &decoded).IsCorruption());
  std::string cut = record;
  cut.pop_back();
  EXPECT_TRUE(DecodeLogRecord(cut, "x", &decoded).IsCorruption());
}

}  // namespace
}  // namespace tabletfs
