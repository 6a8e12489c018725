#include "fs/open_cells.h"

#include <errno.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cassert>

#include "fs/fuse_loop.h"
#include "fs/timestamp.h"
#include "store/util/hash.h"

namespace tabletfs::fs {
namespace {

int64_t NowMicros() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

// A pending value growing past this many bytes grows eightfold
// (OpenCell::Write).
constexpr size_t kGrowFasterAbove = 1 << 20;

// Bytes of a large pending value's room faulted in ahead of the bytes
// that arrive (OpenCell::Write).
constexpr uint64_t kPopulateAhead = 8 << 20;

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

FsError TooBig(size_t limit, uint64_t end) {
  return FsError::Of(EFBIG, ValueLimitReason(limit) +
                                ": this write would end at " +
                                std::to_string(end));
}

}  // namespace

OpenCell::OpenCell(Bigtable* db, uint64_t ino, Node node,
                   size_t max_value_bytes)
    // No lock: nothing else can see the cell yet, and OpenCells::Get builds
    // it under the registry's lock, which comes after every cell's mu().
    : db_(db), ino_(ino), max_value_bytes_(max_value_bytes),
      node_(std::move(node)) {}

OpenCell::Descriptor* OpenCell::Find(uint64_t id) {
  auto it = descriptors_.find(id);
  return it == descriptors_.end() ? nullptr : &it->second;
}

const OpenCell::Descriptor* OpenCell::Find(uint64_t id) const {
  auto it = descriptors_.find(id);
  return it == descriptors_.end() ? nullptr : &it->second;
}

uint64_t OpenCell::Attach(Access access, CommittedVersion newest,
                          bool truncate, bool create, bool page_cache) {
  uint64_t id = next_id_++;
  Descriptor& d = descriptors_[id];
  d.access = access;
  d.page_cache = page_cache;
  descriptors_now_.store(descriptors_.size(), std::memory_order_release);
  if (newest.exists && !node_.at.has_value()) {
    newest_timestamp_ = newest.timestamp;
    newest_size_ = newest.size;
    newest_hash_.reset();
    newest_generation_ = generation_.load();
  }
  if (access == Access::kRead) {
    assert(newest.value_read);
    // `newest` was just read from the store, so it is at least as new as
    // what readers were served: a commit the store shows may not have
    // reached Changed() yet (a staged row's cells are invalidated one by
    // one after the row is committed), and an open must not see an older
    // cell than the store gave another open before it.
    if (newest.exists || !committed_ ||
        committed_generation_ != generation_.load()) {
      committed_ =
          std::make_shared<const std::string>(std::move(newest.value));
      committed_generation_ = generation_.load();
    }
    if (!page_cache) d.pinned = committed_;
    if (page_cache) cached_readers_++;
    return id;
  }
  if (writers_ == 0) {
    // The first writer since the last one closed: what an earlier writer
    // left (committed, or refused and dropped) is not pending any more.
    loaded_ = false;
    value_.clear();
    changes_ = committed_changes_ = 0;
    fresh_ = false;
    unlinked_ = false;
    committed_once_ = false;
    listed_while_open_ = false;
    placeholder_timestamp_.reset();
    pending_mtime_.reset();
    failed_ = FsError::Ok();
    append_base_ = newest.size;
    appends_.clear();
    appends_size_ = 0;
    newest_size_.reset();
    newest_hash_.reset();  // hashed at a commit of the same size
    if (newest.exists && !node_.at.has_value()) {
      newest_size_ = newest.size;
    } else if (!newest.exists) {
      // Known: no version (a created file's commit need not look again).
      newest_timestamp_.reset();
      newest_generation_ = generation_.load();
    }
  }
  writers_++;
  writers_now_.store(writers_, std::memory_order_release);
  if (page_cache) page_cache_writers_++;
  if (create) fresh_ = true;  // committed even when nothing is written
  d.wrote = create || truncate;
  d.opened_fresh = create || truncate;
  // The committed bytes wait for the first write, read or truncate that
  // needs them (LoadFromStore): appenders keep only their appends, and a
  // write-only open (`touch`) of a 64 MiB cell reads none of it (a
  // read-write open comes with the bytes: it may read or map them at
  // once). A writer's created or truncated value is empty: loaded at once.
  // O_APPEND|O_TRUNC empties the whole value: a whole-value commit, so its
  // appends go to the end of the loaded value.
  if (!loaded_ && !truncate &&
      (access == Access::kAppend || (!create && !newest.value_read))) {
    return id;
  }
  if (!loaded_) {
    Load(truncate || create ? std::string() : std::move(newest.value));
  }
  if (truncate) {
    // Not a change but a fresh start: until something is written, a commit
    // of it is the empty placeholder a refusal takes back.
    value_.clear();
    fresh_ = true;
  }
  return id;
}

void OpenCell::Detach(uint64_t id) {
  auto it = descriptors_.find(id);
  if (it == descriptors_.end()) return;
  if (it->second.access != Access::kRead) {
    writers_--;
    if (it->second.page_cache) page_cache_writers_--;
  } else if (it->second.page_cache) {
    cached_readers_--;
  }
  descriptors_.erase(it);
  writers_now_.store(writers_, std::memory_order_release);
  descriptors_now_.store(descriptors_.size(), std::memory_order_release);
  detached_.SignalAll();
}

bool OpenCell::IsWriter(uint64_t id) const {
  const Descriptor* d = Find(id);
  return d != nullptr && d->access != Access::kRead;
}

bool OpenCell::IsPageCache(uint64_t id) const {
  const Descriptor* d = Find(id);
  return d != nullptr && d->access != Access::kRead && d->page_cache;
}

std::string OpenCell::PendingAppends() const {
  std::string out;
  out.reserve(appends_size_);
  for (const auto& [id, bytes] : appends_) out.append(bytes);
  return out;
}

void OpenCell::Load(std::string committed) {
  value_ = std::move(committed);
  if (!appends_.empty()) {
    value_.append(PendingAppends());
    appends_.clear();
    appends_size_ = 0;
    changes_++;
  }
  loaded_ = true;
}

FsError OpenCell::ReadNewest(CommittedVersion* out, bool as_of) {
  ReadOptions ro;
  ro.max_versions = 1;
  ro.at = node_.at;
  auto versions = db_->ReadCell(node_.table, node_.row, node_.family,
                                node_.qualifier, ro);
  if (!versions.ok()) return FsErrorFromStatus(versions.status());
  *out = CommittedVersion();
  if (versions->empty()) return FsError::Ok();
  if (node_.at.has_value() && !as_of && (*versions)[0].timestamp != *node_.at) {
    return FsError::Ok();
  }
  out->exists = true;
  out->timestamp = (*versions)[0].timestamp;
  out->value = std::move((*versions)[0].value);
  out->size = out->value.size();
  return FsError::Ok();
}

FsError OpenCell::LoadFromStore() {
  CommittedVersion v;
  TABLETFS_FS_RETURN_IF_ERROR(ReadNewest(&v));
  Load(std::move(v.value));
  return FsError::Ok();
}

FsError OpenCell::RefreshCommitted() {
  uint64_t generation = generation_.load();
  if (committed_ && (committed_generation_ == generation || unlinked_)) {
    return FsError::Ok();
  }
  CommittedVersion v;
  TABLETFS_FS_RETURN_IF_ERROR(ReadNewest(&v, /*as_of=*/true));
  if (v.exists) {
    committed_ = std::make_shared<const std::string>(std::move(v.value));
    if (!node_.at.has_value()) {
      newest_timestamp_ = v.timestamp;
      newest_size_ = committed_->size();
      newest_hash_.reset();
      newest_generation_ = generation;
    }
  } else if (!committed_) {
    committed_ = std::make_shared<const std::string>();
  }
  // Removed: readers keep what they saw, as readers of an unlinked file.
  committed_generation_ = generation;
  return FsError::Ok();
}

FsError OpenCell::Read(uint64_t id, off_t offset, size_t size,
                       std::string* out) {
  out->clear();
  Descriptor* d = Find(id);
  if (d == nullptr) return FsError::Of(EBADF, "unknown descriptor");
  const std::string* value = &value_;
  if (d->access == Access::kRead && d->page_cache) {
    // The kernel caches what it reads: always the newest, so that no page
    // of an older version enters the cache after a commit dropped it.
    TABLETFS_FS_RETURN_IF_ERROR(RefreshCommitted());
    value = committed_.get();
  } else if (d->access == Access::kRead) {
    // One read() comes as READs of consecutive ranges (in order: the
    // kernel sends a synchronous direct read's requests one by one): they
    // read the version the first one read. Any other READ reads the
    // newest (sqlite's pread of page 1's change counter at offset 24 read
    // the version pinned by its previous read, and missed a commit).
    if (!d->pinned || offset <= 0 ||
        static_cast<uint64_t>(offset) != d->read_end ||
        static_cast<uint64_t>(offset) >= d->pinned->size()) {
      TABLETFS_FS_RETURN_IF_ERROR(RefreshCommitted());
      d->pinned = committed_;
    }
    value = d->pinned.get();
    d->read_end = static_cast<uint64_t>(offset) + size;
  } else if (!loaded_) {
    TABLETFS_FS_RETURN_IF_ERROR(LoadFromStore());
  }
  if (offset < 0 || static_cast<uint64_t>(offset) >= value->size()) {
    return FsError::Ok();
  }
  *out = value->substr(static_cast<size_t>(offset), size);
  return FsError::Ok();
}

FsError OpenCell::Write(uint64_t id, off_t offset, std::string_view data) {
  Descriptor* d = Find(id);
  if (d == nullptr || d->access == Access::kRead) {
    return FsError::Of(EBADF, "write to a read-only descriptor");
  }
  if (!failed_.ok()) {
    return FsError::Of(
        EIO, "an earlier commit of this file failed: " + failed_.reason);
  }
  if (d->refused) {
    // Nothing of this descriptor is committed any more: accepting more
    // bytes would lose them silently.
    return FsError::Of(d->refused_errno,
                       "an earlier write() to this descriptor was refused; "
                       "reopen the file to write it");
  }
  if (offset < 0) return FsError::Of(EINVAL, "negative offset");
  if (d->access == Access::kAppend && !loaded_) {
    uint64_t end = append_base_ + data.size();
    if (end > max_value_bytes_) {
      Refuse(id, EFBIG);
      return TooBig(max_value_bytes_, end);
    }
    if (!appends_.empty() && appends_.back().first == id) {
      appends_.back().second.append(data);
    } else {
      appends_.emplace_back(id, std::string(data));
    }
    appends_size_ += data.size();
    append_base_ = end;
    d->wrote = true;
    return FsError::Ok();
  }
  if (!loaded_) TABLETFS_FS_RETURN_IF_ERROR(LoadFromStore());
  uint64_t start = d->access == Access::kAppend
                       ? value_.size()
                       : static_cast<uint64_t>(offset);
  uint64_t end = start + data.size();
  if (end > max_value_bytes_) {
    Refuse(id, EFBIG);
    return TooBig(max_value_bytes_, end);
  }
  if (end > value_.capacity() && end > kGrowFasterAbove) {
    // Eight times the room (only mapped: its pages are faulted in ahead of
    // the bytes, below), so a large sequential write is copied twice on its
    // way to 64 MiB, not at each doubling of the buffer.
    std::string room;
    room.reserve(std::min<uint64_t>(max_value_bytes_, 8 * end));
    PopulateRoom(&room, end);
    room.append(value_);
    value_.swap(room);
  } else if (end > kGrowFasterAbove) {
    PopulateRoom(&value_, end);
  }
  // A hole before `start` reads as zeros; the rest is written over (and
  // past the end) without clearing it first.
  if (start > value_.size()) value_.resize(static_cast<size_t>(start));
  value_.replace(static_cast<size_t>(start), data.size(), data);
  changes_++;
  d->wrote = true;
  return FsError::Ok();
}

void OpenCell::PopulateRoom(std::string* buffer, uint64_t end) {
  // One madvise per 8 MiB instead of a page fault per 4 KiB page, and the
  // kernel's small pages: transparent huge pages came from memory this VM
  // had not backed yet, and clearing them ran at a tenth of the usual
  // speed in a third of the runs (docs/BENCHMARKS.md, "sixteenth
  // session"). Advice only: a kernel without MADV_POPULATE_WRITE faults
  // the pages in as the bytes arrive.
  constexpr uintptr_t kPage = 4096;
  const auto base = reinterpret_cast<uintptr_t>(buffer->data());
  if (populated_base_ != base) {
    populated_base_ = base;
    populated_ = 0;
  }
  if (end <= populated_) return;
  const uint64_t from = std::max<uint64_t>(populated_, buffer->size());
  const uint64_t to =
      std::min<uint64_t>(buffer->capacity(), end + kPopulateAhead);
  const uintptr_t first = (base + from + kPage - 1) & ~(kPage - 1);
  const uintptr_t last = (base + to) & ~(kPage - 1);
  if (last > first) {
    madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE);
  }
  populated_ = to;
}

