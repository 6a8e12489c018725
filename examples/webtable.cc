// The Webtable of the Bigtable paper (figure 1), built and read through the
// C++ API:
//
//   webtable DATADIR
//
// Rows are reversed URLs. `contents:` (the empty qualifier) holds three
// versions of the page, at t3, t5 and t6; `anchor:` holds one cell per
// referring site, whose value is the link text. The paper's t3 ... t9 are
// seconds 3 ... 9 after 2026-01-01T00:00:00Z, as in examples/quickstart.sh.
//
// Re-running replaces the table. Afterwards, `tabletctl -d DATADIR read
// webtable` shows the same data.
#include <cstdio>
#include <iostream>
#include <string>

#include "store/db.h"

namespace {

using tabletfs::DB;

constexpr int64_t kT0 = 1767225600000000;  // 2026-01-01T00:00:00Z
constexpr int64_t T(int n) { return kT0 + n * int64_t{1000000}; }

int Fail(const std::string& what, const tabletfs::Status& s) {
  std::cerr << "webtable: " << what << ": " << s.ToString() << '\n';
  return 1;
}

tabletfs::Status Build(DB& db) {
  // A fresh table each run.
  TABLETFS_ASSIGN_OR_RETURN(auto tables, db.ListTables());
  for (const std::string& t : tables) {
    if (t == "webtable") TABLETFS_RETURN_IF_ERROR(db.DeleteTable(t));
  }
  TABLETFS_RETURN_IF_ERROR(db.CreateTable("webtable"));
  tabletfs::FamilySettings contents;
  contents.gc_policy = tabletfs::GcPolicy::MaxVersions(3);
  TABLETFS_RETURN_IF_ERROR(db.CreateFamily("webtable", "contents", contents));
  TABLETFS_RETURN_IF_ERROR(
      db.CreateFamily("webtable", "anchor", tabletfs::FamilySettings()));

  // Each RowMutation is applied atomically: all of its cells or none.
  tabletfs::RowMutation cnn("com.cnn.www");
  cnn.SetCell("contents", "", T(3),
              "<html><head><title>CNN</title></head>v1</html>")
      .SetCell("contents", "", T(5),
               "<html><head><title>CNN</title></head>v2</html>")
      .SetCell("contents", "", T(6),
               "<html><head><title>CNN</title></head>v3</html>")
      .SetCell("anchor", "cnnsi.com", T(9), "CNN")
      .SetCell("anchor", "my.look.ca", T(8), "CNN.com");
  tabletfs::RowMutation example("com.example.www");
  example
      .SetCell("contents", "", T(4),
               "<html><head><title>Example Domain</title></head></html>")
      .SetCell("anchor", "www.iana.org", T(4), "example domains");
  tabletfs::RowMutation wikipedia("org.wikipedia.en");
  wikipedia
      .SetCell("contents", "", T(7),
               "<html><head><title>Wikipedia</title></head></html>")
      .SetCell("anchor", "com.cnn.www", T(7), "Wikipedia");
  for (const tabletfs::RowMutation* m : {&cnn, &example, &wikipedia}) {
    TABLETFS_RETURN_IF_ERROR(
        db.Apply("webtable", *m, tabletfs::WriteOptions()).status());
  }
  return db.Sync();
}

tabletfs::Status Print(DB& db) {
  // Every version of every cell, in row order.
  tabletfs::ScanOptions scan;
  scan.read.max_versions = 0;
  TABLETFS_ASSIGN_OR_RETURN(auto scanner, db.NewScanner("webtable", scan));
  std::string row;
  for (scanner->SeekToFirst(); scanner->Valid(); scanner->Next()) {
    if (scanner->row() != row) {
      row = std::string(scanner->row());
      std::cout << row << '\n';
    }
    TABLETFS_ASSIGN_OR_RETURN(std::string_view value, scanner->value());
    std::cout << "  " << scanner->family() << ':' << scanner->qualifier()
              << " @ t" << (scanner->timestamp() - kT0) / 1000000 << "  "
              << value << '\n';
  }
  TABLETFS_RETURN_IF_ERROR(scanner->status());

  // A read as of t5 sees the page as it was then.
  tabletfs::ReadOptions at5;
  at5.at = T(5);
  TABLETFS_ASSIGN_OR_RETURN(
      auto cells, db.ReadCell("webtable", "com.cnn.www", "contents", "", at5));
  std::cout << "\ncom.cnn.www contents: as of t5: "
            << (cells.empty() ? "(none)" : cells[0].value) << '\n';

  // The anchors pointing at CNN, through a column-restricted row read.
  tabletfs::ReadOptions anchors;
  anchors.families = {"anchor"};
  TABLETFS_ASSIGN_OR_RETURN(auto cnn,
                            db.ReadRow("webtable", "com.cnn.www", anchors));
  std::cout << "anchors of com.cnn.www:";
  for (const tabletfs::Cell& c : cnn.cells) {
    std::cout << ' ' << c.qualifier << "=\"" << c.value << '"';
  }
  std::cout << '\n';
  return tabletfs::Status::OK();
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
