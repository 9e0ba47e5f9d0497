// The golden vectors of spec/container.md (Appendix B), checked against this
// reader: every spec/vectors/valid/*.bolt opens, lists and decodes exactly as
// its .expected.json says; every spec/vectors/invalid/*.bolt fails at the
// stage, with the error class and message substring its
// .expected_error.txt gives.
//
// Where this implementation is known to differ from the spec, the entry in
// KnownDeviations() turns the failure into a logged note. The list is strict:
// once the code conforms, the test fails until the entry is removed.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "boltpack/budget_view.h"
#include "boltpack/elastic.h"
#include "boltpack/reader.h"
#include "boltpack/tensor_info.h"
#include "boltpack/types.h"
#include "boltpack/writer.h"
#include "format/layout.h"
#include "io/json.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using io::JsonValue;

// "<vector>/<check>" -> what this implementation does instead of the spec.
const std::map<std::string, std::string>& KnownDeviations() {
  static const auto* m = new std::map<std::string, std::string>{
  };
  return *m;
}

// Expects `conforms`, unless `key` is a known deviation: then expects the
// opposite (strict), so a fixed deviation is noticed.
void ExpectConforms(const std::string& key, bool conforms, const std::string& detail) {
  auto it = KnownDeviations().find(key);
  if (it == KnownDeviations().end()) {
    EXPECT_TRUE(conforms) << key << ": " << detail;
    return;
  }
  static std::set<std::string>* reported = new std::set<std::string>;
  if (conforms) {
    ADD_FAILURE() << key << " now conforms to the spec; remove it from KnownDeviations()";
  } else if (reported->insert(key).second) {
    std::cout << "[ KNOWN DEVIATION ] " << key << ": " << it->second << "\n    (" << detail << ")\n";
  }
}

std::string VectorDir() { return testing::SourceDir() + "/spec/vectors"; }

