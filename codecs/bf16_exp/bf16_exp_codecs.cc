#include "codecs/bf16_exp/bf16_exp_codecs.h"

#include "codecs/raw_range.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "boltpack/codec_registry.h"
#include "codecs/bf16_exp/byte_split.h"
#include "codecs/bf16_exp/code_cache.h"
#include "codecs/bf16_exp/exponent_code.h"
#include "codecs/float_convert.h"
#include "common/checked_math.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "common/limits.h"

namespace boltpack {
namespace {

using bf16_exp::ExponentCode;

constexpr std::string_view kSmRole = "sign_mantissa";
constexpr std::string_view kExpRole = "exponents";
constexpr std::string_view kSharedRole = "shared_exponents";
constexpr std::string_view kOffsetRole = "offsets";
constexpr std::string_view kFromF32 = "from_f32";
constexpr std::string_view kLengthsParam = "exp_code_lengths";
constexpr std::string_view kRanksParam = "exp_ranks";
constexpr std::string_view kRmsParam = "rel_rms_error";
constexpr std::string_view kLossyParam = "lossy_fraction";
constexpr uint64_t kMxBlock = 32;
constexpr uint64_t kMxOffsetBytes = 12;  // 32 x 3 bits
constexpr size_t kCombineBlock = 2048;

// Writes n bf16 values to dst as `out` (kNative is bf16).
void EmitBf16(const uint16_t* v, size_t n, OutputType out, uint8_t* dst) {
  switch (out) {
    case OutputType::kBF16:
    case OutputType::kNative: std::memcpy(dst, v, n * 2); break;
    case OutputType::kF32:
      for (size_t i = 0; i < n; ++i) {
        const uint32_t u = static_cast<uint32_t>(v[i]) << 16;
        std::memcpy(dst + 4 * i, &u, 4);
      }
      break;
    case OutputType::kF16: ConvertBF16ToF16(v, dst, n); break;
  }
}

size_t OutSize(OutputType out) { return out == OutputType::kF32 ? 4 : 2; }

// DecodeRows joins a chunk's sign+mantissa bytes and exponents in steps of
// this many values, so that both inputs and the output of a step (32 KiB
// for bf16) stay in L1: the reader hashes the sign+mantissa bytes after
// each step (ReadProgress); the join itself is no slower than over a whole
// chunk (256 Ki values) at once.
constexpr uint64_t kJoinStepValues = 8192;

// bf16 = sign | exponent | mantissa from the sign+mantissa byte and exponent.
void Combine(const uint8_t* sm, const uint8_t* ex, uint64_t n, OutputType out, uint8_t* dst) {
  if (out == OutputType::kBF16 || out == OutputType::kNative) {
    bf16_exp::JoinBf16(sm, ex, static_cast<size_t>(n), dst);
    return;
  }
  alignas(64) uint16_t tmp[kCombineBlock];
  const size_t osz = OutSize(out);
  for (uint64_t at = 0; at < n; at += kCombineBlock) {
    const size_t c = static_cast<size_t>(std::min<uint64_t>(kCombineBlock, n - at));
    bf16_exp::JoinBf16(sm + at, ex + at, c, reinterpret_cast<uint8_t*>(tmp));
    EmitBf16(tmp, c, out, dst + at * osz);
  }
}

const MetaValue* FindParam(const CodecParams& params, std::string_view key) {
  for (const auto& [k, v] : params) {
    if (k == key) return &v;
  }
  return nullptr;
}

// Shared by the three codecs: dtypes, the from_f32 switch, decode targets.
class Bf16CodecBase : public Codec {
 public:
  Bf16CodecBase(std::string id, std::string description)
      : id_(std::move(id)), description_(std::move(description)) {}

  std::string_view id() const override { return id_; }
  std::string_view description() const override { return description_; }

  absl::Status CanEncode(DType dtype, absl::Span<const uint64_t> shape,
                         const CodecParams& params) const override {
    bool from_f32 = false;
    for (const auto& [k, v] : params) {
      if (k == kFromF32) {
        if (v.type != ValueType::kBool) return Err(StrCat("parameter '", kFromF32, "' must be a bool"));
        from_f32 = v.b;
      } else {
        return Err(StrCat("unknown parameter '", k, "' (the only encoder parameter is '", kFromF32, "')"));
      }
    }
    if (dtype == DType::kF32 && !from_f32) {
      return Err(StrCat("stores bf16; an F32 source would be rounded, which is lossy: pass ", kFromF32,
                        "=true to allow it"));
    }
    if (dtype != DType::kBF16 && dtype != DType::kF32) {
      return Err(StrCat("encodes BF16 tensors (or F32 with ", kFromF32, "=true), not ", DTypeName(dtype)));
    }
    if (shape.size() > format::kMaxDims) return Err(StrCat(shape.size(), " dimensions, at most ", format::kMaxDims));
    auto n = CheckedProduct(shape);
    if (!n || *n >= format::kMaxElements) return Err("element count reaches the limit of 2^56");
    return absl::OkStatus();
  }

