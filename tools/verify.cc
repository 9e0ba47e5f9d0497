// bolt-pack verify IN: checksums, padding, and a full decode of every tensor.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "common/parallel_for.h"
#include "common/str_cat.h"
#include "io/safetensors.h"
#include "tools/commands.h"
#include "tools/inputs.h"
#include "tools/progress.h"

namespace boltpack::tools {
namespace {

// Decodes tensor `t` in blocks of rows of about kBlockBytes, so memory stays
// bounded whatever the tensor's size; codecs without row access decode whole.
absl::Status DecodeBounded(const Reader& reader, size_t t, OutputType out, uint64_t total_bytes,
                           const ExecOptions& exec, std::vector<uint8_t>* buf) {
  constexpr uint64_t kBlockBytes = 64ull << 20;
  const TensorInfo& info = reader.tensors()[t];
  uint64_t rows = info.row_count();
  if (total_bytes > kBlockBytes && rows > 1 && total_bytes % rows == 0) {
    uint64_t row_bytes = total_bytes / rows;
    uint64_t per_block = std::max<uint64_t>(1, kBlockBytes / std::max<uint64_t>(1, row_bytes));
    buf->resize(per_block * row_bytes);
    for (uint64_t r = 0; r < rows; r += per_block) {
      uint64_t end = std::min(rows, r + per_block);
      absl::Status st = reader.DecodeRows(t, r, end, out, absl::MakeSpan(buf->data(), (end - r) * row_bytes));
      if (st.code() == absl::StatusCode::kUnimplemented && r == 0) break;  // no row access: whole decode
      if (!st.ok()) return st;
      if (end == rows) return absl::OkStatus();
    }
  }
  buf->resize(total_bytes);
  return reader.Decode(t, out, absl::MakeSpan(*buf), exec);
}

int VerifyBolt(const VerifyArgs& args) {
  auto opened = Reader::Open(args.input);
  if (!opened.ok()) {
    PrintError(std::string(opened.status().message()));
    return 1;
  }
  const Reader& reader = **opened;
  std::vector<std::string> problems;
  ExecOptions exec;
  exec.threads = args.threads <= 0 ? HardwareThreads() : args.threads;
  absl::Status container = reader.VerifyContainer(exec);
  if (!container.ok()) problems.emplace_back(container.message());
  uint64_t total = 0;
  for (const auto& t : reader.tensors()) total += t.stored_bytes();
  Progress progress("verify", total);
  uint64_t decoded_bytes = 0;
  std::vector<uint8_t> buf;
  for (size_t i = 0; i < reader.tensors().size(); ++i) {
    const TensorInfo& info = reader.tensors()[i];
    // Decode to f32 where the codec can; otherwise to its native form.
    OutputType out = reader.CanDecode(i, OutputType::kF32).ok() ? OutputType::kF32 : OutputType::kNative;
    auto n = reader.DecodedBytes(i, out);
    if (!n.ok()) {
      problems.emplace_back(n.status().message());
      continue;
    }
    absl::Status st = DecodeBounded(reader, i, out, *n, exec, &buf);
    if (!st.ok()) problems.emplace_back(st.message());
    decoded_bytes += *n;
    progress.Advance(info.stored_bytes());
  }
  progress.Finish();
  for (const auto& p : problems) std::fprintf(stderr, "bolt-pack: %s\n", p.c_str());
  if (!problems.empty()) {
    std::fprintf(stderr, "%s: FAILED (%zu problem%s)\n", args.input.c_str(), problems.size(), problems.size() == 1 ? "" : "s");
    return 1;
  }
  std::printf("%s: OK (%zu tensors, %llu stored bytes checksummed, %llu bytes decoded)\n", args.input.c_str(),
              reader.tensors().size(), static_cast<unsigned long long>(total),
              static_cast<unsigned long long>(decoded_bytes));
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
    bool plain = codec == "f32" || codec == "f16" || codec == "bf16" || codec == "raw";
    if (!plain && boltpack::FindCodec(codec) == nullptr) {
      ++undecodable;
      continue;
    }
    if (plain) {
      ++decoded;
      continue;
    }
    auto d = DecodeToLogical(t, threads);
    if (!d.ok()) problems.emplace_back(d.status().message());
    else ++decoded;
  }
  for (const auto& p : problems) std::fprintf(stderr, "bolt-pack: %s\n", p.c_str());
  if (!problems.empty()) {
    std::fprintf(stderr, "%s: FAILED (%zu problem%s)\n", args.input.c_str(), problems.size(), problems.size() == 1 ? "" : "s");
    return 1;
  }
  std::printf("%s: OK (%zu tensors, %llu bytes; structure valid, %zu decoded, %zu of types without a codec; "
              "GGUF carries no checksums)\n",
              args.input.c_str(), (*in)->tensors().size(), static_cast<unsigned long long>(bytes), decoded, undecodable);
  return 0;
}

}  // namespace

int RunVerify(const VerifyArgs& args) {
  std::string ext = Extension(args.input);
  if (ext == ".bolt") return VerifyBolt(args);
  if (ext == ".safetensors" || ext == ".json") return VerifySafetensors(args);
  if (ext == ".gguf") return VerifyGguf(args);
  PrintError(StrCat(args.input, ": unknown format \"", ext, "\" (expected .bolt, .safetensors or .gguf)"));
  return 2;
}

}  // namespace boltpack::tools
