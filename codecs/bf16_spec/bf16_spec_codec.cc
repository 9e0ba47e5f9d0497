#include "codecs/bf16_spec/bf16_spec_codec.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "boltpack/codec_registry.h"
#include "codecs/bf16_exp/code_cache.h"
#include "codecs/bf16_exp/exponent_code.h"
#include "codecs/bf16_spec/split_kernel.h"
#include "codecs/codec_params.h"
#include "codecs/float_convert.h"
#include "codecs/raw_range.h"
#include "common/checked_math.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "common/limits.h"

namespace boltpack {
namespace {

using bf16_exp::ExponentCode;
using bf16_spec::BitBytes;

constexpr std::string_view kId = "bf16-spec";
constexpr std::string_view kSpecRole = "speculation";
constexpr std::string_view kVerifRole = "verification";
constexpr std::string_view kKeep = "keep";
constexpr std::string_view kMbits = "mbits";
constexpr std::string_view kKeptPerRow = "kept_per_row";
constexpr std::string_view kScoredBy = "scored_by";
constexpr std::string_view kKeptLengths = "kept_exp_code_lengths";
constexpr std::string_view kPrunedLengths = "pruned_exp_code_lengths";
constexpr double kDefaultKeep = 0.5;
constexpr int kDefaultMbits = 3;

std::optional<double> AsNumber(const MetaValue& v) {
  switch (v.type) {
    case ValueType::kFloat64: return v.f64;
    case ValueType::kFloat32: return v.f32;
    case ValueType::kUint8:
    case ValueType::kUint16:
    case ValueType::kUint32:
    case ValueType::kUint64: return static_cast<double>(v.u);
    case ValueType::kInt8:
    case ValueType::kInt16:
    case ValueType::kInt32:
    case ValueType::kInt64: return static_cast<double>(v.i);
    default: return std::nullopt;
  }
}

std::optional<int64_t> AsInteger(const MetaValue& v) {
  if (IsUnsignedInt(v.type)) return v.u > (uint64_t{1} << 62) ? std::nullopt : std::optional<int64_t>(static_cast<int64_t>(v.u));
  if (IsSignedInt(v.type)) return v.i;
  return std::nullopt;
}

// Row geometry: rows/row_elems as container.md §6.6; pruning works on
// "prune rows" of `cols` elements (the innermost dimension for rank >= 2,
// single elements for rank <= 1).
struct Geometry {
  uint64_t n = 0;
  uint64_t rows = 0;
  uint64_t row_elems = 0;
  uint64_t cols = 0;
  uint64_t k = 0;  // kept per prune row
  int mbits = 0;

