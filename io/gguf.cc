#include "io/gguf.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "boltpack/codec_registry.h"
#include "common/checked_math.h"
#include "common/escape.h"
#include "common/name_index_set.h"
#include "common/piece_copy.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "common/limits.h"
#include "common/atomic_file.h"
#include "io/gguf_kv_scan.h"
#include "io/json.h"
#include "common/mapped_file.h"

namespace boltpack::io {
namespace {

// Names in messages are quoted, escaped (common/escape.h) and cut short.
std::string Quoted(std::string_view s) { return QuoteForDisplay(s, 200); }

// GGUF value type ids (enum gguf_type).
enum GgufType : int32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

ValueType ToValueType(int32_t t) {
  switch (t) {
    case kU8: return ValueType::kUint8;
    case kI8: return ValueType::kInt8;
    case kU16: return ValueType::kUint16;
    case kI16: return ValueType::kInt16;
    case kU32: return ValueType::kUint32;
    case kI32: return ValueType::kInt32;
    case kF32: return ValueType::kFloat32;
    case kBool: return ValueType::kBool;
    case kString: return ValueType::kString;
    case kArray: return ValueType::kArray;
    case kU64: return ValueType::kUint64;
    case kI64: return ValueType::kInt64;
    case kF64: return ValueType::kFloat64;
    default: return ValueType::kUnspecified;
  }
}

// Fixed byte size of a scalar GGUF type; 0 for string/array.
uint64_t ScalarSize(int32_t t) {
  switch (t) {
    case kU8: case kI8: case kBool: return 1;
    case kU16: case kI16: return 2;
    case kU32: case kI32: case kF32: return 4;
    case kU64: case kI64: case kF64: return 8;
    default: return 0;
  }
}

// Fewest bytes one element of this type takes (for count caps).
uint64_t MinSize(int32_t t) {
  if (t == kString) return 8;
  if (t == kArray) return 12;
  return ScalarSize(t);
}

// All metadata array elements a file may hold, in total: the container's
// reader limit, so that what imports also opens as a .bolt (arrays are kept
// packed, each element about its bytes in the file).
constexpr uint64_t kMaxMetadataElements = format::kMaxMetadataArrayElements;

class Cursor {
 public:
  Cursor(absl::Span<const uint8_t> b, const std::string& file) : b_(b), file_(file) {}
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return b_.size() - pos_; }
  const std::string& file() const { return file_; }

