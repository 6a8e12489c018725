// `tabletctl compact`, `stats`, `tablets` and `check`.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "fs/status_files.h"
#include "mount/cli/commands.h"
#include "mount/cli/progress.h"
#include "mount/cli/text.h"

namespace tabletfs::cli {
namespace {

struct FileTotals {
  uint64_t files = 0;
  uint64_t bytes = 0;
};

FileTotals Totals(const DbStats& stats) {
  FileTotals t;
  for (const LevelStats& level : stats.levels) {
    t.files += level.files;
    t.bytes += level.bytes;
  }
  return t;
}

std::string Describe(const FileTotals& t) {
  return std::to_string(t.files) + (t.files == 1 ? " file, " : " files, ") +
         FormatBytes(t.bytes);
}

}  // namespace

int Compact(DB& db, const Args& args, std::ostream& out, std::ostream& err) {
  if (!args.empty()) return UsageError(err, "compact", "takes no arguments");
  const FileTotals before = Totals(db.GetStats());
  const auto start = std::chrono::steady_clock::now();
  const bool show = ProgressWanted(err);

  Status result;
  if (!show) {
    result = db.CompactAll();
  } else {
    // CompactAll blocks; draw the engine's counters while it runs.
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::thread worker([&] {
      Status s = db.CompactAll();
      std::lock_guard<std::mutex> lock(mu);
      result = s;
      done = true;
      cv.notify_all();
    });
    ProgressBar progress(err, true, "compacting", 0);
    {
      std::unique_lock<std::mutex> lock(mu);
      while (!cv.wait_for(lock, std::chrono::milliseconds(200),
                          [&] { return done; })) {
        const DbStats stats = db.GetStats();
        const double seconds = std::chrono::duration<double>(
                                   std::chrono::steady_clock::now() - start)
                                   .count();
        progress.Update(
            0, Describe(Totals(stats)) + ", " +
                   std::to_string(stats.compactions) + " compactions done, " +
                   std::to_string(stats.compactions_pending) + " pending, " +
                   std::to_string(static_cast<int>(seconds)) + "s");
      }
    }
    worker.join();
    progress.Finish();
  }
  if (!result.ok()) return Fail(err, "compact", result);
  const FileTotals after = Totals(db.GetStats());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  char elapsed[32];
  std::snprintf(elapsed, sizeof(elapsed), "%.1fs", seconds);
  out << "compacted: " << Describe(before) << " -> " << Describe(after)
      << " in " << elapsed << '\n';
  return kExitOk;
}

int Stats(DB& db, const Args& args, std::ostream& out, std::ostream& err) {
  if (!args.empty()) return UsageError(err, "stats", "takes no arguments");
  out << db.GetStats().ToString();
  return kExitOk;
}

int Tablets(Bigtable& db, const Args& args, std::ostream& out,
            std::ostream& err) {
  if (args.size() > 1) return UsageError(err, "tablets", "too many arguments");
  std::optional<std::string> table;
  if (!args.empty()) table = args[0];
  Result<std::string> text = fs::TabletsText(db, table);
  if (!text.ok()) return Fail(err, "tablets", text.status());
  out << *text;
  return kExitOk;
}

int Check(DB& db, const Args& args, std::ostream& out, std::ostream& err) {
  if (!args.empty()) return UsageError(err, "check", "takes no arguments");
  Status s = db.Verify();
  if (!s.ok()) return Fail(err, "check", s);
  s = db.BackgroundError();
  if (!s.ok()) return Fail(err, "check", s);
  const FileTotals t = Totals(db.GetStats());
  out << "ok: " << Describe(t) << " verified\n";
  return kExitOk;
}

}  // namespace tabletfs::cli
