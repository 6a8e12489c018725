// The data model over a Bigtable v2 endpoint (api/remote_bigtable.h).
#include "api/remote_bigtable.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "api/convert.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "store/util/mutex.h"

namespace tabletfs::api {
namespace {

namespace v2 = google::bigtable::v2;
namespace admin = google::bigtable::admin::v2;

using Mutations = google::protobuf::RepeatedPtrField<v2::Mutation>;

// Retries of UNAVAILABLE for idempotent calls, the first after
// kFirstBackoff, each next after twice as long.
constexpr int kMaxRetries = 3;
constexpr std::chrono::milliseconds kFirstBackoff{100};
// Responses up to Cloud Bigtable's row limit (the emulator sends a whole
// row in one response).
constexpr int kMaxMessageBytes = 256 << 20;
// Cloud Bigtable refuses a RowFilter whose serialized size passes this
// (so does the daemon, api/row_filter.h).
constexpr size_t kMaxFilterBytes = 20480;
// The bytes of keys and values in one MutateRows request (ApplyBatch).
constexpr size_t kMaxBatchBytes = 32u << 20;

void Backoff(int attempt) {
  std::this_thread::sleep_for(kFirstBackoff * (1 << attempt));
}

bool Retryable(const grpc::Status& s, int attempt) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE &&
         attempt < kMaxRetries;
}

std::string_view CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    default:
      return "UNKNOWN";
  }
}

// The store's Status of a failed RPC: "RPC: CODE: message".
Status FromGrpc(const grpc::Status& s, std::string_view rpc) {
  if (s.ok()) return Status::OK();
  std::string detail(CodeName(s.error_code()));
  detail += ": " + s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::NOT_FOUND:
      return Status::NotFound(rpc, detail);
    case grpc::StatusCode::ALREADY_EXISTS:
      return Status::AlreadyExists(rpc, detail);
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::FAILED_PRECONDITION:
      return Status::InvalidArgument(rpc, detail);
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return Status::NoSpace(rpc, detail);
    case grpc::StatusCode::UNIMPLEMENTED:
      return Status::NotSupported(rpc, detail);
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::ABORTED:
      return Status::Busy(rpc, detail);
    default:
      return Status::IOError(rpc, detail);
  }
}

// "HOST:PORT", "[V6]:PORT", "unix:PATH" or "unix:///PATH".
Status ValidateEndpoint(std::string_view endpoint, std::string_view what) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(
        std::string(what) + " '" + std::string(endpoint) + "'",
        std::string(why) + ": expected unix:/PATH or HOST:PORT");
  };
  if (endpoint.starts_with("unix:")) {
    std::string_view path = endpoint.substr(5);
    if (path.empty()) return bad("no socket path");
    if (path.starts_with("//") && !path.starts_with("///")) {
      return bad("unix:// needs an absolute path (unix:///PATH)");
    }
    return Status::OK();
  }
  std::string_view host, port;
  if (endpoint.starts_with("[")) {
    const size_t close = endpoint.find(']');
    if (close == std::string_view::npos || close < 2 ||
        endpoint.substr(close + 1, 1) != ":") {
      return bad("a bracketed IPv6 address needs ]:PORT");
    }
    host = endpoint.substr(1, close - 1);
    port = endpoint.substr(close + 2);
  } else {
    const size_t colon = endpoint.rfind(':');
    if (colon == std::string_view::npos) return bad("no port");
    host = endpoint.substr(0, colon);
    port = endpoint.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return bad("an IPv6 address needs brackets");
    }
  }
  if (host.empty()) return bad("no host");
  for (char c : host) {
    if (c <= ' ' || c == '/' || c == '\x7f') return bad("a bad host name");
  }
  if (port.empty() || port.size() > 5) return bad("a bad port");
  int n = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return bad("a bad port");
    n = n * 10 + (c - '0');
  }
  if (n < 1 || n > 65535) return bad("a port outside 1..65535");
  return Status::OK();
}

// For the x-goog-request-params header (Cloud Bigtable routes by it).
std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
        c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// A regex matching exactly `bytes`, under RE2's Latin-1 mode and Go's
// byte regexes alike: word characters as they are, ASCII punctuation
// behind a backslash, every other byte as \xHH. (RE2::QuoteMeta copies
// bytes above 0x7f raw and backslashes spaces, which Go refuses.)
std::string QuoteExact(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '_';
    const bool punct = c > ' ' && c < 0x7f && !word;
    if (word) {
      out += static_cast<char>(c);
    } else if (punct) {
      out += '\\';
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// The smallest key after `key`.
std::string After(std::string_view key) {
  std::string out(key);
  out.push_back('\0');
  return out;
}

// The first key past every key beginning with `prefix`; empty when there
// is none (a prefix of only 0xff bytes).
std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    unsigned char last = static_cast<unsigned char>(end.back());
    if (last != 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return end;
}

// A row key that a write may carry: the store's rule and the API's 4 KiB.
Status CheckWriteKey(std::string_view row) {
  TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
  if (row.size() > kMaxRowKeyBytes) {
    return Status::InvalidArgument(
        "row key of " + std::to_string(row.size()) +
        " bytes is above the Bigtable API's limit of 4096");
  }
  return Status::OK();
}

// A table name that cannot exist names no table.
Status CheckTableName(std::string_view table) {
  if (!ValidateTableName(table).ok()) {
    return Status::NotFound("no such table", table);
  }
  return Status::OK();
}

Status NoSuchFamily(std::string_view table, std::string_view family) {
  return Status::NotFound("no such family",
                          std::string(table) + ":" + std::string(family));
}

v2::RowFilter FamilyFilter(std::string_view regex) {
  v2::RowFilter f;
  f.set_family_name_regex_filter(std::string(regex));
  return f;
}

v2::RowFilter QualifierFilter(std::string_view regex) {
  v2::RowFilter f;
  f.set_column_qualifier_regex_filter(std::string(regex));
  return f;
}

// One filter applying `parts` in order; nullopt for none.
std::optional<v2::RowFilter> Chain(std::vector<v2::RowFilter> parts) {
  if (parts.empty()) return std::nullopt;
  if (parts.size() == 1) return std::move(parts[0]);
  v2::RowFilter f;
  for (v2::RowFilter& p : parts) {
    *f.mutable_chain()->add_filters() = std::move(p);
  }
  return f;
}

// The families and columns ReadOptions select: one interleave whose
// branches are disjoint (the listed families as one alternation, then per
// other family its listed qualifiers), so no cell comes out twice.
std::optional<v2::RowFilter> SelectionFilter(const ReadOptions& options) {
  if (options.families.empty() && options.columns.empty()) return std::nullopt;
  std::vector<std::string> families;
  for (const std::string& f : options.families) {
    // A name that cannot be a family matches nothing.
    if (ValidateFamilyName(f).ok()) families.push_back(f);
  }
  std::sort(families.begin(), families.end());
  families.erase(std::unique(families.begin(), families.end()), families.end());
  std::map<std::string, std::vector<std::string>> columns;
  for (const Column& c : options.columns) {
    if (!ValidateFamilyName(c.family).ok()) continue;
    if (std::binary_search(families.begin(), families.end(), c.family)) {
      continue;
    }
    columns[c.family].push_back(c.qualifier);
  }
  std::vector<v2::RowFilter> branches;
  if (!families.empty()) {
    std::string regex;
    for (const std::string& f : families) {
      if (!regex.empty()) regex += '|';
      regex += QuoteExact(f);
    }
    branches.push_back(FamilyFilter(regex));
  }
  for (const auto& [family, qualifiers] : columns) {
    std::string regex;
    for (const std::string& q : qualifiers) {
      if (!regex.empty()) regex += '|';
      regex += QuoteExact(q);
    }
    branches.push_back(
        *Chain({FamilyFilter(QuoteExact(family)), QualifierFilter(regex)}));
  }
  v2::RowFilter f;
  if (branches.empty()) {
    f.set_block_all_filter(true);
  } else if (branches.size() == 1) {
    f = std::move(branches[0]);
  } else {
    for (v2::RowFilter& b : branches) {
      *f.mutable_interleave()->add_filters() = std::move(b);
    }
  }
  return f;
}

// `at` and max_versions, after whatever selects the cells: the newest
// max_versions versions at or before `at`.
void AddVersionFilters(const ReadOptions& options,
                       std::vector<v2::RowFilter>* parts) {
  if (options.at.has_value()) {
    v2::RowFilter f;
    if (*options.at < 0) {
      f.set_block_all_filter(true);  // the API has no timestamp below 0
    } else if (*options.at < INT64_MAX) {
      f.mutable_timestamp_range_filter()->set_end_timestamp_micros(*options.at +
                                                                   1);
    }
    if (f.filter_case() != v2::RowFilter::FILTER_NOT_SET) {
      parts->push_back(std::move(f));
    }
  }
  if (options.max_versions > 0) {
    v2::RowFilter f;
    f.set_cells_per_column_limit_filter(static_cast<int32_t>(
        std::min<uint32_t>(options.max_versions, INT32_MAX)));
    parts->push_back(std::move(f));
  }
}

// Values up to this many bytes come along with a cell read into the read
// cache (WithSmallPeers): the largest count one regex repetition may have
// (RE2's and Go's limit, 1000).
constexpr int kPeerValueBytes = 1000;

// `cell`, or with it the newest version of every other cell of the row
// whose value is at most kPeerValueBytes: the read of one cell brings its
// small neighbours into the read cache, so that the OPENs of the other
// cells of a row (cat, grep over a directory) cost no RPC. A cell may come
// twice (both branches); the reader drops the repeat.
v2::RowFilter WithSmallPeers(const v2::RowFilter& cell) {
  v2::RowFilter peers;
  auto* chain = peers.mutable_chain();
  chain->add_filters()->set_cells_per_column_limit_filter(1);
  chain->add_filters()->set_value_regex_filter(
      "(?s).{0," + std::to_string(kPeerValueBytes) + "}");
  v2::RowFilter both;
  *both.mutable_interleave()->add_filters() = cell;
  *both.mutable_interleave()->add_filters() = std::move(peers);
  return both;
}

// Whether a read asks for the newest version of each cell now: what the
// read cache (ReadCache) holds and answers. (A snapshot of this client
// reads the latest state too.)
bool NewestOnly(const ReadOptions& options) {
  return options.max_versions == 1 && !options.at.has_value();
}

std::optional<v2::RowFilter> ReadFilter(const ReadOptions& options) {
  std::vector<v2::RowFilter> parts;
  if (std::optional<v2::RowFilter> s = SelectionFilter(options)) {
    parts.push_back(std::move(*s));
  }
  AddVersionFilters(options, &parts);
  return Chain(std::move(parts));
}

// How wide the time range of a DeleteVersion at a whole millisecond is:
// 1 µs, exact on a server that keeps µs (the daemon); 1000 µs for servers
// that keep whole milliseconds and refuse ranges that are not (Cloud
// Bigtable, the emulator), where it holds that one timestamp too.
enum class RangeWidth { kMicros, kMillis };

// The timestamp op `op` writes or deletes, `ts` standing for the server's.
int64_t TimestampOf(const RowMutation::Op& op, int64_t ts) {
  return op.timestamp == kServerTimestamp ? ts : op.timestamp;
}

// Whether `m` deletes a version at a whole millisecond: what a server of
// whole milliseconds refuses in RangeWidth::kMicros.
bool DeletesAWholeMillisecond(const RowMutation& m, int64_t ts) {
  for (const RowMutation::Op& op : m.ops()) {
    if (op.type == RowMutation::OpType::kDeleteVersion &&
        TimestampOf(op, ts) % 1000 == 0) {
      return true;
    }
  }
  return false;
}

// How a server of whole milliseconds refuses a finer range: the emulator
// with UNKNOWN, Cloud Bigtable with INVALID_ARGUMENT.
bool MayRefuseTheRange(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
         s.error_code() == grpc::StatusCode::UNKNOWN;
}

// Appends the API's form of `m` to *out; kServerTimestamp becomes `ts`.
Status AddMutations(const RowMutation& m, int64_t ts, RangeWidth width,
                    Mutations* out) {
  if (m.ops().size() > static_cast<size_t>(kMaxMutationsPerRow)) {
    return Status::InvalidArgument(
        "mutation of " + std::to_string(m.ops().size()) +
        " operations is above the Bigtable API's limit of 100000");
  }
  for (const RowMutation::Op& op : m.ops()) {
    if (op.type != RowMutation::OpType::kDeleteRow &&
        !ValidateFamilyName(op.family).ok()) {
      return Status::InvalidArgument("unknown family", op.family);
    }
    const int64_t t = TimestampOf(op, ts);
    if ((op.type == RowMutation::OpType::kSetCell ||
         op.type == RowMutation::OpType::kDeleteVersion) &&
        t < 0) {
      return Status::InvalidArgument(
          "timestamp " + std::to_string(t) +
          " is below 0: the Bigtable API has no such timestamps");
    }
    v2::Mutation* out_op = out->Add();
    switch (op.type) {
      case RowMutation::OpType::kSetCell: {
        auto* s = out_op->mutable_set_cell();
        s->set_family_name(op.family);
        s->set_column_qualifier(op.qualifier);
        s->set_timestamp_micros(t);
        s->set_value(op.value);
        break;
      }
      case RowMutation::OpType::kDeleteVersion: {
        auto* d = out_op->mutable_delete_from_column();
        d->set_family_name(op.family);
        d->set_column_qualifier(op.qualifier);
        const int64_t span =
            width == RangeWidth::kMillis && t % 1000 == 0 ? 1000 : 1;
        d->mutable_time_range()->set_start_timestamp_micros(t);
        // An end of 0 is unbounded: the last range holds one timestamp.
        d->mutable_time_range()->set_end_timestamp_micros(
            t > INT64_MAX - span ? 0 : t + span);
        break;
      }
      case RowMutation::OpType::kDeleteCell: {
        auto* d = out_op->mutable_delete_from_column();
        d->set_family_name(op.family);
        d->set_column_qualifier(op.qualifier);
        break;
      }
      case RowMutation::OpType::kDeleteFamily:
        out_op->mutable_delete_from_family()->set_family_name(op.family);
        break;
      case RowMutation::OpType::kDeleteRow:
        out_op->mutable_delete_from_row();
        break;
      default:
        return Status::InvalidArgument("unknown mutation op");
    }
  }
  return Status::OK();
}

// The RPCs the client sends, for the statistics (RpcStats).
enum class Rpc {
  kReadRows,
  kSampleRowKeys,
  kMutateRow,
  kMutateRows,
  kCheckAndMutateRow,
  kReadModifyWriteRow,
  kCreateTable,
  kDeleteTable,
  kListTables,
  kGetTable,
  kModifyColumnFamilies,
  kReadChangeStream,
  kPingAndWarm,
};
constexpr size_t kRpcKinds = 13;

std::string_view RpcName(Rpc rpc) {
  static constexpr std::string_view kNames[kRpcKinds] = {
      "ReadRows",    "SampleRowKeys",        "MutateRow",
      "MutateRows",  "CheckAndMutateRow",    "ReadModifyWriteRow",
      "CreateTable", "DeleteTable",          "ListTables",
      "GetTable",    "ModifyColumnFamilies", "ReadChangeStream",
      "PingAndWarm"};
  return kNames[static_cast<size_t>(rpc)];
}

// Latencies in microseconds, in buckets four to a power of two (each about
// 19% wide) from 1 µs to about 3 days: percentiles within a bucket's width.
class LatencyHistogram {
 public:
  void Add(uint64_t micros) {
    buckets_[Bucket(micros)]++;
    count_++;
    sum_ += micros;
    max_ = std::max(max_, micros);
  }
  uint64_t count() const { return count_; }
  uint64_t mean() const { return count_ == 0 ? 0 : sum_ / count_; }
  uint64_t max() const { return max_; }
  // The upper bound of the bucket holding the p-th fraction, at most max().
  uint64_t Percentile(double p) const {
    if (count_ == 0) return 0;
    const uint64_t rank =
        std::max<uint64_t>(1, static_cast<uint64_t>(p * count_ + 0.999999));
    uint64_t seen = 0;
    for (size_t i = 0; i < kBuckets; i++) {
      seen += buckets_[i];
      if (seen >= rank) return std::min(UpperBound(i), max_);
    }
    return max_;
  }

 private:
  static constexpr size_t kBuckets = 4 * 38;
  static size_t Bucket(uint64_t v) {
    if (v < 2) return 0;
    const int log = 63 - __builtin_clzll(v);  // 2^log <= v < 2^(log+1)
    const uint64_t quarter = (v >> std::max(0, log - 2)) & 3;
    return std::min<size_t>(kBuckets - 1, 4 * static_cast<size_t>(log) +
                                              static_cast<size_t>(quarter));
  }
  static uint64_t UpperBound(size_t i) {
    const int log = static_cast<int>(i / 4);
    const uint64_t base = uint64_t{1} << log;
    return base + (base * ((i % 4) + 1)) / 4;
  }
  uint64_t buckets_[kBuckets] = {};
  uint64_t count_ = 0, sum_ = 0, max_ = 0;
};

// What the client sent, per RPC: for `.tabletfs/stats` (StatsText). Every
// attempt counts (a retry too); a stream this client cancelled (a scan
// given up early) counts as cancelled, not as an error.
class RpcStats {
 public:
  struct Attempt {
    Rpc rpc = Rpc::kReadRows;
    bool retry = false;  // a repeat after UNAVAILABLE
    uint64_t bytes_sent = 0;
    uint64_t bytes_received = 0;
    uint64_t responses = 0;
    // Until the first response, or the end when there was none.
    std::chrono::microseconds latency{0};
    grpc::StatusCode code = grpc::StatusCode::OK;
    bool cancelled = false;  // by this client
  };

  void Record(const Attempt& a) {
    MutexLock l(&mu_);
    PerRpc& r = rpcs_[static_cast<size_t>(a.rpc)];
    r.calls++;
    if (a.retry) r.retries++;
    r.bytes_sent += a.bytes_sent;
    r.bytes_received += a.bytes_received;
    r.responses += a.responses;
    r.latency.Add(
        static_cast<uint64_t>(std::max<int64_t>(0, a.latency.count())));
    if (a.cancelled) {
      r.cancelled++;
    } else if (a.code != grpc::StatusCode::OK) {
      r.errors[std::string(CodeName(a.code))]++;
    }
  }

  // Served from the client's read cache instead of an RPC.
  void CacheHit() {
    MutexLock l(&mu_);
    cache_hits_++;
  }

  // "key value" lines: totals first, then per RPC sent at least once
  // (RPC_rpcs, _retries, _errors, _cancelled, _responses, _bytes_sent,
  // _bytes_received, _latency_mean_us, _p50_us, _p99_us, _max_us, and
  // RPC_errors_CODE per code seen), then errors_CODE over all RPCs.
  std::string Text() const {
    MutexLock l(&mu_);
    uint64_t calls = 0, retries = 0, errors = 0, sent = 0, received = 0;
    std::map<std::string, uint64_t> by_code;
    for (const PerRpc& r : rpcs_) {
      calls += r.calls;
      retries += r.retries;
      sent += r.bytes_sent;
      received += r.bytes_received;
      for (const auto& [code, n] : r.errors) {
        errors += n;
        by_code[code] += n;
      }
    }
    std::string out;
    auto line = [&](std::string_view key, uint64_t value) {
      out.append(key);
      out += ' ';
      out += std::to_string(value);
      out += '\n';
    };
    line("rpcs", calls);
    line("rpc_retries", retries);
    line("rpc_errors", errors);
    line("rpc_bytes_sent", sent);
    line("rpc_bytes_received", received);
    line("cache_hits", cache_hits_);
    for (size_t i = 0; i < kRpcKinds; i++) {
      const PerRpc& r = rpcs_[i];
      if (r.calls == 0) continue;
      const std::string name(RpcName(static_cast<Rpc>(i)));
      uint64_t failed = 0;
      for (const auto& [code, n] : r.errors) failed += n;
      line(name + "_rpcs", r.calls);
      line(name + "_retries", r.retries);
      line(name + "_errors", failed);
      line(name + "_cancelled", r.cancelled);
      line(name + "_responses", r.responses);
      line(name + "_bytes_sent", r.bytes_sent);
      line(name + "_bytes_received", r.bytes_received);
      line(name + "_latency_mean_us", r.latency.mean());
      line(name + "_latency_p50_us", r.latency.Percentile(0.5));
      line(name + "_latency_p99_us", r.latency.Percentile(0.99));
      line(name + "_latency_max_us", r.latency.max());
      for (const auto& [code, n] : r.errors) line(name + "_errors_" + code, n);
    }
    for (const auto& [code, n] : by_code) line("errors_" + code, n);
    return out;
  }

 private:
  struct PerRpc {
    uint64_t calls = 0, retries = 0, cancelled = 0, responses = 0;
    uint64_t bytes_sent = 0, bytes_received = 0;
    LatencyHistogram latency;
    std::map<std::string, uint64_t> errors;  // by the code's name
  };
  mutable Mutex mu_;
  PerRpc rpcs_[kRpcKinds] GUARDED_BY(mu_);
  uint64_t cache_hits_ GUARDED_BY(mu_) = 0;
};

// Times one RPC attempt and records it when destroyed or finished.
class RpcRecord {
 public:
  RpcRecord(RpcStats* stats, Rpc rpc, uint64_t bytes_sent, bool retry)
      : stats_(stats), start_(std::chrono::steady_clock::now()) {
    a_.rpc = rpc;
    a_.bytes_sent = bytes_sent;
    a_.retry = retry;
  }
  RpcRecord(const RpcRecord&) = delete;
  RpcRecord& operator=(const RpcRecord&) = delete;
  ~RpcRecord() { Finish(grpc::StatusCode::OK); }

  // A response of `bytes` arrived.
  void Received(uint64_t bytes) {
    if (a_.responses++ == 0) a_.latency = Elapsed();
    a_.bytes_received += bytes;
  }
  void Cancelled() { a_.cancelled = true; }
  // Records the attempt (once).
  void Finish(grpc::StatusCode code) {
    if (done_) return;
    done_ = true;
    if (a_.responses == 0) a_.latency = Elapsed();
    a_.code = code;
    stats_->Record(a_);
  }

 private:
  std::chrono::microseconds Elapsed() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - start_);
  }
  RpcStats* const stats_;
  const std::chrono::steady_clock::time_point start_;
  RpcStats::Attempt a_;
  bool done_ = false;
};

