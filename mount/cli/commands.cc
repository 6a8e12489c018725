#include "mount/cli/commands.h"

#include <algorithm>
#include <memory>
#include <string>

#include "mount/cli/args.h"
#include "mount/cli/text.h"

namespace tabletfs::cli {
namespace {

constexpr std::string_view kGcPolicyHelp =
    "POLICY is cbt's: never | maxversions=N | maxage=D | P and P | P or P |\n"
    "(P), where D is a duration such as 30s, 12h, 7d or 1h30m ('and' binds\n"
    "tighter than 'or'). Quote it or pass it as several words.\n";

constexpr std::string_view kRowHelp =
    "Output, as cbt prints it: a line of 40 dashes, the row key, then per\n"
    "cell version '  family:qualifier  @ YYYY/MM/DD-hh:mm:ss.uuuuuu' (UTC)\n"
    "and the value in double quotes with Go escapes (\\n, \\t, \\xNN...).\n"
    "Keys that are not plain printable UTF-8 are shown quoted the same way.\n"
    "Cells come with families sorted by name, qualifiers bytewise, versions\n"
    "newest first; an empty line ends each row.\n";

const std::vector<Command>& AllCommands() {
  static const std::string set_gc_policy_help =
      "A last word 'force' is accepted and does nothing (cbt's override of\n"
      "its warning for replicated clusters; there is no replication here).\n"
      "\n" +
      std::string(kGcPolicyHelp);
  static const std::vector<Command> commands = {
      {"ls", "ls [TABLE]",
       "List tables, or the families of TABLE with their GC policies",
       "With TABLE, cbt's table: families sorted by name, the GC policy as\n"
       "Bigtable shows it (versions() > N, age() > D, && and ||; empty for\n"
       "never) and a Value Type column that is always {} (values are bytes).\n",
       &Ls},
      {"createtable", "createtable TABLE [families=FAMILY[:POLICY],...]",
       "Create a table (and, optionally, families)",
       "Example: createtable webtable families=contents:maxversions=3,anchor\n",
       &CreateTable, /*creates_database=*/true},
      {"deletetable", "deletetable TABLE", "Delete a table and all its data",
       "", &DeleteTable},
      {"createfamily", "createfamily TABLE FAMILY[:POLICY] [POLICY...]",
       "Create a column family (GC policy 'never' unless given)", kGcPolicyHelp,
       &CreateFamily},
      {"deletefamily", "deletefamily TABLE FAMILY",
       "Delete a column family and its data in every row", "", &DeleteFamily},
      {"setgcpolicy",
       "setgcpolicy TABLE FAMILY ( maxage=D | maxversions=N | maxage=D "
       "(and|or) maxversions=N | never ) [force]",
       "Set the garbage-collection policy of a family",
       set_gc_policy_help, &SetGcPolicy},
      {"set", "set TABLE ROW FAMILY:QUALIFIER=VALUE[@TS] ...",
       "Set cells of one row (atomically)",
       "TS is microseconds since the epoch; without it the server assigns\n"
       "one. As in cbt, a trailing @SUFFIX is a timestamp only when SUFFIX\n"
       "is an integer: 'ContactInfo:EA=john@example.com' is a plain value.\n"
       "The qualifier may be empty: 'contents:=<html>...'.\n",
       &Set},
      {"lookup",
       "lookup TABLE ROW [columns=F:Q,...] [cells-per-column=N] [at=T]",
       "Read one row",
       "columns= takes F:Q (a column), F: (a family), :Q or Q (qualifier Q in\n"
       "any family), comma-separated, as exact names. at=T reads the row as\n"
       "of time T (microseconds or ISO-8601 UTC such as\n"
       "2026-11-21T10:00:00Z). Exit code 1 when the row does not exist.\n",
       &Lookup},
      {"read",
       "read TABLE [start=ROW] [end=ROW] [prefix=P] [count=N] "
       "[columns=F:Q,...] [cells-per-column=N] [at=T]",
       "Read rows",
       "Rows in [start, end) with the given prefix, at most count of them.\n",
       &Read},
      {"count", "count TABLE [prefix=P]",
       "Count the rows of a table (or those whose key starts with P)",
       "", &Count},
      {"deletecolumn", "deletecolumn TABLE ROW FAMILY COLUMN",
       "Delete every version of one cell",
       "As cbt: the family and the column (qualifier) are two arguments.\n"
       "FAMILY:COLUMN as one argument works too. Deleting a cell that does\n"
       "not exist succeeds; an unknown table or family is an error.\n",
       &DeleteColumn},
      {"deleterow", "deleterow TABLE ROW", "Delete a row", "", &DeleteRow},
      {"deleteallrows", "deleteallrows TABLE",
       "Delete every row of a table (the schema stays)", "", &DeleteAllRows},
      {"watch", "watch TABLE [count=N]",
       "Print a table's changes as they are committed, one JSON line each",
       "The lines of MOUNT/.changes/TABLE, in commit order, whatever door\n"
       "the write came through (the mount, tabletctl, the API), from now\n"
       "until interrupted, or until N lines with count=N:\n"
       "  {\"kind\":\"set\",\"row\":..,\"family\":..,\"qualifier\":..,\n"
       "   \"timestamp\":MICROS,\"value\":..}\n"
       "kind: set, delete-version, delete-cell, delete-family, delete-row,\n"
       "drop-family, drop-table; names and values as 'tabletctl export'\n"
       "writes them (NAME_base64 when not UTF-8); a value above 64 KiB is\n"
       "cut (value_size, value_cut); a version deleted before it was read:\n"
       "value_gone. {\"lost\":N}: N changes went by while the output was\n"
       "not read. On a mounted data directory, or with -endpoint, it reads\n"
       "the server's ReadChangeStream (Google's emulator has none: an\n"
       "error); a stream the server ends is an error (exit code 1). On a\n"
       "data directory no daemon serves, watch opens the store itself and\n"
       "so holds it: mount it or serve it (tabletfs --serve) to watch\n"
       "writes from elsewhere.\n",
       &Watch},
      {"import", "import TABLE FILE [format=csv|jsonl] [column-family=FAMILY]",
       "Import cells from a CSV or JSON-lines file ('-': standard input)",
       "Creates the table and any missing family (GC policy 'never', or the\n"
       "one a JSONL schema line gives). The format defaults from the file\n"
       "name (.jsonl/.json: jsonl, otherwise csv).\n"
       "CSV, as 'cbt import' reads it: a header row of families (a family\n"
       "applies to its column and the columns right of it until the next),\n"
       "a header row of qualifiers, then one row per table row with the row\n"
       "key first; the first column of the header rows is ignored. An empty\n"
       "field sets nothing; a quoted empty field (\"\") sets an empty value.\n"
       "With column-family=FAMILY there is only the qualifier header row.\n"
       "Every cell of one CSV row is written in one atomic mutation at a\n"
       "server timestamp.\n"
       "JSONL: see 'tabletctl export --help'; timestamps are kept.\n",
       &Import, /*creates_database=*/true},
      {"export", "export TABLE [FILE] [format=csv|jsonl] [at=T]",
       "Export a table as CSV or JSON lines (standard output without FILE)",
       "CSV: the layout 'cbt import' reads, with the newest value of each\n"
       "cell; empty values are written as \"\". Columns are found in a first\n"
       "pass over a snapshot, so memory grows with the number of distinct\n"
       "columns, never with rows.\n"
       "JSONL: a first line {\"table\":...,\"families\":[{\"name\":...,\n"
       "\"gcpolicy\":...}]} then one line per cell version, in scan order:\n"
       "{\"row\":...,\"family\":...,\"qualifier\":...,\"timestamp\":MICROS,\n"
       "\"value\":...}. A row, qualifier or value that is not valid UTF-8 is\n"
       "written base64-encoded under row_base64, qualifier_base64 or\n"
       "value_base64 instead, so the export is lossless.\n"
       "The format defaults from FILE's name (.jsonl/.json: jsonl) or csv.\n",
       &Export},
      {"compact", "compact",
       "Compact everything into the fewest files, applying GC policies and "
       "deletions",
       "", nullptr, false, nullptr, &Compact},
      {"stats", "stats", "Print the engine's statistics", "", nullptr, false,
       nullptr, &Stats},
      {"tablets", "tablets [TABLE]",
       "List the tablets of every table, or of TABLE, one per line",
       "The lines of MOUNT/.tabletfs/tablets: tables by name, each table's\n"
       "tablets in row order, fields separated by one TAB, no header:\n"
       "  TABLE START END BYTES FILES [SAMPLE...]\n"
       "The tablet holds the rows START <= row < END. Rows are shown as the\n"
       "mount names them (%XX escapes, %~HASH for long keys); '-' is the\n"
       "unbounded START of a table's first tablet and END of its last.\n"
       "BYTES: its data (SSTables, its share of shared ones, and memtables);\n"
       "FILES: its SSTables; SAMPLE: zero or more rows inside it that cut its\n"
       "data into about equal parts. Example: tabletctl tablets | wc -l\n"
       "Splits and merges follow the threshold of whoever has the directory\n"
       "open: tabletctl itself uses the default (128 MiB).\n",
       &Tablets},
      {"check", "check",
       "Verify every checksum of every live file (exit code 1 on damage)", "",
       nullptr, false, nullptr, &Check},
      {"dump", "dump FILE [count=N]",
       "Print an SSTable's entries or a commit log's records (debugging)",
       "FILE is DATADIR/NNNNNN.sst (one line per internal key: table and\n"
       "family ids, row, qualifier, timestamp, sequence number, kind, value)\n"
       "or DATADIR/NNNNNN.log (one line per record, bytes escaped). Values\n"
       "and records are cut at 256 bytes. Reads only the file, so it works\n"
       "while the directory is mounted. -d is not needed.\n",
       nullptr, false, &Dump},
  };
  return commands;
}

// Display width of UTF-8 text (code points), for cbt's %-40s.
size_t DisplayWidth(std::string_view text) {
  size_t n = 0;
  for (const char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

void PrintCell(std::ostream& out, const Cell& cell) {
  std::string column = cell.family + ":" + ShowKey(cell.qualifier);
  const size_t width = DisplayWidth(column);
  if (width < 40) column.append(40 - width, ' ');
  out << "  " << column << " @ " << FormatCbtTimestamp(cell.timestamp) << '\n'
      << "    " << QuoteBytes(cell.value) << '\n';
}

// One row as cbt prints it: dashes, the key, the cells with families sorted
// by name (the store keeps them in creation order; within a family,
// qualifiers bytewise and versions newest first stay), an empty line.
void PrintRow(std::ostream& out, std::string_view key,
              std::vector<Cell>* cells) {
  std::stable_sort(cells->begin(), cells->end(),
                   [](const Cell& a, const Cell& b) {
                     return a.family < b.family;
                   });
  out << std::string(40, '-') << '\n' << ShowKey(key) << '\n';
  for (const Cell& c : *cells) PrintCell(out, c);
  out << '\n';
}

// Fills read options from lookup/read's columns=, cells-per-column=, at=.
Status ApplyReadOptions(Bigtable& db, std::string_view table,
                        const OptionMap& options, ReadOptions* read) {
  read->max_versions = 0;  // cbt shows every version unless told otherwise
  if (auto it = options.find("cells-per-column"); it != options.end()) {
    TABLETFS_ASSIGN_OR_RETURN(read->max_versions,
                              ParseCellsPerColumn(it->second));
  }
  if (auto it = options.find("at"); it != options.end()) {
    TABLETFS_ASSIGN_OR_RETURN(int64_t at, ParseTime(it->second));
    read->at = at;
  }
  if (auto it = options.find("columns"); it != options.end()) {
    TABLETFS_RETURN_IF_ERROR(ParseColumnsOption(db, table, it->second, read));
  }
  return Status::OK();
}

Result<GcPolicy> ParsePolicyWords(const Args& args, size_t first,
                                  std::string prefix) {
  std::string text = std::move(prefix);
  for (size_t i = first; i < args.size(); ++i) {
    if (!text.empty()) text += ' ';
    text += args[i];
  }
  return GcPolicy::Parse(text);
}

}  // namespace

const std::vector<Command>& Commands() { return AllCommands(); }

const Command* FindCommand(std::string_view name) {
  for (const Command& c : AllCommands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

void PrintUsage(std::ostream& out) {
  out << "usage: tabletctl [-d DATADIR] COMMAND [ARGS...]\n"
         "       tabletctl -endpoint HOST:PORT [-project P] [-instance I] "
         "COMMAND [ARGS...]\n"
         "\n"
         "Works on a tabletfs data directory with cbt's commands. DATADIR\n"
         "comes from -d, or else from $TABLETFS_DATADIR. While a tabletfs\n"
         "daemon has it mounted, tabletctl goes through the daemon's\n"
         "Bigtable API (DATADIR/bigtable.sock); the engine's maintenance\n"
         "(compact, stats, check) then needs the mount gone.\n"
         "With -endpoint (or $BIGTABLE_EMULATOR_HOST and no DATADIR) it\n"
         "works on any Bigtable v2 endpoint in plaintext: a tabletfs daemon's\n"
         "bigtable_api address, or Google's emulator. -project and\n"
         "-instance name the instance (default: tabletfs, local).\n"
         "\n"
         "Commands:\n";
  for (const Command& c : AllCommands()) {
    out << "  " << c.name << std::string(16 - c.name.size(), ' ') << c.summary
        << '\n';
  }
  out << "\n'tabletctl COMMAND --help' describes one command.\n";
}

void PrintCommandHelp(const Command& command, std::ostream& out) {
  out << "usage: tabletctl [-d DATADIR] " << command.synopsis << "\n\n"
      << command.summary << ".\n";
  if (!command.details.empty()) out << '\n' << command.details;
  if (command.name == "lookup" || command.name == "read") {
    out << '\n' << kRowHelp;
  }
}

bool WantsHelp(const Args& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--help" || a == "-h";
  });
}

int RunCommand(DB& db, const Args& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    PrintUsage(err);
    return kExitUsage;
  }
  const Command* command = FindCommand(args[0]);
  if (command == nullptr) {
    err << "tabletctl: unknown command '" << args[0]
        << "' ('tabletctl help' lists the commands)\n";
    return kExitUsage;
  }
  const Args rest(args.begin() + 1, args.end());
  if (WantsHelp(rest)) {
    PrintCommandHelp(*command, out);
    return kExitOk;
  }
  if (command->run_on_files != nullptr) {
    return command->run_on_files(rest, out, err);
  }
  if (command->run_on_engine != nullptr) {
    return command->run_on_engine(db, rest, out, err);
  }
  return command->run(db, rest, out, err);
}

int Fail(std::ostream& err, std::string_view command, const Status& status) {
  err << "tabletctl " << command << ": " << status.ToString() << '\n';
  return kExitFailure;
}

int UsageError(std::ostream& err, std::string_view command,
               std::string_view problem) {
  err << "tabletctl " << command << ": " << problem;
  if (const Command* c = FindCommand(command)) {
    err << " (usage: tabletctl " << c->synopsis << ")";
  }
  err << '\n';
  return kExitUsage;
}

// ---- Schema ----

int Ls(Bigtable& db, const Args& args, std::ostream& out, std::ostream& err) {
  if (args.size() > 1) return UsageError(err, "ls", "too many arguments");
  if (args.empty()) {
    auto tables = db.ListTables();
    if (!tables.ok()) return Fail(err, "ls", tables.status());
    for (const std::string& t : *tables) out << t << '\n';
    return kExitOk;
  }
  auto families = db.ListFamilies(args[0]);
  if (!families.ok()) return Fail(err, "ls", families.status());
  std::sort(families->begin(), families->end(),
            [](const FamilyInfo& a, const FamilyInfo& b) {
              return a.name < b.name;
            });
  std::vector<std::vector<std::string>> lines = {
      {"Family Name", "GC Policy", "Value Type"},
      {"-----------", "---------", "----------"}};
  for (const FamilyInfo& f : *families) {
    lines.push_back({f.name, CbtPolicyText(f.settings.gc_policy), "{}"});
  }
  out << TabAligned(lines);
  return kExitOk;
}

int CreateTable(Bigtable& db, const Args& args, std::ostream& /*out*/,
                std::ostream& err) {
  if (args.empty()) return UsageError(err, "createtable", "missing TABLE");
  auto options = ParseOptions(args, 1, {"families"});
  if (!options.ok()) {
    return UsageError(err, "createtable", options.status().message());
  }
  const std::string& table = args[0];
  // Validate every family before creating anything.
  std::vector<std::pair<std::string, FamilySettings>> families;
  if (auto it = options->find("families"); it != options->end()) {
    std::string_view list = it->second;
    while (!list.empty()) {
      const size_t comma = list.find(',');
      std::string_view item = list.substr(0, comma);
      list = comma == std::string_view::npos ? std::string_view()
                                             : list.substr(comma + 1);
      if (item.empty()) continue;
      FamilySettings settings;
      const size_t colon = item.find(':');
      if (colon != std::string_view::npos) {
        auto policy = GcPolicy::Parse(item.substr(colon + 1));
        if (!policy.ok()) {
          return UsageError(err, "createtable", policy.status().message());
        }
        settings.gc_policy = *policy;
      }
      std::string name(item.substr(0, colon));
      Status s = ValidateFamilyName(name);
      if (!s.ok()) return UsageError(err, "createtable", s.message());
      families.emplace_back(std::move(name), settings);
    }
  }
  Status s = db.CreateTable(table);
  if (!s.ok()) return Fail(err, "createtable", s);
  for (const auto& [name, settings] : families) {
    s = db.CreateFamily(table, name, settings);
    if (!s.ok()) return Fail(err, "createtable", s);
  }
  return kExitOk;
}

int DeleteTable(Bigtable& db, const Args& args, std::ostream& /*out*/,
                std::ostream& err) {
  if (args.size() != 1) {
    return UsageError(err, "deletetable",
                      args.empty() ? "missing TABLE" : "too many arguments");
  }
  Status s = db.DeleteTable(args[0]);
  if (!s.ok()) return Fail(err, "deletetable", s);
  return kExitOk;
}

int CreateFamily(Bigtable& db, const Args& args, std::ostream& /*out*/,
                 std::ostream& err) {
  if (args.size() < 2) {
    return UsageError(
        err, "createfamily",
        args.empty() ? "missing TABLE and FAMILY" : "missing FAMILY");
  }
  std::string family = args[1];
  std::string policy_text;
  if (const size_t colon = family.find(':'); colon != std::string::npos) {
    policy_text = family.substr(colon + 1);
    family.resize(colon);
  }
  FamilySettings settings;
  if (!policy_text.empty() || args.size() > 2) {
    auto policy = ParsePolicyWords(args, 2, policy_text);
    if (!policy.ok()) {
      return UsageError(err, "createfamily", policy.status().message());
    }
    settings.gc_policy = *policy;
  }
  Status s = db.CreateFamily(args[0], family, settings);
  if (!s.ok()) return Fail(err, "createfamily", s);
  return kExitOk;
}

int DeleteFamily(Bigtable& db, const Args& args, std::ostream& /*out*/,
                 std::ostream& err) {
  if (args.size() != 2) {
    return UsageError(
        err, "deletefamily",
        args.size() < 2 ? "missing TABLE or FAMILY" : "too many arguments");
  }
  Status s = db.DeleteFamily(args[0], args[1]);
  if (!s.ok()) return Fail(err, "deletefamily", s);
  return kExitOk;
}

int SetGcPolicy(Bigtable& db, const Args& args, std::ostream& /*out*/,
                std::ostream& err) {
  if (args.size() < 3) {
    return UsageError(
        err, "setgcpolicy",
        args.size() < 2 ? "missing TABLE or FAMILY" : "missing POLICY");
  }
  Args words = args;
  if (words.size() > 3 && words.back() == "force") words.pop_back();
  auto policy = ParsePolicyWords(words, 2, "");
  if (!policy.ok()) {
    return UsageError(err, "setgcpolicy", policy.status().message());
  }
  auto settings = db.GetFamily(args[0], args[1]);
  if (!settings.ok()) return Fail(err, "setgcpolicy", settings.status());
  settings->gc_policy = *policy;
  Status s = db.UpdateFamily(args[0], args[1], *settings);
  if (!s.ok()) return Fail(err, "setgcpolicy", s);
  return kExitOk;
}

// ---- Data ----

int Set(Bigtable& db, const Args& args, std::ostream& /*out*/,
        std::ostream& err) {
  if (args.size() < 3) {
    return UsageError(err, "set",
                      args.size() < 2 ? "missing TABLE or ROW"
                                      : "missing FAMILY:QUALIFIER=VALUE");
  }
  RowMutation mutation(args[1]);
  for (size_t i = 2; i < args.size(); ++i) {
    auto cell = ParseSetArg(args[i]);
    if (!cell.ok()) return UsageError(err, "set", cell.status().message());
    if (cell->timestamp) {
      mutation.SetCell(cell->family, cell->qualifier, *cell->timestamp,
                       cell->value);
    } else {
      mutation.SetCell(cell->family, cell->qualifier, cell->value);
    }
  }
  auto applied = db.Apply(args[0], mutation, WriteOptions());
  if (!applied.ok()) return Fail(err, "set", applied.status());
  return kExitOk;
}

int Lookup(Bigtable& db, const Args& args, std::ostream& out,
           std::ostream& err) {
  if (args.size() < 2) {
    return UsageError(err, "lookup",
                      args.empty() ? "missing TABLE and ROW" : "missing ROW");
  }
  auto options = ParseOptions(args, 2, {"columns", "cells-per-column", "at"});
  if (!options.ok()) {
    return UsageError(err, "lookup", options.status().message());
  }
  ReadOptions read;
  Status s = ApplyReadOptions(db, args[0], *options, &read);
  if (!s.ok()) {
    return s.IsInvalidArgument() ? UsageError(err, "lookup", s.message())
                                 : Fail(err, "lookup", s);
  }
  auto row = db.ReadRow(args[0], args[1], read);
  if (!row.ok()) return Fail(err, "lookup", row.status());
  if (row->cells.empty()) {
    return Fail(err, "lookup",
                Status::NotFound("no row " + ShowKey(args[1]) + " in table '" +
                                 args[0] + "'"));
  }
  PrintRow(out, args[1], &row->cells);
  return kExitOk;
}

int Read(Bigtable& db, const Args& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) return UsageError(err, "read", "missing TABLE");
  auto options = ParseOptions(
      args, 1,
      {"start", "end", "prefix", "count", "columns", "cells-per-column", "at"});
  if (!options.ok()) {
    return UsageError(err, "read", options.status().message());
  }
  ScanOptions scan;
  Status s = ApplyReadOptions(db, args[0], *options, &scan.read);
  if (!s.ok()) {
    return s.IsInvalidArgument() ? UsageError(err, "read", s.message())
                                 : Fail(err, "read", s);
  }
  if (auto it = options->find("start"); it != options->end()) {
    scan.start_row = it->second;
  }
  if (auto it = options->find("end"); it != options->end()) {
    scan.end_row = it->second;
  }
  if (auto it = options->find("prefix"); it != options->end()) {
    scan.prefix = it->second;
  }
  uint64_t limit = 0;
  if (auto it = options->find("count"); it != options->end()) {
    const std::optional<uint64_t> n = ParseUint64(it->second);
    if (!n) {
      return UsageError(
          err, "read",
          "bad count '" + it->second + "': expected a non-negative integer");
    }
    limit = *n;
    if (limit == 0) return kExitOk;
  }
  auto scanner = db.NewScanner(args[0], scan);
  if (!scanner.ok()) return Fail(err, "read", scanner.status());
  Scanner& it = **scanner;
  // One row's cells are held to print its families in name order.
  std::string current_row;
  std::vector<Cell> cells;
  uint64_t rows = 0;
  for (it.SeekToFirst(); it.Valid(); it.Next()) {
    if (cells.empty() || it.row() != current_row) {
      if (!cells.empty()) PrintRow(out, current_row, &cells);
      cells.clear();
      if (limit != 0 && rows == limit) break;
      current_row = std::string(it.row());
      ++rows;
    }
    auto value = it.value();
    if (!value.ok()) return Fail(err, "read", value.status());
    cells.push_back(Cell{std::string(it.family()), std::string(it.qualifier()),
                         it.timestamp(), std::string(*value)});
  }
  if (!it.status().ok()) return Fail(err, "read", it.status());
  if (!cells.empty()) PrintRow(out, current_row, &cells);
  return kExitOk;
}

int Count(Bigtable& db, const Args& args, std::ostream& out,
          std::ostream& err) {
  if (args.empty()) return UsageError(err, "count", "missing TABLE");
  auto options = ParseOptions(args, 1, {"prefix"});
  if (!options.ok()) {
    return UsageError(err, "count", options.status().message());
  }
  ScanOptions scan;
  scan.read.max_versions = 1;
  if (auto it = options->find("prefix"); it != options->end()) {
    scan.prefix = it->second;
  }
  auto scanner = db.NewScanner(args[0], scan);
  if (!scanner.ok()) return Fail(err, "count", scanner.status());
  uint64_t rows = 0;
  for ((*scanner)->SeekToFirst(); (*scanner)->Valid(); (*scanner)->NextRow()) {
    ++rows;
  }
  if (!(*scanner)->status().ok())
    return Fail(err, "count", (*scanner)->status());
  out << rows << '\n';
  return kExitOk;
}

int DeleteColumn(Bigtable& db, const Args& args, std::ostream& /*out*/,
                 std::ostream& err) {
  std::string family, qualifier;
  if (args.size() == 4) {
    family = args[2];
    qualifier = args[3];
  } else if (args.size() == 3 && args[2].find(':') != std::string::npos) {
    family = args[2].substr(0, args[2].find(':'));
    qualifier = args[2].substr(args[2].find(':') + 1);
  } else {
    return UsageError(err, "deletecolumn",
                      args.size() < 3 ? "missing TABLE, ROW, FAMILY or COLUMN"
                                      : args.size() == 3
                                            ? "missing COLUMN"
                                            : "too many arguments");
  }
  RowMutation mutation(args[1]);
  mutation.DeleteCell(family, qualifier);
  auto applied = db.Apply(args[0], mutation, WriteOptions());
  if (!applied.ok()) return Fail(err, "deletecolumn", applied.status());
  return kExitOk;
}

int DeleteRow(Bigtable& db, const Args& args, std::ostream& /*out*/,
              std::ostream& err) {
  if (args.size() != 2) {
    return UsageError(
        err, "deleterow",
        args.size() < 2 ? "missing TABLE or ROW" : "too many arguments");
  }
  RowMutation mutation(args[1]);
  mutation.DeleteRow();
  auto applied = db.Apply(args[0], mutation, WriteOptions());
  if (!applied.ok()) return Fail(err, "deleterow", applied.status());
  return kExitOk;
}

int DeleteAllRows(Bigtable& db, const Args& args, std::ostream& /*out*/,
                  std::ostream& err) {
  if (args.size() != 1) {
    return UsageError(err, "deleteallrows",
                      args.empty() ? "missing TABLE" : "too many arguments");
  }
  // Row by row from one snapshot: each delete hides what existed when it
  // was applied, so concurrent writers are never half-deleted.
  ScanOptions scan;
  scan.read.max_versions = 1;
  auto scanner = db.NewScanner(args[0], scan);
  if (!scanner.ok()) return Fail(err, "deleteallrows", scanner.status());
  Scanner& it = **scanner;
  for (it.SeekToFirst(); it.Valid(); it.NextRow()) {
    RowMutation mutation{std::string(it.row())};
    mutation.DeleteRow();
    auto applied = db.Apply(args[0], mutation, WriteOptions());
    if (!applied.ok()) return Fail(err, "deleteallrows", applied.status());
  }
  if (!it.status().ok()) return Fail(err, "deleteallrows", it.status());
  return kExitOk;
}

}  // namespace tabletfs::cli