  absl::Status Fail(std::string_view what) const {
    return absl::InvalidArgumentError(StrCat(file_, ": ", what));
  }
  // `what` names the field for messages; a callable is only called on failure.
  template <typename T, typename W>
  absl::Status Read(T* v, W&& what) {
    if (left() < sizeof(T)) {
      return Fail(StrCat("truncated at byte ", pos_, " reading ", Text(what), " (", sizeof(T), " bytes needed, ",
                         left(), " left)"));
    }
    std::memcpy(v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return absl::OkStatus();
  }
  template <typename W>
  absl::Status ReadBytes(uint64_t n, std::string* out, W&& what) {
    if (n > left()) {
      return Fail(StrCat("truncated at byte ", pos_, " reading ", Text(what), " (", n, " bytes needed, ", left(),
                         " left)"));
    }
    out->assign(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return absl::OkStatus();
  }
  // Steps over one well-formed string, adding its length to `*total`; false
  // where ReadString would fail (it then reports why).
  bool SkipString(uint64_t* total) {
    uint64_t n = 0;
    if (left() < sizeof n) return false;
    std::memcpy(&n, b_.data() + pos_, sizeof n);
    if (n > kGgufMaxStringBytes || n > left() - sizeof n) return false;
    pos_ += sizeof n + n;
    *total += n;
    return true;
  }
  // A string the caller views in the file's bytes (tensor names: a model of
  // 1M tensors holds no copy of them).
  template <typename W>
  absl::Status ReadView(std::string_view* s, W&& what) {
    uint64_t n = 0;
    BP_RETURN_IF_ERROR(Read(&n, what));
    if (n > kGgufMaxStringBytes) {
      // [G-1.4]
      return Fail(StrCat(Text(what), " at byte ", pos_ - 8, " claims ", n, " bytes (limit 1 GiB)"));
    }
    if (n > left()) {
      // [G-1.4]
      return Fail(StrCat(Text(what), " at byte ", pos_ - 8, " claims ", n, " bytes, only ", left(),
                         " left in the file"));
    }
    *s = std::string_view(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return absl::OkStatus();
  }
  // The same string, copied (metadata keys and values outlive the file).
  template <typename W>
  absl::Status ReadString(std::string* s, W&& what) {
    std::string_view view;
    BP_RETURN_IF_ERROR(ReadView(&view, what));
    s->assign(view);
    return absl::OkStatus();
  }

 private:
  static std::string Text(std::string_view w) { return std::string(w); }
  template <typename F>
    requires std::is_invocable_v<F>
  static std::string Text(F&& f) {
    return f();
  }
  absl::Span<const uint8_t> b_;
  const std::string& file_;
  uint64_t pos_ = 0;
};

using TensorNameSet = NameIndexSet<GgufTensor>;


struct ParsedFile {
  std::string path;
  std::unique_ptr<MappedFile> map;
  absl::Span<const uint8_t> bytes;
  uint32_t version = 0;
  uint32_t alignment = kGgufDefaultAlignment;
  Metadata kv;
  std::vector<GgufTensor> tensors;
  uint64_t data_offset = 0;
};

absl::Status ReadArray(Cursor& c, int32_t et, uint64_t n, const std::string& key, int depth, uint64_t* budget,
                       MetaValue* out);

absl::Status ReadValue(Cursor& c, int32_t type, const std::string& key, int depth, uint64_t* budget,
                       MetaValue* out) {
  auto where = [&] { return StrCat("key ", Quoted(key)); };
  out->type = ToValueType(type);
  switch (type) {
    case kU8: { uint8_t v = 0; BP_RETURN_IF_ERROR(c.Read(&v, [&] { return where(); })); out->u = v; return absl::OkStatus(); }
    case kU16: { uint16_t v = 0; BP_RETURN_IF_ERROR(c.Read(&v, [&] { return where(); })); out->u = v; return absl::OkStatus(); }
    case kU32: { uint32_t v = 0; BP_RETURN_IF_ERROR(c.Read(&v, [&] { return where(); })); out->u = v; return absl::OkStatus(); }
    case kU64: { uint64_t v = 0; BP_RETURN_IF_ERROR(c.Read(&v, [&] { return where(); })); out->u = v; return absl::OkStatus(); }
    case kI8: { int8_t v = 0; BP_RETURN_IF_ERROR(c.Read(&v, [&] { return where(); })); out->i = v; return absl::OkStatus(); }
    case kI16: { int16_t v = 0; BP_RETURN_IF_ERROR(c.Read(&v, [&] { return where(); })); out->i = v; return absl::OkStatus(); }
    case kI32: { int32_t v = 0; BP_RETURN_IF_ERROR(c.Read(&v, [&] { return where(); })); out->i = v; return absl::OkStatus(); }
    case kI64: { int64_t v = 0; BP_RETURN_IF_ERROR(c.Read(&v, [&] { return where(); })); out->i = v; return absl::OkStatus(); }
    case kF32: { float v = 0; BP_RETURN_IF_ERROR(c.Read(&v, [&] { return where(); })); out->f32 = v; return absl::OkStatus(); }
    case kF64: { double v = 0; BP_RETURN_IF_ERROR(c.Read(&v, [&] { return where(); })); out->f64 = v; return absl::OkStatus(); }
    case kBool: {
      uint8_t v = 0;
      BP_RETURN_IF_ERROR(c.Read(&v, [&] { return where(); }));
      // [G-1.10]
      if (v > 1) return c.Fail(StrCat(where(), ": bool byte ", static_cast<int>(v), " at byte ", c.pos() - 1, " is not 0 or 1"));
      out->b = v != 0;
      return absl::OkStatus();
    }
    case kString: return c.ReadString(&out->s, [&] { return StrCat(where(), ": string length"); });
    case kArray: {
      if (depth >= static_cast<int>(format::kMaxArrayDepth)) {
        // [G-1.8] [C-9.14]
        return c.Fail(StrCat(where(), ": arrays nested deeper than ", format::kMaxArrayDepth, " levels"));
      }
      int32_t et = 0;
      uint64_t n = 0;
      BP_RETURN_IF_ERROR(c.Read(&et, [&] { return StrCat(where(), ": array element type"); }));
      // [G-1.7]
      if (et < 0 || et > kF64) return c.Fail(StrCat(where(), ": invalid array element type ", et));
      BP_RETURN_IF_ERROR(c.Read(&n, [&] { return StrCat(where(), ": array length"); }));
      if (n > kGgufMaxArrayElements) {
        // [G-1.4]
        return c.Fail(StrCat(where(), ": array of ", n, " elements (limit 2^30)"));
      }
      if (n > c.left() / MinSize(et)) {
        // [G-1.4]
        return c.Fail(StrCat(where(), ": array of ", n, " elements of type ", et, " cannot fit in the ", c.left(),
                             " bytes left"));
      }
      if (n > *budget) {
        // [G-1.9]
        return absl::ResourceExhaustedError(StrCat(c.file(), ": ", where(), ": array of ", n, " elements: more than ",
                                                   kMaxMetadataElements, " metadata array elements in the file"));
      }
      *budget -= n;
      return ReadArray(c, et, n, key, depth, budget, out);
    }
    // [G-1.7]
    default: return c.Fail(StrCat(where(), ": invalid value type ", type));
  }
}

// Numeric and bool elements are taken as they lie in the file (GGUF is
// little-endian, as the packed form), strings into one blob sized by a first
// pass over their lengths, so an array costs about its bytes.
absl::Status ReadPackedArray(Cursor& c, int32_t et, uint64_t n, const std::string& key, MetaValue* out) {
  const uint64_t width = ScalarSize(et);
  const uint64_t start = c.pos();
  std::string bytes;
  BP_RETURN_IF_ERROR(c.ReadBytes(n * width, &bytes, [&] { return StrCat("key ", Quoted(key)); }));
  if (et == kBool) {
    for (size_t k = 0; k < bytes.size(); ++k) {
      if (static_cast<uint8_t>(bytes[k]) > 1) {
        // [G-1.10]
        return c.Fail(StrCat("key ", Quoted(key), ": bool byte ", static_cast<int>(static_cast<uint8_t>(bytes[k])),
                             " at byte ", start + k, " is not 0 or 1"));
      }
    }
  }
  *out = MetaValue::PackedArray(ToValueType(et), std::move(bytes));
  return absl::OkStatus();
}

absl::Status ReadStringArray(Cursor& c, uint64_t n, const std::string& key, MetaValue* out) {
  auto what = [&] { return StrCat("key ", Quoted(key), ": string length"); };
  uint64_t total = 0;
  Cursor probe = c;
  for (uint64_t k = 0; k < n && probe.SkipString(&total); ++k) {
  }
  MetaValue::StringArrayBuilder strings;
  strings.Reserve(n, total);
  std::string s;
  for (uint64_t k = 0; k < n; ++k) {
    BP_RETURN_IF_ERROR(c.ReadString(&s, what));
    strings.Add(s);
  }
  *out = strings.Build();
  return absl::OkStatus();
}

absl::Status ReadArray(Cursor& c, int32_t et, uint64_t n, const std::string& key, int depth, uint64_t* budget,
                       MetaValue* out) {
  if (ScalarSize(et) > 0) return ReadPackedArray(c, et, n, key, out);
  if (et == kString) return ReadStringArray(c, n, key, out);
  // Arrays of arrays: each child encoded into one buffer as it is read.
  MetaValue::NestedArrayBuilder children;
  children.Reserve(n);
  for (uint64_t k = 0; k < n; ++k) {
    MetaValue child;
    BP_RETURN_IF_ERROR(ReadValue(c, et, key, depth + 1, budget, &child));
    children.Add(child);
  }
  *out = children.Build();
  return absl::OkStatus();
}

// The magic, version and the two counts, checked against the file's size
// and the container's limits.
absl::Status ReadGgufHeader(Cursor& c, ParsedFile* f, int64_t* n_tensors_out, int64_t* n_kv_out) {
  char magic[4];
  // [G-1.2]
  if (f->bytes.size() < 4) return c.Fail(StrCat("not a GGUF file (", f->bytes.size(), " bytes)"));
  std::memcpy(magic, f->bytes.data(), 4);
  if (std::memcmp(magic, "GGUF", 4) != 0) {
    // [G-1.2]
    return c.Fail("not a GGUF file (the first 4 bytes are not \"GGUF\")");
  }
  uint32_t skip;
  BP_RETURN_IF_ERROR(c.Read(&skip, "magic"));
  BP_RETURN_IF_ERROR(c.Read(&f->version, "version"));
  if ((f->version & 0xFFFF) == 0) {
    // [G-1.2]
    return c.Fail(StrCat("GGUF version ", f->version, " looks byte-swapped (a big-endian file?); only little-endian is read"));
  }
  // [G-1.2]
  if (f->version == 1) return c.Fail("GGUF version 1 is no longer supported (ggml reads only 2 and 3)");
  // [G-1.2]
  if (f->version < 2 || f->version > 3) return c.Fail(StrCat("unsupported GGUF version ", f->version, " (2 and 3 are read)"));
  int64_t n_tensors = 0, n_kv = 0;
  BP_RETURN_IF_ERROR(c.Read(&n_tensors, "tensor count"));
  BP_RETURN_IF_ERROR(c.Read(&n_kv, "key/value count"));
  // [G-1.3]
  if (n_tensors < 0) return c.Fail(StrCat("negative tensor count ", n_tensors));
  // [G-1.3]
  if (n_kv < 0) return c.Fail(StrCat("negative key/value count ", n_kv));
  // Each key/value takes at least 13 bytes, each tensor info 24.
  if (static_cast<uint64_t>(n_kv) > c.left() / 13) {
    // [G-1.3]
    return c.Fail(StrCat("key/value count ", n_kv, " cannot fit in a file of ", f->bytes.size(), " bytes"));
  }
  if (static_cast<uint64_t>(n_tensors) > c.left() / 24) {
    // [G-1.3]
    return c.Fail(StrCat("tensor count ", n_tensors, " cannot fit in a file of ", f->bytes.size(), " bytes"));
  }
  if (static_cast<uint64_t>(n_tensors) > format::kMaxTensors) {
    // [C-9.3]
    return absl::ResourceExhaustedError(StrCat(f->path, ": ", n_tensors, " tensors (limit ", format::kMaxTensors, ")"));
  }
  // The container's limits (GGUF has none of its own), so that what opens
  // here also converts.
  if (static_cast<uint64_t>(n_kv) > format::kMaxMetadataEntries) {
    // [C-9.4]
    return absl::ResourceExhaustedError(
        StrCat(f->path, ": ", n_kv, " key/values (limit ", format::kMaxMetadataEntries, ")"));
  }
  *n_tensors_out = n_tensors;
  *n_kv_out = n_kv;
  return absl::OkStatus();
}

// The key/values into f->kv; `have_alignment`: general.alignment was given
// (and taken into f->alignment).
absl::Status ReadGgufKeyValues(Cursor& c, ParsedFile* f, int64_t n_kv, bool* have_alignment) {
  // Counted before any value is built, so a file past the limit costs one
  // pass over its key/values, not a MetaValue per element.
  if (GgufArrayCount count = CountGgufArrayElements(f->bytes.subspan(c.pos()), n_kv, kMaxMetadataElements);
      count.elements > kMaxMetadataElements) {
    // [G-1.9] [C-9.19]
    return absl::ResourceExhaustedError(StrCat(f->path, ": key ", Quoted(count.key), ": more than ",
                                               kMaxMetadataElements, " metadata array elements in the file"));
  }
  uint64_t budget = kMaxMetadataElements;
  absl::flat_hash_set<std::string> keys;
  keys.reserve(n_kv);
  f->kv.reserve(n_kv);
  for (int64_t i = 0; i < n_kv; ++i) {
    std::string key;
    BP_RETURN_IF_ERROR(c.ReadString(&key, [&] { return StrCat("key #", i, " length"); }));
    // [G-1.5]
    if (key.empty()) return c.Fail(StrCat("key #", i, " is empty"));
    if (key.size() > format::kMaxNameBytes) {
      // [G-1.6]
      return c.Fail(StrCat("key ", Quoted(key), " is ", key.size(), " bytes (bolt-pack keys are at most 4096)"));
    }
    if (key.find('\0') != std::string::npos || !IsValidUtf8(key)) {
      // [G-1.6]
      return c.Fail(StrCat("key #", i, " ", Quoted(key), " is not UTF-8 text without NUL"));
    }
    // [G-1.5]
    if (!keys.insert(key).second) return c.Fail(StrCat("duplicate key ", Quoted(key)));
    int32_t type = 0;
    BP_RETURN_IF_ERROR(c.Read(&type, [&] { return StrCat("key ", Quoted(key), ": value type"); }));
    // [G-1.7]
    if (type < 0 || type > kF64) return c.Fail(StrCat("key ", Quoted(key), ": invalid value type ", type));
    MetaValue v;
    BP_RETURN_IF_ERROR(ReadValue(c, type, key, 0, &budget, &v));
    if (key == "general.alignment") {
      if (v.type != ValueType::kUint32) {
        // [G-1.11]
        return c.Fail(StrCat("key \"general.alignment\" has type ", ValueTypeName(v.type), ", must be UINT32"));
      }
      if (!IsPowerOfTwo(v.u) || v.u > kGgufMaxAlignment) {
        // [G-1.11]
        return c.Fail(StrCat("key \"general.alignment\" is ", v.u, ", must be a power of two <= ", kGgufMaxAlignment));
      }
      f->alignment = static_cast<uint32_t>(v.u);
      *have_alignment = true;
    }
    f->kv.emplace_back(std::move(key), std::move(v));
  }
  return absl::OkStatus();
}

// Tensor info #i: name (unique in `names`), dimensions, type, offset.
absl::Status ReadGgufTensorInfo(Cursor& c, int64_t i, GgufTensor& t, TensorNameSet& names) {
  BP_RETURN_IF_ERROR(c.ReadView(&t.name, [&] { return StrCat("tensor #", i, " name length"); }));
  auto tw = [&] { return StrCat("tensor ", Quoted(t.name)); };
  // [G-1.12]
  if (t.name.empty()) return c.Fail(StrCat("tensor #", i, " has an empty name"));
  if (t.name.size() > kGgufMaxNameBytes) {
    // [G-1.12]
    return c.Fail(StrCat(tw(), ": name is ", t.name.size(), " bytes (ggml allows at most 63)"));
  }
  // [G-1.12]
  if (t.name.find('\0') != std::string::npos) return c.Fail(StrCat(tw(), ": name holds a NUL byte"));
  // [G-1.12]
  if (!names.insert(static_cast<uint32_t>(i)).second) return c.Fail(StrCat("duplicate tensor name ", Quoted(t.name)));
  uint32_t n_dims = 0;
  BP_RETURN_IF_ERROR(c.Read(&n_dims, [&] { return StrCat(tw(), ": dimension count"); }));
  // [G-1.13]
  if (n_dims > kGgufMaxDims) return c.Fail(StrCat(tw(), ": ", n_dims, " dimensions (ggml allows at most 4)"));
  t.ne.resize(n_dims);
  for (uint32_t d = 0; d < n_dims; ++d) {
    int64_t ne = 0;
    BP_RETURN_IF_ERROR(c.Read(&ne, [&] { return StrCat(tw(), ": ne[", d, "]"); }));
    // [G-1.13]
    if (ne < 0) return c.Fail(StrCat(tw(), ": ne[", d, "] is negative (", ne, ")"));
    t.ne[d] = static_cast<uint64_t>(ne);
  }
  auto elements = CheckedProduct(t.ne);
  if (!elements || *elements >= static_cast<uint64_t>(INT64_MAX)) {
    // [G-1.13]
    return c.Fail(StrCat(tw(), ": element count overflows int64"));
  }
  int32_t type = 0;
  BP_RETURN_IF_ERROR(c.Read(&type, [&] { return StrCat(tw(), ": type"); }));
  t.type = GgmlTypeById(type);
  if (t.type == nullptr) {
    // [G-1.14]
    return c.Fail(StrCat(tw(), ": unknown or removed ggml type ", type));
  }
  auto nbytes = GgmlTensorBytes(*t.type, t.ne);
  // [G-1.15]
  if (!nbytes.ok()) return c.Fail(StrCat(tw(), ": ", nbytes.status().message()));
  t.nbytes = *nbytes;
  BP_RETURN_IF_ERROR(c.Read(&t.offset, [&] { return StrCat(tw(), ": offset"); }));
  return absl::OkStatus();
}

// Offsets: multiples of the alignment, and (ggml's rule) each the padded
// sum of the tensors before it, so tensors are contiguous in info order.
absl::Status CheckGgufOffsets(Cursor& c, const ParsedFile& f, bool have_alignment) {
  const uint64_t align = f.alignment;
  uint64_t expected = 0;
  for (auto& t : f.tensors) {
    if (t.offset % align != 0) {
      // [G-1.16]
      return c.Fail(StrCat("tensor ", Quoted(t.name), " has offset ", t.offset, ", not a multiple of the alignment ",
                           align, have_alignment ? " (general.alignment)" : " (the default)"));
    }
    if (t.offset != expected) {
      // [G-1.16]
      return c.Fail(StrCat("tensor ", Quoted(t.name), " has offset ", t.offset, ", expected ", expected,
                           " (tensors must follow each other in info order, each padded to ", align, " bytes)"));
    }
    auto padded = AlignUp(t.nbytes, align);
    auto next = padded ? CheckedAdd(expected, *padded) : std::nullopt;
    // [G-1.16]
    if (!next) return c.Fail(StrCat("tensor ", Quoted(t.name), ": data section size overflows"));
    expected = *next;
  }
  return absl::OkStatus();
}

// The data section after the infos, and each tensor's bytes inside the file.
absl::Status PlaceGgufData(Cursor& c, ParsedFile* f) {
  const uint64_t align = f->alignment;
  uint64_t end = c.pos();
  if (f->tensors.empty()) {
    // Vocab-only files end right after the key/values, unpadded.
    f->data_offset = end;
    return absl::OkStatus();
  }
  auto data = AlignUp(end, align);
  if (!data || *data > f->bytes.size()) {
    // [G-1.17]
    return c.Fail(StrCat("data section would start at byte ", data ? *data : end, ", past the end of the file (",
                         f->bytes.size(), " bytes)"));
  }
  f->data_offset = *data;
  for (auto& t : f->tensors) {
    auto begin = CheckedAdd(*data, t.offset);
    auto stop = begin ? CheckedAdd(*begin, t.nbytes) : std::nullopt;
    if (!stop || *stop > f->bytes.size()) {
      // [G-1.17]
      return c.Fail(StrCat("tensor ", Quoted(t.name), ": bytes [", begin ? *begin : 0, ", +", t.nbytes,
                           ") run past the end of the file (", f->bytes.size(), " bytes)"));
    }
    t.file_offset = *begin;
  }
  return absl::OkStatus();
}

absl::Status ParseGguf(ParsedFile* f) {
  Cursor c(f->bytes, f->path);
  int64_t n_tensors = 0, n_kv = 0;
  BP_RETURN_IF_ERROR(ReadGgufHeader(c, f, &n_tensors, &n_kv));
  bool have_alignment = false;
  BP_RETURN_IF_ERROR(ReadGgufKeyValues(c, f, n_kv, &have_alignment));
  f->tensors.resize(n_tensors);
  TensorNameSet names = MakeNameIndexSet(f->tensors.data(), n_tensors);
  for (int64_t i = 0; i < n_tensors; ++i) BP_RETURN_IF_ERROR(ReadGgufTensorInfo(c, i, f->tensors[i], names));
  BP_RETURN_IF_ERROR(CheckGgufOffsets(c, *f, have_alignment));
  return PlaceGgufData(c, f);
}

const MetaValue* FindKey(const Metadata& kv, std::string_view key) {
  for (const auto& [k, v] : kv) {
    if (k == key) return &v;
  }
  return nullptr;
}

// split.* keys: nullopt count when absent.
struct SplitKeys {
  std::optional<uint64_t> no, count;
  std::optional<int64_t> tensors_count;
};

absl::StatusOr<SplitKeys> ReadSplitKeys(const ParsedFile& f) {
  SplitKeys s;
  auto check = [&](std::string_view key, ValueType want) -> absl::StatusOr<const MetaValue*> {
    const MetaValue* v = FindKey(f.kv, key);
    if (v != nullptr && v->type != want) {
      return absl::InvalidArgumentError(StrCat(f.path, ": key ", Quoted(key), " has type ", ValueTypeName(v->type),
                                               ", must be ", ValueTypeName(want)));
    }
    return v;
  };
  BP_ASSIGN_OR_RETURN(const MetaValue* no, check("split.no", ValueType::kUint16));
  BP_ASSIGN_OR_RETURN(const MetaValue* count, check("split.count", ValueType::kUint16));
  BP_ASSIGN_OR_RETURN(const MetaValue* tc, check("split.tensors.count", ValueType::kInt32));
  if (no) s.no = no->u;
  if (count) s.count = count->u;
  if (tc) s.tensors_count = tc->i;
  return s;
}

}  // namespace

DType GgmlTypeDType(const GgmlType& type) {
  switch (type.id) {
    case 1: return DType::kF16;
    case 30: return DType::kBF16;
    case 24: return DType::kI8;
    case 25: return DType::kI16;
    case 26: return DType::kI32;
    case 27: return DType::kI64;
    case 28: return DType::kF64;
    default: return DType::kF32;
  }
}

const GgmlType* GgmlTypeForCodec(std::string_view codec_id, DType dtype, const CodecParams& params) {
  const Codec* codec = FindCodec(codec_id);
  if (codec == nullptr) return nullptr;
  const GgmlMapping mapping = codec->Ggml(dtype, params);
  if (mapping.how != GgmlExport::kStoredBytes) return nullptr;
  return GgmlTypeById(mapping.type);
}

int GgufValueTypeId(ValueType type) {
  switch (type) {
    case ValueType::kUint8: return kU8;
    case ValueType::kInt8: return kI8;
    case ValueType::kUint16: return kU16;
    case ValueType::kInt16: return kI16;
    case ValueType::kUint32: return kU32;
    case ValueType::kInt32: return kI32;
    case ValueType::kFloat32: return kF32;
    case ValueType::kBool: return kBool;
    case ValueType::kString: return kString;
    case ValueType::kArray: return kArray;
    case ValueType::kUint64: return kU64;
    case ValueType::kInt64: return kI64;
    case ValueType::kFloat64: return kF64;
    default: return -1;
  }
}

std::string GgufSplitPath(std::string_view prefix, int index, int count) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "-%05d-of-%05d.gguf", index + 1, count);
  return StrCat(prefix, buf);
}

// ---- reader -----------------------------------------------------------------

struct GgufModel::Impl {
  std::vector<ParsedFile> files;
  std::vector<std::string> paths;
  std::vector<GgufTensor> tensors;
  // Indices of `tensors` by name, built by the first FindTensor (the
  // vector no longer moves then): inspect, verify and convert never look a
  // name up (1M tensors' index is 10 MB; 52 MB as a map of views).
  mutable std::once_flag index_once;
  mutable TensorNameSet index;

