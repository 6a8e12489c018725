// DirTimesCache: the DirTimes (fs/dir_handle.h) of family directories of
// the current tree, kept between requests. Creating or removing a cell
// drops its directory's attributes in the kernel, which asks for them
// again before the next name in that directory; answering each time by
// scanning the directory's cells made creating or removing N cells in one
// directory cost O(N^2) (docs/BENCHMARKS.md, "N cells in one directory").
//
// An entry is filled by a scan (DataTreeArea::DirTimesOf) and then follows
// the mount's own writes, which all pass through the origin wrapper
// (fs/origin_bigtable.h): a write announces itself before it is applied
// (Begin) and says how it went after (Write::Done). Setting a cell,
// deleting a whole cell and deleting one of its versions are followed: the
// newest timestamp by max, the entries fingerprint (an XOR of the names'
// hashes, so one name comes and goes at a time) by whether each cell
// existed before (a StatCell, made only for cells of cached directories)
// and after. Whatever cannot be followed forgets the entry, and the next
// GETATTR scans: a cell that held the directory's newest timestamp going
// (once per new newest: O(N log N) scanning for cells removed in random
// order), a write whose server timestamp is not returned (CheckAndMutate),
// row and schema writes, a failed write, two writes of one directory at
// once (their order in the store is not known here).
//
// Writes through other doors forget what they touch as their change events
// arrive (ChangeListener); a store that sends no events (a remote one) is
// followed by age only: an entry lives at most `max_age` (the attribute
// timeout, within which the kernel would not ask again anyway). Families
// whose GC policy depends on time are not cached: their cells expire with
// no write. (A family whose policy used maxage before is, and the versions
// written then still expire: the interface does not show past policies.
// Such an expiry shows at most `max_age` late, as in the kernel's cache.)
//
// A scan's result is kept only when no write of its directory (and no
// wider write, nor a forget that covers it) began or was in flight while it
// ran, so a scan never puts back what a write changed under it.
//
// Thread safety: every method may be called from any thread (one mutex,
// never held across a store call).
#ifndef TABLETFS_FS_DIR_TIMES_CACHE_H_
#define TABLETFS_FS_DIR_TIMES_CACHE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fs/dir_handle.h"
#include "store/bigtable.h"
#include "store/util/mutex.h"

namespace tabletfs::fs {

class DirTimesCache {
 private:
  struct PendingScan {
    std::string key;  // a family directory's, or a table's (`table`)
    bool table = false;
    bool spoiled = false;
    // A table scan that starts at a kept first row: when that was found by
    // a scan from the table's start (its age carries over).
    std::optional<std::chrono::steady_clock::time_point> from_hint_loaded;
  };

 public:
  // At most this many directories are kept (least recently used go).
  static constexpr size_t kMaxEntries = 256;
  // A mutation with more operations (a staged row's commit) is not
  // followed but forgets its row: following is quadratic in them.
  static constexpr size_t kMaxFollowedOps = 16;

  // `max_age` zero keeps nothing (every lookup misses).
  explicit DirTimesCache(std::chrono::steady_clock::duration max_age);
  DirTimesCache(const DirTimesCache&) = delete;
  DirTimesCache& operator=(const DirTimesCache&) = delete;

  // The kept DirTimes of family `family` of `row`, if any.
  std::optional<DirTimes> Find(std::string_view table, std::string_view row,
                               std::string_view family);

  // A scan of a family directory: started before it reads the store, ended
  // with what it found (kept when nothing spoiled it) or dropped.
  class Scan {
   public:
    Scan(Scan&& other) noexcept;
    Scan(const Scan&) = delete;
    Scan& operator=(const Scan&) = delete;
    Scan& operator=(Scan&&) = delete;
    ~Scan();
    void Found(const DirTimes& times);
    // A table scan (StartTableScan) found its first cell in `row`.
    void FoundFirstRow(std::string_view row);

   private:
    friend class DirTimesCache;
    Scan(DirTimesCache* cache, std::list<PendingScan>::iterator it)
        : cache_(cache), it_(it) {}
    DirTimesCache* cache_;  // null once found or moved from
    std::list<PendingScan>::iterator it_;
  };
  Scan StartScan(std::string_view table, std::string_view row,
                 std::string_view family);

