#include "tools/progress.h"

#include <unistd.h>

#include <cstdio>

namespace boltpack::tools {

Progress::Progress(std::string label, uint64_t total_bytes)
    : label_(std::move(label)),
      total_(total_bytes),
      enabled_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { Finish(); }

void Progress::Advance(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  done_ += bytes;
  // Without a terminal there is nothing to draw and no clock to read (1M
  // tensors copied: the clock was 2% of the copy).
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  // Redraw at most ten times a second: a terminal is slower than the work.
  if (now - last_draw_ >= std::chrono::milliseconds(100)) {
    last_draw_ = now;
    Draw(false);
  }
}

void Progress::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  Draw(true);
}

void Progress::Draw(bool final_draw) {
  if (!enabled_) return;
  constexpr int kWidth = 30;
  double frac = total_ == 0 ? 1.0 : static_cast<double>(done_) / static_cast<double>(total_);
  if (frac > 1) frac = 1;
  int filled = static_cast<int>(frac * kWidth);
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
  bar[kWidth] = '\0';
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double mbps = secs > 0 ? static_cast<double>(done_) / 1e6 / secs : 0;
  std::fprintf(stderr, "\r%s [%s] %3d%%  %.1f MB/s", label_.c_str(), bar, static_cast<int>(frac * 100), mbps);
  if (final_draw) std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace boltpack::tools