FsError OpenCell::Truncate(uint64_t id, uint64_t size) {
  if (id != 0) {
    Descriptor* d = Find(id);
    if (d == nullptr || d->access == Access::kRead) {
      return FsError::Of(EBADF, "truncate through a read-only descriptor");
    }
    d->wrote = true;
    if (d->refused) {
      return FsError::Of(d->refused_errno,
                         "an earlier write() to this descriptor was refused");
    }
  }
  if (size > max_value_bytes_) {
    if (id != 0) Refuse(id, EFBIG);
    return TooBig(max_value_bytes_, size);
  }
  if (!loaded_) TABLETFS_FS_RETURN_IF_ERROR(LoadFromStore());
  if (value_.size() != size) {
    value_.resize(size);
    changes_++;
  }
  return FsError::Ok();
}

void OpenCell::Refuse(uint64_t id, int err) {
  Descriptor* d = Find(id);
  if (d == nullptr) return;
  d->refused = true;
  d->refused_errno = err;
  // Its pending appends go (no lambda: the thread-safety analysis does
  // not see mu_ held inside one).
  std::vector<std::pair<uint64_t, std::string>> kept;
  for (auto& run : appends_) {
    if (run.first == id) {
      appends_size_ -= run.second.size();
    } else {
      kept.push_back(std::move(run));
    }
  }
  appends_ = std::move(kept);
  if (!placeholder_timestamp_.has_value() || unlinked_ ||
      node_.at.has_value()) {
    return;
  }
  // The empty version a fresh open committed before this write (a dup
  // closed first): it goes again, so an existing cell keeps its value and
  // a created name is not kept.
  RowMutation m(node_.row);
  m.DeleteVersion(node_.family, node_.qualifier, *placeholder_timestamp_);
  auto r = db_->Apply(node_.table, m, WriteOptions());
  if (!r.ok()) return;  // the empty version stays; nothing is lost
  placeholder_timestamp_.reset();
  committed_once_ = false;
  newest_generation_ = 0;  // not known any more
  Changed();
}

