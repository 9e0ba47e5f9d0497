// Work over items 0..n-1 in two steps: Produce(i) on worker threads, up to
// `window` items ahead, and Consume(i) on the caller's thread strictly in
// order. Convert encodes the next tensors while the caller writes this
// one: the writes, and each encoder's own serial parts (allocating and
// zeroing its output), overlap the other tensors' parallel work.
//
// Memory is bounded by the window: an item is admitted to Produce only
// while fewer than `window` items are produced-or-producing and not yet
// consumed, and while the cost of those items (e.g. their bytes) is at
// most `budget`; an item that alone exceeds the budget still runs, alone.
// An item costs `cost(i)` while Produce runs (its peak: input and scratch)
// and `held(slot)` from then until consumed (what its slot keeps).
// So a caller that holds one buffer per item in flight holds at most
// `window` of them. Results go in slots the caller owns: slot i % window
// belongs to item i from Produce(i) until Consume(i) returns.
//
// The first error (in item order) stops admission; items already running
// finish, and it is returned. window <= 1 runs Produce(i), Consume(i) in
// turn on the caller's thread, with no thread started.
#ifndef BOLTPACK_COMMON_ORDERED_PIPELINE_H_
#define BOLTPACK_COMMON_ORDERED_PIPELINE_H_

#include <cstddef>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"

namespace boltpack {

struct PipelineOptions {
  size_t window = 1;           // items in flight at most (slots)
  uint64_t budget = UINT64_MAX;  // of `cost` summed over the items in flight
  std::function<uint64_t(size_t item)> cost;  // null: 0
  std::function<uint64_t(size_t slot)> held;  // null: the item's `cost`
};

absl::Status RunOrdered(size_t n, const PipelineOptions& options,
                        const std::function<absl::Status(size_t item, size_t slot)>& produce,
                        const std::function<absl::Status(size_t item, size_t slot)>& consume);

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_ORDERED_PIPELINE_H_
