// Online Cassandra split of KV-cache vectors (spec/codecs-bf16-spec.md §8).
//
// One K or V vector of bf16 values (e.g. one token's keys, head_dim x
// n_kv_heads values) is split like the offline codec `bf16-spec` does a
// weight row: the top `keep` fraction by magnitude |x| (ties: lower index)
// is kept; the "speculation" bytes hold the keep bitmap, each kept value's
// sign and top `mbits` mantissa bits and its exponent in a static prefix
// code; the "verification" bytes hold the kept values' low mantissa bits and
// the pruned values (sign+mantissa byte, coded exponent). A draft model
// reads the speculation bytes only; speculation + verification restore
// every bit.
//
// The exponent codes are fixed per codec object (build one per layer, or per
// layer and K/V): complete canonical Huffman codes over all 256 exponents,
// weighted by a calibration vector, so any later vector encodes.
//
// Encode and the decoders write into caller buffers and allocate nothing; a
// codec object is immutable and may be shared by threads.
//
//   auto codec = boltpack::KvSplitCodec::Create(1024, {.keep = 0.5, .mbits = 3}, first_token_k);
//   std::vector<uint8_t> spec(codec->max_speculation_bytes()), verif(codec->max_verification_bytes());
//   auto sizes = codec->Encode(k_vector, spec, verif);              // sizes->speculation, ->verification
//   codec->DecodeDraft({spec.data(), sizes->speculation}, draft);   // zeros where pruned
//   codec->DecodeFull({spec.data(), sizes->speculation}, {verif.data(), sizes->verification}, full);
#ifndef BOLTPACK_KV_SPLIT_H_
#define BOLTPACK_KV_SPLIT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace boltpack {

struct KvSplitOptions {
  double keep = 0.5;  // fraction of each vector kept for the draft, (0, 1]
  int mbits = 3;      // mantissa bits of kept values in the draft, 0..7
};

// Bytes an Encode wrote.
struct KvSplitSizes {
  size_t speculation = 0;
  size_t verification = 0;
};

class KvSplitCodec {
 public:
  // Vectors of `vector_elements` (1 .. 2^24) bf16 values. `calibration`
  // holds whole vectors (a multiple of vector_elements values; may be empty)
  // whose split weights the exponent codes.
  static absl::StatusOr<KvSplitCodec> Create(size_t vector_elements, const KvSplitOptions& options,
                                             absl::Span<const uint16_t> calibration);
  // The codec's parameters and code tables, 272 bytes (§8.3), and back.
  std::vector<uint8_t> Serialize() const;
  static absl::StatusOr<KvSplitCodec> Deserialize(absl::Span<const uint8_t> bytes);

  size_t vector_elements() const;
  size_t kept_elements() const;  // ceil(keep * vector_elements)
  int mbits() const;
  // Buffer sizes Encode needs (bounds, with 8 bytes of slack).
  size_t max_speculation_bytes() const;
  size_t max_verification_bytes() const;

  // Splits one vector (bf16 bit patterns; any pattern) into the two buffers.
  absl::StatusOr<KvSplitSizes> Encode(absl::Span<const uint16_t> vector, absl::Span<uint8_t> speculation,
                                      absl::Span<uint8_t> verification) const;
  // The draft values: 0 where pruned, kept values with their mantissa cut
  // to mbits (§8.2). `speculation` is exactly what Encode wrote.
  absl::Status DecodeDraft(absl::Span<const uint8_t> speculation, absl::Span<uint16_t> out) const;
  // Every original bit.
  absl::Status DecodeFull(absl::Span<const uint8_t> speculation, absl::Span<const uint8_t> verification,
                          absl::Span<uint16_t> out) const;

 private:
  struct Tables;
  explicit KvSplitCodec(std::shared_ptr<const Tables> tables);
  absl::Status DecodeImpl(absl::Span<const uint8_t> speculation, absl::Span<const uint8_t> verification, bool full,
                          absl::Span<uint16_t> out) const;
  std::shared_ptr<const Tables> t_;
};

}  // namespace boltpack

#endif  // BOLTPACK_KV_SPLIT_H_
