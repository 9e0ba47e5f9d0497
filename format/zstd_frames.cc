#include "format/zstd_frames.h"

#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_decompressBound, ZSTD_findDecompressedSize
#include <zstd.h>

#include "common/str_cat.h"

namespace boltpack::format {

absl::Status CheckZstdFrames(absl::Span<const uint8_t> stored, uint64_t raw_length, std::string_view where) {
  const unsigned long long bound = ZSTD_decompressBound(stored.data(), stored.size());
  if (bound == ZSTD_CONTENTSIZE_ERROR) return absl::DataLossError(StrCat(where, ": zstd: not valid zstd frames"));
  // Every frame's declared content size summed, when each declares one.
  const unsigned long long declared = ZSTD_findDecompressedSize(stored.data(), stored.size());
  const bool exact = declared == bound;
  if (raw_length > bound) {
    // [C-7.3.2]
    return absl::DataLossError(StrCat(where, ": zstd data holds ", exact ? "" : "at most ", bound,
                                      " bytes, the manifest says ", raw_length));
  }
  if (exact && raw_length != declared) {
    // [C-7.3.2]
    return absl::DataLossError(
        StrCat(where, ": zstd: frames declare ", declared, " bytes, the manifest says ", raw_length));
  }
  return absl::OkStatus();
}

}  // namespace boltpack::format
