#include "mount/daemon/args.h"

#include <cerrno>
#include <cstdlib>
#include <string_view>
#include <utility>

namespace tabletfs::daemon {
namespace {

bool ParseUnsigned(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    if (v > (UINT64_MAX - (c - '0')) / 10) return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

bool ParseSeconds(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || v < 0) return false;
  *out = v;
  return true;
}

bool Ignored(std::string_view opt) {
  for (std::string_view name : {"defaults", "auto", "noauto", "user", "users",
                                "nouser", "_netdev", "nofail", "owner"}) {
    if (opt == name) return true;
  }
  return opt.substr(0, 2) == "x-" || opt.substr(0, 8) == "comment=";
}

bool ParseOption(const std::string& opt, DaemonArgs* out, std::string* error) {
  if (opt.empty() || Ignored(opt)) return true;
  size_t eq = opt.find('=');
  std::string key = opt.substr(0, eq);
  std::string value = eq == std::string::npos ? "" : opt.substr(eq + 1);
  auto bytes = [&](std::optional<uint64_t>* field) {
    uint64_t v;
    if (!ParseUnsigned(value, &v)) {
      *error =
          "option " + key + " wants a number of bytes, not '" + value + "'";
      return false;
    }
    *field = v;
    return true;
  };
  if (key == "entry_timeout" || key == "attr_timeout") {
    double* field =
        key == "entry_timeout" ? &out->entry_timeout : &out->attr_timeout;
    if (!ParseSeconds(value, field)) {
      *error = "option " + key + " wants seconds, not '" + value + "'";
      return false;
    }
    return true;
  }
  if (key == "memtable_bytes") return bytes(&out->memtable_bytes);
  if (key == "block_cache_bytes") return bytes(&out->block_cache_bytes);
  if (key == "tablet_split_bytes") return bytes(&out->tablet_split_bytes);
  if (key == "max_value_bytes") return bytes(&out->max_value_bytes);
  if (key == "space_reserve_bytes") return bytes(&out->space_reserve_bytes);
  if (key == "change_history_bytes") {
    return bytes(&out->change_history_bytes);
  }
  if (key == "commit") {
    // Whole seconds, as ext4's commit= (a day at most, so the interval
    // cannot overflow the store's milliseconds).
    uint64_t v;
    if (!ParseUnsigned(value, &v) || v > 86400) {
      *error = "option commit wants whole seconds from 0 to 86400, not '" +
               value + "'";
      return false;
    }
    out->commit_seconds = v;
    return true;
  }
  if (key == "spin_us") {
    uint64_t v;
    if (!ParseUnsigned(value, &v) || v > 100000) {
      *error = "option spin_us wants microseconds from 0 to 100000, not '" +
               value + "'";
      return false;
    }
    out->spin_us = static_cast<uint32_t>(v);
    return true;
  }
  if (key == "uring" && eq == std::string::npos) {
    out->io_uring = true;
    return true;
  }
  if (key == "auto_families" && eq == std::string::npos) {
    out->auto_families = true;
    return true;
  }
  if (key == "store") {
    out->store_given = true;
    if (value == "engine") {
      out->store = StoreKind::kEngine;
    } else if (value == "memory") {
      out->store = StoreKind::kMemory;
    } else {
      *error = "option store wants engine or memory, not '" + value + "'";
      return false;
    }
    return true;
  }
  if (key == "rpc_timeout") {
    if (!ParseSeconds(value, &out->rpc_timeout) || out->rpc_timeout <= 0 ||
        out->rpc_timeout > 86400) {
      *error =
          "option rpc_timeout wants seconds above 0 (at most 86400), "
          "not '" +
          value + "'";
      return false;
    }
    out->remote_options.push_back(key);
    return true;
  }
  for (auto [name, field] :
       {std::pair{"endpoint", &out->endpoint},
        std::pair{"app_profile", &out->app_profile},
        std::pair{"bigtable_api", &out->bigtable_api},
        std::pair{"bigtable_api_tls_cert", &out->bigtable_api_tls_cert},
        std::pair{"bigtable_api_tls_key", &out->bigtable_api_tls_key},
        std::pair{"bigtable_api_token_file", &out->bigtable_api_token_file}}) {
    if (key != name) continue;
    if (value.empty()) {
      *error = "option " + key + " wants a value";
      return false;
    }
    *field = value;
    if (key == "endpoint" || key == "app_profile") {
      out->remote_options.push_back(key);
    }
    return true;
  }
  if (key == "debug") {
    out->debug = true;
    out->foreground = true;
    return true;
  }
  out->fuse_options.push_back(opt);
  return true;
}

bool ParseOptionList(const std::string& list, DaemonArgs* out,
                     std::string* error) {
  // Commas separate options; a backslash escapes the next character.
  std::string cur;
  for (size_t i = 0; i < list.size(); i++) {
    if (list[i] == '\\' && i + 1 < list.size()) {
      cur.push_back(list[i]);
      cur.push_back(list[++i]);
    } else if (list[i] == ',') {
      if (!ParseOption(cur, out, error)) return false;
      cur.clear();
    } else {
      cur.push_back(list[i]);
    }
  }
  return ParseOption(cur, out, error);
}

constexpr std::string_view kRemoteScheme = "bigtable://";

// bigtable://PROJECT/INSTANCE (a trailing '/' allowed).
bool ParseRemoteSource(std::string_view source, DaemonArgs* out,
                       std::string* error) {
  std::string_view rest = source.substr(kRemoteScheme.size());
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 ||
      slash + 1 == rest.size() ||
      rest.find('/', slash + 1) != std::string_view::npos) {
    *error = "a remote source is bigtable://PROJECT/INSTANCE, not '" +
             std::string(source) + "'";
    return false;
  }
  out->remote = true;
  out->project = std::string(rest.substr(0, slash));
  out->instance = std::string(rest.substr(slash + 1));
  return true;
}

// What a remote source refuses, and what only it takes.
bool CheckRemoteOptions(const DaemonArgs& a, std::string* error) {
  if (!a.remote) {
    if (!a.remote_options.empty()) {
      *error = "option " + a.remote_options.front() +
               " is for a bigtable://PROJECT/INSTANCE source, not a DATADIR";
      return false;
    }
    return true;
  }
  const std::pair<const char*, bool> refused[] = {
      {"memtable_bytes", a.memtable_bytes.has_value()},
      {"block_cache_bytes", a.block_cache_bytes.has_value()},
      {"tablet_split_bytes", a.tablet_split_bytes.has_value()},
      {"space_reserve_bytes", a.space_reserve_bytes.has_value()},
      {"change_history_bytes", a.change_history_bytes.has_value()},
      {"commit", a.commit_seconds.has_value()},
      {"store", a.store_given},
      {"bigtable_api", !a.bigtable_api.empty()},
      {"bigtable_api_tls_cert", !a.bigtable_api_tls_cert.empty()},
      {"bigtable_api_tls_key", !a.bigtable_api_tls_key.empty()},
      {"bigtable_api_token_file", !a.bigtable_api_token_file.empty()}};
  for (const auto& [name, given] : refused) {
    if (given) {
      *error = std::string("option ") + name +
               " is for a local store; a bigtable:// source keeps its data "
               "(and serves its API) on the server";
      return false;
    }
  }
  return true;
}

}  // namespace

