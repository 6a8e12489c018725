#include "store/reference/reference_bigtable.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "store/env.h"
#include "store/util/change_hub.h"
#include "store/util/mutex.h"

namespace tabletfs {
namespace {

constexpr uint64_t kAllEpochs = std::numeric_limits<uint64_t>::max();

// A GC policy in force for versions written from sequence number `since`
// on (until the next epoch's `since`); see UpdateFamily's contract.
struct GcEpoch {
  uint64_t since = 0;
  GcPolicy policy;
};

struct Family {
  // Unique in the store and growing, so ordering by id is creation order.
  uint64_t id = 0;
  std::string name;
  FamilySettings settings;
  std::vector<GcEpoch> epochs;  // ascending `since`, never empty
};

struct Version {
  std::string value;
  uint64_t seq = 0;  // the operation that wrote it
};

// Versions of one cell, newest first.
using Versions = std::map<int64_t, Version, std::greater<int64_t>>;
// (row, family id, qualifier): in scan order.
using CellKey = std::tuple<std::string, uint64_t, std::string>;
using Cells = std::map<CellKey, Versions>;

struct Table {
  uint64_t id = 0;
  // Its creation, or the timestamp of an older version written into it.
  int64_t created_micros = 0;
  std::vector<Family> families;  // creation order
  Cells cells;

  const Family* Find(std::string_view name) const {
    for (const Family& f : families) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }
  const Family* FindById(uint64_t id) const {
    for (const Family& f : families) {
      if (f.id == id) return &f;
    }
    return nullptr;
  }
};

// One version as reads return it, with its family id for ordering.
struct Entry {
  std::string row;
  uint64_t family_id = 0;
  Cell cell;

  CellKey key() const { return {row, family_id, cell.qualifier}; }
};

// The first key of every row after `row`.
CellKey RowEnd(const std::string& row) {
  return {row + std::string(1, '\0'), 0, std::string()};
}

// The versions of one cell a read returns, newest first: GC applied as of
// `now` by every epoch in force at `epoch_view`, then `at`, then
// max_versions. A version collected in any epoch it existed in stays
// collected, and a version's rank in an epoch counts only the newer
// versions that existed in that epoch.
std::vector<Cell> Visible(const Family& family, const std::string& qualifier,
                          const Versions& versions, const ReadOptions& ro,
                          uint64_t epoch_view, int64_t now) {
  std::vector<Cell> out;
  std::vector<uint64_t> ranks(family.epochs.size(), 0);
  for (const auto& [ts, version] : versions) {
    bool collected = false;
    for (size_t i = 0; i < family.epochs.size(); ++i) {
      const bool written_after_epoch =
          i + 1 < family.epochs.size() &&
          family.epochs[i + 1].since <= version.seq;
      if (written_after_epoch) continue;
      if (family.epochs[i].since <= epoch_view &&
          family.epochs[i].policy.Collects(ranks[i], now - ts)) {
        collected = true;
      }
      ++ranks[i];
    }
    if (collected) continue;
    if (ro.at.has_value() && ts > *ro.at) continue;
    if (ro.max_versions != 0 && out.size() >= ro.max_versions) break;
    out.push_back(Cell{family.name, qualifier, ts, version.value});
  }
  return out;
}

// Whether the families / columns of `ro` let the cell through.
bool Wanted(const ReadOptions& ro, const std::string& family,
            const std::string& qualifier) {
  if (ro.families.empty() && ro.columns.empty()) return true;
  for (const std::string& f : ro.families) {
    if (f == family) return true;
  }
  for (const Column& c : ro.columns) {
    if (c.family == family && c.qualifier == qualifier) return true;
  }
  return false;
}

class ReferenceSnapshot final : public Snapshot {
 public:
  ReferenceSnapshot(const void* owner, uint64_t seq,
                    std::map<uint64_t, Cells> cells)
      : owner_(owner), seq_(seq), cells_(std::move(cells)) {}

