#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <unordered_map>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/checked_math.h"
#include "common/escape.h"
#include "common/name_index_set.h"
#include "common/piece_copy.h"
#include "common/status_macros.h"
#include "common/limits.h"
#include "common/atomic_file.h"
#include "io/json.h"
#include "common/mapped_file.h"

namespace boltpack::io {
namespace {

// Debian's Abseil has its own string_view type, which StrCat needs.
absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }

constexpr size_t kMaxSafetensorsDims = format::kMaxDims;

// Names safetensors defines but bolt-pack cannot hold (sub-byte floats):
// they get "unsupported" rather than "unknown", so the user knows the file
// is fine and the tool is what falls short.
constexpr std::string_view kUnsupportedDTypes[] = {"F4", "F6_E2M3", "F6_E3M2"};

// Names in error messages are quoted (they may hold control characters) and
// cut short (they may be megabytes long).
std::string Quoted(std::string_view s) { return QuoteForDisplay(s, 200); }

std::string ShapeText(absl::Span<const uint64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) absl::StrAppend(&out, i ? "," : "", shape[i]);
  return out + "]";
}

uint64_t ReadLE64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

absl::Status Invalid(std::string_view file, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(AV(file), ": ", AV(what)));
}

absl::Status TensorError(std::string_view file, std::string_view tensor, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(AV(file), ": tensor ", Quoted(tensor), ": ", AV(what)));
}

// A JSON number that is a non-negative integer written without fraction or
// exponent: how serde reads a Rust usize, so what HF accepts, we accept.
std::optional<uint64_t> PlainUint(const JsonValue& v) {
  if (!v.is_number() || !v.is_integer()) return std::nullopt;
  return v.uint64_value();
}

// One parsed .safetensors file.
struct ParsedFile {
  std::vector<SafetensorsTensor> tensors;  // header order
  std::vector<std::pair<std::string, std::string>> metadata;
  absl::Span<const uint8_t> buffer;  // the byte buffer after the header
};

