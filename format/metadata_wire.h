// A manifest's metadata entries (field 7) read from the wire straight into
// MetaValue's packed form, and written from it, without a protobuf message
// in between: as messages, a string array at the 2^22-element limit was a
// std::string and a pointer per element (~170 MB for 25 MB of strings),
// parsed once by the reader and twice more by a writer (its entry and the
// read-back of its manifest).
//
// The parse is protobuf's, field by field: a message field that occurs more
// than once is the merge of its occurrences (the parse of their payloads
// one after the other), a scalar the last occurrence, a repeated scalar
// packed or not, a field of an unexpected wire type an unknown field. What
// protobuf would refuse to parse is refused as it is (DATA_LOSS "manifest is
// not a valid boltpack.v1.Manifest"), before any entry's value is checked.
#ifndef BOLTPACK_FORMAT_METADATA_WIRE_H_
#define BOLTPACK_FORMAT_METADATA_WIRE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "boltpack/types.h"

namespace boltpack::format {

inline constexpr uint32_t kManifestMetadataField = 7;

// The payload of each metadata entry of a manifest, in file order.
using MetadataWire = std::vector<absl::Span<const uint8_t>>;

// Checks the entries as a reader checks metadata (their count, each key a
// valid name and unique, each value as ValidateValue checks it) and, when
// `out` is not null, converts them, each array packed as it is read (one
// copy of its bytes). Errors name `file` and the key.
absl::Status ReadMetadataWire(const MetadataWire& entries, const std::string& file, Metadata* out);

// Checks one entry's value (the serialized MetadataEntry `entry`) as
// ReadMetadataWire does, naming it `where` ("FILE: metadata \"KEY\"").
absl::Status CheckMetadataEntry(absl::Span<const uint8_t> entry, const std::string& where);

// Appends (key, value) as a manifest's field 7: exactly the bytes protobuf
// serializes a MetadataEntry of ToProto(value) to (format/manifest_convert.h),
// each element written once, into `out` (reserved at its new size). Returns
// where the entry's payload starts in `out`.
size_t AppendMetadataEntry(std::string_view key, const MetaValue& value, std::string* out);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_METADATA_WIRE_H_