// The channels, stubs and names one store talks through.
class Client {
 public:
  Client(const RemoteOptions& options,
         const std::shared_ptr<grpc::Channel>& data,
         const std::shared_ptr<grpc::Channel>& admin)
      : options_(options),
        instance_("projects/" + options.project + "/instances/" +
                  options.instance),
        data_(v2::Bigtable::NewStub(data)),
        admin_(admin::BigtableTableAdmin::NewStub(admin)) {}

  const RemoteOptions& options() const { return options_; }
  const std::string& instance() const { return instance_; }
  std::string TableName(std::string_view table) const {
    return api::TableName(instance_, table);
  }
  v2::Bigtable::Stub* data() const { return data_.get(); }
  admin::BigtableTableAdmin::Stub* admin() const { return admin_.get(); }

  // The routing header of a data request on `table`.
  std::string DataParams(std::string_view table) const {
    std::string p = "table_name=" + UrlEncode(TableName(table));
    if (!options_.app_profile.empty()) {
      p += "&app_profile_id=" + UrlEncode(options_.app_profile);
    }
    return p;
  }

  // A data request's common fields.
  template <typename Request>
  void Address(std::string_view table, Request* r) const {
    r->set_table_name(TableName(table));
    r->set_app_profile_id(options_.app_profile);
  }

  RpcStats* stats() const { return &stats_; }

  // Runs `call` (one RPC `rpc` of `request`, on the context it is given,
  // which carries the deadline and `params`; it tells the RpcRecord of
  // each response) and, when `idempotent`, again after UNAVAILABLE, up to
  // kMaxRetries times.
  template <typename Call>
  grpc::Status Send(Rpc rpc, const google::protobuf::Message& request,
                    bool idempotent, const std::string& params,
                    Call&& call) const {
    const uint64_t bytes = request.ByteSizeLong();
    for (int attempt = 0;; attempt++) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + options_.rpc_timeout);
      ctx.AddMetadata("x-goog-request-params", params);
      RpcRecord record(&stats_, rpc, bytes, attempt > 0);
      if (options_.before_wait) options_.before_wait();
      grpc::Status s = call(&ctx, &record);
      record.Finish(s.error_code());
      if (!idempotent || !Retryable(s, attempt)) return s;
      Backoff(attempt);
    }
  }

  // Send of a unary RPC whose answer is `response`.
  template <typename Fn>
  grpc::Status Unary(Rpc rpc, const google::protobuf::Message& request,
                     google::protobuf::Message* response, bool idempotent,
                     const std::string& params, Fn&& unary) const {
    return Send(rpc, request, idempotent, params,
                [&](grpc::ClientContext* ctx, RpcRecord* record) {
                  grpc::Status s = unary(ctx);
                  if (s.ok()) record->Received(response->ByteSizeLong());
                  return s;
                });
  }

 private:
  const RemoteOptions options_;
  mutable RpcStats stats_;
  const std::string instance_;
  const std::unique_ptr<v2::Bigtable::Stub> data_;
  const std::unique_ptr<admin::BigtableTableAdmin::Stub> admin_;
};

// One ReadRows call, read response by response, each within the RPC
// timeout (a scan as a whole may take as long as its reader likes). Runs
// on its own completion queue, so that a wait can end at a deadline;
// destroying it cancels the call.
class ReadRowsCall {
 public:
  // `retry`: a repeat after UNAVAILABLE (for the statistics).
  ReadRowsCall(const Client* client, std::string_view table,
               v2::ReadRowsRequest request, bool retry = false)
      : client_(client), request_(std::move(request)), retry_(retry) {
    ctx_.AddMetadata("x-goog-request-params", client->DataParams(table));
  }
  ReadRowsCall(const ReadRowsCall&) = delete;
  ReadRowsCall& operator=(const ReadRowsCall&) = delete;

  ~ReadRowsCall() {
    if (reader_ != nullptr && !done_) {
      ctx_.TryCancel();
      if (record_.has_value()) record_->Cancelled();
      Finish();
    }
    cq_.Shutdown();
    void* tag;
    bool ok;
    while (cq_.Next(&tag, &ok)) {
    }
  }

  // The next response: true. False at the end of the stream or on an
  // error (status() tells which).
  bool Next(v2::ReadRowsResponse* response) {
    if (done_) return false;
    if (reader_ == nullptr) {
      record_.emplace(client_->stats(), Rpc::kReadRows, request_.ByteSizeLong(),
                      retry_);
      reader_ = client_->data()->PrepareAsyncReadRows(&ctx_, request_, &cq_);
      reader_->StartCall(Tag(kStart));
      if (!Await()) return Finish();
    }
    reader_->Read(response, Tag(kRead));
    if (!Await()) return Finish();
    record_->Received(response->ByteSizeLong());
    return true;
  }

  // OK once the stream ended well; DEADLINE_EXCEEDED when a response took
  // longer than the RPC timeout.
  const grpc::Status& status() const { return status_; }

 private:
  enum TagKind : intptr_t { kStart = 1, kRead = 2, kFinish = 3 };
  static void* Tag(TagKind kind) { return reinterpret_cast<void*>(kind); }

  // Waits for the one operation in flight: its `ok`, or false when it
  // did not complete within the timeout (the call is then cancelled).
  bool Await() {
    void* tag = nullptr;
    bool ok = false;
    if (client_->options().before_wait) client_->options().before_wait();
    const auto deadline =
        std::chrono::system_clock::now() + client_->options().rpc_timeout;
    switch (cq_.AsyncNext(&tag, &ok, deadline)) {
      case grpc::CompletionQueue::GOT_EVENT:
        return ok;
      case grpc::CompletionQueue::TIMEOUT:
        timed_out_ = true;
        ctx_.TryCancel();
        cq_.Next(&tag, &ok);  // the cancelled operation comes back
        return false;
      case grpc::CompletionQueue::SHUTDOWN:
        return false;
    }
    return false;
  }

