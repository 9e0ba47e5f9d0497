// The Cassandra split of bf16 values (spec/codecs-bf16-spec.md), shared by
// the offline codec `bf16-spec` and the online KV-cache API (kv_split.h):
//
//   - selection: the top k of a row by an unsigned key (ties: lower index),
//     by radix select on 8-bit digits, no sort;
//   - fixed-width fields packed LSB-first (kept sign + top mantissa bits,
//     kept low mantissa bits);
//   - the split of a segment into kept / pruned values by its keep bitmap
//     and the merge back (bit i of the bitmap is bit i & 7 of byte i >> 3);
//   - the draft value of a kept element.
#ifndef BOLTPACK_CODECS_BF16_SPEC_SPLIT_KERNEL_H_
#define BOLTPACK_CODECS_BF16_SPEC_SPLIT_KERNEL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace boltpack::bf16_spec {

inline constexpr int kMaxMbits = 7;

// Tests: true makes KvSplitCodec take its portable (no SIMD, no BMI2) paths,
// which write and accept the same bits as the run-time-selected ones.
void SetKvSplitPortableForTesting(bool portable);

inline uint64_t LoadLE64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Up to 8 bytes from [p, p + avail) as a little-endian word, zero-filled.
inline uint64_t LoadLE64Bounded(const uint8_t* p, size_t avail) {
  if (avail >= 8) return LoadLE64(p);
  uint64_t v = 0;
  for (size_t i = 0; i < avail; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

inline uint64_t BitBytes(uint64_t bits) { return (bits + 7) / 8; }

// The draft value of a kept element: sign, exponent and top `mbits`
// mantissa bits of the original; the dropped low bits are filled with the
// midpoint pattern 100..0 (the centre of the interval the original lies
// in), except for exponents 0 (zeros, subnormals) and 255 (inf, NaN), whose
// dropped bits are zero.
inline uint16_t DraftValue(uint32_t sign, uint32_t exp, uint32_t mtop, int mbits) {
  const uint32_t low = 7 - mbits;
  uint32_t v = sign << 15 | exp << 7 | mtop << low;
  if (low > 0 && ((exp + 1) & 0xffu) > 1) v |= 1u << (low - 1);
  return static_cast<uint16_t>(v);
}

// Writes fixed-width fields (0..8 bits) LSB-first: field j occupies bits
// [j*w, (j+1)*w) of the little-endian bit string. The caller's buffer holds
// at least ceil(total bits / 8) + 4 bytes.
class FieldWriter {
 public:
  explicit FieldWriter(uint8_t* out) : begin_(out), out_(out) {}
  void Put(uint32_t v, int w) {
    acc_ |= static_cast<uint64_t>(v) << bits_;
    bits_ += w;
    if (bits_ >= 32) {
      const uint32_t word = static_cast<uint32_t>(acc_);
      std::memcpy(out_, &word, 4);
      out_ += 4;
      acc_ >>= 32;
      bits_ -= 32;
    }
  }
  size_t Finish() {
    while (bits_ > 0) {
      *out_++ = static_cast<uint8_t>(acc_);
      acc_ >>= 8;
      bits_ -= 8;
    }
    bits_ = 0;
    acc_ = 0;
    return static_cast<size_t>(out_ - begin_);
  }

 private:
  uint8_t* begin_;
  uint8_t* out_;
  uint64_t acc_ = 0;
  int bits_ = 0;
};

// Field j (width w, 0..8) of a packed section of `bytes` bytes; the caller
// guarantees (j + 1) * w <= bytes * 8.
inline uint32_t GetField(const uint8_t* p, size_t bytes, uint64_t j, int w) {
  if (w == 0) return 0;
  const uint64_t bit = j * static_cast<uint64_t>(w);
  const size_t b = static_cast<size_t>(bit >> 3);
  uint32_t v = p[b];
  if (b + 1 < bytes) v |= static_cast<uint32_t>(p[b + 1]) << 8;
  return (v >> (bit & 7)) & ((1u << w) - 1);
}

// Unpacks fields [j0, j0 + count) into out[0..count).
inline void UnpackFields(const uint8_t* p, size_t bytes, uint64_t j0, uint64_t count, int w, uint8_t* out) {
  if (count == 0) return;
  if (w == 0) {
    std::memset(out, 0, static_cast<size_t>(count));
    return;
  }
  const uint32_t mask = (1u << w) - 1;
  uint64_t j = 0;
  if (w == 8) {
    std::memcpy(out, p + j0, static_cast<size_t>(count));
    return;
  }
  if (w == 4) {
    if ((j0 & 1) != 0 && count > 0) {
      out[0] = static_cast<uint8_t>(p[j0 >> 1] >> 4);
      j = 1;
    }
    const uint8_t* q = p + ((j0 + j) >> 1);
    const uint64_t pairs = (count - j) / 2;
    for (uint64_t i = 0; i < pairs; ++i) {
      out[j + 2 * i] = static_cast<uint8_t>(q[i] & 15);
      out[j + 2 * i + 1] = static_cast<uint8_t>(q[i] >> 4);
    }
    j += 2 * pairs;
    if (j < count) out[j] = static_cast<uint8_t>(q[pairs] & 15);
    return;
  }
  // Fast part: a full 8-byte load stays inside the section.
  for (; j < count; ++j) {
    const uint64_t bit = (j0 + j) * static_cast<uint64_t>(w);
    const size_t b = static_cast<size_t>(bit >> 3);
    if (b + 8 > bytes) break;
    out[j] = static_cast<uint8_t>((LoadLE64(p + b) >> (bit & 7)) & mask);
  }
  for (; j < count; ++j) out[j] = static_cast<uint8_t>(GetField(p, bytes, j0 + j, w));
}

// Number of set bits in bits [b0, b1) of a bitmap.
inline uint64_t CountBits(const uint8_t* bitmap, uint64_t b0, uint64_t b1) {
  uint64_t n = 0;
  while (b0 < b1) {
    const uint64_t byte = b0 >> 3;
    const int off = static_cast<int>(b0 & 7);
    const uint64_t take = std::min<uint64_t>(56, b1 - b0);
    uint64_t w = LoadLE64Bounded(bitmap + byte, static_cast<size_t>(BitBytes(b1) - byte)) >> off;
    w &= (uint64_t{1} << take) - 1;
    n += static_cast<uint64_t>(__builtin_popcountll(w));
    b0 += take;
  }
  return n;
}

// ORs the low `count` (<= 64) bits of `word` into bits [bitpos, bitpos +
// count) of a bitmap.
inline void OrBits(uint8_t* bitmap, uint64_t bitpos, uint64_t word, uint64_t count) {
  const int off = static_cast<int>(bitpos & 7);
  const unsigned __int128 x = static_cast<unsigned __int128>(word) << off;
  const uint64_t nbytes = (static_cast<uint64_t>(off) + count + 7) / 8;
  uint8_t* p = bitmap + (bitpos >> 3);
  for (uint64_t b = 0; b < nbytes; ++b) p[b] |= static_cast<uint8_t>(x >> (8 * b));
}

namespace select_internal {

// One radix pass: histogram of digit (key >> Shift) & (2^D - 1) over the
// keys that start with `prefix` (all keys on the first pass); picks the
// digit where the `need`-th largest key lies.
template <int Shift, int D, bool First, typename KeyAt>
inline void Pass(uint64_t n, const KeyAt& key_at, uint64_t& prefix, uint64_t& need) {
  constexpr uint32_t kMask = (1u << D) - 1;
  uint32_t hist[4][1u << D] = {};
  if constexpr (First) {
    uint64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      ++hist[0][(key_at(i) >> Shift) & kMask];
      ++hist[1][(key_at(i + 1) >> Shift) & kMask];
      ++hist[2][(key_at(i + 2) >> Shift) & kMask];
      ++hist[3][(key_at(i + 3) >> Shift) & kMask];
    }
    for (; i < n; ++i) ++hist[0][(key_at(i) >> Shift) & kMask];
  } else {
    const uint64_t want = prefix;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t key = key_at(i);
      hist[i & 3][(key >> Shift) & kMask] += (key >> (Shift + D)) == want;
    }
  }
  uint64_t cum = 0;
  uint32_t b = kMask;
  for (; b > 0; --b) {
    const uint64_t h = uint64_t{hist[0][b]} + hist[1][b] + hist[2][b] + hist[3][b];
    if (cum + h >= need) break;
    cum += h;
  }
  need -= cum;
  prefix = prefix << D | b;
}

}  // namespace select_internal

