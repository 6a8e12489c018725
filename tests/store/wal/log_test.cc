// Tests of the commit log: LogWriter and LogReader over in-memory files.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "store/env.h"
#include "store/env/mem_env.h"
#include "store/fault_env.h"
#include "store/status.h"
#include "store/util/coding.h"
#include "store/util/hash.h"
#include "store/wal/log_format.h"
#include "store/wal/log_reader.h"
#include "store/wal/log_writer.h"

namespace tabletfs {
namespace {

// A WritableFile appending to a string the test owns.
class StringSink : public WritableFile {
 public:
  explicit StringSink(std::string* contents) : contents_(contents) {}
  Status Append(std::string_view data) override {
    if (fail_appends_after_ == 0) return Status::NoSpace("sink full");
    if (fail_appends_after_ > 0) --fail_appends_after_;
    contents_->append(data);
    return Status::OK();
  }
  Status Flush() override { return Status::OK(); }
  Status Sync() override { return Status::OK(); }
  Status Close() override { return Status::OK(); }
  uint64_t Size() const override { return contents_->size(); }

  int fail_appends_after_ = -1;  // <0: never fail

 private:
  std::string* contents_;
};

// A SequentialFile over a copy of a string.
class StringSource : public SequentialFile {
 public:
  explicit StringSource(std::string contents)
      : contents_(std::move(contents)) {}
  Status Read(size_t n, std::string_view* result, char* scratch) override {
    if (fail_reads_) return Status::IOError("injected read error");
    size_t k = std::min(n, contents_.size() - pos_);
    memcpy(scratch, contents_.data() + pos_, k);
    *result = std::string_view(scratch, k);
    pos_ += k;
    return Status::OK();
  }
  Status Skip(uint64_t n) override {
    pos_ = std::min<uint64_t>(contents_.size(), pos_ + n);
    return Status::OK();
  }
  bool fail_reads_ = false;

 private:
  std::string contents_;
  size_t pos_ = 0;
};

std::string RandomString(std::mt19937_64* rng, size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>((*rng)());
  return s;
}

// Writes records to a string and remembers where each ends.
class LogFile {
 public:
  LogFile() : writer_(std::make_unique<StringSink>(&contents_)) {}
  void Add(std::string_view record) {
    starts_.push_back(writer_.size());
    ASSERT_TRUE(writer_.AddRecord(record).ok());
    ends_.push_back(writer_.size());
    records_.emplace_back(record);
    ASSERT_EQ(writer_.size(), contents_.size());
  }
  std::string& contents() { return contents_; }
  const std::vector<std::string>& records() const { return records_; }
  uint64_t start(size_t i) const { return starts_[i]; }
  uint64_t end(size_t i) const { return ends_[i]; }

