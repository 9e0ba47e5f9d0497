#include "codecs/bf16_spec/split_kernel.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BP_SPEC_HAVE_AVX512_MERGE 1
#endif

namespace boltpack::bf16_spec {
namespace {

#ifdef BP_SPEC_HAVE_AVX512_MERGE
// 32 elements per step: the kept values expand into the set lanes, the
// pruned ones into the clear lanes (expand loads read only what they use).
__attribute__((target("avx512f,avx512bw,avx512vbmi2"))) void MergeAvx512(const uint8_t* bitmap, uint64_t m,
                                                                         const uint16_t* kv, const uint16_t* pv,
                                                                         uint16_t* out) {
  uint64_t base = 0;
  for (; base + 32 <= m; base += 32) {
    uint32_t w;
    std::memcpy(&w, bitmap + base / 8, 4);
    __m512i x = _mm512_maskz_expandloadu_epi16(static_cast<__mmask32>(w), kv);
    kv += __builtin_popcount(w);
    if (pv != nullptr) {
      x = _mm512_or_si512(x, _mm512_maskz_expandloadu_epi16(static_cast<__mmask32>(~w), pv));
      pv += 32 - __builtin_popcount(w);
    }
    _mm512_storeu_si512(out + base, x);
  }
  if (base < m) {
    // The tail: whole bytes of the bitmap from base / 8 on.
    MergeByBitmapScalar(bitmap + base / 8, m - base, kv, pv, out + base);
  }
}

bool HasAvx512Vbmi2() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vbmi2");
  return has;
}
#endif

}  // namespace

void MergeByBitmap(const uint8_t* bitmap, uint64_t m, const uint16_t* kv, const uint16_t* pv, uint16_t* out) {
#ifdef BP_SPEC_HAVE_AVX512_MERGE
  if (m >= 32 && HasAvx512Vbmi2()) {
    MergeAvx512(bitmap, m, kv, pv, out);
    return;
  }
#endif
  MergeByBitmapScalar(bitmap, m, kv, pv, out);
}

}  // namespace boltpack::bf16_spec
