// GGUF Q4_0 into int4-g128 without decoding (spec/gguf-mapping.md [G-3.3]):
// a `--codec` rule naming int4-g128 on a Q4_0 tensor repacks its blocks
// when each group of 128 values (four blocks) shares one fp16 scale; the
// .bolt then decodes to exactly the values the GGUF does.
#ifndef BOLTPACK_TOOLS_Q4_0_IMPORT_H_
#define BOLTPACK_TOOLS_Q4_0_IMPORT_H_

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "boltpack/codec.h"
#include "tools/inputs.h"

namespace boltpack::tools {

// nullopt unless `t` is a GGUF Q4_0 tensor and `codec_id` is int4-g128;
// then the int4-g128 record of its blocks, or InvalidArgument naming the
// tensor when it does not qualify (rows not a multiple of 128 values, or
// a group whose four blocks have different scales): Q4_0 is not decoded
// by this version, so there are no values to re-encode.
absl::StatusOr<std::optional<EncodedTensor>> ImportQ4_0AsInt4G128(const InputTensor& t, std::string_view codec_id);

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_Q4_0_IMPORT_H_