 private:
  std::string contents_;
  LogWriter writer_;
  std::vector<std::string> records_;
  std::vector<uint64_t> starts_, ends_;
};

struct ReadAll {
  std::vector<std::string> records;
  Status status;
  uint64_t last_end = 0;
  bool torn = false;
  bool zeros = false;  // zero_tail()
};

ReadAll ReadLog(std::string contents) {
  LogReader reader(std::make_unique<StringSource>(std::move(contents)),
                   "000007.log");
  ReadAll out;
  std::string record;
  while (reader.ReadRecord(&record, &out.status)) {
    out.records.push_back(record);
    EXPECT_TRUE(out.status.ok());
  }
  out.last_end = reader.LastRecordEndOffset();
  out.torn = reader.torn_tail();
  out.zeros = reader.zero_tail();
  EXPECT_TRUE(!out.zeros || out.torn);
  // Sticky end.
  Status again;
  EXPECT_FALSE(reader.ReadRecord(&record, &again));
  EXPECT_EQ(again.ToString(), out.status.ToString());
  return out;
}

// Encodes one fragment by hand, for sequences the writer never produces.
std::string Fragment(uint8_t type, std::string_view payload) {
  std::string f(kLogHeaderSize, '\0');
  f[8] = static_cast<char>(payload.size() & 0xff);
  f[9] = static_cast<char>(payload.size() >> 8);
  f[10] = static_cast<char>(type);
  f.append(payload);
  EncodeFixed64(f.data(), Checksum64(std::string_view(f).substr(8)));
  return f;
}

TEST(LogTest, EmptyFile) {
  ReadAll r = ReadLog("");
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.records.empty());
  EXPECT_EQ(r.last_end, 0u);
  EXPECT_FALSE(r.torn);
}

TEST(LogTest, WorkedExampleFromDoc) {
  // store/doc/log_format.md, "Worked example".
  LogFile log;
  log.Add("hi");
  log.Add("");
  const std::string& c = log.contents();
  const std::string expected(
      "\xbf\x9f\x52\x2b\xdc\xf5\x4b\xc9\x02\x00\x01hi"
      "\x7e\xe5\xd1\xe4\x48\x72\xc1\xee\x00\x00\x01",
      24);
  EXPECT_EQ(c, expected);
  ReadAll r;
  for (size_t cut = 14; cut <= 23; ++cut) {
    r = ReadLog(c.substr(0, cut));
    EXPECT_TRUE(r.status.ok()) << cut;
    EXPECT_TRUE(r.torn) << cut;
    EXPECT_EQ(r.last_end, 13u) << cut;
  }
  r = ReadLog(c.substr(0, 13));  // a record boundary: a clean end
  EXPECT_TRUE(r.status.ok());
  EXPECT_FALSE(r.torn);
  EXPECT_EQ(r.last_end, 13u);
  std::string damaged = c;
  damaged[12] ^= 1;
  r = ReadLog(damaged);
  EXPECT_NE(r.status.message().find("offset 0: checksum mismatch"),
            std::string::npos);
  EXPECT_NE(r.status.message().find("starts later at offset 13"),
            std::string::npos)
      << r.status.ToString();

  log.Add(std::string(70000, 'z'));
  auto type_at = [&](size_t off) { return static_cast<int>(c[off + 10]); };
  auto length_at = [&](size_t off) {
    return static_cast<uint8_t>(c[off + 8]) | static_cast<uint8_t>(c[off + 9])
                                                  << 8;
  };
  EXPECT_EQ(type_at(24), 2);
  EXPECT_EQ(length_at(24), 32733);
  EXPECT_EQ(type_at(32768), 3);
  EXPECT_EQ(length_at(32768), 32757);
  EXPECT_EQ(type_at(65536), 4);
  EXPECT_EQ(length_at(65536), 4510);
  EXPECT_EQ(c.size(), 65536u + 11 + 4510);
}

TEST(LogTest, RoundTripEmptySmallHuge) {
  std::mt19937_64 rng(1);
  LogFile log;
  log.Add("");
  log.Add("x");
  log.Add("small record");
  log.Add(RandomString(&rng, 5 << 20));  // 5 MiB: ~160 fragments
  log.Add("");
  log.Add("after the huge one");
  ReadAll r = ReadLog(log.contents());
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.records, log.records());
  EXPECT_EQ(r.last_end, log.contents().size());
  EXPECT_FALSE(r.torn);
}

TEST(LogTest, RecordsAtBlockBoundaries) {
  // Sizes that end a block exactly, leave room for less than a header (a
  // zero trailer), or exactly a header with an empty payload.
  std::vector<size_t> sizes = {kLogMaxFragmentPayload,
                               kLogMaxFragmentPayload - 1,
                               kLogMaxFragmentPayload + 1,
                               kLogBlockSize,
                               2 * kLogMaxFragmentPayload,
                               0,
                               kLogMaxFragmentPayload - kLogHeaderSize,
                               0,
                               kLogMaxFragmentPayload - kLogHeaderSize + 1,
                               3};
  std::mt19937_64 rng(2);
  for (size_t lead = 0; lead < 3 * kLogHeaderSize; ++lead) {
    LogFile log;
    log.Add(RandomString(&rng, lead));
    for (size_t n : sizes) log.Add(RandomString(&rng, n));
    ReadAll r = ReadLog(log.contents());
    ASSERT_TRUE(r.status.ok())
        << "lead " << lead << ": " << r.status.ToString();
    ASSERT_EQ(r.records, log.records()) << "lead " << lead;
    ASSERT_FALSE(r.torn);
  }
}