  // Collects the call's status; returns false for Next.
  bool Finish() {
    reader_->Finish(&status_, Tag(kFinish));
    Await();
    if (timed_out_) {
      status_ = grpc::Status(
          grpc::StatusCode::DEADLINE_EXCEEDED,
          "no response within " +
              std::to_string(client_->options().rpc_timeout.count()) + " ms");
    }
    done_ = true;
    record_->Finish(status_.error_code());
    return false;
  }

  const Client* const client_;
  const v2::ReadRowsRequest request_;
  const bool retry_;
  std::optional<RpcRecord> record_;  // from the start of the call
  grpc::ClientContext ctx_;
  grpc::CompletionQueue cq_;
  std::unique_ptr<grpc::ClientAsyncReader<v2::ReadRowsResponse>> reader_;
  grpc::Status status_;
  bool done_ = false;
  bool timed_out_ = false;
};

// Reassembles rows from ReadRows chunks, checking the protocol as the
// client libraries do: a row's first chunk carries its key, family and
// qualifier; a later chunk of the row carries a family only with a
// qualifier, and a key only if it is the row's; value_size is set on every
// chunk of a split value but the last, which carries no key parts; a
// reset_row (alone) drops the row in progress; commit_row ends the row;
// rows come in increasing key order.
class RowAssembler {
 public:
  // Takes one chunk; *committed tells whether it completed a row (then
  // TakeRow()). IOError for a chunk that breaks the protocol.
  Status Add(const v2::ReadRowsResponse::CellChunk& c, bool* committed) {
    *committed = false;
    const bool key_parts = !c.row_key().empty() || c.has_family_name() ||
                           c.has_qualifier() || c.timestamp_micros() != 0;
    if (c.reset_row()) {
      if (state_ == kNewRow) return Broken("reset_row between rows");
      if (key_parts || !c.value().empty() || c.value_size() != 0 ||
          c.labels_size() != 0) {
        return Broken("reset_row with other fields");
      }
      row_.cells.clear();
      state_ = kNewRow;
      return Status::OK();
    }
    if (c.commit_row() && c.value_size() > 0) {
      return Broken("commit_row inside a split value");
    }
    switch (state_) {
      case kNewRow:
        if (c.row_key().empty() || !c.has_family_name() || !c.has_qualifier()) {
          return Broken(
              "a row's first chunk lacks its key, family or qualifier");
        }
        if (have_last_ && c.row_key() <= last_key_) {
          return Broken("row keys out of order");
        }
        row_.key = c.row_key();
        row_.cells.clear();
        family_ = c.family_name().value();
        qualifier_ = c.qualifier().value();
        StartCell(c);
        break;
      case kRowInProgress:
        if (!c.row_key().empty() && c.row_key() != row_.key) {
          return Broken("a new row key inside a row");
        }
        if (c.has_family_name() && !c.has_qualifier()) {
          return Broken("a new family without a qualifier");
        }
        if (c.has_family_name()) family_ = c.family_name().value();
        if (c.has_qualifier()) qualifier_ = c.qualifier().value();
        StartCell(c);
        break;
      case kCellInProgress:
        if (key_parts) return Broken("cell key parts inside a split value");
        value_.append(c.value());
        break;
    }
    if (c.value_size() > 0) {
      state_ = kCellInProgress;
      return Status::OK();
    }
    row_.cells.push_back(
        Cell{family_, qualifier_, timestamp_, std::move(value_)});
    value_.clear();
    state_ = kRowInProgress;
    if (c.commit_row()) {
      state_ = kNewRow;
      last_key_ = row_.key;
      have_last_ = true;
      *committed = true;
    }
    return Status::OK();
  }

  // REQUIRES: Add() just completed a row.
  Row TakeRow() { return std::move(row_); }

  // Whether a row is in progress (the stream may not end there).
  bool InRow() const { return state_ != kNewRow; }

  // Drops a row in progress: its stream broke, another continues after
  // the last committed row.
  void DropPartialRow() {
    row_.cells.clear();
    value_.clear();
    state_ = kNewRow;
  }

  // Forgets everything: a new stream may start anywhere.
  void Restart() {
    DropPartialRow();
    have_last_ = false;
    last_key_.clear();
  }

 private:
  enum State { kNewRow, kRowInProgress, kCellInProgress };

  static Status Broken(std::string_view what) {
    return Status::IOError("ReadRows: the response breaks the chunk protocol",
                           what);
  }

  void StartCell(const v2::ReadRowsResponse::CellChunk& c) {
    timestamp_ = c.timestamp_micros();
    value_ = c.value();
    if (c.value_size() > 0) {
      value_.reserve(std::min<size_t>(c.value_size(), kMaxMessageBytes));
    }
  }

  State state_ = kNewRow;
  Row row_;
  std::string family_, qualifier_;
  int64_t timestamp_ = 0;
  std::string value_;
  bool have_last_ = false;
  std::string last_key_;
};

// What GetSnapshot returns: only a name for "this client's reads".
class RemoteSnapshot final : public Snapshot {
 public:
  explicit RemoteSnapshot(const void* owner) : owner_(owner) {}
  const void* owner() const { return owner_; }

 private:
  const void* const owner_;
};

// Recent answers of the server, kept for RemoteOptions::read_cache_ttl so
// that the reads one filesystem operation makes (a LOOKUP, the GETATTR and
// OPEN after it; the OPENs of the cells a listing just streamed) cost one
// RPC, not one each: the newest version of cells (or that a cell has
// none), from ReadCell, ReadRow and scans that read newest versions with
// values, and tables' families. Never what a read as of a time (`at`) or
// of more versions asks. Tables' families are kept for their own TTL
// (RemoteOptions::schema_cache_ttl). Every write through this client drops what
// it may change (the row; for a schema change, the table) when it is sent and
// when it returns, and a read that was in flight across a write stores nothing
// (the write epoch moved on), so this client always reads its own writes. A
// write from elsewhere is seen once the entry is older than the TTL.
class ReadCache {
 public:
  ReadCache(std::chrono::milliseconds ttl, std::chrono::milliseconds schema_ttl)
      : ttl_(ttl), schema_ttl_(schema_ttl) {}

  bool enabled() const { return ttl_.count() > 0; }
  // Moves on at every write: what a read started before it fetched may
  // be stale, and is not stored (the Put* calls take the read's epoch).
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }

  // The newest version of the cell: nullopt when not cached; a nullopt
  // Cell when cached as having none.
  std::optional<std::optional<Cell>> FindCell(std::string_view table,
                                              std::string_view row,
                                              std::string_view family,
                                              std::string_view qualifier) {
    MutexLock l(&mu_);
    auto it = cells_.find(Key(table, row, family, qualifier));
    if (it == cells_.end() || Expired(it->second.time)) return std::nullopt;
    return it->second.cell;
  }

  void PutCell(uint64_t epoch, std::string_view table, std::string_view row,
               std::string_view family, std::string_view qualifier,
               std::optional<Cell> cell) {
    if (!enabled() || (cell.has_value() && cell->value.size() > kMaxValue)) {
      return;
    }
    MutexLock l(&mu_);
    if (epoch != this->epoch()) return;
    PutLocked(Key(table, row, family, qualifier), std::move(cell));
  }

  // The newest version of each column in `row` (a row of a scan or read
  // with max_versions 1).
  void PutRow(uint64_t epoch, std::string_view table, const Row& row) {
    if (!enabled()) return;
    MutexLock l(&mu_);
    if (epoch != this->epoch()) return;
    for (const Cell& c : row.cells) {
      if (c.value.size() > kMaxValue) continue;
      PutLocked(Key(table, row.key, c.family, c.qualifier), c);
    }
  }

  // A scan of one row (ScanOptions of `content` over `families`, sorted,
  // none: all), answered by a scan of it that read at least as much: as
  // many families, and values if asked. nullopt when not cached.
  std::optional<Row> FindRowScan(std::string_view table, std::string_view row,
                                 ScanContent content,
                                 const std::vector<std::string>& families) {
    MutexLock l(&mu_);
    auto it =
        row_scans_.find(std::make_pair(std::string(table), std::string(row)));
    if (it == row_scans_.end()) return std::nullopt;
    for (const RowScan& e : it->second) {
      if (Expired(e.time) || !Covers(e.content, content)) continue;
      if (!e.families.empty() &&
          (families.empty() ||
           !std::includes(e.families.begin(), e.families.end(),
                          families.begin(), families.end()))) {
        continue;
      }
      Row out;
      out.key = e.row.key;
      for (const Cell& c : e.row.cells) {
        if (families.empty() ||
            std::binary_search(families.begin(), families.end(), c.family)) {
          out.cells.push_back(c);
        }
      }
      return out;
    }
    return std::nullopt;
  }

  void PutRowScan(uint64_t epoch, std::string_view table, ScanContent content,
                  std::vector<std::string> families, const Row& row) {
    if (!enabled()) return;
    size_t bytes = 0;
    for (const Cell& c : row.cells) bytes += c.value.size();
    if (bytes > kMaxValue) return;
    MutexLock l(&mu_);
    if (epoch != this->epoch()) return;
    if (row_scans_.size() >= kMaxRowScans) {
      for (auto i = row_scans_.begin(); i != row_scans_.end();) {
        std::erase_if(i->second,
                      [&](const RowScan& e) { return Expired(e.time); });
        i = i->second.empty() ? row_scans_.erase(i) : std::next(i);
      }
      if (row_scans_.size() >= kMaxRowScans) row_scans_.clear();
    }
    std::vector<RowScan>& v =
        row_scans_[std::make_pair(std::string(table), row.key)];
    if (v.size() >= 4) v.erase(v.begin());  // the oldest
    v.push_back(RowScan{content, std::move(families), row, Now()});
  }

  std::optional<std::vector<FamilyInfo>> FindFamilies(std::string_view table) {
    MutexLock l(&mu_);
    auto it = families_.find(table);
    if (it == families_.end() || Now() - it->second.time >= schema_ttl_) {
      return std::nullopt;
    }
    return it->second.families;
  }

  void PutFamilies(uint64_t epoch, std::string_view table,
                   const std::vector<FamilyInfo>& families) {
    if (schema_ttl_.count() <= 0) return;
    MutexLock l(&mu_);
    if (epoch != this->epoch()) return;
    families_[std::string(table)] = {families, Now()};
  }

  // A write of `row` is sent or returned.
  void WroteRow(std::string_view table, std::string_view row) {
    MutexLock l(&mu_);
    epoch_.fetch_add(1, std::memory_order_acq_rel);
    auto it = cells_.lower_bound(Key(table, row, {}, {}));
    while (it != cells_.end() && std::get<0>(it->first) == table &&
           std::get<1>(it->first) == row) {
      bytes_ -= Bytes(it->first, it->second.cell);
      it = cells_.erase(it);
    }
    row_scans_.erase(std::make_pair(std::string(table), std::string(row)));
    if (written_.size() >= kMaxRowScans) written_.clear();
    written_[std::make_pair(std::string(table), std::string(row))] = Now();
  }

  // Whether this client wrote `row` within the TTL: a row being written
  // (files created or removed one by one) is read cell by cell, not whole.
  bool RecentlyWritten(std::string_view table, std::string_view row) {
    MutexLock l(&mu_);
    auto it =
        written_.find(std::make_pair(std::string(table), std::string(row)));
    return it != written_.end() && !Expired(it->second);
  }

  // The table's schema or existence changes (or its rows, all of them).
  void ChangedTable(std::string_view table) {
    MutexLock l(&mu_);
    epoch_.fetch_add(1, std::memory_order_acq_rel);
    auto f = families_.find(table);
    if (f != families_.end()) families_.erase(f);
    auto it = cells_.lower_bound(Key(table, {}, {}, {}));
    while (it != cells_.end() && std::get<0>(it->first) == table) {
      bytes_ -= Bytes(it->first, it->second.cell);
      it = cells_.erase(it);
    }
    auto r = row_scans_.lower_bound(
        std::make_pair(std::string(table), std::string()));
    while (r != row_scans_.end() && r->first.first == table) {
      r = row_scans_.erase(r);
    }
  }

 private:
  using CellKey =
      std::tuple<std::string, std::string, std::string, std::string>;
  struct CachedCell {
    std::optional<Cell> cell;
    std::chrono::steady_clock::time_point time;
  };
  struct CachedFamilies {
    std::vector<FamilyInfo> families;
    std::chrono::steady_clock::time_point time;
  };
  struct RowScan {
    ScanContent content;
    std::vector<std::string> families;  // sorted; empty: all
    Row row;
    std::chrono::steady_clock::time_point time;
  };
  // Rows whose scans are kept, at most.
  static constexpr size_t kMaxRowScans = 4096;

  // Whether what a scan of `had` read answers one that asks `want`.
  static bool Covers(ScanContent had, ScanContent want) {
    if (had == ScanContent::kCells) return true;
    if (had == ScanContent::kNoValues) return want != ScanContent::kCells;
    return want == ScanContent::kRows;
  }
  // Values above this are read again rather than kept.
  static constexpr size_t kMaxValue = 1 << 20;
  // Past this, expired entries go, and when that is not enough, all.
  static constexpr size_t kMaxBytes = 32u << 20;

  static CellKey Key(std::string_view table, std::string_view row,
                     std::string_view family, std::string_view qualifier) {
    return {std::string(table), std::string(row), std::string(family),
            std::string(qualifier)};
  }
  static size_t Bytes(const CellKey& k, const std::optional<Cell>& c) {
    return 64 + std::get<0>(k).size() + std::get<1>(k).size() +
           std::get<2>(k).size() + std::get<3>(k).size() +
           (c.has_value() ? c->value.size() : 0);
  }
  static std::chrono::steady_clock::time_point Now() {
    return std::chrono::steady_clock::now();
  }
  bool Expired(std::chrono::steady_clock::time_point t) const {
    return Now() - t >= ttl_;
  }

  void PutLocked(CellKey key, std::optional<Cell> cell) REQUIRES(mu_) {
    const size_t bytes = Bytes(key, cell);
    auto [it, inserted] = cells_.try_emplace(std::move(key));
    if (!inserted) bytes_ -= Bytes(it->first, it->second.cell);
    it->second = {std::move(cell), Now()};
    bytes_ += bytes;
    if (bytes_ <= kMaxBytes) return;
    for (auto i = cells_.begin(); i != cells_.end();) {
      if (Expired(i->second.time)) {
        bytes_ -= Bytes(i->first, i->second.cell);
        i = cells_.erase(i);
      } else {
        ++i;
      }
    }
    if (bytes_ > kMaxBytes) {
      cells_.clear();
      bytes_ = 0;
    }
  }

  const std::chrono::milliseconds ttl_;
  const std::chrono::milliseconds schema_ttl_;
  std::atomic<uint64_t> epoch_{0};
  Mutex mu_;
  std::map<CellKey, CachedCell> cells_ GUARDED_BY(mu_);
  size_t bytes_ GUARDED_BY(mu_) = 0;
  std::map<std::string, CachedFamilies, std::less<>> families_ GUARDED_BY(mu_);
  std::map<std::pair<std::string, std::string>, std::vector<RowScan>> row_scans_
      GUARDED_BY(mu_);
  // When this client last wrote each row (RecentlyWritten).
  std::map<std::pair<std::string, std::string>,
           std::chrono::steady_clock::time_point>
      written_ GUARDED_BY(mu_);
};