absl::Status ParseTensorEntry(std::string_view file, const std::string& name,
                              const JsonValue& entry, SafetensorsTensor* t) {
  if (!entry.is_object()) {
    return TensorError(file, name,
                       absl::StrCat("entry is ", AV(JsonTypeName(entry.type())), ", not an object"));
  }
  const JsonValue* dtype = nullptr;
  const JsonValue* shape = nullptr;
  const JsonValue* offsets = nullptr;
  for (const auto& [key, value] : entry.object()) {
    if (key == "dtype") dtype = &value;
    else if (key == "shape") shape = &value;
    else if (key == "data_offsets") offsets = &value;
    else return TensorError(file, name, absl::StrCat("unknown key ", Quoted(key), " in tensor entry"));
  }
  if (dtype == nullptr) return TensorError(file, name, "missing \"dtype\"");
  if (shape == nullptr) return TensorError(file, name, "missing \"shape\"");
  if (offsets == nullptr) return TensorError(file, name, "missing \"data_offsets\"");

  t->name = name;
  if (!dtype->is_string()) return TensorError(file, name, "\"dtype\" is not a string");
  const std::string& dname = dtype->string_value();
  std::optional<DType> dt = DTypeFromName(dname);
  if (!dt || DTypeSize(*dt) <= 0) {
    bool known = std::find(std::begin(kUnsupportedDTypes), std::end(kUnsupportedDTypes),
                           std::string_view(dname)) != std::end(kUnsupportedDTypes);
    return TensorError(file, name,
                       absl::StrCat(known ? "unsupported dtype " : "unknown dtype ", Quoted(dname)));
  }
  t->dtype = *dt;

  if (!shape->is_array()) return TensorError(file, name, "\"shape\" is not an array");
  if (shape->array().size() > kMaxSafetensorsDims) {
    return TensorError(file, name, absl::StrCat("shape has ", shape->array().size(),
                                                " dims, more than the limit of ", kMaxSafetensorsDims));
  }
  t->shape.clear();
  for (const JsonValue& d : shape->array()) {
    std::optional<uint64_t> dim = PlainUint(d);
    if (!dim) {
      return TensorError(file, name,
                         absl::StrCat("shape dim ",
                                      d.is_number() ? d.number_text() : std::string(AV(JsonTypeName(d.type()))),
                                      " is not a non-negative integer"));
    }
    t->shape.push_back(*dim);
  }

  if (!offsets->is_array() || offsets->array().size() != 2) {
    return TensorError(file, name, "\"data_offsets\" is not an array of two integers");
  }
  std::optional<uint64_t> begin = PlainUint(offsets->array()[0]);
  std::optional<uint64_t> end = PlainUint(offsets->array()[1]);
  if (!begin || !end) {
    return TensorError(file, name, "\"data_offsets\" must be two non-negative integers");
  }
  if (*end < *begin) {
    return TensorError(file, name,
                       absl::StrCat("data_offsets [", *begin, ", ", *end, "] end before they begin"));
  }
  t->data_begin = *begin;
  t->data_end = *end;

  std::optional<uint64_t> elements = CheckedProduct(t->shape);
  if (!elements) {
    return TensorError(file, name, absl::StrCat("element count of shape ", ShapeText(t->shape),
                                                " overflows 64 bits"));
  }
  std::optional<uint64_t> bytes = CheckedMul(*elements, static_cast<uint64_t>(DTypeSize(t->dtype)));
  if (!bytes) {
    return TensorError(file, name, absl::StrCat("byte size of ", AV(DTypeName(t->dtype)), " ",
                                                ShapeText(t->shape), " overflows 64 bits"));
  }
  if (*end - *begin != *bytes) {
    return TensorError(file, name,
                       absl::StrCat("data_offsets [", *begin, ", ", *end, "] hold ", *end - *begin,
                                    " bytes but ", AV(DTypeName(t->dtype)), " ", ShapeText(t->shape),
                                    " needs ", *bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<ParsedFile> ParseSafetensors(absl::Span<const uint8_t> bytes, std::string_view file,
                                            size_t file_index) {
  if (bytes.size() < 8) {
    return Invalid(file, absl::StrCat("file is ", bytes.size(),
                                      " bytes, too small for the 8-byte header length"));
  }
  uint64_t n = ReadLE64(bytes.data());
  if (n > kSafetensorsMaxHeaderBytes) {
    // A limit, not malformed data: same status code as bolt-pack's own limits.
    return absl::ResourceExhaustedError(absl::StrCat(AV(file), ": header length ", n,
                                                     " is over the limit of ",
                                                     kSafetensorsMaxHeaderBytes, " bytes"));
  }
  if (n + 8 > bytes.size()) {
    return Invalid(file, absl::StrCat("header length ", n, " runs past the end of the file (",
                                      bytes.size(), " bytes)"));
  }
  std::string_view header(reinterpret_cast<const char*>(bytes.data() + 8), n);
  if (std::optional<size_t> bad = FirstInvalidUtf8(header)) {
    return Invalid(file, absl::StrCat("header is not valid UTF-8 (header byte ", *bad, ")"));
  }
  if (header.empty() || header[0] != '{') {
    return Invalid(file, "header does not start with '{'");
  }
  JsonLimits limits;
  limits.max_bytes = kSafetensorsMaxHeaderBytes;
  absl::StatusOr<JsonValue> json = ParseJson(header, limits);
  if (!json.ok()) {
    // Offsets in JSON errors count from the start of the header.
    return absl::Status(json.status().code(),
                        absl::StrCat(AV(file), ": header JSON: ", json.status().message()));
  }

  ParsedFile out;
  for (const auto& [key, value] : json->object()) {
    if (key == "__metadata__") {
      if (!value.is_object()) {
        return Invalid(file, absl::StrCat("__metadata__ is ", AV(JsonTypeName(value.type())),
                                          ", not an object of strings"));
      }
      for (const auto& [mk, mv] : value.object()) {
        if (!mv.is_string()) {
          return Invalid(file, absl::StrCat("__metadata__ value of ", Quoted(mk), " is ",
                                            AV(JsonTypeName(mv.type())), ", not a string"));
        }
        out.metadata.emplace_back(mk, mv.string_value());
      }
      continue;
    }
    SafetensorsTensor t;
    t.file_index = file_index;
    BP_RETURN_IF_ERROR(ParseTensorEntry(file, key, value, &t));
    out.tensors.push_back(std::move(t));
  }

  // The tensors, sorted by offsets, must tile the buffer exactly: a hole
  // would be unaccounted bytes (a place to smuggle data), an overlap would
  // let two tensors alias.
  std::vector<size_t> order(out.tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto& ta = out.tensors[a];
    const auto& tb = out.tensors[b];
    return std::pair(ta.data_begin, ta.data_end) < std::pair(tb.data_begin, tb.data_end);
  });
  uint64_t covered = 0;
  const SafetensorsTensor* prev = nullptr;
  for (size_t idx : order) {
    const SafetensorsTensor& t = out.tensors[idx];
    if (t.data_begin > covered) {
      return TensorError(file, t.name,
                         absl::StrCat("data_offsets [", t.data_begin, ", ", t.data_end,
                                      "] leave a hole: the bytes before them end at ", covered));
    }
    if (t.data_begin < covered) {
      return TensorError(file, t.name,
                         absl::StrCat("data_offsets [", t.data_begin, ", ", t.data_end,
                                      "] overlap tensor ", Quoted(prev->name), " [", prev->data_begin,
                                      ", ", prev->data_end, "]"));
    }
    covered = t.data_end;
    prev = &t;
  }
  uint64_t buffer_len = bytes.size() - 8 - n;
  if (covered != buffer_len) {
    if (covered > buffer_len) {
      return Invalid(file, absl::StrCat("tensors need a ", covered, "-byte data buffer but the file has ",
                                        buffer_len, " bytes after the header (truncated?)"));
    }
    return Invalid(file, absl::StrCat("tensors cover ", covered, " bytes but the file has ", buffer_len,
                                      " bytes after the header (", buffer_len - covered,
                                      " unaccounted trailing bytes)"));
  }
  out.buffer = bytes.subspan(8 + n);
  return out;
}

// A shard name from an index must stay inside the index's folder.
bool IsPlainFileName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  // ':' too, so a Windows drive-relative name ("C:x") cannot slip through.
  return name.find_first_of(std::string_view("/\\:\0", 4)) == std::string_view::npos;
}

}  // namespace

struct SafetensorsModel::Impl {
  std::vector<std::unique_ptr<MappedFile>> maps;
  std::vector<absl::Span<const uint8_t>> buffers;  // per file
  std::vector<uint64_t> data_offsets;               // per file: where its buffer starts in it
  std::vector<SafetensorsTensor> tensors;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<std::string> files;
};

SafetensorsModel::SafetensorsModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SafetensorsModel::~SafetensorsModel() = default;

const std::vector<SafetensorsTensor>& SafetensorsModel::tensors() const { return impl_->tensors; }
const std::vector<std::pair<std::string, std::string>>& SafetensorsModel::metadata() const {
  return impl_->metadata;
}
const std::vector<std::string>& SafetensorsModel::files() const { return impl_->files; }

uint64_t SafetensorsModel::FileOffset(size_t i) const {
  if (i >= impl_->tensors.size()) return 0;
  const SafetensorsTensor& t = impl_->tensors[i];
  return impl_->data_offsets[t.file_index] + t.data_begin;
}

absl::Span<const uint8_t> SafetensorsModel::TensorBytes(size_t i) const {
  if (i >= impl_->tensors.size()) return {};
  const SafetensorsTensor& t = impl_->tensors[i];
  return impl_->buffers[t.file_index].subspan(t.data_begin, t.data_end - t.data_begin);
}

absl::StatusOr<std::unique_ptr<SafetensorsModel>> SafetensorsModel::OpenBuffer(
    absl::Span<const uint8_t> bytes, std::string display_name) {
  BP_ASSIGN_OR_RETURN(ParsedFile parsed, ParseSafetensors(bytes, display_name, 0));
  auto impl = std::make_unique<Impl>();
  impl->buffers.push_back(parsed.buffer);
  impl->data_offsets.push_back(static_cast<uint64_t>(parsed.buffer.data() - bytes.data()));
  impl->tensors = std::move(parsed.tensors);
  impl->metadata = std::move(parsed.metadata);
  impl->files.push_back(std::move(display_name));
  return std::unique_ptr<SafetensorsModel>(new SafetensorsModel(std::move(impl)));
}

// For a .json input without a "weight_map": which Hugging Face file it
// looks like and what to pass instead (every .json input is read as a shard
// index, and a config.json passed next to the weights is a common slip).
static std::string NotAnIndex(const JsonValue& json) {
  std::string what;
  if (json.Find("architectures") != nullptr || json.Find("model_type") != nullptr) {
    what = "a model config (config.json)";
  } else if (json.Find("model") != nullptr && json.Find("added_tokens") != nullptr) {
    what = "a tokenizer (tokenizer.json)";
  } else if (json.Find("tokenizer_class") != nullptr || json.Find("added_tokens_decoder") != nullptr) {
    what = "a tokenizer config (tokenizer_config.json)";
  } else if (json.Find("bos_token") != nullptr || json.Find("eos_token") != nullptr) {
    what = "a special tokens map (special_tokens_map.json)";
  } else if (json.Find("_from_model_config") != nullptr || json.Find("max_new_tokens") != nullptr) {
    what = "a generation config (generation_config.json)";
  }
  const char* instead =
      "pass the checkpoint folder that holds it (bolt-pack convert DIR -o OUT reads config.json, the weights and "
      "the tokenizer files), or the weights alone (model.safetensors or model.safetensors.index.json)";
  if (what.empty()) return absl::StrCat("missing \"weight_map\": not a safetensors shard index; ", instead);
  return absl::StrCat("is ", what, ", not a safetensors shard index (no \"weight_map\"); ", instead);
}

absl::StatusOr<std::unique_ptr<SafetensorsModel>> SafetensorsModel::Open(const std::string& path) {
  bool is_index = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  if (!is_index) {
    BP_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> map, MappedFile::Open(path));
    BP_ASSIGN_OR_RETURN(ParsedFile parsed, ParseSafetensors(map->bytes(), path, 0));
    auto impl = std::make_unique<Impl>();
    impl->buffers.push_back(parsed.buffer);
    impl->data_offsets.push_back(static_cast<uint64_t>(parsed.buffer.data() - map->bytes().data()));
    impl->tensors = std::move(parsed.tensors);
    impl->metadata = std::move(parsed.metadata);
    impl->files.push_back(path);
    impl->maps.push_back(std::move(map));
    return std::unique_ptr<SafetensorsModel>(new SafetensorsModel(std::move(impl)));
  }

  // Sharded model: `{"metadata": {...}, "weight_map": {tensor: file}}`.
  BP_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> index_map, MappedFile::Open(path));
  std::string_view text(reinterpret_cast<const char*>(index_map->bytes().data()),
                        index_map->bytes().size());
  absl::StatusOr<JsonValue> index = ParseJson(text);
  if (!index.ok()) {
    return absl::Status(index.status().code(),
                        absl::StrCat(path, ": index JSON: ", index.status().message()));
  }
  if (!index->is_object()) return Invalid(path, "index is not a JSON object");
  if (const JsonValue* meta = index->Find("metadata"); meta != nullptr && !meta->is_object()) {
    return Invalid(path, "\"metadata\" is not an object");
  }
  const JsonValue* weight_map = index->Find("weight_map");
  if (weight_map == nullptr) return Invalid(path, NotAnIndex(*index));
  if (!weight_map->is_object()) return Invalid(path, "\"weight_map\" is not an object");

  std::string dir = std::filesystem::path(path).parent_path().string();
  auto impl = std::make_unique<Impl>();
  std::vector<std::string> shard_names;
  std::unordered_map<std::string, size_t> shard_of_name;
  struct Listing {
    size_t shard;
    bool found;
  };
  std::unordered_map<std::string, Listing> listed;  // tensor -> where the index puts it
  for (const auto& [tensor, file] : weight_map->object()) {
    if (!file.is_string()) {
      return Invalid(path, absl::StrCat("weight_map entry for ", Quoted(tensor), " is ",
                                        AV(JsonTypeName(file.type())), ", not a file name"));
    }
    const std::string& fname = file.string_value();
    if (!IsPlainFileName(fname)) {
      return Invalid(path, absl::StrCat("weight_map puts ", Quoted(tensor), " in ", Quoted(fname),
                                        ", which is not a plain file name in the index's folder"));
    }
    auto [it, inserted] = shard_of_name.emplace(fname, shard_names.size());
    if (inserted) {
      if (shard_names.size() >= format::kMaxShards) {
        return absl::ResourceExhaustedError(
            absl::StrCat(path, ": more than ", format::kMaxShards, " shard files"));
      }
      shard_names.push_back(fname);
    }
    listed.emplace(tensor, Listing{it->second, false});
  }

  size_t found = 0;
  for (size_t s = 0; s < shard_names.size(); ++s) {
    std::string shard_path = dir.empty() ? shard_names[s] : absl::StrCat(dir, "/", shard_names[s]);
    BP_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> map, MappedFile::Open(shard_path));
    BP_ASSIGN_OR_RETURN(ParsedFile parsed, ParseSafetensors(map->bytes(), shard_path, s));
    for (SafetensorsTensor& t : parsed.tensors) {
      auto it = listed.find(t.name);
      if (it == listed.end()) {
        return TensorError(shard_path, t.name, absl::StrCat("is not listed in the weight_map of ", path));
      }
      if (it->second.shard != s) {
        return TensorError(shard_path, t.name,
                           absl::StrCat("is in this shard, but the weight_map of ", path,
                                        " puts it in ", Quoted(shard_names[it->second.shard])));
      }
      it->second.found = true;
      ++found;
      impl->tensors.push_back(std::move(t));
    }
    if (s == 0) impl->metadata = std::move(parsed.metadata);
    impl->buffers.push_back(parsed.buffer);
    impl->data_offsets.push_back(static_cast<uint64_t>(parsed.buffer.data() - map->bytes().data()));
    impl->files.push_back(std::move(shard_path));
    impl->maps.push_back(std::move(map));
  }
  if (found != listed.size()) {
    // Report the first missing tensor in index order, so the message is stable.
    for (const auto& [tensor, file] : weight_map->object()) {
      if (!listed.at(tensor).found) {
        return Invalid(path, absl::StrCat("weight_map puts tensor ", Quoted(tensor), " in ",
                                          Quoted(file.string_value()), " but that file has no such tensor"));
      }
    }
  }
  return std::unique_ptr<SafetensorsModel>(new SafetensorsModel(std::move(impl)));
}