  const void* owner() const { return owner_; }
  uint64_t seq() const { return seq_; }
  // The cells of table `id` when the snapshot was taken.
  const Cells& cells(uint64_t id) const {
    static const Cells kNone;
    auto it = cells_.find(id);
    return it == cells_.end() ? kNone : it->second;
  }

 private:
  const void* const owner_;
  const uint64_t seq_;
  const std::map<uint64_t, Cells> cells_;
};

// Scans a list of entries made when the scanner was created.
class ReferenceScanner final : public Scanner {
 public:
  ReferenceScanner(std::vector<Entry> entries,
                   std::map<std::string, uint64_t, std::less<>> family_ids)
      : entries_(std::move(entries)), family_ids_(std::move(family_ids)) {}

  void Seek(std::string_view row, std::string_view family,
            std::string_view qualifier) override {
    CellKey target{std::string(row), 0, std::string()};
    auto f = family_ids_.find(family);
    if (!family.empty() && f != family_ids_.end()) {
      target = {std::string(row), f->second, std::string(qualifier)};
    }
    pos_ = std::lower_bound(
               entries_.begin(), entries_.end(), target,
               [](const Entry& e, const CellKey& k) { return e.key() < k; }) -
           entries_.begin();
  }
  void SeekToFirst() override { pos_ = 0; }
  bool Valid() const override { return pos_ < entries_.size(); }
  void Next() override { ++pos_; }
  void NextColumn() override {
    SkipWhile(
        [](const Entry& a, const Entry& b) { return a.key() == b.key(); });
  }
  void NextFamily() override {
    SkipWhile([](const Entry& a, const Entry& b) {
      return a.row == b.row && a.family_id == b.family_id;
    });
  }
  void NextRow() override {
    SkipWhile([](const Entry& a, const Entry& b) { return a.row == b.row; });
  }
  std::string_view row() const override { return entries_[pos_].row; }
  std::string_view family() const override {
    return entries_[pos_].cell.family;
  }
  std::string_view qualifier() const override {
    return entries_[pos_].cell.qualifier;
  }
  int64_t timestamp() const override { return entries_[pos_].cell.timestamp; }
  uint64_t value_size() const override {
    return entries_[pos_].cell.value.size();
  }
  Result<std::string_view> value() override {
    return std::string_view(entries_[pos_].cell.value);
  }
  Status status() const override { return Status::OK(); }

 private:
  // Moves past every entry `same` as the current one.
  template <typename Same>
  void SkipWhile(Same same) {
    const size_t from = pos_;
    while (pos_ < entries_.size() && same(entries_[from], entries_[pos_])) {
      ++pos_;
    }
  }

  const std::vector<Entry> entries_;
  const std::map<std::string, uint64_t, std::less<>> family_ids_;
  size_t pos_ = 0;
};

class ReferenceBigtable final : public Bigtable {
 public:
  explicit ReferenceBigtable(const ReferenceOptions& options)
      : clock_(options.clock != nullptr ? options.clock : Env::Default()),
        max_value_bytes_(options.max_value_bytes) {}

  // ---- Schema ----

  Status CreateTable(std::string_view table) override {
    TABLETFS_RETURN_IF_ERROR(ValidateTableName(table));
    MutexLock l(&mu_);
    if (tables_.count(table) != 0) {
      return Status::AlreadyExists("table exists", table);
    }
    Table& t = tables_[std::string(table)];
    t.id = next_id_++;
    t.created_micros = std::max(clock_->NowMicros(), last_ts_);
    return Status::OK();
  }

  Status DeleteTable(std::string_view table) override {
    MutexLock l(&mu_);
    auto it = tables_.find(table);
    if (it == tables_.end()) return Status::NotFound("no such table", table);
    tables_.erase(it);
    PublishDrop(table, {});
    return Status::OK();
  }

  Result<std::vector<std::string>> ListTables() override {
    MutexLock l(&mu_);
    std::vector<std::string> names;
    for (const auto& [name, t] : tables_) names.push_back(name);
    return names;
  }

