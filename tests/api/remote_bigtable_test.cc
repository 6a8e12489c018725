// The remote client (api/remote_bigtable.h) against the daemon's API
// served over the reference implementation on a Unix socket: every method
// of the data-model interface, the reads and scans checked against the
// served store itself as the oracle. A scripted server checks the ReadRows
// chunk protocol, resumption after UNAVAILABLE and the per-response
// deadline; Google's emulator, when installed, must give the same results
// as the daemon for one session.
#include "api/remote_bigtable.h"

#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/server.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "gtest/gtest.h"
#include "store/reference/reference_bigtable.h"

extern char** environ;

namespace tabletfs::api {
namespace {

namespace v2 = google::bigtable::v2;

using Code = Status::Code;

std::string TempDir() {
  char tmpl[] = "/tmp/tabletfs_remote_XXXXXX";
  const char* dir = mkdtemp(tmpl);
  return dir == nullptr ? std::string() : std::string(dir);
}

RemoteOptions OptionsFor(const std::string& endpoint) {
  RemoteOptions options;
  options.endpoint = endpoint;
  // Moved in, not assigned from a literal: GCC 12 reports a false
  // -Wrestrict there (GCC bug 105329, tests/util/gcc_bug_105329.h).
  options.project = std::string("p");
  options.instance = std::string("i");
  return options;
}

// prefix + n, spelled so that GCC 12 sees no false -Wrestrict (GCC bug
// 105329, tests/util/gcc_bug_105329.h) in "v" + std::to_string(n).
std::string Numbered(std::string_view prefix, int64_t n) {
  std::string s(prefix);
  s += std::to_string(n);
  return s;
}

CellCondition Cond(const std::string& family, const std::string& qualifier,
                   CellCondition::Op op = CellCondition::Op::kExists,
                   const std::string& value = "") {
  CellCondition c;
  c.family = family;
  c.qualifier = qualifier;
  c.op = op;
  c.value = value;
  return c;
}

// "row/family:qualifier@timestamp=value" (values above 32 bytes by size).
std::string Describe(std::string_view row, const Cell& c) {
  std::string v =
      c.value.size() > 32 ? Numbered("<", c.value.size()) + " bytes>" : c.value;
  return std::string(row) + "/" + c.family + ":" + c.qualifier + "@" +
         std::to_string(c.timestamp) + "=" + v;
}

std::vector<std::string> Describe(const Row& r) {
  std::vector<std::string> out;
  for (const Cell& c : r.cells) out.push_back(Describe(r.key, c));
  return out;
}

std::string Position(Scanner& s) {
  if (!s.Valid()) return "end " + s.status().ToString();
  Result<std::string_view> v = s.value();
  Cell c{std::string(s.family()), std::string(s.qualifier()), s.timestamp(),
         v.ok() ? std::string(*v) : v.status().ToString()};
  return Describe(s.row(), c);
}

// Every remaining version, then the final status.
std::vector<std::string> Drain(Scanner& s) {
  std::vector<std::string> out;
  for (; s.Valid(); s.Next()) out.push_back(Position(s));
  out.push_back(s.status().ToString());
  return out;
}

std::vector<std::string> ScanAll(Bigtable& db, const std::string& table,
                                 const ScanOptions& options) {
  auto scanner = db.NewScanner(table, options);
  if (!scanner.ok()) return {scanner.status().ToString()};
  return Drain(**scanner);
}

// ---------------------------------------------------------------------------
// Against the daemon's API over the reference implementation.
// ---------------------------------------------------------------------------

class RemoteBigtableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir();
    ASSERT_FALSE(dir_.empty());
    ReferenceOptions ro;
    ro.max_value_bytes = 8u << 20;
    store_ = NewReferenceBigtable(ro);
    ApiOptions ao;
    ao.unix_socket = dir_ + "/bigtable.sock";
    auto server = ApiServer::Start(store_.get(), ao);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    auto remote = ConnectBigtable(OptionsFor("unix:" + ao.unix_socket));
    ASSERT_TRUE(remote.ok()) << remote.status().ToString();
    remote_ = std::move(remote).value();
    ASSERT_TRUE(remote_->CreateTable("t").ok());
    ASSERT_TRUE(remote_->CreateFamily("t", "f", FamilySettings()).ok());
    ASSERT_TRUE(remote_->CreateFamily("t", "g", FamilySettings()).ok());
  }

