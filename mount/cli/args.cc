#include "mount/cli/args.h"

#include <limits>

#include "mount/cli/text.h"

namespace tabletfs::cli {

Result<OptionMap> ParseOptions(
    const std::vector<std::string>& args, size_t first,
    std::initializer_list<std::string_view> allowed) {
  OptionMap options;
  for (size_t i = first; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const size_t eq = arg.find('=');
    std::string expected;
    for (std::string_view key : allowed) {
      if (!expected.empty()) expected += ", ";
      expected += std::string(key) + "=";
    }
    if (eq == std::string::npos) {
      return Status::InvalidArgument("bad argument '" + arg +
                                     "': expected one of " + expected);
    }
    const std::string key = arg.substr(0, eq);
    bool known = false;
    for (std::string_view k : allowed) known = known || k == key;
    if (!known) {
      return Status::InvalidArgument("unknown argument '" + key +
                                     "=': expected one of " + expected);
    }
    options[key] = arg.substr(eq + 1);
  }
  return options;
}

Result<SetCellArg> ParseSetArg(std::string_view arg) {
  const size_t colon = arg.find(':');
  const size_t eq =
      colon == std::string_view::npos ? colon : arg.find('=', colon + 1);
  if (colon == 0 || colon == std::string_view::npos ||
      eq == std::string_view::npos) {
    return Status::InvalidArgument("bad cell '" + std::string(arg) +
                                   "': expected FAMILY:QUALIFIER=VALUE[@TS]");
  }
  SetCellArg cell;
  cell.family = std::string(arg.substr(0, colon));
  cell.qualifier = std::string(arg.substr(colon + 1, eq - colon - 1));
  cell.value = std::string(arg.substr(eq + 1));
  const size_t at = cell.value.rfind('@');
  if (at != std::string::npos) {
    const std::optional<int64_t> ts =
        ParseInt64(std::string_view(cell.value).substr(at + 1));
    if (ts) {
      if (*ts == kServerTimestamp) {
        return Status::InvalidArgument("bad cell '" + std::string(arg) +
                                       "': timestamp out of range");
      }
      cell.timestamp = *ts;
      cell.value.resize(at);
    }
  }
  return cell;
}

Status ParseColumnsOption(Bigtable& db, std::string_view table,
                          std::string_view text, ReadOptions* read) {
  std::vector<std::string> all_families;
  bool families_loaded = false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    std::string family;
    std::string qualifier;
    if (colon == std::string_view::npos) {
      qualifier = std::string(item);
    } else {
      family = std::string(item.substr(0, colon));
      qualifier = std::string(item.substr(colon + 1));
    }
    if (!family.empty() && colon == item.size() - 1) {
      read->families.push_back(family);
    } else if (!family.empty()) {
      read->columns.push_back({family, qualifier});
    } else {
      if (!families_loaded) {
        TABLETFS_ASSIGN_OR_RETURN(auto infos, db.ListFamilies(table));
        for (const FamilyInfo& info : infos) {
          all_families.push_back(info.name);
        }
        families_loaded = true;
      }
      for (const std::string& f : all_families) {
        read->columns.push_back({f, qualifier});
      }
    }
  }
  // A filter that expanded to nothing (a table without families) leaves the
  // read unfiltered, which selects the same nothing.
  return Status::OK();
}

Result<uint32_t> ParseCellsPerColumn(std::string_view text) {
  const std::optional<uint64_t> n = ParseUint64(text);
  if (!n || *n == 0 || *n > std::numeric_limits<uint32_t>::max()) {
    return Status::InvalidArgument("bad cells-per-column '" +
                                   std::string(text) +
                                   "': expected a positive integer");
  }
  return static_cast<uint32_t>(*n);
}

}  // namespace tabletfs::cli
