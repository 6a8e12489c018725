// Conversions between the Bigtable v2 protos and the data model
// (store/bigtable.h): resource names, statuses, mutations and GC rules.
//
// Thread safety: pure functions.
#ifndef TABLETFS_API_CONVERT_H_
#define TABLETFS_API_CONVERT_H_

#include <grpcpp/grpcpp.h>

#include <string>
#include <string_view>

#include "google/bigtable/admin/v2/table.pb.h"
#include "google/bigtable/v2/data.pb.h"
#include "store/bigtable.h"

namespace tabletfs::api {

// The initial metadata key with which the daemon answers PingAndWarm
// (value "1"): it serves ReadChangeStream. The remote client asks before
// it opens a change stream on a plaintext server, because Google's
// emulator, which has none, crashes on ReadChangeStream.
inline constexpr char kChangeStreamsHeader[] = "x-tabletfs-change-streams";

// Cloud Bigtable's limits, which the API enforces whatever the store takes.
inline constexpr size_t kMaxRowKeyBytes = 4096;
inline constexpr int kMaxMutationsPerRow = 100000;

// The gRPC status of a store error: NOT_FOUND, ALREADY_EXISTS,
// INVALID_ARGUMENT, RESOURCE_EXHAUSTED (no space), UNIMPLEMENTED (not
// supported), UNAVAILABLE (busy), INTERNAL (I/O error, corruption).
grpc::Status ToGrpc(const Status& s);
inline grpc::Status InvalidArgument(const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
}
// What a call made while the server stops gets.
inline grpc::Status Unavailable() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      "the server is shutting down");
}

// "projects/P/instances/I" (any P and I, as the emulator takes): OK or
// INVALID_ARGUMENT.
grpc::Status ParseInstanceName(std::string_view name);
// "projects/P/instances/I/tables/T": T, or INVALID_ARGUMENT in *status.
std::string ParseTableName(std::string_view name, grpc::Status* status);
// "PARENT/tables/T".
std::string TableName(std::string_view parent, std::string_view table);
// The instance part of a table name ("projects/P/instances/I").
std::string InstanceOf(std::string_view table_name);

// A row key the API accepts: 1 byte to 4 KiB.
grpc::Status ValidateApiRowKey(std::string_view row);

// Whether a DeleteFromColumn names a time range (else it deletes every
// version of the column).
bool HasTimeRange(const google::bigtable::v2::Mutation::DeleteFromColumn& d);

// Appends `mutations` to *out, in order. A DeleteFromColumn with a time
// range becomes one DeleteVersion per version in the range: of `current`
// (the row as it is, read under RewriteRow; nullptr when no mutation has a
// time range) and of the cells set earlier in the same list.
// INVALID_ARGUMENT for an unsupported or malformed mutation (a timestamp
// below -1, an empty family, AddToCell and MergeToCell: UNIMPLEMENTED).
grpc::Status AppendMutations(
    const google::protobuf::RepeatedPtrField<google::bigtable::v2::Mutation>&
        mutations,
    const Row* current, RowMutation* out);

// The columns a list of mutations deletes by time range (what RewriteRow
// must read), with whether there is any.
bool TimeRangeColumns(
    const google::protobuf::RepeatedPtrField<google::bigtable::v2::Mutation>&
        mutations,
    std::vector<Column>* columns);

// GC rules: max versions, max age, intersection (and), union (or), none
// (never). INVALID_ARGUMENT for a negative or zero count or age.
grpc::Status ToGcPolicy(const google::bigtable::admin::v2::GcRule& rule,
                        GcPolicy* out);
google::bigtable::admin::v2::GcRule ToGcRule(const GcPolicy& policy);

}  // namespace tabletfs::api

#endif  // TABLETFS_API_CONVERT_H_