  uint64_t PruneRows(uint64_t m) const { return cols == 0 ? 0 : m / cols; }
  // Every value kept: the bitmap would be all ones and is not stored.
  bool AllKept() const { return k == cols; }
  uint64_t Kept(uint64_t m) const { return PruneRows(m) * k; }
  // Fixed section sizes of a segment of m elements.
  uint64_t BitmapBytes(uint64_t m) const { return AllKept() ? 0 : BitBytes(m); }
  uint64_t FieldBytes(uint64_t m) const { return BitBytes(Kept(m) * static_cast<uint64_t>(1 + mbits)); }
  uint64_t LowBytes(uint64_t m) const { return BitBytes(Kept(m) * static_cast<uint64_t>(7 - mbits)); }
  uint64_t PrunedBytes(uint64_t m) const { return m - Kept(m); }
  uint64_t SpecFixed(uint64_t m) const { return BitmapBytes(m) + FieldBytes(m); }
  uint64_t VerifFixed(uint64_t m) const { return LowBytes(m) + PrunedBytes(m); }
};

Geometry MakeGeometry(absl::Span<const uint64_t> shape, uint64_t n) {
  Geometry g;
  g.n = n;
  g.rows = shape.empty() ? 1 : shape[0];
  g.row_elems = g.rows == 0 ? 0 : n / g.rows;
  g.cols = shape.size() >= 2 ? shape.back() : 1;
  return g;
}

uint64_t KeptPerRow(double keep, uint64_t cols) {
  if (cols == 0) return 0;
  const double x = std::ceil(keep * static_cast<double>(cols));
  return std::clamp<uint64_t>(static_cast<uint64_t>(x), 1, cols);
}

struct Piece {
  uint64_t first_row = 0;
  uint64_t row_count = 0;
  uint64_t spec_offset = 0;
  uint64_t spec_length = 0;
  uint64_t verif_offset = 0;
  uint64_t verif_length = 0;
};

size_t OutSize(OutputType out) { return out == OutputType::kF32 ? 4 : 2; }

void EmitBf16(const uint16_t* v, size_t n, OutputType out, uint8_t* dst) {
  if (n == 0) return;
  switch (out) {
    case OutputType::kBF16:
    case OutputType::kNative: std::memcpy(dst, v, n * 2); break;
    case OutputType::kF32: ConvertBF16ToF32(v, dst, n); break;
    case OutputType::kF16: ConvertBF16ToF16(v, dst, n); break;
  }
}

// Scratch for decoding one segment (reused across segments of a thread).
struct Scratch {
  std::vector<uint8_t> kexp, kfield, klow, pexp;
  std::vector<uint16_t> kv, pv, out;
};

absl::Status Corrupt(std::string_view what) { return absl::DataLossError(StrCat("bf16-spec segment: ", what)); }

// Checks the keep bitmap of a segment of m elements: exactly k set bits per
// prune row and zero padding.
absl::Status CheckBitmap(const Geometry& g, const uint8_t* bitmap, uint64_t m) {
  const uint64_t pr = g.PruneRows(m);
  if (g.k == g.cols || g.k == 0) {
    if (bf16_spec::CountBits(bitmap, 0, m) != g.Kept(m)) return Corrupt("keep bitmap does not keep exactly kept_per_row values per row");
  } else {
    for (uint64_t r = 0; r < pr; ++r) {
      if (bf16_spec::CountBits(bitmap, r * g.cols, (r + 1) * g.cols) != g.k) {
        return Corrupt(StrCat("keep bitmap row ", r, " does not keep exactly ", g.k, " values"));
      }
    }
  }
  if ((m & 7) != 0 && (bitmap[m >> 3] >> (m & 7)) != 0) return Corrupt("keep bitmap padding bits are not zero");
  return absl::OkStatus();
}

absl::Status CheckPadding(const uint8_t* p, uint64_t bytes, uint64_t bits, std::string_view what) {
  if ((bits & 7) != 0 && (p[bytes - 1] >> (bits & 7)) != 0) return Corrupt(StrCat(what, " padding bits are not zero"));
  return absl::OkStatus();
}

void Merge(const Geometry& g, const uint8_t* bitmap, uint64_t m, const uint16_t* kv, const uint16_t* pv,
           uint16_t* out) {
  if (g.AllKept()) {
    if (m > 0) std::memcpy(out, kv, static_cast<size_t>(m) * 2);
  } else {
    bf16_spec::MergeByBitmap(bitmap, m, kv, pv, out);
  }
}

// Decodes one segment (a chunk) of m elements into s.out[0..m).
absl::Status DecodeSegment(const Geometry& g, uint64_t m, const ExponentCode& kcode, const ExponentCode& pcode,
                           absl::Span<const uint8_t> spec, absl::Span<const uint8_t> verif, bool full, Scratch& s) {
  const uint64_t K = g.Kept(m);
  const uint64_t B = g.BitmapBytes(m), F = g.FieldBytes(m);
  if (spec.size() < B + F) return Corrupt("speculation bytes shorter than bitmap and fields");
  const uint8_t* bitmap = spec.data();
  if (!g.AllKept()) BP_RETURN_IF_ERROR(CheckBitmap(g, bitmap, m));
  const int mb = g.mbits;
  const int fw = 1 + mb, lw = 7 - mb;
  if (F > 0) BP_RETURN_IF_ERROR(CheckPadding(spec.data() + B, F, K * fw, "field section"));
  s.kexp.resize(static_cast<size_t>(K) + 8);
  s.kfield.resize(static_cast<size_t>(K) + 8);
  s.kv.resize(static_cast<size_t>(K) + 1);
  s.out.resize(static_cast<size_t>(m));
  BP_RETURN_IF_ERROR(bf16_exp::DecodeChunk(kcode, spec.subspan(static_cast<size_t>(B + F)), K, s.kexp.data()));
  bf16_spec::UnpackFields(spec.data() + B, static_cast<size_t>(F), 0, K, fw, s.kfield.data());
  const uint8_t* ke = s.kexp.data();
  const uint8_t* kf = s.kfield.data();
  uint16_t* kv = s.kv.data();
  if (!full) {
    for (uint64_t j = 0; j < K; ++j) {
      kv[j] = bf16_spec::DraftValue(kf[j] >> mb, ke[j], kf[j] & ((1u << mb) - 1), mb);
    }
    Merge(g, bitmap, m, kv, nullptr, s.out.data());
    return absl::OkStatus();
  }
  const uint64_t L = g.LowBytes(m), P = g.PrunedBytes(m);
  if (verif.size() < L + P) return Corrupt("verification bytes shorter than low mantissa and pruned sections");
  if (L > 0) BP_RETURN_IF_ERROR(CheckPadding(verif.data(), L, K * lw, "low mantissa section"));
  s.klow.resize(static_cast<size_t>(K) + 8);
  s.pexp.resize(static_cast<size_t>(P) + 8);
  s.pv.resize(static_cast<size_t>(P) + 1);
  BP_RETURN_IF_ERROR(bf16_exp::DecodeChunk(pcode, verif.subspan(static_cast<size_t>(L + P)), P, s.pexp.data()));
  bf16_spec::UnpackFields(verif.data(), static_cast<size_t>(L), 0, K, lw, s.klow.data());
  const uint8_t* kl = s.klow.data();
  for (uint64_t j = 0; j < K; ++j) {
    kv[j] = static_cast<uint16_t>((uint32_t{kf[j]} >> mb) << 15 | uint32_t{ke[j]} << 7 |
                                  (uint32_t{kf[j]} & ((1u << mb) - 1)) << lw | kl[j]);
  }
  const uint8_t* psm = verif.data() + L;
  const uint8_t* pe = s.pexp.data();
  uint16_t* pv = s.pv.data();
  for (uint64_t j = 0; j < P; ++j) {
    const uint32_t b = psm[j];
    pv[j] = static_cast<uint16_t>((b & 0x80u) << 8 | uint32_t{pe[j]} << 7 | (b & 0x7fu));
  }
  Merge(g, bitmap, m, kv, pv, s.out.data());
  return absl::OkStatus();
}

// The encoder's output for one segment before the exponent codes exist.
struct SegmentSplit {
  std::vector<uint8_t> spec;   // bitmap + fields
  std::vector<uint8_t> verif;  // low bits + pruned sm bytes
  std::vector<uint8_t> kexp, pexp;
  std::array<uint64_t, 256> khist{}, phist{};
};

class Bf16SpecCodec : public Codec {
 public:
  std::string_view id() const override { return kId; }
  std::string_view description() const override {
    return "Cassandra draft/verify split of bf16: per-row Wanda/magnitude pruning to `keep`, kept values' sign, "
           "Huffman exponent and top `mbits` mantissa bits (view draft); pruned values and low mantissa bits "
           "(view full, bit-exact)";
  }