  void TearDown() override {
    remote_.reset();
    server_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  Status Put(const std::string& row, const std::string& family,
             const std::string& qualifier, int64_t ts,
             const std::string& value) {
    RowMutation m(row);
    m.SetCell(family, qualifier, ts, value);
    return remote_->Apply("t", m, WriteOptions()).status();
  }

  // The versions of one cell in the served store, newest first.
  std::vector<std::string> Versions(const std::string& row,
                                    const std::string& family,
                                    const std::string& qualifier) {
    ReadOptions ro;
    ro.max_versions = 0;
    auto cells = store_->ReadCell("t", row, family, qualifier, ro);
    if (!cells.ok()) return {cells.status().ToString()};
    std::vector<std::string> out;
    for (const Cell& c : *cells) out.push_back(Describe(row, c));
    return out;
  }

  std::string dir_;
  std::unique_ptr<Bigtable> store_;
  std::unique_ptr<ApiServer> server_;
  std::unique_ptr<Bigtable> remote_;
};

TEST(RemoteConnectTest, RefusesMalformedEndpointsAndNames) {
  for (const char* bad : {"", "localhost", "localhost:", ":80", "host:0",
                          "host:65536", "host:8o", "::1:80", "[::1]80", "[]:80",
                          "unix:", "unix://relative", "bad host:80"}) {
    auto r = ConnectBigtable(OptionsFor(bad));
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
  }
  for (const char* good : {"localhost:8086", "127.0.0.1:1", "[::1]:8086",
                           "unix:/tmp/x.sock", "unix:///tmp/x.sock"}) {
    EXPECT_TRUE(ConnectBigtable(OptionsFor(good)).ok()) << good;
  }
  RemoteOptions o = OptionsFor("localhost:1");
  o.project = "";
  EXPECT_EQ(ConnectBigtable(o).status().code(), Code::kInvalidArgument);
  o = OptionsFor("localhost:1");
  o.instance = "a/b";
  EXPECT_EQ(ConnectBigtable(o).status().code(), Code::kInvalidArgument);
  o = OptionsFor("localhost:1");
  o.admin_endpoint = "nowhere";
  EXPECT_EQ(ConnectBigtable(o).status().code(), Code::kInvalidArgument);
  o = OptionsFor("localhost:1");
  o.rpc_timeout = std::chrono::milliseconds(0);
  EXPECT_EQ(ConnectBigtable(o).status().code(), Code::kInvalidArgument);
}

// Nobody listens: connecting succeeds (lazily), calls fail Busy after the
// retries, within a bounded time.
TEST(RemoteConnectTest, AnAbsentServerIsBusy) {
  const std::string dir = TempDir();
  auto remote = ConnectBigtable(OptionsFor("unix:" + dir + "/none.sock"));
  ASSERT_TRUE(remote.ok());
  const auto start = std::chrono::steady_clock::now();
  auto tables = (*remote)->ListTables();
  EXPECT_EQ(tables.status().code(), Code::kBusy) << tables.status().ToString();
  EXPECT_NE(tables.status().message().find("UNAVAILABLE"), std::string::npos);
  auto row = (*remote)->ReadRow("t", "r", ReadOptions());
  EXPECT_EQ(row.status().code(), Code::kBusy);
  RowMutation m("r");
  m.SetCell("f", "q", "v");
  EXPECT_EQ((*remote)->Apply("t", m, WriteOptions()).status().code(),
            Code::kBusy);
  EXPECT_EQ((*remote)
                ->Append("t", "r", "f", "q", "x", WriteOptions())
                .status()
                .code(),
            Code::kBusy);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  std::filesystem::remove_all(dir);
}

TEST_F(RemoteBigtableTest, SchemaRoundTrips) {
  ASSERT_TRUE(remote_->CreateTable("u").ok());
  EXPECT_EQ(remote_->CreateTable("u").code(), Code::kAlreadyExists);
  EXPECT_EQ(remote_->CreateTable("bad name").code(), Code::kInvalidArgument);
  EXPECT_EQ(remote_->CreateTable("").code(), Code::kInvalidArgument);
  auto tables = remote_->ListTables();
  ASSERT_TRUE(tables.ok());
  EXPECT_EQ(*tables, (std::vector<std::string>{"t", "u"}));
  auto info = remote_->GetTable("u");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(*info, (TableInfo{"u", 0}));
  EXPECT_EQ(remote_->GetTable("nope").status().code(), Code::kNotFound);
  EXPECT_EQ(remote_->GetTable("bad name").status().code(), Code::kNotFound);

  // Created out of name order; listed by name. Only GC policies travel.
  FamilySettings zeta;
  zeta.gc_policy = GcPolicy::MaxVersions(2);
  ASSERT_TRUE(remote_->CreateFamily("u", "zeta", zeta).ok());
  FamilySettings alpha;
  alpha.gc_policy = *GcPolicy::Parse(
      "maxage=1h30m or (maxversions=3 and "
      "maxage=250ms)");
  ASSERT_TRUE(remote_->CreateFamily("u", "alpha", alpha).ok());
  FamilySettings owned;
  owned.owner_uid = 123;
  owned.mode = 0600;
  owned.compression = Compression::kNone;
  ASSERT_TRUE(remote_->CreateFamily("u", "mid", owned).ok());
  EXPECT_EQ(remote_->CreateFamily("u", "mid", owned).code(),
            Code::kAlreadyExists);
  EXPECT_EQ(remote_->CreateFamily("u", "bad:name", owned).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(remote_->CreateFamily("nope", "x", owned).code(), Code::kNotFound);
  auto families = remote_->ListFamilies("u");
  ASSERT_TRUE(families.ok()) << families.status().ToString();
  ASSERT_EQ(families->size(), 3u);
  EXPECT_EQ((*families)[0].name, "alpha");
  EXPECT_EQ((*families)[0].settings.gc_policy, alpha.gc_policy);
  EXPECT_EQ((*families)[1].name, "mid");
  EXPECT_EQ((*families)[1].settings, FamilySettings());  // defaults
  EXPECT_EQ((*families)[2].name, "zeta");
  EXPECT_EQ((*families)[2].settings, zeta);
  // The served store has them in creation order, as created remotely.
  auto served = store_->ListFamilies("u");
  ASSERT_TRUE(served.ok());
  ASSERT_EQ(served->size(), 3u);
  EXPECT_EQ((*served)[0].name, "zeta");

  auto got = remote_->GetFamily("u", "alpha");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->gc_policy, alpha.gc_policy);
  EXPECT_EQ(remote_->GetFamily("u", "nope").status().code(), Code::kNotFound);
  EXPECT_EQ(remote_->GetFamily("nope", "f").status().code(), Code::kNotFound);
  EXPECT_EQ(remote_->ListFamilies("nope").status().code(), Code::kNotFound);

  // UpdateFamily changes the policy; owner, mode, compression cannot.
  zeta.gc_policy = GcPolicy::MaxVersions(5);
  ASSERT_TRUE(remote_->UpdateFamily("u", "zeta", zeta).ok());
  EXPECT_EQ(remote_->GetFamily("u", "zeta")->gc_policy,
            GcPolicy::MaxVersions(5));
  FamilySettings chmod = zeta;
  chmod.mode = 0600;
  chmod.gc_policy = GcPolicy::Never();
  Status s = remote_->UpdateFamily("u", "zeta", chmod);
  EXPECT_EQ(s.code(), Code::kNotSupported) << s.ToString();
  EXPECT_EQ(remote_->GetFamily("u", "zeta")->gc_policy,
            GcPolicy::MaxVersions(5));
  EXPECT_EQ(remote_->UpdateFamily("u", "nope", chmod).code(), Code::kNotFound);
  EXPECT_EQ(remote_->UpdateFamily("u", "nope", zeta).code(), Code::kNotFound);
  EXPECT_EQ(remote_->UpdateFamily("nope", "zeta", zeta).code(),
            Code::kNotFound);

  ASSERT_TRUE(remote_->DeleteFamily("u", "alpha").ok());
  EXPECT_EQ(remote_->DeleteFamily("u", "alpha").code(), Code::kNotFound);
  EXPECT_EQ(remote_->DeleteFamily("nope", "alpha").code(), Code::kNotFound);
  families = remote_->ListFamilies("u");
  ASSERT_TRUE(families.ok());
  ASSERT_EQ(families->size(), 2u);
  EXPECT_EQ((*families)[0].name, "mid");

  ASSERT_TRUE(remote_->DeleteTable("u").ok());
  EXPECT_EQ(remote_->DeleteTable("u").code(), Code::kNotFound);
  EXPECT_EQ(remote_->DeleteTable("bad name").code(), Code::kNotFound);
  EXPECT_EQ(*remote_->ListTables(), (std::vector<std::string>{"t"}));
}

TEST_F(RemoteBigtableTest, ApplyStampsWholeIncreasingMilliseconds) {
  const int64_t before =
      std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  std::vector<int64_t> stamps;
  for (int i = 0; i < 20; i++) {
    RowMutation m("r");
    m.SetCell("f", "q", Numbered("v", i));
    m.SetCell("g", "q", Numbered("w", i));
    auto ts = remote_->Apply("t", m, WriteOptions());
    ASSERT_TRUE(ts.ok()) << ts.status().ToString();
    EXPECT_EQ(*ts % 1000, 0);
    if (!stamps.empty()) {
      EXPECT_GT(*ts, stamps.back());
    }
    EXPECT_GE(*ts, before);
    EXPECT_LT(*ts, before + 60'000'000);
    stamps.push_back(*ts);
  }
  // Every op of a write carries the write's timestamp.
  std::vector<std::string> f = Versions("r", "f", "q");
  std::vector<std::string> g = Versions("r", "g", "q");
  ASSERT_EQ(f.size(), 20u);
  for (int i = 0; i < 20; i++) {
    EXPECT_EQ(f[19 - i],
              Numbered("r/f:q@", stamps[i]) + "=" + Numbered("v", i));
    EXPECT_EQ(g[19 - i],
              Numbered("r/g:q@", stamps[i]) + "=" + Numbered("w", i));
  }

  // Explicit timestamps are kept as given, microseconds too; Apply still
  // returns a fresh timestamp of its own.
  RowMutation m("e");
  m.SetCell("f", "q", 1234, "a").SetCell("f", "q", 0, "zero");
  auto ts = remote_->Apply("t", m, WriteOptions());
  ASSERT_TRUE(ts.ok());
  EXPECT_GT(*ts, stamps.back());
  EXPECT_EQ(Versions("e", "f", "q"),
            (std::vector<std::string>{"e/f:q@1234=a", "e/f:q@0=zero"}));

  // DeleteVersion removes exactly that version.
  RowMutation del("r");
  del.DeleteVersion("f", "q", stamps[5]);
  ASSERT_TRUE(remote_->Apply("t", del, WriteOptions()).ok());
  f = Versions("r", "f", "q");
  EXPECT_EQ(f.size(), 19u);
  EXPECT_EQ(
      std::count(f.begin(), f.end(), Numbered("r/f:q@", stamps[5]) + "=v5"), 0);
  RowMutation del0("e");
  del0.DeleteVersion("f", "q", 0);
  ASSERT_TRUE(remote_->Apply("t", del0, WriteOptions()).ok());
  EXPECT_EQ(Versions("e", "f", "q"),
            (std::vector<std::string>{"e/f:q@1234=a"}));

  // Delete a cell, a family, a row; delete then set in one write.
  RowMutation mixed("r");
  mixed.DeleteCell("f", "q").SetCell("f", "q", 7000, "again");
  ASSERT_TRUE(remote_->Apply("t", mixed, WriteOptions()).ok());
  EXPECT_EQ(Versions("r", "f", "q"),
            (std::vector<std::string>{"r/f:q@7000=again"}));
  RowMutation fam("r");
  fam.DeleteFamily("g");
  ASSERT_TRUE(remote_->Apply("t", fam, WriteOptions()).ok());
  EXPECT_TRUE(Versions("r", "g", "q").empty());
  EXPECT_EQ(Versions("r", "f", "q").size(), 1u);
  RowMutation gone("r");
  gone.DeleteRow();
  ASSERT_TRUE(remote_->Apply("t", gone, WriteOptions()).ok());
  EXPECT_TRUE(store_->ReadRow("t", "r", ReadOptions())->cells.empty());

  // Refusals change nothing.
  auto code = [&](const RowMutation& x, const std::string& table = "t") {
    return remote_->Apply(table, x, WriteOptions()).status().code();
  };
  EXPECT_EQ(code(RowMutation("x")), Code::kInvalidArgument);  // empty
  RowMutation negative("x");
  negative.SetCell("f", "q", -5, "v");
  EXPECT_EQ(code(negative), Code::kInvalidArgument);
  RowMutation unknown("x");
  unknown.SetCell("f", "q", "v").SetCell("nofamily", "q", "v");
  Status st = remote_->Apply("t", unknown, WriteOptions()).status();
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.ToString();
  RowMutation badname("x");
  badname.SetCell("bad name", "q", "v");
  EXPECT_EQ(code(badname), Code::kInvalidArgument);
  RowMutation ok("x");
  ok.SetCell("f", "q", "v");
  EXPECT_EQ(code(ok, "nope"), Code::kNotFound);
  EXPECT_EQ(code(ok, "bad name"), Code::kNotFound);
  RowMutation empty_key("");
  empty_key.SetCell("f", "q", "v");
  EXPECT_EQ(code(empty_key), Code::kInvalidArgument);
  RowMutation long_key(std::string(4097, 'k'));
  long_key.SetCell("f", "q", "v");
  EXPECT_EQ(code(long_key), Code::kInvalidArgument);
  RowMutation big("x");
  big.SetCell("f", "q", std::string(9u << 20, 'b'));
  EXPECT_EQ(code(big), Code::kInvalidArgument);
  EXPECT_TRUE(store_->ReadRow("t", "x", ReadOptions())->cells.empty());
}

TEST_F(RemoteBigtableTest, ApplyBatchAppliesEachAsApplyWould) {
  std::vector<RowMutation> batch;
  batch.emplace_back("a");
  batch.back().SetCell("f", "q", "1");
  batch.emplace_back("b");
  batch.back().SetCell("f", "q", 5000, "b");
  batch.emplace_back("a");  // after the first: same row, next request
  batch.back().DeleteCell("f", "q").SetCell("f", "q", "2");
  batch.emplace_back("c");
  batch.back().SetCell("nofamily", "q", "x");
  batch.emplace_back("d");  // empty
  batch.emplace_back("e");
  batch.back().SetCell("f", "q", -1, "negative");
  auto results = remote_->ApplyBatch("t", batch, WriteOptions());
  ASSERT_EQ(results.size(), 6u);
  ASSERT_TRUE(results[0].ok()) << results[0].status().ToString();
  ASSERT_TRUE(results[1].ok());
  ASSERT_TRUE(results[2].ok());
  EXPECT_GT(*results[1], *results[0]);
  EXPECT_GT(*results[2], *results[1]);
  for (int i : {3, 4, 5}) {
    EXPECT_EQ(results[i].status().code(), Code::kInvalidArgument) << i;
  }
  EXPECT_EQ(Versions("a", "f", "q"),
            (std::vector<std::string>{Numbered("a/f:q@", *results[2]) + "=2"}));
  EXPECT_EQ(Versions("b", "f", "q"),
            (std::vector<std::string>{"b/f:q@5000=b"}));
  EXPECT_TRUE(store_->ReadRow("t", "e", ReadOptions())->cells.empty());

  // A family the client saw, dropped behind its back: the server refuses
  // the entry, and the table still exists: InvalidArgument.
  ASSERT_TRUE(store_->CreateFamily("t", "h", FamilySettings()).ok());
  ASSERT_TRUE(remote_->GetFamily("t", "h").ok());
  RowMutation known("x");
  known.SetCell("h", "q", "v");
  ASSERT_TRUE(remote_->Apply("t", known, WriteOptions()).ok());
  ASSERT_TRUE(store_->DeleteFamily("t", "h").ok());
  std::vector<RowMutation> stale(2, RowMutation("x"));
  stale[0].SetCell("h", "q", "v");
  stale[1] = RowMutation("y");
  stale[1].SetCell("f", "q", "v");
  results = remote_->ApplyBatch("t", stale, WriteOptions());
  EXPECT_EQ(results[0].status().code(), Code::kInvalidArgument)
      << results[0].status().ToString();
  EXPECT_TRUE(results[1].ok());

  // Many rows at once; and no table at all.
  std::vector<RowMutation> many;
  for (int i = 0; i < 300; i++) {
    many.emplace_back(Numbered("row", 1000 + i));
    many.back().SetCell("g", "q", "v");
  }
  results = remote_->ApplyBatch("t", many, WriteOptions());
  for (const auto& r : results) ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ScanAll(*store_, "t", ScanOptions()).size(), 300u + 4u);
  results = remote_->ApplyBatch("nope", many, WriteOptions());
  EXPECT_EQ(results[0].status().code(), Code::kNotFound);
  EXPECT_TRUE(remote_->ApplyBatch("t", {}, WriteOptions()).empty());
}

TEST_F(RemoteBigtableTest, ConcurrentWritersGetDistinctTimestamps) {
  std::vector<std::thread> threads;
  std::vector<std::vector<int64_t>> stamps(4);
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; i++) {
        RowMutation m(Numbered("row", t));
        m.SetCell("f", "q", "v");
        auto ts = remote_->Apply("t", m, WriteOptions());
        if (ts.ok()) stamps[t].push_back(*ts);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<int64_t> all;
  for (const auto& s : stamps) all.insert(s.begin(), s.end());
  EXPECT_EQ(all.size(), 100u);
}