  Result<TableInfo> GetTable(std::string_view table) override {
    MutexLock l(&mu_);
    TABLETFS_ASSIGN_OR_RETURN(Table * t, FindTable(table));
    return TableInfo{std::string(table), t->created_micros};
  }

  Status CreateFamily(std::string_view table, std::string_view family,
                      const FamilySettings& settings) override {
    TABLETFS_RETURN_IF_ERROR(ValidateFamilyName(family));
    MutexLock l(&mu_);
    TABLETFS_ASSIGN_OR_RETURN(Table * t, FindTable(table));
    if (t->Find(family) != nullptr) {
      return Status::AlreadyExists(
          "family exists", std::string(table) + ":" + std::string(family));
    }
    Family f;
    f.id = next_id_++;
    f.name = std::string(family);
    f.settings = settings;
    f.epochs.push_back({0, settings.gc_policy});
    t->families.push_back(std::move(f));
    return Status::OK();
  }

  Status UpdateFamily(std::string_view table, std::string_view family,
                      const FamilySettings& settings) override {
    MutexLock l(&mu_);
    TABLETFS_ASSIGN_OR_RETURN(Family * f, FindFamily(table, family));
    if (!(f->settings.gc_policy == settings.gc_policy)) {
      // The change takes a sequence number of its own: versions written
      // after it live under the new policy, older ones under both, and a
      // snapshot taken after it applies it.
      f->epochs.push_back({++seq_, settings.gc_policy});
    }
    f->settings = settings;
    return Status::OK();
  }

  Status DeleteFamily(std::string_view table,
                      std::string_view family) override {
    MutexLock l(&mu_);
    TABLETFS_ASSIGN_OR_RETURN(Family * f, FindFamily(table, family));
    Table* t = &tables_.find(table)->second;
    const uint64_t id = f->id;
    std::erase_if(t->cells, [id](const auto& cell) {
      return std::get<1>(cell.first) == id;
    });
    std::erase_if(t->families, [id](const Family& x) { return x.id == id; });
    PublishDrop(table, family);
    return Status::OK();
  }

  Result<std::vector<FamilyInfo>> ListFamilies(
      std::string_view table) override {
    MutexLock l(&mu_);
    TABLETFS_ASSIGN_OR_RETURN(Table * t, FindTable(table));
    std::vector<FamilyInfo> out;
    for (const Family& f : t->families) out.push_back({f.name, f.settings});
    return out;
  }

  Result<FamilySettings> GetFamily(std::string_view table,
                                   std::string_view family) override {
    MutexLock l(&mu_);
    TABLETFS_ASSIGN_OR_RETURN(Family * f, FindFamily(table, family));
    return f->settings;
  }

  // ---- Writes ----

  Result<int64_t> Apply(std::string_view table, const RowMutation& mutation,
                        const WriteOptions& options) override {
    MutexLock l(&mu_);
    return ApplyLocked(table, mutation, options.origin);
  }

  Result<AppendResult> Append(std::string_view table, std::string_view row,
                              std::string_view family,
                              std::string_view qualifier, std::string_view data,
                              const WriteOptions& options) override {
    TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
    MutexLock l(&mu_);
    TABLETFS_ASSIGN_OR_RETURN(std::vector<Cell> cells,
                              NewestLocked(table, row, family, qualifier));
    std::string value = cells.empty() ? std::string() : cells[0].value;
    if (value.size() + data.size() > max_value_bytes_) {
      return Status::InvalidArgument(
          "appended value of " + std::to_string(value.size() + data.size()) +
          " bytes is above the limit of " + std::to_string(max_value_bytes_));
    }
    value.append(data);
    RowMutation m{std::string(row)};
    m.SetCell(family, qualifier, value);
    TABLETFS_ASSIGN_OR_RETURN(int64_t ts,
                              ApplyLocked(table, m, options.origin));
    return AppendResult{ts, value.size()};
  }

