#include "format/manifest_scan.h"

#include <string_view>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/escaping.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "common/limits.h"

namespace boltpack::format {
namespace {

// Field numbers of spec/boltpack.proto.
namespace field {
constexpr uint32_t kManifestRequiredFeatures = 3, kManifestOptionalFeatures = 4, kManifestShards = 6,
                   kManifestMetadata = 7, kManifestTensors = 8, kManifestViews = 10;
constexpr uint32_t kTensorName = 1, kTensorShape = 2, kTensorCodec = 4, kTensorStreams = 5,
                   kTensorRequiredFeatures = 6;
constexpr uint32_t kCodecParams = 2;
constexpr uint32_t kParamKey = 1, kParamValue = 2;  // also MetadataEntry's
constexpr uint32_t kValueArray = 8;
constexpr uint32_t kArrayUints = 2, kArrayInts = 3, kArrayF32s = 4, kArrayF64s = 5, kArrayBools = 6,
                   kArrayStrings = 7, kArrayArrays = 8;
constexpr uint32_t kStreamChunks = 9, kStreamViews = 10, kStreamPrefixBytes = 12;
constexpr uint32_t kChunkPrefixXxh3 = 8;
}  // namespace field
// The highest field number each message of format 1.2 has.
constexpr uint32_t kManifestLastField = 11, kTensorLastField = 6, kStreamLastField = 12, kChunkLastField = 8;

// manifest_validate.cc's limit on declared views; a stream names at most
// as many.
constexpr uint64_t kMaxViews = 64;
// Fields this reader does not know (a later minor version's) are kept by
// the parser, 16+ bytes each; a few per record is plenty.
constexpr uint64_t kMaxUnknownFields = 1ull << 22;

// The rule id of each limit this pass checks (spec/container.md's limits
// table), which its message names so that a user who hits a limit finds
// the rule, and whether a reader may lower it, without reading the code.
std::string_view LimitRule(std::string_view what) {
  static constexpr std::pair<std::string_view, std::string_view> kRules[] = {
      {"tensors", "C-9.3"},          {"metadata entries", "C-9.4"}, {"dimensions", "C-9.6"},
      {"streams", "C-9.8"},          {"chunks", "C-9.9"},           {"prefix_bytes", "C-9.10"},
      {"prefix_xxh3 in a chunk", "C-9.10"}, {"codec parameters", "C-9.11"}, {"features", "C-9.12"},
      {"shards", "C-9.13"},          {"views", "C-9.16"}};
  for (const auto& [limit, rule] : kRules) {
    if (limit == what) return rule;
  }
  return "C-9.1";
}

enum WireType { kVarint = 0, kFixed64 = 1, kLength = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

struct Field {
  uint32_t number = 0;
  int wire = 0;
  absl::Span<const uint8_t> bytes;  // kLength: the payload
};

// Reads fields one by one; false at the end or on malformed data (which
// ends the scan: the parser then reports it).
class Wire {
 public:
  explicit Wire(absl::Span<const uint8_t> b) : p_(b.data()), end_(b.data() + b.size()) {}

  bool Next(Field* f) {
    uint64_t tag = 0;
    if (p_ == end_ || !Varint(&tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX) return false;
    f->number = static_cast<uint32_t>(tag >> 3);
    f->wire = static_cast<int>(tag & 7);
    f->bytes = {};
    return SkipPayload(*f, f, 0);
  }
  bool malformed() const { return malformed_; }

 private:
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64 && p_ != end_; shift += 7) {
      const uint8_t byte = *p_++;
      *v |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    malformed_ = true;
    return false;
  }
  bool Skip(uint64_t n) {
    if (n > static_cast<uint64_t>(end_ - p_)) return malformed_ = true, false;
    p_ += n;
    return true;
  }
  // Moves past the payload of `f` (groups up to their end tag).
  bool SkipPayload(const Field& f, Field* out, int depth) {
    uint64_t v = 0;
    switch (f.wire) {
      case kVarint: return Varint(&v);
      case kFixed64: return Skip(8);
      case kFixed32: return Skip(4);
      case kLength: {
        if (!Varint(&v) || v > static_cast<uint64_t>(end_ - p_)) return malformed_ = true, false;
        out->bytes = absl::Span<const uint8_t>(p_, v);
        p_ += v;
        return true;
      }
      case kStartGroup: {
        if (depth > 64) return malformed_ = true, false;
        Field inner;
        for (;;) {
          uint64_t tag = 0;
          if (!Varint(&tag)) return false;
          inner.number = static_cast<uint32_t>(tag >> 3);
          inner.wire = static_cast<int>(tag & 7);
          if (inner.wire == kEndGroup) return inner.number == f.number || (malformed_ = true, false);
          if (!SkipPayload(inner, &inner, depth + 1)) return false;
        }
      }
      default: return malformed_ = true, false;
    }
  }