// A scan of one row held in memory (a row scan the read cache answered or
// kept), positioned as RemoteScanner is.
// Where a Seek to (family, qualifier) within `row` lands: the first cell
// at or after it; a family the row does not hold (or none): the row's
// start. row.cells.size() when past its last cell.
size_t PositionInRow(const Row& row, std::string_view family,
                     std::string_view qualifier) {
  if (family.empty()) return 0;
  size_t i = 0;
  while (i < row.cells.size() && row.cells[i].family != family) i++;
  if (i == row.cells.size()) return 0;
  while (i < row.cells.size() && row.cells[i].family == family &&
         row.cells[i].qualifier < qualifier) {
    i++;
  }
  return i;
}

class RowScanner final : public Scanner {
 public:
  explicit RowScanner(Row row) : row_(std::move(row)) {}

  void Seek(std::string_view row, std::string_view family,
            std::string_view qualifier) override {
    pos_ = 0;
    if (row > std::string_view(row_.key)) {
      pos_ = row_.cells.size();
    } else if (row == std::string_view(row_.key)) {
      pos_ = tabletfs::api::PositionInRow(row_, family, qualifier);
    }
  }
  void SeekToFirst() override { pos_ = 0; }
  bool Valid() const override { return pos_ < row_.cells.size(); }
  void Next() override { pos_++; }
  void NextColumn() override {
    const Cell& c = row_.cells[pos_];
    const std::string family = c.family, qualifier = c.qualifier;
    while (Valid() && row_.cells[pos_].family == family &&
           row_.cells[pos_].qualifier == qualifier) {
      pos_++;
    }
  }
  void NextFamily() override {
    const std::string family = row_.cells[pos_].family;
    while (Valid() && row_.cells[pos_].family == family) pos_++;
  }
  void NextRow() override { pos_ = row_.cells.size(); }
  std::string_view row() const override { return row_.key; }
  std::string_view family() const override { return row_.cells[pos_].family; }
  std::string_view qualifier() const override {
    return row_.cells[pos_].qualifier;
  }
  int64_t timestamp() const override { return row_.cells[pos_].timestamp; }
  uint64_t value_size() const override { return row_.cells[pos_].value.size(); }
  Result<std::string_view> value() override {
    return std::string_view(row_.cells[pos_].value);
  }
  Status status() const override { return Status::OK(); }

 private:
  const Row row_;
  size_t pos_ = 0;
};

// Streams ReadRows over [start, end), holding one row (and the response
// it came in) at a time. Seek within the rows the stream is known to have
// no others before (from `covered_` up to the buffered row) moves inside
// the buffer; any other Seek starts a new stream. A stream that fails with
// UNAVAILABLE resumes after the last row it delivered.
// Scans from a table's start without values, kept for a moment after their
// scanner went, so that the next such scan of the same rows takes over the
// stream and the rows already read instead of starting another ReadRows. A
// mount's `ls TABLE` is OPENDIR, GETATTR of the table (which reads its first
// rows: fs/dir_handle.h ScanTableTimes) and READDIRPLUS (every row, the same
// read options): with this, one stream serves both, so a listing is one
// ReadRows however big the table. Kept for the read cache's TTL from the
// moment the stream opened, and only while no write went through this
// client since (the read cache's epoch): the rows are as fresh as the
// cache's. A reaper thread cancels the streams nobody took in time; at most
// kMaxParked are kept (the oldest goes first).
// Where a scan's ReadRows stream stands: the call, the response being read
// and the row being assembled. Moves from a scanner to ParkedStreams and
// back.
struct ScanStream {
  // nullptr once the stream ended (or failed).
  std::unique_ptr<ReadRowsCall> call;
  v2::ReadRowsResponse response;
  int next_chunk = 0;
  RowAssembler assembler;
  // Where the stream's unread part begins: after the last row it gave.
  std::string resume;
  int retries = 0;
};

class ParkedStreams {
 public:
  static constexpr size_t kMaxParked = 8;
  // The rows a parked stream may hold (names and times only).
  static constexpr size_t kMaxCells = 32768;

  struct Parked {
    std::string key;  // Key(): the table, range and filter
    std::chrono::steady_clock::time_point opened;
    uint64_t epoch = 0;
    // The rows read so far, from the range's start, in order.
    std::vector<Row> head;
    // The stream where the scanner left it.
    ScanStream stream;
  };

  ParkedStreams(std::chrono::milliseconds ttl, const ReadCache* cache)
      : ttl_(ttl), cache_(cache) {
    if (enabled()) reaper_ = std::thread([this] { Reap(); });
  }
  ~ParkedStreams() {
    {
      MutexLock l(&mu_);
      stop_ = true;
      cv_.SignalAll();
    }
    if (reaper_.joinable()) reaper_.join();
  }
  ParkedStreams(const ParkedStreams&) = delete;
  ParkedStreams& operator=(const ParkedStreams&) = delete;

  bool enabled() const { return ttl_.count() > 0; }

  static std::string Key(std::string_view table, std::string_view start,
                         std::string_view end,
                         const std::optional<v2::RowFilter>& filter) {
    std::string key;
    for (std::string_view part : {table, start, end}) {
      key += std::to_string(part.size()) + ":";
      key += part;
    }
    if (filter.has_value()) key += filter->SerializeAsString();
    return key;
  }

  void Park(std::unique_ptr<Parked> p) {
    std::unique_ptr<Parked> evicted;  // destroyed (cancelled) unlocked
    MutexLock l(&mu_);
    if (stop_) return;
    if (parked_.size() == kMaxParked) {
      evicted = std::move(parked_.front());
      parked_.erase(parked_.begin());
    }
    parked_.push_back(std::move(p));
    cv_.SignalAll();
  }

  // The stream parked under `key` while still fresh, or nullptr.
  std::unique_ptr<Parked> Take(const std::string& key) {
    std::unique_ptr<Parked> out;
    {
      MutexLock l(&mu_);
      for (auto it = parked_.begin(); it != parked_.end(); ++it) {
        if ((*it)->key == key) {
          out = std::move(*it);
          parked_.erase(it);
          break;
        }
      }
    }
    if (out != nullptr && !Fresh(*out)) out.reset();  // cancels the stream
    return out;
  }

 private:
  bool Fresh(const Parked& p) const {
    return std::chrono::steady_clock::now() < p.opened + ttl_ &&
           p.epoch == cache_->epoch();
  }

  void Reap() {
    mu_.Lock();
    while (!stop_) {
      std::vector<std::unique_ptr<Parked>> stale;
      auto next = std::chrono::steady_clock::time_point::max();
      for (auto it = parked_.begin(); it != parked_.end();) {
        if (Fresh(**it)) {
          next = std::min(next, (*it)->opened + ttl_);
          ++it;
        } else {
          stale.push_back(std::move(*it));
          it = parked_.erase(it);
        }
      }
      if (!stale.empty()) {
        mu_.Unlock();
        stale.clear();  // cancels the streams
        mu_.Lock();
        continue;
      }
      if (next == std::chrono::steady_clock::time_point::max()) {
        Wait();
      } else {
        WaitFor(std::chrono::duration_cast<std::chrono::microseconds>(
                    next - std::chrono::steady_clock::now()) +
                std::chrono::microseconds(1));
      }
    }
    std::vector<std::unique_ptr<Parked>> left = std::move(parked_);
    mu_.Unlock();
  }
  // CondVar's waits name its own mutex, which the analysis cannot tie to
  // mu_.
  void Wait() REQUIRES(mu_) NO_THREAD_SAFETY_ANALYSIS { cv_.Wait(); }
  void WaitFor(std::chrono::microseconds t)
      REQUIRES(mu_) NO_THREAD_SAFETY_ANALYSIS {
    cv_.WaitFor(t);
  }

  const std::chrono::milliseconds ttl_;
  const ReadCache* const cache_;
  Mutex mu_;
  CondVar cv_{&mu_};
  std::vector<std::unique_ptr<Parked>> parked_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread reaper_;
};

class RemoteScanner final : public Scanner {
 public:
  // `cache`: where the rows it reads go (newest versions with values),
  // or nullptr. `parking`: where its stream goes when it is destroyed
  // having read only from the range's start on (ParkedStreams), or
  // nullptr; `epochs` tells the read cache's epoch for it.
  RemoteScanner(const Client* client, ReadCache* cache, ParkedStreams* parking,
                const ReadCache* epochs, std::string table,
                std::optional<v2::RowFilter> filter, std::string start,
                std::string end)
      : client_(client),
        cache_(cache),
        parking_(parking),
        epochs_(epochs),
        table_(std::move(table)),
        filter_(std::move(filter)),
        start_(std::move(start)),
        end_(std::move(end)),
        recording_(parking != nullptr) {}

  ~RemoteScanner() override {
    if (!recording_ || !status_.ok()) return;
    auto p = std::make_unique<ParkedStreams::Parked>();
    p->key = ParkedStreams::Key(table_, start_, end_, filter_);
    p->opened = stream_opened_;
    p->epoch = stream_epoch_;
    p->head = std::move(head_);
    for (Row& r : replay_) p->head.push_back(std::move(r));
    p->stream = std::move(stream_);
    parking_->Park(std::move(p));
  }

  // Takes over a parked stream of the same range and filter: its rows are
  // read again from memory, then the stream goes on.
  void Adopt(std::unique_ptr<ParkedStreams::Parked> p) {
    opened_once_ = true;
    stream_opened_ = p->opened;
    stream_epoch_ = p->epoch;
    replay_.assign(std::make_move_iterator(p->head.begin()),
                   std::make_move_iterator(p->head.end()));
    replay_covered_ = start_;
    stream_ = std::move(p->stream);
    status_ = Status::OK();
    LoadNextRow();
  }

  void Seek(std::string_view row, std::string_view family,
            std::string_view qualifier) override {
    std::string target(row);
    bool inside = true;  // family and qualifier apply to target's row
    if (target < start_) {
      target = start_;
      inside = false;
    }
    if (!end_.empty() && target >= end_) {
      EndAt(target);
      return;
    }
    if (positioned_ && status_.ok() && covered_ <= target &&
        (!Valid() || target <= row_.key)) {
      if (!Valid()) return;  // nothing at or after target
      if (target < row_.key || !inside) {
        pos_ = 0;
      } else {
        PositionInRow(family, qualifier);
      }
      return;
    }
    Restart(target);
    LoadNextRow();
    if (inside && Valid() && row_.key == target) {
      PositionInRow(family, qualifier);
    }
  }

  void SeekToFirst() override { Seek(start_, {}, {}); }

  bool Valid() const override { return pos_ < row_.cells.size(); }

  void Next() override {
    assert(Valid());
    if (++pos_ == row_.cells.size()) LoadNextRow();
  }

  void NextColumn() override {
    assert(Valid());
    const Cell& c = row_.cells[pos_];
    const std::string family = c.family, qualifier = c.qualifier;
    SkipWhile([&](const Cell& x) {
      return x.family == family && x.qualifier == qualifier;
    });
  }

  void NextFamily() override {
    assert(Valid());
    const std::string family = row_.cells[pos_].family;
    SkipWhile([&](const Cell& x) { return x.family == family; });
  }

  void NextRow() override {
    assert(Valid());
    LoadNextRow();
  }

  std::string_view row() const override { return row_.key; }
  std::string_view family() const override { return row_.cells[pos_].family; }
  std::string_view qualifier() const override {
    return row_.cells[pos_].qualifier;
  }
  int64_t timestamp() const override { return row_.cells[pos_].timestamp; }
  uint64_t value_size() const override { return row_.cells[pos_].value.size(); }
  Result<std::string_view> value() override {
    return std::string_view(row_.cells[pos_].value);
  }

  Status status() const override { return status_; }

 private:
  template <typename Same>
  void SkipWhile(Same same) {
    while (pos_ < row_.cells.size() && same(row_.cells[pos_])) pos_++;
    if (pos_ == row_.cells.size()) LoadNextRow();
  }

  // Within the buffered row (api::PositionInRow); past its last cell: the
  // next row.
  void PositionInRow(std::string_view family, std::string_view qualifier) {
    pos_ = tabletfs::api::PositionInRow(row_, family, qualifier);
    if (pos_ == row_.cells.size()) LoadNextRow();
  }

