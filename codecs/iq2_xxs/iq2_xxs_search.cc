// The IQ2_XXS encoder's vector kernels (iq2_xxs_search.h): the grid search
// and the per-block steps, each portable and AVX2 with the same bits.
#include "codecs/iq2_xxs/iq2_xxs_search.h"

#include "codecs/x86_simd.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "codecs/float_convert.h"
#include "codecs/iq2_xxs/iq2_xxs_tables.h"

namespace boltpack::iq2_xxs {
namespace {

// ---- grid search -------------------------------------------------------------
//
// A and N as iq2_xxs_search.h defines them. ComputeA/ComputeN fill them for
// all 256 grid points; Argmin finds the k with the lowest t A_k + N_k
// (t > 0). Both versions use the same fused multiply-adds in the same order,
// so the results are bit-identical.
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
  alignas(32) float pg[4][kPrefixes];   // elements 0..3 of each prefix
  alignas(32) float pg2[4][kPrefixes];  // squared
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

  constexpr SlotTables() : slot_of(), key(), g(), g2(), pg(), pg2(), base(), perm() {
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
          for (int j = 0; j < 4; ++j) {
            pg[j][prefixes] = static_cast<float>(Elem(k, j));
            pg2[j][prefixes] = pg[j][prefixes] * pg[j][prefixes];
          }
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

// A of the 32 groups of a block (weights w[8 g..8 g+7] into out[g]).
void ComputeABlockPortable(const float* w, float (*out)[256]) {
  for (int gi = 0; gi < 32; ++gi) ComputeAPortable(w + 8 * gi, out[gi]);
}

// N of the 4 groups of a sub-block (wa[g] into ab[g].n).
void ComputeNSubPortable(const float (*wa)[8], GroupAB* ab) {
  for (int gi = 0; gi < 4; ++gi) ComputeNPortable(wa[gi], ab[gi].n);
}

#if BOLTPACK_X86_SIMD
// The partial sums of the first four multiply-adds (v_0 pg_0 + ... + v_3
// pg_3, in that order) for every prefix, into pre[0..63]; pre[64..71] zero
// (a permute's load may reach them).
__attribute__((target("avx2,fma"))) inline void PrefixSumsAvx2(const float* v,
                                                               const float (*pg)[kPrefixes],
                                                               float* pre) {
  const __m256 v0 = _mm256_set1_ps(v[0]), v1 = _mm256_set1_ps(v[1]);
  const __m256 v2 = _mm256_set1_ps(v[2]), v3 = _mm256_set1_ps(v[3]);
  for (int p = 0; p < kPrefixes; p += 8) {
    __m256 acc = _mm256_mul_ps(v0, _mm256_load_ps(&pg[0][p]));
    acc = _mm256_fmadd_ps(v1, _mm256_load_ps(&pg[1][p]), acc);
    acc = _mm256_fmadd_ps(v2, _mm256_load_ps(&pg[2][p]), acc);
    acc = _mm256_fmadd_ps(v3, _mm256_load_ps(&pg[3][p]), acc);
    _mm256_store_ps(pre + p, acc);
  }
  _mm256_store_ps(pre + kPrefixes, _mm256_setzero_ps());
}

// out_i[s] = sum_j vi_j g[j][s] (j = 0..7, a multiply then fused
// multiply-adds in j order) for two weight vectors in one pass over the
// grid: the first four steps from the prefix sums pre_i, the grid's elements
// 4..7 loaded once for both.
__attribute__((target("avx2,fma"))) inline void WeightedGridSum2Avx2(
    const float* v0, const float* v1, const float* pre0, const float* pre1,
    const float (*g)[256], float* out0, float* out1) {
  const __m256 u4 = _mm256_set1_ps(v0[4]), u5 = _mm256_set1_ps(v0[5]);
  const __m256 u6 = _mm256_set1_ps(v0[6]), u7 = _mm256_set1_ps(v0[7]);
  const __m256 w4 = _mm256_set1_ps(v1[4]), w5 = _mm256_set1_ps(v1[5]);
  const __m256 w6 = _mm256_set1_ps(v1[6]), w7 = _mm256_set1_ps(v1[7]);
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
    _mm256_store_ps(out0 + s, a);
    _mm256_store_ps(out1 + s, b);
  }
}

// ComputeABlockPortable's bits, two groups at a time.
__attribute__((target("avx2,fma"))) void ComputeABlockAvx2(const float* w, float (*out)[256]) {
  for (int gi = 0; gi < 32; gi += 2) {
    alignas(32) float pre[2][kPrefixes + 8];
    PrefixSumsAvx2(w + 8 * gi, kSlots.pg2, pre[0]);
    PrefixSumsAvx2(w + 8 * gi + 8, kSlots.pg2, pre[1]);
    WeightedGridSum2Avx2(w + 8 * gi, w + 8 * gi + 8, pre[0], pre[1], kSlots.g2, out[gi], out[gi + 1]);
  }
}

// ComputeNSubPortable's bits: every group's prefix sums first, then N two
// groups at a time.
__attribute__((target("avx2,fma"))) void ComputeNSubAvx2(const float (*wa)[8], GroupAB* ab) {
  float m2wa[4][8];
  for (int gi = 0; gi < 4; ++gi) {
    for (int j = 0; j < 8; ++j) m2wa[gi][j] = -2.0f * wa[gi][j];
  }
  alignas(32) float pre[4][kPrefixes + 8];
  for (int gi = 0; gi < 4; ++gi) PrefixSumsAvx2(m2wa[gi], kSlots.pg, pre[gi]);
  for (int gi = 0; gi < 4; gi += 2) {
    WeightedGridSum2Avx2(m2wa[gi], m2wa[gi + 1], pre[gi], pre[gi + 1], kSlots.g, ab[gi].n,
                         ab[gi + 1].n);
  }
}

#endif  // BOLTPACK_X86_SIMD

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

// The pick of grid index k (its cost found by Argmin) in group ab.
inline Pick PickOf(const GroupAB& ab, int k, float cost) {
  const int s = kSlots.slot_of[k];
  return Pick{k, cost, ab.a[s], ab.n[s]};
}

// Argmin for the 4 groups of a sub-block (out[g]; at two scales out[4 i + g]).
void Argmin4Portable(const GroupAB* ab, float t, Pick out[4]) {
  for (int g = 0; g < 4; ++g) {
    float c;
    const int k = ArgminPortable(ab[g], t, &c);
    out[g] = PickOf(ab[g], k, c);
  }
}

void Argmin2x4Portable(const GroupAB* ab, float t0, float t1, Pick out[8]) {
  Argmin4Portable(ab, t0, out);
  Argmin4Portable(ab, t1, out + 4);
}

#if BOLTPACK_X86_SIMD
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
__attribute__((target("avx2,fma"))) void Argmin4Avx2(const GroupAB* ab, float t, Pick out[4]) {
  const __m256 vt = _mm256_set1_ps(t);
  __m256 m[4];
  for (int g = 0; g < 4; ++g) m[g] = MinKeysAvx2(ab[g], vt);
  for (int g = 0; g < 4; ++g) {
    const float best = HorizontalMinAvx2(m[g]);
    out[g] = PickOf(ab[g], static_cast<int>(FloatBits(best) & 0xffu), t * best);
  }
}

// Argmin2x4Portable's results, each group's A and N loaded once for both scales.
__attribute__((target("avx2,fma"))) void Argmin2x4Avx2(const GroupAB* ab, float t0, float t1,
                                                       Pick out[8]) {
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
    out[i] = PickOf(ab[i % 4], static_cast<int>(FloatBits(best) & 0xffu), (i < 4 ? t0 : t1) * best);
  }
}

#endif  // BOLTPACK_X86_SIMD

// ---- scalar steps, vectorised (the same operations per lane) ------------------------


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

#if BOLTPACK_X86_SIMD
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
#endif  // BOLTPACK_X86_SIMD


}  // namespace

Kernels SelectKernels(Isa isa) {
  if (isa == Isa::kAuto) isa = Avx2Supported() ? Isa::kAvx2 : Isa::kPortable;
#if BOLTPACK_X86_SIMD
  if (isa == Isa::kAvx2) {
    return {ComputeABlockAvx2, ComputeNSubAvx2, Argmin4Avx2, Argmin2x4Avx2, PickScaleAvx2, 
            GroupSignsAvx2, SubStatsAvx2,      AbsMaxAvx2};
  }
#endif
  return {ComputeABlockPortable, ComputeNSubPortable, Argmin4Portable,
          Argmin2x4Portable,  PickScalePortable,     GroupSignsPortable,
          SubStatsPortable,   AbsMaxPortable};
}

}  // namespace boltpack::iq2_xxs
