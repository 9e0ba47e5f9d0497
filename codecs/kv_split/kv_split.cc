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
  // code << 8 | length: one load per symbol for the writer, and the entry
  // is its own shift count (shlx reads the low 6 bits).
  std::array<uint32_t, 256> word{};
  std::array<uint16_t, 1u << kLut> lut{};  // symbol | length << 8 (codes are complete: never 0)
  // Up to 3 whole code words of a 12-bit window: bits used in bits 0..5
  // (so the entry itself is the shift count: shlx reads only those), count
  // in bits 6..7, symbols in bytes 1..3 (first in byte 1). 16 KiB, so both
  // tables of a codec stay in L1.
  std::array<uint32_t, 1u << kLut> multi{};
};

absl::StatusOr<Code> MakeCode(const std::array<uint8_t, 256>& lengths) {
  for (int s = 0; s < 256; ++s) {
    if (lengths[s] == 0) return absl::InvalidArgumentError(StrCat("exponent ", s, " has no code"));
  }
  // Only the code words: this codec builds its own decode tables below.
  auto words = bf16_exp::ExponentCode::HuffmanCodeWords(lengths);
  if (!words.ok()) return words.status();
  Code c;
  c.lengths = lengths;
  for (int s = 0; s < 256; ++s) {
    const int l = lengths[s];
    const uint32_t w = (*words)[s];
    c.code[s] = static_cast<uint16_t>(w);
    c.word[s] = w << 8 | static_cast<uint32_t>(l);
    const uint32_t first = w << (kLut - l);
    const uint32_t last = (w + 1) << (kLut - l);
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
    c.multi[w] = e << 8 | static_cast<uint32_t>(cnt) << 6 | static_cast<uint32_t>(used);
  }
  return c;
}

