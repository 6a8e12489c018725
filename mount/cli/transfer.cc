// `tabletctl import` and `export`: CSV in cbt import's layout and lossless
// JSON lines. Both stream: memory is bounded by one row's batch (import) or
// by the number of distinct columns (CSV export), never by the table.
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

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

// An import reads its file twice. The first pass hands every family and
// cell to a Checker, which validates them and writes nothing; only when the
// whole file is good does the second pass hand the same calls to a Writer,
// which creates the table and families and applies the cells. So bad input
// changes nothing (a table is never left behind by a file that fails to
// parse), and what can still fail in the second pass is the store itself.
class ImportSink {
 public:
  virtual ~ImportSink() = default;
  // A family the file declares (JSONL's schema line, CSV's header).
  virtual Status Family(const std::string& family, const GcPolicy& policy) = 0;
  virtual Status Cell(const std::string& row, const std::string& family,
                      const std::string& qualifier,
                      std::optional<int64_t> timestamp,
                      const std::string& value) = 0;
  // The end of one CSV line: its cells form one mutation.
  virtual Status EndMutation() = 0;
  virtual uint64_t rows() const = 0;
  virtual uint64_t cells() const = 0;
};

// Counts rows (runs of cells with one key) and cells.
class RowCounter {
 public:
  void Add(const std::string& row) {
    if (cells_ == 0 || row != last_row_) {
      ++rows_;
      last_row_ = row;
    }
    ++cells_;
  }
  uint64_t rows() const { return rows_; }
  uint64_t cells() const { return cells_; }

 private:
  std::string last_row_;
  uint64_t rows_ = 0;
  uint64_t cells_ = 0;
};

// The first pass: everything the store would refuse, before anything is
// written.
class Checker : public ImportSink {
 public:
  explicit Checker(size_t max_value_bytes)
      : max_value_bytes_(max_value_bytes) {}

  Status Family(const std::string& family, const GcPolicy&) override {
    return CheckFamily(family);
  }
  Status Cell(const std::string& row, const std::string& family,
              const std::string&, std::optional<int64_t>,
              const std::string& value) override {
    TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
    TABLETFS_RETURN_IF_ERROR(CheckFamily(family));
    if (value.size() > max_value_bytes_) {
      return Status::InvalidArgument(
          "value of " + std::to_string(value.size()) +
          " bytes is larger than the limit of " +
          std::to_string(max_value_bytes_));
    }
    counter_.Add(row);
    return Status::OK();
  }
  Status EndMutation() override { return Status::OK(); }
  uint64_t rows() const override { return counter_.rows(); }
  uint64_t cells() const override { return counter_.cells(); }

 private:
  Status CheckFamily(const std::string& family) {
    if (families_.count(family) != 0) return Status::OK();
    TABLETFS_RETURN_IF_ERROR(ValidateFamilyName(family));
    families_.insert(family);
    return Status::OK();
  }

  const size_t max_value_bytes_;
  std::set<std::string> families_;
  RowCounter counter_;
};

// The second pass: creates the table and the families it lacks, and applies
// the cells of one row in bounded batches. Undo() removes what it created.
class Writer : public ImportSink {
 public:
  Writer(Bigtable& db, std::string table, std::ostream& err)
      : db_(db), table_(std::move(table)), err_(err) {}

  Status Init() {
    TABLETFS_ASSIGN_OR_RETURN(auto tables, db_.ListTables());
    bool exists = false;
    for (const std::string& t : tables) exists = exists || t == table_;
    if (!exists) {
      TABLETFS_RETURN_IF_ERROR(db_.CreateTable(table_));
      created_table_ = true;
      err_ << "tabletctl import: created table '" << table_ << "'\n";
    }
    TABLETFS_ASSIGN_OR_RETURN(auto families, db_.ListFamilies(table_));
    for (const FamilyInfo& f : families) known_.insert(f.name);
    return Status::OK();
  }

  Status Family(const std::string& family, const GcPolicy& policy) override {
    if (known_.count(family) != 0) return Status::OK();
    FamilySettings settings;
    settings.gc_policy = policy;
    TABLETFS_RETURN_IF_ERROR(db_.CreateFamily(table_, family, settings));
    err_ << "tabletctl import: created family '" << family << "' ("
         << policy.ToString() << ")\n";
    known_.insert(family);
    created_families_.push_back(family);
    return Status::OK();
  }

  Status Cell(const std::string& row, const std::string& family,
              const std::string& qualifier, std::optional<int64_t> timestamp,
              const std::string& value) override {
    TABLETFS_RETURN_IF_ERROR(Family(family, GcPolicy()));
    if (mutation_ &&
        (mutation_->row() != row || mutation_->ops().size() >= kMaxBatchOps ||
         mutation_->ByteSize() >= kMaxBatchBytes)) {
      TABLETFS_RETURN_IF_ERROR(EndMutation());
    }
    if (!mutation_) mutation_.emplace(row);
    if (timestamp) {
      mutation_->SetCell(family, qualifier, *timestamp, value);
    } else {
      mutation_->SetCell(family, qualifier, value);
    }
    counter_.Add(row);
    return Status::OK();
  }

  Status EndMutation() override {
    if (!mutation_) return Status::OK();
    auto applied = db_.Apply(table_, *mutation_, WriteOptions());
    mutation_.reset();
    return applied.status();
  }

  uint64_t rows() const override { return counter_.rows(); }
  uint64_t cells() const override { return counter_.cells(); }

