#include "codecs/bf16_exp/byte_split.h"

#include <algorithm>
#include <cstring>

#include "common/cpu_features.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define BOLTPACK_BF16_X86 1
#endif

namespace boltpack::bf16_exp {

void SplitBf16Scalar(const uint8_t* src, size_t n, uint8_t* sm, uint8_t* ex) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t x = uint32_t{src[2 * i]} | uint32_t{src[2 * i + 1]} << 8;
    sm[i] = static_cast<uint8_t>(((x >> 8) & 0x80u) | (x & 0x7fu));
    ex[i] = static_cast<uint8_t>(x >> 7);
  }
}

void JoinBf16Scalar(const uint8_t* sm, const uint8_t* ex, size_t n, uint8_t* dst) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t s = sm[i], e = ex[i];
    dst[2 * i] = static_cast<uint8_t>((s & 0x7fu) | (e & 1u) << 7);
    dst[2 * i + 1] = static_cast<uint8_t>((s & 0x80u) | e >> 1);
  }
}

#ifdef BOLTPACK_BF16_X86
namespace {

// 16 values: v0, v1 hold 8 bf16 each.
inline void Split16Sse2(const uint8_t* src, uint8_t* sm, uint8_t* ex) {
  const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
  const __m128i ff = _mm_set1_epi16(0xff), m7f = _mm_set1_epi16(0x7f), m80 = _mm_set1_epi16(0x80);
  const __m128i e0 = _mm_and_si128(_mm_srli_epi16(v0, 7), ff);
  const __m128i e1 = _mm_and_si128(_mm_srli_epi16(v1, 7), ff);
  const __m128i s0 = _mm_or_si128(_mm_and_si128(v0, m7f), _mm_and_si128(_mm_srli_epi16(v0, 8), m80));
  const __m128i s1 = _mm_or_si128(_mm_and_si128(v1, m7f), _mm_and_si128(_mm_srli_epi16(v1, 8), m80));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(ex), _mm_packus_epi16(e0, e1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(sm), _mm_packus_epi16(s0, s1));
}

inline void Join16Sse2(const uint8_t* sm, const uint8_t* ex, uint8_t* dst) {
  const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sm));
  const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ex));
  // Per byte: lo = (s & 0x7f) | (e & 1) << 7, hi = (s & 0x80) | e >> 1.
  // 16-bit shifts move no wanted bit across a byte boundary once masked.
  const __m128i lo = _mm_or_si128(_mm_and_si128(s, _mm_set1_epi8(0x7f)),
                                  _mm_and_si128(_mm_slli_epi16(e, 7), _mm_set1_epi8(static_cast<char>(0x80))));
  const __m128i hi = _mm_or_si128(_mm_and_si128(s, _mm_set1_epi8(static_cast<char>(0x80))),
                                  _mm_and_si128(_mm_srli_epi16(e, 1), _mm_set1_epi8(0x7f)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_unpacklo_epi8(lo, hi));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16), _mm_unpackhi_epi8(lo, hi));
}

__attribute__((target("avx2"))) void SplitAvx2(const uint8_t* src, size_t n, uint8_t* sm, uint8_t* ex) {
  size_t i = 0;
  const __m256i ff = _mm256_set1_epi16(0xff), m7f = _mm256_set1_epi16(0x7f), m80 = _mm256_set1_epi16(0x80);
  for (; i + 32 <= n; i += 32) {
    const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i));
    const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i + 32));
    const __m256i e0 = _mm256_and_si256(_mm256_srli_epi16(v0, 7), ff);
    const __m256i e1 = _mm256_and_si256(_mm256_srli_epi16(v1, 7), ff);
    const __m256i s0 = _mm256_or_si256(_mm256_and_si256(v0, m7f), _mm256_and_si256(_mm256_srli_epi16(v0, 8), m80));
    const __m256i s1 = _mm256_or_si256(_mm256_and_si256(v1, m7f), _mm256_and_si256(_mm256_srli_epi16(v1, 8), m80));
    // packus works per 128-bit half: fix the order of the 64-bit quarters.
    const __m256i e = _mm256_permute4x64_epi64(_mm256_packus_epi16(e0, e1), 0xd8);
    const __m256i s = _mm256_permute4x64_epi64(_mm256_packus_epi16(s0, s1), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(ex + i), e);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(sm + i), s);
  }
  SplitBf16Scalar(src + 2 * i, n - i, sm + i, ex + i);
}

