// tabletctl watch: a table's changes as they are committed, the lines of
// MOUNT/.changes/TABLE (fs/change_feed.h), from the store's change
// subscription: the engine's own on a data directory, ReadChangeStream
// through the daemon's socket or an endpoint (api/remote_bigtable.h).
#include <chrono>
#include <optional>

#include "fs/change_feed.h"
#include "mount/cli/args.h"
#include "mount/cli/commands.h"
#include "mount/cli/text.h"

namespace tabletfs::cli {

int Watch(Bigtable& db, const Args& args, std::ostream& out,
          std::ostream& err) {
  if (args.empty()) return UsageError(err, "watch", "missing TABLE");
  auto options = ParseOptions(args, 1, {"count"});
  if (!options.ok())
    return UsageError(err, "watch", options.status().message());
  std::optional<uint64_t> limit;
  if (auto it = options->find("count"); it != options->end()) {
    limit = ParseUint64(it->second);
    if (!limit || *limit == 0) {
      return UsageError(
          err, "watch",
          "bad count '" + it->second + "': expected a positive integer");
    }
  }
  const std::string& table = args[0];
  if (Result<TableInfo> t = db.GetTable(table); !t.ok()) {
    return Fail(err, "watch", t.status());
  }
  SubscribeOptions so;
  so.table = table;
  so.max_queued_events = fs::ChangeFeed::kMaxQueuedEvents;
  auto sub = db.Subscribe(so);
  if (!sub.ok()) return Fail(err, "watch", sub.status());
  uint64_t seen = 0;
  for (;;) {
    ChangeBatch batch = (*sub)->Read(std::chrono::seconds(1));
    if (limit && batch.events.size() >= *limit - seen) {
      batch.events.resize(*limit - seen);
      batch.lost = 0;  // after the last line wanted
    }
    seen += batch.events.size();
    out << fs::ChangeFeed::Lines(&db, batch) << std::flush;
    if (!out) {
      return Fail(err, "watch",
                  Status::IOError("writing standard output failed"));
    }
    if (limit && seen == *limit) return kExitOk;
    if (!batch.status.ok()) return Fail(err, "watch", batch.status);
  }
}

}  // namespace tabletfs::cli