  const uint8_t* p_;
  const uint8_t* end_;
  bool malformed_ = false;
};

// Elements of a repeated scalar field seen once: packed (one payload of
// varints or fixed-size values) or one value per occurrence.
uint64_t RepeatedCount(const Field& f, int fixed_size) {
  if (f.wire != kLength) return 1;
  if (fixed_size > 0) return f.bytes.size() / fixed_size;
  uint64_t n = 0;
  for (uint8_t b : f.bytes) n += (b & 0x80) == 0 ? 1 : 0;
  return n;
}

std::string Escaped(absl::Span<const uint8_t> name) {
  constexpr size_t kMax = 200;  // a message, not a dump
  std::string_view s(reinterpret_cast<const char*>(name.data()), std::min(name.size(), kMax));
  return StrCat("\"", absl::CHexEscape(absl::string_view(s.data(), s.size())), name.size() > kMax ? "...\"" : "\"");
}

class Scanner {
 public:
  explicit Scanner(const std::string& file) : file_(file) {}

  absl::Status Manifest(absl::Span<const uint8_t> bytes) {
    uint64_t tensors = 0, metadata = 0, features = 0, optional = 0, shards = 0, views = 0;
    Wire w(bytes);
    Field f;
    while (w.Next(&f)) {
      if (f.number > kManifestLastField) BP_RETURN_IF_ERROR(Unknown());
      if (f.wire != kLength) continue;
      switch (f.number) {
        case field::kManifestTensors: BP_RETURN_IF_ERROR(Tensor(f.bytes, tensors++)); break;
        case field::kManifestMetadata:
          ++metadata;
          BP_RETURN_IF_ERROR(Entry(f.bytes, [] { return std::string("metadata"); }));
          break;
        case field::kManifestRequiredFeatures: ++features; break;
        case field::kManifestOptionalFeatures: ++optional; break;
        case field::kManifestShards: ++shards; break;
        case field::kManifestViews: ++views; break;
        default: break;  // strings, the elastic manifest: bounded by their bytes
      }
    }
    // [C-9.3]
    BP_RETURN_IF_ERROR(Limit(tensors, kMaxTensors, "tensors"));
    // [C-9.4]
    BP_RETURN_IF_ERROR(Limit(metadata, kMaxMetadataEntries, "metadata entries"));
    // [C-9.12]
    BP_RETURN_IF_ERROR(More(features, kMaxFeatures, "features", [] { return std::string("required_features"); }));
    BP_RETURN_IF_ERROR(More(optional, kMaxFeatures, "features", [] { return std::string("optional_features"); }));
    // [C-9.13]
    BP_RETURN_IF_ERROR(More(shards, kMaxShards, "shards", [] { return std::string(); }));
    // [C-9.16]
    return Limit(views, kMaxViews, "views");
  }

