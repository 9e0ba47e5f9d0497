#include "io/safetensors_split.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "absl/container/flat_hash_set.h"
#include "common/atomic_file.h"
#include "common/escape.h"
#include "common/limits.h"
#include "common/mapped_file.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/json.h"

namespace boltpack::io {
namespace {

constexpr std::string_view kExt = ".safetensors";
constexpr std::string_view kIndexExt = ".safetensors.index.json";

bool EndsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// A string as Python's json.dumps spells it by default (ensure_ascii):
// backslash escapes for the quote, the backslash, BS, FF, LF, CR and TAB,
// every other code point outside ' '..'~' as \uXXXX in lower
// case hex, those above U+FFFF as a UTF-16 surrogate pair. `s` is valid
// UTF-8 (CheckSafetensorsDecls checked the names).
void AppendPythonJsonQuoted(std::string_view s, std::string* out) {
  auto u = [out](uint32_t v) {  // one UTF-16 unit: v <= 0xFFFF
    static constexpr char kHex[] = "0123456789abcdef";
    const char e[6] = {'\\', 'u', kHex[(v >> 12) & 15], kHex[(v >> 8) & 15], kHex[(v >> 4) & 15], kHex[v & 15]};
    out->append(e, sizeof(e));
  };
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      switch (c) {
        case '"': out->append("\\\""); break;
        case '\\': out->append("\\\\"); break;
        case '\b': out->append("\\b"); break;
        case '\f': out->append("\\f"); break;
        case '\n': out->append("\\n"); break;
        case '\r': out->append("\\r"); break;
        case '\t': out->append("\\t"); break;
        default:
          if (c < 0x20 || c == 0x7f) u(c);
          else out->push_back(static_cast<char>(c));
      }
      continue;
    }
    const size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
    uint32_t cp = c & (0x3f >> (n - 1));
    for (size_t k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    i += n;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      u(0xd800 + (cp >> 10));
      u(0xdc00 + (cp & 0x3ff));
    } else {
      u(cp);
    }
  }
  out->push_back('"');
}

std::string FolderOf(std::string_view prefix) {
  return std::filesystem::path(std::string(prefix)).parent_path().string();
}

std::string BaseOf(std::string_view prefix) {
  return std::filesystem::path(std::string(prefix)).filename().string();
}

bool Exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found && !ec;
}

// The shards the index at `index_path` names (PREFIX-NNNNN-of-NNNNN
// names only), as paths beside it; none if it is absent or unreadable.
std::vector<std::string> ShardsOfOldIndex(const std::string& index_path, std::string_view base) {
  std::vector<std::string> out;
  if (!Exists(index_path)) return out;
  auto map = MappedFile::Open(index_path);
  if (!map.ok() || (*map)->bytes().size() > kSafetensorsMaxHeaderBytes) return out;
  std::string_view text(reinterpret_cast<const char*>((*map)->bytes().data()), (*map)->bytes().size());
  auto json = ParseJson(text);
  if (!json.ok() || !json->is_object()) return out;
  const JsonValue* wm = json->Find("weight_map");
  if (wm == nullptr || !wm->is_object()) return out;
  const std::string dir = FolderOf(index_path);
  absl::flat_hash_set<std::string> seen;
  for (const auto& [tensor, file] : wm->object()) {
    if (!file.is_string() || !IsSafetensorsShardName(file.string_value(), base)) continue;
    if (seen.insert(file.string_value()).second) {
      out.push_back(dir.empty() ? file.string_value() : StrCat(dir, "/", file.string_value()));
    }
  }
  return out;
}

}  // namespace

