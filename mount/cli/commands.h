// The commands of `tabletctl`, cbt's command line for a tabletfs data
// directory, as a library: each command is a function of an open store, its
// arguments (without the command name), and the streams for output and
// errors, returning the process exit code. Data and schema commands take
// the data-model interface (store/bigtable.h), so they run on any
// implementation; only the engine's maintenance (compact, stats, check)
// takes the engine (store/db.h). tabletctl_main.cc only parses
// the global options, opens the database and dispatches here; tests call
// the same functions with string streams.
//
// Conventions (README "CLI"):
//   - Output goes to `out` and pipes well: no colours, no bars, no
//     headers beyond cbt's own.
//   - An error is ONE line on `err`, "tabletctl COMMAND: what went wrong",
//     and a non-zero exit code: kExitUsage for bad arguments, kExitFailure
//     when the operation failed (unknown table, damage found...).
//   - A progress bar is drawn on `err` only when it is the terminal
//     (ProgressWanted in progress.h).
//
// Thread safety: the functions may run concurrently on one store (it is
// thread-safe); each call uses its streams from one thread.
#ifndef TABLETFS_MOUNT_CLI_COMMANDS_H_
#define TABLETFS_MOUNT_CLI_COMMANDS_H_

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "store/bigtable.h"
#include "store/db.h"

namespace tabletfs::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

using Args = std::vector<std::string>;
using CommandFn = int (*)(Bigtable& db, const Args& args, std::ostream& out,
                          std::ostream& err);
// Engine maintenance: needs the engine itself.
using EngineCommandFn = int (*)(DB& db, const Args& args, std::ostream& out,
                                std::ostream& err);
// A command that reads files of the data directory without opening it.
using FileCommandFn = int (*)(const Args& args, std::ostream& out,
                              std::ostream& err);

struct Command {
  std::string_view name;
  // After "tabletctl ": "lookup TABLE ROW [columns=F:Q,...] ...".
  std::string_view synopsis;
  // One line for the command list.
  std::string_view summary;
  // The rest of `tabletctl COMMAND --help`, may be empty.
  std::string_view details;
  // Exactly one of run, run_on_files and run_on_engine is set.
  CommandFn run = nullptr;
  // Opens the data directory with create_if_missing (createtable, import).
  bool creates_database = false;
  FileCommandFn run_on_files = nullptr;
  EngineCommandFn run_on_engine = nullptr;
};

// Every command, in the order `tabletctl help` lists them.
const std::vector<Command>& Commands();
// nullptr when unknown.
const Command* FindCommand(std::string_view name);

// The overview: synopsis of tabletctl, global options, the command list.
void PrintUsage(std::ostream& out);
// "usage: tabletctl SYNOPSIS", the summary and the details.
void PrintCommandHelp(const Command& command, std::ostream& out);
// True when `args` asks for help (an argument "--help" or "-h").
bool WantsHelp(const Args& args);

// Runs args[0] with args[1...]: help when WantsHelp, kExitUsage for an
// unknown command.
int RunCommand(DB& db, const Args& args, std::ostream& out, std::ostream& err);

// ---- Schema ----
// ls                    tables, one per line
// ls TABLE              "Family Name  GC Policy" table
int Ls(Bigtable& db, const Args& args, std::ostream& out, std::ostream& err);
// createtable TABLE [families=F[:POLICY],...]
int CreateTable(Bigtable& db, const Args& args, std::ostream& out,
                std::ostream& err);
int DeleteTable(Bigtable& db, const Args& args, std::ostream& out,
                std::ostream& err);
// createfamily TABLE FAMILY[:POLICY] [POLICY WORDS...]
int CreateFamily(Bigtable& db, const Args& args, std::ostream& out,
                 std::ostream& err);
int DeleteFamily(Bigtable& db, const Args& args, std::ostream& out,
                 std::ostream& err);
// setgcpolicy TABLE FAMILY POLICY WORDS...
int SetGcPolicy(Bigtable& db, const Args& args, std::ostream& out,
                std::ostream& err);

// ---- Data ----
// set TABLE ROW FAMILY:QUALIFIER=VALUE[@TS] ...  (one atomic mutation)
int Set(Bigtable& db, const Args& args, std::ostream& out, std::ostream& err);
int Lookup(Bigtable& db, const Args& args, std::ostream& out,
           std::ostream& err);
int Read(Bigtable& db, const Args& args, std::ostream& out, std::ostream& err);
int Count(Bigtable& db, const Args& args, std::ostream& out, std::ostream& err);
// deletecolumn TABLE ROW FAMILY COLUMN (or FAMILY:COLUMN): every version.
int DeleteColumn(Bigtable& db, const Args& args, std::ostream& out,
                 std::ostream& err);
int DeleteRow(Bigtable& db, const Args& args, std::ostream& out,
              std::ostream& err);
int DeleteAllRows(Bigtable& db, const Args& args, std::ostream& out,
                  std::ostream& err);

// watch TABLE [count=N] (watch.cc): one JSON line per change, as
// MOUNT/.changes/TABLE, until interrupted or N lines.
int Watch(Bigtable& db, const Args& args, std::ostream& out, std::ostream& err);

// ---- Import and export (transfer.cc) ----
int Import(Bigtable& db, const Args& args, std::ostream& out,
           std::ostream& err);
int Export(Bigtable& db, const Args& args, std::ostream& out,
           std::ostream& err);

// ---- Maintenance (maintenance.cc) ----
int Compact(DB& db, const Args& args, std::ostream& out, std::ostream& err);
int Stats(DB& db, const Args& args, std::ostream& out, std::ostream& err);
// tablets [TABLE]: the lines of .tabletfs/tablets (fs/status_files.h).
int Tablets(Bigtable& db, const Args& args, std::ostream& out,
            std::ostream& err);
int Check(DB& db, const Args& args, std::ostream& out, std::ostream& err);

// ---- Debugging (dump.cc) ----
// dump FILE [count=N]: an SSTable's entries or a commit log's records.
int Dump(const Args& args, std::ostream& out, std::ostream& err);

// ---- Helpers shared by the command files ----
// "tabletctl COMMAND: <status>" on err; kExitFailure.
int Fail(std::ostream& err, std::string_view command, const Status& status);
// "tabletctl COMMAND: PROBLEM (usage: tabletctl SYNOPSIS)" on err;
// kExitUsage.
int UsageError(std::ostream& err, std::string_view command,
               std::string_view problem);

}  // namespace tabletfs::cli

#endif  // TABLETFS_MOUNT_CLI_COMMANDS_H_
