// The reference implementation of the data-model interface
// (store/bigtable.h): the whole store in memory, small and obviously
// correct rather than fast. Every cell is an entry of one sorted map, a
// delete erases entries, and GC policies are applied when reading, exactly
// as the contract states them. It is
//   - the oracle of the engine's randomized model tests
//     (tests/store/db/db_model_test.cc): the engine must read back what
//     this reads back after the same writes;
//   - a store for tests of what sits above the interface, without the
//     engine behind it;
//   - the proof that the interface leaks nothing of the engine: whatever
//     compiles against Bigtable runs on this too.
//
// Everything happens under one mutex; a write is applied in place, so the
// commit order is the order writers take the mutex. Scanners and snapshots
// copy what they read. Nothing is persisted: Sync() has nothing to do and
// there is no sticky error. Server timestamps are max(clock, last + 1) as
// the contract says, from `clock`.
//
// Thread safety: as the interface says (every method from any thread).
#ifndef TABLETFS_STORE_REFERENCE_REFERENCE_BIGTABLE_H_
#define TABLETFS_STORE_REFERENCE_REFERENCE_BIGTABLE_H_

#include <cstddef>
#include <memory>

#include "store/bigtable.h"

namespace tabletfs {

class Env;

struct ReferenceOptions {
  // The clock for server timestamps and GC by age (Env::NowMicros); no file
  // is touched. nullptr: Env::Default(). Not owned; must outlive the store.
  Env *clock = nullptr;
  // Largest value accepted (InvalidArgument above it), as
  // Options::max_value_bytes.
  size_t max_value_bytes = 64u << 20;
};

std::unique_ptr<Bigtable> NewReferenceBigtable(const ReferenceOptions &options);

}  // namespace tabletfs

#endif  // TABLETFS_STORE_REFERENCE_REFERENCE_BIGTABLE_H_
