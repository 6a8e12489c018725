#include "fs/path_map.h"

#include <errno.h>

#include <algorithm>
#include <functional>
#include <iterator>

#include "fs/names.h"
#include "fs/timestamp.h"

namespace tabletfs::fs {

Node Node::Parent() const {
  Node p;
  p.view = view;
  p.view_at = view_at;
  p.view_prefix = view_prefix;
  p.table = table;
  switch (kind) {
    case NodeKind::kRoot:
      // .versions and .at/T hang off the current root and .at.
      p = Node();
      if (view == View::kAt) p.kind = NodeKind::kAtRoot;
      return p;
    case NodeKind::kTable:
      if (view == View::kPrefix) {  // .prefix/TABLE/P
        p = Node();
        p.kind = NodeKind::kPrefixTable;
        p.table = table;
        return p;
      }
      p.kind = NodeKind::kRoot;
      p.table.clear();
      return p;
    case NodeKind::kRow:
      p.kind = NodeKind::kTable;
      return p;
    case NodeKind::kFamily:
      p.kind = NodeKind::kRow;
      p.row = row;
      return p;
    case NodeKind::kCell:
      p.kind = NodeKind::kFamily;
      p.row = row;
      p.family = family;
      return p;
    case NodeKind::kSchemaRoot:
    case NodeKind::kAtRoot:
    case NodeKind::kPrefixRoot:
    case NodeKind::kStatusDir:
      return Node();
    case NodeKind::kPrefixTable:
      p = Node();
      p.kind = NodeKind::kPrefixRoot;
      return p;
    case NodeKind::kChangesRoot:
      return Node();
    case NodeKind::kChangesFile:
      p = Node();
      p.kind = NodeKind::kChangesRoot;
      return p;
    case NodeKind::kSchemaTable:
      p.kind = NodeKind::kSchemaRoot;
      p.table.clear();
      return p;
    case NodeKind::kSchemaFamily:
      p.kind = NodeKind::kSchemaTable;
      return p;
    case NodeKind::kStatusFile:
      p = Node();
      p.kind = NodeKind::kStatusDir;
      return p;
    case NodeKind::kStageRoot:
    case NodeKind::kCommitRoot:
      return Node();
    case NodeKind::kStageTable:
      p.kind = NodeKind::kStageRoot;
      p.table.clear();
      return p;
    case NodeKind::kStageRow:
      p.kind = NodeKind::kStageTable;
      return p;
    case NodeKind::kStageFamily:
    case NodeKind::kStageRowMark:
      p.kind = NodeKind::kStageRow;
      p.row = row;
      return p;
    case NodeKind::kStageCell:
    case NodeKind::kStageCellMark:
      p.kind = NodeKind::kStageFamily;
      p.row = row;
      p.family = family;
      return p;
    case NodeKind::kCommitTable:
      p.kind = NodeKind::kCommitRoot;
      p.table.clear();
      return p;
    case NodeKind::kCommitRow:
      p.kind = NodeKind::kCommitTable;
      return p;
  }
  return Node();
}

std::string Node::DebugPath() const {
  if (kind == NodeKind::kRoot) {
    switch (view) {
      case View::kCurrent:
        return "/";
      // Built by appending: GCC 12 misreads "literal" + std::string
      // temporaries as overlapping copies (-Wrestrict, GCC bug 105329).
      case View::kVersions:
        return std::string("/").append(kVersionsDirName);
      case View::kAt:
        return std::string("/")
            .append(kAtDirName)
            .append("/")
            .append(std::to_string(view_at));
      case View::kPrefix:
        break;  // a prefix view has no root of its own
    }
  }
  std::string parent = Parent().DebugPath();
  if (parent != "/") parent += "/";
  return parent + ListedName(*this);
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
  mix(static_cast<size_t>(node.view));
  mix(std::hash<int64_t>()(node.view_at));
  mix(h(node.view_prefix));
  mix(h(node.name));
  return v;
}

FsError ParseChild(const Node& parent, std::string_view name,
                   ParsedChild* out) {
  ParsedChild c;
  Node& n = c.node;
  n.table = parent.table;
  n.row = parent.row;
  n.family = parent.family;
  n.view = parent.view;
  n.view_at = parent.view_at;
  n.view_prefix = parent.view_prefix;
  switch (parent.kind) {
    case NodeKind::kRoot:
      if (parent.view == View::kCurrent) {
        if (name == kSchemaDirName) {
          n.kind = NodeKind::kSchemaRoot;
          break;
        }
        if (name == kVersionsDirName) {
          n.kind = NodeKind::kRoot;
          n.view = View::kVersions;
          break;
        }
        if (name == kAtDirName) {
          n.kind = NodeKind::kAtRoot;
          break;
        }
        if (name == kPrefixDirName) {
          n.kind = NodeKind::kPrefixRoot;
          break;
        }
        if (name == kChangesDirName) {
          n.kind = NodeKind::kChangesRoot;
          break;
        }
        if (name == kStatusDirName) {
          n.kind = NodeKind::kStatusDir;
          break;
        }
        if (name == kStageDirName) {
          n.kind = NodeKind::kStageRoot;
          break;
        }
        if (name == kCommitDirName) {
          n.kind = NodeKind::kCommitRoot;
          break;
        }
      }
      TABLETFS_FS_RETURN_IF_ERROR(ParseTableName(name));
      n.kind = NodeKind::kTable;
      n.table = std::string(name);
      break;
    case NodeKind::kAtRoot: {
      int64_t t;
      TABLETFS_FS_RETURN_IF_ERROR(ParseTimestamp(name, &t));
      n = Node();
      n.kind = NodeKind::kRoot;
      n.view = View::kAt;
      n.view_at = t;
      break;
    }
    case NodeKind::kPrefixRoot:
      TABLETFS_FS_RETURN_IF_ERROR(ParseTableName(name));
      n = Node();
      n.kind = NodeKind::kPrefixTable;
      n.table = std::string(name);
      break;
    case NodeKind::kChangesRoot: {
      std::string_view base;
      std::optional<int64_t> at;
      TABLETFS_FS_RETURN_IF_ERROR(SplitVersionSuffix(name, &base, &at));
      TABLETFS_FS_RETURN_IF_ERROR(ParseTableName(base));
      n = Node();
      n.kind = NodeKind::kChangesFile;
      n.table = std::string(base);
      n.at = at;
      break;
    }
    case NodeKind::kPrefixTable: {
      // A prefix in the row-name encoding; a hashed name stands for one
      // whole key, never a prefix.
      ParsedName parsed;
      TABLETFS_FS_RETURN_IF_ERROR(ParseRowName(name, &parsed));
      if (parsed.hashed) {
        return FsError::Of(EINVAL, "a prefix cannot be a hashed name: '" +
                                       std::string(name) + "'");
      }
      n = Node();
      n.kind = NodeKind::kTable;
      n.view = View::kPrefix;
      n.table = parent.table;
      n.view_prefix = std::move(parsed.key);
      break;
    }
    case NodeKind::kStatusDir:
      if (std::find(std::begin(kStatusFileNames), std::end(kStatusFileNames),
                    name) == std::end(kStatusFileNames)) {
        return FsError::Of(
            ENOENT, "no status file '" + std::string(name) + "' in .tabletfs");
      }
      n = Node();
      n.kind = NodeKind::kStatusFile;
      n.name = std::string(name);
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
      if (parent.view == View::kVersions && !at.has_value()) {
        return FsError::Of(ENOENT,
                           "under .versions every name is "
                           "QUALIFIER@T, not '" +
                               std::string(name) + "'");
      }
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
    case NodeKind::kStageRoot:
    case NodeKind::kCommitRoot:
      TABLETFS_FS_RETURN_IF_ERROR(ParseTableName(name));
      n.kind = parent.kind == NodeKind::kStageRoot ? NodeKind::kStageTable
                                                   : NodeKind::kCommitTable;
      n.table = std::string(name);
      break;
    case NodeKind::kStageTable:
    case NodeKind::kCommitTable: {
      ParsedName parsed;
      TABLETFS_FS_RETURN_IF_ERROR(ParseRowName(name, &parsed));
      if (parsed.hashed) {
        return FsError::Of(ENAMETOOLONG,
                           "a staged row is named by its whole key, not "
                           "a hashed name: '" +
                               std::string(name) + "'");
      }
      n.kind = parent.kind == NodeKind::kStageTable ? NodeKind::kStageRow
                                                    : NodeKind::kCommitRow;
      n.row = std::move(parsed.key);
      break;
    }
    case NodeKind::kStageRow:
    case NodeKind::kStageFamily: {
      // NAME@delete, and in a row @delete and @if-unchanged.
      const size_t at = name.rfind('@');
      if (at != std::string_view::npos) {
        std::string_view base = name.substr(0, at);
        std::string_view mark = name.substr(at + 1);
        const bool in_row = parent.kind == NodeKind::kStageRow;
        if (mark == kDeleteMark && in_row && !base.empty()) {
          TABLETFS_FS_RETURN_IF_ERROR(ParseFamilyName(base));
          n.family = std::string(base);
        } else if (mark == kDeleteMark && !in_row) {
          ParsedName parsed;
          TABLETFS_FS_RETURN_IF_ERROR(ParseName(base, &parsed));
          if (parsed.hashed) {
            return FsError::Of(ENAMETOOLONG,
                               "a staged cell is named by its whole "
                               "qualifier: '" +
                                   std::string(name) + "'");
          }
          n.qualifier = std::move(parsed.key);
        } else if (!(in_row && base.empty() &&
                     (mark == kDeleteMark || mark == kIfUnchangedMark))) {
          return FsError::Of(EINVAL,
                             "in the stage, '@' only begins a mark: "
                             "NAME@delete, or in a row @delete and "
                             "@if-unchanged; not '" +
                                 std::string(name) + "'");
        }
        n.kind = in_row ? NodeKind::kStageRowMark : NodeKind::kStageCellMark;
        n.name = std::string(mark);
        break;
      }
      if (parent.kind == NodeKind::kStageRow) {
        TABLETFS_FS_RETURN_IF_ERROR(ParseFamilyName(name));
        n.kind = NodeKind::kStageFamily;
        n.family = std::string(name);
        break;
      }
      ParsedName parsed;
      TABLETFS_FS_RETURN_IF_ERROR(ParseName(name, &parsed));
      if (parsed.hashed) {
        return FsError::Of(ENAMETOOLONG,
                           "a staged cell is named by its whole qualifier: '" +
                               std::string(name) + "'");
      }
      n.kind = NodeKind::kStageCell;
      n.qualifier = std::move(parsed.key);
      break;
    }
    case NodeKind::kCell:
    case NodeKind::kSchemaFamily:
    case NodeKind::kStatusFile:
    case NodeKind::kChangesFile:
    case NodeKind::kStageCell:
    case NodeKind::kStageRowMark:
    case NodeKind::kStageCellMark:
      return FsError::Of(ENOTDIR, parent.DebugPath() + " is a file");
    case NodeKind::kCommitRow:
      return FsError::Of(ENOENT, parent.DebugPath() +
                                     " is only a name to move a staged row "
                                     "to");
  }
  *out = std::move(c);
  return FsError::Ok();
}

std::string ListedName(const Node& node) {
  switch (node.kind) {
    case NodeKind::kRoot:
      switch (node.view) {
        case View::kCurrent:
          return "/";
        case View::kVersions:
          return std::string(kVersionsDirName);
        case View::kAt:
          return std::to_string(node.view_at);
        case View::kPrefix:
          break;
      }
      return "/";
    case NodeKind::kAtRoot:
      return std::string(kAtDirName);
    case NodeKind::kPrefixRoot:
      return std::string(kPrefixDirName);
    case NodeKind::kPrefixTable:
      return node.table;
    case NodeKind::kChangesRoot:
      return std::string(kChangesDirName);
    case NodeKind::kChangesFile:
      return node.at.has_value() ? VersionName(node.table, *node.at)
                                 : node.table;
    case NodeKind::kStatusDir:
      return std::string(kStatusDirName);
    case NodeKind::kStatusFile:
      return node.name;
    case NodeKind::kTable:
      if (node.view == View::kPrefix) return ShownName(node.view_prefix);
      return node.table;
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
    case NodeKind::kStageRoot:
      return std::string(kStageDirName);
    case NodeKind::kCommitRoot:
      return std::string(kCommitDirName);
    case NodeKind::kStageTable:
    case NodeKind::kCommitTable:
      return node.table;
    case NodeKind::kStageRow:
    case NodeKind::kCommitRow:
      return EncodeName(node.row);
    case NodeKind::kStageFamily:
      return node.family;
    case NodeKind::kStageCell:
      return EncodeName(node.qualifier);
    case NodeKind::kStageRowMark:
      return node.family + "@" + node.name;
    case NodeKind::kStageCellMark:
      return EncodeName(node.qualifier) + "@" + node.name;
  }
  return "?";
}

}  // namespace tabletfs::fs
