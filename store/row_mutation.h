// RowMutation: any number of operations on ONE row, applied atomically by
// DB::Apply (a reader sees all or none; after a crash all or none survive).
// Operations apply in the order they were added, so "delete the cell, then
// set it" leaves the new value.
//
// Thread safety: a plain value; not for concurrent modification.
#ifndef TABLETFS_STORE_ROW_MUTATION_H_
#define TABLETFS_STORE_ROW_MUTATION_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tabletfs {

// Timestamp value meaning "assigned by the server when applied".
inline constexpr int64_t kServerTimestamp = INT64_MIN;

class RowMutation {
 public:
  // Persisted in the log: do not renumber.
  enum class OpType : uint8_t {
    kSetCell = 1,
    kDeleteVersion = 2,
    kDeleteCell = 3,
    kDeleteFamily = 4,
    kDeleteRow = 5,
  };

  struct Op {
    OpType type;
    std::string family;     // unused for kDeleteRow
    std::string qualifier;  // kSetCell, kDeleteVersion, kDeleteCell
    int64_t timestamp = kServerTimestamp;  // kSetCell, kDeleteVersion
    std::string value;                     // kSetCell
  };

  explicit RowMutation(std::string row) : row_(std::move(row)) {}

  // Sets a cell version at a server-assigned timestamp.
  RowMutation &SetCell(std::string_view family, std::string_view qualifier,
                       std::string_view value);
  // Sets the version at exactly `timestamp`, replacing one already there.
  RowMutation &SetCell(std::string_view family, std::string_view qualifier,
                       int64_t timestamp, std::string_view value);
  // SetCell that takes the bytes of `value` rather than copying them (a
  // large value); TakeValue(i) gives them back once the mutation is
  // applied. `timestamp` may be kServerTimestamp.
  RowMutation &SetCellTaking(std::string_view family,
                             std::string_view qualifier, int64_t timestamp,
                             std::string value);
  // Moves out the value of operation i (a kSetCell); the mutation keeps an
  // empty value there.
  std::string TakeValue(size_t i) { return std::move(ops_.at(i).value); }
  RowMutation &DeleteVersion(std::string_view family,
                             std::string_view qualifier, int64_t timestamp);
  // Deletes every version of the cell that exists when applied.
  RowMutation &DeleteCell(std::string_view family, std::string_view qualifier);
  // Deletes every cell of the family in this row.
  RowMutation &DeleteFamily(std::string_view family);
  RowMutation &DeleteRow();

  const std::string &row() const { return row_; }
  const std::vector<Op> &ops() const { return ops_; }
  bool empty() const { return ops_.empty(); }
  // Bytes of keys and values, for write accounting.
  size_t ByteSize() const;

 private:
  std::string row_;
  std::vector<Op> ops_;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_ROW_MUTATION_H_