  Result<int64_t> Increment(std::string_view table, std::string_view row,
                            std::string_view family, std::string_view qualifier,
                            int64_t delta,
                            const WriteOptions& options) override {
    TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
    MutexLock l(&mu_);
    TABLETFS_ASSIGN_OR_RETURN(std::vector<Cell> cells,
                              NewestLocked(table, row, family, qualifier));
    uint64_t current = 0;
    if (!cells.empty()) {
      if (cells[0].value.size() != 8) {
        return Status::InvalidArgument(
            "increment: value is " + std::to_string(cells[0].value.size()) +
                " bytes, expected an 8-byte big-endian integer",
            std::string(family) + ":" + std::string(qualifier));
      }
      for (unsigned char c : cells[0].value) current = current << 8 | c;
    }
    const uint64_t next = current + static_cast<uint64_t>(delta);
    std::string encoded(8, '\0');
    for (int i = 0; i < 8; ++i) {
      encoded[i] = static_cast<char>(next >> (56 - 8 * i));
    }
    RowMutation m{std::string(row)};
    m.SetCell(family, qualifier, encoded);
    TABLETFS_RETURN_IF_ERROR(ApplyLocked(table, m, options.origin).status());
    return static_cast<int64_t>(next);
  }

  Result<bool> CheckAndMutate(std::string_view table, std::string_view row,
                              const CellCondition& condition,
                              const RowMutation& if_true,
                              const RowMutation& if_false,
                              const WriteOptions& options) override {
    TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
    for (const RowMutation* m : {&if_true, &if_false}) {
      if (!m->empty() && m->row() != row) {
        return Status::InvalidArgument("CheckAndMutate: mutation for row '" +
                                       m->row() +
                                       "' differs from the checked row");
      }
    }
    MutexLock l(&mu_);
    TABLETFS_ASSIGN_OR_RETURN(Table * t, FindTable(table));
    for (const RowMutation* m : {&if_true, &if_false}) {
      if (!m->empty()) TABLETFS_RETURN_IF_ERROR(Validate(*t, *m));
    }
    TABLETFS_ASSIGN_OR_RETURN(
        std::vector<Cell> cells,
        NewestLocked(table, row, condition.family, condition.qualifier));
    bool holds = false;
    switch (condition.op) {
      case CellCondition::Op::kExists:
        holds = !cells.empty();
        break;
      case CellCondition::Op::kNotExists:
        holds = cells.empty();
        break;
      case CellCondition::Op::kEquals:
        holds = !cells.empty() && cells[0].value == condition.value;
        break;
    }
    const RowMutation& chosen = holds ? if_true : if_false;
    if (!chosen.empty()) {
      TABLETFS_RETURN_IF_ERROR(
          ApplyLocked(table, chosen, options.origin).status());
    }
    return holds;
  }

  Result<RewriteResult> RewriteRow(std::string_view table, std::string_view row,
                                   const ReadOptions& read,
                                   const RowRewrite& rewrite,
                                   const WriteOptions& options) override {
    TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
    if (read.snapshot != nullptr || read.at.has_value()) {
      return Status::InvalidArgument(
          "RewriteRow reads the current row: no snapshot, no time");
    }
    MutexLock l(&mu_);
    TABLETFS_ASSIGN_OR_RETURN(Row current, ReadRowLocked(table, row, read));
    TABLETFS_ASSIGN_OR_RETURN(RowMutation m, rewrite(current));
    if (m.empty()) return RewriteResult{};
    if (m.row() != row) {
      return Status::InvalidArgument("RewriteRow: mutation for row '" +
                                     m.row() + "' differs from the read row");
    }
    TABLETFS_ASSIGN_OR_RETURN(int64_t ts,
                              ApplyLocked(table, m, options.origin));
    return RewriteResult{true, ts};
  }

  // ---- Reads ----

  Result<Row> ReadRow(std::string_view table, std::string_view row,
                      const ReadOptions& options) override {
    TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
    MutexLock l(&mu_);
    return ReadRowLocked(table, row, options);
  }

