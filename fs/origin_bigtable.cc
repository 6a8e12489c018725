#include "fs/origin_bigtable.h"

#include <atomic>

namespace tabletfs::fs {
namespace {

class OriginBigtable final : public Bigtable {
 public:
  OriginBigtable(Bigtable* store, uint64_t origin)
      : store_(store), origin_(origin) {}

  Status CreateTable(std::string_view table) override {
    return store_->CreateTable(table);
  }
  Status DeleteTable(std::string_view table) override {
    return store_->DeleteTable(table);
  }
  Result<std::vector<std::string>> ListTables() override {
    return store_->ListTables();
  }
  Result<TableInfo> GetTable(std::string_view table) override {
    return store_->GetTable(table);
  }
  Status CreateFamily(std::string_view table, std::string_view family,
                      const FamilySettings& settings) override {
    return store_->CreateFamily(table, family, settings);
  }
  Status UpdateFamily(std::string_view table, std::string_view family,
                      const FamilySettings& settings) override {
    return store_->UpdateFamily(table, family, settings);
  }
  Status DeleteFamily(std::string_view table,
                      std::string_view family) override {
    return store_->DeleteFamily(table, family);
  }
  Result<std::vector<FamilyInfo>> ListFamilies(
      std::string_view table) override {
    return store_->ListFamilies(table);
  }
  Result<FamilySettings> GetFamily(std::string_view table,
                                   std::string_view family) override {
    return store_->GetFamily(table, family);
  }

  Result<int64_t> Apply(std::string_view table, const RowMutation& mutation,
                        const WriteOptions& options) override {
    return store_->Apply(table, mutation, Tagged(options));
  }
  Result<AppendResult> Append(std::string_view table, std::string_view row,
                              std::string_view family,
                              std::string_view qualifier, std::string_view data,
                              const WriteOptions& options) override {
    return store_->Append(table, row, family, qualifier, data, Tagged(options));
  }
  Result<int64_t> Increment(std::string_view table, std::string_view row,
                            std::string_view family, std::string_view qualifier,
                            int64_t delta,
                            const WriteOptions& options) override {
    return store_->Increment(table, row, family, qualifier, delta,
                             Tagged(options));
  }
  Result<bool> CheckAndMutate(std::string_view table, std::string_view row,
                              const CellCondition& condition,
                              const RowMutation& if_true,
                              const RowMutation& if_false,
                              const WriteOptions& options) override {
    return store_->CheckAndMutate(table, row, condition, if_true, if_false,
                                  Tagged(options));
  }

  std::vector<Result<int64_t>> ApplyBatch(
      std::string_view table, const std::vector<RowMutation>& mutations,
      const WriteOptions& options) override {
    return store_->ApplyBatch(table, mutations, Tagged(options));
  }

  Result<RewriteResult> RewriteRow(std::string_view table,
                                   std::string_view row,
                                   const ReadOptions& read,
                                   const RowRewrite& rewrite,
                                   const WriteOptions& options) override {
    return store_->RewriteRow(table, row, read, rewrite, Tagged(options));
  }

  Result<Row> ReadRow(std::string_view table, std::string_view row,
                      const ReadOptions& options) override {
    return store_->ReadRow(table, row, options);
  }
  Result<std::vector<Cell>> ReadCell(std::string_view table,
                                     std::string_view row,
                                     std::string_view family,
                                     std::string_view qualifier,
                                     const ReadOptions& options) override {
    return store_->ReadCell(table, row, family, qualifier, options);
  }
  Result<std::optional<CellStat>> StatCell(
      std::string_view table, std::string_view row, std::string_view family,
      std::string_view qualifier, const ReadOptions& options) override {
    return store_->StatCell(table, row, family, qualifier, options);
  }
  Result<std::unique_ptr<Scanner>> NewScanner(
      std::string_view table, const ScanOptions& options) override {
    return store_->NewScanner(table, options);
  }
  std::shared_ptr<const Snapshot> GetSnapshot() override {
    return store_->GetSnapshot();
  }
  Result<std::vector<TabletInfo>> ListTablets(std::string_view table) override {
    return store_->ListTablets(table);
  }
  Result<std::unique_ptr<ChangeSubscription>> Subscribe(
      const SubscribeOptions& options) override {
    return store_->Subscribe(options);
  }
  int64_t TimestampGranularityMicros() const override {
    return store_->TimestampGranularityMicros();
  }
  std::string StatsText() override { return store_->StatsText(); }
  Status Sync() override { return store_->Sync(); }
  Status StickyError() override { return store_->StickyError(); }

 private:
  WriteOptions Tagged(const WriteOptions& options) const {
    WriteOptions o = options;
    o.origin = origin_;
    return o;
  }

  Bigtable* const store_;
  const uint64_t origin_;
};

}  // namespace

uint64_t NewOrigin() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

std::unique_ptr<Bigtable> NewOriginBigtable(Bigtable* store, uint64_t origin) {
  return std::make_unique<OriginBigtable>(store, origin);
}

}  // namespace tabletfs::fs
