#include "codecs/builtin_codecs.h"

#include "boltpack/codec_registry.h"
#include "codecs/raw/raw_codecs.h"
#include "common/status_macros.h"

namespace boltpack {

absl::Status RegisterBuiltinCodecs() {
  // Codec families append their registrations below.
  BP_RETURN_IF_ERROR(RegisterRawCodecs());
  return absl::OkStatus();
}

}  // namespace boltpack
