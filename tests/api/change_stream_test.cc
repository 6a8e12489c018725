// Change streams of the Bigtable v2 API (api/change_stream.cc) through a
// real gRPC client over a Unix socket, on the engine and on the reference
// implementation: GenerateInitialChangeStreamPartitions; ReadChangeStream's
// records for every kind of mutation, in commit order, with values (large
// ones in chunks); heartbeats; end_time; the refusals; a client that stops
// reading (writers go on, the stream ends ABORTED); and the remote client's
// Subscribe over it (api/remote_bigtable.h), which must see what a local
// subscriber sees.
#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/remote_bigtable.h"
#include "api/server.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "gtest/gtest.h"
#include "store/db.h"
#include "store/reference/reference_bigtable.h"
#include "tests/api/test_store.h"

namespace tabletfs::api {
namespace {

namespace v2 = google::bigtable::v2;
using Response = v2::ReadChangeStreamResponse;

constexpr char kTable[] = "projects/p/instances/i/tables/t";

int64_t Micros(const google::protobuf::Timestamp& t) {
  return t.seconds() * 1000000 + t.nanos() / 1000;
}

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

google::protobuf::Timestamp Timestamp(int64_t micros) {
  google::protobuf::Timestamp t;
  t.set_seconds(micros / 1000000);
  t.set_nanos(static_cast<int32_t>(micros % 1000000 * 1000));
  return t;
}

bool IsWhole(const v2::StreamPartition& p) {
  return p.row_range().start_key_closed().empty() &&
         p.row_range().end_key_open().empty() &&
         p.row_range().end_key_case() == v2::RowRange::kEndKeyOpen;
}

// A mutation as a test reads it.
std::string Describe(const v2::Mutation& m) {
  switch (m.mutation_case()) {
    case v2::Mutation::kSetCell: {
      const auto& s = m.set_cell();
      return "set " + s.family_name() + ":" + s.column_qualifier() + "@" +
             std::to_string(s.timestamp_micros()) + "=";
    }
    case v2::Mutation::kDeleteFromColumn: {
      const auto& d = m.delete_from_column();
      std::string text =
          "delete " + d.family_name() + ":" + d.column_qualifier();
      if (d.has_time_range()) {
        text += "@[" + std::to_string(d.time_range().start_timestamp_micros()) +
                "," + std::to_string(d.time_range().end_timestamp_micros()) +
                ")";
      }
      return text;
    }
    case v2::Mutation::kDeleteFromFamily:
      return "delete " + m.delete_from_family().family_name();
    case v2::Mutation::kDeleteFromRow:
      return "delete row";
    default:
      return "?";
  }
}

// One DataChange, reassembled from its messages.
struct Change {
  std::string row;
  std::vector<std::string> mutations;  // Describe() + the SetCell's value
  int64_t commit = 0;
  int64_t watermark = 0;
  std::string token;
  int messages = 0;
};

// A ReadChangeStream call, read record by record.
class Stream {
 public:
  Stream(v2::Bigtable::Stub* stub, v2::ReadChangeStreamRequest request,
         std::chrono::seconds deadline = std::chrono::seconds(60)) {
    if (request.table_name().empty()) request.set_table_name(kTable);
    ctx_.set_deadline(std::chrono::system_clock::now() + deadline);
    reader_ = stub->ReadChangeStream(&ctx_, request);
  }
  ~Stream() {
    ctx_.TryCancel();
    Finish();
  }