__attribute__((target("avx2"))) void JoinAvx2(const uint8_t* sm, const uint8_t* ex, size_t n, uint8_t* dst) {
  size_t i = 0;
  const __m256i m7f = _mm256_set1_epi8(0x7f), m80 = _mm256_set1_epi8(static_cast<char>(0x80));
  for (; i + 32 <= n; i += 32) {
    const __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sm + i));
    const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ex + i));
    const __m256i lo = _mm256_or_si256(_mm256_and_si256(s, m7f), _mm256_and_si256(_mm256_slli_epi16(e, 7), m80));
    const __m256i hi = _mm256_or_si256(_mm256_and_si256(s, m80), _mm256_and_si256(_mm256_srli_epi16(e, 1), m7f));
    const __m256i a = _mm256_unpacklo_epi8(lo, hi);  // values 0-7, 16-23
    const __m256i b = _mm256_unpackhi_epi8(lo, hi);  // values 8-15, 24-31
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 2 * i), _mm256_permute2x128_si256(a, b, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 2 * i + 32), _mm256_permute2x128_si256(a, b, 0x31));
  }
  JoinBf16Scalar(sm + i, ex + i, n - i, dst + 2 * i);
}

bool UseAvx2() {
  static const bool avx2 = DetectCpuFeatures().avx2;
  return avx2;
}

}  // namespace
#endif

void SplitBf16(const uint8_t* src, size_t n, uint8_t* sm, uint8_t* ex) {
#ifdef BOLTPACK_BF16_X86
  if (UseAvx2()) return SplitAvx2(src, n, sm, ex);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) Split16Sse2(src + 2 * i, sm + i, ex + i);
  SplitBf16Scalar(src + 2 * i, n - i, sm + i, ex + i);
#else
  SplitBf16Scalar(src, n, sm, ex);
#endif
}

void JoinBf16(const uint8_t* sm, const uint8_t* ex, size_t n, uint8_t* dst) {
#ifdef BOLTPACK_BF16_X86
  if (UseAvx2()) return JoinAvx2(sm, ex, n, dst);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) Join16Sse2(sm + i, ex + i, dst + 2 * i);
  JoinBf16Scalar(sm + i, ex + i, n - i, dst + 2 * i);
#else
  JoinBf16Scalar(sm, ex, n, dst);
#endif
}

void CountExponents(const uint8_t* ex, size_t n, uint64_t* hist) {
  // Four tables: the common exponents repeat back to back, and one table
  // would serialise on its counters.
  uint32_t h[4][256] = {};
  size_t i = 0;
  while (i < n) {
    // 32-bit counters: flush before any can overflow.
    const size_t end = i + std::min<size_t>(n - i, size_t{1} << 30);
    for (; i + 8 <= end; i += 8) {
      uint64_t w;
      std::memcpy(&w, ex + i, 8);
      ++h[0][w & 0xff];
      ++h[1][(w >> 8) & 0xff];
      ++h[2][(w >> 16) & 0xff];
      ++h[3][(w >> 24) & 0xff];
      ++h[0][(w >> 32) & 0xff];
      ++h[1][(w >> 40) & 0xff];
      ++h[2][(w >> 48) & 0xff];
      ++h[3][w >> 56];
    }
    for (; i < end; ++i) ++h[0][ex[i]];
    for (int s = 0; s < 256; ++s) {
      hist[s] += uint64_t{h[0][s]} + h[1][s] + h[2][s] + h[3][s];
      h[0][s] = h[1][s] = h[2][s] = h[3][s] = 0;
    }
  }
}

}  // namespace boltpack::bf16_exp
