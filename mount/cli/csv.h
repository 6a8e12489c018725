// CSV (RFC 4180) reading and writing for `tabletctl import` and `export`.
//
// Fields are byte strings: a quoted field may hold commas, quotes, CR, LF
// and any other byte, so keys and values pass through unchanged. A reader
// reports whether each field was quoted, so an empty quoted field ("") can
// mean an empty value while an empty unquoted field means no cell.
//
// Thread safety: a CsvReader is used by one thread at a time.
#ifndef TABLETFS_MOUNT_CLI_CSV_H_
#define TABLETFS_MOUNT_CLI_CSV_H_

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "store/status.h"

namespace tabletfs::cli {

struct CsvField {
  std::string text;
  bool quoted = false;
};

class CsvReader {
 public:
  // `in` must outlive the reader.
  explicit CsvReader(std::istream& in) : in_(in) {}

  // Reads the next record into *fields; false at end of input (then
  // status() says whether it ended on an error). Lines that are entirely
  // empty are skipped.
  bool Next(std::vector<CsvField>* fields);
  const Status& status() const { return status_; }
  // 1-based line on which the last record returned started.
  uint64_t line() const { return record_line_; }
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  int Get();
  int Peek();

  std::istream& in_;
  Status status_;
  uint64_t line_ = 1;
  uint64_t record_line_ = 0;
  uint64_t bytes_read_ = 0;
};

// Appends `field` to *out, quoted when it is empty-but-present
// (`force_quotes`), or holds a comma, quote, CR, LF, or leading or trailing
// space.
void AppendCsvField(std::string* out, std::string_view field,
                    bool force_quotes = false);

}  // namespace tabletfs::cli

#endif  // TABLETFS_MOUNT_CLI_CSV_H_
