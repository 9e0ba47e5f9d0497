// `--recipe FILE`: ordered codec rules with fallbacks, in protobuf text
// format (spec/recipe.proto).
#ifndef BOLTPACK_TOOLS_RECIPE_H_
#define BOLTPACK_TOOLS_RECIPE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/codec_rules.h"

namespace boltpack::tools {

// Reads and checks a recipe: every codec is registered (or "keep"), every
// pattern is non-empty. Errors name the file and the rule.
absl::StatusOr<std::vector<CodecRule>> LoadRecipe(const std::string& path);

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_RECIPE_H_
