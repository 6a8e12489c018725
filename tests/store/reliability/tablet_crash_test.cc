// Power loss at each step of a tablet split and of a tablet merge: a
// workload with tiny tablets (writes that split them, row-range deletes and
// CompactAll that merge them back, then writes that split them again) runs
// once to record every call that changes the disk, then once per crash
// point k with the power cut at the k-th such call (that call and every
// later one fail, then the unsynced data is dropped). Each crash point is
// labelled from what the engine was doing: the manifest record of a split
// or merge (decoded from the append), its sync, the outputs and manifest
// record of the "cleanup" compaction that rewrites what a split left
// shared, and the deletion of the parent's files. After each crash the
// database must open without an error line, hold exactly the model's state
// after some prefix of the operations that includes everything acknowledged
// as durable, show every mutation whole, cover the table with contiguous
// tablets, and pass Verify(); and it must stay so after its own background
// work and one more reopen.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "store/db.h"
#include "store/db/version_edit.h"
#include "store/env/mem_env.h"
#include "store/fault_env.h"
#include "store/reference/reference_bigtable.h"
#include "store/wal/log_format.h"
#include "tests/store/reliability/reliability_util.h"

namespace tabletfs::reliability {
namespace {

// Labels of the crash points inside a split or merge.
constexpr char kSplitRecord[] = "split: manifest record";
constexpr char kSplitSync[] = "split: manifest sync";
constexpr char kMergeRecord[] = "merge: manifest record";
constexpr char kMergeSync[] = "merge: manifest sync";
constexpr char kCleanupOutput[] = "cleanup: output file";
constexpr char kCleanupRecord[] = "cleanup: manifest record";
constexpr char kCleanupSync[] = "cleanup: manifest sync";
constexpr char kCleanupDelete[] = "cleanup: file deletion";
const char* const kLabels[] = {kSplitRecord, kSplitSync,     kMergeRecord,
                               kMergeSync,   kCleanupOutput, kCleanupRecord,
                               kCleanupSync, kCleanupDelete};

// One call that changes the disk.
struct Step {
  char op = 0;  // c(reate) a(ppend) f(lush) s(ync) x(close) r(ename)
                // d(elete) y (sync dir) t(runcate)
  std::string file;
  std::string label;  // empty: not a step of a split or merge
  bool SameCall(const Step& o) const { return op == o.op && file == o.file; }
  std::string ToString() const {
    return std::string(1, op) + " " + file + (label.empty() ? "" : " [") +
           label + (label.empty() ? "" : "]");
  }
};

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsTableFile(const std::string& name) {
  return name.ends_with(".sst") || name.ends_with(".vlf");
}

// Where the power goes: at disk call number `call` (1, 2, ...), or at the
// `nth` call labelled `label`; neither set: never.
struct CutPoint {
  uint64_t call = 0;
  std::string label;
  uint64_t nth = 0;
  std::string ToString() const {
    return label.empty() ? "disk call " + std::to_string(call)
                         : "'" + label + "' step " + std::to_string(nth);
  }
};

// Forwards to a FaultInjectionEnv, numbering every call that changes the
// disk and labelling it; the call at the cut point turns the fault env's
// filesystem off first, so it and every later one fail: the power goes at
// that step. Thread-safe.
class CrashEnv : public Env {
 public:
  CrashEnv(FaultInjectionEnv* fault, CutPoint cut)
      : fault_(fault), cut_(std::move(cut)) {}

