#include "fs/origin_bigtable.h"

#include <atomic>

namespace tabletfs::fs {
namespace {

class OriginBigtable final : public Bigtable {
 public:
  OriginBigtable(Bigtable* store, uint64_t origin, DirTimesCache* dir_times)
      : store_(store), origin_(origin), dir_times_(dir_times) {}

  Status CreateTable(std::string_view table) override {
    return store_->CreateTable(table);
  }
  Status DeleteTable(std::string_view table) override {
    auto w = dir_times_->BeginWide(table, std::nullopt);
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
    // A GC policy that comes to depend on time: no longer kept.
    auto w = dir_times_->BeginWide(table, std::nullopt);
    return store_->UpdateFamily(table, family, settings);
  }
  Status DeleteFamily(std::string_view table,
                      std::string_view family) override {
    auto w = dir_times_->BeginWide(table, std::nullopt);
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
    auto w = dir_times_->Begin(store_, table, mutation);
    auto r = store_->Apply(table, mutation, Tagged(options));
    w.Done(r.ok() ? std::optional<int64_t>(*r) : std::nullopt);
    return r;
  }
  Result<AppendResult> Append(std::string_view table, std::string_view row,
                              std::string_view family,
                              std::string_view qualifier, std::string_view data,
                              const WriteOptions& options) override {
    // A new version at a server timestamp, as the cache follows it.
    RowMutation as_set{std::string(row)};
    as_set.SetCell(family, qualifier, std::string_view());
    auto w = dir_times_->Begin(store_, table, as_set);
    auto r =
        store_->Append(table, row, family, qualifier, data, Tagged(options));
    w.Done(r.ok() ? std::optional<int64_t>(r->timestamp) : std::nullopt);
    return r;
  }
  Result<int64_t> Increment(std::string_view table, std::string_view row,
                            std::string_view family, std::string_view qualifier,
                            int64_t delta,
                            const WriteOptions& options) override {
    auto w = dir_times_->BeginWide(table, row);
    return store_->Increment(table, row, family, qualifier, delta,
                             Tagged(options));
  }
  Result<bool> CheckAndMutate(std::string_view table, std::string_view row,
                              const CellCondition& condition,
                              const RowMutation& if_true,
                              const RowMutation& if_false,
                              const WriteOptions& options) override {
    // Which branch applied is known, its server timestamp is not.
    auto w = dir_times_->BeginWide(table, row);
    return store_->CheckAndMutate(table, row, condition, if_true, if_false,
                                  Tagged(options));
  }

  std::vector<Result<int64_t>> ApplyBatch(
      std::string_view table, const std::vector<RowMutation>& mutations,
      const WriteOptions& options) override {
    std::vector<DirTimesCache::Write> writes;
    writes.reserve(mutations.size());
    for (const RowMutation& m : mutations) {
      writes.push_back(dir_times_->Begin(store_, table, m));
    }
    auto r = store_->ApplyBatch(table, mutations, Tagged(options));
    for (size_t i = 0; i < writes.size() && i < r.size(); i++) {
      writes[i].Done(r[i].ok() ? std::optional<int64_t>(*r[i]) : std::nullopt);
    }
    return r;
  }

  Result<RewriteResult> RewriteRow(std::string_view table,
                                   std::string_view row,
                                   const ReadOptions& read,
                                   const RowRewrite& rewrite,
                                   const WriteOptions& options) override {
    auto w = dir_times_->BeginWide(table, row);
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
  DirTimesCache* const dir_times_;
};

}  // namespace

uint64_t NewOrigin() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

std::unique_ptr<Bigtable> NewOriginBigtable(Bigtable* store, uint64_t origin,
                                            DirTimesCache* dir_times) {
  return std::make_unique<OriginBigtable>(store, origin, dir_times);
}

}  // namespace tabletfs::fs
