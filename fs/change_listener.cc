#include "fs/change_listener.h"

#include <sys/stat.h>

#include <functional>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "fs/filesystem.h"
#include "fs/log.h"

namespace tabletfs::fs {
namespace {

// How long one Read waits; also how long Stop may wait for the thread when
// Wake is missed (it is not: Stop wakes the subscription).
constexpr std::chrono::microseconds kReadWait{200000};

Node DataNode(NodeKind kind, const ChangeEvent& e) {
  Node n;
  n.kind = kind;
  n.table = e.table;
  if (kind != NodeKind::kTable) n.row = e.row;
  if (kind == NodeKind::kFamily || kind == NodeKind::kCell) {
    n.family = e.family;
  }
  if (kind == NodeKind::kCell) n.qualifier = e.qualifier;
  return n;
}

bool IsDataOrSchema(const Node& n) {
  if (n.view != View::kCurrent) return false;
  switch (n.kind) {
    case NodeKind::kRoot:
    case NodeKind::kTable:
    case NodeKind::kRow:
    case NodeKind::kFamily:
    case NodeKind::kCell:
    case NodeKind::kSchemaRoot:
    case NodeKind::kSchemaTable:
    case NodeKind::kSchemaFamily:
      return true;
    default:
      return false;
  }
}

// Whether `n` lies below what a wide event `e` removed.
bool Below(const ChangeEvent& e, const Node& n) {
  if (n.view != View::kCurrent || n.table != e.table) return false;
  const bool data_in_family =
      n.kind == NodeKind::kFamily || n.kind == NodeKind::kCell;
  switch (e.kind) {
    case ChangeKind::kDeleteFamily:
      return data_in_family && n.row == e.row && n.family == e.family;
    case ChangeKind::kDeleteRow:
      return (data_in_family || n.kind == NodeKind::kRow) && n.row == e.row;
    case ChangeKind::kDropFamily:
      // Rows that held only this family vanish with it.
      return ((data_in_family || n.kind == NodeKind::kSchemaFamily) &&
              n.family == e.family) ||
             n.kind == NodeKind::kRow || n.kind == NodeKind::kSchemaTable;
    case ChangeKind::kDropTable:
      return n.kind != NodeKind::kRoot && n.kind != NodeKind::kSchemaRoot;
    default:
      return false;
  }
}

}  // namespace

// The notices of one batch: each inode noticed once, each node's existence
// checked once (after every event of the batch committed, so the check sees
// the batch's outcome).
class ChangeListener::Pass {
 public:
  explicit Pass(Filesystem* fs) : fs_(fs) {}

  void Event(const ChangeEvent& e) {
    switch (e.kind) {
      case ChangeKind::kSetCell:
        Path(e, /*deleted=*/false);
        return;
      case ChangeKind::kDeleteVersion:
      case ChangeKind::kDeleteCell:
        Path(e, /*deleted=*/true);
        return;
      case ChangeKind::kDeleteFamily:
        Known(DataNode(NodeKind::kFamily, e), true);
        Known(DataNode(NodeKind::kRow, e), true);
        Known(DataNode(NodeKind::kTable, e), false);
        wide_.push_back(e);
        return;
      case ChangeKind::kDeleteRow:
        Known(DataNode(NodeKind::kRow, e), true);
        Known(DataNode(NodeKind::kTable, e), false);
        wide_.push_back(e);
        return;
      case ChangeKind::kDropFamily:
        Known(DataNode(NodeKind::kTable, e), false);
        wide_.push_back(e);
        return;
      case ChangeKind::kDropTable:
        Known(DataNode(NodeKind::kTable, e), true);
        Known(Node(), false);  // the root's attributes
        wide_.push_back(e);
        return;
    }
  }

  // Every known node of the data tree and `.schema`.
  void Everything() { everything_ = true; }

  // The one pass over the inode table that wide events and a loss need.
  void Finish() {
    if (!everything_ && wide_.empty()) return;
    auto matched = fs_->inodes().Matching([this](const Node& n) {
      if (everything_) return IsDataOrSchema(n);
      for (const ChangeEvent& e : wide_) {
        if (Below(e, n)) return true;
      }
      return false;
    });
    for (auto& [ino, node] : matched) Refresh(ino, node, /*may_vanish=*/true);
  }

