#include "codecs/ggml/ggml_codec.h"

#include <optional>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "common/checked_math.h"
#include "common/status_macros.h"
#include "common/str_cat.h"

namespace boltpack {
namespace {

constexpr std::string_view kDataRole = "data";
constexpr std::string_view kTypeParam = "ggml_type";

class GgmlPassThroughCodec : public Codec {
 public:
  explicit GgmlPassThroughCodec(const GgmlType& type)
      : type_(type),
        id_(GgmlTypeCodecId(type)),
        description_(StrCat("ggml ", type.name, " blocks as GGUF stores them (", type.block_size, " elements in ",
                            type.type_size, " bytes); copied and exported, not decoded by this version")) {}

  std::string_view id() const override { return id_; }
  std::string_view description() const override { return description_; }

  absl::Status CanEncode(DType, absl::Span<const uint64_t>, const CodecParams&) const override {
    return NotHere("encoded");
  }
  absl::StatusOr<EncodedTensor> Encode(const TensorSource&, const CodecParams&, const ExecOptions&) const override {
    return NotHere("encoded");
  }

  // [C-10.3.1]
  absl::Status ValidateRecord(const TensorInfo& info) const override {
    if (info.codec_id != id_) return Fail(info, StrCat("record names codec \"", info.codec_id, "\""));
    if (info.dtype != DType::kF32) return Fail(info, StrCat("dtype ", DTypeName(info.dtype), " is not F32"));
    BP_RETURN_IF_ERROR(CheckParams(info));
    if (info.streams.size() != 1 || info.streams[0].role != kDataRole) {
      return Fail(info, StrCat("expected one stream \"data\", found ", info.streams.size(),
                               info.streams.empty() ? "" : StrCat(" (the first \"", info.streams[0].role, "\")")));
    }
    auto bytes = GgmlTensorBytes(type_, std::vector<uint64_t>(info.shape.rbegin(), info.shape.rend()));
    if (!bytes.ok()) return Fail(info, std::string(bytes.status().message()));
    const StreamInfo& s = info.streams[0];
    if (s.raw_length != *bytes) {
      return Fail(info, StrCat("stream \"data\" raw length is ", s.raw_length, ", but ", type_.name, " (",
                               type_.block_size, " elements in ", type_.type_size, " bytes) of this shape is ",
                               *bytes, " bytes"));
    }
    return CheckChunks(info, *bytes);
  }
  bool CanDecodeTo(const TensorInfo&, OutputType) const override { return true; }
  absl::StatusOr<uint64_t> DecodedBytes(const TensorInfo& info, OutputType) const override {
    return NotDecoded(info);
  }
  absl::Status Decode(const DecodeInput& input, OutputType, absl::Span<uint8_t>, const ExecOptions&) const override {
    return NotDecoded(*input.info);
  }
  absl::Status DecodeRows(const DecodeInput& input, uint64_t, uint64_t, OutputType,
                          absl::Span<uint8_t>) const override {
    return NotDecoded(*input.info);
  }
  absl::StatusOr<uint64_t> EncodedSize(DType, absl::Span<const uint64_t> shape, const CodecParams&) const override {
    return GgmlTensorBytes(type_, std::vector<uint64_t>(shape.rbegin(), shape.rend()));
  }
  // As the block codecs: the outer axes (the elastic rules also let the
  // innermost be cut in whole blocks); cuts are made on the stored bytes.
  std::vector<int> SliceableAxes(absl::Span<const uint64_t> shape, const CodecParams&) const override {
    std::vector<int> axes;
    for (int a = 0; a + 1 < static_cast<int>(shape.size()); ++a) axes.push_back(a);
    return axes;
  }
  // The cells are the blocks of the type the record's "ggml_type" names
  // (ValidateRecord checks it names this codec's type); none without it.
  std::optional<StoredLayout> Layout(DType, const CodecParams& params) const override {
    for (const auto& [key, value] : params) {
      if (key != kTypeParam || !IsSignedInt(value.type)) continue;
      if (value.i < 0 || value.i > 1000) return std::nullopt;
      const GgmlType* t = GgmlTypeById(static_cast<int>(value.i));
      if (t == nullptr || t->block_size == 0) return std::nullopt;
      return StoredLayout{t->block_size, {t->type_size}};
    }
    return std::nullopt;
  }
  CodecTraits traits() const override {
    CodecTraits t;
    t.copy_only = true;
    return t;
  }
  std::vector<CodecParamSpec> ParamSpecs() const override {
    CodecParamSpec type;
    type.name = kTypeParam;
    type.kind = ParamKind::kInteger;
    type.help = "the GGUF tensor type of the blocks";
    type.min = type.max = type_.id;
    type.settable = false;
    return {type};
  }
  // Exported as the GGUF type it came from, its blocks unchanged; not when a
  // "ggml_type" parameter names another type.
  GgmlMapping Ggml(DType, const CodecParams& params) const override {
    for (const auto& [key, value] : params) {
      if (key == kTypeParam && (value.type != ValueType::kInt32 || value.i != type_.id)) return {};
    }
    return GgmlMapping{type_.id, GgmlExport::kStoredBytes};
  }

