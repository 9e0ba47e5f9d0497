// bolt-pack slice IN.bolt --budget NAME -o OUT (.bolt, .gguf, .safetensors)
// | --keep AXIS=VALUE... -o OUT | --list-budgets: cuts a budget out of an
// elastic file (spec/elastic.md "Slicing"). Stored bytes are copied, not
// re-quantized; one tensor is in memory at a time; outputs are atomic.
#include <bit>
#include <chrono>
#include <cstdio>
#include <optional>

#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "boltpack/writer.h"
#include "common/escape.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "common/parallel_for.h"
#include "format/cut_decode.h"
#include "format/cut_pieces.h"
#include "format/elastic_cut.h"
#include "format/elastic_plan.h"
#include "format/elastic_runs.h"
#include "format/elastic_validate.h"
#include "io/gguf.h"
#include "io/gguf_nvfp4.h"
#include "io/gguf_split.h"
#include "io/safetensors_split.h"
#include "io/safetensors.h"
#include "codecs/nvfp4/nvfp4_codec.h"
#include "tools/commands.h"
#include "tools/gguf_file_type.h"
#include "tools/gguf_nvfp4.h"
#include "tools/inputs.h"
#include "tools/llama_check.h"
#include "io/metadata_json.h"
#include "tools/plan.h"
#include "tools/progress.h"
#include "tools/safetensors_out.h"

