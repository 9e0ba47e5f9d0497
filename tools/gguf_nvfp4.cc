#include "tools/gguf_nvfp4.h"

#include <utility>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/writer.h"
#include "codecs/encoded_record.h"
#include "codecs/q8_0/q8_0_codec.h"
#include "common/escape.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/gguf_nvfp4.h"
#include "tools/llama_check.h"

namespace boltpack::tools {

bool IsTwoLevelNvfp4Codec(std::string_view codec_id, DType dtype, const CodecParams& params) {
  const Codec* codec = FindCodec(codec_id);
  return codec != nullptr && codec->Ggml(dtype, params).how == GgmlExport::kTwoLevelNvfp4;
}

bool IsTwoLevelNvfp4(const InputTensor& t, const CodecRule* rule) {
  if (rule != nullptr) return IsTwoLevelNvfp4Codec(rule->codec_id, t.dtype, rule->params);
  if (t.kind != InputKind::kBolt) return false;
  const auto shared = t.reader->SharedTensor(t.index);
  return IsTwoLevelNvfp4Codec(shared->codec_id, shared->dtype, shared->codec_params);
}

absl::StatusOr<bool> Nvfp4HasScaleTensor(const InputTensor& t, const CodecRule* rule) {
  if (rule != nullptr) return io::Nvfp4RecordHasScaleTensor(rule->params);
  const auto shared = t.reader->SharedTensor(t.index);
  const std::optional<double> ts = io::Nvfp4NumericTensorScale(shared->codec_params);
  if (!ts.has_value()) {
    return absl::InvalidArgumentError(StrCat(t.file(), ": tensor ", QuoteForDisplay(t.name),
                                             ": nvfp4 record without a numeric tensor_scale"));
  }
  return *ts != 1.0;
}

bool Nvfp4StaysNvfp4InGguf(std::string_view name, const std::vector<uint64_t>& ne, bool has_scale_tensor) {
  return !has_scale_tensor || LlamaScaleNe(name, ne).has_value();
}

absl::StatusOr<std::vector<uint64_t>> Nvfp4GgufScaleNe(const InputTensor& t, const CodecRule* rule) {
  if (!IsTwoLevelNvfp4(t, rule)) return std::vector<uint64_t>();
  BP_ASSIGN_OR_RETURN(bool has, Nvfp4HasScaleTensor(t, rule));
  if (!has) return std::vector<uint64_t>();
  std::vector<uint64_t> ne(t.shape.rbegin(), t.shape.rend());
  // The planned export keeps only those NVFP4 that llama.cpp reads a scale for.
  return LlamaScaleNe(t.name, ne).value_or(std::vector<uint64_t>{1});
}

void AdaptNvfp4PlanForGguf(const Inputs& in, CodecPlan* plan,
                           std::vector<std::string>* notes) {
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const InputTensor& t = in.tensors()[i];
    const CodecRule* rule = (*plan)[i];
    if (!IsTwoLevelNvfp4(t, rule)) continue;
    auto has = Nvfp4HasScaleTensor(t, rule);
    if (!has.ok()) continue;  // the export reports it
    if (Nvfp4StaysNvfp4InGguf(t.name, {t.shape.rbegin(), t.shape.rend()}, *has)) continue;
    CodecRule q8;
    q8.pattern = rule != nullptr ? rule->pattern : t.name;
    q8.codec_id = std::string(kQ8_0CodecId);
    plan->Set(i, std::make_shared<const CodecRule>(std::move(q8)));
    notes->push_back(StrCat(EscapeForDisplay(t.name), ": nvfp4 -> ", kQ8_0CodecId, " (llama.cpp reads no ",
                            EscapeForDisplay(io::Nvfp4ScaleTensorName(t.name)),
                            ", so NVFP4 would lose the tensor scale)"));
  }
}

absl::StatusOr<GgmlNvfp4Tensor> Nvfp4GgufBlocks(const InputTensor& t, const CodecRule* rule, int threads) {
  if (rule == nullptr) {
    const auto shared = t.reader->SharedTensor(t.index);
    const TensorInfo& info = *shared;
    if (info.streams.size() != 2) {
      return absl::InvalidArgumentError(StrCat(t.file(), ": tensor ", QuoteForDisplay(t.name), ": nvfp4 record with ",
                                               info.streams.size(), " streams, expected 2"));
    }
    absl::Span<const uint8_t> streams[2];
    std::vector<uint8_t> decompressed[2];
    for (size_t k = 0; k < 2; ++k) {
      BP_RETURN_IF_ERROR(t.reader->VerifyStream(t.index, k));
      if (info.streams[k].compression == Compression::kNone) {
        BP_ASSIGN_OR_RETURN(streams[k], t.reader->StoredStream(t.index, k));
      } else {
        decompressed[k].resize(info.streams[k].raw_length);
        BP_RETURN_IF_ERROR(t.reader->ReadRawStream(t.index, k, absl::MakeSpan(decompressed[k]), ExecOptions{threads}));
        streams[k] = decompressed[k];
      }
    }
    return Nvfp4ToGgml(info, streams[0], streams[1]);
  }
  BP_ASSIGN_OR_RETURN(std::vector<uint8_t> logical, DecodeToLogical(t, threads));
  TensorSource src{t.name, t.dtype, t.shape, logical};
  ExecOptions exec;
  exec.threads = threads;
  BP_ASSIGN_OR_RETURN(EncodedTensor enc, EncodeTensor(rule->codec_id, src, rule->params, exec));
  const TensorInfo info = RecordFor(std::string(t.name), t.dtype, {t.shape.begin(), t.shape.end()}, rule->codec_id, enc);
  if (enc.streams.size() != 2) return absl::InternalError("nvfp4 encoder wrote other than 2 streams");
  return Nvfp4ToGgml(info, enc.streams[0].bytes, enc.streams[1].bytes);
}

}  // namespace boltpack::tools
