// A Hugging Face checkpoint folder as an input: its weights under GGUF
// names (io/hf_arch.h), Q/K rows in llama.cpp's order, config.json's
// hyperparameters and the tokenizer as GGUF keys, so that any output
// (.gguf directly, .bolt for a later slice) is what llama.cpp loads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "codecs/float_convert.h"
#include "common/escape.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/hf_arch.h"
#include "io/hf_tokenizer.h"
#include "tools/inputs.h"

namespace boltpack::tools {
namespace {

constexpr uint64_t kMaxConfigBytes = 16 << 20;  // config.json is a few KB

absl::StatusOr<io::JsonValue> ReadConfig(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    return absl::NotFoundError(StrCat(path, ": not found; a Hugging Face checkpoint folder holds config.json and ",
                                      "model.safetensors (or model.safetensors.index.json)"));
  }
  io::JsonLimits limits;
  limits.max_bytes = kMaxConfigBytes;
  return io::ReadJsonObjectFile(path, limits);
}

// The weights: the shard index when there is one, else the single file.
absl::StatusOr<std::string> WeightsPath(const std::string& dir) {
  for (const char* name : {"model.safetensors.index.json", "model.safetensors"}) {
    std::string p = StrCat(dir, "/", name);
    if (std::filesystem::exists(p)) return p;
  }
  return absl::NotFoundError(StrCat(dir, ": neither model.safetensors nor model.safetensors.index.json (only ",
                                    "safetensors weights are read; convert .bin checkpoints to safetensors first)"));
}

// Heads of the groups a Q or K projection's rows are reordered in.
absl::StatusOr<uint64_t> PermuteHeads(io::HfPermute p, const io::JsonValue& config, const std::string& path) {
  BP_ASSIGN_OR_RETURN(std::optional<uint64_t> heads, io::ConfigUint(config, "num_attention_heads", path));
  if (!heads || *heads == 0) return absl::InvalidArgumentError(StrCat(path, ": no \"num_attention_heads\""));
  if (p == io::HfPermute::kQueryHeads) return *heads;
  BP_ASSIGN_OR_RETURN(std::optional<uint64_t> kv, io::ConfigUint(config, "num_key_value_heads", path));
  return kv && *kv != 0 ? *kv : *heads;  // llama.cpp: n_head_kv, else n_head
}

// The head groups of a Q or K projection's rows, checked here so that a
// config that does not fit the weights fails before anything is written
// (the rows are reordered when the tensor is, Inputs::ElementBytes).
absl::StatusOr<uint32_t> RotaryHeads(io::HfPermute p, const io::SafetensorsTensor& s, const std::string& file,
                                     const io::JsonValue& config, const std::string& config_path) {
  const std::string where = StrCat(file, ": tensor ", QuoteForDisplay(s.name), ": ");
  BP_ASSIGN_OR_RETURN(uint64_t heads, PermuteHeads(p, config, config_path));
  const uint64_t rows = s.shape.empty() ? 0 : s.shape[0];
  if (heads > rows || rows % (2 * heads) != 0) {
    return absl::InvalidArgumentError(StrCat(where, rows, " rows do not split into ", heads,
                                             " heads of two rotary halves (", config_path, ")"));
  }
  return static_cast<uint32_t>(heads);  // <= rows, which a tensor of a few GB keeps far below 2^32
}

// llama.cpp's converter reads tensors sorted by name within each file
// (safe_open's keys()), files in the index's order; the same order gives
// the same GGUF.
std::vector<size_t> ConverterOrder(const std::vector<io::SafetensorsTensor>& st) {
  std::vector<size_t> order(st.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return st[a].file_index != st[b].file_index ? st[a].file_index < st[b].file_index : st[a].name < st[b].name;
  });
  return order;
}

