// The remote client: the data-model interface (store/bigtable.h) over any
// endpoint of the Cloud Bigtable v2 API, through gRPC: the daemon's own API
// (DATADIR/bigtable.sock, api/server.h), Google's emulator (cbtemulator),
// or Cloud Bigtable. It is what `tabletctl` uses on a live mount and what a
// `bigtable://PROJECT/INSTANCE` mount runs on: nothing above the interface
// knows which implementation it has.
//
// How each call maps onto the API:
//   CreateTable, DeleteTable    the table admin API's CreateTable (no
//                               families) and DeleteTable
//   ListTables                  ListTables, every page, NAME_ONLY
//   GetTable                    GetTable, NAME_ONLY
//   CreateFamily, UpdateFamily, one ModifyColumnFamilies each (create,
//   DeleteFamily                update, drop)
//   ListFamilies, GetFamily     GetTable, SCHEMA_VIEW
//   Apply                       MutateRow: SetCell, DeleteFromColumn
//                               (DeleteVersion: the time range [ts, ts+1),
//                               or [ts, ts+1000) on a server that refuses
//                               ranges finer than a millisecond, where it
//                               holds only ts too: tried once, then
//                               remembered; DeleteCell: no range),
//                               DeleteFromFamily, DeleteFromRow
//   ApplyBatch                  MutateRows, as Apply each entry; a row
//                               written twice goes into a later request
//   Append, Increment           ReadModifyWriteRow, one rule
//   CheckAndMutate              CheckAndMutateRow; the predicate is the
//                               chain {family_name_regex_filter,
//                               column_qualifier_regex_filter (both exact),
//                               cells_per_column_limit_filter 1, and for
//                               kEquals an exact value_regex_filter};
//                               kNotExists is kExists with the branches
//                               swapped. Both branches empty: ReadRows.
//   ReadRow, ReadCell           ReadRows of one key
//   NewScanner                  ReadRows of a row range, streamed (one
//                               RPC per scan, resumed only after
//                               UNAVAILABLE or a Seek out of the rows
//                               it buffers); ScanContent kNoValues adds
//                               strip_value_transformer, kRows also
//                               cells_per_row_limit_filter 1
//   ListTablets                 SampleRowKeys
//   Subscribe                   PingAndWarm (plaintext), then
//                               ReadChangeStream of the table, the whole
//                               key range, from now: a thread per
//                               subscription reads it (see below)
// Reads turn ReadOptions into a RowFilter: families and columns into an
// interleave of exact family filters and chains of exact family and
// qualifier filters; `at` into timestamp_range_filter [0, at+1);
// max_versions into cells_per_column_limit_filter. Regexes are quoted
// byte by byte (punctuation behind a backslash, bytes outside printable
// ASCII as \xHH), so any qualifier or value matches exactly under RE2's
// Latin-1 (Cloud Bigtable, the daemon) and the emulator's byte regexes.
//
// Where the contract of store/bigtable.h does not hold, and what holds
// instead:
//   - Server timestamps. kServerTimestamp operations get a timestamp the
//     CLIENT assigns: whole milliseconds (a multiple of 1000 µs, Cloud
//     Bigtable's table granularity), the client's clock rounded up,
//     max(that, previous + 1 ms): strictly increasing within one client
//     object, the same for every operation of one write, and returned as
//     the write's timestamp. Across clients (or against the daemon's own
//     mount, which stamps µs) timestamps follow the clocks, not the commit
//     order: a write may sort below an earlier one from elsewhere within a
//     millisecond or a clock skew. Append and Increment are stamped by the
//     server (Cloud and the emulator: ms; the daemon: its µs server
//     timestamp). Explicit timestamps must be >= 0 (InvalidArgument: the
//     API has none below 0); Cloud Bigtable and the emulator also refuse
//     those that are not whole milliseconds (the emulator with UNKNOWN,
//     so IOError).
//   - Family order. ListFamilies is sorted by name: the API reports no
//     creation order. Within a row, families come in the server's order
//     (the daemon: creation order; the emulator: by name). Scanner::Seek
//     to a family the row does not hold positions at the row's start (the
//     client cannot tell where an absent family sorts).
//   - Family settings. Only the GC policy is stored remotely. GetFamily
//     and ListFamilies report it with FamilySettings' defaults for the
//     rest (lz4, owner 0:0, mode 0644); CreateFamily keeps only the GC
//     policy; UpdateFamily whose compression, owner or mode differ from
//     those defaults is NotSupported, nothing changed.
//   - GetTable's since_micros is 0: the API does not tell.
//   - Snapshots. GetSnapshot returns a token that this client's reads
//     accept (another store's snapshot: InvalidArgument); reads through it
//     see the latest state. A scan is not one consistent state: each row is
//     read atomically, and Seek, or a stream resumed after UNAVAILABLE,
//     starts a new read.
//   - RewriteRow is NotSupported: the API has no atomic read-then-write of
//     an arbitrary rewrite.
//   - Change events. Subscribe needs a table (every table at once, and
//     exclude_origin, are NotSupported: the API streams one table and
//     sends no origins), so a mount over this client still sees writes
//     from elsewhere only once its kernel caches expire, while its
//     `.changes/TABLE` and `tabletctl watch` work. A plaintext server is
//     asked first (PingAndWarm, whose answer from the daemon carries
//     kChangeStreamsHeader, api/convert.h): one that does not say it
//     streams changes gives NotSupported without a ReadChangeStream, which
//     crashes Google's emulator. It returns once the server's first
//     message arrived (the daemon's first heartbeat: it has subscribed),
//     within rpc_timeout (Busy). Events carry origin 0;
//     a delete of a cell, family or row has the DataChange's
//     commit_timestamp, a set and a version's delete their mutation's
//     timestamp; a DeleteFromColumn whose range is wider than 1 µs (Cloud
//     Bigtable's) is a kDeleteCell. The subscription ends (ChangeBatch::
//     status) when the call does: the server went away (Busy), or closed
//     the stream because this client fell behind (Busy, ABORTED).
//   - Durability. WriteOptions (sync, origin) are not sent: the API has no
//     such fields. A write is as durable as the server makes it when
//     acknowledged (Cloud: replicated; the daemon: its commit interval),
//     and Sync() returns OK without asking anything. StickyError() is
//     always OK.
//   - Errors. gRPC codes map back: NOT_FOUND -> NotFound, ALREADY_EXISTS ->
//     AlreadyExists, INVALID_ARGUMENT, OUT_OF_RANGE, FAILED_PRECONDITION ->
//     InvalidArgument, RESOURCE_EXHAUSTED -> NoSpace (also a quota or a
//     message over a gRPC limit), UNIMPLEMENTED -> NotSupported,
//     UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED -> Busy, anything else ->
//     IOError; the message keeps the RPC and the code's name. A write that
//     fails with Busy or IOError may still have been applied (its
//     acknowledgement was lost), as the contract allows only for log
//     failures locally.
//   - ApplyBatch. The entries of one MutateRows request commit in no
//     particular order: a reader may see a later entry before an earlier
//     one (of another row; a row's own writes stay in order).
//   - Retries. UNAVAILABLE is retried (3 times, 100 ms doubling) for the
//     idempotent calls only: reads, scans (resumed after the last row
//     received), admin gets and lists, SampleRowKeys, and Apply and
//     ApplyBatch (entry by entry), whose timestamps are all explicit by the
//     time it is sent, so a repeat writes the same versions (though a repeated
//     delete also removes what another writer added in between). Never
//     CheckAndMutate, Append, Increment or a schema change.
//   - Unknown families. The API reads an unknown family as empty, and
//     servers name an unknown family in a write differently (the daemon
//     NOT_FOUND, the emulator UNKNOWN). To keep the contract's errors
//     (NotFound from ReadCell, Append, Increment, CheckAndMutate's
//     condition, UpdateFamily and DeleteFamily; InvalidArgument for a
//     mutation naming one) the client consults the table's families
//     (GetTable, cached per table, asked again on a miss; UpdateFamily and
//     DeleteFamily always ask). When the admin API refuses (a credential
//     for data only), the checks are skipped for that table: an unknown
//     family then reads as empty and writes fail as the server says.
//   - Limits are the server's: Cloud Bigtable's row keys of at most 4 KiB
//     (the daemon's API enforces the same; writes are checked here),
//     values up to the server's limit (the daemon: its store's). A kEquals
//     condition whose exact value filter would pass the API's 20 KiB
//     filter limit is NotSupported.
//   - Garbage collection. Cloud Bigtable collects in the background: reads
//     may return versions a policy already collects (the daemon applies
//     policies when reading).
//   - ListTablets reports the server's samples: tablet [previous key,
//     key) holds the offset difference in bytes, files 0, no sample rows;
//     one tablet over everything when the server reports only the end.
//   - A Scanner holds its current row whole and the response it came in,
//     and keeps its ReadRows stream open until destroyed or moved past the
//     end (the daemon keeps a thread on it meanwhile). With the read cache
//     on, a scanner without values (kNoValues, kRows) that read only from
//     its range's start on leaves its stream and the rows it read (at most
//     32768 cells) parked when destroyed, for the read cache's TTL from
//     the stream's opening and until a write through this client; a new
//     scanner of the same table, range and read options takes them over,
//     reading those rows again from memory and the rest from the stream
//     (so a mount's getattr of a table and the listing after it are one
//     ReadRows). At most 8 are parked; a thread cancels the stale ones.
//   - Read cache (RemoteOptions::read_cache_ttl, schema_cache_ttl; off by
//     default, a mount's daemon turns it on): answers of the server read
//     again within the TTL. Kept: the newest version of a cell (or that
//     it has none) from ReadCell with max_versions 1 and no `at`, which
//     then asks for the row's other newest versions of up to 1000 bytes
//     too (an interleave with {cells_per_column_limit_filter 1,
//     value_regex_filter "(?s).{0,1000}"}); every cell of such a ReadRow
//     or a kCells scan; a scan of exactly one row [r, r+"\0"), answered
//     whole from memory (no stream) and kept to answer scans of that row
//     that read no more (fewer families, no values); a table's families.
//     Never a read of more versions or of the past. Every write through
//     this client drops the row it writes (a schema change: the table)
//     and moves an epoch on, so that a read in flight across it stores
//     nothing: this client reads its own writes. Values above 1 MiB are
//     not kept; at 32 MiB the expired entries go, then all.
//
// Statistics (StatsText, the mount's `.tabletfs/stats`; README "Round
// trips and .tabletfs/stats"): per RPC, attempts, retries, errors by gRPC
// code, streams this client cancelled, responses, message bytes each way,
// and latency until the first response (mean, p50, p99, max from a
// histogram of four buckets per power of two); reads answered by the read
// cache. Counted in the client, sent nowhere.
//
// Thread safety: as the interface says; every method from any thread
// (gRPC stubs are thread-safe; the timestamp, the schema cache, the read
// cache and the statistics sit behind mutexes). Scanners are used by one thread at a time.
#ifndef TABLETFS_API_REMOTE_BIGTABLE_H_
#define TABLETFS_API_REMOTE_BIGTABLE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "store/bigtable.h"

