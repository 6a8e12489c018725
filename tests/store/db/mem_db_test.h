// MemDbTest: the fixture of the engine's unit tests that need one database
// and nothing else: a DB at "/db" on a MemEnv (its clock settable with
// env_.SetNowMicros), without a space reserve. SetUp() opens it; a test
// may change options_ and Reopen().
#ifndef TABLETFS_TESTS_STORE_DB_MEM_DB_TEST_H_
#define TABLETFS_TESTS_STORE_DB_MEM_DB_TEST_H_

#include <gtest/gtest.h>

#include <memory>

#include "store/db.h"
#include "store/env/mem_env.h"

namespace tabletfs {

class MemDbTest : public testing::Test {
 protected:
  MemDbTest() {
    options_.env = &env_;
    options_.space_reserve_bytes = 0;
  }

  void SetUp() override { Reopen(); }

  // Closes the database (if open) and opens it again with options_.
  void Reopen() {
    db_.reset();
    auto db = DB::Open(options_, "/db");
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
  }

  MemEnv env_;
  Options options_;
  std::unique_ptr<DB> db_;
};

}  // namespace tabletfs

#endif  // TABLETFS_TESTS_STORE_DB_MEM_DB_TEST_H_