 private:
  // `where` names the record, and is only called on failure.
  absl::Status Limit(uint64_t n, uint64_t limit, std::string_view what,
                     absl::FunctionRef<std::string()> where = [] { return std::string(); }) const {
    if (n <= limit) return absl::OkStatus();
    const std::string at = where();
    return absl::ResourceExhaustedError(
        StrCat(file_, ": ", at, at.empty() ? "" : ": ", n, " ", what, " exceed the limit of ", limit, " (spec ",
               LimitRule(what), ")"));
  }
  // The validator's wording for the limits of one record ("tensor "w": more
  // than 64 streams"), so that a file fails the same way with or without
  // this pass.
  absl::Status More(uint64_t n, uint64_t limit, std::string_view what, absl::FunctionRef<std::string()> where) const {
    if (n <= limit) return absl::OkStatus();
    const std::string at = where();
    return absl::ResourceExhaustedError(
        StrCat(file_, at.empty() ? "" : ": ", at, ": more than ", limit, " ", what, " (spec ", LimitRule(what), ")"));
  }
  absl::Status Unknown() {
    if (++unknown_ <= kMaxUnknownFields) return absl::OkStatus();
    return absl::ResourceExhaustedError(StrCat(file_, ": the manifest holds more than ", kMaxUnknownFields,
                                               " fields this reader does not know"));
  }

  absl::Status Tensor(absl::Span<const uint8_t> bytes, uint64_t index) {
    absl::Span<const uint8_t> name;
    uint64_t dims = 0, streams = 0, features = 0, params = 0;
    std::vector<absl::Span<const uint8_t>> stream_bytes, param_bytes;
    Wire w(bytes);
    Field f;
    while (w.Next(&f)) {
      // A known field of another wire type is an unknown field to protobuf.
      const uint32_t number = f.wire == kLength || f.number == field::kTensorShape ? f.number : 0;
      switch (number) {
        case field::kTensorName: name = f.bytes; break;
        case field::kTensorShape: dims += RepeatedCount(f, 0); break;
        case field::kTensorStreams:
          if (++streams <= kMaxStreamsPerTensor) stream_bytes.push_back(f.bytes);
          break;
        case field::kTensorRequiredFeatures: ++features; break;
        case field::kTensorCodec: {
          Wire c(f.bytes);
          Field p;
          while (c.Next(&p)) {
            if (p.number != field::kCodecParams || p.wire != kLength) continue;
            if (++params <= kMaxCodecParams) param_bytes.push_back(p.bytes);
          }
          break;
        }
        default:
          if (f.number > kTensorLastField) BP_RETURN_IF_ERROR(Unknown());
      }
    }
    auto where = [&] { return name.empty() ? StrCat("tensor #", index) : StrCat("tensor ", Escaped(name)); };
    // [C-9.6]
    BP_RETURN_IF_ERROR(Limit(dims, kMaxDims, "dimensions", where));
    // [C-9.8]
    BP_RETURN_IF_ERROR(More(streams, kMaxStreamsPerTensor, "streams", where));
    // [C-9.12]
    BP_RETURN_IF_ERROR(More(features, kMaxFeatures, "features", where));
    // [C-9.11]
    BP_RETURN_IF_ERROR(More(params, kMaxCodecParams, "codec parameters", where));
    for (auto p : param_bytes) {
      BP_RETURN_IF_ERROR(Entry(p, [&] { return StrCat(where(), ": codec parameter"); }));
    }
    for (auto s : stream_bytes) BP_RETURN_IF_ERROR(Stream(s, where));
    return absl::OkStatus();
  }

