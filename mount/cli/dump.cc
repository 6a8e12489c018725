// `tabletctl dump FILE`: the entries of an SSTable or the records of a
// commit log, for debugging. Reads the file alone, without opening the
// database (so it works on a mounted directory too); internal keys name
// tables and families by their numeric ids, as stored.
#include <memory>
#include <string>

#include "mount/cli/args.h"
#include "mount/cli/commands.h"
#include "mount/cli/text.h"
#include "store/db/key_format.h"
#include "store/env.h"
#include "store/table/table.h"
#include "store/table/table_options.h"
#include "store/wal/log_reader.h"

namespace tabletfs::cli {
namespace {

// Values and log records are shown up to this many bytes.
constexpr size_t kMaxShownBytes = 256;

std::string Preview(std::string_view bytes) {
  if (bytes.size() <= kMaxShownBytes) return QuoteBytes(bytes);
  return QuoteBytes(bytes.substr(0, kMaxShownBytes)) + "... (" +
         std::to_string(bytes.size()) + " bytes)";
}

std::string_view KindName(EntryKind kind) {
  switch (kind) {
    case EntryKind::kPut:
      return "put";
    case EntryKind::kDeleteVersion:
      return "delete-version";
    case EntryKind::kDeleteCell:
      return "delete-cell";
    case EntryKind::kDeleteFamily:
      return "delete-family";
    case EntryKind::kDeleteRow:
      return "delete-row";
    case EntryKind::kPutValueRef:
      return "put-value-ref";
  }
  return "unknown-kind";
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.substr(s.size() - suffix.size()) == suffix;
}

Status DumpTable(const std::string& path, uint64_t limit, std::ostream& out) {
  Env* env = Env::Default();
  TABLETFS_ASSIGN_OR_RETURN(uint64_t size, env->GetFileSize(path));
  TABLETFS_ASSIGN_OR_RETURN(auto file, env->NewRandomAccessFile(path));
  TABLETFS_ASSIGN_OR_RETURN(
      auto table,
      Table::Open(TableOptions(), std::move(file), size, /*cache_id=*/0, path));
  std::unique_ptr<Iterator> it = table->NewIterator(/*fill_cache=*/false);
  uint64_t entries = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (limit != 0 && entries == limit) break;
    ++entries;
    ParsedKey key;
    if (!ParseInternalKey(it->key(), &key)) {
      out << "malformed key " << Preview(it->key()) << '\n';
      continue;
    }
    out << "table=" << key.table_id
        << " row=" << ShowKey(Unescape(key.row_enc));
    if (key.section != KeySection::kRowMarker) {
      out << " family=" << key.family_id;
    }
    if (key.section == KeySection::kCellMarker ||
        key.section == KeySection::kVersion) {
      out << " qualifier=" << ShowKey(Unescape(key.qualifier_enc));
    }
    if (key.section == KeySection::kVersion) {
      out << " ts=" << key.timestamp;
    }
    out << " seq=" << key.seq << ' ' << KindName(key.kind);
    if (key.kind == EntryKind::kPut || key.kind == EntryKind::kPutValueRef) {
      out << ' ' << Preview(it->value());
    }
    out << '\n';
  }
  TABLETFS_RETURN_IF_ERROR(it->status());
  out << entries << (entries == 1 ? " entry" : " entries") << " shown of "
      << path << " (" << FormatBytes(size) << ")\n";
  return Status::OK();
}

Status DumpLog(const std::string& path, uint64_t limit, std::ostream& out) {
  TABLETFS_ASSIGN_OR_RETURN(auto file, Env::Default()->NewSequentialFile(path));
  LogReader reader(std::move(file), path);
  std::string record;
  Status status;
  uint64_t records = 0;
  uint64_t start = 0;
  while (reader.ReadRecord(&record, &status)) {
    ++records;
    out << "record " << records << " at offset " << start << ": "
        << record.size() << " bytes " << Preview(record) << '\n';
    start = reader.LastRecordEndOffset();
    if (limit != 0 && records == limit) break;
  }
  TABLETFS_RETURN_IF_ERROR(status);
  out << records << (records == 1 ? " record" : " records") << " shown of "
      << path;
  if (reader.torn_tail()) {
    out << "; torn tail after offset " << reader.LastRecordEndOffset();
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
