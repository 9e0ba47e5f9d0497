// Decode and batch-1..8 GEMV of bf16-huffman and bf16-unary
// (spec/codecs-bf16-exp.md §3-§5) from the stored streams and the sync
// index (entropy_index.h). A lane of the format is one dependency chain
// (each code word starts where the last ended), too few of them to fill a
// GPU; the index's sync points cut every lane into segments of 256
// exponents, and each thread decodes one:
//
//   1. a block of 128 threads takes 128 consecutive segments; each thread
//      decodes its segment from its sync point, one code word per step (a
//      12-bit table lookup in shared memory for Huffman, a count of leading
//      zeros for unary), into the block's shared staging, 4 exponents per
//      32-bit store (slots of 260 bytes: the threads' stores fall in
//      different banks);
//   2. the block's warps then walk the staged segments with consecutive
//      lanes on consecutive elements (coalesced loads and stores), joining
//      each exponent with its sign+mantissa byte, and either write the bf16
//      (or f32, f16) or multiply it by x and sum per row (GEMV: per-lane
//      sums, added into the block's row sums in shared memory when a lane's
//      row changes, and those into y once per block).
//
// The segments of a block are consecutive symbols, and a symbol is an
// element, so the block's output is one contiguous run.
#include <algorithm>
#include <cstdint>

#include "gpu/entropy_index.h"
#include "gpu/float_bits.cuh"
#include "gpu/kernels.h"

namespace boltpack::gpu {
namespace {

constexpr uint32_t kThreads = kEntropyThreads;
constexpr uint32_t kWarps = kThreads / 32;
constexpr uint32_t kSlot = kEntropyEvery + 4;  // + room for a lookup's symbols past the segment's end
// Rows of a block's run that get shared row sums (cols >= 512 always fit:
// a run is at most 128 x 256 elements); beyond, sums go to y directly.
constexpr uint32_t kMaxBlockRows = 66;

struct Streams {
  const uint8_t* sm;
  const uint8_t* ex;
  const EntropyIndexHeader* header;
  const uint32_t* lut;  // global: copied to shared memory by each block
  const EntropyBlockBase* bases;
  const uint32_t* words;
  uint64_t segments;
  uint64_t rows, cols;
};

__device__ __forceinline__ uint32_t Bswap(uint32_t x) { return __byte_perm(x, 0, 0x0123); }

// MSB-first bits from any bit position: the 32 bits at the position are
// the top of (cur:nxt) shifted left by off. Two more words are in flight
// behind them, so a refill never waits on its own load (a load issued
// when it is needed stalled the decode chain every 32 bits).
class BitReader {
 public:
  __device__ BitReader(const uint8_t* base, uint64_t bit) {
    w_ = reinterpret_cast<const uint32_t*>(base) + (bit >> 5);
    cur_ = Bswap(__ldg(w_));
    nxt_ = Bswap(__ldg(w_ + 1));
    a1_ = __ldg(w_ + 2);
    a2_ = __ldg(w_ + 3);
    w_ += 4;
    off_ = static_cast<uint32_t>(bit & 31);
  }
  __device__ __forceinline__ uint32_t Peek() const { return __funnelshift_l(nxt_, cur_, off_); }
  // n <= 28 (the longest code word: unary's escape with 20 ranks).
  __device__ __forceinline__ void Skip(uint32_t n) {
    off_ += n;
    if (off_ >= 32) {
      off_ -= 32;
      cur_ = nxt_;
      nxt_ = Bswap(a1_);
      a1_ = a2_;
      a2_ = __ldg(w_++);
    }
  }

