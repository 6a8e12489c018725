#include "store/db/version_edit.h"

#include <optional>

#include "store/util/coding.h"

namespace tabletfs {

namespace {

void PutSettings(std::string* dst, const FamilySettings& s) {
  // The policy as its canonical text: GcPolicy::Parse reads it back, and the
  // manifest stays readable with a hex dump.
  PutLengthPrefixed(dst, s.gc_policy.ToString());
  dst->push_back(static_cast<char>(s.compression));
  PutVarint32(dst, s.owner_uid);
  PutVarint32(dst, s.owner_gid);
  PutVarint32(dst, s.mode);
}

bool GetSettings(std::string_view* in, FamilySettings* s) {
  std::string_view policy;
  if (!GetLengthPrefixed(in, &policy) || in->empty()) return false;
  Result<GcPolicy> parsed = GcPolicy::Parse(policy);
  if (!parsed.ok()) return false;
  s->gc_policy = *parsed;
  uint8_t c = static_cast<uint8_t>((*in)[0]);
  if (c > 1) return false;
  s->compression = static_cast<Compression>(c);
  in->remove_prefix(1);
  return GetVarint32(in, &s->owner_uid) && GetVarint32(in, &s->owner_gid) &&
         GetVarint32(in, &s->mode);
}

bool GetString(std::string_view* in, std::string* out) {
  std::string_view v;
  if (!GetLengthPrefixed(in, &v)) return false;
  out->assign(v);
  return true;
}

}  // namespace

void VersionEdit::EncodeTo(std::string* dst) const {
  if (log_number) {
    PutVarint32(dst, kLogNumber);
    PutVarint64(dst, *log_number);
  }
  if (next_file_number) {
    PutVarint32(dst, kNextFileNumber);
    PutVarint64(dst, *next_file_number);
  }
  if (last_sequence) {
    PutVarint32(dst, kLastSequence);
    PutVarint64(dst, *last_sequence);
  }
  if (last_timestamp) {
    PutVarint32(dst, kLastTimestamp);
    PutVarint64(dst, static_cast<uint64_t>(*last_timestamp));
  }
  if (next_schema_id) {
    PutVarint32(dst, kNextSchemaId);
    PutVarint32(dst, *next_schema_id);
  }
  for (const TableRecord& t : created_tables) {
    PutVarint32(dst, kCreateTableAt);
    PutVarint32(dst, t.id);
    PutLengthPrefixed(dst, t.name);
    PutVarint64(dst, static_cast<uint64_t>(t.created_micros));
  }
  for (uint32_t id : dropped_tables) {
    PutVarint32(dst, kDropTable);
    PutVarint32(dst, id);
  }
  for (const auto& [id, since] : table_since) {
    PutVarint32(dst, kTableSince);
    PutVarint32(dst, id);
    PutVarint64(dst, static_cast<uint64_t>(since));
  }
  for (const auto& [created, f] : families) {
    PutVarint32(dst, created ? kCreateFamily : kUpdateFamily);
    PutVarint32(dst, f.table_id);
    PutVarint32(dst, f.family_id);
    if (created) PutLengthPrefixed(dst, f.name);
    PutSettings(dst, f.settings);
    PutVarint64(dst, f.since);
  }
  for (const auto& [table, family] : dropped_families) {
    PutVarint32(dst, kDropFamily);
    PutVarint32(dst, table);
    PutVarint32(dst, family);
  }
  for (const TabletRecord& t : tablets) {
    PutVarint32(dst, kTablet);
    PutVarint32(dst, t.table_id);
    PutVarint32(dst, t.id);
    PutLengthPrefixed(dst, t.start_row);
    PutLengthPrefixed(dst, t.end_row);
    PutVarint64(dst, t.log_number);
  }
  for (const SplitRecord& sp : splits) {
    PutVarint32(dst, kSplitTablet);
    PutVarint32(dst, sp.parent);
    PutVarint32(dst, sp.left);
    PutVarint32(dst, sp.right);
    PutLengthPrefixed(dst, sp.row);
  }
  for (const MergeRecord& m : merges) {
    PutVarint32(dst, kMergeTablets);
    PutVarint32(dst, m.left);
    PutVarint32(dst, m.right);
    PutVarint32(dst, m.merged);
  }
  for (const auto& [tablet, log] : tablet_logs) {
    PutVarint32(dst, kTabletLogNumber);
    PutVarint32(dst, tablet);
    PutVarint64(dst, log);
  }
  for (const auto& [tablet, seq] : tablet_flushed_seqs) {
    PutVarint32(dst, kTabletFlushedSeq);
    PutVarint32(dst, tablet);
    PutVarint64(dst, seq);
  }
  for (const FileMeta& f : added_files) {
    PutVarint32(dst, f.plain ? kAddPlainFile : kAddFile);
    PutVarint32(dst, f.tablet_id);
    PutVarint32(dst, static_cast<uint32_t>(f.level));
    PutVarint64(dst, f.number);
    PutVarint64(dst, f.size);
    PutLengthPrefixed(dst, f.smallest);
    PutLengthPrefixed(dst, f.largest);
    PutVarint32(dst, static_cast<uint32_t>(f.value_files.size()));
    for (uint64_t v : f.value_files) PutVarint64(dst, v);
  }
  for (const DeletedFile& f : deleted_files) {
    PutVarint32(dst, kDeleteTabletFile);
    PutVarint32(dst, f.tablet_id);
    PutVarint32(dst, static_cast<uint32_t>(f.level));
    PutVarint64(dst, f.number);
  }
}

Status VersionEdit::DecodeFrom(std::string_view src, std::string_view where) {
  std::string_view in = src;
  while (!in.empty()) {
    const size_t offset = src.size() - in.size();
    auto at = [&] {
      return std::string(where) + " at edit offset " + std::to_string(offset);
    };
    uint32_t tag;
    std::optional<bool> ok;
    if (!GetVarint32(&in, &tag)) ok = false;
    if (!ok) ok = DecodeScalar(tag, &in);
    if (!ok) ok = DecodeSchemaRecord(tag, &in);
    if (!ok) ok = DecodeFileRecord(tag, &in);
    if (!ok) ok = DecodeTabletRecord(tag, &in);
    if (!ok) {
      return Status::Corruption(
          "manifest edit: unknown tag " + std::to_string(tag), at());
    }
    if (!*ok) return Status::Corruption("manifest edit: malformed field", at());
  }
  return Status::OK();
}

// Log and file numbers, the last sequence and timestamp, the next schema id.
std::optional<bool> VersionEdit::DecodeScalar(uint32_t tag,
                                              std::string_view* in) {
  bool ok = false;
  uint64_t u64 = 0;
  uint32_t u32 = 0;
  switch (tag) {
    case kLogNumber:
      ok = GetVarint64(in, &u64);
      log_number = u64;
      return ok;
    case kNextFileNumber:
      ok = GetVarint64(in, &u64);
      next_file_number = u64;
      return ok;
    case kLastSequence:
      ok = GetVarint64(in, &u64);
      last_sequence = u64;
      return ok;
    case kLastTimestamp:
      ok = GetVarint64(in, &u64);
      last_timestamp = static_cast<int64_t>(u64);
      return ok;
    case kNextSchemaId:
      ok = GetVarint32(in, &u32);
      next_schema_id = u32;
      return ok;
    default:
      return std::nullopt;
  }
}

// Tables and families created, updated, dropped.
std::optional<bool> VersionEdit::DecodeSchemaRecord(uint32_t tag,
                                                    std::string_view* in) {
  bool ok = false;
  uint32_t u32 = 0;
  switch (tag) {
    case kCreateTable:
    case kCreateTableAt: {
      TableRecord t;
      uint64_t created = 0;
      ok = GetVarint32(in, &t.id) && GetString(in, &t.name) &&
           (tag == kCreateTable || GetVarint64(in, &created));
      t.created_micros = static_cast<int64_t>(created);
      created_tables.push_back(std::move(t));
      return ok;
    }
    case kDropTable:
      ok = GetVarint32(in, &u32);
      dropped_tables.push_back(u32);
      return ok;
    case kTableSince: {
      uint64_t since = 0;
      ok = GetVarint32(in, &u32) && GetVarint64(in, &since);
      table_since.emplace_back(u32, static_cast<int64_t>(since));
      return ok;
    }
    case kCreateFamily:
    case kUpdateFamily: {
      FamilyRecord f;
      bool created = tag == kCreateFamily;
      ok = GetVarint32(in, &f.table_id) && GetVarint32(in, &f.family_id) &&
           (!created || GetString(in, &f.name)) &&
           GetSettings(in, &f.settings) && GetVarint64(in, &f.since);
      families.emplace_back(created, std::move(f));
      return ok;
    }
    case kDropFamily: {
      uint32_t t = 0;
      ok = GetVarint32(in, &t) && GetVarint32(in, &u32);
      dropped_families.emplace_back(t, u32);
      return ok;
    }
    default:
      return std::nullopt;
  }
}

// Files added to and deleted from tablets.
std::optional<bool> VersionEdit::DecodeFileRecord(uint32_t tag,
                                                  std::string_view* in) {
  bool ok = false;
  uint64_t u64 = 0;
  uint32_t u32 = 0;
  switch (tag) {
    case kAddFile:
    case kAddPlainFile: {
      FileMeta f;
      f.plain = tag == kAddPlainFile;
      uint32_t level = 0;
      ok = GetVarint32(in, &f.tablet_id) && GetVarint32(in, &level) &&
           GetVarint64(in, &f.number) && GetVarint64(in, &f.size) &&
           GetString(in, &f.smallest) && GetString(in, &f.largest) &&
           GetVarint32(in, &u32) && level < kNumLevels && u32 <= in->size();
      for (uint32_t i = 0; ok && i < u32; ++i) {
        ok = GetVarint64(in, &u64);
        f.value_files.push_back(u64);
      }
      f.level = static_cast<int>(level);
      added_files.push_back(std::move(f));
      return ok;
    }
    case kDeleteFile: {
      uint32_t level = 0;
      ok = GetVarint32(in, &level) && GetVarint64(in, &u64) &&
           level < kNumLevels;
      deleted_files.push_back({static_cast<int>(level), u64});
      return ok;
    }
    case kDeleteTabletFile: {
      uint32_t level = 0;
      ok = GetVarint32(in, &u32) && GetVarint32(in, &level) &&
           GetVarint64(in, &u64) && level < kNumLevels;
      deleted_files.push_back({static_cast<int>(level), u64, u32});
      return ok;
    }
    default:
      return std::nullopt;
  }
}

// Tablets, splits, merges, per-tablet log numbers and flushed sequences.
std::optional<bool> VersionEdit::DecodeTabletRecord(uint32_t tag,
                                                    std::string_view* in) {
  bool ok = false;
  uint64_t u64 = 0;
  uint32_t u32 = 0;
  switch (tag) {
    case kTablet: {
      TabletRecord t;
      ok = GetVarint32(in, &t.table_id) && GetVarint32(in, &t.id) &&
           GetString(in, &t.start_row) && GetString(in, &t.end_row) &&
           GetVarint64(in, &t.log_number);
      tablets.push_back(std::move(t));
      return ok;
    }
    case kSplitTablet: {
      SplitRecord sp;
      ok = GetVarint32(in, &sp.parent) && GetVarint32(in, &sp.left) &&
           GetVarint32(in, &sp.right) && GetString(in, &sp.row) &&
           !sp.row.empty();
      splits.push_back(std::move(sp));
      return ok;
    }
    case kMergeTablets: {
      MergeRecord m;
      ok = GetVarint32(in, &m.left) && GetVarint32(in, &m.right) &&
           GetVarint32(in, &m.merged);
      merges.push_back(m);
      return ok;
    }
    case kTabletLogNumber:
      ok = GetVarint32(in, &u32) && GetVarint64(in, &u64);
      tablet_logs.emplace_back(u32, u64);
      return ok;
    case kTabletFlushedSeq:
      ok = GetVarint32(in, &u32) && GetVarint64(in, &u64);
      tablet_flushed_seqs.emplace_back(u32, u64);
      return ok;
    default:
      return std::nullopt;
  }
}

}  // namespace tabletfs
