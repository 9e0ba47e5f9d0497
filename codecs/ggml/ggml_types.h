// ggml's tensor types (ggml.c type_traits: elements and bytes per block) and
// the bolt-pack codec that holds each. One table serves the GGUF reader and
// writer (io/gguf.h) and the pass-through codecs (ggml_codec.h), so the
// block sizes a record is checked against are the ones a GGUF is read with.
#ifndef BOLTPACK_CODECS_GGML_GGML_TYPES_H_
#define BOLTPACK_CODECS_GGML_GGML_TYPES_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace boltpack {

inline constexpr int kGgmlTypeCount = 43;

// One ggml tensor type (ggml.c type_traits, ggml-common.h block sizes).
struct GgmlType {
  int id;
  std::string_view name;  // upper case as ggml_type_name prints it ("Q4_K")
  uint32_t block_size;    // elements per block
  uint32_t type_size;     // bytes per block
};

// Every type ggml knows, by id.
absl::Span<const GgmlType> GgmlTypes();
// nullptr for ids ggml does not know or removed (4, 5, 31-33, 36-38).
const GgmlType* GgmlTypeById(int id);
// Case-insensitive name ("q4_k", "Q4_K").
const GgmlType* GgmlTypeByName(std::string_view name);
// Bytes of a tensor of this type with GGUF dims `ne` (innermost first);
// fails on a row length that is not a multiple of the block size or overflow.
absl::StatusOr<uint64_t> GgmlTensorBytes(const GgmlType& type, absl::Span<const uint64_t> ne);

// The bolt-pack codec that holds a tensor of this GGUF type: f32, f16, bf16,
// raw (F64, I8..I64), q8_0, mxfp4, nvfp4-ggml, iq2_xxs, else the
// pass-through codec "ggml-<name>" (spec/gguf-mapping.md §2).
std::string GgmlTypeCodecId(const GgmlType& type);

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_GGML_GGML_TYPES_H_
