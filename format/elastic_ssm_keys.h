// llama.cpp's Mamba-2 size keys in a slice (spec/elastic.md §5.2 [E-5.2.3]):
// `{arch}.ssm.inner_size` (d_inner, heads x head_dim) and
// `{arch}.ssm.time_step_rank` (heads) hold the size of a product axis
// ("ssm_heads*ssm_ch"), which no single axis' metadata_key can, so they are
// set from the kept shapes of the tensors llama.cpp sizes by them.
#ifndef BOLTPACK_FORMAT_ELASTIC_SSM_KEYS_H_
#define BOLTPACK_FORMAT_ELASTIC_SSM_KEYS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "format/elastic_plan.h"
#include "format/elastic_validate.h"

namespace boltpack::format {

// Rewrites the two keys in `plan->metadata` (integer scalars only, keeping
// their type) from the planned `blk.N.ssm_out.weight` (innermost: d_inner)
// and `blk.N.ssm_a` (all elements: heads). llama.cpp reads both as one
// number for every layer, so a budget whose kept Mamba layers differ is
// refused (InvalidArgument naming the budget and the layers) when either key
// is present. `prefix` is "{arch}.".
absl::Status RewriteSsmKeys(const std::string& prefix, const std::string& budget, SlicePlan* plan);

// The same refusal before a file is written (`convert --elastic`): every
// budget of `manifest` whose kept Mamba layers (parent indices) would keep
// different sizes, where `metadata` holds either key as an integer.
absl::Status CheckSsmBudgets(const ElasticManifest& manifest, const std::vector<ElasticTensorRef>& tensors,
                             const Metadata& metadata);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_ELASTIC_SSM_KEYS_H_
