// KvSplitCodec (include/boltpack/kv_split.h; spec/codecs-bf16-spec.md §8).
#include "boltpack/kv_split.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <utility>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "codecs/bf16_exp/exponent_code.h"
#include "codecs/bf16_spec/split_kernel.h"
#include "common/cpu_features.h"
#include "common/str_cat.h"

namespace boltpack {

namespace {

using bf16_spec::BitBytes;

constexpr size_t kMaxElements = size_t{1} << 24;
constexpr size_t kSerializedBytes = 272;
constexpr uint64_t kBlock = 256;  // values per encode/decode step (a multiple of 64)
constexpr int kLut = bf16_exp::kMaxHuffmanBits;  // every code fits the table

inline uint64_t LoadBE64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

inline void StoreLE64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

constexpr uint64_t kByteLsbs = 0x0101010101010101ull;

// Mask of the low w bits of every byte of a word (w 0..8).
inline uint64_t FieldMask(int w) { return w >= 8 ? ~uint64_t{0} : kByteLsbs * ((1u << w) - 1); }

// One code table: canonical code words and two 12-bit decode tables.
struct Code {
  std::array<uint8_t, 256> lengths{};
  std::array<uint16_t, 256> code{};        // canonical code words (the lengths above)
  std::array<uint16_t, 1u << kLut> lut{};  // symbol | length << 8 (codes are complete: never 0)
  // Up to 3 whole code words of a 12-bit window: symbols in bytes 0..2
  // (first in the low byte), count in bits 24..25, bits used in 28..31.
  // 16 KiB, so both tables of a codec stay in L1.
  std::array<uint32_t, 1u << kLut> multi{};
};

absl::StatusOr<Code> MakeCode(const std::array<uint8_t, 256>& lengths) {
  for (int s = 0; s < 256; ++s) {
    if (lengths[s] == 0) return absl::InvalidArgumentError(StrCat("exponent ", s, " has no code"));
  }
  auto ec = bf16_exp::ExponentCode::Huffman(lengths, bf16_exp::ExponentCode::Tables::kSingle);
  if (!ec.ok()) return ec.status();
  Code c;
  c.lengths = lengths;
  for (int s = 0; s < 256; ++s) {
    const int l = ec->length(s);
    c.code[s] = static_cast<uint16_t>(ec->code(s));
    const uint32_t first = ec->code(s) << (kLut - l);
    const uint32_t last = (ec->code(s) + 1) << (kLut - l);
    for (uint32_t i = first; i < last; ++i) c.lut[i] = static_cast<uint16_t>(s | l << 8);
  }
  constexpr uint32_t kWin = (1u << kLut) - 1;
  for (uint32_t w = 0; w <= kWin; ++w) {
    uint32_t e = 0;
    int used = 0, cnt = 0;
    while (cnt < 3) {
      const uint16_t s = c.lut[(w << used) & kWin];
      const int l = s >> 8;
      if (used + l > kLut) break;
      e |= uint32_t{s & 0xffu} << (8 * cnt);
      used += l;
      ++cnt;
    }
    c.multi[w] = e | static_cast<uint32_t>(cnt) << 24 | static_cast<uint32_t>(used) << 28;
  }
  return c;
}

// MSB-first code writer (spec/codecs-bf16-exp.md §2), branch-free: every
// Put stores 8 bytes, so the lane must be the last thing written into its
// buffer and the buffer needs 8 bytes of slack past the lane.
class CodeWriter {
 public:
  explicit CodeWriter(uint8_t* out) : begin_(out), out_(out) {}
  // len 1..48
  void Put(uint64_t code, int len) {
    acc_ = (acc_ << len) | code;  // `bits_` (< 8 + 48) valid low bits
    bits_ += len;
    StoreLE64(out_, __builtin_bswap64(acc_ << (64 - bits_)));
    out_ += bits_ >> 3;
    bits_ &= 7;
  }
  // Codes four symbols per store.
  void PutSyms(const Code& c, const uint8_t* s, uint64_t count) {
    uint64_t i = 0;
    for (; i + 4 <= count; i += 4) {
      const uint64_t c0 = c.code[s[i]], c1 = c.code[s[i + 1]], c2 = c.code[s[i + 2]], c3 = c.code[s[i + 3]];
      const uint32_t l0 = c.lengths[s[i]], l1 = c.lengths[s[i + 1]], l2 = c.lengths[s[i + 2]], l3 = c.lengths[s[i + 3]];
      const uint64_t ab = c0 << l1 | c1, cd = c2 << l3 | c3;
      const uint32_t lcd = l2 + l3;
      Put(ab << lcd | cd, static_cast<int>(l0 + l1 + lcd));
    }
    for (; i < count; ++i) Put(c.code[s[i]], c.lengths[s[i]]);
  }
  size_t Finish() {
    if (bits_ > 0) *out_++ = static_cast<uint8_t>(acc_ << (8 - bits_));
    return static_cast<size_t>(out_ - begin_);
  }

