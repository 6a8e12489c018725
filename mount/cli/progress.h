// A one-line progress bar on stderr for long tabletctl commands (import,
// export, compact), drawn only when stderr is a terminal so that pipes and
// logs stay clean.
//
// Thread safety: one thread at a time.
#ifndef TABLETFS_MOUNT_CLI_PROGRESS_H_
#define TABLETFS_MOUNT_CLI_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace tabletfs::cli {

// True when `err` is std::cerr and file descriptor 2 is a terminal. Tests
// pass string streams and so never see a bar.
bool ProgressWanted(const std::ostream& err);

class ProgressBar {
 public:
  // `total` 0: unknown (no bar, only the counts). Draws nothing unless
  // `enabled`.
  ProgressBar(std::ostream& err, bool enabled, std::string label,
              uint64_t total);
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar() { Finish(); }

  // Redraws at most ten times a second. `detail` follows the bar
  // ("1234 rows").
  void Update(uint64_t done, std::string_view detail = {});
  // Erases the line. Idempotent.
  void Finish();

 private:
  void Draw(uint64_t done, std::string_view detail);

  std::ostream& err_;
  bool enabled_;
  bool drawn_ = false;
  std::string label_;
  uint64_t total_;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace tabletfs::cli

#endif  // TABLETFS_MOUNT_CLI_PROGRESS_H_
