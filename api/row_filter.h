// RowFilter: the Cloud Bigtable v2 RowFilter (google/bigtable/v2/data.proto)
// evaluated over one row of the data model (store/cell.h), as ReadRows and
// CheckAndMutateRow's predicate need it.
//
// A filter is compiled once per request (Compile: validation, regexes built)
// into a small immutable tree of nodes; Apply walks the tree once per row.
// Every node takes a list of cells in input order and outputs a sub-list of
// it, possibly with copies (Interleave) and transformed values or labels:
// each cell carries the index of the input cell it is a copy of, so merges
// keep input order and the output is always in the row's scan order.
//
// Semantics follow data.proto; where it is silent, Google's emulator
// (google-cloud-go bigtable/bttest); where the two leave room, the choices
// are in docs/API.md ("Row filters"). In short:
//   - Regexes are RE2 over bytes (Latin-1), matched against the whole
//     string: `.` does not match '\n', `\C` matches any byte.
//   - chain: sequential; an empty chain passes everything. interleave: the
//     outputs of every sub-filter merged in input order, duplicates kept
//     (equal cells in sub-filter order); an empty interleave outputs
//     nothing. condition: the predicate runs on the condition's input;
//     when it outputs any cell, true_filter runs on that input, otherwise
//     false_filter; a missing branch outputs nothing, a missing predicate
//     is pass_all.
//   - sink: its input goes straight to the final output of Apply and
//     nothing to its parent; the final output merges the sunk cells with
//     the root's output in input order (a sunk copy before the root's copy
//     of the same input cell).
//   - The row-wide filters (row key regex, row sample, cells per row
//     offset/limit, cells per column limit) see the cells that reach them,
//     duplicates counted one by one.
//   - strip_value_transformer empties values and keeps labels;
//     apply_label_transformer appends its label.
//
// Thread safety: a RowFilter is immutable after Compile; Apply may be called
// concurrently from any threads (row sampling draws from a thread-local
// generator). Copies share the compiled tree.
#ifndef TABLETFS_API_ROW_FILTER_H_
#define TABLETFS_API_ROW_FILTER_H_

#include <memory>
#include <string>
#include <vector>

#include "google/bigtable/v2/data.pb.h"
#include "store/cell.h"
#include "store/status.h"

namespace tabletfs::api {

// One cell of a row as a filter outputs it.
struct FilteredCell {
  Cell cell;                        // value empty when stripped
  std::vector<std::string> labels;  // from apply_label_transformer, in order

  bool operator==(const FilteredCell& other) const = default;
};

// A node of the compiled tree (defined in row_filter.cc).
class FilterNode;

class RowFilter {
 public:
  // Passes everything (a ReadRows request without a filter).
  RowFilter();

  // Compiles `proto`. InvalidArgument, with the path of the offending
  // sub-filter (e.g. "chain.filters[1].value_regex_filter: ...") and what
  // is wrong, for what Cloud Bigtable refuses:
  //   - a regex RE2 does not compile (the pattern and RE2's reason);
  //   - a family_name_regex_filter containing ':';
  //   - a row_sample_filter outside (0, 1) (or NaN);
  //   - a negative cells_per_row_offset/limit or cells_per_column_limit;
  //   - a negative timestamp_range_filter bound;
  //   - a column_range_filter without family_name;
  //   - an apply_label_transformer not of 1 to 15 of [a-z0-9-], or a chain
  //     with more than one sub-filter that can apply a label (a cell holds
  //     one label at most);
  //   - a sink anywhere inside a condition;
  //   - sink, pass_all_filter, block_all_filter or strip_value_transformer
  //     set to false;
  //   - filters nested more than 20 deep, or a filter whose serialized size
  //     passes 20480 bytes.
  static Result<RowFilter> Compile(
      const google::bigtable::v2::RowFilter& proto);

  // The cells of `row` that the filter outputs, in order. REQUIRES:
  // row.cells in the store's scan order (families in the table's order,
  // qualifiers bytewise, versions newest first). Copies of one input cell
  // may appear more than once (interleave, sink).
  std::vector<FilteredCell> Apply(const Row& row) const;

  // True when the filter passes everything unchanged (no filter, pass_all,
  // a chain of only such filters): the caller may skip Apply.
  bool PassesAll() const;

 private:
  explicit RowFilter(std::shared_ptr<const FilterNode> root);

  std::shared_ptr<const FilterNode> root_;  // never null
};

}  // namespace tabletfs::api

#endif  // TABLETFS_API_ROW_FILTER_H_