  absl::Status CanEncode(DType dtype, absl::Span<const uint64_t> shape, const CodecParams& params) const override {
    BP_RETURN_IF_ERROR(ParseEncoderParams(params).status());
    if (dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kF64) {
      return Err(StrCat("splits bf16 bits exactly; a ", DTypeName(dtype),
                        " source would first have to be rounded to bf16, which is lossy: convert the tensor to bf16 "
                        "first (e.g. convert with --codec 'PATTERN=bf16' to a .safetensors file, which stores BF16, "
                        "then bf16-spec on that file)"));
    }
    if (dtype != DType::kBF16) return Err(StrCat("encodes BF16 tensors, not ", DTypeName(dtype)));
    if (shape.size() > format::kMaxDims) return Err(StrCat(shape.size(), " dimensions, at most ", format::kMaxDims));
    auto n = CheckedProduct(shape);
    if (!n || *n >= format::kMaxElements) return Err("element count reaches the limit of 2^56");
    return absl::OkStatus();
  }

  absl::StatusOr<EncodedTensor> Encode(const TensorSource& source, const CodecParams& params,
                                       const ExecOptions& exec) const override {
    if (absl::Status st = CanEncode(source.dtype, source.shape, params); !st.ok()) {
      return absl::Status(st.code(), StrCat("tensor '", source.name, "': ", st.message()));
    }
    const auto [keep, mbits] = *ParseEncoderParams(params);
    const uint64_t n = *CheckedProduct(source.shape);
    if (source.bytes.size() != n * 2) {
      return absl::InvalidArgumentError(StrCat("tensor '", source.name, "': ", source.bytes.size(),
                                               " source bytes, expected ", n, " x 2"));
    }
    Geometry g = MakeGeometry(source.shape, n);
    g.mbits = mbits;
    g.k = KeptPerRow(keep, g.cols);
    // Importance: one weight per column, or per column of each expert (3-D).
    std::vector<float> sq;
    uint64_t rows_per_expert = 0;  // 0: one vector for all prune rows
    const bool use_importance = !source.importance.empty() && source.shape.size() >= 2;
    if (use_importance) {
      const uint64_t cols = g.cols;
      if (source.importance.size() == cols) {
        rows_per_expert = 0;
      } else if (source.shape.size() == 3 && source.importance.size() == source.shape[0] * cols) {
        rows_per_expert = source.shape[1];
      } else {
        return absl::InvalidArgumentError(StrCat("tensor '", source.name, "': codec 'bf16-spec': ",
                                                 source.importance.size(), " importance weights, expected ", cols,
                                                 " (one per column)"));
      }
      sq.resize(source.importance.size());
      for (size_t i = 0; i < sq.size(); ++i) {
        const float w = source.importance[i];
        if (!(w >= 0) || !std::isfinite(w)) {
          return absl::InvalidArgumentError(StrCat("tensor '", source.name, "': importance weight ", i, " is ", w,
                                                   " (must be finite and >= 0)"));
        }
        sq[i] = std::sqrt(w);
      }
    }
    const std::vector<std::pair<uint64_t, uint64_t>> pieces = PiecesFor(g);
    std::vector<SegmentSplit> seg(pieces.size());
    BP_RETURN_IF_ERROR(ParallelFor(pieces.size(), exec.threads, 1, [&](uint64_t a, uint64_t b) {
      std::vector<uint16_t> v, kv, pv;
      for (uint64_t p = a; p < b; ++p) {
        const uint64_t e0 = pieces[p].first * g.row_elems;
        const uint64_t m = pieces[p].second * g.row_elems;
        v.resize(static_cast<size_t>(m));
        if (m > 0) std::memcpy(v.data(), source.bytes.data() + e0 * 2, static_cast<size_t>(m) * 2);
        SplitSegment(g, v.data(), m, e0, use_importance ? sq.data() : nullptr, rows_per_expert, &kv, &pv, &seg[p]);
      }
      return absl::OkStatus();
    }));
    std::array<uint64_t, 256> kfreq{}, pfreq{};
    for (const auto& sgm : seg) {
      for (int s = 0; s < 256; ++s) {
        kfreq[s] += sgm.khist[s];
        pfreq[s] += sgm.phist[s];
      }
    }
    const auto klen = bf16_exp::HuffmanLengths(kfreq, bf16_exp::kMaxHuffmanBits);
    const auto plen = bf16_exp::HuffmanLengths(pfreq, bf16_exp::kMaxHuffmanBits);
    // Encoding needs no decoder tables.
    auto kcode = ExponentCode::Huffman(klen, ExponentCode::Tables::kSingle);
    auto pcode = ExponentCode::Huffman(plen, ExponentCode::Tables::kSingle);
    if (!kcode.ok() || !pcode.ok()) return absl::InternalError(StrCat("tensor '", source.name, "': exponent code"));
    BP_RETURN_IF_ERROR(ParallelFor(pieces.size(), exec.threads, 1, [&](uint64_t a, uint64_t b) {
      for (uint64_t p = a; p < b; ++p) {
        SegmentSplit& sgm = seg[p];
        bf16_exp::EncodeChunk(*kcode, sgm.kexp.data(), sgm.kexp.size(), &sgm.spec);
        bf16_exp::EncodeChunk(*pcode, sgm.pexp.data(), sgm.pexp.size(), &sgm.verif);
        sgm.kexp = {};
        sgm.pexp = {};
      }
      return absl::OkStatus();
    }));
    EncodedTensor enc;
    enc.params.emplace_back(std::string(kKeep), MetaValue::Float64(keep));
    enc.params.emplace_back(std::string(kMbits), MetaValue::Uint(ValueType::kUint32, static_cast<uint64_t>(mbits)));
    enc.params.emplace_back(std::string(kKeptPerRow), MetaValue::Uint(ValueType::kUint64, g.k));
    enc.params.emplace_back(std::string(kScoredBy), MetaValue::String(use_importance ? "wanda" : "magnitude"));
    enc.params.emplace_back(std::string(kKeptLengths), MetaValue::String(ExponentCode::LengthsToHex(klen)));
    enc.params.emplace_back(std::string(kPrunedLengths), MetaValue::String(ExponentCode::LengthsToHex(plen)));
    EncodedStream sp{std::string(kSpecRole), {}, {}, false, {}};
    EncodedStream ve{std::string(kVerifRole), {}, {}, false, {"full"}};
    size_t st = 0, vt = 0;
    for (const auto& sgm : seg) {
      st += sgm.spec.size();
      vt += sgm.verif.size();
    }
    sp.bytes.reserve(st);
    ve.bytes.reserve(vt);
    for (size_t p = 0; p < seg.size(); ++p) {
      const uint64_t so = sp.bytes.size(), vo = ve.bytes.size();
      sp.bytes.insert(sp.bytes.end(), seg[p].spec.begin(), seg[p].spec.end());
      ve.bytes.insert(ve.bytes.end(), seg[p].verif.begin(), seg[p].verif.end());
      if (seg.size() > 1) {
        const auto [fr, rc] = pieces[p];
        sp.chunks.push_back(EncodedChunk{so, seg[p].spec.size(), fr, rc});
        ve.chunks.push_back(EncodedChunk{vo, seg[p].verif.size(), fr, rc});
      }
      seg[p] = {};
    }
    enc.streams.push_back(std::move(sp));
    enc.streams.push_back(std::move(ve));
    return enc;
  }

