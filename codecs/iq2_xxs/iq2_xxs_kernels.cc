#include "codecs/iq2_xxs/iq2_xxs_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define BOLTPACK_IQ2_HAVE_AVX2_PATH 1
#else
#define BOLTPACK_IQ2_HAVE_AVX2_PATH 0
#endif

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <vector>

#include "codecs/float_convert.h"
#include "codecs/iq2_xxs/iq2_xxs_tables.h"
#include "common/cpu_features.h"

namespace boltpack::iq2_xxs {
namespace {

// ---- tables derived from iq2_xxs_tables.h at compile time -------------------

struct Tables {
  // Decode: grid magnitudes as floats (8, 25, 43), one row of 8 per index,
  // and sign masks as float sign bits (0 or 0x80000000) per sign index.
  alignas(32) float gridf[256][8];
  alignas(32) uint32_t signbits[128][8];
  constexpr Tables() : gridf(), signbits() {
    for (int k = 0; k < 256; ++k) {
      for (int j = 0; j < 8; ++j) {
        const float v = static_cast<float>((kIq2xxsGrid[k] >> (8 * j)) & 0xff);
        gridf[k][j] = v;
      }
    }
    for (int s = 0; s < 128; ++s) {
      for (int j = 0; j < 8; ++j) {
        signbits[s][j] = (kKsignsIq2xs[s] & kKmaskIq2xs[j]) ? 0x80000000u : 0u;
      }
    }
  }
};

constexpr Tables kTables;

inline uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // little-endian host (x86-64 and the like)
  return v;
}

// ---- decode -------------------------------------------------------------------

void DecodePortable(const uint8_t* src, size_t nblocks, float* dst) {
  for (size_t b = 0; b < nblocks; ++b, src += kBlockBytes, dst += kBlockElems) {
    const float d = F16ToF32(static_cast<uint16_t>(src[0] | (src[1] << 8)));
    for (int ib = 0; ib < 8; ++ib) {
      const uint32_t aux0 = Load32(src + 2 + 8 * ib);
      const uint32_t aux1 = Load32(src + 2 + 8 * ib + 4);
      const float db = d * (0.5f + static_cast<float>(aux1 >> 28)) * 0.25f;
      float* y = dst + 32 * ib;
      for (int l = 0; l < 4; ++l) {
        const float* grid = kTables.gridf[(aux0 >> (8 * l)) & 255];
        const uint32_t* signs = kTables.signbits[(aux1 >> (7 * l)) & 127];
        // db * (+-g) has the bits of ggml's (db * g) * (+-1.f), NaN included.
        for (int j = 0; j < 8; ++j) y[8 * l + j] = db * BitsFloat(FloatBits(grid[j]) ^ signs[j]);
      }
    }
  }
}

#if BOLTPACK_IQ2_HAVE_AVX2_PATH
__attribute__((target("avx2,fma"))) void DecodeAvx2(const uint8_t* src, size_t nblocks,
                                                          float* dst) {
  for (size_t b = 0; b < nblocks; ++b, src += kBlockBytes, dst += kBlockElems) {
    const float d = F16ToF32(static_cast<uint16_t>(src[0] | (src[1] << 8)));
    for (int ib = 0; ib < 8; ++ib) {
      const uint32_t aux0 = Load32(src + 2 + 8 * ib);
      const uint32_t aux1 = Load32(src + 2 + 8 * ib + 4);
      const float db = d * (0.5f + static_cast<float>(aux1 >> 28)) * 0.25f;
      const __m256 vdb = _mm256_set1_ps(db);
      float* y = dst + 32 * ib;
      for (int l = 0; l < 4; ++l) {
        const __m256 g = _mm256_load_ps(kTables.gridf[(aux0 >> (8 * l)) & 255]);
        const __m256 s = _mm256_load_ps(
            reinterpret_cast<const float*>(kTables.signbits[(aux1 >> (7 * l)) & 127]));
        _mm256_storeu_ps(y + 8 * l, _mm256_mul_ps(vdb, _mm256_xor_ps(g, s)));
      }
    }
  }
}

#endif  // BOLTPACK_IQ2_HAVE_AVX2_PATH

// ---- encode kernels -------------------------------------------------------------
//
// For one group of 8 magnitudes a_j with weights w_j (wa_j = w_j * a_j, one of
// them negated when the sign parity forces a flip), grid index k at scale t
// costs sum_j w_j (t g_kj - a_j)^2 - sum_j w_j a_j^2 = t (t A_k + N_k) with
//   A_k = sum_j w_j g_kj^2,  N_k = -2 sum_j wa_j g_kj.
// ComputeA/ComputeN fill A and N for all 256 k; Argmin finds the k with the
// lowest t A_k + N_k (t > 0). Both versions use the same fused multiply-adds
// in the same order, so the results are bit-identical.
//
// A and N are stored in slot order: the grid points sorted by their elements
// 0..3 (then 4..7), so the 8 points of a vector share few 4-element
// prefixes (at most kMaxPrefixSpan consecutive ones). N's first four
// multiply-adds are then done once per prefix (64 of them) instead of once
// per point, and each vector picks its prefixes' partial sums with one
// permute (the same operations on the same values: the same bits).

inline constexpr int kPrefixes = 64;  // distinct (g_0..g_3) of the grid
inline constexpr int kMaxPrefixSpan = 8;

struct SlotTables {
  uint8_t slot_of[256];         // grid index -> slot
  alignas(32) uint32_t key[256];  // slot -> grid index (the argmin key's low byte)
  alignas(32) float g[8][256];    // element j of the point in each slot
  alignas(32) float g2[8][256];   // squared
  alignas(32) float pg[4][kPrefixes];  // elements 0..3 of each prefix
  uint8_t base[32];                    // per vector of 8 slots: its first prefix
  alignas(32) uint32_t perm[32][8];    // per slot: its prefix - base
  int prefixes = 0;
  int max_span = 0;

  static constexpr uint8_t Elem(int k, int j) {
    return static_cast<uint8_t>((kIq2xxsGrid[k] >> (8 * j)) & 0xff);
  }
  static constexpr bool Less(int a, int b) {  // elements 0..7, lexicographic
    for (int j = 0; j < 8; ++j) {
      if (Elem(a, j) != Elem(b, j)) return Elem(a, j) < Elem(b, j);
    }
    return false;
  }
  static constexpr bool SamePrefix(int a, int b) {
    for (int j = 0; j < 4; ++j) {
      if (Elem(a, j) != Elem(b, j)) return false;
    }
    return true;
  }

