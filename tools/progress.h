// Progress of a long command on stderr: a one-line bar (bytes or items done
// of the total, rate, time left) when stderr is a terminal, or JSON lines
// a cluster job's log can be followed by (`--progress json`), one object per
// update, at most one a second, and a last one when done:
//   {"cmd":"convert","part":"2/4","unit":"bytes","done":N,"total":N,
//    "rate":R,"eta_s":S,"elapsed_s":S,"tensor":"name","final":false}
// ("part" only for a `--part I/N` run: its bar and lines count that part's
// bytes, so the model's total is the sum over the parts' last lines; "rate"
// in units a second, "eta_s" null until there is a rate). Thread-safe:
// several threads may Advance one Progress.
#ifndef BOLTPACK_TOOLS_PROGRESS_H_
#define BOLTPACK_TOOLS_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace boltpack::tools {

// The process-wide `--progress` choice: auto (a bar when stderr is a
// terminal, else nothing, as before the option), bar (always), json, none.
enum class ProgressMode { kAuto, kBar, kJson, kNone };
absl::StatusOr<ProgressMode> ParseProgressMode(std::string_view text);
// Sets the mode for Progress objects made from now on; returns the one before.
ProgressMode SetProgressMode(ProgressMode mode);
ProgressMode GetProgressMode();
// A `--part I/N` run (1-based I): its label in bars and lines; count 0: none.
void SetProgressPart(uint32_t index, uint32_t count);

class Progress {
 public:
  enum class Unit { kBytes, kItems };
  Progress(std::string label, uint64_t total, Unit unit = Unit::kBytes);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  // `n` more done; `item` (a tensor name) is the one just done, if given.
  void Advance(uint64_t n, std::string_view item = {});
  void Finish();

 private:
  enum class Output { kNone, kBar, kJson };
  void Draw(bool final_draw);
  void DrawBar(bool final_draw, double secs, double rate);
  void DrawJson(bool final_draw, double secs, double rate);
  std::string label_;
  std::string part_;
  uint64_t total_;
  Unit unit_;
  uint64_t done_ = 0;
  std::string item_;
  Output output_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  std::mutex mu_;
};

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_PROGRESS_H_
