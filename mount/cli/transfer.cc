// `tabletctl import` and `export`: CSV in cbt import's layout and lossless
// JSON lines. Both stream: memory is bounded by one row's batch (import) or
// by the number of distinct columns (CSV export), never by the table.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "mount/cli/args.h"
#include "mount/cli/commands.h"
#include "mount/cli/csv.h"
#include "mount/cli/json.h"
#include "mount/cli/progress.h"
#include "mount/cli/text.h"

namespace tabletfs::cli {
namespace {

enum class Format { kCsv, kJsonl };

// A batch of one row's cells is applied once it holds this much.
constexpr size_t kMaxBatchOps = 1000;
constexpr size_t kMaxBatchBytes = 4u << 20;

Result<Format> ChooseFormat(const OptionMap& options, std::string_view file) {
  if (auto it = options.find("format"); it != options.end()) {
    if (it->second == "csv") return Format::kCsv;
    if (it->second == "jsonl") return Format::kJsonl;
    return Status::InvalidArgument("bad format '" + it->second +
                                   "': expected csv or jsonl");
  }
  const auto ends_with = [&](std::string_view suffix) {
    return file.size() >= suffix.size() &&
           file.substr(file.size() - suffix.size()) == suffix;
  };
  return ends_with(".jsonl") || ends_with(".json") ? Format::kJsonl
                                                   : Format::kCsv;
}

// Creates the table and families an import names when they are missing.
class SchemaEnsurer {
 public:
  SchemaEnsurer(DB& db, std::string table, std::ostream& err)
      : db_(db), table_(std::move(table)), err_(err) {}

  Status Init() {
    TABLETFS_ASSIGN_OR_RETURN(auto tables, db_.ListTables());
    bool exists = false;
    for (const std::string& t : tables) exists = exists || t == table_;
    if (!exists) {
      TABLETFS_RETURN_IF_ERROR(db_.CreateTable(table_));
      err_ << "tabletctl import: created table '" << table_ << "'\n";
    }
    TABLETFS_ASSIGN_OR_RETURN(auto families, db_.ListFamilies(table_));
    for (const FamilyInfo& f : families) known_.insert(f.name);
    return Status::OK();
  }

  Status Ensure(const std::string& family, const GcPolicy& policy = {}) {
    if (known_.count(family) != 0) return Status::OK();
    FamilySettings settings;
    settings.gc_policy = policy;
    TABLETFS_RETURN_IF_ERROR(db_.CreateFamily(table_, family, settings));
    err_ << "tabletctl import: created family '" << family << "' ("
         << policy.ToString() << ")\n";
    known_.insert(family);
    return Status::OK();
  }

 private:
  DB& db_;
  std::string table_;
  std::ostream& err_;
  std::set<std::string> known_;
};

// Accumulates cells of one row and applies them in bounded batches.
class RowBatcher {
 public:
  RowBatcher(DB& db, std::string table) : db_(db), table_(std::move(table)) {}

  Status Add(const std::string& row, const std::string& family,
             const std::string& qualifier, std::optional<int64_t> timestamp,
             const std::string& value) {
    if (mutation_ &&
        (mutation_->row() != row || mutation_->ops().size() >= kMaxBatchOps ||
         mutation_->ByteSize() >= kMaxBatchBytes)) {
      TABLETFS_RETURN_IF_ERROR(Flush());
    }
    if (!mutation_) {
      if (row != last_row_) ++rows_;
      last_row_ = row;
      mutation_.emplace(row);
    }
    if (timestamp) {
      mutation_->SetCell(family, qualifier, *timestamp, value);
    } else {
      mutation_->SetCell(family, qualifier, value);
    }
    ++cells_;
    return Status::OK();
  }

  Status Flush() {
    if (!mutation_) return Status::OK();
    auto applied = db_.Apply(table_, *mutation_, WriteOptions());
    mutation_.reset();
    return applied.status();
  }

  uint64_t rows() const { return rows_; }
  uint64_t cells() const { return cells_; }

