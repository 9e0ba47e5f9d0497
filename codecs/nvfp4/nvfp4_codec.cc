#include "codecs/nvfp4/nvfp4_codec.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "boltpack/codec_registry.h"
#include "codecs/block_common/block_kernels.h"
#include "codecs/block_common/quant_simd.h"
#include "codecs/codec_params.h"
#include "codecs/float_convert.h"
#include "common/checked_math.h"
#include "common/huge_pages.h"
#include "common/status_macros.h"
#include "common/str_cat.h"

#include "codecs/x86_simd.h"

namespace boltpack {

uint8_t CastFp4ModelOpt(float x) {
  const float a = std::fabs(x);
  // searchsorted(bounds, a) (side left): how many bounds are < a.
  static constexpr float kBounds[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  int idx = 0;
  for (float b : kBounds) idx += b < a ? 1 : 0;
  if (a == 0.75f || a == 1.75f || a == 3.5f) ++idx;  // ties to the even code
  return static_cast<uint8_t>(idx | (x < 0.0f ? 8 : 0));
}

namespace {

#if BOLTPACK_X86_SIMD
__attribute__((target("avx2,fma,f16c"))) inline __m256 cvt(__m128i v8) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v8));
}
#endif


// E2M1 values; code 8 is +0 (as ModelOpt's table and ggml's integer table).
constexpr float kE2M1Float[16] = {0.0f, 0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                  0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

const std::array<float, 256>& Ue4m3HalfTable() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int i = 0; i < 256; ++i) t[i] = Ue4m3ToF32Half(static_cast<uint8_t>(i));
    return t;
  }();
  return table;
}

const std::array<float, 256>& E4m3fnTable() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int i = 0; i < 256; ++i) t[i] = E4m3fnToF32(static_cast<uint8_t>(i));
    return t;
  }();
  return table;
}

// ---- nvfp4-ggml ---------------------------------------------------------------

// Out (quant_simd.h): f32, or bf16/f16 rounded from the same f32 values.
template <class Out>
void DecodeGgmlPortable(const uint8_t* in, uint64_t nb, typename Out::T* y) {
  const auto& ue = Ue4m3HalfTable();
  for (uint64_t b = 0; b < nb; ++b, in += kNvfp4GgmlBlockBytes) {
    for (int s = 0; s < 4; ++s, y += 16) {
      const float d = ue[in[s]];
      const uint8_t* q = in + 4 + 8 * s;
      for (int j = 0; j < 8; ++j) {
        y[j] = Out::Scalar(static_cast<float>(kE2M1Doubled[q[j] & 0x0F]) * d);
        y[j + 8] = Out::Scalar(static_cast<float>(kE2M1Doubled[q[j] >> 4]) * d);
      }
    }
  }
}

#if BOLTPACK_X86_SIMD
template <class Out>
__attribute__((target("avx2,fma,f16c"))) void DecodeGgmlAvx2(const uint8_t* in, uint64_t nb,
                                                             typename Out::T* y) {
  const auto& ue = Ue4m3HalfTable();
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kE2M1Doubled));
  const __m128i m4 = _mm_set1_epi8(0x0F);
  for (uint64_t b = 0; b < nb; ++b, in += kNvfp4GgmlBlockBytes, y += 64) {
    for (int h = 0; h < 2; ++h) {  // sub-blocks 2h, 2h+1
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 4 + 16 * h));
      const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(q, m4));
      const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(q, 4), m4));
      const __m256 d0 = _mm256_set1_ps(ue[in[2 * h]]);
      const __m256 d1 = _mm256_set1_ps(ue[in[2 * h + 1]]);
      typename Out::T* yy = y + 32 * h;
      // ue4m3 scales are finite, and so is every product: never NaN.
      Out::Store16(yy + 0, _mm256_mul_ps(cvt(lo), d0),
                  _mm256_mul_ps(cvt(hi), d0), false);
      Out::Store16(yy + 16, _mm256_mul_ps(cvt(_mm_srli_si128(lo, 8)), d1),
                  _mm256_mul_ps(cvt(_mm_srli_si128(hi, 8)), d1), false);
    }
  }
}
#endif

