// What a writer checks so that it never commits a file its own reader
// refuses: the records it copies from another file, and the manifest it is
// about to write, read back exactly as Reader::Open and a decode read them.
#ifndef BOLTPACK_FORMAT_OUTPUT_RULES_H_
#define BOLTPACK_FORMAT_OUTPUT_RULES_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "boltpack/reader.h"

namespace boltpack::format {

// Whether tensor `tensor` of `reader` may be copied into a file this
// version writes: every stream's compression and the dtype are this
// version's (a later format's value cannot be written into a 1.x file that
// does not define it), every zstd frame declares the raw length the record
// says (or none), and a codec this version knows accepts the record
// (ValidateRecord). An unknown codec's record is copied on the container
// rules alone [C-10.2.1] [C-5.3.7]. Errors name the input and tensor.
// `check_stored` false: the record only, no stored byte read (a skeleton
// file's copy, WriterOptions::skeleton).
absl::Status CheckCopyable(const Reader& reader, size_t tensor, bool check_stored = true);

// `text` names a tensor or key: it must be 1..kMaxNameBytes of UTF-8
// without NUL (protobuf refuses to parse a `string` field that is not UTF-8,
// so such a name makes a manifest no reader opens). `kind` is e.g. "tensor
// name"; the error shows the name with \xNN escapes.
absl::Status CheckWrittenName(std::string_view text, std::string_view kind, std::string_view file);

// Parses `serialized` back as the reader does and applies the reader's
// checks to what it reads: ValidateManifest (`data_end`: where the data
// section ends) and, with `check_records`, the ValidateRecord of every
// tensor whose codec is registered (a Writer checks each record as it is
// added, so it skips that here).
absl::Status ValidateAsReader(const std::string& serialized, const std::string& file, uint64_t data_end,
                              bool check_records = true);
// The same for a multi-file model: `data_ends[k]` ends shard k's data
// section (shard 0's manifest offset, then the siblings' sizes); the shard
// list is checked as the reader checks it (ValidateShards).
absl::Status ValidateAsReader(const std::string& serialized, const std::string& file,
                              const std::vector<uint64_t>& data_ends, bool check_records = true);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_OUTPUT_RULES_H_
