#include "store/db/log_record.h"

#include "store/util/coding.h"

namespace tabletfs {

void AppendLogRecordHeader(std::string* dst, uint64_t last_seq,
                           int64_t last_ts) {
  PutVarint64(dst, last_seq);
  PutVarint64(dst, static_cast<uint64_t>(last_ts));
}

void AppendLogRecordEntry(std::string* dst, std::string_view key,
                          std::string_view value) {
  AppendLogRecordEntryKey(dst, key, value.size());
  dst->append(value);
}

void AppendLogRecordEntryKey(std::string* dst, std::string_view key,
                             size_t value_size) {
  PutLengthPrefixed(dst, key);
  PutVarint64(dst, value_size);
}

void AppendLogRecordWrites(std::string* dst, int64_t last_ts,
                           const std::vector<LogRecordWrite>& writes) {
  // An empty key ends the entries: no internal key is empty, and a format
  // 1 reader refuses the record rather than misreading it.
  PutVarint64(dst, 0);
  PutVarint64(dst, writes.size());
  for (const LogRecordWrite& w : writes) {
    PutVarint32(dst, w.entries);
    // The writes of a group take consecutive timestamps: the distance to
    // the last one is a byte or two.
    PutVarint64(dst, static_cast<uint64_t>(last_ts) -
                         static_cast<uint64_t>(w.timestamp));
    PutVarint64(dst, w.origin);
  }
}

Status DecodeLogRecord(std::string_view record, const std::string& where,
                       LogRecord* out) {
  std::string_view in = record;
  uint64_t ts = 0;
  out->entries.clear();
  out->writes.clear();
  if (!GetVarint64(&in, &out->last_seq) || !GetVarint64(&in, &ts)) {
    return Status::Corruption("log record: bad header", where);
  }
  out->last_ts = static_cast<int64_t>(ts);
  bool has_writes = false;
  while (!in.empty()) {
    std::string_view key, value;
    if (!GetLengthPrefixed(&in, &key)) {
      return Status::Corruption("log record: bad entry", where);
    }
    if (key.empty()) {
      has_writes = true;
      break;
    }
    if (!GetLengthPrefixed(&in, &value)) {
      return Status::Corruption("log record: bad entry", where);
    }
    out->entries.push_back({key, value});
  }
  if (!has_writes) {
    out->writes.push_back(
        {static_cast<uint32_t>(out->entries.size()), out->last_ts, 0});
    return Status::OK();
  }
  uint64_t count = 0;
  if (!GetVarint64(&in, &count) || count > out->entries.size()) {
    return Status::Corruption("log record: bad write count", where);
  }
  uint64_t covered = 0;
  for (uint64_t i = 0; i < count; ++i) {
    LogRecordWrite w;
    uint64_t back = 0;
    if (!GetVarint32(&in, &w.entries) || !GetVarint64(&in, &back) ||
        !GetVarint64(&in, &w.origin)) {
      return Status::Corruption("log record: bad write", where);
    }
    w.timestamp = static_cast<int64_t>(ts - back);
    covered += w.entries;
    out->writes.push_back(w);
  }
  if (covered != out->entries.size() || !in.empty()) {
    return Status::Corruption(
        "log record: writes cover " + std::to_string(covered) + " of " +
            std::to_string(out->entries.size()) + " entries",
        where);
  }
  return Status::OK();
}

}  // namespace tabletfs
