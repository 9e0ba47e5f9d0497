#include "codecs/q8_0/q8_0_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "boltpack/codec_registry.h"
#include "codecs/float_convert.h"
#include "common/str_cat.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define BOLTPACK_Q8_AVX2 1
#else
#define BOLTPACK_Q8_AVX2 0
#endif

namespace boltpack {
namespace {

void DecodePortable(const uint8_t* in, uint64_t nb, float* y) {
  for (uint64_t b = 0; b < nb; ++b, in += kQ8_0BlockBytes, y += kQ8_0BlockElems) {
    uint16_t h;
    std::memcpy(&h, in, 2);
    const float d = F16ToF32(h);
    for (int j = 0; j < kQ8_0BlockElems; ++j) {
      y[j] = static_cast<float>(static_cast<int8_t>(in[2 + j])) * d;
    }
  }
}

#if BOLTPACK_Q8_AVX2
__attribute__((target("avx2,fma,f16c"))) void DecodeAvx2(const uint8_t* in, uint64_t nb, float* y) {
  for (uint64_t b = 0; b < nb; ++b, in += kQ8_0BlockBytes, y += kQ8_0BlockElems) {
    uint16_t h;
    std::memcpy(&h, in, 2);
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(h));
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 2));
    const __m128i q0 = _mm256_castsi256_si128(q);
    const __m128i q1 = _mm256_extracti128_si256(q, 1);
    _mm256_storeu_ps(y + 0, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q0)), d));
    _mm256_storeu_ps(y + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q0, 8))), d));
    _mm256_storeu_ps(y + 16, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q1)), d));
    _mm256_storeu_ps(y + 24, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q1, 8))), d));
  }
}
#endif

class Q8_0Codec : public BlockCodec {
 public:
  Q8_0Codec()
      : BlockCodec(BlockFormat{"q8_0",
                               "ggml Q8_0 blocks (32 values: fp16 d + 32 int8), ggml-exact",
                               kQ8_0BlockElems,
                               {{"blocks", kQ8_0BlockBytes}}}) {}

  absl::Status EncodeBlocks(const float* x, uint64_t nblocks, uint8_t* const* out,
                            const BlockParams& /*params*/) const override {
    uint8_t* o = out[0];
    for (uint64_t b = 0; b < nblocks; ++b, x += kQ8_0BlockElems, o += kQ8_0BlockBytes) {
      float amax = 0.0f;
      for (int j = 0; j < kQ8_0BlockElems; ++j) amax = std::max(amax, std::fabs(x[j]));
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      const uint16_t h = F32ToF16(d);
      if ((h & 0x7c00u) == 0x7c00u) {
        return absl::InvalidArgumentError(StrCat(
            "codec 'q8_0': a block's largest magnitude ", amax,
            " makes its fp16 scale overflow (q8_0 holds |x| up to about 8.3e6)"));
      }
      std::memcpy(o, &h, 2);
      for (int j = 0; j < kQ8_0BlockElems; ++j) {
        // |x * id| <= 127.0001 for finite x; the clamp only keeps the cast
        // defined whatever happens.
        const float v = std::fmin(127.0f, std::fmax(-127.0f, std::roundf(x[j] * id)));
        o[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(v));
      }
    }
    return absl::OkStatus();
  }

  void DecodeBlocksF32(const uint8_t* const* in, uint64_t nblocks, float* y,
                       const BlockParams& /*params*/, bool avx2) const override {
#if BOLTPACK_Q8_AVX2
    if (avx2) return DecodeAvx2(in[0], nblocks, y);
#endif
    (void)avx2;
    DecodePortable(in[0], nblocks, y);
  }
};

}  // namespace

std::unique_ptr<BlockCodec> MakeQ8_0Codec() { return std::make_unique<Q8_0Codec>(); }

absl::Status RegisterQ8_0Codec() { return RegisterCodec(MakeQ8_0Codec()); }

}  // namespace boltpack