TEST_F(RemoteBigtableTest, AppendAndIncrement) {
  auto a = remote_->Append("t", "r", "f", "log", "ab", WriteOptions());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->value_size, 2u);
  a = remote_->Append("t", "r", "f", "log", "cd", WriteOptions());
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->value_size, 4u);
  auto cells = remote_->ReadCell("t", "r", "f", "log", ReadOptions());
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(cells->size(), 1u);
  EXPECT_EQ((*cells)[0].value, "abcd");
  EXPECT_EQ((*cells)[0].timestamp, a->timestamp);  // the server's stamp

  auto n = remote_->Increment("t", "r", "g", "n", 5, WriteOptions());
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 5);
  n = remote_->Increment("t", "r", "g", "n", -7, WriteOptions());
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, -2);
  cells = remote_->ReadCell("t", "r", "g", "n", ReadOptions());
  ASSERT_TRUE(cells.ok());
  EXPECT_EQ((*cells)[0].value,
            std::string("\xff\xff\xff\xff\xff\xff\xff\xfe", 8));
  n = remote_->Increment("t", "r", "g", "n", INT64_MAX, WriteOptions());
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, INT64_MAX - 2);

  EXPECT_EQ(remote_->Increment("t", "r", "f", "log", 1, WriteOptions())
                .status()
                .code(),
            Code::kInvalidArgument);
  EXPECT_EQ(remote_->Append("t", "r", "nofamily", "q", "x", WriteOptions())
                .status()
                .code(),
            Code::kNotFound);
  EXPECT_EQ(remote_->Increment("nope", "r", "f", "q", 1, WriteOptions())
                .status()
                .code(),
            Code::kNotFound);
  EXPECT_EQ(remote_->Append("t", "r", "bad name", "q", "x", WriteOptions())
                .status()
                .code(),
            Code::kNotFound);
  EXPECT_EQ(
      remote_->Append("t", "", "f", "q", "x", WriteOptions()).status().code(),
      Code::kInvalidArgument);
  EXPECT_EQ(remote_
                ->Append("t", "r", "f", "log", std::string(9u << 20, 'x'),
                         WriteOptions())
                .status()
                .code(),
            Code::kInvalidArgument);
}

TEST_F(RemoteBigtableTest, CheckAndMutateOnTheNewestVersion) {
  // Qualifiers and values full of regex syntax and odd bytes: the
  // predicate must match them exactly.
  const std::string q("a.b*\0\xff ?", 9);
  const std::string value("x+y(\xfe)\n$", 9);
  ASSERT_TRUE(Put("r", "f", q, 1000, "old").ok());
  ASSERT_TRUE(Put("r", "f", q, 2000, value).ok());
  ASSERT_TRUE(Put("r", "f", "axb", 1000, "decoy").ok());
  ASSERT_TRUE(Put("r", "f", "empty", 1000, "").ok());

  int round = 0;
  // Runs one check with a true and a false branch writing f:result, and
  // returns what it said and which branch wrote.
  auto check = [&](CellCondition::Op op, const std::string& qualifier,
                   const std::string& expected) -> std::string {
    round++;
    CellCondition c = Cond("f", qualifier, op, expected);
    RowMutation yes("r"), no("r");
    yes.SetCell("f", "result", 100 * round, "yes");
    no.SetCell("f", "result", 100 * round, "no");
    auto held = remote_->CheckAndMutate("t", "r", c, yes, no, WriteOptions());
    if (!held.ok()) return held.status().ToString();
    auto cells = store_->ReadCell("t", "r", "f", "result", ReadOptions());
    std::string wrote = cells->empty() ? "none" : (*cells)[0].value;
    return std::string(*held ? "held" : "failed") + ", wrote " + wrote;
  };
  using Op = CellCondition::Op;
  EXPECT_EQ(check(Op::kExists, q, ""), "held, wrote yes");
  EXPECT_EQ(check(Op::kExists, "a.b", ""), "failed, wrote no");
  EXPECT_EQ(check(Op::kExists, "a", ""), "failed, wrote no");
  EXPECT_EQ(check(Op::kNotExists, "a.b", ""), "held, wrote yes");
  EXPECT_EQ(check(Op::kNotExists, q, ""), "failed, wrote no");
  EXPECT_EQ(check(Op::kEquals, q, value), "held, wrote yes");
  EXPECT_EQ(check(Op::kEquals, q, "old"), "failed, wrote no");  // older
  EXPECT_EQ(check(Op::kEquals, q, "x+y(.)\n$"), "failed, wrote no");
  EXPECT_EQ(check(Op::kEquals, "axb", "decoy"), "held, wrote yes");
  EXPECT_EQ(check(Op::kEquals, "empty", ""), "held, wrote yes");
  EXPECT_EQ(check(Op::kEquals, "absent", ""), "failed, wrote no");

  // Only one branch given, or none: the check is still evaluated.
  RowMutation only("r");
  only.SetCell("f", "only", "x");  // a server timestamp, assigned here
  auto held = remote_->CheckAndMutate("t", "r", Cond("f", "absent"), only,
                                      RowMutation("r"), WriteOptions());
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(*held);
  EXPECT_TRUE(Versions("r", "f", "only").empty());
  held = remote_->CheckAndMutate("t", "r", Cond("f", "axb"), only,
                                 RowMutation("r"), WriteOptions());
  ASSERT_TRUE(held.ok());
  EXPECT_TRUE(*held);
  auto written = store_->ReadCell("t", "r", "f", "only", ReadOptions());
  ASSERT_EQ(written->size(), 1u);
  EXPECT_EQ((*written)[0].timestamp % 1000, 0);
  for (Op op : {Op::kExists, Op::kNotExists}) {
    held = remote_->CheckAndMutate("t", "r", Cond("f", "axb", op),
                                   RowMutation("r"), RowMutation("r"),
                                   WriteOptions());
    ASSERT_TRUE(held.ok());
    EXPECT_EQ(*held, op == Op::kExists);
  }

  // Refusals.
  RowMutation other("s");
  other.SetCell("f", "q", "v");
  auto code = [&](const std::string& table, const CellCondition& c,
                  const RowMutation& m) {
    return remote_
        ->CheckAndMutate(table, "r", c, m, RowMutation("r"), WriteOptions())
        .status()
        .code();
  };
  EXPECT_EQ(code("t", Cond("f", "axb"), other), Code::kInvalidArgument);
  EXPECT_EQ(code("t", Cond("nofamily", "axb"), only), Code::kNotFound);
  EXPECT_EQ(code("t", Cond("bad name", "axb"), only), Code::kNotFound);
  EXPECT_EQ(code("nope", Cond("f", "axb"), only), Code::kNotFound);
  RowMutation unknown("r");
  unknown.SetCell("nofamily", "q", "v");
  EXPECT_EQ(code("t", Cond("f", "axb"), unknown), Code::kInvalidArgument);
  CellCondition huge = Cond("f", "axb", Op::kEquals, std::string(30000, 'v'));
  EXPECT_EQ(code("t", huge, only), Code::kNotSupported);
}

