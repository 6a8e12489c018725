#include "fs/inode_table.h"

#include <algorithm>

namespace tabletfs::fs {

InodeTable::InodeTable() {
  MutexLock lock(&mu_);
  Entry root;
  root.lookups = 1;  // the kernel never forgets the root
  by_inode_.emplace(kRootInode, root);
  by_node_.emplace(root.node, kRootInode);
}

uint64_t InodeTable::Lookup(const Node& node, uint64_t count) {
  MutexLock lock(&mu_);
  auto it = by_node_.find(node);
  if (it != by_node_.end()) {
    by_inode_[it->second].lookups += count;
    return it->second;
  }
  uint64_t ino = next_inode_++;
  Entry e;
  e.node = node;
  e.lookups = count;
  if (auto m = moved_.find(node); m != moved_.end()) {
    e.stat_ino = m->second.stat_ino;
  }
  by_inode_.emplace(ino, std::move(e));
  by_node_.emplace(node, ino);
  return ino;
}

std::optional<uint64_t> InodeTable::Find(const Node& node) {
  MutexLock lock(&mu_);
  auto it = by_node_.find(node);
  if (it == by_node_.end()) return std::nullopt;
  return it->second;
}

std::optional<Node> InodeTable::Get(uint64_t ino) {
  MutexLock lock(&mu_);
  auto it = by_inode_.find(ino);
  if (it == by_inode_.end()) return std::nullopt;
  return it->second.node;
}

bool InodeTable::Forget(uint64_t ino, uint64_t count) {
  if (ino == kRootInode) return false;
  MutexLock lock(&mu_);
  auto it = by_inode_.find(ino);
  if (it == by_inode_.end()) return false;
  Entry& e = it->second;
  e.lookups = count >= e.lookups ? 0 : e.lookups - count;
  if (e.lookups > 0) return false;
  auto n = by_node_.find(e.node);
  if (n != by_node_.end() && n->second == ino) by_node_.erase(n);
  EraseRetired(ino, e);
  by_inode_.erase(it);
  return true;
}

void InodeTable::Rebind(const Node& from, const Node& to) {
  MutexLock lock(&mu_);
  // Retired inodes of the source follow it to its new name.
  auto [first, last] = retired_.equal_range(from);
  std::vector<uint64_t> moved;
  for (auto r = first; r != last; ++r) moved.push_back(r->second);
  retired_.erase(first, last);
  for (uint64_t r : moved) {
    by_inode_[r].node = to;
    retired_.emplace(to, r);
  }
  moved_.erase(to);
  if (auto m = moved_.find(from); m != moved_.end()) {
    moved_.emplace(to, m->second);
    moved_.erase(m);
  }
  auto it = by_node_.find(from);
  if (it == by_node_.end()) {
    by_node_.erase(to);
    return;
  }
  uint64_t ino = it->second;
  by_node_.erase(it);
  by_node_[to] = ino;
  Entry& e = by_inode_[ino];
  e.node = to;
  e.opened_timestamp = INT64_MIN;
}

void InodeTable::Unbind(const Node& node, uint64_t ino) {
  MutexLock lock(&mu_);
  auto it = by_node_.find(node);
  if (it != by_node_.end() && it->second == ino) by_node_.erase(it);
  moved_.erase(node);  // a file created under the name is another file
  auto e = by_inode_.find(ino);
  if (e != by_inode_.end()) EraseRetired(ino, e->second);
}

bool InodeTable::Retire(const Node& node, uint64_t ino) {
  MutexLock lock(&mu_);
  auto it = by_node_.find(node);
  if (it == by_node_.end() || it->second != ino) return false;
  by_node_.erase(it);
  by_inode_[ino].retired = true;
  retired_.emplace(node, ino);
  NoteMoved(node, ino);
  ever_retired_.store(true, std::memory_order_release);
  return true;
}

void InodeTable::NoteMoved(const Node& node, uint64_t ino) {
  const uint64_t stat_ino = by_inode_[ino].stat_ino;
  const auto now = std::chrono::steady_clock::now();
  moved_[node] = Moved{stat_ino != 0 ? stat_ino : ino, now};
  if (moved_.size() < prune_at_) return;
  // Cells with no inode left, moved more than a minute ago (their new
  // inode was looked up long since). A loop, not erase_if: the lock
  // analysis cannot see mu_ held inside a lambda.
  for (auto m = moved_.begin(); m != moved_.end();) {
    const bool gone = now - m->second.at > std::chrono::minutes(1) &&
                      !by_node_.contains(m->first) &&
                      !retired_.contains(m->first);
    m = gone ? moved_.erase(m) : std::next(m);
  }
  prune_at_ = std::max<size_t>(4096, 2 * moved_.size());
}

bool InodeTable::Restore(const Node& node, uint64_t ino) {
  MutexLock lock(&mu_);
  auto e = by_inode_.find(ino);
  if (e == by_inode_.end() || !e->second.retired || !(e->second.node == node)) {
    return false;
  }
  EraseRetired(ino, e->second);
  auto bound = by_node_.find(node);
  if (bound != by_node_.end()) {
    by_inode_[bound->second].retired = true;
    retired_.emplace(node, bound->second);
    bound->second = ino;
  } else {
    by_node_.emplace(node, ino);
  }
  NoteMoved(node, ino);
  return true;
}

uint64_t InodeTable::StatIno(uint64_t ino) {
  if (!ever_retired_.load(std::memory_order_acquire)) return ino;
  MutexLock lock(&mu_);
  auto it = by_inode_.find(ino);
  if (it == by_inode_.end() || it->second.stat_ino == 0) return ino;
  return it->second.stat_ino;
}

std::vector<uint64_t> InodeTable::RetiredAlike(uint64_t ino) {
  std::vector<uint64_t> out;
  if (!ever_retired_.load(std::memory_order_acquire)) return out;
  MutexLock lock(&mu_);
  if (retired_.empty()) return out;
  auto e = by_inode_.find(ino);
  if (e == by_inode_.end()) return out;
  auto [first, last] = retired_.equal_range(e->second.node);
  for (auto r = first; r != last; ++r) {
    if (r->second != ino) out.push_back(r->second);
  }
  if (e->second.retired) {
    auto bound = by_node_.find(e->second.node);
    if (bound != by_node_.end()) out.push_back(bound->second);
  }
  return out;
}

std::vector<uint64_t> InodeTable::Retired(const Node& node) {
  std::vector<uint64_t> out;
  if (!ever_retired_.load(std::memory_order_acquire)) return out;
  MutexLock lock(&mu_);
  auto [first, last] = retired_.equal_range(node);
  for (auto r = first; r != last; ++r) out.push_back(r->second);
  return out;
}

void InodeTable::EraseRetired(uint64_t ino, Entry& e) {
  if (!e.retired) return;
  e.retired = false;
  auto [first, last] = retired_.equal_range(e.node);
  for (auto r = first; r != last; ++r) {
    if (r->second == ino) {
      retired_.erase(r);
      return;
    }
  }
}

bool InodeTable::SameVersionAsLastOpen(uint64_t ino, int64_t timestamp,
                                       uint64_t size) {
  MutexLock lock(&mu_);
  auto it = by_inode_.find(ino);
  if (it == by_inode_.end()) return false;
  Entry& e = it->second;
  bool same = e.opened_timestamp == timestamp && e.opened_size == size;
  e.opened_timestamp = timestamp;
  e.opened_size = size;
  return same;
}

std::vector<uint64_t> InodeTable::InodesOfFamily(const std::string& table,
                                                 const std::string& family) {
  std::vector<uint64_t> out;
  MutexLock lock(&mu_);
  for (const auto& [ino, e] : by_inode_) {
    if ((e.node.kind == NodeKind::kFamily || e.node.kind == NodeKind::kCell) &&
        e.node.table == table && e.node.family == family) {
      out.push_back(ino);
    }
  }
  return out;
}

std::vector<std::pair<uint64_t, Node>> InodeTable::Matching(
    const std::function<bool(const Node&)>& match) {
  std::vector<std::pair<uint64_t, Node>> out;
  MutexLock lock(&mu_);
  for (const auto& [ino, e] : by_inode_) {
    if (match(e.node)) out.emplace_back(ino, e.node);
  }
  return out;
}

uint64_t InodeTable::LookupCount(uint64_t ino) {
  MutexLock lock(&mu_);
  auto it = by_inode_.find(ino);
  return it == by_inode_.end() ? 0 : it->second.lookups;
}

size_t InodeTable::size() {
  MutexLock lock(&mu_);
  return by_inode_.size();
}

}  // namespace tabletfs::fs