 private:
  // A cell event: the cell, and its family, row and table directories
  // (their attributes; after a delete, perhaps their existence).
  void Path(const ChangeEvent& e, bool deleted) {
    Known(DataNode(NodeKind::kCell, e), deleted);
    Known(DataNode(NodeKind::kFamily, e), deleted);
    Known(DataNode(NodeKind::kRow, e), deleted);
    Known(DataNode(NodeKind::kTable, e), false);
  }

  // Notices for `node` if the kernel knows it: one hash lookup otherwise.
  void Known(const Node& node, bool may_vanish) {
    std::optional<uint64_t> ino = fs_->inodes().Find(node);
    if (ino.has_value()) Refresh(*ino, node, may_vanish);
  }

  void Refresh(uint64_t ino, const Node& node, bool may_vanish) {
    if (noticed_.insert(ino).second) {
      fs_->InvalidateInode(ino, /*await=*/false);
    }
    if (!may_vanish || node.kind == NodeKind::kRoot ||
        node.kind == NodeKind::kSchemaRoot || !checked_.insert(ino).second) {
      return;
    }
    struct stat st;
    if (!fs_->Stat(node, ino, &st).ok()) fs_->ForgetName(node, false);
  }

  Filesystem* const fs_;
  std::unordered_set<uint64_t> noticed_;
  std::unordered_set<uint64_t> checked_;
  std::vector<ChangeEvent> wide_;
  bool everything_ = false;
};

ChangeListener::ChangeListener(Filesystem* fs, Bigtable* store,
                               uint64_t own_origin)
    : fs_(fs) {
  SubscribeOptions so;
  so.max_queued_events = kMaxQueuedEvents;
  so.values = false;  // names are what it invalidates
  // The mount's own writes invalidate what they change before they reply:
  // their events are not even built.
  so.exclude_origin = own_origin;
  auto sub = store->Subscribe(so);
  if (!sub.ok() && sub.status().IsNotSupported()) {
    // A store that sends no events (a remote one): nothing to listen to.
    Log(LogLevel::kInfo,
        "the store sends no change events (" + sub.status().ToString() +
            "): writes from elsewhere reach the mount when the kernel's "
            "caches time out (entry_timeout, attr_timeout)");
    return;
  }
  if (!sub.ok()) {
    Log(LogLevel::kError,
        "cannot subscribe to the store's change events (" +
            sub.status().ToString() +
            "): writes through other doors reach the mount only when the "
            "kernel's cache times out");
    return;
  }
  subscription_ = std::move(sub).value();
  thread_ = std::thread([this] { Run(); });
}

ChangeListener::~ChangeListener() {
  stop_.store(true, std::memory_order_relaxed);
  if (subscription_) subscription_->Wake();
  if (thread_.joinable()) thread_.join();
  subscription_.reset();
}

void ChangeListener::Run() {
  while (!stop_.load(std::memory_order_relaxed)) {
    ChangeBatch batch = subscription_->Read(kReadWait);
    if (stop_.load(std::memory_order_relaxed)) return;
    if (!batch.status.ok()) {
      // Only a remote store's stream ends (and the listener subscribes to
      // every table, which a remote store refuses): nothing more comes.
      Log(LogLevel::kWarning,
          "the store's change events ended (" + batch.status.ToString() + ")");
      return;
    }
    // The daemon's own cache first: the notices below make the kernel ask
    // again.
    for (const ChangeEvent& e : batch.events) fs_->dir_times().Forget(e);
    if (batch.lost > 0) fs_->dir_times().ForgetAll();
    Pass pass(fs_);
    for (const ChangeEvent& e : batch.events) {
      pass.Event(e);  // never the mount's own (exclude_origin)
    }
    if (batch.lost > 0) {
      Log(LogLevel::kWarning, "fell behind the store's change events (" +
                                  std::to_string(batch.lost) +
                                  " lost): refreshing every cached node");
      pass.Everything();
    }
    pass.Finish();
  }
}

}  // namespace tabletfs::fs
