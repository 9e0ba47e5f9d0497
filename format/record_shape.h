// A tensor record's shape and dtype (and codec and stored size) read
// straight from its wire bytes,
// without the protobuf message or the TensorInfo (name, codec, streams,
// chunks) that a full parse builds: what a caller that lists shapes needs
// (tools/inputs.cc took a full parse a tensor for it, a fifth of inspect).
#ifndef BOLTPACK_FORMAT_RECORD_SHAPE_H_
#define BOLTPACK_FORMAT_RECORD_SHAPE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "boltpack/types.h"

namespace boltpack::format {

// The dtype of the validated Tensor record `payload`; its shape is appended
// to `shape`, as a protobuf parse reads them (packed and unpacked runs in
// order, the last dtype wins).
DType ShapeFromRecord(absl::Span<const uint8_t> payload, std::vector<uint64_t>* shape);

// The codec id of the validated Tensor record `payload` and, in
// `stored_bytes`, the sum of its streams' lengths (TensorInfo::codec_id and
// stored_bytes()), read as a protobuf parse reads them: the codec messages
// merged (the last id wins), each stream's last length.
std::string CodecFromRecord(absl::Span<const uint8_t> payload, uint64_t* stored_bytes);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_RECORD_SHAPE_H_
