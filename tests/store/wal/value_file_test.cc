// Tests of value files: ValueRef encoding, writer/reader round trips, the
// standalone scan, and detection of corruption and truncation.
#include "store/wal/value_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "store/env.h"
#include "store/env/mem_env.h"
#include "store/fault_env.h"
#include "store/status.h"
#include "store/util/hash.h"

namespace tabletfs {
namespace {

std::string RandomString(std::mt19937_64* rng, size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>((*rng)());
  return s;
}

class ValueFileTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(env_->CreateDir("/db").ok()); }

  // Writes `values` into a new value file; returns their refs.
  std::vector<ValueRef> WriteFile(const std::vector<std::string>& values) {
    auto writer = ValueFileWriter::Create(env_.get(), path_, 12);
    EXPECT_TRUE(writer.ok()) << writer.status().ToString();
    std::vector<ValueRef> refs;
    for (const auto& v : values) {
      auto ref = (*writer)->Add(v);
      EXPECT_TRUE(ref.ok()) << ref.status().ToString();
      refs.push_back(*ref);
    }
    EXPECT_TRUE((*writer)->Sync().ok());
    EXPECT_EQ((*writer)->size(), *env_->GetFileSize(path_));
    EXPECT_TRUE((*writer)->Close().ok());
    return refs;
  }

  void FlipByte(uint64_t offset) {
    auto contents = ReadFileToString(env_.get(), path_);
    ASSERT_TRUE(contents.ok());
    (*contents)[offset] ^= 0x20;
    ASSERT_TRUE(WriteStringToFile(env_.get(), *contents, path_, false).ok());
  }

  std::unique_ptr<Env> env_ = NewMemEnv();
  std::string path_ = "/db/000012.val";
};

TEST(ValueRefTest, EncodeDecode) {
  for (ValueRef ref :
       {ValueRef{}, ValueRef{1, 56, 300 << 10, 0x1234},
        ValueRef{UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX}}) {
    std::string enc;
    ref.EncodeTo(&enc);
    EXPECT_LE(enc.size(), 39u);
    auto back = ValueRef::DecodeFrom(enc);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, ref);
    // Every prefix is cut short; a trailing byte is refused.
    for (size_t n = 0; n < enc.size(); ++n) {
      EXPECT_TRUE(
          ValueRef::DecodeFrom(enc.substr(0, n)).status().IsCorruption());
    }
    EXPECT_TRUE(ValueRef::DecodeFrom(enc + "x").status().IsCorruption());
  }
  std::string enc;
  ValueRef{}.EncodeTo(&enc);
  enc[0] = 2;
  EXPECT_TRUE(ValueRef::DecodeFrom(enc).status().IsCorruption());
}

TEST(ValueRefTest, EncodingFromDoc) {
  // store/doc/value_file_format.md, "Worked example".
  std::string enc;
  ValueRef{12, 56, 300000, 0x0123456789abcdef}.EncodeTo(&enc);
  EXPECT_EQ(enc, std::string("\x01\x0c\x38\xe0\xa7\x12"
                             "\xef\xcd\xab\x89\x67\x45\x23\x01",
                             14));
}

TEST_F(ValueFileTest, WorkedExampleFromDoc) {
  std::vector<ValueRef> refs = WriteFile({"hi"});
  auto contents = ReadFileToString(env_.get(), path_);
  ASSERT_TRUE(contents.ok());
  EXPECT_EQ(*contents, std::string("TFSVALUE"
                                   "\x01\x00\x00\x00\x00\x00\x00\x00"
                                   "\x0c\x00\x00\x00\x00\x00\x00\x00"
                                   "\xa1\x8f\x48\x21\x3e\xdb\x28\x17"
                                   "\x02\x00\x00\x00\x00\x00\x00\x00"
                                   "\xfa\x38\x26\xea\xe9\x42\x88\xea"
                                   "\x37\x56\x0d\x9a\xb2\x3b\x47\xf2"
                                   "hi",
                                   58));
  EXPECT_EQ(refs[0], (ValueRef{12, 56, 2, 0xea8842e9ea2638faULL}));
  std::string enc;
  refs[0].EncodeTo(&enc);
  EXPECT_EQ(
      enc, std::string("\x01\x0c\x38\x02\xfa\x38\x26\xea\xe9\x42\x88\xea", 12));
}

