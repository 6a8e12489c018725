// The Bigtable v2 API (api/server.h) through a real gRPC client over a real
// Unix socket, on the engine and on the reference implementation: every
// RPC, errors as Cloud Bigtable gives them, chunking of large values,
// deadlines and cancelled streams, and the TCP security rules.
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/server.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "gtest/gtest.h"
#include "store/db.h"
#include "store/fault_env.h"
#include "store/reference/reference_bigtable.h"
#include "tests/api/test_store.h"

namespace tabletfs::api {
namespace {

namespace v2 = google::bigtable::v2;
namespace admin = google::bigtable::admin::v2;

constexpr char kInstance[] = "projects/p/instances/i";
constexpr char kTable[] = "projects/p/instances/i/tables/t";

// A row as the client library would assemble it from ReadRows chunks:
// "family:qualifier@ts=value" per cell, in order.
struct ReadResult {
  grpc::Status status;
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  int responses = 0;
  size_t largest_response = 0;
};

class ApiServerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tabletfs_api_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto store = OpenTestStore(GetParam(), dir_, 8u << 20);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    ApiOptions options;
    options.unix_socket = dir_ + "/bigtable.sock";
    auto server = ApiServer::Start(store_.get(), options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(4 << 20);  // the client libraries' default
    auto channel = grpc::CreateCustomChannel("unix:" + options.unix_socket,
                                             grpc::InsecureChannelCredentials(),
                                             args);
    data_ = v2::Bigtable::NewStub(channel);
    admin_ = admin::BigtableTableAdmin::NewStub(channel);
    CreateTable("t", {{"f", ""}, {"g", ""}});
  }