// Both encoders return the index of the first block holding NaN or infinity,
// or nb.
uint64_t EncodeGgmlPortable(const float* x, uint64_t nb, uint8_t* o) {
  const auto& ue_table = Ue4m3HalfTable();
  for (uint64_t b = 0; b < nb; ++b, o += kNvfp4GgmlBlockBytes) {
    if (quant::AbsMaxBits(x, kNvfp4GgmlBlockElems) >= quant::kNonFiniteBits) return b;
    for (int s = 0; s < 4; ++s, x += 16) {
      const float amax = quant::BitsToFloat(quant::AbsMaxBits(x, 16));
      const uint8_t ue = F32ToUe4m3Ggml(amax / 6.0f);
      o[s] = ue;
      const float d = ue_table[ue];
      for (int j = 0; j < 8; ++j) {
        const int x0 = BestIndexE2M1(x[j], d);
        const int x1 = BestIndexE2M1(x[8 + j], d);
        o[4 + 8 * s + j] = static_cast<uint8_t>(x0 | (x1 << 4));
      }
    }
  }
  return nb;
}

#if BOLTPACK_X86_SIMD
__attribute__((target("avx2,fma,f16c"))) uint64_t EncodeGgmlAvx2(const float* x, uint64_t nb, uint8_t* o) {
  const auto& ue_table = Ue4m3HalfTable();
  for (uint64_t b = 0; b < nb; ++b, o += kNvfp4GgmlBlockBytes) {
    __m256 v[8];
    uint32_t amax[4];
    for (int s = 0; s < 4; ++s) {
      v[2 * s] = _mm256_loadu_ps(x + 16 * s);
      v[2 * s + 1] = _mm256_loadu_ps(x + 16 * s + 8);
      amax[s] = quant::HorizontalMaxEpi32(
          quant::AbsMaxBitsStep(quant::AbsMaxBitsStep(_mm256_setzero_si256(), v[2 * s]), v[2 * s + 1]));
    }
    if (std::max(std::max(amax[0], amax[1]), std::max(amax[2], amax[3])) >= quant::kNonFiniteBits) return b;
    for (int s = 0; s < 4; ++s) {
      const uint8_t ue = F32ToUe4m3Ggml(quant::BitsToFloat(amax[s]) / 6.0f);
      o[s] = ue;
      const __m256 d = _mm256_set1_ps(ue_table[ue]);
      // Byte j of the sub-block: value j (low nibble), value j + 8 (high).
      quant::Store8Bytes(o + 4 + 8 * s,
                         _mm256_or_si256(quant::BestIndexE2M1x8(v[2 * s], d),
                                         _mm256_slli_epi32(quant::BestIndexE2M1x8(v[2 * s + 1], d), 4)));
    }
    x += kNvfp4GgmlBlockElems;
  }
  return nb;
}
#endif

class Nvfp4GgmlCodec : public TemplatedBlockCodec<Nvfp4GgmlCodec> {
 public:
  Nvfp4GgmlCodec()
      : TemplatedBlockCodec(BlockFormat{
            "nvfp4-ggml",
            "ggml NVFP4 blocks (GGUF type 40: 64 E2M1 values, 4 UE4M3 sub-scales), ggml-exact",
            kNvfp4GgmlBlockElems,
            {{"blocks", kNvfp4GgmlBlockBytes}},
            GgmlMapping{40, GgmlExport::kStoredBytes}}) {}

  absl::Status EncodeBlocks(const float* x, uint64_t nblocks, uint8_t* const* out,
                            const BlockParams& /*params*/, bool avx2) const override {
    uint64_t bad;
#if BOLTPACK_X86_SIMD
    bad = avx2 ? EncodeGgmlAvx2(x, nblocks, out[0]) : EncodeGgmlPortable(x, nblocks, out[0]);
#else
    (void)avx2;
    bad = EncodeGgmlPortable(x, nblocks, out[0]);
#endif
    if (bad == nblocks) return absl::OkStatus();
    return absl::InvalidArgumentError("codec 'nvfp4-ggml': a block holds NaN or infinity");
  }

 private:
  friend class TemplatedBlockCodec<Nvfp4GgmlCodec>;
  template <class Out>
  static void DecodeTo(const uint8_t* const* streams, uint64_t nblocks, typename Out::T* y,
                       const BlockParams& /*params*/, bool avx2) {
    const uint8_t* in = streams[0];
#if BOLTPACK_X86_SIMD
    if (avx2) return DecodeGgmlAvx2<Out>(in, nblocks, y);
#endif
    (void)avx2;
    DecodeGgmlPortable<Out>(in, nblocks, y);
  }
};

// ---- nvfp4 (two-level) --------------------------------------------------------

