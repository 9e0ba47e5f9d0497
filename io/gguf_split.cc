#include "io/gguf_split.h"

#include <limits>

#include "common/escape.h"
#include "common/checked_math.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "common/atomic_file.h"

namespace boltpack::io {

absl::StatusOr<uint64_t> ParseGgufSplitSize(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(StrCat("split size \"", text, "\": ", why,
                                             " (bytes, or a number with K, M or G: 500M, 2G)"));
  };
  std::string_view s = text;
  if (!s.empty() && (s.back() == 'B' || s.back() == 'b')) s.remove_suffix(1);
  uint64_t unit = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K': case 'k': unit = 1000; break;
      case 'M': case 'm': unit = 1000 * 1000; break;
      case 'G': case 'g': unit = 1000 * 1000 * 1000; break;
      case 'T': case 't': unit = 1000ull * 1000 * 1000 * 1000; break;
      default: break;
    }
    if (unit != 1) s.remove_suffix(1);
  }
  if (s.empty()) return bad("no number");
  uint64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return bad("not a whole number");
    auto next = CheckedMul(n, 10);
    next = next ? CheckedAdd(*next, static_cast<uint64_t>(c - '0')) : std::nullopt;
    if (!next) return bad("too large");
    n = *next;
  }
  auto bytes = CheckedMul(n, unit);
  if (!bytes) return bad("too large");
  if (*bytes == 0) return bad("must be at least 1 byte");
  return *bytes;
}

std::vector<size_t> PlanGgufSplit(absl::Span<const uint64_t> bytes, uint64_t max_bytes, uint64_t max_tensors,
                                  uint32_t alignment0) {
  std::vector<size_t> first = {0};
  uint64_t used = 0;  // padded tensor bytes in the current shard
  size_t count = 0;   // tensors in the current shard
  for (size_t i = 0; i < bytes.size(); ++i) {
    uint32_t align = first.size() == 1 ? alignment0 : kGgufDefaultAlignment;
    uint64_t padded = AlignUp(bytes[i], align).value_or(std::numeric_limits<uint64_t>::max());
    bool over_size = max_bytes != 0 && (CheckedAdd(used, padded).value_or(std::numeric_limits<uint64_t>::max()) > max_bytes);
    bool over_count = max_tensors != 0 && count >= max_tensors;
    if (count > 0 && (over_size || over_count)) {
      first.push_back(i);
      used = 0;
      count = 0;
      padded = AlignUp(bytes[i], kGgufDefaultAlignment).value_or(std::numeric_limits<uint64_t>::max());
    }
    used = CheckedAdd(used, padded).value_or(std::numeric_limits<uint64_t>::max());
    ++count;
  }
  return first;
}

std::string GgufSplitPrefix(std::string_view output) {
  constexpr std::string_view kExt = ".gguf";
  if (output.size() > kExt.size()) {
    std::string_view tail = output.substr(output.size() - kExt.size());
    bool match = true;
    for (size_t i = 0; i < kExt.size(); ++i) match &= (tail[i] | 0x20) == kExt[i];
    if (match) output.remove_suffix(kExt.size());
  }
  return std::string(output);
}

struct GgufSplitWriter::Impl {
  std::vector<std::string> paths;
  std::vector<Metadata> kvs;                      // per shard
  std::vector<std::vector<GgufTensorDecl>> decls;  // per shard
  std::vector<std::unique_ptr<AtomicFile>> files;  // opened so far (uncommitted)
  GgufSplitOptions options;
  std::vector<uint64_t> sizes;  // per tensor, in declaration order
  std::vector<size_t> first;    // PlanGgufSplit
  size_t next = 0;              // next tensor
  uint32_t alignment = kGgufDefaultAlignment;  // of the open shard

  absl::Status OpenShard(size_t k) {
    BP_ASSIGN_OR_RETURN(alignment, GgufAlignmentOf(paths[k], kvs[k]));
    BP_ASSIGN_OR_RETURN(std::vector<uint8_t> header,
                        EncodeGgufHeader(paths[k], kvs[k], decls[k], options.writer.version, alignment,
                                         options.writer.pad_empty));
    BP_ASSIGN_OR_RETURN(auto file, AtomicFile::Create(paths[k], options.writer.inputs, options.writer.durable));
    BP_RETURN_IF_ERROR(file->Write(header));
    files.push_back(std::move(file));
    return absl::OkStatus();
  }
};

GgufSplitWriter::GgufSplitWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GgufSplitWriter::~GgufSplitWriter() = default;