  bool Next(Response* r) { return reader_->Read(r); }
  // The next DataChange (heartbeats skipped); false at the end.
  bool NextChange(Change* c) {
    *c = Change();
    Response r;
    while (Next(&r)) {
      if (!r.has_data_change()) {
        if (r.has_close_stream()) closed_ = r.close_stream().status();
        continue;
      }
      const auto& d = r.data_change();
      c->messages++;
      if (d.type() != Response::DataChange::CONTINUATION) {
        EXPECT_EQ(d.type(), Response::DataChange::USER);
        c->row = d.row_key();
        c->commit = Micros(d.commit_timestamp());
      }
      for (const auto& chunk : d.chunks()) {
        if (chunk.chunk_info().chunked_value_offset() > 0) {
          EXPECT_EQ(d.type(), Response::DataChange::CONTINUATION);
          c->mutations.back() += chunk.mutation().set_cell().value();
        } else {
          c->mutations.push_back(Describe(chunk.mutation()) +
                                 chunk.mutation().set_cell().value());
        }
      }
      if (d.done()) {
        c->token = d.token();
        c->watermark = Micros(d.estimated_low_watermark());
        return true;
      }
    }
    return false;
  }
  // "ROW: MUTATION" of the next n changes, one mutation each.
  std::vector<std::string> Changes(int n) {
    std::vector<std::string> out;
    Change c;
    for (int i = 0; i < n && NextChange(&c); i++) {
      EXPECT_EQ(c.mutations.size(), 1u);
      out.push_back(c.row + ": " + c.mutations[0]);
    }
    return out;
  }
  // The call's status (Finish is called once).
  grpc::Status Finish() {
    if (!status_) status_ = reader_->Finish();
    return *status_;
  }
  void Cancel() { ctx_.TryCancel(); }
  const google::rpc::Status& closed() const { return closed_; }

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<Response>> reader_;
  google::rpc::Status closed_;
  std::optional<grpc::Status> status_;
};

class ChangeStreamTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tabletfs_changes_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto store = OpenTestStore(GetParam(), dir_, 8u << 20);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    ASSERT_TRUE(store_->CreateTable("t").ok());
    ASSERT_TRUE(store_->CreateFamily("t", "f", FamilySettings()).ok());
    ASSERT_TRUE(store_->CreateFamily("t", "g", FamilySettings()).ok());
    StartServer(ApiOptions());
  }

