// The tensor record as the library exposes it: what the manifest says about
// one tensor, after validation.
#ifndef BOLTPACK_TENSOR_INFO_H_
#define BOLTPACK_TENSOR_INFO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"

#include "boltpack/types.h"

namespace boltpack {

enum class Compression : uint8_t { kNone = 0, kZstd = 1 };

// One independently decodable piece of a stream (offsets relative to the
// stream's stored and raw bytes).
struct ChunkInfo {
  uint64_t stored_offset = 0;
  uint64_t stored_length = 0;
  uint64_t raw_offset = 0;
  uint64_t raw_length = 0;
  uint64_t first_row = 0;
  uint64_t row_count = 0;
  uint64_t xxh3 = 0;
  // Format 1.2 line-prefix checksums: StreamInfo::ChunkPrefixXxh3.
};

struct StreamInfo {
  std::string role;
  uint32_t shard = 0;
  uint64_t offset = 0;     // absolute, in the shard file
  uint64_t length = 0;     // stored bytes
  uint64_t alignment = 0;
  uint64_t xxh3 = 0;       // of the stored bytes
  Compression compression = Compression::kNone;
  uint64_t raw_length = 0; // after decompression
  std::vector<ChunkInfo> chunks;
  // Views that read this stream; empty means every view.
  std::vector<std::string> views;
  // Format 1.2 line-prefix checksums: lines of `line_bytes` (0: none) and
  // the line prefixes every chunk carries a checksum of.
  uint64_t line_bytes = 0;
  std::vector<uint64_t> prefix_bytes;
  // Per chunk and per prefix_bytes entry, the XXH3 of the first that many
  // bytes of every line of the chunk: chunk k's are the prefix_bytes.size()
  // values from k * prefix_bytes.size(). One vector per stream, not one per
  // chunk: a stream of 2^22 chunks holds 96 MB less.
  std::vector<uint64_t> prefix_xxh3;
  absl::Span<const uint64_t> ChunkPrefixXxh3(size_t chunk) const {
    const size_t n = prefix_bytes.size();
    if ((chunk + 1) * n > prefix_xxh3.size()) return {};
    return absl::MakeConstSpan(prefix_xxh3).subspan(chunk * n, n);
  }
};

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> shape;  // outermost first
  DType dtype = DType::kUnspecified;
  std::string codec_id;
  CodecParams codec_params;
  std::vector<StreamInfo> streams;
  std::vector<std::string> required_features;

  uint64_t element_count() const;   // product of shape (1 for a 0-d tensor)
  uint64_t row_count() const;       // shape[0], or 1 for 0-d
  uint64_t row_elements() const;    // product of shape[1:]
  uint64_t stored_bytes() const;    // sum of streams' stored lengths
  const StreamInfo* FindStream(std::string_view role) const;
};

}  // namespace boltpack

#endif  // BOLTPACK_TENSOR_INFO_H_