 private:
  uint8_t* begin_;
  uint8_t* out_;
  uint64_t acc_ = 0;
  int bits_ = 0;  // pending bits, 0..7 between Puts (code lengths are >= 1)
};

// Reads code words of one lane of `size` bytes, MSB-first, through a
// 64-bit window refilled when fewer than 12 bits are left in it; up to 3
// code words per table lookup.
class CodeReader {
 public:
  CodeReader(const uint8_t* p, size_t size) : p_(p), size_(size) {}
  // Decodes `count` symbols into out (8 bytes of slack past count); false
  // when the lane runs out.
  bool Get(const Code& c, uint64_t count, uint8_t* out) {
    uint64_t buf = buf_, pos = pos_, i = 0;
    int avail = avail_;
    while (i < count) Step(c, buf, avail, pos, i, count, out);
    buf_ = buf;
    avail_ = avail;
    pos_ = pos;
    return pos_ <= uint64_t{size_} * 8;
  }
  // Get on two lanes at once, interleaved: two independent lookup chains.
  static bool Get2(CodeReader& a, const Code& ca, uint64_t na, uint8_t* oa, CodeReader& b, const Code& cb, uint64_t nb,
                   uint8_t* ob) {
    uint64_t abuf = a.buf_, apos = a.pos_, i = 0, bbuf = b.buf_, bpos = b.pos_, j = 0;
    int aavail = a.avail_, bavail = b.avail_;
    while (i < na && j < nb) {
      a.Step(ca, abuf, aavail, apos, i, na, oa);
      b.Step(cb, bbuf, bavail, bpos, j, nb, ob);
    }
    while (i < na) a.Step(ca, abuf, aavail, apos, i, na, oa);
    while (j < nb) b.Step(cb, bbuf, bavail, bpos, j, nb, ob);
    a.buf_ = abuf;
    a.avail_ = aavail;
    a.pos_ = apos;
    b.buf_ = bbuf;
    b.avail_ = bavail;
    b.pos_ = bpos;
    return a.pos_ <= uint64_t{a.size_} * 8 && b.pos_ <= uint64_t{b.size_} * 8;
  }
  // The lane is consumed exactly: no unused byte, zero padding.
  bool Done() const {
    if ((pos_ + 7) / 8 != size_) return false;
    if ((pos_ & 7) != 0 && (p_[size_ - 1] & ((1u << (8 - (pos_ & 7))) - 1)) != 0) return false;
    return true;
  }

 private:
  // One table lookup: 1..3 symbols to out[i..], i < count.
  inline __attribute__((always_inline)) void Step(const Code& c, uint64_t& buf, int& avail, uint64_t& pos, uint64_t& i,
                                                  uint64_t count, uint8_t* out) const {
    if (avail < kLut) {
      const size_t byte = static_cast<size_t>(pos >> 3);
      uint64_t w;
      if (byte + 8 <= size_) {
        w = LoadBE64(p_ + byte);
      } else {
        w = 0;
        for (size_t b = 0; b < 8; ++b) w = w << 8 | (byte + b < size_ ? p_[byte + b] : 0);
      }
      buf = w << (pos & 7);
      avail = 64 - static_cast<int>(pos & 7);
    }
    const uint32_t e = c.multi[buf >> (64 - kLut)];
    int len;
    if (((e >> 24) & 3u) <= count - i) {
      std::memcpy(out + i, &e, 4);
      i += (e >> 24) & 3u;
      len = static_cast<int>(e >> 28);
    } else {
      const uint16_t s = c.lut[buf >> (64 - kLut)];
      out[i++] = static_cast<uint8_t>(s);
      len = s >> 8;
    }
    buf <<= len;
    avail -= len;
    pos += static_cast<uint64_t>(len);
  }

