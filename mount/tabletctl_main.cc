// tabletctl: cbt's command line for a tabletfs data directory, or for any
// Bigtable v2 endpoint.
//
//   tabletctl [-d DATADIR] COMMAND [ARGS...]
//   tabletctl -endpoint HOST:PORT [-project P] [-instance I] COMMAND ...
//
// Argument parsing and wiring only; the commands live in mount/cli/.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <utility>
#include <string>
#include <vector>

#include "api/remote_bigtable.h"
#include "mount/cli/commands.h"
#include "mount/cli/open.h"

namespace {

using tabletfs::cli::kExitFailure;
using tabletfs::cli::kExitOk;
using tabletfs::cli::kExitUsage;

// A store over `endpoint` ("unix:PATH" or "HOST:PORT"), in plaintext.
tabletfs::Result<std::unique_ptr<tabletfs::Bigtable>> Connect(
    const std::string& endpoint, const std::string& project,
    const std::string& instance) {
  tabletfs::api::RemoteOptions options;
  options.endpoint = endpoint;
  options.project = project;
  options.instance = instance;
  return tabletfs::api::ConnectBigtable(options);
}

int Main(int argc, char** argv) {
  std::string datadir, endpoint;
  std::string project = "tabletfs", instance = "local";
  if (const char* env = std::getenv("TABLETFS_DATADIR")) datadir = env;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    // cbt's global flags, with one dash or two.
    std::string* flag = nullptr;
    for (auto [name, field] : {std::pair{"endpoint", &endpoint},
                               std::pair{"project", &project},
                               std::pair{"instance", &instance}}) {
      if (arg == std::string("-") + name || arg == std::string("--") + name) {
        flag = field;
      }
    }
    if (flag != nullptr) {
      if (i + 1 == argc || argv[i + 1][0] == '\0') {
        std::cerr << "tabletctl: " << arg << " needs a value\n";
        return kExitUsage;
      }
      *flag = argv[++i];
    } else if (arg == "-d" || arg == "--datadir") {
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
  if (endpoint.empty() && datadir.empty()) {
    if (const char* env = std::getenv("BIGTABLE_EMULATOR_HOST")) endpoint = env;
  }
  if (endpoint.empty() && datadir.empty()) {
    std::cerr << "tabletctl: no data directory: pass -d DATADIR or set "
                 "TABLETFS_DATADIR (or -endpoint HOST:PORT)\n";
    return kExitUsage;
  }
  int code = kExitOk;
  if (endpoint.empty()) {
    auto db = tabletfs::cli::OpenDatabase(datadir, command->creates_database);
    if (db.ok()) {
      // Only maintenance asks for the engine; every other command gets the
      // data-model interface.
      code = command->run_on_engine != nullptr
                 ? command->run_on_engine(**db, rest, std::cout, std::cerr)
                 : command->run(**db, rest, std::cout, std::cerr);
    } else if (db.status().IsBusy() && command->run != nullptr &&
               access((datadir + "/bigtable.sock").c_str(), F_OK) == 0) {
      // Mounted: through the daemon's API, on the same live store.
      endpoint = "unix:" + datadir + "/bigtable.sock";
    } else {
      const tabletfs::Status& s = db.status();
      std::cerr << "tabletctl: "
                << (s.IsBusy() || s.IsNotFound() ? s.message() : s.ToString())
                << (s.IsBusy() && command->run_on_engine != nullptr
                        ? " (" + std::string(command->name) +
                              " works on the engine itself, not through the "
                              "mount's API)"
                        : "")
                << '\n';
      return kExitFailure;
    }
  }
  if (!endpoint.empty()) {
    if (command->run == nullptr) {
      std::cerr << "tabletctl " << command->name
                << ": works on a data directory's engine, not on a Bigtable "
                   "endpoint\n";
      return kExitUsage;
    }
    auto remote = Connect(endpoint, project, instance);
    if (!remote.ok()) {
      std::cerr << "tabletctl: " << remote.status().ToString() << '\n';
      return kExitUsage;
    }
    code = command->run(**remote, rest, std::cout, std::cerr);
  }
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
