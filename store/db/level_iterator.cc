#include "store/db/level_iterator.h"

#include <algorithm>

namespace tabletfs {

namespace {

class LevelIterator final : public Iterator {
 public:
  LevelIterator(std::vector<std::shared_ptr<const FileMeta>> files,
                std::function<std::unique_ptr<Iterator>(const FileMeta&)> open)
      : files_(std::move(files)), open_(std::move(open)) {}

  bool Valid() const override {
    return current_ != nullptr && current_->Valid();
  }
  void SeekToFirst() override {
    OpenFile(0);
    if (current_ != nullptr) current_->SeekToFirst();
    SkipEmptyFiles();
  }
  void Seek(std::string_view target) override {
    // The first file whose largest key is >= target.
    auto it = std::lower_bound(
        files_.begin(), files_.end(), target,
        [](const std::shared_ptr<const FileMeta>& f, std::string_view t) {
          return std::string_view(f->largest) < t;
        });
    OpenFile(static_cast<size_t>(it - files_.begin()));
    if (current_ != nullptr) current_->Seek(target);
    SkipEmptyFiles();
  }
  void Next() override {
    current_->Next();
    SkipEmptyFiles();
  }
  std::string_view key() const override { return current_->key(); }
  std::string_view value() const override { return current_->value(); }
  Status status() const override {
    if (!status_.ok()) return status_;
    return current_ != nullptr ? current_->status() : Status::OK();
  }

 private:
  void OpenFile(size_t index) {
    if (current_ != nullptr && !current_->status().ok() && status_.ok()) {
      status_ = current_->status();
    }
    index_ = index;
    current_ = index < files_.size() ? open_(*files_[index]) : nullptr;
  }
  void SkipEmptyFiles() {
    while (current_ != nullptr && !current_->Valid()) {
      // A file that failed stops the level: never skip damage silently.
      if (!current_->status().ok()) return;
      OpenFile(index_ + 1);
      if (current_ != nullptr) current_->SeekToFirst();
    }
  }

  std::vector<std::shared_ptr<const FileMeta>> files_;
  std::function<std::unique_ptr<Iterator>(const FileMeta&)> open_;
  std::unique_ptr<Iterator> current_;
  size_t index_ = 0;
  Status status_;
};

}  // namespace

std::unique_ptr<Iterator> NewLevelIterator(
    std::vector<std::shared_ptr<const FileMeta>> files,
    std::function<std::unique_ptr<Iterator>(const FileMeta&)> open) {
  return std::make_unique<LevelIterator>(std::move(files), std::move(open));
}

}  // namespace tabletfs
