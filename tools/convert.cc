// bolt-pack convert IN... -o OUT: the output format follows OUT's extension.
#include <cstdio>

#include "boltpack/codec_registry.h"
#include "boltpack/writer.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/safetensors.h"
#include "tools/codec_rules.h"
#include "tools/commands.h"
#include "tools/inputs.h"
#include "tools/metadata_json.h"
#include "tools/progress.h"

namespace boltpack::tools {
namespace {

constexpr const char* kVersionString = "bolt-pack 0.1.0";

std::string Where(const InputTensor& t) { return StrCat(t.file, ": tensor \"", t.name, "\""); }

absl::Status PrefixError(const absl::Status& s, const InputTensor& t) {
  if (s.ok()) return s;
  std::string msg(s.message());
  // Library errors about a tensor already name it; others get the context.
  if (msg.find(t.name) == std::string::npos) msg = StrCat(Where(t), ": ", msg);
  return absl::Status(s.code(), msg);
}

absl::Status ConvertToBolt(const Inputs& in, const std::vector<CodecRule>& rules, const ConvertArgs& args) {
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
    const CodecRule* rule = FindRule(rules, t.name);
    if (rule == nullptr && t.kind == InputKind::kBolt) {
      // Stored bytes pass through untouched, whatever the codec.
      BP_RETURN_IF_ERROR(PrefixError(writer->CopyTensor(*t.reader, t.index), t));
      progress.Advance(t.reader->tensors()[t.index].stored_bytes());
      continue;
    }
    std::string codec = rule != nullptr ? rule->codec_id : t.SourceCodec();
    CodecParams params = rule != nullptr ? rule->params : CodecParams{};
    std::vector<uint8_t> decoded;
    absl::Span<const uint8_t> bytes = t.bytes;
    if (t.kind == InputKind::kBolt) {
      auto d = DecodeToLogical(t, args.threads);
      if (!d.ok()) return PrefixError(d.status(), t);
      decoded = std::move(*d);
      bytes = decoded;
    }
    TensorSource src{t.name, t.dtype, t.shape, bytes};
    auto encoded = EncodeTensor(codec, src, params, exec);
    if (!encoded.ok()) return PrefixError(encoded.status(), t);
    BP_RETURN_IF_ERROR(PrefixError(writer->AddTensor(t.name, t.shape, t.dtype, codec, std::move(*encoded)), t));
    progress.Advance(t.kind == InputKind::kBolt ? t.reader->tensors()[t.index].stored_bytes() : t.bytes.size());
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

absl::Status ConvertToSafetensors(const Inputs& in, const std::vector<CodecRule>& rules, const ConvertArgs& args) {
  std::vector<io::SafetensorsTensorDecl> decls;
  for (const auto& t : in.tensors()) {
    BP_ASSIGN_OR_RETURN(DType d, SafetensorsDType(t, FindRule(rules, t.name)));
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
    if (t.kind == InputKind::kSafetensors && d == t.dtype) {
      BP_RETURN_IF_ERROR(writer->WriteNext(t.bytes));
      progress.Advance(t.bytes.size());
      continue;
    }
    std::vector<uint8_t> buf;
    if (t.kind == InputKind::kSafetensors) {
      // A float-to-float change of element type: the raw codecs do it.
      TensorSource src{t.name, t.dtype, t.shape, t.bytes};
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
  std::string ext = Extension(args.output);
  if (ext != ".bolt" && ext != ".safetensors") {
    PrintError(StrCat(args.output, ": unknown output format \"", ext, "\" (expected .bolt or .safetensors)"));
    return 2;
  }
  auto in = Inputs::Open(args.inputs);
  if (!in.ok()) {
    PrintError(std::string(in.status().message()));
    return 1;
  }
  ConvertArgs resolved = args;
  if (resolved.threads <= 0) resolved.threads = HardwareThreads();
  absl::Status st = ext == ".bolt" ? ConvertToBolt(**in, rules, resolved) : ConvertToSafetensors(**in, rules, resolved);
  if (!st.ok()) {
    PrintError(std::string(st.message()));
    return 1;
  }
  std::fprintf(stderr, "wrote %s (%zu tensors)\n", args.output.c_str(), (*in)->tensors().size());
  return 0;
}

}  // namespace boltpack::tools