  bool CanDecodeTo(const TensorInfo& info, OutputType out) const override {
    (void)out;
    return info.dtype == DType::kBF16 || info.dtype == DType::kF32;
  }

  absl::StatusOr<uint64_t> DecodedBytes(const TensorInfo& info, OutputType out) const override {
    if (!CanDecodeTo(info, out)) return absl::InvalidArgumentError(StrCat("tensor '", info.name, "': cannot decode"));
    auto n = CheckedProduct(info.shape);
    if (!n || *n >= format::kMaxElements) return absl::OutOfRangeError("decoded size overflows");
    return *n * OutSize(out);
  }

  // GGUF has no such type: exported as BF16, which holds every value the
  // codec decodes to exactly.
  GgmlMapping Ggml(DType /*dtype*/, const CodecParams& /*params*/) const override {
    return GgmlMapping{30, GgmlExport::kDecodedBf16};
  }

 protected:
  absl::Status Err(std::string_view what) const {
    return absl::InvalidArgumentError(StrCat("codec '", id_, "': ", what));
  }
  absl::Status Fail(const TensorInfo& info, std::string_view what) const {
    return absl::InvalidArgumentError(StrCat("tensor '", info.name, "' (codec '", id_, "'): ", what));
  }

  // Common record checks: id, dtype vs from_f32, shape; the rest of the
  // params must be among `known` (key, type).
  absl::Status CheckRecordBasics(const TensorInfo& info,
                                 std::initializer_list<std::pair<std::string_view, ValueType>> known) const {
    if (info.codec_id != id_) return Fail(info, StrCat("record names codec '", info.codec_id, "'"));
    bool from_f32 = false;
    for (const auto& [k, v] : info.codec_params) {
      if (k == kFromF32) {
        if (v.type != ValueType::kBool) return Fail(info, "from_f32 is not a bool");
        from_f32 = v.b;
        continue;
      }
      bool ok = false;
      for (const auto& [kk, t] : known) {
        if (k == kk) {
          if (v.type != t) return Fail(info, StrCat("parameter '", k, "' has type ", ValueTypeName(v.type)));
          ok = true;
        }
      }
      if (!ok) return Fail(info, StrCat("unknown parameter '", k, "'"));
    }
    if (info.dtype == DType::kF32 && !from_f32) return Fail(info, "an F32 tensor needs from_f32=true");
    if (info.dtype == DType::kBF16 && from_f32) return Fail(info, "a BF16 tensor cannot have from_f32=true");
    if (info.dtype != DType::kBF16 && info.dtype != DType::kF32) {
      return Fail(info, StrCat("dtype ", DTypeName(info.dtype), " is not BF16 or F32"));
    }
    if (info.shape.size() > format::kMaxDims) return Fail(info, "too many dimensions");
    auto n = CheckedProduct(info.shape);
    if (!n || *n >= format::kMaxElements) return Fail(info, "element count reaches the limit of 2^56");
    return absl::OkStatus();
  }

  // The source's bf16 bits: a BF16 source is read in place; an F32 one is
  // converted (on all threads) into `converted`, which must outlive the result.
  absl::StatusOr<const uint8_t*> SourceBf16(const TensorSource& source, uint64_t n, int threads,
                                            std::vector<uint16_t>* converted) const {
    const uint64_t esz = source.dtype == DType::kF32 ? 4 : 2;
    if (source.bytes.size() != n * esz) {
      return absl::InvalidArgumentError(StrCat("tensor '", source.name, "': ", source.bytes.size(),
                                               " source bytes, expected ", n, " x ", esz));
    }
    if (esz == 2) return source.bytes.data();
    converted->resize(static_cast<size_t>(n));
    uint16_t* v = converted->data();
    BP_RETURN_IF_ERROR(ParallelFor(n, threads, uint64_t{1} << 16, [&](uint64_t b, uint64_t e) {
      ConvertF32ToBF16(source.bytes.data() + b * 4, v + b, static_cast<size_t>(e - b));
      return absl::OkStatus();
    }));
    return reinterpret_cast<const uint8_t*>(v);
  }

