// tabletfs_apibench: one Bigtable v2 API workload against any endpoint (our
// daemon's API or Google's emulator), the client of bench/api_compare.sh.
//
//   tabletfs_apibench --endpoint HOST:PORT --workload W [--rows N]
//                     [--batch N] [--ops N] [--threads N] [--value-bytes N]
//
// Workloads (table "bench", family "f", keys "user%010d"):
//   setup  create the table (drops it first when it exists)
//   load   MutateRows of --rows rows in batches of --batch
//   scan   one ReadRows of the whole table
//   get    --ops point reads (ReadRows of one random key) per thread
//   mix    --ops operations per thread, half point reads, half MutateRow
//   ping   --ops PingAndWarm per thread: the floor of one RPC
// Prints one JSON line: {"workload":"get","ops":N,"seconds":S,"bytes":B}.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"

namespace {

namespace v2 = google::bigtable::v2;
namespace admin = google::bigtable::admin::v2;

constexpr char kInstance[] = "projects/bench/instances/bench";
constexpr char kTable[] = "projects/bench/instances/bench/tables/bench";

struct Flags {
  std::string endpoint;
  std::string workload;
  long rows = 100000;
  long batch = 1000;
  long ops = 10000;
  int threads = 1;
  long value_bytes = 100;
};

std::string Key(long i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "user%010ld", i);
  return buf;
}

[[noreturn]] void Die(const std::string& what, const grpc::Status& s) {
  std::fprintf(stderr, "tabletfs_apibench: %s: %s (%d)\n", what.c_str(),
               s.error_message().c_str(), static_cast<int>(s.error_code()));
  std::exit(1);
}

void SetCell(v2::Mutation* m, const std::string& value) {
  auto* s = m->mutable_set_cell();
  s->set_family_name("f");
  s->set_column_qualifier("q");
  s->set_timestamp_micros(-1);
  s->set_value(value);
}

void Setup(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = admin::BigtableTableAdmin::NewStub(channel);
  {
    admin::DeleteTableRequest req;
    req.set_name(kTable);
    google::protobuf::Empty e;
    grpc::ClientContext ctx;
    stub->DeleteTable(&ctx, req, &e);  // absent is fine
  }
  admin::CreateTableRequest req;
  req.set_parent(kInstance);
  req.set_table_id("bench");
  (*req.mutable_table()->mutable_column_families())["f"]
      .mutable_gc_rule()
      ->set_max_num_versions(1);
  admin::Table t;
  grpc::ClientContext ctx;
  grpc::Status s = stub->CreateTable(&ctx, req, &t);
  if (!s.ok()) Die("CreateTable", s);
}

long Load(v2::Bigtable::Stub* stub, const Flags& f) {
  const std::string value(static_cast<size_t>(f.value_bytes), 'v');
  for (long start = 0; start < f.rows; start += f.batch) {
    // A batch's request and response in one arena, as a careful bulk
    // loader builds them: the client's own allocations would otherwise
    // be a large, equal part of both servers' times.
    google::protobuf::Arena arena;
    auto* req = google::protobuf::Arena::CreateMessage<v2::MutateRowsRequest>(
        &arena);
    req->set_table_name(kTable);
    for (long i = start; i < std::min(f.rows, start + f.batch); i++) {
      auto* e = req->add_entries();
      e->set_row_key(Key(i));
      SetCell(e->add_mutations(), value);
    }
    grpc::ClientContext ctx;
    auto reader = stub->MutateRows(&ctx, *req);
    auto* resp = google::protobuf::Arena::CreateMessage<v2::MutateRowsResponse>(
        &arena);
    while (reader->Read(resp)) {
      for (const auto& e : resp->entries()) {
        if (e.status().code() != 0) {
          Die("MutateRows entry", grpc::Status(grpc::StatusCode::INTERNAL,
                                               e.status().message()));
        }
      }
    }
    grpc::Status s = reader->Finish();
    if (!s.ok()) Die("MutateRows", s);
  }
  return f.rows;
}

long Scan(v2::Bigtable::Stub* stub, long* bytes) {
  v2::ReadRowsRequest req;
  req.set_table_name(kTable);
  grpc::ClientContext ctx;
  auto reader = stub->ReadRows(&ctx, req);
  v2::ReadRowsResponse resp;
  long rows = 0;
  while (reader->Read(&resp)) {
    for (const auto& c : resp.chunks()) {
      *bytes += static_cast<long>(c.value().size());
      if (c.commit_row()) rows++;
    }
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) Die("ReadRows", s);
  return rows;
}

