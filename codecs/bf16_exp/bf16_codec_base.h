// The part the bf16 exponent codecs share (bf16-huffman and bf16-unary in
// bf16_exp_codecs.cc, bf16-mx in codecs/bf16_mx/): dtypes, the from_f32
// switch, decode targets, and the output of bf16 values.
#ifndef BOLTPACK_CODECS_BF16_EXP_BF16_CODEC_BASE_H_
#define BOLTPACK_CODECS_BF16_EXP_BF16_CODEC_BASE_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "boltpack/codec.h"
#include "codecs/codec_params.h"
#include "codecs/float_convert.h"
#include "common/checked_math.h"
#include "common/limits.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "common/str_cat.h"

namespace boltpack::bf16_exp {

inline constexpr std::string_view kSmRole = "sign_mantissa";
inline constexpr std::string_view kFromF32 = "from_f32";

// Writes n bf16 values to dst as `out` (kNative is bf16).
inline void EmitBf16(const uint16_t* v, size_t n, OutputType out, uint8_t* dst) {
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

inline size_t OutSize(OutputType out) { return out == OutputType::kF32 ? 4 : 2; }

// Shared by the three codecs: dtypes, the from_f32 switch, decode targets.
class Bf16CodecBase : public Codec {
 public:
  Bf16CodecBase(std::string id, std::string description)
      : id_(std::move(id)), description_(std::move(description)) {}

  std::string_view id() const override { return id_; }
  std::string_view description() const override { return description_; }

  absl::Status CanEncode(DType dtype, absl::Span<const uint64_t> shape,
                         const CodecParams& params) const override {
    // Keys and kinds as ParamSpecs declares them: from_f32, a BOOL.
    BP_RETURN_IF_ERROR(CheckEncoderParams(*this, params));
    bool from_f32 = false;
    for (const auto& [k, v] : params) from_f32 = k == kFromF32 ? v.b : from_f32;
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

  // from_f32, then what the codec stores (StoredParamSpecs).
  std::vector<CodecParamSpec> ParamSpecs() const override {
    CodecParamSpec from_f32;
    from_f32.name = kFromF32;
    from_f32.kind = ParamKind::kBool;
    from_f32.help = "let an F32 tensor be rounded to bf16 (lossy) and stored; stored as true when it was";
    from_f32.default_text = "false";
    std::vector<CodecParamSpec> specs{from_f32};
    for (CodecParamSpec& s : StoredParamSpecs()) specs.push_back(std::move(s));
    return specs;
  }

  // GGUF has no such type: exported as BF16, which holds every value the
  // codec decodes to exactly.
  GgmlMapping Ggml(DType /*dtype*/, const CodecParams& /*params*/) const override {
    return GgmlMapping{30, GgmlExport::kDecodedBf16};
  }

 protected:
  // What the encoder writes beside from_f32 (settable false).
  virtual std::vector<CodecParamSpec> StoredParamSpecs() const = 0;

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

}  // namespace boltpack::bf16_exp

#endif  // BOLTPACK_CODECS_BF16_EXP_BF16_CODEC_BASE_H_
