// Semantic validation of a parsed manifest (spec/container.md §6-§8). The
// protobuf parser only guarantees well-formed wire data; everything else a
// reader relies on is checked here, before any of it is used.
#ifndef BOLTPACK_FORMAT_MANIFEST_VALIDATE_H_
#define BOLTPACK_FORMAT_MANIFEST_VALIDATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include <memory>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "boltpack_proto/boltpack.pb.h"
#include "format/name_index.h"

namespace boltpack::format {

// Checks the shard list alone (names are safe bare file names, shard 0 is
// this file), so a reader knows which siblings it may open.
absl::Status ValidateShards(const v1::Manifest& manifest, const std::string& file,
                            uint64_t file_id);

// The chunks of a tensor's streams, read from the wire one at a time
// (format/manifest_stream.h): stream k's serialized payload and its count.
struct TensorChunks {
  std::vector<absl::Span<const uint8_t>> streams;
  std::vector<uint64_t> counts;
  // Set when the record was small enough to parse whole: its streams hold
  // their chunks as messages, and `streams` is empty.
  const v1::Tensor* whole = nullptr;
  // Parses each chunk of stream `k` into one reused message and calls
  // `visit` with it, its index and its wire bytes (empty for a record
  // parsed whole); false when a chunk is not a valid Chunk message or
  // `visit` returns false.
  bool ForEach(size_t k,
               absl::FunctionRef<bool(const v1::Chunk&, uint64_t, absl::Span<const uint8_t>)> visit) const;
};

namespace validate_detail {
struct Extent {
  uint64_t begin;
  uint64_t end;
  std::string_view tensor;  // in the validator's NameIndex
};
struct ViewedStream {
  uint32_t shard;
  uint64_t begin;
  uint64_t end;
  uint64_t mask;
  std::string_view tensor;
};
// Declared views by name -> bit (declaration order).
using ViewBits = absl::flat_hash_map<std::string_view, int>;
}  // namespace validate_detail

// Validates a manifest one tensor record at a time (format/manifest_stream.h
// parses them so), keeping per tensor only its name (in names(), which a
// reader keeps as its name index) and its streams' extents: Begin with
// `head`, the manifest without its tensors, then AddTensor for each tensor
// in file order, then Finish. The checks and their messages are those of
// one pass over the whole manifest; the elastic manifest is checked
// against the converted records (ValidateElasticOf).
// `shard_data_end[k]`: the first byte of shard k that streams may not reach
// (the manifest offset for shard 0, the file size for siblings).
class ManifestValidator {
 public:
  ManifestValidator(const v1::Manifest& head, const std::string& file,
                    const std::vector<uint64_t>& shard_data_end);
  ~ManifestValidator();
  // The checks of everything but the tensors; `tensor_count` follow.
  absl::Status Begin(uint64_t tensor_count);
  // `tensor`'s streams hold no chunks: `chunks` has them. `wire_name` is
  // its name as the manifest's bytes hold it (the same bytes as
  // tensor.name()): names() keeps that view, not a copy, so those bytes
  // must outlive it.
  absl::Status AddTensor(const v1::Tensor& tensor, const TensorChunks& chunks, std::string_view wire_name);
  // Once every tensor is added: no two streams overlap, views' layout.
  absl::Status Finish();
  NameIndex& names() { return names_; }
  // A hint: the next AddTensor is probably of a tensor named `name`.
  void PrefetchName(std::string_view name) const { names_.Prefetch(name); }

 private:
  const v1::Manifest& m_;
  const std::string& file_;
  const std::vector<uint64_t>& shard_data_end_;
  bool zstd_declared_ = false;
  std::unique_ptr<validate_detail::ViewBits> view_bits_;
  NameIndex names_;
  std::vector<std::vector<validate_detail::Extent>> extents_;  // per shard
  std::vector<validate_detail::ViewedStream> viewed_;          // only when views are declared
};

// `where` names the value in an error message; it is called only on error.
absl::Status ValidateValue(const v1::Value& value, int depth, absl::FunctionRef<std::string()> where);

// ValidateValue's checks one at a time, for a parse that reads values from
// the wire without building messages (format/metadata_wire.h): the same
// rules, the same messages. `type`: a Value's type, its u and i.
absl::Status CheckScalar(int32_t type, uint64_t u, int64_t i, absl::FunctionRef<std::string()> where);
// An Array's repeated fields in field order (uints, ints, f32s, f64s,
// bools, strings, arrays) and which of them `element_type` selects.
inline constexpr int kArrayFieldCount = 7;
int ArrayFieldOf(int32_t element_type);
// The depth (1 for a Value's own array), a valid element type, and no
// element in a field other than the element type's.
absl::Status CheckArrayHead(int depth, int32_t element_type, const uint64_t (&counts)[kArrayFieldCount],
                            absl::FunctionRef<std::string()> where);
// An element of an integer array within the range of its element type.
absl::Status CheckUnsignedElement(int32_t element_type, uint64_t v, absl::FunctionRef<std::string()> where);
absl::Status CheckSignedElement(int32_t element_type, int64_t v, absl::FunctionRef<std::string()> where);

// A tensor name or metadata key (`kind`): 1..kMaxNameBytes, no NUL.
absl::Status ValidateName(std::string_view name, std::string_view kind, const std::string& file);

// Features this implementation understands.
bool IsKnownFeature(const std::string& feature);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_MANIFEST_VALIDATE_H_
