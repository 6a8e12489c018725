// ChangeFeed: the text of MOUNT/.changes/TABLE (DESIGN.md "Change feed",
// issue 21): one JSON line per committed change of the table, in commit
// order, whatever door it came through (the mount, tabletctl, the API), for
// as long as someone has the file open.
//
// A feed starts at the first open of the file (it shows changes committed
// after that; a feed of TABLE@T first shows those committed since T that
// the store still holds, SubscribeOptions::since) and stops at the last
// close; meanwhile every reader reads one
// growing text, as readers of a log file do: the file's size is the bytes
// written so far, its mtime the time of the last line, so `tail -f`
// (which polls the size of a file on FUSE) prints each line as it comes. A
// thread per feed reads the store's change subscription and formats the
// lines; writers never wait for it (the subscription's queue is bounded,
// kMaxQueuedEvents: when it overflows, a line {"lost":N} says how many events
// were not seen). The feed keeps its last kWindowBytes of text: a reader that
// falls further behind gets EIO for the bytes that went (and a log line), and
// opens the file again to go on from the newest. The past of a TABLE@T feed
// comes at the readers' pace instead: the feed takes more of it only while
// the furthest reader is less than half a window behind the end, so a
// reader of any past reads it all (the live changes queue meanwhile).
//
// One line, members in this order, byte strings as `tabletctl export`
// writes them (store/util/text_coding.h: "name" for UTF-8, "name_base64"
// else), absent members omitted:
//   {"kind":"set","row":..,"family":"f","qualifier":..,"timestamp":T,
//    "value":..}
// kind: set, delete-version, delete-cell, delete-family, delete-row,
// drop-family, drop-table. `value` only for set: the version written (the
// event's, store/changes.h; a value larger than kMaxEventValueBytes is read
// from the store by its timestamp); above kMaxValueBytes only its first
// kMaxValueBytes, with "value_size":N and "value_cut":true; when a value
// read from the store is gone before the feed read it (deleted, collected),
// "value_gone":true.
//
// A subscription that ends (a remote store's stream: the server went away
// or dropped it) ends the feed with a last line {"error":"..."} saying why.
// `tabletctl watch` prints the same lines (Lines).
//
// Thread safety: all methods may be called from any thread.
#ifndef TABLETFS_FS_CHANGE_FEED_H_
#define TABLETFS_FS_CHANGE_FEED_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "fs/errors.h"
#include "fs/file_handle.h"
#include "store/bigtable.h"
#include "store/changes.h"
#include "store/util/mutex.h"

namespace tabletfs::fs {

class ChangeFeed : public FileHandle::Source {
 public:
  static constexpr size_t kWindowBytes = 8u << 20;
  static constexpr size_t kMaxValueBytes = 64u << 10;
  static constexpr size_t kMaxQueuedEvents = 65536;

  // Subscribes to `table` of `db` and starts the thread; with `since`, the
  // feed starts with the changes committed at or after that time
  // (SubscribeOptions::since). ENOTSUP when the store sends no change
  // events (a remote Bigtable without change streams, as Google's
  // emulator) or keeps no past ones; ENODATA when it no longer holds
  // changes that old (the reason names the oldest start).
  static FsError Start(Bigtable* db, std::string table,
                       std::optional<int64_t> since,
                       std::shared_ptr<ChangeFeed>* out);
  ~ChangeFeed() override;

  // The text at [offset, offset + size): fewer bytes at the end. EIO for
  // bytes that left the window.
  FsError Read(off_t offset, size_t size, std::string* out) override;
  // Bytes written so far, and the time of the last line (microseconds).
  uint64_t size() const;
  int64_t mtime() const;

  // The JSON line of `e` (with its newline); `value` for kSetCell (nullptr:
  // the version is gone).
  static std::string Line(const ChangeEvent& e, const std::string* value);
  // The lines of `batch`'s events, each set's value read from `db` by its
  // timestamp, then {"lost":N} when events were lost. Not the status.
  static std::string Lines(Bigtable* db, const ChangeBatch& batch);
  // The last line of a feed whose subscription ended with `status`.
  static std::string ErrorLine(const Status& status);

 private:
  ChangeFeed(Bigtable* db, std::string name,
             std::unique_ptr<ChangeSubscription> subscription);
  void Run();
  void Append(const std::string& text);
  // Waits until a reader has read to within half a window of the end, or
  // the feed stops.
  void AwaitReaders() EXCLUDES(mu_);
  // CondVar::Wait names the CondVar's own mutex, which the analysis cannot
  // tie to mu_; this states the real requirement.
  void AwaitRead() REQUIRES(mu_) NO_THREAD_SAFETY_ANALYSIS { read_cv_.Wait(); }

  Bigtable* const db_;
  // The file's name in .changes (FeedName), for messages.
  const std::string name_;
  const std::unique_ptr<ChangeSubscription> subscription_;
  std::atomic<bool> stop_{false};
  mutable Mutex mu_;
  // The window: the text from offset base_ on.
  std::string text_ GUARDED_BY(mu_);
  uint64_t base_ GUARDED_BY(mu_) = 0;
  int64_t mtime_ GUARDED_BY(mu_) = 0;
  // The end of the furthest read of any reader, and its signal.
  uint64_t read_end_ GUARDED_BY(mu_) = 0;
  CondVar read_cv_{&mu_};
  std::thread thread_;
};

// The name of a feed in .changes: TABLE, or TABLE@T (T in microseconds)
// for one that starts at T.
std::string FeedName(const std::string& table, std::optional<int64_t> since);

// The live feeds by name: an open joins the feed of its name or starts it;
// the feed stops when its last reader is gone. Each TABLE@T is a feed of
// its own, shared by the readers of that name: they all read one text that
// starts at T (the first open reads the past from the store; a later one
// joins the running feed, from its first byte while that is in the
// window).
class ChangeFeeds {
 public:
  explicit ChangeFeeds(Bigtable* db) : db_(db) {}
  FsError Open(const std::string& table, std::optional<int64_t> since,
               std::shared_ptr<ChangeFeed>* out);
  // The running feed of that name, or nullptr.
  std::shared_ptr<ChangeFeed> Find(const std::string& table,
                                   std::optional<int64_t> since);

 private:
  Bigtable* const db_;
  Mutex mu_;
  std::map<std::string, std::weak_ptr<ChangeFeed>> feeds_ GUARDED_BY(mu_);
};

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_CHANGE_FEED_H_
