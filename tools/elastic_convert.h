// `convert --elastic FILE`: reads the authoring JSON (io/elastic_json.h),
// checks it against the inputs and the codec each tensor will get (block
// alignment of every budget), and stores tensors in importance order.
#ifndef BOLTPACK_TOOLS_ELASTIC_CONVERT_H_
#define BOLTPACK_TOOLS_ELASTIC_CONVERT_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "boltpack/writer.h"
#include "format/elastic_cut.h"
#include "io/elastic_json.h"
#include "tools/codec_rules.h"
#include "tools/inputs.h"

namespace boltpack::tools {

// `plan[i]` is the rule of input tensor i (nullopt: its source form).
absl::StatusOr<std::unique_ptr<io::ElasticAuthoring>> LoadElastic(const std::string& path, const Inputs& in,
                                                                   const CodecPlan& plan);

// The elastic manifest of an elastic .bolt input, to store in a .bolt
// output unchanged: re-encoding keeps the stored order, so the budgets
// still describe the tensors. Validated (spec/elastic.md §2) against the
// codec each tensor will get, so a budget whose cut would split a block of
// a new codec is refused, naming budget, tensor and block size. nullopt
// when no input is elastic; an error when several are, or when `--elastic`
// (`authoring_given`) would replace one.
absl::StatusOr<std::optional<ElasticManifest>> CarriedElastic(const Inputs& in,
                                                              const CodecPlan& plan,
                                                              bool authoring_given);

// True when any dimension moves.
bool Moves(const format::ElementMaps& maps);

// Adds input tensor `t` (a .bolt tensor or GGUF blocks kept in their stored
// form) permuted by `maps`, by moving stored cells (no re-quantization).
absl::Status AddPermutedStored(Writer& writer, const InputTensor& t, const format::ElementMaps& maps);

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_ELASTIC_CONVERT_H_
