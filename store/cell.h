// Cell versions and rows as returned by reads.
//
// Thread safety: plain values.
#ifndef TABLETFS_STORE_CELL_H_
#define TABLETFS_STORE_CELL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tabletfs {

// One version of one cell.
struct Cell {
  std::string family;
  std::string qualifier;
  int64_t timestamp = 0;  // microseconds since the epoch
  std::string value;

  bool operator==(const Cell &other) const = default;
};

// The newest visible version of a cell without its value
// (Bigtable::StatCell).
struct CellStat {
  int64_t timestamp = 0;  // microseconds since the epoch
  uint64_t value_size = 0;
  // XXH64 (seed 0) of the value, when the store has it at hand: the
  // engine for a value kept in a value file (its reference holds it), the
  // default StatCell (which reads the value) always; nullopt otherwise.
  std::optional<uint64_t> value_xxh64;

  bool operator==(const CellStat &other) const = default;
};

struct Row {
  std::string key;
  // Ordered by family (in the order the table's families were created),
  // then qualifier (bytewise), then timestamp, newest first.
  std::vector<Cell> cells;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_CELL_H_
