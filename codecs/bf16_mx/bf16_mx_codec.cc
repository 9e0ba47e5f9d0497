// bf16-mx (spec/codecs-bf16-exp.md): near-lossless, Cassandra-2 style. Per
// 32 values one shared exponent; each value a 3-bit exponent offset and its
// sign+mantissa byte. The encoder writes the error it made as
// `rel_rms_error` and `lossy_fraction`.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codecs/bf16_exp/bf16_codec_base.h"
#include "codecs/bf16_exp/bf16_exp_codecs.h"
#include "codecs/bf16_exp/byte_split.h"
#include "codecs/raw_range.h"

namespace boltpack {
namespace {

using bf16_exp::Bf16CodecBase;
using bf16_exp::EmitBf16;
using bf16_exp::kFromF32;
using bf16_exp::kSmRole;
using bf16_exp::OutSize;

constexpr std::string_view kSharedRole = "shared_exponents";
constexpr std::string_view kOffsetRole = "offsets";
constexpr std::string_view kRmsParam = "rel_rms_error";
constexpr std::string_view kLossyParam = "lossy_fraction";
constexpr uint64_t kMxBlock = 32;
constexpr uint64_t kMxOffsetBytes = 12;  // 32 x 3 bits

// Exact f32 bits of sig * 2^k (sig < 256, -140 <= k <= 121; the result is
// a finite f32, normal or subnormal).
uint32_t ComposeF32(uint32_t sig, int k) {
  if (sig == 0) return 0;
  const int p = 31 - __builtin_clz(sig);
  const int ef = p + k + 127;
  if (ef >= 1) return static_cast<uint32_t>(ef) << 23 | ((sig << (23 - p)) & 0x7fffffu);
  return sig << (k + 149);
}

// The bf16 a (shared exponent, sign+mantissa byte, 3-bit offset) stands for.
inline uint16_t MxDecode(uint32_t E, uint32_t sm, uint32_t t) {
  const uint32_t sign = (sm & 0x80u) << 8;
  const uint32_t m = sm & 0x7fu;
  if (t <= 6 && E >= t + 1) return static_cast<uint16_t>(sign | (E - t) << 7 | m);
  const uint32_t f = t <= 6 ? ComposeF32(128 + m, static_cast<int>(E) - static_cast<int>(t) - 134)
                            : ComposeF32(m, static_cast<int>(E) - 140);
  return static_cast<uint16_t>(sign | F32BitsToBF16Bits(f));
}

// Offset and sign+mantissa byte for bf16 `x` in a block of shared exponent E.
inline void MxEncode(uint32_t E, uint16_t x, uint8_t* t_out, uint8_t* sm_out) {
  const uint32_t s = (x >> 8) & 0x80u;
  const uint32_t e = (x >> 7) & 0xffu;
  const uint32_t m = x & 0x7fu;
  if (e >= 1 && E - e <= 6) {
    *t_out = static_cast<uint8_t>(E - e);
    *sm_out = static_cast<uint8_t>(s | m);
    return;
  }
  const uint32_t sig = e ? 128 + m : m;
  const int eprime = e ? static_cast<int>(e) : 1;
  const int sh = eprime - static_cast<int>(E) + 6;  // value in units of 2^(E-140) is sig * 2^sh
  if (sh >= 0) {
    const uint32_t r = sig << sh;
    if (r < 128) {
      *t_out = 7;
      *sm_out = static_cast<uint8_t>(s | r);
    } else {
      const int p = 31 - __builtin_clz(r);
      *t_out = static_cast<uint8_t>(13 - p);
      *sm_out = static_cast<uint8_t>(s | ((r >> (p - 7)) - 128));
    }
    return;
  }
  const int d = -sh;
  uint32_t q = 0;
  if (d < 16) {
    q = sig >> d;
    const uint32_t rem = sig & ((1u << d) - 1);
    const uint32_t half = 1u << (d - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
  }
  if (q >= 128) {
    *t_out = 6;
    *sm_out = static_cast<uint8_t>(s);
  } else {
    *t_out = 7;
    *sm_out = static_cast<uint8_t>(s | q);
  }
}

constexpr uint64_t kMxStatBlocks = 1024;

struct MxStats {
  double err = 0, ref = 0;
  uint64_t lossy = 0;
};

// 24 bits -> 8 bytes, 3 bits each (field i of the bits to byte i).
inline uint64_t Spread3(uint64_t g) {
  uint64_t x = (g & 0xfff) | (g & 0xfff000) << 20;
  x = (x & 0x0000003f0000003full) | (x & 0x00000fc000000fc0ull) << 10;
  return (x & 0x0007000700070007ull) | (x & 0x0038003800380038ull) << 5;
}

// The inverse: 8 bytes (each < 8) -> 24 bits.
inline uint64_t Gather3(uint64_t x) {
  x = (x & 0x0007000700070007ull) | (x >> 5 & 0x0038003800380038ull);
  x = (x & 0x0000003f0000003full) | (x >> 10 & 0x00000fc000000fc0ull);
  return (x & 0xfff) | (x >> 20 & 0xfff000);
}

// The 32 offsets of a block (12 bytes) as bytes; non-zero if any is 7.
inline uint64_t UnpackOffsets(const uint8_t* off, uint8_t* t) {
  uint64_t any7 = 0;
  for (int k = 0; k < 4; ++k) {
    const uint64_t g = uint64_t{off[3 * k]} | uint64_t{off[3 * k + 1]} << 8 | uint64_t{off[3 * k + 2]} << 16;
    const uint64_t x = Spread3(g);
    any7 |= (x + 0x0101010101010101ull) & 0x0808080808080808ull;
    std::memcpy(t + 8 * k, &x, 8);
  }
  return any7;
}

// One block of c <= 32 values: shared exponent, offsets, sign+mantissa
// bytes, and the error the block makes (added to *st).
inline void EncodeMxBlock(const uint16_t* v, uint64_t c, uint8_t* shared, uint8_t* off, uint8_t* sm, MxStats* st) {
  uint32_t E = 1, emin = 255;
  for (uint64_t i = 0; i < c; ++i) {
    const uint32_t e = (v[i] >> 7) & 0xffu;
    E = std::max(E, e);
    emin = std::min(emin, e);
  }
  *shared = static_cast<uint8_t>(E);
  alignas(32) uint8_t t[kMxBlock] = {};
  double ref = 0;
  if (emin >= 1 && E - emin <= 6 && E < 255) {
    // Exact block of finite values: t = E - e.
    for (uint64_t i = 0; i < c; ++i) {
      const uint32_t x = v[i];
      t[i] = static_cast<uint8_t>(E - ((x >> 7) & 0xffu));
      sm[i] = static_cast<uint8_t>(((x >> 8) & 0x80u) | (x & 0x7fu));
      const double f = BF16ToF32(v[i]);
      ref += f * f;
    }
  } else {
    for (uint64_t i = 0; i < c; ++i) {
      const uint32_t e = (v[i] >> 7) & 0xffu;
      if (e >= 1 && E - e <= 6 && E < 255) {  // exact, as above
        t[i] = static_cast<uint8_t>(E - e);
        sm[i] = static_cast<uint8_t>(((v[i] >> 8) & 0x80u) | (v[i] & 0x7fu));
        const double f = BF16ToF32(v[i]);
        ref += f * f;
        continue;
      }
      MxEncode(E, v[i], &t[i], &sm[i]);
      const uint16_t back = MxDecode(E, sm[i], t[i]);
      const double x = BF16ToF32(v[i]);
      if (std::isfinite(x)) ref += x * x;
      if (back != v[i]) {
        ++st->lossy;
        const double y = BF16ToF32(back);
        if (std::isfinite(x) && std::isfinite(y)) st->err += (x - y) * (x - y);
      }
    }
  }
  st->ref += ref;
  for (int k = 0; k < 4; ++k) {
    uint64_t x;
    std::memcpy(&x, t + 8 * k, 8);
    const uint64_t g = Gather3(x);
    off[3 * k] = static_cast<uint8_t>(g);
    off[3 * k + 1] = static_cast<uint8_t>(g >> 8);
    off[3 * k + 2] = static_cast<uint8_t>(g >> 16);
  }
}

class Bf16MxCodec : public Bf16CodecBase {
 public:
  Bf16MxCodec()
      : Bf16CodecBase("bf16-mx",
                      "near-lossless bf16: shared exponent per 32 values, 3-bit exponent offsets, sign+mantissa "
                      "bytes (11.25 bits per value)") {}

  std::vector<CodecParamSpec> StoredParamSpecs() const override {
    CodecParamSpec rms;
    rms.name = kRmsParam;
    rms.help = "measured error, RMS of the difference over RMS of the values";
    rms.settable = false;
    CodecParamSpec lossy = rms;
    lossy.name = kLossyParam;
    lossy.help = "measured fraction of values not stored exactly";
    return {rms, lossy};
  }

  absl::StatusOr<EncodedTensor> Encode(const TensorSource& source, const CodecParams& params,
                                       const ExecOptions& exec) const override {
    if (absl::Status s = CanEncode(source.dtype, source.shape, params); !s.ok()) {
      return absl::Status(s.code(), StrCat("tensor '", source.name, "': ", s.message()));
    }
    const uint64_t n = *CheckedProduct(source.shape);
    std::vector<uint16_t> converted;
    BP_ASSIGN_OR_RETURN(const uint8_t* src16, SourceBf16(source, n, exec.threads, &converted));
    const uint64_t blocks = (n + kMxBlock - 1) / kMxBlock;
    EncodedStream es{std::string(kSharedRole), std::vector<uint8_t>(blocks), {}, false};
    EncodedStream eo{std::string(kOffsetRole), std::vector<uint8_t>(blocks * kMxOffsetBytes), {}, false};
    EncodedStream sm{std::string(kSmRole), std::vector<uint8_t>(n), {}, false};
    // The error made is summed per group of kMxStatBlocks blocks, then over
    // the groups in order: the same result for any thread count.
    const uint64_t groups = (blocks + kMxStatBlocks - 1) / kMxStatBlocks;
    std::vector<MxStats> stats(groups);
    BP_RETURN_IF_ERROR(ParallelFor(groups, exec.threads, 1, [&](uint64_t a, uint64_t b) {
      for (uint64_t g = a; g < b; ++g) {
        const uint64_t b1 = std::min(blocks, (g + 1) * kMxStatBlocks);
        for (uint64_t blk = g * kMxStatBlocks; blk < b1; ++blk) {
          const uint64_t begin = blk * kMxBlock;
          uint16_t v[kMxBlock];
          const uint64_t c = std::min(kMxBlock, n - begin);
          std::memcpy(v, src16 + 2 * begin, static_cast<size_t>(c) * 2);
          EncodeMxBlock(v, c, &es.bytes[blk],
                        eo.bytes.data() + blk * kMxOffsetBytes, sm.bytes.data() + begin, &stats[g]);
        }
      }
      return absl::OkStatus();
    }));
    struct {
      double err = 0, ref = 0;
      uint64_t lossy = 0;
    } total;
    for (const MxStats& st : stats) {
      total.err += st.err;
      total.ref += st.ref;
      total.lossy += st.lossy;
    }
    EncodedTensor enc;
    enc.params = OutputParams(source.dtype);
    enc.params.emplace_back(std::string(kRmsParam),
                            MetaValue::Float64(total.ref > 0 ? std::sqrt(total.err / total.ref) : 0.0));
    enc.params.emplace_back(std::string(kLossyParam),
                            MetaValue::Float64(n > 0 ? static_cast<double>(total.lossy) / static_cast<double>(n) : 0.0));
    enc.streams.push_back(std::move(es));
    enc.streams.push_back(std::move(eo));
    enc.streams.push_back(std::move(sm));
    return enc;
  }

  // [C-10.3.1]
  absl::Status ValidateRecord(const TensorInfo& info) const override {
    BP_RETURN_IF_ERROR(CheckRecordBasics(info, {{kRmsParam, ValueType::kFloat64}, {kLossyParam, ValueType::kFloat64}}));
    const uint64_t n = *CheckedProduct(info.shape);
    const uint64_t blocks = (n + kMxBlock - 1) / kMxBlock;
    if (info.streams.size() != 3 || info.streams[0].role != kSharedRole || info.streams[1].role != kOffsetRole ||
        info.streams[2].role != kSmRole) {
      return Fail(info, "expected three streams: \"shared_exponents\", \"offsets\", \"sign_mantissa\"");
    }
    const uint64_t want[3] = {blocks, blocks * kMxOffsetBytes, n};
    for (int s = 0; s < 3; ++s) {
      if (info.streams[s].raw_length != want[s]) {
        return Fail(info, StrCat("stream \"", info.streams[s].role, "\" raw length ", info.streams[s].raw_length,
                                 ", expected ", want[s]));
      }
      if (!info.streams[s].chunks.empty()) return Fail(info, "bf16-mx streams have no chunks");
    }
    return absl::OkStatus();
  }

  absl::Status Decode(const DecodeInput& input, OutputType out, absl::Span<uint8_t> dst,
                      const ExecOptions& exec) const override {
    BP_RETURN_IF_ERROR(CheckInput(input));
    const TensorInfo& info = *input.info;
    const uint64_t n = *CheckedProduct(info.shape);
    const uint64_t blocks = (n + kMxBlock - 1) / kMxBlock;
    if (input.streams[0].size() != blocks || input.streams[1].size() != blocks * kMxOffsetBytes ||
        input.streams[2].size() != n) {
      return Fail(info, "stream sizes differ from the record");
    }
    if (dst.size() < n * OutSize(out)) return Fail(info, "output buffer too small");
    return ParallelFor(blocks, exec.threads, 4096, [&](uint64_t a, uint64_t b) {
      const uint64_t zero[3] = {0, 0, 0};
      DecodeBlocks(input.streams[0].data(), input.streams[1].data(), input.streams[2].data(), zero, n, a, b, 0, out,
                   dst.data());
      return absl::OkStatus();
    });
  }

  absl::Status DecodeRows(const DecodeInput& input, uint64_t row_begin, uint64_t row_end, OutputType out,
                          absl::Span<uint8_t> dst) const override {
    BP_RETURN_IF_ERROR(CheckInput(input));
    const TensorInfo& info = *input.info;
    BP_RETURN_IF_ERROR(ValidateRecord(info));
    const uint64_t rows = info.row_count();
    if (row_begin > row_end || row_end > rows) return absl::OutOfRangeError(StrCat("tensor '", info.name, "': bad rows"));
    const uint64_t n = *CheckedProduct(info.shape);
    const uint64_t re = rows == 0 ? 0 : n / rows;
    const uint64_t e0 = row_begin * re, e1 = row_end * re;
    if (e0 == e1) return absl::OkStatus();
    if (dst.size() < (e1 - e0) * OutSize(out)) return Fail(info, "output buffer too small");
    uint64_t base[3] = {0, 0, 0};
    for (size_t s = 0; s < 3 && s < input.raw_base.size(); ++s) base[s] = input.raw_base[s];
    for (size_t s = 0; s < 3; ++s) {
      BP_ASSIGN_OR_RETURN(auto r, RowRangeBytes(info, s, row_begin, row_end));
      BP_RETURN_IF_ERROR(RawBytesInInput(info, input.streams, input.raw_base, s, r.first, r.second).status());
    }
    const uint64_t b0 = e0 / kMxBlock, b1 = (e1 + kMxBlock - 1) / kMxBlock;
    DecodeBlocks(input.streams[0].data(), input.streams[1].data(), input.streams[2].data(), base, e1, b0, b1, e0,
                 out, dst.data());
    return absl::OkStatus();
  }

  absl::StatusOr<std::pair<uint64_t, uint64_t>> RowRangeBytes(const TensorInfo& info, size_t stream_index,
                                                              uint64_t row_begin, uint64_t row_end) const override {
    if (stream_index > 2) return Fail(info, "has three streams");
    const uint64_t rows = info.row_count();
    if (row_begin > row_end || row_end > rows) return absl::OutOfRangeError(StrCat("tensor '", info.name, "': bad rows"));
    BP_RETURN_IF_ERROR(ValidateRecord(info));
    const uint64_t n = *CheckedProduct(info.shape);
    const uint64_t re = rows == 0 ? 0 : n / rows;
    const uint64_t e0 = row_begin * re, e1 = row_end * re;
    if (stream_index == 2) return std::make_pair(e0, e1);
    const uint64_t b0 = e0 / kMxBlock, b1 = e0 == e1 ? b0 : (e1 + kMxBlock - 1) / kMxBlock;
    const uint64_t w = stream_index == 0 ? 1 : kMxOffsetBytes;
    return std::make_pair(b0 * w, b1 * w);
  }

  absl::StatusOr<uint64_t> EncodedSize(DType dtype, absl::Span<const uint64_t> shape,
                                       const CodecParams& params) const override {
    BP_RETURN_IF_ERROR(CanEncode(dtype, shape, params));
    const uint64_t n = *CheckedProduct(shape);
    const uint64_t blocks = (n + kMxBlock - 1) / kMxBlock;
    return blocks * (1 + kMxOffsetBytes) + n;
  }

  std::vector<int> SliceableAxes(absl::Span<const uint64_t>, const CodecParams&) const override { return {}; }

 private:
  absl::Status CheckInput(const DecodeInput& input) const {
    if (input.info == nullptr) return absl::InvalidArgumentError("decode input has no record");
    if (input.streams.size() != 3 || input.info->streams.size() != 3 || input.raw_base.size() > 3) {
      return absl::InvalidArgumentError(StrCat("tensor '", input.info->name, "': codec '", id_, "' decodes three streams"));
    }
    return absl::OkStatus();
  }

  // Decodes the elements [lo, n) of blocks [b0, b1) to dst (element lo
  // first). Stream k's span starts at raw offset base[k].
  static void DecodeBlocks(const uint8_t* shared, const uint8_t* offsets, const uint8_t* sm, const uint64_t* base,
                           uint64_t n, uint64_t b0, uint64_t b1, uint64_t lo, OutputType out, uint8_t* dst) {
    alignas(32) uint16_t tmp[kMxBlock];
    alignas(32) uint8_t t[kMxBlock];
    alignas(32) uint8_t ex[kMxBlock];
    const size_t osz = OutSize(out);
    for (uint64_t blk = b0; blk < b1; ++blk) {
      const uint64_t begin = blk * kMxBlock;
      const uint64_t from = std::max(begin, lo);
      const uint64_t to = std::min(begin + kMxBlock, n);
      if (from >= to) continue;
      const uint32_t E = shared[blk - base[0]];
      const uint8_t* off = offsets + blk * kMxOffsetBytes - base[1];
      const uint64_t any7 = UnpackOffsets(off, t);
      const uint8_t* s = sm + (from - base[2]);
      const size_t c = static_cast<size_t>(to - from);
      uint8_t* d = dst + (from - lo) * osz;
      if (E >= 7 && from == begin && c == kMxBlock) {
        // Offsets 0..6 are exact: exponent E - t (>= 1), sign and mantissa as
        // stored. Offset 7 (the rounded small values) is patched after.
        for (size_t i = 0; i < kMxBlock; ++i) ex[i] = static_cast<uint8_t>(E - t[i]);
        const bool direct = out == OutputType::kBF16 || out == OutputType::kNative;
        uint8_t* target = direct ? d : reinterpret_cast<uint8_t*>(tmp);
        bf16_exp::JoinBf16(s, ex, kMxBlock, target);
        for (int k = 0; any7 != 0 && k < 4; ++k) {
          uint64_t x;
          std::memcpy(&x, t + 8 * k, 8);
          for (uint64_t m = (x + 0x0101010101010101ull) & 0x0808080808080808ull; m != 0; m &= m - 1) {
            const size_t i = 8 * static_cast<size_t>(k) + static_cast<size_t>(__builtin_ctzll(m) >> 3);
            const uint16_t y = MxDecode(E, s[i], 7);
            target[2 * i] = static_cast<uint8_t>(y);
            target[2 * i + 1] = static_cast<uint8_t>(y >> 8);
          }
        }
        if (direct) continue;
      } else {
        for (size_t i = 0; i < c; ++i) tmp[i] = MxDecode(E, s[i], t[from - begin + i]);
      }
      EmitBf16(tmp, c, out, d);
    }
  }
};

}  // namespace

std::unique_ptr<Codec> MakeBf16MxCodec() { return std::make_unique<Bf16MxCodec>(); }

}  // namespace boltpack
