#include "tools/q4_0_import.h"

#include "boltpack/codec_registry.h"
#include "codecs/int4/int4_q4_0.h"
#include "common/escape.h"
#include "common/status_macros.h"
#include "common/str_cat.h"

namespace boltpack::tools {

absl::StatusOr<std::optional<EncodedTensor>> ImportQ4_0AsInt4G128(const InputTensor& t, std::string_view codec_id) {
  if (codec_id != "int4-g128" || t.kind != InputKind::kGguf || t.ggml_type == nullptr ||
      t.ggml_type->id != kGgmlQ4_0Type) {
    return std::optional<EncodedTensor>();
  }
  const std::string where = StrCat(t.file(), ": tensor ", QuoteForDisplay(t.name), ": Q4_0 to int4-g128: ");
  const char* keep = " (Q4_0 is not decoded by this version, so it cannot be re-encoded: give it no int4-g128 rule "
                     "to keep it as ggml-q4_0)";
  const uint64_t row = t.shape.empty() ? 0 : t.shape.back();
  if (row % 128 != 0) {
    return absl::InvalidArgumentError(StrCat(where, "rows of ", row, " values are not whole groups of 128", keep));
  }
  uint64_t mismatch = 0;
  auto streams = Q4_0ToInt4G128(t.bytes, &mismatch);
  if (!streams.ok()) return absl::InvalidArgumentError(StrCat(where, streams.status().message()));
  if (!*streams) {
    return absl::InvalidArgumentError(
        StrCat(where, "the four blocks of group ", mismatch, " (values ", mismatch * 128, "..", mismatch * 128 + 127,
               ") have different scales, which one int4-g128 scale cannot hold", keep));
  }
  const Codec* codec = FindCodec(codec_id);
  if (codec == nullptr) return absl::NotFoundError(StrCat(where, "codec int4-g128 is not registered"));
  // The record the encoder would write for this shape (streams, chunks of
  // whole rows), filled with the repacked bytes.
  BP_ASSIGN_OR_RETURN(std::optional<EncodePlan> plan, codec->PlanEncode(DType::kF32, t.shape, CodecParams{}));
  if (!plan || plan->record.streams.size() != 2 || plan->lengths.size() != 2 ||
      plan->lengths[0] != (*streams)->values.size() || plan->lengths[1] != (*streams)->scales.size()) {
    return absl::InternalError(StrCat(where, "the int4-g128 record does not match the repacked streams"));
  }
  EncodedTensor enc = std::move(plan->record);
  enc.streams[0].bytes = std::move((*streams)->values);
  enc.streams[1].bytes = std::move((*streams)->scales);
  return std::optional<EncodedTensor>(std::move(enc));
}

}  // namespace boltpack::tools