  const uint8_t* p_;
  size_t size_;
  uint64_t pos_ = 0;
  uint64_t buf_ = 0;
  int avail_ = 0;
};

uint64_t KeptOf(double keep, uint64_t n) {
  const double x = std::ceil(keep * static_cast<double>(n));
  return std::clamp<uint64_t>(static_cast<uint64_t>(x), 1, n);
}

void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t GetU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

struct KvTables {
  uint64_t n = 0, k = 0;
  int mbits = 3;
  Code kept, pruned;
  uint64_t B = 0, F = 0, L = 0;  // bitmap, field, low section bytes
};

// Two builds of the encoder and decoder bodies: portable C++, and one with
// SSE2/AVX2 compares and counting, BMI2 pext/pdep (byte compaction, field
// packing) and shlx/shrx, picked at run time (AVX2 and BMI2 both present).
// Both write and accept the same bits (tests: PortableMatchesFast).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BP_KV_HAVE_FAST 1
#define BP_KV_FAST __attribute__((target("avx2,bmi,bmi2,popcnt")))
BP_KV_FAST inline uint64_t FastPext(uint64_t x, uint64_t m) { return _pext_u64(x, m); }
BP_KV_FAST inline uint64_t FastPdep(uint64_t x, uint64_t m) { return _pdep_u64(x, m); }
// Number of keys v[i] & 0x7fff above t (-1 <= t < 0x7fff).
BP_KV_FAST inline uint64_t FastCountAbove(const uint16_t* v, uint64_t n, int t) {
  const __m256i km = _mm256_set1_epi16(0x7fff), tv = _mm256_set1_epi16(static_cast<int16_t>(t)),
                ones = _mm256_set1_epi16(1);
  uint64_t total = 0, i = 0;
  const uint64_t n16 = n & ~uint64_t{15};
  while (i < n16) {
    const uint64_t stop = std::min(n16, i + (uint64_t{1} << 18));  // <= 16384 per 16-bit lane
    __m256i acc = _mm256_setzero_si256(), acc2 = _mm256_setzero_si256();
    for (; i + 32 <= stop; i += 32) {
      const __m256i x = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + i)), km);
      const __m256i y = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + i + 16)), km);
      acc = _mm256_sub_epi16(acc, _mm256_cmpgt_epi16(x, tv));
      acc2 = _mm256_sub_epi16(acc2, _mm256_cmpgt_epi16(y, tv));
    }
    for (; i < stop; i += 16) {
      const __m256i x = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + i)), km);
      acc = _mm256_sub_epi16(acc, _mm256_cmpgt_epi16(x, tv));
    }
    acc = _mm256_add_epi16(acc, acc2);
    const __m256i s = _mm256_madd_epi16(acc, ones);
    const __m128i q = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    const __m128i r = _mm_add_epi32(q, _mm_shuffle_epi32(q, 0x4e));
    total += static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_add_epi32(r, _mm_shuffle_epi32(r, 0xb1))));
  }
  for (; i < n; ++i) total += static_cast<int>(v[i] & 0x7fffu) > t;
  return total;
}
#endif

std::atomic<bool> g_force_portable{false};