// Marks the top `k` of `n` keys (key_at(i) < 2^KeyBits, KeyBits 15 or 31;
// ties: lower index first) as set bits [bit0, bit0 + n) of `bitmap`, whose
// bits there are zero on entry.
// Rows up to this long are selected by direct ranking (SelectTopK).
inline constexpr uint64_t kSmallSelect = 16;

template <int KeyBits, typename KeyAt>
void SelectTopK(uint64_t n, uint64_t k, const KeyAt& key_at, uint8_t* bitmap, uint64_t bit0) {
  static_assert(KeyBits == 15 || KeyBits == 31);
  if (k >= n) {
    for (uint64_t i = 0; i < n; i += 64) {
      const uint64_t c = std::min<uint64_t>(64, n - i);
      OrBits(bitmap, bit0 + i, c == 64 ? ~uint64_t{0} : (uint64_t{1} << c) - 1, c);
    }
    return;
  }
  if (k == 0) return;
  if (n <= kSmallSelect) {
    // Short rows (conv kernels: 3 or 9 columns) rank each key directly:
    // the passes below clear and scan 256-bin histograms per row, which
    // costs ~100x more than the row itself. Same selection.
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t ki = key_at(i);
      uint64_t rank = 0;  // keys that come before key i in the order
      for (uint64_t j = 0; j < n; ++j) {
        const uint64_t kj = key_at(j);
        rank += static_cast<uint64_t>(kj > ki) | (static_cast<uint64_t>(kj == ki) & static_cast<uint64_t>(j < i));
      }
      if (rank < k) bitmap[(bit0 + i) >> 3] |= static_cast<uint8_t>(1u << ((bit0 + i) & 7));
    }
    return;
  }
  uint64_t prefix = 0;
  uint64_t need = k;  // still to take among keys that start with `prefix`
  if constexpr (KeyBits == 15) {
    select_internal::Pass<7, 8, true>(n, key_at, prefix, need);
    select_internal::Pass<0, 7, false>(n, key_at, prefix, need);
  } else {
    select_internal::Pass<23, 8, true>(n, key_at, prefix, need);
    select_internal::Pass<15, 8, false>(n, key_at, prefix, need);
    select_internal::Pass<7, 8, false>(n, key_at, prefix, need);
    select_internal::Pass<0, 7, false>(n, key_at, prefix, need);
  }
  const uint64_t t = prefix;
  // Keys above the threshold, then the first `need` keys equal to it.
  for (uint64_t i = 0; i < n; i += 64) {
    const uint64_t c = std::min<uint64_t>(64, n - i);
    uint64_t w = 0;
    for (uint64_t j = 0; j < c; ++j) w |= static_cast<uint64_t>(static_cast<uint64_t>(key_at(i + j)) > t) << j;
    OrBits(bitmap, bit0 + i, w, c);
  }
  for (uint64_t i = 0; i < n && need > 0; ++i) {
    if (static_cast<uint64_t>(key_at(i)) == t) {
      bitmap[(bit0 + i) >> 3] |= static_cast<uint8_t>(1u << ((bit0 + i) & 7));
      --need;
    }
  }
}