namespace boltpack::tools {
namespace {

constexpr const char* kVersionString = "bolt-pack 0.1.0";

// Refs view `tensors`, which the caller keeps (the reader builds a
// TensorInfo each time it is asked).
std::vector<format::ElasticTensorRef> RefsOf(const std::vector<TensorInfo>& tensors) {
  std::vector<format::ElasticTensorRef> refs;
  for (const auto& t : tensors) refs.push_back({t.name, t.shape, t.codec_id, t.dtype, &t.codec_params});
  return refs;
}

void ListBudgets(const Reader& r) {
  const ElasticManifest& m = *r.elastic();
  std::printf("%s: %u layers, axes:", r.path().c_str(), m.layer_count);
  for (const auto& a : m.axes) {
    uint64_t total = 0;
    for (uint64_t p : a.parent) total += p;
    std::string traits = StrCat(a.scope == ElasticScope::kLayer ? "per layer" : "global", ", ", total, " units");
    if (a.unit_elems > 1) traits += StrCat(" of ", a.unit_elems, " elements");
    if (a.groups > 1) traits += StrCat(" in ", a.groups, " groups");  // kept: the same prefix of each
    traits += StrCat(", granularity ", a.granularity);
    if (!a.at_most.empty()) traits += StrCat(", at most ", a.at_most);
    if (!a.metadata_key.empty()) traits += StrCat(", metadata {arch}.", a.metadata_key);
    std::printf(" %s(%s)", a.name.c_str(), traits.c_str());
  }
  std::printf("\n");
  for (const auto& b : m.budgets) {
    uint32_t kept = 0;
    for (bool k : b.layer_keep) kept += k;
    std::printf("%s: layers %u/%u", b.name.c_str(), kept, m.layer_count);
    for (const auto& a : m.axes) {
      uint64_t keep = 0, total = 0;
      for (uint32_t l = 0; l < a.parent.size(); ++l) {
        keep += m.KeptUnits(b, a, l);
        total += a.parent[l];
      }
      std::printf(", %s %llu/%llu", a.name.c_str(), static_cast<unsigned long long>(keep),
                  static_cast<unsigned long long>(total));
    }
    if (!b.nested_in.empty()) std::printf(" (nested in %s)", b.nested_in.c_str());
    std::printf("\n");
  }
}

OutputType ElementOutput(DType d) {
  switch (d) {
    case DType::kF32: return OutputType::kF32;
    case DType::kF16: return OutputType::kF16;
    case DType::kBF16: return OutputType::kBF16;
    default: return OutputType::kNative;
  }
}

// Decodes a cut tensor to the elements of its dtype.
absl::StatusOr<std::vector<uint8_t>> DecodeCut(const format::CutTensor& cut) {
  const Codec* codec = FindCodec(cut.info.codec_id);
  std::string where = StrCat("tensor ", QuoteForDisplay(cut.info.name));
  if (codec == nullptr) return absl::UnimplementedError(StrCat(where, ": unknown codec \"", cut.info.codec_id, "\""));
  BP_RETURN_IF_ERROR(codec->ValidateRecord(cut.info));
  OutputType out = ElementOutput(cut.info.dtype);
  if (!codec->CanDecodeTo(cut.info, out)) {
    return absl::UnimplementedError(StrCat(where, ": codec \"", cut.info.codec_id, "\" cannot decode to ",
                                           DTypeName(cut.info.dtype)));
  }
  BP_ASSIGN_OR_RETURN(uint64_t n, codec->DecodedBytes(cut.info, out));
  std::vector<uint8_t> bytes(n);
  DecodeInput in;
  in.info = &cut.info;
  for (const auto& s : cut.streams) in.streams.emplace_back(s);
  BP_RETURN_IF_ERROR(codec->Decode(in, out, absl::MakeSpan(bytes), {}));
  return bytes;
}

// The element maps a planned tensor keeps (the plan decides them).
format::ElementMaps MapsOf(const Reader& r, const format::PlannedTensor& p) {
  return format::RunMaps(r.tensors()[p.source].shape, p.runs);
}

// Codecs whose stored stream is already the elements of the tensor's dtype
// (what DecodeCut would give), so a cut of them is written as it lies.
bool StoresElements(const TensorInfo& info) {
  const CodecTraits traits = TraitsOf(info.codec_id);
  return traits.element && (traits.element_dtype == DType::kUnspecified || traits.element_dtype == info.dtype);
}

// Stream `k` of a cut in place, owning the cut: the writers write behind
// (they return before the bytes are written), and keep it until they are.
// The pieces point into the reader's mapping, which outlives the writer.
std::shared_ptr<PieceSource> StreamOf(const std::shared_ptr<format::CutInPlace>& cut, size_t k) {
  return std::shared_ptr<PieceSource>(cut, cut->streams.at(k).get());
}

// Writes the cut of `p` decoded to its dtype's elements: in batches of outer
// rows when it can be cut in place, else whole (codecs without fixed cells).
template <typename W>
absl::Status WriteDecoded(const Reader& r, const format::PlannedTensor& p, W& writer) {
  auto maps = MapsOf(r, p);
  if (auto in_place = format::CutTensorInPlace(r, p.source, maps, p.name)) {
    auto cut = std::make_shared<format::CutInPlace>(std::move(*in_place));
    if (StoresElements(cut->info)) return writer.WriteNextBehind(StreamOf(cut, 0));
    BP_ASSIGN_OR_RETURN(auto pieces,
                        format::DecodedCutPieces::Create(*cut, ElementOutput(cut->info.dtype), HardwareThreads()));
    // The decoder reads the cut: the writer keeps both until written.
    struct Decoding {
      std::shared_ptr<format::CutInPlace> cut;
      std::unique_ptr<format::DecodedCutPieces> pieces;
    };
    auto decoding = std::make_shared<Decoding>(Decoding{std::move(cut), std::move(pieces)});
    return writer.WriteNextBehind(std::shared_ptr<PieceSource>(decoding, decoding->pieces.get()));
  }
  BP_ASSIGN_OR_RETURN(auto cut, format::CutStoredTensor(r, p.source, maps, p.name));
  BP_ASSIGN_OR_RETURN(auto bytes, DecodeCut(cut));
  return writer.WriteNext(bytes);
}

// A skeleton's estimate of a tensor cut by decoding: its stored bytes times
// the share of elements the cut keeps, padded to the alignment.
void EstimateCut(const Reader& r, const format::PlannedTensor& p, const SliceArgs& args) {
  if (args.estimate == nullptr) return;
  const auto info = r.SharedTensor(p.source);
  long double kept = 1;
  for (size_t d = 0; d < info->shape.size() && d < p.kept.size(); ++d) {
    if (info->shape[d] > 0) kept *= static_cast<long double>(p.kept[d]) / static_cast<long double>(info->shape[d]);
  }
  const uint64_t a = r.alignment();
  uint64_t bytes = 0;
  for (const auto& s : info->streams) {
    const auto n = static_cast<uint64_t>(static_cast<long double>(s.length) * kept);
    bytes += n == 0 ? 0 : (n + a - 1) / a * a;
  }
  args.estimate->bytes += bytes;
  args.estimate->tensors.push_back(StrCat(p.name, " (", info->codec_id, " cut by decoding)"));
}

absl::Status SliceToBolt(const Reader& r, const format::SlicePlan& plan, const SliceArgs& args) {
  WriterOptions options;
  options.alignment = r.alignment();
  options.inputs = {args.input};
  options.writer_name = kVersionString;
  options.durable = !args.no_fsync;
  options.write_behind = true;  // `r` outlives the writer
  options.skeleton = args.skeleton;
  options.expected_tensors = r.tensors().size();
  if (!args.shard_max_size.empty()) options.shard_max_bytes = *io::ParseGgufSplitSize(args.shard_max_size);  // checked by RunSlice
  // The budgets nested in this one stay sliceable the same way: the cut
  // tensors get line-prefix checksums for them (whole tensors keep theirs),
  // planned from the output's manifest, which therefore goes in first.
  options.line_prefixes = true;
  BP_ASSIGN_OR_RETURN(auto writer, Writer::Create(args.output, options));
  BP_RETURN_IF_ERROR(writer->SetElastic(plan.elastic));
  for (const auto& [key, value] : plan.metadata) BP_RETURN_IF_ERROR(writer->AddMetadata(key, value));
  Progress progress("slice", plan.tensors.size(), Progress::Unit::kItems);
  for (const auto& p : plan.tensors) {
    if (p.whole) {
      BP_RETURN_IF_ERROR(writer->CopyTensor(r, p.source, p.name));
    } else {
      auto maps = MapsOf(r, p);
      if (auto in_place = format::CutTensorInPlace(r, p.source, maps, p.name)) {
        // Kept runs go from the input's mapping to the output file.
        auto cut = std::make_shared<format::CutInPlace>(std::move(*in_place));
        std::vector<std::shared_ptr<PieceSource>> streams;
        for (size_t k = 0; k < cut->streams.size(); ++k) streams.push_back(StreamOf(cut, k));
        BP_RETURN_IF_ERROR(writer->AddStoredTensorBehind(cut->info, streams));
      } else if (args.skeleton) {
        // Cut by decoding (an entropy code): the kept share of its stored
        // bytes, estimated.
        EstimateCut(r, p, args);
      } else {
        BP_ASSIGN_OR_RETURN(auto cut, format::CutStoredTensor(r, p.source, maps, p.name));
        std::vector<absl::Span<const uint8_t>> spans(cut.streams.begin(), cut.streams.end());
        BP_RETURN_IF_ERROR(writer->AddStoredTensor(std::move(cut.info), spans));
      }
    }
    progress.Advance(1, p.name);
  }
  progress.Finish();
  return writer->Finish();
}

absl::Status SliceToSafetensors(const Reader& r, const format::SlicePlan& plan, const SliceArgs& args) {
  std::vector<io::SafetensorsTensorDecl> decls;
  for (const auto& p : plan.tensors) decls.push_back({p.name, r.tensors()[p.source].dtype, p.kept});
  std::vector<std::pair<std::string, std::string>> meta;
  for (const auto& [key, value] : plan.metadata) {
    meta.emplace_back(key, value.type == ValueType::kString ? value.s : io::MetaValueToJson(value));
  }
  // RunSlice checked the size.
  const uint64_t max_bytes = args.split_max_size.empty() ? 0 : *io::ParseGgufSplitSize(args.split_max_size);
  BP_ASSIGN_OR_RETURN(SafetensorsOut writer, SafetensorsOut::Create(args.output, std::move(meta), std::move(decls),
                                                                    {args.input}, !args.no_fsync, max_bytes,
                                                                    args.split_max_tensors));
  Progress progress("slice", plan.tensors.size(), Progress::Unit::kItems);
  for (const auto& p : plan.tensors) {
    BP_RETURN_IF_ERROR(WriteDecoded(r, p, writer));
    progress.Advance(1, p.name);
  }
  progress.Finish();
  return writer.Finish();
}

// llama.cpp reads some per-layer facts as one number; a budget whose kept
// layers differ in them (or a parent that already had an array) gets a
// per-layer array there, which it refuses.
// The file is still a valid GGUF (other readers, bolt-pack itself, take
// it), so this warns rather than fails.
void WarnLlamaScalars(const Metadata& kv, const std::string& budget) {
  for (const auto& key : LlamaScalarKeysGivenAsArrays(kv)) {
    std::string values;
    for (const auto& [k, v] : kv) {
      if (k != key) continue;
      for (size_t e = 0; e < v.array_size(); ++e) {
        values += StrCat(values.empty() ? "" : ", ",
                         IsSignedInt(v.element_type) ? StrCat(v.int_element(e)) : StrCat(v.uint_element(e)));
      }
    }
    std::fprintf(stderr,
                 "bolt-pack: warning: budget \"%s\": %s is a per-layer array [%s]; llama.cpp reads %s as a "
                 "single number and will refuse to load this GGUF (`bolt-pack verify --target llama.cpp` reports "
                 "it); for llama.cpp, slice a budget with the same count in every kept layer from a parent whose "
                 "key is a single number\n",
                 budget.c_str(), key.c_str(), values.c_str(), key.c_str());
  }
}

constexpr int kGgmlNvfp4 = 40;  // GGML_TYPE_NVFP4

// How a planned tensor reaches the GGUF: its stored cells (GGUF blocks),
// decoded to its dtype's elements, or two-level nvfp4 repacked to ggml
// NVFP4 blocks plus the ".scale" beside it (as `convert` exports it,
// tools/gguf_nvfp4.h), so a slice is never larger than the uncut export.
struct GgufSliceTensor {
  bool decode = false;
  bool nvfp4 = false;
  std::vector<uint64_t> scale_ne;  // nvfp4: the scale's GGUF ne; empty: none (tensor scale 1)
};

// The plan of a two-level nvfp4 tensor of GGUF ne `ne`; nullopt where it is
// decoded instead: ggml's NVFP4 blocks are 64 wide (a cut of 16-element
// bolt blocks may end inside one), a tensor scale that is not a number, or a
// tensor llama.cpp reads no scale beside (token_embd: the scale would be lost).
std::optional<GgufSliceTensor> PlanNvfp4Slice(const TensorInfo& info, const std::string& name,
                                              const std::vector<uint64_t>& ne) {
  if (!IsTwoLevelNvfp4Codec(info.codec_id, info.dtype, info.codec_params) || info.streams.size() != 2) {
    return std::nullopt;
  }
  const std::optional<double> ts = io::Nvfp4NumericTensorScale(info.codec_params);
  if (!ts || ne.empty() || ne[0] % 64 != 0) return std::nullopt;
  const bool has_scale = *ts != 1.0;
  if (!Nvfp4StaysNvfp4InGguf(name, ne, has_scale)) return std::nullopt;
  GgufSliceTensor out;
  out.nvfp4 = true;
  if (has_scale) out.scale_ne = LlamaScaleNe(name, ne).value_or(std::vector<uint64_t>{1});
  if (has_scale && io::Nvfp4ScaleTensorName(name).size() > io::kGgufMaxNameBytes) return std::nullopt;
  return out;
}

// The cut streams of a two-level nvfp4 tensor as ggml NVFP4 blocks, then its
// tensor scale as F32 (once per expert beside *_exps).
absl::Status WriteNvfp4Slice(const Reader& r, const format::PlannedTensor& p, const GgufSliceTensor& how,
                             io::GgufWriter& writer) {
  BP_ASSIGN_OR_RETURN(auto cut, format::CutStoredTensor(r, p.source, MapsOf(r, p), p.name));
  if (cut.streams.size() != 2) return absl::InternalError(StrCat("nvfp4 cut of ", p.name, " has other than 2 streams"));
  BP_ASSIGN_OR_RETURN(GgmlNvfp4Tensor g, Nvfp4ToGgml(cut.info, cut.streams[0], cut.streams[1]));
  BP_RETURN_IF_ERROR(writer.WriteNext(g.blocks));
  if (how.scale_ne.empty()) return absl::OkStatus();
  uint64_t n = 1;
  for (uint64_t d : how.scale_ne) n *= d;
  const uint32_t u = std::bit_cast<uint32_t>(g.tensor_scale);
  std::vector<uint8_t> le(4 * n);  // F32, little-endian
  for (size_t b = 0; b < le.size(); ++b) le[b] = static_cast<uint8_t>(u >> (8 * (b % 4)));
  return writer.WriteNext(le);
}

// How `info` (cut to GGUF ne `ne`, named `name`) goes to GGUF, or an error
// naming it when it has no GGUF form.
absl::StatusOr<GgufSliceTensor> PlanGgufTensor(const Reader& r, const TensorInfo& info, const std::string& name,
                                               const std::vector<uint64_t>& ne, int* ggml_type) {
  std::string where = StrCat(r.path(), ": tensor ", QuoteForDisplay(info.name));
  if (name.size() > io::kGgufMaxNameBytes || ne.size() > io::kGgufMaxDims) {
    return absl::InvalidArgumentError(StrCat(where, ": GGUF allows names of at most 63 bytes and 4 dimensions"));
  }
  if (auto nvfp4 = PlanNvfp4Slice(info, name, ne)) {
    *ggml_type = kGgmlNvfp4;
    return *nvfp4;
  }
  GgufSliceTensor how;
  const io::GgmlType* type = io::GgmlTypeForCodec(info.codec_id, info.dtype, info.codec_params);
  if (type == nullptr && (info.dtype == DType::kF32 || info.dtype == DType::kF16 || info.dtype == DType::kBF16)) {
    type = io::GgmlTypeByName(DTypeName(info.dtype));
    how.decode = true;
  }
  if (type == nullptr || (!how.decode && info.streams.size() != 1)) {
    return absl::InvalidArgumentError(StrCat(where, ": codec \"", info.codec_id, "\" has no GGUF type; convert it "
                                             "with --codec to a GGUF codec (q8_0, f16, ...) before slicing"));
  }
  *ggml_type = type->id;
  return how;
}

absl::Status SliceToGguf(const Reader& r, const format::SlicePlan& plan, const SliceArgs& args,
                         const std::string& budget, size_t* tensors_written) {
  Metadata kv;
  uint32_t version = 3;
  bool padded = true;
  for (const auto& [key, value] : plan.metadata) {
    if (key == io::kGgufPaddedKey && value.type == ValueType::kBool) padded = value.b;
    if (key == io::kGgufVersionKey && value.type == ValueType::kUint32 && (value.u == 2 || value.u == 3)) {
      version = static_cast<uint32_t>(value.u);
    }
    if (key.rfind(io::kGgufKeyPrefix, 0) == 0) continue;  // layout facts, not GGUF keys
    kv.emplace_back(key, value);
  }
  WarnLlamaScalars(kv, budget);
  std::vector<io::GgufTensorDecl> decls;
  std::vector<GgufSliceTensor> how;  // per planned tensor
  for (const auto& p : plan.tensors) {
    std::vector<uint64_t> ne(p.kept.rbegin(), p.kept.rend());
    int type = -1;
    BP_ASSIGN_OR_RETURN(GgufSliceTensor h, PlanGgufTensor(r, r.tensors()[p.source], p.name, ne, &type));
    decls.push_back({p.name, std::move(ne), type});
    if (!h.scale_ne.empty()) decls.push_back({io::Nvfp4ScaleTensorName(p.name), h.scale_ne, 0});  // F32
    how.push_back(std::move(h));
  }
  *tensors_written = decls.size();
  // The keys of a re-encoded parent (a recipe convert of an F16 GGUF) name
  // the source's file type; the slice gets the one of the mix it holds.
  const GgufMix mix = MixOf(decls);
  if (FileTypeMisnamed(kv, mix)) SetGgufFileType(mix, &kv);
  io::GgufWriterOptions options;
  options.version = version;
  options.pad_empty = padded;
  options.inputs = {args.input};
  options.durable = !args.no_fsync;
  BP_ASSIGN_OR_RETURN(auto writer, io::GgufWriter::Create(args.output, kv, decls, options));
  Progress progress("slice", plan.tensors.size(), Progress::Unit::kItems);
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const auto& p = plan.tensors[i];
    if (how[i].nvfp4) {
      BP_RETURN_IF_ERROR(WriteNvfp4Slice(r, p, how[i], *writer));
    } else if (how[i].decode) {
      BP_RETURN_IF_ERROR(WriteDecoded(r, p, *writer));
    } else if (auto maps = MapsOf(r, p); auto in_place = format::CutTensorInPlace(r, p.source, maps, p.name)) {
      // GGUF blocks are the stored cells: kept runs go straight across.
      auto cut = std::make_shared<format::CutInPlace>(std::move(*in_place));
      BP_RETURN_IF_ERROR(writer->WriteNextBehind(StreamOf(cut, 0)));
    } else {
      BP_ASSIGN_OR_RETURN(auto cut, format::CutStoredTensor(r, p.source, maps, p.name));
      BP_RETURN_IF_ERROR(writer->WriteNext(cut.streams.at(0)));
    }
    progress.Advance(1, p.name);
  }
  progress.Finish();
  return writer->Finish();
}

}  // namespace

