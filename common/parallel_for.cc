#include "common/parallel_for.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace boltpack {

int HardwareThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

absl::Status ParallelFor(uint64_t n, int threads, uint64_t min_per_task,
                         const std::function<absl::Status(uint64_t, uint64_t)>& fn) {
  if (n == 0) return absl::OkStatus();
  if (threads <= 0) threads = HardwareThreads();
  if (min_per_task == 0) min_per_task = 1;
  uint64_t tasks = std::min<uint64_t>(static_cast<uint64_t>(threads),
                                      std::max<uint64_t>(1, n / min_per_task));
  if (tasks <= 1) return fn(0, n);
  std::vector<absl::Status> results(tasks);
  std::vector<std::thread> workers;
  workers.reserve(tasks - 1);
  auto range = [&](uint64_t t) {
    uint64_t begin = n * t / tasks;
    uint64_t end = n * (t + 1) / tasks;
    results[t] = fn(begin, end);
  };
  for (uint64_t t = 1; t < tasks; ++t) workers.emplace_back(range, t);
  range(0);
  for (auto& w : workers) w.join();
  for (auto& r : results) {
    if (!r.ok()) return r;
  }
  return absl::OkStatus();
}

}  // namespace boltpack
