// The explicit limits of the format (spec/container.md, limits table, rule
// ids C-9.1 to C-9.17; the view limits C-9.16, C-9.17 are beside their
// checks in format/manifest_scan.cc and manifest_validate.cc). A reader
// rejects a file past any of them with kResourceExhausted naming the limit
// [C-9.1]; a writer refuses to produce such a file. Alignment and the length
// of feature names are validity rules, not limits [C-9.18].
#ifndef BOLTPACK_COMMON_LIMITS_H_
#define BOLTPACK_COMMON_LIMITS_H_

#include <cstdint>

namespace boltpack::format {

inline constexpr uint64_t kMaxManifestBytes = 256ull << 20;  // 256 MiB [C-9.2]
inline constexpr uint64_t kMaxTensors = 1'000'000;           // [C-9.3]
inline constexpr uint64_t kMaxMetadataEntries = 1'000'000;   // [C-9.4]
inline constexpr uint64_t kMaxNameBytes = 4096;              // tensor names, metadata keys [C-9.5]
inline constexpr uint64_t kMaxDims = 8;                      // [C-9.6]
inline constexpr uint64_t kMaxElements = 1ull << 56;         // per tensor [C-9.7]
inline constexpr uint64_t kMaxStreamsPerTensor = 64;         // [C-9.8]
inline constexpr uint64_t kMaxChunksPerStream = 1ull << 24;  // [C-9.9]
inline constexpr uint64_t kMaxLinePrefixes = 64;             // Stream.prefix_bytes (1.2) [C-9.10]
inline constexpr uint64_t kMaxCodecParams = 64;              // [C-9.11]
inline constexpr uint64_t kMaxFeatures = 64;                 // [C-9.12]
inline constexpr uint64_t kMaxFeatureBytes = 64;             // [C-5.3.1]
inline constexpr uint64_t kMaxShards = 65536;                // [C-9.13]
inline constexpr uint64_t kMaxArrayDepth = 8;                // nested metadata arrays [C-9.14]
inline constexpr uint64_t kMaxRawStreamBytes = 1ull << 48;   // decompressed stream [C-9.15]
inline constexpr uint64_t kMinAlignment = 64;                // [C-7.1.2]
inline constexpr uint64_t kMaxAlignment = 1ull << 30;        // [C-7.1.2]
inline constexpr uint64_t kDefaultAlignment = 4096;

// Lower limits this reader imposes ([C-9.1] allows them, reported the same
// way): not format limits, so a writer may exceed them, but no real model
// comes near. Each bounds what parsing builds in memory before any record
// is validated (a chunk becomes a ~100-byte message; a metadata array
// element costs about its bytes in the packed MetaValue: 1 to 8 for a
// number, its bytes and an 8-byte end for a string or a nested array),
// so a small file cannot ask for gigabytes [C-9.19].
// Metadata array elements in one file, all arrays together (GGUF and .bolt
// metadata alike); the largest tokenizers hold about 1M (262K tokens with
// their scores and types, or 200K tokens and 450K merges).
inline constexpr uint64_t kMaxMetadataArrayElements = 1ull << 22;
// Chunks in one manifest, all streams together: 4 TiB of 1 MiB chunks.
inline constexpr uint64_t kMaxManifestChunks = 1ull << 22;

}  // namespace boltpack::format

#endif  // BOLTPACK_COMMON_LIMITS_H_
