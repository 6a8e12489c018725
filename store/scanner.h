// Scanner: streams the cell versions of a row range in order, from one
// consistent snapshot, with bounded memory (a scan of a huge table holds a
// few blocks, not the table).
//
// Order: rows bytewise; within a row, families in the order the table's
// families were created; qualifiers bytewise; versions newest first. Only
// versions visible under the ScanOptions (time T, families/columns,
// max_versions, GC policies, deletions) are returned.
//
// Thread safety: one thread at a time. A Scanner keeps its snapshot (and
// the files it reads) alive across flushes and compactions; destroy it
// before the DB.
#ifndef TABLETFS_STORE_SCANNER_H_
#define TABLETFS_STORE_SCANNER_H_

#include <cstdint>
#include <string_view>

#include "store/cell.h"
#include "store/status.h"

namespace tabletfs {

class Scanner {
 public:
  Scanner() = default;
  Scanner(const Scanner &) = delete;
  Scanner &operator=(const Scanner &) = delete;
  virtual ~Scanner() = default;

  // Positions at the first visible version at or after (row, family,
  // qualifier) in scan order, clipped to the scan's range. An empty family
  // means the row's start; a family not in the schema: the row's start.
  virtual void Seek(std::string_view row, std::string_view family = {},
                    std::string_view qualifier = {}) = 0;
  virtual void SeekToFirst() = 0;

  virtual bool Valid() const = 0;
  // The next visible version. REQUIRES: Valid().
  virtual void Next() = 0;
  // Skips the remaining versions of the current cell. REQUIRES: Valid().
  virtual void NextColumn() = 0;
  // Skips the rest of the current family in this row. REQUIRES: Valid().
  virtual void NextFamily() = 0;
  // Skips the rest of the current row. REQUIRES: Valid().
  virtual void NextRow() = 0;

  // REQUIRES: Valid(). Views stay valid until the scanner moves.
  virtual std::string_view row() const = 0;
  virtual std::string_view family() const = 0;
  virtual std::string_view qualifier() const = 0;
  virtual int64_t timestamp() const = 0;
  virtual uint64_t value_size() const = 0;
  // Loads the value (large values are read from their value file here).
  virtual Result<std::string_view> value() = 0;

  // Not OK when the scan stopped on an error (then !Valid()).
  virtual Status status() const = 0;

  // Reads the rest of the current row into *row and moves to the next row.
  // REQUIRES: Valid().
  Status ReadRow(Row *row);
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_SCANNER_H_
