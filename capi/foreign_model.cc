// A GGUF or safetensors model behind a bp_reader. io/ parses the files (a
// split GGUF by its first shard, sharded safetensors by their index .json)
// and hands out zero-copy tensor bytes; each tensor is decoded with the
// codec of the record that describes those bytes as they are (a GGUF block
// type's codec, io/gguf_record.h; an element codec or "raw" for
// safetensors), validated before the first byte is read: the files are as
// hostile as a .bolt. They record no checksums, so nothing is checked
// beyond their structure.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "boltpack/codec_registry.h"
#include "capi/model.h"
#include "common/escape.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/gguf.h"
#include "io/gguf_record.h"
#include "io/safetensors.h"

namespace boltpack::capi {
namespace {

// Rows a decode task takes at least: fewer would cost more to start than
// they save.
constexpr uint64_t kMinRowsPerTask = 16;

struct ForeignTensor {
  std::string_view name;  // views the model's own storage
  std::vector<uint64_t> shape;
  DType dtype = DType::kUnspecified;
  absl::Span<const uint8_t> bytes;
  const GgmlType* ggml_type = nullptr;  // GGUF only
  std::string_view file;
  uint64_t file_offset = 0;  // of `bytes` in `file`
};

// The element codec a safetensors dtype is stored as ("raw" keeps the
// bytes of any other dtype).
// ElementCodecFor returns a string literal, so its data() ends in a NUL.
const char* SafetensorsCodec(DType dtype) { return ElementCodecFor(dtype).data(); }

class ForeignModel final : public Model {
 public:
  static absl::StatusOr<std::unique_ptr<Model>> Open(const std::string& path);

  const std::string& path() const override { return path_; }
  size_t tensor_count() const override { return tensors_.size(); }
  std::string_view TensorName(size_t t) const override { return tensors_[t].name; }
  std::optional<size_t> FindTensor(std::string_view name) const override {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return std::nullopt;
    return it->second;
  }
  DType TensorShape(size_t t, std::vector<uint64_t>* shape) const override {
    shape->insert(shape->end(), tensors_[t].shape.begin(), tensors_[t].shape.end());
    return tensors_[t].dtype;
  }
  TensorInfo Describe(size_t t) const override;
  absl::StatusOr<Location> StreamLocation(size_t t, size_t s) const override {
    if (s != 0) return absl::OutOfRangeError(StrCat(Where(t), ": no stream #", s));
    return Location{std::string(tensors_[t].file), tensors_[t].file_offset};
  }
  // The record a decode uses; fails where the codec cannot hold the bytes.
  absl::StatusOr<TensorInfo> Record(size_t t) const;
  const Metadata& metadata() const override { return metadata_; }
  absl::StatusOr<absl::Span<const uint8_t>> StoredStream(size_t t, size_t s) const override {
    if (s != 0) return absl::OutOfRangeError(StrCat(Where(t), ": no stream #", s, " (it has 1)"));
    return tensors_[t].bytes;
  }
  absl::StatusOr<uint64_t> DecodedBytes(size_t t, OutputType out) const override;
  absl::Status DecodeRows(size_t t, uint64_t row_begin, uint64_t row_end, OutputType out, absl::Span<uint8_t> dst,
                          const ExecOptions& exec) const override;
  absl::Status Decode(size_t t, OutputType out, absl::Span<uint8_t> dst, const ExecOptions& exec) const override;

 private:
  // A tensor's record with its codec, checked for decoding to `out`.
  struct Prepared {
    TensorInfo info;
    const Codec* codec = nullptr;
    uint64_t total = 0;  // decoded bytes
  };
  absl::StatusOr<Prepared> Prepare(size_t t, OutputType out) const;
  std::string Where(size_t t) const { return StrCat(tensors_[t].file, ": tensor ", QuoteForDisplay(tensors_[t].name)); }
  absl::Status AddGguf(std::unique_ptr<io::GgufModel> model);
  absl::Status AddSafetensors(std::unique_ptr<io::SafetensorsModel> model);

