// Part shards (format 1.3, spec/container.md §8.5): a sibling that is a
// complete bolt-pack file of its own, written by `convert --part I/N`, whose
// data section ends where its own manifest begins. A merged model's shard 0
// names the parts as siblings with Shard.data_end set, so that the parts'
// tensor bytes are used where they lie and each part still verifies alone.
#ifndef BOLTPACK_FORMAT_PART_SHARD_H_
#define BOLTPACK_FORMAT_PART_SHARD_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack_proto/boltpack.pb.h"
#include "format/layout.h"

namespace boltpack::format {

// The metadata keys of a part file (spec/container.md §8.5, [C-8.5.6]).
// `bolt-pack merge` reads them and leaves them out of the merged model.
inline constexpr const char* kPartPrefix = "boltpack.part.";
inline constexpr const char* kPartIndexKey = "boltpack.part.index";      // UINT32, 1..count
inline constexpr const char* kPartCountKey = "boltpack.part.count";      // UINT32
inline constexpr const char* kPartPlanKey = "boltpack.part.plan";        // UINT64: the split's identity
inline constexpr const char* kPartTensorsKey = "boltpack.part.tensors";  // UINT64: tensors of all parts
inline constexpr const char* kPartOrderKey = "boltpack.part.order";      // UINT64 array: places in the model
inline constexpr const char* kPartElasticKey = "boltpack.part.elastic";  // UINT8 array: an ElasticManifest

// Checks that `bytes` (the sibling's whole file, whose `header` passed
// ParseHeader and matched the entry's file_id and size) is the part the
// entry names: its footer is valid and belongs to this write, its manifest
// starts at `entry.data_end()` and ends at the footer, and the manifest's
// checksum matches. Returns the end of the part's data section.
absl::StatusOr<uint64_t> CheckPartShard(absl::Span<const uint8_t> bytes, const Header& header,
                                        const v1::Shard& entry, const std::string& path);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_PART_SHARD_H_