  // [C-10.3.1] [S-1.1] [S-1.2] [S-4.4] [S-4.8] [S-6.1]
  absl::Status ValidateRecord(const TensorInfo& info) const override {
    return ParseRecord(info, ForDecoding::kNo).status();
  }

  bool CanDecodeTo(const TensorInfo& info, OutputType out) const override {
    (void)out;
    return info.dtype == DType::kBF16;
  }

  absl::StatusOr<uint64_t> DecodedBytes(const TensorInfo& info, OutputType out) const override {
    if (!CanDecodeTo(info, out)) return Fail(info, "cannot decode");
    auto n = CheckedProduct(info.shape);
    if (!n || *n >= format::kMaxElements) return absl::OutOfRangeError("decoded size overflows");
    return *n * OutSize(out);
  }

  absl::Status Decode(const DecodeInput& input, OutputType out, absl::Span<uint8_t> dst,
                      const ExecOptions& exec) const override {
    if (input.info == nullptr) return absl::InvalidArgumentError("decode input has no record");
    const TensorInfo& info = *input.info;
    BP_ASSIGN_OR_RETURN(const Parsed rec, ParseRecord(info, ForDecoding::kYes));
    BP_ASSIGN_OR_RETURN(const bool full, FullView(info, input.view));
    if (input.streams.size() != 2) return Fail(info, "decodes two streams");
    if (input.streams[0].size() != info.streams[0].raw_length ||
        (full && input.streams[1].size() != info.streams[1].raw_length)) {
      return Fail(info, "stream sizes differ from the record");
    }
    const Geometry& g = rec.g;
    if (dst.size() < g.n * OutSize(out)) return Fail(info, StrCat("output buffer of ", dst.size(), " bytes is too small"));
    return ParallelFor(rec.pieces.size(), exec.threads, 1, [&](uint64_t a, uint64_t b) -> absl::Status {
      Scratch s;
      for (uint64_t p = a; p < b; ++p) {
        const Piece& pc = rec.pieces[p];
        const uint64_t m = pc.row_count * g.row_elems;
        absl::Status st = DecodeSegment(
            g, m, *rec.kcode, *rec.pcode, input.streams[0].subspan(pc.spec_offset, pc.spec_length),
            full ? input.streams[1].subspan(pc.verif_offset, pc.verif_length) : absl::Span<const uint8_t>(), full, s);
        if (!st.ok()) return absl::DataLossError(StrCat("tensor '", info.name, "' chunk ", p, ": ", st.message()));
        EmitBf16(s.out.data(), static_cast<size_t>(m), out, dst.data() + pc.first_row * g.row_elems * OutSize(out));
      }
      return absl::OkStatus();
    });
  }

