#include "tools/progress.h"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>

#include "common/str_cat.h"
#include "io/json.h"

namespace boltpack::tools {
namespace {

std::atomic<ProgressMode> g_mode{ProgressMode::kAuto};
std::atomic<uint32_t> g_part_index{0};
std::atomic<uint32_t> g_part_count{0};

// "1.23 GB", "456.7 MB", "12 B": decimal units, as the rate.
std::string Amount(double n, bool bytes) {
  const char* units[] = {"", "k", "M", "G", "T", "P"};
  int u = 0;
  while (n >= 1000 && u < 5) {
    n /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s%s" : "%.2f %s%s", n, units[u], bytes ? "B" : "");
  return buf;
}

std::string Clock(double secs) {
  if (!std::isfinite(secs) || secs < 0) return "--:--";
  const auto s = static_cast<uint64_t>(secs + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%llu:%02llu:%02llu", static_cast<unsigned long long>(s / 3600),
                  static_cast<unsigned long long>(s / 60 % 60), static_cast<unsigned long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%llu:%02llu", static_cast<unsigned long long>(s / 60),
                  static_cast<unsigned long long>(s % 60));
  }
  return buf;
}

std::string Number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", x);
  return buf;
}

}  // namespace

absl::StatusOr<ProgressMode> ParseProgressMode(std::string_view text) {
  if (text == "auto") return ProgressMode::kAuto;
  if (text == "bar") return ProgressMode::kBar;
  if (text == "json") return ProgressMode::kJson;
  if (text == "none") return ProgressMode::kNone;
  return absl::InvalidArgumentError(StrCat("--progress: \"", text, "\" is not auto, bar, json or none"));
}

ProgressMode SetProgressMode(ProgressMode mode) { return g_mode.exchange(mode); }
ProgressMode GetProgressMode() { return g_mode.load(); }

void SetProgressPart(uint32_t index, uint32_t count) {
  g_part_index = index;
  g_part_count = count;
}

Progress::Progress(std::string label, uint64_t total, Unit unit)
    : label_(std::move(label)),
      total_(total),
      unit_(unit),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  switch (GetProgressMode()) {
    case ProgressMode::kAuto: output_ = ::isatty(STDERR_FILENO) == 1 ? Output::kBar : Output::kNone; break;
    case ProgressMode::kBar: output_ = Output::kBar; break;
    case ProgressMode::kJson: output_ = Output::kJson; break;
    case ProgressMode::kNone: output_ = Output::kNone; break;
  }
  if (g_part_count.load() > 0) part_ = StrCat(g_part_index.load(), "/", g_part_count.load());
}

Progress::~Progress() { Finish(); }

void Progress::Advance(uint64_t n, std::string_view item) {
  std::lock_guard<std::mutex> lock(mu_);
  done_ += n;
  // Without an output there is nothing to draw and no clock to read (1M
  // tensors copied: the clock was 2% of the copy).
  if (output_ == Output::kNone) return;
  if (!item.empty()) item_.assign(item);
  auto now = std::chrono::steady_clock::now();
  // A terminal redraws at most ten times a second, a log gets a line a
  // second: both are slower than the work.
  const auto every = output_ == Output::kBar ? std::chrono::milliseconds(100) : std::chrono::milliseconds(1000);
  if (now - last_draw_ >= every) {
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
  if (output_ == Output::kNone) return;
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double rate = secs > 0 ? static_cast<double>(done_) / secs : 0;
  if (output_ == Output::kBar) {
    DrawBar(final_draw, secs, rate);
  } else {
    DrawJson(final_draw, secs, rate);
  }
}

void Progress::DrawBar(bool final_draw, double secs, double rate) {
  constexpr int kWidth = 30;
  double frac = total_ == 0 ? 1.0 : static_cast<double>(done_) / static_cast<double>(total_);
  if (frac > 1) frac = 1;
  int filled = static_cast<int>(frac * kWidth);
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
  bar[kWidth] = '\0';
  const bool bytes = unit_ == Unit::kBytes;
  const double left = done_ >= total_ ? 0 : static_cast<double>(total_ - done_);
  const std::string when = final_draw ? StrCat("in ", Clock(secs)) : StrCat("ETA ", rate > 0 ? Clock(left / rate) : "--:--");
  std::string head = part_.empty() ? label_ : StrCat(label_, " part ", part_);
  std::fprintf(stderr, "\r%s [%s] %3d%%  %s/%s  %s/s  %s\x1b[K", head.c_str(), bar, static_cast<int>(frac * 100),
               Amount(static_cast<double>(done_), bytes).c_str(), Amount(static_cast<double>(total_), bytes).c_str(),
               Amount(rate, bytes).c_str(), when.c_str());
  if (final_draw) std::fputc('\n', stderr);
  std::fflush(stderr);
}

void Progress::DrawJson(bool final_draw, double secs, double rate) {
  const double left = done_ >= total_ ? 0 : static_cast<double>(total_ - done_);
  std::string eta = final_draw ? "0" : rate > 0 ? Number(left / rate) : "null";
  std::string line = StrCat("{\"cmd\":", io::JsonQuote(label_));
  if (!part_.empty()) line += StrCat(",\"part\":", io::JsonQuote(part_));
  line += StrCat(",\"unit\":\"", unit_ == Unit::kBytes ? "bytes" : "items", "\",\"done\":", done_, ",\"total\":",
                 total_, ",\"rate\":", Number(rate), ",\"eta_s\":", eta, ",\"elapsed_s\":", Number(secs));
  if (!item_.empty()) line += StrCat(",\"tensor\":", io::JsonQuote(item_));
  line += StrCat(",\"final\":", final_draw ? "true" : "false", "}\n");
  std::fputs(line.c_str(), stderr);  // one write a line: lines of threads never mix
  std::fflush(stderr);
}

}  // namespace boltpack::tools