  // Read somewhere else than on from the start: nothing to park.
  void StopRecording() {
    recording_ = false;
    head_.clear();
    replay_.clear();
  }

  // A row read (row_): kept for parking while recording.
  void Record() {
    if (!recording_) return;
    head_cells_ += row_.cells.size();
    if (head_cells_ > ParkedStreams::kMaxCells) return StopRecording();
    head_.push_back(row_);
  }

  // Past the end: no rows at or after `from`.
  void EndAt(std::string from) {
    StopRecording();
    stream_.call.reset();
    row_.cells.clear();
    pos_ = 0;
    status_ = Status::OK();
    positioned_ = true;
    covered_ = std::move(from);
  }

  void Restart(const std::string& from) {
    if (opened_once_) StopRecording();
    opened_once_ = true;
    stream_opened_ = std::chrono::steady_clock::now();
    if (epochs_ != nullptr) stream_epoch_ = epochs_->epoch();
    stream_.assembler.Restart();
    stream_.retries = 0;
    status_ = Status::OK();
    stream_.resume = from;
    OpenStream();
  }

  // A stream over [stream_.resume, end_).
  void OpenStream() {
    stream_.call.reset();
    stream_.response.Clear();
    stream_.next_chunk = 0;
    if (!end_.empty() && stream_.resume >= end_) return;  // nothing left
    v2::ReadRowsRequest request;
    client_->Address(table_, &request);
    v2::RowRange* range = request.mutable_rows()->add_row_ranges();
    if (!stream_.resume.empty()) range->set_start_key_closed(stream_.resume);
    if (!end_.empty()) range->set_end_key_open(end_);
    if (filter_.has_value()) *request.mutable_filter() = *filter_;
    if (cache_ != nullptr) epoch_ = cache_->epoch();
    stream_.call = std::make_unique<ReadRowsCall>(
        client_, table_, std::move(request), stream_.retries > 0);
  }

  // Reads the next whole row into row_; at the end or on an error row_ is
  // empty (status_ tells which).
  void LoadNextRow() {
    row_.cells.clear();
    pos_ = 0;
    positioned_ = true;
    if (!replay_.empty()) {  // an adopted stream's rows (Adopt)
      covered_ = replay_covered_;
      row_ = std::move(replay_.front());
      replay_.pop_front();
      replay_covered_ = After(row_.key);
      Record();
      return;
    }
    // No row lies between where the stream stands and the row it gives.
    covered_ = stream_.resume;
    while (stream_.call != nullptr) {
      while (stream_.next_chunk < stream_.response.chunks_size()) {
        bool committed = false;
        Status s = stream_.assembler.Add(
            stream_.response.chunks(stream_.next_chunk++), &committed);
        if (!s.ok()) return Fail(s);
        if (committed) {
          row_ = stream_.assembler.TakeRow();
          if (cache_ != nullptr) cache_->PutRow(epoch_, table_, row_);
          Record();
          stream_.resume = After(row_.key);
          stream_.retries = 0;
          return;
        }
      }
      // Every row of the response delivered: the server vouches that
      // nothing visible lies before the key it last scanned.
      const std::string& scanned = stream_.response.last_scanned_row_key();
      if (!scanned.empty() && !stream_.assembler.InRow() &&
          After(scanned) > stream_.resume) {
        stream_.resume = After(scanned);
      }
      stream_.next_chunk = 0;
      if (stream_.call->Next(&stream_.response)) continue;
      const grpc::Status s = stream_.call->status();
      if (s.ok()) {
        stream_.call.reset();
        if (stream_.assembler.InRow()) {
          return Fail(
              Status::IOError("ReadRows: the stream ended inside "
                              "row",
                              row_.key));
        }
        return;  // the end
      }
      if (!Retryable(s, stream_.retries)) return Fail(FromGrpc(s, "ReadRows"));
      Backoff(stream_.retries++);
      stream_.assembler.DropPartialRow();
      OpenStream();
    }
  }

  void Fail(const Status& s) {
    StopRecording();
    stream_.call.reset();
    row_.cells.clear();
    pos_ = 0;
    status_ = s;
  }

  const Client* const client_;
  ReadCache* const cache_;
  ParkedStreams* const parking_;
  const ReadCache* const epochs_;
  const std::string table_;
  const std::optional<v2::RowFilter> filter_;
  // The write epoch when the stream opened (ReadCache).
  uint64_t epoch_ = 0;
  // The scan's range [start_, end_); empty end_: to the table's end.
  const std::string start_, end_;

  ScanStream stream_;

  // The current row and the position in it; Valid() while in it.
  Row row_;
  size_t pos_ = 0;
  // Once positioned: no visible row in [covered_, row_.key), or past
  // covered_ at all when !Valid() and status_ is OK.
  bool positioned_ = false;
  std::string covered_;
  Status status_;

  // Parking (ParkedStreams): while recording_, every row read since the
  // stream opened at the range's start is in head_ (and replay_, rows of
  // an adopted stream not read yet, follows them).
  bool recording_;
  bool opened_once_ = false;
  std::chrono::steady_clock::time_point stream_opened_;
  uint64_t stream_epoch_ = 0;
  std::vector<Row> head_;
  size_t head_cells_ = 0;
  std::deque<Row> replay_;
  std::string replay_covered_;  // after the last replayed row
};

// The change events of one table over a ReadChangeStream call, from the
// moment the server's first message arrives (Start): a thread reads the
// stream into a bounded queue, dropping and counting what overflows as a
// local subscription does; the call's end (the server went away, or closed
// the stream: it fell behind, it stops) ends the subscription with its
// status. Events carry origin 0, and the values of SetCells sent whole
// (up to kMaxEventValueBytes). Destroying it cancels the call.
class RemoteSubscription final : public ChangeSubscription {
 public:
  RemoteSubscription(const Client* client, const SubscribeOptions& options)
      : client_(client),
        table_(options.table),
        max_queued_(options.max_queued_events),
        max_queued_bytes_(options.max_queued_bytes),
        values_(options.values) {}
  RemoteSubscription(const RemoteSubscription&) = delete;
  RemoteSubscription& operator=(const RemoteSubscription&) = delete;

  ~RemoteSubscription() override {
    ctx_.TryCancel();
    if (thread_.joinable()) thread_.join();
  }

  // Opens the stream and waits, at most the RPC timeout, for the server's
  // first message (the daemon sends a heartbeat once it has subscribed):
  // OK, the call's error (NotSupported from a server without change
  // streams), or Busy.
  Status Start() {
    v2::ReadChangeStreamRequest request;
    client_->Address(table_, &request);
    v2::RowRange* whole = request.mutable_partition()->mutable_row_range();
    whole->set_start_key_closed("");
    whole->set_end_key_open("");
    ctx_.AddMetadata("x-goog-request-params", client_->DataParams(table_));
    thread_ = std::thread([this, request] { Run(request); });
    const auto deadline =
        std::chrono::steady_clock::now() + client_->options().rpc_timeout;
    MutexLock lock(&mu_);
    while (!started_ && status_.ok()) {
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) {
        return Status::Busy(
            "ReadChangeStream",
            "no answer within " +
                std::to_string(client_->options().rpc_timeout.count()) + " ms");
      }
      Await(std::chrono::duration_cast<std::chrono::microseconds>(left));
    }
    return started_ ? Status::OK() : status_;
  }

  ChangeBatch Read(std::chrono::microseconds timeout) override {
    MutexLock lock(&mu_);
    if (events_.empty() && lost_ == 0 && status_.ok() && !woken_) {
      Await(timeout);
    }
    woken_ = false;
    ChangeBatch batch;
    batch.events.swap(events_);
    bytes_ = 0;
    batch.lost = lost_;
    lost_ = 0;
    batch.status = status_;
    return batch;
  }

  void Wake() override {
    MutexLock lock(&mu_);
    woken_ = true;
    cv_.SignalAll();
  }

 private:
  void Run(const v2::ReadChangeStreamRequest& request) {
    RpcRecord record(client_->stats(), Rpc::kReadChangeStream,
                     request.ByteSizeLong(), false);
    auto reader = client_->data()->ReadChangeStream(&ctx_, request);
    v2::ReadChangeStreamResponse r;
    std::string row;
    int64_t commit = 0;
    grpc::Status closed;
    while (reader->Read(&r)) {
      record.Received(r.ByteSizeLong());
      MutexLock lock(&mu_);
      started_ = true;
      if (r.has_close_stream()) {
        const google::rpc::Status& c = r.close_stream().status();
        closed = c.code() == 0
                     ? grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                    "the server closed the stream (its "
                                    "partition changed)")
                     : grpc::Status(static_cast<grpc::StatusCode>(c.code()),
                                    c.message());
      }
      if (r.has_data_change()) {
        const auto& d = r.data_change();
        if (d.type() !=
            v2::ReadChangeStreamResponse::DataChange::CONTINUATION) {
          row = d.row_key();
          commit = d.commit_timestamp().seconds() * 1000000 +
                   d.commit_timestamp().nanos() / 1000;
        }
        for (const auto& chunk : d.chunks()) {
          // A large value's later parts continue an event already queued.
          if (chunk.chunk_info().chunked_value_offset() > 0) continue;
          if (std::optional<ChangeEvent> e =
                  ToEvent(chunk.mutation(), row, commit,
                          chunk.chunk_info().chunked_value_size() > 0)) {
            Queue(std::move(*e));
          }
        }
      }
      cv_.SignalAll();
    }
    grpc::Status s = reader->Finish();
    record.Finish(s.error_code());
    MutexLock lock(&mu_);
    if (!closed.ok()) {
      status_ = FromGrpc(closed, "ReadChangeStream");
    } else if (!s.ok()) {
      status_ = FromGrpc(s, "ReadChangeStream");
    } else {
      status_ =
          Status::IOError("ReadChangeStream", "the server ended the stream");
    }
    cv_.SignalAll();
  }

  // The event of one mutation of a DataChange of `row`: a SetCell, a
  // DeleteFromColumn (a range of one microsecond: that version; else the
  // cell), DeleteFromFamily, DeleteFromRow; on the empty row (which the
  // daemon sends for schema drops) a dropped family or table.
  std::optional<ChangeEvent> ToEvent(const v2::Mutation& m,
                                     const std::string& row, int64_t commit,
                                     bool chunked) {
    ChangeEvent e;
    e.table = table_;
    e.row = row;
    e.timestamp = commit;
    switch (m.mutation_case()) {
      case v2::Mutation::kSetCell:
        e.kind = ChangeKind::kSetCell;
        e.family = m.set_cell().family_name();
        e.qualifier = m.set_cell().column_qualifier();
        e.timestamp = m.set_cell().timestamp_micros();
        // An empty value may be a large one the server found gone: it is
        // read by timestamp, as a value the event does not carry.
        if (values_ && !m.set_cell().value().empty() &&
            m.set_cell().value().size() <= kMaxEventValueBytes && !chunked) {
          e.value = m.set_cell().value();
        }
        return e;
      case v2::Mutation::kDeleteFromColumn: {
        const auto& d = m.delete_from_column();
        const auto& range = d.time_range();
        e.family = d.family_name();
        e.qualifier = d.column_qualifier();
        e.kind = ChangeKind::kDeleteCell;
        if (d.has_time_range() && range.end_timestamp_micros() ==
                                      range.start_timestamp_micros() + 1) {
          e.kind = ChangeKind::kDeleteVersion;
          e.timestamp = range.start_timestamp_micros();
        }
        return e;
      }
      case v2::Mutation::kDeleteFromFamily:
        e.kind =
            row.empty() ? ChangeKind::kDropFamily : ChangeKind::kDeleteFamily;
        e.family = m.delete_from_family().family_name();
        return e;
      case v2::Mutation::kDeleteFromRow:
        e.kind = row.empty() ? ChangeKind::kDropTable : ChangeKind::kDeleteRow;
        return e;
      default:
        return std::nullopt;  // AddToCell, MergeToCell: none here
    }
  }

  // CondVar::WaitFor names the CondVar's own mutex, which the analysis
  // cannot tie to mu_.
  void Await(std::chrono::microseconds timeout)
      REQUIRES(mu_) NO_THREAD_SAFETY_ANALYSIS {
    cv_.WaitFor(timeout);
  }

  void Queue(ChangeEvent e) REQUIRES(mu_) {
    const size_t bytes = sizeof(ChangeEvent) + e.row.size() + e.family.size() +
                         e.qualifier.size() +
                         (e.value.has_value() ? e.value->size() : 0);
    if (lost_ > 0 || events_.size() >= max_queued_ ||
        (!events_.empty() && bytes_ + bytes > max_queued_bytes_)) {
      lost_++;
      return;
    }
    bytes_ += bytes;
    events_.push_back(std::move(e));
  }

  const Client* const client_;
  const std::string table_;
  const size_t max_queued_;
  const size_t max_queued_bytes_;
  const bool values_;
  grpc::ClientContext ctx_;
  std::thread thread_;
  Mutex mu_;
  CondVar cv_{&mu_};
  std::vector<ChangeEvent> events_ GUARDED_BY(mu_);
  size_t bytes_ GUARDED_BY(mu_) = 0;
  uint64_t lost_ GUARDED_BY(mu_) = 0;
  Status status_ GUARDED_BY(mu_);
  bool started_ GUARDED_BY(mu_) = false;
  bool woken_ GUARDED_BY(mu_) = false;
};

class RemoteBigtable final : public Bigtable {
 public:
  RemoteBigtable(const RemoteOptions& options,
                 const std::shared_ptr<grpc::Channel>& data,
                 const std::shared_ptr<grpc::Channel>& admin)
      : client_(options, data, admin),
        cache_(options.read_cache_ttl, options.schema_cache_ttl),
        parking_(options.read_cache_ttl, &cache_) {}

  // ---- Schema ----

