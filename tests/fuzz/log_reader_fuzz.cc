// libFuzzer target for store/wal/log_reader.h.
//
// The first input byte picks a mode:
//   even: the rest of the input is a log file. ReadRecord() must never crash
//         and must end in OK (clean end or torn tail) or Corruption; the end
//         offset never moves backwards or past the file; after the end,
//         every call repeats the same outcome.
//   odd:  the input describes records and one damage. The records are written
//         with LogWriter (payloads are pseudo-random bytes, so no payload can
//         hold an intact fragment: see the "known limit" in
//         store/doc/log_format.md), the file is cut, zero-filled from an
//         offset (power loss), or has one byte flipped, and read back. The
//         records read must be exactly the first k written (never wrong
//         data), every record that ended before the damage is among them,
//         and damage followed by an intact record is Corruption, not a torn
//         tail.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>
#include <vector>

#include "store/wal/log_format.h"
#include "store/wal/log_reader.h"
#include "store/wal/log_writer.h"
#include "tests/fuzz/fuzz_util.h"

namespace tabletfs::fuzz {
namespace {

struct ReadOutcome {
  std::vector<std::string> records;
  Status status;
  bool torn_tail = false;
  uint64_t end_offset = 0;
};

ReadOutcome ReadAll(std::string_view file) {
  LogReader reader(std::make_unique<StringSequentialFile>(file), "fuzz.log");
  ReadOutcome out;
  std::string record;
  uint64_t last_end = 0;
  // Every record takes at least one 11-byte header: bounds the loop.
  const size_t max_records = file.size() / kLogHeaderSize + 1;
  while (reader.ReadRecord(&record, &out.status)) {
    FUZZ_CHECK(out.status.ok(), "record returned with %s",
               out.status.ToString().c_str());
    FUZZ_CHECK(reader.LastRecordEndOffset() >= last_end,
               "end offset moved back");
    FUZZ_CHECK(reader.LastRecordEndOffset() <= file.size(),
               "end offset %llu past the file (%zu bytes)",
               static_cast<unsigned long long>(reader.LastRecordEndOffset()),
               file.size());
    last_end = reader.LastRecordEndOffset();
    out.records.push_back(record);
    FUZZ_CHECK(out.records.size() <= max_records, "too many records");
  }
  FUZZ_CHECK(out.status.ok() || out.status.IsCorruption(),
             "unexpected status %s", out.status.ToString().c_str());
  if (out.status.IsCorruption()) {
    FUZZ_CHECK(out.status.message().find("fuzz.log") != std::string::npos,
               "Corruption without the file name: %s",
               out.status.message().c_str());
  }
  FUZZ_CHECK(!reader.torn_tail() || out.status.ok(), "torn tail with status %s",
             out.status.ToString().c_str());
  out.torn_tail = reader.torn_tail();
  out.end_offset = reader.LastRecordEndOffset();
  FUZZ_CHECK(out.end_offset == last_end, "end offset moved after the end");
  // After false, false again with the same status.
  Status again;
  FUZZ_CHECK(!reader.ReadRecord(&record, &again), "a record after the end");
  FUZZ_CHECK(again.code() == out.status.code(), "end status changed: %s -> %s",
             out.status.ToString().c_str(), again.ToString().c_str());
  return out;
}

void FuzzStructured(FuzzedDataProvider& fdp) {
  std::vector<std::string> written;
  std::vector<uint64_t> starts, ends;
  std::string file;
  {
    LogWriter writer(std::make_unique<StringWritableFile>(&file));
    int n = fdp.ConsumeIntegralInRange<int>(0, 12);
    size_t total = 0;
    for (int i = 0; i < n; ++i) {
      // Mostly small records, some that span blocks.
      size_t len = fdp.ConsumeBool()
                       ? fdp.ConsumeIntegralInRange<size_t>(0, 64)
                       : fdp.ConsumeIntegralInRange<size_t>(0, 80000);
      if (total + len > 200000) len = 0;
      total += len;
      written.push_back(
          PseudoRandomBytes(fdp.ConsumeIntegral<uint64_t>(), len));
      starts.push_back(writer.size());
      FUZZ_CHECK(writer.AddRecord(written.back()).ok(), "AddRecord failed");
      ends.push_back(writer.size());
    }
    FUZZ_CHECK(writer.Flush().ok(), "Flush failed");
  }
  FUZZ_CHECK(file.size() == (ends.empty() ? 0 : ends.back()),
             "writer size %zu != file size",
             static_cast<size_t>(ends.empty() ? 0 : ends.back()));

  enum Damage { kNone, kTruncate, kZeroTail, kFlip };
  Damage damage = static_cast<Damage>(fdp.ConsumeIntegralInRange<int>(0, 3));
  size_t pos =
      file.empty() ? 0 : fdp.ConsumeIntegralInRange<size_t>(0, file.size() - 1);
  uint8_t mask = fdp.ConsumeIntegralInRange<uint8_t>(1, 255);
  if (file.empty()) damage = kNone;
  switch (damage) {
    case kNone:
      break;
    case kTruncate:
      file.resize(pos);
      break;
    case kZeroTail: {
      // Zeros over zeros change nothing: the damage begins at the first
      // byte from pos on that was not zero (none: the log is intact).
      size_t first = pos;
      while (first < file.size() && file[first] == '\0') ++first;
      std::fill(file.begin() + pos, file.end(), '\0');
      pos = first;
      if (first == file.size()) damage = kNone;
      break;
    }
    case kFlip:
      file[pos] = static_cast<char>(file[pos] ^ mask);
      break;
  }

  ReadOutcome got = ReadAll(file);
  // Never wrong data: a prefix of what was written, byte for byte.
  FUZZ_CHECK(got.records.size() <= written.size(), "%zu records, wrote %zu",
             got.records.size(), written.size());
  for (size_t i = 0; i < got.records.size(); ++i) {
    FUZZ_CHECK(got.records[i] == written[i],
               "record %zu differs (len %zu vs %zu)", i, got.records[i].size(),
               written[i].size());
  }
  size_t k = got.records.size();
  FUZZ_CHECK(got.end_offset == (k == 0 ? 0 : ends[k - 1]),
             "end offset %llu, record %zu ends at %llu",
             static_cast<unsigned long long>(got.end_offset), k,
             static_cast<unsigned long long>(k == 0 ? 0 : ends[k - 1]));
  // Records that ended before the damage all come back.
  size_t complete = written.size();
  if (damage != kNone) {
    complete = 0;
    while (complete < written.size() && ends[complete] <= pos) ++complete;
  }
  if (damage == kNone) {
    FUZZ_CHECK(got.status.ok() && !got.torn_tail && k == written.size(),
               "undamaged log: %zu of %zu records, %s, torn=%d", k,
               written.size(), got.status.ToString().c_str(), got.torn_tail);
    return;
  }
  FUZZ_CHECK(k >= complete, "%zu records read, %zu ended before offset %zu", k,
             complete, pos);
  if (damage == kTruncate || damage == kZeroTail) {
    // Nothing intact follows: a torn tail (or a clean end), never Corruption.
    FUZZ_CHECK(got.status.ok(), "cut/zeroed at %zu: %s", pos,
               got.status.ToString().c_str());
    FUZZ_CHECK(k == complete, "cut/zeroed at %zu: %zu records, expected %zu",
               pos, k, complete);
    return;
  }
  // A flipped byte that lies in record r's fragments is always caught: record
  // r is not returned. Bytes in the last 10 of a block may be block-trailer
  // padding, which no checksum covers: no claim for those.
  if (pos % kLogBlockSize < kLogBlockSize - (kLogHeaderSize - 1)) {
    size_t r = 0;
    while (!(starts[r] <= pos && pos < ends[r])) ++r;
    FUZZ_CHECK(k <= r,
               "byte %zu of record %zu flipped (^%02x) but the "
               "record was returned",
               pos, r, mask);
  }
  // A flip inside record k loses it; when an intact record follows, that
  // must be reported as Corruption.
  if (k < written.size() && k + 1 < written.size()) {
    FUZZ_CHECK(got.status.IsCorruption(),
               "flip at %zu lost record %zu of %zu but status is %s", pos, k,
               written.size(), got.status.ToString().c_str());
  }
}

}  // namespace
}  // namespace tabletfs::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if ((data[0] & 1) == 0) {
    tabletfs::fuzz::ReadAll(
        std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  } else {
    FuzzedDataProvider fdp(data + 1, size - 1);
    tabletfs::fuzz::FuzzStructured(fdp);
  }
  return 0;
}