std::vector<std::string> VectorNames(const std::string& sub) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(VectorDir() + "/" + sub, ec)) {
    if (e.path().extension() == ".bolt") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Hex(const uint8_t* p, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s.push_back(kDigits[p[i] >> 4]);
    s.push_back(kDigits[p[i] & 15]);
  }
  return s;
}
std::string Hex(const std::string& s) { return Hex(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }
std::string HexU(uint64_t v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

const JsonValue& Get(const JsonValue& o, std::string_view key) {
  static const JsonValue kNull;
  const JsonValue* v = o.Find(key);
  if (v == nullptr) {
    ADD_FAILURE() << "expected.json lacks \"" << key << "\"";
    return kNull;
  }
  return *v;
}
uint64_t GetU(const JsonValue& o, std::string_view key) { return Get(o, key).uint64_value().value_or(~0ull); }
const std::string& GetS(const JsonValue& o, std::string_view key) { return Get(o, key).string_value(); }
std::vector<std::string> GetStrings(const JsonValue& o, std::string_view key) {
  std::vector<std::string> v;
  for (const auto& e : Get(o, key).array()) v.push_back(e.string_value());
  return v;
}

std::string CodeName(const absl::Status& s) { return absl::StatusCodeToString(s.code()); }

// ---------------------------------------------------------------------------
// Metadata

void ExpectValue(const MetaValue& got, const JsonValue& want, const std::string& where) {
  ASSERT_EQ(std::string(ValueTypeName(got.type)), GetS(want, "type")) << where;
  switch (got.type) {
    case ValueType::kUint8:
    case ValueType::kUint16:
    case ValueType::kUint32:
    case ValueType::kUint64:
      EXPECT_EQ(std::optional<uint64_t>(got.u), Get(want, "value").uint64_value()) << where;
      break;
    case ValueType::kInt8:
    case ValueType::kInt16:
    case ValueType::kInt32:
    case ValueType::kInt64:
      EXPECT_EQ(std::optional<int64_t>(got.i), Get(want, "value").int64_value()) << where;
      break;
    case ValueType::kFloat32:
      EXPECT_EQ(HexU(std::bit_cast<uint32_t>(got.f32), 8), GetS(want, "bits")) << where;
      break;
    case ValueType::kFloat64:
      EXPECT_EQ(HexU(std::bit_cast<uint64_t>(got.f64), 16), GetS(want, "bits")) << where;
      break;
    case ValueType::kBool:
      EXPECT_EQ(got.b, Get(want, "value").bool_value()) << where;
      break;
    case ValueType::kString:
      if (want.Find("hex") != nullptr) {
        EXPECT_EQ(Hex(got.s), GetS(want, "hex")) << where;
      } else {
        EXPECT_EQ(got.s, GetS(want, "value")) << where;
      }
      break;
    case ValueType::kArray: {
      EXPECT_EQ(std::string(ValueTypeName(got.element_type)), GetS(want, "element_type")) << where;
      const auto& el = Get(want, "elements").array();
      ASSERT_EQ(got.array_size(), el.size()) << where;
      for (size_t i = 0; i < el.size(); ++i) ExpectValue(got.element(i), el[i], where + "[" + std::to_string(i) + "]");
      break;
    }
    default:
      ADD_FAILURE() << where << ": unexpected type";
  }
}

// ---------------------------------------------------------------------------
// Tensors

void ExpectStream(const StreamInfo& s, const JsonValue& want, const std::string& where) {
  EXPECT_EQ(s.role, GetS(want, "role")) << where;
  EXPECT_EQ(s.shard, GetU(want, "shard")) << where;
  EXPECT_EQ(s.offset, GetU(want, "offset")) << where;
  EXPECT_EQ(s.length, GetU(want, "length")) << where;
  EXPECT_EQ(s.alignment, GetU(want, "alignment")) << where;
  EXPECT_EQ(HexU(s.xxh3, 16), GetS(want, "xxh3")) << where;
  std::string compression = s.compression == Compression::kNone   ? "none"
                            : s.compression == Compression::kZstd ? "zstd"
                                                                  : "compression-" + std::to_string(int(s.compression));
  EXPECT_EQ(compression, GetS(want, "compression")) << where;
  EXPECT_EQ(s.raw_length, GetU(want, "raw_length")) << where;
  // Format 1.1: "views" is listed only when the stream's list is not empty.
  std::vector<std::string> views;
  if (want.Find("views") != nullptr) views = GetStrings(want, "views");
  EXPECT_EQ(s.views, views) << where;
  // Format 1.2: "line_bytes" and "prefix_bytes" (and each chunk's
  // "prefix_xxh3") are listed only where the stream has line prefixes.
  uint64_t line_bytes = 0;
  std::vector<uint64_t> prefix_bytes;
  if (want.Find("line_bytes") != nullptr) line_bytes = GetU(want, "line_bytes");
  if (want.Find("prefix_bytes") != nullptr) {
    for (const auto& p : Get(want, "prefix_bytes").array()) prefix_bytes.push_back(p.uint64_value().value_or(~0ull));
  }
  EXPECT_EQ(s.line_bytes, line_bytes) << where;
  EXPECT_EQ(s.prefix_bytes, prefix_bytes) << where;
  const auto& chunks = Get(want, "chunks").array();
  ASSERT_EQ(s.chunks.size(), chunks.size()) << where;
  for (size_t k = 0; k < chunks.size(); ++k) {
    const ChunkInfo& c = s.chunks[k];
    const JsonValue& w = chunks[k];
    std::string at = where + " chunk " + std::to_string(k);
    EXPECT_EQ(c.stored_offset, GetU(w, "stored_offset")) << at;
    EXPECT_EQ(c.stored_length, GetU(w, "stored_length")) << at;
    EXPECT_EQ(c.raw_offset, GetU(w, "raw_offset")) << at;
    EXPECT_EQ(c.raw_length, GetU(w, "raw_length")) << at;
    EXPECT_EQ(c.first_row, GetU(w, "first_row")) << at;
    EXPECT_EQ(c.row_count, GetU(w, "row_count")) << at;
    EXPECT_EQ(HexU(c.xxh3, 16), GetS(w, "xxh3")) << at;
    std::vector<std::string> prefix_xxh3;
    for (uint64_t h : s.ChunkPrefixXxh3(k)) prefix_xxh3.push_back(HexU(h, 16));
    std::vector<std::string> want_prefix_xxh3;
    if (w.Find("prefix_xxh3") != nullptr) want_prefix_xxh3 = GetStrings(w, "prefix_xxh3");
    EXPECT_EQ(prefix_xxh3, want_prefix_xxh3) << at;
  }
}

absl::Status DecodeAll(const Reader& r, size_t t, OutputType out, std::vector<uint8_t>* bytes,
                       std::string_view view = "full") {
  auto n = r.DecodedBytes(t, out);
  if (!n.ok()) return n.status();
  if (*n > (uint64_t{1} << 28)) return absl::ResourceExhaustedError("test: decode larger than 256 MiB");
  bytes->assign(static_cast<size_t>(*n), 0xcd);
  return r.Decode(t, view, out, absl::MakeSpan(*bytes));
}

void ExpectF32Values(const std::vector<uint8_t>& bytes, const JsonValue& values, const std::string& where) {
  ASSERT_EQ(bytes.size(), 4 * values.array().size()) << where;
  for (size_t i = 0; i < values.array().size(); ++i) {
    float got;
    std::memcpy(&got, &bytes[4 * i], 4);
    const JsonValue& v = values.array()[i];
    std::string at = where + " value " + std::to_string(i);
    if (v.is_string()) {
      if (v.string_value() == "NaN") EXPECT_TRUE(std::isnan(got)) << at;
      else if (v.string_value() == "Infinity") EXPECT_EQ(got, INFINITY) << at;
      else if (v.string_value() == "-Infinity") EXPECT_EQ(got, -INFINITY) << at;
      else ADD_FAILURE() << at << ": bad value " << v.string_value();
    } else {
      // strtof on the text as written: exact, no detour through double.
      float want = std::strtof(v.number_text().c_str(), nullptr);
      EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << at << " (" << v.number_text() << ")";
    }
  }
}

// Row-range reads must give the same bytes as the matching slice of a full
// decode (chunked and compressed streams included).
void ExpectRowReads(const Reader& r, size_t t, const std::vector<uint8_t>& full, const std::string& where) {
  const TensorInfo& info = r.tensors()[t];
  const uint64_t rows = info.row_count();
  // A block codec's 1-D tensor stores whole blocks, not rows: its row reads
  // need whole blocks (codecs.md §0), which these ranges are not.
  if (rows == 0 || full.empty() || full.size() % rows != 0) return;
  const uint64_t row_bytes = full.size() / rows;
  std::vector<std::pair<uint64_t, uint64_t>> ranges = {{0, rows}, {0, 1}, {rows / 2, rows}};
  if (rows >= 3) ranges.push_back({1, rows - 1});
  for (auto [b, e] : ranges) {
    std::vector<uint8_t> got((e - b) * row_bytes, 0xcd);
    absl::Status s = r.DecodeRows(t, b, e, OutputType::kNative, absl::MakeSpan(got));
    ASSERT_TRUE(s.ok()) << where << " rows " << b << ".." << e << ": " << s;
    EXPECT_TRUE(std::equal(got.begin(), got.end(), full.begin() + static_cast<ptrdiff_t>(b * row_bytes)))
        << where << " rows " << b << ".." << e;
  }
}

void ExpectDecodes(const std::string& vector, const Reader& r, size_t t, const JsonValue& decode,
                   const std::string& view = "full") {
  std::string where = vector + ": tensor \"" + r.tensors()[t].name + "\"";
  if (view != "full") where += " in view \"" + view + "\"";
  std::vector<uint8_t> native;
  for (const auto& [out_name, want] : decode.object()) {
    auto out = OutputTypeFromName(out_name);
    ASSERT_TRUE(out.has_value()) << out_name;
    std::string at = where + " to " + out_name;
    std::vector<uint8_t> got;
    absl::Status s = DecodeAll(r, t, *out, &got, view);
    if (const JsonValue* err = want.Find("error")) {
      const std::string& cls = GetS(*err, "class");
      const std::string& msg = GetS(*err, "message");
      EXPECT_FALSE(s.ok()) << at << " decoded, expected " << cls;
      if (s.ok()) continue;
      EXPECT_NE(s.message().find(msg), absl::string_view::npos) << at << ": " << s;
      ExpectConforms(vector + "/decode", CodeName(s) == cls, at + ": expected " + cls + ", got " + s.ToString());
      continue;
    }
    ASSERT_TRUE(s.ok()) << at << ": " << s;
    if (const JsonValue* hex = want.Find("hex")) {
      EXPECT_EQ(Hex(got.data(), got.size()), hex->string_value()) << at;
    } else {
      EXPECT_EQ(got.size(), GetU(want, "bytes")) << at;
      EXPECT_EQ(HexU(format::Xxh3(got), 16), GetS(want, "xxh3")) << at;
    }
    if (const JsonValue* values = want.Find("values")) ExpectF32Values(got, *values, at);
    if (*out == OutputType::kNative) native = got;
  }
  if (!native.empty() && view == "full") ExpectRowReads(r, t, native, where);
}

// Format 1.1 (container.md §15): the views a reader offers, "full" first,
// with their ranges and the bytes a reader of each touches. A file that
// declares none offers only "full".
void ExpectViews(const std::string& vector, const Reader& r, const JsonValue& e) {
  const JsonValue* want = e.Find("views");
  if (want == nullptr) {
    ASSERT_EQ(r.views().size(), 1u) << vector;
    EXPECT_EQ(r.views()[0].name, "full") << vector;
    return;
  }
  const auto& views = want->array();
  ASSERT_EQ(r.views().size(), views.size()) << vector;
  for (size_t v = 0; v < views.size(); ++v) {
    const ViewInfo& got = r.views()[v];
    const std::string where = vector + ": view " + std::to_string(v);
    EXPECT_EQ(got.name, GetS(views[v], "name")) << where;
    // "full" is implicit: its description is the reader's own.
    if (views[v].Find("description") != nullptr) {
      EXPECT_EQ(got.description, GetS(views[v], "description")) << where;
    }
    EXPECT_EQ(got.bytes, GetU(views[v], "bytes")) << where;
    auto bytes = r.ViewBytes(got.name);
    ASSERT_TRUE(bytes.ok()) << where << ": " << bytes.status();
    EXPECT_EQ(*bytes, GetU(views[v], "bytes")) << where;
    const auto& ranges = Get(views[v], "ranges").array();
    ASSERT_EQ(got.ranges.size(), ranges.size()) << where;
    for (size_t k = 0; k < ranges.size(); ++k) {
      EXPECT_EQ(got.ranges[k].shard, GetU(ranges[k], "shard")) << where;
      EXPECT_EQ(got.ranges[k].offset, GetU(ranges[k], "offset")) << where;
      EXPECT_EQ(got.ranges[k].length, GetU(ranges[k], "length")) << where;
    }
  }
}

std::vector<uint64_t> GetUints(const JsonValue& o, std::string_view key) {
  std::vector<uint64_t> v;
  for (const auto& x : Get(o, key).array()) v.push_back(x.uint64_value().value_or(~0ull));
  return v;
}

// Format 1.1 (spec/elastic.md): the elastic manifest as the reader gives it.
void ExpectElastic(const std::string& vector, const Reader& r, const JsonValue& e) {
  const JsonValue* want = e.Find("elastic");
  if (want == nullptr) {
    EXPECT_EQ(r.elastic(), nullptr) << vector;
    return;
  }
  const ElasticManifest* got = r.elastic();
  ASSERT_NE(got, nullptr) << vector;
  EXPECT_EQ(got->version, GetU(*want, "version")) << vector;
  EXPECT_EQ(got->layer_count, GetU(*want, "layer_count")) << vector;
  EXPECT_EQ(got->layer_pattern, GetS(*want, "layer_pattern")) << vector;
  const auto& axes = Get(*want, "axes").array();
  ASSERT_EQ(got->axes.size(), axes.size()) << vector;
  for (size_t i = 0; i < axes.size(); ++i) {
    const ElasticAxis& a = got->axes[i];
    EXPECT_EQ(a.name, GetS(axes[i], "name")) << vector;
    EXPECT_EQ(a.scope == ElasticScope::kLayer ? "layer" : "global", GetS(axes[i], "scope")) << vector;
    EXPECT_EQ(a.granularity, GetU(axes[i], "granularity")) << vector;
    EXPECT_EQ(a.unit_elems, GetU(axes[i], "unit_elems")) << vector;
    EXPECT_EQ(a.parent, GetUints(axes[i], "parent")) << vector;
    // Format 1.2: "groups" only where an axis is grouped.
    const JsonValue* groups = axes[i].Find("groups");
    EXPECT_EQ(a.groups > 1 ? a.groups : 0, groups != nullptr ? GetU(axes[i], "groups") : 0) << vector;
  }
  const auto& bindings = Get(*want, "bindings").array();
  ASSERT_EQ(got->bindings.size(), bindings.size()) << vector;
  for (size_t i = 0; i < bindings.size(); ++i) {
    EXPECT_EQ(got->bindings[i].tensor, GetS(bindings[i], "tensor")) << vector;
    EXPECT_EQ(got->bindings[i].dims, GetStrings(bindings[i], "dims")) << vector;
    // Format 1.4: "flat" only where a binding is flat.
    const JsonValue* flat = bindings[i].Find("flat");
    EXPECT_EQ(got->bindings[i].flat, flat != nullptr && flat->bool_value()) << vector;
    // Format 1.2: "segmented" only where a binding has segmented dims.
    const JsonValue* segmented = bindings[i].Find("segmented");
    const auto& sds = got->bindings[i].segmented;
    ASSERT_EQ(sds.size(), segmented != nullptr ? segmented->array().size() : 0) << vector;
    for (size_t k = 0; k < sds.size(); ++k) {
      const JsonValue& want_sd = segmented->array()[k];
      EXPECT_EQ(sds[k].dim, GetU(want_sd, "dim")) << vector;
      const auto& segs = Get(want_sd, "segments").array();
      ASSERT_EQ(sds[k].segments.size(), segs.size()) << vector;
      for (size_t j = 0; j < segs.size(); ++j) {
        if (segs[j].Find("axis") != nullptr) {
          EXPECT_EQ(sds[k].segments[j].axis, GetS(segs[j], "axis")) << vector;
          EXPECT_EQ(sds[k].segments[j].fixed_elems, 0u) << vector;
        } else {
          EXPECT_TRUE(sds[k].segments[j].axis.empty()) << vector;
          EXPECT_EQ(sds[k].segments[j].fixed_elems, GetU(segs[j], "fixed_elems")) << vector;
        }
      }
    }
  }
  const auto& budgets = Get(*want, "budgets").array();
  ASSERT_EQ(got->budgets.size(), budgets.size()) << vector;
  for (size_t i = 0; i < budgets.size(); ++i) {
    const ElasticBudget& b = got->budgets[i];
    const std::string where = vector + ": budget " + std::to_string(i);
    EXPECT_EQ(b.name, GetS(budgets[i], "name")) << where;
    EXPECT_EQ(got->FindBudget(b.name), &b) << where;
    EXPECT_EQ(b.nested_in, GetS(budgets[i], "nested_in")) << where;
    std::vector<bool> keep;
    for (const auto& k : Get(budgets[i], "layer_keep").array()) keep.push_back(k.bool_value());
    EXPECT_EQ(b.layer_keep, keep) << where;
    const auto& sizes = Get(budgets[i], "sizes").array();
    ASSERT_EQ(b.sizes.size(), sizes.size()) << where;
    for (size_t k = 0; k < sizes.size(); ++k) {
      EXPECT_EQ(b.sizes[k].axis, GetS(sizes[k], "axis")) << where;
      EXPECT_EQ(b.sizes[k].counts, GetUints(sizes[k], "counts")) << where;
    }
  }
}

// Format 1.2 (spec/elastic.md §1): where a vector lists "budget_runs", every
// budget keeps exactly those runs of every listed tensor (and no other
// tensor).
void ExpectBudgetRuns(const std::string& vector, const Reader& r, const JsonValue& e) {
  const JsonValue* want = e.Find("budget_runs");
  if (want == nullptr) return;
  for (const auto& budget : want->array()) {
    const std::string name = GetS(budget, "budget");
    const std::string where = vector + ": budget " + name;
    auto got = BudgetTensors(r, name);
    ASSERT_TRUE(got.ok()) << where << ": " << got.status();
    const auto& tensors = Get(budget, "tensors").array();
    ASSERT_EQ(got->size(), tensors.size()) << where;
    for (size_t t = 0; t < tensors.size(); ++t) {
      EXPECT_EQ((*got)[t].name, GetS(tensors[t], "tensor")) << where;
      std::vector<std::vector<ElasticRun>> runs;
      for (const auto& dim : Get(tensors[t], "runs").array()) {
        runs.emplace_back();
        for (const auto& run : dim.array()) {
          runs.back().push_back({run.array()[0].uint64_value().value_or(~0ull),
                                 run.array()[1].uint64_value().value_or(~0ull)});
        }
      }
      EXPECT_EQ((*got)[t].runs, runs) << where << ": " << (*got)[t].name;
    }
  }
}

// A dtype or compression of a later format version: this writer cannot
// write it into the version it writes (spec/container.md §5.1).
bool LaterVersionRecord(const TensorInfo& t) {
  if (static_cast<int>(t.dtype) > kMaxDType) return true;
  for (const auto& s : t.streams) {
    if (s.compression != Compression::kNone && s.compression != Compression::kZstd) return true;
  }
  return false;
}

// Stored bytes can be copied whatever the codec or features: copy every
// tensor with Writer::CopyTensor and compare the copy's records. A tensor
// of a later version's dtype or compression is refused, naming it.
void ExpectCopy(const std::string& vector, const Reader& r) {
  const std::string out = testing::MakeTempDir() + "/copy.bolt";
  WriterOptions options;
  options.alignment = r.alignment();
  auto w = Writer::Create(out, options);
  ASSERT_TRUE(w.ok()) << w.status();
  std::vector<size_t> copied;
  for (size_t t = 0; t < r.tensors().size(); ++t) {
    absl::Status s = (*w)->CopyTensor(r, t);
    if (LaterVersionRecord(r.tensors()[t])) {
      EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << vector << ": " << s;
      EXPECT_NE(s.message().find("is a later format version's, which this version cannot write; not copied"),
                std::string::npos) << s;
      EXPECT_NE(s.message().find("\"" + r.tensors()[t].name + "\""), std::string::npos) << s;
      continue;
    }
    ASSERT_TRUE(s.ok()) << vector << ": copy of tensor " << t << ": " << s;
    copied.push_back(t);
  }
  ASSERT_TRUE((*w)->Finish().ok());
  auto copy = Reader::Open(out);
  ASSERT_TRUE(copy.ok()) << vector << ": the copy does not open: " << copy.status();
  ASSERT_EQ((*copy)->tensors().size(), copied.size());
  EXPECT_TRUE((*copy)->VerifyContainer().ok());
  // Format 1.2: a copy that keeps line prefixes is a 1.2 file.
  bool prefixes = false;
  for (const auto& t : r.tensors()) {
    for (const auto& s : t.streams) prefixes |= !s.prefix_bytes.empty();
  }
  if (prefixes) {
    EXPECT_EQ((*copy)->version().minor, 2u) << vector;
  }
  std::set<std::string> copy_features((*copy)->required_features().begin(), (*copy)->required_features().end());
  for (size_t t = 0; t < copied.size(); ++t) {
    const TensorInfo& a = r.tensors()[copied[t]];
    const TensorInfo& b = (*copy)->tensors()[t];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.shape, b.shape);
    EXPECT_EQ(a.dtype, b.dtype);
    EXPECT_EQ(a.codec_id, b.codec_id);
    ASSERT_EQ(a.streams.size(), b.streams.size());
    for (size_t k = 0; k < a.streams.size(); ++k) {
      EXPECT_EQ(a.streams[k].xxh3, b.streams[k].xxh3) << vector << ": " << a.name;
      EXPECT_EQ(a.streams[k].compression, b.streams[k].compression);
      EXPECT_EQ(a.streams[k].raw_length, b.streams[k].raw_length);
      EXPECT_EQ(a.streams[k].chunks.size(), b.streams[k].chunks.size());
      // Format 1.2: a copy keeps the line-prefix checksums it checked.
      EXPECT_EQ(a.streams[k].line_bytes, b.streams[k].line_bytes) << vector << ": " << a.name;
      EXPECT_EQ(a.streams[k].prefix_bytes, b.streams[k].prefix_bytes) << vector << ": " << a.name;
      EXPECT_EQ(a.streams[k].prefix_xxh3, b.streams[k].prefix_xxh3) << vector << ": " << a.name;
    }
    for (const auto& f : b.required_features) copy_features.insert(f);
  }
  // A feature the copier does not implement must travel with the bytes
  // (spec §5.3), or the copy would claim to be decodable without it.
  bool kept = true;
  std::string lost;
  for (const auto& f : r.missing_features()) {
    if (copy_features.count(f) == 0) {
      kept = false;
      lost += " " + f;
    }
  }
  ExpectConforms(vector + "/copy_features", kept, "lost:" + lost);
}

// `sub`: "valid", or "codecs" for make_codec_vectors' vectors.
void CheckValidVector(const std::string& sub, const std::string& name) {
  const std::string base = VectorDir() + "/" + sub + "/" + name;
  auto expected = io::ParseJson(ReadText(base + ".expected.json"));
  ASSERT_TRUE(expected.ok()) << name << ".expected.json: " << expected.status();
  const JsonValue& e = *expected;

  auto opened = Reader::Open(base + ".bolt");
  ASSERT_TRUE(opened.ok()) << name << ": " << opened.status();
  const Reader& r = **opened;

  EXPECT_EQ(r.version().major, GetU(e, "format_major"));
  EXPECT_EQ(r.version().minor, GetU(e, "format_minor"));
  EXPECT_EQ(r.file_size(), GetU(e, "file_size"));
  EXPECT_EQ(r.alignment(), GetU(e, "alignment"));
  EXPECT_EQ(r.writer(), GetS(e, "writer"));
  EXPECT_EQ(r.required_features(), GetStrings(e, "required_features"));
  EXPECT_EQ(r.missing_features(), GetStrings(e, "missing_features"));

  const auto& md = Get(e, "metadata").array();
  ASSERT_EQ(r.metadata().size(), md.size());
  for (size_t i = 0; i < md.size(); ++i) {
    EXPECT_EQ(r.metadata()[i].first, GetS(md[i], "key")) << "metadata entry " << i;
    ExpectValue(r.metadata()[i].second, md[i], name + ": metadata \"" + r.metadata()[i].first + "\"");
  }

  const auto& tensors = Get(e, "tensors").array();
  ASSERT_EQ(r.tensors().size(), tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    const TensorInfo& info = r.tensors()[t];
    const JsonValue& want = tensors[t];
    const std::string where = name + ": tensor \"" + info.name + "\"";
    EXPECT_EQ(info.name, GetS(want, "name"));
    EXPECT_EQ(r.FindTensor(info.name), std::optional<size_t>(t)) << where;
    std::vector<uint64_t> shape;
    for (const auto& d : Get(want, "shape").array()) shape.push_back(d.uint64_value().value_or(~0ull));
    EXPECT_EQ(info.shape, shape) << where;
    EXPECT_EQ(std::string(DTypeName(info.dtype)), GetS(want, "dtype")) << where;
    EXPECT_EQ(info.codec_id, GetS(want, "codec")) << where;
    const auto& params = Get(want, "codec_params").array();
    ASSERT_EQ(info.codec_params.size(), params.size()) << where;
    for (size_t p = 0; p < params.size(); ++p) {
      EXPECT_EQ(info.codec_params[p].first, GetS(params[p], "key")) << where;
      ExpectValue(info.codec_params[p].second, params[p], where + " param " + info.codec_params[p].first);
    }
    EXPECT_EQ(info.required_features, GetStrings(want, "required_features")) << where;
    const auto& streams = Get(want, "streams").array();
    ASSERT_EQ(info.streams.size(), streams.size()) << where;
    for (size_t k = 0; k < streams.size(); ++k) {
      ExpectStream(info.streams[k], streams[k], where + " stream " + std::to_string(k));
      // Stored bytes are reachable (zero-copy) whatever the codec.
      auto stored = r.StoredStream(t, k);
      ASSERT_TRUE(stored.ok()) << where << ": " << stored.status();
      EXPECT_EQ(HexU(format::Xxh3(*stored), 16), GetS(streams[k], "xxh3")) << where;
    }
  }

  absl::Status verified = r.VerifyContainer();
  EXPECT_TRUE(verified.ok()) << name << ": " << verified;

  for (size_t t = 0; t < tensors.size(); ++t) {
    ExpectDecodes(name, r, t, Get(tensors[t], "decode"));
    if (const JsonValue* dv = tensors[t].Find("decode_views")) {
      for (const auto& [view, decode] : dv->object()) ExpectDecodes(name, r, t, decode, view);
    }
  }
  ExpectViews(name, r, e);
  ExpectElastic(name, r, e);
  ExpectBudgetRuns(name, r, e);

  ExpectCopy(name, r);
}

class ValidVectorTest : public ::testing::TestWithParam<std::string> {};
TEST_P(ValidVectorTest, ListsAndDecodesAsExpected) { CheckValidVector("valid", GetParam()); }

class CodecVectorTest : public ::testing::TestWithParam<std::string> {};
TEST_P(CodecVectorTest, ListsAndDecodesAsExpected) { CheckValidVector("codecs", GetParam()); }

struct ExpectedError {
  std::string stage, cls, message, rule;
  std::string target = "native";  // codec vectors: the target their decode asks for
};

ExpectedError ReadExpectedError(const std::string& path) {
  ExpectedError e;
  std::istringstream in(ReadText(path));
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon), value = line.substr(colon + 2);
    if (key == "stage") e.stage = value;
    else if (key == "class") e.cls = value;
    else if (key == "message") e.message = value;
    else if (key == "rule") e.rule = value;
    else if (key == "target") e.target = value;
  }
  return e;
}

