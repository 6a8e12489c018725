#include "store/db/schema_state.h"

namespace tabletfs {

bool FamilyState::CollectsNext(uint64_t seq, uint64_t epoch_view_seq,
                               int64_t age_micros,
                               std::vector<uint64_t>* ranks) const {
  if (ranks->size() < epochs.size()) ranks->resize(epochs.size(), 0);
  bool collected = false;
  for (size_t i = 0; i < epochs.size(); ++i) {
    const GcEpoch& e = epochs[i];
    // Written after the epoch ended: it never existed in it.
    if (i + 1 < epochs.size() && epochs[i + 1].since <= seq) continue;
    if (e.since <= epoch_view_seq &&
        e.policy.Collects((*ranks)[i], age_micros)) {
      collected = true;
    }
    ++(*ranks)[i];
  }
  return collected;
}

bool FamilyState::NeverCollects() const {
  for (const GcEpoch& e : epochs) {
    if (!e.policy.IsNever()) return false;
  }
  return true;
}

bool TableState::CollectsByAge() const {
  for (const FamilyState& f : families) {
    for (const GcEpoch& e : f.epochs) {
      if (e.policy.DependsOnTime()) return true;
    }
  }
  return false;
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
