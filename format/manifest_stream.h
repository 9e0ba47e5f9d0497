// Parsing a serialized manifest one record at a time, so that the whole
// protobuf tree of a large manifest never exists at once (issue 15 item 2:
// 1M tensor messages cost about 1 GB next to the reader's own records).
//
// Protobuf parses a message as the merge of its fields in wire order, so
// the fields other than the repeated records, parsed in their runs, give
// exactly the message the whole parse gives without those records, and
// each record parsed from its own payload is exactly the element the whole
// parse appends.
#ifndef BOLTPACK_FORMAT_MANIFEST_STREAM_H_
#define BOLTPACK_FORMAT_MANIFEST_STREAM_H_

#include <cstdint>

#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/tensor_info.h"
#include "boltpack_proto/boltpack.pb.h"
#include "format/manifest_validate.h"
#include "format/metadata_wire.h"

namespace boltpack::format {

// Field numbers of spec/boltpack.proto this parse splits at.
inline constexpr uint32_t kManifestTensorsField = 8;
inline constexpr uint32_t kTensorNameField = 1;
inline constexpr uint32_t kTensorStreamsField = 5;
inline constexpr uint32_t kStreamChunksField = 9;

// Walks the top-level fields of the serialized message `bytes`: calls
// `on_record` with the payload of each length-delimited field `number`, and
// `on_other` with each maximal run of other fields (a field `number` of
// another wire type is an unknown field to protobuf, so it is "other").
// Stops with false when a callback returns false or the wire data is
// malformed.
bool SplitRepeatedField(absl::Span<const uint8_t> bytes, uint32_t number,
                        absl::FunctionRef<bool(absl::Span<const uint8_t>)> on_record,
                        absl::FunctionRef<bool(absl::Span<const uint8_t>)> on_other);

// Parses every field of the manifest `bytes` but its tensors and its
// metadata into `head` (empty before) and returns how many tensors follow;
// the metadata entries' payloads go to `metadata`, for ReadMetadataWire
// (format/metadata_wire.h: no message per entry). DATA_LOSS naming `file`
// when the wire data is not a manifest.
absl::StatusOr<uint64_t> ParseManifestHead(absl::Span<const uint8_t> bytes, const std::string& file,
                                           v1::Manifest* head, MetadataWire* metadata);

// The name of the tensor record `payload` (well-formed wire data), as a
// view of its bytes.
std::string_view RecordName(absl::Span<const uint8_t> payload);

// Parses the tensors one at a time into one reused message whose streams
// hold no chunks (a stream may have 2^22: as messages, 90 bytes each, the
// chunks are read from the wire one at a time instead, TensorChunks), checks
// each with `validator` (after its Begin) and hands each valid one to
// `visit` with its payload in `bytes`; then the validator's Finish. The
// first error of the parse, the validator or `visit` is returned.
absl::Status ForEachValidTensor(
    absl::Span<const uint8_t> bytes, const std::string& file, ManifestValidator& validator,
    absl::FunctionRef<absl::Status(const v1::Tensor&, const TensorChunks&, absl::Span<const uint8_t>)> visit);

// The tensor record `tensor` (streams without chunks) with the chunks of
// `chunks`, converted (format/manifest_convert.h), for a validated record.
TensorInfo TensorFromWire(const v1::Tensor& tensor, const TensorChunks& chunks);
// The same, telling `read_up_to` now and then how far into the manifest the
// chunks read have come (a reader drops the mapped pages before that).
TensorInfo TensorFromWire(const v1::Tensor& tensor, const TensorChunks& chunks,
                          absl::FunctionRef<void(const uint8_t*)> read_up_to);

// The TensorInfo of the payload of a record that ForEachValidTensor
// validated before (a reader keeps the payloads, not the records): the
// same value TensorFromWire gave then.
TensorInfo TensorFromRecord(absl::Span<const uint8_t> payload);
// The same, calling `parsed` once the record is parsed (its chunks not yet
// converted) and `read_up_to` as TensorFromWire does.
TensorInfo TensorFromRecord(absl::Span<const uint8_t> payload, absl::FunctionRef<void()> parsed,
                            absl::FunctionRef<void(const uint8_t*)> read_up_to);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_MANIFEST_STREAM_H_
