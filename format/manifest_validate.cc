#include "format/manifest_validate.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/escaping.h"
#include "common/escape.h"
#include "common/lower_name.h"
#include "common/str_cat.h"
#include "absl/strings/str_format.h"
#include "boltpack/codec_registry.h"
#include "common/checked_math.h"
#include "common/status_macros.h"
#include "format/elastic_validate.h"
#include "format/layout.h"
#include "common/limits.h"

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
  const uint64_t counts[kArrayFieldCount] = {
      static_cast<uint64_t>(a.uints_size()), static_cast<uint64_t>(a.ints_size()),
      static_cast<uint64_t>(a.f32s_size()),  static_cast<uint64_t>(a.f64s_size()),
      static_cast<uint64_t>(a.bools_size()), static_cast<uint64_t>(a.strings_size()),
      static_cast<uint64_t>(a.arrays_size())};
  BP_RETURN_IF_ERROR(CheckArrayHead(depth, a.element_type(), counts, where));
  const v1::ValueType et = a.element_type();
  if (IsUnsigned(et)) {
    for (uint64_t v : a.uints()) BP_RETURN_IF_ERROR(CheckUnsignedElement(et, v, where));
  } else if (IsSigned(et)) {
    for (int64_t v : a.ints()) BP_RETURN_IF_ERROR(CheckSignedElement(et, v, where));
  } else if (et == v1::ARRAY) {
    for (const auto& inner : a.arrays()) BP_RETURN_IF_ERROR(ValidateArray(inner, depth + 1, where));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckArrayHead(int depth, int32_t element_type, const uint64_t (&counts)[kArrayFieldCount],
                            absl::FunctionRef<std::string()> where) {
  if (depth > static_cast<int>(kMaxArrayDepth)) {
    // [C-6.4.9] [C-9.14]
    return absl::ResourceExhaustedError(
        StrCat(where(), ": arrays nested deeper than ", kMaxArrayDepth));
  }
  const auto et = static_cast<v1::ValueType>(element_type);
  // [C-6.4.6]
  if (!ValidValueType(et)) return absl::DataLossError(StrCat(where(), ": unknown array element type ", et));
  // Exactly the repeated field of the element type may be non-empty.
  const int slot = ArrayFieldOf(element_type);
  for (int k = 0; k < kArrayFieldCount; ++k) {
    if (k != slot && counts[k] != 0) {
      // [C-6.4.7]
      return absl::DataLossError(
          StrCat(where(), ": array of ", v1::ValueType_Name(et), " holds elements of another type"));
    }
  }
  return absl::OkStatus();
}

int ArrayFieldOf(int32_t element_type) {
  const auto et = static_cast<v1::ValueType>(element_type);
  return IsUnsigned(et) ? 0 : IsSigned(et) ? 1 : et == v1::FLOAT32 ? 2 : et == v1::FLOAT64 ? 3
         : et == v1::BOOLEAN ? 4 : et == v1::STRING ? 5 : 6;
}

absl::Status CheckUnsignedElement(int32_t element_type, uint64_t v, absl::FunctionRef<std::string()> where) {
  const auto et = static_cast<v1::ValueType>(element_type);
  if (v > UnsignedMax(et)) {
    // [C-6.4.8]
    return absl::DataLossError(StrCat(where(), ": array element ", v, " out of range for ", v1::ValueType_Name(et)));
  }
  return absl::OkStatus();
}

absl::Status CheckSignedElement(int32_t element_type, int64_t v, absl::FunctionRef<std::string()> where) {
  const auto et = static_cast<v1::ValueType>(element_type);
  auto [lo, hi] = SignedRange(et);
  if (v < lo || v > hi) {
    // [C-6.4.8]
    return absl::DataLossError(StrCat(where(), ": array element ", v, " out of range for ", v1::ValueType_Name(et)));
  }
  return absl::OkStatus();
}

absl::Status ValidateName(std::string_view name, std::string_view kind, const std::string& file) {
  // [C-6.3.1]
  if (name.empty()) return Invalid(file, StrCat("empty ", kind));
  if (name.size() > kMaxNameBytes) {
    // [C-6.3.1] [C-9.5]
    return TooMany(file, StrCat(kind, " of ", name.size(), " bytes exceeds the limit of ", kMaxNameBytes));
  }
  if (name.find('\0') != std::string_view::npos) {
    // [C-6.3.2]
    return Invalid(file, StrCat(kind, " ", QuoteForDisplay(name, 200), " contains a NUL byte"));
  }
  return absl::OkStatus();
}

namespace {

absl::Status ValidateFeatures(const google::protobuf::RepeatedPtrField<std::string>& features,
                              const std::string& where) {
  if (static_cast<uint64_t>(features.size()) > kMaxFeatures) {
    // [C-5.3.1] [C-9.12]
    return absl::ResourceExhaustedError(StrCat(where, ": more than ", kMaxFeatures, " features"));
  }
  for (const auto& f : features) {
    if (f.empty() || f.size() > kMaxFeatureBytes) {
      // [C-5.3.1]
      return absl::DataLossError(StrCat(where, ": feature names must be 1..", kMaxFeatureBytes, " bytes"));
    }
  }
  return absl::OkStatus();
}

using validate_detail::Extent;
using validate_detail::ViewBits;
using validate_detail::ViewedStream;

// Views (format 1.1, spec/container.md "Views"). The limits live here until
// common/limits.h takes them with the 1.1 bump.
constexpr uint64_t kMaxViews = 64;
constexpr uint64_t kMaxViewDescriptionBytes = 4096;
constexpr std::string_view kFullView = "full";

bool IsValidViewName(std::string_view name) { return IsLowerName(name); }


absl::Status ValidateViewDeclarations(const v1::Manifest& m, const std::string& file,
                                      const std::vector<uint64_t>& shard_data_end, ViewBits* bits) {
  if (static_cast<uint64_t>(m.views_size()) > kMaxViews) {
    // [C-15.3.1] [C-9.16]
    return TooMany(file, StrCat(m.views_size(), " views exceed the limit of ", kMaxViews));
  }
  for (int v = 0; v < m.views_size(); ++v) {
    const auto& view = m.views(v);
    const std::string& name = view.name();
    if (!IsValidViewName(name)) {
      // [C-15.1.1] [C-15.3.2]
      return Invalid(file, StrCat("view name \"", absl::CHexEscape(name),
                                  "\" is not 1..64 bytes of [a-z0-9_-] starting with a letter or digit"));
    }
    // [C-15.1.2] [C-15.3.2]
    if (name == kFullView) return Invalid(file, "the \"full\" view is implicit and must not be declared");
    // [C-15.3.2]
    if (!bits->emplace(name, v).second) return Invalid(file, StrCat("duplicate view \"", name, "\""));
    if (view.description().size() > kMaxViewDescriptionBytes) {
      // [C-9.17]
      return TooMany(file, StrCat("view \"", name, "\": description of ", view.description().size(),
                                  " bytes exceeds the limit of ", kMaxViewDescriptionBytes));
    }
    // Ranges: syntax here; that they match the streams, after the tensors.
    int64_t prev_shard = -1;
    for (const auto& r : view.ranges()) {
      auto end = CheckedAdd(r.offset(), r.length());
      if (r.shard() >= shard_data_end.size() || static_cast<int64_t>(r.shard()) <= prev_shard) {
        return Invalid(file, StrCat("view \"", name, "\": ranges must name existing shards in increasing order"));
      }
      if (r.length() == 0 || r.offset() < kHeaderSize || !end || *end > shard_data_end[r.shard()]) {
        return Invalid(file, StrCat("view \"", name, "\": range [", r.offset(), ", +", r.length(), ") of shard ",
                                    r.shard(), " is empty or lies outside the data section"));
      }
      prev_shard = r.shard();
    }
  }
  return absl::OkStatus();
}

// Bit v set: declared view v reads the stream (the implicit "full" view reads
// every stream). Checks the stream's list: each name "full" or declared,
// no repeats, and "full" present when the list is not empty.
absl::StatusOr<uint64_t> StreamViewMask(const v1::Stream& s, const ViewBits& bits, size_t declared,
                                        absl::FunctionRef<std::string()> where) {
  if (s.views_size() == 0) return declared >= 64 ? ~0ull : (1ull << declared) - 1;
  uint64_t mask = 0;
  bool full = false;
  for (const auto& name : s.views()) {
    bool repeated;
    if (name == kFullView) {
      repeated = full;
      full = true;
    } else {
      auto it = bits.find(name);
      if (it == bits.end()) {
        // [C-15.2.1]
        return absl::DataLossError(StrCat(where(), ": names view \"", absl::CHexEscape(name),
                                          "\", which the manifest does not declare"));
      }
      uint64_t bit = 1ull << it->second;
      repeated = (mask & bit) != 0;
      mask |= bit;
    }
    // [C-15.2.2]
    if (repeated) return absl::DataLossError(StrCat(where(), ": lists view \"", name, "\" twice"));
  }
  if (!full) {
    // [C-15.2.3]
    return absl::DataLossError(StrCat(where(), ": lists views without \"full\" (the full view reads every stream)"));
  }
  return mask;
}


// Layout: per shard, every stream a view reads lies before every stream it
// does not read, and the view's ranges are exactly the span of its streams.
absl::Status ValidateViewLayout(const v1::Manifest& m, const std::string& file, size_t shards,
                                const std::vector<ViewedStream>& streams) {
  constexpr uint64_t kNone = ~0ull;
  struct Acc {
    uint64_t read_begin, read_end, unread_begin;
    std::string_view read_last;
    std::string_view unread_first;
  };
  std::vector<Acc> acc(shards);
  for (int v = 0; v < m.views_size(); ++v) {
    const auto& view = m.views(v);
    std::fill(acc.begin(), acc.end(), Acc{kNone, 0, kNone, {}, {}});
    const uint64_t bit = 1ull << v;
    for (const auto& s : streams) {
      Acc& a = acc[s.shard];
      if (s.mask & bit) {
        a.read_begin = std::min(a.read_begin, s.begin);
        if (s.end > a.read_end) {
          a.read_end = s.end;
          a.read_last = s.tensor;
        }
      } else if (s.begin < a.unread_begin) {
        a.unread_begin = s.begin;
        a.unread_first = s.tensor;
      }
    }
    int r = 0;
    for (size_t shard = 0; shard < shards; ++shard) {
      const Acc& a = acc[shard];
      if (a.read_begin == kNone) continue;
      if (a.read_end > a.unread_begin) {
        // [C-15.4.1]
        return Invalid(file, StrCat("view \"", view.name(), "\": a stream of tensor ", QuoteForDisplay(a.unread_first),
                                    " it does not read lies before a stream of tensor ", QuoteForDisplay(a.read_last),
                                    " it reads (shard ", shard, ")"));
      }
      bool match = r < view.ranges_size() && view.ranges(r).shard() == shard &&
                   view.ranges(r).offset() == a.read_begin && view.ranges(r).length() == a.read_end - a.read_begin;
      if (!match) {
        // [C-15.4.2]
        return Invalid(file, StrCat("view \"", view.name(), "\": its ranges do not match its streams (shard ",
                                    shard, " needs [", a.read_begin, ", ", a.read_end, "))"));
      }
      ++r;
    }
    if (r != view.ranges_size()) {
      return Invalid(file, StrCat("view \"", view.name(), "\": range of shard ", view.ranges(r).shard(),
                                  " holds no stream the view reads"));
    }
  }
  return absl::OkStatus();
}

// What the line-prefix rules need of a stream's chunks, gathered in the
// pass that checks their tiling (the chunks are read from the wire one at
// a time, so once, not once per rule): the first chunk that breaks each.
struct ChunkLineFacts {
  int64_t first_with_prefixes = -1;  // a chunk with prefix checksums
  int64_t first_bad = -1;            // not whole lines, or the wrong prefix count
  uint64_t bad_stored_length = 0;
  int bad_prefix_count = 0;
  void See(const v1::Stream& s, const v1::Chunk& c, int64_t k) {
    if (first_with_prefixes < 0 && c.prefix_xxh3_size() != 0) first_with_prefixes = k;
    if (first_bad >= 0 || s.prefix_bytes_size() == 0 || s.line_bytes() == 0) return;
    if (c.stored_length() % s.line_bytes() != 0 || c.prefix_xxh3_size() != s.prefix_bytes_size()) {
      first_bad = k;
      bad_stored_length = c.stored_length();
      bad_prefix_count = c.prefix_xxh3_size();
    }
  }
};

// Format 1.2 line-prefix checksums: lines that tile every chunk of an
// uncompressed stream, prefixes strictly ascending inside a line, and one
// checksum per prefix in every chunk.
template <typename Where>
absl::Status ValidateLinePrefixes(const v1::Stream& s, uint64_t chunk_count, const ChunkLineFacts& facts,
                                  const Where& where) {
  if (s.prefix_bytes_size() == 0) {
    // [C-6.10.1.1]
    if (s.line_bytes() != 0) return absl::DataLossError(StrCat(where(), ": line_bytes without prefix_bytes"));
    if (facts.first_with_prefixes >= 0) {
      // [C-6.10.1.1]
      return absl::DataLossError(StrCat(where(), ": chunk ", facts.first_with_prefixes,
                                        " has prefix checksums but the stream no prefix_bytes"));
    }
    return absl::OkStatus();
  }
  if (static_cast<uint64_t>(s.prefix_bytes_size()) > kMaxLinePrefixes) {
    // [C-6.10.1.2] [C-9.10]
    return absl::ResourceExhaustedError(StrCat(where(), ": more than ", kMaxLinePrefixes, " prefix_bytes"));
  }
  if (s.compression() != v1::COMPRESSION_NONE || chunk_count == 0 || s.line_bytes() == 0) {
    // [C-6.10.1.3]
    return absl::DataLossError(
        StrCat(where(), ": prefix_bytes need an uncompressed stream with chunks and a line_bytes > 0"));
  }
  uint64_t previous = 0;
  for (uint64_t p : s.prefix_bytes()) {
    if (p <= previous || p >= s.line_bytes()) {
      // [C-6.10.1.4]
      return absl::DataLossError(StrCat(where(), ": prefix_bytes must ascend strictly inside (0, line_bytes ",
                                        s.line_bytes(), "); found ", p, " after ", previous));
    }
    previous = p;
  }
  if (facts.first_bad >= 0) {
    const int64_t k = facts.first_bad;
    if (facts.bad_stored_length % s.line_bytes() != 0) {
      // [C-6.10.1.5]
      return absl::DataLossError(StrCat(where(), ": chunk ", k, " (", facts.bad_stored_length,
                                        " bytes) is not whole lines of ", s.line_bytes()));
    }
    // [C-6.10.1.6]
    return absl::DataLossError(StrCat(where(), ": chunk ", k, " has ", facts.bad_prefix_count,
                                      " prefix checksums, the stream ", s.prefix_bytes_size(), " prefixes"));
  }
  return absl::OkStatus();
}

absl::Status ValidateStream(const v1::Stream& s, const TensorChunks& chunks, size_t stream_index,
                            const v1::Tensor& t, std::string_view stored_name, uint64_t tensor_rows,
                            const std::vector<uint64_t>& shard_data_end, bool zstd_declared,
                            const std::string& file, std::vector<std::vector<Extent>>* extents) {
  // Built only on error: validation runs for every stream of every tensor.
  auto where = [&] { return StrCat(file, ": tensor ", QuoteForDisplay(t.name()), " stream \"", s.role(), "\""); };
  if (s.role().empty() || s.role().size() > 64) {
    // [C-6.9.1]
    return absl::DataLossError(StrCat(where(), ": role must be 1..64 bytes"));
  }
  if (s.shard() >= shard_data_end.size()) {
    // [C-6.9.2]
    return absl::DataLossError(StrCat(where(), ": shard ", s.shard(), " does not exist"));
  }
  if (!IsPowerOfTwo(s.alignment()) || s.alignment() < kMinAlignment || s.alignment() > kMaxAlignment) {
    // [C-6.9.3] [C-7.1.2]
    return absl::DataLossError(StrCat(where(), ": alignment ", s.alignment(),
                                            " is not a power of two in [64, 2^30]"));
  }
  if (s.offset() % s.alignment() != 0) {
    // [C-6.9.4] [C-7.1.1]
    return absl::DataLossError(StrCat(where(), ": offset ", s.offset(), " is not a multiple of its alignment ", s.alignment()));
  }
  auto end = CheckedAdd(s.offset(), s.length());
  uint64_t limit = shard_data_end[s.shard()];
  if (s.offset() < kHeaderSize || !end || *end > limit) {
    // [C-6.9.5]
    return absl::DataLossError(absl::StrFormat("%s: bytes [%d, +%d) lie outside the data section [64, %d)",
                                               where(), s.offset(), s.length(), limit));
  }
  if (s.length() > 0) (*extents)[s.shard()].push_back({s.offset(), *end, stored_name});
  switch (s.compression()) {
    case v1::COMPRESSION_NONE:
      if (s.raw_length() != s.length()) {
        // [C-6.9.6]
        return absl::DataLossError(StrCat(where(), ": uncompressed but raw_length ", s.raw_length(), " != length ", s.length()));
      }
      break;
    case v1::COMPRESSION_ZSTD:
      if (!zstd_declared) {
        // [C-6.9.6] [C-7.3.1] [C-5.3.8]
        return absl::DataLossError(StrCat(where(), ": zstd-compressed but the file does not declare the \"zstd\" feature"));
      }
      if (s.raw_length() > kMaxRawStreamBytes) {
        // [C-6.9.6] [C-9.15] [C-7.3.3]
        return absl::ResourceExhaustedError(StrCat(where(), ": raw_length ", s.raw_length(), " exceeds 2^48"));
      }
      break;
    default:
      // A later minor version's compression: listed and copied, not decoded.
      if (s.compression() < 0 || s.compression() > 255) {
        // [C-6.9.6] [C-6.9.10]
        return absl::DataLossError(StrCat(where(), ": compression ", s.compression(), " is out of range"));
      }
      if (s.raw_length() > kMaxRawStreamBytes) {
        // [C-6.9.6] [C-9.15] [C-7.3.3]
        return absl::ResourceExhaustedError(StrCat(where(), ": raw_length ", s.raw_length(), " exceeds 2^48"));
      }
      break;
  }
  const uint64_t chunk_count = chunks.counts[stream_index];
  if (chunk_count > kMaxChunksPerStream) {
    // [C-6.9.7] [C-9.9]
    return absl::ResourceExhaustedError(StrCat(where(), ": more than 2^24 chunks"));
  }
  // Chunks tile the stored and the raw bytes exactly, in order, and cover
  // consecutive whole rows from 0 to the tensor's row count.
  uint64_t stored = 0, raw = 0, row = 0;
  ChunkLineFacts facts;
  absl::Status status;
  const bool read = chunks.ForEach(stream_index, [&](const v1::Chunk& c, uint64_t index, absl::Span<const uint8_t>) {
    const int64_t k = static_cast<int64_t>(index);
    if (c.stored_offset() != stored || c.raw_offset() != raw || c.first_row() != row) {
      // [C-6.10.2]
      status = absl::DataLossError(StrCat(where(), ": chunk ", k, " does not start where chunk ", k - 1, " ended"));
      return false;
    }
    if (s.compression() == v1::COMPRESSION_NONE && c.stored_length() != c.raw_length()) {
      // [C-6.10.3]
      status = absl::DataLossError(StrCat(where(), ": chunk ", k, " stored and raw lengths differ in an uncompressed stream"));
      return false;
    }
    auto ns = CheckedAdd(stored, c.stored_length());
    auto nr = CheckedAdd(raw, c.raw_length());
    auto nrow = CheckedAdd(row, c.row_count());
    if (!ns || !nr || !nrow) {
      status = absl::DataLossError(StrCat(where(), ": chunk ", k, " sizes overflow"));
      return false;
    }
    stored = *ns;
    raw = *nr;
    row = *nrow;
    facts.See(s, c, k);
    return true;
  });
  BP_RETURN_IF_ERROR(status);
  // [C-6.1.2]
  if (!read) return absl::DataLossError(StrCat(file, ": manifest is not a valid boltpack.v1.Manifest"));
  if (chunk_count > 0 && (stored != s.length() || raw != s.raw_length() || row != tensor_rows)) {
    // [C-6.10.4]
    return absl::DataLossError(StrCat(where(), ": chunks do not cover the stream (", stored, "/", s.length(),
                                            " stored, ", raw, "/", s.raw_length(), " raw, ", row, "/",
                                            tensor_rows, " rows)"));
  }
  return ValidateLinePrefixes(s, chunk_count, facts, where);
}

}  // namespace

bool IsKnownFeature(const std::string& feature) {
  return feature == "zstd" || feature == "shards" || feature == "part_shards";
}

absl::Status CheckScalar(int32_t type, uint64_t u, int64_t i, absl::FunctionRef<std::string()> where) {
  const auto t = static_cast<v1::ValueType>(type);
  // [C-6.4.1]
  if (!ValidValueType(t)) return absl::DataLossError(StrCat(where(), ": unknown value type ", t));
  if (IsUnsigned(t) && u > UnsignedMax(t)) {
    // [C-6.4.2]
    return absl::DataLossError(StrCat(where(), ": ", u, " out of range for ", v1::ValueType_Name(t)));
  }
  if (IsSigned(t)) {
    auto [lo, hi] = SignedRange(t);
    if (i < lo || i > hi) {
      // [C-6.4.2]
      return absl::DataLossError(StrCat(where(), ": ", i, " out of range for ", v1::ValueType_Name(t)));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateValue(const v1::Value& value, int depth, absl::FunctionRef<std::string()> where) {
  BP_RETURN_IF_ERROR(CheckScalar(value.type(), value.u(), value.i(), where));
  if (value.type() == v1::ARRAY) return ValidateArray(value.array(), depth + 1, where);
  return absl::OkStatus();
}

absl::Status ValidateShards(const v1::Manifest& m, const std::string& file, uint64_t file_id) {
  // [C-8.2.2] [C-9.13]
  if (static_cast<uint64_t>(m.shards_size()) > kMaxShards) return TooMany(file, "more than 65536 shards");
  absl::flat_hash_set<std::string_view> names;
  absl::flat_hash_set<uint64_t> ids;
  bool parts = false;
  for (int k = 0; k < m.shards_size(); ++k) {
    const auto& shard = m.shards(k);
    const std::string& name = shard.file_name();
    if (k == 0) {
      // [C-8.2.3]
      if (!name.empty() || shard.size() != 0 || shard.data_end() != 0 ||
          (shard.file_id() != 0 && shard.file_id() != file_id)) {
        return Invalid(file, "shard 0 must be the manifest's own file (empty name, size 0, its file_id)");
      }
      continue;
    }
    // A name is never a path: no folder, parent, drive, stream or control
    // character (the ONNX external-data CVEs came from such names).
    bool bad = name.empty() || name.size() > 255 || name == "." || name == "..";
    for (unsigned char c : name) bad |= c == '/' || c == '\\' || c == ':' || c < 0x20 || c == 0x7f;
    // [C-8.2.4]
    if (bad) {
      return Invalid(file, StrCat("shard ", k, " name \"", absl::CHexEscape(name), "\" is not a bare file name"));
    }
    // Two entries for one file, or one for the manifest file itself, would
    // let streams of different shards alias the same bytes.
    // [C-8.2.5]
    if (!names.insert(name).second || !ids.insert(shard.file_id()).second || shard.file_id() == file_id) {
      return Invalid(file, StrCat("shard ", k, " (\"", name, "\") repeats another shard or names the manifest file"));
    }
    if (shard.data_end() != 0) {
      parts = true;
      // A part's data section ends where its own manifest begins, which
      // leaves at least its footer after it.
      // [C-8.5.2]
      if (shard.data_end() < kHeaderSize || shard.size() < kHeaderSize + kFooterSize ||
          shard.data_end() > shard.size() - kFooterSize) {
        return Invalid(file, StrCat("shard ", k, " (\"", name, "\"): data_end ", shard.data_end(),
                                    " leaves no room for the part's manifest and footer in its ", shard.size(), " bytes"));
      }
    }
  }
  auto declared = [&](std::string_view feature) {
    return std::find(m.required_features().begin(), m.required_features().end(), feature) !=
           m.required_features().end();
  };
  // [C-8.2.6] [C-5.3.9]
  if (m.shards_size() > 1 && !declared("shards")) {
    return Invalid(file, "the manifest names sibling shards but does not declare the \"shards\" feature");
  }
  // [C-8.5.1]
  if (parts && !declared("part_shards")) {
    return Invalid(file, "the manifest names part shards (data_end) but does not declare the \"part_shards\" feature");
  }
  return absl::OkStatus();
}

ManifestValidator::ManifestValidator(const v1::Manifest& head, const std::string& file,
                                     const std::vector<uint64_t>& shard_data_end)
    : m_(head), file_(file), shard_data_end_(shard_data_end), extents_(shard_data_end.size()) {}

ManifestValidator::~ManifestValidator() = default;

absl::Status ManifestValidator::Begin(uint64_t tensor_count) {
  const v1::Manifest& m = m_;
  const std::string& file = file_;
  if (m.format_major() != kFormatMajor) {
    // [C-6.2.1]
    return Invalid(file, StrCat("manifest format_major ", m.format_major(), " disagrees with the header"));
  }
  BP_RETURN_IF_ERROR(ValidateFeatures(m.required_features(), file + ": required_features"));
  BP_RETURN_IF_ERROR(ValidateFeatures(m.optional_features(), file + ": optional_features"));
  if (!IsPowerOfTwo(m.alignment()) || m.alignment() < kMinAlignment || m.alignment() > kMaxAlignment) {
    // [C-6.2.5] [C-7.1.2]
    return Invalid(file, StrCat("alignment ", m.alignment(), " is not a power of two in [64, 2^30]"));
  }
  // Metadata entries are read from the wire: ReadMetadataWire (format/metadata_wire.h).
  // [C-9.3]
  if (tensor_count > kMaxTensors) {
    return TooMany(file, StrCat(tensor_count, " tensors exceed the limit of ", kMaxTensors));
  }
  zstd_declared_ = std::find(m.required_features().begin(), m.required_features().end(), "zstd") !=
                   m.required_features().end();
  view_bits_ = std::make_unique<ViewBits>();
  BP_RETURN_IF_ERROR(ValidateViewDeclarations(m, file, shard_data_end_, view_bits_.get()));
  names_.reserve(tensor_count);
  return absl::OkStatus();
}

absl::Status ManifestValidator::AddTensor(const v1::Tensor& t, const TensorChunks& chunks,
                                          std::string_view wire_name) {
  const std::string& file = file_;
  BP_RETURN_IF_ERROR(ValidateName(t.name(), "tensor name", file));
  if (wire_name != t.name()) return absl::InternalError(StrCat(file, ": tensor name not found in its record's bytes"));
  const auto stored_name = names_.InsertView(wire_name);
  // [C-6.3.3]
  if (!stored_name) return Invalid(file, StrCat("duplicate tensor name ", QuoteForDisplay(t.name(), 200)));
  auto where = [&] { return StrCat(file, ": tensor ", QuoteForDisplay(t.name())); };
  if (static_cast<uint64_t>(t.shape_size()) > kMaxDims) {
    // [C-6.6.2] [C-9.6]
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
    // [C-6.6.7] [C-9.7]
    return absl::ResourceExhaustedError(StrCat(where(), ": element count exceeds 2^56"));
  }
  // A dtype number this reader does not know (a later minor version's)
  // still lists; decoding it is refused [C-6.7.2].
  if (t.dtype() == v1::DTYPE_UNSPECIFIED) {
    // [C-6.7.2]
    return absl::DataLossError(StrCat(where(), ": dtype 0 (unspecified) is invalid"));
  }
  if (t.dtype() < 0 || t.dtype() > 255) {
    // [C-6.7.2]
    return absl::DataLossError(StrCat(where(), ": dtype ", t.dtype(), " is out of range"));
  }
  if (!IsValidCodecId(t.codec().id())) {
    // [C-6.8.1]
    return absl::DataLossError(StrCat(where(), ": invalid codec id \"", absl::CHexEscape(t.codec().id()), "\""));
  }
  if (static_cast<uint64_t>(t.codec().params_size()) > kMaxCodecParams) {
    // [C-6.8.2] [C-9.11]
    return absl::ResourceExhaustedError(StrCat(where(), ": more than 64 codec parameters"));
  }
  for (int k = 0; k < t.codec().params_size(); ++k) {
    const auto& p = t.codec().params(k);
    bool repeated = false;
    for (int j = 0; j < k; ++j) repeated |= t.codec().params(j).key() == p.key();
    if (p.key().empty() || p.key().size() > 64 || repeated) {
      // [C-6.8.3]
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
      // [C-6.9.1]
      return absl::DataLossError(StrCat(where(), ": two streams have the role \"", s.role(), "\""));
    }
    BP_RETURN_IF_ERROR(ValidateStream(s, chunks, static_cast<size_t>(k), t, *stored_name, rows, shard_data_end_, zstd_declared_, file, &extents_));
    BP_ASSIGN_OR_RETURN(uint64_t mask,
                        StreamViewMask(s, *view_bits_, static_cast<size_t>(m_.views_size()), [&] {
                          return StrCat(where(), " stream \"", s.role(), "\"");
                        }));
    if (m_.views_size() > 0 && s.length() > 0) {
      viewed_.push_back({s.shard(), s.offset(), s.offset() + s.length(), mask, *stored_name});
    }
  }
  return absl::OkStatus();
}

absl::Status ManifestValidator::Finish() {
  const std::string& file = file_;
  // No two streams share a byte.
  for (size_t shard = 0; shard < extents_.size(); ++shard) {
    auto& ex = extents_[shard];
    std::sort(ex.begin(), ex.end(), [](const Extent& a, const Extent& b) { return a.begin < b.begin; });
    for (size_t k = 1; k < ex.size(); ++k) {
      if (ex[k].begin < ex[k - 1].end) {
        // [C-7.2.1]
        return Invalid(file, StrCat("streams of tensors \"", ex[k - 1].tensor, "\" and \"", ex[k].tensor,
                                          "\" overlap in shard ", shard));
      }
    }
  }
  if (m_.views_size() > 0) BP_RETURN_IF_ERROR(ValidateViewLayout(m_, file, shard_data_end_.size(), viewed_));
  return absl::OkStatus();
}

}  // namespace boltpack::format
