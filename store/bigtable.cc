#include "store/bigtable.h"

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
  return std::optional<CellStat>(
      CellStat{(*cells)[0].timestamp, (*cells)[0].value.size(), std::nullopt});
}

}  // namespace tabletfs
