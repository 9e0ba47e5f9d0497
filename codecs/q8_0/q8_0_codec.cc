#include "codecs/q8_0/q8_0_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "boltpack/codec_registry.h"
#include "codecs/block_common/block_kernels.h"
#include "codecs/block_common/quant_simd.h"
#include "codecs/float_convert.h"
#include "common/str_cat.h"

#include "codecs/x86_simd.h"

namespace boltpack {
namespace {

// Out (quant_simd.h): f32, or bf16/f16 rounded from the same f32 values.
template <class Out>
void DecodePortable(const uint8_t* in, uint64_t nb, typename Out::T* y) {
  for (uint64_t b = 0; b < nb; ++b, in += kQ8_0BlockBytes, y += kQ8_0BlockElems) {
    uint16_t h;
    std::memcpy(&h, in, 2);
    const float d = F16ToF32(h);
    for (int j = 0; j < kQ8_0BlockElems; ++j) {
      y[j] = Out::Scalar(static_cast<float>(static_cast<int8_t>(in[2 + j])) * d);
    }
  }
}

#if BOLTPACK_X86_SIMD
template <class Out>
__attribute__((target("avx2,fma,f16c"))) void DecodeAvx2(const uint8_t* in, uint64_t nb, typename Out::T* y) {
  for (uint64_t b = 0; b < nb; ++b, in += kQ8_0BlockBytes, y += kQ8_0BlockElems) {
    uint16_t h;
    std::memcpy(&h, in, 2);
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(h));
    // A finite d times an int8 is finite; NaN or infinite d can give NaN.
    const bool may_be_nan = (h & 0x7c00u) == 0x7c00u;
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 2));
    const __m128i q0 = _mm256_castsi256_si128(q);
    const __m128i q1 = _mm256_extracti128_si256(q, 1);
    Out::Store16(y + 0, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q0)), d),
                _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q0, 8))), d),
                 may_be_nan);
    Out::Store16(y + 16, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q1)), d),
                _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q1, 8))), d),
                 may_be_nan);
  }
}
#endif

// ---- encoding ----------------------------------------------------------------
//
// Both paths return the index of the first block they cannot encode (a NaN
// or infinity, or an fp16 scale overflow), or nb. Per block: amax = max |x|;
// d = amax / 127; id = 1/d (0 when d is 0, and also when 1/d overflows, that
// is amax < 127 * 2^-128: f16(d) is then 0, every q is written 0; ggml's own
// bytes there are an out-of-range float->int8 conversion, undefined in C, and
// decode to 0 all the same); q = roundf(x * id).

// The block's scale: false when it cannot be stored.
inline bool BlockScale(uint32_t amax_bits, uint16_t* h, float* id) {
  if (amax_bits >= quant::kNonFiniteBits) return false;
  const float d = quant::BitsToFloat(amax_bits) / 127.0f;
  *h = F32ToF16(d);
  if ((*h & 0x7c00u) == 0x7c00u) return false;
  float inv = d != 0.0f ? 1.0f / d : 0.0f;
  if (std::isinf(inv)) inv = 0.0f;
  *id = inv;
  return true;
}

uint64_t EncodePortable(const float* x, uint64_t nb, uint8_t* o) {
  for (uint64_t b = 0; b < nb; ++b, x += kQ8_0BlockElems, o += kQ8_0BlockBytes) {
    uint16_t h;
    float id;
    if (!BlockScale(quant::AbsMaxBits(x, kQ8_0BlockElems), &h, &id)) return b;
    std::memcpy(o, &h, 2);
    for (int j = 0; j < kQ8_0BlockElems; ++j) {
      // |x * id| <= 127.0001 for finite x; the clamp only keeps the cast
      // defined whatever happens.
      const float v = std::fmin(127.0f, std::fmax(-127.0f, std::roundf(x[j] * id)));
      o[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(v));
    }
  }
  return nb;
}