  constexpr SlotTables() : slot_of(), key(), g(), g2(), pg(), base(), perm() {
    int order[256] = {};
    for (int k = 0; k < 256; ++k) {  // insertion sort (compile time)
      int i = k;
      for (; i > 0 && Less(k, order[i - 1]); --i) order[i] = order[i - 1];
      order[i] = k;
    }
    int pid[256] = {};
    for (int s = 0; s < 256; ++s) {
      const int k = order[s];
      slot_of[k] = static_cast<uint8_t>(s);
      key[s] = static_cast<uint32_t>(k);
      for (int j = 0; j < 8; ++j) {
        g[j][s] = static_cast<float>(Elem(k, j));
        g2[j][s] = g[j][s] * g[j][s];
      }
      if (s == 0 || !SamePrefix(k, order[s - 1])) {
        if (prefixes < kPrefixes) {
          for (int j = 0; j < 4; ++j) pg[j][prefixes] = static_cast<float>(Elem(k, j));
        }
        ++prefixes;
      }
      pid[s] = prefixes - 1;
    }
    for (int v = 0; v < 32; ++v) {
      base[v] = static_cast<uint8_t>(pid[8 * v]);
      for (int l = 0; l < 8; ++l) {
        perm[v][l] = static_cast<uint32_t>(pid[8 * v + l] - pid[8 * v]);
        if (pid[8 * v + l] - pid[8 * v] + 1 > max_span) max_span = pid[8 * v + l] - pid[8 * v] + 1;
      }
    }
  }
};

constexpr SlotTables kSlots;
static_assert(kSlots.prefixes == kPrefixes, "the grid's 4-element prefixes");
static_assert(kSlots.max_span <= kMaxPrefixSpan, "a vector's prefixes fit one permute");

// A depends on the weights alone: with an imatrix, on the column, so the
// rows of a tensor share it (QuantizeRow keeps it per block, ACache).
// Both tables are in slot order.
struct alignas(32) GroupAB {
  float n[256];
  const float* a;  // 256 floats, 32-byte aligned
};

void ComputeAPortable(const float* w, float* out) {
  for (int s = 0; s < 256; ++s) {
    float a = w[0] * kSlots.g2[0][s];
    for (int j = 1; j < 8; ++j) a = std::fma(w[j], kSlots.g2[j][s], a);
    out[s] = a;
  }
}

void ComputeNPortable(const float* wa, float* out) {
  float m2wa[8];
  for (int j = 0; j < 8; ++j) m2wa[j] = -2.0f * wa[j];
  for (int s = 0; s < 256; ++s) {
    float b = m2wa[0] * kSlots.g[0][s];
    for (int j = 1; j < 8; ++j) b = std::fma(m2wa[j], kSlots.g[j][s], b);
    out[s] = b;
  }
}

// N of the 4 groups of a sub-block (wa[g] into ab[g].n).
void ComputeNSubPortable(const float (*wa)[8], GroupAB* ab) {
  for (int gi = 0; gi < 4; ++gi) ComputeNPortable(wa[gi], ab[gi].n);
}

#if BOLTPACK_IQ2_HAVE_AVX2_PATH
__attribute__((target("avx2,fma"))) void ComputeAAvx2(const float* w, float* out) {
  const __m256 v0 = _mm256_set1_ps(w[0]), v1 = _mm256_set1_ps(w[1]);
  const __m256 v2 = _mm256_set1_ps(w[2]), v3 = _mm256_set1_ps(w[3]);
  const __m256 v4 = _mm256_set1_ps(w[4]), v5 = _mm256_set1_ps(w[5]);
  const __m256 v6 = _mm256_set1_ps(w[6]), v7 = _mm256_set1_ps(w[7]);
  const float (*g)[256] = kSlots.g2;
  for (int s = 0; s < 256; s += 8) {
    __m256 acc = _mm256_mul_ps(v0, _mm256_load_ps(&g[0][s]));
    acc = _mm256_fmadd_ps(v1, _mm256_load_ps(&g[1][s]), acc);
    acc = _mm256_fmadd_ps(v2, _mm256_load_ps(&g[2][s]), acc);
    acc = _mm256_fmadd_ps(v3, _mm256_load_ps(&g[3][s]), acc);
    acc = _mm256_fmadd_ps(v4, _mm256_load_ps(&g[4][s]), acc);
    acc = _mm256_fmadd_ps(v5, _mm256_load_ps(&g[5][s]), acc);
    acc = _mm256_fmadd_ps(v6, _mm256_load_ps(&g[6][s]), acc);
    acc = _mm256_fmadd_ps(v7, _mm256_load_ps(&g[7][s]), acc);
    _mm256_store_ps(out + s, acc);
  }
}

// The partial sums of N's first four multiply-adds for every prefix, into
// pre[0..63] (pre[64..71] zero: a permute's load may reach them).
__attribute__((target("avx2,fma"))) inline void PrefixSumsAvx2(const float* wa, float* pre) {
  const __m256 v0 = _mm256_set1_ps(-2.0f * wa[0]), v1 = _mm256_set1_ps(-2.0f * wa[1]);
  const __m256 v2 = _mm256_set1_ps(-2.0f * wa[2]), v3 = _mm256_set1_ps(-2.0f * wa[3]);
  for (int p = 0; p < kPrefixes; p += 8) {
    __m256 acc = _mm256_mul_ps(v0, _mm256_load_ps(&kSlots.pg[0][p]));
    acc = _mm256_fmadd_ps(v1, _mm256_load_ps(&kSlots.pg[1][p]), acc);
    acc = _mm256_fmadd_ps(v2, _mm256_load_ps(&kSlots.pg[2][p]), acc);
    acc = _mm256_fmadd_ps(v3, _mm256_load_ps(&kSlots.pg[3][p]), acc);
    _mm256_store_ps(pre + p, acc);
  }
  _mm256_store_ps(pre + kPrefixes, _mm256_setzero_ps());
}

// N of two groups in one pass over the grid (its elements 4..7 loaded once).
__attribute__((target("avx2,fma"))) inline void ComputeN2Avx2(const float* wa0, const float* wa1,
                                                              const float* pre0, const float* pre1,
                                                              float* n0, float* n1) {
  const __m256 u4 = _mm256_set1_ps(-2.0f * wa0[4]), u5 = _mm256_set1_ps(-2.0f * wa0[5]);
  const __m256 u6 = _mm256_set1_ps(-2.0f * wa0[6]), u7 = _mm256_set1_ps(-2.0f * wa0[7]);
  const __m256 w4 = _mm256_set1_ps(-2.0f * wa1[4]), w5 = _mm256_set1_ps(-2.0f * wa1[5]);
  const __m256 w6 = _mm256_set1_ps(-2.0f * wa1[6]), w7 = _mm256_set1_ps(-2.0f * wa1[7]);
  const float (*g)[256] = kSlots.g;
  for (int v = 0; v < 32; ++v) {
    const int s = 8 * v;
    const __m256i idx = _mm256_load_si256(reinterpret_cast<const __m256i*>(kSlots.perm[v]));
    __m256 a = _mm256_permutevar8x32_ps(_mm256_loadu_ps(pre0 + kSlots.base[v]), idx);
    __m256 b = _mm256_permutevar8x32_ps(_mm256_loadu_ps(pre1 + kSlots.base[v]), idx);
    __m256 gj = _mm256_load_ps(&g[4][s]);
    a = _mm256_fmadd_ps(u4, gj, a);
    b = _mm256_fmadd_ps(w4, gj, b);
    gj = _mm256_load_ps(&g[5][s]);
    a = _mm256_fmadd_ps(u5, gj, a);
    b = _mm256_fmadd_ps(w5, gj, b);
    gj = _mm256_load_ps(&g[6][s]);
    a = _mm256_fmadd_ps(u6, gj, a);
    b = _mm256_fmadd_ps(w6, gj, b);
    gj = _mm256_load_ps(&g[7][s]);
    a = _mm256_fmadd_ps(u7, gj, a);
    b = _mm256_fmadd_ps(w7, gj, b);
    _mm256_store_ps(n0 + s, a);
    _mm256_store_ps(n1 + s, b);
  }
}

// ComputeNSubPortable's bits: every group's prefix sums first, then N two
// groups at a time.
__attribute__((target("avx2,fma"))) void ComputeNSubAvx2(const float (*wa)[8], GroupAB* ab) {
  alignas(32) float pre[4][kPrefixes + 8];
  for (int gi = 0; gi < 4; ++gi) PrefixSumsAvx2(wa[gi], pre[gi]);
  for (int gi = 0; gi < 4; gi += 2) {
    ComputeN2Avx2(wa[gi], wa[gi + 1], pre[gi], pre[gi + 1], ab[gi].n, ab[gi + 1].n);
  }
}

#endif  // BOLTPACK_IQ2_HAVE_AVX2_PATH

// The k with the lowest t*A_k + N_k. To find value and index in one min,
// the low 8 mantissa bits of each value are replaced by k (the comparison
// loses 8 of 24 bits of precision; no two keys are equal, so the minimum is
// the same in any order). *cost = t * (that key as a float).
inline float KeyOf(float c, uint32_t k) { return BitsFloat((FloatBits(c) & ~0xffu) | k); }

int ArgminPortable(const GroupAB& ab, float t, float* cost) {
  float best = std::numeric_limits<float>::infinity();
  for (int s = 0; s < 256; ++s) {
    const float key = KeyOf(std::fma(ab.a[s], t, ab.n[s]), kSlots.key[s]);
    best = best < key ? best : key;  // as _mm256_min_ps(best, key)
  }
  *cost = t * best;
  return static_cast<int>(FloatBits(best) & 0xffu);
}

// Argmin for the 4 groups of a sub-block (k[g], cost[g]; at two scales
// k[4 i + g], cost[4 i + g]), each as the one-group call gives.
void Argmin4Portable(const GroupAB* ab, float t, int k[4], float cost[4]) {
  for (int g = 0; g < 4; ++g) k[g] = ArgminPortable(ab[g], t, &cost[g]);
}

void Argmin2x4Portable(const GroupAB* ab, float t0, float t1, int k[8], float cost[8]) {
  for (int g = 0; g < 4; ++g) {
    k[g] = ArgminPortable(ab[g], t0, &cost[g]);
    k[4 + g] = ArgminPortable(ab[g], t1, &cost[4 + g]);
  }
}

#if BOLTPACK_IQ2_HAVE_AVX2_PATH
// The key of cost c and index idx (KeyOf: c's low byte replaced by idx's,
// in one byte blend; `low` has 0x80 in each lane's low byte).
__attribute__((target("avx2,fma"))) inline __m256 KeyAvx2(__m256 c, __m256 idx, __m256i low) {
  return _mm256_castsi256_ps(
      _mm256_blendv_epi8(_mm256_castps_si256(c), _mm256_castps_si256(idx), low));
}

__attribute__((target("avx2,fma"))) inline __m256 SlotKeys(int s) {
  return _mm256_load_ps(reinterpret_cast<const float*>(&kSlots.key[s]));
}

// The lane-wise minimum of one group's keys at scale vt.
__attribute__((target("avx2,fma"))) inline __m256 MinKeysAvx2(const GroupAB& ab, __m256 vt) {
  const __m256i low = _mm256_set1_epi32(0x80);
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  __m256 b[4] = {inf, inf, inf, inf};
  for (int s = 0; s < 256; s += 32) {
    for (int r = 0; r < 4; ++r) {
      const __m256 c = _mm256_fmadd_ps(_mm256_load_ps(&ab.a[s + 8 * r]), vt,
                                       _mm256_load_ps(&ab.n[s + 8 * r]));
      b[r] = _mm256_min_ps(b[r], KeyAvx2(c, SlotKeys(s + 8 * r), low));
    }
  }
  return _mm256_min_ps(_mm256_min_ps(b[0], b[1]), _mm256_min_ps(b[2], b[3]));
}

// The smallest lane of m.
__attribute__((target("avx2,fma"))) inline float HorizontalMinAvx2(__m256 m) {
  m = _mm256_min_ps(m, _mm256_permute2f128_ps(m, m, 1));
  m = _mm256_min_ps(m, _mm256_permute_ps(m, 0x4e));
  m = _mm256_min_ps(m, _mm256_permute_ps(m, 0xb1));
  return _mm_cvtss_f32(_mm256_castps256_ps128(m));
}

// Argmin4Portable's results: four groups' loops back to back, then their
// reductions (so one group's reduction overlaps the next group's loop).
__attribute__((target("avx2,fma"))) void Argmin4Avx2(const GroupAB* ab, float t, int k[4],
                                                     float cost[4]) {
  const __m256 vt = _mm256_set1_ps(t);
  __m256 m[4];
  for (int g = 0; g < 4; ++g) m[g] = MinKeysAvx2(ab[g], vt);
  for (int g = 0; g < 4; ++g) {
    const float best = HorizontalMinAvx2(m[g]);
    cost[g] = t * best;
    k[g] = static_cast<int>(FloatBits(best) & 0xffu);
  }
}

// Argmin2x4Portable's results, each group's A and N loaded once for both scales.
__attribute__((target("avx2,fma"))) void Argmin2x4Avx2(const GroupAB* ab, float t0, float t1,
                                                       int k[8], float cost[8]) {
  const __m256 vt0 = _mm256_set1_ps(t0), vt1 = _mm256_set1_ps(t1);
  const __m256i low = _mm256_set1_epi32(0x80);
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  __m256 m[8];
  for (int g = 0; g < 4; ++g) {
    __m256 b0[2] = {inf, inf}, b1[2] = {inf, inf};
    for (int s = 0; s < 256; s += 16) {
      for (int r = 0; r < 2; ++r) {
        const __m256 a = _mm256_load_ps(&ab[g].a[s + 8 * r]);
        const __m256 n = _mm256_load_ps(&ab[g].n[s + 8 * r]);
        const __m256 idx = SlotKeys(s + 8 * r);
        b0[r] = _mm256_min_ps(b0[r], KeyAvx2(_mm256_fmadd_ps(a, vt0, n), idx, low));
        b1[r] = _mm256_min_ps(b1[r], KeyAvx2(_mm256_fmadd_ps(a, vt1, n), idx, low));
      }
    }
    m[g] = _mm256_min_ps(b0[0], b0[1]);
    m[4 + g] = _mm256_min_ps(b1[0], b1[1]);
  }
  for (int i = 0; i < 8; ++i) {
    const float best = HorizontalMinAvx2(m[i]);
    cost[i] = (i < 4 ? t0 : t1) * best;
    k[i] = static_cast<int>(FloatBits(best) & 0xffu);
  }
}

#endif  // BOLTPACK_IQ2_HAVE_AVX2_PATH

// ---- scalar steps, vectorised (the same operations per lane) ------------------------

// Block-scale candidates ChooseBlockScale weighs at most (3 per top scale).
inline constexpr int kMaxScaleCandidates = 16;

// The quadratic model's cost of block scale dn (normalised): each
// sub-block at the nearer of its two scales around m = 8 tc (the s of
// NearestSubScales), weighted by its curvature, summed in sub-block order.
// A sub-block without curvature adds +0, which leaves the sum's bits as
// skipping it would (the terms are >= +0).
float ScaleProxyPortable(const float m[8], const float tc[8], const float curv[8], float dn) {
  const float inv_dn = 1.0f / dn;
  float proxy = 0;
  for (int sb = 0; sb < 8; ++sb) {
    const float q = (m[sb] * inv_dn - 1.0f) * 0.5f;
    const float lo = q <= 0 ? 0.0f : q >= 15 ? 15.0f : static_cast<float>(static_cast<int>(q));
    const float hi = lo < 15 ? lo + 1.0f : 15.0f;
    const float tlo = dn * (0.5f + lo) * 0.25f - tc[sb];
    const float thi = dn * (0.5f + hi) * 0.25f - tc[sb];
    const float e = tlo * tlo < thi * thi ? tlo * tlo : thi * thi;
    proxy += curv[sb] == 0 ? 0.0f : curv[sb] * e;
  }
  return proxy;
}

// Of `count` (<= kMaxScaleCandidates) block scales dn, the first with the
// lowest ScaleProxyPortable (-1: none below +inf).
int PickScalePortable(const float* dn, int count, const float m[8], const float tc[8],
                      const float curv[8]) {
  float best = std::numeric_limits<float>::infinity();
  int pick = -1;
  for (int c = 0; c < count; ++c) {
    const float proxy = ScaleProxyPortable(m, tc, curv, dn[c]);
    if (proxy < best) {
      best = proxy;
      pick = c;
    }
  }
  return pick;
}

// Per group of 8: the sign mask (bit j: x_j < 0), and w |x| with, when the
// count of negatives is odd, the smallest one (the first of equals) negated
// and its sign bit flipped: the 8th sign is implied by parity.
void GroupSignsPortable(const float* xn, const float* w, unsigned masks[32], float (*wa)[8]) {
  for (int gi = 0; gi < 32; ++gi) {
    const float* xg = xn + 8 * gi;
    const float* wg = w + 8 * gi;
    float* v = wa[gi];
    unsigned mask = 0;
    for (int j = 0; j < 8; ++j) {
      v[j] = wg[j] * std::fabs(xg[j]);
      if (xg[j] < 0) mask |= 1u << j;
    }
    if (__builtin_popcount(mask) & 1) {
      int jmin = 0;
      for (int j = 1; j < 8; ++j) {
        if (v[j] < v[jmin]) jmin = j;
      }
      mask ^= 1u << jmin;
      v[jmin] = -v[jmin];
    }
    masks[gi] = mask;
  }
}

inline float Max(float a, float b) { return a > b ? a : b; }

// max |x| over a block (finite values: any order gives the same bits).
float AbsMaxPortable(const float* x) {
  float amax = 0;
  for (size_t i = 0; i < kBlockElems; ++i) amax = Max(amax, std::fabs(x[i]));
  return amax;
}

// Per sub-block of 32: max |x|, and sum w |x| and sum w (in element order).
struct SubStats {
  float smax[8], swa[8], sw[8];
};

void SubStatsPortable(const float* xn, const float* w, SubStats* st) {
  for (int sb = 0; sb < 8; ++sb) {
    float smax = 0, swa = 0, sw = 0;
    for (int i = 0; i < 32; ++i) {
      const float a = std::fabs(xn[32 * sb + i]);
      smax = smax > a ? smax : a;
      swa += w[32 * sb + i] * a;
      sw += w[32 * sb + i];
    }
    st->smax[sb] = smax;
    st->swa[sb] = swa;
    st->sw[sb] = sw;
  }
}

#if BOLTPACK_IQ2_HAVE_AVX2_PATH
// r[j] (j = 0..7) becomes column j of the 8 x 8 matrix whose rows are r.
__attribute__((target("avx2,fma"))) inline void Transpose8Avx2(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

// SubStatsPortable's results with the 8 sub-blocks as lanes: each sum adds
// its sub-block's elements in order (8 x 8 transposes), so the bits agree.
__attribute__((target("avx2,fma"))) void SubStatsAvx2(const float* xn, const float* w, SubStats* st) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 smax = _mm256_setzero_ps(), swa = smax, sw = smax;
  for (int c = 0; c < 4; ++c) {
    __m256 a[8], p[8], ww[8];
    for (int sb = 0; sb < 8; ++sb) {
      a[sb] = _mm256_and_ps(_mm256_loadu_ps(xn + 32 * sb + 8 * c), abs_mask);
      ww[sb] = _mm256_loadu_ps(w + 32 * sb + 8 * c);
      p[sb] = _mm256_mul_ps(ww[sb], a[sb]);
    }
    Transpose8Avx2(a);
    Transpose8Avx2(p);
    Transpose8Avx2(ww);
    for (int j = 0; j < 8; ++j) {
      smax = _mm256_max_ps(a[j], smax);  // (a > smax) ? a : smax, as the scalar Max
      swa = _mm256_add_ps(swa, p[j]);
      sw = _mm256_add_ps(sw, ww[j]);
    }
  }
  _mm256_storeu_ps(st->smax, smax);
  _mm256_storeu_ps(st->swa, swa);
  _mm256_storeu_ps(st->sw, sw);
}

__attribute__((target("avx2,fma"))) float AbsMaxAvx2(const float* x) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 m[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (size_t i = 0; i < kBlockElems; i += 32) {
    for (int r = 0; r < 4; ++r) {
      m[r] = _mm256_max_ps(m[r], _mm256_and_ps(_mm256_loadu_ps(x + i + 8 * r), abs_mask));
    }
  }
  __m256 v = _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3]));
  v = _mm256_max_ps(v, _mm256_permute2f128_ps(v, v, 1));
  v = _mm256_max_ps(v, _mm256_permute_ps(v, 0x4e));
  v = _mm256_max_ps(v, _mm256_permute_ps(v, 0xb1));
  return _mm_cvtss_f32(_mm256_castps256_ps128(v));
}

