// The memtable's row filter under a concurrent writer. Runs under TSan.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "store/db/key_format.h"
#include "store/db/memtable.h"

namespace tabletfs {
namespace {

// Every entry a reader finds in the skip list has its row in the filter,
// while the writer adds rows and the filter grows new segments (1 Ki, 4 Ki,
// 16 Ki rows).
TEST(MemTableConcurrencyTest, AVisibleEntrysRowIsInTheFilter) {
  auto mem = std::make_shared<MemTable>();
  std::atomic<bool> done{false};
  std::atomic<int> passes{0};
  std::thread reader([&] {
    while (!done.load()) {
      auto it = MemTable::NewIterator(mem);
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        const std::string_view row_prefix = RowPrefixView(it->key());
        ASSERT_TRUE(mem->MayHoldRow(BloomKey(row_prefix)))
            << "row of a visible entry not in the filter";
      }
      passes.fetch_add(1);
    }
  });
  // Past three segments, and on until the reader has made passes while
  // rows were being added (a fast writer could otherwise finish first).
  const int rows = 8000;
  int i = 0;
  for (; i < rows || (passes.load() < 5 && i < 1000000); ++i) {
    char row[16];
    std::snprintf(row, sizeof(row), "r%07d", (i * 7907) % 1000003);
    mem->Add(RowMarkerKey(1, row, static_cast<uint64_t>(i) + 1), "");
  }
  done = true;
  reader.join();
  EXPECT_GE(passes.load(), 5) << "added " << i << " rows";
}

}  // namespace
}  // namespace tabletfs