// The k-th largest bf16 magnitude (key = x & 0x7fff) of v[0..n) by two
// histogram passes (exponent, then mantissa within that exponent bin):
// `*thr` is that key and `*need_out` how many keys equal to it belong to the
// top k (every key above it does). Shared by the offline codec and the KV
// split's portable path.
inline void Bf16TopKThreshold(const uint16_t* v, uint64_t n, uint64_t k, uint32_t* thr, uint64_t* need_out) {
  uint32_t h[4][256] = {};
  uint64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    ++h[0][(v[i] >> 7) & 0xffu];
    ++h[1][(v[i + 1] >> 7) & 0xffu];
    ++h[2][(v[i + 2] >> 7) & 0xffu];
    ++h[3][(v[i + 3] >> 7) & 0xffu];
  }
  for (; i < n; ++i) ++h[0][(v[i] >> 7) & 0xffu];
  uint64_t need = k, cum = 0;
  uint32_t e = 255;
  for (; e > 0; --e) {
    const uint64_t c = uint64_t{h[0][e]} + h[1][e] + h[2][e] + h[3][e];
    if (cum + c >= need) break;
    cum += c;
  }
  need -= cum;
  // Branch-free: every key adds 0 or 1 to its mantissa bin.
  uint32_t h2[4][128] = {};
  for (i = 0; i + 4 <= n; i += 4) {
    for (uint64_t q = 0; q < 4; ++q) h2[q][v[i + q] & 0x7fu] += ((v[i + q] >> 7) & 0xffu) == e;
  }
  for (; i < n; ++i) h2[0][v[i] & 0x7fu] += ((v[i] >> 7) & 0xffu) == e;
  cum = 0;
  uint32_t b = 127;
  for (; b > 0; --b) {
    const uint64_t c = uint64_t{h2[0][b]} + h2[1][b] + h2[2][b] + h2[3][b];
    if (cum + c >= need) break;
    cum += c;
  }
  *thr = e << 7 | b;
  *need_out = need - cum;
}

