// Corruption: one flipped byte in the commit log, an SSTable's data blocks,
// index block, filter block or footer, a value file, the manifest or
// CURRENT, of a database that was closed cleanly (so everything written
// was acknowledged and synced). The database must either refuse to open
// with Corruption naming the file, or open and then give only correct data:
// reads either return exactly what was written or fail with Corruption, and
// Verify() reports damage in SSTables and value files with the file and the
// offset. Never wrong data, never a silent loss — except that a damaged
// last log record is indistinguishable from a torn tail and may be dropped
// (store/doc/log_format.md), and then only that one mutation.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "store/db.h"
#include "store/env/mem_env.h"
#include "store/table/format.h"
#include "store/wal/log_reader.h"
#include "tests/store/reliability/reliability_util.h"

namespace tabletfs::reliability {
namespace {

using Files = std::map<std::string, std::string>;

struct Region {
  std::string kind;  // "log", "sst-data", "sst-index", ...
  std::string file;
  uint64_t begin = 0, end = 0;  // byte range in the file
};

class DbCorruptionTest : public testing::Test {
 protected:
  void SetUp() override {
    Options options = SmallOptions(&mem_);
    auto db = DB::Open(options, kDir);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE(CreateSchema(db->get()).ok());
    Workload w(11);
    for (int i = 0; i < 400; ++i) {
      if (i == 380) {
        ASSERT_TRUE((*db)->Flush().ok());
        ASSERT_TRUE((*db)->CompactAll().ok());
      }
      Mutation m = w.Next();
      written_[m.id] = m;
      ASSERT_TRUE(
          (*db)
              ->Apply(kTable, Workload::ToRowMutation(m), WriteOptions())
              .ok());
      all_.insert(m.id);
    }
    db->reset();
    auto children = mem_.GetChildren(kDir);
    ASSERT_TRUE(children.ok());
    for (const std::string& name : *children) {
      if (name == "LOCK") continue;
      auto data = ReadFileToString(&mem_, std::string(kDir) + "/" + name);
      ASSERT_TRUE(data.ok());
      files_[name] = *data;
    }
  }

  std::vector<Region> Regions() {
    std::vector<Region> regions;
    for (const auto& [name, data] : files_) {
      if (data.empty()) continue;
      if (name.ends_with(".sst")) {
        Footer footer;
        uint64_t footer_at = data.size() - Footer::kEncodedLength;
        Status s = footer.DecodeFrom(std::string_view(data).substr(footer_at),
                                     name, footer_at);
        EXPECT_TRUE(s.ok()) << s.ToString();
        uint64_t data_end = footer.index.offset;
        if (footer.filter.size > 0) {
          data_end = std::min(data_end, footer.filter.offset);
          regions.push_back(
              {"sst-filter", name, footer.filter.offset,
               footer.filter.offset + footer.filter.size + kBlockTrailerSize});
        }
        regions.push_back({"sst-data", name, 0, data_end});
        regions.push_back(
            {"sst-index", name, footer.index.offset,
             footer.index.offset + footer.index.size + kBlockTrailerSize});
        regions.push_back({"sst-footer", name, footer_at, data.size()});
      } else if (name.ends_with(".log")) {
        regions.push_back({"log", name, 0, data.size()});
      } else if (name.ends_with(".vlf")) {
        regions.push_back({"value-file", name, 0, data.size()});
      } else if (name.starts_with("MANIFEST-")) {
        regions.push_back({"manifest", name, 0, data.size()});
      } else if (name == "CURRENT") {
        regions.push_back({"current", name, 0, data.size()});
      }
    }
    return regions;
  }

  // Where the last record of log `name` starts.
  uint64_t LastLogRecordStart(const std::string& name) {
    MemEnv tmp;
    EXPECT_TRUE(WriteStringToFile(&tmp, files_[name], "/log", false).ok());
    auto file = tmp.NewSequentialFile("/log");
    EXPECT_TRUE(file.ok());
    LogReader reader(std::move(*file), name);
    std::string record;
    Status s;
    uint64_t prev = 0, last = 0;
    while (reader.ReadRecord(&record, &s)) {
      prev = last;
      last = reader.LastRecordEndOffset();
    }
    return prev;
  }