  std::string path_;
  std::unique_ptr<io::GgufModel> gguf_;
  std::unique_ptr<io::SafetensorsModel> safetensors_;
  std::vector<ForeignTensor> tensors_;
  absl::flat_hash_map<std::string_view, size_t> by_name_;
  Metadata metadata_;
};

absl::Status ForeignModel::AddGguf(std::unique_ptr<io::GgufModel> model) {
  metadata_ = model->ReleaseMetadata();
  tensors_.reserve(model->tensors().size());
  for (size_t i = 0; i < model->tensors().size(); ++i) {
    const io::GgufTensor& g = model->tensors()[i];
    ForeignTensor t;
    t.name = g.name;
    t.shape = g.Shape();
    t.dtype = io::GgmlTypeDType(*g.type);
    t.bytes = model->TensorBytes(i);
    t.ggml_type = g.type;
    t.file = model->files()[g.shard];
    t.file_offset = g.file_offset;
    tensors_.push_back(std::move(t));
  }
  gguf_ = std::move(model);
  return absl::OkStatus();
}

absl::Status ForeignModel::AddSafetensors(std::unique_ptr<io::SafetensorsModel> model) {
  for (const auto& [key, value] : model->metadata()) metadata_.emplace_back(key, MetaValue::String(value));
  tensors_.reserve(model->tensors().size());
  for (size_t i = 0; i < model->tensors().size(); ++i) {
    const io::SafetensorsTensor& s = model->tensors()[i];
    ForeignTensor t;
    t.name = s.name;
    t.shape = s.shape;
    t.dtype = s.dtype;
    t.bytes = model->TensorBytes(i);
    t.file = model->files()[s.file_index];
    t.file_offset = model->FileOffset(i);
    tensors_.push_back(std::move(t));
  }
  safetensors_ = std::move(model);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Model>> ForeignModel::Open(const std::string& path) {
  auto model = std::make_unique<ForeignModel>();
  model->path_ = path;
  std::string ext = path.substr(std::min(path.size(), path.find_last_of('.')));
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".gguf") {
    BP_ASSIGN_OR_RETURN(auto gguf, io::GgufModel::Open(path));
    BP_RETURN_IF_ERROR(model->AddGguf(std::move(gguf)));
  } else {
    BP_ASSIGN_OR_RETURN(auto st, io::SafetensorsModel::Open(path));
    BP_RETURN_IF_ERROR(model->AddSafetensors(std::move(st)));
  }
  // Each parser refuses a repeated name (a split GGUF and an index across
  // their files), so the names index without collisions.
  model->by_name_.reserve(model->tensors_.size());
  for (size_t i = 0; i < model->tensors_.size(); ++i) model->by_name_.emplace(model->tensors_[i].name, i);
  return std::unique_ptr<Model>(std::move(model));
}

absl::StatusOr<TensorInfo> ForeignModel::Record(size_t t) const {
  const ForeignTensor& ft = tensors_[t];
  if (ft.ggml_type != nullptr) return io::GgufBlockRecord(ft.name, ft.shape, ft.dtype, *ft.ggml_type, ft.bytes.size(), ft.file);
  TensorInfo info;
  info.name = std::string(ft.name);
  info.shape = ft.shape;
  info.dtype = ft.dtype;
  info.codec_id = SafetensorsCodec(ft.dtype);
  StreamInfo s;
  s.role = "data";
  s.raw_length = s.length = ft.bytes.size();
  info.streams.push_back(std::move(s));
  return info;
}

TensorInfo ForeignModel::Describe(size_t t) const {
  auto record = Record(t);
  if (record.ok()) return *std::move(record);
  // A registered codec that does not store GGUF blocks as one stream: the
  // bytes as they are, under the GGUF type's codec id (decodes refuse it).
  const ForeignTensor& ft = tensors_[t];
  TensorInfo info;
  info.name = std::string(ft.name);
  info.shape = ft.shape;
  info.dtype = ft.dtype;
  info.codec_id = GgmlTypeCodecId(*ft.ggml_type);
  StreamInfo s;
  s.role = "data";
  s.raw_length = s.length = ft.bytes.size();
  info.streams.push_back(std::move(s));
  return info;
}

absl::StatusOr<ForeignModel::Prepared> ForeignModel::Prepare(size_t t, OutputType out) const {
  Prepared p;
  BP_ASSIGN_OR_RETURN(p.info, Record(t));
  p.codec = FindCodec(p.info.codec_id);
  if (p.codec == nullptr) {
    return absl::UnimplementedError(StrCat(Where(t), ": codec \"", p.info.codec_id, "\" is not registered in this build"));
  }
  absl::Status valid = p.codec->ValidateRecord(p.info);
  if (!valid.ok()) return absl::Status(valid.code(), StrCat(tensors_[t].file, ": ", valid.message()));
  if (!p.codec->CanDecodeTo(p.info, out)) {
    return absl::InvalidArgumentError(StrCat(Where(t), ": codec \"", p.info.codec_id, "\" cannot decode to ",
                                             OutputTypeName(out)));
  }
  auto total = p.codec->DecodedBytes(p.info, out);
  if (!total.ok()) return absl::Status(total.status().code(), StrCat(tensors_[t].file, ": ", total.status().message()));
  p.total = *total;
  return p;
}

absl::StatusOr<uint64_t> ForeignModel::DecodedBytes(size_t t, OutputType out) const {
  BP_ASSIGN_OR_RETURN(Prepared p, Prepare(t, out));
  return p.total;
}

absl::Status ForeignModel::Decode(size_t t, OutputType out, absl::Span<uint8_t> dst, const ExecOptions& exec) const {
  BP_ASSIGN_OR_RETURN(Prepared p, Prepare(t, out));
  if (dst.size() < p.total) {
    return absl::InvalidArgumentError(StrCat(Where(t), ": output buffer of ", dst.size(), " bytes is smaller than the ",
                                             p.total, " the decode writes"));
  }
  DecodeInput input;
  input.info = &p.info;
  input.streams.push_back(tensors_[t].bytes);
  input.raw_base.push_back(0);
  return p.codec->Decode(input, out, dst.subspan(0, p.total), exec);
}

absl::Status ForeignModel::DecodeRows(size_t t, uint64_t row_begin, uint64_t row_end, OutputType out,
                                      absl::Span<uint8_t> dst, const ExecOptions& exec) const {
  BP_ASSIGN_OR_RETURN(Prepared p, Prepare(t, out));
  const uint64_t rows = p.info.row_count();
  if (row_begin > row_end || row_end > rows) {
    return absl::OutOfRangeError(StrCat(Where(t), ": rows [", row_begin, ", ", row_end, ") outside [0, ", rows, ")"));
  }
  if (row_begin == 0 && row_end == rows) return Decode(t, out, dst, exec);
  if (p.total % rows != 0) {
    return absl::UnimplementedError(StrCat(Where(t), ": this output has no whole bytes per row, so rows cannot be "
                                           "decoded apart; decode the whole tensor"));
  }
  const uint64_t row_bytes = p.total / rows;
  if (row_begin == row_end) return absl::OkStatus();
  if (dst.size() < (row_end - row_begin) * row_bytes) {
    return absl::InvalidArgumentError(StrCat(Where(t), ": output buffer of ", dst.size(), " bytes is smaller than the ",
                                             (row_end - row_begin) * row_bytes, " the decode writes"));
  }
  DecodeInput input;
  input.info = &p.info;
  input.streams.push_back(tensors_[t].bytes);
  input.raw_base.push_back(0);
  absl::Status st = ParallelFor(row_end - row_begin, exec.threads, kMinRowsPerTask, [&](uint64_t a, uint64_t b) {
    return p.codec->DecodeRows(input, row_begin + a, row_begin + b, out, dst.subspan(a * row_bytes, (b - a) * row_bytes));
  });
  if (st.code() != absl::StatusCode::kUnimplemented) return st;
  // A codec that cannot decode row ranges: the whole tensor, then the rows.
  std::vector<uint8_t> whole(p.total);
  BP_RETURN_IF_ERROR(p.codec->Decode(input, out, absl::MakeSpan(whole), exec));
  std::memcpy(dst.data(), whole.data() + row_begin * row_bytes, (row_end - row_begin) * row_bytes);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> OpenForeignModel(const std::string& path) { return ForeignModel::Open(path); }

}  // namespace boltpack::capi