  std::vector<Step> trace() {
    std::lock_guard l(mu_);
    return trace_;
  }
  // The call the power went at, if it did.
  std::optional<Step> cut_step() {
    std::lock_guard l(mu_);
    if (cut_index_ == 0) return std::nullopt;
    return trace_[cut_index_ - 1];
  }

  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(
      const std::string& path) override {
    return fault_->NewSequentialFile(path);
  }
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    return fault_->NewRandomAccessFile(path);
  }
  Result<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path) override {
    BeginStep('c', path);
    return Wrap(fault_->NewWritableFile(path), path);
  }
  Result<std::unique_ptr<WritableFile>> NewAppendableFile(
      const std::string& path) override {
    BeginStep('c', path);
    return Wrap(fault_->NewAppendableFile(path), path);
  }
  bool FileExists(const std::string& path) override {
    return fault_->FileExists(path);
  }
  Result<std::vector<std::string>> GetChildren(
      const std::string& dir) override {
    return fault_->GetChildren(dir);
  }
  Status RemoveFile(const std::string& path) override {
    BeginStep('d', path);
    return fault_->RemoveFile(path);
  }
  Status CreateDir(const std::string& dir) override {
    BeginStep('c', dir);
    return fault_->CreateDir(dir);
  }
  Status RemoveDir(const std::string& dir) override {
    BeginStep('d', dir);
    return fault_->RemoveDir(dir);
  }
  Result<uint64_t> GetFileSize(const std::string& path) override {
    return fault_->GetFileSize(path);
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    BeginStep('r', from + "->" + BaseName(to));
    return fault_->RenameFile(from, to);
  }
  Status TruncateFile(const std::string& path, uint64_t size) override {
    BeginStep('t', path);
    return fault_->TruncateFile(path, size);
  }
  Status SyncDir(const std::string& dir) override {
    BeginStep('y', dir);
    return fault_->SyncDir(dir);
  }
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    return fault_->LockFile(path);
  }
  Result<uint64_t> GetFreeSpace(const std::string& path) override {
    return fault_->GetFreeSpace(path);
  }
  int64_t NowMicros() override { return fault_->NowMicros(); }

 private:
  class File : public WritableFile {
   public:
    File(CrashEnv* env, std::unique_ptr<WritableFile> base, std::string path)
        : env_(env), base_(std::move(base)), path_(std::move(path)) {}
    Status Append(std::string_view data) override {
      env_->BeginStep('a', path_, data);
      return base_->Append(data);
    }
    Status Flush() override {
      env_->BeginStep('f', path_);
      return base_->Flush();
    }
    Status Sync() override {
      env_->BeginStep('s', path_);
      return base_->Sync();
    }
    Status Close() override {
      env_->BeginStep('x', path_);
      return base_->Close();
    }
    uint64_t Size() const override { return base_->Size(); }

   private:
    CrashEnv* const env_;
    std::unique_ptr<WritableFile> base_;
    const std::string path_;
  };

  Result<std::unique_ptr<WritableFile>> Wrap(
      Result<std::unique_ptr<WritableFile>> file, const std::string& path) {
    if (!file.ok()) return file.status();
    return std::unique_ptr<WritableFile>(
        new File(this, std::move(file).value(), path));
  }

  // What a manifest append records: a split, a merge, a compaction of a
  // tablet that a split left sharing files, or something else ("").
  std::string ClassifyManifestAppend(std::string_view data) {
    if (data.size() <= kLogHeaderSize ||
        static_cast<uint8_t>(data[kLogChecksumSize + 2]) !=
            static_cast<uint8_t>(LogFragmentType::kFull)) {
      return "";
    }
    VersionEdit edit;
    if (!edit.DecodeFrom(data.substr(kLogHeaderSize), "manifest").ok()) {
      return "";
    }
    if (!edit.splits.empty()) {
      for (const auto& s : edit.splits) {
        unclean_.erase(s.parent);
        unclean_.insert(s.left);
        unclean_.insert(s.right);
      }
      return "split";
    }
    if (!edit.merges.empty()) return "merge";
    bool cleanup = false;
    for (const auto& d : edit.deleted_files) {
      if (unclean_.erase(d.tablet_id) > 0) cleanup = true;
    }
    return cleanup ? "cleanup" : "";
  }

  void BeginStep(char op, const std::string& path, std::string_view data = {}) {
    std::lock_guard l(mu_);
    Step step{op, BaseName(path), ""};
    bool manifest = step.file.starts_with("MANIFEST-");
    if (manifest && op == 'a') {
      record_ = ClassifyManifestAppend(data);
      step.label = record_.empty() ? "" : record_ + ": manifest record";
      after_cleanup_ = record_ == "cleanup";
    } else if (manifest && op == 's') {
      if (!record_.empty()) step.label = record_ + ": manifest sync";
    } else if (op == 'd' && after_cleanup_ && IsTableFile(step.file)) {
      step.label = kCleanupDelete;
    }
    trace_.push_back(step);
    bool cut = cut_.label.empty()
                   ? trace_.size() == cut_.call
                   : step.label == cut_.label && ++label_seen_ == cut_.nth;
    if (cut && cut_index_ == 0) {
      cut_index_ = trace_.size();
      fault_->SetFilesystemActive(false);
    }
  }

  FaultInjectionEnv* const fault_;
  const CutPoint cut_;
  std::mutex mu_;
  std::vector<Step> trace_;
  uint64_t label_seen_ = 0;     // calls labelled cut_.label so far
  uint64_t cut_index_ = 0;      // the call the power went at (0: none yet)
  std::string record_;          // kind of the last manifest record
  bool after_cleanup_ = false;  // since a cleanup record, until the next
  std::set<uint32_t> unclean_;  // split children not compacted since
};

