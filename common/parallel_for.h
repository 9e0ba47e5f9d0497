// Runs fn(begin, end) over [0, n) split into contiguous ranges on up to
// `threads` threads; returns the first error in range order.
#ifndef BOLTPACK_COMMON_PARALLEL_FOR_H_
#define BOLTPACK_COMMON_PARALLEL_FOR_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"

namespace boltpack {

// `threads` <= 0 means all hardware threads. `min_per_task` keeps tiny
// ranges on one thread, where starting threads would cost more than it saves.
absl::Status ParallelFor(uint64_t n, int threads, uint64_t min_per_task,
                         const std::function<absl::Status(uint64_t, uint64_t)>& fn);

int HardwareThreads();

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_PARALLEL_FOR_H_
