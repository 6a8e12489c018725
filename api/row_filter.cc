#include "api/row_filter.h"

#include <re2/re2.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <optional>
#include <random>
#include <string_view>
#include <utility>

namespace tabletfs::api {

namespace v2 = google::bigtable::v2;

class FilterNode {
 public:
  // A copy of one input cell on its way through the tree.
  struct Item {
    size_t index = 0;  // into Row::cells
    bool stripped = false;
    std::vector<const std::string*> labels;  // owned by the Label nodes
  };
  // Always sorted by index; copies of one cell keep their relative order.
  using Items = std::vector<Item>;

  // What the nodes share during one Apply.
  struct Context {
    const Row& row;
    Items* sunk;  // where sinks send their input

    const Cell& cell(const Item& item) const { return row.cells[item.index]; }
  };

  virtual ~FilterNode() = default;

  // The node's output for `in`. Every node outputs nothing for no input (a
  // chain relies on it to stop early).
  virtual Items Eval(Items in, const Context& ctx) const = 0;
  virtual bool PassesAll() const { return false; }
};

namespace {

using Item = FilterNode::Item;
using Items = FilterNode::Items;
using Context = FilterNode::Context;
using NodePtr = std::unique_ptr<const FilterNode>;

// The limits of data.proto's RowFilter documentation.
constexpr int kMaxDepth = 20;
constexpr size_t kMaxSerializedBytes = 20480;

bool ByIndex(const Item& a, const Item& b) { return a.index < b.index; }

// Merges two lists sorted by index; on a tie, `a`'s items come first.
Items Merge(Items a, Items b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  Items out;
  out.reserve(a.size() + b.size());
  std::merge(
      std::make_move_iterator(a.begin()), std::make_move_iterator(a.end()),
      std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()),
      std::back_inserter(out), ByIndex);
  return out;
}

// ---- Composition. ----

class PassAll final : public FilterNode {
 public:
  Items Eval(Items in, const Context&) const override { return in; }
  bool PassesAll() const override { return true; }
};

class BlockAll final : public FilterNode {
 public:
  Items Eval(Items, const Context&) const override { return {}; }
};

class Sink final : public FilterNode {
 public:
  Items Eval(Items in, const Context& ctx) const override {
    std::move(in.begin(), in.end(), std::back_inserter(*ctx.sunk));
    return {};
  }
};

class Chain final : public FilterNode {
 public:
  explicit Chain(std::vector<NodePtr> filters) : filters_(std::move(filters)) {}

  Items Eval(Items in, const Context& ctx) const override {
    for (const NodePtr& filter : filters_) {
      if (in.empty()) break;
      in = filter->Eval(std::move(in), ctx);
    }
    return in;
  }
  bool PassesAll() const override {
    return std::all_of(filters_.begin(), filters_.end(),
                       [](const NodePtr& f) { return f->PassesAll(); });
  }

 private:
  std::vector<NodePtr> filters_;
};

class Interleave final : public FilterNode {
 public:
  explicit Interleave(std::vector<NodePtr> filters)
      : filters_(std::move(filters)) {}

  Items Eval(Items in, const Context& ctx) const override {
    Items out;
    for (size_t i = 0; i < filters_.size(); i++) {
      // The last sub-filter may have the input itself, the others a copy.
      Items branch = i + 1 == filters_.size()
                         ? filters_[i]->Eval(std::move(in), ctx)
                         : filters_[i]->Eval(in, ctx);
      out = Merge(std::move(out), std::move(branch));
    }
    return out;
  }

 private:
  std::vector<NodePtr> filters_;
};

class Condition final : public FilterNode {
 public:
  // A null branch outputs nothing.
  Condition(NodePtr predicate, NodePtr if_true, NodePtr if_false)
      : predicate_(std::move(predicate)),
        true_(std::move(if_true)),
        false_(std::move(if_false)) {}