bool UseFast() {
#ifdef BP_KV_HAVE_FAST
  static const bool has = DetectCpuFeatures().avx2 && __builtin_cpu_supports("bmi2");
  return has && !g_force_portable.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

// 8 fields (bits [shift, shift + w) of each byte of x) packed into w bytes.
template <bool kFast>
inline __attribute__((always_inline)) uint64_t PackFields8(uint64_t x, int shift, int w) {
#ifdef BP_KV_HAVE_FAST
  if constexpr (kFast) return FastPext(x, FieldMask(w) << shift);
#endif
  const uint64_t m = (uint64_t{1} << w) - 1;
  uint64_t r = 0;
  for (int i = 0; i < 8; ++i) r |= ((x >> (8 * i + shift)) & m) << (w * i);
  return r;
}

// The inverse: 8 fields of w bits from the low 8w bits of x, one per byte.
template <bool kFast>
inline __attribute__((always_inline)) uint64_t UnpackFields8(uint64_t x, int w, uint64_t mask) {
#ifdef BP_KV_HAVE_FAST
  if constexpr (kFast) return FastPdep(x, mask);
#endif
  uint64_t r = 0;
  for (int i = 0; i < 8; ++i) r |= ((x >> (w * i)) & (mask & 0xffu)) << (8 * i);
  return r;
}

// The bytes of x whose bit in `keep8` is set, moved to the low end in order.
template <bool kFast>
inline __attribute__((always_inline)) uint64_t CompactBytes(uint64_t x, uint32_t keep8) {
#ifdef BP_KV_HAVE_FAST
  if constexpr (kFast) return FastPext(x, FastPdep(keep8, kByteLsbs) * 0xff);
#endif
  uint64_t r = 0;
  int j = 0;
  for (int i = 0; i < 8; ++i) {
    if ((keep8 >> i) & 1) r |= ((x >> (8 * i)) & 0xff) << (8 * j++);
  }
  return r;
}

// Packs the kept values' sign+mantissa bytes s << 7 | m, staged in
// order, into the two sections: field s << M | m >> (7 - M) = the byte's
// bits [7 - M, 8), and the low bits [0, 7 - M). Groups of 8 values are
// whole bytes of each section. Never stores past a section.
template <bool kFast>
class KeptPacker {
 public:
  KeptPacker(uint8_t* fields, uint64_t fbytes, uint8_t* lows, uint64_t lbytes, int lw)
      : fo_(fields), fend_(fields + fbytes), lo_(lows), lend_(lows + lbytes), lw_(lw), fw_(8 - lw) {}
  // Where the next staged bytes go (8-byte stores allowed).
  uint8_t* stage() { return stage_ + fill_; }
  void Added(uint64_t c) { fill_ += c; }
  void Flush() {
    uint64_t g = 0;
    for (; g + 8 <= fill_; g += 8) {
      const uint64_t x = bf16_spec::LoadLE64(stage_ + g);
      Emit(fo_, fend_, PackFields8<kFast>(x, lw_, fw_), fw_);
      if (lw_ > 0) Emit(lo_, lend_, PackFields8<kFast>(x, 0, lw_), lw_);
    }
    const uint64_t rest = bf16_spec::LoadLE64(stage_ + g);
    StoreLE64(stage_, rest);
    fill_ -= g;
  }
  void Finish() {
    Flush();
    if (fill_ == 0) return;
    const uint64_t x = bf16_spec::LoadLE64(stage_) & ((uint64_t{1} << (8 * fill_)) - 1);
    Emit(fo_, fend_, PackFields8<kFast>(x, lw_, fw_), static_cast<int>(BitBytes(fill_ * static_cast<uint64_t>(fw_))));
    if (lw_ > 0) {
      Emit(lo_, lend_, PackFields8<kFast>(x, 0, lw_), static_cast<int>(BitBytes(fill_ * static_cast<uint64_t>(lw_))));
    }
    fill_ = 0;
  }

 private:
  static void Emit(uint8_t*& out, uint8_t* end, uint64_t p, int nbytes) {
    if (end - out >= 8) {
      StoreLE64(out, p);
    } else {
      for (int b = 0; b < nbytes; ++b) out[b] = static_cast<uint8_t>(p >> (8 * b));
    }
    out += nbytes;
  }
  uint8_t* fo_;
  uint8_t* fend_;
  uint8_t* lo_;
  uint8_t* lend_;
  int lw_, fw_;
  uint64_t fill_ = 0;
  uint8_t stage_[kBlock + 16] = {};  // < 8 carried + kBlock per block + 8 of store slack
};

// The selection threshold (§3 magnitude, ties to the lower index): values
// with key x & 0x7fff above *thr are kept, and the first *need whose key
// equals *thr. 1 <= k < n. The fast build returns *thr - 1 and *need 0
// when every key equal to the threshold is kept (*thr is then compared as
// an int16: 0xffffffff keeps every key).
template <bool kFast>
inline __attribute__((always_inline)) void Threshold(const uint16_t* v, uint64_t n, uint64_t k, uint32_t* thr,
                                                     uint64_t* need_out) {
#ifdef BP_KV_HAVE_FAST
  if constexpr (kFast) {
    // Binary search by counting (branch-free AVX2, about 0.25 instructions
    // per value and probe; cheaper than a histogram pass): the largest t
    // with count(key >= t) >= k.
    uint32_t lo = 0, hi = 0x7fff;
    while (lo < hi) {
      const uint32_t mid = (lo + hi + 1) / 2;
      if (FastCountAbove(v, n, static_cast<int>(mid) - 1) >= k) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    *thr = lo;
    const uint64_t above = FastCountAbove(v, n, static_cast<int>(lo));
    *need_out = k - above;
    // Every key equal to the threshold is kept: the loop can compare with
    // thr - 1 alone (no tie bookkeeping).
    if (FastCountAbove(v, n, static_cast<int>(lo) - 1) - above == k - above) {
      *thr = lo - 1;  // wraps for lo = 0: compared as int16 -1
      *need_out = 0;
    }
    return;
  }
#endif
  bf16_spec::Bf16TopKThreshold(v, n, k, thr, need_out);
}

template <bool kFast>
inline __attribute__((always_inline)) KvSplitSizes EncodeBody(const KvTables& t, const uint16_t* v,
                                                             uint8_t* speculation, uint8_t* verification) {
  const uint64_t n = t.n;
  uint8_t* bitmap = speculation;
  const bool implicit = t.B == 0;  // every value kept: no bitmap
  uint32_t thr = 0;
  uint64_t need = 0;
  if (!implicit) Threshold<kFast>(v, n, t.k, &thr, &need);
  const int lw = 7 - t.mbits;
  KeptPacker<kFast> packer(speculation + t.B, t.F, verification, t.L, lw);
  CodeWriter kexp(speculation + t.B + t.F);
  CodeWriter pexp(verification + t.L + (n - t.k));
  uint8_t* psm = verification + t.L;
  uint8_t* const psm_end = psm + (n - t.k);
  uint8_t ke[kBlock + 8], pe[kBlock + 8];
#ifdef BP_KV_HAVE_FAST
  const __m128i k7fff = _mm_set1_epi16(0x7fff), kff = _mm_set1_epi16(0xff), k7f = _mm_set1_epi16(0x7f),
                k80 = _mm_set1_epi16(0x80), tv = _mm_set1_epi16(static_cast<int16_t>(thr));
#endif
  for (uint64_t base = 0; base < n; base += kBlock) {
    const uint64_t m = std::min(kBlock, n - base);
    uint64_t nke = 0, npe = 0;
    for (uint64_t g = 0; g < m; g += 8) {
      const uint64_t c = std::min<uint64_t>(8, m - g);
      const uint32_t valid = (1u << c) - 1;
      uint16_t tmp[8];
      const uint16_t* src = v + base + g;
      if (c < 8) {
        std::memset(tmp, 0, sizeof tmp);
        std::memcpy(tmp, src, static_cast<size_t>(c) * 2);
        src = tmp;
      }
      uint32_t keep8, prune8;
      uint64_t pruned_sm, nk;
#ifdef BP_KV_HAVE_FAST
      if constexpr (kFast) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
        if (implicit) {
          keep8 = valid;
        } else {
          const __m128i key = _mm_and_si128(x, k7fff);
          const __m128i gt = _mm_cmpgt_epi16(key, tv);
          keep8 = static_cast<uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(gt, gt))) & valid;
          if (need > 0) {
            const __m128i eq = _mm_cmpeq_epi16(key, tv);
            for (uint32_t q = static_cast<uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(eq, eq))) & valid;
                 q != 0 && need > 0; q &= q - 1) {
              keep8 |= q & (0u - q);
              --need;
            }
          }
        }
        const __m128i ev = _mm_and_si128(_mm_srli_epi16(x, 7), kff);
        const __m128i sv = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(x, 8), k80), _mm_and_si128(x, k7f));
        const uint64_t e8 = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_packus_epi16(ev, ev)));
        const uint64_t s8 = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_packus_epi16(sv, sv)));
        prune8 = ~keep8 & valid;
        StoreLE64(packer.stage(), CompactBytes<kFast>(s8, keep8));
        StoreLE64(ke + nke, CompactBytes<kFast>(e8, keep8));
        StoreLE64(pe + npe, CompactBytes<kFast>(e8, prune8));
        pruned_sm = CompactBytes<kFast>(s8, prune8);
        nk = static_cast<uint64_t>(__builtin_popcount(keep8));
      } else