  // Moved, not copied: the model keeps one list of its tensors.
  void AddTensors(size_t shard) {
    ParsedFile& f = files[shard];
    for (auto& t : f.tensors) t.shard = static_cast<uint32_t>(shard);
    if (tensors.empty()) {
      tensors = std::move(f.tensors);
    } else {
      tensors.reserve(tensors.size() + f.tensors.size());
      for (auto& t : f.tensors) tensors.push_back(std::move(t));
    }
    f.tensors = {};
  }
  // Names are unique within a file (ParseGguf checks); across shards here,
  // through a set that lives only as long as the check.
  absl::Status IndexTensors() const {
    if (files.size() < 2) return absl::OkStatus();
    TensorNameSet names = MakeNameIndexSet(tensors.data(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (!names.insert(static_cast<uint32_t>(i)).second) {
        return absl::InvalidArgumentError(StrCat(files[tensors[i].shard].path, ": tensor ", Quoted(tensors[i].name),
                                                 " also exists in an earlier shard"));
      }
    }
    return absl::OkStatus();
  }
};

GgufModel::GgufModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GgufModel::~GgufModel() = default;

absl::StatusOr<std::unique_ptr<GgufModel>> GgufModel::OpenBuffer(absl::Span<const uint8_t> bytes,
                                                                 std::string display_name) {
  auto impl = std::make_unique<Impl>();
  ParsedFile f;
  f.path = std::move(display_name);
  f.bytes = bytes;
  BP_RETURN_IF_ERROR(ParseGguf(&f));
  BP_RETURN_IF_ERROR(ReadSplitKeys(f).status());
  impl->paths.push_back(f.path);
  impl->files.push_back(std::move(f));
  impl->AddTensors(0);
  BP_RETURN_IF_ERROR(impl->IndexTensors());
  return std::unique_ptr<GgufModel>(new GgufModel(std::move(impl)));
}

absl::StatusOr<std::unique_ptr<GgufModel>> GgufModel::Open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  auto open_one = [&](const std::string& p) -> absl::StatusOr<ParsedFile> {
    ParsedFile f;
    f.path = p;
    BP_ASSIGN_OR_RETURN(f.map, MappedFile::Open(p));
    f.bytes = f.map->bytes();
    BP_RETURN_IF_ERROR(ParseGguf(&f));
    // The header has been read: the key/values are copied into `kv` (a
    // tokenizer's tens of megabytes are not read again) and the names, views
    // of the file, are read again from the page cache if used (1M tensors'
    // 39 MB stayed resident while the tensor lists were built).
    ReleaseMappedPages(f.bytes.subspan(0, f.data_offset));
    return f;
  };
  BP_ASSIGN_OR_RETURN(ParsedFile first, open_one(path));
  BP_ASSIGN_OR_RETURN(SplitKeys split, ReadSplitKeys(first));
  impl->paths.push_back(path);
  impl->files.push_back(std::move(first));
  impl->AddTensors(0);
  uint64_t count = split.count.value_or(0);
  if (count > 1) {
    uint64_t no = split.no.value_or(0);
    if (no != 0) {
      // [G-1.18]
      return absl::InvalidArgumentError(StrCat(path, ": this is shard ", no + 1, " of ", count,
                                               " of a split model; open the first shard (-00001-of-...)"));
    }
    std::string suffix = GgufSplitPath("", 0, static_cast<int>(count));
    if (path.size() <= suffix.size() || path.compare(path.size() - suffix.size(), suffix.size(), suffix) != 0) {
      // [G-1.18]
      return absl::InvalidArgumentError(StrCat(path, ": split.count is ", count, " but the file name does not end in \"",
                                               suffix, "\", so the other shards cannot be found"));
    }
    std::string prefix = path.substr(0, path.size() - suffix.size());
    for (uint64_t k = 1; k < count; ++k) {
      std::string p = GgufSplitPath(prefix, static_cast<int>(k), static_cast<int>(count));
      auto f = open_one(p);
      if (!f.ok()) {
        if (f.status().code() == absl::StatusCode::kNotFound) {
          // [G-1.18]
          return absl::NotFoundError(StrCat(path, ": shard ", k + 1, " of ", count, " is missing: ", p));
        }
        return f.status();
      }
      BP_ASSIGN_OR_RETURN(SplitKeys s, ReadSplitKeys(*f));
      if (s.no != k || s.count != count) {
        // [G-1.18]
        return absl::InvalidArgumentError(StrCat(p, ": split.no/split.count are ", s.no ? StrCat(*s.no) : "absent", "/",
                                                 s.count ? StrCat(*s.count) : "absent", ", expected ", k, "/", count));
      }
      impl->paths.push_back(p);
      impl->files.push_back(std::move(*f));
      impl->AddTensors(k);
    }
  }
  BP_RETURN_IF_ERROR(impl->IndexTensors());
  if (split.tensors_count && count > 1 && static_cast<uint64_t>(*split.tensors_count) != impl->tensors.size()) {
    // [G-1.18]
    return absl::InvalidArgumentError(StrCat(path, ": split.tensors.count is ", *split.tensors_count, " but the ",
                                             count, " shards hold ", impl->tensors.size(), " tensors"));
  }
  return std::unique_ptr<GgufModel>(new GgufModel(std::move(impl)));
}

uint32_t GgufModel::version() const { return impl_->files[0].version; }
uint32_t GgufModel::alignment() const { return impl_->files[0].alignment; }
const Metadata& GgufModel::metadata() const { return impl_->files[0].kv; }
Metadata GgufModel::ReleaseMetadata() { return std::exchange(impl_->files[0].kv, {}); }
const std::vector<GgufTensor>& GgufModel::tensors() const { return impl_->tensors; }
void GgufModel::ReleaseTensors() {
  std::call_once(impl_->index_once, [] {});  // no index of a list that is gone
  impl_->index = TensorNameSet();
  std::vector<GgufTensor>().swap(impl_->tensors);  // `= {}` would keep the capacity
}
void GgufModel::ReleaseHeaderPages() const {
  for (const auto& f : impl_->files) {
    if (f.map != nullptr) ReleaseMappedPages(f.bytes.subspan(0, f.data_offset));  // not a caller's buffer
  }
}
const std::vector<std::string>& GgufModel::files() const { return impl_->paths; }
uint64_t GgufModel::file_size(size_t shard) const { return impl_->files[shard].bytes.size(); }
uint64_t GgufModel::data_offset(size_t shard) const { return impl_->files[shard].data_offset; }
size_t GgufModel::shard_count() const { return impl_->files.size(); }

std::optional<size_t> GgufModel::FindTensor(std::string_view name) const {
  std::call_once(impl_->index_once, [this] {
    impl_->index = MakeNameIndexSet(impl_->tensors.data(), impl_->tensors.size());
    for (size_t i = 0; i < impl_->tensors.size(); ++i) impl_->index.insert(static_cast<uint32_t>(i));
  });
  auto it = impl_->index.find(name);
  if (it == impl_->index.end()) return std::nullopt;
  return *it;
}

absl::Span<const uint8_t> GgufModel::TensorBytes(size_t i) const {
  const GgufTensor& t = impl_->tensors[i];
  return impl_->files[t.shard].bytes.subspan(t.file_offset, t.nbytes);
}

// ---- writer -----------------------------------------------------------------

namespace {

// Takes the header's bytes so far and empties them (GgufWriter writes them
// out), so that the tensor infos of 1M tensors (39 MB) or a tokenizer's 64 MB
// of strings are never held whole.
using HeaderSink = std::function<absl::Status(std::vector<uint8_t>&)>;
constexpr size_t kHeaderPartBytes = size_t{1} << 20;

class Out {
 public:
  explicit Out(const HeaderSink* sink = nullptr) : sink_(sink) {}
  std::vector<uint8_t> b;
  // Bytes already given to the sink.
  uint64_t given() const { return given_; }
  // Gives the bytes so far to the sink (when there is one) once they pass
  // kHeaderPartBytes.
  absl::Status MaybeFlush() {
    if (sink_ == nullptr || b.size() < kHeaderPartBytes) return absl::OkStatus();
    given_ += b.size();
    return (*sink_)(b);
  }
  absl::Status Finish() {
    given_ += b.size();
    return sink_ != nullptr ? (*sink_)(b) : absl::OkStatus();
  }
  // `s` in parts of kHeaderPartBytes, each flushed as it passes.
  absl::Status PutLarge(std::string_view s) {
    for (size_t at = 0; at < s.size(); at += kHeaderPartBytes) {
      PutBytes(s.substr(at, kHeaderPartBytes));
      BP_RETURN_IF_ERROR(MaybeFlush());
    }
    return absl::OkStatus();
  }
  template <typename T>
  void Put(T v) {
    uint8_t tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));
    b.insert(b.end(), tmp, tmp + sizeof(T));
  }
  void PutString(std::string_view s) {
    Put<uint64_t>(s.size());
    PutBytes(s);
  }
  void PutBytes(std::string_view s) { b.insert(b.end(), s.begin(), s.end()); }

