#include "codecs/raw/raw_codecs.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "boltpack/codec_registry.h"
#include "codecs/float_convert.h"
#include "codecs/raw_range.h"
#include "common/checked_math.h"
#include "common/huge_pages.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "common/limits.h"

namespace boltpack {
namespace {

constexpr std::string_view kDataRole = "data";
// Elements per parallel task: below this, starting a thread costs more than
// converting (a conversion runs at several elements per nanosecond).
constexpr uint64_t kMinElementsPerTask = uint64_t{1} << 16;
// With a reader's ReadProgress, DecodeRows converts in steps of about this
// many stored bytes and reports after each, while they are still in L1
// (the reader hashes them then).
constexpr uint64_t kStepStoredBytes = uint64_t{8} << 10;

bool IsKnownDType(DType d) {
  const int v = static_cast<int>(d);
  return v >= 1 && v <= kMaxDType;
}

std::optional<DType> OutputDType(OutputType out) {
  switch (out) {
    case OutputType::kF32: return DType::kF32;
    case OutputType::kBF16: return DType::kBF16;
    case OutputType::kF16: return DType::kF16;
    case OutputType::kNative: return std::nullopt;
  }
  return std::nullopt;
}

// Shared by the four codecs; they differ only in the stored element type and
// in which source dtypes they take.
class ElementCodec : public Codec {
 public:
  // stored == kUnspecified: the "raw" codec (stored type = the tensor dtype).
  ElementCodec(std::string id, std::string description, DType stored)
      : id_(std::move(id)), description_(std::move(description)), stored_(stored) {}

  std::string_view id() const override { return id_; }
  std::string_view description() const override { return description_; }

  absl::Status CanEncode(DType dtype, absl::Span<const uint64_t> shape,
                         const CodecParams& params) const override {
    BP_RETURN_IF_ERROR(CheckDType(dtype));
    BP_RETURN_IF_ERROR(CheckParams(params));
    if (shape.size() > format::kMaxDims) {
      return absl::InvalidArgumentError(StrCat("codec '", id_, "': ", shape.size(),
                                                     " dimensions, at most ",
                                                     format::kMaxDims));
    }
    return ElementCount(shape).status();
  }

  absl::StatusOr<EncodedTensor> Encode(const TensorSource& source, const CodecParams& params,
                                       const ExecOptions& exec) const override {
    auto named = [&](absl::Status s) {
      return absl::Status(s.code(),
                          StrCat("tensor '", source.name, "': ", s.message()));
    };
    if (absl::Status s = CanEncode(source.dtype, source.shape, params); !s.ok()) {
      return named(s);
    }
    const uint64_t n = *ElementCount(source.shape);
    const uint64_t src_size = static_cast<uint64_t>(DTypeSize(source.dtype));
    const DType stored = StoredDType(source.dtype);
    const uint64_t stored_size = static_cast<uint64_t>(DTypeSize(stored));
    // CanEncode bounded n by 2^56 and sizes are at most 8 bytes: no overflow.
    if (source.bytes.size() != n * src_size) {
      return named(absl::InvalidArgumentError(
          StrCat("codec '", id_, "': ", source.bytes.size(), " source bytes, expected ",
                       n, " elements x ", src_size, " bytes")));
    }

    EncodedStream stream = SkeletonStream(source.shape, stored_size);
    ResizeHuge(stream.bytes, static_cast<size_t>(n * stored_size));
    const uint8_t* src = source.bytes.data();
    uint8_t* dst = stream.bytes.data();
    BP_RETURN_IF_ERROR(ParallelFor(
        n, exec.threads, kMinElementsPerTask, [&](uint64_t begin, uint64_t end) {
          Convert(source.dtype, stored, src + begin * src_size, dst + begin * stored_size,
                  end - begin);
          return absl::OkStatus();
        }));

    EncodedTensor encoded;
    encoded.streams.push_back(std::move(stream));
    return encoded;
  }

