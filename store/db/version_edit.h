// VersionEdit: one change to the durable state of a database, as recorded
// in the manifest (format: store/doc/manifest_format.md): schema changes,
// tablet splits and merges, files added to / removed from a tablet's levels,
// log positions and the high-water marks (sequence, timestamp, file number,
// schema id).
//
// Thread safety: plain values.
#ifndef TABLETFS_STORE_DB_VERSION_EDIT_H_
#define TABLETFS_STORE_DB_VERSION_EDIT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/schema.h"
#include "store/status.h"

namespace tabletfs {

// Levels of the LSM tree: 0 .. kNumLevels - 1. A manifest record naming
// another level is Corruption.
inline constexpr int kNumLevels = 7;

// An SSTable in a level. Immutable once created. After a split both halves
// share their parent's files (one FileMeta object) until compaction
// rewrites them.
struct FileMeta {
  uint32_t tablet_id = 0;  // the tablet of the add_file record
  int level = 0;
  uint64_t number = 0;
  uint64_t size = 0;
  std::string smallest;  // internal keys, inclusive
  std::string largest;
  // Value files this table references (kind-6 entries), ascending.
  std::vector<uint64_t> value_files;
  // Only puts, each cell once: a bottom compaction would drop nothing of
  // it, so a compaction may move it down without rewriting it
  // (store/doc/compaction.md). False for files of older manifests.
  bool plain = false;
};

struct VersionEdit {
  // Persisted tags: never renumber.
  enum Tag : uint32_t {
    kLogNumber = 1,
    kNextFileNumber = 2,
    kLastSequence = 3,
    kLastTimestamp = 4,
    kNextSchemaId = 5,
    kCreateTable = 10,
    kDropTable = 11,
    kCreateFamily = 12,
    kUpdateFamily = 13,
    kDropFamily = 14,
    kCreateTableAt = 15,  // kCreateTable with its creation time
    kTableSince = 16,
    kAddFile = 20,
    kDeleteFile = 21,  // read only (older manifests): removes from every tablet
    kDeleteTabletFile = 22,
    kAddPlainFile = 23,  // kAddFile of a FileMeta with `plain` set
    kTablet = 30,
    kSplitTablet = 31,
    kMergeTablets = 32,
    kTabletLogNumber = 33,
    kTabletFlushedSeq = 34,
  };

  // Written as kCreateTableAt; kCreateTable (older manifests) reads as
  // created_micros 0.
  struct TableRecord {
    uint32_t id = 0;
    std::string name;
    int64_t created_micros = 0;
  };
  struct FamilyRecord {
    uint32_t table_id = 0;
    uint32_t family_id = 0;
    std::string name;  // kCreateFamily
    FamilySettings settings;
    uint64_t since = 0;  // sequence from which settings.gc_policy holds
  };
  struct DeletedFile {
    int level = 0;
    uint64_t number = 0;
    uint32_t tablet_id = 0;  // 0: every tablet that holds it (tag 21)
  };
  // A tablet and its row range [start_row, end_row); empty rows are
  // unbounded (row keys are never empty). In snapshot edits: the first
  // tablet record of a table replaces the table's tablets.
  struct TabletRecord {
    uint32_t table_id = 0;
    uint32_t id = 0;
    std::string start_row;
    std::string end_row;
    uint64_t log_number = 0;
  };
  // `parent` becomes `left` [start, row) and `right` [row, end).
  struct SplitRecord {
    uint32_t parent = 0;
    uint32_t left = 0;
    uint32_t right = 0;
    std::string row;
  };
  // Adjacent `left` and `right` become `merged`.
  struct MergeRecord {
    uint32_t left = 0;
    uint32_t right = 0;
    uint32_t merged = 0;
  };

  std::optional<uint64_t> log_number;
  std::optional<uint64_t> next_file_number;
  std::optional<uint64_t> last_sequence;
  std::optional<int64_t> last_timestamp;
  std::optional<uint32_t> next_schema_id;
  std::vector<TableRecord> created_tables;
  std::vector<uint32_t> dropped_tables;
  // Per table id: a version this old was written into it (before its
  // creation time); the table counts as existing from then on.
  std::vector<std::pair<uint32_t, int64_t>> table_since;
  // Created and updated families, in order; `created` tells which.
  std::vector<std::pair<bool, FamilyRecord>> families;
  std::vector<std::pair<uint32_t, uint32_t>> dropped_families;  // table, family
  std::vector<TabletRecord> tablets;
  std::vector<SplitRecord> splits;
  std::vector<MergeRecord> merges;
  // Per tablet: logs numbered below this hold nothing unflushed of it.
  std::vector<std::pair<uint32_t, uint64_t>> tablet_logs;
  // Per tablet: its entries with sequences up to this are in its SSTables.
  std::vector<std::pair<uint32_t, uint64_t>> tablet_flushed_seqs;
  std::vector<FileMeta> added_files;
  std::vector<DeletedFile> deleted_files;

  // Applied in this order: tables and families, tablets, splits, merges,
  // tablet log numbers and flushed sequences, deleted files, added files.

  void EncodeTo(std::string* dst) const;
  // Corruption naming `where` when `src` is malformed or has an unknown tag.
  Status DecodeFrom(std::string_view src, std::string_view where);

 private:
  // DecodeFrom's steps, one per group of tags: decode the field of `tag`
  // from *in; nullopt when the tag is not of the group, false when the
  // field is malformed.
  std::optional<bool> DecodeScalar(uint32_t tag, std::string_view* in);
  std::optional<bool> DecodeSchemaRecord(uint32_t tag, std::string_view* in);
  std::optional<bool> DecodeFileRecord(uint32_t tag, std::string_view* in);
  std::optional<bool> DecodeTabletRecord(uint32_t tag, std::string_view* in);
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_VERSION_EDIT_H_
