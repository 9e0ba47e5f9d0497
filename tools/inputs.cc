#include "tools/inputs.h"

#include <algorithm>
#include <filesystem>
#include <unordered_set>

#include "absl/container/flat_hash_set.h"
#include "boltpack/codec_registry.h"
#include "common/escape.h"
#include "common/checked_math.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "format/output_rules.h"
#include "io/gguf_record.h"
#include "io/hf_arch.h"
#include "common/limits.h"
#include "common/mapped_file.h"

namespace boltpack::tools {

std::string Extension(const std::string& path) {
  size_t slash = path.find_last_of('/');
  size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

uint64_t InputTensor::element_count() const { return CheckedProduct(shape).value_or(0); }

std::string InputTensor::SourceCodec() const {
  if (kind == InputKind::kBolt) return reader->SharedTensor(index)->codec_id;
  if (kind == InputKind::kGguf) return io::GgmlTypeCodecId(*ggml_type);
  return std::string(ElementCodecFor(dtype));
}

uint64_t Inputs::total_bytes() const {
  // A reader's "full" view reads every stream: its bytes are its tensors'
  // stored bytes, without building each tensor.
  uint64_t total = 0;
  for (const auto& r : readers_) total += r->views()[0].bytes;
  for (const auto& t : tensors_) total += t.kind == InputKind::kBolt ? 0 : t.bytes.size();
  return total;
}

void ReleaseTensorPages(const Reader& reader, size_t tensor) {
  if (!reader.mapped()) return;
  const auto info = reader.SharedTensor(tensor);
  for (size_t s = 0; s < info->streams.size(); ++s) {
    if (info->streams[s].length == 0) continue;  // no pages
    if (auto stored = reader.StoredStream(tensor, s); stored.ok()) io::ReleaseMappedPages(*stored);
  }
}

void Inputs::Release(const InputTensor& t) const {
  if (!memory_.empty() || t.owned) return;  // memory, not a mapping of ours
  if (t.parts != nullptr) {  // stacked experts: each part is a mapping
    for (const auto& part : *t.parts) io::ReleaseMappedPages(part);
    return;
  }
  if (t.kind == InputKind::kBolt) {
    ReleaseTensorPages(*t.reader, t.index);
  } else {
    io::ReleaseMappedPages(t.bytes);  // a SafetensorsModel's or GgufModel's mapping (Open, not OpenBuffer)
  }
}

void Inputs::ReleaseHeaders() const {
  for (const auto& model : ggufs_) model->ReleaseHeaderPages();
  for (const auto& reader : readers_) reader->ReleaseManifestPages();
}

// Whether the inputs are one Hugging Face checkpoint folder (a folder with
// other inputs is refused: its names are GGUF's, theirs may not be).
static absl::StatusOr<bool> IsFolderInput(const std::vector<std::string>& paths) {
  if (paths.size() == 1) return std::filesystem::is_directory(paths[0]);
  for (const auto& path : paths) {
    if (std::filesystem::is_directory(path)) {
      return absl::InvalidArgumentError(
          StrCat(path, ": a Hugging Face checkpoint folder is converted on its own, not with other inputs"));
    }
  }
  return false;
}

absl::StatusOr<std::unique_ptr<Inputs>> Inputs::Open(const std::vector<std::string>& paths,
                                                     const ReaderOptions& bolt_options) {
  auto in = std::make_unique<Inputs>();
  std::unordered_set<std::string> keys;
  std::string path_of_meta;  // the input add_meta's keys come from
  auto add_meta = [&](const std::string& key, MetaValue v) {
    if (keys.insert(key).second) {
      in->metadata_.emplace_back(key, std::move(v));
      in->metadata_files_.push_back(path_of_meta);
    }
  };
  BP_ASSIGN_OR_RETURN(const bool folder, IsFolderInput(paths));
  if (folder) BP_RETURN_IF_ERROR(in->AddHfFolder(paths[0]));
  for (const auto& path : folder ? std::vector<std::string>() : paths) {
    path_of_meta = path;
    std::string ext = Extension(path);
    if (ext == ".safetensors" || ext == ".json") {
      BP_ASSIGN_OR_RETURN(auto model, io::SafetensorsModel::Open(path));
      if (ext == ".json") in->files_.push_back(path);  // the index too: never overwritten
      for (const auto& f : model->files()) in->files_.push_back(f);
      for (const auto& [k, v] : model->metadata()) add_meta(k, MetaValue::String(v));
      in->tensors_.reserve(in->tensors_.size() + model->tensors().size());
      for (size_t i = 0; i < model->tensors().size(); ++i) {
        const auto& st = model->tensors()[i];
        InputTensor t;
        t.name = st.name;
        t.dtype = st.dtype;
        t.shape = st.shape;
        t.kind = InputKind::kSafetensors;
        t.file_path = &model->files()[st.file_index];
        t.bytes = model->TensorBytes(i);
        in->tensors_.push_back(std::move(t));
      }
      in->safetensors_.push_back(std::move(model));
    } else if (ext == ".gguf") {
      BP_ASSIGN_OR_RETURN(auto model, io::GgufModel::Open(path));
      for (const auto& f : model->files()) in->files_.push_back(f);
      bool split = model->shard_count() > 1;
      for (const auto& [k, v] : model->metadata()) {
        if (k.rfind(io::kGgufKeyPrefix, 0) == 0) {
          return absl::InvalidArgumentError(StrCat(path, ": key \"", k, "\" uses the prefix \"gguf.\" that bolt-pack ",
                                                   "reserves for GGUF layout facts (spec/gguf-mapping.md)"));
        }
      }
      if (paths.size() == 1 && !split) {
        // The only input, its keys unique (the parser checked): its list
        // moves whole instead of being copied key by key.
        in->metadata_ = model->ReleaseMetadata();
        in->metadata_files_.assign(in->metadata_.size(), path);  // no key of it is a gguf.* fact added below
      } else {
        for (const auto& [k, v] : model->metadata()) {
          // A split model becomes one model: the shard bookkeeping goes.
          if (split && (k == "split.no" || k == "split.count" || k == "split.tensors.count")) continue;
          add_meta(k, v);
        }
      }
      add_meta(std::string(io::kGgufVersionKey), MetaValue::Uint(ValueType::kUint32, model->version()));
      add_meta(std::string(io::kGgufAlignmentKey), MetaValue::Uint(ValueType::kUint32, model->alignment()));
      if (model->tensors().empty() && model->data_offset(0) == model->file_size(0) &&
          model->data_offset(0) % model->alignment() != 0) {
        add_meta(std::string(io::kGgufPaddedKey), MetaValue::Bool(false));
      }
      in->tensors_.reserve(in->tensors_.size() + model->tensors().size());
      size_t dims = 0;
      for (const auto& gt : model->tensors()) dims += gt.ne.size();
      auto& shapes = in->shapes_.emplace_back(std::make_unique<uint64_t[]>(dims));
      uint64_t* shape = shapes.get();
      for (size_t i = 0; i < model->tensors().size(); ++i) {
        const auto& gt = model->tensors()[i];
        InputTensor t;
        t.name = gt.name;
        t.dtype = io::GgmlTypeDType(*gt.type);
        std::reverse_copy(gt.ne.begin(), gt.ne.end(), shape);
        t.shape = absl::MakeConstSpan(shape, gt.ne.size());
        shape += gt.ne.size();
        t.kind = InputKind::kGguf;
        t.file_path = &model->files()[gt.shard];
        t.bytes = model->TensorBytes(i);
        t.index = i;
        t.ggml_type = gt.type;
        in->tensors_.push_back(std::move(t));
      }
      model->ReleaseTensors();  // each InputTensor holds what it needs of its GgufTensor
      in->ggufs_.push_back(std::move(model));
    } else if (ext == ".bolt") {
      BP_ASSIGN_OR_RETURN(auto reader, Reader::Open(path, bolt_options));
      in->files_.push_back(path);
      if (paths.size() == 1) {
        in->borrowed_metadata_ = &reader->metadata();  // unique keys, validated at open
      } else {
        for (const auto& [k, v] : reader->metadata()) add_meta(k, v);
      }
      // Names view the reader's manifest; shapes go in one block, as a
      // GGUF model's do (the reader builds each TensorInfo when asked).
      const TensorList tensors = reader->tensors();
      const size_t first = in->tensors_.size();
      in->tensors_.reserve(first + tensors.size());
      std::vector<uint64_t> dims;
      std::vector<uint32_t> ranks(tensors.size());
      for (size_t i = 0; i < tensors.size(); ++i) {
        const size_t before = dims.size();
        const DType dtype = reader->TensorShape(i, &dims);
        ranks[i] = static_cast<uint32_t>(dims.size() - before);
        InputTensor t;
        t.name = reader->TensorName(i);
        t.dtype = dtype;
        t.kind = InputKind::kBolt;
        t.file_path = &reader->path();  // the caller's `paths` may not outlive the Inputs
        t.reader = reader.get();
        t.index = i;
        in->tensors_.push_back(std::move(t));
      }
      auto& shapes = in->shapes_.emplace_back(std::make_unique<uint64_t[]>(dims.size()));
      std::copy(dims.begin(), dims.end(), shapes.get());
      const uint64_t* shape = shapes.get();
      for (size_t i = 0; i < tensors.size(); ++i) {
        in->tensors_[first + i].shape = absl::MakeConstSpan(shape, ranks[i]);
        shape += ranks[i];
      }
      in->readers_.push_back(std::move(reader));
    } else {
      return absl::InvalidArgumentError(StrCat(path, ": unknown input format \"", ext,
                                               "\" (expected .safetensors, .safetensors.index.json, .gguf or .bolt)"));
    }
  }
  // Names in one file are unique (each parser checks; a split GGUF checks
  // across its shards), so one such input needs no set (35 MB for 1M names).
  // A folder's names are new (mapped to GGUF's), so they are checked.
  if (paths.size() == 1 && !folder && Extension(paths[0]) != ".json") return in;
  // Views of the names, which stay put now that every input is read: a node
  // and a copy per name cost 1M tensors 100 MB and a third of inspect's time.
  absl::flat_hash_set<std::string_view> names;
  names.reserve(in->tensors_.size());
  for (const auto& t : in->tensors_) {
    if (!names.insert(t.name).second) {
      return absl::InvalidArgumentError(StrCat(t.file(), ": tensor ", QuoteForDisplay(t.name), " also exists in an earlier input"));
    }
  }
  return in;
}

absl::StatusOr<std::unique_ptr<Inputs>> Inputs::FromMemory(std::vector<MemoryTensor> tensors, Metadata metadata,
                                                            std::string label) {
  auto in = std::make_unique<Inputs>();
  in->memory_label_ = std::make_unique<std::string>(std::move(label));
  const std::string* file = in->memory_label_.get();
  in->memory_ = std::move(tensors);
  in->tensors_.reserve(in->memory_.size());
  absl::flat_hash_set<std::string_view> names;
  for (const MemoryTensor& m : in->memory_) {
    const std::string where = StrCat(*file, ": tensor ", QuoteForDisplay(m.name));
    if (m.dtype == DType::kUnspecified || m.shape.size() > format::kMaxDims) {
      return absl::InvalidArgumentError(StrCat(where, ": no dtype, or more than ", format::kMaxDims, " dimensions"));
    }
    const std::optional<uint64_t> bytes = CheckedByteSize(m.shape, static_cast<uint64_t>(DTypeSize(m.dtype)));
    if (!bytes || *bytes != m.bytes.size()) {
      return absl::InvalidArgumentError(StrCat(where, ": ", m.bytes.size(), " bytes do not hold its shape of ",
                                               DTypeName(m.dtype), " elements"));
    }
    if (!names.insert(m.name).second) return absl::InvalidArgumentError(StrCat(where, ": the name repeats"));
    InputTensor t;
    t.name = m.name;
    t.dtype = m.dtype;
    t.shape = m.shape;
    t.kind = InputKind::kSafetensors;
    t.file_path = file;
    t.bytes = m.bytes;
    in->tensors_.push_back(std::move(t));
  }
  in->metadata_ = std::move(metadata);
  in->metadata_files_.assign(in->metadata_.size(), *file);
  return in;
}

absl::Status CheckImportable(const Inputs& in) {
  for (const auto& t : in.tensors()) {
    if (t.kind == InputKind::kBolt) continue;
    BP_RETURN_IF_ERROR(format::CheckWrittenName(t.name, "tensor name", t.file()));
  }
  for (size_t k = 0; k < in.metadata().size(); ++k) {
    BP_RETURN_IF_ERROR(format::CheckWrittenName(in.metadata()[k].first, "metadata key", in.metadata_file(k)));
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorInfo> GgufBlockRecord(const InputTensor& t) {
  return io::GgufBlockRecord(t.name, t.shape, t.dtype, *t.ggml_type, t.bytes.size(), t.file());
}

bool StoredNotDecoded(const TensorInfo& info) {
  const Codec* codec = FindCodec(info.codec_id);
  return codec != nullptr && codec->ValidateRecord(info).ok() &&
         codec->DecodedBytes(info, OutputType::kF32).status().code() == absl::StatusCode::kUnimplemented;
}

absl::StatusOr<absl::Span<const uint8_t>> ElementBytes(const InputTensor& t, std::vector<uint8_t>* scratch) {
  if (t.kind == InputKind::kSafetensors && t.parts != nullptr) {
    scratch->clear();
    scratch->reserve(t.bytes.size());
    for (const auto& part : *t.parts) scratch->insert(scratch->end(), part.begin(), part.end());
    return absl::MakeConstSpan(*scratch);
  }
  if (t.kind != InputKind::kSafetensors || t.rotary_heads == 0) return t.bytes;
  // The shape was checked when the folder was opened (rows split into the
  // heads); a failure here names the tensor all the same.
  const uint64_t rows = t.shape.empty() ? 0 : t.shape[0];
  auto permuted = io::PermuteRotaryRows(t.bytes, rows, rows == 0 ? 0 : t.bytes.size() / rows, t.rotary_heads);
  if (!permuted.ok()) {
    return absl::InvalidArgumentError(StrCat(t.file(), ": tensor ", QuoteForDisplay(t.name), ": ",
                                             permuted.status().message()));
  }
  *scratch = std::move(*permuted);
  return absl::MakeConstSpan(*scratch);
}

absl::StatusOr<std::vector<uint8_t>> DecodeToLogical(const InputTensor& t, int threads) {
  if (t.kind == InputKind::kSafetensors) {
    std::vector<uint8_t> scratch;
    BP_ASSIGN_OR_RETURN(absl::Span<const uint8_t> bytes, ElementBytes(t, &scratch));
    if (!scratch.empty()) return scratch;
    return std::vector<uint8_t>(bytes.begin(), bytes.end());
  }
  if (t.kind == InputKind::kGguf) {
    std::string codec_id = t.SourceCodec();
    if (TraitsOf(codec_id).element) {
      return std::vector<uint8_t>(t.bytes.begin(), t.bytes.end());
    }
    const Codec* codec = FindCodec(codec_id);
    if (codec == nullptr) {
      return absl::UnimplementedError(StrCat(t.file(), ": tensor ", QuoteForDisplay(t.name), ": GGUF type ", t.ggml_type->name,
                                             " cannot be decoded (no codec \"", codec_id, "\" is registered)"));
    }
    BP_ASSIGN_OR_RETURN(TensorInfo info, GgufBlockRecord(t));
    absl::Status valid = codec->ValidateRecord(info);
    if (!valid.ok()) return absl::Status(valid.code(), StrCat(t.file(), ": ", valid.message()));
    BP_ASSIGN_OR_RETURN(uint64_t n, codec->DecodedBytes(info, OutputType::kF32));
    std::vector<uint8_t> buf(n);
    DecodeInput input;
    input.info = &info;
    input.streams.push_back(t.bytes);
    input.raw_base.push_back(0);
    ExecOptions exec;
    exec.threads = threads;
    BP_RETURN_IF_ERROR(codec->Decode(input, OutputType::kF32, absl::MakeSpan(buf), exec));
    return buf;
  }
  OutputType out = t.dtype == DType::kF32    ? OutputType::kF32
                   : t.dtype == DType::kF16  ? OutputType::kF16
                   : t.dtype == DType::kBF16 ? OutputType::kBF16
                                             : OutputType::kNative;
  BP_ASSIGN_OR_RETURN(uint64_t n, t.reader->DecodedBytes(t.index, out));
  std::vector<uint8_t> buf(n);
  ExecOptions exec;
  exec.threads = threads;
  BP_RETURN_IF_ERROR(t.reader->Decode(t.index, out, absl::MakeSpan(buf), exec));
  return buf;
}

}  // namespace boltpack::tools