// A record given as pieces (a large value passed where it is) writes the
// same bytes as the pieces joined: pieces of every size, empty ones, and
// piece ends at and around fragment ends.
TEST(LogTest, RecordFromPiecesIsTheJoinedRecord) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> parts;
    const size_t count = 1 + rng() % 6;
    for (size_t i = 0; i < count; ++i) {
      static constexpr size_t kSizes[] = {0, 1, 7, kLogMaxFragmentPayload - 1,
                                          kLogMaxFragmentPayload,
                                          kLogMaxFragmentPayload + 1,
                                          100000};
      const size_t n = round % 2 ? kSizes[rng() % std::size(kSizes)]
                                 : rng() % (3 * kLogBlockSize);
      parts.push_back(RandomString(&rng, n));
    }
    std::vector<std::string_view> pieces(parts.begin(), parts.end());
    std::string joined;
    for (const std::string& p : parts) joined += p;
    const std::string lead = RandomString(&rng, rng() % kLogBlockSize);
    std::string by_pieces, whole;
    LogWriter a(std::make_unique<StringSink>(&by_pieces));
    LogWriter b(std::make_unique<StringSink>(&whole));
    ASSERT_TRUE(a.AddRecord(lead).ok());
    ASSERT_TRUE(b.AddRecord(lead).ok());
    ASSERT_TRUE(a.AddRecord(pieces).ok());
    ASSERT_TRUE(b.AddRecord(joined).ok());
    ASSERT_EQ(a.size(), b.size()) << "round " << round;
    ASSERT_EQ(by_pieces, whole) << "round " << round;
    ReadAll r = ReadLog(by_pieces);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_EQ(r.records, (std::vector<std::string>{lead, joined}));
  }
}

TEST(LogTest, ManyRecords) {
  std::mt19937_64 rng(3);
  LogFile log;
  for (int i = 0; i < 5000; ++i) {
    size_t n = rng() % 4 == 0 ? rng() % 100000 : rng() % 200;
    log.Add(RandomString(&rng, n));
  }
  ReadAll r = ReadLog(log.contents());
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.records.size(), 5000u);
  EXPECT_TRUE(r.records == log.records());
  EXPECT_EQ(r.last_end, log.contents().size());
}

TEST(LogTest, AppendWithInitialSize) {
  std::string contents;
  {
    LogWriter w(std::make_unique<StringSink>(&contents));
    ASSERT_TRUE(w.AddRecord(std::string(40000, 'a')).ok());
    ASSERT_TRUE(w.Flush().ok());
  }
  {
    LogWriter w(std::make_unique<StringSink>(&contents), contents.size());
    ASSERT_TRUE(w.AddRecord("b").ok());
    ASSERT_TRUE(w.AddRecord(std::string(70000, 'c')).ok());
    ASSERT_TRUE(w.Sync().ok());
    EXPECT_EQ(w.size(), contents.size());
    ASSERT_TRUE(w.Close().ok());
    EXPECT_FALSE(w.AddRecord("late").ok());
  }
  ReadAll r = ReadLog(contents);
  ASSERT_TRUE(r.status.ok());
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(r.records[0], std::string(40000, 'a'));
  EXPECT_EQ(r.records[1], "b");
  EXPECT_EQ(r.records[2], std::string(70000, 'c'));
}

// Cuts the file at every byte of its last record: the earlier records read
// back, then a clean end, torn_tail() once any byte of the last record is
// present, and LastRecordEndOffset() at the end of the previous record.
void CheckTruncationsOfLastRecord(LogFile& log, size_t stride) {
  size_t last = log.records().size() - 1;
  std::vector<std::string> expected(log.records().begin(),
                                    log.records().end() - 1);
  for (uint64_t cut = log.start(last); cut < log.end(last); cut += stride) {
    ReadAll r = ReadLog(log.contents().substr(0, cut));
    ASSERT_TRUE(r.status.ok()) << "cut " << cut << ": " << r.status.ToString();
    ASSERT_TRUE(r.records == expected) << "cut " << cut;
    ASSERT_EQ(r.last_end, log.end(last - 1)) << "cut " << cut;
    ASSERT_EQ(r.torn, cut > log.start(last)) << "cut " << cut;
  }
}

TEST(LogTest, TruncatedSmallLastRecordIsTornTail) {
  std::mt19937_64 rng(4);
  LogFile log;
  for (int i = 0; i < 20; ++i) log.Add(RandomString(&rng, rng() % 300));
  log.Add(RandomString(&rng, 200));
  CheckTruncationsOfLastRecord(log, 1);
}

