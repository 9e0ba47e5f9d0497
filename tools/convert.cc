// bolt-pack convert IN... -o OUT: the output format follows OUT's extension.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "absl/strings/cord.h"
#include "boltpack/codec_registry.h"
#include "boltpack/writer.h"
#include "codecs/encoded_record.h"
#include "codecs/float_convert.h"
#include "codecs/int4/int4_q4_0.h"
#include "common/escape.h"
#include "common/huge_pages.h"
#include "common/ordered_pipeline.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/gguf.h"
#include "io/gguf_nvfp4.h"
#include "io/gguf_split.h"
#include "io/safetensors_split.h"
#include "io/imatrix.h"
#include "io/safetensors.h"
#include "tools/codec_plan.h"
#include "tools/codec_rules.h"
#include "tools/recipe.h"
#include "tools/commands.h"
#include "tools/convert.h"
#include "tools/elastic_convert.h"
#include "tools/gguf_file_type.h"
#include "tools/gguf_nvfp4.h"
#include "tools/importance.h"
#include "tools/inputs.h"
#include "tools/q4_0_import.h"
#include "io/metadata_json.h"
#include "tools/part_plan.h"
#include "tools/progress.h"
#include "tools/safetensors_out.h"

namespace boltpack::tools {
namespace {

constexpr const char* kVersionString = "bolt-pack 0.1.0";

// Tensor `t` is written: its share of the progress bar, and its input pages
// leave the address space (Inputs::Release).
void Done(const Inputs& in, const InputTensor& t, Progress& progress, uint64_t bytes) {
  progress.Advance(bytes, t.name);
  in.Release(t);
}

// The planned rule of input tensor `t`, an element of in.tensors(); null
// keeps the tensor's source form.
const CodecRule* PlannedRule(const CodecPlan& plan, const Inputs& in, const InputTensor& t) {
  return plan[static_cast<size_t>(&t - in.tensors().data())];
}

std::string Where(const InputTensor& t) { return StrCat(t.file(), ": tensor ", QuoteForDisplay(t.name)); }

absl::Status PrefixError(const absl::Status& s, const InputTensor& t) {
  if (s.ok()) return s;
  std::string msg(s.message());
  // Library errors about a tensor already name it; others get the context.
  if (msg.find(EscapeForDisplay(t.name)) == std::string::npos) msg = StrCat(Where(t), ": ", msg);
  return absl::Status(s.code(), msg);
}

uint64_t InputBytes(const InputTensor& t) {
  return t.kind == InputKind::kBolt ? t.reader->SharedTensor(t.index)->stored_bytes() : t.bytes.size();
}

// Stream bytes `info`'s streams take in a file aligned to `alignment`
// (each starts at a multiple of it): an estimate's measure.
uint64_t PaddedBytes(uint64_t bytes, uint64_t alignment) {
  return bytes == 0 ? 0 : (bytes + alignment - 1) / alignment * alignment;
}

// bolt-pack plan: tensor `t` encoded with `codec_id` goes into a skeleton as
// its planned record (Codec::PlanEncode), its streams holes; a codec whose
// record depends on the data is estimated instead (its EncodedSize, or the
// source's bytes where it has none).
absl::Status AddPlanned(Writer& writer, const InputTensor& t, const std::string& codec_id, const CodecParams& params,
                        const ConvertArgs& args) {
  const Codec* codec = FindCodec(codec_id);
  if (codec == nullptr) return absl::NotFoundError(StrCat(Where(t), ": unknown codec \"", codec_id, "\""));
  BP_ASSIGN_OR_RETURN(std::optional<EncodePlan> plan, codec->PlanEncode(t.dtype, t.shape, params));
  if (!plan) {
    absl::StatusOr<uint64_t> size = codec->EncodedSize(t.dtype, t.shape, params);
    if (args.estimate != nullptr) {
      args.estimate->bytes += PaddedBytes(size.ok() ? *size : InputBytes(t), args.alignment);
      args.estimate->tensors.push_back(StrCat(t.name, " (", codec_id, ")"));
    }
    return absl::OkStatus();
  }
  TensorInfo info = RecordForPlan(std::string(t.name), t.dtype, {t.shape.begin(), t.shape.end()}, codec_id, *plan);
  std::vector<HolePieces> holes;
  for (uint64_t n : plan->lengths) holes.emplace_back(n);
  std::vector<PieceSource*> sources;
  for (auto& h : holes) sources.push_back(&h);
  return writer.AddStoredTensor(std::move(info), sources);
}

// A Hugging Face folder's keys with the general.file_type its GGUF export
// will say (defined with the GGUF export below).
Metadata HfFolderBoltMetadata(const Inputs& in, const CodecPlan& plan);

// A tensor's way into a .bolt output: copied as stored (encoded false), or
// encoded (ahead of the writes, on a worker thread) and then added.
struct BoltJob {
  const CodecRule* rule = nullptr;
  format::ElementMaps maps;
  // The shape `maps` index: the tensor's, or (a flat binding whose groups
  // move differently, format 1.4) one dimension of all its elements.
  std::vector<uint64_t> grid;
  bool encoded = false;
  std::string codec;
  EncodedTensor enc;
};

bool StoredForm(const InputTensor& t) {
  return t.kind == InputKind::kBolt || (t.kind == InputKind::kGguf && !TraitsOf(t.SourceCodec()).element);
}

// True for a tensor the writer takes as stored (no encode): a permuted
// stored form, a .bolt tensor copied through, GGUF blocks passed through.
bool PassesStored(const InputTensor& t, const BoltJob& job) {
  if (job.rule != nullptr) return false;
  if (Moves(job.maps) && StoredForm(t)) return true;
  if (t.kind == InputKind::kBolt) return true;
  return t.kind == InputKind::kGguf && !TraitsOf(t.SourceCodec()).element;
}

// The encode of `t` under job->rule (or its source codec): its elements
// decoded where stored, permuted where --elastic moves them, then encoded.
absl::Status EncodeForBolt(const InputTensor& t, const Importance& importance, int threads,
                           const ExecOptions& exec, BoltJob* job) {
  const CodecRule* rule = job->rule;
  job->codec = rule != nullptr ? rule->codec_id : t.SourceCodec();
  CodecParams params = rule != nullptr ? rule->params : CodecParams{};
  if (rule != nullptr && !Moves(job->maps)) {
    // Q4_0 blocks to int4-g128, repacked without decoding ([G-3.3]).
    BP_ASSIGN_OR_RETURN(std::optional<EncodedTensor> q4, ImportQ4_0AsInt4G128(t, rule->codec_id));
    if (q4) {
      job->enc = std::move(*q4);
      job->encoded = true;
      return absl::OkStatus();
    }
  }
  std::vector<uint8_t> decoded;
  BP_ASSIGN_OR_RETURN(absl::Span<const uint8_t> bytes, ElementBytes(t, &decoded));  // a Hugging Face Q or K reordered
  if (t.kind == InputKind::kBolt || (t.kind == InputKind::kGguf && rule != nullptr)) {
    BP_ASSIGN_OR_RETURN(decoded, DecodeToLogical(t, threads));
    bytes = decoded;
  }
  std::vector<uint8_t> moved;
  if (Moves(job->maps)) {
    // Permuted as elements, then encoded (a q8_0 tensor is quantized after).
    BP_ASSIGN_OR_RETURN(moved, format::GatherCells(bytes, job->grid, static_cast<uint64_t>(DTypeSize(t.dtype)),
                                                   job->maps));
    bytes = moved;
  }
  TensorSource src{t.name, t.dtype, t.shape, bytes};
  std::vector<float> joined;  // per-expert weights, joined for this encode
  if (rule != nullptr) src.importance = importance.For(t, &joined);
  BP_ASSIGN_OR_RETURN(job->enc, EncodeTensor(job->codec, src, params, exec));
  job->encoded = true;
  return absl::OkStatus();
}

// Adds tensor `t` to the writer as `job` says (in tensor order).
absl::Status AddBoltJob(Writer& writer, const InputTensor& t, BoltJob job) {
  if (job.encoded) {
    return writer.AddTensor(std::string(t.name), {t.shape.begin(), t.shape.end()}, t.dtype, job.codec,
                            std::move(job.enc));
  }
  if (Moves(job.maps) && StoredForm(t)) {
    if (job.grid.size() != t.shape.size()) {
      // Stored cells move only as whole cells of the tensor's own grid.
      return absl::InvalidArgumentError(StrCat(
          "tensor ", QuoteForDisplay(t.name), ": its flat binding's importance order moves the elements of its rows "
          "differently, which its stored cells cannot take; convert it from element data (F16/F32) or give every "
          "group the same order"));
    }
    return AddPermutedStored(writer, t, job.maps);
  }
  if (t.kind == InputKind::kBolt) return writer.CopyTensor(*t.reader, t.index);  // stored bytes pass through
  // GGUF blocks pass through unchanged under their codec id.
  BP_ASSIGN_OR_RETURN(TensorInfo record, GgufBlockRecord(t));
  return writer.AddStoredTensor(std::move(record), {t.bytes});
}

// bolt-pack plan: `t`'s record from its header alone (WriterOptions::
// skeleton). A permuted stored tensor would read its cells: it is estimated
// at its size instead.
absl::Status AddSkeleton(Writer& writer, const InputTensor& t, const BoltJob& job, const ConvertArgs& args) {
  if (job.rule == nullptr && Moves(job.maps) && StoredForm(t)) {
    if (args.estimate != nullptr) {
      args.estimate->bytes += PaddedBytes(InputBytes(t), args.alignment);
      args.estimate->tensors.push_back(StrCat(t.name, " (permuted stored cells)"));
    }
    return absl::OkStatus();
  }
  if (PassesStored(t, job)) return AddBoltJob(writer, t, job);
  const std::string codec = job.rule != nullptr ? job.rule->codec_id : t.SourceCodec();
  const CodecParams params = job.rule != nullptr ? job.rule->params : CodecParams{};
  return AddPlanned(writer, t, codec, params, args);
}

// Tensors in flight at once, on more than one thread: up to kPipelineWindow
// (one written, the others encoded), and while their estimated memory is
// at most kPipelineBytes (one tensor alone may exceed it). A tensor being
// encoded counts its input pages plus its encoder's peak (EncodePeakBytes),
// an encoded one what its streams hold until written. So memory stays near
// kPipelineBytes whatever the model's size. Measured on 16 cores with 268 MB
// bf16 tensors: admitting two q8_0 or nvfp4 encodes instead of one (they
// were all costed at bf16-huffman's 5/2) and faulting encoder outputs in
// huge pages (common/huge_pages.h) took q8_0 from 4.6 to 9.5 GB/s and nvfp4
// from 5.9 to 11.3, peak RSS under 800 MiB.
constexpr size_t kPipelineWindow = 4;
constexpr uint64_t kPipelineBytes = uint64_t{896} << 20;

uint64_t EncodedBytes(const BoltJob& job) {
  uint64_t n = 0;
  for (const auto& s : job.enc.streams) n += s.bytes.size();
  return n;
}

// What encoding `t` holds at its peak: its input pages, its output and the
// encoder's scratch. A block quantizer writes at most half its bf16 input
// (q8_0: 34 bytes per 64); bf16-huffman and the other exponent coders hold
// the sign+mantissa bytes, the exponents and their codes (5/2 measured);
// element codecs their output, up to the input again.
uint64_t EncodePeakBytes(const InputTensor& t, const CodecRule* rule) {
  const uint64_t input = InputBytes(t);
  const CodecTraits traits = TraitsOf(rule != nullptr ? rule->codec_id : t.SourceCodec());
  if (traits.quantizer) return input + input / 2;
  if (traits.element) return 2 * input;
  return input / 2 * 5;
}

PipelineOptions ConvertPipeline(const Inputs& in, const CodecPlan& plan, int threads,
                                const std::vector<BoltJob>& slots) {
  PipelineOptions p;
  p.window = threads > 1 ? kPipelineWindow : 1;
  p.budget = kPipelineBytes;
  p.cost = [&in, &plan](size_t i) {
    const InputTensor& t = in.tensors()[i];
    return EncodePeakBytes(t, PlannedRule(plan, in, t));
  };
  p.held = [&slots](size_t slot) { return EncodedBytes(slots[slot]); };
  return p;
}

absl::Status ConvertToBolt(const Inputs& in, const CodecPlan& plan, const ConvertArgs& args,
                           const Importance& importance, const io::ElasticAuthoring* elastic,
                           const ElasticManifest* carried) {
  WriterOptions options;
  options.alignment = args.alignment;
  options.zstd_level = args.zstd_level;
  options.inputs = in.files();
  options.writer_name = kVersionString;
  options.threads = args.threads;
  options.durable = !args.no_fsync;
  options.expected_tensors = in.tensors().size();
  // Checked by CheckOutput.
  if (!args.shard_max_size.empty()) options.shard_max_bytes = *io::ParseGgufSplitSize(args.shard_max_size);
  options.skeleton = args.skeleton;
  // An elastic file gets line-prefix checksums, so that slicing a budget
  // that cuts an inner dimension (a width, heads) reads only the bytes it
  // keeps; the manifest goes in first, since the writer plans them from it.
  options.line_prefixes = elastic != nullptr || carried != nullptr;
  // --part I/N: this part's tensors; the elastic manifest goes in its keys.
  std::optional<PartPlan> part;
  if (!args.part.empty()) part = PlanParts(in, plan, *ParsePartSpec(args.part));  // checked by CheckOutput
  options.store_elastic = !part;
  BP_ASSIGN_OR_RETURN(auto writer, Writer::Create(args.output, options));
  if (elastic != nullptr) BP_RETURN_IF_ERROR(writer->SetElastic(elastic->manifest));
  if (carried != nullptr) BP_RETURN_IF_ERROR(writer->SetElastic(*carried));
  const Metadata hf = in.hf_folder() ? HfFolderBoltMetadata(in, plan) : Metadata();
  for (const auto& [key, value] : in.hf_folder() ? hf : in.metadata()) {
    BP_RETURN_IF_ERROR(writer->AddMetadata(key, value));
  }
  if (part) BP_RETURN_IF_ERROR(AddPartMetadata(*writer, *part, elastic != nullptr ? &elastic->manifest : carried));
  Progress progress("convert", in.total_bytes());
  ExecOptions exec;
  exec.threads = args.threads;
  // --part I/N: only this part's tensors.
  auto InPart = [&](size_t i) { return !part || part->Keeps(i); };
  // Tensors are encoded ahead on worker threads and written here in order
  // (common/ordered_pipeline.h): one slot per tensor in flight.
  std::vector<BoltJob> slots(args.threads > 1 ? kPipelineWindow : 1);
  const PipelineOptions pipeline = ConvertPipeline(in, plan, args.threads, slots);
  auto produce = [&](size_t i, size_t slot) -> absl::Status {
    const InputTensor& t = in.tensors()[i];
    slots[slot] = BoltJob();
    BoltJob& job = slots[slot];
    if (elastic != nullptr) {
      io::ElasticAuthoring::Permutation perm = elastic->PermutationFor(t.name, t.shape);
      job.maps = std::move(perm.maps);
      job.grid = std::move(perm.grid);
    }
    job.rule = PlannedRule(plan, in, t);
    if (!InPart(i)) return absl::OkStatus();
    // The writer copies a stored tensor, and a skeleton plans one, in consume.
    if (PassesStored(t, job) || args.skeleton) return absl::OkStatus();
    absl::Status s = PrefixError(EncodeForBolt(t, importance, args.threads, exec, &job), t);
    in.Release(t);  // encoded: its input pages are no longer needed
    return s;
  };
  auto consume = [&](size_t i, size_t slot) -> absl::Status {
    const InputTensor& t = in.tensors()[i];
    if (!InPart(i)) return absl::OkStatus();
    BoltJob job = std::move(slots[slot]);
    if (args.skeleton) return PrefixError(AddSkeleton(*writer, t, job, args), t);
    BP_RETURN_IF_ERROR(PrefixError(AddBoltJob(*writer, t, std::move(job)), t));
    Done(in, t, progress, InputBytes(t));
    return absl::OkStatus();
  };
  BP_RETURN_IF_ERROR(RunOrdered(in.tensors().size(), pipeline, produce, consume));
  progress.Finish();
  return writer->Finish();
}

// The element type a tensor takes in a safetensors output.
absl::StatusOr<DType> SafetensorsDType(const InputTensor& t, const CodecRule* rule) {
  std::string codec = rule != nullptr ? rule->codec_id : "";
  const CodecTraits traits = codec.empty() ? CodecTraits{} : TraitsOf(codec);
  if (traits.element && traits.element_dtype != DType::kUnspecified) return traits.element_dtype;
  if (codec.empty() || traits.element) {  // no rule, or one that keeps the dtype (raw)
    if (t.dtype == DType::kF32 || t.dtype == DType::kF16 || t.dtype == DType::kBF16) return t.dtype;
    const CodecTraits source = TraitsOf(t.SourceCodec());
    if (t.kind == InputKind::kSafetensors || (source.element && source.element_dtype == DType::kUnspecified)) {
      return t.dtype;
    }
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

// A tensor's bytes for a safetensors output: its input's own (in_place,
// `bytes`), or decoded or converted into `buf`.
struct SafetensorsJob {
  bool in_place = false;
  absl::Span<const uint8_t> bytes;
  std::vector<uint8_t> logical;  // a Hugging Face Q or K reordered
  std::vector<uint8_t> buf;
};

absl::Status SafetensorsBytes(const InputTensor& t, DType d, const ConvertArgs& args, const ExecOptions& exec,
                              SafetensorsJob* job) {
  std::string source_codec = t.SourceCodec();
  bool plain = t.kind == InputKind::kSafetensors || (t.kind == InputKind::kGguf && TraitsOf(source_codec).element);
  BP_ASSIGN_OR_RETURN(absl::Span<const uint8_t> element, ElementBytes(t, &job->logical));
  if (plain && d == t.dtype) {
    job->in_place = true;
    job->bytes = element;
    return absl::OkStatus();
  }
  if (t.kind != InputKind::kBolt) {
    // A float-to-float change of element type: the raw codecs do it.
    absl::Span<const uint8_t> bytes = element;
    if (!plain) {
      BP_ASSIGN_OR_RETURN(job->logical, DecodeToLogical(t, args.threads));
      bytes = job->logical;
    }
    TensorSource src{t.name, t.dtype, t.shape, bytes};
    BP_ASSIGN_OR_RETURN(EncodedTensor enc, EncodeTensor(std::string(ElementCodecFor(d)), src, {}, exec));
    job->buf = std::move(enc.streams.at(0).bytes);
    job->logical = std::vector<uint8_t>();
    return absl::OkStatus();
  }
  OutputType out = OutputFor(d);
  BP_ASSIGN_OR_RETURN(uint64_t n, t.reader->DecodedBytes(t.index, out));
  ResizeHuge(job->buf, n);
  return t.reader->Decode(t.index, args.view, out, absl::MakeSpan(job->buf), exec);
}

absl::Status ConvertToSafetensors(const Inputs& in, const CodecPlan& plan, const ConvertArgs& args,
                                  uint64_t split_max_bytes) {
  std::vector<io::SafetensorsTensorDecl> decls;
  decls.reserve(in.tensors().size());
  std::vector<DType> dtypes;  // the declarations move to the writer (a copy was 96 MB for 1M tensors)
  dtypes.reserve(in.tensors().size());
  for (const auto& t : in.tensors()) {
    BP_ASSIGN_OR_RETURN(DType d, SafetensorsDType(t, PlannedRule(plan, in, t)));
    decls.push_back({std::string(t.name), d, {t.shape.begin(), t.shape.end()}});
    dtypes.push_back(d);
  }
  in.ReleaseHeaders();  // the declarations hold the names now
  std::vector<std::pair<std::string, std::string>> meta;
  for (const auto& [key, value] : in.metadata()) {
    meta.emplace_back(key, value.type == ValueType::kString ? value.s : io::MetaValueToJson(value));
  }
  BP_ASSIGN_OR_RETURN(SafetensorsOut writer,
                      SafetensorsOut::Create(args.output, std::move(meta), std::move(decls), in.files(),
                                             !args.no_fsync, split_max_bytes, args.split_max_tensors));
  Progress progress("convert", in.total_bytes());
  ExecOptions exec;
  exec.threads = args.threads;
  // Tensors are decoded ahead on worker threads and written here in order,
  // as for .bolt output: one slot per tensor in flight.
  std::vector<SafetensorsJob> slots(args.threads > 1 ? kPipelineWindow : 1);
  PipelineOptions pipeline;
  pipeline.window = slots.size();
  pipeline.budget = kPipelineBytes;
  pipeline.cost = [&](size_t i) {  // its input pages and its output
    const auto& t = in.tensors()[i];
    return InputBytes(t) + t.element_count() * static_cast<uint64_t>(DTypeSize(dtypes[i]));
  };
  pipeline.held = [&](size_t slot) { return static_cast<uint64_t>(slots[slot].buf.size()); };
  auto produce = [&](size_t i, size_t slot) -> absl::Status {
    const auto& t = in.tensors()[i];
    slots[slot] = SafetensorsJob();
    absl::Status s = PrefixError(SafetensorsBytes(t, dtypes[i], args, exec, &slots[slot]), t);
    if (!slots[slot].in_place) in.Release(t);  // decoded: its input pages are no longer needed
    return s;
  };
  auto consume = [&](size_t i, size_t slot) -> absl::Status {
    const auto& t = in.tensors()[i];
    SafetensorsJob job = std::move(slots[slot]);
    BP_RETURN_IF_ERROR(PrefixError(writer.WriteNext(job.in_place ? job.bytes : absl::MakeConstSpan(job.buf)), t));
    Done(in, t, progress, InputBytes(t));
    return absl::OkStatus();
  };
  BP_RETURN_IF_ERROR(RunOrdered(in.tensors().size(), pipeline, produce, consume));
  progress.Finish();
  return writer.Finish();
}

// One tensor's GGUF type and bytes (zero-copy where the source holds them).
struct GgufData {
  const io::GgmlType* type = nullptr;
  absl::Span<const uint8_t> bytes;
  std::vector<uint8_t> owned;
  float nvfp4_scale = 1.0f;  // two-level nvfp4: the tensor scale (tools/gguf_nvfp4.h)
};

// Codecs whose stored values are bf16 numbers under an entropy code (or, for
// bf16-mx, a shared exponent): GGUF has no such type, so they are exported
// as BF16, which holds every value they decode to exactly.
bool StoresBf16Values(const TensorInfo& info) {
  const Codec* codec = FindCodec(info.codec_id);
  return codec != nullptr && codec->Ggml(info.dtype, info.codec_params).how == GgmlExport::kDecodedBf16;
}

// int4-g128 (re-encoded by the rule, or stored): Q4_0 holds its groups
// exactly, four blocks per group (codecs/int4/int4_q4_0.h).
bool ExportsAsQ4_0(const InputTensor& t, const CodecRule* rule) {
  const Codec* codec = nullptr;
  if (rule != nullptr) {
    codec = FindCodec(rule->codec_id);
    return codec != nullptr && codec->Ggml(t.dtype, rule->params).how == GgmlExport::kRepackedQ4_0;
  }
  if (t.kind != InputKind::kBolt) return false;
  const auto shared = t.reader->SharedTensor(t.index);
  codec = FindCodec(shared->codec_id);
  return codec != nullptr && codec->Ggml(shared->dtype, shared->codec_params).how == GgmlExport::kRepackedQ4_0;
}

// A stored int4-g128 tensor's streams (checksums checked, zstd undone) as
// Q4_0 blocks.
absl::StatusOr<std::vector<uint8_t>> StoredInt4AsQ4_0(const InputTensor& t, const TensorInfo& info, int threads) {
  if (info.streams.size() != 2) {
    return absl::InvalidArgumentError(StrCat(Where(t), ": int4-g128 record with ", info.streams.size(),
                                             " streams, expected 2"));
  }
  std::vector<uint8_t> streams[2];
  for (size_t s = 0; s < 2; ++s) {
    ResizeHuge(streams[s], info.streams[s].raw_length);
    BP_RETURN_IF_ERROR(t.reader->ReadRawStream(t.index, s, absl::MakeSpan(streams[s]), ExecOptions{threads}));
  }
  auto q4 = Int4G128ToQ4_0(streams[0], streams[1]);
  if (!q4.ok()) return absl::InvalidArgumentError(StrCat(Where(t), ": ", q4.status().message()));
  return q4;
}

absl::StatusOr<const io::GgmlType*> GgufTypeOf(const InputTensor& t, const CodecRule* rule) {
  const io::GgmlType* type = nullptr;
  std::string codec;
  if (IsTwoLevelNvfp4(t, rule)) return io::GgmlTypeById(40);  // NVFP4 + <name>.scale
  if (ExportsAsQ4_0(t, rule)) return io::GgmlTypeById(kGgmlQ4_0Type);
  if (rule != nullptr) {
    codec = rule->codec_id;
    type = io::GgmlTypeForCodec(codec, t.dtype, rule->params);
  } else if (t.kind == InputKind::kGguf) {
    return t.ggml_type;
  } else if (t.kind == InputKind::kBolt) {
    const auto shared = t.reader->SharedTensor(t.index);
    const TensorInfo& info = *shared;
    codec = info.codec_id;
    type = StoresBf16Values(info) ? io::GgmlTypeById(30) : io::GgmlTypeForCodec(codec, info.dtype, info.codec_params);
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
                          const Importance& importance, int threads, GgufData* out) {
  out->type = type;
  out->owned.clear();
  if (IsTwoLevelNvfp4(t, rule)) {
    BP_ASSIGN_OR_RETURN(GgmlNvfp4Tensor g, Nvfp4GgufBlocks(t, rule, threads));
    out->owned = std::move(g.blocks);
    out->bytes = out->owned;
    out->nvfp4_scale = g.tensor_scale;
  } else if (rule == nullptr && t.kind != InputKind::kBolt) {
    BP_ASSIGN_OR_RETURN(out->bytes, ElementBytes(t, &out->owned));  // a Hugging Face Q or K reordered
  } else if (rule == nullptr) {
    const auto shared = t.reader->SharedTensor(t.index);
    const TensorInfo& info = *shared;
    if (ExportsAsQ4_0(t, nullptr)) {
      BP_ASSIGN_OR_RETURN(out->owned, StoredInt4AsQ4_0(t, info, threads));
      out->bytes = out->owned;
    } else if (info.streams.size() == 1) {
      // The stored codec bytes are the GGUF bytes (the codec ids GGUF knows
      // store ggml's block layout); zstd is undone, checksums checked.
      if (info.streams[0].compression == Compression::kNone) {
        BP_RETURN_IF_ERROR(t.reader->VerifyStream(t.index, 0));
        BP_ASSIGN_OR_RETURN(out->bytes, t.reader->StoredStream(t.index, 0));
      } else {
        ResizeHuge(out->owned, info.streams[0].raw_length);
        BP_RETURN_IF_ERROR(t.reader->ReadRawStream(t.index, 0, absl::MakeSpan(out->owned), ExecOptions{threads}));
        out->bytes = out->owned;
      }
    } else if (TraitsOf(info.codec_id).element || StoresBf16Values(info)) {
      const OutputType as = StoresBf16Values(info) ? OutputType::kBF16 : OutputType::kNative;
      BP_ASSIGN_OR_RETURN(uint64_t n, t.reader->DecodedBytes(t.index, as));
      ResizeHuge(out->owned, n);
      ExecOptions exec;
      exec.threads = threads;
      BP_RETURN_IF_ERROR(t.reader->Decode(t.index, as, absl::MakeSpan(out->owned), exec));
      out->bytes = out->owned;
    } else {
      return absl::UnimplementedError(StrCat(Where(t), ": codec \"", info.codec_id,
                                             "\" with compressed or several streams cannot be exported to GGUF"));
    }
  } else {
    BP_ASSIGN_OR_RETURN(std::vector<uint8_t> logical, DecodeToLogical(t, threads));
    TensorSource src{t.name, t.dtype, t.shape, logical};
    std::vector<float> joined;  // per-expert weights, joined for this encode
    src.importance = importance.For(t, &joined);
    ExecOptions exec;
    exec.threads = threads;
    BP_ASSIGN_OR_RETURN(EncodedTensor enc, EncodeTensor(rule->codec_id, src, rule->params, exec));
    if (ExportsAsQ4_0(t, rule) && enc.streams.size() == 2) {
      BP_ASSIGN_OR_RETURN(out->owned, Int4G128ToQ4_0(enc.streams[0].bytes, enc.streams[1].bytes));
    } else if (enc.streams.size() != 1) {
      return absl::UnimplementedError(StrCat(Where(t), ": codec \"", rule->codec_id, "\" writes ",
                                             enc.streams.size(), " streams; a GGUF tensor is one"));
    } else {
      out->owned = std::move(enc.streams[0].bytes);
    }
    out->bytes = out->owned;
  }
  if (out->bytes.size() != need) {
    return absl::InvalidArgumentError(StrCat(Where(t), ": ", out->bytes.size(), " bytes, GGUF type ", type->name,
                                             " of this shape needs ", need));
  }
  return absl::OkStatus();
}

Metadata HfFolderBoltMetadata(const Inputs& in, const CodecPlan& plan) {
  Metadata kv = in.metadata();
  std::vector<io::GgufTensorDecl> decls;
  for (const auto& t : in.tensors()) {
    absl::StatusOr<const io::GgmlType*> type = GgufTypeOf(t, PlannedRule(plan, in, t));
    if (!type.ok()) return kv;  // no GGUF export as it stands: no file type to tell
    decls.push_back(io::GgufTensorDecl{std::string(t.name), {t.shape.rbegin(), t.shape.rend()}, (*type)->id});
  }
  SetGgufFileType(MixOf(decls), &kv);
  return kv;
}

absl::Status ConvertToGguf(const Inputs& in, CodecPlan plan, const ConvertArgs& args,
                           const Importance& importance, uint64_t split_max_bytes, size_t* tensors_written) {
  bool split_output = split_max_bytes > 0 || args.split_max_tensors > 0;
  std::vector<std::string> notes;
  AdaptNvfp4PlanForGguf(in, &plan, &notes);
  for (const auto& n : notes) std::fprintf(stderr, "bolt-pack: note: %s\n", n.c_str());
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
  // (tensor, elements) of each F32 <name>.scale that follows a tensor (two-level
  // nvfp4), in tensor order: few tensors have one.
  std::vector<std::pair<size_t, uint64_t>> scale_counts;
  // Reserved: grown, 1M declarations held up to 1.5x their 64 MB.
  decls.reserve(in.tensors().size());
  types.reserve(in.tensors().size());
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
    io::GgufTensorDecl d{std::string(t.name), {t.shape.rbegin(), t.shape.rend()}, type->id};
    auto n = io::GgmlTensorBytes(*type, d.ne);
    if (!n.ok()) return absl::InvalidArgumentError(StrCat(Where(t), ": ", n.status().message()));
    types.push_back(type);
    decls.push_back(std::move(d));
    BP_ASSIGN_OR_RETURN(std::vector<uint64_t> scale_ne, Nvfp4GgufScaleNe(t, rule));
    if (!scale_ne.empty()) {
      scale_counts.emplace_back(types.size() - 1, scale_ne[0]);
      decls.push_back(io::GgufTensorDecl{io::Nvfp4ScaleTensorName(t.name), scale_ne, 0});
    }
  }
  // A re-encoded model is no longer the source's file type; nor is a .bolt
  // a recipe convert re-encoded, exported plainly (its keys name the GGUF
  // it came from): both get the keys llama-quantize writes. A Hugging Face
  // folder has none yet; llama.cpp's converter writes one.
  const GgufMix mix = MixOf(decls);
  if (plan.any() || in.hf_folder() || FileTypeMisnamed(kv, mix)) SetGgufFileType(mix, &kv);
  // The count written: two-level nvfp4 weights add their ".scale" tensors.
  *tensors_written = decls.size();
  in.ReleaseHeaders();  // the declarations hold the names now
  io::GgufWriterOptions options;
  options.version = version;
  options.pad_empty = padded;
  options.inputs = in.files();
  options.durable = !args.no_fsync;
  std::unique_ptr<io::GgufWriter> writer;
  std::unique_ptr<io::GgufSplitWriter> split;
  if (split_output) {
    io::GgufSplitOptions split_options;
    split_options.writer = options;
    split_options.max_bytes = split_max_bytes;
    split_options.max_tensors = args.split_max_tensors;
    BP_ASSIGN_OR_RETURN(split, io::GgufSplitWriter::Create(args.output, kv, std::move(decls), split_options));
  } else {
    BP_ASSIGN_OR_RETURN(writer, io::GgufWriter::Create(args.output, kv, std::move(decls), options));
  }
  Progress progress("convert", in.total_bytes());
  GgufData data;
  size_t next_scale = 0;  // in scale_counts
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const auto& t = in.tensors()[i];
    // Checked above, when the declarations were made (a size a tensor was
    // 8 MB for 1M tensors).
    const uint64_t size = *io::GgmlTensorBytes(*types[i], io::GgufDims(t.shape.rbegin(), t.shape.rend()));
    BP_RETURN_IF_ERROR(PrefixError(FillGgufData(t, PlannedRule(plan, in, t), types[i], size, importance,
                                                args.threads, &data), t));
    BP_RETURN_IF_ERROR(PrefixError(split ? split->WriteNext(data.bytes) : writer->WriteNext(data.bytes), t));
    if (next_scale < scale_counts.size() && scale_counts[next_scale].first == i) {
      std::vector<uint8_t> le(4 * scale_counts[next_scale++].second);  // F32, little-endian, once per expert
      const uint32_t u = FloatBits(data.nvfp4_scale);
      for (size_t b = 0; b < le.size(); ++b) le[b] = static_cast<uint8_t>(u >> (8 * (b % 4)));
      BP_RETURN_IF_ERROR(PrefixError(split ? split->WriteNext(le) : writer->WriteNext(le), t));
    }
    Done(in, t, progress, InputBytes(t));
  }
  progress.Finish();
  if (!split) return writer->Finish();
  BP_RETURN_IF_ERROR(split->Finish());
  for (size_t k = 0; k < split->paths().size(); ++k) {
    std::fprintf(stderr, "wrote %s (%zu tensors)\n", split->paths()[k].c_str(), split->tensor_counts()[k]);
  }
  return absl::OkStatus();
}

// The steps of a conversion. A mistake of the command line is a usage
// error (exit status 2); anything wrong with the inputs is not (1).

constexpr char kUsagePayload[] = "boltpack.dev/usage";

absl::Status UsageError(std::string message) {
  absl::Status s = absl::InvalidArgumentError(std::move(message));
  s.SetPayload(kUsagePayload, absl::Cord("2"));
  return s;
}

// The codec rules: the command line's first, so they override the recipe's.
absl::Status CollectRules(const ConvertArgs& args, std::vector<CodecRule>* rules) {
  for (const auto& text : args.codec_rules) {
    auto rule = ParseCodecRule(text);
    if (!rule.ok()) return UsageError(std::string(rule.status().message()));
    rules->push_back(std::move(*rule));
  }
  if (!args.recipe.empty()) {
    auto recipe = LoadRecipe(args.recipe);
    if (!recipe.ok()) return UsageError(std::string(recipe.status().message()));
    rules->insert(rules->end(), recipe->begin(), recipe->end());
  }
  return absl::OkStatus();
}

// The output's format (`ext`) and, for a split GGUF, its largest file.
absl::Status CheckOutput(const ConvertArgs& args, const std::string& ext, uint64_t* split_max_bytes) {
  if (ext != ".bolt" && ext != ".safetensors" && ext != ".gguf") {
    return UsageError(
        StrCat(args.output, ": unknown output format \"", ext, "\" (expected .bolt, .safetensors or .gguf)"));
  }
  const bool split = !args.split_max_size.empty() || args.split_max_tensors > 0;
  if (split && ext != ".gguf" && ext != ".safetensors") {
    return UsageError(StrCat(args.output, ": --split-max-size and --split-max-tensors split .gguf and .safetensors ",
                             "output (the output is \"", ext, "\")"));
  }
  if (!split && io::IsSafetensorsIndexName(args.output)) {
    return UsageError(StrCat(args.output, ": an index names a split model: give --split-max-size (e.g. 5G, as "
                             "Hugging Face) or --split-max-tensors, or write NAME.safetensors for one file"));
  }
  if (!args.shard_max_size.empty()) {
    if (ext != ".bolt") {
      return UsageError(StrCat(args.output, ": --shard-max-size writes a multi-file .bolt model (the output is \"",
                               ext, "\")"));
    }
    auto n = io::ParseGgufSplitSize(args.shard_max_size);
    if (!n.ok()) return UsageError(StrCat("--shard-max-size: ", n.status().message()));
  }
  if (!args.split_max_size.empty()) {
    auto n = io::ParseGgufSplitSize(args.split_max_size);
    if (!n.ok()) return UsageError(StrCat("--split-max-size: ", n.status().message()));
    *split_max_bytes = *n;
  }
  if (!args.part.empty()) {
    if (ext != ".bolt") return UsageError(StrCat(args.output, ": --part writes a .bolt part file"));
    auto spec = ParsePartSpec(args.part);
    if (!spec.ok()) return UsageError(std::string(spec.status().message()));
  }
  return absl::OkStatus();
}

// --view: every input is a .bolt file that has the view.
absl::Status CheckView(const ConvertArgs& args, const std::string& ext, const Inputs& in) {
  if (args.view == "full") return absl::OkStatus();
  // A view is a way to decode a .bolt file; other outputs copy or re-encode.
  if (ext != ".safetensors") return UsageError(StrCat("--view applies to .safetensors output, not ", ext));
  for (const auto& t : in.tensors()) {
    absl::Status has = t.kind == InputKind::kBolt
                           ? t.reader->ViewBytes(args.view).status()
                           : absl::NotFoundError(StrCat(t.file(), ": only .bolt files have views (asked for \"",
                                                        args.view, "\")"));
    if (!has.ok()) return UsageError(std::string(has.message()));
  }
  return absl::OkStatus();
}

// An elastic .bolt input keeps its manifest in a .bolt output (checked
// against the new codecs); other outputs cannot hold one. --elastic
// authors a new one.
absl::Status ResolveElastic(const ConvertArgs& args, const std::string& ext, const Inputs& in, const CodecPlan& plan,
                            std::optional<ElasticManifest>* carried, std::unique_ptr<io::ElasticAuthoring>* elastic,
                            std::vector<ConvertNote>* notes) {
  if (ext == ".bolt") {
    BP_ASSIGN_OR_RETURN(*carried, CarriedElastic(in, plan, !args.elastic.empty()));
  } else {
    for (const auto& t : in.tensors()) {
      if (t.kind == InputKind::kBolt && t.reader->elastic() != nullptr) {
        notes->push_back({false, StrCat(t.reader->path(), ": its elastic manifest is not carried into ", ext,
                                        " output (only .bolt holds one; `bolt-pack slice` cuts its budgets to ", ext,
                                        ")")});
        break;
      }
    }
  }
  if (args.elastic.empty()) return absl::OkStatus();
  if (ext != ".bolt") {
    return UsageError(StrCat(args.output, ": --elastic stores an elastic manifest, which only a .bolt output holds"));
  }
  BP_ASSIGN_OR_RETURN(*elastic, LoadElastic(args.elastic, in, plan));
  return absl::OkStatus();
}

// One warning listing every tensor that fell back, as llama-quantize does.
std::string FallbackNote(const std::vector<std::string>& fallbacks) {
  std::string list;
  for (const auto& f : fallbacks) list += "\n  " + f;
  return StrCat(fallbacks.size(), " tensor", fallbacks.size() == 1 ? "" : "s",
                " cannot take their rule's codec and use the fallback:", list);
}

int Report(const absl::Status& s) {
  PrintError(std::string(s.message()));
  return IsUsageError(s) ? 2 : 1;
}

}  // namespace

bool IsUsageError(const absl::Status& s) { return s.GetPayload(kUsagePayload).has_value(); }

absl::StatusOr<PreparedConvert> PrepareConvert(const ConvertArgs& args) {
  PreparedConvert p;
  BP_RETURN_IF_ERROR(CollectRules(args, &p.rules));
  // DIR/NAME.safetensors.index.json: the index of a split safetensors output.
  p.ext = io::IsSafetensorsIndexName(args.output) ? ".safetensors" : Extension(args.output);
  BP_RETURN_IF_ERROR(CheckOutput(args, p.ext, &p.split_max_bytes));
  if (!args.imatrix.empty()) {
    BP_ASSIGN_OR_RETURN(p.imatrix, io::Imatrix::Load(args.imatrix));
  }
  return p;
}

absl::Status ConvertInputs(const Inputs& in, const ConvertArgs& args, const PreparedConvert& prepared,
                           std::vector<ConvertNote>* notes, size_t* tensors_written) {
  size_t written = in.tensors().size();
  if (tensors_written == nullptr) tensors_written = &written;
  *tensors_written = written;
  BP_RETURN_IF_ERROR(CheckImportable(in));
  const std::string& ext = prepared.ext;
  BP_RETURN_IF_ERROR(CheckView(args, ext, in));
  ConvertArgs resolved = args;
  if (resolved.threads <= 0) resolved.threads = HardwareThreads();
  std::vector<std::string> fallbacks;
  CodecPlan plan = PlanCodecs(in, prepared.rules, &fallbacks);
  if (!fallbacks.empty()) notes->push_back({true, FallbackNote(fallbacks)});
  std::optional<ElasticManifest> carried;
  std::unique_ptr<io::ElasticAuthoring> elastic;
  BP_RETURN_IF_ERROR(ResolveElastic(args, ext, in, plan, &carried, &elastic, notes));
  // Every entry found (or refused) before anything is written.
  BP_ASSIGN_OR_RETURN(Importance importance, Importance::Resolve(prepared.imatrix.get(), in, plan));
  if (ext == ".bolt") {
    return ConvertToBolt(in, plan, resolved, importance, elastic.get(), carried ? &*carried : nullptr);
  }
  if (ext == ".gguf") {
    return ConvertToGguf(in, std::move(plan), resolved, importance, prepared.split_max_bytes, tensors_written);
  }
  return ConvertToSafetensors(in, plan, resolved, prepared.split_max_bytes);
}

int RunConvert(const ConvertArgs& args) {
  auto prepared = PrepareConvert(args);
  if (!prepared.ok()) return Report(prepared.status());
  ReaderOptions bolt_options;
  bolt_options.verify_checksums = !args.no_verify;
  auto in = Inputs::Open(args.inputs, bolt_options);
  if (!in.ok()) return Report(in.status());
  std::vector<ConvertNote> notes;
  size_t written = 0;
  absl::Status st = ConvertInputs(**in, args, *prepared, &notes, &written);
  // Notes first: a warning about fallbacks explains a failure after it.
  for (const auto& note : notes) {
    std::fprintf(stderr, "bolt-pack: %s: %s\n", note.warning ? "warning" : "note", note.text.c_str());
  }
  if (!st.ok()) return Report(st);
  if (prepared->split_max_bytes == 0 && args.split_max_tensors == 0) {  // a split output listed its files
    std::fprintf(stderr, "wrote %s (%zu tensors)\n", args.output.c_str(), written);
  }
  return 0;
}

}  // namespace boltpack::tools
