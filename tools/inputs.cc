#include "tools/inputs.h"

#include <algorithm>
#include <unordered_set>

#include "common/checked_math.h"
#include "common/status_macros.h"
#include "common/str_cat.h"

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
  if (kind == InputKind::kBolt) return reader->tensors()[index].codec_id;
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    default: return "raw";
  }
}

uint64_t Inputs::total_bytes() const {
  uint64_t total = 0;
  for (const auto& t : tensors_) {
    total += t.kind == InputKind::kBolt ? t.reader->tensors()[t.index].stored_bytes() : t.bytes.size();
  }
  return total;
}

absl::StatusOr<std::unique_ptr<Inputs>> Inputs::Open(const std::vector<std::string>& paths) {
  auto in = std::make_unique<Inputs>();
  std::unordered_set<std::string> names;
  std::unordered_set<std::string> keys;
  auto add_meta = [&](const std::string& key, MetaValue v) {
    if (keys.insert(key).second) in->metadata_.emplace_back(key, std::move(v));
  };
  for (const auto& path : paths) {
    std::string ext = Extension(path);
    if (ext == ".safetensors" || ext == ".json") {
      BP_ASSIGN_OR_RETURN(auto model, io::SafetensorsModel::Open(path));
      for (const auto& f : model->files()) in->files_.push_back(f);
      for (const auto& [k, v] : model->metadata()) add_meta(k, MetaValue::String(v));
      for (size_t i = 0; i < model->tensors().size(); ++i) {
        const auto& st = model->tensors()[i];
        InputTensor t;
        t.name = st.name;
        t.dtype = st.dtype;
        t.shape = st.shape;
        t.kind = InputKind::kSafetensors;
        t.file = model->files()[st.file_index];
        t.bytes = model->TensorBytes(i);
        in->tensors_.push_back(std::move(t));
      }
      in->safetensors_.push_back(std::move(model));
    } else if (ext == ".bolt") {
      BP_ASSIGN_OR_RETURN(auto reader, Reader::Open(path));
      in->files_.push_back(path);
      for (const auto& [k, v] : reader->metadata()) add_meta(k, v);
      for (size_t i = 0; i < reader->tensors().size(); ++i) {
        const auto& info = reader->tensors()[i];
        InputTensor t;
        t.name = info.name;
        t.dtype = info.dtype;
        t.shape = info.shape;
        t.kind = InputKind::kBolt;
        t.file = path;
        t.reader = reader.get();
        t.index = i;
        in->tensors_.push_back(std::move(t));
      }
      in->readers_.push_back(std::move(reader));
    } else {
      return absl::InvalidArgumentError(StrCat(path, ": unknown input format \"", ext,
                                               "\" (expected .safetensors, .safetensors.index.json or .bolt)"));
    }
  }
  for (const auto& t : in->tensors_) {
    if (!names.insert(t.name).second) {
      return absl::InvalidArgumentError(StrCat(t.file, ": tensor \"", t.name, "\" also exists in an earlier input"));
    }
  }
  return in;
}

absl::StatusOr<std::vector<uint8_t>> DecodeToLogical(const InputTensor& t, int threads) {
  if (t.kind == InputKind::kSafetensors) return std::vector<uint8_t>(t.bytes.begin(), t.bytes.end());
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
