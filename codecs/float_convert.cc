#include "codecs/float_convert.h"

#include "common/cpu_features.h"

#include <cstring>

#include "codecs/x86_simd.h"

namespace boltpack {
namespace {

// Elements per block of the bulk loops. The inner loop has a constant trip
// count that is a multiple of every vector width, which GCC's -O2 "very
// cheap" vectoriser needs (it will not vectorise loops that need a scalar
// epilogue); loads and stores go through memcpy so unaligned buffers are fine.
constexpr size_t kBlock = 16;

template <typename Src, typename Dst, typename Fn>
inline void ConvertLoop(const void* src, void* dst, size_t n, Fn fn) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    Src in[kBlock];
    Dst out[kBlock];
    std::memcpy(in, s + i * sizeof(Src), sizeof in);
    for (size_t k = 0; k < kBlock; ++k) out[k] = fn(in[k]);
    std::memcpy(d + i * sizeof(Dst), out, sizeof out);
  }
  for (; i < n; ++i) {
    Src in;
    std::memcpy(&in, s + i * sizeof(Src), sizeof in);
    const Dst out = fn(in);
    std::memcpy(d + i * sizeof(Dst), &out, sizeof out);
  }
}

using ConvertFn = void (*)(const void*, void*, size_t);

struct F16Dispatch {
  ConvertFn to_f32;
  ConvertFn from_f32;
};

const F16Dispatch& Dispatch() {
  // Chosen once: the CPU does not change under us, and a function-local
  // static is initialised thread-safely.
  static const F16Dispatch dispatch = [] {
    if (float_convert_internal::F16CSupported()) {
      return F16Dispatch{float_convert_internal::F16ToF32F16C,
                         float_convert_internal::F32ToF16F16C};
    }
    return F16Dispatch{float_convert_internal::F16ToF32Portable,
                       float_convert_internal::F32ToF16Portable};
  }();
  return dispatch;
}

bool IsFloatTarget(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16;
}

}  // namespace

namespace float_convert_internal {

void F16ToF32Portable(const void* src, void* dst, size_t n) {
  ConvertLoop<uint16_t, uint32_t>(src, dst, n, F16BitsToF32Bits);
}

void F32ToF16Portable(const void* src, void* dst, size_t n) {
  ConvertLoop<uint32_t, uint16_t>(src, dst, n, F32BitsToF16Bits);
}

#if BOLTPACK_X86_SIMD

bool F16CSupported() { return DetectCpuFeatures().f16c; }

__attribute__((target("avx,f16c"))) void F16ToF32F16C(const void* src, void* dst,
                                                      size_t n) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  size_t i = 0;
  // VCVTPH2PS is exact, keeps NaN payloads and sets the quiet bit: the same
  // bits as F16BitsToF32Bits for all 65536 inputs (tested exhaustively).
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 2 * i));
    _mm256_storeu_ps(reinterpret_cast<float*>(d + 4 * i), _mm256_cvtph_ps(h));
  }
  F16ToF32Portable(s + 2 * i, d + 4 * i, n - i);
}

__attribute__((target("avx,f16c"))) void F32ToF16F16C(const void* src, void* dst,
                                                      size_t n) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 f = _mm256_loadu_ps(reinterpret_cast<const float*>(s + 4 * i));
    // Immediate 0: round to nearest even regardless of MXCSR.RC.
    const __m128i h = _mm256_cvtps_ph(f, 0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 2 * i), h);
    // VCVTPS2PH keeps the top NaN payload bits; ggml-base writes sign|0x7e00
    // for every NaN. NaNs are rare, so patch them after the fact.
    const int nan_lanes = _mm256_movemask_ps(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
    if (__builtin_expect(nan_lanes != 0, 0)) {
      F32ToF16Portable(s + 4 * i, d + 2 * i, 8);
    }
  }
  F32ToF16Portable(s + 4 * i, d + 2 * i, n - i);
}

#else  // !BOLTPACK_X86_SIMD

bool F16CSupported() { return false; }
// Never selected here; kept so callers need no #if.
void F16ToF32F16C(const void* src, void* dst, size_t n) { F16ToF32Portable(src, dst, n); }
void F32ToF16F16C(const void* src, void* dst, size_t n) { F32ToF16Portable(src, dst, n); }

#endif  // BOLTPACK_X86_SIMD

void F32ToBF16Portable(const void* src, void* dst, size_t n) {
  ConvertLoop<uint32_t, uint16_t>(src, dst, n, F32BitsToBF16Bits);
}

#if BOLTPACK_X86_SIMD
bool Avx2Supported() { return DetectCpuFeatures().avx2; }

