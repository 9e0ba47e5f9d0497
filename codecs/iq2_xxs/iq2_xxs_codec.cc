#include "codecs/iq2_xxs/iq2_xxs_codec.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "boltpack/codec_registry.h"
#include "codecs/float_convert.h"
#include "codecs/iq2_xxs/iq2_xxs_kernels.h"
#include "codecs/raw_range.h"
#include "common/checked_math.h"
#include "common/huge_pages.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "common/limits.h"

namespace boltpack {
namespace {

using iq2_xxs::kBlockBytes;
using iq2_xxs::kBlockElems;

constexpr std::string_view kId = "iq2_xxs";
constexpr std::string_view kRole = "blocks";
constexpr uint64_t kChunkTargetBytes = uint64_t{1} << 20;
// Blocks per parallel decode task (a block decodes in tens of nanoseconds).
constexpr uint64_t kMinDecodeBlocksPerTask = 1024;

bool IsSourceDType(DType d) {
  return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16 || d == DType::kF64;
}

// Bytes one decoded element takes (kNative: not per element; handled apart).
uint64_t OutSize(OutputType out) { return static_cast<uint64_t>(OutputTypeSize(out)); }

// Decodes whole blocks to `out` at dst (dst holds nblocks*256 elements of
// `out`, or nblocks*66 bytes for kNative).
void DecodeBlocksTo(const uint8_t* src, uint64_t nblocks, OutputType out, uint8_t* dst) {
  if (out == OutputType::kNative) {
    if (nblocks != 0) std::memcpy(dst, src, static_cast<size_t>(nblocks * kBlockBytes));
    return;
  }
  if (out == OutputType::kF32) {
    iq2_xxs::DecodeBlocksF32(src, static_cast<size_t>(nblocks), reinterpret_cast<float*>(dst));
    return;
  }
  // Half-precision targets: through f32, in cache-sized pieces.
  constexpr uint64_t kPiece = 16;
  alignas(32) float tmp[kPiece * kBlockElems];
  for (uint64_t b = 0; b < nblocks; b += kPiece) {
    const uint64_t nb = nblocks - b < kPiece ? nblocks - b : kPiece;
    iq2_xxs::DecodeBlocksF32(src + b * kBlockBytes, static_cast<size_t>(nb), tmp);
    uint8_t* d = dst + b * kBlockElems * 2;
    if (out == OutputType::kBF16) {
      ConvertF32ToBF16(tmp, d, static_cast<size_t>(nb * kBlockElems));
    } else {
      ConvertF32ToF16(tmp, d, static_cast<size_t>(nb * kBlockElems));
    }
  }
}

class Iq2XxsCodec : public Codec {
 public:
  std::string_view id() const override { return kId; }
  std::string_view description() const override {
    return "ggml IQ2_XXS blocks (256 weights in 66 bytes, 2.0625 bpw), fast imatrix-aware "
           "encoder";
  }

  absl::Status CanEncode(DType dtype, absl::Span<const uint64_t> shape,
                         const CodecParams& params) const override {
    if (!IsSourceDType(dtype)) {
      return absl::InvalidArgumentError(
          StrCat("codec 'iq2_xxs' encodes float tensors (F32, F16, BF16, F64), not ",
                 DTypeName(dtype)));
    }
    BP_RETURN_IF_ERROR(CheckParams(params));
    return CheckShape(shape);
  }

