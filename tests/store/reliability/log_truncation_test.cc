// Truncation of the commit log at every byte of its last record (what a
// crash in the middle of a log write leaves): the database opens, the last
// mutation is entirely absent (or, uncut, entirely present), and every
// earlier mutation is intact. Also for a last record that spans several
// 32 KiB log blocks (cut at a stride and around every block boundary).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "store/db.h"
#include "store/env/mem_env.h"
#include "store/wal/log_format.h"
#include "store/wal/log_reader.h"
#include "tests/store/reliability/reliability_util.h"

namespace tabletfs::reliability {
namespace {

// Files of kDir, by name.
using Files = std::map<std::string, std::string>;

Files Snapshot(Env* env) {
  Files files;
  auto children = env->GetChildren(kDir);
  EXPECT_TRUE(children.ok());
  if (!children.ok()) return files;
  for (const std::string& name : *children) {
    if (name == "LOCK") continue;
    auto data = ReadFileToString(env, std::string(kDir) + "/" + name);
    EXPECT_TRUE(data.ok()) << name << ": " << data.status().ToString();
    if (data.ok()) files[name] = *data;
  }
  return files;
}

void Restore(const Files& files, MemEnv* env) {
  ASSERT_TRUE(env->CreateDir(kDir).ok());
  for (const auto& [name, data] : files) {
    ASSERT_TRUE(
        WriteStringToFile(env, data, std::string(kDir) + "/" + name, true)
            .ok());
  }
}

// The newest non-empty log and the offsets where each record ends.
bool LastLog(const Files& files, std::string* name,
             std::vector<uint64_t>* ends) {
  std::string best;
  for (const auto& [n, data] : files) {
    if (n.size() > 4 && n.ends_with(".log") && !data.empty()) best = n;
  }
  if (best.empty()) return false;
  *name = best;
  MemEnv tmp;
  EXPECT_TRUE(WriteStringToFile(&tmp, files.at(best), "/log", false).ok());
  auto file = tmp.NewSequentialFile("/log");
  EXPECT_TRUE(file.ok());
  LogReader reader(std::move(*file), best);
  std::string record;
  Status s;
  while (reader.ReadRecord(&record, &s)) {
    ends->push_back(reader.LastRecordEndOffset());
  }
  EXPECT_TRUE(s.ok()) << s.ToString();
  return !ends->empty();
}

struct Case {
  const char* name;
  size_t last_value_bytes;
  bool every_byte;
};

class LogTruncationTest : public testing::TestWithParam<Case> {};

TEST_P(LogTruncationTest, LastRecordIsAllOrNothing) {
  const Case& c = GetParam();
  MemEnv mem;
  Options options = SmallOptions(&mem);
  options.memtable_bytes = 8 << 20;     // no flush: all in the log
  options.large_value_bytes = 1 << 20;  // values stay in the log record
  std::map<int64_t, Mutation> written;
  Workload w(42);
  int64_t last_id = 0;
  {
    auto db = DB::Open(options, kDir);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE(CreateSchema(db->get()).ok());
    for (int i = 0; i < 20; ++i) {
      Mutation m = w.Next();
      if (i == 19) {
        // The last record: several cells, one of the requested size.
        m.cells.clear();
        m.cells.push_back({"f", "q0", "m" + std::to_string(m.id) + "/f:q0/"});
        m.cells.push_back({"g", "q1", std::string(c.last_value_bytes, 'L')});
        m.cells.push_back({"g", "q2", "m" + std::to_string(m.id) + "/g:q2/"});
        last_id = m.id;
      }
      written[m.id] = m;
      ASSERT_TRUE(
          (*db)
              ->Apply(kTable, Workload::ToRowMutation(m), WriteOptions())
              .ok());
    }
  }  // closing syncs the log
  Files files = Snapshot(&mem);
  std::string log;
  std::vector<uint64_t> ends;
  ASSERT_TRUE(LastLog(files, &log, &ends));
  ASSERT_GE(ends.size(), 2u);
  const uint64_t start = ends[ends.size() - 2];
  const uint64_t end = ends.back();
  ASSERT_EQ(end, files[log].size());

  std::set<uint64_t> cuts;
  for (uint64_t cut = start; cut <= end; ++cut) {
    bool near_boundary = false;
    for (uint64_t b = (start / kLogBlockSize + 1) * kLogBlockSize; b < end;
         b += kLogBlockSize) {
      if (cut + 16 >= b && cut <= b + 16) near_boundary = true;
    }
    if (c.every_byte || near_boundary || (cut - start) % 97 == 0 ||
        cut + 16 >= end || cut <= start + 16) {
      cuts.insert(cut);
    }
  }
  std::set<int64_t> earlier;
  for (const auto& [id, m] : written) {
    if (id != last_id) earlier.insert(id);
  }
  int cases = 0;
  for (uint64_t cut : cuts) {
    SCOPED_TRACE("log " + log + " cut to " + std::to_string(cut) +
                 " bytes (last record " + std::to_string(start) + ".." +
                 std::to_string(end) + ")");
    Files damaged = files;
    damaged[log].resize(cut);
    MemEnv env;
    Restore(damaged, &env);
    Options o = options;
    o.env = &env;
    auto db = DB::Open(o, kDir);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    CheckResult r = CheckDb(db->get(), written, earlier);
    ASSERT_TRUE(r.read_error.ok() && r.errors.empty()) << Describe(r);
    ASSERT_EQ(r.present.count(last_id), cut == end ? 1u : 0u);
    ++cases;
  }
  std::printf("log truncation (%s): %d cuts of a %llu-byte last record\n",
              c.name, cases, static_cast<unsigned long long>(end - start));
}

INSTANTIATE_TEST_SUITE_P(Records, LogTruncationTest,
                         testing::Values(Case{"small", 200, true},
                                         Case{"spans_blocks", 70000, false}),
                         [](const testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace tabletfs::reliability