// ---- writer -------------------------------------------------------------------

namespace {

// "{" and the __metadata__ object with its comma-less end, or "{" alone.
std::string HeaderHead(const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::string head = "{";
  if (metadata.empty()) return head;
  head += "\"__metadata__\":{";
  for (size_t i = 0; i < metadata.size(); ++i) {
    if (i) head += ',';
    AppendJsonQuoted(metadata[i].first, &head);
    head += ':';
    AppendJsonQuoted(metadata[i].second, &head);
  }
  head += '}';
  return head;
}

// One tensor's entry: "NAME":{"dtype":...,"shape":[...],"data_offsets":[B,E]}.
void AppendTensorEntry(const SafetensorsTensorDecl& t, uint64_t begin, uint64_t end, std::string* out) {
  AppendJsonQuoted(t.name, out);
  absl::StrAppend(out, ":{\"dtype\":\"", AV(DTypeName(t.dtype)), "\",\"shape\":", ShapeText(t.shape),
                  ",\"data_offsets\":[", begin, ",", end, "]}");
}

// The header after its length: `head`, the entries (their offsets from
// `sizes`), "}" and spaces up to `header_size`, in parts of about 1 MiB.
absl::Status WriteHeaderEntries(AtomicFile& file, const std::string& head, bool first,
                                const std::vector<SafetensorsTensorDecl>& tensors, const std::vector<uint64_t>& sizes,
                                uint64_t header_size) {
  constexpr size_t kPartBytes = size_t{1} << 20;
  std::string part = head;
  part.reserve(std::max(part.size(), kPartBytes) + 4096);
  uint64_t written = 0, offset = 0;
  auto flush = [&]() -> absl::Status {
    written += part.size();
    absl::Status s = file.Write({reinterpret_cast<const uint8_t*>(part.data()), part.size()});
    part.clear();
    return s;
  };
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!first) part += ',';
    first = false;
    AppendTensorEntry(tensors[i], offset, offset + sizes[i], &part);
    offset += sizes[i];
    if (part.size() >= kPartBytes) BP_RETURN_IF_ERROR(flush());
  }
  part += '}';
  part.append(header_size - written - part.size(), ' ');
  return flush();
}

}  // namespace

