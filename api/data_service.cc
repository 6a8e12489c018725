// google.bigtable.v2.Bigtable over the data model (api/services.h).
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/convert.h"
#include "api/row_filter.h"
#include "api/services.h"

namespace tabletfs::api {
namespace {

namespace v2 = google::bigtable::v2;

// A row range [start, end); empty end: to the end of the table.
struct KeyRange {
  std::string start;
  std::string end;
};

// The smallest key after `key`.
std::string After(const std::string& key) { return key + std::string(1, '\0'); }

// The rows a request reads, as sorted, disjoint ranges. No keys and no
// ranges: the whole table.
std::vector<KeyRange> RangesOf(const v2::RowSet& set) {
  std::vector<KeyRange> ranges;
  if (set.row_keys_size() == 0 && set.row_ranges_size() == 0) {
    ranges.push_back({});
    return ranges;
  }
  for (const std::string& key : set.row_keys()) {
    ranges.push_back({key, After(key)});
  }
  for (const v2::RowRange& r : set.row_ranges()) {
    KeyRange k;
    if (r.start_key_case() == v2::RowRange::kStartKeyClosed) {
      k.start = r.start_key_closed();
    } else if (r.start_key_case() == v2::RowRange::kStartKeyOpen) {
      k.start = After(r.start_key_open());
    }
    if (r.end_key_case() == v2::RowRange::kEndKeyOpen) {
      k.end = r.end_key_open();
      if (k.end.empty()) continue;  // an empty open end: no rows
    } else if (r.end_key_case() == v2::RowRange::kEndKeyClosed) {
      k.end = After(r.end_key_closed());
    }
    if (!k.end.empty() && k.end <= k.start) continue;  // empty
    ranges.push_back(std::move(k));
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const KeyRange& a, const KeyRange& b) { return a.start < b.start; });
  std::vector<KeyRange> merged;
  for (KeyRange& r : ranges) {
    if (!merged.empty()) {
      KeyRange& last = merged.back();
      if (last.end.empty() || r.start <= last.end) {
        if (!last.end.empty() && (r.end.empty() || r.end > last.end)) {
          last.end = r.end;
        }
        continue;
      }
    }
    merged.push_back(std::move(r));
  }
  return merged;
}

// Buffers the chunks of ReadRows responses and sends a response once it
// holds about kResponseBytes, so that no message comes near gRPC's 4 MiB
// default limit; a value larger than kChunkBytes is split across chunks.
class ChunkWriter {
 public:
  static constexpr size_t kResponseBytes = 1u << 20;
  static constexpr size_t kChunkBytes = 1u << 20;

  explicit ChunkWriter(grpc::ServerWriter<v2::ReadRowsResponse>* writer)
      : writer_(writer) {}

  // False when the client is gone.
  bool AddRow(const std::string& key, const std::vector<FilteredCell>& cells) {
    for (size_t i = 0; i < cells.size(); i++) {
      const FilteredCell& fc = cells[i];
      const std::string& value = fc.cell.value;
      size_t offset = 0;
      do {
        const size_t n = std::min(kChunkBytes, value.size() - offset);
        v2::ReadRowsResponse::CellChunk* chunk = response_.add_chunks();
        if (offset == 0) {
          if (i == 0) chunk->set_row_key(key);
          chunk->mutable_family_name()->set_value(fc.cell.family);
          chunk->mutable_qualifier()->set_value(fc.cell.qualifier);
          chunk->set_timestamp_micros(fc.cell.timestamp);
          for (const std::string& label : fc.labels) chunk->add_labels(label);
        }
        chunk->set_value(value.data() + offset, n);
        offset += n;
        if (offset < value.size()) {
          chunk->set_value_size(static_cast<int32_t>(value.size()));
        }
        if (offset == value.size() && i + 1 == cells.size()) {
          chunk->set_commit_row(true);
        }
        bytes_ += n + fc.cell.family.size() + fc.cell.qualifier.size() + 32;
        if (bytes_ >= kResponseBytes && !Flush()) return false;
      } while (offset < value.size());
    }
    return true;
  }