 private:
  absl::Status NotHere(std::string_view what) const {
    return absl::UnimplementedError(StrCat("codec ggml type ", type_.name, ": not ", what, " by this version"));
  }
  absl::Status NotDecoded(const TensorInfo& info) const {
    return absl::UnimplementedError(StrCat("tensor \"", info.name, "\": codec ggml type ", type_.name,
                                           ": not decoded by this version (its blocks are checksummed, copied and "
                                           "exported to GGUF unchanged)"));
  }
  absl::Status Fail(const TensorInfo& info, const std::string& what) const {
    return absl::InvalidArgumentError(StrCat("tensor \"", info.name, "\" (codec \"", id_, "\"): ", what));
  }
  absl::Status CheckParams(const TensorInfo& info) const {
    const auto& p = info.codec_params;
    if (p.size() != 1 || p[0].first != kTypeParam || p[0].second.type != ValueType::kInt32 ||
        p[0].second.i != type_.id) {
      return Fail(info, StrCat("parameters must be exactly INT32 \"ggml_type\" = ", type_.id, " (", type_.name, ")"));
    }
    return absl::OkStatus();
  }
  // Chunks hold whole outer rows (a 1-D tensor, one innermost row, has none).
  absl::Status CheckChunks(const TensorInfo& info, uint64_t bytes) const {
    const StreamInfo& s = info.streams[0];
    if (s.chunks.empty()) return absl::OkStatus();
    if (info.shape.size() < 2) return Fail(info, "stream \"data\" of a tensor of fewer than 2 dimensions has chunks");
    const uint64_t rows = info.shape[0];
    const uint64_t row_bytes = rows == 0 ? 0 : bytes / rows;
    for (size_t c = 0; c < s.chunks.size(); ++c) {
      const ChunkInfo& chunk = s.chunks[c];
      auto offset = CheckedMul(chunk.first_row, row_bytes);
      auto length = CheckedMul(chunk.row_count, row_bytes);
      auto end_row = CheckedAdd(chunk.first_row, chunk.row_count);
      if (!offset || !length || !end_row || *end_row > rows || *offset != chunk.raw_offset ||
          *length != chunk.raw_length) {
        // [C-10.3.1]
        return Fail(info, StrCat("stream \"data\" chunk ", c, " is not whole rows of ", row_bytes, " bytes within ",
                                 rows, " rows"));
      }
    }
    return absl::OkStatus();
  }

  const GgmlType& type_;
  std::string id_;
  std::string description_;
};

}  // namespace

std::unique_ptr<Codec> MakeGgmlPassThroughCodec(const GgmlType& type) {
  return std::make_unique<GgmlPassThroughCodec>(type);
}

absl::Status RegisterGgmlPassThroughCodecs() {
  for (const GgmlType& type : GgmlTypes()) {
    if (GgmlTypeCodecId(type).rfind("ggml-", 0) != 0) continue;  // a codec of its own holds it
    BP_RETURN_IF_ERROR(RegisterCodec(MakeGgmlPassThroughCodec(type)));
  }
  return absl::OkStatus();
}

}  // namespace boltpack
