#include "fs/lock_table.h"

#include <errno.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

namespace tabletfs::fs {

namespace {

bool Overlap(const LockTable::Lock& a, const LockTable::Lock& b) {
  return a.first <= b.last && b.first <= a.last;
}

}  // namespace

const LockTable::Lock* LockTable::Conflict(const std::vector<Lock>& held,
                                           const Lock& want) {
  for (const Lock& l : held) {
    if (l.owner != want.owner && Overlap(l, want) && (l.write || want.write)) {
      return &l;
    }
  }
  return nullptr;
}

void LockTable::Apply(std::vector<Lock>& held, const Lock& want, bool unlock) {
  // The owner's locks lose the range (split around it where they reach
  // past it), then it gets the new one.
  std::vector<Lock> kept;
  kept.reserve(held.size() + 2);
  for (const Lock& l : held) {
    if (l.owner != want.owner || !Overlap(l, want)) {
      kept.push_back(l);
      continue;
    }
    if (l.first < want.first) {
      Lock left = l;
      left.last = want.first - 1;
      kept.push_back(left);
    }
    if (want.last != kToEnd && l.last > want.last) {
      Lock right = l;
      right.first = want.last + 1;
      kept.push_back(right);
    }
  }
  if (!unlock) kept.push_back(want);
  held = std::move(kept);
}

std::optional<LockTable::Lock> LockTable::Test(const Node& node, Kind kind,
                                               const Lock& want) {
  MutexLock lock(&mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return std::nullopt;
  const Lock* c = Conflict(Of(it->second, kind), want);
  if (c == nullptr) return std::nullopt;
  return *c;
}

int LockTable::Set(const Node& node, Kind kind, const Lock& want, bool unlock,
                   bool wait, std::function<void(int)> reply,
                   uint64_t* waiter) {
  Replies replies;
  int rc = 0;
  {
    MutexLock lock(&mu_);
    used_.store(true, std::memory_order_release);
    NodeLocks& n = nodes_[node];
    std::vector<Lock>& held = Of(n, kind);
    // flock converts by dropping the old lock first (flock(2)).
    if (kind == Kind::kFlock && !unlock) Apply(held, want, /*unlock=*/true);
    if (!unlock && Conflict(held, want) != nullptr) {
      if (wait) {
        const uint64_t id = next_waiter_++;
        n.waiters.push_back(Waiter{id, kind, want, std::move(reply)});
        waiting_.emplace(id, node);
        *waiter = id;
        rc = -1;
      } else {
        rc = EAGAIN;
      }
    } else {
      Apply(held, want, unlock);
    }
    // Also after a refusal or a queued wait: a flock conversion dropped
    // the old lock, which may let others in.
    Wake(node, &replies);
  }
  Send(replies);
  return rc;
}

void LockTable::Rebind(const Node& from, const Node& to) {
  MutexLock lock(&mu_);
  auto it = nodes_.find(from);
  if (it == nodes_.end()) return;
  NodeLocks moved = std::move(it->second);
  nodes_.erase(it);
  for (const Waiter& w : moved.waiters) waiting_[w.id] = to;
  NodeLocks& dest = nodes_[to];
  dest.posix.insert(dest.posix.end(), moved.posix.begin(), moved.posix.end());
  dest.flock.insert(dest.flock.end(), moved.flock.begin(), moved.flock.end());
  dest.waiters.splice(dest.waiters.end(), moved.waiters);
}

void LockTable::Orphan(const Node& node, const std::vector<uint64_t>& inos) {
  if (!used() || inos.empty()) return;
  MutexLock lock(&mu_);
  // A key no name has: table names never hold a control byte.
  Node key;
  key.kind = NodeKind::kCell;
  key.table = "\x01removed";
  key.qualifier = std::to_string(inos.front());
  for (uint64_t ino : inos) orphans_[ino] = key;
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  NodeLocks moved = std::move(it->second);
  nodes_.erase(it);
  for (const Waiter& w : moved.waiters) waiting_[w.id] = key;
  nodes_[key] = std::move(moved);
}

std::optional<Node> LockTable::OrphanKey(uint64_t ino) {
  MutexLock lock(&mu_);
  auto it = orphans_.find(ino);
  if (it == orphans_.end()) return std::nullopt;
  return it->second;
}

void LockTable::ForgetInode(uint64_t ino) {
  MutexLock lock(&mu_);
  orphans_.erase(ino);
}

void LockTable::CancelOnThread(uint64_t waiter) {
  cancels_running_++;
  try {
    std::thread([this, waiter] {
      Cancel(waiter);
      cancels_running_--;
    }).detach();
  } catch (const std::system_error&) {
    // No thread: the wait ends when the lock is granted instead.
    cancels_running_--;
  }
}

LockTable::~LockTable() {
  while (cancels_running_.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void LockTable::Cancel(uint64_t waiter) {
  Replies replies;
  {
    MutexLock lock(&mu_);
    auto w = waiting_.find(waiter);
    if (w == waiting_.end()) return;  // granted already
    const Node node = w->second;
    waiting_.erase(w);
    NodeLocks& n = nodes_[node];
    for (auto it = n.waiters.begin(); it != n.waiters.end(); ++it) {
      if (it->id == waiter) {
        replies.emplace_back(std::move(it->reply), EINTR);
        n.waiters.erase(it);
        break;
      }
    }
    Wake(node, &replies);
  }
  Send(replies);
}

void LockTable::ReleaseOwner(const Node& node, Kind kind, uint64_t owner,
                             uint64_t handle) {
  Replies replies;
  {
    MutexLock lock(&mu_);
    auto it = nodes_.find(node);
    if (it == nodes_.end()) return;
    std::erase_if(Of(it->second, kind), [&](const Lock& l) {
      return l.owner == owner && (handle == 0 || l.handle == handle);
    });
    Wake(node, &replies);
  }
  Send(replies);
}

void LockTable::ReleaseHandle(const Node& node, uint64_t handle) {
  Replies replies;
  {
    MutexLock lock(&mu_);
    auto it = nodes_.find(node);
    if (it == nodes_.end()) return;
    std::erase_if(it->second.posix,
                  [&](const Lock& l) { return l.handle == handle; });
    Wake(node, &replies);
  }
  Send(replies);
}

size_t LockTable::LocksOn(const Node& node, Kind kind) {
  MutexLock lock(&mu_);
  auto it = nodes_.find(node);
  return it == nodes_.end() ? 0 : Of(it->second, kind).size();
}

void LockTable::Wake(const Node& node, Replies* replies) {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  NodeLocks& n = it->second;
  // Until a pass grants nothing: a grant can free what an earlier waiter
  // needs (a waiter that converts its own lock).
  for (bool granted = true; granted;) {
    granted = false;
    for (auto w = n.waiters.begin(); w != n.waiters.end();) {
      std::vector<Lock>& held = Of(n, w->kind);
      if (Conflict(held, w->want) != nullptr) {
        ++w;
        continue;
      }
      Apply(held, w->want, false);
      replies->emplace_back(std::move(w->reply), 0);
      waiting_.erase(w->id);
      w = n.waiters.erase(w);
      granted = true;
    }
  }
  if (n.posix.empty() && n.flock.empty() && n.waiters.empty()) {
    nodes_.erase(it);
  }
}

void LockTable::Send(Replies& replies) {
  for (auto& [reply, err] : replies) reply(err);
}

}  // namespace tabletfs::fs