// ggml's f32 -> bf16 rule (F32BitsToBF16Bits) eight lanes at a time: the
// same round-to-nearest-even add and NaN select, then a pack of the low
// halves. The portable loop compiles to SSE2, which has no unsigned 32->16
// pack: a decode to bf16 spent most of its time there (bench/
// capi_decode_bench: f32 and q8_0 to bf16 were 4-6x slower than to f32).
__attribute__((target("avx2"))) inline __m256i F32BitsToBF16Bits8(__m256i u) {
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd)), 16);
  const __m256i nan = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  // |u| > inf as a signed compare: both sides are below 2^31.
  const __m256i is_nan =
      _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  return _mm256_blendv_epi8(rounded, nan, is_nan);  // every lane below 2^16
}

__attribute__((target("avx2"))) void F32ToBF16Avx2(const void* src, void* dst, size_t n) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = F32BitsToBF16Bits8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 4 * i)));
    const __m256i b = F32BitsToBF16Bits8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 4 * i + 32)));
    // packus works per 128-bit lane: a0 b0 a1 b1, so put the quarters back in order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + 2 * i), packed);
  }
  F32ToBF16Portable(s + 4 * i, d + 2 * i, n - i);
}
#else
bool Avx2Supported() { return false; }
void F32ToBF16Avx2(const void* src, void* dst, size_t n) { F32ToBF16Portable(src, dst, n); }
#endif

}  // namespace float_convert_internal

void ConvertF16ToF32(const void* src, void* dst, size_t n) { Dispatch().to_f32(src, dst, n); }

void ConvertF32ToF16(const void* src, void* dst, size_t n) { Dispatch().from_f32(src, dst, n); }

void ConvertBF16ToF32(const void* src, void* dst, size_t n) {
  ConvertLoop<uint16_t, uint32_t>(src, dst, n, BF16BitsToF32Bits);
}

void ConvertF32ToBF16(const void* src, void* dst, size_t n) {
  // Chosen once, as the f16 paths are.
  static const ConvertFn convert =
      float_convert_internal::Avx2Supported() ? float_convert_internal::F32ToBF16Avx2
                                              : float_convert_internal::F32ToBF16Portable;
  convert(src, dst, n);
}

// Two-step conversions go through an f32 stack buffer rather than a fused
// scalar: each step then runs its vectorised (or F16C) loop, several times
// faster than the fused loop the compiler cannot vectorise, with the same bits.
namespace {

template <size_t kSrcSize>
void ViaF32(const void* src, void* dst, size_t n, ConvertFn to_f32, ConvertFn from_f32,
            size_t dst_size) {
  constexpr size_t kTmp = 1024;
  float tmp[kTmp];
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < n; i += kTmp) {
    const size_t m = n - i < kTmp ? n - i : kTmp;
    to_f32(s + i * kSrcSize, tmp, m);
    from_f32(tmp, d + i * dst_size, m);
  }
}

}  // namespace

void ConvertF16ToBF16(const void* src, void* dst, size_t n) {
  ViaF32<2>(src, dst, n, ConvertF16ToF32, ConvertF32ToBF16, 2);
}

void ConvertBF16ToF16(const void* src, void* dst, size_t n) {
  ViaF32<2>(src, dst, n, ConvertBF16ToF32, ConvertF32ToF16, 2);
}

void ConvertF64ToF32(const void* src, void* dst, size_t n) {
  ConvertLoop<double, float>(src, dst, n, [](double v) { return static_cast<float>(v); });
}

bool CanConvertFloats(DType from, DType to) {
  if (!IsFloatTarget(to)) return false;
  return IsFloatTarget(from) || from == DType::kF64;
}

bool ConvertFloats(DType from, DType to, const void* src, void* dst, size_t n) {
  if (!CanConvertFloats(from, to)) return false;
  if (from == to) {
    if (n != 0) std::memcpy(dst, src, n * static_cast<size_t>(DTypeSize(from)));
    return true;
  }
  if (from == DType::kF64) {
    if (to == DType::kF32) {
      ConvertF64ToF32(src, dst, n);
      return true;
    }
    // f64 -> f16/bf16 goes through f32: ggml's rule is a C cast, then the
    // f32 rounding (a double rounding, deliberately).
    ViaF32<8>(src, dst, n, ConvertF64ToF32,
              to == DType::kF16 ? ConvertF32ToF16 : ConvertF32ToBF16, 2);
    return true;
  }
  switch (from) {
    case DType::kF32:
      (to == DType::kF16 ? ConvertF32ToF16 : ConvertF32ToBF16)(src, dst, n);
      return true;
    case DType::kF16:
      (to == DType::kF32 ? ConvertF16ToF32 : ConvertF16ToBF16)(src, dst, n);
      return true;
    case DType::kBF16:
      (to == DType::kF32 ? ConvertBF16ToF32 : ConvertBF16ToF16)(src, dst, n);
      return true;
    default:
      return false;
  }
}

}  // namespace boltpack
