// What a GETATTR's scan gives for a family directory of table "t", read
// straight from `store` (the answer DirTimesCache must always match), for
// the DirTimesCache tests.
#ifndef TABLETFS_TESTS_FS_DIR_TIMES_SCAN_H_
#define TABLETFS_TESTS_FS_DIR_TIMES_SCAN_H_

#include <string>

#include "fs/dir_handle.h"
#include "gtest/gtest.h"
#include "store/bigtable.h"

namespace tabletfs::fs {

inline DirTimes ScannedFamilyTimes(Bigtable* store, const std::string& row,
                                   const std::string& family) {
  ScanOptions so;
  so.read.max_versions = 1;
  so.content = ScanContent::kNoValues;
  so.start_row = row;
  so.end_row = row + std::string(1, '\0');
  so.read.families = {family};
  auto s = store->NewScanner("t", so);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return DirTimes();
  (*s)->Seek(row, family);
  return ScanDirTimes(**s, row, family);
}

}  // namespace tabletfs::fs

#endif  // TABLETFS_TESTS_FS_DIR_TIMES_SCAN_H_