absl::Status SliceSkeleton(const Reader& r, const ElasticBudget& budget, const std::string& output,
                           PlanEstimate* estimate) {
  BP_ASSIGN_OR_RETURN(auto plan, format::PlanSlice(*r.elastic(), r.tensors(), r.metadata(), budget));
  SliceArgs args;
  args.input = r.path();
  args.output = output;
  args.no_fsync = true;
  args.skeleton = true;
  args.estimate = estimate;
  return SliceToBolt(r, plan, args);
}

int RunSlice(const SliceArgs& args) {
  if (Extension(args.input) != ".bolt") {
    PrintError(StrCat(args.input, ": slice reads .bolt files only"));
    return 2;
  }
  int given = !args.budget.empty() + !args.keep.empty() + args.list_budgets;
  if (given != 1) {
    PrintError("slice needs exactly one of --budget NAME, --keep AXIS=VALUE... or --list-budgets");
    return 2;
  }
  const bool split = !args.split_max_size.empty() || args.split_max_tensors > 0;
  // DIR/NAME.safetensors.index.json: the index of a split safetensors output.
  std::string ext = split && io::IsSafetensorsIndexName(args.output) ? ".safetensors" : Extension(args.output);
  if (!args.list_budgets && ext != ".bolt" && ext != ".gguf" && ext != ".safetensors") {
    PrintError(StrCat(args.output.empty() ? std::string("(no -o)") : args.output,
                      ": slice writes .bolt, .gguf or .safetensors (give -o OUT)"));
    return 2;
  }
  if (!args.shard_max_size.empty()) {
    auto n = io::ParseGgufSplitSize(args.shard_max_size);
    if (ext != ".bolt" || !n.ok()) {
      PrintError(ext != ".bolt" ? StrCat(args.output, ": --shard-max-size writes a multi-file .bolt model")
                                : StrCat("--shard-max-size: ", n.status().message()));
      return 2;
    }
  }
  if (split) {
    auto n = args.split_max_size.empty() ? absl::StatusOr<uint64_t>(0) : io::ParseGgufSplitSize(args.split_max_size);
    if (ext != ".safetensors" || !n.ok()) {
      PrintError(ext != ".safetensors"
                     ? StrCat(args.output, ": slice's --split-max-size and --split-max-tensors split .safetensors "
                                           "output (Hugging Face's layout)")
                     : StrCat("--split-max-size: ", n.status().message()));
      return 2;
    }
  }
  auto reader = Reader::Open(args.input);
  if (!reader.ok()) {
    PrintError(std::string(reader.status().message()));
    return 1;
  }
  const Reader& r = **reader;
  if (r.elastic() == nullptr) {
    PrintError(StrCat(args.input, ": has no elastic manifest, so there is no budget to slice "
                                  "(write one with `bolt-pack convert ... --elastic FILE.json`)"));
    return 1;
  }
  const ElasticManifest& m = *r.elastic();
  if (args.list_budgets) {
    ListBudgets(r);
    return 0;
  }
  ElasticBudget budget;
  if (!args.budget.empty()) {
    const ElasticBudget* b = m.FindBudget(args.budget);
    if (b == nullptr) {
      std::string names;
      for (const auto& x : m.budgets) names += StrCat(names.empty() ? "" : ", ", x.name);
      PrintError(StrCat(args.input, ": no budget \"", args.budget, "\" (budgets: ", names.empty() ? "none" : names, ")"));
      return 1;
    }
    budget = *b;
  } else {
    auto b = format::AdHocBudget(m, args.keep);
    if (!b.ok()) {
      PrintError(StrCat(args.input, ": ", b.status().message()));
      return 2;
    }
    // The same rules as a stored budget (granularity, at-most, blocks).
    ElasticManifest with = m;
    with.budgets.push_back(*b);
    if (with.FindBudget(b->name) != &with.budgets.back()) with.budgets.back().name += "'";
    const TensorList list = r.tensors();
    const std::vector<TensorInfo> tensors(list.begin(), list.end());
    absl::Status valid = format::ValidateElastic(with, RefsOf(tensors), args.input);
    if (!valid.ok()) {
      PrintError(std::string(valid.message()));
      return 1;
    }
    budget = with.budgets.back();
  }
  auto start = std::chrono::steady_clock::now();
  auto plan = format::PlanSlice(m, r.tensors(), r.metadata(), budget);
  absl::Status st = plan.status();
  size_t written = st.ok() ? plan->tensors.size() : 0;  // a GGUF adds nvfp4's .scale tensors
  if (st.ok()) {
    st = ext == ".bolt" ? SliceToBolt(r, *plan, args)
         : ext == ".gguf" ? SliceToGguf(r, *plan, args, budget.name, &written)
                          : SliceToSafetensors(r, *plan, args);
  }
  if (!st.ok()) {
    std::string msg(st.message());
    if (msg.find(args.input) == std::string::npos && msg.find(args.output) == std::string::npos) {
      msg = StrCat(args.input, ": budget \"", budget.name, "\": ", msg);
    }
    PrintError(msg);
    return 1;
  }
  for (const auto& note : plan->notes) std::fprintf(stderr, "bolt-pack: note: %s\n", note.c_str());
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "wrote %s (budget \"%s\": %zu tensors, %u layers, %.3f s)\n",
               split ? "the files above" : args.output.c_str(), budget.name.c_str(), written, plan->kept_layers, secs);
  return 0;
}

}  // namespace boltpack::tools