  // After a failed second pass: drops the table if this import created it,
  // else the families it created (they hold only this import's cells).
  // Cells written into families that existed before stay. Returns what it
  // did, for the error line.
  std::string Undo() {
    mutation_.reset();
    if (created_table_) {
      Status s = db_.DeleteTable(table_);
      return s.ok() ? "; removed the table it created"
                    : "; could not remove the table it created: " +
                          s.ToString();
    }
    std::string done;
    for (const std::string& family : created_families_) {
      Status s = db_.DeleteFamily(table_, family);
      done += s.ok() ? "; removed family '" + family + "'"
                     : "; could not remove family '" + family +
                           "': " + s.ToString();
    }
    return done;
  }

 private:
  Bigtable& db_;
  std::string table_;
  std::ostream& err_;
  std::set<std::string> known_;
  bool created_table_ = false;
  std::vector<std::string> created_families_;
  std::optional<RowMutation> mutation_;
  RowCounter counter_;
};

std::string Counts(uint64_t rows, uint64_t cells) {
  return std::to_string(rows) + (rows == 1 ? " row (" : " rows (") +
         std::to_string(cells) + (cells == 1 ? " cell)" : " cells)");
}

Status ImportCsv(std::istream& in, const std::string& source,
                 const OptionMap& options, ImportSink* sink,
                 ProgressBar* progress) {
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
    Status s = sink->Family(f, GcPolicy());
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
      Status s = sink->Cell(record[0].text, families[i - 1], qualifiers[i - 1],
                            std::nullopt, record[i].text);
      if (!s.ok()) return s.WithContext(where());
    }
    Status s = sink->EndMutation();
    if (!s.ok()) return s.WithContext(where());
    progress->Update(reader.bytes_read(),
                     std::to_string(sink->rows()) + " rows");
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

Status ImportJsonLine(const JsonValue& line, ImportSink* sink) {
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
      TABLETFS_RETURN_IF_ERROR(sink->Family(name->string, policy));
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
  return sink->Cell(*row, *family, qualifier.value_or(""), timestamp,
                    value.value_or(""));
}

Status ImportJsonl(std::istream& in, const std::string& source,
                   ImportSink* sink, ProgressBar* progress) {
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
    Status s = ImportJsonLine(*value, sink);
    if (!s.ok()) return s.WithContext(where);
    progress->Update(bytes, std::to_string(sink->rows()) + " rows");
  }
  if (in.bad()) return Status::IOError(source + ": read failed");
  return sink->EndMutation().WithContext(source);
}

// One pass over the input from its start.
Status ImportPass(std::istream& in, const std::string& source, Format format,
                  const OptionMap& options, ImportSink* sink,
                  ProgressBar* progress) {
  in.clear();
  in.seekg(0);
  if (!in) return Status::IOError(source + ": cannot read it again");
  return format == Format::kCsv
             ? ImportCsv(in, source, options, sink, progress)
             : ImportJsonl(in, source, sink, progress);
}

// Standard input is read twice too: copied into an unlinked temporary file
// first.
Status SpoolStdin(std::ifstream* spooled) {
  const char* tmpdir = getenv("TMPDIR");
  std::string path = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") +
                     "/tabletctl-import-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd < 0) {
    return Status::IOError(path + ": cannot create: " + std::strerror(errno));
  }
  close(fd);
  {
    std::ofstream copy(path, std::ios::binary | std::ios::trunc);
    copy << std::cin.rdbuf();
    copy.flush();
    if (!copy || std::cin.bad()) {
      unlink(path.c_str());
      return Status::IOError("<stdin>: cannot copy it to " + path);
    }
  }
  spooled->open(path, std::ios::binary);
  unlink(path.c_str());
  if (!*spooled) return Status::IOError(path + ": cannot reopen");
  return Status::OK();
}

// ---- Export ----

size_t FamilyIndex(const std::vector<FamilyInfo>& families,
                   std::string_view name) {
  size_t i = 0;
  while (i < families.size() && families[i].name != name) ++i;
  return i;
}

Status ExportCsv(Bigtable& db, const std::string& table, ScanOptions scan,
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

Status ExportJsonl(Bigtable& db, const std::string& table, ScanOptions scan,
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

int Import(Bigtable& db, const Args& args, std::ostream& out,
           std::ostream& err) {
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
  } else {
    s = SpoolStdin(&file);
    if (!s.ok()) return Fail(err, "import", s);
  }

  // Pass 1: check everything, write nothing.
  Checker checker(Options().max_value_bytes);
  {
    ProgressBar progress(err, ProgressWanted(err), "checking", total);
    s = ImportPass(file, source, *format, *options, &checker, &progress);
    progress.Finish();
  }
  if (!s.ok()) {
    err << "tabletctl import: " << s.ToString()
        << " (nothing imported, nothing created)\n";
    return kExitFailure;
  }
  // Pass 2: create and write.
  Writer writer(db, table, err);
  s = writer.Init();
  if (s.ok()) {
    ProgressBar progress(err, ProgressWanted(err), "importing", total);
    s = ImportPass(file, source, *format, *options, &writer, &progress);
    progress.Finish();
  }
  if (!s.ok()) {
    const std::string undone = writer.Undo();
    err << "tabletctl import: " << s.ToString() << undone << '\n';
    return kExitFailure;
  }
  out << "imported " << Counts(writer.rows(), writer.cells()) << " into "
      << table << '\n';
  return kExitOk;
}

int Export(Bigtable& db, const Args& args, std::ostream& out,
           std::ostream& err) {
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
