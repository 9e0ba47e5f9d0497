// Semantic validation of a parsed manifest (spec/container.md §6-§8). The
// protobuf parser only guarantees well-formed wire data; everything else a
// reader relies on is checked here, before any of it is used.
#ifndef BOLTPACK_FORMAT_MANIFEST_VALIDATE_H_
#define BOLTPACK_FORMAT_MANIFEST_VALIDATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "boltpack_proto/boltpack.pb.h"

namespace boltpack::format {

// Checks the shard list alone (names are safe bare file names, shard 0 is
// this file), so a reader knows which siblings it may open.
absl::Status ValidateShards(const v1::Manifest& manifest, const std::string& file,
                            uint64_t file_id);

// `shard_data_end[k]`: the first byte of shard k that streams may not reach
// (the manifest offset for shard 0, the file size for siblings).
absl::Status ValidateManifest(const v1::Manifest& manifest, const std::string& file,
                              const std::vector<uint64_t>& shard_data_end);

// `where` names the value in an error message; it is called only on error.
absl::Status ValidateValue(const v1::Value& value, int depth, absl::FunctionRef<std::string()> where);

// Features this implementation understands.
bool IsKnownFeature(const std::string& feature);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_MANIFEST_VALIDATE_H_