absl::StatusOr<std::unique_ptr<GgufSplitWriter>> GgufSplitWriter::Create(const std::string& output, const Metadata& kv,
                                                                         std::vector<GgufTensorDecl> tensors,
                                                                         const GgufSplitOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  Metadata model_kv;
  for (const auto& [k, v] : kv) {
    if (k == kGgufSplitNoKey || k == kGgufSplitCountKey || k == kGgufSplitTensorsCountKey) continue;
    model_kv.emplace_back(k, v);
  }
  BP_ASSIGN_OR_RETURN(uint32_t alignment0, GgufAlignmentOf(output, model_kv));
  if (options.writer.alignment != 0 && options.writer.alignment != alignment0) {
    return absl::InvalidArgumentError(StrCat(output, ": alignment ", options.writer.alignment,
                                             " does not match general.alignment ", alignment0));
  }
  if (tensors.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(StrCat(output, ": ", tensors.size(), " tensors; split.tensors.count is an INT32"));
  }
  for (const auto& t : tensors) {
    const GgmlType* type = GgmlTypeById(t.type);
    if (type == nullptr) {
      return absl::InvalidArgumentError(StrCat(output, ": tensor ", QuoteForDisplay(t.name), ": unknown ggml type ", t.type));
    }
    auto n = GgmlTensorBytes(*type, t.ne);
    if (!n.ok()) return absl::InvalidArgumentError(StrCat(output, ": tensor ", QuoteForDisplay(t.name), ": ", n.status().message()));
    impl->sizes.push_back(*n);
  }
  impl->first = PlanGgufSplit(impl->sizes, options.max_bytes, options.max_tensors, alignment0);
  size_t count = impl->first.size();
  if (count > std::numeric_limits<uint16_t>::max()) {
    return absl::InvalidArgumentError(StrCat(output, ": the split would need ", count,
                                             " files; split.count is a UINT16 (at most 65535): raise the maximum size"));
  }
  std::string prefix = GgufSplitPrefix(output);
  for (size_t k = 0; k < count; ++k) {
    impl->paths.push_back(GgufSplitPath(prefix, static_cast<int>(k), static_cast<int>(count)));
    Metadata shard_kv = k == 0 ? model_kv : Metadata{};
    shard_kv.emplace_back(std::string(kGgufSplitNoKey), MetaValue::Uint(ValueType::kUint16, k));
    shard_kv.emplace_back(std::string(kGgufSplitTensorsCountKey),
                          MetaValue::Int(ValueType::kInt32, static_cast<int64_t>(tensors.size())));
    shard_kv.emplace_back(std::string(kGgufSplitCountKey), MetaValue::Uint(ValueType::kUint16, count));
    impl->kvs.push_back(std::move(shard_kv));
    size_t end = k + 1 < count ? impl->first[k + 1] : tensors.size();
    impl->decls.emplace_back(std::make_move_iterator(tensors.begin() + static_cast<ptrdiff_t>(impl->first[k])),
                             std::make_move_iterator(tensors.begin() + static_cast<ptrdiff_t>(end)));
  }
  // Every header is encoded (so validated) before anything is written.
  for (size_t k = 0; k < count; ++k) {
    BP_ASSIGN_OR_RETURN(uint32_t a, GgufAlignmentOf(impl->paths[k], impl->kvs[k]));
    BP_RETURN_IF_ERROR(EncodeGgufHeader(impl->paths[k], impl->kvs[k], impl->decls[k], options.writer.version, a,
                                        options.writer.pad_empty)
                           .status());
  }
  BP_RETURN_IF_ERROR(impl->OpenShard(0));
  return std::unique_ptr<GgufSplitWriter>(new GgufSplitWriter(std::move(impl)));
}

absl::Status GgufSplitWriter::WriteNext(absl::Span<const uint8_t> bytes) {
  Impl& w = *impl_;
  if (w.next >= w.sizes.size()) {
    return absl::FailedPreconditionError(StrCat(w.paths[0], ": more tensors written than declared"));
  }
  // The shard of tensor `next`: open it when its first tensor comes.
  size_t shard = w.files.size() - 1;
  if (shard + 1 < w.first.size() && w.next == w.first[shard + 1]) {
    BP_RETURN_IF_ERROR(w.OpenShard(shard + 1));
    ++shard;
  }
  const GgufTensorDecl& t = w.decls[shard][w.next - w.first[shard]];
  if (bytes.size() != w.sizes[w.next]) {
    return absl::InvalidArgumentError(StrCat(w.paths[shard], ": tensor ", QuoteForDisplay(t.name), ": ", bytes.size(),
                                             " bytes given, its type and shape need ", w.sizes[w.next]));
  }
  AtomicFile& f = *w.files.back();
  BP_RETURN_IF_ERROR(f.Write(bytes));
  BP_RETURN_IF_ERROR(f.PadTo(w.alignment));
  ++w.next;
  return absl::OkStatus();
}

absl::Status GgufSplitWriter::Finish() {
  Impl& w = *impl_;
  if (w.next != w.sizes.size()) {
    return absl::FailedPreconditionError(StrCat(w.paths[0], ": ", w.next, " of ", w.sizes.size(),
                                                " tensors written"));
  }
  // Shards without tensors exist only when there are no tensors at all.
  while (w.files.size() < w.paths.size()) BP_RETURN_IF_ERROR(w.OpenShard(w.files.size()));
  // Every shard is written and fsynced before any gets its name, then they
  // are linked one after another; the first (the one a loader opens) last.
  std::vector<AtomicFile*> last_first;
  for (size_t k = w.files.size(); k-- > 0;) last_first.push_back(w.files[k].get());
  return CommitAll(last_first);
}

const std::vector<std::string>& GgufSplitWriter::paths() const { return impl_->paths; }

std::vector<size_t> GgufSplitWriter::tensor_counts() const {
  std::vector<size_t> out;
  for (const auto& d : impl_->decls) out.push_back(d.size());
  return out;
}

}  // namespace boltpack::io
