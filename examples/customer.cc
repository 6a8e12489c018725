// The customer table of the HBase reference guide, built and read through
// the C++ API:
//
//   customer DATADIR
//
// Rows 00001 and 00002; family Kundenname with FN, LN and MN (row 00001
// holds two versions of MN: "T", then "Timothy"); family ContactInfo with
// EA (an e-mail address) and SA (a street address). Re-running replaces
// the table. examples/customer_cli.sh and customer_mount.sh build the same
// table with tabletctl and through the mount.
#include <cstdio>
#include <iostream>
#include <string>

#include "store/db.h"

namespace {

using tabletfs::DB;

constexpr int64_t kT0 = 1767225600000000;  // 2026-01-01T00:00:00Z

tabletfs::Status Build(DB& db) {
  TABLETFS_ASSIGN_OR_RETURN(auto tables, db.ListTables());
  for (const std::string& t : tables) {
    if (t == "customer") TABLETFS_RETURN_IF_ERROR(db.DeleteTable(t));
  }
  TABLETFS_RETURN_IF_ERROR(db.CreateTable("customer"));
  for (const char* family : {"Kundenname", "ContactInfo"}) {
    TABLETFS_RETURN_IF_ERROR(
        db.CreateFamily("customer", family, tabletfs::FamilySettings()));
  }
  tabletfs::RowMutation first("00001");
  first.SetCell("Kundenname", "FN", kT0 + 1, "John")
      .SetCell("Kundenname", "LN", kT0 + 1, "Smith")
      .SetCell("Kundenname", "MN", kT0 + 1, "T")
      .SetCell("Kundenname", "MN", kT0 + 2, "Timothy")
      .SetCell("ContactInfo", "EA", kT0 + 1, "John.Smith@xyz.com")
      .SetCell("ContactInfo", "SA", kT0 + 1, "10 Main St, Anytown, USA");
  tabletfs::RowMutation second("00002");
  second.SetCell("Kundenname", "FN", kT0 + 1, "Jane")
      .SetCell("Kundenname", "LN", kT0 + 1, "Doe")
      .SetCell("ContactInfo", "EA", kT0 + 1, "Jane.Doe@xyz.com")
      .SetCell("ContactInfo", "SA", kT0 + 1, "20 Elm St, Anytown, USA");
  for (const tabletfs::RowMutation* m : {&first, &second}) {
    TABLETFS_RETURN_IF_ERROR(
        db.Apply("customer", *m, tabletfs::WriteOptions()).status());
  }
  return db.Sync();
}

tabletfs::Status Print(DB& db) {
  tabletfs::ReadOptions all_versions;
  all_versions.max_versions = 0;
  for (const char* key : {"00001", "00002"}) {
    TABLETFS_ASSIGN_OR_RETURN(auto row,
                              db.ReadRow("customer", key, all_versions));
    std::cout << key << '\n';
    for (const tabletfs::Cell& c : row.cells) {
      std::cout << "  " << c.family << ':' << c.qualifier << " @ +"
                << c.timestamp - kT0 << "us  " << c.value << '\n';
    }
  }
  return tabletfs::Status::OK();
}

int Fail(const std::string& what, const tabletfs::Status& s) {
  std::cerr << "customer: " << what << ": " << s.ToString() << '\n';
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DATADIR\n", argv[0]);
    return 2;
  }
  auto db = DB::Open(tabletfs::Options(), argv[1]);
  if (!db.ok()) return Fail(std::string("open ") + argv[1], db.status());
  tabletfs::Status s = Build(**db);
  if (!s.ok()) return Fail("build", s);
  s = Print(**db);
  if (!s.ok()) return Fail("read", s);
  return 0;
}
