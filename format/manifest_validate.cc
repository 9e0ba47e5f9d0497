#include "format/manifest_validate.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/escaping.h"
#include "common/str_cat.h"
#include "absl/strings/str_format.h"
#include "boltpack/codec_registry.h"
#include "common/checked_math.h"
#include "common/status_macros.h"
#include "format/layout.h"
#include "format/limits.h"

namespace boltpack::format {
namespace {

absl::Status Invalid(const std::string& file, std::string_view what) {
  return absl::DataLossError(StrCat(file, ": ", what));
}
absl::Status TooMany(const std::string& file, std::string_view what) {
  return absl::ResourceExhaustedError(StrCat(file, ": ", what));
}

bool IsUnsigned(v1::ValueType t) {
  return t == v1::UINT8 || t == v1::UINT16 || t == v1::UINT32 || t == v1::UINT64;
}
bool IsSigned(v1::ValueType t) {
  return t == v1::INT8 || t == v1::INT16 || t == v1::INT32 || t == v1::INT64;
}
uint64_t UnsignedMax(v1::ValueType t) {
  switch (t) {
    case v1::UINT8: return 0xff;
    case v1::UINT16: return 0xffff;
    case v1::UINT32: return 0xffffffffull;
    default: return ~0ull;
  }
}
std::pair<int64_t, int64_t> SignedRange(v1::ValueType t) {
  switch (t) {
    case v1::INT8: return {-128, 127};
    case v1::INT16: return {-32768, 32767};
    case v1::INT32: return {INT32_MIN, INT32_MAX};
    default: return {INT64_MIN, INT64_MAX};
  }
}
bool ValidValueType(int t) { return t >= v1::UINT8 && t <= v1::ARRAY; }

absl::Status ValidateArray(const v1::Array& a, int depth, absl::FunctionRef<std::string()> where) {
  if (depth > static_cast<int>(kMaxArrayDepth)) {
    return absl::ResourceExhaustedError(
        StrCat(where(), ": arrays nested deeper than ", kMaxArrayDepth));
  }
  v1::ValueType et = a.element_type();
  if (!ValidValueType(et)) return absl::DataLossError(StrCat(where(), ": unknown array element type ", et));
  // Exactly the repeated field of the element type may be non-empty.
  size_t counts[] = {static_cast<size_t>(a.uints_size()),   static_cast<size_t>(a.ints_size()),
                     static_cast<size_t>(a.f32s_size()),    static_cast<size_t>(a.f64s_size()),
                     static_cast<size_t>(a.bools_size()),   static_cast<size_t>(a.strings_size()),
                     static_cast<size_t>(a.arrays_size())};
  int slot = IsUnsigned(et) ? 0 : IsSigned(et) ? 1 : et == v1::FLOAT32 ? 2 : et == v1::FLOAT64 ? 3
             : et == v1::BOOLEAN ? 4 : et == v1::STRING ? 5 : 6;
  for (int k = 0; k < 7; ++k) {
    if (k != slot && counts[k] != 0) {
      return absl::DataLossError(
          StrCat(where(), ": array of ", v1::ValueType_Name(et), " holds elements of another type"));
    }
  }
  if (IsUnsigned(et)) {
    for (uint64_t v : a.uints()) {
      if (v > UnsignedMax(et)) return absl::DataLossError(StrCat(where(), ": array element ", v, " out of range for ", v1::ValueType_Name(et)));
    }
  } else if (IsSigned(et)) {
    auto [lo, hi] = SignedRange(et);
    for (int64_t v : a.ints()) {
      if (v < lo || v > hi) return absl::DataLossError(StrCat(where(), ": array element ", v, " out of range for ", v1::ValueType_Name(et)));
    }
  } else if (et == v1::ARRAY) {
    for (const auto& inner : a.arrays()) BP_RETURN_IF_ERROR(ValidateArray(inner, depth + 1, where));
  }
  return absl::OkStatus();
}

absl::Status ValidateName(std::string_view name, std::string_view kind, const std::string& file) {
  if (name.empty()) return Invalid(file, StrCat("empty ", kind));
  if (name.size() > kMaxNameBytes) {
    return TooMany(file, StrCat(kind, " of ", name.size(), " bytes exceeds the limit of ", kMaxNameBytes));
  }
  if (name.find('\0') != std::string_view::npos) {
    return Invalid(file, StrCat(kind, " \"", absl::CHexEscape(absl::string_view(name.data(), name.size())), "\" contains a NUL byte"));
  }
  return absl::OkStatus();
}

absl::Status ValidateFeatures(const google::protobuf::RepeatedPtrField<std::string>& features,
                              const std::string& where) {
  if (static_cast<uint64_t>(features.size()) > kMaxFeatures) {
    return absl::ResourceExhaustedError(StrCat(where, ": more than ", kMaxFeatures, " features"));
  }
  for (const auto& f : features) {
    if (f.empty() || f.size() > kMaxFeatureBytes) {
      return absl::DataLossError(StrCat(where, ": feature names must be 1..", kMaxFeatureBytes, " bytes"));
    }
  }
  return absl::OkStatus();
}

struct Extent {
  uint64_t begin;
  uint64_t end;
  const std::string* tensor;
};

absl::Status ValidateStream(const v1::Stream& s, const v1::Tensor& t, uint64_t tensor_rows,
                            const std::vector<uint64_t>& shard_data_end, bool zstd_declared,
                            const std::string& file, std::vector<std::vector<Extent>>* extents) {
  // Built only on error: validation runs for every stream of every tensor.
  auto where = [&] { return StrCat(file, ": tensor \"", t.name(), "\" stream \"", s.role(), "\""); };
  if (s.role().empty() || s.role().size() > 64) {
    return absl::DataLossError(StrCat(where(), ": role must be 1..64 bytes"));
  }
  if (s.shard() >= shard_data_end.size()) {
    return absl::DataLossError(StrCat(where(), ": shard ", s.shard(), " does not exist"));
  }
  if (!IsPowerOfTwo(s.alignment()) || s.alignment() < kMinAlignment || s.alignment() > kMaxAlignment) {
    return absl::DataLossError(StrCat(where(), ": alignment ", s.alignment(),
                                            " is not a power of two in [64, 2^30]"));
  }
  if (s.offset() % s.alignment() != 0) {
    return absl::DataLossError(StrCat(where(), ": offset ", s.offset(), " is not a multiple of its alignment ", s.alignment()));
  }
  auto end = CheckedAdd(s.offset(), s.length());
  uint64_t limit = shard_data_end[s.shard()];
  if (s.offset() < kHeaderSize || !end || *end > limit) {
    return absl::DataLossError(absl::StrFormat("%s: bytes [%d, +%d) lie outside the data section [64, %d)",
                                               where(), s.offset(), s.length(), limit));
  }
  if (s.length() > 0) (*extents)[s.shard()].push_back({s.offset(), *end, &t.name()});
  switch (s.compression()) {
    case v1::COMPRESSION_NONE:
      if (s.raw_length() != s.length()) {
        return absl::DataLossError(StrCat(where(), ": uncompressed but raw_length ", s.raw_length(), " != length ", s.length()));
      }
      break;
    case v1::COMPRESSION_ZSTD:
      if (!zstd_declared) {
        return absl::DataLossError(StrCat(where(), ": zstd-compressed but the file does not declare the \"zstd\" feature"));
      }
      if (s.raw_length() > kMaxRawStreamBytes) {
        return absl::ResourceExhaustedError(StrCat(where(), ": raw_length ", s.raw_length(), " exceeds 2^48"));
      }
      break;
    default:
      // A later minor version's compression: listed and copied, not decoded.
      if (s.compression() < 0 || s.compression() > 255) {
        return absl::DataLossError(StrCat(where(), ": compression ", s.compression(), " is out of range"));
      }
      if (s.raw_length() > kMaxRawStreamBytes) {
        return absl::ResourceExhaustedError(StrCat(where(), ": raw_length ", s.raw_length(), " exceeds 2^48"));
      }
      break;
  }
  if (static_cast<uint64_t>(s.chunks_size()) > kMaxChunksPerStream) {
    return absl::ResourceExhaustedError(StrCat(where(), ": more than 2^24 chunks"));
  }
  // Chunks tile the stored and the raw bytes exactly, in order, and cover
  // consecutive whole rows from 0 to the tensor's row count.
  uint64_t stored = 0, raw = 0, row = 0;
  for (int k = 0; k < s.chunks_size(); ++k) {
    const auto& c = s.chunks(k);
    if (c.stored_offset() != stored || c.raw_offset() != raw || c.first_row() != row) {
      return absl::DataLossError(StrCat(where(), ": chunk ", k, " does not start where chunk ", k - 1, " ended"));
    }
    if (s.compression() == v1::COMPRESSION_NONE && c.stored_length() != c.raw_length()) {
      return absl::DataLossError(StrCat(where(), ": chunk ", k, " stored and raw lengths differ in an uncompressed stream"));
    }
    auto ns = CheckedAdd(stored, c.stored_length());
    auto nr = CheckedAdd(raw, c.raw_length());
    auto nrow = CheckedAdd(row, c.row_count());
    if (!ns || !nr || !nrow) return absl::DataLossError(StrCat(where(), ": chunk ", k, " sizes overflow"));
    stored = *ns;
    raw = *nr;
    row = *nrow;
  }
  if (s.chunks_size() > 0 && (stored != s.length() || raw != s.raw_length() || row != tensor_rows)) {
    return absl::DataLossError(StrCat(where(), ": chunks do not cover the stream (", stored, "/", s.length(),
                                            " stored, ", raw, "/", s.raw_length(), " raw, ", row, "/",
                                            tensor_rows, " rows)"));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsKnownFeature(const std::string& feature) {
  return feature == "zstd" || feature == "shards";
}

absl::Status ValidateValue(const v1::Value& value, int depth, absl::FunctionRef<std::string()> where) {
  v1::ValueType t = value.type();
  if (!ValidValueType(t)) return absl::DataLossError(StrCat(where(), ": unknown value type ", t));
  if (IsUnsigned(t) && value.u() > UnsignedMax(t)) {
    return absl::DataLossError(StrCat(where(), ": ", value.u(), " out of range for ", v1::ValueType_Name(t)));
  }
  if (IsSigned(t)) {
    auto [lo, hi] = SignedRange(t);
    if (value.i() < lo || value.i() > hi) {
      return absl::DataLossError(StrCat(where(), ": ", value.i(), " out of range for ", v1::ValueType_Name(t)));
    }
  }
  if (t == v1::ARRAY) return ValidateArray(value.array(), depth + 1, where);
  return absl::OkStatus();
}

absl::Status ValidateShards(const v1::Manifest& m, const std::string& file, uint64_t file_id) {
  if (static_cast<uint64_t>(m.shards_size()) > kMaxShards) return TooMany(file, "more than 65536 shards");
  absl::flat_hash_set<std::string_view> names;
  absl::flat_hash_set<uint64_t> ids;
  for (int k = 0; k < m.shards_size(); ++k) {
    const auto& shard = m.shards(k);
    const std::string& name = shard.file_name();
    if (k == 0) {
      if (!name.empty() || shard.size() != 0 || (shard.file_id() != 0 && shard.file_id() != file_id)) {
        return Invalid(file, "shard 0 must be the manifest's own file (empty name, size 0, its file_id)");
      }
      continue;
    }
    // A name is never a path: no folder, parent, drive, stream or control
    // character (the ONNX external-data CVEs came from such names).
    bool bad = name.empty() || name.size() > 255 || name == "." || name == "..";
    for (unsigned char c : name) bad |= c == '/' || c == '\\' || c == ':' || c < 0x20 || c == 0x7f;
    if (bad) {
      return Invalid(file, StrCat("shard ", k, " name \"", absl::CHexEscape(name), "\" is not a bare file name"));
    }
    // Two entries for one file, or one for the manifest file itself, would
    // let streams of different shards alias the same bytes.
    if (!names.insert(name).second || !ids.insert(shard.file_id()).second || shard.file_id() == file_id) {
      return Invalid(file, StrCat("shard ", k, " (\"", name, "\") repeats another shard or names the manifest file"));
    }
  }
  bool declared = std::find(m.required_features().begin(), m.required_features().end(), "shards") !=
                  m.required_features().end();
  if (m.shards_size() > 1 && !declared) {
    return Invalid(file, "the manifest names sibling shards but does not declare the \"shards\" feature");
  }
  return absl::OkStatus();
}

absl::Status ValidateManifest(const v1::Manifest& m, const std::string& file,
                              const std::vector<uint64_t>& shard_data_end) {
  if (m.format_major() != kFormatMajor) {
    return Invalid(file, StrCat("manifest format_major ", m.format_major(), " disagrees with the header"));
  }
  BP_RETURN_IF_ERROR(ValidateFeatures(m.required_features(), file + ": required_features"));
  BP_RETURN_IF_ERROR(ValidateFeatures(m.optional_features(), file + ": optional_features"));
  if (!IsPowerOfTwo(m.alignment()) || m.alignment() < kMinAlignment || m.alignment() > kMaxAlignment) {
    return Invalid(file, StrCat("alignment ", m.alignment(), " is not a power of two in [64, 2^30]"));
  }
  if (static_cast<uint64_t>(m.metadata_size()) > kMaxMetadataEntries) {
    return TooMany(file, StrCat(m.metadata_size(), " metadata entries exceed the limit of ", kMaxMetadataEntries));
  }
  {
    absl::flat_hash_set<std::string_view> keys;
    keys.reserve(m.metadata_size());
    for (const auto& e : m.metadata()) {
      BP_RETURN_IF_ERROR(ValidateName(e.key(), "metadata key", file));
      if (!keys.insert(e.key()).second) return Invalid(file, StrCat("duplicate metadata key \"", e.key(), "\""));
      BP_RETURN_IF_ERROR(ValidateValue(e.value(), 0, [&] { return StrCat(file, ": metadata \"", e.key(), "\""); }));
    }
  }
  if (static_cast<uint64_t>(m.tensors_size()) > kMaxTensors) {
    return TooMany(file, StrCat(m.tensors_size(), " tensors exceed the limit of ", kMaxTensors));
  }
  bool zstd_declared = std::find(m.required_features().begin(), m.required_features().end(), "zstd") !=
                       m.required_features().end();
  std::vector<std::vector<Extent>> extents(shard_data_end.size());
  absl::flat_hash_set<std::string_view> names;
  names.reserve(m.tensors_size());
  for (const auto& t : m.tensors()) {
    BP_RETURN_IF_ERROR(ValidateName(t.name(), "tensor name", file));
    if (!names.insert(t.name()).second) return Invalid(file, StrCat("duplicate tensor name \"", t.name(), "\""));
    auto where = [&] { return StrCat(file, ": tensor \"", t.name(), "\""); };
    if (static_cast<uint64_t>(t.shape_size()) > kMaxDims) {
      return absl::ResourceExhaustedError(StrCat(where(), ": ", t.shape_size(), " dimensions exceed the limit of 8"));
    }
    // The product of the non-zero dimensions is bounded, so every partial
    // product (one row's elements) stays in range even when one dim is 0.
    uint64_t nonzero = 1;
    bool overflow = false;
    for (uint64_t d : t.shape()) {
      if (d == 0) continue;
      auto next = CheckedMul(nonzero, d);
      overflow |= !next;
      nonzero = next.value_or(~0ull);
    }
    if (overflow || nonzero > kMaxElements) {
      return absl::ResourceExhaustedError(StrCat(where(), ": element count exceeds 2^56"));
    }
    // A dtype number this reader does not know (a later minor version's)
    // still lists; decoding it is refused (spec §6.7).
    if (t.dtype() == v1::DTYPE_UNSPECIFIED) {
      return absl::DataLossError(StrCat(where(), ": dtype 0 (unspecified) is invalid"));
    }
    if (t.dtype() < 0 || t.dtype() > 255) {
      return absl::DataLossError(StrCat(where(), ": dtype ", t.dtype(), " is out of range"));
    }
    if (!IsValidCodecId(t.codec().id())) {
      return absl::DataLossError(StrCat(where(), ": invalid codec id \"", absl::CHexEscape(t.codec().id()), "\""));
    }
    if (static_cast<uint64_t>(t.codec().params_size()) > kMaxCodecParams) {
      return absl::ResourceExhaustedError(StrCat(where(), ": more than 64 codec parameters"));
    }
    for (int k = 0; k < t.codec().params_size(); ++k) {
      const auto& p = t.codec().params(k);
      bool repeated = false;
      for (int j = 0; j < k; ++j) repeated |= t.codec().params(j).key() == p.key();
      if (p.key().empty() || p.key().size() > 64 || repeated) {
        return absl::DataLossError(StrCat(where(), ": codec parameter key \"", p.key(), "\" is empty, too long or repeated"));
      }
      BP_RETURN_IF_ERROR(ValidateValue(p.value(), 0, [&] { return StrCat(where(), ": codec parameter \"", p.key(), "\""); }));
    }
    BP_RETURN_IF_ERROR(ValidateFeatures(t.required_features(), t.required_features_size() == 0 ? std::string() : where()));
    if (static_cast<uint64_t>(t.streams_size()) > kMaxStreamsPerTensor) {
      return absl::ResourceExhaustedError(StrCat(where(), ": more than 64 streams"));
    }
    uint64_t rows = t.shape_size() == 0 ? 1 : t.shape(0);
    for (int k = 0; k < t.streams_size(); ++k) {
      const auto& s = t.streams(k);
      bool repeated = false;
      // At most 64 streams: a linear scan beats a hash set here.
      for (int j = 0; j < k; ++j) repeated |= t.streams(j).role() == s.role();
      if (repeated) {
        return absl::DataLossError(StrCat(where(), ": two streams have the role \"", s.role(), "\""));
      }
      BP_RETURN_IF_ERROR(ValidateStream(s, t, rows, shard_data_end, zstd_declared, file, &extents));
    }
  }
  // No two streams share a byte.
  for (size_t shard = 0; shard < extents.size(); ++shard) {
    auto& ex = extents[shard];
    std::sort(ex.begin(), ex.end(), [](const Extent& a, const Extent& b) { return a.begin < b.begin; });
    for (size_t k = 1; k < ex.size(); ++k) {
      if (ex[k].begin < ex[k - 1].end) {
        return Invalid(file, StrCat("streams of tensors \"", *ex[k - 1].tensor, "\" and \"", *ex[k].tensor,
                                          "\" overlap in shard ", shard));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace boltpack::format