 private:
  const HeaderSink* sink_;
  uint64_t given_ = 0;
};

absl::Status PutValue(Out& o, const MetaValue& v, std::string_view file, std::string_view key, int depth) {
  auto fail = [&](std::string_view what) {
    return absl::InvalidArgumentError(StrCat(file, ": key ", Quoted(key), ": ", what));
  };
  switch (v.type) {
    case ValueType::kUint8: o.Put<uint8_t>(static_cast<uint8_t>(v.u)); break;
    case ValueType::kUint16: o.Put<uint16_t>(static_cast<uint16_t>(v.u)); break;
    case ValueType::kUint32: o.Put<uint32_t>(static_cast<uint32_t>(v.u)); break;
    case ValueType::kUint64: o.Put<uint64_t>(v.u); break;
    case ValueType::kInt8: o.Put<int8_t>(static_cast<int8_t>(v.i)); break;
    case ValueType::kInt16: o.Put<int16_t>(static_cast<int16_t>(v.i)); break;
    case ValueType::kInt32: o.Put<int32_t>(static_cast<int32_t>(v.i)); break;
    case ValueType::kInt64: o.Put<int64_t>(v.i); break;
    case ValueType::kFloat32: o.Put<float>(v.f32); break;
    case ValueType::kFloat64: o.Put<double>(v.f64); break;
    case ValueType::kBool: o.Put<uint8_t>(v.b ? 1 : 0); break;
    case ValueType::kString:
      if (v.s.size() > kGgufMaxStringBytes) return fail("string longer than 1 GiB");
      o.PutString(v.s);
      break;
    case ValueType::kArray: {
      if (depth >= static_cast<int>(format::kMaxArrayDepth)) return fail("arrays nested too deep");
      int et = GgufValueTypeId(v.element_type);
      if (et < 0) return fail("array element type has no GGUF type");
      const size_t n = v.array_size();
      if (n > kGgufMaxArrayElements) return fail("array of more than 2^30 elements");
      o.Put<int32_t>(et);
      o.Put<uint64_t>(n);
      if (ValueTypeWidth(v.element_type) > 0) {
        BP_RETURN_IF_ERROR(o.PutLarge(v.packed_bytes()));  // little-endian elements, as GGUF stores them
      } else if (v.element_type == ValueType::kString) {
        for (size_t k = 0; k < n; ++k) {
          if (v.string_element(k).size() > kGgufMaxStringBytes) return fail("string longer than 1 GiB");
          o.Put<uint64_t>(v.string_element(k).size());
          BP_RETURN_IF_ERROR(o.PutLarge(v.string_element(k)));
        }
      } else {
        for (size_t k = 0; k < n; ++k) {
          const MetaValue child = v.child(k);
          if (child.type != v.element_type) return fail("array element of another type than the array's");
          BP_RETURN_IF_ERROR(PutValue(o, child, file, key, depth + 1));
        }
      }
      break;
    }
    default: return fail("value type has no GGUF type");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<uint32_t> GgufAlignmentOf(std::string_view file, const Metadata& kv) {
  const MetaValue* a = FindKey(kv, "general.alignment");
  if (a == nullptr) return kGgufDefaultAlignment;
  if (a->type != ValueType::kUint32 || !IsPowerOfTwo(a->u) || a->u > kGgufMaxAlignment) {
    return absl::InvalidArgumentError(
        StrCat(file, ": key \"general.alignment\" must be a UINT32 power of two <= ", kGgufMaxAlignment));
  }
  return static_cast<uint32_t>(a->u);
}

namespace {

// EncodeGgufHeader, its bytes given to the sink of `o` (when it has one) as
// they pass kHeaderPartBytes and once at the end; left in `o` otherwise.
absl::Status EncodeGgufHeaderInto(Out& o, std::string_view file, const Metadata& kv,
                                  const std::vector<GgufTensorDecl>& tensors, uint32_t version, uint32_t alignment,
                                  bool pad_empty, bool streamed) {
  if (version != 2 && version != 3) {
    return absl::InvalidArgumentError(StrCat(file, ": GGUF version ", version, " cannot be written (2 or 3)"));
  }
  BP_ASSIGN_OR_RETURN(uint32_t key_align, GgufAlignmentOf(file, kv));
  if (alignment == 0) alignment = key_align;
  if (!IsPowerOfTwo(alignment) || alignment != key_align) {
    return absl::InvalidArgumentError(StrCat(file, ": alignment ", alignment, " does not match general.alignment ",
                                             key_align));
  }
  o.Put<uint32_t>(0x46554747u);  // "GGUF"
  o.Put<uint32_t>(version);
  o.Put<int64_t>(static_cast<int64_t>(tensors.size()));
  o.Put<int64_t>(static_cast<int64_t>(kv.size()));
  absl::flat_hash_set<std::string_view> seen;
  for (const auto& [k, v] : kv) {
    if (k.empty() || k.size() > kGgufMaxStringBytes) return absl::InvalidArgumentError(StrCat(file, ": empty metadata key"));
    if (!seen.insert(k).second) return absl::InvalidArgumentError(StrCat(file, ": duplicate key ", Quoted(k)));
    o.PutString(k);
    int t = GgufValueTypeId(v.type);
    if (t < 0) return absl::InvalidArgumentError(StrCat(file, ": key ", Quoted(k), ": value type has no GGUF type"));
    o.Put<int32_t>(t);
    BP_RETURN_IF_ERROR(PutValue(o, v, file, k, 0));
  }
  // The tensor infos' size, so that the header grows once (a 39 MB table
  // of 1M tensors doubled its way there, holding up to 1.5x while copied).
  uint64_t info_bytes = 0;
  for (const auto& t : tensors) info_bytes += 8 + t.name.size() + 4 + 8 * t.ne.size() + 4 + 8;
  o.b.reserve(streamed ? o.b.size() + kHeaderPartBytes + 4096 : o.b.size() + info_bytes + alignment);
  NameIndexSet<GgufTensorDecl> names = MakeNameIndexSet(tensors.data(), tensors.size());
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const GgufTensorDecl& t = tensors[i];
    auto tw = [&] { return StrCat(file, ": tensor ", Quoted(t.name)); };
    if (t.name.empty()) return absl::InvalidArgumentError(StrCat(file, ": empty tensor name"));
    if (t.name.size() > kGgufMaxNameBytes) {
      return absl::InvalidArgumentError(StrCat(tw(), ": name is ", t.name.size(),
                                               " bytes; GGUF (ggml's GGML_MAX_NAME) allows at most 63"));
    }
    if (!names.insert(static_cast<uint32_t>(i)).second) {
      return absl::InvalidArgumentError(StrCat(file, ": duplicate tensor name ", Quoted(t.name)));
    }
    if (t.ne.declared_size() > kGgufMaxDims) {
      return absl::InvalidArgumentError(StrCat(tw(), ": ", t.ne.declared_size(), " dimensions; GGUF allows at most 4"));
    }
    const GgmlType* type = GgmlTypeById(t.type);
    if (type == nullptr) return absl::InvalidArgumentError(StrCat(tw(), ": unknown ggml type ", t.type));
    for (uint64_t d : t.ne) {
      if (d > static_cast<uint64_t>(INT64_MAX)) return absl::InvalidArgumentError(StrCat(tw(), ": dimension too large"));
    }
    auto nbytes = GgmlTensorBytes(*type, t.ne);
    if (!nbytes.ok()) return absl::InvalidArgumentError(StrCat(tw(), ": ", nbytes.status().message()));
    o.PutString(t.name);
    o.Put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) o.Put<int64_t>(static_cast<int64_t>(d));
    o.Put<int32_t>(t.type);
    o.Put<uint64_t>(offset);
    auto padded = AlignUp(*nbytes, alignment);
    auto next = padded ? CheckedAdd(offset, *padded) : std::nullopt;
    if (!next) return absl::InvalidArgumentError(StrCat(tw(), ": data section size overflows"));
    offset = *next;
    BP_RETURN_IF_ERROR(o.MaybeFlush());
  }
  // ggml's writer pads the metadata even when there are no tensors.
  if (!tensors.empty() || pad_empty) o.b.resize(*AlignUp(o.given() + o.b.size(), alignment) - o.given(), 0);
  return o.Finish();
}

}  // namespace