  // `last`: nothing follows, so the message goes out with the call's
  // status (one write fewer for a point read).
  bool Flush(bool last = false) {
    if (response_.chunks_size() == 0) return true;
    bool ok = true;  // WriteLast reports nothing: the call's end will
    if (last) {
      writer_->WriteLast(response_, grpc::WriteOptions());
    } else {
      ok = writer_->Write(response_);
    }
    response_.Clear();
    bytes_ = 0;
    return ok;
  }

 private:
  grpc::ServerWriter<v2::ReadRowsResponse>* writer_;
  v2::ReadRowsResponse response_;
  size_t bytes_ = 0;
};

void AddCell(v2::Row* row, const Cell& cell) {
  v2::Family* family = nullptr;
  for (v2::Family& f : *row->mutable_families()) {
    if (f.name() == cell.family) family = &f;
  }
  if (family == nullptr) {
    family = row->add_families();
    family->set_name(cell.family);
  }
  v2::Column* column = nullptr;
  for (v2::Column& c : *family->mutable_columns()) {
    if (c.qualifier() == cell.qualifier) column = &c;
  }
  if (column == nullptr) {
    column = family->add_columns();
    column->set_qualifier(cell.qualifier);
  }
  v2::Cell* out = column->add_cells();
  out->set_timestamp_micros(cell.timestamp);
  out->set_value(cell.value);
}

// The row-level status RewriteRow returns when the rewrite refused: the
// gRPC status is kept beside it.
Status Refused(const grpc::Status& s) {
  return Status::InvalidArgument(s.error_message());
}

}  // namespace

grpc::Status DataService::WriteError(const std::string& table,
                                     const RowMutation& m, const Status& s) {
  if (s.IsInvalidArgument()) {
    for (const RowMutation::Op& op : m.ops()) {
      if (op.type == RowMutation::OpType::kDeleteRow) continue;
      Result<FamilySettings> f = context_->store->GetFamily(table, op.family);
      if (f.status().IsNotFound()) return ToGrpc(f.status());
    }
  }
  return ToGrpc(s);
}

grpc::Status DataService::RewriteWith(
    const std::string& table, const std::string& row, const ReadOptions& read,
    const std::function<grpc::Status(const Row&, RowMutation*)>& build) {
  grpc::Status refused;
  std::optional<RowMutation> built;  // for WriteError's family check
  Result<RewriteResult> r = context_->store->RewriteRow(
      table, row, read,
      [&](const Row& current) -> Result<RowMutation> {
        RowMutation m(row);
        refused = build(current, &m);
        if (!refused.ok()) return Refused(refused);
        built = m;
        return m;
      },
      WriteOptions());
  if (!refused.ok()) return refused;
  if (!r.ok()) {
    return built ? WriteError(table, *built, r.status()) : ToGrpc(r.status());
  }
  return grpc::Status::OK;
}

