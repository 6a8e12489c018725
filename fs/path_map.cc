#include "fs/path_map.h"

#include <errno.h>

#include <functional>

#include "fs/names.h"

namespace tabletfs::fs {

Node Node::Parent() const {
  Node p;
  switch (kind) {
    case NodeKind::kRoot:
    case NodeKind::kTable:
    case NodeKind::kSchemaRoot:
      return p;
    case NodeKind::kRow:
      p.kind = NodeKind::kTable;
      p.table = table;
      return p;
    case NodeKind::kFamily:
      p.kind = NodeKind::kRow;
      p.table = table;
      p.row = row;
      return p;
    case NodeKind::kCell:
      p.kind = NodeKind::kFamily;
      p.table = table;
      p.row = row;
      p.family = family;
      return p;
    case NodeKind::kSchemaTable:
      p.kind = NodeKind::kSchemaRoot;
      return p;
    case NodeKind::kSchemaFamily:
      p.kind = NodeKind::kSchemaTable;
      p.table = table;
      return p;
  }
  return p;
}

std::string Node::DebugPath() const {
  switch (kind) {
    case NodeKind::kRoot:
      return "/";
    case NodeKind::kSchemaRoot:
      return "/.schema";
    case NodeKind::kSchemaTable:
      return "/.schema/" + table;
    case NodeKind::kSchemaFamily:
      return "/.schema/" + table + "/" + family;
    default:
      break;
  }
  return Parent().DebugPath() + (kind == NodeKind::kTable ? "" : "/") +
         ListedName(*this);
}

size_t NodeHash::operator()(const Node& node) const {
  std::hash<std::string> h;
  size_t v = static_cast<size_t>(node.kind) * 0x9E3779B97F4A7C15ull;
  auto mix = [&v](size_t x) {
    v ^= x + 0x9E3779B97F4A7C15ull + (v << 6) + (v >> 2);
  };
  mix(h(node.table));
  mix(h(node.row));
  mix(h(node.family));
  mix(h(node.qualifier));
  mix(node.at.has_value() ? std::hash<int64_t>()(*node.at) : 7);
  return v;
}

FsError ParseChild(const Node& parent, std::string_view name,
                   ParsedChild* out) {
  ParsedChild c;
  Node& n = c.node;
  n.table = parent.table;
  n.row = parent.row;
  n.family = parent.family;
  switch (parent.kind) {
    case NodeKind::kRoot:
      if (name == kSchemaDirName) {
        n.kind = NodeKind::kSchemaRoot;
        break;
      }
      if (name == ".versions" || name == ".at" || name == ".tabletfs") {
        return FsError::Of(ENOENT, "'" + std::string(name) +
                                       "' is not served by this version");
      }
      TABLETFS_FS_RETURN_IF_ERROR(ParseTableName(name));
      n.kind = NodeKind::kTable;
      n.table = std::string(name);
      break;
    case NodeKind::kTable: {
      ParsedName parsed;
      TABLETFS_FS_RETURN_IF_ERROR(ParseRowName(name, &parsed));
      n.kind = NodeKind::kRow;
      n.row = std::move(parsed.key);
      c.hashed = parsed.hashed;
      c.hash = parsed.hash;
      break;
    }
    case NodeKind::kRow:
      TABLETFS_FS_RETURN_IF_ERROR(ParseFamilyName(name));
      n.kind = NodeKind::kFamily;
      n.family = std::string(name);
      break;
    case NodeKind::kFamily: {
      std::string_view base;
      std::optional<int64_t> at;
      TABLETFS_FS_RETURN_IF_ERROR(SplitVersionSuffix(name, &base, &at));
      ParsedName parsed;
      TABLETFS_FS_RETURN_IF_ERROR(ParseName(base, &parsed));
      n.kind = NodeKind::kCell;
      n.qualifier = std::move(parsed.key);
      n.at = at;
      c.hashed = parsed.hashed;
      c.hash = parsed.hash;
      break;
    }
    case NodeKind::kSchemaRoot:
      TABLETFS_FS_RETURN_IF_ERROR(ParseTableName(name));
      n.kind = NodeKind::kSchemaTable;
      n.table = std::string(name);
      break;
    case NodeKind::kSchemaTable:
      TABLETFS_FS_RETURN_IF_ERROR(ParseFamilyName(name));
      n.kind = NodeKind::kSchemaFamily;
      n.family = std::string(name);
      break;
    case NodeKind::kCell:
    case NodeKind::kSchemaFamily:
      return FsError::Of(ENOTDIR, parent.DebugPath() + " is a file");
  }
  *out = std::move(c);
  return FsError::Ok();
}

std::string ListedName(const Node& node) {
  switch (node.kind) {
    case NodeKind::kRoot:
      return "/";
    case NodeKind::kTable:
    case NodeKind::kSchemaTable:
      return node.table;
    case NodeKind::kRow:
      return ShownName(node.row);
    case NodeKind::kFamily:
    case NodeKind::kSchemaFamily:
      return node.family;
    case NodeKind::kCell:
      if (node.at.has_value()) {
        return VersionName(ShownName(node.qualifier), *node.at);
      }
      return ShownName(node.qualifier);
    case NodeKind::kSchemaRoot:
      return std::string(kSchemaDirName);
  }
  return "?";
}

}  // namespace tabletfs::fs
