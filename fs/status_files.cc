#include "fs/status_files.h"

#include <errno.h>

#include "fs/names.h"

namespace tabletfs::fs {
namespace {

// ShownName, not EncodeName: a boundary is then a name `ls TABLE` lists and
// a lookup accepts, however long its key.
std::string BoundaryName(const std::string& row) {
  return row.empty() ? std::string(kUnboundedRowName) : ShownName(row);
}

}  // namespace

std::string FormatTablets(std::string_view table,
                          const std::vector<TabletInfo>& tablets) {
  std::string out;
  for (const TabletInfo& t : tablets) {
    out.append(table);
    out += '\t';
    out += BoundaryName(t.start_row);
    out += '\t';
    out += BoundaryName(t.end_row);
    out += '\t';
    out += std::to_string(t.bytes);
    out += '\t';
    out += std::to_string(t.files);
    for (const std::string& sample : t.sample_rows) {
      out += '\t';
      out += ShownName(sample);
    }
    out += '\n';
  }
  return out;
}

Result<std::string> TabletsText(Bigtable& db,
                                const std::optional<std::string>& table) {
  if (table.has_value()) {
    Result<std::vector<TabletInfo>> tablets = db.ListTablets(*table);
    if (!tablets.ok()) return tablets.status();
    return FormatTablets(*table, *tablets);
  }
  Result<std::vector<std::string>> tables = db.ListTables();
  if (!tables.ok()) return tables.status();
  std::string out;
  for (const std::string& t : *tables) {
    Result<std::vector<TabletInfo>> tablets = db.ListTablets(t);
    if (!tablets.ok()) {
      if (tablets.status().IsNotFound()) continue;  // dropped meanwhile
      return tablets.status();
    }
    out += FormatTablets(t, *tablets);
  }
  return out;
}

FsError StatusFileText(Bigtable& db, std::string_view name, std::string* out,
                       const RequestCounts* requests) {
  if (name == kStatsFileName) {
    *out = db.StatsText();
    if (requests != nullptr) *out += requests->Text();
    return FsError::Ok();
  }
  if (name == kTabletsFileName) {
    Result<std::string> text = TabletsText(db, std::nullopt);
    if (!text.ok()) return FsErrorFromStatus(text.status());
    *out = std::move(*text);
    return FsError::Ok();
  }
  return FsError::Of(ENOENT,
                     "no status file '" + std::string(name) + "' in .tabletfs");
}

}  // namespace tabletfs::fs