// `sub`: "invalid", or "codecs/invalid" for make_codec_vectors' vectors.
void CheckInvalidVector(const std::string& sub, const std::string& name) {
  const std::string base = VectorDir() + "/" + sub + "/" + name;
  const ExpectedError want = ReadExpectedError(base + ".expected_error.txt");
  ASSERT_FALSE(want.stage.empty() || want.cls.empty() || want.message.empty()) << name << ".expected_error.txt";
  const std::string key = name + "/" + want.stage;
  const std::string spec = want.stage + " " + want.cls + " \"" + want.message + "\" (" + want.rule + ")";

  auto check = [&](const absl::Status& s) {
    bool ok = !s.ok() && CodeName(s) == want.cls && s.message().find(want.message) != absl::string_view::npos;
    ExpectConforms(key, ok, "expected " + spec + ", got " + (s.ok() ? std::string("OK") : s.ToString()));
  };

  auto opened = Reader::Open(base + ".bolt");
  if (want.stage == "open") {
    check(opened.status());
    return;
  }
  ASSERT_TRUE(opened.ok()) << name << " must open (it fails at " << want.stage << "): " << opened.status();
  const Reader& r = **opened;
  absl::Status verified = r.VerifyContainer();
  if (want.stage == "verify") {
    check(verified);
    return;
  }
  ASSERT_EQ(want.stage, "decode");
  // Decode-stage vectors break one rule only: the container verifies.
  EXPECT_TRUE(verified.ok()) << name << ": " << verified;
  const std::optional<OutputType> out = OutputTypeFromName(want.target);
  ASSERT_TRUE(out.has_value()) << name << ": target " << want.target;
  absl::Status first;
  for (size_t t = 0; t < r.tensors().size() && first.ok(); ++t) {
    std::vector<uint8_t> bytes;
    first = DecodeAll(r, t, *out, &bytes);
  }
  check(first);
}