// SelectTopK<15> for bf16 magnitudes (key = x & 0x7fff) read from `v`,
// with SSE2 for the filtered passes where available. Same result.
inline void SelectTopKBf16(const uint16_t* v, uint64_t n, uint64_t k, uint8_t* bitmap, uint64_t bit0) {
#if defined(__SSE2__)
  if (k == 0 || k >= n || n <= kSmallSelect) {
    SelectTopK<15>(n, k, [v](uint64_t i) { return static_cast<uint32_t>(v[i] & 0x7fffu); }, bitmap, bit0);
    return;
  }
  uint32_t threshold = 0;
  uint64_t need = 0;
  Bf16TopKThreshold(v, n, k, &threshold, &need);
  const uint16_t t = static_cast<uint16_t>(threshold);
  // Emit keys above t, then the first `need` keys equal to t.
  const __m128i kmask = _mm_set1_epi16(0x7fff), tv = _mm_set1_epi16(static_cast<int16_t>(t));
  for (uint64_t i = 0; i < n; i += 64) {
    const uint64_t c = std::min<uint64_t>(64, n - i);
    uint64_t w = 0;
    uint64_t j = 0;
    for (; j + 8 <= c; j += 8) {
      const __m128i x = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i + j)), kmask);
      const __m128i gt = _mm_cmpgt_epi16(x, tv);
      w |= static_cast<uint64_t>(_mm_movemask_epi8(_mm_packs_epi16(gt, gt)) & 0xff) << j;
    }
    for (; j < c; ++j) w |= static_cast<uint64_t>((v[i + j] & 0x7fffu) > t) << j;
    OrBits(bitmap, bit0 + i, w, c);
  }
  for (uint64_t i = 0; i < n && need > 0; i += 8) {
    uint32_t m = 0;
    if (i + 8 <= n) {
      const __m128i x = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i)), kmask);
      m = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi16(x, tv))) & 0x5555u;
    } else {
      for (uint64_t j = i; j < n; ++j) m |= static_cast<uint32_t>((v[j] & 0x7fffu) == t) << (2 * (j - i));
    }
    for (; m != 0 && need > 0; m &= m - 1) {
      const uint64_t at = bit0 + i + (static_cast<uint64_t>(__builtin_ctz(m)) >> 1);
      bitmap[at >> 3] |= static_cast<uint8_t>(1u << (at & 7));
      --need;
    }
  }
#else
  SelectTopK<15>(n, k, [v](uint64_t i) { return static_cast<uint32_t>(v[i] & 0x7fffu); }, bitmap, bit0);
#endif
}

// Splits v[0..m) by the bitmap: kept values to kv, pruned ones to pv, in
// element order. kv and pv each need one element of slack.
inline void SplitByBitmap(const uint16_t* v, uint64_t m, const uint8_t* bitmap, uint16_t* kv, uint16_t* pv) {
  uint64_t ik = 0, ip = 0;
  for (uint64_t i = 0; i < m; ++i) {
    const uint64_t b = (bitmap[i >> 3] >> (i & 7)) & 1u;
    kv[ik] = v[i];
    pv[ip] = v[i];
    ik += b;
    ip += b ^ 1u;
  }
}

// out[i] = the next kept value where bit i is set, else the next pruned
// value (0 when pv is null). kv holds the bitmap's popcount values, pv the
// rest. MergeByBitmap (split_kernel.cc) uses AVX-512 VBMI2 expand loads
// where the CPU has them, else this.
void MergeByBitmap(const uint8_t* bitmap, uint64_t m, const uint16_t* kv, const uint16_t* pv, uint16_t* out);
inline void MergeByBitmapScalar(const uint8_t* bitmap, uint64_t m, const uint16_t* kv, const uint16_t* pv, uint16_t* out) {
  if (m == 0) return;
  if (pv == nullptr) std::memset(out, 0, static_cast<size_t>(m) * 2);
  const size_t bytes = static_cast<size_t>(BitBytes(m));
  for (uint64_t base = 0; base < m; base += 64) {
    uint64_t w = LoadLE64Bounded(bitmap + base / 8, bytes - static_cast<size_t>(base / 8));
    const uint64_t valid = m - base >= 64 ? ~uint64_t{0} : (uint64_t{1} << (m - base)) - 1;
    w &= valid;
    uint16_t* o = out + base;
    if (pv != nullptr) {
      uint64_t x = ~w & valid;
      while (x != 0) {
        o[__builtin_ctzll(x)] = *pv++;
        x &= x - 1;
      }
    }
    while (w != 0) {
      o[__builtin_ctzll(w)] = *kv++;
      w &= w - 1;
    }
  }
}

}  // namespace boltpack::bf16_spec

#endif  // BOLTPACK_CODECS_BF16_SPEC_SPLIT_KERNEL_H_
