// The table parts of google.bigtable.admin.v2.BigtableTableAdmin over the
// data model (api/services.h).
#include <string>
#include <utility>
#include <vector>

#include "api/convert.h"
#include "api/services.h"

namespace tabletfs::api {
namespace {

namespace admin = google::bigtable::admin::v2;

}  // namespace

grpc::Status TableAdminService::Describe(const std::string& instance,
                                         const std::string& table,
                                         admin::Table::View view,
                                         admin::Table* out) {
  out->set_name(TableName(instance, table));
  if (view == admin::Table::NAME_ONLY) return grpc::Status::OK;
  Result<std::vector<FamilyInfo>> families =
      context_->store->ListFamilies(table);
  if (!families.ok()) return ToGrpc(families.status());
  for (const FamilyInfo& f : *families) {
    *(*out->mutable_column_families())[f.name].mutable_gc_rule() =
        ToGcRule(f.settings.gc_policy);
  }
  // Versions written through the API or the mount carry microseconds; the
  // admin API knows only milliseconds (docs/API.md).
  out->set_granularity(admin::Table::MILLIS);
  return grpc::Status::OK;
}

grpc::Status TableAdminService::CreateTable(
    grpc::ServerContext*, const admin::CreateTableRequest* request,
    admin::Table* response) {
  if (context_->stopping) return Unavailable();
  if (grpc::Status s = ParseInstanceName(request->parent()); !s.ok()) return s;
  const std::string& table = request->table_id();
  if (Status s = ValidateTableName(table); !s.ok()) return ToGrpc(s);
  // Every family is checked before anything is created.
  std::vector<std::pair<std::string, FamilySettings>> families;
  for (const auto& [name, family] : request->table().column_families()) {
    if (Status s = ValidateFamilyName(name); !s.ok()) return ToGrpc(s);
    FamilySettings settings;
    if (grpc::Status s = ToGcPolicy(family.gc_rule(), &settings.gc_policy);
        !s.ok()) {
      return s;
    }
    families.emplace_back(name, settings);
  }
  // A protobuf map has no order: create the families sorted by name.
  std::sort(families.begin(), families.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  Bigtable* store = context_->store;
  if (Status s = store->CreateTable(table); !s.ok()) return ToGrpc(s);
  for (const auto& [name, settings] : families) {
    if (Status s = store->CreateFamily(table, name, settings); !s.ok()) {
      // Not created at all, rather than half.
      (void)store->DeleteTable(table);
      return ToGrpc(s);
    }
  }
  // initial_splits are accepted and not used: the engine splits tablets by
  // size (docs/API.md).
  return Describe(request->parent(), table, admin::Table::SCHEMA_VIEW,
                  response);
}

grpc::Status TableAdminService::ListTables(
    grpc::ServerContext*, const admin::ListTablesRequest* request,
    admin::ListTablesResponse* response) {
  if (context_->stopping) return Unavailable();
  if (grpc::Status s = ParseInstanceName(request->parent()); !s.ok()) return s;
  Result<std::vector<std::string>> tables = context_->store->ListTables();
  if (!tables.ok()) return ToGrpc(tables.status());
  const admin::Table::View view = request->view() == admin::Table::VIEW_UNSPECIFIED
                                      ? admin::Table::NAME_ONLY
                                      : request->view();
  for (const std::string& t : *tables) {
    grpc::Status s = Describe(request->parent(), t, view, response->add_tables());
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
      response->mutable_tables()->RemoveLast();  // dropped meanwhile
    } else if (!s.ok()) {
      return s;
    }
  }
  return grpc::Status::OK;
}

grpc::Status TableAdminService::GetTable(grpc::ServerContext*,
                                         const admin::GetTableRequest* request,
                                         admin::Table* response) {
  if (context_->stopping) return Unavailable();
  grpc::Status st;
  const std::string table = ParseTableName(request->name(), &st);
  if (!st.ok()) return st;
  if (Result<TableInfo> t = context_->store->GetTable(table); !t.ok()) {
    return ToGrpc(t.status());
  }
  const admin::Table::View view = request->view() == admin::Table::VIEW_UNSPECIFIED
                                      ? admin::Table::SCHEMA_VIEW
                                      : request->view();
  return Describe(InstanceOf(request->name()), table, view, response);
}

grpc::Status TableAdminService::DeleteTable(
    grpc::ServerContext*, const admin::DeleteTableRequest* request,
    google::protobuf::Empty*) {
  if (context_->stopping) return Unavailable();
  grpc::Status st;
  const std::string table = ParseTableName(request->name(), &st);
  if (!st.ok()) return st;
  return ToGrpc(context_->store->DeleteTable(table));
}

grpc::Status TableAdminService::ModifyColumnFamilies(
    grpc::ServerContext*, const admin::ModifyColumnFamiliesRequest* request,
    admin::Table* response) {
  if (context_->stopping) return Unavailable();
  grpc::Status st;
  const std::string table = ParseTableName(request->name(), &st);
  if (!st.ok()) return st;
  Bigtable* store = context_->store;
  Result<std::vector<FamilyInfo>> existing = store->ListFamilies(table);
  if (!existing.ok()) return ToGrpc(existing.status());
  // Checked as a whole first, in order (a family created by one
  // modification may be dropped by a later one), so that a bad request
  // changes nothing.
  std::vector<std::string> names;
  for (const FamilyInfo& f : *existing) names.push_back(f.name);
  auto exists = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  struct Change {
    enum { kCreate, kUpdate, kDrop } kind;
    std::string family;
    GcPolicy policy;
  };
  std::vector<Change> changes;
  if (request->modifications().empty()) {
    return InvalidArgument("ModifyColumnFamilies needs a modification");
  }
  for (const auto& m : request->modifications()) {
    const std::string& id = m.id();
    Change c{Change::kCreate, id, {}};
    switch (m.mod_case()) {
      case admin::ModifyColumnFamiliesRequest::Modification::kCreate:
        if (Status s = ValidateFamilyName(id); !s.ok()) return ToGrpc(s);
        if (exists(id)) {
          return grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                              "family " + id + " exists");
        }
        if (grpc::Status s = ToGcPolicy(m.create().gc_rule(), &c.policy);
            !s.ok()) {
          return s;
        }
        names.push_back(id);
        break;
      case admin::ModifyColumnFamiliesRequest::Modification::kUpdate:
        if (!exists(id)) {
          return grpc::Status(grpc::StatusCode::NOT_FOUND,
                              "no family " + id + " in " + table);
        }
        if (grpc::Status s = ToGcPolicy(m.update().gc_rule(), &c.policy);
            !s.ok()) {
          return s;
        }
        c.kind = Change::kUpdate;
        break;
      case admin::ModifyColumnFamiliesRequest::Modification::kDrop:
        if (!exists(id)) {
          return grpc::Status(grpc::StatusCode::NOT_FOUND,
                              "no family " + id + " in " + table);
        }
        names.erase(std::find(names.begin(), names.end(), id));
        c.kind = Change::kDrop;
        break;
      default:
        return InvalidArgument("a modification of family " + id +
                               " with nothing to do");
    }
    changes.push_back(std::move(c));
  }
  for (const Change& c : changes) {
    Status s;
    if (c.kind == Change::kDrop) {
      s = store->DeleteFamily(table, c.family);
    } else if (c.kind == Change::kCreate) {
      FamilySettings settings;
      settings.gc_policy = c.policy;
      s = store->CreateFamily(table, c.family, settings);
    } else {
      Result<FamilySettings> settings = store->GetFamily(table, c.family);
      s = settings.status();
      if (s.ok()) {
        settings->gc_policy = c.policy;
        s = store->UpdateFamily(table, c.family, *settings);
      }
    }
    if (!s.ok()) return ToGrpc(s);
  }
  return Describe(InstanceOf(request->name()), table, admin::Table::SCHEMA_VIEW,
                  response);
}

