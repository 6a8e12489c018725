// A small JSON reader for `tabletctl import format=jsonl`: one value per
// line, objects of strings, integers and arrays. Strings decode to UTF-8
// (\uXXXX escapes included, surrogate pairs joined).
//
// Thread safety: plain values and pure functions.
#ifndef TABLETFS_MOUNT_CLI_JSON_H_
#define TABLETFS_MOUNT_CLI_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/status.h"

namespace tabletfs::cli {

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  // kNumber: the literal; `is_integer` when it is an int64 in `integer`.
  std::string number;
  bool is_integer = false;
  int64_t integer = 0;
  std::string string;
  std::vector<JsonValue> array;
  // Object members, in order: object_keys[i] names object_values[i].
  std::vector<std::string> object_keys;
  std::vector<JsonValue> object_values;

  // The member named `key` of an object, or nullptr.
  const JsonValue* Find(std::string_view key) const;
};

// Parses exactly one JSON value (surrounding whitespace allowed).
// InvalidArgument saying what was expected at which byte offset.
Result<JsonValue> ParseJson(std::string_view text);

}  // namespace tabletfs::cli

#endif  // TABLETFS_MOUNT_CLI_JSON_H_