#endif
      {
        // Branch-free: every byte is written to both sides, the kept or
        // the pruned position advances.
        keep8 = 0;
        uint8_t* ks = packer.stage();
        uint8_t sp[8];
        uint64_t a = 0, q = 0;
        for (uint64_t j = 0; j < c; ++j) {
          const uint32_t y = src[j];
          const uint32_t key = y & 0x7fffu;
          const uint32_t gt = static_cast<uint32_t>(implicit) | static_cast<uint32_t>(key > thr);
          const uint32_t tie = static_cast<uint32_t>(key == thr) & static_cast<uint32_t>(need != 0) & (gt ^ 1u);
          const uint32_t kb = gt | tie;
          need -= tie;
          keep8 |= kb << j;
          const uint8_t e = static_cast<uint8_t>(y >> 7);
          const uint8_t sm = static_cast<uint8_t>(((y >> 8) & 0x80u) | (y & 0x7fu));
          ks[a] = sm;
          ke[nke + a] = e;
          pe[npe + q] = e;
          sp[q] = sm;
          a += kb;
          q += kb ^ 1u;
        }
        prune8 = ~keep8 & valid;
        pruned_sm = 0;
        for (uint64_t j = 0; j < q; ++j) pruned_sm |= uint64_t{sp[j]} << (8 * j);
        nk = a;
      }
      if (!implicit) bitmap[(base + g) / 8] = static_cast<uint8_t>(keep8);
      packer.Added(nk);
      nke += nk;
      if (prune8 != 0) {
        const uint64_t np = c - nk;
        npe += np;
        if (psm_end - psm >= 8) {
          StoreLE64(psm, pruned_sm);
        } else {
          for (uint64_t b = 0; b < np; ++b) psm[b] = static_cast<uint8_t>(pruned_sm >> (8 * b));
        }
        psm += np;
      }
    }
    packer.Flush();
    kexp.PutSyms(t.kept, ke, nke);
    pexp.PutSyms(t.pruned, pe, npe);
  }
  packer.Finish();
  KvSplitSizes sizes;
  sizes.speculation = static_cast<size_t>(t.B + t.F) + kexp.Finish();
  sizes.verification = static_cast<size_t>(t.L + (n - t.k)) + pexp.Finish();
  return sizes;
}

KvSplitSizes EncodePortable(const KvTables& t, const uint16_t* v, uint8_t* s, uint8_t* w) {
  return EncodeBody<false>(t, v, s, w);
}
#ifdef BP_KV_HAVE_FAST
BP_KV_FAST KvSplitSizes EncodeFast(const KvTables& t, const uint16_t* v, uint8_t* s, uint8_t* w) {
  return EncodeBody<true>(t, v, s, w);
}
#endif

}  // namespace

namespace bf16_spec {
void SetKvSplitPortableForTesting(bool portable) { g_force_portable.store(portable, std::memory_order_relaxed); }
}  // namespace bf16_spec

struct KvSplitCodec::Tables : KvTables {};

KvSplitCodec::KvSplitCodec(std::shared_ptr<const Tables> tables) : t_(std::move(tables)) {}