// Labels, in a finished trace, the table files a cleanup compaction wrote:
// those written since the manifest record before its own.
void LabelCleanupOutputs(std::vector<Step>* trace) {
  size_t last_record = 0;
  for (size_t i = 0; i < trace->size(); ++i) {
    Step& s = (*trace)[i];
    if (!s.file.starts_with("MANIFEST-") || s.op != 'a') continue;
    if (s.label == kCleanupRecord) {
      for (size_t j = last_record; j < i; ++j) {
        Step& out = (*trace)[j];
        if (IsTableFile(out.file) && out.op != 'd' && out.label.empty()) {
          out.label = kCleanupOutput;
        }
      }
    }
    last_record = i + 1;
  }
}

// ---------------------------------------------------------------------------
// The workload and its model
// ---------------------------------------------------------------------------

struct Op {
  enum Kind { kWrite, kDeleteRow, kSync, kCompactAll } kind = kWrite;
  Mutation m;       // kWrite
  std::string row;  // kDeleteRow
  bool sync = false;
};

// 250 writes that split the table's one tablet many times, the rows of
// [r1, r3) and then of [r5, r7) deleted and compacted away (merges), then
// 80 more writes (splits again). Writes use Workload's rows r0..r39.
std::vector<Op> MakeOps(uint64_t seed) {
  Workload w(seed);
  std::vector<Op> ops;
  auto push = [&](Op::Kind kind) {
    Op op;
    op.kind = kind;
    ops.push_back(op);
  };
  auto writes = [&](int n) {
    for (int i = 0; i < n; ++i) {
      Op op;
      op.m = w.Next();
      op.sync = op.m.sync;
      ops.push_back(op);
      if (w.OneIn(30)) push(Op::kSync);
    }
  };
  auto delete_rows = [&](char first) {
    for (int i = -1; i < 10; ++i) {
      Op op;
      op.kind = Op::kDeleteRow;
      op.row = std::string("r") + first;
      if (i >= 0) op.row += std::to_string(i);
      op.sync = w.OneIn(8);
      ops.push_back(op);
    }
  };
  writes(250);
  delete_rows('1');
  delete_rows('2');
  push(Op::kCompactAll);
  delete_rows('5');
  delete_rows('6');
  push(Op::kSync);
  push(Op::kCompactAll);
  writes(80);
  push(Op::kSync);
  return ops;
}

using CellKey = std::tuple<std::string, std::string, std::string, int64_t>;
using State = std::map<CellKey, std::string>;

uint64_t EntryHash(const CellKey& k, const std::string& v) {
  const auto& [row, family, qualifier, ts] = k;
  return std::hash<std::string>()(row + '\0' + family + '\0' + qualifier +
                                  '\0' + std::to_string(ts) + '\0' + v);
}

// Every version of kTable in `db`.
Result<State> ReadState(Bigtable& db) {
  State out;
  ScanOptions so;
  so.read.max_versions = 0;
  TABLETFS_ASSIGN_OR_RETURN(std::unique_ptr<Scanner> sc,
                            db.NewScanner(kTable, so));
  for (; sc->Valid(); sc->Next()) {
    TABLETFS_ASSIGN_OR_RETURN(std::string_view value, sc->value());
    out[{std::string(sc->row()), std::string(sc->family()),
         std::string(sc->qualifier()), sc->timestamp()}] = std::string(value);
  }
  TABLETFS_RETURN_IF_ERROR(sc->status());
  return out;
}

// The table's state after each prefix of the operations: the reference
// implementation (store/reference/, the oracle) given the same operations,
// with an order-independent hash of its versions kept as each row changes,
// so that most prefixes are ruled out without reading the whole table.
class Model {
 public:
  Model() : oracle_(NewReferenceBigtable(ReferenceOptions())) {
    Status s = CreateSchema(oracle_.get());
    EXPECT_TRUE(s.ok()) << s.ToString();
  }

  void Apply(const Op& op) {
    if (op.kind != Op::kWrite && op.kind != Op::kDeleteRow) return;
    const std::string& row = op.kind == Op::kWrite ? op.m.row : op.row;
    hash_ -= RowHash(row);
    RowMutation m = op.kind == Op::kWrite ? Workload::ToRowMutation(op.m)
                                          : RowMutation(row).DeleteRow();
    Status s = oracle_->Apply(kTable, m, WriteOptions()).status();
    EXPECT_TRUE(s.ok()) << s.ToString();
    hash_ += RowHash(row);
    state_.reset();
  }
  // Every version the oracle holds (read once per prefix).
  const State& state() {
    if (!state_.has_value()) {
      Result<State> read = ReadState(*oracle_);
      EXPECT_TRUE(read.ok()) << read.status().ToString();
      state_ = read.ok() ? std::move(read).value() : State();
    }
    return *state_;
  }
  uint64_t hash() const { return hash_; }

