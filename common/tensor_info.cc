#include "boltpack/tensor_info.h"

#include <cstdint>
#include <limits>

namespace boltpack {
namespace {

constexpr uint64_t kSaturated = std::numeric_limits<uint64_t>::max();

// Product of shape[first:], saturating at UINT64_MAX. The reader bounds
// products below 2^56, but these accessors are also used on records that have
// not been validated yet (and by ValidateRecord itself), where a wrapped
// product would look like a small, plausible size. A zero dimension wins over
// overflow: the true product is then 0 whatever the other dimensions are.
uint64_t SaturatingProduct(const std::vector<uint64_t>& shape, size_t first) {
  for (size_t i = first; i < shape.size(); ++i) {
    if (shape[i] == 0) return 0;
  }
  uint64_t n = 1;
  for (size_t i = first; i < shape.size(); ++i) {
    if (__builtin_mul_overflow(n, shape[i], &n)) return kSaturated;
  }
  return n;
}

}  // namespace

uint64_t TensorInfo::element_count() const { return SaturatingProduct(shape, 0); }

uint64_t TensorInfo::row_count() const { return shape.empty() ? 1 : shape[0]; }

uint64_t TensorInfo::row_elements() const { return SaturatingProduct(shape, 1); }

uint64_t TensorInfo::stored_bytes() const {
  uint64_t total = 0;
  for (const auto& s : streams) {
    if (__builtin_add_overflow(total, s.length, &total)) return kSaturated;
  }
  return total;
}

const StreamInfo* TensorInfo::FindStream(std::string_view role) const {
  for (const auto& s : streams) {
    if (s.role == role) return &s;
  }
  return nullptr;
}

}  // namespace boltpack