absl::StatusOr<KvSplitCodec> KvSplitCodec::Create(size_t vector_elements, const KvSplitOptions& options,
                                                  absl::Span<const uint16_t> calibration) {
  if (vector_elements < 1 || vector_elements > kMaxElements) {
    return absl::InvalidArgumentError(StrCat("kv split: vector_elements ", vector_elements, " is not 1..2^24"));
  }
  if (!(options.keep > 0 && options.keep <= 1)) return absl::InvalidArgumentError("kv split: keep must be in (0, 1]");
  if (options.mbits < 0 || options.mbits > bf16_spec::kMaxMbits) {
    return absl::InvalidArgumentError("kv split: mbits must be 0..7");
  }
  if (calibration.size() % vector_elements != 0) {
    return absl::InvalidArgumentError(StrCat("kv split: calibration holds ", calibration.size(),
                                             " values, not a multiple of ", vector_elements));
  }
  const uint64_t n = vector_elements;
  const uint64_t k = KeptOf(options.keep, n);
  // Exponent counts of the kept and pruned values of the calibration
  // vectors, scaled so every exponent (count + 1) gets a code.
  std::array<uint64_t, 256> kf{}, pf{};
  std::vector<uint8_t> bitmap(static_cast<size_t>(BitBytes(n)));
  for (size_t v0 = 0; v0 < calibration.size(); v0 += n) {
    const uint16_t* v = calibration.data() + v0;
    std::fill(bitmap.begin(), bitmap.end(), 0);
    bf16_spec::SelectTopK<15>(n, k, [v](uint64_t i) { return static_cast<uint32_t>(v[i] & 0x7fffu); },
                          bitmap.data(), 0);
    for (uint64_t i = 0; i < n; ++i) {
      const bool kept = (bitmap[i >> 3] >> (i & 7)) & 1;
      ++(kept ? kf : pf)[(v[i] >> 7) & 0xffu];
    }
  }
  for (int s = 0; s < 256; ++s) {
    kf[s] = kf[s] * 64 + 1;
    pf[s] = pf[s] * 64 + 1;
  }
  auto t = std::make_shared<Tables>();
  t->n = n;
  t->k = k;
  t->mbits = options.mbits;
  auto kc = MakeCode(bf16_exp::HuffmanLengths(kf, bf16_exp::kMaxHuffmanBits));
  auto pc = MakeCode(bf16_exp::HuffmanLengths(pf, bf16_exp::kMaxHuffmanBits));
  if (!kc.ok() || !pc.ok()) return absl::InternalError("kv split: exponent code construction failed");
  t->kept = *std::move(kc);
  t->pruned = *std::move(pc);
  t->B = k == n ? 0 : BitBytes(n);
  t->F = BitBytes(k * static_cast<uint64_t>(1 + options.mbits));
  t->L = BitBytes(k * static_cast<uint64_t>(7 - options.mbits));
  return KvSplitCodec(std::move(t));
}

std::vector<uint8_t> KvSplitCodec::Serialize() const {
  std::vector<uint8_t> out(kSerializedBytes, 0);
  std::memcpy(out.data(), "BPKV", 4);
  out[4] = 1;  // version
  out[5] = static_cast<uint8_t>(t_->mbits);
  PutU32(out.data() + 8, static_cast<uint32_t>(t_->n));
  PutU32(out.data() + 12, static_cast<uint32_t>(t_->k));
  for (int s = 0; s < 256; s += 2) {
    out[16 + s / 2] = static_cast<uint8_t>(t_->kept.lengths[s] | t_->kept.lengths[s + 1] << 4);
    out[144 + s / 2] = static_cast<uint8_t>(t_->pruned.lengths[s] | t_->pruned.lengths[s + 1] << 4);
  }
  return out;
}

absl::StatusOr<KvSplitCodec> KvSplitCodec::Deserialize(absl::Span<const uint8_t> bytes) {
  if (bytes.size() != kSerializedBytes || std::memcmp(bytes.data(), "BPKV", 4) != 0) {
    return absl::InvalidArgumentError(StrCat("kv split: not a serialized codec (", bytes.size(), " bytes)"));
  }
  if (bytes[4] != 1 || bytes[6] != 0 || bytes[7] != 0) return absl::InvalidArgumentError("kv split: unknown version");
  auto t = std::make_shared<Tables>();
  t->mbits = bytes[5];
  t->n = GetU32(bytes.data() + 8);
  t->k = GetU32(bytes.data() + 12);
  if (t->mbits > bf16_spec::kMaxMbits || t->n < 1 || t->n > kMaxElements || t->k < 1 || t->k > t->n) {
    return absl::InvalidArgumentError("kv split: parameters out of range");
  }
  std::array<uint8_t, 256> kl{}, pl{};
  for (int s = 0; s < 256; s += 2) {
    kl[s] = bytes[16 + s / 2] & 15;
    kl[s + 1] = bytes[16 + s / 2] >> 4;
    pl[s] = bytes[144 + s / 2] & 15;
    pl[s + 1] = bytes[144 + s / 2] >> 4;
  }
  auto kc = MakeCode(kl);
  if (!kc.ok()) return absl::InvalidArgumentError(StrCat("kv split: kept code: ", kc.status().message()));
  auto pc = MakeCode(pl);
  if (!pc.ok()) return absl::InvalidArgumentError(StrCat("kv split: pruned code: ", pc.status().message()));
  t->kept = *std::move(kc);
  t->pruned = *std::move(pc);
  t->B = t->k == t->n ? 0 : BitBytes(t->n);
  t->F = BitBytes(t->k * static_cast<uint64_t>(1 + t->mbits));
  t->L = BitBytes(t->k * static_cast<uint64_t>(7 - t->mbits));
  return KvSplitCodec(std::move(t));
}

