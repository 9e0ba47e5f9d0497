// Codecs by id. The built-in codecs are registered on first use; a plugin
// registers its own with Register().
#ifndef BOLTPACK_CODEC_REGISTRY_H_
#define BOLTPACK_CODEC_REGISTRY_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "boltpack/codec.h"

namespace boltpack {

// nullptr when no codec has this id.
const Codec* FindCodec(std::string_view id);
// Fails if the id is taken or not a valid codec id.
absl::Status RegisterCodec(std::unique_ptr<Codec> codec);
std::vector<std::string> RegisteredCodecIds();
// The traits of the codec with this id; the defaults (nothing) when none is
// registered.
CodecTraits TraitsOf(std::string_view id);
// The element codec that stores a tensor of this dtype as it is: "f32",
// "f16", "bf16", else "raw".
std::string_view ElementCodecFor(DType dtype);
// Codec ids: 1..64 bytes of [a-z0-9_-], starting with a letter or digit.
bool IsValidCodecId(std::string_view id);

}  // namespace boltpack

#endif  // BOLTPACK_CODEC_REGISTRY_H_
