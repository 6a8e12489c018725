#include "store/db/tablet.h"

#include <algorithm>
#include <set>

#include "store/db/key_format.h"
#include "store/util/coding.h"

namespace tabletfs {

std::string TableLowKey(uint32_t table_id) {
  std::string key;
  PutBigEndian32(&key, table_id);
  return key;
}

std::string TableHighKey(uint32_t table_id) {
  // Table ids come from a 32-bit counter that starts at 1 and never reaches
  // the top: be32(id + 1) is above every key of the table.
  std::string key;
  PutBigEndian32(&key, table_id + 1);
  return key;
}

void Tablet::SetRange(std::string start, std::string end) {
  start_row = std::move(start);
  end_row = std::move(end);
  lo = start_row.empty() ? TableLowKey(table_id)
                         : RowPrefix(table_id, start_row);
  hi = end_row.empty() ? TableHighKey(table_id) : RowPrefix(table_id, end_row);
}

uint64_t ReadCompactionThreshold(const Version& v) {
  uint64_t bytes = 0;
  for (const auto& f : v.levels[0]) bytes += f->size;
  return std::max<uint64_t>(1000, bytes / (16 << 10));
}

void Tablet::RefreshView() {
  auto v = std::make_shared<TabletView>();
  v->lo = lo;
  v->hi = hi;
  v->mems.reserve(imm.size() + 1);
  v->mems.push_back(mem);
  for (auto i = imm.rbegin(); i != imm.rend(); ++i) v->mems.push_back(i->mem);
  v->version = version;
  view = std::move(v);
}

uint64_t Tablet::OldestLog() const {
  uint64_t oldest = mem_first_log;
  for (const Immutable& i : imm) oldest = std::min(oldest, i.first_log);
  return oldest;
}

uint64_t Tablet::MemoryBytes() const {
  uint64_t bytes = mem->data_bytes();
  for (const Immutable& i : imm) bytes += i.mem->data_bytes();
  return bytes;
}

uint64_t Tablet::FileBytes() const {
  uint64_t bytes = 0;
  for (const auto& level : version->levels) {
    for (const auto& f : level) bytes += f->size;
  }
  return bytes;
}

uint64_t Tablet::FileCount() const {
  uint64_t n = 0;
  for (const auto& level : version->levels) n += level.size();
  return n;
}

bool Tablet::HasForeignFiles() const {
  for (const auto& level : version->levels) {
    for (const auto& f : level) {
      if (RowPrefixView(f->smallest) < lo || RowPrefixView(f->largest) >= hi) {
        return true;
      }
    }
  }
  return false;
}

namespace {

class SegmentIterator final : public Iterator {
 public:
  explicit SegmentIterator(std::vector<IteratorSegment> segments)
      : segments_(std::move(segments)) {}

  bool Valid() const override {
    return current_ != nullptr && current_->Valid();
  }
  void SeekToFirst() override {
    Open(0);
    if (current_ != nullptr) current_->Seek(segments_[0].lo);
    Settle();
  }
  void Seek(std::string_view target) override {
    // The first segment whose range ends after the target.
    auto it = std::upper_bound(
        segments_.begin(), segments_.end(), target,
        [](std::string_view t, const IteratorSegment& s) { return t < s.hi; });
    size_t index = static_cast<size_t>(it - segments_.begin());
    Open(index);
    if (current_ != nullptr) {
      current_->Seek(std::max(target, std::string_view(segments_[index].lo)));
    }
    Settle();
  }
  void Next() override {
    current_->Next();
    Settle();
  }
  std::string_view key() const override { return current_->key(); }
  std::string_view value() const override { return current_->value(); }
  Status status() const override {
    if (!status_.ok()) return status_;
    return current_ != nullptr ? current_->status() : Status::OK();
  }

 private:
  void Open(size_t index) {
    if (current_ != nullptr && !current_->status().ok() && status_.ok()) {
      status_ = current_->status();
    }
    index_ = index;
    current_ = index < segments_.size() ? segments_[index].open() : nullptr;
  }
  // Moves past the end of exhausted segments; a key at or past a segment's
  // hi ends that segment.
  void Settle() {
    while (current_ != nullptr) {
      if (current_->Valid()) {
        if (current_->key() < std::string_view(segments_[index_].hi)) return;
      } else if (!current_->status().ok()) {
        return;  // damage stops the iteration: never skip it silently
      }
      Open(index_ + 1);
      if (current_ != nullptr) current_->Seek(segments_[index_].lo);
    }
  }

  std::vector<IteratorSegment> segments_;
  std::unique_ptr<Iterator> current_;
  size_t index_ = 0;
  Status status_;
};

}  // namespace

std::unique_ptr<Iterator> NewSegmentIterator(
    std::vector<IteratorSegment> segments) {
  return std::make_unique<SegmentIterator>(std::move(segments));
}

}  // namespace tabletfs