 private:
  uint64_t RowHash(const std::string& row) {
    ReadOptions ro;
    ro.max_versions = 0;
    Result<Row> r = oracle_->ReadRow(kTable, row, ro);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    uint64_t h = 0;
    if (!r.ok()) return h;
    for (const Cell& c : r->cells) {
      h += EntryHash({row, c.family, c.qualifier, c.timestamp}, c.value);
    }
    return h;
  }

  std::unique_ptr<Bigtable> oracle_;
  std::optional<State> state_;  // of the oracle, read since the last Apply
  uint64_t hash_ = 0;
};

// The length P of the operation prefix whose model state `found` equals,
// trying P from `min_prefix` to ops.size(); -1 when none does.
int MatchingPrefix(const std::vector<Op>& ops, size_t min_prefix,
                   const State& found) {
  uint64_t hash = 0;
  for (const auto& [k, v] : found) hash += EntryHash(k, v);
  Model model;
  for (size_t p = 0; p <= ops.size(); ++p) {
    if (p > 0) model.Apply(ops[p - 1]);
    if (p >= min_prefix && model.hash() == hash && model.state() == found) {
      return static_cast<int>(p);
    }
  }
  return -1;
}

// Whether each row of `found` is the model's row after some prefix of the
// operations on that row that holds every one of them among the first
// `min_prefix` operations; "" when so, else the first row that is not.
std::string CheckRowPrefixes(const std::vector<Op>& ops, size_t min_prefix,
                             const State& found) {
  std::map<std::string, std::vector<size_t>> row_ops;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.kind == Op::kWrite) row_ops[op.m.row].push_back(i);
    if (op.kind == Op::kDeleteRow) row_ops[op.row].push_back(i);
  }
  std::map<std::string, State> found_rows;
  for (const auto& [k, v] : found) found_rows[std::get<0>(k)][k] = v;
  for (const auto& [row, found_row] : found_rows) {
    if (row_ops.count(row) == 0) return "row " + row + " was never written";
  }
  for (const auto& [row, indexes] : row_ops) {
    const State& want = found_rows[row];
    Model model;
    bool match = false;
    for (size_t n = 0; n <= indexes.size() && !match; ++n) {
      if (n > 0) model.Apply(ops[indexes[n - 1]]);
      bool durable_left = n < indexes.size() && indexes[n] < min_prefix;
      match = !durable_left && model.state() == want;
    }
    if (!match) {
      return "row " + row + " (" + std::to_string(want.size()) +
             " versions) is the state after no prefix of its " +
             std::to_string(indexes.size()) + " operations";
    }
  }
  return "";
}

// For a failure message: the prefix (of at least `min_prefix`) whose model
// state differs least from `found`, and the first differences.
std::string NearestPrefix(const std::vector<Op>& ops, size_t min_prefix,
                          const State& found) {
  Model model;
  size_t best = 0, best_diff = SIZE_MAX;
  for (size_t p = 0; p <= ops.size(); ++p) {
    if (p > 0) model.Apply(ops[p - 1]);
    if (p < min_prefix) continue;
    size_t diff = 0;
    for (const auto& [k, v] : found) {
      auto it = model.state().find(k);
      diff += it == model.state().end() || it->second != v;
    }
    for (const auto& [k, v] : model.state()) diff += found.count(k) == 0;
    if (diff < best_diff) {
      best_diff = diff;
      best = p;
    }
  }
  Model at;
  for (size_t p = 0; p < best; ++p) at.Apply(ops[p]);
  auto name = [](const CellKey& k) {
    return std::get<0>(k) + "/" + std::get<1>(k) + ":" + std::get<2>(k) + "@" +
           std::to_string(std::get<3>(k));
  };
  std::string out = "nearest prefix " + std::to_string(best) + " differs in " +
                    std::to_string(best_diff) + " versions:";
  int shown = 0;
  for (const auto& [k, v] : found) {
    auto it = at.state().find(k);
    if ((it == at.state().end() || it->second != v) && shown++ < 8) {
      out += "\n  unexpected " + name(k);
    }
  }
  for (const auto& [k, v] : at.state()) {
    if (found.count(k) == 0 && shown++ < 8) out += "\n  missing " + name(k);
  }
  for (size_t p = min_prefix > 3 ? min_prefix - 3 : 0; p < ops.size(); ++p) {
    const Op& op = ops[p];
    out += "\n  op " + std::to_string(p) + ": ";
    if (op.kind == Op::kWrite) {
      out += "write " + op.m.row + " id " + std::to_string(op.m.id);
    } else if (op.kind == Op::kDeleteRow) {
      out += "delete row " + op.row;
    } else {
      out += op.kind == Op::kSync ? "sync" : "compact all";
    }
    if (op.sync) out += " (sync)";
  }
  return out;
}