grpc::Status DataService::ReadRows(
    grpc::ServerContext* ctx, const v2::ReadRowsRequest* request,
    grpc::ServerWriter<v2::ReadRowsResponse>* writer) {
  if (context_->stopping) return Unavailable();
  grpc::Status st;
  const std::string table = ParseTableName(request->table_name(), &st);
  if (!st.ok()) return st;
  if (request->rows_limit() < 0) {
    return InvalidArgument("rows_limit may not be negative");
  }
  RowFilter filter;
  if (request->has_filter()) {
    Result<RowFilter> compiled = RowFilter::Compile(request->filter());
    if (!compiled.ok()) return ToGrpc(compiled.status());
    filter = std::move(compiled).value();
  }
  Bigtable* store = context_->store;
  // One consistent state for the whole read.
  const v2::RowSet& set = request->rows();
  if (set.row_ranges_size() == 0 && set.row_keys_size() == 1 &&
      !request->reversed()) {
    // A point read: one row is consistent by itself; no snapshot, no
    // scanner.
    ReadOptions ro;
    ro.max_versions = 0;
    Result<Row> row = store->ReadRow(table, set.row_keys(0), ro);
    if (!row.ok() && !row.status().IsInvalidArgument()) {
      return ToGrpc(row.status());
    }
    ChunkWriter out(writer);
    if (row.ok()) {
      std::vector<FilteredCell> cells = filter.Apply(*row);
      if (!cells.empty() && !out.AddRow(row->key, cells)) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "the client is gone");
      }
    }
    if (!out.Flush(/*last=*/true)) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "the client is gone");
    }
    return grpc::Status::OK;
  }
  std::shared_ptr<const Snapshot> snapshot = store->GetSnapshot();
  ChunkWriter out(writer);
  int64_t rows_sent = 0;
  const int64_t limit = request->rows_limit();
  std::vector<KeyRange> ranges = RangesOf(request->rows());
  auto gone = [] {
    return grpc::Status(grpc::StatusCode::CANCELLED, "the client is gone");
  };
  auto cancelled = [&](uint64_t n) {
    // IsCancelled costs a futex call: asked every 256 rows.
    return n % 256 == 0 && ctx->IsCancelled();
  };
  const grpc::Status kCancelled(grpc::StatusCode::CANCELLED,
                                "the read was cancelled or passed its deadline");
  if (request->reversed()) {
    // The store scans forward: each range's keys are listed first (keys
    // only, no values), then its rows read newest key first, all from the
    // one snapshot.
    std::reverse(ranges.begin(), ranges.end());
    ReadOptions ro;
    ro.max_versions = 0;
    ro.snapshot = snapshot.get();
    for (const KeyRange& range : ranges) {
      ScanOptions so;
      so.read.snapshot = snapshot.get();
      so.start_row = range.start;
      so.end_row = range.end;
      Result<std::unique_ptr<Scanner>> scanner = store->NewScanner(table, so);
      if (!scanner.ok()) return ToGrpc(scanner.status());
      std::vector<std::string> keys;
      uint64_t n = 0;
      for ((*scanner)->SeekToFirst(); (*scanner)->Valid(); (*scanner)->NextRow()) {
        if (cancelled(n++)) return kCancelled;
        keys.emplace_back((*scanner)->row());
      }
      if (!(*scanner)->status().ok()) return ToGrpc((*scanner)->status());
      for (auto key = keys.rbegin(); key != keys.rend(); ++key) {
        if (cancelled(n++)) return kCancelled;
        if (context_->stopping) return Unavailable();
        Result<Row> row = store->ReadRow(table, *key, ro);
        if (!row.ok()) return ToGrpc(row.status());
        std::vector<FilteredCell> cells = filter.Apply(*row);
        if (cells.empty()) continue;
        if (!out.AddRow(row->key, cells)) return gone();
        if (limit > 0 && ++rows_sent >= limit) break;
      }
      if (limit > 0 && rows_sent >= limit) break;
    }
  }
  for (const KeyRange& range : request->reversed() ? std::vector<KeyRange>()
                                                   : ranges) {
    ScanOptions so;
    so.read.max_versions = 0;
    so.read.snapshot = snapshot.get();
    so.start_row = range.start;
    so.end_row = range.end;
    Result<std::unique_ptr<Scanner>> scanner = store->NewScanner(table, so);
    if (!scanner.ok()) return ToGrpc(scanner.status());
    Scanner& s = **scanner;
    s.SeekToFirst();
    Row row;
    for (uint64_t n = 0; s.Valid(); n++) {
      if (cancelled(n)) return kCancelled;
      if (context_->stopping) return Unavailable();
      row.cells.clear();
      if (Status rs = s.ReadRow(&row); !rs.ok()) return ToGrpc(rs);
      std::vector<FilteredCell> cells = filter.Apply(row);
      if (cells.empty()) continue;
      if (!out.AddRow(row.key, cells)) return gone();
      if (limit > 0 && ++rows_sent >= limit) break;
    }
    if (!s.status().ok()) return ToGrpc(s.status());
    if (limit > 0 && rows_sent >= limit) break;
  }
  if (!out.Flush(/*last=*/true)) return gone();
  return grpc::Status::OK;
}