std::optional<uint64_t> OpenCell::PendingSize() const {
  if (writers_ == 0 || unlinked_ || !loaded_) return std::nullopt;
  if (!fresh_ && changes_ == committed_changes_) return std::nullopt;
  return value_.size();
}

std::optional<uint64_t> OpenCell::CommittedSize() const {
  if (!committed_) return std::nullopt;
  return committed_->size();
}

uint64_t OpenCell::SizeFor(uint64_t id) const {
  const Descriptor* d = Find(id);
  if (d != nullptr && d->access != Access::kRead && loaded_) {
    return value_.size();
  }
  return committed_ ? committed_->size() : 0;
}

uint64_t OpenCell::SizeAfterWrite(uint64_t id, off_t offset,
                                  size_t size) const {
  const Descriptor* d = Find(id);
  if (d != nullptr && d->access == Access::kAppend && !loaded_) {
    return appends_size_ + size;
  }
  uint64_t end = static_cast<uint64_t>(std::max<off_t>(offset, 0)) + size;
  // Unloaded: the committed value with the pending appends, which the
  // write will load.
  return std::max<uint64_t>(loaded_ ? value_.size() : append_base_, end);
}

bool OpenCell::NeedsCommit(uint64_t id) const {
  if (unlinked_) return false;
  const Descriptor* d = nullptr;
  if (id != 0) {
    d = Find(id);
    if (d == nullptr || d->access == Access::kRead || d->refused) return false;
  } else if (writers_ == 0) {
    return false;
  }
  // Unloaded: an appender commits what any appender appended.
  if (!loaded_) return d != nullptr && (fresh_ || !appends_.empty());
  return fresh_ || changes_ != committed_changes_;
}

