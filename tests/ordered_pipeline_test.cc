// common/ordered_pipeline.h: consumed in order, never more than the window
// (or the budget) in flight, the first error in item order returned.
#include "common/ordered_pipeline.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace boltpack {
namespace {

// Counts the items produced-or-producing and not yet consumed.
struct Tracker {
  std::mutex mu;
  int in_flight = 0;
  int max_in_flight = 0;
  uint64_t cost = 0;
  uint64_t max_cost = 0;
  void Enter(uint64_t c) {
    std::lock_guard<std::mutex> lock(mu);
    ++in_flight;
    cost += c;
    max_in_flight = std::max(max_in_flight, in_flight);
    max_cost = std::max(max_cost, cost);
  }
  void Leave(uint64_t c) {
    std::lock_guard<std::mutex> lock(mu);
    --in_flight;
    cost -= c;
  }
};

TEST(OrderedPipeline, ConsumesInOrderWithinTheWindow) {
  for (size_t window : {1, 2, 3, 8}) {
    Tracker tr;
    std::vector<int> slots(window, -1);
    std::vector<size_t> order;
    PipelineOptions options;
    options.window = window;
    absl::Status s = RunOrdered(
        50, options,
        [&](size_t i, size_t slot) {
          tr.Enter(0);
          EXPECT_EQ(slot, window <= 1 ? 0 : i % window);
          EXPECT_EQ(slots[slot], -1) << "slot " << slot << " still holds an item";
          // Later items finish first now and then: the order is the consumer's.
          std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 500));
          slots[slot] = static_cast<int>(i);
          return absl::OkStatus();
        },
        [&](size_t i, size_t slot) {
          EXPECT_EQ(slots[slot], static_cast<int>(i));
          slots[slot] = -1;
          order.push_back(i);
          tr.Leave(0);
          return absl::OkStatus();
        });
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(order.size(), 50u);
    for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i);
    EXPECT_LE(tr.max_in_flight, static_cast<int>(window));
    if (window > 1) {
      EXPECT_GT(tr.max_in_flight, 1) << "window " << window << " never overlapped";
    }
  }
}

TEST(OrderedPipeline, CostStaysWithinTheBudgetUnlessAlone) {
  Tracker tr;
  std::vector<uint64_t> cost = {5, 5, 5, 30, 5, 5, 1, 1, 1, 1, 1, 1, 9, 2};
  PipelineOptions options;
  options.window = 6;
  options.budget = 10;
  options.cost = [&](size_t i) { return cost[i]; };
  options.held = [](size_t) { return uint64_t{0}; };  // slots hold nothing once produced
  std::vector<uint64_t> held_by(options.window);
  absl::Status s = RunOrdered(
      cost.size(), options,
      [&](size_t i, size_t slot) {
        tr.Enter(cost[i]);
        {
          std::lock_guard<std::mutex> lock(tr.mu);
          EXPECT_TRUE(tr.cost <= options.budget || tr.in_flight == 1) << "item " << i << ": over the budget, not alone";
        }
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        tr.Leave(cost[i]);
        held_by[slot] = i;
        return absl::OkStatus();
      },
      [&](size_t i, size_t slot) {
        EXPECT_EQ(held_by[slot], i);
        return absl::OkStatus();
      });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_GT(tr.max_in_flight, 1);
}

TEST(OrderedPipeline, FirstErrorInItemOrderStopsIt) {
  for (size_t window : {1, 4}) {
    std::atomic<size_t> produced{0};
    std::vector<size_t> consumed;
    PipelineOptions options;
    options.window = window;
    absl::Status s = RunOrdered(
        1000, options,
        [&](size_t i, size_t) {
          ++produced;
          if (i == 7) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // 8 fails first in time
          if (i == 7) return absl::DataLossError("item 7");
          if (i == 8) return absl::InternalError("item 8");
          return absl::OkStatus();
        },
        [&](size_t i, size_t) {
          consumed.push_back(i);
          return absl::OkStatus();
        });
    EXPECT_EQ(s, absl::DataLossError("item 7"));
    EXPECT_EQ(consumed.size(), 7u);
    EXPECT_LE(produced.load(), 7 + window) << "admission went on after the error";
  }
  // A consumer's error stops it too.
  size_t last = 0;
  PipelineOptions options;
  options.window = 3;
  absl::Status s = RunOrdered(
      100, options, [](size_t, size_t) { return absl::OkStatus(); },
      [&](size_t i, size_t) {
        last = i;
        return i == 4 ? absl::InternalError("write") : absl::OkStatus();
      });
  EXPECT_EQ(s, absl::InternalError("write"));
  EXPECT_EQ(last, 4u);
}

}  // namespace
}  // namespace boltpack