// PickScalePortable's choice with the candidates as lanes: for each lane,
// the same operations as ScaleProxyPortable (no fused ones), its terms
// added in sub-block order; then the first lane of the lowest proxy.
__attribute__((target("avx2,fma"))) int PickScaleAvx2(const float* dn, int count, const float m[8],
                                                      const float tc[8], const float curv[8]) {
  const __m256 zero = _mm256_setzero_ps(), fifteen = _mm256_set1_ps(15.0f), one = _mm256_set1_ps(1.0f);
  const __m256 half = _mm256_set1_ps(0.5f), quarter = _mm256_set1_ps(0.25f);
  alignas(32) float d[kMaxScaleCandidates];
  for (int c = 0; c < kMaxScaleCandidates; ++c) d[c] = dn[c < count ? c : 0];
  alignas(32) float proxy[kMaxScaleCandidates];
  for (int c0 = 0; c0 < kMaxScaleCandidates; c0 += 8) {
    const __m256 vdn = _mm256_load_ps(d + c0);
    const __m256 inv_dn = _mm256_div_ps(one, vdn);
    __m256 sum = zero;
    for (int sb = 0; sb < 8; ++sb) {
      if (curv[sb] == 0) continue;  // adds +0: the same bits
      const __m256 vtc = _mm256_set1_ps(tc[sb]);
      const __m256 q = _mm256_mul_ps(_mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(m[sb]), inv_dn), one), half);
      __m256 lo = _mm256_round_ps(q, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      lo = _mm256_blendv_ps(lo, fifteen, _mm256_cmp_ps(q, fifteen, _CMP_GE_OQ));
      lo = _mm256_blendv_ps(lo, zero, _mm256_cmp_ps(q, zero, _CMP_LE_OQ));
      const __m256 hi = _mm256_min_ps(_mm256_add_ps(lo, one), fifteen);
      const __m256 tlo = _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(vdn, _mm256_add_ps(half, lo)), quarter), vtc);
      const __m256 thi = _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(vdn, _mm256_add_ps(half, hi)), quarter), vtc);
      const __m256 e = _mm256_min_ps(_mm256_mul_ps(tlo, tlo), _mm256_mul_ps(thi, thi));
      sum = _mm256_add_ps(sum, _mm256_mul_ps(_mm256_set1_ps(curv[sb]), e));
    }
    _mm256_store_ps(proxy + c0, sum);
  }
  float best = std::numeric_limits<float>::infinity();
  int pick = -1;
  for (int c = 0; c < count; ++c) {
    if (proxy[c] < best) {
      best = proxy[c];
      pick = c;
    }
  }
  return pick;
}

