#include "tools/elastic_convert.h"

#include "boltpack/reader.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "format/elastic_ssm_keys.h"
#include "format/elastic_validate.h"
#include "common/mapped_file.h"

namespace boltpack::tools {

namespace {

// Per input tensor, the codec (and params) it is stored with in the output,
// as validation refs.
struct FinalCodecs {
  FinalCodecs(const Inputs& in, const CodecPlan& plan)
      : codec_ids(in.tensors().size()), params(in.tensors().size()), refs(in.tensors().size()) {
    for (size_t i = 0; i < in.tensors().size(); ++i) {
      const InputTensor& t = in.tensors()[i];
      if (plan[i] && plan[i]->codec_id != kKeepCodec) {
        codec_ids[i] = plan[i]->codec_id;
        params[i] = plan[i]->params;
      } else if (t.kind == InputKind::kBolt) {
        const auto info = t.reader->SharedTensor(t.index);
        codec_ids[i] = info->codec_id;
        params[i] = info->codec_params;
      } else if (t.kind == InputKind::kGguf) {
        codec_ids[i] = t.SourceCodec();
        if (auto record = GgufBlockRecord(t); record.ok()) {
          codec_ids[i] = record->codec_id;
          params[i] = record->codec_params;
        }
      } else {
        codec_ids[i] = t.SourceCodec();
      }
      refs[i] = {t.name, t.shape, codec_ids[i], t.dtype, &params[i]};
    }
  }
  std::vector<std::string> codec_ids;
  std::vector<CodecParams> params;
  std::vector<format::ElasticTensorRef> refs;
};

}  // namespace

bool Moves(const format::ElementMaps& maps) {
  for (const auto& m : maps) {
    if (!m.empty()) return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<io::ElasticAuthoring>> LoadElastic(const std::string& path, const Inputs& in,
                                                                   const CodecPlan& plan) {
  BP_ASSIGN_OR_RETURN(std::string text, io::ReadRegularFile(path, io::kMaxElasticJsonBytes));
  std::vector<io::ElasticTensorShape> shapes;
  shapes.reserve(in.tensors().size());
  for (const auto& t : in.tensors()) shapes.push_back({std::string(t.name), {t.shape.begin(), t.shape.end()}});
  BP_ASSIGN_OR_RETURN(auto authoring, io::ParseElasticJson(text, path, shapes));
  // The codec each tensor ends up with decides where budgets may cut.
  FinalCodecs codecs(in, plan);
  absl::Status valid = format::ValidateElastic(authoring.manifest, codecs.refs, path);
  if (!valid.ok()) return absl::InvalidArgumentError(valid.message());
  // [E-5.2.3] A budget no slice could give llama.cpp keys for is refused now.
  absl::Status ssm = format::CheckSsmBudgets(authoring.manifest, codecs.refs, in.metadata());
  if (!ssm.ok()) return absl::InvalidArgumentError(StrCat(path, ": ", ssm.message()));
  return std::make_unique<io::ElasticAuthoring>(std::move(authoring));
}

absl::StatusOr<std::optional<ElasticManifest>> CarriedElastic(const Inputs& in,
                                                              const CodecPlan& plan,
                                                              bool authoring_given) {
  const Reader* elastic = nullptr;
  for (const auto& t : in.tensors()) {
    if (t.kind != InputKind::kBolt || t.reader->elastic() == nullptr || t.reader == elastic) continue;
    if (elastic != nullptr) {
      return absl::InvalidArgumentError(StrCat(elastic->path(), " and ", t.reader->path(),
                                               " both have an elastic manifest; convert merges at most one"));
    }
    elastic = t.reader;
  }
  if (elastic == nullptr) return std::optional<ElasticManifest>();
  if (authoring_given) {
    return absl::InvalidArgumentError(StrCat(elastic->path(), ": already has an elastic manifest, which is kept; "
                                             "--elastic would replace it (drop --elastic to keep it, or convert "
                                             "a non-elastic source)"));
  }
  FinalCodecs codecs(in, plan);
  absl::Status valid = format::ValidateElastic(*elastic->elastic(), codecs.refs, elastic->path());
  if (!valid.ok()) {
    return absl::InvalidArgumentError(StrCat(valid.message(), " (the elastic manifest of ", elastic->path(),
                                             " is kept, so every budget must still cut whole blocks)"));
  }
  return std::optional<ElasticManifest>(*elastic->elastic());
}

absl::Status AddPermutedStored(Writer& writer, const InputTensor& t, const format::ElementMaps& maps) {
  format::CutTensor cut;
  if (t.kind == InputKind::kBolt) {
    BP_ASSIGN_OR_RETURN(cut, format::CutStoredTensor(*t.reader, t.index, maps, std::string(t.name)));
  } else {
    BP_ASSIGN_OR_RETURN(TensorInfo record, GgufBlockRecord(t));
    BP_ASSIGN_OR_RETURN(cut, format::CutRawTensor(record, {t.bytes}, maps, std::string(t.name)));
  }
  std::vector<absl::Span<const uint8_t>> spans(cut.streams.begin(), cut.streams.end());
  return writer.AddStoredTensor(std::move(cut.info), spans);
}

}  // namespace boltpack::tools