bool ParseArgs(int argc, const char* const* argv, DaemonArgs* out,
               std::string* error) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      out->help = true;
    } else if (a == "-V" || a == "--version") {
      out->version = true;
    } else if (a == "-f") {
      out->foreground = true;
    } else if (a == "-d" || a == "--debug") {
      out->debug = true;
      out->foreground = true;
    } else if (a == "--serve") {
      out->serve_only = true;
      out->foreground = true;
    } else if (a == "-s") {
      out->single_threaded = true;
    } else if (a == "-o") {
      if (i + 1 >= argc) {
        *error = "-o needs an option list";
        return false;
      }
      if (!ParseOptionList(argv[++i], out, error)) return false;
    } else if (a.size() > 2 && a.compare(0, 2, "-o") == 0) {
      if (!ParseOptionList(a.substr(2), out, error)) return false;
    } else if (a.size() > 1 && a[0] == '-') {
      *error = "unknown option " + a;
      return false;
    } else {
      positional.push_back(a);
    }
  }
  if (out->help || out->version) return true;
  if (out->store == StoreKind::kMemory) {
    const std::pair<const char*, bool> engine_only[] = {
        {"memtable_bytes", out->memtable_bytes.has_value()},
        {"block_cache_bytes", out->block_cache_bytes.has_value()},
        {"tablet_split_bytes", out->tablet_split_bytes.has_value()},
        {"space_reserve_bytes", out->space_reserve_bytes.has_value()},
        {"change_history_bytes", out->change_history_bytes.has_value()},
        {"commit", out->commit_seconds.has_value()}};
    for (const auto& [name, given] : engine_only) {
      if (given) {
        *error = std::string("option ") + name +
                 " is the engine's; store=memory has no use for it";
        return false;
      }
    }
  }
  const bool remote =
      !positional.empty() && positional[0].rfind(kRemoteScheme, 0) == 0;
  if (remote && out->serve_only) {
    *error = "--serve serves a DATADIR, not a bigtable:// source";
    return false;
  }
  if (remote && !ParseRemoteSource(positional[0], out, error)) return false;
  if (!CheckRemoteOptions(*out, error)) return false;
  if (out->serve_only) {
    if (positional.size() != 1) {
      *error = "--serve takes DATADIR alone, got " +
               std::to_string(positional.size()) + " arguments";
      return false;
    }
    out->datadir = positional[0];
    return true;
  }
  if (positional.size() != 2) {
    *error =
        "expected DATADIR (or bigtable://PROJECT/INSTANCE) and "
        "MOUNTPOINT, got " +
        std::to_string(positional.size()) + " arguments";
    return false;
  }
  if (!remote) out->datadir = positional[0];
  out->mountpoint = positional[1];
  return true;
}

