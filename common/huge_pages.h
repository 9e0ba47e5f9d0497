// Large buffers faulted in 2 MiB pages. An encoder's output of a tensor of
// 268 MB is 70-270 MB of fresh memory: in 4 KiB pages that is 35-70
// thousand page faults, each a trip into the kernel (and, on this
// project's VM, into the host), taken on the one thread that zero-fills
// the vector. Measured on the 16-core device machine converting 4.3 GB of
// bf16: q8_0 3.2 -> 5.8 GB/s and its system time 1.7 -> 0.9 s when glibc
// advised huge pages for every large allocation. A process cannot set
// glibc's tunable for itself, so the buffers that matter are advised here.
// Where the kernel gives no huge page (THP "never"), this is a no-op.
#ifndef BOLTPACK_COMMON_HUGE_PAGES_H_
#define BOLTPACK_COMMON_HUGE_PAGES_H_

#include <cstddef>
#include <vector>

namespace boltpack {

// Below this a buffer is left to malloc as it is (no whole huge page in it).
inline constexpr size_t kHugePageAdviceMinBytes = size_t{4} << 20;

// MADV_HUGEPAGE over the 2 MiB-aligned pages inside [p, p + n), before they
// are first touched. Advice only: errors are ignored. A no-op under
// AddressSanitizer, whose allocator places buffers itself, and below
// kHugePageAdviceMinBytes.
void AdviseHugePages(const void* p, size_t n);

// v.resize(n), with fresh capacity advised for huge pages before the
// resize zero-fills (and so first touches) it.
template <class T>
void ResizeHuge(std::vector<T>& v, size_t n) {
  if (n > v.capacity() && n * sizeof(T) >= kHugePageAdviceMinBytes) {
    v.reserve(n);
    AdviseHugePages(v.data(), v.capacity() * sizeof(T));
  }
  v.resize(n);
}

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_HUGE_PAGES_H_
