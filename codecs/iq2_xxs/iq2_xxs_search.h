// The IQ2_XXS encoder's vector kernels, behind one table of function
// pointers (portable or AVX2, chosen once per row; both give the same bits).
//
// For one group of 8 magnitudes a_j with weights w_j (wa_j = w_j * a_j, one of
// them negated when the sign parity forces a flip), grid index k at scale t
// costs sum_j w_j (t g_kj - a_j)^2 - sum_j w_j a_j^2 = t (t A_k + N_k) with
//   A_k = sum_j w_j g_kj^2,  N_k = -2 sum_j wa_j g_kj.
// The kernels fill A and N for all 256 grid points and find, at a scale t,
// the k with the lowest t A_k + N_k. A and N are stored in the kernels' own
// order of the grid points ("slots"): callers only pass them back.
#ifndef BOLTPACK_CODECS_IQ2_XXS_IQ2_XXS_SEARCH_H_
#define BOLTPACK_CODECS_IQ2_XXS_IQ2_XXS_SEARCH_H_

#include <cstdint>

#include "codecs/iq2_xxs/iq2_xxs_kernels.h"

namespace boltpack::iq2_xxs {

// One group's tables. A depends on the weights alone: with an imatrix, on
// the column, so the rows of a tensor share it (the caller keeps it).
struct alignas(32) GroupAB {
  float n[256];
  const float* a;  // 256 floats, 32-byte aligned
};

// The lowest-cost grid point of a group at a scale t: its index, t times
// its key (the cost, to 16 bits), and its A_k and N_k.
struct Pick {
  int k;
  float cost;
  float a;
  float n;
};

// Per sub-block of 32: max |x|, sum w |x| and sum w (in element order).
struct SubStats {
  float smax[8], swa[8], sw[8];
};

// Block-scale candidates pick_scale weighs at most.
inline constexpr int kMaxScaleCandidates = 16;

struct Kernels {
  // A of the 32 groups of a block from their weights (w[8 g..8 g+7] into
  // out[g], 32-byte aligned).
  void (*compute_a_block)(const float* w, float (*out)[256]);
  // N of the 4 groups of a sub-block from their wa (into ab[g].n).
  void (*compute_n_sub)(const float (*wa)[8], GroupAB* ab);
  // The pick of each of 4 groups at t (out[g]), or at t0 and t1 (out[4 i + g]).
  void (*argmin4)(const GroupAB* ab, float t, Pick out[4]);
  void (*argmin2x4)(const GroupAB* ab, float t0, float t1, Pick out[8]);
  // Of `count` block scales dn (normalised; t = dn (2s + 1) / 8), the first
  // whose quadratic model of the sub-blocks' costs (each at the nearer of its
  // two scales s around m = 8 tc, weighted by curv) is lowest; -1 if none is
  // below +inf.
  int (*pick_scale)(const float* dn, int count, const float m[8], const float tc[8],
                    const float curv[8]);
  // Per group of 8 values xn with weights w: the sign mask (bit j: x_j < 0)
  // and wa = w |x|, where for an odd count of negatives the smallest wa (the
  // first of equals) is negated and its sign bit flipped (parity implies the
  // 8th sign).
  void (*group_signs)(const float* xn, const float* w, unsigned masks[32], float (*wa)[8]);
  void (*sub_stats)(const float* xn, const float* w, SubStats* st);
  // max |x| over a block of 256 finite values.
  float (*abs_max)(const float* x);
};

// kAuto: AVX2 where the CPU has it. kAvx2 only where Avx2Supported().
Kernels SelectKernels(Isa isa);

}  // namespace boltpack::iq2_xxs

#endif  // BOLTPACK_CODECS_IQ2_XXS_IQ2_XXS_SEARCH_H_