std::string Usage(const std::string& program) {
  return "usage: " + program +
         " [options] DATADIR MOUNTPOINT\n"
         "       " +
         program +
         " [options] bigtable://PROJECT/INSTANCE MOUNTPOINT\n"
         "       " +
         program +
         " [options] --serve DATADIR\n"
         "\n"
         "Mounts the tabletfs store in DATADIR (created when missing) at\n"
         "MOUNTPOINT. Unmount with: fusermount3 -u MOUNTPOINT\n"
         "It serves the Cloud Bigtable v2 API on DATADIR/bigtable.sock (mode\n"
         "0600) as well; --serve serves only that, in the foreground, with no\n"
         "mount (stop it with SIGTERM or SIGINT).\n"
         "A bigtable:// source mounts a remote Bigtable instead: Cloud\n"
         "Bigtable over TLS with Google's default credentials, or the\n"
         "emulator or a tabletfs API at -o endpoint= or\n"
         "$BIGTABLE_EMULATOR_HOST (plaintext); no DATADIR, no API served.\n"
         "\n"
         "options:\n"
         "    -h, --help             print this help\n"
         "    -V, --version          print the version\n"
         "    -f                     stay in the foreground (log to stderr)\n"
         "    -d, -o debug           log every request (implies -f)\n"
         "    -s                     single-threaded\n"
         "    -o opt[,opt...]        mount options:\n"
         "        allow_other            let other users reach the mount\n"
         "        entry_timeout=SECONDS  kernel cache of names (default 1)\n"
         "        attr_timeout=SECONDS   kernel cache of attributes (default "
         "1)\n"
         "        memtable_bytes=N       memtable budget (a flush at half)\n"
         "        block_cache_bytes=N    decoded blocks kept in memory "
         "(default\n"
         "                               8 MiB; more pays when the data read\n"
         "                               again fits)\n"
         "        tablet_split_bytes=N   tablet size before a split\n"
         "        max_value_bytes=N      largest value, default 64 MiB (EFBIG\n"
         "                               beyond)\n"
         "        space_reserve_bytes=N  writes fail with ENOSPC below this "
         "free\n"
         "                               space (default 1/32 of the disk, at\n"
         "                               most 64 MiB)\n"
         "        change_history_bytes=N flushed log kept for "
         ".changes/TABLE@T\n"
         "                               (default 64 MiB)\n"
         "        commit=SECONDS         closed files survive a power cut "
         "after\n"
         "                               this long (default 5; 0: only fsync)\n"
         "        auto_families          mkdir of a family not in the schema\n"
         "                               creates it (default settings)\n"
         "        spin_us=N              the thread reading requests waits N\n"
         "                               microseconds for the next before it\n"
         "                               sleeps (default 50; 0: sleeps at "
         "once)\n"
         "        uring                  requests over io_uring where the "
         "kernel\n"
         "                               offers it (its fuse module's\n"
         "                               enable_uring is Y): a queue a CPU,\n"
         "                               no spinning, half the daemon's CPU\n"
         "        store=engine|memory    engine (default): the store in "
         "DATADIR;\n"
         "                               memory: a scratch store in memory,\n"
         "                               empty at mount, gone at unmount\n"
         "                               (DATADIR then holds only mount.pid;\n"
         "                               no memtable_bytes, "
         "block_cache_bytes,\n"
         "                               tablet_split_bytes,\n"
         "                               space_reserve_bytes,\n"
         "                               change_history_bytes or commit)\n"
         "        bigtable_api=HOST:PORT the Bigtable API on TCP too; an "
         "address\n"
         "                               other than loopback needs the next\n"
         "                               three (docs/API.md)\n"
         "        bigtable_api_tls_cert=FILE, bigtable_api_tls_key=FILE  PEM\n"
         "        bigtable_api_token_file=FILE  calls must carry\n"
         "                               authorization: Bearer <its content>\n"
         "      for a bigtable://PROJECT/INSTANCE source only:\n"
         "        endpoint=HOST:PORT     plaintext endpoint (the emulator, a\n"
         "                               tabletfs API); default\n"
         "                               $BIGTABLE_EMULATOR_HOST, else Cloud\n"
         "                               Bigtable (TLS)\n"
         "        app_profile=ID         the app profile of data requests\n"
         "        rpc_timeout=SECONDS    deadline of each RPC (default 10)\n"
         "        and the FUSE options below\n";
}

}  // namespace tabletfs::daemon