  Items Eval(Items in, const Context& ctx) const override {
    // No sink can be under a condition (Compile), so ctx.sunk stays as is.
    bool matched = !predicate_->Eval(in, ctx).empty();
    const NodePtr& branch = matched ? true_ : false_;
    if (branch == nullptr) return {};
    return branch->Eval(std::move(in), ctx);
  }

 private:
  NodePtr predicate_;
  NodePtr true_;
  NodePtr false_;
};

// ---- Row-wide filters. ----

class RowKeyRegex final : public FilterNode {
 public:
  explicit RowKeyRegex(std::unique_ptr<RE2> re) : re_(std::move(re)) {}

  Items Eval(Items in, const Context& ctx) const override {
    if (!RE2::FullMatch(ctx.row.key, *re_)) in.clear();
    return in;
  }

 private:
  std::unique_ptr<RE2> re_;
};

class RowSample final : public FilterNode {
 public:
  explicit RowSample(double probability) : probability_(probability) {}

  Items Eval(Items in, const Context&) const override {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    if (!(uniform(rng) < probability_)) in.clear();
    return in;
  }

 private:
  double probability_;
};

class RowOffset final : public FilterNode {
 public:
  explicit RowOffset(size_t offset) : offset_(offset) {}

  Items Eval(Items in, const Context&) const override {
    in.erase(in.begin(), in.begin() + std::min(offset_, in.size()));
    return in;
  }

 private:
  size_t offset_;
};

class RowLimit final : public FilterNode {
 public:
  explicit RowLimit(size_t limit) : limit_(limit) {}

  Items Eval(Items in, const Context&) const override {
    if (in.size() > limit_) in.erase(in.begin() + limit_, in.end());
    return in;
  }

 private:
  size_t limit_;
};

class ColumnLimit final : public FilterNode {
 public:
  explicit ColumnLimit(size_t limit) : limit_(limit) {}

  Items Eval(Items in, const Context& ctx) const override {
    // The cells of a column are contiguous in scan order, so a column ends
    // where family or qualifier change.
    Items out;
    const Cell* previous = nullptr;
    size_t in_column = 0;
    for (Item& item : in) {
      const Cell& cell = ctx.cell(item);
      if (previous == nullptr || cell.family != previous->family ||
          cell.qualifier != previous->qualifier) {
        in_column = 0;
      }
      previous = &cell;
      if (in_column++ < limit_) out.push_back(std::move(item));
    }
    return out;
  }

 private:
  size_t limit_;
};

// ---- Per-cell filters: each cell kept or dropped on its own. ----

class CellFilter : public FilterNode {
 public:
  Items Eval(Items in, const Context& ctx) const final {
    std::erase_if(in, [&](const Item& item) {
      const Cell& cell = ctx.cell(item);
      return !Matches(cell, item.stripped ? std::string_view() : cell.value);
    });
    return in;
  }

 protected:
  // `value` is the cell's value as it reaches the filter (empty once
  // stripped).
  virtual bool Matches(const Cell& cell, std::string_view value) const = 0;
};

class CellRegex final : public CellFilter {
 public:
  enum class Part { kFamily, kQualifier, kValue };

  CellRegex(Part part, std::unique_ptr<RE2> re)
      : part_(part), re_(std::move(re)) {}

 protected:
  bool Matches(const Cell& cell, std::string_view value) const override {
    switch (part_) {
      case Part::kFamily:
        return RE2::FullMatch(cell.family, *re_);
      case Part::kQualifier:
        return RE2::FullMatch(cell.qualifier, *re_);
      case Part::kValue:
        return RE2::FullMatch(value, *re_);
    }
    return false;
  }

 private:
  Part part_;
  std::unique_ptr<RE2> re_;
};

// A range of byte strings, compared bytewise. An unset start is the empty
// string, inclusive; an unset end is no bound.
struct ByteRange {
  std::string start;
  bool start_open = false;
  std::optional<std::string> end;
  bool end_open = false;

