#include "boltpack/codec.h"

#include "common/str_cat.h"

namespace boltpack {

// Codecs whose stored form has no row structure (e.g. one entropy-coded
// blob) keep these defaults; the reader then falls back to a full decode.
absl::Status Codec::DecodeRows(const DecodeInput& /*input*/, uint64_t /*row_begin*/,
                               uint64_t /*row_end*/, OutputType /*out*/,
                               absl::Span<uint8_t> /*dst*/) const {
  return absl::UnimplementedError(
      StrCat("codec '", id(), "' cannot decode a row range"));
}

absl::StatusOr<std::pair<uint64_t, uint64_t>> Codec::RowRangeBytes(
    const TensorInfo& /*info*/, size_t /*stream_index*/, uint64_t /*row_begin*/,
    uint64_t /*row_end*/) const {
  return absl::UnimplementedError(
      StrCat("codec '", id(), "' cannot locate the bytes of a row range"));
}

}  // namespace boltpack