  static CodecParams OutputParams(DType dtype) {
    CodecParams p;
    if (dtype == DType::kF32) p.emplace_back(std::string(kFromF32), MetaValue::Bool(true));
    return p;
  }

  std::string id_;
  std::string description_;
};

// ---- bf16-huffman / bf16-unary ------------------------------------------

struct Piece {
  uint64_t first_row = 0;
  uint64_t row_count = 0;
  uint64_t elem_begin = 0;
  uint64_t elem_count = 0;
  uint64_t exp_offset = 0;
  uint64_t exp_length = 0;
};

class Bf16EntropyCodec : public Bf16CodecBase {
 public:
  explicit Bf16EntropyCodec(ExponentCode::Kind kind)
      : Bf16CodecBase(kind == ExponentCode::Kind::kHuffman ? "bf16-huffman" : "bf16-unary",
                      kind == ExponentCode::Kind::kHuffman
                          ? "lossless bf16: canonical Huffman exponents (<= 12 bits), sign+mantissa bytes"
                          : "lossless bf16: frequency-ranked unary exponents with escapes, sign+mantissa bytes"),
        kind_(kind) {}

  CodecTraits traits() const override {
    CodecTraits t;
    t.exponent_coded = true;
    return t;
  }

  absl::StatusOr<EncodedTensor> Encode(const TensorSource& source, const CodecParams& params,
                                       const ExecOptions& exec) const override {
    if (absl::Status s = CanEncode(source.dtype, source.shape, params); !s.ok()) {
      return absl::Status(s.code(), StrCat("tensor '", source.name, "': ", s.message()));
    }
    const uint64_t n = *CheckedProduct(source.shape);
    std::vector<uint16_t> converted;
    BP_ASSIGN_OR_RETURN(const uint8_t* src16, SourceBf16(source, n, exec.threads, &converted));
    const uint64_t rows = source.shape.empty() ? 1 : source.shape[0];
    const uint64_t row_elems = rows == 0 ? 0 : n / rows;
    std::vector<std::pair<uint64_t, uint64_t>> pieces;  // first_row, row_count
    if (n > kBf16ExpChunkElements && rows > 1) {
      const uint64_t per = std::max<uint64_t>(1, kBf16ExpChunkElements / row_elems);
      for (uint64_t r = 0; r < rows; r += per) pieces.push_back({r, std::min(per, rows - r)});
    } else {
      pieces.push_back({0, rows});
    }
    EncodedStream sm{std::string(kSmRole), std::vector<uint8_t>(static_cast<size_t>(n)), {}, false};
    EncodedStream ex{std::string(kExpRole), {}, {}, false};
    // Exponents of the whole tensor, uninitialised until split.
    std::unique_ptr<uint8_t[]> exps(new uint8_t[static_cast<size_t>(n)]);
    std::vector<std::array<uint64_t, 256>> hist(pieces.size());
    BP_RETURN_IF_ERROR(ParallelFor(pieces.size(), exec.threads, 1, [&](uint64_t a, uint64_t b) {
      for (uint64_t p = a; p < b; ++p) {
        const uint64_t begin = pieces[p].first * row_elems;
        const size_t count = static_cast<size_t>(pieces[p].second * row_elems);
        hist[p].fill(0);
        bf16_exp::SplitBf16(src16 + 2 * begin, count, sm.bytes.data() + begin, exps.get() + begin);
        bf16_exp::CountExponents(exps.get() + begin, count, hist[p].data());
      }
      return absl::OkStatus();
    }));
    std::array<uint64_t, 256> freq{};
    for (const auto& h : hist) {
      for (int s = 0; s < 256; ++s) freq[s] += h[s];
    }
    EncodedTensor enc;
    enc.params = OutputParams(source.dtype);
    absl::StatusOr<ExponentCode> code;
    if (kind_ == ExponentCode::Kind::kHuffman) {
      const auto lengths = bf16_exp::HuffmanLengths(freq, bf16_exp::kMaxHuffmanBits);
      code = ExponentCode::Huffman(lengths, ExponentCode::Tables::kSingle);
      enc.params.emplace_back(std::string(kLengthsParam), MetaValue::String(ExponentCode::LengthsToHex(lengths)));
    } else {
      const auto ranks = bf16_exp::UnaryRanks(freq);
      code = ExponentCode::Unary(ranks, ExponentCode::Tables::kSingle);
      enc.params.emplace_back(std::string(kRanksParam), MetaValue::String(ExponentCode::RanksToHex(ranks)));
    }
    if (!code.ok()) return absl::InternalError(StrCat("tensor '", source.name, "': ", code.status().message()));
    std::vector<std::vector<uint8_t>> coded(pieces.size());
    BP_RETURN_IF_ERROR(ParallelFor(pieces.size(), exec.threads, 1, [&](uint64_t a, uint64_t b) {
      for (uint64_t p = a; p < b; ++p) {
        const uint64_t begin = pieces[p].first * row_elems;
        bf16_exp::EncodeChunk(*code, exps.get() + begin, pieces[p].second * row_elems, &coded[p]);
      }
      return absl::OkStatus();
    }));
    size_t total = 0;
    for (const auto& c : coded) total += c.size();
    ex.bytes.reserve(total);
    for (size_t p = 0; p < pieces.size(); ++p) {
      const uint64_t off = ex.bytes.size();
      ex.bytes.insert(ex.bytes.end(), coded[p].begin(), coded[p].end());
      if (pieces.size() > 1) {
        const auto [fr, rc] = pieces[p];
        sm.chunks.push_back(EncodedChunk{fr * row_elems, rc * row_elems, fr, rc});
        ex.chunks.push_back(EncodedChunk{off, coded[p].size(), fr, rc});
      }
    }
    enc.streams.push_back(std::move(sm));
    enc.streams.push_back(std::move(ex));
    return enc;
  }

