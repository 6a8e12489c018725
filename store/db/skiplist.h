// SkipList: a sorted set of arena-allocated keys (const char* to memtable
// entries) with lock-free readers.
//
// Thread safety: Insert() needs external synchronization (one writer at a
// time: the engine's write queue). Readers (Contains, Iterator) need none
// and may run concurrently with the writer; they see a prefix-consistent
// set because a node is fully initialized before it is published with a
// release store. Nodes are never deleted while the list lives.
#ifndef TABLETFS_STORE_DB_SKIPLIST_H_
#define TABLETFS_STORE_DB_SKIPLIST_H_

#include <atomic>
#include <cassert>
#include <cstdint>
#include <new>
#include <random>

#include "store/db/arena.h"

namespace tabletfs {

// Comparator: int operator()(const Key& a, const Key& b) const, <0/0/>0.
template <typename Key, class Comparator>
class SkipList {
 private:
  struct Node;

 public:
  SkipList(Comparator cmp, Arena* arena)
      : compare_(cmp), arena_(arena), head_(NewNode(Key(), kMaxHeight)) {
    for (int i = 0; i < kMaxHeight; ++i) {
      head_->SetNext(i, nullptr);
      last_prev_[i] = head_;
    }
  }
  SkipList(const SkipList&) = delete;
  SkipList& operator=(const SkipList&) = delete;

  // REQUIRES: nothing equal to key is in the list.
  void Insert(const Key& key) {
    // A key just after the last one inserted (a sequential load, or the
    // next cell of a row) goes where the last insert's search ended: when
    // no node lies between the two, the last search's predecessors are
    // this key's too, at every level. Otherwise search from the top.
    Node** prev = last_prev_;
    Node* x = nullptr;
    if (last_ != nullptr && compare_(last_->key, key) < 0 &&
        ((x = last_->NoBarrierNext(0)) == nullptr ||
         compare_(key, x->key) < 0)) {
      // prev (last_prev_) already holds the predecessors.
    } else {
      x = FindGreaterOrEqual(key, prev);
    }
    assert(x == nullptr || compare_(key, x->key) != 0);
    (void)x;
    int height = RandomHeight();
    int max_height = max_height_.load(std::memory_order_relaxed);
    if (height > max_height) {
      for (int i = max_height; i < height; ++i) prev[i] = head_;
      // Readers that see the new height before the node find nullptr from
      // head_ at those levels and simply drop a level.
      max_height_.store(height, std::memory_order_relaxed);
    }
    Node* n = NewNode(key, height);
    for (int i = 0; i < height; ++i) {
      n->NoBarrierSetNext(i, prev[i]->NoBarrierNext(i));
      prev[i]->SetNext(i, n);
      // The new node is the last one below a later, larger key here.
      prev[i] = n;
    }
    last_ = n;
  }

  bool Contains(const Key& key) const {
    Node* x = FindGreaterOrEqual(key, nullptr);
    return x != nullptr && compare_(key, x->key) == 0;
  }

  class Iterator {
   public:
    explicit Iterator(const SkipList* list) : list_(list), node_(nullptr) {}
    bool Valid() const { return node_ != nullptr; }
    const Key& key() const {
      assert(Valid());
      return node_->key;
    }
    void Next() {
      assert(Valid());
      node_ = node_->Next(0);
    }
    void Seek(const Key& target) {
      node_ = list_->FindGreaterOrEqual(target, nullptr);
    }
    void SeekToFirst() { node_ = list_->head_->Next(0); }

   private:
    const SkipList* list_;
    Node* node_;
  };

 private:
  static constexpr int kMaxHeight = 12;

  struct Node {
    explicit Node(const Key& k) : key(k) {}
    Key const key;
    Node* Next(int n) { return next_[n].load(std::memory_order_acquire); }
    void SetNext(int n, Node* x) {
      next_[n].store(x, std::memory_order_release);
    }
    Node* NoBarrierNext(int n) {
      return next_[n].load(std::memory_order_relaxed);
    }
    void NoBarrierSetNext(int n, Node* x) {
      next_[n].store(x, std::memory_order_relaxed);
    }

   private:
    // Over-allocated to the node's height.
    std::atomic<Node*> next_[1];
  };

  Node* NewNode(const Key& key, int height) {
    char* mem = arena_->AllocateAligned(
        sizeof(Node) + sizeof(std::atomic<Node*>) * (height - 1));
    return new (mem) Node(key);
  }

  int RandomHeight() {
    // Branching factor 4, as in LevelDB: ~1.33 pointers per node.
    int height = 1;
    while (height < kMaxHeight && (rnd_() & 3) == 0) ++height;
    return height;
  }

  // First node >= key; fills prev[level] with the last node < key per level.
  Node* FindGreaterOrEqual(const Key& key, Node** prev) const {
    Node* x = head_;
    int level = max_height_.load(std::memory_order_relaxed) - 1;
    while (true) {
      Node* next = x->Next(level);
      if (next != nullptr && compare_(next->key, key) < 0) {
        x = next;
      } else {
        if (prev != nullptr) prev[level] = x;
        if (level == 0) return next;
        --level;
      }
    }
  }

  Comparator const compare_;
  Arena* const arena_;
  Node* const head_;
  std::atomic<int> max_height_{1};
  // The writer's: the node inserted last and, per level, the last node
  // before the key after it (head_ above the heights in use).
  Node* last_ = nullptr;
  Node* last_prev_[kMaxHeight];
  std::minstd_rand rnd_{0xdeadbeef};
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_SKIPLIST_H_
