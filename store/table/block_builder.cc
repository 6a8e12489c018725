#include "store/table/block_builder.h"

#include <algorithm>
#include <cassert>

#include "store/util/coding.h"

namespace tabletfs {

BlockBuilder::BlockBuilder(int restart_interval)
    : restart_interval_(restart_interval) {
  assert(restart_interval_ >= 1);
  restarts_.push_back(0);
}

void BlockBuilder::Reset() {
  buffer_.clear();
  restarts_.clear();
  restarts_.push_back(0);
  counter_ = 0;
  finished_ = false;
  last_key_.clear();
}

size_t BlockBuilder::CurrentSizeEstimate() const {
  return buffer_.size() + restarts_.size() * 4 + 4;
}

std::string_view BlockBuilder::Finish() {
  assert(!finished_);
  for (uint32_t r : restarts_) PutFixed32(&buffer_, r);
  PutFixed32(&buffer_, static_cast<uint32_t>(restarts_.size()));
  finished_ = true;
  return buffer_;
}

void BlockBuilder::Add(std::string_view key, std::string_view value) {
  assert(!finished_);
  assert(buffer_.empty() || key > std::string_view(last_key_));
  size_t shared = 0;
  if (counter_ < restart_interval_) {
    size_t limit = std::min(last_key_.size(), key.size());
    while (shared < limit && last_key_[shared] == key[shared]) ++shared;
  } else {
    restarts_.push_back(static_cast<uint32_t>(buffer_.size()));
    counter_ = 0;
  }
  PutVarint64(&buffer_, shared);
  PutVarint64(&buffer_, key.size() - shared);
  PutVarint64(&buffer_, value.size());
  buffer_.append(key.substr(shared));
  buffer_.append(value);
  last_key_.resize(shared);
  last_key_.append(key.substr(shared));
  ++counter_;
}

}  // namespace tabletfs