  // [C-10.3.1]
  absl::Status ValidateRecord(const TensorInfo& info) const override {
    BP_RETURN_IF_ERROR(CheckRecordBasics(info, {{TableParam(), ValueType::kString}}));
    auto code = ParseCode(info, ExponentCode::Tables::kSingle);
    if (!code.ok()) return Fail(info, std::string(code.status().message()));
    const uint64_t n = *CheckedProduct(info.shape);
    if (n > 0 && (*code)->kind() == ExponentCode::Kind::kHuffman) {
      bool any = false;
      for (int s = 0; s < 256; ++s) any |= (*code)->length(s) > 0;
      if (!any) return Fail(info, "no exponent has a code");
    }
    if (info.streams.size() != 2 || info.streams[0].role != kSmRole || info.streams[1].role != kExpRole) {
      return Fail(info, "expected two streams, \"sign_mantissa\" then \"exponents\"");
    }
    const StreamInfo& sm = info.streams[0];
    const StreamInfo& ex = info.streams[1];
    if (sm.raw_length != n) return Fail(info, StrCat("sign_mantissa raw length ", sm.raw_length, ", expected ", n));
    if (sm.chunks.size() != ex.chunks.size()) return Fail(info, "streams have different chunk counts");
    const uint64_t rows = info.row_count();
    const uint64_t row_elems = rows == 0 ? 0 : n / rows;
    uint64_t next_row = 0, next_exp = 0;
    for (size_t c = 0; c < sm.chunks.size(); ++c) {
      const ChunkInfo& a = sm.chunks[c];
      const ChunkInfo& b = ex.chunks[c];
      if (a.first_row != next_row || b.first_row != a.first_row || b.row_count != a.row_count ||
          a.row_count > rows - next_row) {
        return Fail(info, StrCat("chunk ", c, " rows do not tile the tensor"));
      }
      if (a.raw_offset != a.first_row * row_elems || a.raw_length != a.row_count * row_elems) {
        return Fail(info, StrCat("sign_mantissa chunk ", c, " is not whole rows"));
      }
      if (b.raw_offset != next_exp || b.raw_length > ex.raw_length - next_exp) {
        return Fail(info, StrCat("exponents chunk ", c, " does not tile the stream"));
      }
      next_row += a.row_count;
      next_exp += b.raw_length;
    }
    if (!sm.chunks.empty() && (next_row != rows || next_exp != ex.raw_length)) {
      return Fail(info, "chunks do not cover the tensor");
    }
    return absl::OkStatus();
  }

