// The payload of one commit-log record: one write group (format:
// store/doc/key_format.md "Log records"). Encoded by the leader of the
// write queue, decoded by recovery and by change subscriptions that read
// the past from the logs.
//
// Thread safety: plain functions and values.
#ifndef TABLETFS_STORE_DB_LOG_RECORD_H_
#define TABLETFS_STORE_DB_LOG_RECORD_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/status.h"

namespace tabletfs {

// One write of the group: its next `entries` entries, in order.
struct LogRecordWrite {
  uint32_t entries = 0;
  int64_t timestamp = 0;  // its server timestamp (commit time)
  uint64_t origin = 0;    // WriteOptions::origin
};

struct LogRecordEntry {
  std::string_view key;  // internal key (store/db/key_format.h)
  std::string_view value;
};

// A decoded record; views into the record's bytes.
struct LogRecord {
  uint64_t last_seq = 0;
  int64_t last_ts = 0;
  std::vector<LogRecordEntry> entries;
  // Cover `entries` in order. A record written before writes were recorded
  // (format 1) decodes as one write of every entry at last_ts, origin 0.
  std::vector<LogRecordWrite> writes;
};

// Appends the header; entries follow (AppendLogRecordEntry), then the
// writes (AppendLogRecordWrites).
void AppendLogRecordHeader(std::string* dst, uint64_t last_seq,
                           int64_t last_ts);
void AppendLogRecordEntry(std::string* dst, std::string_view key,
                          std::string_view value);
// The same without the value's bytes, which must follow (a writer that
// passes a large value to the log where it is, LogWriter::AddRecord with
// pieces).
void AppendLogRecordEntryKey(std::string* dst, std::string_view key,
                             size_t value_size);
// REQUIRES: every write's timestamp <= last_ts of the header.
void AppendLogRecordWrites(std::string* dst, int64_t last_ts,
                           const std::vector<LogRecordWrite>& writes);

// Corruption (naming `where`) when `record` is malformed: a bad header or
// entry, writes that do not cover the entries exactly. Internal keys are
// not parsed here.
Status DecodeLogRecord(std::string_view record, const std::string& where,
                       LogRecord* out);

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_LOG_RECORD_H_