 private:
  DB& db_;
  std::string table_;
  std::optional<RowMutation> mutation_;
  std::string last_row_;
  uint64_t rows_ = 0;
  uint64_t cells_ = 0;
};

std::string Counts(uint64_t rows, uint64_t cells) {
  return std::to_string(rows) + (rows == 1 ? " row (" : " rows (") +
         std::to_string(cells) + (cells == 1 ? " cell)" : " cells)");
}

Status ImportCsv(std::istream& in, const std::string& source,
                 const OptionMap& options, SchemaEnsurer* schema,
                 RowBatcher* batcher, ProgressBar* progress) {
  CsvReader reader(in);
  std::vector<CsvField> record;
  const auto where = [&]() {
    return source + ":" + std::to_string(reader.line());
  };
  const auto reader_error = [&]() {
    return Status::InvalidArgument(source + ": " + reader.status().message());
  };
  // Header rows.
  std::vector<std::string> families;
  std::vector<std::string> qualifiers;
  if (auto it = options.find("column-family"); it != options.end()) {
    if (!reader.Next(&record)) {
      return reader.status().ok() ? Status::OK() : reader_error();
    }
    for (size_t i = 1; i < record.size(); ++i) {
      families.push_back(it->second);
      qualifiers.push_back(record[i].text);
    }
  } else {
    if (!reader.Next(&record)) {
      return reader.status().ok() ? Status::OK() : reader_error();
    }
    std::string family;
    for (size_t i = 1; i < record.size(); ++i) {
      if (!record[i].text.empty()) family = record[i].text;
      if (family.empty()) {
        return Status::InvalidArgument(
            where() + ": column " + std::to_string(i + 1) +
            " has no family (the first header row names the families)");
      }
      families.push_back(family);
    }
    if (!reader.Next(&record)) {
      return reader.status().ok()
                 ? Status::InvalidArgument(source +
                                           ": missing the qualifier header "
                                           "row")
                 : reader_error();
    }
    for (size_t i = 1; i < record.size(); ++i) {
      qualifiers.push_back(record[i].text);
    }
    if (qualifiers.size() > families.size()) {
      return Status::InvalidArgument(where() +
                                     ": more qualifiers than families");
    }
    families.resize(qualifiers.size());
  }
  for (const std::string& f : families) {
    Status s = schema->Ensure(f);
    if (!s.ok()) return s.WithContext(source);
  }
  // Data rows: every cell of a CSV row in one mutation.
  while (reader.Next(&record)) {
    if (record[0].text.empty()) {
      return Status::InvalidArgument(where() + ": empty row key");
    }
    if (record.size() - 1 > qualifiers.size()) {
      return Status::InvalidArgument(where() + ": " +
                                     std::to_string(record.size()) +
                                     " fields, but the header has " +
                                     std::to_string(qualifiers.size() + 1));
    }
    for (size_t i = 1; i < record.size(); ++i) {
      if (record[i].text.empty() && !record[i].quoted) continue;
      Status s = batcher->Add(record[0].text, families[i - 1],
                              qualifiers[i - 1], std::nullopt, record[i].text);
      if (!s.ok()) return s.WithContext(where());
    }
    Status s = batcher->Flush();
    if (!s.ok()) return s.WithContext(where());
    progress->Update(reader.bytes_read(),
                     std::to_string(batcher->rows()) + " rows");
  }
  if (!reader.status().ok()) return reader_error();
  return Status::OK();
}

// A bytes field of a JSONL cell: NAME (UTF-8) or NAME_base64.
Result<std::optional<std::string>> BytesField(const JsonValue& line,
                                              const std::string& name) {
  if (const JsonValue* v = line.Find(name)) {
    if (v->type != JsonValue::Type::kString) {
      return Status::InvalidArgument("'" + name + "' is not a string");
    }
    return std::optional<std::string>(v->string);
  }
  if (const JsonValue* v = line.Find(name + "_base64")) {
    if (v->type != JsonValue::Type::kString) {
      return Status::InvalidArgument("'" + name + "_base64' is not a string");
    }
    auto decoded = Base64Decode(v->string);
    if (!decoded.ok()) {
      return decoded.status().WithContext("'" + name + "_base64'");
    }
    return std::optional<std::string>(std::move(*decoded));
  }
  return std::optional<std::string>();
}

Status ImportJsonLine(const JsonValue& line, SchemaEnsurer* schema,
                      RowBatcher* batcher) {
  if (line.type != JsonValue::Type::kObject) {
    return Status::InvalidArgument("expected a JSON object");
  }
  if (const JsonValue* families = line.Find("families")) {
    // The schema line.
    if (families->type != JsonValue::Type::kArray) {
      return Status::InvalidArgument("'families' is not an array");
    }
    for (const JsonValue& f : families->array) {
      const JsonValue* name = f.Find("name");
      if (name == nullptr || name->type != JsonValue::Type::kString) {
        return Status::InvalidArgument("a family without a 'name'");
      }
      GcPolicy policy;
      if (const JsonValue* p = f.Find("gcpolicy")) {
        if (p->type != JsonValue::Type::kString) {
          return Status::InvalidArgument("'gcpolicy' is not a string");
        }
        TABLETFS_ASSIGN_OR_RETURN(policy, GcPolicy::Parse(p->string));
      }
      TABLETFS_RETURN_IF_ERROR(schema->Ensure(name->string, policy));
    }
    return Status::OK();
  }
  TABLETFS_ASSIGN_OR_RETURN(auto row, BytesField(line, "row"));
  TABLETFS_ASSIGN_OR_RETURN(auto family, BytesField(line, "family"));
  TABLETFS_ASSIGN_OR_RETURN(auto qualifier, BytesField(line, "qualifier"));
  TABLETFS_ASSIGN_OR_RETURN(auto value, BytesField(line, "value"));
  if (!row) return Status::InvalidArgument("missing 'row'");
  if (!family) return Status::InvalidArgument("missing 'family'");
  std::optional<int64_t> timestamp;
  if (const JsonValue* ts = line.Find("timestamp")) {
    if (ts->type != JsonValue::Type::kNumber || !ts->is_integer ||
        ts->integer == kServerTimestamp) {
      return Status::InvalidArgument(
          "'timestamp' is not an integer (microseconds)");
    }
    timestamp = ts->integer;
  }
  TABLETFS_RETURN_IF_ERROR(schema->Ensure(*family));
  return batcher->Add(*row, *family, qualifier.value_or(""), timestamp,
                      value.value_or(""));
}

Status ImportJsonl(std::istream& in, const std::string& source,
                   SchemaEnsurer* schema, RowBatcher* batcher,
                   ProgressBar* progress) {
  std::string text;
  uint64_t line = 0;
  uint64_t bytes = 0;
  while (std::getline(in, text)) {
    ++line;
    bytes += text.size() + 1;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = source + ":" + std::to_string(line);
    auto value = ParseJson(text);
    if (!value.ok()) return value.status().WithContext(where);
    Status s = ImportJsonLine(*value, schema, batcher);
    if (!s.ok()) return s.WithContext(where);
    progress->Update(bytes, std::to_string(batcher->rows()) + " rows");
  }
  if (in.bad()) return Status::IOError(source + ": read failed");
  return batcher->Flush().WithContext(source);
}

// ---- Export ----

size_t FamilyIndex(const std::vector<FamilyInfo>& families,
                   std::string_view name) {
  size_t i = 0;
  while (i < families.size() && families[i].name != name) ++i;
  return i;
}

Status ExportCsv(DB& db, const std::string& table, ScanOptions scan,
                 std::ostream& out, ProgressBar* progress, uint64_t* rows,
                 uint64_t* cells) {
  TABLETFS_ASSIGN_OR_RETURN(auto families, db.ListFamilies(table));
  // Pass 1: the columns, in scan order (family creation order, then
  // qualifier), so pass 2 can emit each row as the scanner walks it.
  scan.read.max_versions = 1;
  std::vector<std::pair<size_t, std::string>> columns;
  {
    std::set<std::pair<size_t, std::string>> seen;
    TABLETFS_ASSIGN_OR_RETURN(auto scanner, db.NewScanner(table, scan));
    for (scanner->SeekToFirst(); scanner->Valid(); scanner->Next()) {
      const size_t family_index = FamilyIndex(families, scanner->family());
      if (family_index == families.size()) {
        return Status::Corruption("the scan returned an unknown family '" +
                                  std::string(scanner->family()) + "'");
      }
      seen.emplace(family_index, std::string(scanner->qualifier()));
      progress->Update(0, "scanning columns: " + std::to_string(seen.size()));
    }
    TABLETFS_RETURN_IF_ERROR(scanner->status());
    columns.assign(seen.begin(), seen.end());
  }
  std::string line;
  {
    size_t last = families.size();
    for (const auto& [f, q] : columns) {
      line.push_back(',');
      if (f != last) AppendCsvField(&line, families[f].name);
      last = f;
    }
    line.push_back('\n');
    for (const auto& [f, q] : columns) {
      line.push_back(',');
      AppendCsvField(&line, q);
    }
    line.push_back('\n');
    out << line;
  }
  // Pass 2: one line per row.
  TABLETFS_ASSIGN_OR_RETURN(auto scanner, db.NewScanner(table, scan));
  scanner->SeekToFirst();
  while (scanner->Valid()) {
    const std::string row(scanner->row());
    line.clear();
    AppendCsvField(&line, row, /*force_quotes=*/false);
    size_t next = 0;  // the next column to emit
    while (scanner->Valid() && scanner->row() == row) {
      // The column of this cell, at or after `next` (same order).
      size_t c = next;
      while (c < columns.size() &&
             (families[columns[c].first].name != scanner->family() ||
              columns[c].second != scanner->qualifier())) {
        ++c;
      }
      if (c == columns.size()) {
        return Status::Corruption(
            "the second pass found a column the "
            "first did not");
      }
      for (; next < c; ++next) line.push_back(',');
      line.push_back(',');
      TABLETFS_ASSIGN_OR_RETURN(std::string_view value, scanner->value());
      AppendCsvField(&line, value, /*force_quotes=*/value.empty());
      ++next;
      ++*cells;
      scanner->Next();
    }
    for (; next < columns.size(); ++next) line.push_back(',');
    line.push_back('\n');
    out << line;
    ++*rows;
    progress->Update(0, std::to_string(*rows) + " rows");
  }
  return scanner->status();
}

void AppendJsonBytes(std::string* line, std::string_view name,
                     std::string_view bytes) {
  line->push_back('"');
  line->append(name);
  if (IsValidUtf8(bytes)) {
    line->append("\":");
    line->append(JsonQuote(bytes));
  } else {
    line->append("_base64\":\"");
    line->append(Base64Encode(bytes));
    line->push_back('"');
  }
}

Status ExportJsonl(DB& db, const std::string& table, ScanOptions scan,
                   std::ostream& out, ProgressBar* progress, uint64_t* rows,
                   uint64_t* cells) {
  TABLETFS_ASSIGN_OR_RETURN(auto families, db.ListFamilies(table));
  std::string line = "{\"table\":" + JsonQuote(table) + ",\"families\":[";
  for (size_t i = 0; i < families.size(); ++i) {
    if (i > 0) line.push_back(',');
    line += "{\"name\":" + JsonQuote(families[i].name) + ",\"gcpolicy\":" +
            JsonQuote(families[i].settings.gc_policy.ToString()) + "}";
  }
  line += "]}\n";
  out << line;
  scan.read.max_versions = 0;  // every version
  TABLETFS_ASSIGN_OR_RETURN(auto scanner, db.NewScanner(table, scan));
  std::string last_row;
  for (scanner->SeekToFirst(); scanner->Valid(); scanner->Next()) {
    if (*rows == 0 || scanner->row() != last_row) {
      last_row = std::string(scanner->row());
      ++*rows;
      progress->Update(0, std::to_string(*rows) + " rows");
    }
    line = "{";
    AppendJsonBytes(&line, "row", scanner->row());
    line += ",\"family\":" + JsonQuote(scanner->family()) + ",";
    AppendJsonBytes(&line, "qualifier", scanner->qualifier());
    line += ",\"timestamp\":" + std::to_string(scanner->timestamp()) + ",";
    TABLETFS_ASSIGN_OR_RETURN(std::string_view value, scanner->value());
    AppendJsonBytes(&line, "value", value);
    line += "}\n";
    out << line;
    ++*cells;
  }
  return scanner->status();
}

}  // namespace

int Import(DB& db, const Args& args, std::ostream& out, std::ostream& err) {
  if (args.size() < 2) {
    return UsageError(err, "import",
                      args.empty() ? "missing TABLE and FILE"
                                   : "missing FILE ('-' for standard input)");
  }
  auto options = ParseOptions(args, 2, {"format", "column-family"});
  if (!options.ok()) {
    return UsageError(err, "import", options.status().message());
  }
  auto format = ChooseFormat(*options, args[1]);
  if (!format.ok()) return UsageError(err, "import", format.status().message());
  if (*format == Format::kJsonl && options->count("column-family") != 0) {
    return UsageError(err, "import", "column-family= is for CSV only");
  }
  if (auto it = options->find("column-family"); it != options->end()) {
    Status s = ValidateFamilyName(it->second);
    if (!s.ok()) return UsageError(err, "import", s.message());
  }
  const std::string& table = args[0];
  Status s = ValidateTableName(table);
  if (!s.ok()) return UsageError(err, "import", s.message());

  std::ifstream file;
  std::istream* in = &std::cin;
  uint64_t total = 0;
  const std::string source = args[1] == "-" ? "<stdin>" : args[1];
  if (args[1] != "-") {
    file.open(args[1], std::ios::binary);
    if (!file) {
      return Fail(
          err, "import",
          Status::IOError(args[1] + ": cannot open: " + std::strerror(errno)));
    }
    std::error_code ec;
    total = std::filesystem::file_size(args[1], ec);
    if (ec) total = 0;
    in = &file;
  }

  SchemaEnsurer schema(db, table, err);
  s = schema.Init();
  if (!s.ok()) return Fail(err, "import", s);
  RowBatcher batcher(db, table);
  ProgressBar progress(err, ProgressWanted(err), "importing", total);
  if (*format == Format::kCsv) {
    s = ImportCsv(*in, source, *options, &schema, &batcher, &progress);
  } else {
    s = ImportJsonl(*in, source, &schema, &batcher, &progress);
  }
  progress.Finish();
  if (!s.ok()) return Fail(err, "import", s);
  out << "imported " << Counts(batcher.rows(), batcher.cells()) << " into "
      << table << '\n';
  return kExitOk;
}

int Export(DB& db, const Args& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) return UsageError(err, "export", "missing TABLE");
  size_t first_option = 1;
  std::string file;
  if (args.size() > 1 && args[1].find('=') == std::string::npos) {
    file = args[1];
    first_option = 2;
  }
  auto options = ParseOptions(args, first_option, {"format", "at"});
  if (!options.ok()) {
    return UsageError(err, "export", options.status().message());
  }
  auto format = ChooseFormat(*options, file);
  if (!format.ok()) return UsageError(err, "export", format.status().message());
  const std::string& table = args[0];
  auto snapshot = db.GetSnapshot();
  ScanOptions scan;
  scan.read.snapshot = snapshot.get();
  if (auto it = options->find("at"); it != options->end()) {
    auto at = ParseTime(it->second);
    if (!at.ok()) return UsageError(err, "export", at.status().message());
    scan.read.at = *at;
  }
  // Fail on an unknown table before creating FILE.
  auto families = db.ListFamilies(table);
  if (!families.ok()) return Fail(err, "export", families.status());

  std::ofstream file_out;
  std::ostream* sink = &out;
  if (!file.empty() && file != "-") {
    file_out.open(file, std::ios::binary | std::ios::trunc);
    if (!file_out) {
      return Fail(
          err, "export",
          Status::IOError(file + ": cannot create: " + std::strerror(errno)));
    }
    sink = &file_out;
  }
  uint64_t rows = 0;
  uint64_t cells = 0;
  ProgressBar progress(err, ProgressWanted(err), "exporting", 0);
  Status s =
      *format == Format::kCsv
          ? ExportCsv(db, table, scan, *sink, &progress, &rows, &cells)
          : ExportJsonl(db, table, scan, *sink, &progress, &rows, &cells);
  progress.Finish();
  if (!s.ok()) return Fail(err, "export", s);
  sink->flush();
  if (!*sink) {
    return Fail(
        err, "export",
        Status::IOError((sink == &out ? std::string("<stdout>") : file) +
                        ": write failed"));
  }
  if (sink == &file_out) {
    file_out.close();
    if (!file_out) {
      return Fail(err, "export", Status::IOError(file + ": close failed"));
    }
    out << "exported " << Counts(rows, cells) << " to " << file << '\n';
  }
  return kExitOk;
}

}  // namespace tabletfs::cli