TEST_F(ValueFileTest, RoundTrip) {
  std::mt19937_64 rng(1);
  std::vector<std::string> values = {"", "small", RandomString(&rng, 256 << 10),
                                     RandomString(&rng, 1000)};
  std::vector<ValueRef> refs = WriteFile(values);
  EXPECT_EQ(refs[0].offset, kValueFileHeaderSize + kValueEntryHeaderSize);
  EXPECT_EQ(refs[1].offset, refs[0].offset + kValueEntryHeaderSize);
  auto reader = ValueFileReader::Open(env_.get(), path_);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->file_number(), 12u);
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(refs[i].file_number, 12u);
    EXPECT_EQ(refs[i].size, values[i].size());
    // Through the encoding, as the SSTable stores it.
    std::string enc;
    refs[i].EncodeTo(&enc);
    auto ref = ValueRef::DecodeFrom(enc);
    ASSERT_TRUE(ref.ok());
    auto v = (*reader)->Read(*ref);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_TRUE(*v == values[i]) << i;
  }
  std::vector<ValueRef> scanned;
  EXPECT_TRUE(ScanValueFile(env_.get(), path_, [&](const ValueRef& r) {
                scanned.push_back(r);
              }).ok());
  EXPECT_EQ(scanned, refs);
  EXPECT_TRUE(VerifyValueFile(env_.get(), path_).ok());
}

TEST_F(ValueFileTest, BigValuesAndConcurrentReads) {
  std::mt19937_64 rng(2);
  std::vector<std::string> values;
  for (size_t n : {size_t{64} << 20, size_t{3} << 20, size_t{256} << 10}) {
    values.push_back(RandomString(&rng, n));
  }
  std::vector<ValueRef> refs = WriteFile(values);
  auto reader = ValueFileReader::Open(env_.get(), path_);
  ASSERT_TRUE(reader.ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 2; ++k) {
        size_t i = (t + k) % values.size();
        auto v = (*reader)->Read(refs[i]);
        EXPECT_TRUE(v.ok() && *v == values[i]) << i;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_TRUE(VerifyValueFile(env_.get(), path_).ok());
}

TEST_F(ValueFileTest, ReadableBeforeSyncAndWhileAppending) {
  auto writer = ValueFileWriter::Create(env_.get(), path_, 12);
  ASSERT_TRUE(writer.ok());
  auto a = (*writer)->Add("alpha");
  ASSERT_TRUE(a.ok());
  auto reader = ValueFileReader::Open(env_.get(), path_);
  ASSERT_TRUE(reader.ok());
  auto b = (*writer)->Add("beta");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*(*reader)->Read(*a), "alpha");
  EXPECT_EQ(*(*reader)->Read(*b), "beta");
}

TEST_F(ValueFileTest, FlippedValueByteIsCorruption) {
  std::vector<ValueRef> refs =
      WriteFile({"first", std::string(5000, 'v'), "z"});
  FlipByte(refs[1].offset + 4321);
  auto reader = ValueFileReader::Open(env_.get(), path_);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(*(*reader)->Read(refs[0]), "first");
  EXPECT_EQ(*(*reader)->Read(refs[2]), "z");
  auto v = (*reader)->Read(refs[1]);
  ASSERT_TRUE(v.status().IsCorruption());
  std::string where =
      "file " + path_ + " offset " + std::to_string(refs[1].offset);
  EXPECT_NE(v.status().message().find(where), std::string::npos)
      << v.status().ToString();
  EXPECT_NE(v.status().message().find("checksum mismatch"), std::string::npos);
  Status s = VerifyValueFile(env_.get(), path_);
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find(where), std::string::npos) << s.ToString();
}

