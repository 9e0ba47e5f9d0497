// The explicit limits of format 1.0 (spec/container.md §8). A reader rejects
// a file past any of them with kResourceExhausted naming the limit; a writer
// refuses to produce such a file.
#ifndef BOLTPACK_COMMON_LIMITS_H_
#define BOLTPACK_COMMON_LIMITS_H_

#include <cstdint>

namespace boltpack::format {

inline constexpr uint64_t kMaxManifestBytes = 256ull << 20;   // 256 MiB
inline constexpr uint64_t kMaxTensors = 1'000'000;
inline constexpr uint64_t kMaxMetadataEntries = 1'000'000;
inline constexpr uint64_t kMaxNameBytes = 4096;               // tensor names, metadata keys
inline constexpr uint64_t kMaxDims = 8;
inline constexpr uint64_t kMaxElements = 1ull << 56;          // per tensor
inline constexpr uint64_t kMaxStreamsPerTensor = 64;
inline constexpr uint64_t kMaxChunksPerStream = 1ull << 24;
inline constexpr uint64_t kMaxLinePrefixes = 64;               // Stream.prefix_bytes (1.2)
inline constexpr uint64_t kMaxCodecParams = 64;
inline constexpr uint64_t kMaxFeatures = 64;
inline constexpr uint64_t kMaxFeatureBytes = 64;
inline constexpr uint64_t kMaxShards = 65536;
inline constexpr uint64_t kMaxArrayDepth = 8;                 // nested metadata arrays
inline constexpr uint64_t kMaxRawStreamBytes = 1ull << 48;    // decompressed stream
inline constexpr uint64_t kMinAlignment = 64;
inline constexpr uint64_t kMaxAlignment = 1ull << 30;
inline constexpr uint64_t kDefaultAlignment = 4096;

// Lower limits this reader imposes (spec §9 allows them, reported the same
// way): not format limits, so a writer may exceed them, but no real model
// comes near. Each bounds what parsing builds in memory before any record
// is validated (a chunk becomes a ~100-byte message; a metadata array
// element costs about its bytes in the packed MetaValue: 1 to 8 for a
// number, its bytes and an 8-byte end for a string or a nested array),
// so a small file cannot ask for gigabytes.
// Metadata array elements in one file, all arrays together (GGUF and .bolt
// metadata alike); the largest tokenizers hold about 1M (262K tokens with
// their scores and types, or 200K tokens and 450K merges).
inline constexpr uint64_t kMaxMetadataArrayElements = 1ull << 22;
// Chunks in one manifest, all streams together: 4 TiB of 1 MiB chunks.
inline constexpr uint64_t kMaxManifestChunks = 1ull << 22;

}  // namespace boltpack::format

#endif  // BOLTPACK_COMMON_LIMITS_H_
