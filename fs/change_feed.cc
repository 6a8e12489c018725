#include "fs/change_feed.h"

#include <errno.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "fs/filesystem.h"
#include "fs/log.h"
#include "fs/timestamp.h"
#include "store/util/text_coding.h"

namespace tabletfs::fs {

FsError ChangeFeed::Start(Bigtable* db, std::string table,
                          std::optional<int64_t> since,
                          std::shared_ptr<ChangeFeed>* out) {
  const std::string name = FeedName(table, since);
  SubscribeOptions so;
  so.table = std::move(table);
  so.since = since;
  // Room for a burst (a bulk load through the API commits ~100,000 rows a
  // second, faster than the feed reads their values): ~100 bytes each.
  so.max_queued_events = kMaxQueuedEvents;
  auto sub = db->Subscribe(so);
  if (sub.status().IsNotSupported()) {
    return FsError::Of(ENOTSUP, ".changes/" + name + ": the store " +
                                    (since ? "keeps no past changes ("
                                           : "sends no change events (") +
                                    sub.status().ToString() + ")");
  }
  if (since && sub.status().IsNotFound()) {
    // Only a start older than the store holds: the table need not exist.
    return FsError::Of(ENODATA, ".changes/" + name + " (" +
                                    FormatIso8601(*since) +
                                    "): " + sub.status().ToString());
  }
  if (!sub.ok()) return FsErrorFromStatus(sub.status());
  out->reset(new ChangeFeed(db, name, std::move(sub).value()));
  return FsError::Ok();
}

ChangeFeed::ChangeFeed(Bigtable* db, std::string name,
                       std::unique_ptr<ChangeSubscription> subscription)
    : db_(db), name_(std::move(name)), subscription_(std::move(subscription)) {
  {
    MutexLock lock(&mu_);
    mtime_ = NowMicros();
  }
  thread_ = std::thread([this] { Run(); });
}

ChangeFeed::~ChangeFeed() {
  {
    // Under mu_, so AwaitReaders cannot miss it between test and wait.
    MutexLock lock(&mu_);
    stop_.store(true);
  }
  read_cv_.SignalAll();
  subscription_->Wake();
  thread_.join();
}

uint64_t ChangeFeed::size() const {
  MutexLock lock(&mu_);
  return base_ + text_.size();
}

int64_t ChangeFeed::mtime() const {
  MutexLock lock(&mu_);
  return mtime_;
}

FsError ChangeFeed::Read(off_t offset, size_t size, std::string* out) {
  out->clear();
  MutexLock lock(&mu_);
  const uint64_t at = static_cast<uint64_t>(std::max<off_t>(offset, 0));
  if (at < base_) {
    return FsError::Of(EIO, ".changes/" + name_ + ": the reader fell " +
                                std::to_string(base_ - at) +
                                " bytes behind the feed's window; open "
                                "it again to go on from the newest");
  }
  if (at - base_ < text_.size()) *out = text_.substr(at - base_, size);
  if (at + out->size() > read_end_) {
    read_end_ = at + out->size();
    read_cv_.SignalAll();
  }
  return FsError::Ok();
}

void ChangeFeed::Append(const std::string& text) {
  MutexLock lock(&mu_);
  text_ += text;
  if (text_.size() > kWindowBytes) {
    // Whole lines go: the window starts at a line.
    size_t cut = text_.find('\n', text_.size() - kWindowBytes);
    cut = cut == std::string::npos ? text_.size() : cut + 1;
    text_.erase(0, cut);
    base_ += cut;
  }
  mtime_ = NowMicros();
}

void ChangeFeed::Run() {
  while (!stop_.load()) {
    ChangeBatch batch = subscription_->Read(std::chrono::milliseconds(200));
    if (batch.past) {
      // The past line by line, each once the readers are near the end.
      for (ChangeEvent& e : batch.events) {
        AwaitReaders();
        if (stop_.load()) return;
        ChangeBatch one;
        one.events.push_back(std::move(e));
        Append(Lines(db_, one));
      }
      batch.events.clear();
    }
    std::string text = Lines(db_, batch);
    if (batch.lost > 0) {
      Log(LogLevel::kWarning, ".changes/" + name_ + ": " +
                                  std::to_string(batch.lost) +
                                  " events were not queued (the feed fell "
                                  "behind the writers)");
    }
    if (!batch.status.ok()) {
      Log(LogLevel::kWarning, ".changes/" + name_ +
                                  ": the store's change stream ended (" +
                                  batch.status.ToString() + ")");
      Append(text + ErrorLine(batch.status));
      return;
    }
    if (!text.empty()) Append(text);
  }
}

std::string ChangeFeed::Lines(Bigtable* db, const ChangeBatch& batch) {
  std::string text;
  for (const ChangeEvent& e : batch.events) {
    if (e.kind != ChangeKind::kSetCell) {
      text += Line(e, nullptr);
      continue;
    }
    if (e.value.has_value()) {
      text += Line(e, &*e.value);
      continue;
    }
    // A value the event does not carry: read by its timestamp (gone if
    // deleted or collected since).
    ReadOptions ro;
    ro.at = e.timestamp;
    ro.max_versions = 1;
    auto versions = db->ReadCell(e.table, e.row, e.family, e.qualifier, ro);
    const std::string* value = nullptr;
    if (versions.ok() && !versions->empty() &&
        (*versions)[0].timestamp == e.timestamp) {
      value = &(*versions)[0].value;
    }
    text += Line(e, value);
  }
  if (batch.lost > 0) {
    text += "{\"lost\":" + std::to_string(batch.lost) + "}\n";
  }
  return text;
}

std::string ChangeFeed::ErrorLine(const Status& status) {
  std::string line = "{";
  AppendJsonBytes(&line, "error", status.ToString());
  return line + "}\n";
}

void ChangeFeed::AwaitReaders() {
  MutexLock lock(&mu_);
  while (!stop_.load() && base_ + text_.size() > read_end_ + kWindowBytes / 2) {
    AwaitRead();
  }
}

std::string ChangeFeed::Line(const ChangeEvent& e, const std::string* value) {
  std::string line = "{\"kind\":";
  line += JsonQuote(e.kind == ChangeKind::kSetCell ? std::string_view("set")
                                                   : ChangeKindName(e.kind));
  const bool has_row =
      e.kind != ChangeKind::kDropFamily && e.kind != ChangeKind::kDropTable;
  const bool has_family =
      e.kind != ChangeKind::kDeleteRow && e.kind != ChangeKind::kDropTable;
  const bool has_qualifier = e.kind == ChangeKind::kSetCell ||
                             e.kind == ChangeKind::kDeleteVersion ||
                             e.kind == ChangeKind::kDeleteCell;
  if (has_row) {
    line += ',';
    AppendJsonBytes(&line, "row", e.row);
  }
  if (has_family) line += ",\"family\":" + JsonQuote(e.family);
  if (has_qualifier) {
    line += ',';
    AppendJsonBytes(&line, "qualifier", e.qualifier);
  }
  line += ",\"timestamp\":" + std::to_string(e.timestamp);
  if (e.kind == ChangeKind::kSetCell) {
    if (value == nullptr) {
      line += ",\"value_gone\":true";
    } else if (value->size() > kMaxValueBytes) {
      line += ',';
      AppendJsonBytes(&line, "value",
                      std::string_view(*value).substr(0, kMaxValueBytes));
      line += ",\"value_size\":" + std::to_string(value->size()) +
              ",\"value_cut\":true";
    } else {
      line += ',';
      AppendJsonBytes(&line, "value", *value);
    }
  }
  line += "}\n";
  return line;
}

std::string FeedName(const std::string& table, std::optional<int64_t> since) {
  return since ? table + "@" + std::to_string(*since) : table;
}

FsError ChangeFeeds::Open(const std::string& table,
                          std::optional<int64_t> since,
                          std::shared_ptr<ChangeFeed>* out) {
  const std::string name = FeedName(table, since);
  MutexLock lock(&mu_);
  auto it = feeds_.find(name);
  if (it != feeds_.end()) {
    if (std::shared_ptr<ChangeFeed> live = it->second.lock()) {
      *out = std::move(live);
      return FsError::Ok();
    }
  }
  // Stopped feeds leave expired entries: drop them as new ones start.
  std::erase_if(feeds_, [](const auto& kv) { return kv.second.expired(); });
  TABLETFS_FS_RETURN_IF_ERROR(ChangeFeed::Start(db_, table, since, out));
  feeds_[name] = *out;
  return FsError::Ok();
}

std::shared_ptr<ChangeFeed> ChangeFeeds::Find(const std::string& table,
                                              std::optional<int64_t> since) {
  MutexLock lock(&mu_);
  auto it = feeds_.find(FeedName(table, since));
  return it == feeds_.end() ? nullptr : it->second.lock();
}

}  // namespace tabletfs::fs
