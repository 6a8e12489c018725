#include "store/engine_files.h"

#include <memory>

#include "store/db/key_format.h"
#include "store/env.h"
#include "store/table/table.h"
#include "store/table/table_options.h"
#include "store/wal/log_reader.h"

namespace tabletfs {
namespace {

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

TableFileEntry Decode(std::string_view key, std::string_view value) {
  TableFileEntry e;
  e.raw_key = key;
  ParsedKey p;
  if (!ParseInternalKey(key, &p)) return e;
  e.well_formed = true;
  e.table_id = p.table_id;
  e.row = Unescape(p.row_enc);
  e.has_family = p.section != KeySection::kRowMarker;
  e.family_id = p.family_id;
  e.has_qualifier =
      p.section == KeySection::kCellMarker || p.section == KeySection::kVersion;
  if (e.has_qualifier) e.qualifier = Unescape(p.qualifier_enc);
  e.has_timestamp = p.section == KeySection::kVersion;
  e.timestamp = p.timestamp;
  e.seq = p.seq;
  e.kind = KindName(p.kind);
  e.has_value = p.kind == EntryKind::kPut || p.kind == EntryKind::kPutValueRef;
  if (e.has_value) e.value = value;
  return e;
}

}  // namespace

Status ForEachTableFileEntry(
    Env* env, const std::string& path, uint64_t* file_bytes,
    const std::function<bool(const TableFileEntry&)>& fn) {
  TABLETFS_ASSIGN_OR_RETURN(uint64_t size, env->GetFileSize(path));
  *file_bytes = size;
  TABLETFS_ASSIGN_OR_RETURN(auto file, env->NewRandomAccessFile(path));
  TABLETFS_ASSIGN_OR_RETURN(
      auto table,
      Table::Open(TableOptions(), std::move(file), size, /*cache_id=*/0, path));
  std::unique_ptr<Iterator> it = table->NewIterator(/*fill_cache=*/false);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (!fn(Decode(it->key(), it->value()))) return Status::OK();
  }
  return it->status();
}

Status ForEachLogFileRecord(
    Env* env, const std::string& path, int64_t* torn_tail_offset,
    bool* zero_tail, const std::function<bool(const LogFileRecord&)>& fn) {
  *torn_tail_offset = -1;
  *zero_tail = false;
  TABLETFS_ASSIGN_OR_RETURN(auto file, env->NewSequentialFile(path));
  LogReader reader(std::move(file), path);
  std::string record;
  Status status;
  uint64_t start = 0;
  while (reader.ReadRecord(&record, &status)) {
    if (!fn(LogFileRecord{start, record})) return Status::OK();
    start = reader.LastRecordEndOffset();
  }
  TABLETFS_RETURN_IF_ERROR(status);
  if (reader.torn_tail()) {
    *torn_tail_offset = static_cast<int64_t>(reader.LastRecordEndOffset());
    *zero_tail = reader.zero_tail();
  }
  return Status::OK();
}

}  // namespace tabletfs