  absl::Status Stream(absl::Span<const uint8_t> bytes, absl::FunctionRef<std::string()> where) {
    // Counts first, then the chunks: the stream's own limits are reported
    // before those of its chunks, as the validator does.
    uint64_t chunks = 0, views = 0, prefixes = 0;
    Wire w(bytes);
    Field f;
    while (w.Next(&f)) {
      if (f.number == field::kStreamChunks && f.wire == kLength) {
        ++chunks;
        if (++chunks_ > kMaxManifestChunks) {
          return absl::ResourceExhaustedError(
              StrCat(file_, ": ", where(), ": the manifest's streams hold more than ", kMaxManifestChunks, " chunks"));
        }
      } else if (f.number == field::kStreamViews && f.wire == kLength) {
        ++views;
      } else if (f.number == field::kStreamPrefixBytes) {
        prefixes += RepeatedCount(f, 0);
      } else if (f.number > kStreamLastField) {
        BP_RETURN_IF_ERROR(Unknown());
      }
    }
    // [C-9.9]
    BP_RETURN_IF_ERROR(More(chunks, kMaxChunksPerStream, "chunks", where));
    BP_RETURN_IF_ERROR(More(views, kMaxViews, "views", where));
    // [C-9.10]
    BP_RETURN_IF_ERROR(More(prefixes, kMaxLinePrefixes, "prefix_bytes", where));
    Wire again(bytes);
    while (again.Next(&f)) {
      if (f.number == field::kStreamChunks && f.wire == kLength) BP_RETURN_IF_ERROR(Chunk(f.bytes, where));
    }
    return absl::OkStatus();
  }

  absl::Status Chunk(absl::Span<const uint8_t> bytes, absl::FunctionRef<std::string()> where) {
    uint64_t prefixes = 0;
    Wire w(bytes);
    Field f;
    while (w.Next(&f)) {
      if (f.number == field::kChunkPrefixXxh3) prefixes += RepeatedCount(f, 8);
      if (f.number > kChunkLastField) BP_RETURN_IF_ERROR(Unknown());
    }
    return More(prefixes, kMaxLinePrefixes, "prefix_xxh3 in a chunk", where);
  }

  // A MetadataEntry or CodecParam: key, then a Value.
  absl::Status Entry(absl::Span<const uint8_t> bytes, absl::FunctionRef<std::string()> kind) {
    absl::Span<const uint8_t> key, value;
    Wire w(bytes);
    Field f;
    while (w.Next(&f)) {
      if (f.number == field::kParamKey) key = f.bytes;
      if (f.number == field::kParamValue) value = f.bytes;
    }
    Wire v(value);
    while (v.Next(&f)) {
      if (f.number == field::kValueArray && f.wire == kLength) {
        BP_RETURN_IF_ERROR(Array(f.bytes, 1, [&] { return StrCat(kind(), " ", Escaped(key)); }));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Array(absl::Span<const uint8_t> bytes, uint64_t depth, absl::FunctionRef<std::string()> where) {
    if (depth > kMaxArrayDepth) {
      // [C-9.14]
      return absl::ResourceExhaustedError(
          StrCat(file_, ": ", where(), ": arrays nested deeper than ", kMaxArrayDepth, " (spec C-9.14)"));
    }
    Wire w(bytes);
    Field f;
    while (w.Next(&f)) {
      uint64_t n = 0;
      switch (f.number) {
        case field::kArrayUints: case field::kArrayInts: case field::kArrayBools: n = RepeatedCount(f, 0); break;
        case field::kArrayF32s: n = RepeatedCount(f, 4); break;
        case field::kArrayF64s: n = RepeatedCount(f, 8); break;
        case field::kArrayStrings: n = 1; break;
        case field::kArrayArrays: n = 1; break;
        default: break;
      }
      array_elements_ += n;
      if (array_elements_ > kMaxMetadataArrayElements) {
        return absl::ResourceExhaustedError(StrCat(file_, ": ", where(), ": metadata arrays hold more than ",
                                                   kMaxMetadataArrayElements, " elements in all (spec C-9.19)"));
      }
      if (f.number == field::kArrayArrays && f.wire == kLength) BP_RETURN_IF_ERROR(Array(f.bytes, depth + 1, where));
    }
    return absl::OkStatus();
  }

  const std::string& file_;
  uint64_t chunks_ = 0;
  uint64_t array_elements_ = 0;
  uint64_t unknown_ = 0;
};

}  // namespace

absl::Status ScanManifestLimits(absl::Span<const uint8_t> manifest, const std::string& file) {
  return Scanner(file).Manifest(manifest);
}

}  // namespace boltpack::format