  // [C-10.3.1] [C-10.4.1]
  absl::Status ValidateRecord(const TensorInfo& info) const override {
    auto fail = [&](const auto& what) {
      return absl::InvalidArgumentError(
          StrCat("tensor '", info.name, "' (codec '", id_, "'): ", what));
    };
    if (info.codec_id != id_) {
      return fail(StrCat("record names codec '", info.codec_id, "'"));
    }
    if (absl::Status s = CheckDType(info.dtype); !s.ok()) return fail(s.message());
    if (absl::Status s = CheckParams(info.codec_params); !s.ok()) return fail(s.message());
    if (info.shape.size() > format::kMaxDims) {
      return fail(StrCat(info.shape.size(), " dimensions, at most ", format::kMaxDims));
    }
    auto n = ElementCount(info.shape);
    if (!n.ok()) return fail(n.status().message());
    if (info.streams.size() != 1) {
      return fail(StrCat("expected exactly one stream (role \"data\"), found ",
                               info.streams.size()));
    }
    const StreamInfo& stream = info.streams[0];
    if (stream.role != kDataRole) {
      return fail(StrCat("stream role is \"", stream.role, "\", expected \"data\""));
    }
    const uint64_t stored_size = static_cast<uint64_t>(DTypeSize(StoredDType(info.dtype)));
    // n < 2^56 and stored_size <= 8, so this cannot overflow; CheckedMul
    // anyway, so the check stays sound if the limits ever move.
    auto expected = CheckedMul(*n, stored_size);
    if (!expected || stream.raw_length != *expected) {
      // [C-10.3.1]
      return fail(StrCat("data stream raw length is ", stream.raw_length, ", expected ",
                               *n, " elements x ", stored_size, " bytes"));
    }
    // Chunks must be whole rows at the offsets the rows imply, as Encode
    // writes them; row-range reads trust first_row/row_count.
    // row_elements() saturates: with a zero outer dimension the inner ones
    // are unbounded by the element limit.
    const auto row_bytes = CheckedMul(info.row_elements(), stored_size);
    const uint64_t rows = info.row_count();
    for (size_t c = 0; c < stream.chunks.size(); ++c) {
      const ChunkInfo& chunk = stream.chunks[c];
      auto offset = row_bytes ? CheckedMul(chunk.first_row, *row_bytes) : std::nullopt;
      auto length = row_bytes ? CheckedMul(chunk.row_count, *row_bytes) : std::nullopt;
      auto end_row = CheckedAdd(chunk.first_row, chunk.row_count);
      if (!offset || !length || !end_row || *end_row > rows || *offset != chunk.raw_offset ||
          *length != chunk.raw_length) {
        // [C-10.3.1]
        return fail(StrCat("chunk ", c, " (rows ", chunk.first_row, "+",
                                 chunk.row_count, ", raw bytes ", chunk.raw_offset, "+",
                                 chunk.raw_length, ") is not whole rows of ",
                                 row_bytes ? StrCat(*row_bytes) : std::string("(overflowing)"),
                                 " bytes within ", rows, " rows"));
      }
    }
    return absl::OkStatus();
  }

  bool CanDecodeTo(const TensorInfo& info, OutputType out) const override {
    if (!CheckDType(info.dtype).ok()) return false;
    if (out == OutputType::kNative) return true;
    // Float targets only from stored f32/f16/bf16: "raw" holding F64 (or
    // anything else) decodes to its native bytes only.
    const DType stored = StoredDType(info.dtype);
    if (stored != DType::kF32 && stored != DType::kF16 && stored != DType::kBF16) return false;
    auto target = OutputDType(out);
    return target.has_value() && CanConvertFloats(stored, *target);
  }

  absl::StatusOr<uint64_t> DecodedBytes(const TensorInfo& info, OutputType out) const override {
    BP_RETURN_IF_ERROR(CheckDecodeTarget(info, out));
    BP_ASSIGN_OR_RETURN(const uint64_t n, ElementCount(info.shape));
    auto bytes = CheckedMul(n, OutElementSize(info, out));
    if (!bytes) return absl::OutOfRangeError("decoded size overflows");
    return *bytes;
  }