// MSB-first code writer (spec/codecs-bf16-exp.md §2), branch-free: every
// Put stores 8 bytes, so the lane must be the last thing written into its
// buffer and the buffer needs 8 bytes of slack past the lane.
class CodeWriter {
 public:
  explicit CodeWriter(uint8_t* out) : begin_(out), out_(out) {}
  // len 1..56
  void Put(uint64_t code, int len) {
    acc_ = (acc_ << len) | code;  // `bits_` (< 8 + 56) valid low bits
    bits_ += len;
    StoreLE64(out_, __builtin_bswap64(acc_ << (64 - bits_)));
    out_ += bits_ >> 3;
    bits_ &= 7;
  }
  // Codes four symbols per store.
  void PutSyms(const Code& c, const uint8_t* s, uint64_t count) {
    uint64_t i = 0;
    // Eight symbols per store when their code words fit in 56 bits (short
    // codes: nearly always), else two stores of four.
    for (; i + 8 <= count; i += 8) {
      const uint64_t w0 = c.word[s[i]], w1 = c.word[s[i + 1]], w2 = c.word[s[i + 2]], w3 = c.word[s[i + 3]];
      const uint64_t w4 = c.word[s[i + 4]], w5 = c.word[s[i + 5]], w6 = c.word[s[i + 6]], w7 = c.word[s[i + 7]];
      const uint64_t ab = (w0 >> 8) << (w1 & 63) | (w1 >> 8), cd = (w2 >> 8) << (w3 & 63) | (w3 >> 8);
      const uint64_t ef = (w4 >> 8) << (w5 & 63) | (w5 >> 8), gh = (w6 >> 8) << (w7 & 63) | (w7 >> 8);
      const uint64_t lcd = w2 + w3, lgh = w6 + w7;
      const uint64_t q0 = ab << (lcd & 63) | cd, q1 = ef << (lgh & 63) | gh;
      const uint64_t l0 = (w0 + w1 + lcd) & 0xff, l1 = (w4 + w5 + lgh) & 0xff;
      if (l0 + l1 <= 56) {
        Put(q0 << l1 | q1, static_cast<int>(l0 + l1));
      } else {
        Put(q0, static_cast<int>(l0));
        Put(q1, static_cast<int>(l1));
      }
    }
    for (; i + 4 <= count; i += 4) {
      // Entries w = code << 8 | len (len <= 12): the sum of two entries has
      // the sum of their lengths (<= 48 < 256) in its low byte.
      const uint64_t w0 = c.word[s[i]], w1 = c.word[s[i + 1]], w2 = c.word[s[i + 2]], w3 = c.word[s[i + 3]];
      const uint64_t ab = (w0 >> 8) << (w1 & 63) | (w1 >> 8), cd = (w2 >> 8) << (w3 & 63) | (w3 >> 8);
      const uint64_t lcd = w2 + w3;
      Put(ab << (lcd & 63) | cd, static_cast<int>((w0 + w1 + lcd) & 0xff));
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

// Reads the code words of one lane of `size` bytes that holds `total`
// symbols, MSB-first, in the pieces the caller asks for (one per block).
//
// Fast path: one unaligned 64-bit load gives at least 57 bits, enough for
// four table lookups of up to 12 bits each (up to 12 symbols) without
// another load or any bounds check; it runs while the lane has 8 readable
// bytes and at least 12 symbols left, so it never decodes past the lane's
// last symbol. Symbols it decodes past the piece asked for are carried
// into the next piece. The last few symbols of a lane (and lanes near the
// end of their buffer) take one lookup per step with a bounds-checked
// load. Both paths decode the same symbols, so what is accepted does not
// depend on which ran.
class CodeReader {
 public:
  static constexpr uint64_t kSlack = 16;  // bytes `out` needs past `count`

  CodeReader(const uint8_t* p, size_t size, uint64_t total) : p_(p), size_(size), left_(total) {}
  // Decodes the next `count` symbols into out; false when the lane runs out.
  inline __attribute__((always_inline)) bool Get(const Code& c, uint64_t count, uint8_t* out) {
    uint64_t i = TakeCarry(count, out);
    uint64_t pos = pos_, left = left_;
    while (i < count && left >= 12 && (pos >> 3) + 8 <= size_) Step4(c, pos, left, i, out);
    return Finish(c, count, out, i, pos, left);
  }
  // Get on two lanes at once, interleaved: two independent lookup chains.
  static inline __attribute__((always_inline)) bool Get2(CodeReader& a, const Code& ca, uint64_t na, uint8_t* oa,
                                                         CodeReader& b, const Code& cb, uint64_t nb, uint8_t* ob) {
    uint64_t i = a.TakeCarry(na, oa), j = b.TakeCarry(nb, ob);
    uint64_t apos = a.pos_, aleft = a.left_, bpos = b.pos_, bleft = b.left_;
    while (i < na && j < nb && aleft >= 12 && bleft >= 12 && (apos >> 3) + 8 <= a.size_ && (bpos >> 3) + 8 <= b.size_) {
      a.Step4(ca, apos, aleft, i, oa);
      b.Step4(cb, bpos, bleft, j, ob);
    }
    while (i < na && aleft >= 12 && (apos >> 3) + 8 <= a.size_) a.Step4(ca, apos, aleft, i, oa);
    while (j < nb && bleft >= 12 && (bpos >> 3) + 8 <= b.size_) b.Step4(cb, bpos, bleft, j, ob);
    const bool ok = a.Finish(ca, na, oa, i, apos, aleft);
    return b.Finish(cb, nb, ob, j, bpos, bleft) && ok;
  }
  // The lane is consumed exactly: no unused byte, zero padding.
  bool Done() const {
    if (ncarry_ != 0 || left_ != 0) return false;
    if ((pos_ + 7) / 8 != size_) return false;
    if ((pos_ & 7) != 0 && (p_[size_ - 1] & ((1u << (8 - (pos_ & 7))) - 1)) != 0) return false;
    return true;
  }

 private:
  // Symbols decoded ahead by the previous piece go first.
  uint64_t TakeCarry(uint64_t count, uint8_t* out) {
    if (ncarry_ == 0) return 0;
    std::memcpy(out, carry_, sizeof carry_);
    const uint64_t t = std::min<uint64_t>(ncarry_, count);
    ncarry_ -= static_cast<uint32_t>(t);
    if (ncarry_ != 0) std::memmove(carry_, carry_ + t, ncarry_);
    return t;
  }
  // Four lookups from one load: (pos >> 3) + 8 <= size_, left >= 12.
  inline __attribute__((always_inline)) void Step4(const Code& c, uint64_t& pos, uint64_t& left, uint64_t& i,
                                                   uint8_t* out) const {
    uint64_t buf = LoadBE64(p_ + (pos >> 3)) << (pos & 7);
    for (int r = 0; r < 4; ++r) {
      // The lookup chain is buf -> entry -> buf: the entry's low 6 bits are
      // the shift, nothing else sits on it.
      const uint32_t e = c.multi[buf >> (64 - kLut)];
      buf <<= e & 63u;
      const uint32_t syms = e >> 8, cnt = (e >> 6) & 3u;
      std::memcpy(out + i, &syms, 4);
      i += cnt;
      left -= cnt;
      pos += e & 63u;
    }
  }
  // The rest of a piece one lookup at a time (never past `count`), then the
  // symbols decoded past it into the carry.
  bool Finish(const Code& c, uint64_t count, uint8_t* out, uint64_t i, uint64_t pos, uint64_t left) {
    while (i < count) {
      const size_t byte = static_cast<size_t>(pos >> 3);
      uint64_t w;
      if (byte + 8 <= size_) {
        w = LoadBE64(p_ + byte);
      } else {
        w = 0;
        for (size_t b = 0; b < 8; ++b) w = w << 8 | (byte + b < size_ ? p_[byte + b] : 0);
      }
      const uint64_t buf = w << (pos & 7);
      const uint32_t e = c.multi[buf >> (64 - kLut)];
      uint32_t cnt = (e >> 6) & 3u, len = e & 63u;
      if (cnt <= count - i) {
        const uint32_t syms = e >> 8;
        std::memcpy(out + i, &syms, 4);
      } else {
        const uint16_t s = c.lut[buf >> (64 - kLut)];
        out[i] = static_cast<uint8_t>(s);
        cnt = 1;
        len = s >> 8;
      }
      i += cnt;
      left -= cnt;
      pos += len;
    }
    if (i > count) {
      ncarry_ = static_cast<uint32_t>(i - count);  // <= 11
      std::memcpy(carry_, out + count, sizeof carry_);
    }
    pos_ = pos;
    left_ = left;
    return pos <= uint64_t{size_} * 8;
  }

  const uint8_t* p_;
  size_t size_;
  uint64_t pos_ = 0;
  uint64_t left_;  // symbols of the lane not decoded yet (the carry excluded)
  uint8_t carry_[16] = {};
  uint32_t ncarry_ = 0;
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
// pext/pdep as inline asm rather than intrinsics: the packing helpers that
// use them are templates without the target attribute, and GCC will not
// inline a target-specific function into those (it emitted a call per 8
// values). Only the fast bodies, run after the CPU check, reach these.
inline uint64_t FastPext(uint64_t x, uint64_t m) {
  uint64_t r;
  asm("pextq %2, %1, %0" : "=r"(r) : "r"(x), "r"(m));
  return r;
}
inline uint64_t FastPdep(uint64_t x, uint64_t m) {
  uint64_t r;
  asm("pdepq %2, %1, %0" : "=r"(r) : "r"(x), "r"(m));
  return r;
}
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

// Vectors up to this many values get their keys copied once to the stack
// (8 KiB), so that each probe of the threshold search is one compare (with
// its load folded in) and one subtract per 16 keys, four counters deep.
constexpr uint64_t kStackKeys = 4096;

// keys[0..n64) (n64 a multiple of 64; padding keys 0x7fff): how many are
// below t1 (0 <= t1 <= 0x7fff). n64 <= kStackKeys keeps every 16-bit
// counter lane <= 64.
BP_KV_FAST inline uint64_t FastCountBelow(const uint16_t* keys, uint64_t n64, int t1) {
  const __m256i tv = _mm256_set1_epi16(static_cast<int16_t>(t1)), ones = _mm256_set1_epi16(1);
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (uint64_t i = 0; i < n64; i += 64) {
    const __m256i* p = reinterpret_cast<const __m256i*>(keys + i);
    a0 = _mm256_sub_epi16(a0, _mm256_cmpgt_epi16(tv, _mm256_load_si256(p)));
    a1 = _mm256_sub_epi16(a1, _mm256_cmpgt_epi16(tv, _mm256_load_si256(p + 1)));
    a2 = _mm256_sub_epi16(a2, _mm256_cmpgt_epi16(tv, _mm256_load_si256(p + 2)));
    a3 = _mm256_sub_epi16(a3, _mm256_cmpgt_epi16(tv, _mm256_load_si256(p + 3)));
  }
  const __m256i s = _mm256_madd_epi16(_mm256_add_epi16(_mm256_add_epi16(a0, a1), _mm256_add_epi16(a2, a3)), ones);
  const __m128i q = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  const __m128i r = _mm_add_epi32(q, _mm_shuffle_epi32(q, 0x4e));
  return static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_add_epi32(r, _mm_shuffle_epi32(r, 0xb1))));
}

// The keys v[i] & 0x7fff of n <= kStackKeys values into keys[], padded with
// 0x7fff to a multiple of 64; returns the padded count.
BP_KV_FAST inline uint64_t FastKeys(const uint16_t* v, uint64_t n, uint16_t* keys) {
  const __m256i km = _mm256_set1_epi16(0x7fff);
  uint64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(keys + i),
                       _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + i)), km));
  }
  for (; i < n; ++i) keys[i] = static_cast<uint16_t>(v[i] & 0x7fffu);
  const uint64_t n64 = (n + 63) & ~uint64_t{63};
  for (; i < n64; ++i) keys[i] = 0x7fff;
  return n64;
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
    // The counts at the ends of the range come with the probes:
    // at_lo = count(key >= lo), past_hi = count(key > hi).
    alignas(32) uint16_t keys[kStackKeys];
    const uint64_t n64 = n <= kStackKeys ? FastKeys(v, n, keys) : 0;
    // count(key >= t), 1 <= t <= 0x7fff
    auto count_from = [&](uint32_t t) {
      return n64 != 0 ? n - FastCountBelow(keys, n64, static_cast<int>(t))
                      : FastCountAbove(v, n, static_cast<int>(t) - 1);
    };
    uint32_t lo = 0, hi = 0x7fff;
    uint64_t at_lo = n, past_hi = 0;
    while (lo < hi) {
      const uint32_t mid = (lo + hi + 1) / 2;
      const uint64_t c = count_from(mid);
      if (c >= k) {
        lo = mid;
        at_lo = c;
      } else {
        hi = mid - 1;
        past_hi = c;
      }
    }
    *thr = lo;
    const uint64_t above = past_hi;  // lo == hi
    *need_out = k - above;
    // Every key equal to the threshold is kept: the loop can compare with
    // thr - 1 alone (no tie bookkeeping).
    if (at_lo - above == k - above) {
      *thr = lo - 1;  // wraps for lo = 0: compared as int16 -1
      *need_out = 0;
    }
    return;
  }