TEST_F(RemoteBigtableTest, ReadRowAndReadCellFollowReadOptions) {
  for (int64_t ts : {1000, 2000, 3000}) {
    ASSERT_TRUE(Put("r", "f", "a", ts, Numbered("fa", ts)).ok());
  }
  ASSERT_TRUE(Put("r", "f", "b", 1000, "fb").ok());
  ASSERT_TRUE(Put("r", "g", "a", 1500, "ga").ok());
  ASSERT_TRUE(Put("r", "g", "c", 2500, "gc").ok());
  ASSERT_TRUE(Put("s", "g", "a", 1000, "other row").ok());

  std::vector<ReadOptions> cases;
  auto add = [&](auto edit) {
    ReadOptions ro;
    edit(ro);
    cases.push_back(ro);
  };
  add([](ReadOptions&) {});
  add([](ReadOptions& ro) { ro.max_versions = 0; });
  add([](ReadOptions& ro) { ro.max_versions = 2; });
  add([](ReadOptions& ro) { ro.at = 2000; });
  add([](ReadOptions& ro) {
    ro.at = 2000;
    ro.max_versions = 0;
  });
  add([](ReadOptions& ro) { ro.at = 999; });
  add([](ReadOptions& ro) { ro.at = -5; });
  add([](ReadOptions& ro) { ro.families = {"g"}; });
  add([](ReadOptions& ro) { ro.columns = {{"f", "a"}}; });
  add([](ReadOptions& ro) {
    ro.families = {"f"};
    ro.columns = {{"f", "a"}, {"g", "c"}, {"g", "a"}};
    ro.max_versions = 0;
  });
  add([](ReadOptions& ro) { ro.families = {"bad name!", "nofamily"}; });
  add([](ReadOptions& ro) { ro.columns = {{"g", "zz"}}; });
  for (size_t i = 0; i < cases.size(); i++) {
    auto local = store_->ReadRow("t", "r", cases[i]);
    auto remote = remote_->ReadRow("t", "r", cases[i]);
    ASSERT_TRUE(local.ok());
    ASSERT_TRUE(remote.ok()) << remote.status().ToString();
    EXPECT_EQ(remote->key, "r");
    EXPECT_EQ(Describe(*remote), Describe(*local)) << "case " << i;
    auto local_cell = store_->ReadCell("t", "r", "f", "a", cases[i]);
    auto remote_cell = remote_->ReadCell("t", "r", "f", "a", cases[i]);
    ASSERT_TRUE(remote_cell.ok()) << remote_cell.status().ToString();
    EXPECT_EQ(*remote_cell, *local_cell) << "case " << i;
  }
  EXPECT_EQ(Describe(*remote_->ReadRow("t", "r", cases[1])).size(), 6u);

  auto absent = remote_->ReadRow("t", "zz", ReadOptions());
  ASSERT_TRUE(absent.ok());
  EXPECT_EQ(absent->key, "zz");
  EXPECT_TRUE(absent->cells.empty());
  EXPECT_TRUE(remote_->ReadCell("t", "zz", "f", "a", ReadOptions())->empty());

  EXPECT_EQ(remote_->ReadRow("nope", "r", ReadOptions()).status().code(),
            Code::kNotFound);
  EXPECT_EQ(remote_->ReadRow("t", "", ReadOptions()).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(remote_->ReadCell("t", "r", "nofamily", "a", ReadOptions())
                .status()
                .code(),
            Code::kNotFound);
  EXPECT_EQ(
      remote_->ReadCell("nope", "r", "f", "a", ReadOptions()).status().code(),
      Code::kNotFound);
  EXPECT_EQ(remote_->ReadCell("t", "", "f", "a", ReadOptions()).status().code(),
            Code::kInvalidArgument);

  // A family made by someone else after the client cached the schema.
  ASSERT_TRUE(store_->CreateFamily("t", "late", FamilySettings()).ok());
  EXPECT_TRUE(remote_->ReadCell("t", "r", "late", "a", ReadOptions()).ok());

  // Snapshots: this client's token is accepted, another store's is not.
  std::shared_ptr<const Snapshot> mine = remote_->GetSnapshot();
  ReadOptions ro;
  ro.snapshot = mine.get();
  EXPECT_TRUE(remote_->ReadRow("t", "r", ro).ok());
  EXPECT_TRUE(remote_->ReadCell("t", "r", "f", "a", ro).ok());
  std::shared_ptr<const Snapshot> theirs = store_->GetSnapshot();
  ro.snapshot = theirs.get();
  EXPECT_EQ(remote_->ReadRow("t", "r", ro).status().code(),
            Code::kInvalidArgument);
  ScanOptions so;
  so.read.snapshot = theirs.get();
  EXPECT_EQ(remote_->NewScanner("t", so).status().code(),
            Code::kInvalidArgument);
}

// Random walks of Seek/Next/NextColumn/NextFamily/NextRow over both
// scanners, compared after every step.
TEST_F(RemoteBigtableTest, ScannerWalksAsTheServedStoresDoes) {
  uint32_t seed = std::random_device{}();
  if (const char* s = std::getenv("TABLETFS_SEED")) seed = std::stoul(s);
  std::printf("RemoteBigtableTest seed %u (rerun with TABLETFS_SEED=%u)\n",
              seed, seed);
  SCOPED_TRACE(Numbered("seed ", seed));
  std::mt19937 rng(seed);
  const std::vector<std::string> families = {"f", "g"};
  const std::vector<std::string> qualifiers = {"", "a", std::string("b\xff"),
                                               "c"};
  std::vector<std::string> rows;
  for (int i = 0; i < 30; i++) {
    char key[16];
    std::snprintf(key, sizeof(key), "row%02d", i);
    rows.push_back(key);
    RowMutation m(key);
    for (const std::string& f : families) {
      for (const std::string& q : qualifiers) {
        if (rng() % 3 == 0) continue;
        for (int v = 0, n = 1 + rng() % 3; v < n; v++) {
          m.SetCell(f, q, 1000 * (1 + rng() % 5), Numbered("v", rng() % 100));
        }
      }
    }
    if (m.empty()) m.SetCell("f", "a", 1000, "only");
    ASSERT_TRUE(remote_->Apply("t", m, WriteOptions()).ok());
  }
  std::vector<ScanOptions> cases(7);
  cases[1].start_row = "row05";
  cases[1].end_row = "row17";
  cases[2].prefix = "row1";
  cases[3].read.families = {"g"};
  cases[4].read.max_versions = 0;
  cases[5].read.at = 2500;
  cases[5].read.max_versions = 2;
  cases[6].read.columns = {{"f", "a"}, {"g", "c"}};
  cases[6].start_row = "row10";
  for (size_t c = 0; c < cases.size(); c++) {
    SCOPED_TRACE(Numbered("case ", c));
    const ScanOptions& so = cases[c];
    EXPECT_EQ(ScanAll(*remote_, "t", so), ScanAll(*store_, "t", so));
    auto local = store_->NewScanner("t", so);
    auto remote = remote_->NewScanner("t", so);
    ASSERT_TRUE(local.ok());
    ASSERT_TRUE(remote.ok()) << remote.status().ToString();
    Scanner& l = **local;
    Scanner& r = **remote;
    for (int step = 0; step < 300; step++) {
      const int op = rng() % 8;
      std::string what;
      if (op < 3 && !l.Valid()) {
        l.SeekToFirst();
        r.SeekToFirst();
        what = "SeekToFirst";
      } else if (op == 0) {
        l.Next();
        r.Next();
        what = "Next";
      } else if (op == 1) {
        l.NextColumn();
        r.NextColumn();
        what = "NextColumn";
      } else if (op == 2) {
        if (rng() % 2) {
          l.NextFamily();
          r.NextFamily();
          what = "NextFamily";
        } else {
          l.NextRow();
          r.NextRow();
          what = "NextRow";
        }
      } else if (op == 3) {
        l.SeekToFirst();
        r.SeekToFirst();
        what = "SeekToFirst";
      } else {
        // A row (sometimes between rows), and sometimes a family the row
        // holds under these options with a qualifier: the remote positions
        // at a row's start for a family the row lacks.
        std::string row = rows[rng() % rows.size()];
        if (rng() % 4 == 0) row += "x";
        std::string family, qualifier;
        if (op >= 6) {
          family = families[rng() % 2];
          qualifier = qualifiers[rng() % qualifiers.size()];
          auto held = store_->ReadRow("t", row, so.read);
          bool holds = false;
          for (const Cell& cell : held->cells) holds |= cell.family == family;
          if (!holds) family.clear();
        }
        l.Seek(row, family, qualifier);
        r.Seek(row, family, qualifier);
        what = "Seek(" + row + ", " + family + ", " + qualifier + ")";
      }
      ASSERT_EQ(Position(r), Position(l)) << "step " << step << ": " << what;
    }
  }
}

TEST_F(RemoteBigtableTest, ScannerRangesAndPrefixes) {
  for (const char* row :
       {"a", "b", "ba", "bb", "c", "\xff", "\xff\xff", "\xff\xff\x01"}) {
    ASSERT_TRUE(Put(row, "f", "q", 1000, row).ok());
  }
  auto keys = [&](const ScanOptions& so) {
    std::vector<std::string> out;
    auto s = remote_->NewScanner("t", so);
    if (!s.ok()) return std::vector<std::string>{s.status().ToString()};
    for ((*s)->SeekToFirst(); (*s)->Valid(); (*s)->NextRow()) {
      out.emplace_back((*s)->row());
    }
    return out;
  };
  ScanOptions so;
  so.start_row = "b";
  so.end_row = "c";
  EXPECT_EQ(keys(so), (std::vector<std::string>{"b", "ba", "bb"}));
  so = ScanOptions();
  so.prefix = "b";
  EXPECT_EQ(keys(so), (std::vector<std::string>{"b", "ba", "bb"}));
  so.start_row = "ba";
  EXPECT_EQ(keys(so), (std::vector<std::string>{"ba", "bb"}));
  so.end_row = "bb";
  EXPECT_EQ(keys(so), (std::vector<std::string>{"ba"}));
  so = ScanOptions();
  so.prefix = "\xff\xff";
  EXPECT_EQ(keys(so), (std::vector<std::string>{"\xff\xff", "\xff\xff\x01"}));
  so = ScanOptions();
  so.prefix = "\xff";
  so.end_row = "\xff\xff";
  EXPECT_EQ(keys(so), (std::vector<std::string>{"\xff"}));
  // Empty ranges: no rows, but the table must exist.
  so = ScanOptions();
  so.start_row = "c";
  so.end_row = "b";
  EXPECT_TRUE(keys(so).empty());
  so.prefix = "zz";
  EXPECT_TRUE(keys(so).empty());
  EXPECT_EQ(remote_->NewScanner("nope", so).status().code(), Code::kNotFound);
  EXPECT_EQ(remote_->NewScanner("nope", ScanOptions()).status().code(),
            Code::kNotFound);
  // Seek outside the range clips to it.
  so = ScanOptions();
  so.start_row = "b";
  so.end_row = "c";
  auto s = remote_->NewScanner("t", so);
  ASSERT_TRUE(s.ok());
  (*s)->Seek("a");
  ASSERT_TRUE((*s)->Valid());
  EXPECT_EQ((*s)->row(), "b");
  (*s)->Seek("bz");
  EXPECT_FALSE((*s)->Valid());
  EXPECT_TRUE((*s)->status().ok());
  (*s)->Seek("ba", "f", "q");
  ASSERT_TRUE((*s)->Valid());
  EXPECT_EQ((*s)->row(), "ba");
  (*s)->Seek("ba", "f", "r");  // past the row's cells: the next row
  ASSERT_TRUE((*s)->Valid());
  EXPECT_EQ((*s)->row(), "bb");
  (*s)->Seek("c");
  EXPECT_FALSE((*s)->Valid());
}

TEST_F(RemoteBigtableTest, LargeValuesAreReassembledFromChunks) {
  std::string big(5u << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 997) big[i] = static_cast<char>(i);
  ASSERT_TRUE(Put("a", "f", "q", 1000, "small").ok());
  ASSERT_TRUE(Put("big", "f", "q", 1000, big).ok());
  ASSERT_TRUE(Put("big", "g", "q", 1000, "after").ok());
  ASSERT_TRUE(Put("c", "f", "q", 1000, "small").ok());
  auto cells = remote_->ReadCell("t", "big", "f", "q", ReadOptions());
  ASSERT_TRUE(cells.ok()) << cells.status().ToString();
  ASSERT_EQ(cells->size(), 1u);
  EXPECT_TRUE((*cells)[0].value == big);
  auto s = remote_->NewScanner("t", ScanOptions());
  ASSERT_TRUE(s.ok());
  Scanner& scan = **s;
  ASSERT_TRUE(scan.Valid());
  EXPECT_EQ(scan.row(), "a");
  scan.Next();
  ASSERT_TRUE(scan.Valid());
  EXPECT_EQ(scan.row(), "big");
  EXPECT_EQ(scan.value_size(), big.size());
  EXPECT_TRUE(*scan.value() == big);
  scan.Next();
  ASSERT_TRUE(scan.Valid());
  EXPECT_EQ(scan.value_size(), 5u);
  scan.Next();
  ASSERT_TRUE(scan.Valid());
  EXPECT_EQ(scan.row(), "c");
  scan.Next();
  EXPECT_FALSE(scan.Valid());
  EXPECT_TRUE(scan.status().ok());
}

TEST_F(RemoteBigtableTest, ListTabletsCoversTheTable) {
  ASSERT_TRUE(Put("r", "f", "q", 1000, std::string(1000, 'v')).ok());
  auto tablets = remote_->ListTablets("t");
  ASSERT_TRUE(tablets.ok()) << tablets.status().ToString();
  ASSERT_EQ(tablets->size(), 1u);
  EXPECT_EQ((*tablets)[0].start_row, "");
  EXPECT_EQ((*tablets)[0].end_row, "");
  EXPECT_GE((*tablets)[0].bytes, 1000u);
  EXPECT_EQ((*tablets)[0].files, 0u);
  EXPECT_EQ(remote_->ListTablets("nope").status().code(), Code::kNotFound);
}

TEST_F(RemoteBigtableTest, UnsupportedCallsAndUnknownTables) {
  EXPECT_EQ(remote_
                ->RewriteRow(
                    "t", "r", ReadOptions(),
                    [](const Row&) -> Result<RowMutation> {
                      return RowMutation("r");
                    },
                    WriteOptions())
                .status()
                .code(),
            Code::kNotSupported);
  EXPECT_EQ(remote_->Subscribe(SubscribeOptions()).status().code(),
            Code::kNotSupported);
  EXPECT_TRUE(remote_->Sync().ok());
  EXPECT_TRUE(remote_->StickyError().ok());
  RowMutation m("r");
  m.SetCell("f", "q", "v");
  for (const std::string& table : {std::string("nope"), std::string("b d")}) {
    SCOPED_TRACE(table);
    EXPECT_EQ(remote_->GetTable(table).status().code(), Code::kNotFound);
    EXPECT_EQ(remote_->ListFamilies(table).status().code(), Code::kNotFound);
    EXPECT_EQ(remote_->GetFamily(table, "f").status().code(), Code::kNotFound);
    EXPECT_EQ(remote_->DeleteFamily(table, "f").code(), Code::kNotFound);
    EXPECT_EQ(remote_->Apply(table, m, WriteOptions()).status().code(),
              Code::kNotFound);
    EXPECT_EQ(remote_->ReadRow(table, "r", ReadOptions()).status().code(),
              Code::kNotFound);
    EXPECT_EQ(remote_->ListTablets(table).status().code(), Code::kNotFound);
  }
  // A server going away: Busy, after the retries.
  server_->Shutdown();
  EXPECT_EQ(remote_->ReadRow("t", "r", ReadOptions()).status().code(),
            Code::kBusy);
  EXPECT_EQ(remote_->Apply("t", m, WriteOptions()).status().code(),
            Code::kBusy);
}

// The value of "KEY N" in StatsText (0 when absent).
uint64_t StatOf(Bigtable& db, const std::string& key) {
  const std::string text = db.StatsText();
  const std::string needle = "\n" + key + " ";
  const size_t at = text.find(needle);
  if (at == std::string::npos) return 0;
  return std::stoull(text.substr(at + needle.size()));
}

TEST_F(RemoteBigtableTest, StatsCountEachRpcWithBytesLatencyAndErrors) {
  EXPECT_EQ(remote_->StatsText().rfind("store remote\nendpoint unix:", 0), 0u)
      << remote_->StatsText();
  const uint64_t rpcs = StatOf(*remote_, "rpcs");
  ASSERT_TRUE(Put("r", "f", "q", 1000, "value").ok());
  ASSERT_TRUE(remote_->ReadRow("t", "r", ReadOptions()).ok());
  EXPECT_EQ(remote_->GetTable("nope").status().code(), Code::kNotFound);
  const std::string text = remote_->StatsText();
  // GetTable (Apply checks the families, changed since the client last
  // asked), MutateRow, ReadRows, GetTable.
  EXPECT_EQ(StatOf(*remote_, "rpcs"), rpcs + 4) << text;
  EXPECT_EQ(StatOf(*remote_, "GetTable_rpcs") +
                StatOf(*remote_, "MutateRow_rpcs") +
                StatOf(*remote_, "ReadRows_rpcs") +
                StatOf(*remote_, "CreateTable_rpcs") +
                StatOf(*remote_, "ModifyColumnFamilies_rpcs"),
            StatOf(*remote_, "rpcs"))
      << text;
  EXPECT_EQ(StatOf(*remote_, "MutateRow_rpcs"), 1u) << text;
  EXPECT_GT(StatOf(*remote_, "MutateRow_bytes_sent"), 5u) << text;
  EXPECT_GT(StatOf(*remote_, "ReadRows_bytes_received"), 5u) << text;
  EXPECT_GT(StatOf(*remote_, "ReadRows_latency_max_us"), 0u) << text;
  EXPECT_GE(StatOf(*remote_, "ReadRows_latency_p99_us"),
            StatOf(*remote_, "ReadRows_latency_p50_us"))
      << text;
  EXPECT_EQ(StatOf(*remote_, "GetTable_errors_NOT_FOUND"), 1u) << text;
  EXPECT_EQ(StatOf(*remote_, "errors_NOT_FOUND"), 1u) << text;
  EXPECT_EQ(StatOf(*remote_, "rpc_errors"), 1u) << text;
  EXPECT_EQ(StatOf(*remote_, "cache_hits"), 0u) << "no cache by default";
}

// RemoteOptions::before_wait: called on the calling thread before every RPC
// and every wait for a scan's response, and not for an answer from the
// read cache (nothing to wait for).
TEST_F(RemoteBigtableTest,
       BeforeWaitRunsOnTheCallerBeforeEachWaitForTheServer) {
  std::atomic<int> calls{0};
  std::atomic<int> elsewhere{0};
  const std::thread::id caller = std::this_thread::get_id();
  RemoteOptions options = OptionsFor("unix:" + dir_ + "/bigtable.sock");
  options.read_cache_ttl = std::chrono::milliseconds(60000);
  options.before_wait = [&] {
    calls++;
    if (std::this_thread::get_id() != caller) elsewhere++;
  };
  auto remote = ConnectBigtable(options);
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  Bigtable& db = **remote;

  const uint64_t rpcs = StatOf(db, "rpcs");
  RowMutation m("r");
  m.SetCell("f", "q", 1000, "value");
  ASSERT_TRUE(db.Apply("t", m, WriteOptions()).ok());
  const int after_apply = calls.load();
  EXPECT_GE(after_apply, static_cast<int>(StatOf(db, "rpcs") - rpcs));
  EXPECT_GT(after_apply, 0);

  // A read from the server: the stream's start, responses and end.
  ASSERT_TRUE(db.ReadCell("t", "r", "f", "q", ReadOptions()).ok());
  const int after_read = calls.load();
  EXPECT_GE(after_read, after_apply + 2);
  // The same read again comes from the cache: no wait.
  ASSERT_TRUE(db.ReadCell("t", "r", "f", "q", ReadOptions()).ok());
  EXPECT_EQ(calls.load(), after_read);

  EXPECT_EQ(ScanAll(db, "t", ScanOptions()).size(), 2u);  // a cell, OK
  EXPECT_GE(calls.load(), after_read + 2);
  EXPECT_EQ(elsewhere.load(), 0);
}

// RemoteOptions::read_cache_ttl: reads of the newest versions answered
// again within the TTL, own writes read back at once, others' once it has
// passed; reads of the past or of every version always ask.
TEST_F(RemoteBigtableTest, ReadCacheKeepsNewestVersionsForItsTtl) {
  RemoteOptions o = OptionsFor("unix:" + dir_ + "/bigtable.sock");
  o.read_cache_ttl = std::chrono::milliseconds(1000);
  o.schema_cache_ttl = std::chrono::milliseconds(1000);
  auto cached = ConnectBigtable(o);
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  Bigtable& c = **cached;
  ASSERT_TRUE(Put("r", "f", "q", 1000, "one").ok());
  ASSERT_TRUE(Put("s", "f", "q", 1000, "s1").ok());
  auto newest = [&](const std::string& row) -> std::string {
    auto cells = c.ReadCell("t", row, "f", "q", ReadOptions());
    if (!cells.ok()) return cells.status().ToString();
    return cells->empty() ? "none" : (*cells)[0].value;
  };
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(newest("r"), "one");
  EXPECT_EQ(newest("n"), "none");
  ASSERT_TRUE(c.ListFamilies("t").ok());
  // A scan of newest versions with values fills the cache too.
  ScanOptions so;
  so.start_row = "s";
  EXPECT_EQ(ScanAll(c, "t", so).size(), 2u);
  const uint64_t rpcs = StatOf(c, "rpcs");
  // Written by another client: the cached answers stand within the TTL.
  ASSERT_TRUE(Put("r", "f", "q", 2000, "two").ok());
  ASSERT_TRUE(Put("n", "f", "q", 2000, "new").ok());
  ASSERT_TRUE(Put("s", "f", "q", 2000, "s2").ok());
  ASSERT_TRUE(remote_->CreateFamily("t", "h", FamilySettings()).ok());
  if (std::chrono::steady_clock::now() - start <
      std::chrono::milliseconds(900)) {
    EXPECT_EQ(newest("r"), "one");
    EXPECT_EQ(newest("n"), "none");
    EXPECT_EQ(newest("s"), "s1");
    EXPECT_EQ(c.ListFamilies("t")->size(), 2u);
    EXPECT_EQ(StatOf(c, "rpcs"), rpcs) << c.StatsText();
    EXPECT_GE(StatOf(c, "cache_hits"), 4u) << c.StatsText();
  }
  // Reads of versions and of the past ask the server.
  ReadOptions all;
  all.max_versions = 0;
  auto versions = c.ReadCell("t", "r", "f", "q", all);
  ASSERT_TRUE(versions.ok());
  EXPECT_EQ(versions->size(), 2u);
  ReadOptions at;
  at.at = 2000;
  EXPECT_EQ(c.ReadCell("t", "s", "f", "q", at)->at(0).value, "s2");
  // Its own write of a row: read back at once (the row's entries went).
  RowMutation m("r");
  m.SetCell("f", "q", 3000, "three");
  ASSERT_TRUE(c.Apply("t", m, WriteOptions()).ok());
  EXPECT_EQ(newest("r"), "three");
  // Its own schema change: the table's families are asked again.
  ASSERT_TRUE(c.CreateFamily("t", "k", FamilySettings()).ok());
  EXPECT_EQ(c.ListFamilies("t")->size(), 4u);
  // Past the TTL every answer is the server's.
  std::this_thread::sleep_for(std::chrono::milliseconds(1050));
  EXPECT_EQ(newest("n"), "new");
  EXPECT_EQ(newest("s"), "s2");
}

// A scan without values from a table's start leaves its stream parked for
// the read cache's TTL: the next such scan of the same rows takes it over
// (a mount's `ls TABLE`: the table's getattr reads its first rows, the
// listing then all of them), reading the rows already fetched from memory
// and the rest from the same stream: one ReadRows for both, the same rows
// as a fresh scan. Not after a write through the client, for other read
// options, for a scan that moved elsewhere, or past the TTL.
TEST_F(RemoteBigtableTest, ScansFromTheStartTakeOverAParkedStream) {
  constexpr int kRows = 700;
  for (int i = 0; i < kRows; i++) {
    RowMutation m(Numbered("row", i));
    m.SetCell("f", "a", 1000 + i, "value a");
    m.SetCell("g", "b", 2000 + i, "value b");
    ASSERT_TRUE(store_->Apply("t", m, WriteOptions()).ok());
  }
  RemoteOptions o = OptionsFor("unix:" + dir_ + "/bigtable.sock");
  o.read_cache_ttl = std::chrono::milliseconds(60000);
  auto cached = ConnectBigtable(o);
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  Bigtable& c = **cached;
  ScanOptions so;
  so.read.max_versions = 1;
  so.content = ScanContent::kNoValues;
  auto names = [](Scanner& s, int rows) {
    std::vector<std::string> out;
    for (int n = 0; s.Valid() && n < rows; n++, s.NextRow()) {
      out.push_back(std::string(s.row()) + "/" + std::string(s.family()) +
                    ":" + std::to_string(s.timestamp()));
    }
    return out;
  };
  auto expected = [&] {
    auto s = store_->NewScanner("t", so);
    return s.ok() ? names(**s, 1 << 30) : std::vector<std::string>{};
  };
  // ReadRows counted as each ends (a parked stream has not).
  auto reads = [&] { return StatOf(c, "ReadRows_rpcs"); };
  {
    auto s = c.NewScanner("t", so);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(names(**s, 100).size(), 100u);  // then parked
  }
  EXPECT_EQ(reads(), 0u);
  for (int pass = 0; pass < 2; pass++) {
    // Taken over mid-stream, then (ended) from memory alone.
    auto s = c.NewScanner("t", so);
    ASSERT_TRUE(s.ok());
    (*s)->SeekToFirst();
    EXPECT_EQ(names(**s, 1 << 30), expected()) << "pass " << pass;
    EXPECT_TRUE((*s)->status().ok());
  }
  EXPECT_EQ(reads(), 1u) << c.StatsText();
  EXPECT_GE(StatOf(c, "cache_hits"), 2u);
  // Other read options: a stream of their own.
  ScanOptions rows = so;
  rows.content = ScanContent::kRows;
  EXPECT_EQ(ScanAll(c, "t", rows).size(), kRows + 1u);
  EXPECT_EQ(reads(), 2u);
  // A scan that takes over and moves elsewhere reads anew and leaves
  // nothing parked.
  {
    auto s = c.NewScanner("t", so);
    ASSERT_TRUE(s.ok());
    (*s)->Seek(Numbered("row", 600));
    EXPECT_EQ((*s)->row(), Numbered("row", 600));
  }
  EXPECT_EQ(reads(), 3u);
  EXPECT_EQ(ScanAll(c, "t", so).size(), 2u * kRows + 1);
  EXPECT_EQ(reads(), 4u);
  // A write through this client: read anew, and seen.
  RowMutation m(Numbered("row", 0));
  m.SetCell("f", "a", 9000, "newer");
  ASSERT_TRUE(c.Apply("t", m, WriteOptions()).ok());
  {
    auto s = c.NewScanner("t", so);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(names(**s, 1 << 30), expected());
  }
  EXPECT_EQ(reads(), 5u);
  // Past the TTL: the parked stream is cancelled, a new one opens.
  o.read_cache_ttl = std::chrono::milliseconds(50);
  auto brief = ConnectBigtable(o);
  ASSERT_TRUE(brief.ok());
  {
    auto s = (*brief)->NewScanner("t", so);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(names(**s, 10).size(), 10u);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_EQ(StatOf(**brief, "ReadRows_cancelled"), 1u)
      << (*brief)->StatsText();
  EXPECT_EQ(ScanAll(**brief, "t", so).size(), 2u * kRows + 1);
  EXPECT_EQ(StatOf(**brief, "ReadRows_rpcs"), 2u);
}

// A read of one cell brings the row's small cells (values up to 1000
// bytes) into the read cache, and a scan of one row is kept whole: what
// the OPENs of a directory's cells and the listings of a row and its
// families ask next costs no RPC.
TEST_F(RemoteBigtableTest, ReadCacheAnswersARowFromOneRead) {
  RemoteOptions o = OptionsFor("unix:" + dir_ + "/bigtable.sock");
  o.read_cache_ttl = std::chrono::milliseconds(60000);
  o.schema_cache_ttl = std::chrono::milliseconds(60000);
  auto cached = ConnectBigtable(o);
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  Bigtable& c = **cached;
  ASSERT_TRUE(Put("r", "f", "a", 1000, "small a").ok());
  ASSERT_TRUE(Put("r", "f", "b", 1000, "small b").ok());
  ASSERT_TRUE(Put("r", "g", "c", 1000, std::string(1001, 'c')).ok());
  auto newest = [&](const std::string& family, const std::string& q) {
    auto cells = c.ReadCell("t", "r", family, q, ReadOptions());
    return cells.ok() && !cells->empty() ? (*cells)[0].value : "?";
  };
  EXPECT_EQ(newest("f", "a"), "small a");
  const uint64_t rpcs = StatOf(c, "rpcs");
  EXPECT_EQ(newest("f", "b"), "small b");  // came with a
  EXPECT_EQ(StatOf(c, "rpcs"), rpcs);
  EXPECT_EQ(newest("g", "c"), std::string(1001, 'c'));  // too big: read now
  EXPECT_EQ(StatOf(c, "rpcs"), rpcs + 1);

  auto walk = [&](ScanContent content, std::vector<std::string> families) {
    ScanOptions so;
    so.start_row = "r";
    so.end_row = std::string("r\0", 2);
    so.content = content;
    so.read.families = std::move(families);
    auto s = c.NewScanner("t", so);
    std::string out;
    if (!s.ok()) return s.status().ToString();
    for (; (*s)->Valid(); (*s)->Next()) {
      out += std::string((*s)->family()) + ":" +
             std::string((*s)->qualifier()) + "=" +
             std::to_string((*s)->value_size()) + " ";
    }
    return out;
  };
  const uint64_t before = StatOf(c, "rpcs");
  EXPECT_EQ(walk(ScanContent::kNoValues, {}), "f:a=0 f:b=0 g:c=0 ");
  EXPECT_EQ(StatOf(c, "rpcs"), before + 1);
  // Less than that scan read: no RPC.
  EXPECT_EQ(walk(ScanContent::kNoValues, {"g"}), "g:c=0 ");
  EXPECT_EQ(walk(ScanContent::kRows, {}).substr(0, 4), "f:a=");
  EXPECT_EQ(StatOf(c, "rpcs"), before + 1);
  // Values it did not read: one RPC, which then answers the rest.
  EXPECT_EQ(walk(ScanContent::kCells, {"f"}), "f:a=7 f:b=7 ");
  EXPECT_EQ(walk(ScanContent::kNoValues, {"f"}), "f:a=0 f:b=0 ");
  EXPECT_EQ(StatOf(c, "rpcs"), before + 2);
  // Its own write of the row: asked again.
  ASSERT_TRUE(c.Apply(
                   "t",
                   [] {
                     RowMutation m("r");
                     m.SetCell("f", "d", 2000, "d");
                     return m;
                   }(),
                   WriteOptions())
                  .ok());
  EXPECT_EQ(walk(ScanContent::kNoValues, {"f"}), "f:a=0 f:b=0 f:d=0 ");
  // A row this client is writing is read cell by cell: creating or
  // removing a directory's files one by one does not fetch the rest of
  // the row each time (900 bytes of f:b here).
  ASSERT_TRUE(Put("r", "f", "b", 3000, std::string(900, 'b')).ok());
  const uint64_t received = StatOf(c, "ReadRows_bytes_received");
  EXPECT_EQ(newest("f", "a"), "small a");
  EXPECT_LT(StatOf(c, "ReadRows_bytes_received") - received, 900u);
}

// ScanOptions::content: without values the scan walks the same cells, with
// empty values; kRows gives every row (one cell each at least).
TEST_F(RemoteBigtableTest, ScansSendOnlyTheContentAsked) {
  for (int i = 0; i < 5; i++) {
    ASSERT_TRUE(Put(Numbered("r", i), "f", "a", 1000, "va").ok());
    ASSERT_TRUE(Put(Numbered("r", i), "g", "b", 1000 + i, "vb").ok());
  }
  auto walk = [&](ScanContent content) {
    ScanOptions so;
    so.content = content;
    auto s = remote_->NewScanner("t", so);
    EXPECT_TRUE(s.ok());
    std::vector<std::string> out;
    for (; (*s)->Valid(); (*s)->Next()) {
      out.push_back(std::string((*s)->row()) + "/" +
                    std::string((*s)->family()) + ":" +
                    std::string((*s)->qualifier()) + "@" +
                    std::to_string((*s)->timestamp()));
      if (content != ScanContent::kCells) {
        EXPECT_EQ((*s)->value_size(), 0u);
      }
    }
    EXPECT_TRUE((*s)->status().ok());
    return out;
  };
  const uint64_t before = StatOf(*remote_, "ReadRows_bytes_received");
  std::vector<std::string> cells = walk(ScanContent::kCells);
  const uint64_t with_values =
      StatOf(*remote_, "ReadRows_bytes_received") - before;
  EXPECT_EQ(cells.size(), 10u);
  EXPECT_EQ(walk(ScanContent::kNoValues), cells);
  const uint64_t without =
      StatOf(*remote_, "ReadRows_bytes_received") - before - with_values;
  EXPECT_LT(without, with_values);
  std::vector<std::string> rows = walk(ScanContent::kRows);
  ASSERT_EQ(rows.size(), 5u);
  for (int i = 0; i < 5; i++) {
    EXPECT_EQ(rows[i].substr(0, 3), Numbered("r", i) + "/");
  }
}

// ---------------------------------------------------------------------------
// A scripted server: ReadRows and SampleRowKeys answer what the test says.
// ---------------------------------------------------------------------------

struct Script {
  std::vector<v2::ReadRowsResponse> responses;
  grpc::Status status;
  bool hang = false;  // after the responses, wait to be cancelled
};

class ScriptedService final : public v2::Bigtable::Service {
 public:
  // Called per ReadRows call with the request and how many came before
  // (set while no call runs).
  std::function<Script(const v2::ReadRowsRequest&, int)> read_rows;
  std::vector<v2::SampleRowKeysResponse> samples;

  grpc::Status ReadRows(
      grpc::ServerContext* ctx, const v2::ReadRowsRequest* request,
      grpc::ServerWriter<v2::ReadRowsResponse>* writer) override {
    int call;
    {
      std::lock_guard<std::mutex> l(mu_);
      call = static_cast<int>(reads_.size());
      reads_.push_back(*request);
    }
    Script script = read_rows(*request, call);
    for (const auto& r : script.responses) {
      if (!writer->Write(r)) return grpc::Status::CANCELLED;
    }
    // Polls, as a server stuck on something else would not even do.
    while (script.hang && !ctx->IsCancelled()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return script.status;
  }

  grpc::Status SampleRowKeys(
      grpc::ServerContext*, const v2::SampleRowKeysRequest*,
      grpc::ServerWriter<v2::SampleRowKeysResponse>* writer) override {
    for (const auto& s : samples) writer->Write(s);
    return grpc::Status::OK;
  }

  // As Cloud Bigtable: timestamps and ranges in whole milliseconds only.
  grpc::Status MutateRow(grpc::ServerContext*,
                         const v2::MutateRowRequest* request,
                         v2::MutateRowResponse*) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      mutations_.push_back(*request);
    }
    for (const v2::Mutation& m : request->mutations()) {
      const auto& range = m.delete_from_column().time_range();
      if (m.set_cell().timestamp_micros() % 1000 != 0 ||
          range.start_timestamp_micros() % 1000 != 0 ||
          range.end_timestamp_micros() % 1000 != 0) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "Timestamp granularity mismatch");
      }
    }
    return grpc::Status::OK;
  }

  // As MutateRow, entry by entry; a row in flaky_rows is UNAVAILABLE the
  // first time it comes.
  grpc::Status MutateRows(
      grpc::ServerContext*, const v2::MutateRowsRequest* request,
      grpc::ServerWriter<v2::MutateRowsResponse>* writer) override {
    v2::MutateRowsResponse response;
    for (int i = 0; i < request->entries_size(); i++) {
      const auto& e = request->entries(i);
      v2::MutateRowRequest one;
      one.set_row_key(e.row_key());
      *one.mutable_mutations() = e.mutations();
      grpc::Status s;
      {
        std::lock_guard<std::mutex> l(mu_);
        if (flaky_rows.erase(e.row_key()) != 0) {
          s = grpc::Status(grpc::StatusCode::UNAVAILABLE, "try again");
        }
        batches_.push_back(e.row_key());
      }
      if (s.ok()) s = MutateRow(nullptr, &one, nullptr);
      auto* entry = response.add_entries();
      entry->set_index(i);
      entry->mutable_status()->set_code(static_cast<int>(s.error_code()));
      entry->mutable_status()->set_message(s.error_message());
    }
    std::lock_guard<std::mutex> l(mu_);
    batches_.push_back("|");  // the end of a request
    writer->Write(response);
    return grpc::Status::OK;
  }

  std::set<std::string> flaky_rows;  // guarded by mu_ once the server runs

  // The rows of every MutateRows request, each request ended by "|".
  std::string batches() {
    std::lock_guard<std::mutex> l(mu_);
    std::string out;
    for (const std::string& r : batches_) out += r;
    return out;
  }

  // What ReadRows and MutateRow were sent, in order.
  std::vector<v2::ReadRowsRequest> reads() {
    std::lock_guard<std::mutex> l(mu_);
    return reads_;
  }
  std::vector<v2::MutateRowRequest> mutations() {
    std::lock_guard<std::mutex> l(mu_);
    return mutations_;
  }

 private:
  std::mutex mu_;
  std::vector<v2::ReadRowsRequest> reads_;
  std::vector<v2::MutateRowRequest> mutations_;
  std::vector<std::string> batches_;
};

