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

  // Decides GC for the next live version of a cell, newest first. `ranks`
  // holds, per epoch, how many newer live versions of the cell existed in
  // that epoch (start with an empty vector for each cell; updated here). A
  // version written at `seq`, `age_micros` old, is collected when the
  // policy of any epoch it existed in (and that is in force at
  // `epoch_view_seq`) collects it at its rank among the versions that
  // existed in that epoch; so relaxing a policy never brings back what a
  // stricter one hid, and versions written later do not push older ones
  // out under an old policy.
  bool CollectsNext(uint64_t seq, uint64_t epoch_view_seq, int64_t age_micros,
                    std::vector<uint64_t>* ranks) const;
  // True when every epoch is `never` (the common case: no GC work).
  bool NeverCollects() const;
};

struct TableState {
  uint32_t id = 0;
  std::string name;
  int64_t created_micros = 0;  // 0: not recorded (older manifests)
  std::vector<FamilyState> families;  // creation order == ascending id

  const FamilyState* FindFamily(std::string_view name) const;
  const FamilyState* FindFamilyById(uint32_t id) const;
  // Whether a GC policy of any family, in any epoch, depends on a
  // version's age (maxage): only then do reads and compactions need the
  // time.
  bool CollectsByAge() const;
};

}  // namespace tabletfs

#endif  // TABLETFS_STORE_DB_SCHEMA_STATE_H_