  absl::Status Decode(const DecodeInput& input, OutputType out, absl::Span<uint8_t> dst,
                      const ExecOptions& exec) const override {
    BP_RETURN_IF_ERROR(CheckInput(input));
    const TensorInfo& info = *input.info;
    const uint64_t n = *CheckedProduct(info.shape);
    BP_ASSIGN_OR_RETURN(const bf16_exp::SharedCode code, ParseCode(info, TablesFor(n)));
    const std::vector<Piece> pieces = Pieces(info);
    if (input.streams[0].size() != n || input.streams[1].size() != info.streams[1].raw_length) {
      return Fail(info, "stream sizes differ from the record");
    }
    if (dst.size() < n * OutSize(out)) return Fail(info, StrCat("output buffer of ", dst.size(), " bytes is too small"));
    return ParallelFor(pieces.size(), exec.threads, 1, [&](uint64_t a, uint64_t b) -> absl::Status {
      // Exponent scratch, uninitialised: DecodeChunk writes every byte.
      uint64_t most = 0;
      for (uint64_t p = a; p < b; ++p) most = std::max(most, pieces[p].elem_count);
      std::unique_ptr<uint8_t[]> tmp(new uint8_t[static_cast<size_t>(most)]);
      for (uint64_t p = a; p < b; ++p) {
        const Piece& pc = pieces[p];
        absl::Status st = bf16_exp::DecodeChunk(*code, input.streams[1].subspan(pc.exp_offset, pc.exp_length),
                                                pc.elem_count, tmp.get());
        if (!st.ok()) return absl::DataLossError(StrCat("tensor '", info.name, "' chunk ", p, ": ", st.message()));
        Combine(input.streams[0].data() + pc.elem_begin, tmp.get(), pc.elem_count, out,
                dst.data() + pc.elem_begin * OutSize(out));
      }
      return absl::OkStatus();
    });
  }