  Status CreateTable(std::string_view table) override {
    TABLETFS_RETURN_IF_ERROR(ValidateTableName(table));
    admin::CreateTableRequest req;
    req.set_parent(client_.instance());
    req.set_table_id(std::string(table));
    admin::Table resp;
    grpc::Status s =
        client_.Unary(Rpc::kCreateTable, req, &resp, false,
                      "parent=" + UrlEncode(client_.instance()),
                      [&](grpc::ClientContext* ctx) {
                        return client_.admin()->CreateTable(ctx, req, &resp);
                      });
    Forget(table);
    return FromGrpc(s, "CreateTable");
  }

  Status DeleteTable(std::string_view table) override {
    TABLETFS_RETURN_IF_ERROR(CheckTableName(table));
    admin::DeleteTableRequest req;
    req.set_name(client_.TableName(table));
    google::protobuf::Empty resp;
    grpc::Status s = client_.Unary(
        Rpc::kDeleteTable, req, &resp, false, "name=" + UrlEncode(req.name()),
        [&](grpc::ClientContext* ctx) {
          return client_.admin()->DeleteTable(ctx, req, &resp);
        });
    Forget(table);
    return FromGrpc(s, "DeleteTable");
  }

  Result<std::vector<std::string>> ListTables() override {
    admin::ListTablesRequest req;
    req.set_parent(client_.instance());
    req.set_view(admin::Table::NAME_ONLY);
    const std::string prefix = client_.instance() + "/tables/";
    std::vector<std::string> names;
    do {
      admin::ListTablesResponse resp;
      grpc::Status s = client_.Unary(
          Rpc::kListTables, req, &resp, true,
          "parent=" + UrlEncode(req.parent()), [&](grpc::ClientContext* ctx) {
            return client_.admin()->ListTables(ctx, req, &resp);
          });
      if (!s.ok()) return FromGrpc(s, "ListTables");
      for (const admin::Table& t : resp.tables()) {
        if (t.name().starts_with(prefix)) {
          names.push_back(t.name().substr(prefix.size()));
        }
      }
      req.set_page_token(resp.next_page_token());
    } while (!req.page_token().empty());
    std::sort(names.begin(), names.end());
    return names;
  }

  Result<TableInfo> GetTable(std::string_view table) override {
    TABLETFS_RETURN_IF_ERROR(CheckTableName(table));
    admin::Table resp;
    TABLETFS_RETURN_IF_ERROR(
        FromGrpc(Describe(table, admin::Table::NAME_ONLY, &resp), "GetTable"));
    // When it was created is not told.
    return TableInfo{std::string(table), 0};
  }

  Status CreateFamily(std::string_view table, std::string_view family,
                      const FamilySettings& settings) override {
    TABLETFS_RETURN_IF_ERROR(ValidateFamilyName(family));
    TABLETFS_RETURN_IF_ERROR(CheckTableName(table));
    admin::ModifyColumnFamiliesRequest req;
    auto* m = req.add_modifications();
    m->set_id(std::string(family));
    // Only the GC policy has a place in the API.
    *m->mutable_create()->mutable_gc_rule() = ToGcRule(settings.gc_policy);
    return ModifyFamilies(table, &req);
  }

  Status UpdateFamily(std::string_view table, std::string_view family,
                      const FamilySettings& settings) override {
    TABLETFS_RETURN_IF_ERROR(CheckTableName(table));
    if (!ValidateFamilyName(family).ok()) return NoSuchFamily(table, family);
    FamilySettings stored;  // what GetFamily reports beside the policy
    stored.gc_policy = settings.gc_policy;
    // An unknown family says so first (the emulator would say UNKNOWN).
    TABLETFS_RETURN_IF_ERROR(CheckFamily(table, family, /*fresh=*/true));
    if (!(settings == stored)) {
      return Status::NotSupported(
          "a remote store keeps only a family's GC policy: its compression, "
          "owner and mode stay lz4, 0:0 and 0644",
          std::string(table) + ":" + std::string(family));
    }
    admin::ModifyColumnFamiliesRequest req;
    auto* m = req.add_modifications();
    m->set_id(std::string(family));
    *m->mutable_update()->mutable_gc_rule() = ToGcRule(settings.gc_policy);
    return ModifyFamilies(table, &req);
  }

  Status DeleteFamily(std::string_view table,
                      std::string_view family) override {
    TABLETFS_RETURN_IF_ERROR(CheckTableName(table));
    if (!ValidateFamilyName(family).ok()) return NoSuchFamily(table, family);
    TABLETFS_RETURN_IF_ERROR(CheckFamily(table, family, /*fresh=*/true));
    admin::ModifyColumnFamiliesRequest req;
    auto* m = req.add_modifications();
    m->set_id(std::string(family));
    m->set_drop(true);
    return ModifyFamilies(table, &req);
  }

  Result<std::vector<FamilyInfo>> ListFamilies(
      std::string_view table) override {
    TABLETFS_RETURN_IF_ERROR(CheckTableName(table));
    return Families(table);
  }

  Result<FamilySettings> GetFamily(std::string_view table,
                                   std::string_view family) override {
    TABLETFS_RETURN_IF_ERROR(CheckTableName(table));
    if (!ValidateFamilyName(family).ok()) return NoSuchFamily(table, family);
    TABLETFS_ASSIGN_OR_RETURN(std::vector<FamilyInfo> families,
                              Families(table));
    for (FamilyInfo& f : families) {
      if (f.name == family) return std::move(f.settings);
    }
    return NoSuchFamily(table, family);
  }

  // ---- Writes ----

  Result<int64_t> Apply(std::string_view table, const RowMutation& mutation,
                        const WriteOptions&) override {
    TABLETFS_RETURN_IF_ERROR(CheckApply(table, mutation));
    const int64_t ts = NextTimestamp();
    v2::MutateRowRequest req;
    client_.Address(table, &req);
    req.set_row_key(mutation.row());
    auto send = [&](RangeWidth width) {
      req.clear_mutations();
      AddMutations(mutation, ts, width, req.mutable_mutations()).IgnoreError();
      v2::MutateRowResponse resp;
      // Every timestamp is explicit now: a repeat writes the same versions.
      return client_.Unary(Rpc::kMutateRow, req, &resp, true,
                           client_.DataParams(table),
                           [&](grpc::ClientContext* ctx) {
                             return client_.data()->MutateRow(ctx, req, &resp);
                           });
    };
    grpc::Status s =
        SendWithRanges(send, DeletesAWholeMillisecond(mutation, ts));
    cache_.WroteRow(table, mutation.row());
    if (!s.ok()) return WriteError(table, s, "MutateRow");
    return ts;
  }

  // MutateRows. The API commits the entries of one request in no
  // particular order, so a row written twice goes into two requests, sent
  // in order; entries refused UNAVAILABLE are sent again on their own.
  std::vector<Result<int64_t>> ApplyBatch(
      std::string_view table, const std::vector<RowMutation>& mutations,
      const WriteOptions&) override {
    std::vector<Result<int64_t>> out;
    out.reserve(mutations.size());
    std::vector<BatchEntry> pending;
    for (size_t i = 0; i < mutations.size(); i++) {
      Status s = CheckApply(table, mutations[i]);
      out.emplace_back(s.ok() ? Status::IOError("MutateRows: not sent") : s);
      if (s.ok()) pending.push_back({i, NextTimestamp()});
    }
    std::optional<bool> table_exists;
    for (size_t begin = 0; begin < pending.size();) {
      std::set<std::string_view> rows;
      size_t end = begin, ops = 0, bytes = 0;
      for (; end < pending.size(); end++) {
        const RowMutation& m = mutations[pending[end].index];
        if (end > begin &&
            (rows.count(m.row()) != 0 ||
             ops + m.ops().size() > static_cast<size_t>(kMaxMutationsPerRow) ||
             bytes + m.ByteSize() > kMaxBatchBytes)) {
          break;
        }
        rows.insert(m.row());
        ops += m.ops().size();
        bytes += m.ByteSize();
      }
      SendBatch(table, mutations,
                std::vector<BatchEntry>(pending.begin() + begin,
                                        pending.begin() + end),
                &table_exists, &out);
      for (size_t i = begin; i < end; i++) {
        cache_.WroteRow(table, mutations[pending[i].index].row());
      }
      begin = end;
    }
    return out;
  }

  Result<AppendResult> Append(std::string_view table, std::string_view row,
                              std::string_view family,
                              std::string_view qualifier, std::string_view data,
                              const WriteOptions&) override {
    v2::ReadModifyWriteRule rule;
    rule.set_append_value(std::string(data));
    TABLETFS_ASSIGN_OR_RETURN(
        Cell cell, ReadModifyWrite(table, row, family, qualifier, &rule));
    return AppendResult{cell.timestamp, cell.value.size()};
  }

  Result<int64_t> Increment(std::string_view table, std::string_view row,
                            std::string_view family, std::string_view qualifier,
                            int64_t delta, const WriteOptions&) override {
    v2::ReadModifyWriteRule rule;
    rule.set_increment_amount(delta);
    TABLETFS_ASSIGN_OR_RETURN(
        Cell cell, ReadModifyWrite(table, row, family, qualifier, &rule));
    if (cell.value.size() != 8) {
      return Status::IOError("ReadModifyWriteRow: the incremented value is " +
                             std::to_string(cell.value.size()) +
                             " bytes, not 8");
    }
    uint64_t n = 0;
    for (unsigned char c : cell.value) n = n << 8 | c;
    return static_cast<int64_t>(n);
  }

  Result<bool> CheckAndMutate(std::string_view table, std::string_view row,
                              const CellCondition& condition,
                              const RowMutation& if_true,
                              const RowMutation& if_false,
                              const WriteOptions&) override {
    TABLETFS_RETURN_IF_ERROR(CheckWriteKey(row));
    for (const RowMutation* m : {&if_true, &if_false}) {
      if (!m->empty() && m->row() != row) {
        return Status::InvalidArgument("CheckAndMutate: mutation for row '" +
                                       m->row() +
                                       "' differs from the checked row");
      }
    }
    TABLETFS_RETURN_IF_ERROR(CheckTableName(table));
    if (!ValidateFamilyName(condition.family).ok()) {
      return NoSuchFamily(table, condition.family);
    }
    // The API reads an unknown family as an absent cell.
    TABLETFS_RETURN_IF_ERROR(CheckFamily(table, condition.family));
    TABLETFS_RETURN_IF_ERROR(CheckMutationFamilies(table, if_true));
    TABLETFS_RETURN_IF_ERROR(CheckMutationFamilies(table, if_false));
    std::vector<v2::RowFilter> parts;
    parts.push_back(FamilyFilter(QuoteExact(condition.family)));
    parts.push_back(QualifierFilter(QuoteExact(condition.qualifier)));
    parts.emplace_back().set_cells_per_column_limit_filter(1);
    if (condition.op == CellCondition::Op::kEquals) {
      parts.emplace_back().set_value_regex_filter(QuoteExact(condition.value));
    }
    v2::RowFilter predicate = *Chain(std::move(parts));
    if (predicate.ByteSizeLong() > kMaxFilterBytes) {
      return Status::NotSupported(
          "CheckAndMutate: comparing a value of " +
          std::to_string(condition.value.size()) +
          " bytes needs a filter above the Bigtable API's limit of 20480 "
          "bytes");
    }
    // kNotExists holds exactly when kExists does not.
    const bool swapped = condition.op == CellCondition::Op::kNotExists;
    const RowMutation& on_match = swapped ? if_false : if_true;
    const RowMutation& on_miss = swapped ? if_true : if_false;
    if (on_match.empty() && on_miss.empty()) {
      TABLETFS_ASSIGN_OR_RETURN(Row current, ReadOneRow(table, row, predicate));
      return current.cells.empty() == swapped;
    }
    v2::CheckAndMutateRowRequest req;
    client_.Address(table, &req);
    req.set_row_key(std::string(row));
    *req.mutable_predicate_filter() = std::move(predicate);
    const int64_t ts = NextTimestamp();
    {
      Mutations probe;
      TABLETFS_RETURN_IF_ERROR(
          AddMutations(on_match, ts, RangeWidth::kMicros, &probe));
      TABLETFS_RETURN_IF_ERROR(
          AddMutations(on_miss, ts, RangeWidth::kMicros, &probe));
    }
    v2::CheckAndMutateRowResponse resp;
    auto send = [&](RangeWidth width) {
      req.clear_true_mutations();
      req.clear_false_mutations();
      AddMutations(on_match, ts, width, req.mutable_true_mutations())
          .IgnoreError();
      AddMutations(on_miss, ts, width, req.mutable_false_mutations())
          .IgnoreError();
      // Not idempotent: the condition may change in between. (A request
      // refused for its ranges changed nothing: SendWithRanges.)
      return client_.Unary(
          Rpc::kCheckAndMutateRow, req, &resp, false, client_.DataParams(table),
          [&](grpc::ClientContext* ctx) {
            return client_.data()->CheckAndMutateRow(ctx, req, &resp);
          });
    };
    grpc::Status s =
        SendWithRanges(send, DeletesAWholeMillisecond(on_match, ts) ||
                                 DeletesAWholeMillisecond(on_miss, ts));
    cache_.WroteRow(table, row);
    if (!s.ok()) return WriteError(table, s, "CheckAndMutateRow");
    return resp.predicate_matched() != swapped;
  }

  Result<RewriteResult> RewriteRow(std::string_view, std::string_view,
                                   const ReadOptions&, const RowRewrite&,
                                   const WriteOptions&) override {
    return Status::NotSupported(
        "RewriteRow: a remote store cannot run a rewrite atomically (the "
        "Bigtable API has no read-then-write of an arbitrary function)");
  }

  // ---- Reads ----

  Result<Row> ReadRow(std::string_view table, std::string_view row,
                      const ReadOptions& options) override {
    TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
    TABLETFS_RETURN_IF_ERROR(CheckSnapshot(options));
    TABLETFS_RETURN_IF_ERROR(CheckTableName(table));
    const uint64_t epoch = cache_.epoch();
    Result<Row> r = ReadOneRow(table, row, ReadFilter(options));
    if (r.ok() && NewestOnly(options) && options.columns.empty()) {
      cache_.PutRow(epoch, table, *r);
    }
    return r;
  }

