#include "codecs/iq2_xxs/iq2_xxs_kernels.h"

#include "codecs/x86_simd.h"

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <vector>

#include "codecs/float_convert.h"
#include "codecs/iq2_xxs/iq2_xxs_search.h"
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

#if BOLTPACK_X86_SIMD
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

#endif  // BOLTPACK_X86_SIMD

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
  Pick p[4];
  kn.argmin4(ab, t, p);
  for (int g = 0; g < 4; ++g) {
    r.cost += p[g].cost;
    r.sum_a += p[g].a;
    r.sum_b += -0.5f * p[g].n;
    r.k[g] = static_cast<uint8_t>(p[g].k);
  }
  return r;
}

// EvalSub at two scales at once: e[i] is EvalSub(kn, ab, t[i]).
inline void EvalSub2(const Kernels& kn, const GroupAB* ab, const float t[2], SubEval e[2]) {
  for (int i = 0; i < 2; ++i) {
    e[i] = SubEval();
    e[i].cost = 0;
  }
  Pick p[8];
  kn.argmin2x4(ab, t[0], t[1], p);
  for (int g = 0; g < 4; ++g) {
    for (int i = 0; i < 2; ++i) {
      const Pick& q = p[4 * i + g];
      e[i].cost += q.cost;
      e[i].sum_a += q.a;
      e[i].sum_b += -0.5f * q.n;
      e[i].k[g] = static_cast<uint8_t>(q.k);
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


inline float Max(float a, float b) { return a > b ? a : b; }

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
  if (kept == nullptr) {
    kn.compute_a_block(nb.w, scratch.a);
    kept = scratch.a;
  }
  for (int gi = 0; gi < 32; ++gi) {
    signs[gi] = static_cast<uint8_t>(masks[gi] & 127);
    scratch.ab[gi].a = kept[gi];
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
    kn.compute_a_block(e.kept.w, e.kept.a);
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
#if BOLTPACK_X86_SIMD
  const CpuFeatures& cpu = DetectCpuFeatures();
  return cpu.avx2 && cpu.fma;
#else
  return false;
#endif
}

void DecodeBlocksF32(const uint8_t* src, size_t nblocks, float* dst, Isa isa) {
  if (isa == Isa::kAuto) isa = Avx2Supported() ? Isa::kAvx2 : Isa::kPortable;
#if BOLTPACK_X86_SIMD
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
  ACache& cache = kept[kn.compute_a_block == SelectKernels(Isa::kPortable).compute_a_block ? 0 : 1];
  for (size_t b = 0; b < n / kBlockElems; ++b) {
    const float* imp = importance != nullptr ? importance + b * kBlockElems : nullptr;
    QuantizeBlock(kn, x + b * kBlockElems, imp, dst + b * kBlockBytes, *scratch, cache.Get(kn, b, imp));
  }
}

}  // namespace boltpack::iq2_xxs
