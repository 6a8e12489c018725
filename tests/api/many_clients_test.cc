// Many clients at once over a real socket, on the engine and the reference
// implementation. What must hold: read-modify-writes never lose one
// another, a row's mutation is seen whole or not at all, batches and
// check-and-mutates interleave without corrupting anything.
//
// Not under TSan: Debian's gRPC is not built with it, and TSan, blind to
// gRPC's synchronization, reports every message gRPC hands between its
// threads. services_concurrency_test.cc drives the same handlers from many
// threads without the transport, under TSan.
#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "api/server.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "gtest/gtest.h"
#include "store/db.h"
#include "store/reference/reference_bigtable.h"
#include "tests/api/test_store.h"

namespace tabletfs::api {
namespace {

namespace v2 = google::bigtable::v2;

constexpr char kTable[] = "projects/p/instances/i/tables/t";

class ManyClientsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tabletfs_clients_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto store = OpenTestStore(GetParam(), dir_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    ASSERT_TRUE(store_->CreateTable("t").ok());
    ASSERT_TRUE(store_->CreateFamily("t", "f", FamilySettings()).ok());
    ApiOptions options;
    options.unix_socket = dir_ + "/bigtable.sock";
    auto server = ApiServer::Start(store_.get(), options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    channel_ = grpc::CreateChannel("unix:" + options.unix_socket,
                                   grpc::InsecureChannelCredentials());
  }

  void TearDown() override {
    server_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  static void SetCell(v2::Mutation* m, const std::string& q,
                      const std::string& value) {
    auto* s = m->mutable_set_cell();
    s->set_family_name("f");
    s->set_column_qualifier(q);
    s->set_timestamp_micros(-1);
    s->set_value(value);
  }

  std::string dir_;
  std::unique_ptr<Bigtable> store_;
  std::unique_ptr<ApiServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_P(ManyClientsTest, IncrementsFromManyClientsAddUp) {
  constexpr int kThreads = 4, kEach = 150;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&] {
      auto stub = v2::Bigtable::NewStub(channel_);
      for (int i = 0; i < kEach; i++) {
        v2::ReadModifyWriteRowRequest req;
        req.set_table_name(kTable);
        req.set_row_key("counter");
        auto* rule = req.add_rules();
        rule->set_family_name("f");
        rule->set_column_qualifier("n");
        rule->set_increment_amount(1);
        auto* append = req.add_rules();
        append->set_family_name("f");
        append->set_column_qualifier("log");
        append->set_append_value("x");
        v2::ReadModifyWriteRowResponse resp;
        grpc::ClientContext ctx;
        if (!stub->ReadModifyWriteRow(&ctx, req, &resp).ok()) failures++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  ReadOptions ro;
  auto n = store_->ReadCell("t", "counter", "f", "n", ro);
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(n->size(), 1u);
  uint64_t value = 0;
  for (unsigned char c : (*n)[0].value) value = value << 8 | c;
  EXPECT_EQ(value, uint64_t{kThreads * kEach});
  auto log = store_->ReadCell("t", "counter", "f", "log", ro);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)[0].value.size(), size_t{kThreads * kEach});
}

TEST_P(ManyClientsTest, ReadersSeeWholeRowMutations) {
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, reads{0}, failures{0};
  std::vector<std::thread> threads;
  // Writers: MutateRow and MutateRows set both cells of each row to one
  // value; CheckAndMutateRow does the same when the row has a cell.
  for (int w = 0; w < 2; w++) {
    threads.emplace_back([&, w] {
      auto stub = v2::Bigtable::NewStub(channel_);
      for (int i = 0; !stop; i++) {
        const std::string v = std::to_string(w) + "-" + std::to_string(i);
        grpc::ClientContext ctx;
        if (i % 3 == 0) {
          v2::MutateRowsRequest req;
          req.set_table_name(kTable);
          for (const char* row : {"a", "b", "c"}) {
            auto* e = req.add_entries();
            e->set_row_key(row);
            SetCell(e->add_mutations(), "x", v);
            SetCell(e->add_mutations(), "y", v);
          }
          auto reader = stub->MutateRows(&ctx, req);
          v2::MutateRowsResponse resp;
          while (reader->Read(&resp)) {
          }
          if (!reader->Finish().ok()) failures++;
        } else if (i % 3 == 1) {
          v2::MutateRowRequest req;
          req.set_table_name(kTable);
          req.set_row_key(i % 2 ? "a" : "b");
          SetCell(req.add_mutations(), "x", v);
          SetCell(req.add_mutations(), "y", v);
          v2::MutateRowResponse resp;
          if (!stub->MutateRow(&ctx, req, &resp).ok()) failures++;
        } else {
          v2::CheckAndMutateRowRequest req;
          req.set_table_name(kTable);
          req.set_row_key("c");
          SetCell(req.add_true_mutations(), "x", v);
          SetCell(req.add_true_mutations(), "y", v);
          v2::CheckAndMutateRowResponse resp;
          if (!stub->CheckAndMutateRow(&ctx, req, &resp).ok()) failures++;
        }
      }
    });
  }
  for (int r = 0; r < 2; r++) {
    threads.emplace_back([&] {
      auto stub = v2::Bigtable::NewStub(channel_);
      while (!stop) {
        v2::ReadRowsRequest req;
        req.set_table_name(kTable);
        req.mutable_filter()->set_cells_per_column_limit_filter(1);
        grpc::ClientContext ctx;
        auto reader = stub->ReadRows(&ctx, req);
        v2::ReadRowsResponse resp;
        std::vector<std::string> values;
        while (reader->Read(&resp)) {
          for (const auto& c : resp.chunks()) {
            values.push_back(c.value());
            if (c.commit_row()) {
              if (values.size() != 2 || values[0] != values[1]) torn++;
              values.clear();
            }
          }
        }
        if (!reader->Finish().ok()) failures++;
        reads++;
      }
    });
  }
  while (reads < 200) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(torn, 0) << "a reader saw half a row mutation";
  EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(Implementations, ManyClientsTest,
                         ::testing::Values("engine", "reference"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace tabletfs::api
