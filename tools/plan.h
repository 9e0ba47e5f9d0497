// Pieces of `bolt-pack plan` that live beside the commands they plan.
#ifndef BOLTPACK_TOOLS_PLAN_H_
#define BOLTPACK_TOOLS_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "boltpack/elastic.h"
#include "boltpack/reader.h"
#include "tools/codec_rules.h"
#include "tools/commands.h"

namespace boltpack::tools {

// Writes to `output` the skeleton (WriterOptions::skeleton) of what
// `bolt-pack slice r --budget B -o OUT.bolt` writes: the same manifest and
// size, streams as holes; a tensor cut by decoding is estimated into
// `estimate`. No stream of `r` is read.
absl::Status SliceSkeleton(const Reader& r, const ElasticBudget& budget, const std::string& output,
                           PlanEstimate* estimate);

// "24GiB", "500M", "1000": a whole number of bytes with an optional
// unit, K/M/G/T (powers of 1000) or KiB/MiB/GiB/TiB (powers of 1024), a
// trailing "B" allowed ("24GB"); errors say why.
absl::StatusOr<uint64_t> ParseByteCount(std::string_view text);

// A recipe's tiers: the rules as given, then each choice of rules whose
// codec has a fallback (iq2_xxs -> q8_0, nvfp4 -> q8_0) swapped for it, so
// that "experts iq2_xxs or q8_0" are two tiers. At most 4 codecs are
// combined (16 tiers); past that each is swapped alone, and all together.
struct RecipeTier {
  std::string name;                                          // "recipe", "iq2_xxs->q8_0", ...
  std::vector<std::pair<std::string, std::string>> swapped;  // codec -> its fallback
  std::vector<CodecRule> rules;
};
std::vector<RecipeTier> RecipeTiers(const std::vector<CodecRule>& rules);

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_PLAN_H_