#endif
  bf16_spec::Bf16TopKThreshold(v, n, k, thr, need_out);
}

#ifdef BP_KV_HAVE_FAST
// The SIMD half of a fast block: for values v[0..m) (m <= kBlock), 32 at a
// time, the keep bits (key > thr, then the first `need` keys equal to thr in
// index order; every value when `implicit`), the exponent bytes and the
// sign+mantissa bytes. Bits and bytes past m are zero. The per-8 packing
// that follows then works on bytes only: few registers, no constants to
// rebuild in its loop.
BP_KV_FAST inline void SplitBlockFast(const uint16_t* v, uint64_t m, bool implicit, uint32_t thr, uint64_t* need,
                                      uint32_t* keep, uint8_t* eb, uint8_t* sb) {
  const __m256i k7fff = _mm256_set1_epi16(0x7fff), kff = _mm256_set1_epi16(0xff), k7f = _mm256_set1_epi16(0x7f),
                k80 = _mm256_set1_epi16(0x80), tv = _mm256_set1_epi16(static_cast<int16_t>(thr));
  for (uint64_t g = 0; g < m; g += 32) {
    const uint64_t c = std::min<uint64_t>(32, m - g);
    const uint32_t valid = c == 32 ? ~0u : (1u << c) - 1;
    alignas(32) uint16_t tmp[32];
    const uint16_t* src = v + g;
    if (c < 32) {
      std::memset(tmp, 0, sizeof tmp);
      std::memcpy(tmp, src, static_cast<size_t>(c) * 2);
      src = tmp;
    }
    const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 16));
    uint32_t mask;
    if (implicit) {
      mask = valid;
    } else {
      const __m256i a0 = _mm256_and_si256(x0, k7fff), a1 = _mm256_and_si256(x1, k7fff);
      const __m256i gt = _mm256_permute4x64_epi64(
          _mm256_packs_epi16(_mm256_cmpgt_epi16(a0, tv), _mm256_cmpgt_epi16(a1, tv)), 0xd8);
      mask = static_cast<uint32_t>(_mm256_movemask_epi8(gt)) & valid;
      if (*need > 0) {
        const __m256i eq = _mm256_permute4x64_epi64(
            _mm256_packs_epi16(_mm256_cmpeq_epi16(a0, tv), _mm256_cmpeq_epi16(a1, tv)), 0xd8);
        for (uint32_t q = static_cast<uint32_t>(_mm256_movemask_epi8(eq)) & valid; q != 0 && *need > 0; q &= q - 1) {
          mask |= q & (0u - q);
          --*need;
        }
      }
    }
    keep[g / 32] = mask;
    const __m256i e = _mm256_permute4x64_epi64(
        _mm256_packus_epi16(_mm256_and_si256(_mm256_srli_epi16(x0, 7), kff), _mm256_and_si256(_mm256_srli_epi16(x1, 7), kff)),
        0xd8);
    const __m256i s0 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(x0, 8), k80), _mm256_and_si256(x0, k7f));
    const __m256i s1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(x1, 8), k80), _mm256_and_si256(x1, k7f));
    const __m256i sm = _mm256_permute4x64_epi64(_mm256_packus_epi16(s0, s1), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(eb + g), e);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(sb + g), sm);
  }
}
#endif

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
  uint32_t keepw[kBlock / 32];
  uint8_t eb[kBlock + 8], sb[kBlock + 8];