grpc::Status DataService::SampleRowKeys(
    grpc::ServerContext*, const v2::SampleRowKeysRequest* request,
    grpc::ServerWriter<v2::SampleRowKeysResponse>* writer) {
  if (context_->stopping) return Unavailable();
  grpc::Status st;
  const std::string table = ParseTableName(request->table_name(), &st);
  if (!st.ok()) return st;
  Result<std::vector<TabletInfo>> tablets = context_->store->ListTablets(table);
  if (!tablets.ok()) return ToGrpc(tablets.status());
  // Offsets: the bytes before each key, each tablet's bytes spread evenly
  // over the parts its samples cut it into.
  int64_t offset = 0;
  v2::SampleRowKeysResponse r;
  for (const TabletInfo& t : *tablets) {
    const int64_t part =
        static_cast<int64_t>(t.bytes / (t.sample_rows.size() + 1));
    for (const std::string& key : t.sample_rows) {
      offset += part;
      r.set_row_key(key);
      r.set_offset_bytes(offset);
      if (!writer->Write(r)) return grpc::Status::CANCELLED;
    }
    offset += static_cast<int64_t>(t.bytes) -
              part * static_cast<int64_t>(t.sample_rows.size());
    if (!t.end_row.empty()) {
      r.set_row_key(t.end_row);
      r.set_offset_bytes(offset);
      if (!writer->Write(r)) return grpc::Status::CANCELLED;
    }
  }
  // The last key is empty: the end of the table.
  r.set_row_key("");
  r.set_offset_bytes(offset);
  if (!writer->Write(r)) return grpc::Status::CANCELLED;
  return grpc::Status::OK;
}

grpc::Status DataService::MutateOneRow(
    const std::string& table, const std::string& row,
    const google::protobuf::RepeatedPtrField<v2::Mutation>& mutations) {
  if (grpc::Status s = ValidateApiRowKey(row); !s.ok()) return s;
  Bigtable* store = context_->store;
  std::vector<Column> columns;
  if (!TimeRangeColumns(mutations, &columns)) {
    RowMutation m(row);
    if (grpc::Status s = AppendMutations(mutations, nullptr, &m); !s.ok()) {
      return s;
    }
    Result<int64_t> r = store->Apply(table, m, WriteOptions());
    return r.ok() ? grpc::Status::OK : WriteError(table, m, r.status());
  }
  // Deletes of a time range: the versions in it are read and deleted in
  // the same atomic step.
  ReadOptions read;
  read.max_versions = 0;
  read.columns = std::move(columns);
  return RewriteWith(table, row, read,
                     [&](const Row& current, RowMutation* m) {
                       return AppendMutations(mutations, &current, m);
                     });
}

grpc::Status DataService::MutateRow(grpc::ServerContext*,
                                    const v2::MutateRowRequest* request,
                                    v2::MutateRowResponse*) {
  if (context_->stopping) return Unavailable();
  grpc::Status st;
  const std::string table = ParseTableName(request->table_name(), &st);
  if (!st.ok()) return st;
  return MutateOneRow(table, request->row_key(), request->mutations());
}