struct SafetensorsWriter::Impl {
  std::unique_ptr<AtomicFile> file;
  std::vector<SafetensorsTensorDecl> tensors;
  std::vector<uint64_t> sizes;
  size_t next = 0;
  bool failed = false;
  std::unique_ptr<SideWorker> side;  // checks parts while they are written
};

SafetensorsWriter::SafetensorsWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SafetensorsWriter::~SafetensorsWriter() = default;

absl::StatusOr<std::vector<uint64_t>> CheckSafetensorsDecls(
    const std::string& path, const std::vector<std::pair<std::string, std::string>>& metadata,
    const std::vector<SafetensorsTensorDecl>& tensors) {
  std::vector<uint64_t> sizes;
  sizes.reserve(tensors.size());
  {
    std::unordered_map<std::string_view, int> seen;
    for (const auto& [k, v] : metadata) {
      if (!IsValidUtf8(k) || !IsValidUtf8(v)) {
        return Invalid(path, absl::StrCat("__metadata__ entry ", Quoted(k), " is not valid UTF-8"));
      }
      if (!seen.emplace(k, 0).second) {
        return Invalid(path, absl::StrCat("duplicate __metadata__ key ", Quoted(k)));
      }
    }
  }
  // A set of indices (common/name_index_set.h): 10 MB for 1M names, where a
  // flat set of views took 36 MB and a node per name 56 MB.
  NameIndexSet<SafetensorsTensorDecl> names = MakeNameIndexSet(tensors.data(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    if (!IsValidUtf8(t.name)) return TensorError(path, t.name, "name is not valid UTF-8");
    if (t.name == "__metadata__") return TensorError(path, t.name, "name is reserved");
    if (!names.insert(static_cast<uint32_t>(i)).second) return TensorError(path, t.name, "duplicate tensor name");
    int esize = DTypeSize(t.dtype);
    if (t.dtype == DType::kUnspecified || esize <= 0) {
      return TensorError(path, t.name, "dtype has no safetensors spelling");
    }
    if (t.shape.size() > kMaxSafetensorsDims) {
      return TensorError(path, t.name, absl::StrCat("shape has ", t.shape.size(),
                                                    " dims, more than the limit of ", kMaxSafetensorsDims));
    }
    std::optional<uint64_t> bytes = CheckedByteSize(t.shape, static_cast<uint64_t>(esize));
    if (!bytes) return TensorError(path, t.name, "byte size overflows 64 bits");
    sizes.push_back(*bytes);
  }
  return sizes;
}

absl::StatusOr<std::unique_ptr<SafetensorsWriter>> SafetensorsWriter::Create(
    const std::string& path, std::vector<std::pair<std::string, std::string>> metadata,
    std::vector<SafetensorsTensorDecl> tensors, const std::vector<std::string>& inputs, bool durable) {
  // Refuse anything a strict reader (ours, or HF's) would reject, before a
  // byte is written.
  BP_ASSIGN_OR_RETURN(std::vector<uint64_t> sizes, CheckSafetensorsDecls(path, metadata, tensors));

  // The header, spelled exactly as Hugging Face's writer (serde_json) does:
  // compact, __metadata__ first, tensors in data order, space-padded to a
  // multiple of 8 so the data that follows is 8-byte aligned. Measured
  // first and written in parts (1M entries are ~55 MB, which were held whole
  // next to the declarations).
  const std::string head = HeaderHead(metadata);
  uint64_t entries = 0, offset = 0;
  std::string entry;
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::optional<uint64_t> end = CheckedAdd(offset, sizes[i]);
    if (!end) return Invalid(path, "total data size overflows 64 bits");
    entry.clear();
    AppendTensorEntry(tensors[i], offset, *end, &entry);
    entries += entry.size() + ((i > 0 || !metadata.empty()) ? 1 : 0);  // and its comma
    offset = *end;
  }
  const uint64_t unpadded = head.size() + entries + 1;
  const uint64_t header_size = unpadded + (8 - unpadded % 8) % 8;
  if (header_size > kSafetensorsMaxHeaderBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(path, ": header would be ", header_size,
                                                     " bytes, over the safetensors limit of ",
                                                     kSafetensorsMaxHeaderBytes));
  }

  BP_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(path, inputs, durable));
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(header_size >> (8 * i));
  BP_RETURN_IF_ERROR(file->Write({len, 8}));
  BP_RETURN_IF_ERROR(WriteHeaderEntries(*file, head, metadata.empty(), tensors, sizes, header_size));

  auto impl = std::make_unique<Impl>();
  impl->file = std::move(file);
  impl->tensors = std::move(tensors);
  impl->sizes = std::move(sizes);
  return std::unique_ptr<SafetensorsWriter>(new SafetensorsWriter(std::move(impl)));
}

