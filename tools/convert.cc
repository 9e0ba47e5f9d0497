// bolt-pack convert IN... -o OUT: the output format follows OUT's extension.
#include <cstdio>
#include <optional>

#include "boltpack/codec_registry.h"
#include "boltpack/writer.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/gguf.h"
#include "io/imatrix.h"
#include "io/safetensors.h"
#include "tools/codec_plan.h"
#include "tools/codec_rules.h"
#include "tools/recipe.h"
#include "tools/commands.h"
#include "tools/inputs.h"
#include "tools/metadata_json.h"
#include "tools/progress.h"

namespace boltpack::tools {
namespace {

constexpr const char* kVersionString = "bolt-pack 0.1.0";

using CodecPlan = std::vector<std::optional<CodecRule>>;

// The planned rule of input tensor `t`, an element of in.tensors(); null
// keeps the tensor's source form.
const CodecRule* PlannedRule(const CodecPlan& plan, const Inputs& in, const InputTensor& t) {
  const auto& entry = plan[static_cast<size_t>(&t - in.tensors().data())];
  return entry ? &*entry : nullptr;
}

std::string Where(const InputTensor& t) { return StrCat(t.file, ": tensor \"", t.name, "\""); }

absl::Status PrefixError(const absl::Status& s, const InputTensor& t) {
  if (s.ok()) return s;
  std::string msg(s.message());
  // Library errors about a tensor already name it; others get the context.
  if (msg.find(t.name) == std::string::npos) msg = StrCat(Where(t), ": ", msg);
  return absl::Status(s.code(), msg);
}

uint64_t InputBytes(const InputTensor& t) {
  return t.kind == InputKind::kBolt ? t.reader->tensors()[t.index].stored_bytes() : t.bytes.size();
}

// The imatrix weights for a tensor being re-encoded (empty without one).
absl::StatusOr<absl::Span<const float>> ImportanceFor(const io::Imatrix* imatrix, const InputTensor& t) {
  if (imatrix == nullptr) return absl::Span<const float>();
  return imatrix->For(t.name, t.shape);
}

absl::Status ConvertToBolt(const Inputs& in, const CodecPlan& plan, const ConvertArgs& args,
                           const io::Imatrix* imatrix) {
  WriterOptions options;
  options.alignment = args.alignment;
  options.zstd_level = args.zstd_level;
  options.inputs = in.files();
  options.writer_name = kVersionString;
  options.threads = args.threads;
  BP_ASSIGN_OR_RETURN(auto writer, Writer::Create(args.output, options));
  for (const auto& [key, value] : in.metadata()) BP_RETURN_IF_ERROR(writer->AddMetadata(key, value));
  Progress progress("convert", in.total_bytes());
  ExecOptions exec;
  exec.threads = args.threads;
  for (const auto& t : in.tensors()) {
    const CodecRule* rule = PlannedRule(plan, in, t);
    if (rule == nullptr && t.kind == InputKind::kBolt) {
      // Stored bytes pass through untouched, whatever the codec.
      BP_RETURN_IF_ERROR(PrefixError(writer->CopyTensor(*t.reader, t.index), t));
      progress.Advance(t.reader->tensors()[t.index].stored_bytes());
      continue;
    }
    std::string codec = rule != nullptr ? rule->codec_id : t.SourceCodec();
    CodecParams params = rule != nullptr ? rule->params : CodecParams{};
    if (rule == nullptr && t.kind == InputKind::kGguf && codec != "f32" && codec != "f16" && codec != "bf16" &&
        codec != "raw") {
      // GGUF blocks pass through unchanged under their codec id.
      auto record = GgufBlockRecord(t);
      if (!record.ok()) return PrefixError(record.status(), t);
      BP_RETURN_IF_ERROR(PrefixError(writer->AddStoredTensor(std::move(*record), {t.bytes}), t));
      progress.Advance(t.bytes.size());
      continue;
    }
    std::vector<uint8_t> decoded;
    absl::Span<const uint8_t> bytes = t.bytes;
    if (t.kind == InputKind::kBolt || (t.kind == InputKind::kGguf && rule != nullptr)) {
      auto d = DecodeToLogical(t, args.threads);
      if (!d.ok()) return PrefixError(d.status(), t);
      decoded = std::move(*d);
      bytes = decoded;
    }
    TensorSource src{t.name, t.dtype, t.shape, bytes};
    if (rule != nullptr) {
      auto importance = ImportanceFor(imatrix, t);
      if (!importance.ok()) return PrefixError(importance.status(), t);
      src.importance = *importance;
    }
    auto encoded = EncodeTensor(codec, src, params, exec);
    if (!encoded.ok()) return PrefixError(encoded.status(), t);
    BP_RETURN_IF_ERROR(PrefixError(writer->AddTensor(t.name, t.shape, t.dtype, codec, std::move(*encoded)), t));
    progress.Advance(InputBytes(t));
  }
  progress.Finish();
  return writer->Finish();
}

// The element type a tensor takes in a safetensors output.
absl::StatusOr<DType> SafetensorsDType(const InputTensor& t, const CodecRule* rule) {
  std::string codec = rule != nullptr ? rule->codec_id : "";
  if (codec == "f32") return DType::kF32;
  if (codec == "f16") return DType::kF16;
  if (codec == "bf16") return DType::kBF16;
  if (codec.empty() || codec == "raw") {
    if (t.dtype == DType::kF32 || t.dtype == DType::kF16 || t.dtype == DType::kBF16) return t.dtype;
    if (t.kind == InputKind::kSafetensors || t.SourceCodec() == "raw") return t.dtype;
    return absl::InvalidArgumentError(StrCat(Where(t), ": codec \"", t.SourceCodec(), "\" of a ", DTypeName(t.dtype),
                                             " tensor has no safetensors element type"));
  }
  return absl::InvalidArgumentError(StrCat(Where(t), ": a safetensors file holds plain elements; codec \"", codec,
                                           "\" cannot be stored there (use f32, f16, bf16 or raw)"));
}

OutputType OutputFor(DType d) {
  switch (d) {
    case DType::kF32: return OutputType::kF32;
    case DType::kF16: return OutputType::kF16;
    case DType::kBF16: return OutputType::kBF16;
    default: return OutputType::kNative;
  }
}

absl::Status ConvertToSafetensors(const Inputs& in, const CodecPlan& plan, const ConvertArgs& args) {
  std::vector<io::SafetensorsTensorDecl> decls;
  for (const auto& t : in.tensors()) {
    BP_ASSIGN_OR_RETURN(DType d, SafetensorsDType(t, PlannedRule(plan, in, t)));
    decls.push_back({t.name, d, t.shape});
  }
  std::vector<std::pair<std::string, std::string>> meta;
  for (const auto& [key, value] : in.metadata()) {
    meta.emplace_back(key, value.type == ValueType::kString ? value.s : MetaValueToJson(value));
  }
  BP_ASSIGN_OR_RETURN(auto writer, io::SafetensorsWriter::Create(args.output, meta, decls, in.files()));
  Progress progress("convert", in.total_bytes());
  ExecOptions exec;
  exec.threads = args.threads;
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const auto& t = in.tensors()[i];
    DType d = decls[i].dtype;
    std::string source_codec = t.SourceCodec();
    bool plain = t.kind == InputKind::kSafetensors ||
                 (t.kind == InputKind::kGguf && (source_codec == "f32" || source_codec == "f16" ||
                                                 source_codec == "bf16" || source_codec == "raw"));
    if (plain && d == t.dtype) {
      BP_RETURN_IF_ERROR(writer->WriteNext(t.bytes));
      progress.Advance(t.bytes.size());
      continue;
    }
    std::vector<uint8_t> buf;
    if (t.kind != InputKind::kBolt) {
      // A float-to-float change of element type: the raw codecs do it.
      std::vector<uint8_t> logical;
      absl::Span<const uint8_t> bytes = t.bytes;
      if (!plain) {
        auto l = DecodeToLogical(t, args.threads);
        if (!l.ok()) return PrefixError(l.status(), t);
        logical = std::move(*l);
        bytes = logical;
      }
      TensorSource src{t.name, t.dtype, t.shape, bytes};
      auto enc = EncodeTensor(d == DType::kF32 ? "f32" : d == DType::kF16 ? "f16" : "bf16", src, {}, exec);
      if (!enc.ok()) return PrefixError(enc.status(), t);
      buf = std::move(enc->streams.at(0).bytes);
    } else {
      OutputType out = OutputFor(d);
      auto n = t.reader->DecodedBytes(t.index, out);
      if (!n.ok()) return PrefixError(n.status(), t);
      buf.resize(*n);
      BP_RETURN_IF_ERROR(PrefixError(t.reader->Decode(t.index, out, absl::MakeSpan(buf), exec), t));
    }
    BP_RETURN_IF_ERROR(PrefixError(writer->WriteNext(buf), t));
    progress.Advance(t.kind == InputKind::kBolt ? t.reader->tensors()[t.index].stored_bytes() : t.bytes.size());
  }
  progress.Finish();
  return writer->Finish();
}

// One tensor's GGUF type and bytes (zero-copy where the source holds them).
struct GgufData {
  const io::GgmlType* type = nullptr;
  absl::Span<const uint8_t> bytes;
  std::vector<uint8_t> owned;
};

absl::StatusOr<const io::GgmlType*> GgufTypeOf(const InputTensor& t, const CodecRule* rule) {
  const io::GgmlType* type = nullptr;
  std::string codec;
  if (rule != nullptr) {
    codec = rule->codec_id;
    type = io::GgmlTypeForCodec(codec, t.dtype, rule->params);
  } else if (t.kind == InputKind::kGguf) {
    return t.ggml_type;
  } else if (t.kind == InputKind::kBolt) {
    const TensorInfo& info = t.reader->tensors()[t.index];
    codec = info.codec_id;
    type = io::GgmlTypeForCodec(codec, info.dtype, info.codec_params);
  } else {
    codec = t.SourceCodec();
    type = io::GgmlTypeForCodec(codec, t.dtype, {});
  }
  if (type == nullptr) {
    return absl::InvalidArgumentError(StrCat(Where(t), ": codec \"", codec, "\" (dtype ", DTypeName(t.dtype),
                                             ") has no GGUF type; re-encode it with --codec (e.g. '", t.name,
                                             "=f16' or '=q8_0')"));
  }
  return type;
}

absl::Status FillGgufData(const InputTensor& t, const CodecRule* rule, const io::GgmlType* type, uint64_t need,
                          const io::Imatrix* imatrix, int threads, GgufData* out) {
  out->type = type;
  out->owned.clear();
  if (rule == nullptr && t.kind != InputKind::kBolt) {
    out->bytes = t.bytes;
  } else if (rule == nullptr) {
    const TensorInfo& info = t.reader->tensors()[t.index];
    if (info.streams.size() == 1 && info.streams[0].compression == Compression::kNone) {
      BP_RETURN_IF_ERROR(t.reader->VerifyStream(t.index, 0));
      BP_ASSIGN_OR_RETURN(out->bytes, t.reader->StoredStream(t.index, 0));
    } else if (info.codec_id == "f32" || info.codec_id == "f16" || info.codec_id == "bf16" || info.codec_id == "raw") {
      BP_ASSIGN_OR_RETURN(uint64_t n, t.reader->DecodedBytes(t.index, OutputType::kNative));
      out->owned.resize(n);
      ExecOptions exec;
      exec.threads = threads;
      BP_RETURN_IF_ERROR(t.reader->Decode(t.index, OutputType::kNative, absl::MakeSpan(out->owned), exec));
      out->bytes = out->owned;
    } else {
      return absl::UnimplementedError(StrCat(Where(t), ": codec \"", info.codec_id,
                                             "\" with compressed or several streams cannot be exported to GGUF"));
    }
  } else {
    BP_ASSIGN_OR_RETURN(std::vector<uint8_t> logical, DecodeToLogical(t, threads));
    TensorSource src{t.name, t.dtype, t.shape, logical};
    BP_ASSIGN_OR_RETURN(src.importance, ImportanceFor(imatrix, t));
    ExecOptions exec;
    exec.threads = threads;
    BP_ASSIGN_OR_RETURN(EncodedTensor enc, EncodeTensor(rule->codec_id, src, rule->params, exec));
    if (enc.streams.size() != 1) {
      return absl::UnimplementedError(StrCat(Where(t), ": codec \"", rule->codec_id, "\" writes ",
                                             enc.streams.size(), " streams; a GGUF tensor is one"));
    }
    out->owned = std::move(enc.streams[0].bytes);
    out->bytes = out->owned;
  }
  if (out->bytes.size() != need) {
    return absl::InvalidArgumentError(StrCat(Where(t), ": ", out->bytes.size(), " bytes, GGUF type ", type->name,
                                             " of this shape needs ", need));
  }
  return absl::OkStatus();
}

absl::Status ConvertToGguf(const Inputs& in, const CodecPlan& plan, const ConvertArgs& args,
                           const io::Imatrix* imatrix) {
  Metadata kv;
  uint32_t version = 3;
  bool padded = true;
  for (const auto& [key, value] : in.metadata()) {
    if (key == io::kGgufPaddedKey && value.type == ValueType::kBool) padded = value.b;
    if (key == io::kGgufVersionKey) {
      if (value.type != ValueType::kUint32 || (value.u != 2 && value.u != 3)) {
        return absl::InvalidArgumentError(StrCat("metadata \"", key, "\" must be a UINT32 2 or 3"));
      }
      version = static_cast<uint32_t>(value.u);
    }
    if (key.rfind(io::kGgufKeyPrefix, 0) == 0) continue;  // layout facts, not GGUF keys
    kv.emplace_back(key, value);
  }
  std::vector<io::GgufTensorDecl> decls;
  std::vector<const io::GgmlType*> types;
  std::vector<uint64_t> sizes;
  for (const auto& t : in.tensors()) {
    const CodecRule* rule = PlannedRule(plan, in, t);
    BP_ASSIGN_OR_RETURN(const io::GgmlType* type, GgufTypeOf(t, rule));
    if (t.name.size() > io::kGgufMaxNameBytes) {
      return absl::InvalidArgumentError(StrCat(Where(t), ": name is ", t.name.size(),
                                               " bytes; GGUF allows at most 63"));
    }
    if (t.shape.size() > io::kGgufMaxDims) {
      return absl::InvalidArgumentError(StrCat(Where(t), ": ", t.shape.size(), " dimensions; GGUF allows at most 4"));
    }
    io::GgufTensorDecl d{t.name, {t.shape.rbegin(), t.shape.rend()}, type->id};
    auto n = io::GgmlTensorBytes(*type, d.ne);
    if (!n.ok()) return absl::InvalidArgumentError(StrCat(Where(t), ": ", n.status().message()));
    sizes.push_back(*n);
    types.push_back(type);
    decls.push_back(std::move(d));
  }
  io::GgufWriterOptions options;
  options.version = version;
  options.pad_empty = padded;
  options.inputs = in.files();
  BP_ASSIGN_OR_RETURN(auto writer, io::GgufWriter::Create(args.output, kv, std::move(decls), options));
  Progress progress("convert", in.total_bytes());
  GgufData data;
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const auto& t = in.tensors()[i];
    BP_RETURN_IF_ERROR(PrefixError(FillGgufData(t, PlannedRule(plan, in, t), types[i], sizes[i], imatrix,
                                                args.threads, &data), t));
    BP_RETURN_IF_ERROR(PrefixError(writer->WriteNext(data.bytes), t));
    progress.Advance(InputBytes(t));
  }
  progress.Finish();
  return writer->Finish();
}

}  // namespace

