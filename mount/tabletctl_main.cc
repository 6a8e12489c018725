// tabletctl: cbt's command line for a tabletfs data directory.
//
//   tabletctl [-d DATADIR] COMMAND [ARGS...]
//
// Argument parsing and wiring only; the commands live in mount/cli/.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "mount/cli/commands.h"
#include "mount/cli/open.h"

namespace {

using tabletfs::cli::kExitFailure;
using tabletfs::cli::kExitOk;
using tabletfs::cli::kExitUsage;

int Main(int argc, char** argv) {
  std::string datadir;
  if (const char* env = std::getenv("TABLETFS_DATADIR")) datadir = env;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-d" || arg == "--datadir") {
      if (i + 1 == argc) {
        std::cerr << "tabletctl: " << arg << " needs a DATADIR\n";
        return kExitUsage;
      }
      datadir = argv[++i];
    } else if (arg.rfind("--datadir=", 0) == 0) {
      datadir = arg.substr(10);
    } else if (arg.rfind("-d", 0) == 0 && arg.size() > 2) {
      datadir = arg.substr(2);
    } else if (arg == "-h" || arg == "--help") {
      tabletfs::cli::PrintUsage(std::cout);
      return kExitOk;
    } else if (arg == "--") {
      ++i;
      break;
    } else if (!arg.empty() && arg[0] == '-') {
      std::cerr << "tabletctl: unknown option '" << arg
                << "' ('tabletctl --help' lists the options)\n";
      return kExitUsage;
    } else {
      break;
    }
  }
  if (i == argc) {
    tabletfs::cli::PrintUsage(std::cerr);
    return kExitUsage;
  }
  const tabletfs::cli::Args args(argv + i, argv + argc);
  if (args[0] == "help") {
    if (args.size() == 1) {
      tabletfs::cli::PrintUsage(std::cout);
      return kExitOk;
    }
    const tabletfs::cli::Command* command = tabletfs::cli::FindCommand(args[1]);
    if (command == nullptr) {
      std::cerr << "tabletctl: unknown command '" << args[1]
                << "' ('tabletctl help' lists the commands)\n";
      return kExitUsage;
    }
    tabletfs::cli::PrintCommandHelp(*command, std::cout);
    return kExitOk;
  }
  const tabletfs::cli::Command* command = tabletfs::cli::FindCommand(args[0]);
  if (command == nullptr) {
    std::cerr << "tabletctl: unknown command '" << args[0]
              << "' ('tabletctl help' lists the commands)\n";
    return kExitUsage;
  }
  const tabletfs::cli::Args rest(args.begin() + 1, args.end());
  if (tabletfs::cli::WantsHelp(rest)) {
    tabletfs::cli::PrintCommandHelp(*command, std::cout);
    return kExitOk;
  }
  if (command->run_on_files != nullptr) {
    const int code = command->run_on_files(rest, std::cout, std::cerr);
    std::cout.flush();
    return code;
  }
  if (datadir.empty()) {
    std::cerr << "tabletctl: no data directory: pass -d DATADIR or set "
                 "TABLETFS_DATADIR\n";
    return kExitUsage;
  }
  auto db = tabletfs::cli::OpenDatabase(datadir, command->creates_database);
  if (!db.ok()) {
    const tabletfs::Status& s = db.status();
    std::cerr << "tabletctl: "
              << (s.IsBusy() || s.IsNotFound() ? s.message() : s.ToString())
              << '\n';
    return kExitFailure;
  }
  // Only maintenance asks for the engine; every other command gets the
  // data-model interface.
  const int code =
      command->run_on_engine != nullptr
          ? command->run_on_engine(**db, rest, std::cout, std::cerr)
          : command->run(**db, rest, std::cout, std::cerr);
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "tabletctl " << command->name
              << ": writing standard output failed\n";
    return kExitFailure;
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  return Main(argc, argv);
}