grpc::Status DataService::StreamedMutateRows(
    grpc::ServerContext* ctx,
    grpc::ServerSplitStreamer<v2::MutateRowsRequest, v2::MutateRowsResponse>*
        stream) {
  if (context_->stopping) return Unavailable();
  // The request, its entries and the response live in one arena, freed at
  // once: a load's request of 1,000 rows is some 7,000 messages and
  // strings, which the heap spent a fifth of the call allocating and
  // freeing one by one.
  google::protobuf::Arena arena;
  auto* request =
      google::protobuf::Arena::CreateMessage<v2::MutateRowsRequest>(&arena);
  if (!stream->Read(request)) {
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        "the MutateRows request could not be read");
  }
  grpc::Status st;
  const std::string table = ParseTableName(request->table_name(), &st);
  if (!st.ok()) return st;
  if (request->entries_size() == 0) {
    return InvalidArgument("MutateRows needs at least one entry");
  }
  int64_t total = 0;
  for (const auto& e : request->entries()) total += e.mutations_size();
  if (total > kMaxMutationsPerRow) {
    return InvalidArgument("too many mutations: " + std::to_string(total) +
                           " (at most 100000 per request)");
  }
  // A table that does not exist fails the whole request, as in Cloud
  // Bigtable; anything else is reported per entry.
  if (Result<TableInfo> t = context_->store->GetTable(table); !t.ok()) {
    return ToGrpc(t.status());
  }
  // Entries whose mutations convert on their own are applied as one batch
  // (the store commits them in groups); deletes of a time range read their
  // row first, one entry at a time.
  std::vector<grpc::Status> statuses(request->entries_size());
  std::vector<RowMutation> batch;
  std::vector<int> batch_index;
  for (int i = 0; i < request->entries_size(); i++) {
    const auto& e = request->entries(i);
    std::vector<Column> ranged;
    if (TimeRangeColumns(e.mutations(), &ranged)) {
      statuses[i] = MutateOneRow(table, e.row_key(), e.mutations());
      continue;
    }
    if (grpc::Status s = ValidateApiRowKey(e.row_key()); !s.ok()) {
      statuses[i] = s;
      continue;
    }
    RowMutation m(e.row_key());
    if (grpc::Status s = AppendMutations(e.mutations(), nullptr, &m); !s.ok()) {
      statuses[i] = s;
      continue;
    }
    batch.push_back(std::move(m));
    batch_index.push_back(i);
  }
  // Asked once (a futex call each time): a call cancelled while its
  // entries converted applies nothing.
  if (ctx->IsCancelled()) {
    return grpc::Status(grpc::StatusCode::CANCELLED,
                        "cancelled before the entries were applied");
  }
  std::vector<Result<int64_t>> applied =
      context_->store->ApplyBatch(table, batch, WriteOptions());
  for (size_t j = 0; j < batch.size(); j++) {
    if (!applied[j].ok()) {
      statuses[batch_index[j]] = WriteError(table, batch[j], applied[j].status());
    }
  }
  auto* response =
      google::protobuf::Arena::CreateMessage<v2::MutateRowsResponse>(&arena);
  response->mutable_entries()->Reserve(request->entries_size());
  for (int i = 0; i < request->entries_size(); i++) {
    v2::MutateRowsResponse::Entry* entry = response->add_entries();
    entry->set_index(i);
    // Every entry carries a status, OK too: clients read it unguarded.
    google::rpc::Status* status = entry->mutable_status();
    if (statuses[i].ok()) continue;
    status->set_code(static_cast<int>(statuses[i].error_code()));
    status->set_message(statuses[i].error_message());
  }
  stream->Write(*response);
  return grpc::Status::OK;
}

grpc::Status DataService::CheckAndMutateRow(
    grpc::ServerContext*, const v2::CheckAndMutateRowRequest* request,
    v2::CheckAndMutateRowResponse* response) {
  if (context_->stopping) return Unavailable();
  grpc::Status st;
  const std::string table = ParseTableName(request->table_name(), &st);
  if (!st.ok()) return st;
  const std::string& row = request->row_key();
  if (grpc::Status s = ValidateApiRowKey(row); !s.ok()) return s;
  RowFilter predicate;
  if (request->has_predicate_filter()) {
    Result<RowFilter> compiled = RowFilter::Compile(request->predicate_filter());
    if (!compiled.ok()) return ToGrpc(compiled.status());
    predicate = std::move(compiled).value();
  }
  // Bad mutations are refused whatever the predicate says.
  for (const auto* list :
       {&request->true_mutations(), &request->false_mutations()}) {
    if (list->empty()) continue;
    RowMutation probe(row);
    Row none;
    if (grpc::Status s = AppendMutations(*list, &none, &probe); !s.ok()) {
      return s;
    }
  }
  ReadOptions read;
  read.max_versions = 0;
  bool matched = false;
  grpc::Status s = RewriteWith(
      table, row, read, [&](const Row& current, RowMutation* m) {
        matched = !predicate.Apply(current).empty();
        const auto& chosen = matched ? request->true_mutations()
                                     : request->false_mutations();
        return chosen.empty() ? grpc::Status::OK
                              : AppendMutations(chosen, &current, m);
      });
  if (!s.ok()) return s;
  response->set_predicate_matched(matched);
  return grpc::Status::OK;
}

