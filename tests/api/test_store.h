// The store an API test serves, by the test's parameter: "engine" (a DB in
// DIR/data) or "reference" (in memory). max_value_bytes: 0 keeps the
// store's default.
#ifndef TABLETFS_TESTS_API_TEST_STORE_H_
#define TABLETFS_TESTS_API_TEST_STORE_H_

#include <cstddef>
#include <memory>
#include <string>

#include "store/bigtable.h"
#include "store/db.h"
#include "store/reference/reference_bigtable.h"

namespace tabletfs::api {

inline Result<std::unique_ptr<Bigtable>> OpenTestStore(
    const std::string& kind, const std::string& dir,
    size_t max_value_bytes = 0) {
  if (kind == "engine") {
    Options options;
    if (max_value_bytes > 0) options.max_value_bytes = max_value_bytes;
    auto db = DB::Open(options, dir + "/data");
    if (!db.ok()) return db.status();
    return std::unique_ptr<Bigtable>(std::move(db).value());
  }
  ReferenceOptions options;
  if (max_value_bytes > 0) options.max_value_bytes = max_value_bytes;
  return NewReferenceBigtable(options);
}

}  // namespace tabletfs::api

#endif  // TABLETFS_TESTS_API_TEST_STORE_H_
