#include "store/row_mutation.h"

namespace tabletfs {

RowMutation &RowMutation::SetCell(std::string_view family,
                                  std::string_view qualifier,
                                  std::string_view value) {
  return SetCell(family, qualifier, kServerTimestamp, value);
}

RowMutation &RowMutation::SetCell(std::string_view family,
                                  std::string_view qualifier, int64_t timestamp,
                                  std::string_view value) {
  return SetCellTaking(family, qualifier, timestamp, std::string(value));
}

RowMutation &RowMutation::SetCellTaking(std::string_view family,
                                        std::string_view qualifier,
                                        int64_t timestamp, std::string value) {
  ops_.push_back(Op{OpType::kSetCell, std::string(family),
                    std::string(qualifier), timestamp, std::move(value)});
  return *this;
}

RowMutation &RowMutation::DeleteVersion(std::string_view family,
                                        std::string_view qualifier,
                                        int64_t timestamp) {
  ops_.push_back(Op{OpType::kDeleteVersion,
                    std::string(family),
                    std::string(qualifier),
                    timestamp,
                    {}});
  return *this;
}

RowMutation &RowMutation::DeleteCell(std::string_view family,
                                     std::string_view qualifier) {
  ops_.push_back(Op{OpType::kDeleteCell,
                    std::string(family),
                    std::string(qualifier),
                    kServerTimestamp,
                    {}});
  return *this;
}

RowMutation &RowMutation::DeleteFamily(std::string_view family) {
  ops_.push_back(
      Op{OpType::kDeleteFamily, std::string(family), {}, kServerTimestamp, {}});
  return *this;
}

RowMutation &RowMutation::DeleteRow() {
  ops_.push_back(Op{OpType::kDeleteRow, {}, {}, kServerTimestamp, {}});
  return *this;
}

size_t RowMutation::ByteSize() const {
  size_t n = row_.size();
  for (const Op &op : ops_) {
    n += op.family.size() + op.qualifier.size() + op.value.size() + 8;
  }
  return n;
}

}  // namespace tabletfs