  Result<Row> ReadRowLocked(std::string_view table, std::string_view row,
                            const ReadOptions& options) REQUIRES(mu_) {
    TABLETFS_ASSIGN_OR_RETURN(View v, ViewLocked(table, options));
    Row out;
    out.key = std::string(row);
    for (Entry& e : Collect(v, options, std::string(row),
                            std::get<0>(RowEnd(std::string(row))), {})) {
      out.cells.push_back(std::move(e.cell));
    }
    return out;
  }

  Result<std::vector<Cell>> ReadCell(std::string_view table,
                                     std::string_view row,
                                     std::string_view family,
                                     std::string_view qualifier,
                                     const ReadOptions& options) override {
    TABLETFS_RETURN_IF_ERROR(ValidateRowKey(row));
    MutexLock l(&mu_);
    TABLETFS_ASSIGN_OR_RETURN(View v, ViewLocked(table, options));
    const Family* f = v.table->Find(family);
    if (f == nullptr) {
      return Status::NotFound("no such family",
                              std::string(table) + ":" + std::string(family));
    }
    auto it =
        v.cells->find(CellKey{std::string(row), f->id, std::string(qualifier)});
    if (it == v.cells->end()) return std::vector<Cell>();
    return Visible(*f, std::string(qualifier), it->second, options,
                   v.epoch_view, clock_->NowMicros());
  }

  Result<std::unique_ptr<Scanner>> NewScanner(
      std::string_view table, const ScanOptions& options) override {
    MutexLock l(&mu_);
    TABLETFS_ASSIGN_OR_RETURN(View v, ViewLocked(table, options.read));
    std::map<std::string, uint64_t, std::less<>> family_ids;
    for (const Family& f : v.table->families) family_ids[f.name] = f.id;
    return std::unique_ptr<Scanner>(std::make_unique<ReferenceScanner>(
        Collect(v, options.read, options.start_row, options.end_row,
                options.prefix),
        std::move(family_ids)));
  }

  std::shared_ptr<const Snapshot> GetSnapshot() override {
    MutexLock l(&mu_);
    std::map<uint64_t, Cells> cells;
    for (const auto& [name, t] : tables_) cells[t.id] = t.cells;
    return std::make_shared<ReferenceSnapshot>(this, seq_, std::move(cells));
  }

  Result<std::vector<TabletInfo>> ListTablets(std::string_view table) override {
    MutexLock l(&mu_);
    TABLETFS_ASSIGN_OR_RETURN(Table * t, FindTable(table));
    TabletInfo one;  // the whole table, kept in memory
    for (const auto& [key, versions] : t->cells) {
      for (const auto& [ts, v] : versions) {
        one.bytes += std::get<0>(key).size() + std::get<2>(key).size() +
                     v.value.size() + sizeof(ts);
      }
    }
    return std::vector<TabletInfo>{one};
  }

  // Its tables, their one tablet each, and the bytes ListTablets counts.
  std::string StatsText() override {
    std::vector<std::string> names;
    {
      MutexLock l(&mu_);
      for (const auto& [name, t] : tables_) names.push_back(name);
    }
    uint64_t tables = 0, bytes = 0;
    for (const std::string& name : names) {
      Result<std::vector<TabletInfo>> tablets = ListTablets(name);
      if (!tablets.ok()) continue;  // dropped meanwhile
      tables++;
      for (const TabletInfo& t : *tablets) bytes += t.bytes;
    }
    return "store memory\ntables " + std::to_string(tables) + "\ntablets " +
           std::to_string(tables) + "\nbytes " + std::to_string(bytes) + "\n";
  }

  // ---- Change events, durability ----

  Result<std::unique_ptr<ChangeSubscription>> Subscribe(
      const SubscribeOptions& options) override {
    if (options.since) {
      return Status::NotSupported(
          "Subscribe: the reference store keeps no past changes (since)");
    }
    return changes_.Subscribe(options);
  }
  Status Sync() override { return Status::OK(); }
  Status StickyError() override { return Status::OK(); }