// One chunk; absent parts are left unset.
struct ChunkSpec {
  std::string row;
  std::optional<std::string> family, qualifier;
  int64_t ts = 0;
  std::string value;
  int32_t value_size = 0;
  bool commit = false;
  bool reset = false;
};

v2::ReadRowsResponse Response(const std::vector<ChunkSpec>& chunks) {
  v2::ReadRowsResponse r;
  for (const ChunkSpec& c : chunks) {
    auto* out = r.add_chunks();
    out->set_row_key(c.row);
    if (c.family) out->mutable_family_name()->set_value(*c.family);
    if (c.qualifier) out->mutable_qualifier()->set_value(*c.qualifier);
    out->set_timestamp_micros(c.ts);
    out->set_value(c.value);
    out->set_value_size(c.value_size);
    if (c.commit) out->set_commit_row(true);
    if (c.reset) out->set_reset_row(true);
  }
  return r;
}

class ScriptedServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir();
    ASSERT_FALSE(dir_.empty());
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + dir_ + "/s.sock",
                             grpc::InsecureServerCredentials());
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    RemoteOptions options = OptionsFor("unix:" + dir_ + "/s.sock");
    options.rpc_timeout = std::chrono::milliseconds(300);
    auto remote = ConnectBigtable(options);
    ASSERT_TRUE(remote.ok());
    remote_ = std::move(remote).value();
  }

  void TearDown() override {
    remote_.reset();
    server_->Shutdown();
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  // The scan of the whole table: every version, then the status.
  std::vector<std::string> Scan() { return ScanAll(*remote_, "t", {}); }

  std::string dir_;
  ScriptedService service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Bigtable> remote_;
};

