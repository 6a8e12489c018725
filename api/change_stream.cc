// google.bigtable.v2.Bigtable's change streams over the store's change
// events (store/changes.h): GenerateInitialChangeStreamPartitions and
// ReadChangeStream (api/services.h; docs/API.md "Change streams" says what
// each field means here and how it differs from Cloud Bigtable).
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/convert.h"
#include "api/services.h"

namespace tabletfs::api {
namespace {

namespace v2 = google::bigtable::v2;
using ChangeResponse = v2::ReadChangeStreamResponse;

// A SetCell value above this goes out in several messages (ChunkInfo), so
// that none comes near gRPC's 4 MiB default message limit.
constexpr size_t kChunkBytes = 1u << 20;
// How often a waiting stream looks whether its client is gone or the
// server stops.
constexpr std::chrono::milliseconds kPollInterval(100);
constexpr std::chrono::seconds kDefaultHeartbeat(5);

constexpr char kOnePartition[] =
    "this server's change stream has one partition, the whole key range "
    "(start_key_closed \"\", end_key_open \"\"): ask "
    "GenerateInitialChangeStreamPartitions";

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

google::protobuf::Timestamp ToTimestamp(int64_t micros) {
  google::protobuf::Timestamp t;
  int64_t seconds = micros / 1000000;
  int64_t rest = micros % 1000000;
  if (rest < 0) {
    seconds--;
    rest += 1000000;
  }
  t.set_seconds(seconds);
  t.set_nanos(static_cast<int32_t>(rest * 1000));
  return t;
}

// Truncated to microseconds, as the API says.
int64_t FromTimestamp(const google::protobuf::Timestamp& t) {
  return t.seconds() * 1000000 + t.nanos() / 1000;
}

// Whether `p` is the one partition: no bounds, or an empty closed start and
// an empty open end (how Cloud Bigtable writes the whole range).
bool IsWholeRange(const v2::StreamPartition& p) {
  const v2::RowRange& r = p.row_range();
  const bool start = r.start_key_case() == v2::RowRange::START_KEY_NOT_SET ||
                     (r.start_key_case() == v2::RowRange::kStartKeyClosed &&
                      r.start_key_closed().empty());
  const bool end = r.end_key_case() == v2::RowRange::END_KEY_NOT_SET ||
                   (r.end_key_case() == v2::RowRange::kEndKeyOpen &&
                    r.end_key_open().empty());
  return start && end;
}

v2::StreamPartition WholeRange() {
  v2::StreamPartition p;
  p.mutable_row_range()->set_start_key_closed("");
  p.mutable_row_range()->set_end_key_open("");
  return p;
}

// A token is the stream position in microseconds since the epoch, in
// decimal: the changes after it are those read from the store after then.
std::string Token(int64_t micros) { return std::to_string(micros); }

std::optional<int64_t> ParseToken(std::string_view token) {
  if (token.empty() || token.size() > 18 ||
      !std::all_of(token.begin(), token.end(),
                   [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoll(std::string(token));
}

// The commit timestamp of `e`'s DataChange: a delete of a cell, family or
// row and a drop carry their commit's server timestamp; a set and a
// version's delete carry the version's, so theirs is `read_at`, when the
// stream read the event (at or after its commit).
int64_t CommitTimestamp(const ChangeEvent& e, int64_t read_at) {
  switch (e.kind) {
    case ChangeKind::kSetCell:
    case ChangeKind::kDeleteVersion:
      return read_at;
    default:
      return e.timestamp;
  }
}

// The mutation of `e`, without a SetCell's value. A drop has no mutation
// in the API: it is the DataChange of the empty row key (no row has it)
// deleting the family (kDropFamily) or the row (kDropTable).
v2::Mutation ToMutation(const ChangeEvent& e) {
  v2::Mutation m;
  switch (e.kind) {
    case ChangeKind::kSetCell: {
      v2::Mutation::SetCell* s = m.mutable_set_cell();
      s->set_family_name(e.family);
      s->set_column_qualifier(e.qualifier);
      s->set_timestamp_micros(e.timestamp);
      break;
    }
    case ChangeKind::kDeleteVersion:
    case ChangeKind::kDeleteCell: {
      v2::Mutation::DeleteFromColumn* d = m.mutable_delete_from_column();
      d->set_family_name(e.family);
      d->set_column_qualifier(e.qualifier);
      if (e.kind == ChangeKind::kDeleteVersion) {
        d->mutable_time_range()->set_start_timestamp_micros(e.timestamp);
        d->mutable_time_range()->set_end_timestamp_micros(e.timestamp + 1);
      }
      break;
    }
    case ChangeKind::kDeleteFamily:
    case ChangeKind::kDropFamily:
      m.mutable_delete_from_family()->set_family_name(e.family);
      break;
    case ChangeKind::kDeleteRow:
    case ChangeKind::kDropTable:
      m.mutable_delete_from_row();
      break;
  }
  return m;
}

// The version a set wrote: the event's (moved out of it), or (a large
// value) read by its timestamp; empty when it is gone (deleted or collected
// before the stream read it).
std::string ValueOf(Bigtable* store, ChangeEvent& e) {
  if (e.value.has_value()) return std::move(*e.value);
  ReadOptions ro;
  ro.at = e.timestamp;
  ro.max_versions = 1;
  Result<std::vector<Cell>> versions =
      store->ReadCell(e.table, e.row, e.family, e.qualifier, ro);
  if (!versions.ok() || versions->empty() ||
      (*versions)[0].timestamp != e.timestamp) {
    return "";
  }
  return std::move((*versions)[0].value);
}

// Writes the records of one stream.
class ChangeWriter {
 public:
  explicit ChangeWriter(grpc::ServerWriter<ChangeResponse>* writer)
      : writer_(writer) {}

  // The DataChange of `e`, in one message or, for a large value, in
  // chunks. False when the client is gone.
  bool DataChange(const ChangeEvent& e, const std::string& value,
                  int64_t commit, int64_t watermark) {
    ChangeResponse r;
    v2::ReadChangeStreamResponse::DataChange* d = r.mutable_data_change();
    d->set_type(v2::ReadChangeStreamResponse::DataChange::USER);
    d->set_row_key(e.row);
    *d->mutable_commit_timestamp() = ToTimestamp(commit);
    auto* chunk = d->add_chunks();
    *chunk->mutable_mutation() = ToMutation(e);
    size_t offset = 0;
    if (value.size() > kChunkBytes) {
      // The first message has the mutation and the value's first part;
      // the others continue it (type CONTINUATION, value parts only).
      for (;;) {
        const size_t n = std::min(kChunkBytes, value.size() - offset);
        auto* info = chunk->mutable_chunk_info();
        info->set_chunked_value_size(static_cast<int32_t>(value.size()));
        info->set_chunked_value_offset(static_cast<int32_t>(offset));
        chunk->mutable_mutation()->mutable_set_cell()->set_value(
            value.data() + offset, n);
        offset += n;
        if (offset == value.size()) {
          info->set_last_chunk(true);
          break;
        }
        if (!writer_->Write(r)) return false;
        r.Clear();
        d = r.mutable_data_change();
        d->set_type(v2::ReadChangeStreamResponse::DataChange::CONTINUATION);
        chunk = d->add_chunks();
      }
    } else if (e.kind == ChangeKind::kSetCell) {
      chunk->mutable_mutation()->mutable_set_cell()->set_value(value);
    }
    d->set_done(true);
    d->set_token(Token(watermark));
    *d->mutable_estimated_low_watermark() = ToTimestamp(watermark);
    return writer_->Write(r);
  }

  bool Heartbeat(int64_t watermark) {
    ChangeResponse r;
    auto* h = r.mutable_heartbeat();
    *h->mutable_continuation_token()->mutable_partition() = WholeRange();
    h->mutable_continuation_token()->set_token(Token(watermark));
    *h->mutable_estimated_low_watermark() = ToTimestamp(watermark);
    return writer_->Write(r);
  }

  // Ends the stream with `status`: a CloseStream saying it, and the
  // call's status.
  grpc::Status Close(const grpc::Status& status) {
    ChangeResponse r;
    google::rpc::Status* s = r.mutable_close_stream()->mutable_status();
    s->set_code(static_cast<int>(status.error_code()));
    s->set_message(status.error_message());
    writer_->Write(r);
    return status;
  }

 private:
  grpc::ServerWriter<ChangeResponse>* const writer_;
};

grpc::Status Gone() {
  return grpc::Status(grpc::StatusCode::CANCELLED, "the client is gone");
}

}  // namespace

grpc::Status DataService::GenerateInitialChangeStreamPartitions(
    grpc::ServerContext*,
    const v2::GenerateInitialChangeStreamPartitionsRequest* request,
    grpc::ServerWriter<v2::GenerateInitialChangeStreamPartitionsResponse>*
        writer) {
  if (context_->stopping) return Unavailable();
  grpc::Status st;
  const std::string table = ParseTableName(request->table_name(), &st);
  if (!st.ok()) return st;
  if (Result<TableInfo> t = context_->store->GetTable(table); !t.ok()) {
    return ToGrpc(t.status());
  }
  v2::GenerateInitialChangeStreamPartitionsResponse r;
  *r.mutable_partition() = WholeRange();
  if (!writer->Write(r)) return Gone();
  return grpc::Status::OK;
}

grpc::Status DataService::ReadChangeStream(
    grpc::ServerContext* ctx, const v2::ReadChangeStreamRequest* request,
    grpc::ServerWriter<ChangeResponse>* writer) {
  if (context_->stopping) return Unavailable();
  grpc::Status st;
  const std::string table = ParseTableName(request->table_name(), &st);
  if (!st.ok()) return st;
  if (request->has_partition() && !IsWholeRange(request->partition())) {
    return InvalidArgument(kOnePartition);
  }
  std::chrono::microseconds heartbeat = kDefaultHeartbeat;
  if (request->has_heartbeat_duration()) {
    const google::protobuf::Duration& d = request->heartbeat_duration();
    heartbeat =
        std::chrono::microseconds(d.seconds() * 1000000 + d.nanos() / 1000);
    if (heartbeat.count() <= 0) {
      return InvalidArgument("heartbeat_duration must be positive");
    }
  }
  // Where the client wants to start: nothing (now), start_time, or the
  // position of its continuation token.
  std::optional<int64_t> from;
  if (request->has_start_time()) from = FromTimestamp(request->start_time());
  if (request->has_continuation_tokens()) {
    const auto& tokens = request->continuation_tokens().tokens();
    if (tokens.empty()) return InvalidArgument("continuation_tokens is empty");
    for (const v2::StreamContinuationToken& t : tokens) {
      if (!IsWholeRange(t.partition())) return InvalidArgument(kOnePartition);
      std::optional<int64_t> at = ParseToken(t.token());
      if (!at) {
        return InvalidArgument("continuation token '" + t.token() +
                               "' is not one of this server's");
      }
      from = std::min(from.value_or(*at), *at);
    }
  }
  std::optional<int64_t> end_time;
  if (request->has_end_time()) end_time = FromTimestamp(request->end_time());
  Bigtable* store = context_->store;
  if (Result<TableInfo> t = store->GetTable(table); !t.ok()) {
    return ToGrpc(t.status());
  }
  SubscribeOptions so;
  so.table = table;
  so.max_queued_events = context_->max_queued_changes;
  Result<std::unique_ptr<ChangeSubscription>> sub = store->Subscribe(so);
  if (!sub.ok()) return ToGrpc(sub.status());
  // Every change committed from here on is queued.
  const int64_t opened = NowMicros();
  if (from && *from < opened) {
    return grpc::Status(
        grpc::StatusCode::OUT_OF_RANGE,
        "cannot start at " + std::to_string(*from) +
            " µs: this server keeps no change history, a stream starts when "
            "it opens (" +
            std::to_string(opened) +
            " µs); read again without start_time or continuation_tokens");
  }
  ChangeWriter out(writer);
  // The first heartbeat says the stream is live: changes committed after
  // it arrives are all on the stream.
  if (!out.Heartbeat(opened)) return Gone();
  auto next_heartbeat = std::chrono::steady_clock::now() + heartbeat;
  int64_t read_at = opened;  // never goes back
  for (;;) {
    if (ctx->IsCancelled()) return Gone();
    if (context_->stopping) return Unavailable();
    const int64_t before = std::max(NowMicros(), read_at);
    if (end_time && before > *end_time) return grpc::Status::OK;
    const auto now = std::chrono::steady_clock::now();
    auto wait = std::min<std::chrono::microseconds>(
        kPollInterval, std::chrono::duration_cast<std::chrono::microseconds>(
                           next_heartbeat - now));
    if (end_time) {
      wait = std::min(wait, std::chrono::microseconds(*end_time - before + 1));
    }
    ChangeBatch batch =
        (*sub)->Read(std::max(wait, std::chrono::microseconds(0)));
    read_at = std::max(NowMicros(), before);
    // Events of changes committed before `before` were queued before it:
    // every record still to come was read after it.
    const int64_t watermark = before;
    if (!from || read_at >= *from) {
      for (ChangeEvent& e : batch.events) {
        const std::string value =
            e.kind == ChangeKind::kSetCell ? ValueOf(store, e) : "";
        if (!out.DataChange(e, value, CommitTimestamp(e, read_at), watermark)) {
          return Gone();
        }
      }
    }
    if (batch.lost > 0) {
      return out.Close(grpc::Status(
          grpc::StatusCode::ABORTED,
          "the stream fell behind the writers: " + std::to_string(batch.lost) +
              " change events were dropped (a stream holds " +
              std::to_string(context_->max_queued_changes) +
              " while its client does not read); read again to go on from "
              "now"));
    }
    if (!batch.status.ok()) return out.Close(ToGrpc(batch.status));
    if (std::chrono::steady_clock::now() >= next_heartbeat) {
      if (!out.Heartbeat(read_at)) return Gone();
      next_heartbeat = std::chrono::steady_clock::now() + heartbeat;
    }
  }
}

}  // namespace tabletfs::api
