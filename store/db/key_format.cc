#include "store/db/key_format.h"

#include <cassert>
#include <cstring>

#include "store/util/coding.h"

namespace tabletfs {

namespace {
constexpr char kSectionRowMarker = 0x01;
constexpr char kSectionFamily = 0x02;
constexpr char kSectionMarker = 0x01;  // within a family / cell
constexpr char kSectionChild = 0x02;
}  // namespace

void AppendEscaped(std::string* dst, std::string_view bytes) {
  // Runs without 0x00 are copied whole: keys are built on every read.
  dst->reserve(dst->size() + bytes.size() + 2);
  while (!bytes.empty()) {
    const void* zero = std::memchr(bytes.data(), '\0', bytes.size());
    size_t run = zero == nullptr
                     ? bytes.size()
                     : static_cast<size_t>(static_cast<const char*>(zero) -
                                           bytes.data());
    dst->append(bytes.data(), run);
    if (run == bytes.size()) break;
    dst->push_back('\0');
    dst->push_back('\xff');
    bytes.remove_prefix(run + 1);
  }
  dst->push_back('\0');
  dst->push_back('\x01');
}

size_t EscapedSize(std::string_view bytes) {
  size_t zeros = 0;
  for (char c : bytes) zeros += c == '\0';
  return bytes.size() + zeros + 2;
}

bool ConsumeEscaped(std::string_view* input, std::string* out, bool* plain) {
  // Every escape starts with 0x00: jump from one to the next (memchr), and
  // copy the runs between them whole. Every key of every read is parsed.
  if (plain) *plain = true;
  size_t i = 0;
  const std::string_view in = *input;
  while (i < in.size()) {
    const void* zero = std::memchr(in.data() + i, '\0', in.size() - i);
    if (zero == nullptr) return false;
    size_t z = static_cast<size_t>(static_cast<const char*>(zero) - in.data());
    if (out) out->append(in.data() + i, z - i);
    if (z + 1 >= in.size()) return false;
    char next = in[z + 1];
    if (next == '\x01') {
      input->remove_prefix(z + 2);
      return true;
    }
    if (next != '\xff') return false;
    if (out) out->push_back('\0');
    if (plain) *plain = false;
    i = z + 2;
  }
  return false;
}

std::string Unescape(std::string_view enc) {
  std::string out;
  ConsumeEscaped(&enc, &out);
  return out;
}

void UnescapeTo(std::string_view enc, std::string* out) {
  out->clear();
  ConsumeEscaped(&enc, out);
}

// The prefixes, appended to a key whose caller reserved room for all of it
// (one allocation per key: keys are built for every write).
void AppendRowPrefix(std::string* k, uint32_t table_id, std::string_view row) {
  PutBigEndian32(k, table_id);
  AppendEscaped(k, row);
}

void AppendFamilyPrefix(std::string* k, uint32_t table_id, std::string_view row,
                        uint32_t family_id) {
  AppendRowPrefix(k, table_id, row);
  k->push_back(kSectionFamily);
  PutBigEndian32(k, family_id);
}

void AppendCellPrefix(std::string* k, uint32_t table_id, std::string_view row,
                      uint32_t family_id, std::string_view qualifier) {
  AppendFamilyPrefix(k, table_id, row, family_id);
  k->push_back(kSectionChild);
  AppendEscaped(k, qualifier);
}

namespace {

// Room for a key of `row` and `qualifier` and everything around them
// (prefix, section bytes, timestamp, trailer), unless they hold zero bytes.
std::string KeyWithRoom(std::string_view row, std::string_view qualifier) {
  std::string k;
  k.reserve(row.size() + qualifier.size() + 32);
  return k;
}

}  // namespace

std::string RowPrefix(uint32_t table_id, std::string_view row) {
  std::string k = KeyWithRoom(row, {});
  AppendRowPrefix(&k, table_id, row);
  return k;
}

std::string FamilyPrefix(uint32_t table_id, std::string_view row,
                         uint32_t family_id) {
  std::string k = KeyWithRoom(row, {});
  AppendFamilyPrefix(&k, table_id, row, family_id);
  return k;
}

std::string CellPrefix(uint32_t table_id, std::string_view row,
                       uint32_t family_id, std::string_view qualifier) {
  std::string k = KeyWithRoom(row, qualifier);
  AppendCellPrefix(&k, table_id, row, family_id, qualifier);
  return k;
}

void AppendTrailer(std::string* dst, uint64_t seq, EntryKind kind) {
  assert(seq <= kMaxSequence);
  PutBigEndian64(dst, ~((seq << 8) | static_cast<uint8_t>(kind)));
}

void AppendTimestamp(std::string* dst, int64_t timestamp) {
  // Flipping the sign bit maps int64 order onto uint64 order; the complement
  // puts the newest timestamp first.
  PutBigEndian64(dst,
                 ~(static_cast<uint64_t>(timestamp) ^ (uint64_t{1} << 63)));
}

std::string RowMarkerKey(uint32_t table_id, std::string_view row,
                         uint64_t seq) {
  std::string k = KeyWithRoom(row, {});
  AppendRowPrefix(&k, table_id, row);
  k.push_back(kSectionRowMarker);
  AppendTrailer(&k, seq, EntryKind::kDeleteRow);
  return k;
}

std::string FamilyMarkerKey(uint32_t table_id, std::string_view row,
                            uint32_t family_id, uint64_t seq) {
  std::string k = KeyWithRoom(row, {});
  AppendFamilyPrefix(&k, table_id, row, family_id);
  k.push_back(kSectionMarker);
  AppendTrailer(&k, seq, EntryKind::kDeleteFamily);
  return k;
}

std::string CellMarkerKey(uint32_t table_id, std::string_view row,
                          uint32_t family_id, std::string_view qualifier,
                          uint64_t seq) {
  std::string k = KeyWithRoom(row, qualifier);
  AppendCellPrefix(&k, table_id, row, family_id, qualifier);
  k.push_back(kSectionMarker);
  AppendTrailer(&k, seq, EntryKind::kDeleteCell);
  return k;
}

std::string VersionKey(uint32_t table_id, std::string_view row,
                       uint32_t family_id, std::string_view qualifier,
                       int64_t timestamp, uint64_t seq, EntryKind kind) {
  std::string k = KeyWithRoom(row, qualifier);
  AppendCellPrefix(&k, table_id, row, family_id, qualifier);
  k.push_back(kSectionChild);
  AppendTimestamp(&k, timestamp);
  AppendTrailer(&k, seq, kind);
  return k;
}

namespace {

bool ParseTrailer(std::string_view* in, ParsedKey* out) {
  if (in->size() != 8) return false;
  uint64_t packed = ~DecodeBigEndian64(in->data());
  out->seq = packed >> 8;
  uint8_t kind = static_cast<uint8_t>(packed & 0xff);
  if (kind < 1 || kind > 6) return false;
  out->kind = static_cast<EntryKind>(kind);
  in->remove_prefix(8);
  return true;
}

}  // namespace

bool ParseInternalKey(std::string_view key, ParsedKey* out) {
  std::string_view in = key;
  if (in.size() < 4) return false;
  out->table_id = DecodeBigEndian32(in.data());
  in.remove_prefix(4);
  std::string_view row_start = in;
  if (!ConsumeEscaped(&in, nullptr, &out->row_plain)) return false;
  out->row_enc = row_start.substr(0, row_start.size() - in.size());
  out->row_prefix = key.substr(0, key.size() - in.size());
  if (in.empty()) return false;
  char section = in[0];
  in.remove_prefix(1);
  if (section == kSectionRowMarker) {
    out->section = KeySection::kRowMarker;
    return ParseTrailer(&in, out) && out->kind == EntryKind::kDeleteRow;
  }
  if (section != kSectionFamily || in.size() < 5) return false;
  out->family_id = DecodeBigEndian32(in.data());
  in.remove_prefix(4);
  char sub = in[0];
  in.remove_prefix(1);
  if (sub == kSectionMarker) {
    out->section = KeySection::kFamilyMarker;
    return ParseTrailer(&in, out) && out->kind == EntryKind::kDeleteFamily;
  }
  if (sub != kSectionChild) return false;
  std::string_view q_start = in;
  if (!ConsumeEscaped(&in, nullptr, &out->qualifier_plain)) return false;
  out->qualifier_enc = q_start.substr(0, q_start.size() - in.size());
  out->cell_prefix = key.substr(0, key.size() - in.size());
  if (in.empty()) return false;
  char leaf = in[0];
  in.remove_prefix(1);
  if (leaf == kSectionMarker) {
    out->section = KeySection::kCellMarker;
    return ParseTrailer(&in, out) && out->kind == EntryKind::kDeleteCell;
  }
  if (leaf != kSectionChild || in.size() < 8) return false;
  out->section = KeySection::kVersion;
  uint64_t ts = ~DecodeBigEndian64(in.data()) ^ (uint64_t{1} << 63);
  out->timestamp = static_cast<int64_t>(ts);
  in.remove_prefix(8);
  if (!ParseTrailer(&in, out)) return false;
  return out->kind == EntryKind::kPut ||
         out->kind == EntryKind::kDeleteVersion ||
         out->kind == EntryKind::kPutValueRef;
}

std::string_view RowPrefixView(std::string_view key) {
  if (key.size() < 4) return key;
  std::string_view rest = key.substr(4);
  if (!ConsumeEscaped(&rest, nullptr)) return key;
  return key.substr(0, key.size() - rest.size());
}

bool BloomPrefixes(std::string_view key, std::string_view* row_prefix,
                   std::string_view* cell_prefix) {
  ParsedKey p;
  if (!ParseInternalKey(key, &p)) return false;
  *row_prefix = p.row_prefix;
  *cell_prefix = p.cell_prefix;
  return true;
}

}  // namespace tabletfs