  absl::Status Decode(const DecodeInput& input, OutputType out, absl::Span<uint8_t> dst,
                      const ExecOptions& exec) const override {
    BP_RETURN_IF_ERROR(CheckInput(input));
    const TensorInfo& info = *input.info;
    BP_RETURN_IF_ERROR(CheckDecodeTarget(info, out));
    const uint64_t n = info.element_count();  // validated: < 2^56
    const DType stored = StoredDType(info.dtype);
    const uint64_t stored_size = static_cast<uint64_t>(DTypeSize(stored));
    const uint64_t out_size = OutElementSize(info, out);
    const absl::Span<const uint8_t> data = input.streams[0];
    if (data.size() != n * stored_size) {
      return absl::InvalidArgumentError(
          StrCat("tensor '", info.name, "': data stream has ", data.size(),
                       " raw bytes, expected ", n * stored_size));
    }
    if (dst.size() < n * out_size) {
      return absl::InvalidArgumentError(
          StrCat("tensor '", info.name, "': output buffer of ", dst.size(),
                       " bytes, decode to ", OutputTypeName(out), " needs ", n * out_size));
    }
    const DType target = OutputDType(out).value_or(stored);
    return ParallelFor(n, exec.threads, kMinElementsPerTask, [&](uint64_t begin, uint64_t end) {
      Convert(stored, target, data.data() + begin * stored_size, dst.data() + begin * out_size,
              end - begin);
      return absl::OkStatus();
    });
  }