 private:
  const uint32_t* w_;
  uint32_t cur_, nxt_, a1_, a2_, off_;
};

// What a block keeps in shared memory: the decode table and code, each
// segment's first symbol relative to the block's (a scan of the counts),
// and the staged exponents.
struct BlockShared {
  uint32_t lut[1u << kEntropyLutBits];
  uint8_t rank_sym[32];
  uint32_t ranks;
  uint32_t first[kThreads + 4];  // + room for ComposeTile's reads past the last slot
  uint32_t warp_sums[kWarps];
  float row_sums[kMaxBlockRows * 8];  // GEMV
  __align__(16) uint8_t stage[kThreads * kSlot];
};

// Blocks stay resident and take tiles of kThreads segments in turn, so the
// 16 KB table is loaded once per block, not per tile; BlockShared is more
// than the 48 KB of static shared memory, so it is dynamic.
__device__ __forceinline__ BlockShared& Shared() {
  extern __shared__ __align__(16) uint8_t smem[];
  return *reinterpret_cast<BlockShared*>(smem);
}

__device__ void LoadCode(const Streams& s, BlockShared* sh) {
  const uint4* src = reinterpret_cast<const uint4*>(s.lut);
  uint4* dst = reinterpret_cast<uint4*>(sh->lut);
  for (uint32_t i = threadIdx.x; i < sizeof(sh->lut) / 16; i += blockDim.x) dst[i] = __ldg(src + i);
  if (threadIdx.x < 32) sh->rank_sym[threadIdx.x] = s.header->rank_sym[threadIdx.x];
  if (threadIdx.x == 0) sh->ranks = s.header->unary_ranks;
}

// One table lookup: up to 3 symbols into `acc` (pending bytes, `pending` of
// them); a window whose first code word is longer than the table (unary
// only) takes one code word by its leading zeros.
__device__ __forceinline__ uint32_t Lookup(BitReader& br, const BlockShared& c, uint64_t& acc, uint32_t& pending) {
  const uint32_t w = br.Peek();
  const uint32_t e = c.lut[w >> (32 - kEntropyLutBits)];
  uint32_t count = (e >> kLutCountShift) & 3u;
  uint32_t syms = e & 0xffffffu;
  uint32_t bits = e >> kLutBitsShift;
  if (count == 0) {
    const uint32_t r = __clz(w);
    count = 1;
    if (r < c.ranks) {
      syms = c.rank_sym[r];
      bits = r + 1;
    } else {
      syms = (w << c.ranks) >> 24;
      bits = c.ranks + 8;
    }
  }
  br.Skip(bits);
  acc |= uint64_t{syms} << (8 * pending);
  pending += count;
  return count;
}

// Step 1: segment `seg` (its first bit `bit`, `n` symbols) into its slot;
// a last lookup may add up to 2 symbols past n (slot slack).
__device__ void StageSegment(const Streams& s, const BlockShared& c, uint64_t bit, uint32_t n, uint32_t* slot) {
  BitReader br(s.ex, bit);
  uint64_t acc = 0;
  uint32_t pending = 0, have = 0, word = 0;
  while (have < n) {
    have += Lookup(br, c, acc, pending);
    if (pending >= 4) {
      slot[word++] = static_cast<uint32_t>(acc);
      acc >>= 32;
      pending -= 4;
    }
  }
  if (pending > 0) slot[word] = static_cast<uint32_t>(acc);
}

// Tile `tile`'s segments' first symbols (an exclusive scan of their
// counts), then each thread's segment staged. Returns the tile's segment
// count. The caller syncs before the next tile reuses the staging.
__device__ uint32_t StageTile(const Streams& s, BlockShared* sh, uint64_t tile) {
  const uint64_t seg0 = tile * kThreads;
  const uint32_t segs = static_cast<uint32_t>(min(uint64_t{kThreads}, s.segments - seg0));
  const uint32_t t = threadIdx.x, lane = t % 32;
  const uint32_t word = t < segs ? __ldg(s.words + seg0 + t) : 0;
  const uint32_t n = t < segs ? (word & 0xffu) + 1 : 0;
  uint32_t incl = n;
#pragma unroll
  for (uint32_t d = 1; d < 32; d *= 2) {
    const uint32_t v = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl += v;
  }
  if (lane == 31) sh->warp_sums[t / 32] = incl;
  __syncthreads();
  uint32_t before = 0;
  for (uint32_t w = 0; w < t / 32; ++w) before += sh->warp_sums[w];
  sh->first[t + 1] = before + incl;
  if (t == 0) sh->first[0] = 0;
  if (t < segs) {
    StageSegment(s, *sh, s.bases[tile].bit + (word >> 8), n,
                 reinterpret_cast<uint32_t*>(sh->stage + t * kSlot));
  }
  __syncthreads();
  return segs;
}

__device__ __forceinline__ uint32_t Join(uint32_t sm, uint32_t e) { return (sm & 0x80u) << 8 | e << 7 | (sm & 0x7fu); }

template <OutType kOut>
__device__ __forceinline__ void Emit(uint32_t bf16, void* dst, uint64_t g) {
  if constexpr (kOut == OutType::kBf16) {
    reinterpret_cast<uint16_t*>(dst)[g] = static_cast<uint16_t>(bf16);
  } else if constexpr (kOut == OutType::kF32) {
    reinterpret_cast<uint32_t*>(dst)[g] = bf16 << 16;
  } else {
    reinterpret_cast<uint16_t*>(dst)[g] = F32ToF16Bits(Float(bf16 << 16));
  }
}

// 4 elements from g (a multiple of 4), their sign+mantissa bytes m and
// exponents e4: one store.
template <OutType kOut>
__device__ __forceinline__ void Emit4(uint32_t m, uint32_t e4, void* dst, uint64_t g) {
  uint32_t b[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) b[i] = Join((m >> (8 * i)) & 0xffu, (e4 >> (8 * i)) & 0xffu);
  if constexpr (kOut == OutType::kBf16) {
    reinterpret_cast<uint2*>(dst)[g / 4] = make_uint2(b[0] | b[1] << 16, b[2] | b[3] << 16);
  } else if constexpr (kOut == OutType::kF32) {
    reinterpret_cast<uint4*>(dst)[g / 4] = make_uint4(b[0] << 16, b[1] << 16, b[2] << 16, b[3] << 16);
  } else {
    uint32_t h[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) h[i] = F32ToF16Bits(Float(b[i] << 16));
    reinterpret_cast<uint2*>(dst)[g / 4] = make_uint2(h[0] | h[1] << 16, h[2] | h[3] << 16);
  }
}

// The slots warp w composes: a contiguous run, so a warp's elements are.
__device__ __forceinline__ void WarpSlots(uint32_t segs, uint32_t* begin, uint32_t* end) {
  const uint32_t per = (segs + kWarps - 1) / kWarps, w = threadIdx.x / 32;
  *begin = min(segs, w * per);
  *end = min(segs, *begin + per);
}

// Step 2 of a decode: the warp's slots, kBatchSlots at a time with every
// sign+mantissa load of the batch issued before the first is used (one
// slot's loads alone left too few bytes in flight to keep up with memory).
// Slots that start 4-aligned go 4 elements per lane and step; the rest,
// and the last n % 4 of each, one.
constexpr uint32_t kBatchSlots = 4;

template <OutType kOut>
__device__ void ComposeTile(const Streams& s, const BlockShared& sh, uint32_t segs, uint64_t base, void* dst) {
  const uint32_t lane = threadIdx.x % 32;
  uint32_t k0, k1;
  WarpSlots(segs, &k0, &k1);
  for (uint32_t k = k0; k < k1; k += kBatchSlots) {
    uint32_t m[kBatchSlots][2];
#pragma unroll
    for (uint32_t q = 0; q < kBatchSlots; ++q) {
      const uint64_t sym0 = base + sh.first[k + q];
      const uint32_t whole = k + q < k1 && sym0 % 4 == 0 ? (sh.first[k + q + 1] - sh.first[k + q]) & ~3u : 0;
#pragma unroll
      for (uint32_t h = 0; h < 2; ++h) {
        const uint32_t j = 4 * lane + 128 * h;
        m[q][h] = j + 4 <= whole ? __ldg(reinterpret_cast<const uint32_t*>(s.sm + sym0 + j)) : 0;
      }
    }
#pragma unroll
    for (uint32_t q = 0; q < kBatchSlots; ++q) {
      if (k + q >= k1) break;
      const uint64_t sym0 = base + sh.first[k + q];
      const uint32_t n = sh.first[k + q + 1] - sh.first[k + q];
      const uint8_t* e = sh.stage + (k + q) * kSlot;
      const uint32_t whole = sym0 % 4 == 0 ? n & ~3u : 0;
#pragma unroll
      for (uint32_t h = 0; h < 2; ++h) {
        const uint32_t j = 4 * lane + 128 * h;
        if (j + 4 <= whole) Emit4<kOut>(m[q][h], *reinterpret_cast<const uint32_t*>(e + j), dst, sym0 + j);
      }
      for (uint32_t j = whole + lane; j < n; j += 32) Emit<kOut>(Join(__ldg(s.sm + sym0 + j), e[j]), dst, sym0 + j);
    }
  }
}

template <OutType kOut>
__global__ void __launch_bounds__(kThreads) EntropyDecodeKernel(Streams s, void* dst) {
  BlockShared& sh = Shared();
  LoadCode(s, &sh);
  const uint64_t tiles = EntropyBlocks(s.segments);
  for (uint64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const uint32_t segs = StageTile(s, &sh, tile);
    ComposeTile<kOut>(s, sh, segs, s.bases[tile].symbol, dst);
    __syncthreads();
  }
}

// *p += v rounded as __fadd_rn rounds, subnormals kept (the hardware's f32
// atomic add flushes them to zero).
__device__ __forceinline__ void AddExact(float* p, float v) {
  unsigned* u = reinterpret_cast<unsigned*>(p);
  unsigned old = *u, assumed;
  do {
    assumed = old;
    old = atomicCAS(u, assumed, Bits(__fadd_rn(Float(assumed), v)));
  } while (old != assumed);
}

// GEMV step 2: y32[b][row] += W[row][col] x[b][col] over the block's run.
template <int kBatch>
class RowSums {
 public:
  __device__ RowSums(uint64_t rows, uint64_t first_row, uint64_t last_row, float* shared, float* y32)
      : rows_(rows), r0_(first_row), shared_ok_(last_row - first_row < kMaxBlockRows), sh_(shared), y32_(y32) {}