  bool Contains(std::string_view s) const {
    int c = s.compare(start);  // char_traits<char> compares as unsigned
    if (c < 0 || (c == 0 && start_open)) return false;
    if (!end.has_value()) return true;
    c = s.compare(*end);
    return c < 0 || (c == 0 && !end_open);
  }
};

class ColumnRange final : public CellFilter {
 public:
  ColumnRange(std::string family, ByteRange qualifiers)
      : family_(std::move(family)), qualifiers_(std::move(qualifiers)) {}

 protected:
  bool Matches(const Cell& cell, std::string_view) const override {
    return cell.family == family_ && qualifiers_.Contains(cell.qualifier);
  }

 private:
  std::string family_;
  ByteRange qualifiers_;
};

class ValueRange final : public CellFilter {
 public:
  explicit ValueRange(ByteRange values) : values_(std::move(values)) {}

 protected:
  bool Matches(const Cell&, std::string_view value) const override {
    return values_.Contains(value);
  }

 private:
  ByteRange values_;
};

class TimestampRange final : public CellFilter {
 public:
  // end 0: no upper bound.
  TimestampRange(int64_t start, int64_t end) : start_(start), end_(end) {}

 protected:
  bool Matches(const Cell& cell, std::string_view) const override {
    return cell.timestamp >= start_ && (end_ == 0 || cell.timestamp < end_);
  }

 private:
  int64_t start_;
  int64_t end_;
};

// ---- Transformers. ----

class StripValue final : public FilterNode {
 public:
  Items Eval(Items in, const Context&) const override {
    for (Item& item : in) item.stripped = true;
    return in;
  }
};

class Label final : public FilterNode {
 public:
  explicit Label(std::string label) : label_(std::move(label)) {}

  Items Eval(Items in, const Context&) const override {
    for (Item& item : in) item.labels.push_back(&label_);
    return in;
  }

 private:
  std::string label_;
};

// ---- Compile. ----

// `bytes` with every byte but printable ASCII written \xHH, for messages.
std::string Printable(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
      out.append(escaped);
    }
  }
  return out;
}

Status Invalid(const std::string& path, std::string_view what) {
  return Status::InvalidArgument(path, what);
}

Result<std::unique_ptr<RE2>> CompileRegex(const std::string& path,
                                          const std::string& pattern) {
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);  // bytes, not UTF-8
  options.set_log_errors(false);
  auto re = std::make_unique<RE2>(pattern, options);
  if (!re->ok()) {
    return Invalid(path, "invalid RE2 regex \"" + Printable(pattern) +
                             "\": " + Printable(re->error()));
  }
  return re;
}

ByteRange ToRange(bool has_start, bool start_open, const std::string& start,
                  bool has_end, bool end_open, const std::string& end) {
  ByteRange range;
  if (has_start) {
    range.start = start;
    range.start_open = start_open;
  }
  if (has_end) {
    range.end = end;
    range.end_open = end_open;
  }
  return range;
}

ByteRange ToRange(const v2::ColumnRange& r) {
  using C = v2::ColumnRange;
  bool start_open = r.start_qualifier_case() == C::kStartQualifierOpen;
  bool end_open = r.end_qualifier_case() == C::kEndQualifierOpen;
  return ToRange(
      r.start_qualifier_case() != C::START_QUALIFIER_NOT_SET, start_open,
      start_open ? r.start_qualifier_open() : r.start_qualifier_closed(),
      r.end_qualifier_case() != C::END_QUALIFIER_NOT_SET, end_open,
      end_open ? r.end_qualifier_open() : r.end_qualifier_closed());
}

ByteRange ToRange(const v2::ValueRange& r) {
  using V = v2::ValueRange;
  bool start_open = r.start_value_case() == V::kStartValueOpen;
  bool end_open = r.end_value_case() == V::kEndValueOpen;
  return ToRange(r.start_value_case() != V::START_VALUE_NOT_SET, start_open,
                 start_open ? r.start_value_open() : r.start_value_closed(),
                 r.end_value_case() != V::END_VALUE_NOT_SET, end_open,
                 end_open ? r.end_value_open() : r.end_value_closed());
}