SafetensorsSplitPlan PlanSafetensorsSplit(absl::Span<const uint64_t> bytes, uint64_t max_bytes,
                                          uint64_t max_tensors) {
  // huggingface_hub split_state_dict_into_shards_factory: a tensor over the
  // maximum is appended as a shard of its own at once; the shard being
  // filled is appended (numbered) only when the next tensor would take it
  // over, so it may come after such a shard.
  SafetensorsSplitPlan plan;
  plan.file_of.assign(bytes.size(), 0);
  std::vector<size_t> current;
  uint64_t used = 0;
  auto close = [&]() {
    for (size_t i : current) plan.file_of[i] = static_cast<uint32_t>(plan.files);
    ++plan.files;
    current.clear();
    used = 0;
  };
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (max_bytes != 0 && bytes[i] > max_bytes) {
      plan.file_of[i] = static_cast<uint32_t>(plan.files++);
      continue;
    }
    bool over_size = max_bytes != 0 && used + bytes[i] > max_bytes;  // both <= max_bytes: no overflow
    bool over_count = max_tensors != 0 && current.size() >= max_tensors;
    if (!current.empty() && (over_size || over_count)) close();
    current.push_back(i);
    used += bytes[i];
  }
  if (!current.empty()) close();
  return plan;
}

bool IsSafetensorsIndexName(std::string_view path) { return EndsWith(path, kIndexExt); }

absl::StatusOr<std::string> SafetensorsSplitPrefix(std::string_view output) {
  std::string_view prefix = output;
  if (EndsWith(prefix, kIndexExt)) {
    prefix.remove_suffix(kIndexExt.size());
  } else if (EndsWith(prefix, kExt)) {
    prefix.remove_suffix(kExt.size());
  } else {
    return absl::InvalidArgumentError(StrCat(output, ": a split safetensors output is named DIR/NAME.safetensors "
                                                     "or DIR/NAME.safetensors.index.json"));
  }
  if (prefix.empty() || prefix.back() == '/') {
    return absl::InvalidArgumentError(StrCat(output, ": no file name before the extension"));
  }
  return std::string(prefix);
}

std::string SafetensorsShardPath(std::string_view prefix, size_t k, size_t n) {
  char suffix[64];
  std::snprintf(suffix, sizeof(suffix), "-%05zu-of-%05zu", k + 1, n);
  return StrCat(prefix, suffix, kExt);
}