TEST(LogTest, TruncatedLastRecordAcrossBlocksIsTornTail) {
  std::mt19937_64 rng(5);
  LogFile log;
  log.Add(RandomString(&rng, kLogBlockSize - 3000));
  log.Add(RandomString(&rng, 6000));  // FIRST in block 0, LAST in block 1
  CheckTruncationsOfLastRecord(log, 1);
}

TEST(LogTest, TruncatedHugeLastRecordIsTornTail) {
  std::mt19937_64 rng(6);
  LogFile log;
  log.Add("first");
  log.Add(RandomString(&rng, 300000));
  CheckTruncationsOfLastRecord(log, 97);
}

TEST(LogTest, TornTailThenTruncateAndAppend) {
  std::mt19937_64 rng(7);
  LogFile log;
  log.Add("one");
  log.Add(RandomString(&rng, 50000));
  std::string contents = log.contents().substr(0, log.contents().size() - 10);
  ReadAll r = ReadLog(contents);
  ASSERT_TRUE(r.status.ok());
  ASSERT_TRUE(r.torn);
  contents.resize(r.last_end);  // what recovery does with TruncateFile()
  {
    LogWriter w(std::make_unique<StringSink>(&contents), contents.size());
    ASSERT_TRUE(w.AddRecord("two").ok());
  }
  r = ReadLog(contents);
  ASSERT_TRUE(r.status.ok());
  EXPECT_FALSE(r.torn);
  EXPECT_EQ(r.records, (std::vector<std::string>{"one", "two"}));
}

TEST(LogTest, FlippedByteInMiddleRecordIsCorruption) {
  std::mt19937_64 rng(8);
  LogFile log;
  for (int i = 0; i < 10; ++i) log.Add(RandomString(&rng, 40 + i));
  const size_t victim = 4;
  for (uint64_t off = log.start(victim); off < log.end(victim); ++off) {
    for (uint8_t mask : {0x01, 0x80}) {
      std::string damaged = log.contents();
      damaged[off] ^= mask;
      ReadAll r = ReadLog(damaged);
      ASSERT_TRUE(r.status.IsCorruption()) << "byte " << off;
      EXPECT_NE(r.status.message().find("file 000007.log offset " +
                                        std::to_string(log.start(victim))),
                std::string::npos)
          << r.status.ToString();
      ASSERT_EQ(r.records.size(), victim);
      EXPECT_EQ(r.last_end, log.end(victim - 1));
    }
  }
}

TEST(LogTest, FlippedByteInMiddleOfHugeRecordIsCorruption) {
  std::mt19937_64 rng(9);
  LogFile log;
  log.Add("a");
  log.Add(RandomString(&rng, 200000));
  log.Add("b");
  for (uint64_t off :
       {log.start(1) + 3, log.start(1) + 100000, log.end(1) - 1}) {
    std::string damaged = log.contents();
    damaged[off] ^= 0x10;
    ReadAll r = ReadLog(damaged);
    ASSERT_TRUE(r.status.IsCorruption()) << "byte " << off;
    EXPECT_NE(r.status.message().find("checksum mismatch"), std::string::npos);
    EXPECT_NE(r.status.message().find("000007.log"), std::string::npos);
    EXPECT_EQ(r.records.size(), 1u);
  }
}

// A damaged last record (no intact record after it) is a torn tail: after
// power loss, any unsynced page of the last record may hold garbage.
TEST(LogTest, FlippedByteInLastRecordIsTornTail) {
  std::mt19937_64 rng(10);
  LogFile log;
  for (int i = 0; i < 5; ++i) log.Add(RandomString(&rng, 100));
  log.Add(RandomString(&rng, 60));
  size_t last = 5;
  for (uint64_t off = log.start(last); off < log.end(last); ++off) {
    std::string damaged = log.contents();
    damaged[off] ^= 0x04;
    ReadAll r = ReadLog(damaged);
    ASSERT_TRUE(r.status.ok()) << "byte " << off << ": " << r.status.ToString();
    ASSERT_TRUE(r.torn);
    ASSERT_EQ(r.records.size(), last);
    ASSERT_EQ(r.last_end, log.end(last - 1));
  }
}