// Whether `f` can put a label on a cell it outputs (a condition's predicate
// outputs nothing).
bool CanLabel(const v2::RowFilter& f) {
  switch (f.filter_case()) {
    case v2::RowFilter::kApplyLabelTransformer:
      return true;
    case v2::RowFilter::kChain:
      return std::any_of(f.chain().filters().begin(), f.chain().filters().end(),
                         CanLabel);
    case v2::RowFilter::kInterleave:
      return std::any_of(f.interleave().filters().begin(),
                         f.interleave().filters().end(), CanLabel);
    case v2::RowFilter::kCondition:
      return CanLabel(f.condition().true_filter()) ||
             CanLabel(f.condition().false_filter());
    default:
      return false;
  }
}

Result<size_t> NonNegative(const std::string& path, int32_t n) {
  if (n < 0)
    return Invalid(path, "must not be negative, got " + std::to_string(n));
  return static_cast<size_t>(n);
}

// Compiles the filter at `path`, `depth` levels deep (the root is 1);
// `in_condition`: somewhere under a condition, where sinks are refused.
Result<NodePtr> CompileNode(const v2::RowFilter& f, const std::string& path,
                            int depth, bool in_condition);

Result<std::vector<NodePtr>> CompileList(
    const google::protobuf::RepeatedPtrField<v2::RowFilter>& filters,
    const std::string& path, int depth, bool in_condition) {
  std::vector<NodePtr> nodes;
  for (int i = 0; i < filters.size(); i++) {
    TABLETFS_ASSIGN_OR_RETURN(
        NodePtr node,
        CompileNode(filters[i], path + "[" + std::to_string(i) + "]", depth + 1,
                    in_condition));
    nodes.push_back(std::move(node));
  }
  return nodes;
}

Result<NodePtr> CompileCondition(const v2::RowFilter::Condition& c,
                                 const std::string& path, int depth) {
  // Unset: the predicate is pass-all (an empty RowFilter), a branch outputs
  // nothing.
  NodePtr predicate = std::make_unique<PassAll>();
  NodePtr branches[2];
  const v2::RowFilter* protos[3] = {
      c.has_predicate_filter() ? &c.predicate_filter() : nullptr,
      c.has_true_filter() ? &c.true_filter() : nullptr,
      c.has_false_filter() ? &c.false_filter() : nullptr};
  const char* names[3] = {".predicate_filter", ".true_filter", ".false_filter"};
  for (int i = 0; i < 3; i++) {
    if (protos[i] == nullptr) continue;
    TABLETFS_ASSIGN_OR_RETURN(
        NodePtr node,
        CompileNode(*protos[i], path + names[i], depth + 1, true));
    (i == 0 ? predicate : branches[i - 1]) = std::move(node);
  }
  return NodePtr(std::make_unique<Condition>(
      std::move(predicate), std::move(branches[0]), std::move(branches[1])));
}

Status CheckTrue(const std::string& path, bool set) {
  if (!set) return Invalid(path, "must be true when set");
  return Status::OK();
}

bool ValidLabel(const std::string& label) {
  return !label.empty() && label.size() <= 15 &&
         std::all_of(label.begin(), label.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
         });
}