absl::StatusOr<std::vector<uint8_t>> EncodeGgufHeader(std::string_view file, const Metadata& kv,
                                                      const std::vector<GgufTensorDecl>& tensors, uint32_t version,
                                                      uint32_t alignment, bool pad_empty) {
  Out o;
  BP_RETURN_IF_ERROR(EncodeGgufHeaderInto(o, file, kv, tensors, version, alignment, pad_empty, /*streamed=*/false));
  return std::move(o.b);
}

struct GgufWriter::Impl {
  std::unique_ptr<AtomicFile> file;
  std::unique_ptr<SideWorker> side;  // checks parts while they are written
  bool failed = false;
  // Per declared tensor, once the header is written: its data size, and
  // its name for messages, the names back to back (a declaration kept
  // whole, ~80 bytes, cost 1M tensors 80 MB).
  std::vector<uint64_t> sizes;
  std::string names;
  std::vector<uint32_t> name_ends;
  std::string_view Name(size_t i) const {
    const uint32_t begin = i == 0 ? 0 : name_ends[i - 1];
    return std::string_view(names).substr(begin, name_ends[i] - begin);
  }
  uint32_t alignment = kGgufDefaultAlignment;
  size_t next = 0;
};

GgufWriter::GgufWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GgufWriter::~GgufWriter() = default;