 private:
  // What a read sees: the table's current schema, and its cells now or as
  // of a snapshot.
  struct View {
    const Table* table = nullptr;
    const Cells* cells = nullptr;
    uint64_t epoch_view = kAllEpochs;
  };

  Result<Table*> FindTable(std::string_view table) REQUIRES(mu_) {
    auto it = tables_.find(table);
    if (it == tables_.end()) return Status::NotFound("no such table", table);
    return &it->second;
  }

  Result<Family*> FindFamily(std::string_view table, std::string_view family)
      REQUIRES(mu_) {
    TABLETFS_ASSIGN_OR_RETURN(Table * t, FindTable(table));
    for (Family& f : t->families) {
      if (f.name == family) return &f;
    }
    return Status::NotFound("no such family",
                            std::string(table) + ":" + std::string(family));
  }

  Result<View> ViewLocked(std::string_view table, const ReadOptions& options)
      REQUIRES(mu_) {
    const ReferenceSnapshot* snap = nullptr;
    if (options.snapshot != nullptr) {
      snap = dynamic_cast<const ReferenceSnapshot*>(options.snapshot);
      if (snap == nullptr || snap->owner() != this) {
        return Status::InvalidArgument("snapshot from another database");
      }
    }
    TABLETFS_ASSIGN_OR_RETURN(Table * t, FindTable(table));
    View v;
    v.table = t;
    v.cells = snap != nullptr ? &snap->cells(t->id) : &t->cells;
    v.epoch_view = snap != nullptr ? snap->seq() : kAllEpochs;
    return v;
  }

  // Every visible version of the rows in [start, end) (empty end: to the
  // last row) beginning with `prefix`, in scan order.
  std::vector<Entry> Collect(const View& v, const ReadOptions& ro,
                             const std::string& start, const std::string& end,
                             const std::string& prefix) REQUIRES(mu_) {
    const int64_t now = clock_->NowMicros();
    std::vector<Entry> out;
    for (auto it = v.cells->lower_bound(CellKey{start, 0, std::string()});
         it != v.cells->end(); ++it) {
      const auto& [row, family_id, qualifier] = it->first;
      if (!end.empty() && row >= end) break;
      if (!row.starts_with(prefix)) continue;
      // Cells of a family dropped after a snapshot are not read.
      const Family* f = v.table->FindById(family_id);
      if (f == nullptr || !Wanted(ro, f->name, qualifier)) continue;
      for (Cell& c :
           Visible(*f, qualifier, it->second, ro, v.epoch_view, now)) {
        out.push_back(Entry{row, family_id, std::move(c)});
      }
    }
    return out;
  }

  // The newest visible version of a cell (none: empty), for the
  // read-modify-write operations.
  Result<std::vector<Cell>> NewestLocked(std::string_view table,
                                         std::string_view row,
                                         std::string_view family,
                                         std::string_view qualifier)
      REQUIRES(mu_) {
    ReadOptions ro;
    TABLETFS_ASSIGN_OR_RETURN(View v, ViewLocked(table, ro));
    const Family* f = v.table->Find(family);
    if (f == nullptr) {
      return Status::NotFound("no such family",
                              std::string(table) + ":" + std::string(family));
    }
    auto it =
        v.cells->find(CellKey{std::string(row), f->id, std::string(qualifier)});
    if (it == v.cells->end()) return std::vector<Cell>();
    return Visible(*f, std::string(qualifier), it->second, ro, kAllEpochs,
                   clock_->NowMicros());
  }

