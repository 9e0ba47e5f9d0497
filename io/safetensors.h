// safetensors reading and writing, enforcing the format's own rules
// (huggingface/safetensors tensor.rs): header <= 100 MB of UTF-8 JSON that
// starts with '{'; data_offsets sorted contiguous from 0 with no holes or
// overlaps and covering the whole byte buffer; byte size = dtype size x
// shape (overflow-checked); 0-d tensors allowed; no duplicate names;
// `__metadata__` is a string->string map and is kept in order.
#ifndef BOLTPACK_IO_SAFETENSORS_H_
#define BOLTPACK_IO_SAFETENSORS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/piece_source.h"
#include "boltpack/types.h"

namespace boltpack::io {

class AtomicFile;

inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kUnspecified;
  std::vector<uint64_t> shape;
  size_t file_index = 0;    // which shard file holds it
  uint64_t data_begin = 0;  // relative to that file's data section (after the header)
  uint64_t data_end = 0;
};

// A model in one .safetensors file or several shards listed by a
// `*.safetensors.index.json` (`{"metadata": {...}, "weight_map": {tensor: file}}`).
class SafetensorsModel {
 public:
  // `path` is a .safetensors file or an index .json.
  static absl::StatusOr<std::unique_ptr<SafetensorsModel>> Open(const std::string& path);
  // One file's bytes, which the caller keeps alive (used by the fuzzer).
  static absl::StatusOr<std::unique_ptr<SafetensorsModel>> OpenBuffer(
      absl::Span<const uint8_t> bytes, std::string display_name);
  ~SafetensorsModel();

  // Tensors in header order within a file, files in the index's order.
  const std::vector<SafetensorsTensor>& tensors() const;
  // `__metadata__` entries in header order (of the first file for shards).
  const std::vector<std::pair<std::string, std::string>>& metadata() const;
  // The files that make up the model (one, or the shards).
  const std::vector<std::string>& files() const;
  // Zero-copy bytes of tensor `i`.
  absl::Span<const uint8_t> TensorBytes(size_t i) const;
  // Where tensor `i`'s bytes start in its file (files()[file_index]).
  uint64_t FileOffset(size_t i) const;

  struct Impl;

 private:
  explicit SafetensorsModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A declaration's shape: up to two dimensions held inline, so that 1M
// declarations are not 1M heap blocks as well (32 MB); made from a vector
// or a braced list like one.
class SafetensorsDeclShape : public absl::InlinedVector<uint64_t, 2> {
 public:
  using InlinedVector::InlinedVector;
  SafetensorsDeclShape(const std::vector<uint64_t>& dims)  // NOLINT: implicit, as the vector it replaces
      : InlinedVector(dims.begin(), dims.end()) {}
};

struct SafetensorsTensorDecl {
  std::string name;
  DType dtype = DType::kUnspecified;
  SafetensorsDeclShape shape;
};

// The data size of each of `tensors`, after the checks the writer makes
// before a byte is written (what a strict reader, ours or HF's, would
// reject: names, dtypes, shapes, sizes, duplicates, __metadata__).
absl::StatusOr<std::vector<uint64_t>> CheckSafetensorsDecls(
    const std::string& path, const std::vector<std::pair<std::string, std::string>>& metadata,
    const std::vector<SafetensorsTensorDecl>& tensors);

// Streams a .safetensors file: the header is written from the declarations
// first, then each tensor's bytes in declaration order. The file is atomic
// (temporary file + rename) and never overwrites one of `inputs`.
class SafetensorsWriter {
 public:
  static absl::StatusOr<std::unique_ptr<SafetensorsWriter>> Create(
      const std::string& path, std::vector<std::pair<std::string, std::string>> metadata,
      std::vector<SafetensorsTensorDecl> tensors, const std::vector<std::string>& inputs, bool durable = true);
  ~SafetensorsWriter();
  // Appends the next tensor's bytes; the size must match its declaration.
  absl::Status WriteNext(absl::Span<const uint8_t> bytes);
  // The same from pieces (a tensor streamed without being held whole).
  absl::Status WriteNext(PieceSource& bytes);
  // The same, writing behind: returns once every piece is fetched and
  // checked while a thread still writes the last ones, so the next
  // tensor's reads overlap these writes. The writer keeps the source until
  // its bytes are written; memory its pieces point into that it does not
  // own (a Reader's mapping) must outlive Finish (or the writer). A write
  // error is returned by a later call or by Finish.
  absl::Status WriteNextBehind(std::shared_ptr<PieceSource> bytes);
  // Fails unless every declared tensor was written.
  absl::Status Finish();
  // Finish without the name: checks that every tensor was written and
  // seals the file (written, fsynced, still unnamed); the caller names it
  // with the files it belongs with (CommitAll, io/safetensors_split.h).
  absl::StatusOr<AtomicFile*> Seal();

  struct Impl;

 private:
  // WriteNext and WriteNextBehind of pieces; `behind`: the owner of `pieces`, or null.
  absl::Status WritePieces(PieceSource& pieces, std::shared_ptr<PieceSource> behind);
  explicit SafetensorsWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_SAFETENSORS_H_