bool IsSafetensorsShardName(std::string_view name, std::string_view base) {
  if (name.size() <= base.size() || name.substr(0, base.size()) != base || !EndsWith(name, kExt)) return false;
  std::string_view mid = name.substr(base.size(), name.size() - base.size() - kExt.size());  // -NNNNN-of-NNNNN
  auto digits = [](std::string_view d) {
    return d.size() >= 5 && std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  size_t of = mid.find("-of-");
  return mid.size() > 1 && mid[0] == '-' && of != std::string_view::npos && digits(mid.substr(1, of - 1)) &&
         digits(mid.substr(of + 4));
}

std::string SafetensorsIndexJson(uint64_t total_size,
                                 std::vector<std::pair<std::string_view, std::string_view>> weight_map) {
  // sort_keys=True: Python orders str by code point, which is UTF-8's byte order.
  std::sort(weight_map.begin(), weight_map.end());
  std::string out = StrCat("{\n  \"metadata\": {\n    \"total_size\": ", total_size, "\n  },\n  \"weight_map\": {");
  for (size_t i = 0; i < weight_map.size(); ++i) {
    out += i ? ",\n    " : "\n    ";
    AppendPythonJsonQuoted(weight_map[i].first, &out);
    out += ": ";
    AppendPythonJsonQuoted(weight_map[i].second, &out);
  }
  out += weight_map.empty() ? "}\n}\n" : "\n  }\n}\n";
  return out;
}

struct SafetensorsSplitWriter::Impl {
  SafetensorsSplitOptions options;
  std::vector<std::pair<std::string, std::string>> metadata;  // every file's __metadata__
  std::vector<std::vector<SafetensorsTensorDecl>> decls;      // per file, until it is opened
  std::vector<std::unique_ptr<SafetensorsWriter>> writers;    // per file, from its first tensor on
  std::vector<size_t> left;                                   // per file: tensors still to write
  std::vector<uint32_t> file_of;                              // per tensor
  std::vector<std::string> names;                             // per tensor, for the index
  std::vector<std::string> paths;
  std::vector<size_t> counts;
  std::string index_path;
  std::unique_ptr<AtomicFile> index;
  std::vector<std::string> stale;  // shards of the replaced index that the new one does not name
  std::vector<std::string> removed;
  uint64_t total_size = 0;
  size_t next = 0;
  bool failed = false;
};

SafetensorsSplitWriter::SafetensorsSplitWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SafetensorsSplitWriter::~SafetensorsSplitWriter() = default;

absl::StatusOr<std::unique_ptr<SafetensorsSplitWriter>> SafetensorsSplitWriter::Create(
    const std::string& output, std::vector<std::pair<std::string, std::string>> metadata,
    std::vector<SafetensorsTensorDecl> tensors, const SafetensorsSplitOptions& options) {
  BP_ASSIGN_OR_RETURN(std::string prefix, SafetensorsSplitPrefix(output));
  // Every declaration is checked (names unique across all files) before a
  // byte is written; each file checks its own again when it opens.
  BP_ASSIGN_OR_RETURN(std::vector<uint64_t> sizes, CheckSafetensorsDecls(output, metadata, tensors));
  SafetensorsSplitPlan plan = PlanSafetensorsSplit(sizes, options.max_bytes, options.max_tensors);
  if (plan.files > format::kMaxShards) {
    return absl::InvalidArgumentError(StrCat(output, ": the split would need ", plan.files,
                                             " files, over the limit of ", format::kMaxShards, ": raise --split-max-size"));
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->metadata = std::move(metadata);
  const size_t files = std::max<size_t>(plan.files, 1);  // no tensors: one empty file
  if (files == 1) {
    impl->paths.push_back(StrCat(prefix, kExt));  // as HF: one file keeps the plain name, no index
    // An index left by an earlier split under this name would still name
    // the old shards: it goes after the commit (first), and they with it.
    const std::string old_index = StrCat(prefix, kIndexExt);
    if (Exists(old_index) && CheckNotAnInput(old_index, options.inputs).ok()) {
      impl->stale = ShardsOfOldIndex(old_index, BaseOf(prefix));
      impl->stale.insert(impl->stale.begin(), old_index);
    }
  } else {
    for (size_t k = 0; k < files; ++k) impl->paths.push_back(SafetensorsShardPath(prefix, k, files));
    impl->index_path = StrCat(prefix, kIndexExt);
    const std::string single = StrCat(prefix, kExt);
    if (Exists(single)) {
      return absl::FailedPreconditionError(
          StrCat(single, ": exists beside the split output ", impl->index_path,
                 "; Hugging Face loaders read it instead of the index (remove it, or write the split to another "
                 "folder)"));
    }
    // Named now (unnamed until Finish), so an index that is an input is refused before any work.
    BP_ASSIGN_OR_RETURN(impl->index, AtomicFile::Create(impl->index_path, options.inputs, options.durable));
    absl::flat_hash_set<std::string> fresh(impl->paths.begin(), impl->paths.end());
    for (std::string& old : ShardsOfOldIndex(impl->index_path, BaseOf(prefix))) {
      if (!fresh.contains(old)) impl->stale.push_back(std::move(old));
    }
  }
  impl->decls.resize(files);
  impl->counts.assign(files, 0);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const uint32_t k = plan.file_of[i];
    impl->total_size += sizes[i];
    impl->names.push_back(tensors[i].name);
    impl->decls[k].push_back(std::move(tensors[i]));
    ++impl->counts[k];
  }
  impl->file_of = std::move(plan.file_of);
  impl->left = impl->counts;
  impl->writers.resize(files);
  if (tensors.empty()) {
    BP_ASSIGN_OR_RETURN(impl->writers[0], SafetensorsWriter::Create(impl->paths[0], impl->metadata, {},
                                                                    options.inputs, options.durable));
  }
  return std::unique_ptr<SafetensorsSplitWriter>(new SafetensorsSplitWriter(std::move(impl)));
}

// The writer of the next tensor's file, opened with its first tensor.
SafetensorsWriter* SafetensorsSplitWriter::Next(absl::Status* error) {
  Impl& w = *impl_;
  if (w.failed) {
    *error = absl::FailedPreconditionError(StrCat(w.paths[0], ": an earlier write failed"));
    return nullptr;
  }
  if (w.next >= w.file_of.size()) {
    *error = absl::FailedPreconditionError(
        StrCat(w.paths[0], ": all ", w.file_of.size(), " declared tensors are already written"));
    return nullptr;
  }
  const uint32_t k = w.file_of[w.next];
  if (w.writers[k] == nullptr) {
    auto writer = SafetensorsWriter::Create(w.paths[k], w.metadata, std::move(w.decls[k]), w.options.inputs,
                                            w.options.durable);
    if (!writer.ok()) {
      w.failed = true;
      *error = writer.status();
      return nullptr;
    }
    w.writers[k] = std::move(*writer);
  }
  return w.writers[k].get();
}

// After the next tensor's write: a file whose tensors are all written is
// sealed at once (fsynced, its buffer freed), so only the files being filled
// hold memory.
absl::Status SafetensorsSplitWriter::AfterWrite(absl::Status written) {
  Impl& w = *impl_;
  if (!written.ok()) {
    w.failed = true;
    return written;
  }
  const uint32_t k = w.file_of[w.next++];
  if (--w.left[k] == 0) {
    absl::Status sealed = w.writers[k]->Seal().status();
    if (!sealed.ok()) w.failed = true;
    return sealed;
  }
  return absl::OkStatus();
}

absl::Status SafetensorsSplitWriter::WriteNext(absl::Span<const uint8_t> bytes) {
  SpanPieces pieces(bytes);
  return WriteNext(pieces);
}

absl::Status SafetensorsSplitWriter::WriteNext(PieceSource& bytes) {
  absl::Status error;
  SafetensorsWriter* writer = Next(&error);
  if (writer == nullptr) return error;
  return AfterWrite(writer->WriteNext(bytes));
}

absl::Status SafetensorsSplitWriter::WriteNextBehind(std::shared_ptr<PieceSource> bytes) {
  absl::Status error;
  SafetensorsWriter* writer = Next(&error);
  if (writer == nullptr) return error;
  return AfterWrite(writer->WriteNextBehind(std::move(bytes)));
}

absl::Status SafetensorsSplitWriter::Finish() {
  Impl& w = *impl_;
  if (w.failed) return absl::FailedPreconditionError(StrCat(w.paths[0], ": an earlier write failed"));
  if (w.next != w.file_of.size()) {
    return absl::FailedPreconditionError(StrCat(w.paths[0], ": tensor ", QuoteForDisplay(w.names[w.next]),
                                                " not written (", w.next, " of ", w.file_of.size(),
                                                " tensors were)"));
  }
  std::vector<AtomicFile*> files;
  for (auto& writer : w.writers) {
    BP_ASSIGN_OR_RETURN(AtomicFile * f, writer->Seal());  // sealed already: returns it
    files.push_back(f);
  }
  if (w.index != nullptr) {
    std::vector<std::pair<std::string_view, std::string_view>> map;
    map.reserve(w.names.size());
    for (size_t i = 0; i < w.names.size(); ++i) {
      std::string_view path = w.paths[w.file_of[i]];
      map.emplace_back(w.names[i], path.substr(path.find_last_of('/') + 1));  // npos + 1 == 0
    }
    const std::string json = SafetensorsIndexJson(w.total_size, std::move(map));
    BP_RETURN_IF_ERROR(w.index->Write({reinterpret_cast<const uint8_t*>(json.data()), json.size()}));
    files.push_back(w.index.get());  // named last: it names the others
  }
  absl::Status committed = CommitAll(files);
  if (!committed.ok()) {
    w.failed = true;
    return committed;
  }
  if (w.index != nullptr) w.paths.push_back(w.index_path);
  // The replaced index's shards that the new one does not name (and, for
  // one file, that index first): a later reader would never open them, so
  // they go (never an input).
  for (const std::string& old : w.stale) {
    std::error_code ec;
    if (!CheckNotAnInput(old, w.options.inputs).ok()) continue;
    if (std::filesystem::symlink_status(old, ec).type() != std::filesystem::file_type::regular) continue;
    if (std::filesystem::remove(old, ec)) w.removed.push_back(old);
  }
  return absl::OkStatus();
}

const std::vector<std::string>& SafetensorsSplitWriter::paths() const { return impl_->paths; }
const std::vector<size_t>& SafetensorsSplitWriter::tensor_counts() const { return impl_->counts; }
const std::string& SafetensorsSplitWriter::index_path() const { return impl_->index_path; }
const std::vector<std::string>& SafetensorsSplitWriter::removed() const { return impl_->removed; }

}  // namespace boltpack::io