  absl::Status DecodeRows(const DecodeInput& input, uint64_t row_begin, uint64_t row_end,
                          OutputType out, absl::Span<uint8_t> dst) const override {
    BP_RETURN_IF_ERROR(CheckInput(input));
    const TensorInfo& info = *input.info;
    BP_RETURN_IF_ERROR(CheckDecodeTarget(info, out));
    BP_ASSIGN_OR_RETURN(const auto range, RowRangeBytes(info, 0, row_begin, row_end));
    BP_ASSIGN_OR_RETURN(const absl::Span<const uint8_t> rows,
                        RawBytesInInput(info, input.streams, input.raw_base, 0, range.first, range.second));
    const DType stored = StoredDType(info.dtype);
    const uint64_t stored_size = static_cast<uint64_t>(DTypeSize(stored));
    const uint64_t out_size = OutElementSize(info, out);
    const uint64_t n = (range.second - range.first) / stored_size;
    if (dst.size() < n * out_size) {
      return absl::InvalidArgumentError(
          StrCat("tensor '", info.name, "': output buffer of ", dst.size(),
                       " bytes, rows ", row_begin, "..", row_end, " to ", OutputTypeName(out),
                       " need ", n * out_size));
    }
    const DType target = OutputDType(out).value_or(stored);
    const uint64_t step = input.progress == nullptr ? n : std::max<uint64_t>(1, kStepStoredBytes / stored_size);
    for (uint64_t i = 0; i < n; i += step) {
      const uint64_t c = std::min(step, n - i);
      Convert(stored, target, rows.data() + i * stored_size, dst.data() + i * out_size, c);
      if (input.progress != nullptr) input.progress->ReadTo(0, range.first + (i + c) * stored_size);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::pair<uint64_t, uint64_t>> RowRangeBytes(
      const TensorInfo& info, size_t stream_index, uint64_t row_begin,
      uint64_t row_end) const override {
    if (stream_index != 0) {
      return absl::InvalidArgumentError(StrCat("tensor '", info.name, "': codec '", id_,
                                                     "' has one stream, not ", stream_index + 1));
    }
    const uint64_t rows = info.row_count();
    if (row_begin > row_end || row_end > rows) {
      return absl::OutOfRangeError(StrCat("tensor '", info.name, "': rows ", row_begin,
                                                "..", row_end, " outside 0..", rows));
    }
    if (!CheckDType(info.dtype).ok()) {
      return absl::InvalidArgumentError(StrCat("tensor '", info.name, "': codec '", id_,
                                                     "' cannot store dtype ",
                                                     DTypeName(info.dtype)));
    }
    const uint64_t stored_size = static_cast<uint64_t>(DTypeSize(StoredDType(info.dtype)));
    auto row_bytes = CheckedMul(info.row_elements(), stored_size);
    auto begin = row_bytes ? CheckedMul(row_begin, *row_bytes) : std::nullopt;
    auto end = row_bytes ? CheckedMul(row_end, *row_bytes) : std::nullopt;
    if (!begin || !end) {
      return absl::OutOfRangeError(
          StrCat("tensor '", info.name, "': row byte range overflows"));
    }
    return std::make_pair(*begin, *end);
  }

  absl::StatusOr<uint64_t> EncodedSize(DType dtype, absl::Span<const uint64_t> shape,
                                       const CodecParams& params) const override {
    BP_RETURN_IF_ERROR(CanEncode(dtype, shape, params));
    return *ElementCount(shape) * static_cast<uint64_t>(DTypeSize(StoredDType(dtype)));
  }

  absl::StatusOr<std::optional<EncodePlan>> PlanEncode(DType dtype, absl::Span<const uint64_t> shape,
                                                       const CodecParams& params) const override {
    BP_ASSIGN_OR_RETURN(uint64_t length, EncodedSize(dtype, shape, params));
    EncodePlan plan;
    plan.record.streams.push_back(SkeletonStream(shape, static_cast<uint64_t>(DTypeSize(StoredDType(dtype)))));
    plan.lengths.push_back(length);
    return std::optional<EncodePlan>(std::move(plan));
  }

  std::vector<int> SliceableAxes(absl::Span<const uint64_t> shape,
                                 const CodecParams& /*params*/) const override {
    // Every element is stored whole and in place: any sub-box can be cut.
    std::vector<int> axes(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) axes[i] = static_cast<int>(i);
    return axes;
  }

  std::optional<StoredLayout> Layout(DType dtype, const CodecParams& /*params*/) const override {
    const int size = DTypeSize(StoredDType(dtype));
    if (size <= 0) return std::nullopt;
    return StoredLayout{1, {static_cast<uint64_t>(size)}};
  }

  // GGUF holds each of these element types as a ggml type of its own.
  GgmlMapping Ggml(DType dtype, const CodecParams& /*params*/) const override {
    int type = -1;
    switch (StoredDType(dtype)) {
      case DType::kF32: type = 0; break;
      case DType::kF16: type = 1; break;
      case DType::kBF16: type = 30; break;
      case DType::kI8: type = 24; break;
      case DType::kI16: type = 25; break;
      case DType::kI32: type = 26; break;
      case DType::kI64: type = 27; break;
      case DType::kF64: type = 28; break;
      default: return {};
    }
    return GgmlMapping{type, GgmlExport::kStoredBytes};
  }

  CodecTraits traits() const override {
    CodecTraits t;
    t.element = true;
    t.element_dtype = stored_;
    return t;
  }

 private:
  bool is_raw() const { return stored_ == DType::kUnspecified; }

  DType StoredDType(DType dtype) const { return is_raw() ? dtype : stored_; }

  absl::Status CheckDType(DType dtype) const {
    if (is_raw()) {
      if (IsKnownDType(dtype)) return absl::OkStatus();
      return absl::InvalidArgumentError(StrCat(
          "codec '", id_, "' needs a known dtype, got ", static_cast<int>(dtype)));
    }
    if (dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16 ||
        dtype == DType::kF64) {
      return absl::OkStatus();
    }
    // [C-10.3.1]
    return absl::InvalidArgumentError(
        StrCat("codec '", id_, "' stores float tensors (F32, F16, BF16, F64), not ",
                     DTypeName(dtype), "; use codec 'raw' to store other dtypes unchanged"));
  }

  absl::Status CheckParams(const CodecParams& params) const {
    // Rejected rather than ignored: a parameter this version does not know
    // might change what the bytes mean.
    if (params.empty()) return absl::OkStatus();
    // [C-10.4.1]
    return absl::InvalidArgumentError(StrCat("codec '", id_,
                                                   "' takes no parameters, got '",
                                                   params[0].first, "'"));
  }

  absl::StatusOr<uint64_t> ElementCount(absl::Span<const uint64_t> shape) const {
    auto n = CheckedProduct(shape);
    if (!n || *n >= format::kMaxElements) {
      return absl::ResourceExhaustedError(
          StrCat("codec '", id_, "': element count ",
                       n ? StrCat(*n) : std::string("(overflows)"),
                       " reaches the limit of 2^56"));
    }
    return *n;
  }

  // Product of shape[1:]; callers have bounded the whole product already.
  static uint64_t RowElements(absl::Span<const uint64_t> shape) {
    uint64_t n = 1;
    for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
    return n;
  }

  uint64_t OutElementSize(const TensorInfo& info, OutputType out) const {
    return out == OutputType::kNative
               ? static_cast<uint64_t>(DTypeSize(StoredDType(info.dtype)))
               : static_cast<uint64_t>(OutputTypeSize(out));
  }

  absl::Status CheckDecodeTarget(const TensorInfo& info, OutputType out) const {
    if (CanDecodeTo(info, out)) return absl::OkStatus();
    return absl::InvalidArgumentError(StrCat("tensor '", info.name, "': codec '", id_,
                                                   "' cannot decode dtype ",
                                                   DTypeName(info.dtype), " to ",
                                                   OutputTypeName(out)));
  }

  absl::Status CheckInput(const DecodeInput& input) const {
    if (input.info == nullptr) return absl::InvalidArgumentError("decode input has no record");
    if (input.streams.size() != 1 || input.info->streams.size() != 1) {
      return absl::InvalidArgumentError(
          StrCat("tensor '", input.info->name, "': codec '", id_,
                       "' decodes one stream, got ", input.streams.size()));
    }
    if (input.raw_base.size() > 1) {
      return absl::InvalidArgumentError(
          StrCat("tensor '", input.info->name, "': ", input.raw_base.size(),
                       " raw bases for one stream"));
    }
    return absl::OkStatus();
  }

  // Both dtypes are allowed ones (checked by the callers): a float conversion
  // or, for equal types (any dtype under "raw"), a copy.
  static void Convert(DType from, DType to, const uint8_t* src, uint8_t* dst, uint64_t n) {
    if (from == to) {
      if (n != 0) std::memcpy(dst, src, static_cast<size_t>(n) * DTypeSize(from));
      return;
    }
    ConvertFloats(from, to, src, dst, static_cast<size_t>(n));
  }

  // The stream's record without its bytes: Encode's and PlanEncode's.
  static EncodedStream SkeletonStream(absl::Span<const uint64_t> shape, uint64_t stored_size) {
    EncodedStream stream;
    stream.role = std::string(kDataRole);
    stream.chunks = MakeChunks(shape, stored_size);
    return stream;
  }

  // Whole outer rows of about kRawChunkTargetBytes each; none when the
  // tensor fits in one such chunk anyway.
  static std::vector<EncodedChunk> MakeChunks(absl::Span<const uint64_t> shape,
                                              uint64_t stored_size) {
    std::vector<EncodedChunk> chunks;
    const uint64_t rows = shape.empty() ? 1 : shape[0];
    const uint64_t row_bytes = RowElements(shape) * stored_size;
    if (rows <= 1 || row_bytes == 0 || rows * row_bytes <= kRawChunkTargetBytes) return chunks;
    const uint64_t rows_per_chunk =
        row_bytes >= kRawChunkTargetBytes ? 1 : kRawChunkTargetBytes / row_bytes;
    chunks.reserve(static_cast<size_t>((rows + rows_per_chunk - 1) / rows_per_chunk));
    for (uint64_t first = 0; first < rows; first += rows_per_chunk) {
      const uint64_t count = rows - first < rows_per_chunk ? rows - first : rows_per_chunk;
      chunks.push_back(EncodedChunk{first * row_bytes, count * row_bytes, first, count});
    }
    return chunks;
  }

  std::string id_;
  std::string description_;
  DType stored_;
};

}  // namespace

std::unique_ptr<Codec> MakeFloatElementCodec(DType stored) {
  switch (stored) {
    case DType::kF32:
      return std::make_unique<ElementCodec>(
          "f32", "IEEE binary32 elements (from F64 by C cast)", DType::kF32);
    case DType::kF16:
      return std::make_unique<ElementCodec>(
          "f16", "IEEE binary16 elements, round to nearest even as ggml", DType::kF16);
    case DType::kBF16:
      return std::make_unique<ElementCodec>(
          "bf16", "bfloat16 elements, round to nearest even as ggml", DType::kBF16);
    default:
      return nullptr;
  }
}

std::unique_ptr<Codec> MakeRawCodec() {
  return std::make_unique<ElementCodec>("raw", "the source bytes of any dtype, unchanged",
                                        DType::kUnspecified);
}

std::string_view ElementCodecFor(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    default: return "raw";
  }
}

absl::Status RegisterRawCodecs() {
  BP_RETURN_IF_ERROR(RegisterCodec(MakeFloatElementCodec(DType::kF32)));
  BP_RETURN_IF_ERROR(RegisterCodec(MakeFloatElementCodec(DType::kF16)));
  BP_RETURN_IF_ERROR(RegisterCodec(MakeFloatElementCodec(DType::kBF16)));
  BP_RETURN_IF_ERROR(RegisterCodec(MakeRawCodec()));
  return absl::OkStatus();
}

}  // namespace boltpack
