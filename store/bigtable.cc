#include "store/bigtable.h"

#include "store/util/hash.h"

namespace tabletfs {

Result<std::optional<CellStat>> Bigtable::StatCell(std::string_view table,
                                                   std::string_view row,
                                                   std::string_view family,
                                                   std::string_view qualifier,
                                                   const ReadOptions &options) {
  ReadOptions newest = options;
  newest.max_versions = 1;
  Result<std::vector<Cell>> cells =
      ReadCell(table, row, family, qualifier, newest);
  if (!cells.ok()) return cells.status();
  if (cells->empty()) return std::optional<CellStat>();
  // The value was read anyway: its hash saves a caller that compares
  // values (a commit through the mount) reading it again.
  const Cell& c = (*cells)[0];
  return std::optional<CellStat>(
      CellStat{c.timestamp, c.value.size(), Hash64(c.value)});
}

}  // namespace tabletfs