// The tablets of kTable: contiguous, in order, covering every row.
std::string CheckTablets(DB* db, size_t* count) {
  auto tablets = db->ListTablets(kTable);
  if (!tablets.ok()) return "ListTablets: " + tablets.status().ToString();
  *count = tablets->size();
  if (tablets->empty()) return "no tablets";
  if (!tablets->front().start_row.empty()) {
    return "first tablet starts at '" + tablets->front().start_row + "'";
  }
  if (!tablets->back().end_row.empty()) {
    return "last tablet ends at '" + tablets->back().end_row + "'";
  }
  for (size_t i = 0; i < tablets->size(); ++i) {
    const TabletInfo& t = (*tablets)[i];
    if (i + 1 < tablets->size() && t.end_row != (*tablets)[i + 1].start_row) {
      return "tablet " + std::to_string(i) + " ends at '" + t.end_row +
             "' but the next starts at '" + (*tablets)[i + 1].start_row + "'";
    }
    if (!t.end_row.empty() && t.start_row >= t.end_row) {
      return "tablet " + std::to_string(i) + " is empty or inverted";
    }
  }
  return "";
}

Options CrashOptions(Env* env, std::vector<std::string>* lines,
                     std::mutex* lines_mu) {
  Options o = SmallOptions(env);
  o.memtable_bytes = 16 << 10;
  o.target_file_bytes = 8 << 10;
  o.tablet_split_bytes = 4 << 10;
  auto print = o.logger;
  o.logger = [lines, lines_mu, print](LogLevel level, std::string_view line) {
    if (print) print(level, line);
    std::lock_guard l(*lines_mu);
    lines->push_back(std::to_string(static_cast<int>(level)) + " " +
                     std::string(line));
  };
  return o;
}

struct RunResult {
  std::vector<Step> trace;
  std::optional<Step> cut;
  DbStats stats;          // at the end of the workload (before the close)
  size_t attempted = 0;   // operations started
  size_t min_prefix = 0;  // operations acknowledged as durable: a prefix
};

// Runs `ops` on a fresh database in `mem`, the power cut at `cut`; stops
// at the first failure, closes, and drops what was not synced.
void RunOps(const std::vector<Op>& ops, const CutPoint& cut, MemEnv* mem,
            RunResult* result) {
  FaultInjectionEnv fault(mem);
  CrashEnv env(&fault, cut);
  const bool crash = cut.call != 0 || cut.nth != 0;
  std::vector<std::string> lines;
  std::mutex lines_mu;
  Options options = CrashOptions(&env, &lines, &lines_mu);
  {
    // The schema first, before any crash point (schema writes are durable).
    Options setup = options;
    setup.env = &fault;
    auto opened = DB::Open(setup, kDir);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    ASSERT_TRUE(CreateSchema(opened->get()).ok());
  }
  {
    auto opened = DB::Open(options, kDir);
    if (opened.ok()) {
      std::unique_ptr<DB> db = std::move(*opened);
      for (const Op& op : ops) {
        ++result->attempted;
        Status s;
        WriteOptions wo;
        wo.sync = op.sync;
        switch (op.kind) {
          case Op::kWrite:
            s = db->Apply(kTable, Workload::ToRowMutation(op.m), wo).status();
            break;
          case Op::kDeleteRow:
            s = db->Apply(kTable, RowMutation(op.row).DeleteRow(), wo).status();
            break;
          case Op::kSync:
            s = db->Sync();
            break;
          case Op::kCompactAll:
            s = db->CompactAll();
            break;
        }
        if (s.ok() && (op.sync || op.kind == Op::kSync)) {
          result->min_prefix = result->attempted;
        }
        // Idle between operations: the calls come in the same order in
        // every run, so a crash point names the same step each time.
        if (s.ok()) s = db->WaitForIdle();
        if (!s.ok()) {
          EXPECT_TRUE(crash) << "operation " << result->attempted
                             << " failed without a crash: " << s.ToString();
          break;
        }
      }
      result->stats = db->GetStats();
    } else {
      EXPECT_TRUE(crash) << "open failed without a crash: "
                         << opened.status().ToString();
    }
  }
  result->trace = env.trace();
  result->cut = env.cut_step();
  fault.SetFilesystemActive(false);
  ASSERT_TRUE(fault.DropUnsyncedData().ok());
}