#endif
  for (uint64_t base = 0; base < n; base += kBlock) {
    const uint64_t m = std::min(kBlock, n - base);
    uint64_t nke = 0, npe = 0;
#ifdef BP_KV_HAVE_FAST
    if constexpr (kFast) {
      // Keep bits, then 8 values per step: four pext (kept / pruned
      // exponents and sign+mantissa bytes), unconditional 8-byte stores
      // into block buffers; the bitmap and the pruned bytes go out whole.
      SplitBlockFast(v + base, m, implicit, thr, &need, keepw, eb, sb);
      if (!implicit) std::memcpy(bitmap + base / 8, keepw, static_cast<size_t>(BitBytes(m)));  // little-endian words
      uint8_t* ks = packer.stage();
      uint8_t ps[kBlock + 8];
      for (uint64_t g = 0; g < m; g += 8) {
        const uint32_t valid = g + 8 <= m ? 0xffu : (1u << (m - g)) - 1;
        const uint32_t keep8 = (keepw[g / 32] >> (g & 31)) & 0xffu, prune8 = ~keep8 & valid;
        const uint64_t e8 = bf16_spec::LoadLE64(eb + g), s8 = bf16_spec::LoadLE64(sb + g);
        const uint64_t km = FastPdep(keep8, kByteLsbs) * 0xff, pm = FastPdep(prune8, kByteLsbs) * 0xff;
        StoreLE64(ks + nke, FastPext(s8, km));
        StoreLE64(ke + nke, FastPext(e8, km));
        StoreLE64(pe + npe, FastPext(e8, pm));
        StoreLE64(ps + npe, FastPext(s8, pm));
        nke += static_cast<uint64_t>(__builtin_popcount(keep8));
        npe += static_cast<uint64_t>(__builtin_popcount(prune8));
      }
      packer.Added(nke);
      std::memcpy(psm, ps, static_cast<size_t>(npe));
      psm += npe;
      packer.Flush();
      kexp.PutSyms(t.kept, ke, nke);
      pexp.PutSyms(t.pruned, pe, npe);
      continue;
    }
#endif
    for (uint64_t g = 0; g < m; g += 8) {
      const uint64_t c = std::min<uint64_t>(8, m - g);
      const uint32_t valid = (1u << c) - 1;
      uint32_t keep8, prune8;
      uint64_t pruned_sm, nk;
      {  // the portable build
        uint16_t tmp[8];
        const uint16_t* src = v + base + g;
        if (c < 8) {
          std::memset(tmp, 0, sizeof tmp);
          std::memcpy(tmp, src, static_cast<size_t>(c) * 2);
          src = tmp;
        }
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
  CodeReader kexp(speculation.data() + t.B + t.F, speculation.size() - static_cast<size_t>(t.B + t.F), t.k);
  const uint8_t* lows = full ? verification.data() : nullptr;
  const uint8_t* psm = full ? verification.data() + t.L : nullptr;
  if (full && lw > 0 && (t.k * lw) % 8 != 0 && (lows[t.L - 1] >> ((t.k * lw) % 8)) != 0) {
    return KvCorrupt("low mantissa padding bits are not zero");
  }
  CodeReader pexp(full ? verification.data() + t.L + (n - t.k) : nullptr,
                  full ? verification.size() - static_cast<size_t>(t.L + (n - t.k)) : 0, full ? n - t.k : 0);
  uint8_t ke[kBlock + CodeReader::kSlack], pe[kBlock + CodeReader::kSlack], kf[kBlock + 8], kl[kBlock + 8];
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
