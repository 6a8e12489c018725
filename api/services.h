// The gRPC services of the Cloud Bigtable v2 API over any implementation
// of the data model (store/bigtable.h): google.bigtable.v2.Bigtable (data)
// and the table parts of google.bigtable.admin.v2.BigtableTableAdmin.
// docs/API.md lists every RPC and filter and how each differs from Cloud
// Bigtable. ApiServer (api/server.h) runs them.
//
// Thread safety: gRPC calls the methods from many threads at once; the
// services keep no state but the store (thread-safe) and an atomic flag. A
// ReadChangeStream holds one of gRPC's threads while it streams.
#ifndef TABLETFS_API_SERVICES_H_
#define TABLETFS_API_SERVICES_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>

#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "store/bigtable.h"

namespace tabletfs::api {

// What the services share with the server that runs them.
struct ServiceContext {
  Bigtable* store = nullptr;  // not owned
  // Set once the server begins to stop: new calls get UNAVAILABLE.
  std::atomic<bool> stopping{false};
  // The change events a ReadChangeStream holds while its client does not
  // read (ApiOptions::max_queued_changes).
  size_t max_queued_changes = 65536;
};

// MutateRows reads its request itself (split streaming), into an arena:
// a bulk load's request holds thousands of messages.
class DataService final
    : public google::bigtable::v2::Bigtable::WithSplitStreamingMethod_MutateRows<
          google::bigtable::v2::Bigtable::Service> {
 public:
  explicit DataService(ServiceContext* context) : context_(context) {}

  grpc::Status ReadRows(
      grpc::ServerContext* ctx,
      const google::bigtable::v2::ReadRowsRequest* request,
      grpc::ServerWriter<google::bigtable::v2::ReadRowsResponse>* writer)
      override;
  grpc::Status SampleRowKeys(
      grpc::ServerContext* ctx,
      const google::bigtable::v2::SampleRowKeysRequest* request,
      grpc::ServerWriter<google::bigtable::v2::SampleRowKeysResponse>* writer)
      override;
  grpc::Status MutateRow(grpc::ServerContext* ctx,
                         const google::bigtable::v2::MutateRowRequest* request,
                         google::bigtable::v2::MutateRowResponse* response)
      override;
  grpc::Status StreamedMutateRows(
      grpc::ServerContext* ctx,
      grpc::ServerSplitStreamer<google::bigtable::v2::MutateRowsRequest,
                                google::bigtable::v2::MutateRowsResponse>*
          stream) override;
  grpc::Status CheckAndMutateRow(
      grpc::ServerContext* ctx,
      const google::bigtable::v2::CheckAndMutateRowRequest* request,
      google::bigtable::v2::CheckAndMutateRowResponse* response) override;
  grpc::Status PingAndWarm(
      grpc::ServerContext* ctx,
      const google::bigtable::v2::PingAndWarmRequest* request,
      google::bigtable::v2::PingAndWarmResponse* response) override;
  grpc::Status ReadModifyWriteRow(
      grpc::ServerContext* ctx,
      const google::bigtable::v2::ReadModifyWriteRowRequest* request,
      google::bigtable::v2::ReadModifyWriteRowResponse* response) override;

  // Change streams (change_stream.cc): one partition, the whole key range;
  // ReadChangeStream streams the events of changes committed from the
  // moment it opens (docs/API.md "Change streams").
  grpc::Status GenerateInitialChangeStreamPartitions(
      grpc::ServerContext* ctx,
      const google::bigtable::v2::GenerateInitialChangeStreamPartitionsRequest*
          request,
      grpc::ServerWriter<
          google::bigtable::v2::GenerateInitialChangeStreamPartitionsResponse>*
          writer) override;
  grpc::Status ReadChangeStream(
      grpc::ServerContext* ctx,
      const google::bigtable::v2::ReadChangeStreamRequest* request,
      grpc::ServerWriter<google::bigtable::v2::ReadChangeStreamResponse>*
          writer) override;

 private:
  // Applies the mutations of one row: OK or why not (nothing applied).
  grpc::Status MutateOneRow(
      const std::string& table, const std::string& row,
      const google::protobuf::RepeatedPtrField<google::bigtable::v2::Mutation>&
          mutations);
  // RewriteRow with the mutation `build` makes from the row as it is
  // (filling *m, or returning why not): OK, `build`'s refusal, or the
  // write's error. Nothing is written when it is not OK.
  grpc::Status RewriteWith(
      const std::string& table, const std::string& row,
      const ReadOptions& read,
      const std::function<grpc::Status(const Row& current, RowMutation* m)>&
          build);
  // The status of a refused write: NOT_FOUND for an unknown family, which
  // the store reports as a bad mutation.
  grpc::Status WriteError(const std::string& table, const RowMutation& m,
                          const Status& s);

  ServiceContext* context_;
};

class TableAdminService final
    : public google::bigtable::admin::v2::BigtableTableAdmin::Service {
 public:
  explicit TableAdminService(ServiceContext* context) : context_(context) {}

  grpc::Status CreateTable(
      grpc::ServerContext* ctx,
      const google::bigtable::admin::v2::CreateTableRequest* request,
      google::bigtable::admin::v2::Table* response) override;
  grpc::Status ListTables(
      grpc::ServerContext* ctx,
      const google::bigtable::admin::v2::ListTablesRequest* request,
      google::bigtable::admin::v2::ListTablesResponse* response) override;
  grpc::Status GetTable(
      grpc::ServerContext* ctx,
      const google::bigtable::admin::v2::GetTableRequest* request,
      google::bigtable::admin::v2::Table* response) override;
  grpc::Status DeleteTable(
      grpc::ServerContext* ctx,
      const google::bigtable::admin::v2::DeleteTableRequest* request,
      google::protobuf::Empty* response) override;
  grpc::Status ModifyColumnFamilies(
      grpc::ServerContext* ctx,
      const google::bigtable::admin::v2::ModifyColumnFamiliesRequest* request,
      google::bigtable::admin::v2::Table* response) override;
  grpc::Status DropRowRange(
      grpc::ServerContext* ctx,
      const google::bigtable::admin::v2::DropRowRangeRequest* request,
      google::protobuf::Empty* response) override;

 private:
  // The table as the admin API describes it, with its families unless
  // `view` is NAME_ONLY.
  grpc::Status Describe(const std::string& instance, const std::string& table,
                        google::bigtable::admin::v2::Table::View view,
                        google::bigtable::admin::v2::Table* out);

  ServiceContext* context_;
};

}  // namespace tabletfs::api

#endif  // TABLETFS_API_SERVICES_H_
