#include "codecs/block_common/block_codec.h"

#include <optional>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <limits>

#include "codecs/float_convert.h"
#include "codecs/raw_range.h"
#include "codecs/block_common/quant_simd.h"
#include "common/checked_math.h"
#include "common/cpu_features.h"
#include "common/huge_pages.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "common/limits.h"

namespace boltpack {

bool CpuHasAvx2Fma16c() {
  const CpuFeatures& cpu = DetectCpuFeatures();
  return cpu.avx2 && cpu.fma && cpu.f16c;
}

// ---- number formats ---------------------------------------------------------

// Why 8 magnitudes suffice for ggml's 16-code scan: for x >= 0, a negative
// code k+8 has error fl(k*e + x) >= x = the error of code 0, which the scan
// has already seen, so it is never strictly better; for x < 0 the same holds
// for the positive codes 1..7, and the negative codes' errors are exactly
// |k*e - |x|| (negation is exact). Code 8 (-0) ties code 0 and loses. So the
// result is the best magnitude m for |x|, with the sign code added when m > 0.
int BestIndexE2M1(float x, float e) {
  const float ax = std::fabs(x);
  int best = 0;
  float best_err = ax;  // |0*e - x|
  for (int i = 1; i < 8; ++i) {
    const float err = std::fabs(static_cast<float>(kE2M1Doubled[i]) * e - ax);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  if (best != 0 && x < 0) best += 8;
  return best;
}

float Ue4m3ToF32Half(uint8_t x) {
  // Only 0x00 and 0x7F are special; bit 7 is not masked, so 0x80 is 0 and
  // 0xFF is 480 (exponent 15, mantissa 7), as ggml computes them.
  if (x == 0 || x == 0x7F) return 0.0f;
  const int exp = (x >> 3) & 0xF;
  const int man = x & 7;
  // Both forms are exact; the result is what ggml_ue4m3_to_fp32 returns.
  const float raw = exp == 0 ? std::ldexp(static_cast<float>(man), -9)
                             : std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
  return raw * 0.5f;
}

uint8_t F32ToUe4m3Ggml(float x) {
  if (!(x > 0.0f)) return 0;
  if (x > 448.0f) x = 448.0f;
  const uint32_t bits = FloatBits(x);
  const int fexp = static_cast<int>((bits >> 23) & 0xFF) - 127;
  const int fman = static_cast<int>((bits >> 20) & 7);
  int e = fexp + 7;
  if (e <= 0) {
    int man = static_cast<int>(x * 512.0f + 0.5f);
    if (man > 7) man = 7;
    return man < 1 ? 0 : static_cast<uint8_t>(man);
  }
  if (e >= 15) return 0x7E;
  int m = fman + static_cast<int>((bits >> 19) & 1);
  if (m > 7) {
    m = 0;
    ++e;
    if (e >= 15) return 0x7E;
  }
  return static_cast<uint8_t>((e << 3) | m);
}

float E4m3fnToF32(uint8_t x) {
  const bool neg = (x & 0x80) != 0;
  const uint8_t a = x & 0x7F;
  // 0x7F / 0xFF: the quiet NaN with the byte's sign (codecs.md §4: "sign bit
  // honoured"), so 0xFF is 0xFFC00000, not the positive NaN.
  if (a == 0x7F) return std::bit_cast<float>(neg ? 0xFFC00000u : 0x7FC00000u);
  const int exp = a >> 3;
  const int man = a & 7;
  const float v = exp == 0 ? std::ldexp(static_cast<float>(man), -9)
                           : std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
  return neg ? -v : v;
}

uint8_t F32ToE4m3fnRne(float x) {
  if (std::isnan(x)) return 0x7F;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  float a = std::fabs(x);
  if (a >= 448.0f) return sign | 0x7E;
  if (a < 0x1p-6f) {
    // Subnormal: man * 2^-9, man = round-to-nearest-even(a * 512); 8 is the
    // smallest normal (0x08).
    const float m = std::nearbyint(a * 512.0f);
    return sign | static_cast<uint8_t>(m);
  }
  const uint32_t u = FloatBits(a);
  const uint32_t r = (u + 0x7FFFFu + ((u >> 20) & 1u)) >> 20;  // f32 exp:3-bit mantissa
  // Rebias the exponent 127 -> 7: subtract 120 << 3.
  const uint32_t code = r - (120u << 3);
  return sign | static_cast<uint8_t>(code > 0x7E ? 0x7E : code);
}

// ---- the codec base ---------------------------------------------------------

namespace {

constexpr uint64_t kMinElementsPerTask = uint64_t{1} << 15;
// A row-range decode to f32 goes in steps of about this many stored bytes,
// whose stored bytes and floats (4x as many bytes for q8_0) fit in L1
// together: the reader hashes the stored bytes after each step
// (ReadProgress), and they are then still there.
constexpr uint64_t kStepStoredBytes = uint64_t{8} << 10;

bool IsFloatSource(DType d) {
  return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16 || d == DType::kF64;
}

inline bool IsFiniteBits(float v) { return (FloatBits(v) & 0x7f800000u) != 0x7f800000u; }

}  // namespace

struct BlockCodec::Geometry {
  uint64_t elements = 0;
  uint64_t blocks = 0;
  uint64_t rows = 0;        // outer rows (shape[0])
  uint64_t row_elements = 0;
  bool whole_block_rows = false;  // rank >= 2: every outer row is whole blocks
};

BlockCodec::BlockCodec(BlockFormat format) : format_(std::move(format)) {
  for (const auto& s : format_.streams) bytes_per_block_total_ += s.bytes_per_block;
}

namespace {

// The default 16-bit decode: f32 tiles on the stack, then the rounding.
template <typename Decode, typename Round>
void DecodeThroughF32(const BlockFormat& format, const uint8_t* const* in, uint64_t nblocks,
                      uint16_t* y, Decode decode_f32, Round round) {
  constexpr uint64_t kTileFloats = 4096;
  float stack_tile[kTileFloats];
  const uint64_t B = format.block_elems;
  // A (hypothetical) block larger than the stack tile gets one on the heap.
  std::unique_ptr<float[]> heap_tile;
  if (B > kTileFloats) heap_tile = std::make_unique_for_overwrite<float[]>(B);
  float* tile = heap_tile ? heap_tile.get() : stack_tile;
  const uint64_t tile_blocks = std::max<uint64_t>(1, kTileFloats / B);
  for (uint64_t b = 0; b < nblocks; b += tile_blocks) {
    const uint64_t nb = std::min(tile_blocks, nblocks - b);
    const uint8_t* p[2] = {nullptr, nullptr};
    for (size_t k = 0; k < format.streams.size() && k < 2; ++k) {
      p[k] = in[k] + b * format.streams[k].bytes_per_block;
    }
    decode_f32(p, nb, tile);
    round(tile, y + b * B, static_cast<size_t>(nb * B));
  }
}

}  // namespace

void BlockCodec::DecodeBlocksBf16(const uint8_t* const* in, uint64_t nblocks, uint16_t* y,
                                  const BlockParams& params, bool avx2) const {
  DecodeThroughF32(
      format_, in, nblocks, y,
      [&](const uint8_t* const* p, uint64_t nb, float* t) { DecodeBlocksF32(p, nb, t, params, avx2); },
      [](const float* t, uint16_t* to, size_t n) { ConvertF32ToBF16(t, to, n); });
}

void BlockCodec::DecodeBlocksF16(const uint8_t* const* in, uint64_t nblocks, uint16_t* y,
                                 const BlockParams& params, bool avx2) const {
  DecodeThroughF32(
      format_, in, nblocks, y,
      [&](const uint8_t* const* p, uint64_t nb, float* t) { DecodeBlocksF32(p, nb, t, params, avx2); },
      [](const float* t, uint16_t* to, size_t n) { ConvertF32ToF16(t, to, n); });
}

void BlockCodec::DecodeBlocksTo(const uint8_t* const* in, uint64_t nblocks, OutputType out,
                                uint8_t* y, const BlockParams& params, bool avx2) const {
  switch (out) {
    case OutputType::kF32:
      DecodeBlocksF32(in, nblocks, reinterpret_cast<float*>(y), params, avx2);
      break;
    case OutputType::kBF16:
      DecodeBlocksBf16(in, nblocks, reinterpret_cast<uint16_t*>(y), params, avx2);
      break;
    case OutputType::kF16:
      DecodeBlocksF16(in, nblocks, reinterpret_cast<uint16_t*>(y), params, avx2);
      break;
    case OutputType::kNative: break;
  }
}

absl::Status BlockCodec::Fail(const TensorInfo& info, const std::string& what) const {
  return absl::InvalidArgumentError(
      StrCat("tensor '", info.name, "' (codec '", format_.id, "'): ", what));
}

absl::StatusOr<BlockCodec::Geometry> BlockCodec::CheckShape(absl::Span<const uint64_t> shape) const {
  if (shape.empty()) {
    return absl::InvalidArgumentError(
        StrCat("codec '", format_.id, "' needs at least one dimension (a 0-d tensor is one value)"));
  }
  if (shape.size() > format::kMaxDims) {
    return absl::InvalidArgumentError(StrCat("codec '", format_.id, "': ", shape.size(),
                                             " dimensions, at most ", format::kMaxDims));
  }
  auto n = CheckedProduct(shape);
  auto inner_product = CheckedProduct(shape.subspan(1));
  if (!n || *n >= format::kMaxElements || !inner_product || *inner_product >= format::kMaxElements) {
    return absl::ResourceExhaustedError(
        StrCat("codec '", format_.id, "': element count reaches the limit of 2^56"));
  }
  const uint64_t inner = shape.back();
  if (inner % format_.block_elems != 0) {
    return absl::InvalidArgumentError(StrCat(
        "codec '", format_.id, "' quantizes blocks of ", format_.block_elems,
        " values along the innermost dimension, whose length ", inner, " is not a multiple of ",
        format_.block_elems, " (store this tensor with another codec, e.g. f16 or bf16)"));
  }
  Geometry g;
  g.elements = *n;
  g.blocks = *n / format_.block_elems;
  g.rows = shape[0];
  g.row_elements = shape.size() >= 2 ? *inner_product : 1;
  g.whole_block_rows = shape.size() >= 2;
  return g;
}

absl::StatusOr<BlockParams> BlockCodec::ParseStoredParams(const CodecParams& params) const {
  if (params.empty()) return BlockParams{};
  // [C-10.3.1]
  return absl::InvalidArgumentError(
      StrCat("codec '", format_.id, "' takes no parameters, got '", params[0].first, "'"));
}

absl::Status BlockCodec::CheckEncodeParams(const CodecParams& params) const {
  return ParseStoredParams(params).status();
}

absl::StatusOr<CodecParams> BlockCodec::EncodeParams(const CodecParams& /*requested*/,
                                                     float /*amax*/) const {
  return CodecParams{};
}

absl::Status BlockCodec::CanEncode(DType dtype, absl::Span<const uint64_t> shape,
                                   const CodecParams& params) const {
  if (!IsFloatSource(dtype)) {
    return absl::InvalidArgumentError(StrCat("codec '", format_.id,
                                             "' quantizes float tensors (F32, F16, BF16, F64), not ",
                                             DTypeName(dtype)));
  }
  BP_RETURN_IF_ERROR(CheckShape(shape).status());
  return CheckEncodeParams(params);
}

// The record of a tensor of geometry `g` without its bytes: Encode's and
// PlanEncode's, so that a plan cannot drift from what is written.
EncodedTensor BlockCodec::Skeleton(const Geometry& g, CodecParams stored) const {
  const uint32_t B = format_.block_elems;
  EncodedTensor out;
  out.params = std::move(stored);
  out.streams.resize(format_.streams.size());
  for (size_t k = 0; k < format_.streams.size(); ++k) out.streams[k].role = format_.streams[k].role;
  // Chunks of whole outer rows, sized by the largest stream.
  if (g.whole_block_rows && g.rows > 1) {
    const uint64_t row_blocks = g.row_elements / B;
    uint32_t max_bpb = 0;
    for (const auto& s : format_.streams) max_bpb = std::max(max_bpb, s.bytes_per_block);
    const uint64_t row_bytes = row_blocks * max_bpb;
    if (row_bytes > 0 && g.rows * row_bytes > kBlockChunkTargetBytes) {
      const uint64_t per = std::max<uint64_t>(1, kBlockChunkTargetBytes / row_bytes);
      for (size_t k = 0; k < format_.streams.size(); ++k) {
        const uint64_t rb = row_blocks * format_.streams[k].bytes_per_block;
        for (uint64_t first = 0; first < g.rows; first += per) {
          const uint64_t count = std::min(per, g.rows - first);
          out.streams[k].chunks.push_back(EncodedChunk{first * rb, count * rb, first, count});
        }
      }
    }
  }
  return out;
}

absl::StatusOr<std::optional<EncodePlan>> BlockCodec::PlanEncode(DType dtype, absl::Span<const uint64_t> shape,
                                                                 const CodecParams& params) const {
  BP_RETURN_IF_ERROR(CanEncode(dtype, shape, params));
  const Geometry g = *CheckShape(shape);
  // The amax only picks a stored value (nvfp4's tensor scale), never its
  // encoded size: 0 stands for any.
  BP_ASSIGN_OR_RETURN(CodecParams stored, EncodeParams(params, 0.0f));
  EncodePlan plan;
  plan.record = Skeleton(g, std::move(stored));
  for (const auto& s : format_.streams) plan.lengths.push_back(g.blocks * s.bytes_per_block);
  return std::optional<EncodePlan>(std::move(plan));
}

absl::StatusOr<EncodedTensor> BlockCodec::Encode(const TensorSource& source,
                                                 const CodecParams& params,
                                                 const ExecOptions& exec) const {
  auto named = [&](const absl::Status& s) {
    return absl::Status(s.code(), StrCat("tensor '", source.name, "': ", s.message()));
  };
  if (absl::Status s = CanEncode(source.dtype, source.shape, params); !s.ok()) return named(s);
  const Geometry g = *CheckShape(source.shape);
  const uint64_t src_size = static_cast<uint64_t>(DTypeSize(source.dtype));
  if (source.bytes.size() != g.elements * src_size) {
    return named(absl::InvalidArgumentError(StrCat("codec '", format_.id, "': ", source.bytes.size(),
                                                   " source bytes, expected ", g.elements,
                                                   " elements x ", src_size, " bytes")));
  }
  const uint32_t B = format_.block_elems;
  const uint64_t tile_blocks = std::max<uint64_t>(1, 4096 / B);
  const uint64_t ntiles = (g.blocks + tile_blocks - 1) / tile_blocks;
  const uint8_t* src = source.bytes.data();
  const bool avx2 = CpuHasAvx2Fma16c();
  // An aligned F32 source is read in place; anything else is converted into
  // a per-thread tile first.
  const bool in_place =
      source.dtype == DType::kF32 && reinterpret_cast<uintptr_t>(src) % alignof(float) == 0;
  auto tile_floats = [&](uint64_t e0, uint64_t cnt, std::vector<float>& buf) -> const float* {
    if (in_place) return reinterpret_cast<const float*>(src) + e0;
    if (buf.size() < cnt) buf.resize(tile_blocks * B);
    ConvertFloats(source.dtype, DType::kF32, src + e0 * src_size, buf.data(), cnt);
    return buf.data();
  };
  auto abs_max_bits = [&](const float* x, uint64_t n) {
#if BOLTPACK_X86_SIMD
    if (avx2) return quant::AbsMaxBitsAvx2(x, n);
#endif
    return quant::AbsMaxBits(x, n);
  };
  // The first non-finite element, or UINT64_MAX (a sequential scan; run
  // only to name the culprit of a failed encode).
  auto first_non_finite = [&]() -> uint64_t {
    std::vector<float> buf;
    for (uint64_t t = 0; t < ntiles; ++t) {
      const uint64_t e0 = t * tile_blocks * B;
      const uint64_t cnt = std::min<uint64_t>(tile_blocks * B, g.elements - e0);
      const float* x = tile_floats(e0, cnt, buf);
      if (abs_max_bits(x, cnt) < quant::kNonFiniteBits) continue;
      for (uint64_t i = 0; i < cnt; ++i) {
        if (!IsFiniteBits(x[i])) return e0 + i;
      }
    }
    return UINT64_MAX;
  };
  auto non_finite_error = [&](uint64_t e) {
    return named(absl::InvalidArgumentError(StrCat("codec '", format_.id, "': element ", e,
                                                   " is not finite (NaN or infinity cannot be quantized)")));
  };

  // Pass 1, for codecs whose parameters depend on it: the tensor's amax.
  float amax = 0.0f;
  if (NeedsTensorAmax(params)) {
    std::vector<uint32_t> tile_amax(ntiles, 0);
    BP_RETURN_IF_ERROR(ParallelFor(
        ntiles, exec.threads, std::max<uint64_t>(1, kMinElementsPerTask / (tile_blocks * B)),
        [&](uint64_t t0, uint64_t t1) {
          std::vector<float> buf;
          for (uint64_t t = t0; t < t1; ++t) {
            const uint64_t e0 = t * tile_blocks * B;
            const uint64_t cnt = std::min<uint64_t>(tile_blocks * B, g.elements - e0);
            tile_amax[t] = abs_max_bits(tile_floats(e0, cnt, buf), cnt);
          }
          return absl::OkStatus();
        }));
    uint32_t bits = 0;
    for (uint32_t b : tile_amax) bits = std::max(bits, b);
    if (bits >= quant::kNonFiniteBits) return non_finite_error(first_non_finite());
    amax = quant::BitsToFloat(bits);
  }
  auto stored = EncodeParams(params, amax);
  if (!stored.ok()) return named(stored.status());
  auto parsed = ParseStoredParams(*stored);
  if (!parsed.ok()) return named(parsed.status());

  EncodedTensor encoded = Skeleton(g, *std::move(stored));
  for (size_t k = 0; k < format_.streams.size(); ++k) {
    ResizeHuge(encoded.streams[k].bytes, g.blocks * format_.streams[k].bytes_per_block);
  }
  // Pass 2: the blocks.
  absl::Status st = ParallelFor(
      ntiles, exec.threads, std::max<uint64_t>(1, kMinElementsPerTask / (tile_blocks * B) / 8),
      [&](uint64_t t0, uint64_t t1) {
        std::vector<float> buf;
        for (uint64_t t = t0; t < t1; ++t) {
          const uint64_t b0 = t * tile_blocks;
          const uint64_t nb = std::min<uint64_t>(tile_blocks, g.blocks - b0);
          const float* x = tile_floats(b0 * B, nb * B, buf);
          uint8_t* out[2] = {nullptr, nullptr};
          for (size_t k = 0; k < format_.streams.size(); ++k) {
            out[k] = encoded.streams[k].bytes.data() + b0 * format_.streams[k].bytes_per_block;
          }
          BP_RETURN_IF_ERROR(EncodeBlocks(x, nb, out, *parsed, avx2));
        }
        return absl::OkStatus();
      });
  if (!st.ok()) {
    // A non-finite value is the error to report, wherever it is.
    const uint64_t bad = first_non_finite();
    if (bad != UINT64_MAX) return non_finite_error(bad);
    return named(st);
  }

  return encoded;
}

// [C-10.3.1]
absl::Status BlockCodec::ValidateRecord(const TensorInfo& info) const {
  if (info.codec_id != format_.id) {
    return Fail(info, StrCat("record names codec '", info.codec_id, "'"));
  }
  if (!IsFloatSource(info.dtype)) {
    return Fail(info, StrCat("dtype ", DTypeName(info.dtype),
                             " is not a float type (F32, F16, BF16, F64)"));
  }
  auto g = CheckShape(info.shape);
  if (!g.ok()) return Fail(info, StrCat(g.status().message()));
  auto params = ParseStoredParams(info.codec_params);
  if (!params.ok()) return Fail(info, StrCat(params.status().message()));
  if (info.streams.size() != format_.streams.size()) {
    std::string roles;
    for (const auto& s : format_.streams) roles += StrCat(roles.empty() ? "" : ", ", "\"", s.role, "\"");
    return Fail(info, StrCat("expected ", format_.streams.size(), " stream(s) (", roles, "), found ",
                             info.streams.size()));
  }
  for (size_t k = 0; k < format_.streams.size(); ++k) {
    const StreamInfo& s = info.streams[k];
    const BlockStreamSpec& spec = format_.streams[k];
    if (s.role != spec.role) {
      return Fail(info, StrCat("stream ", k, " has role \"", s.role, "\", expected \"", spec.role, "\""));
    }
    const uint64_t expected = g->blocks * spec.bytes_per_block;  // < 2^56 * 36 / 16
    if (s.raw_length != expected) {
      return Fail(info, StrCat("stream \"", s.role, "\" raw length is ", s.raw_length, ", expected ",
                               g->blocks, " blocks x ", spec.bytes_per_block, " bytes"));
    }
    if (!s.chunks.empty() && !g->whole_block_rows) {
      return Fail(info, StrCat("stream \"", s.role, "\" of a 1-D tensor has chunks"));
    }
    const uint64_t row_bytes = g->row_elements / format_.block_elems * spec.bytes_per_block;
    for (size_t c = 0; c < s.chunks.size(); ++c) {
      const ChunkInfo& chunk = s.chunks[c];
      auto offset = CheckedMul(chunk.first_row, row_bytes);
      auto length = CheckedMul(chunk.row_count, row_bytes);
      auto end_row = CheckedAdd(chunk.first_row, chunk.row_count);
      if (!offset || !length || !end_row || *end_row > g->rows || *offset != chunk.raw_offset ||
          *length != chunk.raw_length) {
        // [C-10.3.1]
        return Fail(info, StrCat("stream \"", s.role, "\" chunk ", c, " (rows ", chunk.first_row, "+",
                                 chunk.row_count, ", raw bytes ", chunk.raw_offset, "+", chunk.raw_length,
                                 ") is not whole rows of ", row_bytes, " bytes within ", g->rows,
                                 " rows"));
      }
    }
  }
  return absl::OkStatus();
}

bool BlockCodec::CanDecodeTo(const TensorInfo& info, OutputType out) const {
  if (!IsFloatSource(info.dtype)) return false;
  switch (out) {
    case OutputType::kF32:
    case OutputType::kF16:
    case OutputType::kBF16: return true;
    case OutputType::kNative: return HasNativeOutput();
  }
  return false;
}

absl::StatusOr<uint64_t> BlockCodec::DecodedBytes(const TensorInfo& info, OutputType out) const {
  if (!CanDecodeTo(info, out)) {
    return absl::InvalidArgumentError(StrCat("tensor '", info.name, "': codec '", format_.id,
                                             "' cannot decode to ", OutputTypeName(out)));
  }
  BP_ASSIGN_OR_RETURN(const Geometry g, CheckShape(info.shape));
  if (out == OutputType::kNative) return g.blocks * format_.streams[0].bytes_per_block;
  return g.elements * static_cast<uint64_t>(OutputTypeSize(out));
}

absl::Status BlockCodec::CheckInput(const DecodeInput& input) const {
  if (input.info == nullptr) return absl::InvalidArgumentError("decode input has no record");
  if (input.streams.size() != format_.streams.size() ||
      input.info->streams.size() != format_.streams.size()) {
    return absl::InvalidArgumentError(StrCat("tensor '", input.info->name, "': codec '", format_.id,
                                             "' decodes ", format_.streams.size(), " stream(s), got ",
                                             input.streams.size()));
  }
  if (!input.raw_base.empty() && input.raw_base.size() != input.streams.size()) {
    return absl::InvalidArgumentError(StrCat("tensor '", input.info->name, "': ",
                                             input.raw_base.size(), " raw bases for ",
                                             input.streams.size(), " streams"));
  }
  return absl::OkStatus();
}

absl::Status BlockCodec::DecodeRange(const TensorInfo& info, const BlockParams& params,
                                     const std::vector<absl::Span<const uint8_t>>& streams,
                                     const std::vector<uint64_t>& base, uint64_t e0, uint64_t e1,
                                     OutputType out, absl::Span<uint8_t> dst, int threads,
                                     ReadProgress* progress) const {
  const uint32_t B = format_.block_elems;
  const uint64_t b0 = e0 / B;
  const uint64_t b1 = (e1 + B - 1) / B;
  const size_t ns = format_.streams.size();
  const uint8_t* in0[2] = {nullptr, nullptr};
  for (size_t k = 0; k < ns; ++k) {
    const uint64_t bpb = format_.streams[k].bytes_per_block;
    const uint64_t lo = b0 * bpb, hi = b1 * bpb;  // bounded by the validated shape
    BP_ASSIGN_OR_RETURN(const absl::Span<const uint8_t> held, RawBytesInInput(info, streams, base, k, lo, hi));
    in0[k] = held.data();
  }
  if (out == OutputType::kNative) {
    if (e0 % B != 0 || e1 % B != 0) {
      return absl::InvalidArgumentError(StrCat("tensor '", info.name, "': elements ", e0, "..", e1,
                                               " are not whole blocks of ", B,
                                               "; decode them to f32, f16 or bf16"));
    }
    const uint64_t bytes = (b1 - b0) * format_.streams[0].bytes_per_block;
    if (dst.size() < bytes) {
      return absl::InvalidArgumentError(StrCat("tensor '", info.name, "': output buffer of ", dst.size(),
                                               " bytes, native decode needs ", bytes));
    }
    if (bytes != 0) std::memcpy(dst.data(), in0[0], bytes);
    return absl::OkStatus();
  }
  const uint64_t out_size = static_cast<uint64_t>(OutputTypeSize(out));
  const uint64_t need = (e1 - e0) * out_size;
  if (dst.size() < need) {
    return absl::InvalidArgumentError(StrCat("tensor '", info.name, "': output buffer of ", dst.size(),
                                             " bytes, decode to ", OutputTypeName(out), " needs ", need));
  }
  if (b1 == b0) return absl::OkStatus();
  const bool avx2 = CpuHasAvx2Fma16c();
  const uint64_t min_blocks = std::max<uint64_t>(1, kMinElementsPerTask / B);
  auto in_at = [&](uint64_t b, const uint8_t** p) {
    for (size_t k = 0; k < ns; ++k) p[k] = in0[k] + (b - b0) * format_.streams[k].bytes_per_block;
  };
  // Blocks up to `b` have been read.
  auto read_to = [&](uint64_t b) {
    for (size_t k = 0; k < ns; ++k) progress->ReadTo(k, b * format_.streams[k].bytes_per_block);
  };
  // Whole blocks into a buffer aligned for the output type: the kernels
  // write dst directly (out_size is 4 or 2, a power of two).
  const bool aligned = e0 % B == 0 && e1 % B == 0;
  if (aligned && reinterpret_cast<uintptr_t>(dst.data()) % out_size == 0) {
    const uint64_t step = std::max<uint64_t>(1, kStepStoredBytes / bytes_per_block_total_);
    return ParallelFor(b1 - b0, threads, min_blocks, [&](uint64_t lo, uint64_t hi) {
      for (uint64_t b = lo; b < hi; b += step) {
        const uint64_t nb = std::min(step, hi - b);
        const uint8_t* p[2] = {nullptr, nullptr};
        in_at(b0 + b, p);
        DecodeBlocksTo(p, nb, out, dst.data() + b * B * out_size, params, avx2);
        if (progress != nullptr) read_to(b0 + b + nb);
      }
      return absl::OkStatus();
    });
  }
  // Through a small f32 tile: partial blocks, unaligned dst.
  const uint64_t tile_blocks = std::max<uint64_t>(1, 4096 / B);
  return ParallelFor(b1 - b0, threads, min_blocks, [&](uint64_t lo, uint64_t hi) {
    // Not zeroed: each tile is written whole before it is read, and zeroing
    // 16 KiB per task was a third of a small decode (the decode fuzzers').
    const auto buf = std::make_unique_for_overwrite<float[]>(tile_blocks * B);
    for (uint64_t b = b0 + lo; b < b0 + hi; b += tile_blocks) {
      const uint64_t nb = std::min<uint64_t>(tile_blocks, b0 + hi - b);
      const uint8_t* p[2] = {nullptr, nullptr};
      in_at(b, p);
      DecodeBlocksF32(p, nb, buf.get(), params, avx2);
      const uint64_t t0 = std::max<uint64_t>(b * B, e0);
      const uint64_t t1 = std::min<uint64_t>((b + nb) * B, e1);
      const float* from = buf.get() + (t0 - b * B);
      uint8_t* to = dst.data() + (t0 - e0) * out_size;
      const size_t cnt = static_cast<size_t>(t1 - t0);
      switch (out) {
        case OutputType::kF32:
          if (cnt > 0) std::memcpy(to, from, cnt * sizeof(float));  // `to` is null for an empty output
          break;
        case OutputType::kF16: ConvertF32ToF16(from, to, cnt); break;
        case OutputType::kBF16: ConvertF32ToBF16(from, to, cnt); break;
        case OutputType::kNative: break;
      }
      if (progress != nullptr) read_to(b + nb);
    }
    return absl::OkStatus();
  });
}

absl::Status BlockCodec::Decode(const DecodeInput& input, OutputType out, absl::Span<uint8_t> dst,
                                const ExecOptions& exec) const {
  BP_RETURN_IF_ERROR(CheckInput(input));
  const TensorInfo& info = *input.info;
  if (!CanDecodeTo(info, out)) {
    return absl::InvalidArgumentError(StrCat("tensor '", info.name, "': codec '", format_.id,
                                             "' cannot decode to ", OutputTypeName(out)));
  }
  auto g = CheckShape(info.shape);
  if (!g.ok()) return Fail(info, StrCat(g.status().message()));
  auto params = ParseStoredParams(info.codec_params);
  if (!params.ok()) return Fail(info, StrCat(params.status().message()));
  return DecodeRange(info, *params, input.streams, input.raw_base, 0, g->elements, out, dst,
                     exec.threads, nullptr);
}

absl::Status BlockCodec::DecodeRows(const DecodeInput& input, uint64_t row_begin, uint64_t row_end,
                                    OutputType out, absl::Span<uint8_t> dst) const {
  BP_RETURN_IF_ERROR(CheckInput(input));
  const TensorInfo& info = *input.info;
  if (!CanDecodeTo(info, out)) {
    return absl::InvalidArgumentError(StrCat("tensor '", info.name, "': codec '", format_.id,
                                             "' cannot decode to ", OutputTypeName(out)));
  }
  auto g = CheckShape(info.shape);
  if (!g.ok()) return Fail(info, StrCat(g.status().message()));
  if (row_begin > row_end || row_end > g->rows) {
    return absl::OutOfRangeError(StrCat("tensor '", info.name, "': rows ", row_begin, "..", row_end,
                                        " outside 0..", g->rows));
  }
  auto params = ParseStoredParams(info.codec_params);
  if (!params.ok()) return Fail(info, StrCat(params.status().message()));
  return DecodeRange(info, *params, input.streams, input.raw_base, row_begin * g->row_elements,
                     row_end * g->row_elements, out, dst, 1, input.progress);
}

absl::StatusOr<std::pair<uint64_t, uint64_t>> BlockCodec::RowRangeBytes(const TensorInfo& info,
                                                                        size_t stream_index,
                                                                        uint64_t row_begin,
                                                                        uint64_t row_end) const {
  if (stream_index >= format_.streams.size()) {
    return absl::InvalidArgumentError(StrCat("tensor '", info.name, "': codec '", format_.id, "' has ",
                                             format_.streams.size(), " stream(s), not ",
                                             stream_index + 1));
  }
  auto g = CheckShape(info.shape);
  if (!g.ok()) return Fail(info, StrCat(g.status().message()));
  if (row_begin > row_end || row_end > g->rows) {
    return absl::OutOfRangeError(StrCat("tensor '", info.name, "': rows ", row_begin, "..", row_end,
                                        " outside 0..", g->rows));
  }
  const uint32_t B = format_.block_elems;
  const uint64_t e0 = row_begin * g->row_elements, e1 = row_end * g->row_elements;
  const uint64_t bpb = format_.streams[stream_index].bytes_per_block;
  return std::make_pair(e0 / B * bpb, (e1 + B - 1) / B * bpb);
}

absl::StatusOr<uint64_t> BlockCodec::EncodedSize(DType dtype, absl::Span<const uint64_t> shape,
                                                 const CodecParams& params) const {
  BP_RETURN_IF_ERROR(CanEncode(dtype, shape, params));
  return CheckShape(shape)->blocks * bytes_per_block_total_;
}

std::vector<int> BlockCodec::SliceableAxes(absl::Span<const uint64_t> shape,
                                           const CodecParams& /*params*/) const {
  // Every axis but the innermost cuts whole blocks.
  std::vector<int> axes;
  for (size_t i = 0; i + 1 < shape.size(); ++i) axes.push_back(static_cast<int>(i));
  return axes;
}

std::optional<StoredLayout> BlockCodec::Layout(DType /*dtype*/, const CodecParams& /*params*/) const {
  if (format_.block_elems == 0) return std::nullopt;
  StoredLayout layout;
  layout.block_elems = format_.block_elems;
  for (const auto& s : format_.streams) layout.cell_bytes.push_back(s.bytes_per_block);
  return layout;
}

CodecTraits BlockCodec::traits() const {
  CodecTraits t;
  t.quantizer = true;
  t.takes_1d = false;
  return t;
}

}  // namespace boltpack
