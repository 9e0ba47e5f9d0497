// KvSplitCodec (include/boltpack/kv_split.h; spec/codecs-bf16-spec.md §8).
#include "boltpack/kv_split.h"

#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "codecs/bf16_exp/exponent_code.h"
#include "codecs/bf16_spec/split_kernel.h"
#include "common/str_cat.h"

namespace boltpack {

namespace {

using bf16_spec::BitBytes;

constexpr size_t kMaxElements = size_t{1} << 24;
constexpr size_t kSerializedBytes = 272;
constexpr uint64_t kBlock = 64;
constexpr int kLut = bf16_exp::kMaxHuffmanBits;  // every code fits the table

inline uint64_t LoadBE64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

// MSB-first code writer (spec/codecs-bf16-exp.md §2), branch-free: every
// Put stores 8 bytes, so the lane must be the last thing written into its
// buffer and the buffer needs 8 bytes of slack past the lane.
class CodeWriter {
 public:
  explicit CodeWriter(uint8_t* out) : begin_(out), out_(out) {}
  void Put(uint32_t code, int len) {
    acc_ = (acc_ << len) | code;  // `bits_` (< 8 + 12) valid low bits
    bits_ += len;
    const uint64_t word = __builtin_bswap64(acc_ << (64 - bits_));
    std::memcpy(out_, &word, 8);
    out_ += bits_ >> 3;
    bits_ &= 7;
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

// One code table: canonical code words and a 12-bit decode table.
struct Code {
  std::array<uint8_t, 256> lengths{};
  std::array<uint16_t, 256> code{};
  std::array<uint16_t, 1u << kLut> lut{};  // symbol | length << 8; 0: invalid
};

absl::StatusOr<Code> MakeCode(const std::array<uint8_t, 256>& lengths) {
  for (int s = 0; s < 256; ++s) {
    if (lengths[s] == 0) return absl::InvalidArgumentError(StrCat("exponent ", s, " has no code"));
  }
  auto ec = bf16_exp::ExponentCode::Huffman(lengths);
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
  return c;
}

// Reads code words of one lane of `size` bytes, MSB-first, through a
// 64-bit window refilled when fewer than 12 bits are left in it.
class CodeReader {
 public:
  CodeReader(const uint8_t* p, size_t size) : p_(p), size_(size) {}
  // Decodes `count` symbols into out; false when the lane runs out.
  bool Get(const Code& c, uint64_t count, uint8_t* out) {
    uint64_t buf = buf_;
    int avail = avail_;
    uint64_t pos = pos_;
    for (uint64_t i = 0; i < count; ++i) {
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
      const uint16_t e = c.lut[buf >> (64 - kLut)];
      const int len = e >> 8;
      out[i] = static_cast<uint8_t>(e);
      buf <<= len;
      avail -= len;
      pos += static_cast<uint64_t>(len);
    }
    buf_ = buf;
    avail_ = avail;
    pos_ = pos;
    return pos_ <= uint64_t{size_} * 8;
  }
  // The lane is consumed exactly: no unused byte, zero padding.
  bool Done() const {
    if ((pos_ + 7) / 8 != size_) return false;
    if ((pos_ & 7) != 0 && (p_[size_ - 1] & ((1u << (8 - (pos_ & 7))) - 1)) != 0) return false;
    return true;
  }

 private:
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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BP_KV_HAVE_BMI2_VARIANT 1
#define BP_KV_TARGET_BMI2 __attribute__((target("bmi2")))
#endif

// Variable shifts dominate the bit writers and readers; with BMI2 they are
// one uop (shlx/shrx), so the bodies are compiled twice and picked at run
// time.
bool UseBmi2() {
#ifdef BP_KV_HAVE_BMI2_VARIANT
  static const bool has = __builtin_cpu_supports("bmi2");
  return has;
#else
  return false;
#endif
}

inline __attribute__((always_inline)) KvSplitSizes EncodeBody(const KvTables& t, const uint16_t* v, uint8_t* speculation,
                                                             uint8_t* verification) {
  const uint64_t n = t.n;
  uint8_t* bitmap = speculation;
  const bool implicit = t.B == 0;  // every value kept: no bitmap
  if (!implicit) {
    std::memset(bitmap, 0, static_cast<size_t>(t.B));
    bf16_spec::SelectTopKBf16(v, n, t.k, bitmap, 0);
  }
  const int mb = t.mbits, lw = 7 - mb, fwid = 1 + mb;
  bf16_spec::FieldWriter fields(speculation + t.B);
  bf16_spec::FieldWriter lows(verification);
  CodeWriter kexp(speculation + t.B + t.F);
  CodeWriter pexp(verification + t.L + (n - t.k));
  uint8_t* psm = verification + t.L;
  const uint32_t lmask = (1u << lw) - 1;
  for (uint64_t base = 0; base < n; base += kBlock) {
    const uint64_t m = std::min(kBlock, n - base);
    const uint64_t valid = m == 64 ? ~uint64_t{0} : (uint64_t{1} << m) - 1;
    const uint64_t w =
        implicit ? valid
                 : bf16_spec::LoadLE64Bounded(bitmap + base / 8, static_cast<size_t>(t.B - base / 8)) & valid;
    const uint16_t* vb = v + base;
    for (uint64_t x = w; x != 0; x &= x - 1) {
      const uint32_t y = vb[__builtin_ctzll(x)];
      const uint32_t e = (y >> 7) & 0xffu;
      fields.Put((y >> 15) << mb | (y & 0x7fu) >> lw, fwid);
      kexp.Put(t.kept.code[e], t.kept.lengths[e]);
      lows.Put(y & lmask, lw);
    }
    for (uint64_t x = ~w & valid; x != 0; x &= x - 1) {
      const uint32_t y = vb[__builtin_ctzll(x)];
      const uint32_t e = (y >> 7) & 0xffu;
      *psm++ = static_cast<uint8_t>(((y >> 8) & 0x80u) | (y & 0x7fu));
      pexp.Put(t.pruned.code[e], t.pruned.lengths[e]);
    }
  }
  // Each field writer stays inside its section: whole words are stored
  // only once all their bits are written.
  fields.Finish();
  lows.Finish();
  KvSplitSizes sizes;
  sizes.speculation = static_cast<size_t>(t.B + t.F) + kexp.Finish();
  sizes.verification = static_cast<size_t>(t.L + (n - t.k)) + pexp.Finish();
  return sizes;
}

KvSplitSizes EncodeGeneric(const KvTables& t, const uint16_t* v, uint8_t* s, uint8_t* w) {
  return EncodeBody(t, v, s, w);
}
#ifdef BP_KV_HAVE_BMI2_VARIANT
BP_KV_TARGET_BMI2 KvSplitSizes EncodeBmi2(const KvTables& t, const uint16_t* v, uint8_t* s, uint8_t* w) {
  return EncodeBody(t, v, s, w);
}
#endif

}  // namespace

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
#ifdef BP_KV_HAVE_BMI2_VARIANT
  if (UseBmi2()) return EncodeBmi2(t, vector.data(), speculation.data(), verification.data());
#endif
  return EncodeGeneric(t, vector.data(), speculation.data(), verification.data());
}

namespace {

absl::Status KvCorrupt(std::string_view what) { return absl::DataLossError(StrCat("kv split: ", what)); }

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
  uint8_t ke[kBlock], pe[kBlock], kf[kBlock], kl[kBlock];
  uint16_t kv[kBlock], pv[kBlock];
  uint64_t jk = 0;  // kept values before this block
  const uint32_t mmask = (1u << mb) - 1;
  for (uint64_t base = 0; base < n; base += kBlock) {
    const uint64_t m = std::min(kBlock, n - base);
    const uint64_t valid = m == 64 ? ~uint64_t{0} : (uint64_t{1} << m) - 1;
    const uint64_t w =
        implicit ? valid
                 : bf16_spec::LoadLE64Bounded(bitmap + base / 8, static_cast<size_t>(t.B - base / 8)) & valid;
    const uint64_t nk = static_cast<uint64_t>(__builtin_popcountll(w));
    if (!kexp.Get(t.kept, nk, ke)) return KvCorrupt("kept exponent lane ends early");
    bf16_spec::UnpackFields(fields, fbytes, jk, nk, fwid, kf);
    if (!full) {
      for (uint64_t j = 0; j < nk; ++j) kv[j] = bf16_spec::DraftValue(kf[j] >> mb, ke[j], kf[j] & mmask, mb);
      if (implicit) {
        std::memcpy(out.data() + base, kv, static_cast<size_t>(m) * 2);
      } else {
        bf16_spec::MergeByBitmap(bitmap + base / 8, m, kv, nullptr, out.data() + base);
      }
    } else {
      bf16_spec::UnpackFields(lows, static_cast<size_t>(t.L), jk, nk, lw, kl);
      for (uint64_t j = 0; j < nk; ++j) {
        kv[j] = static_cast<uint16_t>((uint32_t{kf[j]} >> mb) << 15 | uint32_t{ke[j]} << 7 |
                                      (uint32_t{kf[j]} & mmask) << lw | kl[j]);
      }
      const uint64_t np = m - nk;
      if (!pexp.Get(t.pruned, np, pe)) return KvCorrupt("pruned exponent lane ends early");
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

absl::Status DecodeGeneric(const KvTables& t, absl::Span<const uint8_t> s, absl::Span<const uint8_t> v, bool full,
                           absl::Span<uint16_t> out) {
  return DecodeBody(t, s, v, full, out);
}
#ifdef BP_KV_HAVE_BMI2_VARIANT
BP_KV_TARGET_BMI2 absl::Status DecodeBmi2(const KvTables& t, absl::Span<const uint8_t> s, absl::Span<const uint8_t> v,
                                          bool full, absl::Span<uint16_t> out) {
  return DecodeBody(t, s, v, full, out);
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
#ifdef BP_KV_HAVE_BMI2_VARIANT
  if (UseBmi2()) return DecodeBmi2(*t_, speculation, verification, full, out);
#endif
  return DecodeGeneric(*t_, speculation, verification, full, out);
}

}  // namespace boltpack
