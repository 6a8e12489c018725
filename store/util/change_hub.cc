#include "store/util/change_hub.h"

#include <algorithm>
#include <deque>

#include "store/util/mutex.h"

namespace tabletfs {

std::string_view ChangeKindName(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kSetCell:
      return "set-cell";
    case ChangeKind::kDeleteVersion:
      return "delete-version";
    case ChangeKind::kDeleteCell:
      return "delete-cell";
    case ChangeKind::kDeleteFamily:
      return "delete-family";
    case ChangeKind::kDeleteRow:
      return "delete-row";
    case ChangeKind::kDropFamily:
      return "drop-family";
    case ChangeKind::kDropTable:
      return "drop-table";
  }
  return "unknown";
}

// One subscriber's bounded queue.
class ChangeHub::Queue {
 public:
  Queue(std::string table, size_t capacity, uint64_t exclude_origin)
      : table_(std::move(table)),
        capacity_(capacity),
        exclude_origin_(exclude_origin) {}

  bool Wants(const ChangeEvent& e) const {
    return (table_.empty() || e.table == table_) && WantsOrigin(e.origin);
  }
  bool WantsOrigin(uint64_t origin) const {
    return exclude_origin_ == 0 || origin != exclude_origin_;
  }
  uint64_t exclude_origin() const { return exclude_origin_; }

  // Appends what fits, counts the rest; never waits for the reader.
  void Push(const std::vector<ChangeEvent>& events) EXCLUDES(mu_) {
    bool any = false;
    {
      MutexLock l(&mu_);
      for (const ChangeEvent& e : events) {
        if (!Wants(e)) continue;
        any = true;
        // Once something is lost, nothing queues until the reader has
        // taken the queue: `lost` then sits between two batches.
        if (lost_ == 0 && events_.size() < capacity_) {
          events_.push_back(e);
        } else {
          ++lost_;
        }
      }
    }
    if (any) cv_.Signal();
  }

  ChangeBatch Read(std::chrono::microseconds timeout) EXCLUDES(mu_) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    MutexLock l(&mu_);
    while (events_.empty() && lost_ == 0 && !woken_) {
      auto now = std::chrono::steady_clock::now();
      if (now >= deadline) break;
      Await(std::chrono::duration_cast<std::chrono::microseconds>(deadline -
                                                                  now));
    }
    ChangeBatch batch;
    batch.events.assign(std::make_move_iterator(events_.begin()),
                        std::make_move_iterator(events_.end()));
    events_.clear();
    batch.lost = lost_;
    lost_ = 0;
    woken_ = false;
    return batch;
  }

  void Wake() EXCLUDES(mu_) {
    {
      MutexLock l(&mu_);
      woken_ = true;
    }
    cv_.Signal();
  }

 private:
  void Await(std::chrono::microseconds timeout)
      REQUIRES(mu_) NO_THREAD_SAFETY_ANALYSIS {
    cv_.WaitFor(timeout);
  }

  const std::string table_;
  const size_t capacity_;
  const uint64_t exclude_origin_;
  Mutex mu_;
  CondVar cv_{&mu_};
  std::deque<ChangeEvent> events_ GUARDED_BY(mu_);
  uint64_t lost_ GUARDED_BY(mu_) = 0;
  bool woken_ GUARDED_BY(mu_) = false;
};

struct ChangeHub::Core {
  Mutex mu;
  std::vector<std::shared_ptr<Queue>> queues GUARDED_BY(mu);
  std::atomic<int> count{0};
  // Subscriptions that exclude an origin.
  std::atomic<int> excluding{0};

  void Recount() REQUIRES(mu) {
    int ex = 0;
    for (const auto& q : queues) ex += q->exclude_origin() != 0 ? 1 : 0;
    count.store(static_cast<int>(queues.size()), std::memory_order_relaxed);
    excluding.store(ex, std::memory_order_relaxed);
  }
};

class ChangeHub::Subscription final : public ChangeSubscription {
 public:
  Subscription(std::shared_ptr<Core> core, std::shared_ptr<Queue> queue)
      : core_(std::move(core)), queue_(std::move(queue)) {}

  ~Subscription() override {
    MutexLock l(&core_->mu);
    auto& qs = core_->queues;
    qs.erase(std::remove(qs.begin(), qs.end(), queue_), qs.end());
    core_->Recount();
  }

  ChangeBatch Read(std::chrono::microseconds timeout) override {
    return queue_->Read(timeout);
  }
  void Wake() override { queue_->Wake(); }

 private:
  const std::shared_ptr<Core> core_;
  const std::shared_ptr<Queue> queue_;
};

ChangeHub::ChangeHub()
    : core_(std::make_shared<Core>()), subscribers_(&core_->count) {}

ChangeHub::~ChangeHub() = default;

Result<std::unique_ptr<ChangeSubscription>> ChangeHub::Subscribe(
    const SubscribeOptions& options) {
  if (options.max_queued_events == 0) {
    return Status::InvalidArgument("max_queued_events must be at least 1");
  }
  auto queue = std::make_shared<Queue>(
      options.table, options.max_queued_events, options.exclude_origin);
  MutexLock l(&core_->mu);
  core_->queues.push_back(queue);
  core_->Recount();
  return std::unique_ptr<ChangeSubscription>(
      std::make_unique<Subscription>(core_, std::move(queue)));
}

bool ChangeHub::WantsOrigin(uint64_t origin) const {
  const int count = core_->count.load(std::memory_order_relaxed);
  if (count == 0) return false;
  if (core_->excluding.load(std::memory_order_relaxed) < count) return true;
  MutexLock l(&core_->mu);
  for (const auto& q : core_->queues) {
    if (q->WantsOrigin(origin)) return true;
  }
  return false;
}

void ChangeHub::Publish(const std::vector<ChangeEvent>& events) {
  if (events.empty()) return;
  MutexLock l(&core_->mu);
  for (const std::shared_ptr<Queue>& q : core_->queues) q->Push(events);
}

void ChangeHub::AppendMutationEvents(std::string_view table,
                                     const RowMutation& mutation,
                                     int64_t commit_ts, uint64_t origin,
                                     std::vector<ChangeEvent>* out) {
  for (const RowMutation::Op& op : mutation.ops()) {
    ChangeEvent& e = out->emplace_back();
    e.table = std::string(table);
    e.row = mutation.row();
    e.timestamp = commit_ts;
    e.origin = origin;
    switch (op.type) {
      case RowMutation::OpType::kSetCell:
        e.kind = ChangeKind::kSetCell;
        break;
      case RowMutation::OpType::kDeleteVersion:
        e.kind = ChangeKind::kDeleteVersion;
        break;
      case RowMutation::OpType::kDeleteCell:
        e.kind = ChangeKind::kDeleteCell;
        break;
      case RowMutation::OpType::kDeleteFamily:
        e.kind = ChangeKind::kDeleteFamily;
        break;
      case RowMutation::OpType::kDeleteRow:
        e.kind = ChangeKind::kDeleteRow;
        break;
    }
    if (op.type != RowMutation::OpType::kDeleteRow) e.family = op.family;
    if (op.type == RowMutation::OpType::kSetCell ||
        op.type == RowMutation::OpType::kDeleteVersion) {
      e.qualifier = op.qualifier;
      if (op.timestamp != kServerTimestamp) e.timestamp = op.timestamp;
    } else if (op.type == RowMutation::OpType::kDeleteCell) {
      e.qualifier = op.qualifier;
    }
  }
}

}  // namespace tabletfs