// Opens what `mem` holds and checks it against the model. *prefix gets the
// operation prefix whose state the database holds, -1 when none does (see
// PowerLossKeepsAPrefixOfWritesAcrossTablets).
void Recover(const std::vector<Op>& ops, const RunResult& run, MemEnv* mem,
             int* prefix, size_t* tablets) {
  std::vector<std::string> lines;
  std::mutex lines_mu;
  Options options = CrashOptions(mem, &lines, &lines_mu);
  auto opened = DB::Open(options, kDir);
  ASSERT_TRUE(opened.ok()) << "reopen: " << opened.status().ToString();
  std::unique_ptr<DB> db = std::move(*opened);
  {
    std::lock_guard l(lines_mu);
    for (const std::string& line : lines) {
      EXPECT_FALSE(line.starts_with("3 "))
          << "recovery logged an error: " << line;
    }
  }

  // The existing harness's promises: no invented or partial mutation, and
  // every write acknowledged as durable there (unless a later delete of
  // its row may have removed it).
  std::map<int64_t, Mutation> written;
  std::set<int64_t> durable;
  std::set<std::string> deleted_later;
  for (size_t i = run.attempted; i-- > 0;) {
    const Op& op = ops[i];
    if (op.kind == Op::kDeleteRow) deleted_later.insert(op.row);
    if (op.kind != Op::kWrite) continue;
    written[op.m.id] = op.m;
    if (i < run.min_prefix && deleted_later.count(op.m.row) == 0) {
      durable.insert(op.m.id);
    }
  }
  CheckResult check = CheckDb(db.get(), written, durable);
  ASSERT_TRUE(check.read_error.ok() && check.errors.empty()) << Describe(check);

  // The model: the state after some prefix of the operations that holds
  // every one acknowledged as durable (the log is one sequence, and a
  // split or merge changes no data).
  Result<State> found = ReadState(*db);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  std::vector<Op> tried(ops.begin(), ops.begin() + run.attempted);
  *prefix = MatchingPrefix(tried, run.min_prefix, *found);
  std::string row_error = CheckRowPrefixes(tried, run.min_prefix, *found);
  ASSERT_EQ(row_error, "") << NearestPrefix(tried, run.min_prefix, *found);
  EXPECT_GE(*prefix, 0) << "the state is no prefix of the operations: "
                        << NearestPrefix(tried, run.min_prefix, *found);
  std::string bad = CheckTablets(db.get(), tablets);
  ASSERT_EQ(bad, "");
  Status verify = db->Verify();
  ASSERT_TRUE(verify.ok()) << verify.ToString();

  // The recovered database's own work (a split it resumes, the cleanup of
  // shared files) and one more reopen change nothing.
  Status idle = db->WaitForIdle();
  ASSERT_TRUE(idle.ok()) << idle.ToString();
  db.reset();
  opened = DB::Open(options, kDir);
  ASSERT_TRUE(opened.ok()) << "second reopen: " << opened.status().ToString();
  db = std::move(*opened);
  Result<State> again = ReadState(*db);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_TRUE(*again == *found) << "the state changed after the recovered "
                                   "database's background work and a reopen";
  ASSERT_EQ(CheckTablets(db.get(), tablets), "");
  verify = db->Verify();
  ASSERT_TRUE(verify.ok()) << verify.ToString();
}