size_t KvSplitCodec::vector_elements() const { return static_cast<size_t>(t_->n); }
size_t KvSplitCodec::kept_elements() const { return static_cast<size_t>(t_->k); }
int KvSplitCodec::mbits() const { return t_->mbits; }
size_t KvSplitCodec::max_speculation_bytes() const {
  return static_cast<size_t>(t_->B + t_->F + BitBytes(t_->k * kLut) + 8);
}
size_t KvSplitCodec::max_verification_bytes() const {
  return static_cast<size_t>(t_->L + (t_->n - t_->k) + BitBytes((t_->n - t_->k) * kLut) + 8);
}

absl::StatusOr<KvSplitSizes> KvSplitCodec::Encode(absl::Span<const uint16_t> vector, absl::Span<uint8_t> speculation,
                                                  absl::Span<uint8_t> verification) const {
  const Tables& t = *t_;
  if (vector.size() != t.n) {
    return absl::InvalidArgumentError(StrCat("kv split: vector of ", vector.size(), " values, expected ", t.n));
  }
  if (speculation.size() < max_speculation_bytes() || verification.size() < max_verification_bytes()) {
    return absl::InvalidArgumentError("kv split: output buffers smaller than max_*_bytes()");
  }
#ifdef BP_KV_HAVE_FAST
  if (UseFast()) return EncodeFast(t, vector.data(), speculation.data(), verification.data());
#endif
  return EncodePortable(t, vector.data(), speculation.data(), verification.data());
}

