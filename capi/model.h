// What a bp_reader reads, whatever the file: a .bolt container (through
// boltpack::Reader) or a GGUF / safetensors model (through io/, the layer
// the CLI's inputs use), seen as one list of tensors with metadata that
// decode into a caller's buffer. The C API's tensor, metadata and decode
// functions are written once against this; what only a .bolt file has
// (views, budgets, checksums, streams in chunks) asks bolt().
#ifndef BOLTPACK_CAPI_MODEL_H_
#define BOLTPACK_CAPI_MODEL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/codec.h"
#include "boltpack/reader.h"
#include "boltpack/tensor_info.h"
#include "boltpack/types.h"

namespace boltpack::capi {

// Immutable once open: every method may be called from any thread at once.
class Model {
 public:
  virtual ~Model() = default;
  virtual const std::string& path() const = 0;
  virtual size_t tensor_count() const = 0;
  // A view of the model's own bytes, valid as long as the model.
  virtual std::string_view TensorName(size_t tensor) const = 0;
  virtual std::optional<size_t> FindTensor(std::string_view name) const = 0;
  // Tensor `tensor`'s dtype; its shape (outermost first) appended to `shape`.
  virtual DType TensorShape(size_t tensor, std::vector<uint64_t>* shape) const = 0;
  // The tensor's record, built when asked (the C API keeps the ones whose
  // strings it hands out). Never fails: what cannot be decoded is still
  // described, and a decode says why.
  virtual TensorInfo Describe(size_t tensor) const = 0;
  virtual const Metadata& metadata() const = 0;
  // Zero-copy stored bytes of stream `stream` of `tensor`.
  virtual absl::StatusOr<absl::Span<const uint8_t>> StoredStream(size_t tensor, size_t stream) const = 0;
  virtual absl::StatusOr<uint64_t> DecodedBytes(size_t tensor, OutputType out) const = 0;
  // Outer rows [row_begin, row_end) into dst (at least their size).
  virtual absl::Status DecodeRows(size_t tensor, uint64_t row_begin, uint64_t row_end, OutputType out,
                                  absl::Span<uint8_t> dst, const ExecOptions& exec) const = 0;
  // The whole tensor (also when the output has no whole bytes per row).
  virtual absl::Status Decode(size_t tensor, OutputType out, absl::Span<uint8_t> dst,
                              const ExecOptions& exec) const = 0;
  // The file holding stream `stream` of `tensor` and the offset of its
  // stored bytes in it (for a caller that maps the file itself).
  struct Location {
    std::string path;
    uint64_t offset = 0;
  };
  virtual absl::StatusOr<Location> StreamLocation(size_t tensor, size_t stream) const = 0;
  // The .bolt reader behind this model; nullptr for GGUF and safetensors.
  virtual const Reader* bolt() const { return nullptr; }
};

// A .bolt file (ReaderOptions as bp_open_flags sets them).
absl::StatusOr<std::unique_ptr<Model>> OpenBoltModel(const std::string& path, const ReaderOptions& options);
// A .gguf file (a split model by its first shard) or a .safetensors file
// (or a sharded index .json), by extension; NOT_FOUND for another.
absl::StatusOr<std::unique_ptr<Model>> OpenForeignModel(const std::string& path);

}  // namespace boltpack::capi

#endif  // BOLTPACK_CAPI_MODEL_H_
