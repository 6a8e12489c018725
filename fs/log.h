// Logging for the fs layer and the daemon: one process-wide sink (stderr in
// the foreground, syslog in the background; chosen by mount/), a minimum
// level, and a rate limit for refused requests so a tool probing names in a
// loop cannot flood the log.
//
// Thread safety: every function may be called from any thread. SetLogSink
// is meant to be called once before the session starts.
#ifndef TABLETFS_FS_LOG_H_
#define TABLETFS_FS_LOG_H_

#include <functional>
#include <string>
#include <string_view>

#include "store/options.h"

namespace tabletfs::fs {

using LogSink = std::function<void(LogLevel, std::string_view)>;

// Replaces the sink (nullptr: stderr) and the minimum level logged.
void SetLogSink(LogSink sink, LogLevel min_level);

bool LogEnabled(LogLevel level);

// One line, always written when `level` is enabled.
void Log(LogLevel level, std::string_view line);

// One line about a refused request; at most kRefusalsPerSecond such lines per
// second are written, a summary of how many were dropped comes with the next
// one written.
inline constexpr int kRefusalsPerSecond = 50;
void LogRefusal(LogLevel level, std::string_view line);

}  // namespace tabletfs::fs

#endif  // TABLETFS_FS_LOG_H_