bool OpenCell::NeedsCommitAtClose(uint64_t id) const {
  return NeedsCommit(id) && !OnlyEmptyDue(id);
}

bool OpenCell::OnlyEmptyDue(uint64_t id) const {
  const Descriptor* d = Find(id);
  if (d == nullptr || !d->opened_fresh || !fresh_) return false;
  return loaded_ ? changes_ == committed_changes_ : appends_.empty();
}

bool OpenCell::NeedsCommitAtRelease(uint64_t id) const {
  const Descriptor* d = Find(id);
  return d != nullptr && d->wrote && NeedsCommit(id);
}

void OpenCell::Flushed(uint64_t id, bool at_close) {
  Descriptor* d = Find(id);
  if (d == nullptr) return;
  if (d->access == Access::kRead) return;
  if (at_close && OnlyEmptyDue(id) && NeedsCommit(id)) {
    d->empty_awaits_release = true;  // committed at RELEASE
    return;
  }
  d->wrote = false;
}

bool OpenCell::HasEmptyAwaitingRelease() const {
  for (const auto& [id, d] : descriptors_) {
    if (d.empty_awaits_release && OnlyEmptyDue(id) && NeedsCommit(id)) {
      return true;
    }
  }
  return false;
}

bool OpenCell::AwaitEmptyRelease(std::chrono::microseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (HasEmptyAwaitingRelease()) {
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    FuseLoopWillWait();  // the RELEASE needs another thread to read it
    WaitDetached(left);
  }
  return true;
}