  Status Validate(const Table& t, const RowMutation& m) const {
    if (m.empty()) return Status::InvalidArgument("empty mutation");
    TABLETFS_RETURN_IF_ERROR(ValidateRowKey(m.row()));
    for (const RowMutation::Op& op : m.ops()) {
      if (op.type < RowMutation::OpType::kSetCell ||
          op.type > RowMutation::OpType::kDeleteRow) {
        return Status::InvalidArgument("unknown mutation op");
      }
      if (op.type == RowMutation::OpType::kDeleteRow) continue;
      if (t.Find(op.family) == nullptr) {
        return Status::InvalidArgument("unknown family", op.family);
      }
      if (op.type == RowMutation::OpType::kSetCell &&
          op.value.size() > max_value_bytes_) {
        return Status::InvalidArgument(
            "value of " + std::to_string(op.value.size()) +
            " bytes is above the limit of " + std::to_string(max_value_bytes_));
      }
    }
    return Status::OK();
  }

  // Validates and applies `m` at a new server timestamp; publishes its
  // events.
  Result<int64_t> ApplyLocked(std::string_view table, const RowMutation& m,
                              uint64_t origin) REQUIRES(mu_) {
    TABLETFS_ASSIGN_OR_RETURN(Table * t, FindTable(table));
    TABLETFS_RETURN_IF_ERROR(Validate(*t, m));
    const int64_t commit_ts = std::max(clock_->NowMicros(), last_ts_ + 1);
    last_ts_ = commit_ts;
    const std::string& row = m.row();
    for (const RowMutation::Op& op : m.ops()) {
      ++seq_;
      const int64_t ts =
          op.timestamp == kServerTimestamp ? commit_ts : op.timestamp;
      const uint64_t fid = op.type == RowMutation::OpType::kDeleteRow
                               ? 0
                               : t->Find(op.family)->id;
      const CellKey key{row, fid, op.qualifier};
      switch (op.type) {
        case RowMutation::OpType::kSetCell:
          t->cells[key][ts] = Version{op.value, seq_};
          t->created_micros = std::min(t->created_micros, ts);
          break;
        case RowMutation::OpType::kDeleteVersion: {
          auto it = t->cells.find(key);
          if (it != t->cells.end()) {
            it->second.erase(ts);
            if (it->second.empty()) t->cells.erase(it);
          }
          break;
        }
        case RowMutation::OpType::kDeleteCell:
          t->cells.erase(key);
          break;
        case RowMutation::OpType::kDeleteFamily:
          t->cells.erase(t->cells.lower_bound(CellKey{row, fid, ""}),
                         t->cells.lower_bound(CellKey{row, fid + 1, ""}));
          break;
        case RowMutation::OpType::kDeleteRow:
          t->cells.erase(t->cells.lower_bound(CellKey{row, 0, ""}),
                         t->cells.lower_bound(RowEnd(row)));
          break;
      }
    }
    if (changes_.WantsOrigin(origin)) {
      std::vector<ChangeEvent> events;
      ChangeHub::AppendMutationEvents(table, m, commit_ts, origin,
                                      changes_.WantsValues(), &events);
      changes_.Publish(events);
    }
    return commit_ts;
  }

  void PublishDrop(std::string_view table, std::string_view family)
      REQUIRES(mu_) {
    if (!changes_.HasSubscribers()) return;
    ChangeEvent e;
    e.table = std::string(table);
    e.family = std::string(family);
    e.kind = family.empty() ? ChangeKind::kDropTable : ChangeKind::kDropFamily;
    e.timestamp = last_ts_;
    changes_.Publish({e});
  }

  Env* const clock_;
  const size_t max_value_bytes_;
  ChangeHub changes_;

  Mutex mu_;
  std::map<std::string, Table, std::less<>> tables_ GUARDED_BY(mu_);
  // Ids of tables and families: unique, growing.
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  // Operations applied (a version's `seq`, an epoch's `since`).
  uint64_t seq_ GUARDED_BY(mu_) = 0;
  int64_t last_ts_ GUARDED_BY(mu_) = 0;
};

}  // namespace

std::unique_ptr<Bigtable> NewReferenceBigtable(
    const ReferenceOptions& options) {
  return std::make_unique<ReferenceBigtable>(options);
}

}  // namespace tabletfs