class InvalidVectorTest : public ::testing::TestWithParam<std::string> {};
TEST_P(InvalidVectorTest, FailsAsExpected) { CheckInvalidVector("invalid", GetParam()); }

class CodecInvalidVectorTest : public ::testing::TestWithParam<std::string> {};
TEST_P(CodecInvalidVectorTest, FailsAsExpected) { CheckInvalidVector("codecs/invalid", GetParam()); }

std::string ParamName(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(SpecVectors, ValidVectorTest, ::testing::ValuesIn(VectorNames("valid")), ParamName);
INSTANTIATE_TEST_SUITE_P(SpecVectors, InvalidVectorTest, ::testing::ValuesIn(VectorNames("invalid")), ParamName);
INSTANTIATE_TEST_SUITE_P(SpecVectors, CodecVectorTest, ::testing::ValuesIn(VectorNames("codecs")), ParamName);
INSTANTIATE_TEST_SUITE_P(SpecVectors, CodecInvalidVectorTest, ::testing::ValuesIn(VectorNames("codecs/invalid")),
                         ParamName);

TEST(SpecVectorsTest, EveryVectorHasItsExpectation) {
  const auto valid = VectorNames("valid");
  const auto invalid = VectorNames("invalid");
  EXPECT_GE(valid.size(), 10u) << "spec/vectors/valid is missing or incomplete";
  EXPECT_GE(invalid.size(), 50u) << "spec/vectors/invalid is missing or incomplete";
  for (const auto& n : valid) {
    EXPECT_TRUE(std::filesystem::exists(VectorDir() + "/valid/" + n + ".expected.json")) << n;
  }
  for (const auto& n : invalid) {
    EXPECT_TRUE(std::filesystem::exists(VectorDir() + "/invalid/" + n + ".expected_error.txt")) << n;
  }
  // Every expectation file has its vector.
  for (const char* sub : {"valid", "invalid"}) {
    for (const auto& e : std::filesystem::directory_iterator(VectorDir() + "/" + sub)) {
      std::string f = e.path().filename().string();
      for (const char* suffix : {".expected.json", ".expected_error.txt"}) {
        std::string s = suffix;
        if (f.size() > s.size() && f.compare(f.size() - s.size(), s.size(), s) == 0) {
          EXPECT_TRUE(std::filesystem::exists(e.path().parent_path() / (f.substr(0, f.size() - s.size()) + ".bolt")))
              << f;
        }
      }
    }
  }
}

TEST(SpecVectorsTest, VectorsStaySmall) {
  uint64_t total = 0;
  for (const char* sub : {"valid", "invalid"}) {
    for (const auto& e : std::filesystem::directory_iterator(VectorDir() + "/" + sub)) {
      if (e.is_regular_file()) total += e.file_size();
    }
  }
  // 1.3's part vectors: 7 KiB; the kit's budget pins (elastic_renumber, budget_runs) and
  // limit_before_validity (conformance.md K-6.4/K-6.5, container.md C-9.20): 11 KiB.
  EXPECT_LT(total, 244u * 1024) << "spec/vectors grew past 244 KiB";
}

// The codec vectors (make_codec_vectors): every one has its expectation, and
// together they stay small.
TEST(SpecVectorsTest, CodecVectorsHaveExpectationsAndStaySmall) {
  const auto valid = VectorNames("codecs");
  const auto invalid = VectorNames("codecs/invalid");
  EXPECT_GE(valid.size(), 6u) << "spec/vectors/codecs is missing or incomplete";
  EXPECT_GE(invalid.size(), 20u) << "spec/vectors/codecs/invalid is missing or incomplete";
  for (const auto& n : valid) EXPECT_TRUE(std::filesystem::exists(VectorDir() + "/codecs/" + n + ".expected.json")) << n;
  for (const auto& n : invalid) {
    EXPECT_TRUE(std::filesystem::exists(VectorDir() + "/codecs/invalid/" + n + ".expected_error.txt")) << n;
  }
  uint64_t total = 0;
  for (const char* sub : {"codecs", "codecs/invalid"}) {
    for (const auto& e : std::filesystem::directory_iterator(VectorDir() + "/" + sub)) {
      if (e.is_regular_file()) total += e.file_size();
    }
  }
  EXPECT_LT(total, 400u * 1024) << "spec/vectors/codecs grew past 400 KiB";
}

}  // namespace
}  // namespace boltpack