TEST_F(ValueFileTest, FlippedEntryHeaderByteIsCorruption) {
  std::vector<ValueRef> refs = WriteFile({"first", "second"});
  for (uint64_t i = 0; i < kValueEntryHeaderSize; ++i) {
    uint64_t off = refs[1].offset - kValueEntryHeaderSize + i;
    FlipByte(off);
    auto reader = ValueFileReader::Open(env_.get(), path_);
    ASSERT_TRUE(reader.ok());
    auto v = (*reader)->Read(refs[1]);
    EXPECT_TRUE(v.status().IsCorruption()) << i;
    EXPECT_NE(
        v.status().message().find(
            "offset " + std::to_string(refs[1].offset - kValueEntryHeaderSize)),
        std::string::npos)
        << v.status().ToString();
    EXPECT_TRUE(VerifyValueFile(env_.get(), path_).IsCorruption()) << i;
    FlipByte(off);  // restore
    EXPECT_TRUE(VerifyValueFile(env_.get(), path_).ok());
  }
}

TEST_F(ValueFileTest, DamagedFileHeader) {
  WriteFile({"v"});
  for (uint64_t i = 0; i < kValueFileHeaderSize; ++i) {
    FlipByte(i);
    auto reader = ValueFileReader::Open(env_.get(), path_);
    EXPECT_FALSE(reader.ok()) << i;
    EXPECT_NE(reader.status().message().find(path_), std::string::npos);
    EXPECT_FALSE(VerifyValueFile(env_.get(), path_).ok());
    FlipByte(i);
  }
  ASSERT_TRUE(WriteStringToFile(env_.get(), "short", path_, false).ok());
  EXPECT_TRUE(ValueFileReader::Open(env_.get(), path_).status().IsCorruption());
}

TEST_F(ValueFileTest, TruncatedFileIsDetected) {
  std::vector<ValueRef> refs = WriteFile({"first", std::string(3000, 'v')});
  uint64_t size = *env_->GetFileSize(path_);
  // Cut from the end towards the first entry (TruncateFile only shrinks
  // here).
  for (uint64_t cut = size - 1; cut > refs[0].offset + refs[0].size;
       cut -= std::min<uint64_t>(37, cut - refs[0].offset - refs[0].size)) {
    ASSERT_TRUE(env_->TruncateFile(path_, cut).ok());
    Status s = VerifyValueFile(env_.get(), path_);
    EXPECT_TRUE(s.IsCorruption()) << cut;
    EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.ToString();
    auto reader = ValueFileReader::Open(env_.get(), path_);
    ASSERT_TRUE(reader.ok());
    EXPECT_EQ(*(*reader)->Read(refs[0]), "first");
    auto v = (*reader)->Read(refs[1]);
    EXPECT_TRUE(v.status().IsCorruption()) << cut;
    EXPECT_NE(v.status().message().find("truncated"), std::string::npos)
        << v.status().ToString();
  }
  // Cut exactly after an entry: a shorter but valid file.
  ASSERT_TRUE(env_->TruncateFile(path_, refs[0].offset + refs[0].size).ok());
  EXPECT_TRUE(VerifyValueFile(env_.get(), path_).ok());
}

TEST_F(ValueFileTest, WrongFileNumberAndBadRef) {
  std::vector<ValueRef> refs = WriteFile({"v"});
  auto reader = ValueFileReader::Open(env_.get(), path_);
  ASSERT_TRUE(reader.ok());
  ValueRef other = refs[0];
  other.file_number = 13;
  EXPECT_TRUE((*reader)->Read(other).status().IsInvalidArgument());
  ValueRef low = refs[0];
  low.offset = 3;
  EXPECT_TRUE((*reader)->Read(low).status().IsCorruption());
  ValueRef wrong_size = refs[0];
  wrong_size.size = 2;
  EXPECT_TRUE((*reader)->Read(wrong_size).status().IsCorruption());
}