// GroupSignsPortable's results, a group per vector, without branches (the
// parity is a coin toss per group).
__attribute__((target("avx2,fma"))) void GroupSignsAvx2(const float* xn, const float* w,
                                                        unsigned masks[32], float (*wa)[8]) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 zero = _mm256_setzero_ps(), neg = _mm256_set1_ps(-0.0f);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int gi = 0; gi < 32; ++gi) {
    const __m256 x = _mm256_loadu_ps(xn + 8 * gi);
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(w + 8 * gi), _mm256_and_ps(x, abs_mask));
    const unsigned mask = static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(x, zero, _CMP_LT_OQ)));
    __m256 mn = _mm256_min_ps(v, _mm256_permute2f128_ps(v, v, 1));
    mn = _mm256_min_ps(mn, _mm256_permute_ps(mn, 0x4e));
    mn = _mm256_min_ps(mn, _mm256_permute_ps(mn, 0xb1));
    const unsigned eq = static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(v, mn, _CMP_EQ_OQ)));
    const unsigned odd = static_cast<unsigned>(__builtin_popcount(mask) & 1);
    const int jmin = __builtin_ctz(eq | 0x100u);  // eq has a bit: v's lanes are finite
    // Odd: lane jmin's sign bit flips, and its value is negated; else lane 8 (none).
    const int flip = odd ? jmin : 8;
    const __m256i lane = _mm256_cmpeq_epi32(_mm256_set1_epi32(flip), lanes);
    _mm256_storeu_ps(wa[gi], _mm256_xor_ps(v, _mm256_and_ps(_mm256_castsi256_ps(lane), neg)));
    masks[gi] = mask ^ ((odd << jmin) & 0xffu);
  }
}
#endif  // BOLTPACK_IQ2_HAVE_AVX2_PATH