TEST(TabletCrashTest, PowerLossAtEachStepOfSplitsAndMerges) {
  // Crash points outside the labelled steps: a stride over them, and over
  // the appends of cleanup outputs (their creations, syncs and closes are
  // all tested).
#if defined(__SANITIZE_ADDRESS__)
  const size_t budget = 20;
#else
  const size_t budget = 60;
#endif
  const std::vector<uint64_t> default_seeds = {11, 12};
  uint64_t total_points = 0, total_splits = 0, total_merges = 0;
  for (uint64_t seed : Seeds(default_seeds)) {
    SCOPED_TRACE("seed " + std::to_string(seed) +
                 " (rerun with TABLETFS_SEED=" + std::to_string(seed) + ")");
    std::printf("tablet crash: seed %llu\n",
                static_cast<unsigned long long>(seed));
    const std::vector<Op> ops = MakeOps(seed);

    // The reference run: no crash.
    RunResult ref;
    {
      MemEnv mem;
      RunOps(ops, CutPoint(), &mem, &ref);
      ASSERT_FALSE(HasFatalFailure());
      ASSERT_EQ(ref.attempted, ops.size());
      int prefix = -1;
      size_t tablets = 0;
      Recover(ops, ref, &mem, &prefix, &tablets);
      ASSERT_FALSE(HasFatalFailure());
      EXPECT_EQ(prefix, static_cast<int>(ops.size()));
    }
    LabelCleanupOutputs(&ref.trace);
    std::printf(
        "tablet crash: %zu operations, %zu disk calls, %llu splits, %llu "
        "merges, %llu tablets at the end\n",
        ops.size(), ref.trace.size(),
        static_cast<unsigned long long>(ref.stats.tablet_splits),
        static_cast<unsigned long long>(ref.stats.tablet_merges),
        static_cast<unsigned long long>(ref.stats.tablets));
    ASSERT_GE(ref.stats.tablet_splits, 8u) << "the workload must split";
    ASSERT_GE(ref.stats.tablet_merges, 3u) << "the workload must merge";
    total_splits += ref.stats.tablet_splits;
    total_merges += ref.stats.tablet_merges;

    // Every step labelled from the call itself, by its occurrence (so a
    // run whose calls shift a little still cuts at that step); every
    // cleanup output creation, sync and close by call number; a stride
    // over the rest.
    std::map<std::string, uint64_t> labelled;
    size_t others = 0, appends = 0;
    for (const Step& st : ref.trace) {
      if (st.label == kCleanupOutput && st.op == 'a') {
        ++appends;
      } else if (st.label.empty()) {
        ++others;
      } else {
        ++labelled[st.label];
      }
    }
    for (const char* label : kLabels) {
      EXPECT_GT(labelled[label], 0u)
          << "the workload has no step '" << label << "'";
    }
    // How many times a labelled step comes shifts a little between runs
    // (a run whose background work met the operations differently makes
    // one cleanup fewer; half the runs of seed 11 on a machine at a load
    // of 4-6 cut at an occurrence the reference run alone had): the
    // points are the occurrences each of seven runs reached.
    for (int extra = 0; extra < 6; extra++) {
      MemEnv other_mem;
      RunResult other;
      RunOps(ops, CutPoint(), &other_mem, &other);
      ASSERT_FALSE(HasFatalFailure());
      std::map<std::string, uint64_t> counts;
      for (const Step& st : other.trace) {
        if (!st.label.empty()) ++counts[st.label];
      }
      for (auto& [label, n] : labelled) {
        if (label != kCleanupOutput) n = std::min(n, counts[label]);
      }
    }
    std::vector<CutPoint> points;
    for (const auto& [label, n] : labelled) {
      if (label == kCleanupOutput) continue;
      for (uint64_t nth = 1; nth <= n; ++nth) {
        points.push_back({0, label, nth});
      }
    }
    const size_t other_stride = std::max<size_t>(1, others / budget);
    const size_t append_stride = std::max<size_t>(1, appends / budget);
    for (size_t i = 0, o = 0, a = 0; i < ref.trace.size(); ++i) {
      const Step& st = ref.trace[i];
      bool take = false;
      if (st.label == kCleanupOutput) {
        take = st.op != 'a' || a++ % append_stride == 0;
      } else if (st.label.empty()) {
        take = o++ % other_stride == 0;
      }
      if (take) points.push_back({i + 1, "", 0});
    }

    // Per label: crash points tested, and those that cut the same call as
    // in the reference run (labelled steps: a call with that label).
    std::map<std::string, std::pair<size_t, size_t>> hit;
    std::set<int> prefixes;
    size_t not_prefix = 0;
    size_t unreached = 0;  // labelled points no run reached
    for (const CutPoint& cut : points) {
      Step want;
      if (cut.label.empty()) want = ref.trace[cut.call - 1];
      SCOPED_TRACE("power cut at " + cut.ToString() + " (reference: " +
                   (cut.label.empty() ? want.ToString() : cut.label) + ")");
      // The calls of a run shift a little from run to run (when background
      // work finishes against the next operation), so a point cut by call
      // number near the end of the reference run (a compaction's output at
      // the close) is sometimes past the end of a run: one in three or four
      // runs of seed 11 on a quiet machine. Such a run is made again, on a
      // fresh disk, at most ten times.
      std::unique_ptr<MemEnv> mem;
      RunResult run;
      for (int attempt = 0; attempt < 10 && !run.cut.has_value(); attempt++) {
        mem = std::make_unique<MemEnv>();
        run = RunResult();
        RunOps(ops, cut, mem.get(), &run);
        ASSERT_FALSE(HasFatalFailure());
      }
      if (!run.cut.has_value() && !cut.label.empty()) {
        // A cleanup occurrence this run's background work did not make in
        // ten tries: counted, and bounded below.
        ++unreached;
        continue;
      }
      ASSERT_TRUE(run.cut.has_value()) << "the run never reached the point";
      int prefix = -1;
      size_t tablets = 0;
      Recover(ops, run, mem.get(), &prefix, &tablets);
      ASSERT_FALSE(HasFatalFailure()) << "cut call: " << run.cut->ToString();
      if (prefix >= 0) {
        prefixes.insert(prefix);
      } else {
        ++not_prefix;
      }
      std::string label = cut.label.empty() ? want.label : cut.label;
      if (label.empty()) label = "other";
      ++hit[label].first;
      bool same = cut.label.empty() ? run.cut->SameCall(want)
                                    : run.cut->label == cut.label;
      if (same) ++hit[label].second;
      ++total_points;
    }
    for (const auto& [label, n] : hit) {
      std::printf(
          "tablet crash:   %-26s %4zu crash points, %4zu at the "
          "intended call\n",
          label.c_str(), n.first, n.second);
    }
    std::printf(
        "tablet crash: %zu crash points, %zu distinct surviving prefixes, %zu "
        "states that are no prefix of all writes\n",
        points.size(), prefixes.size(), not_prefix);
    // A few labelled occurrences near the end of a busy run's cleanups may
    // not come in ten tries; every other point was cut and recovered.
    std::printf("tablet crash: %zu labelled points no run reached\n",
                unreached);
    EXPECT_LE(unreached * 50, points.size())
        << unreached << " of " << points.size() << " points never reached";
    for (const char* label : kLabels) {
      EXPECT_GT(hit[label].second, 0u)
          << "no crash run cut the power at a '" << label << "' step";
    }
  }
  std::printf(
      "tablet crash: %llu crash points in all, over %llu splits and "
      "%llu merges\n",
      static_cast<unsigned long long>(total_points),
      static_cast<unsigned long long>(total_splits),
      static_cast<unsigned long long>(total_merges));
}

