#include "store/table/table_index.h"

#include <algorithm>
#include <cstring>

#include "store/util/coding.h"
#include "store/util/iterator.h"

namespace tabletfs {

Result<TableIndex> TableIndex::Decode(
    std::shared_ptr<const Block> index_block) {
  const std::string context = index_block->context();
  TableIndex index;
  // An index block has a restart at every entry; its keys take less room
  // than the block.
  const size_t entries = index_block->num_restarts();
  index.keys_.reserve(index_block->size());
  index.key_ends_.reserve(entries);
  index.entries_.reserve(entries);
  index.words_.reserve(entries);
  std::unique_ptr<Iterator> it = Block::NewIterator(std::move(index_block));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string_view key = it->key();
    if (!index.entries_.empty() && key < index.key(index.size() - 1)) {
      return Status::Corruption(context, "index keys out of order at entry " +
                                             std::to_string(index.size()));
    }
    IndexEntry entry;
    if (!entry.DecodeFrom(it->value())) {
      return Status::Corruption(
          context, "bad block handle at entry " + std::to_string(index.size()));
    }
    index.keys_.append(key);
    index.key_ends_.push_back(static_cast<uint32_t>(index.keys_.size()));
    index.entries_.push_back(entry);
  }
  TABLETFS_RETURN_IF_ERROR(it->status());
  // The keys are sorted: the prefix all of them share is the one the first
  // and the last share.
  if (index.size() > 0) {
    const std::string_view first = index.key(0);
    const std::string_view last = index.key(index.size() - 1);
    const auto [p, q] =
        std::mismatch(first.begin(), first.end(), last.begin(), last.end());
    index.prefix_.assign(first.begin(), p);
  }
  for (size_t i = 0; i < index.size(); ++i) {
    index.words_.push_back(
        index.Word(index.key(i).substr(index.prefix_.size())));
  }
  index.keys_.shrink_to_fit();
  index.key_ends_.shrink_to_fit();
  index.entries_.shrink_to_fit();
  return index;
}

uint64_t TableIndex::Word(std::string_view key_after_prefix) const {
  char bytes[8] = {};
  std::memcpy(bytes, key_after_prefix.data(),
              std::min(key_after_prefix.size(), sizeof(bytes)));
  return DecodeBigEndian64(bytes);
}

size_t TableIndex::Find(std::string_view target) const {
  const size_t n = size();
  if (n == 0) return 0;
  // Every key starts with prefix_: a target that does not sorts before or
  // after them all.
  const std::string_view head = target.substr(0, prefix_.size());
  if (head != prefix_) return head < prefix_ ? 0 : n;
  const uint64_t word = Word(target.substr(prefix_.size()));
  // A key whose word is below the target's sorts below the target, and one
  // whose word is above it sorts above: only keys with an equal word need
  // comparing (store/table/table_index.h).
  const uint64_t *words = words_.data();
  size_t lo = std::lower_bound(words, words + n, word) - words;
  if (lo == n || words[lo] != word) return lo;
  size_t hi = std::upper_bound(words + lo, words + n, word) - words;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (key(mid) < target) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace tabletfs