TEST(LogTest, FlippedByteEarlyInHugeLastRecordIsTornTail) {
  std::mt19937_64 rng(11);
  LogFile log;
  log.Add("a");
  log.Add(RandomString(&rng, 200000));
  std::string damaged = log.contents();
  damaged[log.start(1) + 20] ^= 0x01;  // first fragment; later ones intact
  ReadAll r = ReadLog(damaged);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.torn);
  EXPECT_EQ(r.records, std::vector<std::string>{"a"});
  EXPECT_EQ(r.last_end, log.end(0));
}

TEST(LogTest, ZeroFilledTailIsTornTail) {
  LogFile log;
  log.Add("a");
  log.Add("bb");
  std::string contents = log.contents() + std::string(100000, '\0');
  ReadAll r = ReadLog(contents);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.torn);
  EXPECT_TRUE(r.zeros);
  EXPECT_EQ(r.records, (std::vector<std::string>{"a", "bb"}));
  EXPECT_EQ(r.last_end, log.contents().size());
}

// zero_tail() says the dropped bytes were all zeros (a mapped log's space
// allocated ahead), not a record cut short or garbage.
TEST(LogTest, OnlyAnAllZeroTailIsAZeroTail) {
  LogFile log;
  log.Add("a");
  log.Add(std::string(100000, 'b'));  // spans blocks
  const std::string whole = log.contents();
  // A stub of zeros shorter than a header, at the end of the file.
  ReadAll stub = ReadLog(whole + std::string(5, '\0'));
  EXPECT_TRUE(stub.status.ok()) << stub.status.ToString();
  EXPECT_TRUE(stub.zeros);
  // Zeros, then one byte of garbage far on.
  std::string garbage = whole + std::string(70000, '\0');
  garbage[garbage.size() - 1] = 'x';
  ReadAll g = ReadLog(garbage);
  EXPECT_TRUE(g.torn);
  EXPECT_FALSE(g.zeros);
  // The first fragments of the long record, then zeros where its last
  // fragment should be: a record cut short, not allocated space.
  std::string cut = whole.substr(0, log.end(1) - 100) + std::string(100, '\0');
  ReadAll c = ReadLog(cut + std::string(40000, '\0'));
  EXPECT_TRUE(c.torn);
  EXPECT_FALSE(c.zeros);
  EXPECT_EQ(c.records, std::vector<std::string>{"a"});
}

TEST(LogTest, ZeroedRegionBeforeIntactRecordIsCorruption) {
  LogFile log;
  log.Add("a");
  log.Add(std::string(500, 'x'));
  log.Add("c");
  std::string damaged = log.contents();
  for (uint64_t i = log.start(1); i < log.end(1); ++i) damaged[i] = 0;
  ReadAll r = ReadLog(damaged);
  EXPECT_TRUE(r.status.IsCorruption());
  EXPECT_NE(r.status.message().find("zero-filled"), std::string::npos)
      << r.status.ToString();
  EXPECT_EQ(r.records, std::vector<std::string>{"a"});
}

TEST(LogTest, DamagedLengthPastEndOfFileBeforeLaterRecordIsCorruption) {
  // The last block is short, so a grown length field points past the end of
  // the file, like a truncation would; the intact record after it shows it
  // is damage.
  LogFile log;
  log.Add("a");
  log.Add("bbbb");
  log.Add("c");
  std::string damaged = log.contents();
  damaged[log.start(1) + 9] = 0x10;  // length 4 -> 4100
  ReadAll r = ReadLog(damaged);
  EXPECT_TRUE(r.status.IsCorruption()) << r.status.ToString();
  EXPECT_NE(r.status.message().find("offset " + std::to_string(log.start(1))),
            std::string::npos);
}

TEST(LogTest, UnknownFragmentTypeIsCorruption) {
  LogFile log;
  log.Add("a");
  std::string contents =
      log.contents() + Fragment(9, "future") + Fragment(1, "b");
  ReadAll r = ReadLog(contents);
  EXPECT_TRUE(r.status.IsCorruption());
  EXPECT_NE(r.status.message().find("unknown fragment type 9"),
            std::string::npos);
  EXPECT_NE(r.status.message().find("offset 12"), std::string::npos)
      << r.status.ToString();
  EXPECT_EQ(r.records, std::vector<std::string>{"a"});
  // Also as the very last bytes: intact, so still not a torn tail.
  r = ReadLog(log.contents() + Fragment(0, ""));
  EXPECT_TRUE(r.status.IsCorruption()) << r.status.ToString();
}

