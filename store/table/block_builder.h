// BlockBuilder: encodes sorted key/value pairs into one block with prefix
// compression and restart points (format: store/doc/table_format.md).
//
// Each key is stored as the length of the prefix it shares with the previous
// key plus the remaining bytes; every `restart_interval` entries a key is
// stored whole and its offset recorded in the restart array, so a reader can
// binary-search the restarts.
//
// Thread safety: one thread at a time.
#ifndef TABLETFS_STORE_TABLE_BLOCK_BUILDER_H_
#define TABLETFS_STORE_TABLE_BLOCK_BUILDER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tabletfs {

class BlockBuilder {
 public:
  // REQUIRES: restart_interval >= 1.
  explicit BlockBuilder(int restart_interval);
  BlockBuilder(const BlockBuilder &) = delete;
  BlockBuilder &operator=(const BlockBuilder &) = delete;

  // REQUIRES: Finish() not called since the last Reset(); key greater
  // (memcmp order) than every key added before.
  void Add(std::string_view key, std::string_view value);

  // Appends the restart array and returns the block contents. The view stays
  // valid until Reset() or destruction.
  std::string_view Finish();

  // Empties the builder for the next block.
  void Reset();

  // Bytes of the block if Finish() were called now.
  size_t CurrentSizeEstimate() const;
  bool empty() const { return buffer_.empty(); }
  // The last key added (empty before the first Add()).
  std::string_view last_key() const { return last_key_; }

 private:
  const int restart_interval_;
  std::string buffer_;
  std::vector<uint32_t> restarts_;
  int counter_ = 0;  // Entries since the last restart.
  bool finished_ = false;
  std::string last_key_;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_TABLE_BLOCK_BUILDER_H_