struct Kernels {
  void (*compute_a)(const float*, float*);
  void (*compute_n_sub)(const float (*)[8], GroupAB*);
  void (*argmin4)(const GroupAB*, float, int*, float*);
  void (*argmin2x4)(const GroupAB*, float, float, int*, float*);
  int (*pick_scale)(const float*, int, const float*, const float*, const float*);
  void (*group_signs)(const float*, const float*, unsigned*, float (*)[8]);
  void (*sub_stats)(const float*, const float*, SubStats*);
  float (*abs_max)(const float*);
};

Kernels SelectKernels(Isa isa) {
  if (isa == Isa::kAuto) isa = Avx2Supported() ? Isa::kAvx2 : Isa::kPortable;
#if BOLTPACK_IQ2_HAVE_AVX2_PATH
  if (isa == Isa::kAvx2) {
    return {ComputeAAvx2,   ComputeNSubAvx2,   Argmin4Avx2, Argmin2x4Avx2, PickScaleAvx2, 
            GroupSignsAvx2, SubStatsAvx2,      AbsMaxAvx2};
  }
#endif
  return {ComputeAPortable,   ComputeNSubPortable,   Argmin4Portable,
          Argmin2x4Portable,  PickScalePortable,     GroupSignsPortable,
          SubStatsPortable,   AbsMaxPortable};
}