TEST(LogTest, BrokenFragmentSequenceIsCorruption) {
  using T = LogFragmentType;
  auto f = [](T t, std::string_view p) {
    return Fragment(static_cast<uint8_t>(t), p);
  };
  // FIRST without LAST, then a new record.
  ReadAll r = ReadLog(f(T::kFirst, "x") + f(T::kFull, "y"));
  EXPECT_TRUE(r.status.IsCorruption());
  EXPECT_NE(r.status.message().find("no last fragment"), std::string::npos);
  // A continuation with no start.
  r = ReadLog(f(T::kFull, "y") + f(T::kMiddle, "x"));
  EXPECT_TRUE(r.status.IsCorruption());
  EXPECT_EQ(r.records, std::vector<std::string>{"y"});
  r = ReadLog(f(T::kLast, "x"));
  EXPECT_TRUE(r.status.IsCorruption());
  // FIRST, MIDDLE and then the end of the file: torn tail.
  r = ReadLog(f(T::kFull, "y") + f(T::kFirst, "x") + f(T::kMiddle, "z"));
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.torn);
  EXPECT_EQ(r.last_end, kLogHeaderSize + 1);
}

TEST(LogTest, ReadErrorIsReported) {
  auto source = std::make_unique<StringSource>("anything");
  source->fail_reads_ = true;
  LogReader reader(std::move(source), "x.log");
  std::string record;
  Status s;
  EXPECT_FALSE(reader.ReadRecord(&record, &s));
  EXPECT_TRUE(s.IsIOError());
  EXPECT_NE(s.message().find("x.log"), std::string::npos);
}

TEST(LogTest, WriterErrorsAreSticky) {
  std::string contents;
  auto sink = std::make_unique<StringSink>(&contents);
  StringSink* raw = sink.get();
  LogWriter w(std::move(sink));
  ASSERT_TRUE(w.AddRecord("ok").ok());
  raw->fail_appends_after_ = 1;  // the next record's second fragment fails
  Status s = w.AddRecord(std::string(50000, 'x'));
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  raw->fail_appends_after_ = -1;
  EXPECT_TRUE(w.AddRecord("later").IsNoSpace());
  EXPECT_TRUE(w.Flush().IsNoSpace());
  EXPECT_TRUE(w.Sync().IsNoSpace());
  // The partial record reads as a torn tail.
  ReadAll r = ReadLog(contents);
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.torn);
  EXPECT_EQ(r.records, std::vector<std::string>{"ok"});
}

// The recovery sequence the engine runs, through an Env: read to the torn
// tail, truncate there, append with initial_size, read everything back.
TEST(LogTest, RecoveryThroughEnv) {
  std::unique_ptr<Env> env = NewMemEnv();
  ASSERT_TRUE(env->CreateDir("/db").ok());
  const std::string path = "/db/000003.log";
  {
    auto file = env->NewWritableFile(path);
    ASSERT_TRUE(file.ok());
    LogWriter w(std::move(file).value());
    ASSERT_TRUE(w.AddRecord("one").ok());
    ASSERT_TRUE(w.AddRecord(std::string(100000, 't')).ok());
    ASSERT_TRUE(w.Sync().ok());
    ASSERT_TRUE(w.Close().ok());
  }
  // A crash cut the second record short.
  ASSERT_TRUE(env->TruncateFile(path, 50000).ok());
  uint64_t end = 0;
  {
    auto file = env->NewSequentialFile(path);
    ASSERT_TRUE(file.ok());
    LogReader reader(std::move(file).value(), path);
    std::string record;
    Status s;
    ASSERT_TRUE(reader.ReadRecord(&record, &s));
    EXPECT_EQ(record, "one");
    EXPECT_FALSE(reader.ReadRecord(&record, &s));
    EXPECT_TRUE(s.ok());
    EXPECT_TRUE(reader.torn_tail());
    end = reader.LastRecordEndOffset();
    EXPECT_EQ(end, kLogHeaderSize + 3);
  }
  ASSERT_TRUE(env->TruncateFile(path, end).ok());
  {
    auto file = env->NewAppendableFile(path);
    ASSERT_TRUE(file.ok());
    LogWriter w(std::move(file).value(), end);
    ASSERT_TRUE(w.AddRecord(std::string(40000, 'u')).ok());
    ASSERT_TRUE(w.AddRecord("three").ok());
    ASSERT_TRUE(w.Sync().ok());
    EXPECT_EQ(w.size(), *env->GetFileSize(path));
  }
  auto contents = ReadFileToString(env.get(), path);
  ASSERT_TRUE(contents.ok());
  ReadAll r = ReadLog(*contents);
  EXPECT_TRUE(r.status.ok());
  EXPECT_FALSE(r.torn);
  EXPECT_EQ(r.records, (std::vector<std::string>{"one", std::string(40000, 'u'),
                                                 "three"}));
}