void OpenCell::AwaitCachedReadersRelease(std::chrono::microseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (cached_readers_ > 0) {
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    FuseLoopWillWait();
    WaitDetached(left);
  }
}

FsError OpenCell::Commit(uint64_t id, int64_t* committed_at) {
  Descriptor* d = id != 0 ? Find(id) : nullptr;
  if (d != nullptr && d->access == Access::kAppend && !loaded_) {
    return CommitAppend(committed_at);
  }
  if (!loaded_) TABLETFS_FS_RETURN_IF_ERROR(LoadFromStore());
  return CommitValue(committed_at);
}

FsError OpenCell::CommitValue(int64_t* committed_at) {
  const Node& n = node_;
  int64_t ts = kServerTimestamp;
  if (n.at.has_value()) {
    ts = FloorToGranularity(*n.at, db_->TimestampGranularityMicros());
  } else {
    if (newest_generation_ != generation_.load()) {
      // Its time and size, and its hash when the store has it at hand (a
      // value kept apart, in a value file): not the value. Reading back a
      // 64 MiB value to compare it was a third of the 64 MiB cell's commit.
      auto stat =
          db_->StatCell(n.table, n.row, n.family, n.qualifier, ReadOptions());
      if (!stat.ok()) return FsErrorFromStatus(stat.status());
      newest_timestamp_.reset();
      newest_size_.reset();
      newest_hash_.reset();
      if (stat->has_value()) {
        newest_timestamp_ = (*stat)->timestamp;
        newest_size_ = (*stat)->value_size;
        newest_hash_ = (*stat)->value_xxh64;  // Hash64: XXH64, seed 0
      }
      newest_generation_ = generation_.load();
    }
    // Hashed only when a size matches: the newest version is read for it
    // (the store still holds it: the generation did not move).
    if (newest_timestamp_.has_value() && newest_size_ == value_.size() &&
        !newest_hash_.has_value()) {
      auto stat =
          db_->StatCell(n.table, n.row, n.family, n.qualifier, ReadOptions());
      if (stat.ok() && stat->has_value() &&
          (*stat)->timestamp == *newest_timestamp_ &&
          (*stat)->value_xxh64.has_value()) {
        newest_hash_ = (*stat)->value_xxh64;
      } else {
        CommittedVersion v;
        TABLETFS_FS_RETURN_IF_ERROR(ReadNewest(&v));
        if (v.exists && v.timestamp == *newest_timestamp_) {
          newest_hash_ = Hash64(v.value);
        }
      }
    }
    // The same bytes as the newest version: nothing new to store.
    if (newest_timestamp_.has_value() && newest_size_ == value_.size() &&
        newest_hash_.has_value() && *newest_hash_ == Hash64(value_)) {
      *committed_at = *newest_timestamp_;
      committed_changes_ = changes_;
      fresh_ = false;
      committed_once_ = true;
      return FsError::Ok();
    }
    // The shell's `>` of the same bytes again: its first close committed
    // the empty placeholder above the version that holds them. The
    // placeholder goes, and nothing is added.
    if (placeholder_timestamp_.has_value() && !value_.empty()) {
      ReadOptions ro;
      ro.max_versions = 2;
      auto versions = db_->ReadCell(n.table, n.row, n.family, n.qualifier, ro);
      if (versions.ok() && versions->size() == 2 &&
          (*versions)[0].timestamp == *placeholder_timestamp_ &&
          (*versions)[1].value == value_) {
        RowMutation m(n.row);
        m.DeleteVersion(n.family, n.qualifier, *placeholder_timestamp_);
        auto r = db_->Apply(n.table, m, WriteOptions());
        if (!r.ok()) {
          FsError e = FsErrorFromStatus(r.status());
          Fail(e);
          return e;
        }
        *committed_at = (*versions)[1].timestamp;
        placeholder_timestamp_.reset();
        committed_changes_ = changes_;
        fresh_ = false;
        committed_once_ = true;
        newest_timestamp_ = *committed_at;
        newest_size_ = value_.size();
        newest_hash_.reset();
        uint64_t generation = generation_.fetch_add(1) + 1;
        newest_generation_ = generation;
        committed_.reset();
        return FsError::Ok();
      }
    }
    // A write always becomes the current value: above the newest version
    // even when that one is in the future (clock skew, `touch -d`).
    if (ts == kServerTimestamp && newest_timestamp_.has_value() &&
        *newest_timestamp_ >= NowMicros()) {
      ts = NextAbove(*newest_timestamp_, db_->TimestampGranularityMicros());
    }
  }
  RowMutation m(n.row);
  if (placeholder_timestamp_.has_value() && !n.at.has_value()) {
    m.DeleteVersion(n.family, n.qualifier, *placeholder_timestamp_);
  }
  // The pending value goes into the mutation and comes back after it, not
  // copied (a 64 MiB cell).
  const size_t set_op = m.ops().size();
  m.SetCellTaking(n.family, n.qualifier, ts, std::move(value_));
  auto r = db_->Apply(n.table, m, WriteOptions());
  value_ = m.TakeValue(set_op);
  if (!r.ok()) {
    FsError e = FsErrorFromStatus(r.status());
    Fail(e);
    return e;
  }
  *committed_at = ts == kServerTimestamp ? *r : ts;
  if (fresh_ && changes_ == committed_changes_ && value_.empty() &&
      !n.at.has_value()) {
    placeholder_timestamp_ = *committed_at;
  } else {
    placeholder_timestamp_.reset();
  }
  committed_changes_ = changes_;
  fresh_ = false;
  committed_once_ = true;
  uint64_t generation = generation_.fetch_add(1) + 1;
  if (!n.at.has_value()) {
    newest_timestamp_ = std::max(*committed_at, newest_timestamp_.value_or(
                                                    *committed_at));
    newest_generation_ = generation;
    newest_size_ = value_.size();
    newest_hash_.reset();  // hashed again only when a size matches
    if (descriptors_.size() > static_cast<size_t>(writers_)) {
      committed_ = std::make_shared<const std::string>(value_);
      committed_generation_ = generation;
    } else {
      committed_.reset();
    }
  }
  return FsError::Ok();
}