  absl::StatusOr<EncodedTensor> Encode(const TensorSource& source, const CodecParams& params,
                                       const ExecOptions& exec) const override {
    auto named = [&](absl::Status s) {
      return absl::Status(s.code(), StrCat("tensor '", source.name, "': ", s.message()));
    };
    if (absl::Status s = CanEncode(source.dtype, source.shape, params); !s.ok()) {
      return named(s);
    }
    const uint64_t n = *CheckedProduct(source.shape);
    const uint64_t src_size = static_cast<uint64_t>(DTypeSize(source.dtype));
    if (source.bytes.size() != n * src_size) {
      return named(absl::InvalidArgumentError(
          StrCat("codec 'iq2_xxs': ", source.bytes.size(), " source bytes, expected ", n,
                 " elements x ", src_size, " bytes")));
    }
    const uint64_t ncols = source.shape.back();
    const uint64_t nrows = ncols == 0 ? 0 : n / ncols;  // innermost rows
    // Importance: one per column, or per expert for 3-D tensors.
    uint64_t rows_per_expert = 0;  // 0: one vector for every row
    if (!source.importance.empty()) {
      if (source.importance.size() == ncols) {
        rows_per_expert = 0;
      } else if (source.shape.size() == 3 &&
                 source.importance.size() == source.shape[0] * ncols) {
        rows_per_expert = source.shape[1];
      } else {
        return named(absl::InvalidArgumentError(StrCat(
            "codec 'iq2_xxs': ", source.importance.size(), " importance weights; expected ",
            ncols, " (one per column)",
            source.shape.size() == 3
                ? StrCat(" or ", source.shape[0] * ncols, " (", source.shape[0],
                         " experts x ", ncols, " columns)")
                : std::string())));
      }
      for (size_t i = 0; i < source.importance.size(); ++i) {
        const float w = source.importance[i];
        if (!(w >= 0) || !std::isfinite(w)) {
          return named(absl::InvalidArgumentError(
              StrCat("codec 'iq2_xxs': importance weight ", i, " is ", w,
                     "; weights must be finite and >= 0")));
        }
      }
    }

    EncodedStream stream = SkeletonStream(source.shape);
    const uint64_t row_bytes = ncols / kBlockElems * kBlockBytes;
    ResizeHuge(stream.bytes, static_cast<size_t>(nrows * row_bytes));
    // Rows per task: about 64K weights, so small tensors stay on one thread.
    const uint64_t min_rows = ncols == 0 ? 1 : (uint64_t{1} << 16) / ncols + 1;
    BP_RETURN_IF_ERROR(ParallelFor(
        nrows, exec.threads, min_rows, [&](uint64_t begin, uint64_t end) -> absl::Status {
          std::vector<float> row(static_cast<size_t>(ncols));
          for (uint64_t r = begin; r < end; ++r) {
            const uint8_t* src = source.bytes.data() + r * ncols * src_size;
            const float* x = row.data();
            if (source.dtype == DType::kF32) {
              std::memcpy(row.data(), src, static_cast<size_t>(ncols * 4));
            } else {
              ConvertFloats(source.dtype, DType::kF32, src, row.data(),
                            static_cast<size_t>(ncols));
            }
            for (uint64_t c = 0; c < ncols; ++c) {
              if (!std::isfinite(x[c])) {
                return absl::InvalidArgumentError(
                    StrCat("tensor '", source.name, "': codec 'iq2_xxs' needs finite values; "
                           "element ", r * ncols + c, " is ", x[c]));
              }
            }
            const float* w = nullptr;
            if (!source.importance.empty()) {
              const uint64_t expert = rows_per_expert == 0 ? 0 : r / rows_per_expert;
              w = source.importance.data() + expert * ncols;
            }
            iq2_xxs::QuantizeRow(x, w, static_cast<size_t>(ncols),
                                 stream.bytes.data() + r * row_bytes);
          }
          return absl::OkStatus();
        }));
    EncodedTensor encoded;
    encoded.streams.push_back(std::move(stream));
    return encoded;
  }