TEST_F(ScriptedServerTest, ReassemblesChunksAsTheProtocolSays) {
  const std::string f = "f", g = "g", h = "h", q = "q";
  service_.read_rows = [&](const v2::ReadRowsRequest&, int) {
    Script s;
    s.responses.push_back(Response({
        {"a", f, q, 10, "hel", 5},
        {"", {}, {}, 0, "lo"},  // the rest of the split value
        {"", {}, std::string("r"), 5, "x", 0, true},
        {"b", f, q, 1, "junk"},
        {"", {}, {}, 0, "", 0, false, true},  // reset: b starts over
    }));
    s.responses.push_back(Response({
        {"b", g, q, 2, "v"},
        {"", h, std::string("z"), 3, "w", 0, true},
        {"c", f, q, 1, "12", 4},
    }));
    s.responses.push_back(Response({{"", {}, {}, 0, "34", 0, true}}));
    return s;
  };
  EXPECT_EQ(Scan(), (std::vector<std::string>{"a/f:q@10=hello", "a/f:r@5=x",
                                              "b/g:q@2=v", "b/h:z@3=w",
                                              "c/f:q@1=1234", "OK"}));
  auto row = remote_->ReadRow("t", "b", ReadOptions());
  ASSERT_FALSE(row.ok());  // asked for b, the script sends a first
  EXPECT_EQ(row.status().code(), Code::kIOError);
}