#if BOLTPACK_X86_SIMD
// clamp(roundf(v * id), -127, 127) as int32 lanes.
__attribute__((target("avx2,fma,f16c"))) inline __m256i Quant8(__m256 v, __m256 vid, __m256 lim) {
  const __m256 r = quant::RoundHalfAway(_mm256_mul_ps(v, vid));
  return _mm256_cvttps_epi32(_mm256_min_ps(lim, _mm256_max_ps(_mm256_sub_ps(_mm256_setzero_ps(), lim), r)));
}

__attribute__((target("avx2,fma,f16c"))) uint64_t EncodeAvx2(const float* x, uint64_t nb, uint8_t* o) {
  const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const __m256 lim = _mm256_set1_ps(127.0f);
  for (uint64_t b = 0; b < nb; ++b, x += kQ8_0BlockElems, o += kQ8_0BlockBytes) {
    const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    const __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    __m256i m = quant::AbsMaxBitsStep(_mm256_setzero_si256(), v0);
    m = quant::AbsMaxBitsStep(m, v1);
    m = quant::AbsMaxBitsStep(m, v2);
    m = quant::AbsMaxBitsStep(m, v3);
    uint16_t h;
    float id;
    if (!BlockScale(quant::HorizontalMaxEpi32(m), &h, &id)) return b;
    std::memcpy(o, &h, 2);
    const __m256 vid = _mm256_set1_ps(id);
    const __m256i a = _mm256_packs_epi32(Quant8(v0, vid, lim), Quant8(v1, vid, lim));
    const __m256i c = _mm256_packs_epi32(Quant8(v2, vid, lim), Quant8(v3, vid, lim));
    const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(a, c), perm);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 2), bytes);
  }
  return nb;
}
#endif

class Q8_0Codec : public TemplatedBlockCodec<Q8_0Codec> {
 public:
  Q8_0Codec()
      : TemplatedBlockCodec(BlockFormat{std::string(kQ8_0CodecId),
                               "ggml Q8_0 blocks (32 values: fp16 d + 32 int8), ggml-exact",
                               kQ8_0BlockElems,
                               {{"blocks", kQ8_0BlockBytes}},
                               GgmlMapping{8, GgmlExport::kStoredBytes}}) {}

  absl::Status EncodeBlocks(const float* x, uint64_t nblocks, uint8_t* const* out,
                            const BlockParams& /*params*/, bool avx2) const override {
    uint64_t bad;
#if BOLTPACK_X86_SIMD
    bad = avx2 ? EncodeAvx2(x, nblocks, out[0]) : EncodePortable(x, nblocks, out[0]);
#else
    (void)avx2;
    bad = EncodePortable(x, nblocks, out[0]);
#endif
    if (bad == nblocks) return absl::OkStatus();
    const uint32_t amax = quant::AbsMaxBits(x + bad * kQ8_0BlockElems, kQ8_0BlockElems);
    if (amax >= quant::kNonFiniteBits) {
      return absl::InvalidArgumentError("codec 'q8_0': a block holds NaN or infinity");
    }
    return absl::InvalidArgumentError(StrCat(
        "codec 'q8_0': a block's largest magnitude ", quant::BitsToFloat(amax),
        " makes its fp16 scale overflow (q8_0 holds |x| up to about 8.3e6)"));
  }

 private:
  friend class TemplatedBlockCodec<Q8_0Codec>;
  template <class Out>
  static void DecodeTo(const uint8_t* const* streams, uint64_t nblocks, typename Out::T* y,
                       const BlockParams& /*params*/, bool avx2) {
    const uint8_t* in = streams[0];
#if BOLTPACK_X86_SIMD
    if (avx2) return DecodeAvx2<Out>(in, nblocks, y);
#endif
    (void)avx2;
    DecodePortable<Out>(in, nblocks, y);
  }
};

}  // namespace

std::unique_ptr<BlockCodec> MakeQ8_0Codec() { return std::make_unique<Q8_0Codec>(); }

absl::Status RegisterQ8_0Codec() { return RegisterCodec(MakeQ8_0Codec()); }

}  // namespace boltpack