  // [C-10.3.1] [I-1.1] [I-1.2] [I-1.3] [I-1.4] [I-1.5] [I-1.6]
  absl::Status ValidateRecord(const TensorInfo& info) const override {
    auto fail = [&](const auto& what) {
      return absl::InvalidArgumentError(
          StrCat("tensor '", info.name, "' (codec 'iq2_xxs'): ", what));
    };
    if (info.codec_id != kId) return fail(StrCat("record names codec '", info.codec_id, "'"));
    if (!IsSourceDType(info.dtype)) {
      return fail(StrCat("dtype ", DTypeName(info.dtype), " (", static_cast<int>(info.dtype),
                         ") is not F32, F16, BF16 or F64"));
    }
    if (absl::Status s = CheckParams(info.codec_params); !s.ok()) return fail(s.message());
    if (absl::Status s = CheckShape(info.shape); !s.ok()) return fail(s.message());
    if (info.streams.size() != 1) {
      return fail(StrCat("expected exactly one stream (role \"blocks\"), found ",
                         info.streams.size()));
    }
    const StreamInfo& stream = info.streams[0];
    if (stream.role != kRole) {
      return fail(StrCat("stream role is \"", stream.role, "\", expected \"blocks\""));
    }
    const uint64_t n = *CheckedProduct(info.shape);  // < 2^56 (CheckShape)
    const uint64_t expected = n / kBlockElems * kBlockBytes;
    if (stream.raw_length != expected) {
      return fail(StrCat("blocks stream raw length is ", stream.raw_length, ", expected ",
                         n / kBlockElems, " blocks x ", kBlockBytes, " bytes"));
    }
    if (info.shape.size() == 1 && !stream.chunks.empty()) {
      return fail("a 1-d tensor's blocks stream cannot be chunked (its rows are single values)");
    }
    const uint64_t row_bytes = RowBytes(info);
    const uint64_t rows = info.row_count();
    for (size_t c = 0; c < stream.chunks.size(); ++c) {
      const ChunkInfo& chunk = stream.chunks[c];
      auto offset = CheckedMul(chunk.first_row, row_bytes);
      auto length = CheckedMul(chunk.row_count, row_bytes);
      auto end_row = CheckedAdd(chunk.first_row, chunk.row_count);
      if (!offset || !length || !end_row || *end_row > rows || *offset != chunk.raw_offset ||
          *length != chunk.raw_length) {
        return fail(StrCat("chunk ", c, " (rows ", chunk.first_row, "+", chunk.row_count,
                           ", raw bytes ", chunk.raw_offset, "+", chunk.raw_length,
                           ") is not whole rows of ", row_bytes, " bytes within ", rows,
                           " rows"));
      }
    }
    return absl::OkStatus();
  }

  bool CanDecodeTo(const TensorInfo& info, OutputType out) const override {
    const int o = static_cast<int>(out);
    return IsSourceDType(info.dtype) && o >= 0 && o <= static_cast<int>(OutputType::kNative);
  }

  absl::StatusOr<uint64_t> DecodedBytes(const TensorInfo& info, OutputType out) const override {
    BP_RETURN_IF_ERROR(CheckDecodeTarget(info, out));
    BP_RETURN_IF_ERROR(CheckShape(info.shape));
    const uint64_t n = *CheckedProduct(info.shape);
    if (out == OutputType::kNative) return n / kBlockElems * kBlockBytes;
    return n * OutSize(out);  // n < 2^56, size <= 4
  }

  absl::Status Decode(const DecodeInput& input, OutputType out, absl::Span<uint8_t> dst,
                      const ExecOptions& exec) const override {
    BP_RETURN_IF_ERROR(CheckInput(input));
    const TensorInfo& info = *input.info;
    BP_RETURN_IF_ERROR(CheckDecodeTarget(info, out));
    BP_RETURN_IF_ERROR(CheckShape(info.shape));
    const uint64_t nblocks = *CheckedProduct(info.shape) / kBlockElems;
    const absl::Span<const uint8_t> data = input.streams[0];
    if (data.size() != nblocks * kBlockBytes) {
      return absl::InvalidArgumentError(StrCat("tensor '", info.name, "': blocks stream has ",
                                               data.size(), " raw bytes, expected ",
                                               nblocks * kBlockBytes));
    }
    const uint64_t out_block = OutBlockBytes(out);
    if (dst.size() < nblocks * out_block) {
      return absl::InvalidArgumentError(
          StrCat("tensor '", info.name, "': output buffer of ", dst.size(), " bytes, decode to ",
                 OutputTypeName(out), " needs ", nblocks * out_block));
    }
    return ParallelFor(nblocks, exec.threads, kMinDecodeBlocksPerTask,
                       [&](uint64_t begin, uint64_t end) {
                         DecodeBlocksTo(data.data() + begin * kBlockBytes, end - begin, out,
                                        dst.data() + begin * out_block);
                         return absl::OkStatus();
                       });
  }

  absl::Status DecodeRows(const DecodeInput& input, uint64_t row_begin, uint64_t row_end,
                          OutputType out, absl::Span<uint8_t> dst) const override {
    BP_RETURN_IF_ERROR(CheckInput(input));
    const TensorInfo& info = *input.info;
    BP_RETURN_IF_ERROR(CheckDecodeTarget(info, out));
    BP_ASSIGN_OR_RETURN(const auto range, RowRangeBytes(info, 0, row_begin, row_end));
    BP_ASSIGN_OR_RETURN(const absl::Span<const uint8_t> blocks,
                        RawBytesInInput(info, input.streams, input.raw_base, 0, range.first, range.second));
    const uint64_t nblocks = (range.second - range.first) / kBlockBytes;
    const uint64_t out_block = OutBlockBytes(out);
    if (dst.size() < nblocks * out_block) {
      return absl::InvalidArgumentError(
          StrCat("tensor '", info.name, "': output buffer of ", dst.size(), " bytes, rows ",
                 row_begin, "..", row_end, " to ", OutputTypeName(out), " need ",
                 nblocks * out_block));
    }
    DecodeBlocksTo(blocks.data(), nblocks, out, dst.data());
    return absl::OkStatus();
  }