grpc::Status DataService::PingAndWarm(grpc::ServerContext* ctx,
                                      const v2::PingAndWarmRequest* request,
                                      v2::PingAndWarmResponse*) {
  if (context_->stopping) return Unavailable();
  ctx->AddInitialMetadata(kChangeStreamsHeader, "1");
  return ParseInstanceName(request->name());
}

grpc::Status DataService::ReadModifyWriteRow(
    grpc::ServerContext*, const v2::ReadModifyWriteRowRequest* request,
    v2::ReadModifyWriteRowResponse* response) {
  if (context_->stopping) return Unavailable();
  grpc::Status st;
  const std::string table = ParseTableName(request->table_name(), &st);
  if (!st.ok()) return st;
  const std::string& row = request->row_key();
  if (grpc::Status s = ValidateApiRowKey(row); !s.ok()) return s;
  if (request->rules_size() == 0) {
    return InvalidArgument("ReadModifyWriteRow needs at least one rule");
  }
  ReadOptions read;
  read.max_versions = 1;
  for (const v2::ReadModifyWriteRule& rule : request->rules()) {
    if (rule.family_name().empty()) return InvalidArgument("a rule names no family");
    if (rule.rule_case() == v2::ReadModifyWriteRule::RULE_NOT_SET) {
      return InvalidArgument("a rule with neither append_value nor "
                             "increment_amount");
    }
    read.columns.push_back({rule.family_name(), rule.column_qualifier()});
  }
  // Every family must exist: NOT_FOUND before anything is read.
  for (const Column& c : read.columns) {
    Result<FamilySettings> f = context_->store->GetFamily(table, c.family);
    if (!f.ok()) return ToGrpc(f.status());
  }
  // Rules apply in order; a later rule on the same column sees the
  // earlier one's result.
  std::vector<std::pair<Column, std::string>> results;
  grpc::Status refused;
  Result<RewriteResult> r = context_->store->RewriteRow(
      table, row, read,
      [&](const Row& current) -> Result<RowMutation> {
        auto find = [&](const Column& c) -> std::string* {
          for (auto& [col, value] : results) {
            if (col.family == c.family && col.qualifier == c.qualifier) {
              return &value;
            }
          }
          return nullptr;
        };
        for (const v2::ReadModifyWriteRule& rule : request->rules()) {
          Column c{rule.family_name(), rule.column_qualifier()};
          std::string* value = find(c);
          if (value == nullptr) {
            std::string now;
            for (const Cell& cell : current.cells) {
              if (cell.family == c.family && cell.qualifier == c.qualifier) {
                now = cell.value;  // newest first: the first is the newest
                break;
              }
            }
            results.push_back({c, std::move(now)});
            value = &results.back().second;
          }
          if (rule.has_append_value()) {
            value->append(rule.append_value());
            continue;
          }
          uint64_t n = 0;
          if (!value->empty()) {
            if (value->size() != 8) {
              refused = InvalidArgument(
                  "increment of " + c.family + ":" + c.qualifier +
                  ": the value is " + std::to_string(value->size()) +
                  " bytes, not a 64-bit big-endian integer");
              return Refused(refused);
            }
            for (unsigned char ch : *value) n = n << 8 | ch;
          }
          n += static_cast<uint64_t>(rule.increment_amount());
          value->resize(8);
          for (int i = 7; i >= 0; i--, n >>= 8) {
            (*value)[i] = static_cast<char>(n & 0xff);
          }
        }
        RowMutation m(row);
        for (const auto& [c, value] : results) {
          m.SetCell(c.family, c.qualifier, value);
        }
        return m;
      },
      WriteOptions());
  if (!refused.ok()) return refused;
  if (!r.ok()) return ToGrpc(r.status());
  v2::Row* out = response->mutable_row();
  out->set_key(row);
  for (const auto& [c, value] : results) {
    AddCell(out, Cell{c.family, c.qualifier, r->timestamp, value});
  }
  return grpc::Status::OK;
}

}  // namespace tabletfs::api
