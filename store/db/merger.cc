#include "store/db/merger.h"

namespace tabletfs {

namespace {

// A linear scan over the children picks the smallest key: there are few
// children (memtables, L0 files, one per deeper level), so a heap would cost
// more than it saves.
class MergingIterator final : public Iterator {
 public:
  explicit MergingIterator(std::vector<std::unique_ptr<Iterator>> children)
      : children_(std::move(children)) {}

  bool Valid() const override { return current_ != nullptr; }
  void SeekToFirst() override {
    for (auto& c : children_) c->SeekToFirst();
    FindSmallest();
  }
  void Seek(std::string_view target) override {
    for (auto& c : children_) c->Seek(target);
    FindSmallest();
  }
  void Next() override {
    current_->Next();
    FindSmallest();
  }
  std::string_view key() const override { return current_->key(); }
  std::string_view value() const override { return current_->value(); }
  Status status() const override {
    for (const auto& c : children_) {
      Status s = c->status();
      if (!s.ok()) return s;
    }
    return Status::OK();
  }

 private:
  void FindSmallest() {
    current_ = nullptr;
    for (auto& c : children_) {
      if (!c->Valid()) continue;
      if (current_ == nullptr || c->key() < current_->key()) current_ = c.get();
    }
  }

  std::vector<std::unique_ptr<Iterator>> children_;
  Iterator* current_ = nullptr;
};

}  // namespace

std::unique_ptr<Iterator> NewMergingIterator(
    std::vector<std::unique_ptr<Iterator>> children) {
  if (children.size() == 1) return std::move(children[0]);
  return std::make_unique<MergingIterator>(std::move(children));
}

}  // namespace tabletfs
