// I/O errors at each call site in turn: for every Env operation the engine
// uses (reads, appends, flushes, syncs, renames, removals, creations,
// directory syncs, truncations, opens, closes), a workload (writes with and
// without sync, a flush, a compaction, reads, close, reopen) runs once
// per call of that operation with exactly that call failing. Each failure
// must surface as a clear Status (IOError carrying the injected message), a
// background failure must stay sticky (later writes fail), and after the
// faults are cleared the database must reopen with every acknowledged write
// intact, every mutation whole, and every checksum good.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "store/db.h"
#include "store/env/mem_env.h"
#include "store/fault_env.h"
#include "tests/store/reliability/reliability_util.h"

namespace tabletfs::reliability {
namespace {

constexpr char kInjected[] = "injected I/O error";

struct RunResult {
  Status first_error;  // first failed step, OK if none
  std::string failed_step;
  uint64_t calls = 0;  // calls of the op during the run
  uint64_t injected = 0;
};

// Runs the workload with the nth call of `op` failing (nth == 0: none).
void RunWorkload(FaultOp op, int nth, uint64_t seed, RunResult* result) {
  MemEnv mem;
  FaultInjectionEnv env(&mem);
  Options options = SmallOptions(&env);
  options.memtable_bytes = 16 << 10;
  Workload w(seed);
  std::map<int64_t, Mutation> written;
  std::set<int64_t> acked;

  auto opened = DB::Open(options, kDir);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<DB> db = std::move(*opened);
  ASSERT_TRUE(CreateSchema(db.get()).ok());
  for (int i = 0; i < 20; ++i) {
    Mutation m = w.Next();
    written[m.id] = m;
    ASSERT_TRUE(
        db->Apply(kTable, Workload::ToRowMutation(m), WriteOptions()).ok());
    acked.insert(m.id);
  }
  ASSERT_TRUE(db->Flush().ok());

  env.ResetCounters();
  if (nth > 0) env.InjectError(op, nth, Status::IOError(kInjected));
  auto fail = [&](const std::string& step, const Status& s) {
    if (result->first_error.ok() && !s.ok()) {
      result->first_error = s;
      result->failed_step = step;
    }
  };
  for (int i = 0; i < 100 && result->first_error.ok(); ++i) {
    Mutation m = w.Next();
    written[m.id] = m;
    WriteOptions wo;
    wo.sync = m.sync;
    auto r = db->Apply(kTable, Workload::ToRowMutation(m), wo);
    if (r.ok()) {
      acked.insert(m.id);
    } else {
      fail("Apply of mutation " + std::to_string(m.id), r.status());
    }
    if (i == 30) fail("Flush", db->Flush());
    if (i == 60) fail("CompactAll", db->CompactAll());
    if (i % 10 == 5) {
      auto row = db->ReadRow(kTable, m.row, ReadOptions());
      if (!row.ok()) fail("ReadRow", row.status());
    }
    if (i == 99) fail("Sync", db->Sync());
  }
  if (result->first_error.ok()) fail("WaitForIdle", db->WaitForIdle());
  Status bg = db->BackgroundError();
  if (!bg.ok()) {
    fail("BackgroundError", bg);
    // Sticky: a later write reports the failure instead of pretending.
    Mutation m = w.Next();
    written[m.id] = m;
    auto r = db->Apply(kTable, Workload::ToRowMutation(m), WriteOptions());
    EXPECT_FALSE(r.ok()) << "a write succeeded after the background error "
                         << bg.ToString();
    if (r.ok()) acked.insert(m.id);
  }
  db.reset();
  // Reopen with the fault maybe still pending: recovery's own calls count.
  opened = DB::Open(options, kDir);
  if (!opened.ok()) {
    fail("reopen", opened.status());
  } else {
    CheckResult r = CheckDb(opened->get(), written, {});
    if (!r.read_error.ok()) fail("reading after reopen", r.read_error);
    opened->reset();
  }
  result->calls = env.CallCount(op);
  result->injected = env.InjectedFailureCount(op);

  if (!result->first_error.ok()) {
    const Status& s = result->first_error;
    EXPECT_TRUE(s.IsIOError()) << result->failed_step << ": " << s.ToString();
    EXPECT_NE(s.message().find(kInjected), std::string::npos)
        << result->failed_step
        << ": the error lost its cause: " << s.ToString();
  }
  // Faults cleared: the database opens with nothing acknowledged lost.
  env.ClearFaults();
  opened = DB::Open(options, kDir);
  ASSERT_TRUE(opened.ok()) << "reopen after clearing the fault: "
                           << opened.status().ToString();
  CheckResult r = CheckDb(opened->get(), written, acked);
  ASSERT_TRUE(r.read_error.ok() && r.errors.empty()) << Describe(r);
  Status verify = (*opened)->Verify();
  ASSERT_TRUE(verify.ok()) << verify.ToString();
}

class IoErrorTest : public testing::TestWithParam<FaultOp> {};

TEST_P(IoErrorTest, EachCallSiteInTurn) {
  const FaultOp op = GetParam();
  const uint64_t seed = Seeds({7})[0];
  std::printf("io errors (%s): seed %llu\n",
              std::string(FaultOpName(op)).c_str(),
              static_cast<unsigned long long>(seed));
  RunResult clean;
  RunWorkload(op, 0, seed, &clean);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(clean.first_error.ok())
      << clean.failed_step << ": " << clean.first_error.ToString();
  // Every call site for the first 40 calls, then a stride over the rest.
  const int calls = static_cast<int>(clean.calls);
  int runs = 0, failures_seen = 0;
  uint64_t injected = 0;
  for (int nth = 1; nth <= calls; nth += nth < 40 ? 1 : calls / 20 + 1) {
    SCOPED_TRACE(std::string(FaultOpName(op)) + " call " + std::to_string(nth) +
                 " of " + std::to_string(calls) + " fails (seed " +
                 std::to_string(seed) + ")");
    RunResult r;
    RunWorkload(op, nth, seed, &r);
    if (HasFatalFailure()) return;
    ++runs;
    injected += r.injected;
    if (!r.first_error.ok()) ++failures_seen;
  }
  std::printf(
      "io errors (%s): %d calls in the workload, %d runs, %llu faults "
      "injected, %d reported to the caller\n",
      std::string(FaultOpName(op)).c_str(), calls, runs,
      static_cast<unsigned long long>(injected), failures_seen);
}

INSTANTIATE_TEST_SUITE_P(Ops, IoErrorTest,
                         testing::Values(FaultOp::kRead, FaultOp::kAppend,
                                         FaultOp::kFlush, FaultOp::kSync,
                                         FaultOp::kRename, FaultOp::kRemove,
                                         FaultOp::kCreate, FaultOp::kSyncDir,
                                         FaultOp::kTruncate, FaultOp::kOpen,
                                         FaultOp::kClose),
                         [](const testing::TestParamInfo<FaultOp>& info) {
                           return std::string(FaultOpName(info.param));
                         });

}  // namespace
}  // namespace tabletfs::reliability
