#include "tools/elastic_convert.h"

#include <fstream>
#include <sstream>

#include "common/status_macros.h"
#include "common/str_cat.h"
#include "format/elastic_validate.h"

namespace boltpack::tools {

bool Moves(const format::ElementMaps& maps) {
  for (const auto& m : maps) {
    if (!m.empty()) return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<io::ElasticAuthoring>> LoadElastic(const std::string& path, const Inputs& in,
                                                                   const std::vector<std::optional<CodecRule>>& plan) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(StrCat(path, ": cannot open the elastic JSON"));
  f.seekg(0, std::ios::end);
  auto size = static_cast<uint64_t>(f.tellg());
  if (size > io::kMaxElasticJsonBytes) {
    return absl::ResourceExhaustedError(StrCat(path, ": ", size, " bytes exceeds the limit of ", io::kMaxElasticJsonBytes));
  }
  f.seekg(0);
  std::string text(size, '\0');
  f.read(text.data(), static_cast<std::streamsize>(size));
  std::vector<io::ElasticTensorShape> shapes;
  shapes.reserve(in.tensors().size());
  for (const auto& t : in.tensors()) shapes.push_back({t.name, t.shape});
  BP_ASSIGN_OR_RETURN(auto authoring, io::ParseElasticJson(text, path, shapes));
  // The codec each tensor ends up with decides where budgets may cut.
  std::vector<std::string> codec_ids(in.tensors().size());
  std::vector<CodecParams> params(in.tensors().size());
  std::vector<format::ElasticTensorRef> refs(in.tensors().size());
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const InputTensor& t = in.tensors()[i];
    if (plan[i] && plan[i]->codec_id != kKeepCodec) {
      codec_ids[i] = plan[i]->codec_id;
      params[i] = plan[i]->params;
    } else if (t.kind == InputKind::kBolt) {
      codec_ids[i] = t.reader->tensors()[t.index].codec_id;
      params[i] = t.reader->tensors()[t.index].codec_params;
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
  absl::Status valid = format::ValidateElastic(authoring.manifest, refs, path);
  if (!valid.ok()) return absl::InvalidArgumentError(valid.message());
  return std::make_unique<io::ElasticAuthoring>(std::move(authoring));
}

absl::Status AddPermutedStored(Writer& writer, const InputTensor& t, const format::ElementMaps& maps) {
  format::CutTensor cut;
  if (t.kind == InputKind::kBolt) {
    BP_ASSIGN_OR_RETURN(cut, format::CutStoredTensor(*t.reader, t.index, maps, t.name));
  } else {
    BP_ASSIGN_OR_RETURN(TensorInfo record, GgufBlockRecord(t));
    BP_ASSIGN_OR_RETURN(cut, format::CutRawTensor(record, {t.bytes}, maps, t.name));
  }
  std::vector<absl::Span<const uint8_t>> spans(cut.streams.begin(), cut.streams.end());
  return writer.AddStoredTensor(std::move(cut.info), spans);
}

}  // namespace boltpack::tools
