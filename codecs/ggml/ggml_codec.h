// Pass-through codecs "ggml-<type>" (ggml-q4_k, ggml-q5_1, ggml-iq3_s, ...):
// a GGUF tensor of a ggml type bolt-pack has no codec of its own for keeps
// its GGUF blocks unchanged in one stream "data", with the INT32 parameter
// "ggml_type" naming the type (spec/gguf-mapping.md §2, spec/codecs.md).
//
// Such a record is checked like any other (dtype F32, the parameter, one
// stream whose raw length is what ggml's block and type size give for the
// shape, chunks of whole rows), so its bytes are checksummed, copied,
// listed, sliced (whole rows, whole blocks) and exported back to GGUF byte
// for byte; they are not decoded or encoded by this version. CanDecodeTo answers yes for every target (the
// values are F32 numbers) so that the reader's checks pass and
// DecodedBytes and Decode say why not: UNIMPLEMENTED, "codec ggml type
// Q4_K: not decoded by this version", as for a codec the reader lacks.
#ifndef BOLTPACK_CODECS_GGML_GGML_CODEC_H_
#define BOLTPACK_CODECS_GGML_GGML_CODEC_H_

#include <memory>

#include "absl/status/status.h"
#include "boltpack/codec.h"
#include "codecs/ggml/ggml_types.h"

namespace boltpack {

// The pass-through codec of `type`, which must be one GgmlTypeCodecId maps
// to "ggml-<name>".
std::unique_ptr<Codec> MakeGgmlPassThroughCodec(const GgmlType& type);
// Registers one codec per such type (called by RegisterBuiltinCodecs).
absl::Status RegisterGgmlPassThroughCodecs();

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_GGML_GGML_CODEC_H_
