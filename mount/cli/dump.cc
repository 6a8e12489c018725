// `tabletctl dump FILE`: the entries of an SSTable or the records of a
// commit log, for debugging. Reads the file alone, without opening the
// database (so it works on a mounted directory too); internal keys name
// tables and families by their numeric ids, as stored.
#include <memory>
#include <string>

#include "mount/cli/args.h"
#include "mount/cli/commands.h"
#include "mount/cli/text.h"
#include "store/engine_files.h"
#include "store/env.h"

namespace tabletfs::cli {
namespace {

// Values and log records are shown up to this many bytes.
constexpr size_t kMaxShownBytes = 256;

std::string Preview(std::string_view bytes) {
  if (bytes.size() <= kMaxShownBytes) return QuoteBytes(bytes);
  return QuoteBytes(bytes.substr(0, kMaxShownBytes)) + "... (" +
         std::to_string(bytes.size()) + " bytes)";
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.substr(s.size() - suffix.size()) == suffix;
}

Status DumpTable(const std::string& path, uint64_t limit, std::ostream& out) {
  uint64_t entries = 0;
  uint64_t size = 0;
  TABLETFS_RETURN_IF_ERROR(ForEachTableFileEntry(
      Env::Default(), path, &size, [&](const TableFileEntry& e) {
        if (limit != 0 && entries == limit) return false;
        ++entries;
        if (!e.well_formed) {
          out << "malformed key " << Preview(e.raw_key) << '\n';
          return true;
        }
        out << "table=" << e.table_id << " row=" << ShowKey(e.row);
        if (e.has_family) out << " family=" << e.family_id;
        if (e.has_qualifier) out << " qualifier=" << ShowKey(e.qualifier);
        if (e.has_timestamp) out << " ts=" << e.timestamp;
        out << " seq=" << e.seq << ' ' << e.kind;
        if (e.has_value) out << ' ' << Preview(e.value);
        out << '\n';
        return true;
      }));
  out << entries << (entries == 1 ? " entry" : " entries") << " shown of "
      << path << " (" << FormatBytes(size) << ")\n";
  return Status::OK();
}

Status DumpLog(const std::string& path, uint64_t limit, std::ostream& out) {
  uint64_t records = 0;
  int64_t torn_tail = -1;
  bool zero_tail = false;
  TABLETFS_RETURN_IF_ERROR(ForEachLogFileRecord(
      Env::Default(), path, &torn_tail, &zero_tail,
      [&](const LogFileRecord& r) {
        ++records;
        out << "record " << records << " at offset " << r.offset << ": "
            << r.bytes.size() << " bytes " << Preview(r.bytes) << '\n';
        return limit == 0 || records != limit;
      }));
  out << records << (records == 1 ? " record" : " records") << " shown of "
      << path;
  if (torn_tail >= 0) {
    out << (zero_tail ? "; zeros after offset " : "; torn tail after offset ")
        << torn_tail;
    // A live log's allocated rest, or what a crash or power cut left.
    if (zero_tail) out << " (space allocated ahead, or lost pages)";
  }
  out << '\n';
  return Status::OK();
}

}  // namespace

int Dump(const Args& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) return UsageError(err, "dump", "missing FILE");
  auto options = ParseOptions(args, 1, {"count"});
  if (!options.ok()) return UsageError(err, "dump", options.status().message());
  uint64_t limit = 0;
  if (auto it = options->find("count"); it != options->end()) {
    const std::optional<uint64_t> n = ParseUint64(it->second);
    if (!n) {
      return UsageError(
          err, "dump",
          "bad count '" + it->second + "': expected a non-negative integer");
    }
    limit = *n;
  }
  const std::string& path = args[0];
  Status s;
  if (EndsWith(path, ".sst")) {
    s = DumpTable(path, limit, out);
  } else if (EndsWith(path, ".log")) {
    s = DumpLog(path, limit, out);
  } else {
    return UsageError(err, "dump",
                      "'" + path +
                          "' is neither an SSTable (.sst) nor a "
                          "commit log (.log)");
  }
  if (!s.ok()) return Fail(err, "dump", s);
  return kExitOk;
}

}  // namespace tabletfs::cli