TEST_F(ScriptedServerTest, RefusesChunksThatBreakTheProtocol) {
  const std::string f = "f", q = "q";
  const std::vector<std::vector<ChunkSpec>> broken = {
      {{"a", {}, q, 1, "v", 0, true}},  // no family
      {{"a", f, q, 1, "v", 3, true}},   // commit mid-value
      {{"b", f, q, 1, "v", 0, true}, {"a", f, q, 1, "v", 0, true}},  // order
      {{"a", f, q, 1, "v"}},                  // never committed
      {{"", {}, {}, 0, "", 0, false, true}},  // reset between rows
      {{"a", f, q, 1, "v"}, {"b", f, q, 1, "v", 0, true}},     // key changes
      {{"a", f, q, 1, "v"}, {"", f, {}, 1, "v", 0, true}},     // no qualifier
      {{"a", f, q, 1, "v", 3}, {"", {}, q, 0, "w", 0, true}},  // key mid-value
  };
  for (size_t i = 0; i < broken.size(); i++) {
    service_.read_rows = [&](const v2::ReadRowsRequest&, int) {
      Script s;
      s.responses.push_back(Response(broken[i]));
      return s;
    };
    std::vector<std::string> got = Scan();
    ASSERT_FALSE(got.empty());
    EXPECT_TRUE(got.back().starts_with("IOError: ReadRows"))
        << "case " << i << ": " << got.back();
  }
}

TEST_F(ScriptedServerTest, ResumesAfterUnavailableAfterTheLastRow) {
  const std::string f = "f", q = "q";
  service_.read_rows = [&](const v2::ReadRowsRequest&, int call) {
    Script s;
    if (call == 0) {
      s.responses.push_back(
          Response({{"a", f, q, 1, "1", 0, true}, {"b", f, q, 1, "partial"}}));
      s.status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "restarting");
    } else {
      s.responses.push_back(Response({{"b", f, q, 1, "2", 0, true}}));
    }
    return s;
  };
  EXPECT_EQ(Scan(), (std::vector<std::string>{"a/f:q@1=1", "b/f:q@1=2", "OK"}));
  std::vector<v2::ReadRowsRequest> requests = service_.reads();
  ASSERT_EQ(requests.size(), 2u);
  ASSERT_EQ(requests[1].rows().row_ranges_size(), 1);
  EXPECT_EQ(requests[1].rows().row_ranges(0).start_key_closed(),
            std::string("a\0", 2));
  EXPECT_EQ(requests[1].table_name(), "projects/p/instances/i/tables/t");

  // Any other error ends the scan.
  service_.read_rows = [&](const v2::ReadRowsRequest&, int) {
    Script s;
    s.responses.push_back(Response({{"a", f, q, 1, "1", 0, true}}));
    s.status = grpc::Status(grpc::StatusCode::INTERNAL, "broken");
    return s;
  };
  std::vector<std::string> got = Scan();
  EXPECT_EQ(got.front(), "a/f:q@1=1");
  EXPECT_TRUE(got.back().starts_with("IOError: ReadRows: INTERNAL: broken"))
      << got.back();
}