  __device__ __forceinline__ void Add(uint64_t row, const float* acc) const {
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      AddExact(shared_ok_ ? sh_ + (row - r0_) * kBatch + b : y32_ + b * rows_ + row, acc[b]);
    }
  }
  // Every lane of the warp calls it: each lane's sums (of row *acc_row)
  // are added, one shuffle reduction and one add per distinct row, then
  // zeroed, and each lane goes on to its `row`.
  __device__ __forceinline__ void WarpSwitch(float* acc, uint64_t* acc_row, uint64_t row) const {
    const uint32_t lane = threadIdx.x % 32;
    uint32_t pending = 0xffffffffu;
    while (pending != 0) {
      const uint32_t leader = __ffs(pending) - 1;
      const uint64_t target = __shfl_sync(0xffffffffu, *acc_row, leader);
      const bool mine = *acc_row == target;
      float sum[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        sum[b] = mine ? acc[b] : 0.0f;
#pragma unroll
        for (int off = 16; off > 0; off /= 2) sum[b] += __shfl_xor_sync(0xffffffffu, sum[b], off);
      }
      if (lane == leader) Add(target, sum);
      pending &= ~__ballot_sync(0xffffffffu, mine);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) acc[b] = 0.0f;
    *acc_row = row;
  }
  // After __syncthreads: the block's row sums into y.
  __device__ void Flush(uint64_t last_row) const {
    if (!shared_ok_) return;
    const uint32_t n = static_cast<uint32_t>(last_row - r0_ + 1) * kBatch;
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
      AddExact(y32_ + (i % kBatch) * rows_ + r0_ + i / kBatch, sh_[i]);
    }
  }