  absl::Status DecodeRows(const DecodeInput& input, uint64_t row_begin, uint64_t row_end, OutputType out,
                          absl::Span<uint8_t> dst) const override {
    BP_RETURN_IF_ERROR(CheckInput(input));
    const TensorInfo& info = *input.info;
    BP_ASSIGN_OR_RETURN(auto sm_range, RowRangeBytes(info, 0, row_begin, row_end));
    BP_ASSIGN_OR_RETURN(auto ex_range, RowRangeBytes(info, 1, row_begin, row_end));
    if (row_begin == row_end) return absl::OkStatus();
    const uint64_t sm_base = input.raw_base.size() > 0 ? input.raw_base[0] : 0;
    const uint64_t ex_base = input.raw_base.size() > 1 ? input.raw_base[1] : 0;
    BP_RETURN_IF_ERROR(
        RawBytesInInput(info, input.streams, input.raw_base, 0, sm_range.first, sm_range.second).status());
    BP_RETURN_IF_ERROR(
        RawBytesInInput(info, input.streams, input.raw_base, 1, ex_range.first, ex_range.second).status());
    const uint64_t n = *CheckedProduct(info.shape);
    const uint64_t row_elems = n / info.row_count();
    if (dst.size() < (row_end - row_begin) * row_elems * OutSize(out)) {
      return Fail(info, StrCat("output buffer of ", dst.size(), " bytes is too small for rows ", row_begin, "..", row_end));
    }
    BP_ASSIGN_OR_RETURN(const bf16_exp::SharedCode code,
                        ParseCode(info, TablesFor((row_end - row_begin) * row_elems)));
    std::vector<uint8_t> tmp;
    for (const Piece& pc : Pieces(info)) {
      const uint64_t lo = std::max(row_begin, pc.first_row);
      const uint64_t hi = std::min(row_end, pc.first_row + pc.row_count);
      if (lo >= hi) continue;
      tmp.resize(static_cast<size_t>(pc.elem_count));
      BP_RETURN_IF_ERROR(bf16_exp::DecodeChunk(
          *code, input.streams[1].subspan(pc.exp_offset - ex_base, pc.exp_length), pc.elem_count, tmp.data()));
      if (input.progress != nullptr) input.progress->ReadTo(1, pc.exp_offset + pc.exp_length);
      const uint64_t e_end = hi * row_elems;
      for (uint64_t e = lo * row_elems; e < e_end; e += kJoinStepValues) {
        const uint64_t c = std::min(kJoinStepValues, e_end - e);
        Combine(input.streams[0].data() + (e - sm_base), tmp.data() + (e - pc.elem_begin), c, out,
                dst.data() + (e - row_begin * row_elems) * OutSize(out));
        if (input.progress != nullptr) input.progress->ReadTo(0, e + c);
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::pair<uint64_t, uint64_t>> RowRangeBytes(const TensorInfo& info, size_t stream_index,
                                                              uint64_t row_begin, uint64_t row_end) const override {
    if (stream_index > 1) return Fail(info, StrCat("has two streams, not ", stream_index + 1));
    const uint64_t rows = info.row_count();
    if (row_begin > row_end || row_end > rows) {
      return absl::OutOfRangeError(StrCat("tensor '", info.name, "': rows ", row_begin, "..", row_end, " outside 0..", rows));
    }
    BP_RETURN_IF_ERROR(ValidateRecord(info));
    const uint64_t n = *CheckedProduct(info.shape);
    const uint64_t row_elems = rows == 0 ? 0 : n / rows;
    if (stream_index == 0) return std::make_pair(row_begin * row_elems, row_end * row_elems);
    if (row_begin == row_end) return std::make_pair(uint64_t{0}, uint64_t{0});
    uint64_t lo = ~uint64_t{0}, hi = 0;
    for (const Piece& pc : Pieces(info)) {
      if (pc.first_row + pc.row_count <= row_begin || pc.first_row >= row_end) continue;
      lo = std::min(lo, pc.exp_offset);
      hi = std::max(hi, pc.exp_offset + pc.exp_length);
    }
    return std::make_pair(lo, hi);
  }

  absl::StatusOr<uint64_t> EncodedSize(DType, absl::Span<const uint64_t>, const CodecParams&) const override {
    return absl::UnimplementedError(StrCat("codec '", id_, "': the stored size depends on the data"));
  }

  std::vector<int> SliceableAxes(absl::Span<const uint64_t>, const CodecParams&) const override { return {}; }

 private:
  std::string_view TableParam() const {
    return kind_ == ExponentCode::Kind::kHuffman ? kLengthsParam : kRanksParam;
  }

  static ExponentCode::Tables TablesFor(uint64_t values) { return bf16_exp::TablesForValues(values); }

  // The record's code, built once per distinct parameter (code_cache.h).
  absl::StatusOr<bf16_exp::SharedCode> ParseCode(const TensorInfo& info, ExponentCode::Tables tables) const {
    const MetaValue* v = FindParam(info.codec_params, TableParam());
    if (v == nullptr || v->type != ValueType::kString) {
      return absl::InvalidArgumentError(StrCat("missing string parameter '", TableParam(), "'"));
    }
    return bf16_exp::CachedCode(kind_, v->s, tables);
  }

  // The chunks as pieces (the record is validated); one piece if unchunked.
  static std::vector<Piece> Pieces(const TensorInfo& info) {
    const uint64_t n = *CheckedProduct(info.shape);
    const uint64_t rows = info.row_count();
    std::vector<Piece> out;
    const StreamInfo& sm = info.streams[0];
    const StreamInfo& ex = info.streams[1];
    if (sm.chunks.empty()) {
      out.push_back(Piece{0, rows, 0, n, 0, ex.raw_length});
      return out;
    }
    for (size_t c = 0; c < sm.chunks.size(); ++c) {
      out.push_back(Piece{sm.chunks[c].first_row, sm.chunks[c].row_count, sm.chunks[c].raw_offset,
                          sm.chunks[c].raw_length, ex.chunks[c].raw_offset, ex.chunks[c].raw_length});
    }
    return out;
  }

  absl::Status CheckInput(const DecodeInput& input) const {
    if (input.info == nullptr) return absl::InvalidArgumentError("decode input has no record");
    if (input.streams.size() != 2 || input.info->streams.size() != 2 || input.raw_base.size() > 2) {
      return absl::InvalidArgumentError(StrCat("tensor '", input.info->name, "': codec '", id_, "' decodes two streams"));
    }
    return absl::OkStatus();
  }

  ExponentCode::Kind kind_;
};

// ---- bf16-mx ----------------------------------------------------------------

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

std::unique_ptr<Codec> MakeBf16HuffmanCodec() { return std::make_unique<Bf16EntropyCodec>(ExponentCode::Kind::kHuffman); }
std::unique_ptr<Codec> MakeBf16UnaryCodec() { return std::make_unique<Bf16EntropyCodec>(ExponentCode::Kind::kUnary); }
std::unique_ptr<Codec> MakeBf16MxCodec() { return std::make_unique<Bf16MxCodec>(); }

absl::Status RegisterBf16ExpCodecs() {
  BP_RETURN_IF_ERROR(RegisterCodec(MakeBf16HuffmanCodec()));
  BP_RETURN_IF_ERROR(RegisterCodec(MakeBf16UnaryCodec()));
  BP_RETURN_IF_ERROR(RegisterCodec(MakeBf16MxCodec()));
  return absl::OkStatus();
}

}  // namespace boltpack
