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
#include "common/huge_pages.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "common/limits.h"
#include "codecs/bf16_exp/bf16_codec_base.h"

namespace boltpack {
namespace {

using bf16_exp::ExponentCode;
using bf16_exp::Bf16CodecBase;
using bf16_exp::EmitBf16;
using bf16_exp::kFromF32;
using bf16_exp::kSmRole;
using bf16_exp::OutSize;

constexpr std::string_view kExpRole = "exponents";
constexpr std::string_view kLengthsParam = "exp_code_lengths";
constexpr std::string_view kRanksParam = "exp_ranks";
constexpr size_t kCombineBlock = 2048;

// DecodeRows joins a chunk's sign+mantissa bytes and exponents in steps of
// this many values, so that both inputs and the output of a step (32 KiB
// for bf16) stay in L1: the reader hashes the sign+mantissa bytes after
// each step (ReadProgress); the join itself is no slower than over a whole
// chunk (256 Ki values) at once.
constexpr uint64_t kJoinStepValues = 8192;

// Exponent scratch of the calling thread, uninitialised (DecodeChunk writes
// every byte it is read for) and kept up to kKeptScratchBytes: DecodeRows
// runs once per row block, a single piece of 256 Ki values in a whole
// tensor's decode, and a zero-filled vector per call cost a 256 KiB memset
// per piece (about 7% of the decode on one core).
constexpr uint64_t kKeptScratchBytes = uint64_t{1} << 20;

class ExponentScratch {
 public:
  uint8_t* Get(uint64_t n) {
    thread_local std::unique_ptr<uint8_t[]> kept;
    thread_local uint64_t kept_size = 0;
    if (n <= kKeptScratchBytes) {
      if (kept_size < n) {
        kept.reset(new uint8_t[kKeptScratchBytes]);
        kept_size = kKeptScratchBytes;
      }
      return kept.get();
    }
    if (own_size_ < n) {
      own_.reset(new uint8_t[static_cast<size_t>(n)]);
      own_size_ = n;
    }
    return own_.get();
  }

 private:
  std::unique_ptr<uint8_t[]> own_;  // a larger piece's, for this decode only
  uint64_t own_size_ = 0;
};

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

  std::vector<CodecParamSpec> StoredParamSpecs() const override {
    CodecParamSpec table;
    table.name = TableParam();
    table.kind = ParamKind::kText;
    table.help = kind_ == ExponentCode::Kind::kHuffman ? "the exponent code's lengths, hex (from the tensor)"
                                                        : "the exponents' frequency ranks, hex (from the tensor)";
    table.settable = false;
    return {table};
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
    EncodedStream sm{std::string(kSmRole), {}, {}, false};
    ResizeHuge(sm.bytes, static_cast<size_t>(n));
    EncodedStream ex{std::string(kExpRole), {}, {}, false};
    // Exponents of the whole tensor, uninitialised until split.
    std::unique_ptr<uint8_t[]> exps(new uint8_t[static_cast<size_t>(n)]);
    AdviseHugePages(exps.get(), static_cast<size_t>(n));
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
    AdviseHugePages(ex.bytes.data(), total);
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
    ExponentScratch scratch;
    for (const Piece& pc : Pieces(info)) {
      const uint64_t lo = std::max(row_begin, pc.first_row);
      const uint64_t hi = std::min(row_end, pc.first_row + pc.row_count);
      if (lo >= hi) continue;
      uint8_t* tmp = scratch.Get(pc.elem_count);
      BP_RETURN_IF_ERROR(bf16_exp::DecodeChunk(
          *code, input.streams[1].subspan(pc.exp_offset - ex_base, pc.exp_length), pc.elem_count, tmp));
      if (input.progress != nullptr) input.progress->ReadTo(1, pc.exp_offset + pc.exp_length);
      const uint64_t e_end = hi * row_elems;
      for (uint64_t e = lo * row_elems; e < e_end; e += kJoinStepValues) {
        const uint64_t c = std::min(kJoinStepValues, e_end - e);
        Combine(input.streams[0].data() + (e - sm_base), tmp + (e - pc.elem_begin), c, out,
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

  // Bf16ExpSyncPoints.
  absl::StatusOr<std::vector<bf16_exp::SyncPoint>> SyncPoints(const TensorInfo& info,
                                                              absl::Span<const uint8_t> exponents, uint32_t every,
                                                              int threads) const {
    BP_RETURN_IF_ERROR(ValidateRecord(info));
    if (exponents.size() != info.streams[1].raw_length) return Fail(info, "exponents differ from the record's size");
    const uint64_t n = *CheckedProduct(info.shape);
    BP_ASSIGN_OR_RETURN(const bf16_exp::SharedCode code, ParseCode(info, TablesFor(n)));
    const std::vector<Piece> pieces = Pieces(info);
    std::vector<std::vector<bf16_exp::SyncPoint>> per(pieces.size());
    BP_RETURN_IF_ERROR(ParallelFor(pieces.size(), threads, 1, [&](uint64_t a, uint64_t b) -> absl::Status {
      std::vector<uint8_t> tmp;
      for (uint64_t p = a; p < b; ++p) {
        const Piece& pc = pieces[p];
        tmp.resize(static_cast<size_t>(pc.elem_count));
        absl::Status st = bf16_exp::ChunkSyncPoints(*code, exponents.subspan(pc.exp_offset, pc.exp_length),
                                                    pc.elem_count, 8 * pc.exp_offset, pc.elem_begin, every,
                                                    tmp.data(), &per[p]);
        if (!st.ok()) return absl::DataLossError(StrCat("tensor '", info.name, "' chunk ", p, ": ", st.message()));
      }
      return absl::OkStatus();
    }));
    std::vector<bf16_exp::SyncPoint> out;
    for (auto& v : per) out.insert(out.end(), v.begin(), v.end());
    out.push_back(bf16_exp::SyncPoint{8 * uint64_t{exponents.size()}, n});
    return out;
  }

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

}  // namespace

std::unique_ptr<Codec> MakeBf16HuffmanCodec() { return std::make_unique<Bf16EntropyCodec>(ExponentCode::Kind::kHuffman); }
std::unique_ptr<Codec> MakeBf16UnaryCodec() { return std::make_unique<Bf16EntropyCodec>(ExponentCode::Kind::kUnary); }

absl::StatusOr<std::vector<bf16_exp::SyncPoint>> Bf16ExpSyncPoints(const TensorInfo& info,
                                                                   absl::Span<const uint8_t> exponents,
                                                                   uint32_t every, int threads) {
  if (info.codec_id != "bf16-huffman" && info.codec_id != "bf16-unary") {
    return absl::InvalidArgumentError(
        StrCat("tensor '", info.name, "' (codec '", info.codec_id, "'): no exponent lanes (bf16-huffman, bf16-unary)"));
  }
  const Bf16EntropyCodec codec(info.codec_id == "bf16-huffman" ? ExponentCode::Kind::kHuffman
                                                               : ExponentCode::Kind::kUnary);
  return codec.SyncPoints(info, exponents, every, threads);
}

absl::Status RegisterBf16ExpCodecs() {
  BP_RETURN_IF_ERROR(RegisterCodec(MakeBf16HuffmanCodec()));
  BP_RETURN_IF_ERROR(RegisterCodec(MakeBf16UnaryCodec()));
  BP_RETURN_IF_ERROR(RegisterCodec(MakeBf16MxCodec()));
  return absl::OkStatus();
}

}  // namespace boltpack