absl::Status SafetensorsWriter::WriteNext(absl::Span<const uint8_t> bytes) {
  SpanPieces pieces(bytes);
  return WriteNext(pieces);
}

absl::Status SafetensorsWriter::WriteNext(PieceSource& pieces) { return WritePieces(pieces, nullptr); }

absl::Status SafetensorsWriter::WriteNextBehind(std::shared_ptr<PieceSource> pieces) {
  PieceSource& src = *pieces;
  return WritePieces(src, std::move(pieces));
}

absl::Status SafetensorsWriter::WritePieces(PieceSource& pieces, std::shared_ptr<PieceSource> behind) {
  Impl& w = *impl_;
  const std::string& path = w.file->path();
  if (w.failed) return absl::FailedPreconditionError(absl::StrCat(path, ": an earlier write failed"));
  if (w.next >= w.tensors.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": all ", w.tensors.size(), " declared tensors are already written"));
  }
  const auto& t = w.tensors[w.next];
  if (pieces.size() != w.sizes[w.next]) {
    return TensorError(path, t.name,
                       absl::StrCat("got ", pieces.size(), " bytes but ", AV(DTypeName(t.dtype)), " ",
                                    ShapeText(t.shape), " needs ", w.sizes[w.next]));
  }
  // Parts are checked (source checksums) while others are written; a
  // failure leaves the writer failed, so Finish never commits the file.
  absl::Status s = AppendPieces(*w.file, pieces, std::move(behind), w.side);
  if (!s.ok()) {
    w.failed = true;
    // A source's error gets the tensor's name; a write error names the file
    // already, and written behind it may be an earlier tensor's.
    const std::string message(s.message());
    if (s.code() == absl::StatusCode::kInternal && message.find(path) == std::string::npos) {
      return TensorError(path, t.name, message);
    }
    return s;
  }
  ++w.next;
  return absl::OkStatus();
}

absl::StatusOr<AtomicFile*> SafetensorsWriter::Seal() {
  Impl& w = *impl_;
  const std::string& path = w.file->path();
  if (w.failed) return absl::FailedPreconditionError(absl::StrCat(path, ": an earlier write failed"));
  if (w.next != w.tensors.size()) {
    return TensorError(path, w.tensors[w.next].name,
                       absl::StrCat("not written (", w.next, " of ", w.tensors.size(),
                                    " tensors were)"));
  }
  absl::Status s = w.file->Seal();
  if (!s.ok()) {
    w.failed = true;
    return s;
  }
  return w.file.get();
}

absl::Status SafetensorsWriter::Finish() {
  BP_ASSIGN_OR_RETURN(AtomicFile * file, Seal());
  absl::Status s = file->Publish();
  if (!s.ok()) impl_->failed = true;
  return s;
}

}  // namespace boltpack::io
