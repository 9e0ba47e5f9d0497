#include "common/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

#include "common/sanitizers.h"

namespace boltpack {

void AdviseHugePages(const void* p, size_t n) {
  if (kUnderAddressSanitizer || p == nullptr || n < kHugePageAdviceMinBytes) return;
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t last = (begin + n) & ~(kHuge - 1);
  if (last <= first) return;
  (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

}  // namespace boltpack
