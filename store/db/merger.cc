#include "store/db/merger.h"

#include <cstdint>

namespace tabletfs {

namespace {

// A binary min-heap of the valid children, each with its key cached: a
// step compares views it already holds, and calls into a child only when
// that child moves. In a scan the child that just moved usually stays the
// smallest, which costs two comparisons with the root's children however
// many sources there are (memtables, level-0 files, deeper levels); the
// linear scan this replaced called every child's Valid() and key() and
// compared them all at every step.
class MergingIterator final : public Iterator {
 public:
  explicit MergingIterator(std::vector<std::unique_ptr<Iterator>> children)
      : children_(std::move(children)) {
    heap_.reserve(children_.size());
  }

  bool Valid() const override { return !heap_.empty(); }
  void SeekToFirst() override {
    for (auto& c : children_) c->SeekToFirst();
    Rebuild();
  }
  void Seek(std::string_view target) override {
    for (auto& c : children_) c->Seek(target);
    Rebuild();
  }
  void Next() override {
    Child& top = heap_.front();
    top.iter->Next();
    if (top.iter->Valid()) {
      top.key = top.iter->key();
    } else {
      top = heap_.back();
      heap_.pop_back();
      if (heap_.empty()) return;
    }
    SiftDown(0);
  }
  std::string_view key() const override { return heap_.front().key; }
  std::string_view value() const override {
    return heap_.front().iter->value();
  }
  Status status() const override {
    for (const auto& c : children_) {
      Status s = c->status();
      if (!s.ok()) return s;
    }
    return Status::OK();
  }

 private:
  struct Child {
    std::string_view key;  // iter->key(), valid until iter moves
    uint32_t order;        // the child's position: equal keys come in order
    Iterator* iter;
  };

  static bool Before(const Child& a, const Child& b) {
    int c = a.key.compare(b.key);
    return c < 0 || (c == 0 && a.order < b.order);
  }

  void Rebuild() {
    heap_.clear();
    for (size_t i = 0; i < children_.size(); ++i) {
      Iterator* c = children_[i].get();
      if (c->Valid()) heap_.push_back({c->key(), static_cast<uint32_t>(i), c});
    }
    for (size_t i = heap_.size() / 2; i-- > 0;) SiftDown(i);
  }

  void SiftDown(size_t i) {
    const size_t n = heap_.size();
    Child moving = heap_[i];
    for (;;) {
      size_t smallest = 2 * i + 1;
      if (smallest >= n) break;
      if (smallest + 1 < n && Before(heap_[smallest + 1], heap_[smallest])) {
        ++smallest;
      }
      if (!Before(heap_[smallest], moving)) break;
      heap_[i] = heap_[smallest];
      i = smallest;
    }
    heap_[i] = moving;
  }

  std::vector<std::unique_ptr<Iterator>> children_;
  std::vector<Child> heap_;
};

}  // namespace

std::unique_ptr<Iterator> NewMergingIterator(
    std::vector<std::unique_ptr<Iterator>> children) {
  if (children.size() == 1) return std::move(children[0]);
  return std::make_unique<MergingIterator>(std::move(children));
}

}  // namespace tabletfs