absl::StatusOr<std::unique_ptr<GgufWriter>> GgufWriter::Create(const std::string& path, const Metadata& kv,
                                                               std::vector<GgufTensorDecl> tensors,
                                                               const GgufWriterOptions& options) {
  auto impl = std::make_unique<Impl>();
  BP_ASSIGN_OR_RETURN(impl->alignment, GgufAlignmentOf(path, kv));
  if (options.alignment != 0 && options.alignment != impl->alignment) {
    return absl::InvalidArgumentError(StrCat(path, ": alignment ", options.alignment,
                                             " does not match general.alignment ", impl->alignment));
  }
  BP_ASSIGN_OR_RETURN(impl->file, AtomicFile::Create(path, options.inputs, options.durable));
  // Written as it is encoded; a declaration it refuses leaves the unnamed
  // output uncommitted (common/atomic_file.h), so nothing appears.
  const HeaderSink sink = [&](std::vector<uint8_t>& part) {
    absl::Status written = impl->file->Write(part);
    part.clear();
    return written;
  };
  Out header(&sink);
  BP_RETURN_IF_ERROR(EncodeGgufHeaderInto(header, path, kv, tensors, options.version, impl->alignment,
                                          options.pad_empty, /*streamed=*/true));
  impl->sizes.reserve(tensors.size());
  impl->name_ends.reserve(tensors.size());
  size_t name_bytes = 0;
  for (const auto& t : tensors) name_bytes += t.name.size();  // at most 63 each: 1M fit in 32 bits
  impl->names.reserve(name_bytes);
  for (auto& t : tensors) {
    impl->sizes.push_back(*GgmlTensorBytes(*GgmlTypeById(t.type), t.ne));
    impl->names += t.name;
    impl->name_ends.push_back(static_cast<uint32_t>(impl->names.size()));
    std::string().swap(t.name);
  }
  std::vector<GgufTensorDecl>().swap(tensors);
  return std::unique_ptr<GgufWriter>(new GgufWriter(std::move(impl)));
}

