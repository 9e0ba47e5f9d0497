#include "common/ordered_pipeline.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace boltpack {
namespace {

// The state the workers and the consumer share, guarded by `mu`.
struct Shared {
  std::mutex mu;
  std::condition_variable admit_cv;  // a worker waits for room in the window
  std::condition_variable done_cv;   // the consumer waits for its item
  size_t next = 0;                   // the next item to admit
  size_t consumed = 0;               // items consumed
  uint64_t in_flight_cost = 0;       // of items admitted and not consumed
  bool stop = false;                 // an error, or the consumer is done
  std::vector<char> done;            // per slot: Produce of its item returned
  std::vector<absl::Status> status;  // per slot: what it returned
  std::vector<uint64_t> cost;        // per slot: what its item counts in in_flight_cost
};

}  // namespace

absl::Status RunOrdered(size_t n, const PipelineOptions& options,
                        const std::function<absl::Status(size_t, size_t)>& produce,
                        const std::function<absl::Status(size_t, size_t)>& consume) {
  auto cost = [&](size_t i) -> uint64_t { return options.cost ? options.cost(i) : 0; };
  const size_t window = std::max<size_t>(1, std::min(options.window, n));
  if (window <= 1) {
    for (size_t i = 0; i < n; ++i) {
      absl::Status s = produce(i, 0);
      if (s.ok()) s = consume(i, 0);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  Shared sh;
  sh.done.assign(window, 0);
  sh.status.resize(window);
  sh.cost.assign(window, 0);
  auto admissible = [&] {
    if (sh.next >= n) return true;  // nothing left: the worker leaves
    if (sh.next - sh.consumed >= window) return false;
    // Alone in the window an item always runs, whatever its cost.
    return sh.next == sh.consumed || sh.in_flight_cost + cost(sh.next) <= options.budget;
  };
  auto work = [&] {
    for (;;) {
      size_t item;
      {
        std::unique_lock<std::mutex> lock(sh.mu);
        sh.admit_cv.wait(lock, [&] { return sh.stop || admissible(); });
        if (sh.stop || sh.next >= n) return;
        item = sh.next++;
        sh.cost[item % window] = cost(item);
        sh.in_flight_cost += sh.cost[item % window];
      }
      absl::Status s = produce(item, item % window);
      const uint64_t now_held = options.held ? options.held(item % window) : cost(item);
      std::lock_guard<std::mutex> lock(sh.mu);
      sh.in_flight_cost = sh.in_flight_cost - sh.cost[item % window] + now_held;
      sh.cost[item % window] = now_held;
      sh.admit_cv.notify_all();  // it may hold less now
      sh.status[item % window] = std::move(s);
      sh.done[item % window] = 1;
      sh.done_cv.notify_all();
    }
  };
  // One worker per slot: each produces one item at a time.
  std::vector<std::thread> workers;
  workers.reserve(window);
  for (size_t w = 0; w < window; ++w) workers.emplace_back(work);
  absl::Status result;
  for (size_t i = 0; i < n && result.ok(); ++i) {
    const size_t slot = i % window;
    {
      std::unique_lock<std::mutex> lock(sh.mu);
      sh.done_cv.wait(lock, [&] { return sh.done[slot] != 0; });
      result = std::move(sh.status[slot]);
    }
    if (result.ok()) result = consume(i, slot);
    std::lock_guard<std::mutex> lock(sh.mu);
    sh.done[slot] = 0;
    sh.status[slot] = absl::OkStatus();
    sh.in_flight_cost -= sh.cost[slot];
    sh.cost[slot] = 0;
    ++sh.consumed;
    if (!result.ok()) sh.stop = true;
    sh.admit_cv.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(sh.mu);
    sh.stop = true;
    sh.admit_cv.notify_all();
  }
  for (auto& w : workers) w.join();
  return result;
}

}  // namespace boltpack