 private:
  uint64_t rows_;
  uint64_t r0_;
  bool shared_ok_;
  float* sh_;
  float* y32_;
};

// Step 2 of a GEMV. Lanes sum their products per row; when any lane of the
// warp reaches another row the warp adds its sums up row by row (a
// shuffle reduction per distinct row, then one add), so adds into the
// row sums are few and never contended by a warp's own lanes. The loops
// run the same steps on every lane (inactive lanes add nothing), as the
// warp's collective operations need.
template <int kBatch>
__device__ void GemvTile(const Streams& s, BlockShared& sh, uint32_t segs, uint64_t base, const uint16_t* x,
                         float* y32) {
  const uint64_t first_row = base / s.cols;
  const uint64_t last_row = (base + sh.first[segs] - 1) / s.cols;
  const RowSums<kBatch> sums(s.rows, first_row, last_row, sh.row_sums, y32);
  const uint32_t lane = threadIdx.x % 32;
  float acc[kBatch] = {};
  uint64_t acc_row = first_row;
  uint32_t k0, k1;
  WarpSlots(segs, &k0, &k1);
  for (uint32_t k = k0; k < k1; ++k) {
    const uint64_t sym0 = base + sh.first[k];
    const uint32_t n = sh.first[k + 1] - sh.first[k];
    const uint8_t* e = sh.stage + k * kSlot;
    uint32_t whole = 0;
    if (sym0 % 4 == 0 && s.cols % 4 == 0) {  // 4 elements of one row per lane and step
      whole = n & ~3u;
      uint64_t row = (sym0 + 4 * lane) / s.cols;
      uint64_t col = sym0 + 4 * lane - row * s.cols;
      for (uint32_t j0 = 0; j0 < whole; j0 += 128) {
        const uint32_t j = j0 + 4 * lane;
        const bool on = j + 4 <= whole;
        if (__any_sync(0xffffffffu, on && row != acc_row)) sums.WarpSwitch(acc, &acc_row, on ? row : acc_row);
        if (on) {
          const uint32_t m = __ldg(reinterpret_cast<const uint32_t*>(s.sm + sym0 + j));
          const uint32_t e4 = *reinterpret_cast<const uint32_t*>(e + j);
          float w[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) w[i] = Float(Join((m >> (8 * i)) & 0xffu, (e4 >> (8 * i)) & 0xffu) << 16);
#pragma unroll
          for (int b = 0; b < kBatch; ++b) {
            const uint2 xv = __ldg(reinterpret_cast<const uint2*>(x + b * s.cols + col));
            acc[b] = fmaf(w[0], Float(xv.x << 16), acc[b]);
            acc[b] = fmaf(w[1], Float(xv.x & 0xffff0000u), acc[b]);
            acc[b] = fmaf(w[2], Float(xv.y << 16), acc[b]);
            acc[b] = fmaf(w[3], Float(xv.y & 0xffff0000u), acc[b]);
          }
          for (col += 128; col >= s.cols; col -= s.cols) ++row;
        }
      }
    }
    uint64_t row = (sym0 + whole + lane) / s.cols;
    uint64_t col = sym0 + whole + lane - row * s.cols;
    for (uint32_t j0 = whole; j0 < n; j0 += 32) {
      const uint32_t j = j0 + lane;
      const bool on = j < n;
      if (__any_sync(0xffffffffu, on && row != acc_row)) sums.WarpSwitch(acc, &acc_row, on ? row : acc_row);
      if (on) {
        const float w = Float(Join(__ldg(s.sm + sym0 + j), e[j]) << 16);
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          acc[b] = fmaf(w, Float(uint32_t{__ldg(x + b * s.cols + col)} << 16), acc[b]);
        }
        for (col += 32; col >= s.cols; col -= s.cols) ++row;
      }
    }
  }
  sums.WarpSwitch(acc, &acc_row, acc_row);
  __syncthreads();
  sums.Flush(last_row);
}

