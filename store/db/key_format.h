// Internal keys: how the engine orders every entry of every table in one
// memcmp-ordered key space (see store/doc/key_format.md for the layout).
//
// Blocks, SSTables, Bloom filters and merges compare keys bytewise and never
// parse them; only the read path and compaction parse them, with
// ParseInternalKey.
//
// Thread safety: pure functions and plain values.
#ifndef TABLETFS_STORE_DB_KEY_FORMAT_H_
#define TABLETFS_STORE_DB_KEY_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace tabletfs {

// Persisted in logs and SSTables: never renumber.
enum class EntryKind : uint8_t {
  kPut = 1,
  kDeleteVersion = 2,
  kDeleteCell = 3,
  kDeleteFamily = 4,
  kDeleteRow = 5,
  kPutValueRef = 6,  // value is a reference into a value file
};

inline constexpr uint64_t kMaxSequence = (uint64_t{1} << 56) - 1;

// Which part of a row a key belongs to (persisted as the byte after the
// row / family part).
enum class KeySection : uint8_t {
  kRowMarker,
  kFamilyMarker,
  kCellMarker,
  kVersion,
};

// Appends enc(bytes): 0x00 -> 0x00 0xFF, then the terminator 0x00 0x01.
void AppendEscaped(std::string* dst, std::string_view bytes);
// The size AppendEscaped adds for `bytes`.
size_t EscapedSize(std::string_view bytes);
// Parses enc() from the front of *input, appending the raw bytes to *out
// (may be null) and advancing *input past the terminator. False when
// malformed. *plain (may be null): no byte of it was escaped.
bool ConsumeEscaped(std::string_view* input, std::string* out,
                    bool* plain = nullptr);

// be32(table_id) + enc(row).
std::string RowPrefix(uint32_t table_id, std::string_view row);
// RowPrefix + 0x02 + be32(family_id).
std::string FamilyPrefix(uint32_t table_id, std::string_view row,
                         uint32_t family_id);
// FamilyPrefix + 0x02 + enc(qualifier): the Bloom key of a cell.
std::string CellPrefix(uint32_t table_id, std::string_view row,
                       uint32_t family_id, std::string_view qualifier);
// The same three, appended to *k (whose capacity a caller may reuse).
void AppendRowPrefix(std::string* k, uint32_t table_id, std::string_view row);
void AppendFamilyPrefix(std::string* k, uint32_t table_id, std::string_view row,
                        uint32_t family_id);
void AppendCellPrefix(std::string* k, uint32_t table_id, std::string_view row,
                      uint32_t family_id, std::string_view qualifier);

// Full keys.
std::string RowMarkerKey(uint32_t table_id, std::string_view row, uint64_t seq);
std::string FamilyMarkerKey(uint32_t table_id, std::string_view row,
                            uint32_t family_id, uint64_t seq);
std::string CellMarkerKey(uint32_t table_id, std::string_view row,
                          uint32_t family_id, std::string_view qualifier,
                          uint64_t seq);
// kind: kPut, kDeleteVersion or kPutValueRef.
std::string VersionKey(uint32_t table_id, std::string_view row,
                       uint32_t family_id, std::string_view qualifier,
                       int64_t timestamp, uint64_t seq, EntryKind kind);

void AppendTrailer(std::string* dst, uint64_t seq, EntryKind kind);
// The kind in the trailer of internal key `key` (its last byte holds the
// kind's complement: AppendTrailer). REQUIRES: a whole internal key.
inline EntryKind KindOf(std::string_view key) {
  return static_cast<EntryKind>(~static_cast<uint8_t>(key.back()));
}
// Changes the kind in the trailer of internal key *key, keeping its
// sequence number (a put whose value moved to a value file: kPutValueRef).
inline void SetKind(std::string* key, EntryKind kind) {
  key->back() = static_cast<char>(~static_cast<uint8_t>(kind));
}
void AppendTimestamp(std::string* dst, int64_t timestamp);

// A key split into views of its parts (views into the parsed key).
struct ParsedKey {
  uint32_t table_id = 0;
  // Everything up to and including enc(row): compare these to find row
  // boundaries without decoding.
  std::string_view row_prefix;
  std::string_view row_enc;  // enc(row) with its terminator
  // No escaped byte in enc(row): the row is row_enc without its
  // 2-byte terminator (AssignUnescaped copies it without decoding).
  bool row_plain = false;
  KeySection section = KeySection::kRowMarker;
  uint32_t family_id = 0;          // all but kRowMarker
  std::string_view cell_prefix;    // kCellMarker, kVersion: up to enc(q)
  std::string_view qualifier_enc;  // kCellMarker, kVersion
  bool qualifier_plain = false;    // as row_plain
  int64_t timestamp = 0;           // kVersion
  uint64_t seq = 0;
  EntryKind kind = EntryKind::kPut;
};

// False when `key` is not a well-formed internal key.
bool ParseInternalKey(std::string_view key, ParsedKey* out);

// The row prefix of an internal key (be32 table id + enc(row)), without
// copying it and without parsing the rest of the key; the whole key when
// its row part is malformed (so a key that is only a row prefix, as an
// index separator, is its own).
std::string_view RowPrefixView(std::string_view key);

// The row / cell prefix of any key (for Bloom filters): `row_prefix` always,
// `cell_prefix` empty unless the key is a cell marker or version.
bool BloomPrefixes(std::string_view key, std::string_view* row_prefix,
                   std::string_view* cell_prefix);

// Decodes enc(x) (with terminator) to x.
std::string Unescape(std::string_view enc);
// The same into *out (replacing its contents, reusing its capacity).
void UnescapeTo(std::string_view enc, std::string* out);
// UnescapeTo of a part of a parsed key; `plain` (ParsedKey::row_plain,
// qualifier_plain): it holds no escaped byte, so it is copied as is. A
// scan decodes each row and qualifier it enters.
inline void AssignUnescaped(std::string_view enc, bool plain,
                            std::string* out) {
  if (plain) {
    out->assign(enc.data(), enc.size() - 2);
  } else {
    UnescapeTo(enc, out);
  }
}

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_KEY_FORMAT_H_