  absl::StatusOr<std::pair<uint64_t, uint64_t>> RowRangeBytes(
      const TensorInfo& info, size_t stream_index, uint64_t row_begin,
      uint64_t row_end) const override {
    if (stream_index != 0) {
      return absl::InvalidArgumentError(StrCat("tensor '", info.name,
                                               "': codec 'iq2_xxs' has one stream, not ",
                                               stream_index + 1));
    }
    if (absl::Status s = CheckShape(info.shape); !s.ok()) {
      return absl::InvalidArgumentError(StrCat("tensor '", info.name, "': ", s.message()));
    }
    const uint64_t rows = info.row_count();
    if (row_begin > row_end || row_end > rows) {
      return absl::OutOfRangeError(StrCat("tensor '", info.name, "': rows ", row_begin, "..",
                                          row_end, " outside 0..", rows));
    }
    if (info.shape.size() == 1) {
      // A 1-d tensor's rows are its values: only whole blocks can be cut.
      if (row_begin % kBlockElems != 0 || row_end % kBlockElems != 0) {
        return absl::InvalidArgumentError(StrCat(
            "tensor '", info.name, "': rows ", row_begin, "..", row_end,
            " of a 1-d iq2_xxs tensor must start and end on a block (multiple of 256)"));
      }
      return std::make_pair(row_begin / kBlockElems * kBlockBytes,
                            row_end / kBlockElems * kBlockBytes);
    }
    // rows * row_bytes = the stream length, < 2^56: no overflow.
    const uint64_t row_bytes = RowBytes(info);
    return std::make_pair(row_begin * row_bytes, row_end * row_bytes);
  }

  absl::StatusOr<uint64_t> EncodedSize(DType dtype, absl::Span<const uint64_t> shape,
                                       const CodecParams& params) const override {
    BP_RETURN_IF_ERROR(CanEncode(dtype, shape, params));
    return *CheckedProduct(shape) / kBlockElems * kBlockBytes;
  }

  absl::StatusOr<std::optional<EncodePlan>> PlanEncode(DType dtype, absl::Span<const uint64_t> shape,
                                                       const CodecParams& params) const override {
    BP_ASSIGN_OR_RETURN(uint64_t length, EncodedSize(dtype, shape, params));
    EncodePlan plan;
    plan.record.streams.push_back(SkeletonStream(shape));
    plan.lengths.push_back(length);
    return std::optional<EncodePlan>(std::move(plan));
  }

  std::vector<int> SliceableAxes(absl::Span<const uint64_t> shape,
                                 const CodecParams& /*params*/) const override {
    // Blocks run along the innermost axis: every outer axis can be cut.
    std::vector<int> axes;
    for (size_t i = 0; i + 1 < shape.size(); ++i) axes.push_back(static_cast<int>(i));
    return axes;
  }

  std::optional<StoredLayout> Layout(DType /*dtype*/, const CodecParams& /*params*/) const override {
    return StoredLayout{kBlockElems, {kBlockBytes}};
  }
  // The stored blocks are ggml's IQ2_XXS blocks (type 16), byte for byte.
  GgmlMapping Ggml(DType /*dtype*/, const CodecParams& /*params*/) const override {
    return GgmlMapping{16, GgmlExport::kStoredBytes};
  }
  CodecTraits traits() const override {
    CodecTraits t;
    t.quantizer = true;
    t.takes_1d = false;
    return t;
  }

 private:
  // The stream's record without its bytes: Encode's and PlanEncode's.
  static EncodedStream SkeletonStream(absl::Span<const uint64_t> shape) {
    EncodedStream stream;
    stream.role = std::string(kRole);
    stream.compressible = false;  // near-random bits: zstd would not pay
    stream.chunks = MakeChunks(shape);
    return stream;
  }

  static absl::Status CheckParams(const CodecParams& params) {
    if (params.empty()) return absl::OkStatus();
    // [C-10.3.1] [I-1.4]
    return absl::InvalidArgumentError(
        StrCat("codec 'iq2_xxs' takes no parameters, got '", params[0].first, "'"));
  }