absl::Status GgufWriter::WriteNext(absl::Span<const uint8_t> bytes) {
  SpanPieces pieces(bytes);
  return WriteNext(pieces);
}

absl::Status GgufWriter::WriteNext(PieceSource& pieces) { return WritePieces(pieces, nullptr); }

absl::Status GgufWriter::WriteNextBehind(std::shared_ptr<PieceSource> pieces) {
  PieceSource& src = *pieces;
  return WritePieces(src, std::move(pieces));
}

absl::Status GgufWriter::WritePieces(PieceSource& pieces, std::shared_ptr<PieceSource> behind) {
  Impl& w = *impl_;
  if (w.next >= w.sizes.size()) {
    return absl::FailedPreconditionError(StrCat(w.file->path(), ": more tensors written than declared"));
  }
  const std::string_view name = w.Name(w.next);
  if (pieces.size() != w.sizes[w.next]) {
    return absl::InvalidArgumentError(StrCat(w.file->path(), ": tensor ", Quoted(name), ": ", pieces.size(),
                                             " bytes given, its type and shape need ", w.sizes[w.next]));
  }
  if (w.failed) return absl::FailedPreconditionError(StrCat(w.file->path(), ": an earlier write failed"));
  // Parts are checked (source checksums) while others are written; a
  // failure leaves the writer failed, so Finish never commits the file.
  absl::Status copied = AppendPieces(*w.file, pieces, std::move(behind), w.side);
  if (!copied.ok()) {
    w.failed = true;
    // A source's error gets the tensor's name; a write error names the file
    // already, and written behind it may be an earlier tensor's.
    const std::string message(copied.message());
    if (copied.code() == absl::StatusCode::kInternal && message.find(name) == std::string::npos &&
        message.find(w.file->path()) == std::string::npos) {
      return absl::InternalError(StrCat(w.file->path(), ": tensor ", Quoted(name), ": ", copied.message()));
    }
    return copied;
  }
  BP_RETURN_IF_ERROR(w.file->PadTo(w.alignment));
  ++w.next;
  return absl::OkStatus();
}

absl::Status GgufWriter::Finish() {
  Impl& w = *impl_;
  if (w.failed) return absl::FailedPreconditionError(StrCat(w.file->path(), ": an earlier write failed"));
  if (w.next != w.sizes.size()) {
    return absl::FailedPreconditionError(StrCat(w.file->path(), ": ", w.next, " of ", w.sizes.size(),
                                                " tensors written"));
  }
  return w.file->Commit();
}

}  // namespace boltpack::io