Result<NodePtr> CompileNode(const v2::RowFilter& f, const std::string& path,
                            int depth, bool in_condition) {
  using F = v2::RowFilter;
  if (depth > kMaxDepth) {
    return Invalid(path, "filters nested more than " +
                             std::to_string(kMaxDepth) + " deep");
  }
  switch (f.filter_case()) {
    case F::FILTER_NOT_SET:
      return NodePtr(std::make_unique<PassAll>());
    case F::kChain: {
      const std::string list = path + ".chain.filters";
      int labelled = 0;
      for (const v2::RowFilter& sub : f.chain().filters()) {
        labelled += CanLabel(sub) ? 1 : 0;
      }
      if (labelled > 1) {
        return Invalid(path + ".chain",
                       "more than one sub-filter applies a label (a cell "
                       "holds one label at most)");
      }
      TABLETFS_ASSIGN_OR_RETURN(
          std::vector<NodePtr> nodes,
          CompileList(f.chain().filters(), list, depth, in_condition));
      return NodePtr(std::make_unique<Chain>(std::move(nodes)));
    }
    case F::kInterleave: {
      TABLETFS_ASSIGN_OR_RETURN(
          std::vector<NodePtr> nodes,
          CompileList(f.interleave().filters(), path + ".interleave.filters",
                      depth, in_condition));
      return NodePtr(std::make_unique<Interleave>(std::move(nodes)));
    }
    case F::kCondition:
      return CompileCondition(f.condition(), path + ".condition", depth);
    case F::kSink:
      TABLETFS_RETURN_IF_ERROR(CheckTrue(path + ".sink", f.sink()));
      if (in_condition) {
        return Invalid(path + ".sink", "a sink cannot be inside a condition");
      }
      return NodePtr(std::make_unique<Sink>());
    case F::kPassAllFilter:
      TABLETFS_RETURN_IF_ERROR(
          CheckTrue(path + ".pass_all_filter", f.pass_all_filter()));
      return NodePtr(std::make_unique<PassAll>());
    case F::kBlockAllFilter:
      TABLETFS_RETURN_IF_ERROR(
          CheckTrue(path + ".block_all_filter", f.block_all_filter()));
      return NodePtr(std::make_unique<BlockAll>());
    case F::kRowKeyRegexFilter: {
      TABLETFS_ASSIGN_OR_RETURN(std::unique_ptr<RE2> re,
                                CompileRegex(path + ".row_key_regex_filter",
                                             f.row_key_regex_filter()));
      return NodePtr(std::make_unique<RowKeyRegex>(std::move(re)));
    }
    case F::kRowSampleFilter: {
      double p = f.row_sample_filter();
      if (!(p > 0.0 && p < 1.0)) {  // also refuses NaN
        char got[32];
        std::snprintf(got, sizeof(got), "%g", p);
        return Invalid(
            path + ".row_sample_filter",
            std::string("the probability must be in (0, 1), got ") + got);
      }
      return NodePtr(std::make_unique<RowSample>(p));
    }
    case F::kFamilyNameRegexFilter: {
      const std::string where = path + ".family_name_regex_filter";
      if (f.family_name_regex_filter().find(':') != std::string::npos) {
        return Invalid(where, "the regex must not contain ':', got \"" +
                                  Printable(f.family_name_regex_filter()) +
                                  "\"");
      }
      TABLETFS_ASSIGN_OR_RETURN(
          std::unique_ptr<RE2> re,
          CompileRegex(where, f.family_name_regex_filter()));
      return NodePtr(
          std::make_unique<CellRegex>(CellRegex::Part::kFamily, std::move(re)));
    }
    case F::kColumnQualifierRegexFilter: {
      TABLETFS_ASSIGN_OR_RETURN(
          std::unique_ptr<RE2> re,
          CompileRegex(path + ".column_qualifier_regex_filter",
                       f.column_qualifier_regex_filter()));
      return NodePtr(std::make_unique<CellRegex>(CellRegex::Part::kQualifier,
                                                 std::move(re)));
    }
    case F::kValueRegexFilter: {
      TABLETFS_ASSIGN_OR_RETURN(
          std::unique_ptr<RE2> re,
          CompileRegex(path + ".value_regex_filter", f.value_regex_filter()));
      return NodePtr(
          std::make_unique<CellRegex>(CellRegex::Part::kValue, std::move(re)));
    }
    case F::kColumnRangeFilter: {
      const v2::ColumnRange& r = f.column_range_filter();
      if (r.family_name().empty()) {
        return Invalid(path + ".column_range_filter.family_name",
                       "must name a family");
      }
      return NodePtr(
          std::make_unique<ColumnRange>(r.family_name(), ToRange(r)));
    }
    case F::kTimestampRangeFilter: {
      const v2::TimestampRange& r = f.timestamp_range_filter();
      if (r.start_timestamp_micros() < 0 || r.end_timestamp_micros() < 0) {
        return Invalid(path + ".timestamp_range_filter",
                       "bounds must not be negative, got [" +
                           std::to_string(r.start_timestamp_micros()) + ", " +
                           std::to_string(r.end_timestamp_micros()) + ")");
      }
      return NodePtr(std::make_unique<TimestampRange>(
          r.start_timestamp_micros(), r.end_timestamp_micros()));
    }
    case F::kValueRangeFilter:
      return NodePtr(
          std::make_unique<ValueRange>(ToRange(f.value_range_filter())));
    case F::kCellsPerRowOffsetFilter: {
      TABLETFS_ASSIGN_OR_RETURN(
          size_t n, NonNegative(path + ".cells_per_row_offset_filter",
                                f.cells_per_row_offset_filter()));
      return NodePtr(std::make_unique<RowOffset>(n));
    }
    case F::kCellsPerRowLimitFilter: {
      TABLETFS_ASSIGN_OR_RETURN(
          size_t n, NonNegative(path + ".cells_per_row_limit_filter",
                                f.cells_per_row_limit_filter()));
      return NodePtr(std::make_unique<RowLimit>(n));
    }
    case F::kCellsPerColumnLimitFilter: {
      TABLETFS_ASSIGN_OR_RETURN(
          size_t n, NonNegative(path + ".cells_per_column_limit_filter",
                                f.cells_per_column_limit_filter()));
      return NodePtr(std::make_unique<ColumnLimit>(n));
    }
    case F::kStripValueTransformer:
      TABLETFS_RETURN_IF_ERROR(CheckTrue(path + ".strip_value_transformer",
                                         f.strip_value_transformer()));
      return NodePtr(std::make_unique<StripValue>());
    case F::kApplyLabelTransformer:
      if (!ValidLabel(f.apply_label_transformer())) {
        return Invalid(path + ".apply_label_transformer",
                       "a label is 1 to 15 of [a-z0-9-], got \"" +
                           Printable(f.apply_label_transformer()) + "\"");
      }
      return NodePtr(std::make_unique<Label>(f.apply_label_transformer()));
  }
  return Invalid(path, "unsupported filter (field " +
                           std::to_string(f.filter_case()) + ")");
}

}  // namespace