  Result<std::vector<Cell>> ReadCell(std::string_view table,
                                     std::string_view row,
                                     std::string_view family,
                                     std::string_view qualifier,
                                     const ReadOptions& options) override {
    TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
    TABLETFS_RETURN_IF_ERROR(CheckSnapshot(options));
    TABLETFS_RETURN_IF_ERROR(CheckTableName(table));
    if (!ValidateFamilyName(family).ok()) return NoSuchFamily(table, family);
    const bool cacheable = NewestOnly(options);
    if (cacheable) {
      if (std::optional<std::optional<Cell>> hit =
              cache_.FindCell(table, row, family, qualifier)) {
        client_.stats()->CacheHit();
        std::vector<Cell> cells;
        if (hit->has_value()) cells.push_back(std::move(**hit));
        return cells;
      }
    }
    const uint64_t epoch = cache_.epoch();
    std::vector<v2::RowFilter> parts;
    parts.push_back(FamilyFilter(QuoteExact(family)));
    parts.push_back(QualifierFilter(QuoteExact(qualifier)));
    AddVersionFilters(options, &parts);
    std::optional<v2::RowFilter> filter = Chain(std::move(parts));
    // The row's small cells come along, unless it is being written: then
    // each read would fetch them again (creating or removing the files of
    // a directory one by one).
    if (cacheable && cache_.enabled() && !cache_.RecentlyWritten(table, row)) {
      filter = WithSmallPeers(*filter);
    }
    TABLETFS_ASSIGN_OR_RETURN(Row r, ReadOneRow(table, row, filter));
    std::vector<Cell> cells;
    for (Cell& c : r.cells) {
      if (c.family == family && c.qualifier == qualifier &&
          (cells.empty() || cells.back().timestamp != c.timestamp)) {
        cells.push_back(c);
      }
    }
    // Nothing read: perhaps because there is no such family.
    if (cells.empty()) TABLETFS_RETURN_IF_ERROR(CheckFamily(table, family));
    if (cacheable) {
      cache_.PutRow(epoch, table, r);
      cache_.PutCell(
          epoch, table, row, family, qualifier,
          cells.empty() ? std::nullopt : std::optional<Cell>(cells[0]));
    }
    return cells;
  }

  Result<std::unique_ptr<Scanner>> NewScanner(
      std::string_view table, const ScanOptions& options) override {
    TABLETFS_RETURN_IF_ERROR(CheckSnapshot(options.read));
    TABLETFS_RETURN_IF_ERROR(CheckTableName(table));
    std::string start = std::max(options.start_row, options.prefix);
    std::string end = options.end_row;
    const std::string prefix_end = PrefixEnd(options.prefix);
    if (!prefix_end.empty() && (end.empty() || prefix_end < end)) {
      end = prefix_end;
    }
    std::vector<v2::RowFilter> parts;
    if (std::optional<v2::RowFilter> f = ReadFilter(options.read)) {
      parts.push_back(std::move(*f));
    }
    // Only what the caller reads: one cell per row, no values.
    if (options.content == ScanContent::kRows) {
      parts.emplace_back().set_cells_per_row_limit_filter(1);
    }
    if (options.content != ScanContent::kCells) {
      parts.emplace_back().set_strip_value_transformer(true);
    }
    std::optional<v2::RowFilter> filter = Chain(std::move(parts));
    const bool cacheable = options.content == ScanContent::kCells &&
                           NewestOnly(options.read) &&
                           options.read.columns.empty();
    // One row (the filesystem's row and family directories): answered by
    // the read cache, or read whole and kept there.
    if (cache_.enabled() && NewestOnly(options.read) &&
        options.read.columns.empty() && end == After(start)) {
      std::vector<std::string> families;
      for (const std::string& f : options.read.families) {
        if (ValidateFamilyName(f).ok()) families.push_back(f);
      }
      std::sort(families.begin(), families.end());
      families.erase(std::unique(families.begin(), families.end()),
                     families.end());
      // Families named but none valid select nothing: not this path.
      if (families.empty() == options.read.families.empty()) {
        return ScanOneRow(table, start, options.content, std::move(families),
                          filter);
      }
    }
    if (!end.empty() && end <= start) {
      // An empty range still names a table that must exist.
      v2::RowFilter none;
      none.set_block_all_filter(true);
      TABLETFS_RETURN_IF_ERROR(ReadOneRow(table, "-", none).status());
    }
    // Scans without values may take over (and leave) a parked stream.
    const bool parkable =
        parking_.enabled() && options.content != ScanContent::kCells;
    std::unique_ptr<ParkedStreams::Parked> parked;
    if (parkable) {
      parked = parking_.Take(ParkedStreams::Key(table, start, end, filter));
    }
    auto scanner = std::make_unique<RemoteScanner>(
        &client_, cacheable ? &cache_ : nullptr, parkable ? &parking_ : nullptr,
        &cache_, std::string(table), std::move(filter), std::move(start),
        std::move(end));
    if (parked != nullptr) {
      client_.stats()->CacheHit();
      scanner->Adopt(std::move(parked));
      return std::unique_ptr<Scanner>(std::move(scanner));
    }
    scanner->SeekToFirst();
    TABLETFS_RETURN_IF_ERROR(scanner->status());
    return std::unique_ptr<Scanner>(std::move(scanner));
  }

  std::shared_ptr<const Snapshot> GetSnapshot() override {
    return std::make_shared<RemoteSnapshot>(this);
  }

  // A scan of `row` alone through the read cache (NewScanner).
  Result<std::unique_ptr<Scanner>> ScanOneRow(
      std::string_view table, const std::string& row, ScanContent content,
      std::vector<std::string> families,
      const std::optional<v2::RowFilter>& filter) {
    if (std::optional<Row> hit =
            cache_.FindRowScan(table, row, content, families)) {
      client_.stats()->CacheHit();
      return std::unique_ptr<Scanner>(
          std::make_unique<RowScanner>(std::move(*hit)));
    }
    const uint64_t epoch = cache_.epoch();
    TABLETFS_ASSIGN_OR_RETURN(Row r, ReadOneRow(table, row, filter));
    if (content == ScanContent::kCells) cache_.PutRow(epoch, table, r);
    cache_.PutRowScan(epoch, table, content, std::move(families), r);
    return std::unique_ptr<Scanner>(std::make_unique<RowScanner>(std::move(r)));
  }

  Result<std::vector<TabletInfo>> ListTablets(std::string_view table) override {
    TABLETFS_RETURN_IF_ERROR(CheckTableName(table));
    v2::SampleRowKeysRequest req;
    client_.Address(table, &req);
    std::vector<v2::SampleRowKeysResponse> samples;
    grpc::Status s =
        client_.Send(Rpc::kSampleRowKeys, req, true, client_.DataParams(table),
                     [&](grpc::ClientContext* ctx, RpcRecord* record) {
                       samples.clear();
                       auto reader = client_.data()->SampleRowKeys(ctx, req);
                       v2::SampleRowKeysResponse r;
                       while (reader->Read(&r)) {
                         record->Received(r.ByteSizeLong());
                         samples.push_back(r);
                       }
                       return reader->Finish();
                     });
    if (!s.ok()) return FromGrpc(s, "SampleRowKeys");
    std::vector<TabletInfo> tablets;
    std::string start;
    int64_t offset = 0;
    for (const v2::SampleRowKeysResponse& r : samples) {
      TabletInfo t;
      t.start_row = start;
      t.end_row = r.row_key();
      t.bytes = static_cast<uint64_t>(
          std::max<int64_t>(0, r.offset_bytes() - offset));
      offset = std::max(offset, r.offset_bytes());
      start = r.row_key();
      if (t.end_row.empty()) {
        tablets.push_back(std::move(t));
        return tablets;  // the empty key is the table's end
      }
      if (t.end_row > t.start_row) tablets.push_back(std::move(t));
    }
    // No closing empty key: the rest of the table, size unknown.
    TabletInfo rest;
    rest.start_row = start;
    tablets.push_back(std::move(rest));
    return tablets;
  }

  // ---- Change events, durability ----

  // One table's ReadChangeStream (RemoteSubscription).
  Result<std::unique_ptr<ChangeSubscription>> Subscribe(
      const SubscribeOptions& options) override {
    TABLETFS_RETURN_IF_ERROR(CheckSubscribeOptions(options));
    if (options.table.empty()) {
      return Status::NotSupported(
          "Subscribe: a remote store streams the changes of one table "
          "(ReadChangeStream), not of every table");
    }
    if (options.exclude_origin != 0) {
      return Status::NotSupported(
          "Subscribe: a remote store's events carry no origin to exclude");
    }
    if (options.since) {
      return Status::NotSupported(
          "Subscribe: a remote store streams changes from now on, not from "
          "a time in the past (since)");
    }
    TABLETFS_RETURN_IF_ERROR(CheckTableName(options.table));
    if (client_.options().plaintext) {
      TABLETFS_ASSIGN_OR_RETURN(bool streams, ServesChangeStreams());
      if (!streams) {
        return Status::NotSupported(
            "ReadChangeStream",
            "the server does not say it streams changes (Google's emulator "
            "has none)");
      }
    }
    auto sub = std::make_unique<RemoteSubscription>(&client_, options);
    TABLETFS_RETURN_IF_ERROR(sub->Start());
    return std::unique_ptr<ChangeSubscription>(std::move(sub));
  }

  // Cloud Bigtable and the emulator keep milliseconds; so does every
  // timestamp this client assigns (NextTimestamp), whatever the server.
  int64_t TimestampGranularityMicros() const override { return 1000; }

  // What this client sent (RpcStats::Text); asks the server nothing.
  std::string StatsText() override {
    return "store remote\nendpoint " + client_.options().endpoint + "\n" +
           client_.stats()->Text();
  }

  // The server's durability applies to every acknowledged write.
  Status Sync() override { return Status::OK(); }
  Status StickyError() override { return Status::OK(); }

 private:
  // Whether the server says it serves ReadChangeStream: its answer to
  // PingAndWarm carries kChangeStreamsHeader (the daemon's does).
  Result<bool> ServesChangeStreams() {
    v2::PingAndWarmRequest req;
    req.set_name(client_.instance());
    req.set_app_profile_id(client_.options().app_profile);
    v2::PingAndWarmResponse resp;
    bool streams = false;
    grpc::Status s = client_.Unary(
        Rpc::kPingAndWarm, req, &resp, true, "name=" + UrlEncode(req.name()),
        [&](grpc::ClientContext* ctx) {
          grpc::Status st = client_.data()->PingAndWarm(ctx, req, &resp);
          // (Initial metadata is there only after an answer.)
          streams = st.ok() && ctx->GetServerInitialMetadata().count(
                                   kChangeStreamsHeader) > 0;
          return st;
        });
    if (!s.ok()) return FromGrpc(s, "PingAndWarm");
    return streams;
  }

  // A new client timestamp: whole milliseconds, rounded up from the
  // clock (a version written here after one the daemon stamped in µs in
  // the same millisecond sorts after it), strictly increasing.
  int64_t NextTimestamp() {
    const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    const int64_t ms = (now + 999) / 1000 * 1000;
    MutexLock l(&mu_);
    last_timestamp_ = std::max(ms, last_timestamp_ + 1000);
    return last_timestamp_;
  }

  Status CheckSnapshot(const ReadOptions& options) const {
    if (options.snapshot == nullptr) return Status::OK();
    auto* s = dynamic_cast<const RemoteSnapshot*>(options.snapshot);
    if (s == nullptr || s->owner() != this) {
      return Status::InvalidArgument("snapshot from another store");
    }
    return Status::OK();
  }

  // GetTable in `view` into *out.
  grpc::Status Describe(std::string_view table, admin::Table::View view,
                        admin::Table* out) {
    admin::GetTableRequest req;
    req.set_name(client_.TableName(table));
    req.set_view(view);
    return client_.Unary(Rpc::kGetTable, req, out, true,
                         "name=" + UrlEncode(req.name()),
                         [&](grpc::ClientContext* ctx) {
                           return client_.admin()->GetTable(ctx, req, out);
                         });
  }

  // The table's families by name, as the server has them now; refreshes
  // the cache.
  Result<std::vector<FamilyInfo>> FetchFamilies(std::string_view table) {
    const uint64_t epoch = cache_.epoch();
    admin::Table t;
    grpc::Status s = Describe(table, admin::Table::SCHEMA_VIEW, &t);
    if (!s.ok()) {
      const grpc::StatusCode code = s.error_code();
      if (code == grpc::StatusCode::PERMISSION_DENIED ||
          code == grpc::StatusCode::UNAUTHENTICATED ||
          code == grpc::StatusCode::UNIMPLEMENTED) {
        // A credential for data only: stop asking about this table.
        MutexLock l(&mu_);
        schemas_[std::string(table)] = Schema{{}, /*unknowable=*/true};
      }
      return FromGrpc(s, "GetTable");
    }
    std::vector<FamilyInfo> families;
    for (const auto& [name, family] : t.column_families()) {
      FamilyInfo f;
      f.name = name;
      if (grpc::Status st = ToGcPolicy(family.gc_rule(), &f.settings.gc_policy);
          !st.ok()) {
        return Status::IOError("GetTable: family " + name +
                                   " has a GC rule this client cannot read",
                               st.error_message());
      }
      families.push_back(std::move(f));
    }
    std::sort(families.begin(), families.end(),
              [](const FamilyInfo& a, const FamilyInfo& b) {
                return a.name < b.name;
              });
    cache_.PutFamilies(epoch, table, families);
    Schema schema;
    for (const FamilyInfo& f : families) schema.families.push_back(f.name);
    MutexLock l(&mu_);
    schemas_[std::string(table)] = std::move(schema);
    return families;
  }

  // The table's families by name: recent ones from the read cache, else
  // FetchFamilies.
  Result<std::vector<FamilyInfo>> Families(std::string_view table) {
    if (std::optional<std::vector<FamilyInfo>> hit =
            cache_.FindFamilies(table)) {
      client_.stats()->CacheHit();
      return std::move(*hit);
    }
    return FetchFamilies(table);
  }

