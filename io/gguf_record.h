// The bolt-pack record (TensorInfo) that describes a GGUF tensor's bytes as
// they are: codec id per spec/gguf-mapping.md, one stream holding the
// tensor's blocks unchanged. Both a conversion (tools/) and a reader of GGUF
// behind the C API (capi/) decode GGUF tensors through it, with the codec
// the record names.
#ifndef BOLTPACK_IO_GGUF_RECORD_H_
#define BOLTPACK_IO_GGUF_RECORD_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/tensor_info.h"
#include "boltpack/types.h"
#include "codecs/ggml/ggml_types.h"

namespace boltpack::io {

// The record of a GGUF tensor `name` of shape `shape` (outermost first),
// dtype `dtype`, ggml type `type` and `nbytes` bytes, for messages in file
// `file`. Where the codec is registered, its stream role and parameters are
// those its encoder produces; an unregistered codec keeps role "data".
absl::StatusOr<TensorInfo> GgufBlockRecord(std::string_view name, absl::Span<const uint64_t> shape, DType dtype,
                                           const GgmlType& type, uint64_t nbytes, std::string_view file);

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_GGUF_RECORD_H_
