// The generated files of `MOUNT/.tabletfs/` (DESIGN.md "The filesystem
// namespace"): their text (their names are in fs/path_map.h). `tabletctl
// tablets` prints the same lines as `.tabletfs/tablets`.
//
//   stats    "key value" lines, Bigtable::StatsText: what the store says of
//            itself (the engine: DbStats, store/stats.h; a remote store: its
//            RPCs), whichever implementation it is; then, on a mount, the
//            FUSE requests it served (fs/request_counts.h: fuse_requests,
//            fuse_LOOKUP, ...), up to and including the OPEN of the stats
//            file being read
//   tablets  one line per tablet of every table, tables by name, each
//            table's tablets in row order, fields separated by one TAB:
//
//              TABLE START END BYTES FILES [SAMPLE...]
//
//            START and END are row names as the table directory lists them
//            (fs/names.h ShownName: `%XX` escapes, `%~HASH` for long keys),
//            so `ls MOUNT/TABLE/START` works. The tablet holds the rows
//            START <= row < END. START of a table's first tablet and END of
//            its last are `-`: unbounded. (Row names never contain a TAB or
//            a newline, so every field is unambiguous; a row whose key is
//            "-" is also shown `-`, but only ever as an inner boundary.)
//            BYTES and FILES are decimal: the tablet's data (its share of
//            SSTables plus memtables) and its SSTable count. SAMPLE fields,
//            zero or more, are row names inside the tablet, in order, that
//            cut its SSTable data into about equal parts (Bigtable's
//            SampleRowKeys): `cut -f6-` gives them. No header line, so
//            `wc -l` counts tablets and `grep '^TABLE<TAB>'` picks a table.
//
// Thread safety: pure functions, and functions of a thread-safe store.
#ifndef TABLETFS_FS_STATUS_FILES_H_
#define TABLETFS_FS_STATUS_FILES_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fs/errors.h"
#include "fs/path_map.h"
#include "fs/request_counts.h"
#include "store/bigtable.h"

namespace tabletfs::fs {

// What `.tabletfs/tablets` shows for an unbounded START or END.
inline constexpr std::string_view kUnboundedRowName = "-";

// The lines of `.tabletfs/tablets` for one table's tablets (format above),
// each ending in '\n'.
std::string FormatTablets(std::string_view table,
                          const std::vector<TabletInfo>& tablets);

// The tablets of `table`, or of every table (sorted by name) when nullopt,
// formatted. NotFound when the named table does not exist; a table dropped
// while every table is listed is left out.
Result<std::string> TabletsText(Bigtable& db,
                                const std::optional<std::string>& table);

// The current text of `.tabletfs/NAME`, with the mount's `requests` in the
// stats when given. ENOENT for a name that is not a status file; the
// store's errors mapped (fs/errors.h).
FsError StatusFileText(Bigtable& db, std::string_view name, std::string* out,
                       const RequestCounts* requests = nullptr);

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_STATUS_FILES_H_
