#include "codecs/raw_range.h"

#include "common/str_cat.h"

namespace boltpack {

absl::StatusOr<absl::Span<const uint8_t>> RawBytesInInput(const TensorInfo& info,
                                                          const std::vector<absl::Span<const uint8_t>>& streams,
                                                          const std::vector<uint64_t>& raw_base, size_t k,
                                                          uint64_t begin, uint64_t end) {
  const uint64_t base = k < raw_base.size() ? raw_base[k] : 0;
  const uint64_t held = k < streams.size() ? streams[k].size() : 0;
  if (begin > end || begin < base || end - base > held) {
    const std::string role = k < info.streams.size() ? info.streams[k].role : StrCat("#", k);
    return absl::InvalidArgumentError(StrCat("tensor '", info.name, "': stream \"", role, "\" needs raw bytes ", begin,
                                             "..", end, " but the input holds ", base, "..", base + held));
  }
  return streams[k].subspan(begin - base, end - begin);
}

}  // namespace boltpack