  absl::Status DecodeRows(const DecodeInput& input, uint64_t row_begin, uint64_t row_end, OutputType out,
                          absl::Span<uint8_t> dst) const override {
    if (input.info == nullptr) return absl::InvalidArgumentError("decode input has no record");
    const TensorInfo& info = *input.info;
    BP_ASSIGN_OR_RETURN(const Parsed rec, ParseRecord(info, ForDecoding::kYes));
    BP_ASSIGN_OR_RETURN(const bool full, FullView(info, input.view));
    if (input.streams.size() != 2) return Fail(info, "decodes two streams");
    const Geometry& g = rec.g;
    if (row_begin > row_end || row_end > g.rows) {
      return absl::OutOfRangeError(StrCat("tensor '", info.name, "': rows ", row_begin, "..", row_end, " outside 0..", g.rows));
    }
    if (row_begin == row_end) return absl::OkStatus();
    if (dst.size() < (row_end - row_begin) * g.row_elems * OutSize(out)) {
      return Fail(info, StrCat("output buffer of ", dst.size(), " bytes is too small for rows ", row_begin, "..", row_end));
    }
    Scratch s;
    for (size_t p = 0; p < rec.pieces.size(); ++p) {
      const Piece& pc = rec.pieces[p];
      const uint64_t lo = std::max(row_begin, pc.first_row);
      const uint64_t hi = std::min(row_end, pc.first_row + pc.row_count);
      if (lo >= hi) continue;
      BP_ASSIGN_OR_RETURN(auto sp, RawBytesInInput(info, input.streams, input.raw_base, 0, pc.spec_offset,
                                                   pc.spec_offset + pc.spec_length));
      absl::Span<const uint8_t> ve;
      if (full) {
        BP_ASSIGN_OR_RETURN(ve, RawBytesInInput(info, input.streams, input.raw_base, 1, pc.verif_offset,
                                                pc.verif_offset + pc.verif_length));
      }
      const uint64_t m = pc.row_count * g.row_elems;
      absl::Status st = DecodeSegment(g, m, *rec.kcode, *rec.pcode, sp, ve, full, s);
      if (!st.ok()) return absl::DataLossError(StrCat("tensor '", info.name, "' chunk ", p, ": ", st.message()));
      EmitBf16(s.out.data() + (lo - pc.first_row) * g.row_elems, static_cast<size_t>((hi - lo) * g.row_elems), out,
               dst.data() + (lo - row_begin) * g.row_elems * OutSize(out));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::pair<uint64_t, uint64_t>> RowRangeBytes(const TensorInfo& info, size_t stream_index,
                                                              uint64_t row_begin, uint64_t row_end) const override {
    if (stream_index > 1) return Fail(info, StrCat("has two streams, not ", stream_index + 1));
    BP_ASSIGN_OR_RETURN(const Parsed rec, ParseRecord(info, ForDecoding::kNo));
    if (row_begin > row_end || row_end > rec.g.rows) {
      return absl::OutOfRangeError(StrCat("tensor '", info.name, "': rows ", row_begin, "..", row_end, " outside 0..", rec.g.rows));
    }
    if (row_begin == row_end) return std::make_pair(uint64_t{0}, uint64_t{0});
    uint64_t lo = ~uint64_t{0}, hi = 0;
    for (const Piece& pc : rec.pieces) {
      if (pc.first_row + pc.row_count <= row_begin || pc.first_row >= row_end) continue;
      const uint64_t off = stream_index == 0 ? pc.spec_offset : pc.verif_offset;
      const uint64_t len = stream_index == 0 ? pc.spec_length : pc.verif_length;
      lo = std::min(lo, off);
      hi = std::max(hi, off + len);
    }
    return std::make_pair(lo, hi);
  }

  absl::StatusOr<uint64_t> EncodedSize(DType, absl::Span<const uint64_t>, const CodecParams&) const override {
    return absl::UnimplementedError("codec 'bf16-spec': the stored size depends on the data");
  }

  std::vector<int> SliceableAxes(absl::Span<const uint64_t>, const CodecParams&) const override { return {}; }

  // GGUF has no such type: exported as BF16 (the full view's values, exact).
  GgmlMapping Ggml(DType /*dtype*/, const CodecParams& /*params*/) const override {
    return GgmlMapping{30, GgmlExport::kDecodedBf16};
  }
  CodecTraits traits() const override {
    CodecTraits t;
    t.exponent_coded = true;
    return t;
  }

  // keep and mbits are the user's; the rest the encoder writes (ParseRecord
  // checks them in a stored record).
  std::vector<CodecParamSpec> ParamSpecs() const override {
    CodecParamSpec keep;
    keep.name = kKeep;
    keep.kind = ParamKind::kNumber;
    keep.help = "fraction of each row kept for the draft view";
    keep.min = 0.0;
    keep.min_exclusive = true;
    keep.max = 1.0;
    keep.default_text = "0.5";
    CodecParamSpec mbits;
    mbits.name = kMbits;
    mbits.kind = ParamKind::kInteger;
    mbits.help = "top mantissa bits of kept values in the draft view";
    mbits.min = 0;
    mbits.max = bf16_spec::kMaxMbits;
    mbits.default_text = "3";
    CodecParamSpec kept;
    kept.name = kKeptPerRow;
    kept.kind = ParamKind::kInteger;
    kept.help = "values kept per row";
    kept.min = 0;
    kept.settable = false;
    CodecParamSpec scored;
    scored.name = kScoredBy;
    scored.kind = ParamKind::kChoice;
    scored.choices = {"wanda", "magnitude"};
    scored.help = "what ranked the values: Wanda with --imatrix, else magnitude";
    scored.settable = false;
    CodecParamSpec klen;
    klen.name = kKeptLengths;
    klen.kind = ParamKind::kText;
    klen.help = "the kept exponents' Huffman code lengths, hex";
    klen.settable = false;
    CodecParamSpec plen = klen;
    plen.name = kPrunedLengths;
    plen.help = "the pruned exponents' Huffman code lengths, hex";
    return {keep, mbits, kept, scored, klen, plen};
  }

 private:
  struct Parsed {
    Geometry g;
    bf16_exp::SharedCode kcode;
    bf16_exp::SharedCode pcode;
    std::vector<Piece> pieces;
  };

  absl::Status Err(std::string_view what) const { return absl::InvalidArgumentError(StrCat("codec 'bf16-spec': ", what)); }
  static absl::Status Fail(const TensorInfo& info, std::string_view what) {
    return absl::InvalidArgumentError(StrCat("tensor '", info.name, "' (codec 'bf16-spec'): ", what));
  }

  static absl::StatusOr<bool> FullView(const TensorInfo& info, std::string_view view) {
    if (view.empty() || view == "full") return true;
    if (view == "draft") return false;
    return Fail(info, StrCat("unknown view '", view, "' (this codec has views \"draft\" and \"full\")"));
  }

  absl::StatusOr<std::pair<double, int>> ParseEncoderParams(const CodecParams& params) const {
    // Keys, kinds and ranges as ParamSpecs declares them.
    BP_RETURN_IF_ERROR(CheckEncoderParams(*this, params));
    double keep = kDefaultKeep;
    int mbits = kDefaultMbits;
    for (const auto& [k, v] : params) {
      if (k == kKeep) keep = *AsNumber(v);
      if (k == kMbits) mbits = static_cast<int>(*AsInteger(v));
    }
    return std::make_pair(keep, mbits);
  }

  // Reference chunking: one piece for <= 2^18 elements or one row; else
  // max(1, floor(2^18 / row_elems)) rows per piece.
  static std::vector<std::pair<uint64_t, uint64_t>> PiecesFor(const Geometry& g) {
    std::vector<std::pair<uint64_t, uint64_t>> pieces;
    if (g.n > kBf16SpecChunkElements && g.rows > 1) {
      const uint64_t per = std::max<uint64_t>(1, kBf16SpecChunkElements / g.row_elems);
      for (uint64_t r = 0; r < g.rows; r += per) pieces.push_back({r, std::min(per, g.rows - r)});
    } else {
      pieces.push_back({0, g.rows});
    }
    return pieces;
  }

  static void SplitSegment(const Geometry& g, const uint16_t* v, uint64_t m, uint64_t e0, const float* sq,
                           uint64_t rows_per_expert, std::vector<uint16_t>* kvb, std::vector<uint16_t>* pvb,
                           SegmentSplit* out) {
    const uint64_t K = g.Kept(m), P = m - K;
    const uint64_t B = g.BitmapBytes(m), F = g.FieldBytes(m), L = g.LowBytes(m);
    out->spec.assign(static_cast<size_t>(B + F + 4), 0);
    out->verif.assign(static_cast<size_t>(L + P + 4), 0);
    uint8_t* bitmap = out->spec.data();
    const uint64_t pr = g.PruneRows(m);
    for (uint64_t r = 0; r < pr && !g.AllKept(); ++r) {
      const uint16_t* row = v + r * g.cols;
      if (sq == nullptr) {
        bf16_spec::SelectTopKBf16(row, g.cols, g.k, bitmap, r * g.cols);
      } else {
        const uint64_t global_row = e0 / g.cols + r;
        const float* w = sq + (rows_per_expert == 0 ? 0 : (global_row / rows_per_expert) * g.cols);
        bf16_spec::SelectTopK<31>(
            g.cols, g.k,
            [row, w](uint64_t i) {
              const float s = BF16ToF32(static_cast<uint16_t>(row[i] & 0x7fffu)) * w[i];
              return FloatBits(s) & 0x7fffffffu;
            },
            bitmap, r * g.cols);
      }
    }
    kvb->resize(static_cast<size_t>(K) + 1);
    pvb->resize(static_cast<size_t>(P) + 1);
    if (g.AllKept()) {
      if (m > 0) std::memcpy(kvb->data(), v, static_cast<size_t>(m) * 2);
    } else {
      bf16_spec::SplitByBitmap(v, m, bitmap, kvb->data(), pvb->data());
    }
    const int mb = g.mbits, lw = 7 - mb;
    out->kexp.resize(static_cast<size_t>(K));
    out->pexp.resize(static_cast<size_t>(P));
    bf16_spec::FieldWriter fw(out->spec.data() + B), lwr(out->verif.data());
    const uint16_t* kv = kvb->data();
    for (uint64_t j = 0; j < K; ++j) {
      const uint32_t x = kv[j];
      const uint32_t e = (x >> 7) & 0xffu;
      out->kexp[j] = static_cast<uint8_t>(e);
      ++out->khist[e];
      fw.Put((x >> 15) << mb | (x & 0x7fu) >> lw, 1 + mb);
      lwr.Put(x & ((1u << lw) - 1), lw);
    }
    fw.Finish();
    lwr.Finish();
    const uint16_t* pv = pvb->data();
    uint8_t* psm = out->verif.data() + L;
    for (uint64_t j = 0; j < P; ++j) {
      const uint32_t x = pv[j];
      const uint32_t e = (x >> 7) & 0xffu;
      out->pexp[j] = static_cast<uint8_t>(e);
      ++out->phist[e];
      psm[j] = static_cast<uint8_t>(((x >> 8) & 0x80u) | (x & 0x7fu));
    }
    out->spec.resize(static_cast<size_t>(B + F));
    out->verif.resize(static_cast<size_t>(L + P));
  }

  // Whether the parsed exponent codes will decode: only then are their
  // multi-symbol tables worth building. Validation (every tensor, when a
  // file is opened) and byte-range queries check the codes alone.
  enum class ForDecoding { kNo, kYes };

  absl::StatusOr<Parsed> ParseRecord(const TensorInfo& info, ForDecoding decoding) const {
    if (info.codec_id != kId) return Fail(info, StrCat("record names codec '", info.codec_id, "'"));
    if (info.dtype != DType::kBF16) return Fail(info, StrCat("dtype ", DTypeName(info.dtype), " is not BF16"));
    if (info.shape.size() > format::kMaxDims) return Fail(info, "too many dimensions");
    auto n = CheckedProduct(info.shape);
    if (!n || *n >= format::kMaxElements) return Fail(info, "element count reaches the limit of 2^56");
    Parsed rec;
    Geometry& g = rec.g;
    g = MakeGeometry(info.shape, *n);
    // Parameters: each exactly once, with its type.
    const MetaValue* pv[6] = {};
    const std::string_view keys[6] = {kKeep, kMbits, kKeptPerRow, kScoredBy, kKeptLengths, kPrunedLengths};
    const ValueType types[6] = {ValueType::kFloat64, ValueType::kUint32, ValueType::kUint64,
                                ValueType::kString,  ValueType::kString, ValueType::kString};
    for (const auto& [k, v] : info.codec_params) {
      int idx = -1;
      for (int i = 0; i < 6; ++i) {
        if (k == keys[i]) idx = i;
      }
      if (idx < 0) return Fail(info, StrCat("unknown parameter '", k, "'"));
      if (pv[idx] != nullptr) return Fail(info, StrCat("parameter '", k, "' appears twice"));
      if (v.type != types[idx]) return Fail(info, StrCat("parameter '", k, "' has type ", ValueTypeName(v.type)));
      pv[idx] = &v;
    }
    for (int i = 0; i < 6; ++i) {
      if (pv[i] == nullptr) return Fail(info, StrCat("missing parameter '", keys[i], "'"));
    }
    if (!(pv[0]->f64 > 0 && pv[0]->f64 <= 1)) return Fail(info, "keep is not in (0, 1]");
    if (pv[1]->u > static_cast<uint64_t>(bf16_spec::kMaxMbits)) return Fail(info, "mbits exceeds 7");
    g.mbits = static_cast<int>(pv[1]->u);
    if (pv[2]->u > g.cols) return Fail(info, StrCat("kept_per_row ", pv[2]->u, " exceeds the row length ", g.cols));
    g.k = pv[2]->u;
    if (pv[3]->s != "wanda" && pv[3]->s != "magnitude") return Fail(info, "scored_by is not \"wanda\" or \"magnitude\"");
    for (int t = 0; t < 2; ++t) {
      const uint64_t symbols = t == 0 ? g.Kept(g.n) : g.n - g.Kept(g.n);
      // Built once per distinct lengths parameter (code_cache.h).
      auto code = bf16_exp::CachedCode(ExponentCode::Kind::kHuffman, pv[4 + t]->s,
                                       decoding == ForDecoding::kYes ? bf16_exp::TablesForValues(symbols)
                                                                     : ExponentCode::Tables::kSingle);
      if (!code.ok()) return Fail(info, StrCat(keys[4 + t], ": ", code.status().message()));
      bool any = false;
      for (int s = 0; s < 256; ++s) any |= (*code)->length(s) > 0;
      if (symbols > 0 && !any) return Fail(info, StrCat(keys[4 + t], " codes no exponent"));
      (t == 0 ? rec.kcode : rec.pcode) = *std::move(code);
    }
    if (info.streams.size() != 2 || info.streams[0].role != kSpecRole || info.streams[1].role != kVerifRole) {
      return Fail(info, "expected two streams, \"speculation\" then \"verification\"");
    }
    const StreamInfo& sp = info.streams[0];
    const StreamInfo& ve = info.streams[1];
    if (!sp.views.empty()) return Fail(info, "the speculation stream must be read by every view");
    if (!(ve.views.empty() || (ve.views.size() == 1 && ve.views[0] == "full"))) {
      return Fail(info, "the verification stream's views must be {\"full\"}");
    }
    if (sp.chunks.size() != ve.chunks.size()) return Fail(info, "streams have different chunk counts");
    auto check_piece = [&](const Piece& pc, size_t c) -> absl::Status {
      const uint64_t m = pc.row_count * g.row_elems;
      if (pc.spec_length < g.SpecFixed(m)) {
        return Fail(info, StrCat("speculation chunk ", c, " holds ", pc.spec_length, " bytes, fewer than its ",
                                 g.SpecFixed(m), " bytes of bitmap and fields"));
      }
      if (pc.verif_length < g.VerifFixed(m)) {
        return Fail(info, StrCat("verification chunk ", c, " holds ", pc.verif_length, " bytes, fewer than its ",
                                 g.VerifFixed(m), " bytes of low mantissas and pruned values"));
      }
      return absl::OkStatus();
    };
    if (sp.chunks.empty()) {
      rec.pieces.push_back(Piece{0, g.rows, 0, sp.raw_length, 0, ve.raw_length});
      BP_RETURN_IF_ERROR(check_piece(rec.pieces.back(), 0));
      return rec;
    }
    uint64_t next_row = 0, next_s = 0, next_v = 0;
    for (size_t c = 0; c < sp.chunks.size(); ++c) {
      const ChunkInfo& a = sp.chunks[c];
      const ChunkInfo& b = ve.chunks[c];
      if (a.first_row != next_row || b.first_row != a.first_row || b.row_count != a.row_count ||
          a.row_count > g.rows - next_row) {
        return Fail(info, StrCat("chunk ", c, " rows do not tile the tensor"));
      }
      if (a.raw_offset != next_s || a.raw_length > sp.raw_length - next_s || b.raw_offset != next_v ||
          b.raw_length > ve.raw_length - next_v) {
        return Fail(info, StrCat("chunk ", c, " does not tile its stream"));
      }
      rec.pieces.push_back(Piece{a.first_row, a.row_count, a.raw_offset, a.raw_length, b.raw_offset, b.raw_length});
      BP_RETURN_IF_ERROR(check_piece(rec.pieces.back(), c));
      next_row += a.row_count;
      next_s += a.raw_length;
      next_v += b.raw_length;
    }
    if (next_row != g.rows || next_s != sp.raw_length || next_v != ve.raw_length) {
      return Fail(info, "chunks do not cover the tensor");
    }
    return rec;
  }
};

}  // namespace

std::unique_ptr<Codec> MakeBf16SpecCodec() { return std::make_unique<Bf16SpecCodec>(); }

absl::Status RegisterBf16SpecCodec() { return RegisterCodec(MakeBf16SpecCodec()); }

}  // namespace boltpack
