#include "store/scanner.h"

#include <string>

namespace tabletfs {

Status Scanner::ReadRow(Row *row) {
  assert(Valid());
  row->key.assign(this->row());
  row->cells.clear();
  // Compare against our own copy: views into the scanner die as it moves.
  while (Valid() && this->row() == row->key) {
    Result<std::string_view> value = this->value();
    if (!value.ok()) return value.status();
    row->cells.push_back(Cell{std::string(family()), std::string(qualifier()),
                              timestamp(), std::string(*value)});
    Next();
  }
  return status();
}

}  // namespace tabletfs