FsError OpenCell::CommitAppend(int64_t* committed_at) {
  const Node& n = node_;
  if (newest_timestamp_.has_value() && *newest_timestamp_ >= NowMicros()) {
    // The store appends at a server timestamp, which would sort below a
    // version in the future: append here instead (every appender of the
    // cell in this daemon holds the cell's lock), stamped above it.
    TABLETFS_FS_RETURN_IF_ERROR(LoadFromStore());
    return CommitValue(committed_at);
  }
  // Every appender's bytes, in the order they were written: a close
  // commits what the others appended before it, as on a local disk.
  const std::string appended = PendingAppends();
  WriteOptions wo;
  bool replaced = false;
  *committed_at = 0;
  if (placeholder_timestamp_.has_value() && !appended.empty()) {
    // `echo x >> new`: replace the empty placeholder, but only while the
    // cell still holds nothing (no other appender came).
    CellCondition still_empty;
    still_empty.family = n.family;
    still_empty.qualifier = n.qualifier;
    still_empty.op = CellCondition::Op::kEquals;
    RowMutation m(n.row);
    m.DeleteVersion(n.family, n.qualifier, *placeholder_timestamp_);
    m.SetCell(n.family, n.qualifier, appended);
    auto r = db_->CheckAndMutate(n.table, n.row, still_empty, m,
                                 RowMutation(n.row), wo);
    if (!r.ok()) {
      FsError e = FsErrorFromStatus(r.status());
      Fail(e);
      return e;
    }
    replaced = *r;
  }
  if (!replaced) {
    auto r = db_->Append(n.table, n.row, n.family, n.qualifier, appended, wo);
    if (!r.ok()) {
      FsError e = FsErrorFromStatus(r.status());
      Fail(e);
      return e;
    }
    *committed_at = r->timestamp;
  }
  if (fresh_ && appended.empty() && !replaced) {
    placeholder_timestamp_ = *committed_at;
  } else {
    placeholder_timestamp_.reset();
  }
  appends_.clear();
  appends_size_ = 0;
  fresh_ = false;
  committed_once_ = true;
  // The appended version's timestamp is not known when it replaced the
  // placeholder: read it again before the next whole-value commit.
  newest_generation_ = 0;
  generation_.fetch_add(1);
  committed_.reset();
  return FsError::Ok();
}

std::shared_ptr<OpenCell> OpenCells::Get(uint64_t ino, const Node& node) {
  MutexLock lock(&mu_);
  Entry& e = by_ino_[ino];
  if (!e.cell) {
    e.cell = std::make_shared<OpenCell>(db_, ino, node, max_value_bytes_);
  }
  e.holders++;
  return e.cell;
}

void OpenCells::Put(const std::shared_ptr<OpenCell>& cell) {
  MutexLock lock(&mu_);
  auto it = by_ino_.find(cell->ino());
  if (it == by_ino_.end() || it->second.cell != cell) return;
  if (--it->second.holders == 0) by_ino_.erase(it);
}

std::shared_ptr<OpenCell> OpenCells::Find(uint64_t ino) {
  MutexLock lock(&mu_);
  auto it = by_ino_.find(ino);
  return it == by_ino_.end() ? nullptr : it->second.cell;
}

std::vector<std::shared_ptr<OpenCell>> OpenCells::All() {
  std::vector<std::shared_ptr<OpenCell>> out;
  MutexLock lock(&mu_);
  for (auto& [ino, e] : by_ino_) out.push_back(e.cell);
  return out;
}

}  // namespace tabletfs::fs