int RunConvert(const ConvertArgs& args) {
  std::vector<CodecRule> rules;
  for (const auto& text : args.codec_rules) {
    auto rule = ParseCodecRule(text);
    if (!rule.ok()) {
      PrintError(std::string(rule.status().message()));
      return 2;
    }
    rules.push_back(std::move(*rule));
  }
  // Command-line rules come first, so they override the recipe's.
  if (!args.recipe.empty()) {
    auto recipe = LoadRecipe(args.recipe);
    if (!recipe.ok()) {
      PrintError(std::string(recipe.status().message()));
      return 2;
    }
    rules.insert(rules.end(), recipe->begin(), recipe->end());
  }
  std::string ext = Extension(args.output);
  if (ext != ".bolt" && ext != ".safetensors" && ext != ".gguf") {
    PrintError(StrCat(args.output, ": unknown output format \"", ext, "\" (expected .bolt, .safetensors or .gguf)"));
    return 2;
  }
  std::unique_ptr<io::Imatrix> imatrix;
  if (!args.imatrix.empty()) {
    auto im = io::Imatrix::Load(args.imatrix);
    if (!im.ok()) {
      PrintError(std::string(im.status().message()));
      return 1;
    }
    imatrix = std::move(*im);
  }
  auto in = Inputs::Open(args.inputs);
  if (!in.ok()) {
    PrintError(std::string(in.status().message()));
    return 1;
  }
  ConvertArgs resolved = args;
  if (resolved.threads <= 0) resolved.threads = HardwareThreads();
  std::vector<std::string> fallbacks;
  CodecPlan plan = PlanCodecs(**in, rules, &fallbacks);
  if (!fallbacks.empty()) {
    // One warning listing every such tensor, as llama-quantize does.
    std::string list;
    for (const auto& f : fallbacks) list += "\n  " + f;
    std::fprintf(stderr, "bolt-pack: warning: %zu tensor%s cannot take their rule's codec and use the fallback:%s\n",
                 fallbacks.size(), fallbacks.size() == 1 ? "" : "s", list.c_str());
  }
  absl::Status st = ext == ".bolt"   ? ConvertToBolt(**in, plan, resolved, imatrix.get())
                    : ext == ".gguf" ? ConvertToGguf(**in, plan, resolved, imatrix.get())
                                     : ConvertToSafetensors(**in, plan, resolved);
  if (!st.ok()) {
    PrintError(std::string(st.message()));
    return 1;
  }
  std::fprintf(stderr, "wrote %s (%zu tensors)\n", args.output.c_str(), (*in)->tensors().size());
  return 0;
}

}  // namespace boltpack::tools
