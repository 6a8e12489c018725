#include "store/db/schema_state.h"

namespace tabletfs {

bool FamilyState::Collects(uint64_t seq, uint64_t view_seq, uint64_t rank,
                           int64_t age_micros) const {
  for (size_t i = 0; i < epochs.size(); ++i) {
    const GcEpoch& e = epochs[i];
    if (e.since > view_seq) break;  // not in force yet at this view
    // An epoch that ended before the version was written never saw it.
    if (i + 1 < epochs.size() && epochs[i + 1].since <= seq) continue;
    if (e.policy.Collects(rank, age_micros)) return true;
  }
  return false;
}

bool FamilyState::NeverCollects() const {
  for (const GcEpoch& e : epochs) {
    if (!e.policy.IsNever()) return false;
  }
  return true;
}

const FamilyState* TableState::FindFamily(std::string_view family) const {
  for (const FamilyState& f : families) {
    if (f.name == family) return &f;
  }
  return nullptr;
}

const FamilyState* TableState::FindFamilyById(uint32_t fid) const {
  for (const FamilyState& f : families) {
    if (f.id == fid) return &f;
  }
  return nullptr;
}

}  // namespace tabletfs