  MemEnv mem_;
  Files files_;
  std::map<int64_t, Mutation> written_;
  std::set<int64_t> all_;
};

TEST_F(DbCorruptionTest, FlippedBytesAreDetectedNeverWrongData) {
  std::vector<Region> regions = Regions();
  std::map<std::string, int> per_kind;
  for (const Region& r : regions) per_kind[r.kind]++;
  for (const char* kind : {"log", "sst-data", "sst-index", "sst-filter",
                           "sst-footer", "value-file", "manifest"}) {
    EXPECT_GT(per_kind[kind], 0) << "the setup wrote no " << kind;
  }
  std::mt19937_64 rng(Seeds({5})[0]);
  int cases = 0, refused = 0, read_errors = 0, verify_errors = 0,
      torn_tails = 0;
  for (const Region& region : regions) {
    if (region.end <= region.begin) continue;
    std::set<uint64_t> offsets = {region.begin, region.end - 1,
                                  (region.begin + region.end) / 2};
    while (offsets.size() < 8 && offsets.size() < region.end - region.begin) {
      offsets.insert(region.begin + rng() % (region.end - region.begin));
    }
    for (uint64_t offset : offsets) {
      uint8_t mask = static_cast<uint8_t>(1 + rng() % 255);
      SCOPED_TRACE(region.kind + " " + region.file + ": byte " +
                   std::to_string(offset) + " ^= " + std::to_string(mask));
      ++cases;
      MemEnv env;
      ASSERT_TRUE(env.CreateDir(kDir).ok());
      for (const auto& [name, data] : files_) {
        std::string copy = data;
        if (name == region.file) {
          copy[offset] = static_cast<char>(copy[offset] ^ mask);
        }
        ASSERT_TRUE(
            WriteStringToFile(&env, copy, std::string(kDir) + "/" + name, true)
                .ok());
      }
      Options options = SmallOptions(&env);
      auto db = DB::Open(options, kDir);
      if (!db.ok()) {
        ++refused;
        const Status& s = db.status();
        EXPECT_TRUE(s.IsCorruption() || s.IsNotSupported() ||
                    (region.kind == "current" && s.IsNotFound()))
            << s.ToString();
        if (region.kind != "current") {
          EXPECT_NE(s.ToString().find(region.file), std::string::npos)
              << "the error does not name the damaged file: " << s.ToString();
        }
        if (region.kind == "log" || region.kind == "manifest") {
          EXPECT_NE(s.ToString().find("offset"), std::string::npos)
              << "the error does not give the offset: " << s.ToString();
        }
        continue;
      }
      std::set<int64_t> must = all_;
      int64_t last_id = written_.rbegin()->first;
      bool last_record =
          region.kind == "log" && offset >= LastLogRecordStart(region.file);
      if (last_record) must.erase(last_id);  // may read as a torn tail
      CheckResult r = CheckDb(db->get(), written_, must);
      EXPECT_TRUE(r.errors.empty()) << "opened and read wrong or lost data:\n"
                                    << Describe(r);
      if (!r.read_error.ok()) {
        ++read_errors;
        EXPECT_TRUE(r.read_error.IsCorruption()) << r.read_error.ToString();
        EXPECT_NE(r.read_error.ToString().find(region.file), std::string::npos)
            << "read error without the damaged file: "
            << r.read_error.ToString();
      } else if (last_record && r.present.count(last_id) == 0) {
        ++torn_tails;
      }
      Status verify = (*db)->Verify();
      if (region.kind.starts_with("sst") || region.kind == "value-file") {
        EXPECT_TRUE(verify.IsCorruption())
            << "Verify() after damage to " << region.file << ": "
            << verify.ToString();
        EXPECT_NE(verify.ToString().find(region.file), std::string::npos)
            << verify.ToString();
        EXPECT_NE(verify.ToString().find("offset"), std::string::npos)
            << verify.ToString();
      }
      if (!verify.ok()) ++verify_errors;
      if (HasFailure()) return;
    }
  }
  std::printf(
      "corruption: %d flipped bytes in %zu regions; %d refused at open, %d "
      "read errors, %d Verify errors, %d dropped as a torn tail\n",
      cases, regions.size(), refused, read_errors, verify_errors, torn_tails);
}

}  // namespace
}  // namespace tabletfs::reliability