  void TearDown() override {
    data_.reset();
    server_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // The remote client (api/remote_bigtable.h) of this server; nullptr
  // (and a failure) when it cannot connect.
  std::unique_ptr<Bigtable> ConnectRemote() {
    RemoteOptions ro;
    ro.endpoint = "unix:" + socket_;
    ro.project = "p";
    ro.instance = "i";
    auto remote = ConnectBigtable(ro);
    EXPECT_TRUE(remote.ok()) << remote.status().ToString();
    return remote.ok() ? std::move(remote).value() : nullptr;
  }

  void StartServer(ApiOptions options) {
    data_.reset();
    server_.reset();
    socket_ = dir_ + "/bigtable.sock";
    options.unix_socket = socket_;
    auto server = ApiServer::Start(store_.get(), options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    auto channel = grpc::CreateChannel("unix:" + socket_,
                                       grpc::InsecureChannelCredentials());
    data_ = v2::Bigtable::NewStub(channel);
  }

  static v2::Mutation SetCell(const std::string& family, const std::string& q,
                              const std::string& value, int64_t ts) {
    v2::Mutation m;
    auto* s = m.mutable_set_cell();
    s->set_family_name(family);
    s->set_column_qualifier(q);
    s->set_value(value);
    s->set_timestamp_micros(ts);
    return m;
  }
  static v2::Mutation DeleteColumn(const std::string& family,
                                   const std::string& q, int64_t start = -1,
                                   int64_t end = 0) {
    v2::Mutation m;
    auto* d = m.mutable_delete_from_column();
    d->set_family_name(family);
    d->set_column_qualifier(q);
    if (start >= 0) {
      d->mutable_time_range()->set_start_timestamp_micros(start);
      d->mutable_time_range()->set_end_timestamp_micros(end);
    }
    return m;
  }

  void Mutate(const std::string& row, const std::vector<v2::Mutation>& ms) {
    v2::MutateRowRequest req;
    req.set_table_name(kTable);
    req.set_row_key(row);
    for (const auto& m : ms) *req.add_mutations() = m;
    v2::MutateRowResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = data_->MutateRow(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // MutateRows of `entries` (row, mutations), every entry OK.
  void MutateRows(
      const std::vector<std::pair<std::string, std::vector<v2::Mutation>>>&
          entries) {
    v2::MutateRowsRequest req;
    req.set_table_name(kTable);
    for (const auto& [row, ms] : entries) {
      auto* e = req.add_entries();
      e->set_row_key(row);
      for (const auto& m : ms) *e->add_mutations() = m;
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(60));
    auto reader = data_->MutateRows(&ctx, req);
    v2::MutateRowsResponse resp;
    while (reader->Read(&resp)) {
      for (const auto& e : resp.entries()) {
        EXPECT_EQ(e.status().code(), 0) << e.status().message();
      }
    }
    grpc::Status s = reader->Finish();
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // A stream that is live: its first record (a heartbeat) arrived.
  std::unique_ptr<Stream> Open(v2::ReadChangeStreamRequest request = {}) {
    auto stream = std::make_unique<Stream>(data_.get(), std::move(request));
    Response first;
    EXPECT_TRUE(stream->Next(&first));
    EXPECT_TRUE(first.has_heartbeat());
    return stream;
  }

  // The status of a stream that is refused.
  grpc::Status Refused(v2::ReadChangeStreamRequest request) {
    Stream stream(data_.get(), std::move(request));
    Response r;
    EXPECT_FALSE(stream.Next(&r)) << r.DebugString();
    return stream.Finish();
  }

  std::string dir_;
  std::string socket_;
  std::unique_ptr<Bigtable> store_;
  std::unique_ptr<ApiServer> server_;
  std::unique_ptr<v2::Bigtable::Stub> data_;
};

TEST_P(ChangeStreamTest, OnePartitionCoversTheWholeTable) {
  v2::GenerateInitialChangeStreamPartitionsRequest req;
  req.set_table_name(kTable);
  grpc::ClientContext ctx;
  auto reader = data_->GenerateInitialChangeStreamPartitions(&ctx, req);
  std::vector<v2::StreamPartition> partitions;
  v2::GenerateInitialChangeStreamPartitionsResponse r;
  while (reader->Read(&r)) partitions.push_back(r.partition());
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_EQ(partitions.size(), 1u);
  EXPECT_TRUE(IsWhole(partitions[0])) << partitions[0].DebugString();
  // The partition it gives is one ReadChangeStream takes.
  v2::ReadChangeStreamRequest read;
  *read.mutable_partition() = partitions[0];
  Open(read);
}

TEST_P(ChangeStreamTest, EveryMutationInCommitOrderWithItsValue) {
  auto stream = Open();
  Mutate("r1", {SetCell("f", "a", "one", 1000), SetCell("g", "b", "two", -1)});
  Change c;
  ASSERT_TRUE(stream->NextChange(&c));
  EXPECT_EQ(c.row, "r1");
  EXPECT_EQ(c.mutations, std::vector<std::string>{"set f:a@1000=one"});
  EXPECT_FALSE(c.token.empty());
  EXPECT_GT(c.watermark, 0);
  ASSERT_TRUE(stream->NextChange(&c));
  ASSERT_EQ(c.mutations.size(), 1u);
  // The server's timestamp, and the value written.
  const int64_t server_ts =
      std::stoll(c.mutations[0].substr(c.mutations[0].find('@') + 1));
  EXPECT_GT(server_ts, 1000);
  EXPECT_EQ(c.mutations[0], "set g:b@" + std::to_string(server_ts) + "=two");
  Mutate("r1", {DeleteColumn("f", "a", 1000, 1001)});
  Mutate("r2", {SetCell("f", "c", "gone", 5), DeleteColumn("f", "c")});
  EXPECT_EQ(stream->Changes(3),
            (std::vector<std::string>{"r1: delete f:a@[1000,1001)",
                                      // deleted at once, still with the
                                      // value written
                                      "r2: set f:c@5=gone", "r2: delete f:c"}));
  MutateRows({{"r3", {SetCell("f", "d", "dee", 7)}},
              {"r4", {SetCell("g", "e", "ee", 8)}}});
  EXPECT_EQ(stream->Changes(2), (std::vector<std::string>{"r3: set f:d@7=dee",
                                                          "r4: set g:e@8=ee"}));
  v2::Mutation family;
  family.mutable_delete_from_family()->set_family_name("f");
  v2::Mutation row;
  row.mutable_delete_from_row();
  const int64_t before = NowMicros();
  Mutate("r3", {family});
  MutateRows({{"r4", {row}}});
  ASSERT_TRUE(stream->NextChange(&c));
  EXPECT_EQ(c.row + ": " + c.mutations[0], "r3: delete f");
  // A delete's commit timestamp is its commit's.
  EXPECT_GE(c.commit, before);
  EXPECT_LE(c.commit, NowMicros());
  EXPECT_EQ(stream->Changes(1), std::vector<std::string>{"r4: delete row"});
  // A value of 2.5 MiB: three messages, one change.
  std::string big(5u << 19, 'x');
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>(i);
  Mutate("r5", {SetCell("f", "big", big, 9)});
  ASSERT_TRUE(stream->NextChange(&c));
  EXPECT_EQ(c.messages, 3);
  ASSERT_EQ(c.mutations.size(), 1u);
  EXPECT_TRUE(c.mutations[0] == "set f:big@9=" + big);
  // Schema drops: the empty row key (which no row has).
  ASSERT_TRUE(store_->DeleteFamily("t", "g").ok());
  ASSERT_TRUE(store_->DeleteTable("t").ok());
  EXPECT_EQ(stream->Changes(2),
            (std::vector<std::string>{": delete g", ": delete row"}));
}

TEST_P(ChangeStreamTest, HeartbeatsCarryTokensAndARisingWatermark) {
  v2::ReadChangeStreamRequest req;
  req.mutable_heartbeat_duration()->set_nanos(50'000'000);
  Stream stream(data_.get(), req);
  std::chrono::steady_clock::time_point first;
  int64_t last = 0;
  for (int i = 0; i < 4; i++) {
    Response r;
    ASSERT_TRUE(stream.Next(&r));
    if (i == 0) first = std::chrono::steady_clock::now();
    ASSERT_TRUE(r.has_heartbeat()) << r.DebugString();
    const auto& h = r.heartbeat();
    EXPECT_TRUE(IsWhole(h.continuation_token().partition()));
    EXPECT_FALSE(h.continuation_token().token().empty());
    const int64_t w = Micros(h.estimated_low_watermark());
    EXPECT_GT(w, last);
    last = w;
  }
  // The first at once, then one per 50 ms: three more take 150 ms at the
  // server (100 ms at least as received, whatever the first's delay).
  const auto took = std::chrono::steady_clock::now() - first;
  EXPECT_GE(took, std::chrono::milliseconds(100));
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST_P(ChangeStreamTest, EndTimeEndsTheStreamWithOk) {
  v2::ReadChangeStreamRequest req;
  *req.mutable_end_time() = Timestamp(NowMicros() + 200'000);
  Stream stream(data_.get(), req);
  Response r;
  while (stream.Next(&r)) {
  }
  EXPECT_TRUE(stream.Finish().ok());
}

TEST_P(ChangeStreamTest, RefusalsCarryTheRightCode) {
  v2::ReadChangeStreamRequest req;
  req.set_table_name("projects/p/instances/i/tables/nope");
  EXPECT_EQ(Refused(req).error_code(), grpc::StatusCode::NOT_FOUND);
  req.set_table_name("tables/t");
  EXPECT_EQ(Refused(req).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  req.set_table_name(kTable);
  req.mutable_partition()->mutable_row_range()->set_start_key_closed("a");
  req.mutable_partition()->mutable_row_range()->set_end_key_open("b");
  grpc::Status s = Refused(req);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("one partition"), std::string::npos)
      << s.error_message();
  req.clear_partition();

  req.mutable_heartbeat_duration()->set_seconds(-1);
  EXPECT_EQ(Refused(req).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  req.clear_heartbeat_duration();

  // The past: no history is kept.
  *req.mutable_start_time() = Timestamp(NowMicros() - 3'600'000'000);
  s = Refused(req);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_NE(s.error_message().find("keeps no change history"),
            std::string::npos)
      << s.error_message();
  req.clear_start_time();

  // A token of an earlier stream: the past too. A token that is not
  // this server's: malformed.
  std::string token;
  {
    Stream first(data_.get(), v2::ReadChangeStreamRequest());
    Response r;
    ASSERT_TRUE(first.Next(&r));
    token = r.heartbeat().continuation_token().token();
  }
  auto* t = req.mutable_continuation_tokens()->add_tokens();
  t->mutable_partition()->mutable_row_range()->set_end_key_open("");
  t->set_token(token);
  EXPECT_EQ(Refused(req).error_code(), grpc::StatusCode::OUT_OF_RANGE);
  t->set_token("not-a-token");
  EXPECT_EQ(Refused(req).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v2::GenerateInitialChangeStreamPartitionsRequest gen;
  gen.set_table_name("projects/p/instances/i/tables/nope");
  grpc::ClientContext ctx;
  auto reader = data_->GenerateInitialChangeStreamPartitions(&ctx, gen);
  v2::GenerateInitialChangeStreamPartitionsResponse r;
  EXPECT_FALSE(reader->Read(&r));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
}

// A client that stops reading: its stream's queue overflows, writers never
// wait for it, and the stream then ends with a CloseStream and ABORTED.
TEST_P(ChangeStreamTest, AClientThatStopsReadingDoesNotSlowWriters) {
  ApiOptions options;
  options.max_queued_changes = 64;
  StartServer(options);
  const std::string value(4096, 'v');
  constexpr int kRequests = 80, kRows = 100;  // 32 MiB of values
  auto write = [&](int round) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kRequests; i++) {
      std::vector<std::pair<std::string, std::vector<v2::Mutation>>> entries;
      for (int j = 0; j < kRows; j++) {
        std::string row = std::to_string(round);
        row.append(".").append(std::to_string(i * kRows + j));
        entries.push_back({row, {SetCell("f", "q", value, 1000)}});
      }
      MutateRows(entries);
    }
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
  };
  const auto alone = write(0);
  auto stream = Open();
  const auto unread = write(1);
  std::cout << "32 MiB through MutateRows: " << alone.count()
            << " ms without a stream, " << unread.count()
            << " ms with a stream nobody reads\n";
  // Now read: what was sent, then the end.
  Change c;
  int changes = 0;
  while (stream->NextChange(&c)) changes++;
  EXPECT_LT(changes, kRequests * kRows);
  EXPECT_EQ(stream->closed().code(),
            static_cast<int>(grpc::StatusCode::ABORTED));
  EXPECT_NE(stream->closed().message().find("fell behind"), std::string::npos)
      << stream->closed().message();
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::ABORTED);
}

// The remote client's Subscribe (api/remote_bigtable.h) over this
// server: the events a local subscriber of the same store gets, but for
// origin.
TEST_P(ChangeStreamTest, RemoteSubscribeSeesWhatALocalSubscriberSees) {
  std::unique_ptr<Bigtable> remote = ConnectRemote();
  ASSERT_NE(remote, nullptr);
  SubscribeOptions so;
  so.table = "t";
  auto theirs = remote->Subscribe(so);
  ASSERT_TRUE(theirs.ok()) << theirs.status().ToString();
  auto ours = store_->Subscribe(so);
  ASSERT_TRUE(ours.ok());

  RowMutation m("r");
  m.SetCell("f", "a", 10, "x");
  m.SetCell("f", "b", "y");
  m.DeleteVersion("f", "a", 10);
  m.DeleteCell("f", "b");
  m.DeleteFamily("g");
  ASSERT_TRUE(store_->Apply("t", m, WriteOptions()).ok());
  ASSERT_TRUE(
      remote->Apply("t", RowMutation("s").DeleteRow(), WriteOptions()).ok());
  ASSERT_TRUE(store_->DeleteFamily("t", "g").ok());
  ASSERT_TRUE(store_->DeleteTable("t").ok());

  std::vector<ChangeEvent> want = (*ours)->Read(std::chrono::seconds(0)).events;
  ASSERT_EQ(want.size(), 8u);
  for (ChangeEvent& e : want) e.origin = 0;
  std::vector<ChangeEvent> got;
  for (int i = 0; i < 100 && got.size() < want.size(); i++) {
    ChangeBatch b = (*theirs)->Read(std::chrono::milliseconds(100));
    ASSERT_TRUE(b.status.ok()) << b.status.ToString();
    EXPECT_EQ(b.lost, 0u);
    got.insert(got.end(), b.events.begin(), b.events.end());
  }
  EXPECT_EQ(got, want);

  // A server that goes away ends the subscription with why.
  server_->Shutdown();
  ChangeBatch end;
  for (int i = 0; i < 100 && end.status.ok(); i++) {
    end = (*theirs)->Read(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(end.status.ok());
  EXPECT_NE(end.status.ToString().find("ReadChangeStream"), std::string::npos)
      << end.status.ToString();

  // Every table at once, or without one's own writes: not over the API.
  EXPECT_TRUE(remote->Subscribe(SubscribeOptions()).status().IsNotSupported());
  so.exclude_origin = 7;
  EXPECT_TRUE(remote->Subscribe(so).status().IsNotSupported());
}

// A value the events do not carry (above kMaxEventValueBytes) is read by
// the server by its timestamp; gone by then, it goes out empty, and the
// remote client must not take that for the value written (its subscriber
// reads it and finds it gone).
TEST_P(ChangeStreamTest, RemoteSubscribeDoesNotTakeAGoneValueForTheValue) {
  std::unique_ptr<Bigtable> remote = ConnectRemote();
  ASSERT_NE(remote, nullptr);
  SubscribeOptions so;
  so.table = "t";
  auto sub = remote->Subscribe(so);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  RowMutation m("r");
  m.SetCell("f", "big", std::string(kMaxEventValueBytes + 1, 'x'))
      .SetCell("f", "small", "kept")
      .DeleteRow();
  ASSERT_TRUE(store_->Apply("t", m, WriteOptions()).ok());
  std::vector<ChangeEvent> got;
  for (int i = 0; i < 100 && got.size() < 3; i++) {
    ChangeBatch b = (*sub)->Read(std::chrono::milliseconds(100));
    got.insert(got.end(), b.events.begin(), b.events.end());
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].qualifier, "big");
  EXPECT_EQ(got[0].value, std::nullopt);
  EXPECT_EQ(got[1].value, "kept");
  EXPECT_EQ(got[2].kind, ChangeKind::kDeleteRow);
}

INSTANTIATE_TEST_SUITE_P(, ChangeStreamTest,
                         ::testing::Values("engine", "reference"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tabletfs::api
