// bolt-pack verify IN: checksums, padding, and a decode of every tensor in
// every view it has ("full", and e.g. bf16-spec's "draft").
#include <algorithm>
#include <cstdio>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "common/escape.h"
#include "common/buffer_pool.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/gguf.h"
#include "io/gguf_nvfp4.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "tools/commands.h"
#include "tools/inputs.h"
#include "tools/gguf_nvfp4.h"
#include "tools/llama_check.h"
#include "tools/progress.h"

namespace boltpack::tools {
namespace {

// Decodes tensor `t` as view `view` sees it, in blocks of rows, several
// blocks at once on exec.threads threads, each with a buffer of its own, so
// a large tensor's decode uses every core and memory stays bounded whatever
// the tensor's size: blocks of kDecodeBytes / threads, within [1, 16] MiB
// (32 MiB in all on 2 cores, 128 MiB at most on 128). Codecs without row
// access decode whole.
absl::Status DecodeBounded(const Reader& reader, size_t t, const TensorInfo& info, const std::string& view,
                           OutputType out, uint64_t total_bytes, const ExecOptions& exec, std::vector<uint8_t>* buf) {
  constexpr uint64_t kDecodeBytes = 64ull << 20;
  const uint64_t threads = static_cast<uint64_t>(std::max(1, exec.threads));
  const uint64_t block_bytes = std::clamp<uint64_t>(kDecodeBytes / threads, 1ull << 20, 16ull << 20);
  uint64_t rows = info.row_count();
  if (total_bytes > block_bytes && rows > 1 && total_bytes % rows == 0) {
    const uint64_t row_bytes = total_bytes / rows;
    const uint64_t per_block = std::max<uint64_t>(1, block_bytes / std::max<uint64_t>(1, row_bytes));
    const uint64_t blocks = (rows + per_block - 1) / per_block;
    // Each call's buffer comes from the process's pool, so tensor after
    // tensor reuses the same warm pages instead of allocating and zeroing
    // fresh ones.
    auto decode_blocks = [&](uint64_t first, uint64_t last) -> absl::Status {
      PooledBuffer into;
      uint8_t* bytes = into.Get(per_block * row_bytes);
      for (uint64_t b = first; b < last; ++b) {
        const uint64_t r = b * per_block, end = std::min(rows, r + per_block);
        BP_RETURN_IF_ERROR(reader.DecodeRows(t, view, r, end, out, absl::MakeSpan(bytes, (end - r) * row_bytes)));
      }
      return absl::OkStatus();
    };
    // The first block alone: it tells whether the codec has row access.
    absl::Status first = decode_blocks(0, 1);
    if (first.code() != absl::StatusCode::kUnimplemented) {
      BP_RETURN_IF_ERROR(first);
      return ParallelFor(blocks - 1, exec.threads, 1,
                         [&](uint64_t a, uint64_t b) { return decode_blocks(a + 1, b + 1); });
    }
  }
  buf->resize(total_bytes);
  return reader.Decode(t, view, out, absl::MakeSpan(*buf), exec);
}

// Whether a declared view decodes tensor `info` differently from "full":
// only a codec that tags its streams with views (bf16-spec: the
// verification stream is read by "full" alone) defines a view-specific
// decode; every other tensor decodes in every view exactly as in "full",
// which is already checked.
bool HasViewDecode(const TensorInfo& info) {
  for (const auto& s : info.streams) {
    if (!s.views.empty()) return true;
  }
  return false;
}

struct ViewTally {
  std::string name;
  size_t tensors = 0;
  uint64_t decoded_bytes = 0;
  size_t failed = 0;
};

struct Problem {
  std::string tensor;  // empty: the container as a whole
  std::string view;    // empty: not a decode
  std::string message;
};

void PrintBoltJson(const VerifyArgs& args, size_t tensors, uint64_t stored, size_t not_decoded,
                   const std::vector<ViewTally>& views, const std::vector<Problem>& problems) {
  std::string o = StrCat("{\"file\":", io::JsonQuote(args.input), ",\"ok\":", problems.empty(),
                         ",\"tensors\":", tensors, ",\"stored_bytes\":", stored, ",\"not_decoded\":", not_decoded,
                         ",\"views\":[");
  for (size_t i = 0; i < views.size(); ++i) {
    const ViewTally& v = views[i];
    o += StrCat(i ? "," : "", "{\"name\":", io::JsonQuote(v.name), ",\"tensors\":", v.tensors,
                ",\"decoded_bytes\":", v.decoded_bytes, ",\"failed\":", v.failed, "}");
  }
  o += "],\"problems\":[";
  for (size_t i = 0; i < problems.size(); ++i) {
    const Problem& p = problems[i];
    o += i ? ",{" : "{";
    if (!p.tensor.empty()) o += StrCat("\"tensor\":", io::JsonQuote(p.tensor), ",");
    if (!p.view.empty()) o += StrCat("\"view\":", io::JsonQuote(p.view), ",");
    o += StrCat("\"message\":", io::JsonQuote(p.message), "}");
  }
  o += "]}\n";
  std::fputs(o.c_str(), stdout);
}

// Checksums and padding (VerifyContainer), then every tensor decoded in the
// full view and, where its codec defines one, in every other declared view
// (e.g. bf16-spec's "draft", which reads the speculation stream alone: a
// speculation stream the draft cannot decode is reported for the draft).
int VerifyBolt(const VerifyArgs& args) {
  auto opened = Reader::Open(args.input);
  if (!opened.ok()) {
    if (args.json) PrintBoltJson(args, 0, 0, 0, {}, {{"", "", std::string(opened.status().message())}});
    PrintError(std::string(opened.status().message()));
    return 1;
  }
  const Reader& reader = **opened;
  std::vector<Problem> problems;
  ExecOptions exec;
  exec.threads = args.threads <= 0 ? HardwareThreads() : args.threads;
  absl::Status container = reader.VerifyContainer(exec);
  if (!container.ok()) problems.push_back({"", "", std::string(container.message())});
  std::vector<ViewTally> views;
  for (const ViewInfo& v : reader.views()) views.push_back({v.name});  // "full" first
  const uint64_t total = reader.views()[0].bytes;  // "full" reads every stream: every tensor's stored bytes
  Progress progress("verify", total);
  std::vector<uint8_t> buf;
  size_t not_decoded = 0;
  for (size_t i = 0; i < reader.tensors().size(); ++i) {
    // Shared with the reader's calls below, which would each build it again.
    const auto shared = reader.SharedTensor(i);
    const TensorInfo& info = *shared;
    // Decode to f32 where the codec can; otherwise to its native form.
    // (DecodedBytes checks CanDecode first: asked only when it fails.)
    OutputType out = OutputType::kF32;
    auto n = reader.DecodedBytes(i, out);
    if (!n.ok() && !reader.CanDecode(i, out).ok()) n = reader.DecodedBytes(i, out = OutputType::kNative);
    if (!n.ok() && StoredNotDecoded(info)) {
      ++not_decoded;  // its checksums were checked above, as a GGUF's blocks are only parsed
      progress.Advance(info.stored_bytes());
      continue;
    }
    if (!n.ok()) {
      problems.push_back({info.name, "", std::string(n.status().message())});
      continue;
    }
    // Nothing stored and nothing to decode: a decode call would only check
    // what the record's validation did (a third of a verify of 1M empty
    // tensors).
    const bool empty = *n == 0 && info.stored_bytes() == 0;
    const size_t view_count = HasViewDecode(info) ? views.size() : 1;
    for (size_t v = 0; v < view_count; ++v) {
      ViewTally& tally = views[v];
      absl::Status st = empty ? absl::OkStatus() : DecodeBounded(reader, i, info, tally.name, out, *n, exec, &buf);
      ++tally.tensors;
      tally.decoded_bytes += *n;
      if (!st.ok()) {
        ++tally.failed;
        problems.push_back({info.name, tally.name, std::string(st.message())});
      }
    }
    progress.Advance(info.stored_bytes());
    // Resident memory stays bounded: the tensor's pages leave the mapping
    // (VerifyContainer did the same after its checksums).
    ReleaseTensorPages(reader, i);
  }
  progress.Finish();
  if (args.json) {
    PrintBoltJson(args, reader.tensors().size(), total, not_decoded, views, problems);
    return problems.empty() ? 0 : 1;
  }
  for (const auto& p : problems) {
    if (p.view.empty()) {
      std::fprintf(stderr, "bolt-pack: %s\n", p.message.c_str());
    } else {
      std::fprintf(stderr, "bolt-pack: tensor %s, view %s: %s\n", QuoteForDisplay(p.tensor).c_str(),
                   QuoteForDisplay(p.view).c_str(), p.message.c_str());
    }
  }
  std::string per_view;
  for (size_t v = 1; v < views.size(); ++v) {
    per_view += StrCat("; view \"", views[v].name, "\": ", views[v].tensors, " tensor", views[v].tensors == 1 ? "" : "s",
                       " decoded (", views[v].decoded_bytes, " bytes)",
                       views[v].failed ? StrCat(", ", views[v].failed, " failed") : std::string());
  }
  if (!problems.empty()) {
    std::fprintf(stderr, "%s: FAILED (%zu problem%s%s)\n", args.input.c_str(), problems.size(),
                 problems.size() == 1 ? "" : "s", per_view.c_str());
    return 1;
  }
  std::string skipped = not_decoded == 0 ? std::string()
                                         : StrCat(", ", not_decoded, " tensor", not_decoded == 1 ? "" : "s",
                                                  " not decoded (a codec this version stores but does not decode)");
  std::printf("%s: OK (%zu tensors, %llu stored bytes checksummed, %llu bytes decoded%s%s)\n", args.input.c_str(),
              reader.tensors().size(), static_cast<unsigned long long>(total),
              static_cast<unsigned long long>(views[0].decoded_bytes), skipped.c_str(), per_view.c_str());
  return 0;
}

int VerifySafetensors(const VerifyArgs& args) {
  // Opening enforces every rule of the format; safetensors has no checksums.
  auto model = io::SafetensorsModel::Open(args.input);
  if (!model.ok()) {
    PrintError(std::string(model.status().message()));
    return 1;
  }
  uint64_t bytes = 0;
  for (size_t i = 0; i < (*model)->tensors().size(); ++i) bytes += (*model)->TensorBytes(i).size();
  std::printf("%s: OK (%zu tensors, %llu bytes; safetensors carries no checksums)\n", args.input.c_str(),
              (*model)->tensors().size(), static_cast<unsigned long long>(bytes));
  return 0;
}

int VerifyGguf(const VerifyArgs& args) {
  // Opening enforces every structural rule (spec/gguf-mapping.md); GGUF has
  // no checksums. Tensors whose codec is registered are decoded too.
  auto in = Inputs::Open({args.input});
  if (!in.ok()) {
    PrintError(std::string(in.status().message()));
    return 1;
  }
  int threads = args.threads <= 0 ? HardwareThreads() : args.threads;
  std::vector<std::string> problems;
  size_t decoded = 0, undecodable = 0;
  uint64_t bytes = 0;
  for (const auto& t : (*in)->tensors()) {
    bytes += t.bytes.size();
    std::string codec = t.SourceCodec();
    bool plain = TraitsOf(codec).element;
    if (!plain && (boltpack::FindCodec(codec) == nullptr || codec.rfind("ggml-", 0) == 0)) {
      ++undecodable;  // a type bolt-pack stores as it is (ggml-*), not decoded
      continue;
    }
    if (plain) {
      ++decoded;
      continue;
    }
    auto d = DecodeToLogical(t, threads);
    if (!d.ok()) problems.emplace_back(d.status().message());
    else ++decoded;
    (*in)->Release(t);  // resident memory stays bounded
  }
  for (const auto& p : problems) std::fprintf(stderr, "bolt-pack: %s\n", p.c_str());
  if (!problems.empty()) {
    std::fprintf(stderr, "%s: FAILED (%zu problem%s)\n", args.input.c_str(), problems.size(), problems.size() == 1 ? "" : "s");
    return 1;
  }
  std::printf("%s: OK (%zu tensors, %llu bytes; structure valid, %zu decoded, %zu not decoded (types stored as they are); "
              "GGUF carries no checksums)\n",
              args.input.c_str(), (*in)->tensors().size(), static_cast<unsigned long long>(bytes), decoded, undecodable);
  return 0;
}

// The metadata and tensors of a .gguf (a split set by its first shard) or
// of a .bolt, as the llama.cpp check sees them.
absl::Status LoadForLlamaCheck(const std::string& path, const std::string& ext, Metadata* kv,
                               std::vector<LlamaCheckTensor>* tensors) {
  if (ext == ".gguf") {
    auto model = io::GgufModel::Open(path);
    if (!model.ok()) return model.status();
    *kv = (*model)->metadata();
    for (const auto& t : (*model)->tensors()) {
      tensors->push_back({std::string(t.name), t.Shape(), "", t.type->block_size > 1, t.type->id});
    }
    return absl::OkStatus();
  }
  auto reader = Reader::Open(path);
  if (!reader.ok()) return reader.status();
  *kv = (*reader)->metadata();
  for (const auto& t : (*reader)->tensors()) {
    // Two-level nvfp4 exports as GGUF NVFP4 plus a "<name>.scale" tensor, or
    // as Q8_0 where llama.cpp reads no scale (tools/gguf_nvfp4.h).
    const std::vector<uint64_t> ne(t.shape.rbegin(), t.shape.rend());
    const bool two_level = IsTwoLevelNvfp4Codec(t.codec_id, t.dtype, t.codec_params),
               scaled = two_level && io::Nvfp4RecordHasScaleTensor(t.codec_params);
    const bool stays = two_level && Nvfp4StaysNvfp4InGguf(t.name, ne, scaled);
    const io::GgmlType* type = two_level ? io::GgmlTypeById(stays ? 40 : 8)
                                         : io::GgmlTypeForCodec(t.codec_id, t.dtype, t.codec_params);
    LlamaCheckTensor c{t.name, t.shape, "", type != nullptr && type->block_size > 1, type ? type->id : -1};
    if (type == nullptr) {
      c.type_problem = StrCat("codec \"", t.codec_id, "\" (dtype ", DTypeName(t.dtype),
                              ") has no GGUF type, so a GGUF export (and llama.cpp) cannot hold it; re-encode it "
                              "with convert --codec (e.g. '", t.name, "=q8_0')");
    } else if (t.shape.size() > io::kGgufMaxDims) {
      c.type_problem = StrCat(t.shape.size(), " dimensions; GGUF (ggml) allows at most 4");
    } else if (t.name.size() > io::kGgufMaxNameBytes) {
      c.type_problem = StrCat("name is ", t.name.size(), " bytes; GGUF (ggml) allows at most 63");
    } else if (auto n = io::GgmlTensorBytes(*type, std::vector<uint64_t>(t.shape.rbegin(), t.shape.rend())); !n.ok()) {
      c.type_problem = StrCat("GGUF type ", type->name, ": ", n.status().message());
    }
    tensors->push_back(std::move(c));
    if (stays && scaled) {
      auto scale_ne = LlamaScaleNe(t.name, ne).value_or(std::vector<uint64_t>{1});
      tensors->push_back({io::Nvfp4ScaleTensorName(t.name), {scale_ne.rbegin(), scale_ne.rend()}, "", false, 0});
    }
  }
  return absl::OkStatus();
}

int VerifyForLlamaCpp(const VerifyArgs& args) {
  std::string ext = Extension(args.input);
  if (ext != ".gguf" && ext != ".bolt") {
    PrintError(StrCat(args.input, ": --target llama.cpp checks .gguf and .bolt files (GGUF metadata), not \"", ext,
                      "\""));
    return 2;
  }
  Metadata kv;
  std::vector<LlamaCheckTensor> tensors;
  absl::Status st = LoadForLlamaCheck(args.input, ext, &kv, &tensors);
  if (!st.ok()) {
    PrintError(std::string(st.message()));
    return 1;
  }
  LlamaCheckResult r = CheckForLlamaCpp(kv, tensors);
  size_t errors = r.errors(), warnings = r.warnings();
  bool failed = errors > 0 || (args.strict && warnings > 0);
  auto severity = [](const LlamaProblem& p) { return p.severity == LlamaProblem::Severity::kError ? "error" : "warning"; };
  if (args.json) {
    std::string o = StrCat("{\"file\":", io::JsonQuote(args.input), ",\"target\":\"llama.cpp\",\"architecture\":",
                           io::JsonQuote(r.architecture), ",\"known_architecture\":", r.known_architecture,
                           ",\"ok\":", !failed, ",\"errors\":", errors, ",\"warnings\":", warnings, ",\"problems\":[");
    for (size_t i = 0; i < r.problems.size(); ++i) {
      const auto& p = r.problems[i];
      o += StrCat(i ? "," : "", "{\"severity\":\"", severity(p), "\"");
      if (!p.key.empty()) o += StrCat(",\"key\":", io::JsonQuote(p.key));
      if (!p.tensor.empty()) o += StrCat(",\"tensor\":", io::JsonQuote(p.tensor));
      o += StrCat(",\"message\":", io::JsonQuote(p.message), "}");
    }
    o += "]}\n";
    std::fputs(o.c_str(), stdout);
    return failed ? 1 : 0;
  }
  for (const auto& p : r.problems) {
    std::string subject = !p.tensor.empty() ? StrCat("tensor ", QuoteForDisplay(p.tensor), ": ")
                          : !p.key.empty()  ? StrCat("key ", QuoteForDisplay(p.key), ": ")
                                            : std::string();
    std::printf("%s: %s: %s%s\n", args.input.c_str(), severity(p), subject.c_str(), p.message.c_str());
  }
  std::printf("%s: %s for llama.cpp (architecture %s, %zu tensors; %zu error%s, %zu warning%s)\n",
              args.input.c_str(), failed ? "FAILED" : "OK", QuoteForDisplay(r.architecture).c_str(), tensors.size(), errors,
              errors == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s");
  return failed ? 1 : 0;
}

}  // namespace

int RunVerify(const VerifyArgs& args) {
  if (!args.target.empty()) return VerifyForLlamaCpp(args);
  std::string ext = Extension(args.input);
  if (args.strict || (args.json && ext != ".bolt")) {
    PrintError("--strict goes with --target llama.cpp; --json with --target llama.cpp or a .bolt file");
    return 2;
  }
  if (ext == ".bolt") return VerifyBolt(args);
  if (ext == ".safetensors" || ext == ".json") return VerifySafetensors(args);
  if (ext == ".gguf") return VerifyGguf(args);
  PrintError(StrCat(args.input, ": unknown format \"", ext, "\" (expected .bolt, .safetensors or .gguf)"));
  return 2;
}

}  // namespace boltpack::tools
