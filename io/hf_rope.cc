// Llama 3's rope scaling: llama.cpp's converter (LlamaModel's
// generate_extra_tensors) turns it into a rope_freqs tensor, one factor per
// rotary pair, by which llama.cpp divides each pair's frequency.
#include <cmath>

#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/hf_arch.h"

namespace boltpack::io {
namespace {

// A number of the rope_scaling object (else of config.json), or `fallback`.
double RopeNumber(const JsonValue& config, const JsonValue& rs, std::string_view field, double fallback) {
  for (const JsonValue* where : {&rs, &config}) {
    const JsonValue* v = where->Find(field);
    if (v != nullptr && v->is_number()) return v->double_value();
  }
  return fallback;
}

}  // namespace

absl::StatusOr<std::vector<float>> Llama3RopeFactors(const JsonValue& config, const std::string& path) {
  const JsonValue* rs = config.Find("rope_scaling");
  const JsonValue* type = rs != nullptr && rs->is_object() ? rs->Find("rope_type") : nullptr;
  if (type == nullptr || !type->is_string() || type->string_value() != "llama3") return std::vector<float>();
  BP_ASSIGN_OR_RETURN(std::optional<uint64_t> dim, ConfigUint(config, "head_dim", path));
  if (!dim) {
    BP_ASSIGN_OR_RETURN(std::optional<uint64_t> hidden, ConfigUint(config, "hidden_size", path));
    BP_ASSIGN_OR_RETURN(std::optional<uint64_t> heads, ConfigUint(config, "num_attention_heads", path));
    if (hidden && heads && *heads != 0) dim = *hidden / *heads;
  }
  if (!dim || *dim < 2 || *dim > 65536) {
    return absl::InvalidArgumentError(StrCat(path, ": llama3 rope scaling needs a head width (head_dim, or ",
                                             "hidden_size / num_attention_heads) in 2..65536"));
  }
  // The converter's arithmetic is torch float32 on each value: done in
  // float here too, so the factors match it to the rounding of powf.
  const float base = static_cast<float>(RopeNumber(config, *rs, "rope_theta", 10000.0));
  const float factor = static_cast<float>(RopeNumber(config, *rs, "factor", 8.0));
  const float low = static_cast<float>(RopeNumber(config, *rs, "low_freq_factor", 1.0));
  const float high = static_cast<float>(RopeNumber(config, *rs, "high_freq_factor", 4.0));
  const float old_context = static_cast<float>(RopeNumber(config, *rs, "original_max_position_embeddings", 8192));
  if (!(factor > 0) || !(high > low) || !(low > 0) || !(old_context > 0) || !(base > 0)) {
    return absl::InvalidArgumentError(StrCat(path, ": llama3 rope_scaling needs factor > 0 and ",
                                             "high_freq_factor > low_freq_factor > 0"));
  }
  const float low_wavelen = old_context / low, high_wavelen = old_context / high;
  std::vector<float> factors;
  for (uint64_t i = 0; i < *dim; i += 2) {
    const float freq = 1.0f / std::pow(base, static_cast<float>(i) / static_cast<float>(*dim));
    const float wavelen = static_cast<float>(2 * M_PI) / freq;
    if (wavelen < high_wavelen) {
      factors.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      factors.push_back(factor);
    } else {
      const float smooth = (old_context / wavelen - low) / (high - low);
      factors.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
    }
  }
  return factors;
}

}  // namespace boltpack::io