grpc::Status TableAdminService::DropRowRange(
    grpc::ServerContext* ctx, const admin::DropRowRangeRequest* request,
    google::protobuf::Empty*) {
  if (context_->stopping) return Unavailable();
  grpc::Status st;
  const std::string table = ParseTableName(request->name(), &st);
  if (!st.ok()) return st;
  ScanOptions so;
  so.read.max_versions = 1;
  if (request->target_case() == admin::DropRowRangeRequest::kRowKeyPrefix) {
    if (request->row_key_prefix().empty()) {
      return InvalidArgument("row_key_prefix may not be empty");
    }
    so.prefix = request->row_key_prefix();
  } else if (!request->delete_all_data_from_table()) {
    return InvalidArgument(
        "DropRowRange needs row_key_prefix or delete_all_data_from_table");
  }
  Bigtable* store = context_->store;
  std::shared_ptr<const Snapshot> snapshot = store->GetSnapshot();
  so.read.snapshot = snapshot.get();
  Result<std::unique_ptr<Scanner>> scanner = store->NewScanner(table, so);
  if (!scanner.ok()) return ToGrpc(scanner.status());
  // Row by row: each delete is atomic, the whole is not (docs/API.md).
  Scanner& s = **scanner;
  for (s.SeekToFirst(); s.Valid(); s.NextRow()) {
    if (ctx->IsCancelled()) return grpc::Status::CANCELLED;
    RowMutation m{std::string(s.row())};
    m.DeleteRow();
    Result<int64_t> r = store->Apply(table, m, WriteOptions());
    if (!r.ok()) return ToGrpc(r.status());
  }
  return ToGrpc(s.status());
}

}  // namespace tabletfs::api
