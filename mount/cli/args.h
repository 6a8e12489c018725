// Argument parsing shared by the tabletctl commands, in cbt's syntax.
//
// Thread safety: pure functions (ParseColumnsOption reads the DB).
#ifndef TABLETFS_MOUNT_CLI_ARGS_H_
#define TABLETFS_MOUNT_CLI_ARGS_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/db.h"
#include "store/options.h"
#include "store/status.h"

namespace tabletfs::cli {

// key=value options, as cbt's parseArgs: each of args[first...] must be
// "key=value" with a key from `allowed`; the last occurrence of a key wins.
// InvalidArgument naming the bad argument and the keys allowed.
using OptionMap = std::map<std::string, std::string, std::less<>>;
Result<OptionMap> ParseOptions(const std::vector<std::string>& args,
                               size_t first,
                               std::initializer_list<std::string_view> allowed);

// One argument of `set`: FAMILY:QUALIFIER=VALUE[@TS]. As in cbt, the family
// runs to the first ':', the qualifier (possibly empty) to the next '=',
// and a trailing "@SUFFIX" of the value is a timestamp (microseconds) only
// when SUFFIX parses as a decimal integer: "EA=john@example.com" is a plain
// value, "contents:=<html>@6" sets "<html>" at timestamp 6.
struct SetCellArg {
  std::string family;
  std::string qualifier;
  std::string value;
  std::optional<int64_t> timestamp;
};
Result<SetCellArg> ParseSetArg(std::string_view arg);

// columns=F:Q,F:,:Q,Q as cbt reads it, with exact names instead of regular
// expressions: "F:Q" the column, "F:" every column of family F, ":Q" or "Q"
// qualifier Q in every family of the table. Appends to read->families and
// read->columns.
Status ParseColumnsOption(Bigtable& db, std::string_view table,
                          std::string_view text, ReadOptions* read);

// cells-per-column=N (N >= 1) for ReadOptions::max_versions.
Result<uint32_t> ParseCellsPerColumn(std::string_view text);

}  // namespace tabletfs::cli

#endif  // TABLETFS_MOUNT_CLI_ARGS_H_
