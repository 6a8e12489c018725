// The schema of a table: its creation time, its column families and their
// settings (GC policy, compression, owner and mode), and the name rules of
// tables and families.
//
// Thread safety: plain values.
#ifndef TABLETFS_STORE_SCHEMA_H_
#define TABLETFS_STORE_SCHEMA_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "store/status.h"

namespace tabletfs {

// Persisted in the manifest: do not renumber.
enum class Compression : uint8_t { kNone = 0, kLz4 = 1 };

// A garbage-collection policy in the language of `cbt setgcpolicy`:
//   never | maxversions=N | maxage=DURATION | P and P | P or P | (P)
// (`&&` and `||` may stand for `and` and `or`, as in cbt).
// DURATION is a sequence of number+unit (ms, s, m, h, d), e.g. 30s, 12h, 7d,
// 1h30m. `and` collects a version when both sides would; `or` collects it
// when either side would. `and` binds tighter than `or`. At most
// kMaxGcPolicyRules rules and kMaxGcPolicyNesting levels of parentheses.
inline constexpr int kMaxGcPolicyRules = 64;
inline constexpr int kMaxGcPolicyNesting = 16;

class GcPolicy {
 public:
  // Persisted in the manifest: do not renumber.
  enum class Kind : uint8_t {
    kNever = 0,
    kMaxVersions = 1,
    kMaxAge = 2,
    kAnd = 3,
    kOr = 4
  };

  GcPolicy() = default;  // never
  static GcPolicy Never() { return GcPolicy(); }
  static GcPolicy MaxVersions(uint64_t n);
  static GcPolicy MaxAge(int64_t micros);
  static GcPolicy And(GcPolicy a, GcPolicy b);
  static GcPolicy Or(GcPolicy a, GcPolicy b);

  // Parses cbt syntax; InvalidArgument saying what is wrong and where.
  static Result<GcPolicy> Parse(std::string_view text);
  // Canonical text; Parse(ToString()) == *this.
  std::string ToString() const;

  // Whether a version is collected. `rank`: 0 for the newest live version of
  // its cell, 1 for the next... `age_micros`: now minus its timestamp.
  bool Collects(uint64_t rank, int64_t age_micros) const;
  // True when the outcome can change as time passes (uses maxage).
  bool DependsOnTime() const;
  bool IsNever() const { return kind_ == Kind::kNever; }

  Kind kind() const { return kind_; }
  uint64_t max_versions() const { return value_; }
  int64_t max_age_micros() const { return static_cast<int64_t>(value_); }
  const GcPolicy &left() const { return *left_; }
  const GcPolicy &right() const { return *right_; }

  bool operator==(const GcPolicy &other) const;

 private:
  Kind kind_ = Kind::kNever;
  uint64_t value_ = 0;
  std::shared_ptr<const GcPolicy> left_, right_;
};

// Parses "30s", "12h", "7d", "1h30m", "250ms". InvalidArgument otherwise.
Result<int64_t> ParseDurationMicros(std::string_view text);
// Shortest text Parse reads back: "7d", "1h30m".
std::string FormatDurationMicros(int64_t micros);

struct FamilySettings {
  GcPolicy gc_policy;
  Compression compression = Compression::kLz4;
  // Access control, shown by the filesystem and enforced by the kernel.
  uint32_t owner_uid = 0;
  uint32_t owner_gid = 0;
  uint32_t mode = 0644;

  bool operator==(const FamilySettings &other) const = default;
};

struct FamilyInfo {
  std::string name;
  FamilySettings settings;
};

// A table as the schema knows it.
struct TableInfo {
  std::string name;
  // From when the table exists for views of the past (µs since the epoch):
  // the earlier of its creation (the store's clock, never before a server
  // timestamp already handed out) and the oldest timestamp of a version
  // ever written into it (a client timestamp may lie before the creation).
  // 0 for a table whose store did not record its creation (made by a
  // version of tabletfs before it did).
  int64_t since_micros = 0;

  bool operator==(const TableInfo &other) const = default;
};

// Table names: [_a-zA-Z0-9][-_.a-zA-Z0-9]*, at most 50 bytes.
Status ValidateTableName(std::string_view name);
// Family names: [_a-zA-Z0-9][-_.a-zA-Z0-9]*, at most 64 bytes.
Status ValidateFamilyName(std::string_view name);

inline constexpr size_t kMaxRowKeyBytes = 64 * 1024;
// Row keys: 1 byte to 64 KiB.
Status ValidateRowKey(std::string_view row);

}  // namespace tabletfs

#endif  // TABLETFS_STORE_SCHEMA_H_