namespace {

absl::Status KvCorrupt(std::string_view what) { return absl::DataLossError(StrCat("kv split: ", what)); }

// Fields [j0, j0 + count) (width w 0..8, count <= kBlock) of a packed
// section of `bytes` bytes into out[0..count), which has 8 bytes of slack.
// The caller guarantees the section holds fields j0 + count - 1.
template <bool kFast>
inline __attribute__((always_inline)) void UnpackRun(const uint8_t* p, size_t bytes, uint64_t j0, uint64_t count,
                                                    int w, uint8_t* out) {
  if (w == 0) {
    std::memset(out, 0, static_cast<size_t>(count));
    return;
  }
  const uint64_t mask = FieldMask(w);
  for (uint64_t j = 0; j < count; j += 8) {
    const uint64_t bit = (j0 + j) * static_cast<uint64_t>(w);
    const size_t b = static_cast<size_t>(bit >> 3);
    const uint64_t x = (b + 8 <= bytes ? bf16_spec::LoadLE64(p + b) : bf16_spec::LoadLE64Bounded(p + b, bytes - b)) >>
                       (bit & 7);
    StoreLE64(out + j, UnpackFields8<kFast>(x, w, mask));
  }
}

template <bool kFast>
inline __attribute__((always_inline)) absl::Status DecodeBody(const KvTables& t, absl::Span<const uint8_t> speculation,
                                                             absl::Span<const uint8_t> verification, bool full,
                                                             absl::Span<uint16_t> out) {
  const uint64_t n = t.n;
  if (out.size() < n) return absl::InvalidArgumentError("kv split: output smaller than the vector");
  if (speculation.size() < t.B + t.F) return KvCorrupt("speculation bytes shorter than bitmap and fields");
  if (full && verification.size() < t.L + (n - t.k)) {
    return KvCorrupt("verification bytes shorter than low mantissas and pruned values");
  }
  const uint8_t* bitmap = speculation.data();
  const bool implicit = t.B == 0;  // every value kept: no bitmap
  if (!implicit) {
    if (bf16_spec::CountBits(bitmap, 0, n) != t.k) return KvCorrupt("keep bitmap does not keep kept_elements values");
    if ((n & 7) != 0 && (bitmap[n >> 3] >> (n & 7)) != 0) return KvCorrupt("keep bitmap padding bits are not zero");
  }
  const int mb = t.mbits, lw = 7 - mb, fwid = 1 + mb;
  const uint8_t* fields = speculation.data() + t.B;
  const size_t fbytes = static_cast<size_t>(t.F);
  if ((t.k * fwid) % 8 != 0 && (fields[fbytes - 1] >> ((t.k * fwid) % 8)) != 0) {
    return KvCorrupt("field padding bits are not zero");
  }
  CodeReader kexp(speculation.data() + t.B + t.F, speculation.size() - static_cast<size_t>(t.B + t.F));
  const uint8_t* lows = full ? verification.data() : nullptr;
  const uint8_t* psm = full ? verification.data() + t.L : nullptr;
  if (full && lw > 0 && (t.k * lw) % 8 != 0 && (lows[t.L - 1] >> ((t.k * lw) % 8)) != 0) {
    return KvCorrupt("low mantissa padding bits are not zero");
  }
  CodeReader pexp(full ? verification.data() + t.L + (n - t.k) : nullptr,
                  full ? verification.size() - static_cast<size_t>(t.L + (n - t.k)) : 0);
  uint8_t ke[kBlock + 8], pe[kBlock + 8], kf[kBlock + 8], kl[kBlock + 8];
  uint16_t kv[kBlock], pv[kBlock];
  uint64_t jk = 0;  // kept values before this block
  const uint32_t mmask = (1u << mb) - 1;
  const uint32_t fill = lw > 0 ? 1u << (lw - 1) : 0;  // the draft's midpoint bit (§5)
  for (uint64_t base = 0; base < n; base += kBlock) {
    const uint64_t m = std::min(kBlock, n - base);
    const uint64_t nk = implicit ? m : bf16_spec::CountBits(bitmap, base, base + m);
    const uint64_t np = m - nk;
    if (full) {
      if (!CodeReader::Get2(kexp, t.kept, nk, ke, pexp, t.pruned, np, pe)) {
        return KvCorrupt("an exponent lane ends early");
      }
    } else if (!kexp.Get(t.kept, nk, ke)) {
      return KvCorrupt("kept exponent lane ends early");
    }
    UnpackRun<kFast>(fields, fbytes, jk, nk, fwid, kf);
    if (!full) {
      for (uint64_t j = 0; j < nk; ++j) {
        const uint32_t f = kf[j], e = ke[j];
        const uint32_t x = (f >> mb) << 15 | e << 7 | (f & mmask) << lw;
        kv[j] = static_cast<uint16_t>(x | (fill & (0u - static_cast<uint32_t>(((e + 1) & 0xffu) > 1))));
      }
      if (implicit) {
        std::memcpy(out.data() + base, kv, static_cast<size_t>(m) * 2);
      } else {
        bf16_spec::MergeByBitmap(bitmap + base / 8, m, kv, nullptr, out.data() + base);
      }
    } else {
      UnpackRun<kFast>(lows, static_cast<size_t>(t.L), jk, nk, lw, kl);
      for (uint64_t j = 0; j < nk; ++j) {
        kv[j] = static_cast<uint16_t>((uint32_t{kf[j]} >> mb) << 15 | uint32_t{ke[j]} << 7 |
                                      (uint32_t{kf[j]} & mmask) << lw | kl[j]);
      }
      for (uint64_t j = 0; j < np; ++j) {
        const uint32_t b = psm[j];
        pv[j] = static_cast<uint16_t>((b & 0x80u) << 8 | uint32_t{pe[j]} << 7 | (b & 0x7fu));
      }
      psm += np;
      if (implicit) {
        std::memcpy(out.data() + base, kv, static_cast<size_t>(m) * 2);
      } else {
        bf16_spec::MergeByBitmap(bitmap + base / 8, m, kv, pv, out.data() + base);
      }
    }
    jk += nk;
  }
  if (!kexp.Done()) return KvCorrupt("kept exponent lane has unused bytes or non-zero padding");
  if (full && !pexp.Done()) return KvCorrupt("pruned exponent lane has unused bytes or non-zero padding");
  return absl::OkStatus();
}

absl::Status DecodePortable(const KvTables& t, absl::Span<const uint8_t> s, absl::Span<const uint8_t> v, bool full,
                            absl::Span<uint16_t> out) {
  return DecodeBody<false>(t, s, v, full, out);
}
#ifdef BP_KV_HAVE_FAST
BP_KV_FAST absl::Status DecodeFast(const KvTables& t, absl::Span<const uint8_t> s, absl::Span<const uint8_t> v,
                                   bool full, absl::Span<uint16_t> out) {
  return DecodeBody<true>(t, s, v, full, out);
}
#endif

}  // namespace

absl::Status KvSplitCodec::DecodeDraft(absl::Span<const uint8_t> speculation, absl::Span<uint16_t> out) const {
  return DecodeImpl(speculation, {}, false, out);
}

absl::Status KvSplitCodec::DecodeFull(absl::Span<const uint8_t> speculation, absl::Span<const uint8_t> verification,
                                      absl::Span<uint16_t> out) const {
  return DecodeImpl(speculation, verification, true, out);
}

absl::Status KvSplitCodec::DecodeImpl(absl::Span<const uint8_t> speculation, absl::Span<const uint8_t> verification,
                                      bool full, absl::Span<uint16_t> out) const {
#ifdef BP_KV_HAVE_FAST
  if (UseFast()) return DecodeFast(*t_, speculation, verification, full, out);
#endif
  return DecodePortable(*t_, speculation, verification, full, out);
}

}  // namespace boltpack
