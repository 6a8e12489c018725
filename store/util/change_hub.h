// ChangeHub: the publishing side of change events (store/changes.h), shared
// by every implementation of the data-model interface. An implementation
// calls Publish() with the events of each commit, in commit order, from
// wherever its commits are ordered (the engine: the leader of the write
// queue, under its mutex), and returns Subscribe()'s subscriptions.
//
// Cost: with no subscribers, HasSubscribers() is one relaxed atomic load,
// and implementations skip building events. Publish() never waits for a
// subscriber: it holds the hub's lock and each queue's lock only to append.
//
// Thread safety: all methods may be called concurrently; callers order
// their Publish() calls themselves. Subscriptions may outlive the hub (they
// then receive nothing more).
#ifndef TABLETFS_STORE_UTIL_CHANGE_HUB_H_
#define TABLETFS_STORE_UTIL_CHANGE_HUB_H_

#include <atomic>
#include <memory>
#include <string_view>
#include <vector>

#include "store/changes.h"
#include "store/row_mutation.h"
#include "store/status.h"

namespace tabletfs {

class ChangeHub {
 public:
  ChangeHub();
  ~ChangeHub();
  ChangeHub(const ChangeHub&) = delete;
  ChangeHub& operator=(const ChangeHub&) = delete;

  // InvalidArgument when options.max_queued_events is 0.
  Result<std::unique_ptr<ChangeSubscription>> Subscribe(
      const SubscribeOptions& options);

  bool HasSubscribers() const {
    return subscribers_->load(std::memory_order_relaxed) > 0;
  }
  // Whether some subscriber wants the events of a write of `origin`
  // (SubscribeOptions::exclude_origin). One relaxed atomic load when no
  // subscriber excludes an origin.
  bool WantsOrigin(uint64_t origin) const;
  // Whether some subscriber wants values (SubscribeOptions::values): when
  // none does, implementations build events without them. One relaxed
  // atomic load.
  bool WantsValues() const {
    return wanting_values_->load(std::memory_order_relaxed) > 0;
  }

  // Queues `events` (one or more commits, in commit order) for every
  // subscription whose table they match.
  void Publish(const std::vector<ChangeEvent>& events);

  // The events of `mutation` committed to `table` at server timestamp
  // `commit_ts` by a write of WriteOptions::origin `origin`, appended to
  // *out in operation order; with `values`, a set's value (up to
  // kMaxEventValueBytes).
  static void AppendMutationEvents(std::string_view table,
                                   const RowMutation& mutation,
                                   int64_t commit_ts, uint64_t origin,
                                   bool values, std::vector<ChangeEvent>* out);

 private:
  class Queue;
  class Subscription;
  struct Core;

  std::shared_ptr<Core> core_;
  // Owned by core_; cached for HasSubscribers() and WantsValues().
  std::atomic<int>* subscribers_;
  std::atomic<int>* wanting_values_;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_UTIL_CHANGE_HUB_H_