  void TearDown() override {
    server_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Families: name -> "" (no GC) or "versions=N".
  grpc::Status CreateTable(const std::string& id,
                           const std::map<std::string, std::string>& families,
                           admin::Table* out = nullptr) {
    admin::CreateTableRequest req;
    req.set_parent(kInstance);
    req.set_table_id(id);
    for (const auto& [name, gc] : families) {
      auto& f = (*req.mutable_table()->mutable_column_families())[name];
      if (gc.starts_with("versions=")) {
        f.mutable_gc_rule()->set_max_num_versions(std::stoi(gc.substr(9)));
      }
    }
    admin::Table table;
    grpc::ClientContext ctx;
    grpc::Status s = admin_->CreateTable(&ctx, req, out ? out : &table);
    return s;
  }

  static v2::Mutation SetCell(const std::string& family, const std::string& q,
                              const std::string& value, int64_t ts = -1) {
    v2::Mutation m;
    auto* s = m.mutable_set_cell();
    s->set_family_name(family);
    s->set_column_qualifier(q);
    s->set_value(value);
    s->set_timestamp_micros(ts);
    return m;
  }

  grpc::Status Mutate(const std::string& row,
                      const std::vector<v2::Mutation>& mutations,
                      const std::string& table = kTable) {
    v2::MutateRowRequest req;
    req.set_table_name(table);
    req.set_row_key(row);
    for (const auto& m : mutations) *req.add_mutations() = m;
    v2::MutateRowResponse resp;
    grpc::ClientContext ctx;
    return data_->MutateRow(&ctx, req, &resp);
  }

  // Reads as a client library does: reassembles chunks into cells and
  // checks the protocol (row key on a row's first chunk, value_size on
  // every chunk of a split value but the last, commit_row at the end).
  ReadResult Read(v2::ReadRowsRequest req,
                  std::chrono::milliseconds deadline = std::chrono::seconds(30)) {
    if (req.table_name().empty()) req.set_table_name(kTable);
    ReadResult out;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    auto reader = data_->ReadRows(&ctx, req);
    v2::ReadRowsResponse resp;
    std::string row, family, qualifier, value;
    int64_t ts = 0;
    std::vector<std::string> cells;
    bool in_value = false;
    while (reader->Read(&resp)) {
      out.responses++;
      out.largest_response =
          std::max(out.largest_response, resp.ByteSizeLong());
      for (const auto& c : resp.chunks()) {
        if (!in_value) {
          if (!c.row_key().empty()) {
            EXPECT_TRUE(row.empty() || cells.empty() || c.row_key() == row)
                << "row key changed inside a row";
            row = c.row_key();
          }
          EXPECT_FALSE(row.empty()) << "a row's first chunk has no key";
          if (c.has_family_name()) family = c.family_name().value();
          if (c.has_qualifier()) qualifier = c.qualifier().value();
          ts = c.timestamp_micros();
          std::string labels;
          for (const auto& l : c.labels()) labels += "[" + l + "]";
          value = labels;
        }
        value += c.value();
        in_value = c.value_size() > 0;
        if (!in_value) {
          cells.push_back(family + ":" + qualifier + "@" + std::to_string(ts) +
                          "=" + value);
        }
        if (c.commit_row()) {
          EXPECT_FALSE(in_value);
          out.rows.push_back({row, cells});
          row.clear();
          cells.clear();
        }
      }
    }
    out.status = reader->Finish();
    return out;
  }

  ReadResult ReadAll(const v2::RowFilter* filter = nullptr) {
    v2::ReadRowsRequest req;
    if (filter) *req.mutable_filter() = *filter;
    return Read(req);
  }

  std::string dir_;
  std::unique_ptr<Bigtable> store_;
  std::unique_ptr<ApiServer> server_;
  std::unique_ptr<v2::Bigtable::Stub> data_;
  std::unique_ptr<admin::BigtableTableAdmin::Stub> admin_;
};

TEST_P(ApiServerTest, AdminCreatesListsModifiesAndDropsTables) {
  admin::Table created;
  ASSERT_TRUE(CreateTable("u", {{"a", "versions=2"}, {"b", ""}}, &created).ok());
  EXPECT_EQ(created.name(), "projects/p/instances/i/tables/u");
  ASSERT_EQ(created.column_families().size(), 2u);
  EXPECT_EQ(created.column_families().at("a").gc_rule().max_num_versions(), 2);
  EXPECT_EQ(CreateTable("u", {}).error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(CreateTable("bad name", {}).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  {
    admin::ListTablesRequest req;
    req.set_parent(kInstance);
    admin::ListTablesResponse resp;
    grpc::ClientContext ctx;
    ASSERT_TRUE(admin_->ListTables(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.tables_size(), 2);
    EXPECT_EQ(resp.tables(0).name(), kTable);
    EXPECT_EQ(resp.tables(0).column_families_size(), 0);  // NAME_ONLY
  }
  {
    // Create c (max age 1h or 3 versions), update a, drop b: one request.
    admin::ModifyColumnFamiliesRequest req;
    req.set_name("projects/p/instances/i/tables/u");
    auto* m = req.add_modifications();
    m->set_id("c");
    auto* u = m->mutable_create()->mutable_gc_rule()->mutable_union_();
    u->add_rules()->mutable_max_age()->set_seconds(3600);
    u->add_rules()->set_max_num_versions(3);
    m = req.add_modifications();
    m->set_id("a");
    m->mutable_update()->mutable_gc_rule()->set_max_num_versions(5);
    m = req.add_modifications();
    m->set_id("b");
    m->set_drop(true);
    admin::Table t;
    grpc::ClientContext ctx;
    grpc::Status s = admin_->ModifyColumnFamilies(&ctx, req, &t);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(t.column_families().size(), 2u);
    EXPECT_EQ(t.column_families().at("a").gc_rule().max_num_versions(), 5);
    const auto& rule = t.column_families().at("c").gc_rule();
    ASSERT_TRUE(rule.has_union_());
    EXPECT_EQ(rule.union_().rules(0).max_age().seconds(), 3600);
    EXPECT_EQ(rule.union_().rules(1).max_num_versions(), 3);
  }
  {
    // A bad modification among good ones changes nothing.
    admin::ModifyColumnFamiliesRequest req;
    req.set_name("projects/p/instances/i/tables/u");
    auto* m = req.add_modifications();
    m->set_id("d");
    m->mutable_create();
    m = req.add_modifications();
    m->set_id("nope");
    m->set_drop(true);
    admin::Table t;
    grpc::ClientContext ctx;
    EXPECT_EQ(admin_->ModifyColumnFamilies(&ctx, req, &t).error_code(),
              grpc::StatusCode::NOT_FOUND);
    admin::GetTableRequest get;
    get.set_name("projects/p/instances/i/tables/u");
    grpc::ClientContext ctx2;
    ASSERT_TRUE(admin_->GetTable(&ctx2, get, &t).ok());
    EXPECT_EQ(t.column_families().size(), 2u);
    EXPECT_EQ(t.column_families().count("d"), 0u);
  }
  {
    admin::DeleteTableRequest req;
    req.set_name("projects/p/instances/i/tables/u");
    google::protobuf::Empty e;
    grpc::ClientContext ctx;
    ASSERT_TRUE(admin_->DeleteTable(&ctx, req, &e).ok());
    grpc::ClientContext ctx2;
    EXPECT_EQ(admin_->DeleteTable(&ctx2, req, &e).error_code(),
              grpc::StatusCode::NOT_FOUND);
    admin::GetTableRequest get;
    get.set_name("projects/p/instances/i/tables/u");
    admin::Table t;
    grpc::ClientContext ctx3;
    EXPECT_EQ(admin_->GetTable(&ctx3, get, &t).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
}

TEST_P(ApiServerTest, MutateAndReadRowsWithKeysRangesAndLimits) {
  for (const char* row : {"a", "b", "c", "d", "e"}) {
    ASSERT_TRUE(Mutate(row, {SetCell("f", "q", std::string("v") + row, 1000),
                             SetCell("g", "x", "gx", 2000)})
                    .ok());
  }
  ReadResult all = ReadAll();
  ASSERT_TRUE(all.status.ok()) << all.status.error_message();
  ASSERT_EQ(all.rows.size(), 5u);
  EXPECT_EQ(all.rows[0].first, "a");
  EXPECT_EQ(all.rows[0].second,
            (std::vector<std::string>{"f:q@1000=va", "g:x@2000=gx"}));

  v2::ReadRowsRequest req;
  req.mutable_rows()->add_row_keys("d");
  req.mutable_rows()->add_row_keys("a");
  req.mutable_rows()->add_row_keys("zz");  // absent
  auto* r = req.mutable_rows()->add_row_ranges();
  r->set_start_key_open("a");
  r->set_end_key_closed("b");  // (a, b]
  ReadResult some = Read(req);
  ASSERT_TRUE(some.status.ok());
  std::vector<std::string> keys;
  for (auto& row : some.rows) keys.push_back(row.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "b", "d"}));

  req.set_rows_limit(2);
  some = Read(req);
  ASSERT_EQ(some.rows.size(), 2u);
  // Reversed: newest key first, the limit counted from there.
  req.set_reversed(true);
  some = Read(req);
  keys.clear();
  for (auto& row : some.rows) keys.push_back(row.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"d", "b"}));
  req.set_reversed(false);
  req.set_rows_limit(-1);
  EXPECT_EQ(Read(req).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // Deletes: a column by time range, a family, a row.
  ASSERT_TRUE(Mutate("a", {SetCell("f", "q", "later", 5000)}).ok());
  v2::Mutation del;
  auto* dc = del.mutable_delete_from_column();
  dc->set_family_name("f");
  dc->set_column_qualifier("q");
  dc->mutable_time_range()->set_start_timestamp_micros(4000);  // [4000, inf)
  ASSERT_TRUE(Mutate("a", {del}).ok());
  v2::Mutation delfam;
  delfam.mutable_delete_from_family()->set_family_name("g");
  ASSERT_TRUE(Mutate("a", {delfam}).ok());
  v2::Mutation delrow;
  delrow.mutable_delete_from_row();
  ASSERT_TRUE(Mutate("b", {delrow}).ok());
  all = ReadAll();
  ASSERT_EQ(all.rows.size(), 4u);
  EXPECT_EQ(all.rows[0].first, "a");
  EXPECT_EQ(all.rows[0].second, (std::vector<std::string>{"f:q@1000=va"}));
  EXPECT_EQ(all.rows[1].first, "c");
}

TEST_P(ApiServerTest, ErrorsAsCloudBigtableGivesThem) {
  auto code = [](const grpc::Status& s) { return s.error_code(); };
  EXPECT_EQ(code(Mutate("r", {SetCell("f", "q", "v")},
                        "projects/p/instances/i/tables/nope")),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(code(Mutate("r", {SetCell("nofamily", "q", "v")})),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(code(Mutate("r", {SetCell("f", "q", "v")}, "tables/t")),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(code(Mutate(std::string(4097, 'k'), {SetCell("f", "q", "v")})),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(code(Mutate("", {SetCell("f", "q", "v")})),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(code(Mutate("r", {})), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(code(Mutate("r", {SetCell("f", "q", "v", -2)})),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(code(Mutate("r", {SetCell("f", "q", std::string(9u << 20, 'x'))})),
            grpc::StatusCode::INVALID_ARGUMENT);
  // A mutation refused as a whole: the good part of it is not applied.
  EXPECT_EQ(code(Mutate("r", {SetCell("f", "q", "v"), SetCell("no", "q", "v")})),
            grpc::StatusCode::NOT_FOUND);
  v2::RowFilter bad;
  bad.set_value_regex_filter("(unclosed");
  EXPECT_EQ(ReadAll(&bad).status.error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  v2::ReadRowsRequest req;
  req.set_table_name("projects/p/instances/i/tables/nope");
  EXPECT_EQ(Read(req).status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(ReadAll().rows.empty()) << "a refused write changed data";
}

TEST_P(ApiServerTest, LargeValuesAreChunkedUnderTheMessageLimit) {
  std::string big(6u << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>(i >> 12);
  ASSERT_TRUE(Mutate("big", {SetCell("f", "q", big, 1000)}).ok());
  ASSERT_TRUE(Mutate("small", {SetCell("f", "q", "s", 1000)}).ok());
  ReadResult all = ReadAll();
  ASSERT_TRUE(all.status.ok()) << all.status.error_message();
  ASSERT_EQ(all.rows.size(), 2u);
  EXPECT_EQ(all.rows[0].second[0], "f:q@1000=" + big);
  EXPECT_EQ(all.rows[1].second[0], "f:q@1000=s");
  EXPECT_GT(all.responses, 4);
  EXPECT_LT(all.largest_response, 2u << 20);
}

TEST_P(ApiServerTest, MutateRowsReportsEachEntry) {
  v2::MutateRowsRequest req;
  req.set_table_name(kTable);
  auto add = [&](const std::string& row, const v2::Mutation& m) {
    auto* e = req.add_entries();
    e->set_row_key(row);
    *e->add_mutations() = m;
  };
  add("r0", SetCell("f", "q", "ok0"));
  add("r1", SetCell("nofamily", "q", "x"));
  add("", SetCell("f", "q", "x"));
  add("r3", SetCell("f", "q", "ok3"));
  grpc::ClientContext ctx;
  auto reader = data_->MutateRows(&ctx, req);
  v2::MutateRowsResponse resp;
  std::map<int64_t, int> codes;
  while (reader->Read(&resp)) {
    for (const auto& e : resp.entries()) codes[e.index()] = e.status().code();
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(codes, (std::map<int64_t, int>{
                       {0, grpc::StatusCode::OK},
                       {1, grpc::StatusCode::NOT_FOUND},
                       {2, grpc::StatusCode::INVALID_ARGUMENT},
                       {3, grpc::StatusCode::OK}}));
  ReadResult all = ReadAll();
  ASSERT_EQ(all.rows.size(), 2u);
  EXPECT_EQ(all.rows[0].first, "r0");
  EXPECT_EQ(all.rows[1].first, "r3");
}

TEST_P(ApiServerTest, CheckAndMutateRowOnAFilter) {
  ASSERT_TRUE(Mutate("r", {SetCell("f", "state", "open", 1000)}).ok());
  auto check = [&](const std::string& regex, bool* matched) {
    v2::CheckAndMutateRowRequest req;
    req.set_table_name(kTable);
    req.set_row_key("r");
    auto* chain = req.mutable_predicate_filter()->mutable_chain();
    chain->add_filters()->set_column_qualifier_regex_filter("state");
    chain->add_filters()->set_value_regex_filter(regex);
    *req.add_true_mutations() = SetCell("f", "result", "matched", 2000);
    *req.add_false_mutations() = SetCell("f", "result", "missed", 2000);
    v2::CheckAndMutateRowResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = data_->CheckAndMutateRow(&ctx, req, &resp);
    *matched = resp.predicate_matched();
    return s;
  };
  bool matched = false;
  ASSERT_TRUE(check("op.*", &matched).ok());
  EXPECT_TRUE(matched);
  v2::RowFilter only_result;
  only_result.set_column_qualifier_regex_filter("result");
  ReadResult r = ReadAll(&only_result);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].second, (std::vector<std::string>{"f:result@2000=matched"}));
  ASSERT_TRUE(check("closed", &matched).ok());
  EXPECT_FALSE(matched);
  r = ReadAll(&only_result);
  EXPECT_EQ(r.rows[0].second, (std::vector<std::string>{"f:result@2000=missed"}));
  EXPECT_EQ(check("(", &matched).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_P(ApiServerTest, ReadModifyWriteRowAppendsAndIncrements) {
  auto rmw = [&](const std::vector<v2::ReadModifyWriteRule>& rules,
                 v2::Row* row) {
    v2::ReadModifyWriteRowRequest req;
    req.set_table_name(kTable);
    req.set_row_key("r");
    for (const auto& rule : rules) *req.add_rules() = rule;
    v2::ReadModifyWriteRowResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = data_->ReadModifyWriteRow(&ctx, req, &resp);
    *row = resp.row();
    return s;
  };
  v2::ReadModifyWriteRule append, inc;
  append.set_family_name("f");
  append.set_column_qualifier("log");
  append.set_append_value("ab");
  inc.set_family_name("g");
  inc.set_column_qualifier("n");
  inc.set_increment_amount(5);
  v2::Row row;
  ASSERT_TRUE(rmw({append, append, inc}, &row).ok());
  ASSERT_EQ(row.families_size(), 2);
  EXPECT_EQ(row.families(0).columns(0).cells(0).value(), "abab");
  EXPECT_EQ(row.families(1).columns(0).cells(0).value(),
            std::string("\0\0\0\0\0\0\0\5", 8));
  inc.set_increment_amount(-7);
  ASSERT_TRUE(rmw({inc}, &row).ok());
  EXPECT_EQ(row.families(0).columns(0).cells(0).value(),
            std::string("\xff\xff\xff\xff\xff\xff\xff\xfe", 8));
  // Incrementing a value that is not 8 bytes is refused, nothing written.
  inc.set_column_qualifier("log");
  inc.set_family_name("f");
  EXPECT_EQ(rmw({append, inc}, &row).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  v2::RowFilter log;
  log.set_column_qualifier_regex_filter("log");
  ReadResult r = ReadAll(&log);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_TRUE(r.rows[0].second[0].ends_with("=abab")) << r.rows[0].second[0];
  inc.set_family_name("nofamily");
  EXPECT_EQ(rmw({inc}, &row).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_P(ApiServerTest, SampleRowKeysEndsWithTheEmptyKeyAndPingAnswers) {
  ASSERT_TRUE(Mutate("r", {SetCell("f", "q", "v")}).ok());
  v2::SampleRowKeysRequest req;
  req.set_table_name(kTable);
  grpc::ClientContext ctx;
  auto reader = data_->SampleRowKeys(&ctx, req);
  v2::SampleRowKeysResponse resp;
  std::vector<v2::SampleRowKeysResponse> all;
  while (reader->Read(&resp)) all.push_back(resp);
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.back().row_key(), "");
  for (size_t i = 1; i < all.size(); i++) {
    EXPECT_GE(all[i].offset_bytes(), all[i - 1].offset_bytes());
  }
  v2::PingAndWarmRequest ping;
  ping.set_name(kInstance);
  v2::PingAndWarmResponse pong;
  grpc::ClientContext ctx2;
  EXPECT_TRUE(data_->PingAndWarm(&ctx2, ping, &pong).ok());
  ping.set_name("instances/i");
  grpc::ClientContext ctx3;
  EXPECT_EQ(data_->PingAndWarm(&ctx3, ping, &pong).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_P(ApiServerTest, DeadlinesAndCancelledStreams) {
  // Enough rows that a scan takes several responses.
  v2::MutateRowsRequest load;
  load.set_table_name(kTable);
  const std::string value(4000, 'v');
  for (int i = 0; i < 2000; i++) {
    auto* e = load.add_entries();
    e->set_row_key("row" + std::to_string(10000 + i));
    *e->add_mutations() = SetCell("f", "q", value);
  }
  {
    grpc::ClientContext ctx;
    auto reader = data_->MutateRows(&ctx, load);
    v2::MutateRowsResponse resp;
    while (reader->Read(&resp)) {
    }
    ASSERT_TRUE(reader->Finish().ok());
  }
  // A deadline already past.
  EXPECT_EQ(Read(v2::ReadRowsRequest(), std::chrono::milliseconds(0))
                .status.error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  // A stream cancelled after its first response: the server stops, and
  // the next call works.
  for (int round = 0; round < 3; round++) {
    grpc::ClientContext ctx;
    v2::ReadRowsRequest req;
    req.set_table_name(kTable);
    auto reader = data_->ReadRows(&ctx, req);
    v2::ReadRowsResponse resp;
    ASSERT_TRUE(reader->Read(&resp));
    ctx.TryCancel();
    while (reader->Read(&resp)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  EXPECT_EQ(ReadAll().rows.size(), 2000u);
  // Shutdown with a client connected ends promptly, and then calls fail.
  auto start = std::chrono::steady_clock::now();
  server_->Shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(Mutate("r", {SetCell("f", "q", "v")}).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

INSTANTIATE_TEST_SUITE_P(Implementations, ApiServerTest,
                         ::testing::Values("engine", "reference"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// A disk below its space reserve: writes that add data are
// RESOURCE_EXHAUSTED (a MutateRows entry too), deletes still work, and
// writes work again once space returns.
TEST(ApiServerDiskTest, AFullDiskIsResourceExhaustedAndDeletesStillWork) {
  char tmpl[] = "/tmp/tabletfs_apidisk_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  FaultInjectionEnv env(Env::Default());
  Options options;
  options.env = &env;
  options.space_reserve_bytes = 64u << 20;
  auto db = DB::Open(options, dir + "/data");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  ASSERT_TRUE((*db)->CreateTable("t").ok());
  ASSERT_TRUE((*db)->CreateFamily("t", "f", FamilySettings()).ok());
  ApiOptions api;
  api.unix_socket = dir + "/bigtable.sock";
  auto server = ApiServer::Start(db->get(), api);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto stub = v2::Bigtable::NewStub(grpc::CreateChannel(
      "unix:" + api.unix_socket, grpc::InsecureChannelCredentials()));
  auto mutate = [&](const std::string& row, bool set) {
    v2::MutateRowRequest req;
    req.set_table_name(kTable);
    req.set_row_key(row);
    if (set) {
      auto* c = req.add_mutations()->mutable_set_cell();
      c->set_family_name("f");
      c->set_column_qualifier("q");
      c->set_value("v");
      c->set_timestamp_micros(-1);
    } else {
      req.add_mutations()->mutable_delete_from_row();
    }
    v2::MutateRowResponse resp;
    grpc::ClientContext ctx;
    return stub->MutateRow(&ctx, req, &resp).error_code();
  };
  EXPECT_EQ(mutate("kept", true), grpc::StatusCode::OK);
  EXPECT_EQ(mutate("gone", true), grpc::StatusCode::OK);
  env.SetFreeSpace(32u << 20);  // below the reserve
  EXPECT_EQ(mutate("new", true), grpc::StatusCode::RESOURCE_EXHAUSTED);
  {
    v2::MutateRowsRequest req;
    req.set_table_name(kTable);
    auto* e = req.add_entries();
    e->set_row_key("new2");
    auto* c = e->add_mutations()->mutable_set_cell();
    c->set_family_name("f");
    c->set_column_qualifier("q");
    c->set_value("v");
    c->set_timestamp_micros(-1);
    grpc::ClientContext ctx;
    auto reader = stub->MutateRows(&ctx, req);
    v2::MutateRowsResponse resp;
    int code = -1;
    while (reader->Read(&resp)) code = resp.entries(0).status().code();
    EXPECT_TRUE(reader->Finish().ok());
    EXPECT_EQ(code, grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  EXPECT_EQ(mutate("gone", false), grpc::StatusCode::OK);  // deletes work
  ReadOptions ro;
  EXPECT_TRUE((*db)->ReadRow("t", "gone", ro)->cells.empty());
  EXPECT_TRUE((*db)->ReadRow("t", "new", ro)->cells.empty());
  EXPECT_EQ((*db)->ReadRow("t", "kept", ro)->cells.size(), 1u);
  env.SetFreeSpace(uint64_t{1} << 40);
  EXPECT_EQ(mutate("new", true), grpc::StatusCode::OK);
  server->reset();
  db->reset();
  std::filesystem::remove_all(dir);
}

// The TCP rules: loopback needs nothing; any other address is refused
// without TLS and a token.
TEST(ApiServerSecurityTest, NonLoopbackNeedsTlsAndAToken) {
  EXPECT_TRUE(IsLoopback("127.0.0.1:1"));
  EXPECT_TRUE(IsLoopback("localhost:1"));
  EXPECT_TRUE(IsLoopback("[::1]:1"));
  EXPECT_FALSE(IsLoopback("0.0.0.0:1"));
  EXPECT_FALSE(IsLoopback("[::]:1"));
  EXPECT_FALSE(IsLoopback("10.0.0.1:1"));
  auto store = NewReferenceBigtable(ReferenceOptions());
  ApiOptions options;
  options.tcp_address = "0.0.0.0:0";
  auto refused = ApiServer::Start(store.get(), options);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().IsInvalidArgument());
  EXPECT_NE(refused.status().ToString().find("bigtable_api_token_file"),
            std::string::npos);
  options.tcp_address = "127.0.0.1:0";
  auto loopback = ApiServer::Start(store.get(), options);
  ASSERT_TRUE(loopback.ok()) << loopback.status().ToString();
  EXPECT_GT((*loopback)->tcp_port(), 0);
}

// With TLS and a token file the server listens anywhere, and a call
// without the token, or with another, is UNAUTHENTICATED.
TEST(ApiServerSecurityTest, TlsAndABearerToken) {
  char tmpl[] = "/tmp/tabletfs_tls_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string gen =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
      "-addext subjectAltName=DNS:localhost -keyout " + dir + "/key.pem -out " +
      dir + "/cert.pem 2>/dev/null";
  ASSERT_EQ(system(gen.c_str()), 0) << "openssl (Debian: openssl) is needed";
  ASSERT_EQ(system(("printf ' s3cret\n' > " + dir + "/token").c_str()), 0);
  auto store = NewReferenceBigtable(ReferenceOptions());
  ApiOptions options;
  options.tcp_address = "0.0.0.0:0";
  options.tls_cert_file = dir + "/cert.pem";
  options.tls_key_file = dir + "/key.pem";
  options.token_file = dir + "/token";
  auto server = ApiServer::Start(store.get(), options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::string cert;
  {
    FILE* f = fopen((dir + "/cert.pem").c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) cert.append(buf, n);
    fclose(f);
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = cert;
  // By address, the certificate's name given: resolving "localhost" goes
  // through c-ares, whose allocations LeakSanitizer reports at exit.
  const std::string address =
      "127.0.0.1:" + std::to_string((*server)->tcp_port());
  grpc::ChannelArguments tls_args;
  tls_args.SetSslTargetNameOverride("localhost");
  auto channel = grpc::CreateCustomChannel(address, grpc::SslCredentials(ssl),
                                           tls_args);
  auto stub = v2::Bigtable::NewStub(channel);
  auto ping = [&](const char* token) {
    v2::PingAndWarmRequest req;
    req.set_name(kInstance);
    v2::PingAndWarmResponse resp;
    grpc::ClientContext ctx;
    if (token != nullptr) ctx.AddMetadata("authorization", token);
    return stub->PingAndWarm(&ctx, req, &resp).error_code();
  };
  EXPECT_EQ(ping(nullptr), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ping("Bearer wrong!"), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ping("Bearer s3cret"), grpc::StatusCode::OK);
  // Plaintext to a TLS port gets nowhere.
  auto plain = v2::Bigtable::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  v2::PingAndWarmRequest req;
  req.set_name(kInstance);
  v2::PingAndWarmResponse resp;
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer s3cret");
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  EXPECT_NE(plain->PingAndWarm(&ctx, req, &resp).error_code(),
            grpc::StatusCode::OK);
  server->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tabletfs::api