template <int kBatch>
__global__ void __launch_bounds__(kThreads) EntropyGemvKernel(Streams s, const uint16_t* __restrict__ x,
                                                              float* y32) {
  BlockShared& sh = Shared();
  LoadCode(s, &sh);
  const uint64_t tiles = EntropyBlocks(s.segments);
  for (uint64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    for (uint32_t i = threadIdx.x; i < kMaxBlockRows * kBatch; i += blockDim.x) sh.row_sums[i] = 0.0f;
    const uint32_t segs = StageTile(s, &sh, tile);
    GemvTile<kBatch>(s, sh, segs, s.bases[tile].symbol, x, y32);
    __syncthreads();
  }
}

__global__ void F32ToBf16Kernel(const float* src, uint16_t* dst, uint64_t n) {
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += uint64_t{gridDim.x} * blockDim.x) {
    dst[i] = F32ToBf16Bits(src[i]);
  }
}

Streams ToStreams(const EntropyTensor& t) {
  const auto* index = static_cast<const uint8_t*>(t.index);
  return Streams{t.sm,
                 t.ex,
                 reinterpret_cast<const EntropyIndexHeader*>(index),
                 reinterpret_cast<const uint32_t*>(index + kEntropyLutOffset),
                 reinterpret_cast<const EntropyBlockBase*>(index + kEntropyBlockOffset),
                 reinterpret_cast<const uint32_t*>(index + EntropySegmentOffset(t.segments)),
                 t.segments,
                 t.rows,
                 t.cols};
}