absl::StatusOr<float> NumericParam(const MetaValue& v) {
  double d;
  switch (v.type) {
    case ValueType::kFloat32: d = v.f32; break;
    case ValueType::kFloat64: d = v.f64; break;
    default:
      if (IsUnsignedInt(v.type)) {
        d = static_cast<double>(v.u);
      } else if (IsSignedInt(v.type)) {
        d = static_cast<double>(v.i);
      } else {
        return absl::InvalidArgumentError("codec 'nvfp4': parameter 'tensor_scale' must be a number");
      }
  }
  const float f = static_cast<float>(d);
  if (!(std::isfinite(f) && f > 0.0f)) {
    return absl::InvalidArgumentError(
        StrCat("codec 'nvfp4': tensor_scale ", d, " is not a finite positive float32"));
  }
  return f;
}

template <class Out>
void DecodeTwoLevelPortable(const uint8_t* values, const uint8_t* scales, uint64_t nb,
                            typename Out::T* y, float ts) {
  const auto& e4 = E4m3fnTable();
  for (uint64_t b = 0; b < nb; ++b, values += 8, y += 16) {
    const float s = e4[scales[b]] * ts;
    for (int i = 0; i < 8; ++i) {
      y[2 * i] = Out::Scalar(kE2M1Float[values[i] & 0x0F] * s);
      y[2 * i + 1] = Out::Scalar(kE2M1Float[values[i] >> 4] * s);
    }
  }
}

#if BOLTPACK_X86_SIMD
// 8 codes (one per byte) -> their E2M1 values (code 8 -> +0).
__attribute__((target("avx2,fma,f16c"))) inline __m256 Lookup(__m128i codes8, __m256 pos, __m256 neg) {
  const __m256i idx = _mm256_cvtepu8_epi32(codes8);
  const __m256 p = _mm256_permutevar8x32_ps(pos, idx);  // uses idx & 7
  const __m256 n = _mm256_permutevar8x32_ps(neg, idx);
  return _mm256_blendv_ps(p, n, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
}

template <class Out>
__attribute__((target("avx2,fma,f16c"))) void DecodeTwoLevelAvx2(const uint8_t* values,
                                                                 const uint8_t* scales, uint64_t nb,
                                                                 typename Out::T* y, float ts) {
  const auto& e4 = E4m3fnTable();
  const __m256 pos = _mm256_loadu_ps(kE2M1Float);
  const __m256 neg = _mm256_loadu_ps(kE2M1Float + 8);
  const __m128i m4 = _mm_set1_epi8(0x0F);
  for (uint64_t b = 0; b < nb; ++b, values += 8, y += 16) {
    const float scale = e4[scales[b]] * ts;
    // NaN (code 0x7F) or overflowed scales can give NaN (times code 0); a
    // finite one cannot.
    const bool may_be_nan = !(std::fabs(scale) <= FLT_MAX);
    const __m256 s = _mm256_set1_ps(scale);
    const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(values));
    const __m128i lo = _mm_and_si128(v, m4);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), m4);
    const __m128i codes = _mm_unpacklo_epi8(lo, hi);  // element order
    Out::Store16(y, _mm256_mul_ps(Lookup(codes, pos, neg), s),
                _mm256_mul_ps(Lookup(_mm_srli_si128(codes, 8), pos, neg), s), may_be_nan);
  }
}
#endif

// ModelOpt's per-block scale code for a block of largest magnitude amax.
inline uint8_t TwoLevelScaleCode(float amax, float denom) {
  // per_block_scale = block_amax / (6 * weight_scale_2); zeros -> 1.0; clamp
  // [2^-9, 448]; cast to float8_e4m3fn (nearest even).
  float pbs = amax / denom;
  if (pbs == 0.0f) pbs = 1.0f;
  pbs = std::clamp(pbs, 0x1p-9f, 448.0f);
  return F32ToE4m3fnRne(pbs);
}

uint64_t EncodeTwoLevelPortable(const float* x, uint64_t nb, uint8_t* values, uint8_t* scales, float ts) {
  const float denom = 6.0f * ts;
  const auto& e4 = E4m3fnTable();
  for (uint64_t b = 0; b < nb; ++b, x += 16, values += 8) {
    const uint32_t bamax = quant::AbsMaxBits(x, 16);
    if (bamax >= quant::kNonFiniteBits) return b;
    const uint8_t code = TwoLevelScaleCode(quant::BitsToFloat(bamax), denom);
    scales[b] = code;
    const float s = e4[code] * ts;  // > 0
    for (int i = 0; i < 8; ++i) {
      const uint8_t c0 = CastFp4ModelOpt(x[2 * i] / s);
      const uint8_t c1 = CastFp4ModelOpt(x[2 * i + 1] / s);
      values[i] = static_cast<uint8_t>(c0 | (c1 << 4));
    }
  }
  return nb;
}

