#include "fs/ephemeral_dirs.h"

namespace tabletfs::fs {

void EphemeralDirs::AddRow(std::string_view table, std::string_view row) {
  MutexLock lock(&mu_);
  tables_[std::string(table)][std::string(row)];
}

void EphemeralDirs::AddFamily(std::string_view table, std::string_view row,
                              std::string_view family) {
  MutexLock lock(&mu_);
  tables_[std::string(table)][std::string(row)].emplace(family);
}

bool EphemeralDirs::HasRow(std::string_view table, std::string_view row) {
  MutexLock lock(&mu_);
  auto t = tables_.find(table);
  return t != tables_.end() && t->second.count(std::string(row)) > 0;
}

bool EphemeralDirs::HasFamily(std::string_view table, std::string_view row,
                              std::string_view family) {
  MutexLock lock(&mu_);
  auto t = tables_.find(table);
  if (t == tables_.end()) return false;
  auto r = t->second.find(std::string(row));
  return r != t->second.end() && r->second.count(std::string(family)) > 0;
}

bool EphemeralDirs::RowHasFamilies(std::string_view table,
                                   std::string_view row) {
  MutexLock lock(&mu_);
  auto t = tables_.find(table);
  if (t == tables_.end()) return false;
  auto r = t->second.find(std::string(row));
  return r != t->second.end() && !r->second.empty();
}

bool EphemeralDirs::TableHasRows(std::string_view table) {
  MutexLock lock(&mu_);
  auto t = tables_.find(table);
  return t != tables_.end() && !t->second.empty();
}

std::optional<std::string> EphemeralDirs::NextRow(std::string_view table,
                                                  std::string_view after,
                                                  bool exclusive) {
  MutexLock lock(&mu_);
  auto t = tables_.find(table);
  if (t == tables_.end()) return std::nullopt;
  std::string key(after);
  auto r = exclusive ? t->second.upper_bound(key) : t->second.lower_bound(key);
  if (r == t->second.end()) return std::nullopt;
  return r->first;
}

std::vector<std::string> EphemeralDirs::Families(std::string_view table,
                                                 std::string_view row) {
  MutexLock lock(&mu_);
  auto t = tables_.find(table);
  if (t == tables_.end()) return {};
  auto r = t->second.find(std::string(row));
  if (r == t->second.end()) return {};
  return std::vector<std::string>(r->second.begin(), r->second.end());
}

bool EphemeralDirs::RemoveRow(std::string_view table, std::string_view row) {
  MutexLock lock(&mu_);
  auto t = tables_.find(table);
  if (t == tables_.end()) return false;
  bool erased = t->second.erase(std::string(row)) > 0;
  if (t->second.empty()) tables_.erase(t);
  return erased;
}

bool EphemeralDirs::RemoveFamily(std::string_view table, std::string_view row,
                                 std::string_view family) {
  MutexLock lock(&mu_);
  auto t = tables_.find(table);
  if (t == tables_.end()) return false;
  auto r = t->second.find(std::string(row));
  if (r == t->second.end()) return false;
  return r->second.erase(std::string(family)) > 0;
}

void EphemeralDirs::RemoveTable(std::string_view table) {
  MutexLock lock(&mu_);
  auto t = tables_.find(table);
  if (t != tables_.end()) tables_.erase(t);
}

void EphemeralDirs::AddCell(std::string_view table, std::string_view row,
                            std::string_view family,
                            std::string_view qualifier) {
  MutexLock lock(&mu_);
  cells_[{std::string(table), std::string(row), std::string(family)}]
        [std::string(qualifier)]++;
}

void EphemeralDirs::RemoveCell(std::string_view table, std::string_view row,
                               std::string_view family,
                               std::string_view qualifier) {
  MutexLock lock(&mu_);
  auto f =
      cells_.find({std::string(table), std::string(row), std::string(family)});
  if (f == cells_.end()) return;
  auto q = f->second.find(std::string(qualifier));
  if (q == f->second.end()) return;
  if (--q->second == 0) f->second.erase(q);
  if (f->second.empty()) cells_.erase(f);
}

std::optional<std::string> EphemeralDirs::NextCell(std::string_view table,
                                                   std::string_view row,
                                                   std::string_view family,
                                                   std::string_view after,
                                                   bool exclusive) {
  MutexLock lock(&mu_);
  auto f =
      cells_.find({std::string(table), std::string(row), std::string(family)});
  if (f == cells_.end()) return std::nullopt;
  std::string key(after);
  auto q = exclusive ? f->second.upper_bound(key) : f->second.lower_bound(key);
  if (q == f->second.end()) return std::nullopt;
  return q->first;
}

}  // namespace tabletfs::fs
