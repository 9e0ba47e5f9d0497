#include "codecs/builtin_codecs.h"

#include "boltpack/codec_registry.h"
#include "codecs/ggml/ggml_codec.h"
#include "codecs/int4/int4_codec.h"
#include "codecs/iq2_xxs/iq2_xxs_codec.h"
#include "codecs/mxfp4/mxfp4_codec.h"
#include "codecs/nvfp4/nvfp4_codec.h"
#include "codecs/q8_0/q8_0_codec.h"
#include "codecs/bf16_exp/bf16_exp_codecs.h"
#include "codecs/bf16_spec/bf16_spec_codec.h"
#include "codecs/raw/raw_codecs.h"
#include "common/status_macros.h"

namespace boltpack {

absl::Status RegisterBuiltinCodecs() {
  // Codec families append their registrations below.
  BP_RETURN_IF_ERROR(RegisterRawCodecs());
  BP_RETURN_IF_ERROR(RegisterBf16ExpCodecs());
  BP_RETURN_IF_ERROR(RegisterBf16SpecCodec());
  BP_RETURN_IF_ERROR(RegisterQ8_0Codec());
  BP_RETURN_IF_ERROR(RegisterMxfp4Codec());
  BP_RETURN_IF_ERROR(RegisterNvfp4Codecs());
  BP_RETURN_IF_ERROR(RegisterInt4Codecs());
  BP_RETURN_IF_ERROR(RegisterIq2XxsCodec());
  BP_RETURN_IF_ERROR(RegisterGgmlPassThroughCodecs());
  return absl::OkStatus();
}

}  // namespace boltpack
