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
  std::atomic<int> checked{0};
  std::thread reader([&] {
    while (!done.load()) {
      auto it = MemTable::NewIterator(mem);
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        const std::string_view row_prefix = RowPrefixView(it->key());
        ASSERT_TRUE(mem->MayHoldRow(MemTable::RowHash(row_prefix)))
            << "row of a visible entry not in the filter";
        checked.fetch_add(1, std::memory_order_relaxed);
      }
    }
  });
  const int rows = 8000;
  for (int i = 0; i < rows; ++i) {
    char row[16];
    std::snprintf(row, sizeof(row), "r%07d", (i * 7907) % rows);
    mem->Add(RowMarkerKey(1, row, static_cast<uint64_t>(i) + 1), "");
  }
  done = true;
  reader.join();
  EXPECT_GT(checked.load(), 0);
}

}  // namespace
}  // namespace tabletfs