// ---- the block quantizer (shared scalar logic) ------------------------------------

struct SubEval {
  float cost = std::numeric_limits<float>::infinity();  // sum of group costs
  float sum_a = 0;
  float sum_b = 0;
  uint8_t k[4] = {0, 0, 0, 0};
};

inline SubEval EvalSub(const Kernels& kn, const GroupAB* ab, float t) {
  SubEval r;
  r.cost = 0;
  int kk[4];
  float cc[4];
  kn.argmin4(ab, t, kk, cc);
  for (int g = 0; g < 4; ++g) {
    const int k = kk[g];
    r.cost += cc[g];
    r.sum_a += ab[g].a[kSlots.slot_of[k]];
    r.sum_b += -0.5f * ab[g].n[kSlots.slot_of[k]];
    r.k[g] = static_cast<uint8_t>(k);
  }
  return r;
}

// EvalSub at two scales at once: e[i] is EvalSub(kn, ab, t[i]).
inline void EvalSub2(const Kernels& kn, const GroupAB* ab, const float t[2], SubEval e[2]) {
  for (int i = 0; i < 2; ++i) {
    e[i] = SubEval();
    e[i].cost = 0;
  }
  int kk[8];
  float cc[8];
  kn.argmin2x4(ab, t[0], t[1], kk, cc);
  for (int g = 0; g < 4; ++g) {
    for (int i = 0; i < 2; ++i) {
      const int k = kk[4 * i + g];
      e[i].cost += cc[4 * i + g];
      e[i].sum_a += ab[g].a[kSlots.slot_of[k]];
      e[i].sum_b += -0.5f * ab[g].n[kSlots.slot_of[k]];
      e[i].k[g] = static_cast<uint8_t>(k);
    }
  }
}

// Scale multipliers of max|x|/43 tried first in every sub-block.
// Search effort (measured on conformance/ggml/encode_input.f32 against ggml's
// imatrix figures; see spec/codecs-iq2_xxs.md): start scales per sub-block
// (multiples of max|x|/43, plus the weighted-mean start for flat data),
// Lloyd refits, fp16 block-scale candidates (largest sub-block at
// s = 15..kMinTopScale, each with its fp16 neighbours), and whether the
// final pass tries both sub-block scales around the optimum.
constexpr float kStartFactors[] = {0.75f};
constexpr int kRefineSteps = 0;
constexpr bool kMeanStart = true;
constexpr int kMinTopScale = 11;
static_assert(3 * (16 - kMinTopScale) <= kMaxScaleCandidates, "ChooseBlockScale's candidates");
// Trying both sub-block scales in the final pass cost a third of the encode
// time for 0.2-0.8% lower error (still below ggml's on every distribution
// without it); the quadratic model's nearer scale alone is kept.
constexpr bool kFinalBothScales = false;


struct Scratch {
  GroupAB ab[32];
  float wa[32][8];  // per group: w |x|, the parity-flipped value negated
  alignas(32) float a[32][256];  // A of a block whose A is not kept
};

// A block normalised by 2^-e so max|x| is in [1, 2), with the weight of
// each element.
struct NormalBlock {
  int ex = 0;           // max|x| in [2^(ex-1), 2^ex)
  float xscale = 0;     // real -> normalised
  float xn[kBlockElems];
  const float* w = nullptr;  // wbuf, or the kept weights of the block's importance
  float wbuf[kBlockElems];
};

// What QuantizeRow keeps of a block's importance (the same for every row of
// a tensor): its weights (ImportanceWeights) and the A tables of its groups.
struct KeptBlock {
  alignas(32) float w[kBlockElems];
  alignas(32) float a[32][256];
};

// A block's weights from its importance alone (scaled so the largest is in
// [1, 2)); false when there is none (null, or all zero).
bool ImportanceWeights(const float* importance, float* w) {
  float wmax = 0;
  if (importance != nullptr) {
    for (size_t i = 0; i < kBlockElems; ++i) wmax = Max(wmax, importance[i]);
  }
  if (!(wmax > 0)) return false;
  int ew;
  std::frexp(wmax, &ew);
  const float wscale = std::ldexp(1.0f, 1 - ew);
  for (size_t i = 0; i < kBlockElems; ++i) w[i] = importance[i] * wscale;
  return true;
}