  // Where a scan of a current table may start: the first row the last
  // such scan found cells in, while no write since could have put cells
  // before it. `rm -r` leaves the deleted cells of the rows it removed to
  // compaction, and each `rmdir` of a row makes the kernel ask for the
  // table's attributes: a scan from the table's start would step over all
  // of them every time (quadratic in the rows removed). Kept only when
  // cells were seen deleted in a row before the one found (else a scan
  // from the start skips nothing, and a remote store can hand that scan's
  // stream over to a listing of the table). Any write of the table spoils
  // a table scan; a write of a row before the kept one, a row-wide or
  // schema write of the table, and another door's change drop it; it lives at
  // most `max_age` after the scan from the table's start that found it.
  // StartTableScan sets *first_row to it (nullopt: start at the table's start),
  // in the same step that makes later writes spoil the scan.
  Scan StartTableScan(std::string_view table,
                      std::optional<std::string>* first_row);
  // The kept first row of `table`, for tests.
  std::optional<std::string> FirstRow(std::string_view table);

  // One write through the mount, from before it is applied to after.
  class Write {
   public:
    Write(Write&& other) noexcept;
    Write(const Write&) = delete;
    Write& operator=(const Write&) = delete;
    Write& operator=(Write&&) = delete;
    // Not Done: as Done(nullopt).
    ~Write();
    // How the write went: its server timestamp (what Apply returns), or
    // nullopt when it failed or the timestamp is not known.
    void Done(std::optional<int64_t> server_timestamp);

   private:
    friend class DirTimesCache;
    struct CellBefore {
      size_t dir;  // index into dirs_
      std::string family;
      std::string qualifier;
      bool known = false;  // the StatCell answered
      std::optional<int64_t> newest;
    };
    explicit Write(DirTimesCache* cache) : cache_(cache) {}
    DirTimesCache* cache_;  // null once done or moved from
    const RowMutation* mutation_ = nullptr;  // the modelled mutation
    std::vector<std::string> dirs_;          // keys written (modelled ops)
    std::vector<CellBefore> cells_;          // cells of the dirs that were kept
    bool wide_ = false;                      // counted in wide_writes_
  };
  // A mutation of `table` the entries follow (`mutation` must outlive the
  // Write). Reads, through `store`, the cells it writes in kept
  // directories.
  Write Begin(Bigtable* store, std::string_view table,
              const RowMutation& mutation);
  // A write of `row` (nullopt: of all of `table`, its schema) the entries
  // do not follow: it forgets what it may change.
  Write BeginWide(std::string_view table, std::optional<std::string_view> row);

  // A change event of another door: forgets what it may have changed.
  void Forget(const ChangeEvent& event);
  // Events were lost: forgets everything.
  void ForgetAll();

  // Counters for tests: scans kept, and lookups answered.
  size_t kept_scans() const;
  size_t hits() const;

 private:
  struct Entry {
    DirTimes times;
    std::chrono::steady_clock::time_point loaded;
    bool poisoned = false;  // two writes at once: forget when one ends
    std::list<std::string>::iterator lru;
  };
  static std::string Key(std::string_view table, std::string_view row,
                         std::string_view family);
  // The key prefix of a table's directories, or of a row's.
  static std::string Prefix(std::string_view table,
                            std::optional<std::string_view> row);

  void EraseLocked(const std::string& key) REQUIRES(mu_);
  void ForgetPrefixLocked(const std::string& prefix) REQUIRES(mu_);
  void EndScan(Scan* scan, const DirTimes* found,
               const std::string_view* first_row);
  // A write of `row` of `table` (nullopt: of the whole table) begins.
  void WriteBeginsLocked(std::string_view table,
                         std::optional<std::string_view> row) REQUIRES(mu_);
  // Cells of `row` of `table` may be deleted.
  void DeletesLocked(std::string_view table, std::string_view row)
      REQUIRES(mu_);
  void End(Write* w, std::optional<int64_t> server_timestamp);
  // Applies `w`'s mutation to the kept entry of dirs_[dir]; false when it
  // cannot be followed.
  bool FollowLocked(const Write& w, size_t dir, int64_t server_timestamp,
                    Entry* e) REQUIRES(mu_);

  const std::chrono::steady_clock::duration max_age_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ GUARDED_BY(mu_);
  std::list<std::string> lru_ GUARDED_BY(mu_);  // front: newest
  std::list<PendingScan> scans_ GUARDED_BY(mu_);
  // Modelled writes in flight, by directory key.
  std::unordered_map<std::string, int> writing_ GUARDED_BY(mu_);
  struct FirstRowEntry {
    std::string row;
    std::chrono::steady_clock::time_point loaded;
  };
  // By table name; bounded by the tables of the store.
  std::unordered_map<std::string, FirstRowEntry> first_rows_ GUARDED_BY(mu_);
  // By table name: the lowest row the mount saw cells deleted in.
  std::unordered_map<std::string, std::string> lowest_deleted_ GUARDED_BY(mu_);
  int wide_writes_ GUARDED_BY(mu_) = 0;
  size_t kept_scans_ GUARDED_BY(mu_) = 0;
  size_t hits_ GUARDED_BY(mu_) = 0;
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_DIR_TIMES_CACHE_H_
