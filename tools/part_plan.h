// `convert --part I/N`: which input tensors the I-th of N parts of a
// convert spread over machines encodes. Every part computes the same split
// from the same input and options on its own (no coordinator): tensors are
// balanced by an estimate of their encode cost (input bytes times a factor
// per codec: iq2_xxs costs about 100 times q8_0), assigned largest first to
// the least loaded part (LPT), ties broken by input order. Each part records
// the plan's identity and its tensors' places in the one-process order
// (format/part_shard.h keys), which `bolt-pack merge` checks.
#ifndef BOLTPACK_TOOLS_PART_PLAN_H_
#define BOLTPACK_TOOLS_PART_PLAN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "boltpack/elastic.h"
#include "boltpack/writer.h"
#include "tools/codec_rules.h"
#include "tools/inputs.h"

namespace boltpack::tools {

// "I/N": 1 <= I <= N <= kMaxParts.
struct PartSpec {
  uint32_t index = 0;  // 1-based
  uint32_t count = 0;
};
inline constexpr uint32_t kMaxParts = 4096;
absl::StatusOr<PartSpec> ParsePartSpec(std::string_view text);

// Relative cost of encoding one input byte to `codec_id` (q8_0 is 100);
// `reencoded` false: the tensor's bytes pass through (a copy).
uint64_t EncodeCostPerByte(std::string_view codec_id, bool reencoded);

struct PartPlan {
  PartSpec spec;
  std::vector<uint32_t> part_of;  // per input tensor: its part, 0-based
  std::vector<uint64_t> load;     // per part: the estimated cost
  uint64_t plan_id = 0;           // identifies input, codec plan and split
  bool Keeps(size_t tensor) const { return part_of[tensor] + 1 == spec.index; }
};
PartPlan PlanParts(const Inputs& in, const CodecPlan& plan, PartSpec spec);

// The part's keys (format/part_shard.h): its index, the count, the plan's
// identity, the total tensor count, its tensors' places in input order
// and, when the convert has one, the elastic manifest (which the part's
// own manifest cannot hold: its bindings match tensors of other parts).
absl::Status AddPartMetadata(Writer& writer, const PartPlan& plan, const ElasticManifest* elastic);

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_PART_PLAN_H_