// False for a block that had best be all zeros (d = 0 decodes to zeros).
bool Normalise(const Kernels& kn, const float* x, const float* importance, const KeptBlock* kept,
               NormalBlock* nb) {
  const float amax = kn.abs_max(x);
  // Below 2^-64 nothing but zeros is closer (the smallest nonzero output is
  // about 3e-8).
  if (!(amax >= 0x1p-64f)) return false;
  std::frexp(amax, &nb->ex);
  nb->xscale = std::ldexp(1.0f, 1 - nb->ex);
  float* xn = nb->xn;
  for (size_t i = 0; i < kBlockElems; ++i) xn[i] = x[i] * nb->xscale;
  if (kept != nullptr) {
    nb->w = kept->w;
    return true;
  }
  float* w = nb->wbuf;
  nb->w = w;
  if (!ImportanceWeights(importance, w)) {
    // No importance: weight by magnitude over the block's spread, as ggml's
    // quantizers do when they have no imatrix.
    float sumx2 = 0;
    for (size_t i = 0; i < kBlockElems; ++i) sumx2 += xn[i] * xn[i];
    const float sigma2 = sumx2 / kBlockElems;
    for (size_t i = 0; i < kBlockElems; ++i) w[i] = std::sqrt(sigma2 + xn[i] * xn[i]);
  }
  return true;
}

// Signs (GroupSignsPortable) and A per group of 8; A from `kept` (the
// block's, computed before from the same weights) or computed here. N
// comes with each sub-block's scale search (SubBlockScale).
void GroupSignsAndAB(const Kernels& kn, const NormalBlock& nb, uint8_t signs[32], Scratch& scratch,
                     const float (*kept)[256]) {
  unsigned masks[32];
  kn.group_signs(nb.xn, nb.w, masks, scratch.wa);
  for (int gi = 0; gi < 32; ++gi) {
    signs[gi] = static_cast<uint8_t>(masks[gi] & 127);
    if (kept != nullptr) {
      scratch.ab[gi].a = kept[gi];
    } else {
      kn.compute_a(nb.w + 8 * gi, scratch.a[gi]);
      scratch.ab[gi].a = scratch.a[gi];
    }
  }
}

// Sub-block sb's best continuous scale t (y = t * grid) into *tc, and the
// curvature of its cost there into *curv (0: none to model).
void SubBlockScale(const Kernels& kn, const SubStats& st, Scratch& scratch, int sb, float* tc,
                   float* curv) {
  GroupAB* ab = &scratch.ab[4 * sb];
  kn.compute_n_sub(&scratch.wa[4 * sb], ab);
  const float smax = st.smax[sb];
  *tc = 0;
  *curv = 0;
  if (smax == 0) return;
  // The start scales, tried in this order (the first of equal costs wins),
  // two at a time where there are two.
  constexpr size_t kStarts = std::size(kStartFactors) + (kMeanStart ? 1 : 0);
  float starts[kStarts];
  size_t count = 0;
  for (float f : kStartFactors) starts[count++] = smax * (f / 43.0f);
  if (kMeanStart) {
    // Flat sub-blocks (all magnitudes alike) want every value on level 8.
    const float swa = st.swa[sb], sw = st.sw[sb];
    const float t = sw > 0 ? swa / (8.0f * sw) : 0.0f;
    if (t > 0) starts[count++] = t;
  }
  SubEval best;
  float best_t = 0;
  for (size_t i = 0; i < count;) {
    SubEval e[2];
    const size_t step = i + 1 < count ? 2 : 1;
    if (step == 2) {
      EvalSub2(kn, ab, starts + i, e);
    } else {
      e[0] = EvalSub(kn, ab, starts[i]);
    }
    for (size_t j = 0; j < step; ++j) {
      if (e[j].cost < best.cost) {
        best = e[j];
        best_t = starts[i + j];
      }
    }
    i += step;
  }
  for (int it = 0; it < kRefineSteps; ++it) {
    if (!(best.sum_a > 0) || !(best.sum_b > 0)) break;
    const float t = best.sum_b / best.sum_a;
    if (t == best_t) break;
    SubEval e = EvalSub(kn, ab, t);
    if (!(e.cost < best.cost)) break;
    best = e;
    best_t = t;
  }
  if (best.sum_a > 0 && best.sum_b > 0) {
    *tc = best.sum_b / best.sum_a;
    *curv = best.sum_a;
  } else {
    *tc = best_t;
    *curv = 0;
  }
}

inline uint16_t ClampF16Scale(uint16_t h) {
  if (h == 0) return 1;
  if (h >= 0x7c00) return 0x7bff;
  return h;
}

// The two sub-block scales s around m / dn = 2s + 1.
inline void NearestSubScales(float m, float inv_dn, int* s_lo, int* s_hi) {
  const float q = (m * inv_dn - 1.0f) * 0.5f;
  int lo = q <= 0 ? 0 : q >= 15 ? 15 : static_cast<int>(q);
  *s_lo = lo;
  *s_hi = lo < 15 ? lo + 1 : 15;
}

// Block scale d (fp16, real units): t = d * (2s + 1) / 8. Candidates put
// the largest sub-block at s = 15..kMinTopScale (and fp16 neighbours); a
// quadratic model of each sub-block's cost picks one. False when no
// sub-block has a scale (the block stays zeros).
bool ChooseBlockScale(const Kernels& kn, const NormalBlock& nb, const float tc[8], const float curv[8], uint16_t* best_h) {
  float mmax = 0;
  for (int sb = 0; sb < 8; ++sb) mmax = Max(mmax, 8.0f * tc[sb]);
  if (!(mmax > 0)) return false;
  const float unscale = std::ldexp(1.0f, nb.ex - 1);  // normalised -> real
  const float rescale = nb.xscale;                   // real -> normalised
  float m[8];
  for (int sb = 0; sb < 8; ++sb) m[sb] = 8.0f * tc[sb];
  uint16_t h[kMaxScaleCandidates];
  float dn[kMaxScaleCandidates];
  int count = 0;
  for (int i = 15; i >= kMinTopScale; --i) {
    const uint16_t h0 = ClampF16Scale(F32ToF16(mmax * unscale / static_cast<float>(2 * i + 1)));
    for (int dh = -1; dh <= 1; ++dh, ++count) {
      h[count] = ClampF16Scale(static_cast<uint16_t>(h0 + dh));
      dn[count] = F16ToF32(h[count]) * rescale;
    }
  }
  const int pick = kn.pick_scale(dn, count, m, tc, curv);
  *best_h = pick < 0 ? 0 : h[pick];
  return true;
}

