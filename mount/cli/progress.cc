#include "mount/cli/progress.h"

#include <unistd.h>

#include <iostream>

namespace tabletfs::cli {

bool ProgressWanted(const std::ostream& err) {
  return &err == &std::cerr && isatty(STDERR_FILENO) == 1;
}

ProgressBar::ProgressBar(std::ostream& err, bool enabled, std::string label,
                         uint64_t total)
    : err_(err), enabled_(enabled), label_(std::move(label)), total_(total) {}

void ProgressBar::Update(uint64_t done, std::string_view detail) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  Draw(done, detail);
}

void ProgressBar::Draw(uint64_t done, std::string_view detail) {
  std::string line = "\r" + label_ + " ";
  if (total_ > 0) {
    constexpr int kWidth = 30;
    const uint64_t clipped = done < total_ ? done : total_;
    const int filled = static_cast<int>(clipped * kWidth / total_);
    line += '[';
    line.append(filled, '#');
    line.append(kWidth - filled, ' ');
    line += "] ";
    line += std::to_string(clipped * 100 / total_);
    line += "% ";
  }
  line += detail;
  line += "\x1b[K";  // clear to the end of the line
  err_ << line << std::flush;
  drawn_ = true;
}

void ProgressBar::Finish() {
  if (!enabled_ || !drawn_) return;
  err_ << "\r\x1b[K" << std::flush;
  drawn_ = false;
}

}  // namespace tabletfs::cli
