#include "tools/part_plan.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/numbers.h"
#include "boltpack_proto/boltpack.pb.h"
#include "common/str_cat.h"
#include "common/status_macros.h"
#include "common/xxh3.h"
#include "format/elastic_manifest.h"
#include "format/manifest_convert.h"
#include "format/part_shard.h"

namespace boltpack::tools {

absl::StatusOr<PartSpec> ParsePartSpec(std::string_view text) {
  const size_t slash = text.find('/');
  PartSpec spec;
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == text.size() || !absl::SimpleAtoi(absl::string_view(text.data(), slash), &spec.index) ||
      !absl::SimpleAtoi(absl::string_view(text.data() + slash + 1, text.size() - slash - 1), &spec.count) || spec.index < 1 || spec.index > spec.count ||
      spec.count > kMaxParts) {
    return absl::InvalidArgumentError(StrCat("--part \"", text, "\": expected I/N with 1 <= I <= N <= ", kMaxParts));
  }
  return spec;
}

uint64_t EncodeCostPerByte(std::string_view codec_id, bool reencoded) {
  // Single-core rates measured on the device machine (issue 19): q8_0 557 M
  // weights/s, nvfp4 395, bf16-huffman 314; iq2_xxs' search is about 100
  // times q8_0. A copy only reads and writes.
  if (!reencoded) return 10;
  if (codec_id == "iq2_xxs") return 10000;
  if (codec_id == "q8_0" || codec_id == "f32" || codec_id == "f16" || codec_id == "bf16" || codec_id == "raw") {
    return 100;
  }
  if (codec_id == "nvfp4") return 140;
  if (codec_id == "bf16-huffman") return 180;
  return 300;  // another quantizer: more than the simple ones, far less than a search
}

namespace {

uint64_t InputBytesOf(const InputTensor& t) {
  return t.kind == InputKind::kBolt ? t.reader->SharedTensor(t.index)->stored_bytes() : t.bytes.size();
}

// What the plan depends on, in one string: the tensors (name, dtype,
// shape, bytes), the codec each takes with its parameters, and the split.
std::string PlanIdentity(const Inputs& in, const CodecPlan& plan, const PartPlan& parts) {
  std::string id = StrCat("bolt-pack part plan 1;", parts.spec.count, ";", in.tensors().size(), ";");
  for (size_t k = 0; k < in.tensors().size(); ++k) {
    const InputTensor& t = in.tensors()[k];
    id += StrCat(t.name.size(), ":", t.name, ";", static_cast<int>(t.dtype), ";", InputBytesOf(t), ";");
    for (uint64_t d : t.shape) id += StrCat(d, ",");
    const CodecRule* rule = plan[k];
    id += StrCat(";", rule != nullptr ? rule->codec_id : std::string("="), ";");
    if (rule != nullptr) {
      for (const auto& [name, value] : rule->params) {
        v1::Value v;
        format::ToProto(value, &v);
        id += StrCat(name, "=", v.SerializeAsString().size(), ":", v.SerializeAsString(), ";");
      }
    }
    id += StrCat(parts.part_of[k], "\n");
  }
  return id;
}

}  // namespace

PartPlan PlanParts(const Inputs& in, const CodecPlan& plan, PartSpec spec) {
  const auto& tensors = in.tensors();
  std::vector<uint64_t> cost(tensors.size());
  for (size_t k = 0; k < tensors.size(); ++k) {
    const CodecRule* rule = plan[k];
    const uint64_t per_byte = EncodeCostPerByte(rule != nullptr ? rule->codec_id : tensors[k].SourceCodec(), rule != nullptr);
    // Saturating: an estimate, never an overflow (a tensor of 2^60 bytes
    // is not converted anyway).
    const uint64_t bytes = InputBytesOf(tensors[k]) + 1;  // an empty tensor still costs a record
    cost[k] = bytes > UINT64_MAX / per_byte ? UINT64_MAX / kMaxParts : bytes * per_byte;
  }
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  PartPlan out;
  out.spec = spec;
  out.part_of.assign(tensors.size(), 0);
  out.load.assign(spec.count, 0);
  for (size_t k : order) {
    const size_t least = static_cast<size_t>(std::min_element(out.load.begin(), out.load.end()) - out.load.begin());
    out.part_of[k] = static_cast<uint32_t>(least);
    out.load[least] = out.load[least] > UINT64_MAX - cost[k] ? UINT64_MAX : out.load[least] + cost[k];
  }
  const std::string identity = PlanIdentity(in, plan, out);
  out.plan_id = Xxh3(absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(identity.data()), identity.size()));
  return out;
}

absl::Status AddPartMetadata(Writer& writer, const PartPlan& plan, const ElasticManifest* elastic) {
  BP_RETURN_IF_ERROR(writer.AddMetadata(format::kPartIndexKey, MetaValue::Uint(ValueType::kUint32, plan.spec.index)));
  BP_RETURN_IF_ERROR(writer.AddMetadata(format::kPartCountKey, MetaValue::Uint(ValueType::kUint32, plan.spec.count)));
  BP_RETURN_IF_ERROR(writer.AddMetadata(format::kPartPlanKey, MetaValue::Uint(ValueType::kUint64, plan.plan_id)));
  BP_RETURN_IF_ERROR(
      writer.AddMetadata(format::kPartTensorsKey, MetaValue::Uint(ValueType::kUint64, plan.part_of.size())));
  std::string order;
  for (size_t k = 0; k < plan.part_of.size(); ++k) {
    if (!plan.Keeps(k)) continue;
    for (int b = 0; b < 8; ++b) order.push_back(static_cast<char>((static_cast<uint64_t>(k) >> (8 * b)) & 0xff));
  }
  BP_RETURN_IF_ERROR(writer.AddMetadata(format::kPartOrderKey, MetaValue::PackedArray(ValueType::kUint64, std::move(order))));
  if (elastic != nullptr) {
    v1::ElasticManifest proto;
    format::ElasticToProto(*elastic, &proto);
    BP_RETURN_IF_ERROR(writer.AddMetadata(format::kPartElasticKey,
                                          MetaValue::PackedArray(ValueType::kUint8, proto.SerializeAsString())));
  }
  return absl::OkStatus();
}

}  // namespace boltpack::tools
