#include "store/util/iterator.h"

namespace tabletfs {

Iterator::~Iterator() {
  for (auto &fn : cleanups_) fn();
}

void Iterator::RegisterCleanup(std::function<void()> fn) {
  cleanups_.push_back(std::move(fn));
}

namespace {

class EmptyIterator final : public Iterator {
 public:
  explicit EmptyIterator(Status status) : status_(std::move(status)) {}
  bool Valid() const override { return false; }
  void SeekToFirst() override {}
  void Seek(std::string_view) override {}
  void Next() override { assert(false); }
  std::string_view key() const override {
    assert(false);
    return {};
  }
  std::string_view value() const override {
    assert(false);
    return {};
  }
  Status status() const override { return status_; }

 private:
  Status status_;
};

}  // namespace

std::unique_ptr<Iterator> NewEmptyIterator(Status status) {
  return std::make_unique<EmptyIterator>(std::move(status));
}

}  // namespace tabletfs
