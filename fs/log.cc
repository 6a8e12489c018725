#include "fs/log.h"

#include <time.h>

#include <atomic>
#include <cstdio>
#include <string>

#include "store/util/mutex.h"

namespace tabletfs::fs {
namespace {

struct LogState {
  Mutex mu;
  LogSink sink GUARDED_BY(mu);
  // Rate limit of refusal lines: the current one-second window.
  int64_t window_second GUARDED_BY(mu) = 0;
  int lines_in_window GUARDED_BY(mu) = 0;
  int64_t dropped GUARDED_BY(mu) = 0;
};

LogState& State() {
  static LogState* state = new LogState();  // never destroyed: used at exit
  return *state;
}

std::atomic<int> g_min_level{static_cast<int>(LogLevel::kInfo)};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "?";
}

void WriteLocked(LogState& s, LogLevel level, std::string_view line)
    REQUIRES(s.mu) {
  if (s.sink) {
    s.sink(level, line);
  } else {
    std::fprintf(stderr, "tabletfs: %s: %.*s\n", LevelName(level),
                 static_cast<int>(line.size()), line.data());
  }
}

}  // namespace

void SetLogSink(LogSink sink, LogLevel min_level) {
  LogState& s = State();
  MutexLock lock(&s.mu);
  s.sink = std::move(sink);
  g_min_level.store(static_cast<int>(min_level));
}

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >= g_min_level.load(std::memory_order_relaxed);
}

void Log(LogLevel level, std::string_view line) {
  if (!LogEnabled(level)) return;
  LogState& s = State();
  MutexLock lock(&s.mu);
  WriteLocked(s, level, line);
}

void LogRefusal(LogLevel level, std::string_view line) {
  if (!LogEnabled(level)) return;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  LogState& s = State();
  MutexLock lock(&s.mu);
  if (now.tv_sec != s.window_second) {
    s.window_second = now.tv_sec;
    s.lines_in_window = 0;
  }
  if (s.lines_in_window >= kRefusalsPerSecond) {
    s.dropped++;
    return;
  }
  s.lines_in_window++;
  if (s.dropped > 0) {
    WriteLocked(s, LogLevel::kWarning,
                std::to_string(s.dropped) +
                    " refused requests not logged (rate limit)");
    s.dropped = 0;
  }
  WriteLocked(s, level, line);
}

}  // namespace tabletfs::fs