  // Whether `table` has `family`: from the cache, else (or when `fresh`)
  // from the server. True also when the admin API cannot tell (refused,
  // unreachable): then the server's own answer stands. NotFound for an
  // unknown table.
  Result<bool> HasFamily(std::string_view table, std::string_view family,
                         bool fresh) {
    if (!fresh) {
      MutexLock l(&mu_);
      auto it = schemas_.find(table);
      if (it != schemas_.end() &&
          (it->second.unknowable ||
           std::find(it->second.families.begin(), it->second.families.end(),
                     family) != it->second.families.end())) {
        return true;
      }
    }
    Result<std::vector<FamilyInfo>> families = FetchFamilies(table);
    if (families.status().IsNotFound()) return families.status();
    if (!families.ok()) return true;
    for (const FamilyInfo& f : *families) {
      if (f.name == family) return true;
    }
    return false;
  }

  // NotFound for an unknown table or family.
  Status CheckFamily(std::string_view table, std::string_view family,
                     bool fresh = false) {
    TABLETFS_ASSIGN_OR_RETURN(bool has, HasFamily(table, family, fresh));
    return has ? Status::OK() : NoSuchFamily(table, family);
  }

  // InvalidArgument for a mutation naming a family the table lacks (the
  // daemon would say NOT_FOUND, the emulator UNKNOWN); NotFound for an
  // unknown table.
  Status CheckMutationFamilies(std::string_view table, const RowMutation& m) {
    std::vector<std::string_view> checked;
    for (const RowMutation::Op& op : m.ops()) {
      if (op.type == RowMutation::OpType::kDeleteRow) continue;
      if (std::find(checked.begin(), checked.end(), op.family) !=
          checked.end()) {
        continue;
      }
      checked.push_back(op.family);
      if (!ValidateFamilyName(op.family).ok()) {
        return Status::InvalidArgument("unknown family", op.family);
      }
      TABLETFS_ASSIGN_OR_RETURN(bool has, HasFamily(table, op.family, false));
      if (!has) return Status::InvalidArgument("unknown family", op.family);
    }
    return Status::OK();
  }

  // Sends a write through `send`, which builds the request for a range
  // width. A server that refuses µs ranges gets whole milliseconds from
  // then on; its refusal changed nothing, so the write goes again.
  template <typename Send>
  grpc::Status SendWithRanges(Send&& send, bool deletes_whole_ms) {
    if (millisecond_ranges_) return send(RangeWidth::kMillis);
    grpc::Status s = send(RangeWidth::kMicros);
    if (s.ok() || !deletes_whole_ms || !MayRefuseTheRange(s)) return s;
    grpc::Status wide = send(RangeWidth::kMillis);
    if (wide.ok()) millisecond_ranges_ = true;
    return wide;
  }

  // Drops what the cache knows of `table`.
  void Forget(std::string_view table) {
    cache_.ChangedTable(table);
    MutexLock l(&mu_);
    auto it = schemas_.find(table);
    if (it != schemas_.end()) schemas_.erase(it);
  }

  Status ModifyFamilies(std::string_view table,
                        admin::ModifyColumnFamiliesRequest* req) {
    req->set_name(client_.TableName(table));
    admin::Table resp;
    grpc::Status s = client_.Unary(
        Rpc::kModifyColumnFamilies, *req, &resp, false,
        "name=" + UrlEncode(req->name()), [&](grpc::ClientContext* ctx) {
          return client_.admin()->ModifyColumnFamilies(ctx, *req, &resp);
        });
    Forget(table);
    return FromGrpc(s, "ModifyColumnFamilies");
  }

  // A refused write's Status. The API says NOT_FOUND for an unknown
  // family in a mutation, which the contract calls InvalidArgument.
  // `table_exists` caches the answer across the entries of a batch.
  Status WriteError(std::string_view table, const grpc::Status& s,
                    std::string_view rpc,
                    std::optional<bool>* table_exists = nullptr) {
    Status st = FromGrpc(s, rpc);
    if (!st.IsNotFound()) return st;
    std::optional<bool> exists;
    if (table_exists == nullptr) table_exists = &exists;
    if (!table_exists->has_value()) {
      // A family dropped since the cache learned of it.
      Forget(table);
      admin::Table t;
      *table_exists = Describe(table, admin::Table::NAME_ONLY, &t).ok();
    }
    if (**table_exists) {
      return Status::InvalidArgument(std::string(rpc) + ": unknown family",
                                     st.message());
    }
    return st;
  }

  // What Apply refuses before sending anything.
  Status CheckApply(std::string_view table, const RowMutation& mutation) {
    TABLETFS_RETURN_IF_ERROR(CheckTableName(table));
    if (mutation.empty()) return Status::InvalidArgument("empty mutation");
    TABLETFS_RETURN_IF_ERROR(CheckWriteKey(mutation.row()));
    TABLETFS_RETURN_IF_ERROR(CheckMutationFamilies(table, mutation));
    Mutations probe;  // negative timestamps, too many operations
    return AddMutations(mutation, 0, RangeWidth::kMicros, &probe);
  }

  // One mutation of ApplyBatch and the timestamp it was given.
  struct BatchEntry {
    size_t index;
    int64_t ts;
  };

  // One MutateRows request of `todo` (distinct rows), then again for the
  // entries refused UNAVAILABLE, or refused for their µs ranges (once, in
  // whole milliseconds, as SendWithRanges does); results into *out.
  void SendBatch(std::string_view table,
                 const std::vector<RowMutation>& mutations,
                 std::vector<BatchEntry> todo,
                 std::optional<bool>* table_exists,
                 std::vector<Result<int64_t>>* out) {
    bool widened = false;
    for (int attempt = 0; !todo.empty(); attempt++) {
      const RangeWidth width = millisecond_ranges_ || widened
                                   ? RangeWidth::kMillis
                                   : RangeWidth::kMicros;
      v2::MutateRowsRequest req;
      client_.Address(table, &req);
      for (const BatchEntry& e : todo) {
        const RowMutation& m = mutations[e.index];
        v2::MutateRowsRequest::Entry* entry = req.add_entries();
        entry->set_row_key(m.row());
        AddMutations(m, e.ts, width, entry->mutable_mutations()).IgnoreError();
      }
      std::vector<std::optional<grpc::Status>> told(todo.size());
      grpc::Status s = client_.Send(
          Rpc::kMutateRows, req, false, client_.DataParams(table),
          [&](grpc::ClientContext* ctx, RpcRecord* record) {
            auto reader = client_.data()->MutateRows(ctx, req);
            v2::MutateRowsResponse r;
            while (reader->Read(&r)) {
              record->Received(r.ByteSizeLong());
              for (const auto& e : r.entries()) {
                if (e.index() < 0 ||
                    static_cast<size_t>(e.index()) >= told.size()) {
                  continue;
                }
                told[e.index()] = grpc::Status(
                    static_cast<grpc::StatusCode>(e.status().code()),
                    e.status().message());
              }
            }
            return reader->Finish();
          });
      std::vector<BatchEntry> again;
      bool widen = false;
      for (size_t j = 0; j < todo.size(); j++) {
        const BatchEntry& e = todo[j];
        const grpc::Status st =
            told[j].has_value()
                ? *told[j]
                : (s.ok() ? grpc::Status(grpc::StatusCode::INTERNAL,
                                         "no status for this entry")
                          : s);
        const bool deletes_whole_ms =
            DeletesAWholeMillisecond(mutations[e.index], e.ts);
        if (st.ok()) {
          (*out)[e.index] = e.ts;
          if (widened && deletes_whole_ms) millisecond_ranges_ = true;
        } else if (st.error_code() == grpc::StatusCode::UNAVAILABLE &&
                   attempt < kMaxRetries) {
          again.push_back(e);
        } else if (width == RangeWidth::kMicros && deletes_whole_ms &&
                   MayRefuseTheRange(st)) {
          widen = true;
          again.push_back(e);
        } else {
          (*out)[e.index] = WriteError(table, st, "MutateRows", table_exists);
        }
      }
      if (widen) {
        widened = true;
      } else if (!again.empty()) {
        Backoff(attempt);
      }
      todo = std::move(again);
    }
  }

  // Append or Increment: one rule on one cell; the new version.
  Result<Cell> ReadModifyWrite(std::string_view table, std::string_view row,
                               std::string_view family,
                               std::string_view qualifier,
                               v2::ReadModifyWriteRule* rule) {
    TABLETFS_RETURN_IF_ERROR(CheckWriteKey(row));
    TABLETFS_RETURN_IF_ERROR(CheckTableName(table));
    if (!ValidateFamilyName(family).ok()) return NoSuchFamily(table, family);
    TABLETFS_RETURN_IF_ERROR(CheckFamily(table, family));
    v2::ReadModifyWriteRowRequest req;
    client_.Address(table, &req);
    req.set_row_key(std::string(row));
    rule->set_family_name(std::string(family));
    rule->set_column_qualifier(std::string(qualifier));
    *req.add_rules() = *rule;
    v2::ReadModifyWriteRowResponse resp;
    // Not idempotent: a repeat would append or add twice.
    grpc::Status s = client_.Unary(
        Rpc::kReadModifyWriteRow, req, &resp, false, client_.DataParams(table),
        [&](grpc::ClientContext* ctx) {
          return client_.data()->ReadModifyWriteRow(ctx, req, &resp);
        });
    cache_.WroteRow(table, row);
    if (!s.ok()) return FromGrpc(s, "ReadModifyWriteRow");
    for (const v2::Family& f : resp.row().families()) {
      if (f.name() != family) continue;
      for (const v2::Column& c : f.columns()) {
        if (c.qualifier() != qualifier || c.cells().empty()) continue;
        return Cell{std::string(family), std::string(qualifier),
                    c.cells(0).timestamp_micros(), c.cells(0).value()};
      }
    }
    return Status::IOError(
        "ReadModifyWriteRow: the response lacks the written cell",
        std::string(family) + ":" + std::string(qualifier));
  }

  // The cells of one row that pass `filter` (no cells: none).
  Result<Row> ReadOneRow(std::string_view table, std::string_view row,
                         const std::optional<v2::RowFilter>& filter) {
    v2::ReadRowsRequest req;
    client_.Address(table, &req);
    req.mutable_rows()->add_row_keys(std::string(row));
    if (filter.has_value()) *req.mutable_filter() = *filter;
    for (int attempt = 0;; attempt++) {
      ReadRowsCall call(&client_, table, req, attempt > 0);
      RowAssembler assembler;
      Row out;
      out.key = std::string(row);
      v2::ReadRowsResponse resp;
      while (call.Next(&resp)) {
        for (const auto& chunk : resp.chunks()) {
          bool committed = false;
          TABLETFS_RETURN_IF_ERROR(assembler.Add(chunk, &committed));
          if (!committed) continue;
          Row r = assembler.TakeRow();
          if (r.key != row) {
            return Status::IOError("ReadRows: asked for one row, got another",
                                   r.key);
          }
          out.cells = std::move(r.cells);
        }
      }
      const grpc::Status& s = call.status();
      if (s.ok()) {
        if (assembler.InRow()) {
          return Status::IOError("ReadRows: the stream ended inside row", row);
        }
        return out;
      }
      if (!Retryable(s, attempt)) return FromGrpc(s, "ReadRows");
      Backoff(attempt);
    }
  }

  // What the client knows of a table's families (HasFamily).
  struct Schema {
    std::vector<std::string> families;
    // The admin API refused to say: the checks are skipped.
    bool unknowable = false;
  };

  Client client_;
  ReadCache cache_;
  // Destroyed before the client: parked streams are its calls.
  ParkedStreams parking_;
  // Set once a server refused a range finer than a millisecond.
  std::atomic<bool> millisecond_ranges_{false};
  Mutex mu_;
  int64_t last_timestamp_ GUARDED_BY(mu_) = 0;
  std::map<std::string, Schema, std::less<>> schemas_ GUARDED_BY(mu_);
};

std::shared_ptr<grpc::Channel> NewChannel(const std::string& endpoint,
                                          const RemoteOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  // A daemon that restarts is found again within a retry or two, not after
  // gRPC's default second of backoff.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  args.SetUserAgentPrefix("tabletfs");
  std::shared_ptr<grpc::ChannelCredentials> creds =
      options.plaintext ? grpc::InsecureChannelCredentials()
                        : grpc::GoogleDefaultCredentials();
  if (creds == nullptr) return nullptr;
  return grpc::CreateCustomChannel(endpoint, creds, args);
}

}  // namespace

Result<std::unique_ptr<Bigtable>> ConnectBigtable(
    const RemoteOptions& options) {
  TABLETFS_RETURN_IF_ERROR(ValidateEndpoint(options.endpoint, "endpoint"));
  if (!options.admin_endpoint.empty()) {
    TABLETFS_RETURN_IF_ERROR(
        ValidateEndpoint(options.admin_endpoint, "admin endpoint"));
  }
  for (const std::string* part : {&options.project, &options.instance}) {
    if (part->empty() || part->find('/') != std::string::npos) {
      return Status::InvalidArgument(
          "bad project or instance '" + *part +
          "': names are projects/PROJECT/instances/INSTANCE");
    }
  }
  if (options.rpc_timeout.count() <= 0) {
    return Status::InvalidArgument("rpc_timeout must be positive");
  }
  std::shared_ptr<grpc::Channel> data = NewChannel(options.endpoint, options);
  std::shared_ptr<grpc::Channel> admin =
      options.admin_endpoint.empty() ||
              options.admin_endpoint == options.endpoint
          ? data
          : NewChannel(options.admin_endpoint, options);
  if (data == nullptr || admin == nullptr) {
    return Status::InvalidArgument(
        "no Google default credentials for TLS: set "
        "GOOGLE_APPLICATION_CREDENTIALS, run `gcloud auth application-default "
        "login`, or run on Google Cloud");
  }
  return std::unique_ptr<Bigtable>(
      std::make_unique<RemoteBigtable>(options, data, admin));
}

}  // namespace tabletfs::api
