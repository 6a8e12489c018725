#include "api/convert.h"

#include <algorithm>
#include <utility>

namespace tabletfs::api {
namespace {

namespace v2 = google::bigtable::v2;
namespace admin = google::bigtable::admin::v2;

// Splits "a/b/c" into its parts.
std::vector<std::string_view> Parts(std::string_view name) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t slash = name.find('/', start);
    out.push_back(name.substr(start, slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

bool InRange(int64_t ts, const v2::TimestampRange& r) {
  return ts >= r.start_timestamp_micros() &&
         (r.end_timestamp_micros() == 0 || ts < r.end_timestamp_micros());
}

}  // namespace

grpc::Status ToGrpc(const Status& s) {
  using grpc::StatusCode;
  if (s.ok()) return grpc::Status::OK;
  StatusCode code = StatusCode::INTERNAL;
  if (s.IsNotFound()) code = StatusCode::NOT_FOUND;
  if (s.IsAlreadyExists()) code = StatusCode::ALREADY_EXISTS;
  if (s.IsInvalidArgument()) code = StatusCode::INVALID_ARGUMENT;
  if (s.IsNoSpace()) code = StatusCode::RESOURCE_EXHAUSTED;
  if (s.IsNotSupported()) code = StatusCode::UNIMPLEMENTED;
  if (s.IsBusy()) code = StatusCode::UNAVAILABLE;
  return grpc::Status(code, s.ToString());
}

grpc::Status ParseInstanceName(std::string_view name) {
  std::vector<std::string_view> p = Parts(name);
  if (p.size() != 4 || p[0] != "projects" || p[1].empty() ||
      p[2] != "instances" || p[3].empty()) {
    return InvalidArgument("malformed instance name '" + std::string(name) +
                           "': expected projects/PROJECT/instances/INSTANCE");
  }
  return grpc::Status::OK;
}

std::string ParseTableName(std::string_view name, grpc::Status* status) {
  std::vector<std::string_view> p = Parts(name);
  if (p.size() != 6 || p[0] != "projects" || p[1].empty() ||
      p[2] != "instances" || p[3].empty() || p[4] != "tables" ||
      p[5].empty()) {
    *status = InvalidArgument(
        "malformed table name '" + std::string(name) +
        "': expected projects/PROJECT/instances/INSTANCE/tables/TABLE");
    return {};
  }
  *status = grpc::Status::OK;
  return std::string(p[5]);
}

std::string TableName(std::string_view parent, std::string_view table) {
  return std::string(parent) + "/tables/" + std::string(table);
}

std::string InstanceOf(std::string_view table_name) {
  size_t at = table_name.find("/tables/");
  return std::string(table_name.substr(0, at));
}

grpc::Status ValidateApiRowKey(std::string_view row) {
  if (row.empty()) return InvalidArgument("row keys may not be empty");
  if (row.size() > kMaxRowKeyBytes) {
    return InvalidArgument("row key of " + std::to_string(row.size()) +
                           " bytes is above the limit of 4096");
  }
  return grpc::Status::OK;
}

bool HasTimeRange(const v2::Mutation::DeleteFromColumn& d) {
  return d.has_time_range() && (d.time_range().start_timestamp_micros() != 0 ||
                                d.time_range().end_timestamp_micros() != 0);
}

bool TimeRangeColumns(
    const google::protobuf::RepeatedPtrField<v2::Mutation>& mutations,
    std::vector<Column>* columns) {
  for (const v2::Mutation& m : mutations) {
    if (m.has_delete_from_column() && HasTimeRange(m.delete_from_column())) {
      columns->push_back({m.delete_from_column().family_name(),
                          m.delete_from_column().column_qualifier()});
    }
  }
  return !columns->empty();
}

grpc::Status AppendMutations(
    const google::protobuf::RepeatedPtrField<v2::Mutation>& mutations,
    const Row* current, RowMutation* out) {
  if (mutations.empty()) return InvalidArgument("no mutations given");
  if (mutations.size() > kMaxMutationsPerRow) {
    return InvalidArgument("too many mutations: " +
                           std::to_string(mutations.size()) +
                           " (at most 100000 per row)");
  }
  auto family_ok = [](const std::string& family) {
    return family.empty() ? InvalidArgument("a mutation names no family")
                          : grpc::Status::OK;
  };
  // Versions set at a client timestamp earlier in this list, for a later
  // delete by time range.
  std::vector<std::pair<Column, int64_t>> set_here;
  for (const v2::Mutation& m : mutations) {
    switch (m.mutation_case()) {
      case v2::Mutation::kSetCell: {
        const auto& s = m.set_cell();
        if (grpc::Status st = family_ok(s.family_name()); !st.ok()) return st;
        if (s.timestamp_micros() < -1) {
          return InvalidArgument("invalid timestamp " +
                                 std::to_string(s.timestamp_micros()) +
                                 ": -1 (the server's time) or at least 0");
        }
        if (s.timestamp_micros() == -1) {
          out->SetCell(s.family_name(), s.column_qualifier(), s.value());
        } else {
          out->SetCell(s.family_name(), s.column_qualifier(),
                       s.timestamp_micros(), s.value());
          set_here.push_back({{s.family_name(), s.column_qualifier()},
                              s.timestamp_micros()});
        }
        break;
      }
      case v2::Mutation::kDeleteFromColumn: {
        const auto& d = m.delete_from_column();
        if (grpc::Status st = family_ok(d.family_name()); !st.ok()) return st;
        if (!HasTimeRange(d)) {
          out->DeleteCell(d.family_name(), d.column_qualifier());
          break;
        }
        const v2::TimestampRange& r = d.time_range();
        if (r.start_timestamp_micros() < 0 || r.end_timestamp_micros() < 0 ||
            (r.end_timestamp_micros() != 0 &&
             r.end_timestamp_micros() < r.start_timestamp_micros())) {
          return InvalidArgument("invalid time range [" +
                                 std::to_string(r.start_timestamp_micros()) +
                                 ", " +
                                 std::to_string(r.end_timestamp_micros()) +
                                 ")");
        }
        std::vector<int64_t> doomed;
        if (current != nullptr) {
          for (const Cell& c : current->cells) {
            if (c.family == d.family_name() &&
                c.qualifier == d.column_qualifier() &&
                InRange(c.timestamp, r)) {
              doomed.push_back(c.timestamp);
            }
          }
        }
        for (const auto& [column, ts] : set_here) {
          if (column.family == d.family_name() &&
              column.qualifier == d.column_qualifier() && InRange(ts, r)) {
            doomed.push_back(ts);
          }
        }
        std::sort(doomed.begin(), doomed.end());
        doomed.erase(std::unique(doomed.begin(), doomed.end()), doomed.end());
        for (int64_t ts : doomed) {
          out->DeleteVersion(d.family_name(), d.column_qualifier(), ts);
        }
        break;
      }
      case v2::Mutation::kDeleteFromFamily:
        if (grpc::Status st = family_ok(m.delete_from_family().family_name());
            !st.ok()) {
          return st;
        }
        out->DeleteFamily(m.delete_from_family().family_name());
        break;
      case v2::Mutation::kDeleteFromRow:
        out->DeleteRow();
        break;
      case v2::Mutation::kAddToCell:
      case v2::Mutation::kMergeToCell:
        return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                            "aggregate families (AddToCell, MergeToCell) are "
                            "not supported");
      default:
        return InvalidArgument("a mutation of no known kind");
    }
  }
  return grpc::Status::OK;
}

grpc::Status ToGcPolicy(const admin::GcRule& rule, GcPolicy* out) {
  switch (rule.rule_case()) {
    case admin::GcRule::RULE_NOT_SET:
      *out = GcPolicy::Never();
      return grpc::Status::OK;
    case admin::GcRule::kMaxNumVersions:
      if (rule.max_num_versions() <= 0) {
        return InvalidArgument("max_num_versions must be positive, not " +
                               std::to_string(rule.max_num_versions()));
      }
      *out = GcPolicy::MaxVersions(static_cast<uint64_t>(rule.max_num_versions()));
      return grpc::Status::OK;
    case admin::GcRule::kMaxAge: {
      const auto& d = rule.max_age();
      if (d.seconds() < 0 || d.nanos() < 0 ||
          (d.seconds() == 0 && d.nanos() < 1000)) {
        return InvalidArgument("max_age must be at least 1 microsecond");
      }
      if (d.seconds() > INT64_MAX / 1000000 - 1) {
        return InvalidArgument("max_age is too large");
      }
      *out = GcPolicy::MaxAge(d.seconds() * 1000000 + d.nanos() / 1000);
      return grpc::Status::OK;
    }
    case admin::GcRule::kIntersection:
    case admin::GcRule::kUnion: {
      const bool intersection = rule.has_intersection();
      const auto& rules = intersection ? rule.intersection().rules()
                                       : rule.union_().rules();
      if (rules.empty()) {
        *out = GcPolicy::Never();
        return grpc::Status::OK;
      }
      GcPolicy acc;
      for (int i = 0; i < rules.size(); i++) {
        GcPolicy p;
        if (grpc::Status s = ToGcPolicy(rules[i], &p); !s.ok()) return s;
        acc = i == 0 ? p
                     : (intersection ? GcPolicy::And(acc, p)
                                     : GcPolicy::Or(acc, p));
      }
      *out = acc;
      return grpc::Status::OK;
    }
  }
  return InvalidArgument("a GC rule of no known kind");
}

admin::GcRule ToGcRule(const GcPolicy& policy) {
  admin::GcRule rule;
  switch (policy.kind()) {
    case GcPolicy::Kind::kNever:
      break;
    case GcPolicy::Kind::kMaxVersions:
      rule.set_max_num_versions(static_cast<int32_t>(
          std::min<uint64_t>(policy.max_versions(), INT32_MAX)));
      break;
    case GcPolicy::Kind::kMaxAge:
      rule.mutable_max_age()->set_seconds(policy.max_age_micros() / 1000000);
      rule.mutable_max_age()->set_nanos(
          static_cast<int32_t>(policy.max_age_micros() % 1000000 * 1000));
      break;
    // Nested as built (cbt sends "a or b or c" as ((a or b) or c), and
    // Cloud Bigtable and the emulator give it back that way).
    case GcPolicy::Kind::kAnd:
      *rule.mutable_intersection()->add_rules() = ToGcRule(policy.left());
      *rule.mutable_intersection()->add_rules() = ToGcRule(policy.right());
      break;
    case GcPolicy::Kind::kOr:
      *rule.mutable_union_()->add_rules() = ToGcRule(policy.left());
      *rule.mutable_union_()->add_rules() = ToGcRule(policy.right());
      break;
  }
  return rule;
}

}  // namespace tabletfs::api
