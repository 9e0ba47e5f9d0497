#include "io/gguf_record.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "common/escape.h"
#include "common/str_cat.h"

namespace boltpack::io {

namespace {

// Stream roles and parameters a registered block codec writes, learnt once
// by encoding one zero block.
struct CodecShape {
  bool known = false;
  std::vector<std::string> roles;
  CodecParams params;
};

CodecShape ProbeCodec(const std::string& id, uint32_t block) {
  static std::mutex mu;
  static std::map<std::string, CodecShape> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(id);
  if (it != cache.end()) return it->second;
  CodecShape shape;
  if (const Codec* codec = FindCodec(id)) {
    std::vector<float> zeros(block, 0.0f);
    uint64_t dims[1] = {block};
    TensorSource src{"probe", DType::kF32, absl::MakeConstSpan(dims),
                     absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(zeros.data()), zeros.size() * 4)};
    auto enc = codec->Encode(src, {}, ExecOptions{});
    if (enc.ok()) {
      shape.known = true;
      for (const auto& s : enc->streams) shape.roles.push_back(s.role);
      shape.params = enc->params;
    }
  }
  cache.emplace(id, shape);
  return shape;
}

}  // namespace

absl::StatusOr<TensorInfo> GgufBlockRecord(std::string_view name, absl::Span<const uint64_t> shape, DType dtype,
                                           const GgmlType& type, uint64_t nbytes, std::string_view file) {
  TensorInfo info;
  info.name = std::string(name);
  info.shape.assign(shape.begin(), shape.end());
  info.dtype = dtype;
  info.codec_id = GgmlTypeCodecId(type);
  if (info.codec_id.rfind("ggml-", 0) == 0) {
    info.codec_params.emplace_back("ggml_type", MetaValue::Int(ValueType::kInt32, type.id));
  }
  CodecShape probed = ProbeCodec(info.codec_id, type.block_size);
  StreamInfo s;
  s.role = "data";
  if (probed.known) {
    if (probed.roles.size() != 1) {
      return absl::UnimplementedError(StrCat(file, ": tensor ", QuoteForDisplay(name), ": codec \"", info.codec_id,
                                             "\" stores ", probed.roles.size(), " streams, GGUF blocks are one"));
    }
    s.role = probed.roles[0];
    info.codec_params = probed.params;
  }
  s.raw_length = nbytes;
  s.length = nbytes;
  info.streams.push_back(std::move(s));
  return info;
}

}  // namespace boltpack::io