// Power loss: every record written before the last Sync() survives; the
// unsynced ones after it are dropped, which reads as a clean end here (the
// file is cut at the synced size, a record boundary).
TEST(LogTest, SyncedRecordsSurvivePowerLoss) {
  std::unique_ptr<Env> base = NewMemEnv();
  FaultInjectionEnv env(base.get());
  ASSERT_TRUE(env.CreateDir("/db").ok());
  ASSERT_TRUE(env.SyncDir("/").ok());
  const std::string path = "/db/000005.log";
  std::vector<std::string> synced;
  {
    auto file = env.NewWritableFile(path);
    ASSERT_TRUE(file.ok());
    LogWriter w(std::move(file).value());
    std::mt19937_64 rng(12);
    for (int i = 0; i < 20; ++i) {
      std::string rec = RandomString(&rng, rng() % 50000);
      ASSERT_TRUE(w.AddRecord(rec).ok());
      synced.push_back(rec);
    }
    ASSERT_TRUE(w.Sync().ok());
    ASSERT_TRUE(env.SyncDir("/db").ok());
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(w.AddRecord(RandomString(&rng, 30000)).ok());
    }
    ASSERT_TRUE(w.Flush().ok());
  }
  ASSERT_TRUE(env.DropUnsyncedData().ok());
  auto contents = ReadFileToString(&env, path);
  ASSERT_TRUE(contents.ok());
  ReadAll r = ReadLog(*contents);
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.records == synced);
}

// A new log's name is durable only after a sync of its directory. A writer
// given the directory syncs it on its first Sync(), so records reported as
// synced survive power loss with no SyncDir by the caller; and a failed
// directory sync is sticky like a failed file sync.
TEST(LogTest, FirstSyncMakesANewLogsNameDurable) {
  std::unique_ptr<Env> base = NewMemEnv();
  FaultInjectionEnv env(base.get());
  ASSERT_TRUE(env.CreateDir("/db").ok());
  const std::string path = "/db/000007.log";
  {
    auto file = env.NewWritableFile(path);
    ASSERT_TRUE(file.ok());
    LogWriter w(std::move(file).value(), 0, &env, "/db");
    ASSERT_TRUE(w.AddRecord("committed").ok());
    ASSERT_TRUE(w.Sync().ok());
    EXPECT_EQ(env.CallCount(FaultOp::kSyncDir), 1u);
    ASSERT_TRUE(w.AddRecord("second").ok());
    ASSERT_TRUE(w.Sync().ok());
    EXPECT_EQ(env.CallCount(FaultOp::kSyncDir), 1u);  // once is enough
  }
  ASSERT_TRUE(env.DropUnsyncedData().ok());
  auto contents = ReadFileToString(&env, path);
  ASSERT_TRUE(contents.ok()) << contents.status().ToString();
  ReadAll r = ReadLog(*contents);
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.records, (std::vector<std::string>{"committed", "second"}));

  auto file = env.NewWritableFile("/db/000008.log");
  ASSERT_TRUE(file.ok());
  LogWriter w(std::move(file).value(), 0, &env, "/db");
  ASSERT_TRUE(w.AddRecord("x").ok());
  env.InjectError(FaultOp::kSyncDir, 1, Status::IOError("injected"));
  EXPECT_FALSE(w.Sync().ok());
  EXPECT_FALSE(w.Sync().ok());
  EXPECT_FALSE(w.AddRecord("y").ok());
}

}  // namespace
}  // namespace tabletfs