// Power loss keeps a prefix of the writes: a write acknowledged after
// another may survive only if that one does too, when the two go to
// different tablets. Here a write to table "t" is followed by writes to
// table "u" until u's tablet passes tablet_split_bytes, mostly in memory:
// the engine freezes and flushes that one tablet before splitting it, so
// u's writes reach a synced SSTable while the earlier write to t was only
// in the log. A flush therefore syncs the log before its manifest edit
// (DBImpl::SyncLogForFlush); without that, all 18 writes to u survived and
// the write to t did not, and the crash test above found 243 of 721 crash
// points leaving no prefix.
TEST(TabletCrashTest, PowerLossKeepsAPrefixOfWritesAcrossTablets) {
  MemEnv mem;
  FaultInjectionEnv env(&mem);
  Options options = SmallOptions(&env);
  options.memtable_bytes = 256 << 10;  // no budget freeze, no log switch
  options.tablet_split_bytes = 4 << 10;
  int later_writes = 0;
  {
    auto db = DB::Open(options, kDir);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE(CreateSchema(db->get()).ok());
    ASSERT_TRUE((*db)->CreateTable("u").ok());
    ASSERT_TRUE((*db)->CreateFamily("u", "f", FamilySettings()).ok());
    RowMutation first("first");
    first.SetCell("f", "q", 1, "written before u's rows");
    ASSERT_TRUE((*db)->Apply(kTable, first, WriteOptions()).ok());
    // About 8 KiB into u: past the split threshold, all in its memtable.
    while ((*db)->GetStats().flushes == 0 && later_writes < 64) {
      RowMutation m("row" + std::to_string(1000 + later_writes++));
      m.SetCell("f", "q", 1, std::string(200, 'u'));
      ASSERT_TRUE((*db)->Apply("u", m, WriteOptions()).ok());
      ASSERT_TRUE((*db)->WaitForIdle().ok());
    }
    ASSERT_GT((*db)->GetStats().flushes, 0u) << "u's tablet was not flushed";
    env.SetFilesystemActive(false);
  }
  ASSERT_TRUE(env.DropUnsyncedData().ok());
  env.SetFilesystemActive(true);

  auto db = DB::Open(options, kDir);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto first = (*db)->ReadCell(kTable, "first", "f", "q", ReadOptions());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  int survived = 0;
  for (int i = 0; i < later_writes; ++i) {
    auto row =
        (*db)->ReadRow("u", "row" + std::to_string(1000 + i), ReadOptions());
    ASSERT_TRUE(row.ok()) << row.status().ToString();
    survived += !row->cells.empty();
  }
  std::printf(
      "prefix: %d of %d later writes to u survived, the first write "
      "to t %s\n",
      survived, later_writes, first->empty() ? "did not" : "did");
  EXPECT_TRUE(survived == 0 || !first->empty())
      << survived << " writes to table u survived the power loss, but the "
      << "write to table t acknowledged before all of them did not: the "
      << "state is no prefix of the acknowledged writes";
}

}  // namespace
}  // namespace tabletfs::reliability