// general.name: the folder's own name ("models/x/" and "x/." name x).
std::string FolderName(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(dir, ec);
  if (ec) p = std::filesystem::path(dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

// The experts per layer of a mixture-of-experts config (0: none), bounded
// so that a hostile count cannot size the stacks.
absl::StatusOr<uint64_t> ExpertCount(const io::JsonValue& config, const std::string& path) {
  std::optional<uint64_t> n;
  for (const char* field : {"num_local_experts", "num_experts", "n_routed_experts"}) {
    BP_ASSIGN_OR_RETURN(n, io::ConfigUint(config, field, path));
    if (n) break;
  }
  if (n && *n > 65536) return absl::InvalidArgumentError(StrCat(path, ": ", *n, " experts per layer (at most 65536)"));
  return n.value_or(0);
}

// Whether the tokenizer keys are a SentencePiece-style vocabulary
// (tokenizer.ggml.model "llama"), which Gemma's converter writes with
// add_space_prefix false.
bool SentencePieceStyle(const Metadata& kv) {
  for (const auto& [k, v] : kv) {
    if (k == "tokenizer.ggml.model") return v.s == "llama";
  }
  return false;
}

bool TiedEmbeddings(const io::JsonValue& config) {
  const io::JsonValue* tie = config.Find("tie_word_embeddings");
  return tie != nullptr && tie->is_bool() && tie->bool_value();
}


// The GGUF shape of a tensor the converter reshapes (io::HfReshape); the
// element count never changes, so the bytes stay as they are.
absl::StatusOr<std::vector<uint64_t>> Reshaped(const io::HfTensorRule& rule, const io::SafetensorsTensor& s,
                                               const std::string& where, const io::JsonValue& config,
                                               const std::string& config_path) {
  std::vector<uint64_t> out;
  uint64_t n = 1;
  for (uint64_t d : s.shape) {
    if (d != 1) out.push_back(d);
    n *= d;  // a safetensors header's shape was checked against its byte size
  }
  if (rule.reshape == io::HfReshape::kColumn) return std::vector<uint64_t>{n, 1};
  if (rule.reshape == io::HfReshape::kGroups) {
    BP_ASSIGN_OR_RETURN(std::optional<uint64_t> groups, io::ConfigUint(config, "n_groups", config_path));
    if (!groups || *groups == 0 || n % *groups != 0) {
      return absl::InvalidArgumentError(StrCat(where, ": ", n, " elements do not split into \"n_groups\" (",
                                               groups.value_or(0), ") groups (", config_path, ")"));
    }
    return std::vector<uint64_t>{*groups, n / *groups};
  }
  return out;  // kSqueeze
}

// A = -exp(A_log) in F32, as llama.cpp stores Mamba's A (computed in double,
// rounded once).
absl::StatusOr<std::vector<uint8_t>> NegExpF32(const io::SafetensorsTensor& s, absl::Span<const uint8_t> in,
                                               const std::string& where) {
  const size_t width = s.dtype == DType::kF32 ? 4 : (s.dtype == DType::kF16 || s.dtype == DType::kBF16) ? 2 : 0;
  if (width == 0) return absl::InvalidArgumentError(StrCat(where, ": A_log must be F32, F16 or BF16"));
  const size_t n = in.size() / width;
  std::vector<uint8_t> out(n * 4);
  for (size_t i = 0; i < n; ++i) {
    float x;
    if (width == 4) {
      std::memcpy(&x, in.data() + 4 * i, 4);
    } else {
      const uint16_t h = static_cast<uint16_t>(in[2 * i] | (in[2 * i + 1] << 8));
      x = s.dtype == DType::kF16 ? F16ToF32(h) : BF16ToF32(h);
    }
    const float a = static_cast<float>(-std::exp(static_cast<double>(x)));
    std::memcpy(out.data() + 4 * i, &a, 4);
  }
  return out;
}

}  // namespace

// Llama 3's rope scaling becomes a tensor no file holds, first, where the
// converter writes it (io::Llama3RopeFactors).
absl::Status Inputs::AddRopeFreqs(const io::JsonValue& config, const std::string& config_path) {
  BP_ASSIGN_OR_RETURN(std::vector<float> factors, io::Llama3RopeFactors(config, config_path));
  if (factors.empty()) return absl::OkStatus();
  std::vector<uint8_t>& bytes = owned_bytes_.emplace_back(factors.size() * sizeof(float));
  for (size_t i = 0; i < factors.size(); ++i) {  // F32 elements, little-endian
    uint32_t u;
    std::memcpy(&u, &factors[i], 4);
    for (int b = 0; b < 4; ++b) bytes[4 * i + b] = static_cast<uint8_t>(u >> (8 * b));
  }
  auto& shape = shapes_.emplace_back(std::make_unique<uint64_t[]>(1));
  shape[0] = factors.size();
  InputTensor t;
  t.name = owned_names_.emplace_back("rope_freqs.weight");
  t.dtype = DType::kF32;
  t.shape = absl::MakeConstSpan(shape.get(), 1);
  t.kind = InputKind::kSafetensors;
  t.file_path = &owned_names_.emplace_back(config_path);  // a deque: the pointer stays valid
  t.bytes = bytes;
  t.owned = true;
  tensors_.push_back(std::move(t));
  return absl::OkStatus();
}

absl::Status Inputs::AddHfFolder(const std::string& dir) {
  const std::string config_path = StrCat(dir, "/config.json");
  BP_ASSIGN_OR_RETURN(io::JsonValue config, ReadConfig(config_path));
  BP_ASSIGN_OR_RETURN(const io::HfArch* arch, io::FindHfArch(config, config_path));
  BP_ASSIGN_OR_RETURN(std::string weights, WeightsPath(dir));
  BP_ASSIGN_OR_RETURN(auto model, io::SafetensorsModel::Open(weights));
  files_.push_back(config_path);
  if (Extension(weights) == ".json") files_.push_back(weights);  // the index too: never overwritten
  for (const auto& f : model->files()) files_.push_back(f);
  tensors_.reserve(model->tensors().size() + 1);
  if (arch->writes_vocab_and_rope_dims) BP_RETURN_IF_ERROR(AddRopeFreqs(config, config_path));
  BP_RETURN_IF_ERROR(AddHfTensors(*model, *arch, config, config_path));
  safetensors_.push_back(std::move(model));
  BP_ASSIGN_OR_RETURN(metadata_, io::HfHyperparameters(*arch, config, config_path));
  metadata_.emplace_back("general.name", MetaValue::String(FolderName(dir)));
  metadata_.emplace_back("general.quantization_version", MetaValue::Uint(ValueType::kUint32, 2));
  BP_ASSIGN_OR_RETURN(Metadata tokenizer, io::HfTokenizerMetadata(dir, config, &files_));
  for (auto& kv : tokenizer) metadata_.push_back(std::move(kv));
  if (arch->no_space_prefix && SentencePieceStyle(metadata_)) {
    metadata_.emplace_back("tokenizer.ggml.add_space_prefix", MetaValue::Bool(false));
  }
  metadata_files_.assign(metadata_.size(), config_path);
  hf_folder_ = true;
  hf_arch_ = arch;
  return absl::OkStatus();
}

// A Mamba-2 tensor as llama.cpp's converter writes it: a new shape over
// the same bytes, and for A_log its values -exp'd into a buffer of ours
// (one F32 per head: small).
absl::Status Inputs::Transform(const io::HfTensorRule& rule, const io::SafetensorsTensor& s, const std::string& where,
                               const io::JsonValue& config, const std::string& config_path, InputTensor* t) {
  if (rule.reshape != io::HfReshape::kNone) {
    BP_ASSIGN_OR_RETURN(std::vector<uint64_t> shape, Reshaped(rule, s, where, config, config_path));
    auto& block = shapes_.emplace_back(std::make_unique<uint64_t[]>(shape.size()));
    std::copy(shape.begin(), shape.end(), block.get());
    t->shape = absl::MakeConstSpan(block.get(), shape.size());
  }
  if (rule.neg_exp || rule.plus_one) {
    BP_ASSIGN_OR_RETURN(std::vector<uint8_t> a, rule.neg_exp ? NegExpF32(s, t->bytes, where)
                                                              : io::NormPlusOneF32(s.dtype, t->bytes, where));
    t->bytes = owned_bytes_.emplace_back(std::move(a));
    t->dtype = DType::kF32;
    t->owned = true;
  }
  return absl::OkStatus();
}

// The experts of one GGUF tensor seen so far: the model's tensor index of
// each, and of the first seen (whose shape and dtype every other must have).
struct Inputs::ExpertGroup {
  std::vector<std::optional<size_t>> parts;
  size_t seen = 0;
  size_t first = 0;
};

absl::Status Inputs::AddHfTensors(const io::SafetensorsModel& model, const io::HfArch& arch,
                                  const io::JsonValue& config, const std::string& config_path) {
  const auto& st = model.tensors();
  const bool has_embedding = std::any_of(st.begin(), st.end(), [&](const auto& t) {
    auto m = io::MapHfTensorName(arch, t.name);
    return m && m->name == "token_embd.weight";
  });
  const bool tied = TiedEmbeddings(config);
  BP_ASSIGN_OR_RETURN(uint64_t experts, ExpertCount(config, config_path));
  std::map<std::string, ExpertGroup> groups;  // by GGUF name, until every expert is seen
  for (size_t i : ConverterOrder(st)) {
    const io::SafetensorsTensor& s = st[i];
    const std::string& file = model.files()[s.file_index];
    std::optional<io::HfMapped> mapped = io::MapHfTensorName(arch, s.name);
    if (!mapped) {
      return absl::InvalidArgumentError(StrCat(file, ": tensor ", QuoteForDisplay(s.name), " has no GGUF name in the ",
                                               arch.gguf, " mapping (", arch.hf_class, ")"));
    }
    if (mapped->name.empty()) continue;  // llama.cpp does without it
    if (mapped->expert) {
      BP_RETURN_IF_ERROR(AddExpert(model, i, std::move(*mapped), experts, &groups));
      continue;
    }
    if (mapped->name == "output.weight" && tied) {
      // Tied embeddings: llama.cpp reads token_embd for the output too. A
      // checkpoint that saved only lm_head (safetensors drops the alias)
      // gives it as the embedding.
      if (has_embedding) continue;
      mapped->name = "token_embd.weight";
    }
    InputTensor t;
    t.name = owned_names_.emplace_back(std::move(mapped->name));
    t.dtype = s.dtype;
    t.shape = s.shape;
    t.kind = InputKind::kSafetensors;
    t.file_path = &file;  // the model's, which the Inputs keep
    t.bytes = model.TensorBytes(i);
    if (mapped->rule->reshape != io::HfReshape::kNone || mapped->rule->neg_exp || mapped->rule->plus_one) {
      BP_RETURN_IF_ERROR(Transform(*mapped->rule, s, StrCat(file, ": tensor ", QuoteForDisplay(s.name)), config,
                                   config_path, &t));
    }
    if (mapped->rule->permute != io::HfPermute::kNone) {
      BP_ASSIGN_OR_RETURN(t.rotary_heads, RotaryHeads(mapped->rule->permute, s, file, config, config_path));
    }
    tensors_.push_back(std::move(t));
  }
  if (!groups.empty()) {
    const auto& [name, g] = *groups.begin();
    for (size_t x = 0; x < g.parts.size(); ++x) {
      if (!g.parts[x]) {
        return absl::InvalidArgumentError(StrCat(model.files()[0], ": expert ", x, " of ", QuoteForDisplay(name),
                                                 " is missing (", config_path, " says ", experts, " experts)"));
      }
    }
  }
  return absl::OkStatus();
}

// One expert's tensor: kept until its layer's every expert is seen, then
// the stacked tensor is added where llama.cpp's converter writes it (when
// its last expert arrives), each expert's shape and dtype checked alike.
absl::Status Inputs::AddExpert(const io::SafetensorsModel& model, size_t i, io::HfMapped mapped, uint64_t experts,
                               std::map<std::string, ExpertGroup>* groups) {
  const io::SafetensorsTensor& s = model.tensors()[i];
  const std::string where = StrCat(model.files()[s.file_index], ": tensor ", QuoteForDisplay(s.name));
  if (experts == 0 || *mapped.expert >= experts) {
    return absl::InvalidArgumentError(StrCat(where, ": expert ", *mapped.expert, " of a model of ", experts,
                                             " experts (num_local_experts / num_experts in config.json)"));
  }
  ExpertGroup& g = (*groups)[mapped.name];
  if (g.parts.empty()) {
    g.parts.resize(experts);
    g.first = i;
  }
  g.parts[*mapped.expert] = i;
  const io::SafetensorsTensor& first = model.tensors()[g.first];
  if (s.shape != first.shape || s.dtype != first.dtype) {
    return absl::InvalidArgumentError(StrCat(where, ": its shape or dtype differs from ", QuoteForDisplay(first.name),
                                             ", which it is stacked with"));
  }
  if (++g.seen < experts) return absl::OkStatus();
  auto& parts = stacks_.emplace_back();
  for (const auto& p : g.parts) parts.push_back(model.TensorBytes(*p));
  auto& shape = shapes_.emplace_back(std::make_unique<uint64_t[]>(s.shape.size() + 1));
  shape[0] = experts;
  std::copy(s.shape.begin(), s.shape.end(), shape.get() + 1);
  InputTensor t;
  t.name = owned_names_.emplace_back(mapped.name);
  t.dtype = s.dtype;
  t.shape = absl::MakeConstSpan(shape.get(), s.shape.size() + 1);
  t.kind = InputKind::kSafetensors;
  t.file_path = &model.files()[s.file_index];
  t.bytes = absl::Span<const uint8_t>(nullptr, model.TensorBytes(i).size() * experts);  // sizes only: `parts` hold the data
  t.parts = &parts;
  tensors_.push_back(std::move(t));
  groups->erase(mapped.name);
  return absl::OkStatus();
}

}  // namespace boltpack::tools
