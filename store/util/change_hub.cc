#include "store/util/change_hub.h"

#include <algorithm>
#include <deque>

#include "store/util/mutex.h"

namespace tabletfs {

Status CheckSubscribeOptions(const SubscribeOptions& options) {
  if (options.max_queued_events == 0) {
    return Status::InvalidArgument("max_queued_events must be at least 1");
  }
  if (options.max_queued_bytes == 0) {
    return Status::InvalidArgument("max_queued_bytes must be at least 1");
  }
  return Status::OK();
}

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
  explicit Queue(const SubscribeOptions& options)
      : table_(options.table),
        capacity_(options.max_queued_events),
        capacity_bytes_(options.max_queued_bytes),
        values_(options.values),
        exclude_origin_(options.exclude_origin) {}

  bool Wants(const ChangeEvent& e) const {
    return (table_.empty() || e.table == table_) && WantsOrigin(e.origin);
  }
  bool WantsOrigin(uint64_t origin) const {
    return exclude_origin_ == 0 || origin != exclude_origin_;
  }
  uint64_t exclude_origin() const { return exclude_origin_; }
  bool values() const { return values_; }

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
        const size_t bytes = EventBytes(e);
        // (The first event queues whatever its size.)
        if (lost_ == 0 && events_.size() < capacity_ &&
            (events_.empty() || bytes_ + bytes <= capacity_bytes_)) {
          if (values_ || !e.value.has_value()) {
            events_.push_back(e);
          } else {
            ChangeEvent& q = events_.emplace_back();
            q.table = e.table;
            q.row = e.row;
            q.family = e.family;
            q.qualifier = e.qualifier;
            q.timestamp = e.timestamp;
            q.kind = e.kind;
            q.origin = e.origin;
          }
          bytes_ += bytes;
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
    bytes_ = 0;
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
  // What an event holds, roughly (the queue's byte bound).
  size_t EventBytes(const ChangeEvent& e) const {
    size_t n = sizeof(ChangeEvent) + e.row.size() + e.family.size() +
               e.qualifier.size();
    if (values_ && e.value.has_value()) n += e.value->size();
    return n;
  }

  void Await(std::chrono::microseconds timeout)
      REQUIRES(mu_) NO_THREAD_SAFETY_ANALYSIS {
    cv_.WaitFor(timeout);
  }

  const std::string table_;
  const size_t capacity_;
  const size_t capacity_bytes_;
  const bool values_;
  const uint64_t exclude_origin_;
  Mutex mu_;
  CondVar cv_{&mu_};
  std::deque<ChangeEvent> events_ GUARDED_BY(mu_);
  size_t bytes_ GUARDED_BY(mu_) = 0;
  uint64_t lost_ GUARDED_BY(mu_) = 0;
  bool woken_ GUARDED_BY(mu_) = false;
};

struct ChangeHub::Core {
  Mutex mu;
  std::vector<std::shared_ptr<Queue>> queues GUARDED_BY(mu);
  std::atomic<int> count{0};
  // Subscriptions that exclude an origin, and that want values.
  std::atomic<int> excluding{0};
  std::atomic<int> wanting_values{0};

  void Recount() REQUIRES(mu) {
    int ex = 0, values = 0;
    for (const auto& q : queues) {
      ex += q->exclude_origin() != 0 ? 1 : 0;
      values += q->values() ? 1 : 0;
    }
    count.store(static_cast<int>(queues.size()), std::memory_order_relaxed);
    excluding.store(ex, std::memory_order_relaxed);
    wanting_values.store(values, std::memory_order_relaxed);
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
    : core_(std::make_shared<Core>()),
      subscribers_(&core_->count),
      wanting_values_(&core_->wanting_values) {}

ChangeHub::~ChangeHub() = default;

Result<std::unique_ptr<ChangeSubscription>> ChangeHub::Subscribe(
    const SubscribeOptions& options) {
  TABLETFS_RETURN_IF_ERROR(CheckSubscribeOptions(options));
  auto queue = std::make_shared<Queue>(options);
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
                                     bool values,
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
        if (values && op.value.size() <= kMaxEventValueBytes) {
          e.value = op.value;
        }
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