// Resident blocks: as many as fit the GPU (4 per SM: BlockShared is about
// 51 KB), at most one per tile. Raises the kernel's dynamic shared memory
// limit the first time.
template <auto kKernel>
cudaError_t Grid(const EntropyTensor& t, unsigned* blocks) {
  static const cudaError_t raised =  // once per kernel: kKernel is a template argument
      cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sizeof(BlockShared));
  if (raised != cudaSuccess) return raised;
  int sms = 132, device = 0;
  if (cudaGetDevice(&device) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  *blocks = static_cast<unsigned>(std::min<uint64_t>(EntropyBlocks(t.segments), uint64_t(sms) * 4));
  return cudaSuccess;
}

template <OutType kOut>
cudaError_t DecodeAs(const EntropyTensor& t, void* dst, cudaStream_t stream) {
  unsigned blocks = 0;
  if (cudaError_t e = Grid<EntropyDecodeKernel<kOut>>(t, &blocks); e != cudaSuccess) return e;
  EntropyDecodeKernel<kOut><<<blocks, kThreads, sizeof(BlockShared), stream>>>(ToStreams(t), dst);
  return cudaGetLastError();
}

cudaError_t Decode(const EntropyTensor& t, OutType out, void* dst, cudaStream_t stream) {
  switch (out) {
    case OutType::kBf16: return DecodeAs<OutType::kBf16>(t, dst, stream);
    case OutType::kF32: return DecodeAs<OutType::kF32>(t, dst, stream);
    case OutType::kF16: return DecodeAs<OutType::kF16>(t, dst, stream);
  }
  return cudaErrorInvalidValue;
}

template <int kBatch>
void GemvAs(const EntropyTensor& t, const void* x, float* y32, cudaStream_t stream) {
  unsigned blocks = 0;
  if (Grid<EntropyGemvKernel<kBatch>>(t, &blocks) != cudaSuccess) return;  // cudaGetLastError reports it
  EntropyGemvKernel<kBatch><<<blocks, kThreads, sizeof(BlockShared), stream>>>(
      ToStreams(t), static_cast<const uint16_t*>(x), y32);
}

cudaError_t GemvBatch(const EntropyTensor& t, const void* x, int batch, float* y32, cudaStream_t stream) {
  switch (batch) {
    case 1: GemvAs<1>(t, x, y32, stream); break;
    case 2: GemvAs<2>(t, x, y32, stream); break;
    case 3: GemvAs<3>(t, x, y32, stream); break;
    case 4: GemvAs<4>(t, x, y32, stream); break;
    case 5: GemvAs<5>(t, x, y32, stream); break;
    case 6: GemvAs<6>(t, x, y32, stream); break;
    case 7: GemvAs<7>(t, x, y32, stream); break;
    case 8: GemvAs<8>(t, x, y32, stream); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchEntropyDecode(const EntropyTensor& t, OutType out, void* dst, cudaStream_t stream) {
  if (t.segments == 0) return cudaSuccess;
  return Decode(t, out, dst, stream);
}

cudaError_t LaunchEntropyGemv(const EntropyTensor& t, const void* x, int batch, bool bf16_out, void* y,
                              cudaStream_t stream) {
  const uint64_t n = t.rows * static_cast<uint64_t>(batch);
  float* y32 = bf16_out ? static_cast<float*>(t.workspace) : static_cast<float*>(y);
  cudaError_t e = cudaMemsetAsync(y32, 0, n * sizeof(float), stream);
  if (e != cudaSuccess || n == 0) return e;
  if (t.segments > 0) {
    e = GemvBatch(t, x, batch, y32, stream);
    if (e != cudaSuccess) return e;
  }
  if (bf16_out) {
    const unsigned blocks = static_cast<unsigned>(std::min<uint64_t>((n + 255) / 256, 4096));
    F32ToBf16Kernel<<<blocks, 256, 0, stream>>>(y32, static_cast<uint16_t*>(y), n);
  }
  return cudaGetLastError();
}

}  // namespace boltpack::gpu
