// The elastic manifest between its protobuf form (spec/boltpack.proto,
// ElasticManifest) and the public struct (boltpack/elastic.h), and the
// stored-byte geometry of the codecs a slice can cut without decoding.
#ifndef BOLTPACK_FORMAT_ELASTIC_MANIFEST_H_
#define BOLTPACK_FORMAT_ELASTIC_MANIFEST_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "boltpack/codec.h"
#include "boltpack/elastic.h"
#include "boltpack/types.h"
#include "boltpack_proto/boltpack.pb.h"

namespace boltpack::format {

// Unknown enum values map to kUnspecified / prefix_order = false, which the
// validator rejects.
ElasticManifest ElasticFromProto(const v1::ElasticManifest& proto);
void ElasticToProto(const ElasticManifest& manifest, v1::ElasticManifest* out);

// How a codec lays a tensor out in its stored (raw) streams when every
// stream is a row-major grid of fixed-size cells over the tensor's outer
// dimensions and its innermost dimension in blocks of `block_elems`
// elements: stream k holds prod(shape[:-1]) * shape[-1] / block_elems cells
// of `cell_bytes[k]` bytes. Element codecs have block_elems 1. Such a grid
// can be cut on any outer dimension, and on the innermost one at block
// boundaries, by copying bytes. The codec says it (Codec::Layout).
using CellLayout = StoredLayout;
// The registered codec's Layout; nullopt for codecs whose streams are not
// such grids (entropy-coded bf16 codecs) and for unknown codecs: those are
// cut by decoding and re-encoding.
std::optional<CellLayout> StoredCellLayout(std::string_view codec_id, DType dtype,
                                           const CodecParams& params);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_ELASTIC_MANIFEST_H_