// Each sub-block at the block scale `dn` (normalised): the grid points and
// sub-block scale into aux; returns the total cost against zeros.
float EncodeSubBlocks(const Kernels& kn, const Scratch& scratch, const float tc[8], const uint8_t signs[32], float dn,
                      uint32_t aux[16]) {
  float total = 0;
  for (int sb = 0; sb < 8; ++sb) {
    const GroupAB* ab = &scratch.ab[4 * sb];
    int lo, hi;
    NearestSubScales(8.0f * tc[sb], 1.0f / dn, &lo, &hi);
    if (!kFinalBothScales && hi != lo) {
      const float tlo = dn * (0.5f + lo) * 0.25f - tc[sb];
      const float thi = dn * (0.5f + hi) * 0.25f - tc[sb];
      if (thi * thi < tlo * tlo) lo = hi;
      hi = lo;
    }
    SubEval e = EvalSub(kn, ab, dn * (0.5f + lo) * 0.25f);
    int s = lo;
    if (hi != lo) {
      SubEval e2 = EvalSub(kn, ab, dn * (0.5f + hi) * 0.25f);
      if (e2.cost < e.cost) {
        e = e2;
        s = hi;
      }
    }
    total += e.cost;
    aux[2 * sb] = e.k[0] | (e.k[1] << 8) | (e.k[2] << 16) | (static_cast<uint32_t>(e.k[3]) << 24);
    aux[2 * sb + 1] = signs[4 * sb] | (signs[4 * sb + 1] << 7) | (signs[4 * sb + 2] << 14) |
                      (signs[4 * sb + 3] << 21) | (static_cast<uint32_t>(s) << 28);
  }
  return total;
}

void QuantizeBlock(const Kernels& kn, const float* x, const float* importance, uint8_t* out,
                   Scratch& scratch, const KeptBlock* kept) {
  std::memset(out, 0, kBlockBytes);
  NormalBlock nb;
  if (!Normalise(kn, x, importance, kept, &nb)) return;
  uint8_t signs[32];
  GroupSignsAndAB(kn, nb, signs, scratch, kept != nullptr ? kept->a : nullptr);
  float tc[8], curv[8];
  SubStats st;
  kn.sub_stats(nb.xn, nb.w, &st);
  for (int sb = 0; sb < 8; ++sb) SubBlockScale(kn, st, scratch, sb, &tc[sb], &curv[sb]);
  // Then each sub-block tries the two scales around its optimum for real.
  uint16_t best_h = 0;
  if (!ChooseBlockScale(kn, nb, tc, curv, &best_h)) return;
  uint32_t aux[16];
  float total = EncodeSubBlocks(kn, scratch, tc, signs, F16ToF32(best_h) * nb.xscale, aux);
  // Zeros (cost 0) beat a block that only adds error.
  if (!(total < 0)) return;
  out[0] = static_cast<uint8_t>(best_h & 0xff);
  out[1] = static_cast<uint8_t>(best_h >> 8);
  std::memcpy(out + 2, aux, sizeof aux);
}

// Per block of a row, the A tables of its importance (the same for every
// row of a tensor): computed for the first row, reused while the block's
// importance is the same (compared, not assumed). At most kKeptBlocks
// blocks (2 MiB a thread); a longer row computes the rest every time.
constexpr size_t kKeptBlocks = 64;

class ACache {
 public:
  // What is kept of block `b` for `importance` (its 256 weights), or null
  // when it has none to keep (no importance, all zero, or past the cap).
  const KeptBlock* Get(const Kernels& kn, size_t b, const float* importance) {
    if (importance == nullptr || b >= kKeptBlocks) return nullptr;
    if (entries_.size() <= b) entries_.resize(b + 1);
    if (!entries_[b]) entries_[b] = std::make_unique<Entry>();
    Entry& e = *entries_[b];
    if (e.valid && std::memcmp(e.importance, importance, sizeof e.importance) == 0) return &e.kept;
    e.valid = false;
    if (!ImportanceWeights(importance, e.kept.w)) return nullptr;
    for (int gi = 0; gi < 32; ++gi) kn.compute_a(e.kept.w + 8 * gi, e.kept.a[gi]);
    std::memcpy(e.importance, importance, sizeof e.importance);
    e.valid = true;
    return &e.kept;
  }

 private:
  struct Entry {
    bool valid = false;
    float importance[kBlockElems];
    KeptBlock kept;
  };
  std::vector<std::unique_ptr<Entry>> entries_;
};

}  // namespace

bool Avx2Supported() {
#if BOLTPACK_IQ2_HAVE_AVX2_PATH
  const CpuFeatures& cpu = DetectCpuFeatures();
  return cpu.avx2 && cpu.fma;
#else
  return false;
#endif
}

void DecodeBlocksF32(const uint8_t* src, size_t nblocks, float* dst, Isa isa) {
  if (isa == Isa::kAuto) isa = Avx2Supported() ? Isa::kAvx2 : Isa::kPortable;
#if BOLTPACK_IQ2_HAVE_AVX2_PATH
  if (isa == Isa::kAvx2) {
    DecodeAvx2(src, nblocks, dst);
    return;
  }
#endif
  DecodePortable(src, nblocks, dst);
}

void QuantizeRow(const float* x, const float* importance, size_t n, uint8_t* dst,
                 const QuantizeOptions& options) {
  const Kernels kn = SelectKernels(options.isa);
  // 8 KiB per sub-block of A/N tables; one set per thread, reused.
  thread_local std::unique_ptr<Scratch> scratch;
  if (!scratch) scratch = std::make_unique<Scratch>();
  // Kept per ISA: the two give the same bits, but a test may mix them.
  thread_local ACache kept[2];
  ACache& cache = kept[kn.compute_a == SelectKernels(Isa::kPortable).compute_a ? 0 : 1];
  for (size_t b = 0; b < n / kBlockElems; ++b) {
    const float* imp = importance != nullptr ? importance + b * kBlockElems : nullptr;
    QuantizeBlock(kn, x + b * kBlockElems, imp, dst + b * kBlockBytes, *scratch, cache.Get(kn, b, imp));
  }
}

}  // namespace boltpack::iq2_xxs
