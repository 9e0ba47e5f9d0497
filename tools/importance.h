// The importance weights (convert --imatrix) of each tensor a conversion
// re-encodes, looked up once before anything is written. A llama.cpp
// imatrix names GGUF tensors (blk.0.attn_q.weight, what llama-imatrix
// writes from a GGUF); for a Hugging Face folder input, whose tensors carry
// their GGUF names, an entry is also found under the tensor's HF name
// (model.layers.0.self_attn.q_proj.weight, through the architecture's
// table), and a stacked *_exps tensor takes its stacked entry or one entry
// per expert (model.layers.0.mlp.experts.N.up_proj.weight), joined in
// expert order.
#ifndef BOLTPACK_TOOLS_IMPORTANCE_H_
#define BOLTPACK_TOOLS_IMPORTANCE_H_

#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "io/imatrix.h"
#include "tools/codec_rules.h"
#include "tools/inputs.h"

namespace boltpack::tools {

// Whether codec `codec_id` weights its encode by importance (iq2_xxs's
// block search, bf16-spec's Wanda scores) for a tensor of `rank`
// dimensions: such a tensor without an entry is an error when an imatrix
// is given, rather than a silent unweighted encode.
bool UsesImportance(std::string_view codec_id, size_t rank);

class Importance {
 public:
  // The weights of every tensor of `in` that `plan` gives a rule; nothing
  // without an imatrix. Errors: an entry that does not fit its tensor, an
  // expert missing from a per-expert set, and a tensor whose codec uses
  // importance that has no entry under any of its names (naming them).
  static absl::StatusOr<Importance> Resolve(const io::Imatrix* imatrix, const Inputs& in, const CodecPlan& plan);

  // The weights of `t`, one of the Inputs' tensors (empty: none); those of
  // a stack of per-expert entries are joined into `scratch` (here, not up
  // front: a model's joined stacks would double the imatrix's memory).
  absl::Span<const float> For(const InputTensor& t, std::vector<float>* scratch) const;

 private:
  const InputTensor* first_ = nullptr;          // in.tensors().data()
  std::vector<absl::Span<const float>> spans_;  // per input tensor, into the imatrix
  // By input tensor: the entries of its experts, in expert order.
  absl::flat_hash_map<size_t, std::vector<absl::Span<const float>>> experts_;
};

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_IMPORTANCE_H_