#if BOLTPACK_X86_SIMD
// CastFp4ModelOpt on 8 lanes (32-bit codes).
__attribute__((target("avx2,fma,f16c"))) inline __m256i CastFp4x8(__m256 q) {
  const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), q);
  static constexpr float kBounds[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  __m256i idx = _mm256_setzero_si256();
  for (float bound : kBounds) {  // idx -= (bound < a ? -1 : 0)
    idx = _mm256_sub_epi32(idx, _mm256_castps_si256(_mm256_cmp_ps(_mm256_set1_ps(bound), a, _CMP_LT_OQ)));
  }
  const __m256 tie = _mm256_or_ps(
      _mm256_or_ps(_mm256_cmp_ps(a, _mm256_set1_ps(0.75f), _CMP_EQ_OQ),
                   _mm256_cmp_ps(a, _mm256_set1_ps(1.75f), _CMP_EQ_OQ)),
      _mm256_cmp_ps(a, _mm256_set1_ps(3.5f), _CMP_EQ_OQ));
  idx = _mm256_sub_epi32(idx, _mm256_castps_si256(tie));
  const __m256 neg = _mm256_cmp_ps(q, _mm256_setzero_ps(), _CMP_LT_OQ);
  return _mm256_or_si256(idx, _mm256_and_si256(_mm256_castps_si256(neg), _mm256_set1_epi32(8)));
}

__attribute__((target("avx2,fma,f16c"))) uint64_t EncodeTwoLevelAvx2(const float* x, uint64_t nb,
                                                                     uint8_t* values, uint8_t* scales,
                                                                     float ts) {
  const float denom = 6.0f * ts;
  const auto& e4 = E4m3fnTable();
  for (uint64_t b = 0; b < nb; ++b, x += 16, values += 8) {
    const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    const uint32_t bamax = quant::HorizontalMaxEpi32(
        quant::AbsMaxBitsStep(quant::AbsMaxBitsStep(_mm256_setzero_si256(), v0), v1));
    if (bamax >= quant::kNonFiniteBits) return b;
    const uint8_t code = TwoLevelScaleCode(quant::BitsToFloat(bamax), denom);
    scales[b] = code;
    const __m256 s = _mm256_set1_ps(e4[code] * ts);
    const __m128i codes = quant::CodesToBytes(CastFp4x8(_mm256_div_ps(v0, s)), CastFp4x8(_mm256_div_ps(v1, s)));
    quant::StorePairedNibbles(values, codes);
  }
  return nb;
}
#endif

class Nvfp4Codec : public TemplatedBlockCodec<Nvfp4Codec> {
 public:
  Nvfp4Codec()
      : TemplatedBlockCodec(BlockFormat{"nvfp4",
                               "NVIDIA NVFP4 as ModelOpt: E2M1 values, E4M3 scale per 16, fp32 "
                               "tensor scale",
                               kNvfp4BlockElems,
                               {{"values", 8}, {"scales", 1}},
                               GgmlMapping{40, GgmlExport::kTwoLevelNvfp4}}) {}

  absl::StatusOr<BlockParams> ParseStoredParams(const CodecParams& params) const override {
    if (params.size() != 1 || params[0].first != kNvfp4TensorScaleParam) {
      return absl::InvalidArgumentError(
          StrCat("codec 'nvfp4' needs exactly one parameter, 'tensor_scale' (FLOAT32), got ",
                 params.size(), params.empty() ? "" : StrCat(" starting with '", params[0].first, "'")));
    }
    const MetaValue& v = params[0].second;
    if (v.type != ValueType::kFloat32) {
      return absl::InvalidArgumentError(
          StrCat("codec 'nvfp4': parameter 'tensor_scale' has type ", ValueTypeName(v.type),
                 ", expected FLOAT32"));
    }
    if (!(std::isfinite(v.f32) && v.f32 > 0.0f)) {
      return absl::InvalidArgumentError(
          StrCat("codec 'nvfp4': tensor_scale ", v.f32, " is not finite and positive"));
    }
    BlockParams p;
    p.tensor_scale = v.f32;
    return p;
  }