namespace tabletfs::api {

struct RemoteOptions {
  // "unix:/path" (also "unix:///path") or "HOST:PORT" ("[V6]:PORT").
  std::string endpoint;
  // Where the table admin API is served; empty: `endpoint` (the daemon and
  // the emulator serve both; Cloud Bigtable's admin API is
  // bigtableadmin.googleapis.com:443).
  std::string admin_endpoint;
  // Names in requests: projects/PROJECT/instances/INSTANCE. Neither may be
  // empty or hold a '/'.
  std::string project;
  std::string instance;
  // true: plaintext (the emulator, the daemon, Unix sockets); false: TLS
  // with Google's default credentials (grpc::GoogleDefaultCredentials()).
  bool plaintext = true;
  // The app_profile_id of data requests; empty: the instance's default.
  std::string app_profile;
  // The deadline of each RPC; for a scan, of each response.
  std::chrono::milliseconds rpc_timeout{10000};
  // How long an answer of the server may answer the same read again (the
  // newest version of a cell, a table's families): 0, the default, keeps
  // nothing. A mount sets it short (mount/daemon: 100 ms, at most its
  // attribute timeout), so that the LOOKUP, GETATTR and OPEN of one `cat`,
  // or the OPENs of the cells a listing just read, send one RPC, while a
  // write from elsewhere is seen as soon as the kernel's cache and this
  // one expired. Writes through this client are read back at once.
  std::chrono::milliseconds read_cache_ttl{0};
  // The same for a table's families (GetFamily, ListFamilies, which a
  // mount asks at every stat of a family directory or cell), whose changes
  // are rare: a mount keeps them as long as the kernel keeps attributes
  // (at most 1 s). Schema changes through this client are seen at once.
  std::chrono::milliseconds schema_cache_ttl{0};
  // Called on the calling thread just before it waits for the server: before
  // each RPC is sent and before each wait for a scan's next response. A
  // mount passes fs::FuseLoopWillWait, so the thread serving a FUSE
  // request hands the device to another thread before it blocks on the
  // network, instead of after the loop's 1 ms watchdog (fs/fuse_loop.h).
  // Empty: nothing.
  std::function<void()> before_wait;
};

// A store over `options.endpoint`. Connects lazily: gRPC channels connect
// on first use, so an unreachable server shows up as Busy from the first
// call, not here. InvalidArgument for a malformed endpoint, project or
// instance, a rpc_timeout that is not positive, or (plaintext false) when
// Google's default credentials cannot be found.
Result<std::unique_ptr<Bigtable>> ConnectBigtable(const RemoteOptions& options);

}  // namespace tabletfs::api

#endif  // TABLETFS_API_REMOTE_BIGTABLE_H_