  // Shape rules shared by encode and decode.
  static absl::Status CheckShape(absl::Span<const uint64_t> shape) {
    if (shape.empty()) {
      return absl::InvalidArgumentError(
          "codec 'iq2_xxs' needs at least one dimension (blocks of 256 run along the "
          "innermost one); got a 0-d tensor");
    }
    if (shape.size() > format::kMaxDims) {
      return absl::InvalidArgumentError(StrCat("codec 'iq2_xxs': ", shape.size(),
                                               " dimensions, at most ", format::kMaxDims));
    }
    if (shape.back() % kBlockElems != 0) {
      return absl::InvalidArgumentError(StrCat(
          "codec 'iq2_xxs' needs the row length (innermost dimension) to be a multiple of 256, "
          "got ", shape.back(), " (", shape.back() % kBlockElems,
          " left over); pick another codec for this tensor (e.g. q8_0 or bf16)"));
    }
    auto n = CheckedProduct(shape);
    if (!n || *n >= format::kMaxElements) {
      return absl::ResourceExhaustedError(
          StrCat("codec 'iq2_xxs': element count ", n ? StrCat(*n) : std::string("(overflows)"),
                 " reaches the limit of 2^56"));
    }
    return absl::OkStatus();
  }

  // Bytes of one outer row (product of shape[1:] / 256 blocks) of a tensor
  // of 2 or more dimensions whose shape passed CheckShape.
  static uint64_t RowBytes(const TensorInfo& info) {
    uint64_t n = 1;
    for (size_t i = 1; i < info.shape.size(); ++i) n *= info.shape[i];
    return n / kBlockElems * kBlockBytes;
  }

  static uint64_t OutBlockBytes(OutputType out) {
    return out == OutputType::kNative ? kBlockBytes : kBlockElems * OutSize(out);
  }

  absl::Status CheckDecodeTarget(const TensorInfo& info, OutputType out) const {
    if (CanDecodeTo(info, out)) return absl::OkStatus();
    return absl::InvalidArgumentError(StrCat("tensor '", info.name,
                                             "': codec 'iq2_xxs' cannot decode dtype ",
                                             DTypeName(info.dtype), " to ", OutputTypeName(out)));
  }

  static absl::Status CheckInput(const DecodeInput& input) {
    if (input.info == nullptr) return absl::InvalidArgumentError("decode input has no record");
    if (input.streams.size() != 1 || input.info->streams.size() != 1) {
      return absl::InvalidArgumentError(StrCat("tensor '", input.info->name,
                                               "': codec 'iq2_xxs' decodes one stream, got ",
                                               input.streams.size()));
    }
    if (input.raw_base.size() > 1) {
      return absl::InvalidArgumentError(StrCat("tensor '", input.info->name, "': ",
                                               input.raw_base.size(),
                                               " raw bases for one stream"));
    }
    return absl::OkStatus();
  }

  // Whole outer rows of about kChunkTargetBytes; none for a tensor that fits
  // one chunk or has a single outer row.
  static std::vector<EncodedChunk> MakeChunks(absl::Span<const uint64_t> shape) {
    std::vector<EncodedChunk> chunks;
    const uint64_t rows = shape.size() == 1 ? 1 : shape[0];
    uint64_t row_elems = 1;
    for (size_t i = shape.size() == 1 ? 0 : 1; i < shape.size(); ++i) row_elems *= shape[i];
    const uint64_t row_bytes = row_elems / kBlockElems * kBlockBytes;
    if (rows <= 1 || row_bytes == 0 || rows * row_bytes <= kChunkTargetBytes) return chunks;
    const uint64_t per = row_bytes >= kChunkTargetBytes ? 1 : kChunkTargetBytes / row_bytes;
    for (uint64_t first = 0; first < rows; first += per) {
      const uint64_t count = rows - first < per ? rows - first : per;
      chunks.push_back(EncodedChunk{first * row_bytes, count * row_bytes, first, count});
    }
    return chunks;
  }
};

}  // namespace

std::unique_ptr<Codec> MakeIq2XxsCodec() { return std::make_unique<Iq2XxsCodec>(); }

absl::Status RegisterIq2XxsCodec() { return RegisterCodec(MakeIq2XxsCodec()); }

}  // namespace boltpack
