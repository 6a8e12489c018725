// Change events: every committed change of a store's data, published to
// subscribers in commit order, whatever door it came through (the C++ API,
// the filesystem, the CLI). The filesystem's kernel-cache invalidation,
// `.changes` and the API server's streams are subscribers
// (Bigtable::Subscribe, store/bigtable.h).
//
// One row mutation publishes one event per operation, in the operation's
// order; events of one mutation are never interleaved with another's.
// Schema drops publish one event each (kDropFamily, kDropTable): the data
// they covered is gone. Creating tables and families, and changing family
// settings, publish nothing. A kSetCell event carries the value written
// when it is at most kMaxEventValueBytes, so a subscriber shows it also
// after the version was deleted; a larger value (or one from a store that
// sends none) is read by the subscriber by its timestamp, and may be gone.
//
// A slow subscriber never slows a writer: each subscription has a bounded
// queue (events and bytes). When it is full, further events are dropped
// and counted; the
// next Read returns what was queued and the count (ChangeBatch::lost), so
// the subscriber learns it fell behind and must refresh whatever it derives
// from the stream (e.g. drop its caches). Events after the loss queue again
// once Read has emptied the queue.
//
// A local store's subscription lasts until it is destroyed. A remote
// store's (api/remote_bigtable.h) is a stream that can end: the server went
// away or dropped it; Read then says why (ChangeBatch::status).
//
// Thread safety: a ChangeSubscription is read by one thread at a time;
// Wake() may be called from any thread. Destroy a subscription before its
// store.
#ifndef TABLETFS_STORE_CHANGES_H_
#define TABLETFS_STORE_CHANGES_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/status.h"

namespace tabletfs {

enum class ChangeKind : uint8_t {
  kSetCell,        // a version written (family, qualifier, timestamp)
  kDeleteVersion,  // the version at timestamp removed
  kDeleteCell,     // every version of the cell removed
  kDeleteFamily,   // every cell of the family in the row removed
  kDeleteRow,      // every cell of the row removed
  kDropFamily,     // the family dropped from the schema, in every row
  kDropTable,      // the table dropped
};

// InvalidArgument for a queue bound of 0 events or 0 bytes (every
// implementation's Subscribe checks it).
struct SubscribeOptions;
Status CheckSubscribeOptions(const SubscribeOptions &options);

// "set-cell", "delete-version", "delete-cell", "delete-family",
// "delete-row", "drop-family", "drop-table".
std::string_view ChangeKindName(ChangeKind kind);

struct ChangeEvent {
  std::string table;
  std::string row;        // empty for kDropFamily, kDropTable
  std::string family;     // empty for kDeleteRow, kDropTable
  std::string qualifier;  // kSetCell, kDeleteVersion, kDeleteCell
  // kSetCell, kDeleteVersion: the version's timestamp (client-given or
  // server-assigned). kDeleteCell, kDeleteFamily, kDeleteRow: the server
  // timestamp of the commit. Drops: the last server timestamp assigned
  // before the drop.
  int64_t timestamp = 0;
  ChangeKind kind = ChangeKind::kSetCell;
  // The WriteOptions::origin of the write; 0 for schema drops.
  uint64_t origin = 0;
  // kSetCell: the value written, when at most kMaxEventValueBytes and the
  // store sends values; else unset.
  std::optional<std::string> value;

  bool operator==(const ChangeEvent &other) const = default;
};

// The largest value a kSetCell event carries.
inline constexpr size_t kMaxEventValueBytes = 64u << 10;

struct SubscribeOptions {
  // Only events of this table; empty: every table.
  std::string table;
  // Bound of the queue (InvalidArgument when 0).
  size_t max_queued_events = 4096;
  // Bound of the queue's bytes, names and values (InvalidArgument when 0;
  // an empty queue takes one event of any size): with values, events are
  // not all small.
  size_t max_queued_bytes = 64u << 20;
  // false: events without values (a subscriber that needs only names, as
  // the filesystem's cache invalidation, queues less).
  bool values = true;
  // Events of writes made with this WriteOptions::origin are not queued (a
  // door that learns of its own writes otherwise); 0 excludes nothing.
  // When every subscriber excludes a write's origin, the store does not
  // even build its events.
  uint64_t exclude_origin = 0;
  // Start in the past: when set, a server timestamp (microseconds), the
  // subscription first delivers the changes committed at or after it that
  // the store still holds, in commit order, then the live events, with no
  // gap and no duplicate between the two. Unset: only changes committed
  // after Subscribe returns. A time later than now starts now. The past
  // holds row mutations only (no schema drops), and a version deleted
  // since is still named (with its value when the log holds it inline).
  // How far back a store
  // holds changes, and what it answers for an older start, is its own
  // (DB: the commit logs it keeps, Options::change_history_bytes in
  // store/options.h; NotFound naming the oldest time it holds).
  std::optional<int64_t> since;
};

struct ChangeBatch {
  // Queued events, in commit order.
  std::vector<ChangeEvent> events;
  // Events dropped, all committed after `events` and before those of the
  // next Read, because the queue was full. 0: nothing lost. A subscription
  // that starts in the past and cannot read it (a damaged log) reports 1
  // for the rest of the past it skips (the store's log says why).
  uint64_t lost = 0;
  // OK while the subscription delivers. Otherwise it has ended for good
  // (after `events`): no more events come, and every later Read returns
  // this status at once.
  Status status;
  // The events are from the past of a subscription that starts there
  // (SubscribeOptions::since): read from the store when asked for, so a
  // subscriber may take them at its own pace (the live events queue
  // meanwhile, within the queue's bound).
  bool past = false;
};

// A subscription to the change events of one store. Destroying it
// unsubscribes.
class ChangeSubscription {
 public:
  ChangeSubscription() = default;
  ChangeSubscription(const ChangeSubscription &) = delete;
  ChangeSubscription &operator=(const ChangeSubscription &) = delete;
  virtual ~ChangeSubscription() = default;

  // Takes everything queued. When nothing is queued and nothing was lost,
  // first waits up to `timeout` for an event (or for Wake()); an empty
  // batch means none came.
  virtual ChangeBatch Read(std::chrono::microseconds timeout) = 0;
  // Makes a Read that waits now, or the next one, return at once.
  virtual void Wake() = 0;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_CHANGES_H_