  absl::Status CheckEncodeParams(const CodecParams& params) const override {
    // Keys, kinds and range as ParamSpecs declares them; then what FP32,
    // which stores it, can hold (a tiny scale rounds to 0).
    BP_RETURN_IF_ERROR(CheckEncoderParams(*this, params));
    if (params.empty()) return absl::OkStatus();
    return NumericParam(params[0].second).status();
  }

  std::vector<CodecParamSpec> ParamSpecs() const override {
    CodecParamSpec scale;
    scale.name = kNvfp4TensorScaleParam;
    scale.kind = ParamKind::kNumber;
    scale.help = "the FP32 per-tensor scale (ModelOpt's weight_scale_2); always stored";
    scale.min = 0.0;
    scale.min_exclusive = true;
    scale.max = 3.4e38;  // finite as FP32, which stores it
    scale.default_text = "amax / 2688, from the tensor (as ModelOpt)";
    return {scale};
  }

  bool NeedsTensorAmax(const CodecParams& requested) const override { return requested.empty(); }

  absl::StatusOr<CodecParams> EncodeParams(const CodecParams& requested, float amax) const override {
    float ts;
    if (!requested.empty()) {
      BP_ASSIGN_OR_RETURN(ts, NumericParam(requested[0].second));
    } else if (amax == 0.0f) {
      ts = 1.0f;  // all zeros: any scale; 1 keeps the ggml export trivial
    } else {
      // ModelOpt: weight_scale_2 = amax / (6 * 448), in fp32. Kept normal so
      // block scales and the division below stay finite.
      ts = std::max(amax / 2688.0f, FLT_MIN);
    }
    CodecParams p;
    p.emplace_back(kNvfp4TensorScaleParam, MetaValue::Float32(ts));
    return p;
  }

  absl::Status EncodeBlocks(const float* x, uint64_t nblocks, uint8_t* const* out,
                            const BlockParams& params, bool avx2) const override {
    uint64_t bad;
#if BOLTPACK_X86_SIMD
    bad = avx2 ? EncodeTwoLevelAvx2(x, nblocks, out[0], out[1], params.tensor_scale)
               : EncodeTwoLevelPortable(x, nblocks, out[0], out[1], params.tensor_scale);
#else
    (void)avx2;
    bad = EncodeTwoLevelPortable(x, nblocks, out[0], out[1], params.tensor_scale);
#endif
    if (bad == nblocks) return absl::OkStatus();
    return absl::InvalidArgumentError("codec 'nvfp4': a block holds NaN or infinity");
  }

 private:
  friend class TemplatedBlockCodec<Nvfp4Codec>;
  template <class Out>
  static void DecodeTo(const uint8_t* const* in, uint64_t nblocks, typename Out::T* y,
                       const BlockParams& params, bool avx2) {
#if BOLTPACK_X86_SIMD
    if (avx2) return DecodeTwoLevelAvx2<Out>(in[0], in[1], nblocks, y, params.tensor_scale);
#endif
    (void)avx2;
    DecodeTwoLevelPortable<Out>(in[0], in[1], nblocks, y, params.tensor_scale);
  }
};

}  // namespace

std::unique_ptr<BlockCodec> MakeNvfp4GgmlCodec() { return std::make_unique<Nvfp4GgmlCodec>(); }
std::unique_ptr<BlockCodec> MakeNvfp4Codec() { return std::make_unique<Nvfp4Codec>(); }

absl::Status RegisterNvfp4Codecs() {
  BP_RETURN_IF_ERROR(RegisterCodec(MakeNvfp4GgmlCodec()));
  return RegisterCodec(MakeNvfp4Codec());
}

