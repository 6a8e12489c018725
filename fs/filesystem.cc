#include "fs/filesystem.h"

#include <errno.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "fs/area.h"
#include "fs/fuse_loop.h"
#include "fs/log.h"
#include "fs/origin_bigtable.h"
#include "fs/write_path.h"

namespace tabletfs::fs {
namespace {

// How long a reply waits for the invalidation notices its request queued.
constexpr std::chrono::milliseconds kInvalidationWait{500};
constexpr std::chrono::microseconds kInvalidationHandOff{200};

// Why a %~HASH name cannot be written where its key does not exist yet.
constexpr char kHashedNameHelp[] =
    ": a name ending in %~HASH stands for a key too long for a file name, "
    "and the key cannot be rebuilt from it; copy such rows with tabletctl "
    "export and tabletctl import (JSON lines keep every key)";

// Under .versions, Q@T is the version at exactly T: the newest version at
// or before T that the read found is not it unless stamped T.
bool NamesVersion(const Node& cell, int64_t timestamp) {
  return cell.view != View::kVersions || timestamp == cell.at;
}

}  // namespace

int64_t NowMicros() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

struct timespec MicrosToTimespec(int64_t micros) {
  struct timespec ts;
  int64_t sec = micros / 1000000;
  int64_t rem = micros % 1000000;
  if (rem < 0) {
    rem += 1000000;
    sec--;
  }
  ts.tv_sec = static_cast<time_t>(sec);
  ts.tv_nsec = static_cast<long>(rem * 1000);
  return ts;
}

int64_t TimespecToMicros(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

std::string RowEnd(std::string_view row) {
  std::string end(row);
  end.push_back('\0');
  return end;
}

mode_t FileMode(const FamilySettings& s) { return S_IFREG | (s.mode & 07777); }

mode_t DirMode(const FamilySettings& s) {
  mode_t m = s.mode & 0777;
  m |= (m & 0444) >> 2;
  return S_IFDIR | m;
}

std::string ChildPath(const Node& parent, std::string_view name) {
  std::string path = parent.DebugPath();
  if (path != "/") path += "/";
  return path.append(name);
}

thread_local uint64_t Filesystem::last_ticket_ = 0;

Filesystem::Filesystem(Bigtable* db, const SessionOptions& options)
    : origin_(NewOrigin()),
      // As long as the kernel keeps attributes: a store that sends no
      // change events is followed by age only.
      dir_times_(
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
              std::chrono::duration<double>(options.attr_timeout))),
      tagged_(NewOriginBigtable(db, origin_, &dir_times_)),
      db_(tagged_.get()),
      options_(options),
      uid_(getuid()),
      gid_(getgid()),
      start_time_(NowMicros()) {
  areas_.push_back(NewSchemaArea(this));
  areas_.push_back(NewStatusArea(this));
  areas_.push_back(NewAtArea(this));
  areas_.push_back(NewPrefixArea(this));
  areas_.push_back(NewChangesArea(this));
  areas_.push_back(NewStageArea(this));
  areas_.push_back(NewVersionsArea(this));
  areas_.push_back(NewTablesArea(this));
  write_path_ = std::make_unique<WritePath>(this);
}

Filesystem::~Filesystem() { Stop(); }

void Filesystem::Start(fuse_session* se) {
  std::chrono::milliseconds delay{0};
  // TEST HOOK, not for production: hold each invalidation notice back, so
  // that a test sees a reply that did not wait for its notices fail.
  if (const char* env = getenv("TABLETFS_TEST_INVALIDATION_DELAY_MS")) {
    delay = std::chrono::milliseconds(atoi(env));
    Log(LogLevel::kWarning, "test hook: TABLETFS_TEST_INVALIDATION_DELAY_MS=" +
                                std::to_string(delay.count()) +
                                ": every invalidation notice is delayed");
  }
  invalidator_ = std::make_unique<Invalidator>(se, delay);
  // From here on the kernel may cache what other doors change.
  listener_ = std::make_unique<ChangeListener>(this, db_, origin_);
  // TEST HOOK, not for production: pause unlink and rename of a cell
  // between the store's change and the open states following it, so
  // that a test can close a descriptor of the cell in between.
  if (const char* env = getenv("TABLETFS_TEST_NAME_CHANGE_DELAY_MS")) {
    name_change_delay_ = std::chrono::milliseconds(atoi(env));
    Log(LogLevel::kWarning, "test hook: TABLETFS_TEST_NAME_CHANGE_DELAY_MS=" +
                                std::to_string(name_change_delay_.count()) +
                                ": every unlink and rename is delayed");
  }
}

void Filesystem::Stop() {
  // First: it sends notices through the invalidator, and the store must
  // not see a subscription after the session.
  listener_.reset();
  std::vector<std::shared_ptr<FileHandle>> files;
  {
    MutexLock lock(&handles_mu_);
    for (auto& [ptr, h] : files_) files.push_back(h);
    files_.clear();
    dirs_.clear();
  }
  if (write_path_) write_path_->CommitAtUnmount(files);
  invalidator_.reset();
}

Area& Filesystem::AreaOf(const Node& node) {
  for (auto& area : areas_) {
    if (area->Owns(node)) return *area;
  }
  // Every node is some area's: the tables area owns the rest of the tree.
  return *areas_.back();
}

// ---------------------------------------------------------------------------
// Nodes and names
// ---------------------------------------------------------------------------

FsError Filesystem::NodeOf(uint64_t ino, Node* out) {
  std::optional<Node> n = inodes_.Get(ino);
  if (!n.has_value()) {
    return FsError::Of(ENOENT, "unknown inode " + std::to_string(ino));
  }
  *out = std::move(*n);
  return FsError::Ok();
}

std::string Filesystem::PathOfInode(uint64_t ino) {
  std::optional<Node> n = inodes_.Get(ino);
  return n.has_value() ? n->DebugPath() : "inode " + std::to_string(ino);
}

void Filesystem::Forget(uint64_t ino, uint64_t count) {
  if (!inodes_.Forget(ino, count)) return;
  if (Vanished(ino)) ForgetVanished(ino);
  if (locks_.used()) locks_.ForgetInode(ino);
}

FsError Filesystem::Resolve(const Node& parent, std::string_view name,
                            Node* out) {
  ParsedChild child;
  TABLETFS_FS_RETURN_IF_ERROR(ParseChild(parent, name, &child));
  if (child.hashed) {
    ParsedName parsed;
    parsed.hashed = true;
    parsed.hash = child.hash;
    if (child.node.kind == NodeKind::kRow) {
      parsed.key = child.node.row;
      TABLETFS_FS_RETURN_IF_ERROR(
          ResolveHashedRow(parent, parsed, &child.node.row));
    } else {
      parsed.key = child.node.qualifier;
      TABLETFS_FS_RETURN_IF_ERROR(
          ResolveHashedQualifier(parent, parsed, &child.node.qualifier));
    }
  }
  *out = std::move(child.node);
  return FsError::Ok();
}

FsError Filesystem::ResolveHashedRow(const Node& parent,
                                     const ParsedName& parsed,
                                     std::string* row) {
  ScanOptions so;
  so.prefix = parsed.key;
  so.content = ScanContent::kRows;
  auto scanner = db_->NewScanner(parent.table, so);
  if (!scanner.ok()) return FsErrorFromStatus(scanner.status());
  for ((*scanner)->SeekToFirst(); (*scanner)->Valid(); (*scanner)->NextRow()) {
    if (HashedNameMatches(parsed, (*scanner)->row())) {
      *row = std::string((*scanner)->row());
      return FsError::Ok();
    }
  }
  if (!(*scanner)->status().ok()) {
    return FsErrorFromStatus((*scanner)->status());
  }
  return FsError::Of(ENAMETOOLONG, "no row matches the long name in " +
                                       parent.DebugPath() + kHashedNameHelp);
}

FsError Filesystem::ResolveHashedQualifier(const Node& parent,
                                           const ParsedName& parsed,
                                           std::string* qualifier) {
  ScanOptions so;
  so.start_row = parent.row;
  so.end_row = RowEnd(parent.row);
  so.read.families = {parent.family};
  auto scanner = db_->NewScanner(parent.table, so);
  if (!scanner.ok()) return FsErrorFromStatus(scanner.status());
  Scanner& s = **scanner;
  for (s.Seek(parent.row, parent.family, parsed.key);
       s.Valid() && s.family() == parent.family &&
       s.qualifier().substr(0, parsed.key.size()) == parsed.key;
       s.NextColumn()) {
    if (HashedNameMatches(parsed, s.qualifier())) {
      *qualifier = std::string(s.qualifier());
      return FsError::Ok();
    }
  }
  if (!s.status().ok()) return FsErrorFromStatus(s.status());
  return FsError::Of(ENAMETOOLONG, "no qualifier matches the long name in " +
                                       parent.DebugPath() + kHashedNameHelp);
}

// ---------------------------------------------------------------------------
// Attributes
// ---------------------------------------------------------------------------

void Filesystem::DirStat(uint64_t ino, mode_t mode, uid_t uid, gid_t gid,
                         struct stat* st) {
  std::memset(st, 0, sizeof(*st));
  st->st_ino = ino;
  st->st_mode = mode;
  st->st_nlink = 1;  // so that find never skips a directory
  st->st_uid = uid;
  st->st_gid = gid;
  st->st_blksize = 4096;
  st->st_atim = st->st_mtim = st->st_ctim = MicrosToTimespec(start_time_);
}

void Filesystem::FileStat(uint64_t ino, const FamilySettings& s, uint64_t size,
                          int64_t timestamp, struct stat* st) {
  std::memset(st, 0, sizeof(*st));
  st->st_ino = ino;
  st->st_mode = FileMode(s);
  st->st_nlink = 1;
  st->st_uid = s.owner_uid;
  st->st_gid = s.owner_gid;
  st->st_size = static_cast<off_t>(size);
  st->st_blocks = static_cast<blkcnt_t>((size + 511) / 512);
  st->st_blksize = 4096;
  st->st_atim = st->st_mtim = st->st_ctim = MicrosToTimespec(timestamp);
}

FsError Filesystem::Stat(const Node& node, uint64_t ino, struct stat* st) {
  return AreaOf(node).Stat(node, ino, st);
}

FsError Filesystem::Exists(const Node& node, uint64_t ino) {
  return AreaOf(node).Exists(node, ino);
}

FsError Filesystem::MakeEntry(const Node& node, Entry* e) {
  std::memset(&e->attr, 0, sizeof(e->attr));
  std::optional<uint64_t> known = inodes_.Find(node);
  // A vanished cell (vanished_) has lost its name: only the kernel's inode
  // of it shows it, until FORGET. A lookup may come after the notice that
  // dropped the kernel's dentry but before the FORGET of the evicted inode
  // is served (by another thread): found, the cell would count one more
  // lookup, the FORGET would not free the inode, and every revalidation
  // would keep the name. A vanished cell has no writer (ReleaseCell), so it
  // is stated as one the kernel does not know.
  uint64_t ino = known.has_value() && !Vanished(*known) ? *known : 0;
  TABLETFS_FS_RETURN_IF_ERROR(Stat(node, ino, &e->attr));
  e->ino = inodes_.Lookup(node);
  e->attr.st_ino = e->ino;
  e->entry_timeout = EntryTimeout(node);
  e->attr_timeout = CellAttrTimeout(node, e->ino);
  return FsError::Ok();
}

double Filesystem::EntryTimeout(const Node& node) {
  return AreaOf(node).Uncached(node) ? 0.0 : options_.entry_timeout;
}

double Filesystem::AttrTimeout(const Node& node) {
  return AreaOf(node).Uncached(node) ? 0.0 : options_.attr_timeout;
}

// While writers and readers of a cell are open, its size differs for
// readers (the committed version's) and writers (the pending value's), and
// the kernel keeps one: it asks again each time. Writers alone need less
// care: the kernel drops the attributes after each write, so a created
// file's entry is cached as any other and its first write costs no
// GETATTR. But a size stated since the last write can be older than the
// next commit (appenders keep their bytes out of it until then): the cell
// is marked, and that commit's reply waits for its notice to the kernel.
double Filesystem::CellAttrTimeout(const Node& node, uint64_t ino) {
  if (node.kind == NodeKind::kCell) {
    if (std::shared_ptr<OpenCell> c = open_cells_.Find(ino)) {
      MutexLock lock(c->mu());
      return OpenCellAttrTimeout(node, *c);
    }
  }
  return AttrTimeout(node);
}

double Filesystem::OpenCellAttrTimeout(const Node& node, OpenCell& c) {
  if (c.HasWriters() && c.HasReaders()) return 0.0;
  const double timeout = AttrTimeout(node);
  if (timeout > 0 && c.HasWriters()) c.MarkKernelAttrs();
  return timeout;
}

// ---------------------------------------------------------------------------
// The store
// ---------------------------------------------------------------------------

FsError Filesystem::TableExists(std::string_view table) {
  auto families = db_->ListFamilies(table);
  if (!families.ok()) return FsErrorFromStatus(families.status());
  return FsError::Ok();
}

FsError Filesystem::RowHasCells(const Node& n, bool* has) {
  ScanOptions so;
  so.read.at = ReadAt(n);
  so.start_row = n.row;
  so.end_row = RowEnd(n.row);
  so.content = ScanContent::kRows;
  auto scanner = db_->NewScanner(n.table, so);
  if (!scanner.ok()) return FsErrorFromStatus(scanner.status());
  (*scanner)->SeekToFirst();
  if (!(*scanner)->status().ok()) {
    return FsErrorFromStatus((*scanner)->status());
  }
  *has = (*scanner)->Valid() && (*scanner)->row() == n.row;
  return FsError::Ok();
}

FsError Filesystem::FamilyHasCells(const Node& n, bool* has) {
  ScanOptions so;
  so.read.at = ReadAt(n);
  so.start_row = n.row;
  so.end_row = RowEnd(n.row);
  so.read.families = {n.family};
  so.content = ScanContent::kRows;
  auto scanner = db_->NewScanner(n.table, so);
  if (!scanner.ok()) return FsErrorFromStatus(scanner.status());
  (*scanner)->Seek(n.row, n.family);
  if (!(*scanner)->status().ok()) {
    return FsErrorFromStatus((*scanner)->status());
  }
  *has = (*scanner)->Valid() && (*scanner)->row() == n.row &&
         (*scanner)->family() == n.family;
  return FsError::Ok();
}

FsError Filesystem::ReadVersion(const Node& cell, CellVersion* out) {
  ReadOptions ro;
  ro.max_versions = 1;
  ro.at = ReadAt(cell);
  auto versions =
      db_->ReadCell(cell.table, cell.row, cell.family, cell.qualifier, ro);
  if (!versions.ok()) return FsErrorFromStatus(versions.status());
  *out = CellVersion();
  if (!versions->empty() && NamesVersion(cell, (*versions)[0].timestamp)) {
    out->exists = true;
    out->timestamp = (*versions)[0].timestamp;
    out->value = std::move((*versions)[0].value);
  }
  return FsError::Ok();
}

FsError Filesystem::StatVersion(const Node& cell, VersionStat* out) {
  ReadOptions ro;
  ro.at = ReadAt(cell);
  auto stat =
      db_->StatCell(cell.table, cell.row, cell.family, cell.qualifier, ro);
  if (!stat.ok()) return FsErrorFromStatus(stat.status());
  *out = VersionStat();
  if (stat->has_value() && NamesVersion(cell, (*stat)->timestamp)) {
    out->exists = true;
    out->timestamp = (*stat)->timestamp;
    out->size = (*stat)->value_size;
  }
  return FsError::Ok();
}

FsError Filesystem::CheckFuture(const Node& node) {
  if (node.at.has_value() && *node.at > NowMicros() + kFutureLimitMicros) {
    return FsError::Of(EINVAL,
                       "a version may be written at most one hour "
                       "in the future: " +
                           node.DebugPath());
  }
  return FsError::Ok();
}

FsError Filesystem::CheckSpace(uint64_t bytes) {
  Status bg = db_->StickyError();
  if (!bg.ok()) {
    return FsError::Of(EIO, "the store failed earlier: " + bg.ToString());
  }
  struct statvfs sv;
  // No data directory (a remote store): the server minds its space.
  if (!options_.datadir.empty() &&
      statvfs(options_.datadir.c_str(), &sv) == 0) {
    uint64_t free_bytes = static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize;
    // The commit at close appends the whole value to the log: refuse here,
    // where the shell sees it, what the store would refuse at close after
    // background work used a little more space meanwhile.
    if (options_.space_reserve_bytes > 0 &&
        free_bytes < options_.space_reserve_bytes + bytes) {
      return FsError::Of(ENOSPC,
                         "free space of the data directory (" +
                             std::to_string(free_bytes) +
                             " bytes) is below the space reserve of " +
                             std::to_string(options_.space_reserve_bytes) +
                             " bytes (-o space_reserve_bytes) plus the " +
                             std::to_string(bytes) + " bytes to commit");
    }
  }
  return FsError::Ok();
}

FsError Filesystem::CheckSchemaOwner(const Caller& caller,
                                     const FamilySettings& s,
                                     const Node& node) {
  if (caller.uid == 0 || caller.uid == s.owner_uid) return FsError::Ok();
  return FsError::Of(
      EACCES, "uid " + std::to_string(caller.uid) + " is not the owner (uid " +
                  std::to_string(s.owner_uid) + ") of " + node.DebugPath());
}

// ---------------------------------------------------------------------------
// Invalidation and refusals
// ---------------------------------------------------------------------------

void Filesystem::InvalidateKernel(uint64_t ino, bool await) {
  // Inodes retired from the cell by a writer's open (InodeTable::Retire)
  // follow it: their readers read through the page cache, so the reply
  // waits for their notices.
  std::vector<uint64_t> retired = inodes_.RetiredAlike(ino);
  for (uint64_t r : retired) open_cells_.Changed(r);
  if (!invalidator_) return;
  uint64_t ticket = invalidator_->Inode(ino);
  for (uint64_t r : retired) ticket = invalidator_->Inode(r);
  if (await || !retired.empty()) last_ticket_ = ticket;
}

void Filesystem::InvalidateInode(uint64_t ino, bool await) {
  open_cells_.Changed(ino);
  InvalidateKernel(ino, await);
}

void Filesystem::ForgetName(const Node& node, bool await) {
  std::optional<uint64_t> parent = inodes_.Find(node.Parent());
  if (invalidator_ && parent.has_value()) {
    uint64_t ticket = invalidator_->Entry(*parent, ListedName(node));
    if (await) last_ticket_ = ticket;
  }
}

void Filesystem::InvalidateCell(const Node& cell, uint64_t ino) {
  InvalidateInode(ino);
  if (cell.at.has_value()) {
    Node plain = cell;
    plain.at.reset();
    std::optional<uint64_t> other = inodes_.Find(plain);
    if (other.has_value()) InvalidateInode(*other);
  }
}

void Filesystem::InvalidateFamily(const std::string& table,
                                  const std::string& family) {
  for (uint64_t ino : inodes_.InodesOfFamily(table, family)) {
    InvalidateInode(ino);
  }
}

void Filesystem::AwaitInvalidations() {
  uint64_t ticket = last_ticket_;
  last_ticket_ = 0;
  if (ticket == 0 || !invalidator_) return;
  // A notice blocked in the kernel behind a queued request (a directory
  // lock held by a LOOKUP) needs another thread to read that request: if
  // this thread is the loop's reader, it passes that on after a moment.
  if (invalidator_->Await(ticket, kInvalidationHandOff)) return;
  FuseLoopWillWait();
  if (!invalidator_->Await(ticket, kInvalidationWait)) {
    Log(LogLevel::kWarning,
        "an invalidation notice is still blocked in the kernel; replying "
        "without it");
  }
}

void Filesystem::LogRefused(const char* op, const std::string& what,
                            const FsError& e) {
  // Tools probe names all the time: failed lookups are debug lines. EIO
  // is no refusal but the store failing (a read error, a sticky
  // background error): always an error line, whatever the request, so
  // the log says why a `cat` or `ls` failed.
  // mkdir probes nothing: its ENOENT (a family not in the schema) is a
  // refusal the user must see.
  // A %~HASH name that matches no key (ENAMETOOLONG) is no probe either:
  // it is a copied tree that cannot come back, and cp fails at the lookup.
  // ESTALE is no refusal: the kernel looks the name up again and retries
  // (a writer's own inode, fs/write_path.cc).
  LogLevel level = e.err == EIO            ? LogLevel::kError
                   : e.err == ENAMETOOLONG ? LogLevel::kInfo
                   : e.err == ESTALE       ? LogLevel::kDebug
                   : (e.err == ENOENT && std::strcmp(op, "mkdir") != 0) ||
                           std::strcmp(op, "lookup") == 0
                       ? LogLevel::kDebug
                       : LogLevel::kInfo;
  if (LogEnabled(level)) {
    LogRefusal(level, std::string(op) + " " + what + ": " + e.ToString());
  }
}

// ---------------------------------------------------------------------------
// Handles
// ---------------------------------------------------------------------------

void Filesystem::AddFile(std::shared_ptr<FileHandle> h, uint64_t* fh) {
  *fh = reinterpret_cast<uint64_t>(h.get());
  MutexLock lock(&handles_mu_);
  files_.emplace(h.get(), std::move(h));
}

std::shared_ptr<FileHandle> Filesystem::FileOf(uint64_t fh) {
  MutexLock lock(&handles_mu_);
  auto it = files_.find(reinterpret_cast<FileHandle*>(fh));
  return it == files_.end() ? nullptr : it->second;
}

void Filesystem::DropFile(FileHandle* h) {
  MutexLock lock(&handles_mu_);
  files_.erase(h);
}

void Filesystem::AddDir(std::unique_ptr<DirHandle> d, uint64_t* fh) {
  *fh = reinterpret_cast<uint64_t>(d.get());
  MutexLock lock(&handles_mu_);
  dirs_.emplace(d.get(), std::move(d));
}

DirHandle* Filesystem::DirOf(uint64_t fh) {
  MutexLock lock(&handles_mu_);
  auto it = dirs_.find(reinterpret_cast<DirHandle*>(fh));
  return it == dirs_.end() ? nullptr : it->second.get();
}

std::unique_ptr<DirHandle> Filesystem::TakeDir(uint64_t fh) {
  std::unique_ptr<DirHandle> d;
  MutexLock lock(&handles_mu_);
  auto it = dirs_.find(reinterpret_cast<DirHandle*>(fh));
  if (it != dirs_.end()) {
    d = std::move(it->second);
    dirs_.erase(it);
  }
  return d;
}

std::shared_ptr<FileHandle> Filesystem::NewBufferHandle(uint64_t ino,
                                                        const Node& node,
                                                        FileHandle::Mode mode,
                                                        std::string initial,
                                                        bool fresh) {
  return std::make_shared<FileHandle>(ino, node, mode, std::move(initial),
                                      fresh, options_.max_value_bytes);
}

bool Filesystem::Vanished(uint64_t ino) {
  MutexLock lock(&handles_mu_);
  return vanished_.count(ino) != 0;
}

bool Filesystem::ForgetVanished(uint64_t ino) {
  MutexLock lock(&handles_mu_);
  return vanished_.erase(ino) > 0;
}

void Filesystem::MarkVanished(uint64_t ino) {
  MutexLock lock(&handles_mu_);
  vanished_.insert(ino);
}

}  // namespace tabletfs::fs