TEST_F(ScriptedServerTest, EachResponseHasTheRpcTimeout) {
  const std::string f = "f", q = "q";
  service_.read_rows = [&](const v2::ReadRowsRequest&, int) {
    Script s;
    s.responses.push_back(Response({{"a", f, q, 1, "1", 0, true}}));
    s.responses.push_back(Response({{"b", f, q, 1, "2", 0, true}}));
    s.hang = true;
    return s;
  };
  auto scanner = remote_->NewScanner("t", ScanOptions());
  ASSERT_TRUE(scanner.ok());
  Scanner& s = **scanner;
  // A reader slower than the timeout is not cut off: only waiting for the
  // server counts.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  s.Next();
  ASSERT_TRUE(s.Valid());
  EXPECT_EQ(s.row(), "b");
  const auto start = std::chrono::steady_clock::now();
  s.Next();
  EXPECT_FALSE(s.Valid());
  EXPECT_EQ(s.status().code(), Code::kBusy) << s.status().ToString();
  EXPECT_NE(s.status().message().find("DEADLINE_EXCEEDED"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(ScriptedServerTest, TabletsFromSampleRowKeys) {
  auto sample = [](const std::string& key, int64_t offset) {
    v2::SampleRowKeysResponse r;
    r.set_row_key(key);
    r.set_offset_bytes(offset);
    return r;
  };
  service_.samples = {sample("m", 100), sample("t", 250), sample("", 400)};
  auto tablets = remote_->ListTablets("t");
  ASSERT_TRUE(tablets.ok()) << tablets.status().ToString();
  ASSERT_EQ(tablets->size(), 3u);
  EXPECT_EQ((*tablets)[0].start_row, "");
  EXPECT_EQ((*tablets)[0].end_row, "m");
  EXPECT_EQ((*tablets)[0].bytes, 100u);
  EXPECT_EQ((*tablets)[1].start_row, "m");
  EXPECT_EQ((*tablets)[1].end_row, "t");
  EXPECT_EQ((*tablets)[1].bytes, 150u);
  EXPECT_EQ((*tablets)[2].start_row, "t");
  EXPECT_EQ((*tablets)[2].end_row, "");
  EXPECT_EQ((*tablets)[2].bytes, 150u);
  EXPECT_TRUE((*tablets)[2].sample_rows.empty());
  service_.samples = {sample("", 0)};
  tablets = remote_->ListTablets("t");
  ASSERT_TRUE(tablets.ok());
  ASSERT_EQ(tablets->size(), 1u);
  EXPECT_EQ((*tablets)[0].start_row, "");
  EXPECT_EQ((*tablets)[0].end_row, "");
}

// A server of whole milliseconds refuses [ts, ts+1): the client sends
// [ts, ts+1000) instead, and from then on at once. Other refusals are not
// sent again. (The scripted server has no admin API: the family checks
// are skipped.)
TEST_F(ScriptedServerTest, DeleteVersionOnAServerOfWholeMilliseconds) {
  auto range = [&](size_t i) {
    // mutations() returns a copy: keep it alive while `r` points into it.
    const std::vector<v2::MutateRowRequest> all = service_.mutations();
    const auto& r = all[i].mutations(0).delete_from_column();
    return Numbered("[", r.time_range().start_timestamp_micros()) +
           Numbered(", ", r.time_range().end_timestamp_micros()) + ")";
  };
  RowMutation m("r");
  m.DeleteVersion("f", "q", 2000);
  auto ts = remote_->Apply("t", m, WriteOptions());
  ASSERT_TRUE(ts.ok()) << ts.status().ToString();
  ASSERT_EQ(service_.mutations().size(), 2u);
  EXPECT_EQ(range(0), "[2000, 2001)");
  EXPECT_EQ(range(1), "[2000, 3000)");
  RowMutation again("r");
  again.DeleteVersion("f", "q", 5000);
  ASSERT_TRUE(remote_->Apply("t", again, WriteOptions()).ok());
  ASSERT_EQ(service_.mutations().size(), 3u);
  EXPECT_EQ(range(2), "[5000, 6000)");
  RowMutation micros("r");
  micros.SetCell("f", "q", 1500, "v");
  EXPECT_EQ(remote_->Apply("t", micros, WriteOptions()).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(service_.mutations().size(), 4u);
}

// ApplyBatch: a row written twice waits for the next request; entries
// refused UNAVAILABLE, and those refused for a µs range, go again alone.
TEST_F(ScriptedServerTest, ApplyBatchRetriesEntriesAlone) {
  service_.flaky_rows = {"b"};
  std::vector<RowMutation> batch;
  for (const char* row : {"a", "b", "c", "a", "d"}) {
    batch.emplace_back(row);
    batch.back().SetCell("f", "q", "v");
  }
  batch[4].DeleteVersion("f", "q", 7000);
  auto results = remote_->ApplyBatch("t", batch, WriteOptions());
  ASSERT_EQ(results.size(), 5u);
  int64_t last = 0;
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_GT(*r, last);
    last = *r;
  }
  // [a b c] (b UNAVAILABLE) -> [b]; then [a d] (d's range refused) -> [d].
  EXPECT_EQ(service_.batches(), "abc|b|ad|d|");
  std::vector<v2::MutateRowRequest> singles = service_.mutations();
  ASSERT_EQ(singles.size(), 6u);  // every entry but the UNAVAILABLE one
  const auto& range = singles[5].mutations(1).delete_from_column().time_range();
  EXPECT_EQ(range.start_timestamp_micros(), 7000);
  EXPECT_EQ(range.end_timestamp_micros(), 8000);
}

// ---------------------------------------------------------------------------
// Google's emulator: one session must read the same there as on the daemon.
// ---------------------------------------------------------------------------

constexpr char kEmulator[] =
    "/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator";

// cbtemulator on a free port, stopped when destroyed.
class Emulator {
 public:
  ~Emulator() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) close(out_);
  }

  // "127.0.0.1:PORT", or empty with *why.
  std::string Start(std::string* why) {
    int fds[2];
    if (pipe(fds) != 0) {
      *why = "pipe failed";
      return {};
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::string path = kEmulator;
    std::vector<std::string> args = {path, "-host", "127.0.0.1", "-port", "0"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, path.c_str(), &actions, nullptr,
                               argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    out_ = fds[0];
    if (rc != 0) {
      pid_ = 0;
      *why = "posix_spawn failed";
      return {};
    }
    // "Cloud Bigtable emulator running on 127.0.0.1:PORT"
    std::string text;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (text.find('\n') == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[256];
      const ssize_t n = read(out_, buf, sizeof(buf));
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
    }
    const size_t at = text.find("running on ");
    if (at == std::string::npos) {
      *why = "the emulator did not say where it listens: " + text;
      return {};
    }
    std::string address = text.substr(at + 11);
    address = address.substr(0, address.find_first_of("\r\n"));
    return address;
  }

 private:
  pid_t pid_ = 0;
  int out_ = -1;
};

// A short session; what it reads, with the timestamps of now (which
// differ between the two) as -1. Refusals that the emulator reports as
// UNKNOWN (IOError) are left out: incrementing a value that is not 8
// bytes, for one.
std::vector<std::string> Session(Bigtable& db) {
  constexpr int64_t kNow = 1'000'000'000'000'000;  // 2001 in µs
  std::vector<std::string> out;
  auto say = [&](const std::string& what, const Status& s) {
    out.push_back(what + ": " + std::string(StatusCodeName(s.code())));
  };
  auto rows = [&](const std::string& what, const ScanOptions& so) {
    auto s = db.NewScanner("s", so);
    if (!s.ok()) return say(what, s.status());
    for (; (*s)->Valid(); (*s)->Next()) {
      Cell c{std::string((*s)->family()), std::string((*s)->qualifier()),
             (*s)->timestamp(), std::string(*(*s)->value())};
      if (c.timestamp > kNow) c.timestamp = -1;
      out.push_back(what + ": " + Describe((*s)->row(), c));
    }
    say(what + " end", (*s)->status());
  };
  say("create table", db.CreateTable("s"));
  say("create again", db.CreateTable("s"));
  FamilySettings three;
  three.gc_policy = GcPolicy::MaxVersions(3);
  say("create cf", db.CreateFamily("s", "cf", three));
  say("create cg", db.CreateFamily("s", "cg", FamilySettings()));
  say("create cf again", db.CreateFamily("s", "cf", three));
  auto families = db.ListFamilies("s");
  if (families.ok()) {
    for (const FamilyInfo& f : *families) {
      out.push_back("family " + f.name + " " + f.settings.gc_policy.ToString());
    }
  }
  auto tables = db.ListTables();
  out.push_back(Numbered("tables ", tables.ok() ? tables->size() : 0));

  RowMutation r1("r1");
  r1.SetCell("cf", "a", 1000, "v1").SetCell("cf", "a", 2000, "v2");
  r1.SetCell("cg", "b", "server");
  auto ts = db.Apply("s", r1, WriteOptions());
  say("apply r1", ts.status());
  out.push_back(std::string("apply r1 ms ") +
                (ts.ok() && *ts % 1000 == 0 ? "yes" : "no"));
  RowMutation r2("r2");
  r2.SetCell("cf", "a", 1000, "w")
      .SetCell("cg", std::string("\0\xff", 2), 3000, "odd");
  say("apply r2", db.Apply("s", r2, WriteOptions()).status());
  RowMutation r3("r3");
  r3.SetCell("cf", "c", 5000, "z");
  say("apply r3", db.Apply("s", r3, WriteOptions()).status());
  std::vector<RowMutation> batch(2, RowMutation("r4"));
  batch[0].SetCell("cf", "a", 4000, "batched");
  batch[1] = RowMutation("r5");
  batch[1].SetCell("cg", "b", 4000, "batched");
  for (const auto& r : db.ApplyBatch("s", batch, WriteOptions())) {
    say("batch", r.status());
  }
  RowMutation bad("r1");
  bad.SetCell("nofamily", "a", 1000, "x");
  say("apply unknown family", db.Apply("s", bad, WriteOptions()).status());

  ReadOptions all;
  all.max_versions = 0;
  auto row = db.ReadRow("s", "r1", all);
  if (row.ok()) {
    for (Cell& c : row->cells) {
      if (c.timestamp > kNow) c.timestamp = -1;
      out.push_back("read r1: " + Describe("r1", c));
    }
  }
  ReadOptions at;
  at.at = 1500;
  auto cell = db.ReadCell("s", "r1", "cf", "a", at);
  out.push_back("cell at 1500: " +
                (cell.ok() && !cell->empty() ? (*cell)[0].value : "-"));
  say("cell unknown family",
      db.ReadCell("s", "r1", "nofamily", "a", at).status());
  say("row unknown table", db.ReadRow("nope", "r1", all).status());

  ScanOptions whole;
  rows("scan", whole);
  ScanOptions some;
  some.start_row = "r2";
  some.prefix = "r";
  some.read.families = {"cf"};
  rows("scan r2.. cf", some);

  auto a = db.Append("s", "r1", "cg", "log", "ab", WriteOptions());
  a = db.Append("s", "r1", "cg", "log", "cd", WriteOptions());
  out.push_back("append " + (a.ok() ? std::to_string(a->value_size)
                                    : a.status().ToString()));
  auto n = db.Increment("s", "r1", "cg", "n", 5, WriteOptions());
  n = db.Increment("s", "r1", "cg", "n", -2, WriteOptions());
  out.push_back("increment " +
                (n.ok() ? std::to_string(*n) : n.status().ToString()));

  using Op = CellCondition::Op;
  int k = 0;
  for (const CellCondition& c :
       {Cond("cf", "a"), Cond("cf", "a", Op::kEquals, "v2"),
        Cond("cf", "a", Op::kEquals, "v1"), Cond("cf", "zz", Op::kNotExists),
        Cond("cf", "zz")}) {
    RowMutation yes("r1"), no("r1");
    yes.SetCell("cg", Numbered("check", k), 1000, "yes");
    no.SetCell("cg", Numbered("check", k), 1000, "no");
    auto held = db.CheckAndMutate("s", "r1", c, yes, no, WriteOptions());
    auto wrote =
        db.ReadCell("s", "r1", "cg", Numbered("check", k), ReadOptions());
    out.push_back(
        Numbered("check ", k++) + ": " +
        (held.ok() ? (*held ? "held" : "failed") : held.status().ToString()) +
        " " + (wrote.ok() && !wrote->empty() ? (*wrote)[0].value : "-"));
  }
  say("check unknown family",
      db.CheckAndMutate("s", "r1", Cond("nofamily", "a"), RowMutation("r1"),
                        RowMutation("r1"), WriteOptions())
          .status());

  RowMutation dv("r1");
  dv.DeleteVersion("cf", "a", 2000);
  say("delete version", db.Apply("s", dv, WriteOptions()).status());
  cell = db.ReadCell("s", "r1", "cf", "a", all);
  if (cell.ok()) {
    for (const Cell& c : *cell) out.push_back("after: " + Describe("r1", c));
  }
  RowMutation dels("r1");
  dels.DeleteCell("cf", "a").DeleteFamily("cg");
  say("delete cell+family", db.Apply("s", dels, WriteOptions()).status());
  RowMutation dr("r2");
  dr.DeleteRow();
  say("delete row", db.Apply("s", dr, WriteOptions()).status());
  rows("scan after deletes", whole);

  FamilySettings one;
  one.gc_policy = GcPolicy::MaxVersions(1);
  say("update cf", db.UpdateFamily("s", "cf", one));
  auto got = db.GetFamily("s", "cf");
  out.push_back("cf now " + (got.ok() ? got->gc_policy.ToString()
                                      : got.status().ToString()));
  say("get unknown family", db.GetFamily("s", "nofamily").status());
  say("drop cg", db.DeleteFamily("s", "cg"));
  say("drop cg again", db.DeleteFamily("s", "cg"));
  families = db.ListFamilies("s");
  out.push_back("families " +
                std::to_string(families.ok() ? families->size() : 0));
  say("delete table", db.DeleteTable("s"));
  say("get deleted", db.GetTable("s").status());
  return out;
}

TEST(RemoteEmulatorTest, ASessionReadsAsOnTheDaemon) {
  if (access(kEmulator, X_OK) != 0) {
    GTEST_SKIP() << "Google's Bigtable emulator is not installed at "
                 << kEmulator
                 << " (Debian: google-cloud-cli-bigtable-emulator)";
  }
  Emulator emulator;
  std::string why;
  const std::string address = emulator.Start(&why);
  ASSERT_FALSE(address.empty()) << why;
  auto on_emulator = ConnectBigtable(OptionsFor(address));
  ASSERT_TRUE(on_emulator.ok()) << on_emulator.status().ToString();

  const std::string dir = TempDir();
  auto store = NewReferenceBigtable(ReferenceOptions());
  ApiOptions ao;
  ao.unix_socket = dir + "/bigtable.sock";
  auto server = ApiServer::Start(store.get(), ao);
  ASSERT_TRUE(server.ok());
  auto on_daemon = ConnectBigtable(OptionsFor("unix:" + ao.unix_socket));
  ASSERT_TRUE(on_daemon.ok());

  const std::vector<std::string> daemon = Session(**on_daemon);
  const std::vector<std::string> emulated = Session(**on_emulator);
  EXPECT_EQ(emulated.size(), daemon.size());
  for (size_t i = 0; i < std::min(daemon.size(), emulated.size()); i++) {
    EXPECT_EQ(emulated[i], daemon[i]) << "line " << i;
  }
  for (const std::string& line : daemon) {
    EXPECT_EQ(line.find("IOError"), std::string::npos) << line;
  }
  on_daemon->reset();
  server->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tabletfs::api
