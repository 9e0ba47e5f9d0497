// A one-line progress bar on stderr, drawn only when stderr is a terminal.
#ifndef BOLTPACK_TOOLS_PROGRESS_H_
#define BOLTPACK_TOOLS_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace boltpack::tools {

class Progress {
 public:
  Progress(std::string label, uint64_t total_bytes);
  ~Progress();
  void Advance(uint64_t bytes);
  void Finish();

 private:
  void Draw(bool final_draw);
  std::string label_;
  uint64_t total_;
  uint64_t done_ = 0;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  std::mutex mu_;
};

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_PROGRESS_H_
