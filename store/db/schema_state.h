// The engine's in-memory schema: tables and families with their ids and the
// history of each family's GC policy.
//
// Ownership: TableState objects are immutable once published; the engine
// replaces a table's shared_ptr on every schema change, so a reader keeps a
// consistent copy for as long as it holds the pointer.
//
// Thread safety: immutable values.
#ifndef TABLETFS_STORE_DB_SCHEMA_STATE_H_
#define TABLETFS_STORE_DB_SCHEMA_STATE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "store/schema.h"

namespace tabletfs {

// A GC policy in force from sequence number `since` on (until the next
// epoch's `since`).
struct GcEpoch {
  uint64_t since = 0;
  GcPolicy policy;
};

struct FamilyState {
  uint32_t id = 0;
  std::string name;
  FamilySettings settings;      // settings.gc_policy == epochs.back().policy
  std::vector<GcEpoch> epochs;  // ascending `since`; never empty

  // Whether a version written at `seq`, with `rank` live versions newer than
  // it and `age_micros` old, is collected as seen at `view_seq`: true when
  // any policy in force between its write and the view collects it (so a
  // relaxed policy never brings back what a stricter one hid).
  bool Collects(uint64_t seq, uint64_t view_seq, uint64_t rank,
                int64_t age_micros) const;
  // True when every epoch is `never` (the common case: no GC work).
  bool NeverCollects() const;
};

struct TableState {
  uint32_t id = 0;
  std::string name;
  std::vector<FamilyState> families;  // creation order == ascending id

  const FamilyState* FindFamily(std::string_view name) const;
  const FamilyState* FindFamilyById(uint32_t id) const;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_SCHEMA_STATE_H_