TEST_F(ValueFileTest, WriterErrorsAreSticky) {
  MemEnv env;
  ASSERT_TRUE(env.CreateDir("/db").ok());
  env.SetFreeSpace(100);
  auto writer = ValueFileWriter::Create(&env, path_, 12);
  ASSERT_TRUE(writer.ok());
  auto a = (*writer)->Add("x");
  ASSERT_TRUE(a.ok());
  auto big = (*writer)->Add(std::string(1000, 'b'));
  EXPECT_TRUE(big.status().IsNoSpace()) << big.status().ToString();
  EXPECT_NE(big.status().message().find(path_), std::string::npos);
  env.SetFreeSpace(1 << 20);
  // The file may end in a partial entry now: nothing more goes into it.
  EXPECT_TRUE((*writer)->Add("y").status().IsNoSpace());
  EXPECT_TRUE((*writer)->Sync().IsNoSpace());
  // What was added before the failure is still readable.
  auto reader = ValueFileReader::Open(&env, path_);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(*(*reader)->Read(*a), "x");
}

TEST_F(ValueFileTest, UseAfterCloseAndMissingDirectory) {
  auto writer = ValueFileWriter::Create(env_.get(), path_, 12);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_TRUE((*writer)->Add("x").status().IsInvalidArgument());
  EXPECT_TRUE((*writer)->Sync().IsInvalidArgument());
  EXPECT_FALSE(ValueFileWriter::Create(env_.get(), "/nope/1.val", 1).ok());
  EXPECT_FALSE(ValueFileReader::Open(env_.get(), "/db/missing.val").ok());
}

// The durability contract: a ref returned before Sync() is readable after a
// power loss, with no SyncDir() by the caller (the first Sync() does it).
TEST_F(ValueFileTest, SyncedValuesSurvivePowerLoss) {
  FaultInjectionEnv env(env_.get());
  ValueRef ref;
  {
    auto writer = ValueFileWriter::Create(&env, path_, 12);
    ASSERT_TRUE(writer.ok());
    auto r = (*writer)->Add(std::string(300000, 'p'));
    ASSERT_TRUE(r.ok());
    ref = *r;
    ASSERT_TRUE((*writer)->Sync().ok());
    ASSERT_TRUE((*writer)->Add(std::string(300000, 'q')).ok());  // unsynced
    env.SetFilesystemActive(false);
  }
  ASSERT_TRUE(env.DropUnsyncedData().ok());
  env.SetFilesystemActive(true);
  EXPECT_TRUE(VerifyValueFile(&env, path_).ok());
  auto reader = ValueFileReader::Open(&env, path_);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto v = (*reader)->Read(ref);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, std::string(300000, 'p'));
}

// A ref whose offset is beyond any file (a damaged ref) is Corruption on the
// POSIX Env too, where pread(2) at such an offset fails EINVAL: an IOError
// would make the engine treat a bad ref as a failing disk.
TEST(ValueFilePosixTest, RefOffsetBeyondAnyFileIsCorruption) {
  const char* tmp = getenv("TMPDIR");
  std::string dir =
      std::string(tmp != nullptr ? tmp : "/tmp") + "/value_file_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  Env* env = Env::Default();
  const std::string path = dir + "/000003.vlf";
  {
    auto writer = ValueFileWriter::Create(env, path, 3);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Add("value").ok());
    ASSERT_TRUE((*writer)->Close().ok());
  }
  auto reader = ValueFileReader::Open(env, path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  for (uint64_t offset :
       {uint64_t{1} << 63, ~uint64_t{0} - 3, (uint64_t{1} << 63) - 10}) {
    ValueRef ref{3, offset, 5, Checksum64("value")};
    Result<std::string> value = (*reader)->Read(ref);
    ASSERT_FALSE(value.ok());
    EXPECT_TRUE(value.status().IsCorruption()) << value.status().ToString();
  }
  reader->reset();
  ASSERT_TRUE(env->RemoveFile(path).ok());
  ASSERT_TRUE(env->RemoveDir(dir).ok());
}

}  // namespace
}  // namespace tabletfs