absl::StatusOr<GgmlNvfp4Tensor> Nvfp4ToGgml(const TensorInfo& info, absl::Span<const uint8_t> values,
                                            absl::Span<const uint8_t> scales) {
  static const std::unique_ptr<BlockCodec> codec = MakeNvfp4Codec();
  BP_RETURN_IF_ERROR(codec->ValidateRecord(info));
  const uint64_t inner = info.shape.back();
  if (inner % kNvfp4GgmlBlockElems != 0) {
    return absl::InvalidArgumentError(
        StrCat("tensor '", info.name, "': GGUF NVFP4 needs rows of a multiple of 64 values, not ", inner));
  }
  const uint64_t n = info.element_count();
  if (values.size() != n / 2 || scales.size() != n / 16) {
    return absl::InvalidArgumentError(StrCat("tensor '", info.name, "': streams of ", values.size(), " and ",
                                             scales.size(), " bytes, expected ", n / 2, " and ", n / 16));
  }
  GgmlNvfp4Tensor outt;
  outt.tensor_scale = codec->ParseStoredParams(info.codec_params)->tensor_scale;
  const uint64_t nb = n / kNvfp4GgmlBlockElems;
  ResizeHuge(outt.blocks, nb * kNvfp4GgmlBlockBytes);
  for (uint64_t g = 0; g < nb; ++g) {
    uint8_t* o = outt.blocks.data() + g * kNvfp4GgmlBlockBytes;
    for (int s = 0; s < 4; ++s) {
      const uint64_t blk = g * 4 + s;
      const uint8_t sc = scales[blk];
      if ((sc & 0x80) != 0 || sc == 0x7F) {
        return absl::InvalidArgumentError(
            StrCat("tensor '", info.name, "': scale byte ", static_cast<int>(sc), " of block ", blk,
                   " is negative or NaN, which GGUF NVFP4 cannot hold"));
      }
      o[s] = sc;
      const uint8_t* v = values.data() + blk * 8;
      uint8_t codes[16];
      for (int i = 0; i < 8; ++i) {
        codes[2 * i] = v[i] & 0x0F;
        codes[2 * i + 1] = v[i] >> 4;
      }
      for (int j = 0; j < 8; ++j) {
        // Code 8 (-0) decodes as +0 in both layouts; ggml never writes it.
        const uint8_t lo = codes[j] == 8 ? 0 : codes[j];
        const uint8_t hi = codes[j + 8] == 8 ? 0 : codes[j + 8];
        o[4 + 8 * s + j] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
  }
  return outt;
}

absl::StatusOr<Nvfp4Streams> GgmlToNvfp4(absl::Span<const uint64_t> shape, absl::Span<const uint8_t> blocks,
                                         float tensor_scale) {
  if (shape.empty() || shape.back() % kNvfp4GgmlBlockElems != 0) {
    return absl::InvalidArgumentError("GGUF NVFP4 tensor: innermost dimension is not a multiple of 64");
  }
  auto n = CheckedProduct(shape);
  if (!n || *n >= (uint64_t{1} << 56)) return absl::InvalidArgumentError("GGUF NVFP4 tensor: too many elements");
  const uint64_t nb = *n / kNvfp4GgmlBlockElems;
  if (blocks.size() != nb * kNvfp4GgmlBlockBytes) {
    return absl::InvalidArgumentError(StrCat("GGUF NVFP4 tensor: ", blocks.size(), " bytes, expected ",
                                             nb * kNvfp4GgmlBlockBytes));
  }
  if (!(std::isfinite(tensor_scale) && tensor_scale > 0.0f)) {
    return absl::InvalidArgumentError(StrCat("GGUF NVFP4 tensor: scale ", tensor_scale,
                                             " is not finite and positive"));
  }
  Nvfp4Streams out;
  ResizeHuge(out.values, *n / 2);
  ResizeHuge(out.scales, *n / 16);
  for (uint64_t g = 0; g < nb; ++g) {
    const uint8_t* in = blocks.data() + g * kNvfp4GgmlBlockBytes;
    for (int s = 0; s < 4; ++s) {
      const uint64_t blk = g * 4 + s;
      // ggml reads 0x7F and 0x80 as 0, 0x81..0xFE as the byte without bit 7,
      // and 0xFF as 480, which float8_e4m3fn cannot hold.
      const uint8_t d = in[s];
      if (d == 0xFF) {
        return absl::InvalidArgumentError(StrCat("GGUF NVFP4 tensor: block ", g, " has sub-scale byte 0xFF (480), "
                                                 "which float8_e4m3fn cannot hold"));
      }
      out.scales[blk] = d == 0x7F ? 0 : static_cast<uint8_t>(d & 0x7F);
      uint8_t codes[16];
      for (int j = 0; j < 8; ++j) {
        codes[j] = in[4 + 8 * s + j] & 0x0F;
        codes[j + 8] = in[4 + 8 * s + j] >> 4;
      }
      for (int i = 0; i < 8; ++i) {
        out.values[blk * 8 + i] = static_cast<uint8_t>(codes[2 * i] | (codes[2 * i + 1] << 4));
      }
    }
  }
  out.params.emplace_back(kNvfp4TensorScaleParam, MetaValue::Float32(tensor_scale));
  return out;
}

}  // namespace boltpack