void Get(v2::Bigtable::Stub* stub, const std::string& key, long* bytes) {
  v2::ReadRowsRequest req;
  req.set_table_name(kTable);
  req.mutable_rows()->add_row_keys(key);
  grpc::ClientContext ctx;
  auto reader = stub->ReadRows(&ctx, req);
  v2::ReadRowsResponse resp;
  while (reader->Read(&resp)) {
    for (const auto& c : resp.chunks()) *bytes += static_cast<long>(c.value().size());
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) Die("ReadRows of one row", s);
}

void Put(v2::Bigtable::Stub* stub, const std::string& key,
         const std::string& value) {
  v2::MutateRowRequest req;
  req.set_table_name(kTable);
  req.set_row_key(key);
  SetCell(req.add_mutations(), value);
  v2::MutateRowResponse resp;
  grpc::ClientContext ctx;
  grpc::Status s = stub->MutateRow(&ctx, req, &resp);
  if (!s.ok()) Die("MutateRow", s);
}

void Ping(v2::Bigtable::Stub* stub) {
  v2::PingAndWarmRequest req;
  req.set_name(kInstance);
  v2::PingAndWarmResponse resp;
  grpc::ClientContext ctx;
  grpc::Status s = stub->PingAndWarm(&ctx, req, &resp);
  if (!s.ok()) Die("PingAndWarm", s);
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--endpoint") f.endpoint = v;
    else if (k == "--workload") f.workload = v;
    else if (k == "--rows") f.rows = std::atol(v.c_str());
    else if (k == "--batch") f.batch = std::atol(v.c_str());
    else if (k == "--ops") f.ops = std::atol(v.c_str());
    else if (k == "--threads") f.threads = std::atoi(v.c_str());
    else if (k == "--value-bytes") f.value_bytes = std::atol(v.c_str());
    else {
      std::fprintf(stderr, "tabletfs_apibench: unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (f.endpoint.empty() || f.workload.empty() || f.threads < 1 ||
      f.batch < 1 || f.rows < 1) {
    std::fprintf(stderr,
                 "usage: tabletfs_apibench --endpoint HOST:PORT --workload "
                 "setup|load|scan|get|mix|ping [--rows N] [--batch N] "
                 "[--ops N] [--threads N] [--value-bytes N]\n");
    return 2;
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  auto channel = grpc::CreateCustomChannel(
      f.endpoint, grpc::InsecureChannelCredentials(), args);
  auto stub = v2::Bigtable::NewStub(channel);
  Ping(stub.get());  // connected before the clock starts

  long ops = 0, bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  if (f.workload == "setup") {
    Setup(channel);
  } else if (f.workload == "load") {
    ops = Load(stub.get(), f);
    bytes = ops * f.value_bytes;
  } else if (f.workload == "scan") {
    ops = Scan(stub.get(), &bytes);
  } else if (f.workload == "get" || f.workload == "mix" ||
             f.workload == "ping") {
    std::vector<std::thread> threads;
    std::vector<long> thread_bytes(static_cast<size_t>(f.threads), 0);
    for (int t = 0; t < f.threads; t++) {
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(1234 + static_cast<unsigned>(t));
        std::uniform_int_distribution<long> pick(0, f.rows - 1);
        const std::string value(static_cast<size_t>(f.value_bytes), 'w');
        for (long i = 0; i < f.ops; i++) {
          if (f.workload == "ping") {
            Ping(stub.get());
          } else if (f.workload == "mix" && (i & 1)) {
            Put(stub.get(), Key(pick(rng)), value);
          } else {
            Get(stub.get(), Key(pick(rng)), &thread_bytes[static_cast<size_t>(t)]);
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    ops = f.ops * f.threads;
    for (long b : thread_bytes) bytes += b;
  } else {
    std::fprintf(stderr, "tabletfs_apibench: unknown workload %s\n",
                 f.workload.c_str());
    return 2;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("{\"workload\":\"%s\",\"ops\":%ld,\"seconds\":%.6f,\"bytes\":%ld}\n",
              f.workload.c_str(), ops, seconds, bytes);
  return 0;
}