RowFilter::RowFilter() : root_(std::make_shared<PassAll>()) {}

RowFilter::RowFilter(std::shared_ptr<const FilterNode> root)
    : root_(std::move(root)) {}

Result<RowFilter> RowFilter::Compile(const v2::RowFilter& proto) {
  size_t bytes = proto.ByteSizeLong();
  if (bytes > kMaxSerializedBytes) {
    return Invalid("filter", "serialized size " + std::to_string(bytes) +
                                 " bytes passes the limit of " +
                                 std::to_string(kMaxSerializedBytes));
  }
  TABLETFS_ASSIGN_OR_RETURN(NodePtr root,
                            CompileNode(proto, "filter", 1, false));
  return RowFilter(std::shared_ptr<const FilterNode>(std::move(root)));
}

std::vector<FilteredCell> RowFilter::Apply(const Row& row) const {
  Items in(row.cells.size());
  for (size_t i = 0; i < in.size(); i++) in[i].index = i;
  Items sunk;
  Items out = root_->Eval(std::move(in), Context{row, &sunk});
  if (!sunk.empty()) {
    // Sinks append as they run; order their cells as the input, then put
    // each before the root's copies of the same input cell.
    std::stable_sort(sunk.begin(), sunk.end(), ByIndex);
    out = Merge(std::move(sunk), std::move(out));
  }

  std::vector<FilteredCell> cells;
  cells.reserve(out.size());
  for (const Item& item : out) {
    const Cell& from = row.cells[item.index];
    FilteredCell& c = cells.emplace_back();
    c.cell.family = from.family;
    c.cell.qualifier = from.qualifier;
    c.cell.timestamp = from.timestamp;
    if (!item.stripped) c.cell.value = from.value;
    for (const std::string* label : item.labels) c.labels.push_back(*label);
  }
  return cells;
}

bool RowFilter::PassesAll() const { return root_->PassesAll(); }

}  // namespace tabletfs::api
