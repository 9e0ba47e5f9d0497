// ReadJsonObjectFile: a small JSON file read whole (bounded) and parsed, for
// the side files of a checkpoint folder (config.json, tokenizer files).
#include "common/mapped_file.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/json.h"

namespace boltpack::io {

absl::StatusOr<JsonValue> ReadJsonObjectFile(const std::string& path, const JsonLimits& limits) {
  BP_ASSIGN_OR_RETURN(std::string text, ReadRegularFile(path, limits.max_bytes));
  absl::StatusOr<JsonValue> v = ParseJson(text, limits);
  if (!v.ok()) return absl::Status(v.status().code(), StrCat(path, ": ", v.status().message()));
  if (!v->is_object()) return absl::InvalidArgumentError(StrCat(path, ": not a JSON object"));
  return v;
}

}  // namespace boltpack::io
