// The API's own threading under TSan (the test suite's tsan part): the
// service handlers called from many threads at once, on one ServiceContext
// over the engine and over the reference implementation, without gRPC's
// transport. Debian's gRPC is not built with TSan, which cannot see its
// synchronization and would flag every message it hands between threads
// (many_clients_test.cc runs the same traffic over a real socket in the
// other builds); here each thread owns its messages and contexts, and what
// the handlers share (the store, the compiled filters, ServiceContext) is
// all instrumented.
//
// What must hold: read-modify-writes never lose one another; a row's
// mutation is seen whole or not at all; MutateRows' batches,
// check-and-mutates and deletes of a time range interleave safely.
#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "api/row_filter.h"
#include "api/services.h"
#include "gtest/gtest.h"
#include "store/db.h"
#include "store/reference/reference_bigtable.h"
#include "tests/api/test_store.h"

namespace tabletfs::api {
namespace {

namespace v2 = google::bigtable::v2;

constexpr char kTable[] = "projects/p/instances/i/tables/t";

class ServicesConcurrencyTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tabletfs_svcconc_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto store = OpenTestStore(GetParam(), dir_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    ASSERT_TRUE(store_->CreateTable("t").ok());
    ASSERT_TRUE(store_->CreateFamily("t", "f", FamilySettings()).ok());
    context_.store = store_.get();
  }

  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  static void SetCell(v2::Mutation* m, const std::string& q,
                      const std::string& value, int64_t ts = -1) {
    auto* s = m->mutable_set_cell();
    s->set_family_name("f");
    s->set_column_qualifier(q);
    s->set_timestamp_micros(ts);
    s->set_value(value);
  }

  std::string dir_;
  std::unique_ptr<Bigtable> store_;
  ServiceContext context_;
};

TEST_P(ServicesConcurrencyTest, ReadModifyWritesNeverLoseOneAnother) {
  DataService data(&context_);
  constexpr int kThreads = 4, kEach = 200;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; i++) {
        v2::ReadModifyWriteRowRequest req;
        req.set_table_name(kTable);
        req.set_row_key("counter");
        auto* inc = req.add_rules();
        inc->set_family_name("f");
        inc->set_column_qualifier("n");
        inc->set_increment_amount(1);
        auto* append = req.add_rules();
        append->set_family_name("f");
        append->set_column_qualifier("log");
        append->set_append_value("x");
        v2::ReadModifyWriteRowResponse resp;
        grpc::ServerContext ctx;
        if (!data.ReadModifyWriteRow(&ctx, &req, &resp).ok()) failures++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  auto n = store_->ReadCell("t", "counter", "f", "n", ReadOptions());
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(n->size(), 1u);
  uint64_t value = 0;
  for (unsigned char c : (*n)[0].value) value = value << 8 | c;
  EXPECT_EQ(value, uint64_t{kThreads * kEach});
  auto log = store_->ReadCell("t", "counter", "f", "log", ReadOptions());
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)[0].value.size(), size_t{kThreads * kEach});
}

TEST_P(ServicesConcurrencyTest, RowsAreSeenWholeUnderMixedWriters) {
  DataService data(&context_);
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, failures{0}, reads{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; w++) {
    threads.emplace_back([&, w] {
      for (int i = 0; !stop; i++) {
        const std::string v = std::to_string(w) + "-" + std::to_string(i);
        grpc::ServerContext ctx;
        if (i % 3 == 0) {
          // A MutateRow with a delete of a time range (RewriteRow) beside
          // the two cells.
          v2::MutateRowRequest req;
          req.set_table_name(kTable);
          req.set_row_key("a");
          SetCell(req.add_mutations(), "x", v);
          SetCell(req.add_mutations(), "y", v);
          auto* d = req.add_mutations()->mutable_delete_from_column();
          d->set_family_name("f");
          d->set_column_qualifier("old");
          d->mutable_time_range()->set_start_timestamp_micros(1);
          v2::MutateRowResponse resp;
          if (!data.MutateRow(&ctx, &req, &resp).ok()) failures++;
        } else if (i % 3 == 1) {
          // Both rows through the batch path (MutateOneRow per entry is
          // what MutateRows runs; ApplyBatch is exercised by the store).
          std::vector<RowMutation> batch;
          for (const char* row : {"a", "b"}) {
            RowMutation m(row);
            m.SetCell("f", "x", v);
            m.SetCell("f", "y", v);
            batch.push_back(std::move(m));
          }
          for (auto& r : store_->ApplyBatch("t", batch, WriteOptions())) {
            if (!r.ok()) failures++;
          }
        } else {
          v2::CheckAndMutateRowRequest req;
          req.set_table_name(kTable);
          req.set_row_key("b");
          req.mutable_predicate_filter()->set_column_qualifier_regex_filter("x");
          SetCell(req.add_true_mutations(), "x", v);
          SetCell(req.add_true_mutations(), "y", v);
          SetCell(req.add_false_mutations(), "x", v);
          SetCell(req.add_false_mutations(), "y", v);
          v2::CheckAndMutateRowResponse resp;
          if (!data.CheckAndMutateRow(&ctx, &req, &resp).ok()) failures++;
        }
      }
    });
  }
  // Readers: a compiled filter shared by every reader thread.
  v2::RowFilter proto;
  auto* chain = proto.mutable_chain();
  chain->add_filters()->set_column_qualifier_regex_filter("x|y");
  chain->add_filters()->set_cells_per_column_limit_filter(1);
  Result<RowFilter> filter = RowFilter::Compile(proto);
  ASSERT_TRUE(filter.ok());
  for (int r = 0; r < 2; r++) {
    threads.emplace_back([&] {
      ReadOptions ro;
      ro.max_versions = 0;
      while (!stop) {
        for (const char* key : {"a", "b"}) {
          Result<Row> row = store_->ReadRow("t", key, ro);
          if (!row.ok()) {
            failures++;
            continue;
          }
          std::vector<FilteredCell> cells = filter->Apply(*row);
          if (cells.empty()) continue;
          if (cells.size() != 2 || cells[0].cell.value != cells[1].cell.value) {
            torn++;
          }
        }
        reads++;
      }
    });
  }
  while (reads < 500) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(torn, 0) << "a reader saw half a row mutation";
  EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(Implementations, ServicesConcurrencyTest,
                         ::testing::Values("engine", "reference"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace tabletfs::api
