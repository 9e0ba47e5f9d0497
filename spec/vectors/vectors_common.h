// Shared plumbing of the golden-vector generators (make_vectors.cc,
// make_codec_vectors.cc): file and hex helpers, reference float conversions,
// the expected.json writer, hand assembly of files and the writer wrapper.
// Each generator is one translation unit that includes this once, so the
// definitions live in an unnamed namespace; one generator uses only part of
// them, hence the unused-function pragma.
#ifndef BOLTPACK_SPEC_VECTORS_VECTORS_COMMON_H_
#define BOLTPACK_SPEC_VECTORS_VECTORS_COMMON_H_

#include <zstd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <google/protobuf/unknown_field_set.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/codec.h"
#include "boltpack/reader.h"
#include "boltpack/types.h"
#include "boltpack/writer.h"
#include "boltpack_proto/boltpack.pb.h"
#include "common/sha256.h"
#include "common/str_cat.h"
#include "format/layout.h"
#include "common/limits.h"
#include "io/json.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"

namespace {

namespace bp = ::boltpack;
namespace fmt = ::boltpack::format;
namespace v1 = ::boltpack::v1;
using ::boltpack::StrCat;
using Bytes = std::vector<uint8_t>;
using bp::DType;
using bp::MetaValue;
using bp::ValueType;

static_assert(std::endian::native == std::endian::little, "vectors are written on a little-endian host");

constexpr const char* kWriterName = "make_vectors";

std::filesystem::path g_out;
std::filesystem::path g_scratch;
int g_mismatches = 0;

// ---------------------------------------------------------------------------
// Plumbing

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "make_vectors: %s\n", what.c_str());
  std::exit(1);
}

void Check(const absl::Status& s, const std::string& what) {
  if (!s.ok()) Die(StrCat(what, ": ", std::string(s.ToString())));
}

template <typename T>
T Take(absl::StatusOr<T> r, const std::string& what) {
  if (!r.ok()) Die(StrCat(what, ": ", std::string(r.status().ToString())));
  return std::move(r).value();
}

Bytes ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) Die(StrCat("cannot read ", p.string()));
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::filesystem::path& p, const Bytes& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  if (!out) Die(StrCat("cannot write ", p.string()));
}

void WriteText(const std::filesystem::path& p, const std::string& s) {
  WriteFile(p, Bytes(s.begin(), s.end()));
}

std::string Hex(const uint8_t* p, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s.push_back(kDigits[p[i] >> 4]);
    s.push_back(kDigits[p[i] & 15]);
  }
  return s;
}
std::string Hex(const Bytes& b) { return Hex(b.data(), b.size()); }
std::string Hex(const std::string& b) { return Hex(reinterpret_cast<const uint8_t*>(b.data()), b.size()); }

std::string HexU(uint64_t v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

uint64_t Xxh3(const Bytes& b) { return fmt::Xxh3(absl::MakeConstSpan(b)); }
uint64_t Xxh3(const std::string& s) {
  return fmt::Xxh3(absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

// Deterministic file_id: XXH3-64 of the vector's name (never 0).
uint64_t FileId(const std::string& name) { return Xxh3(name) | 1; }

void Put16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
void Put32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void Put64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

template <typename T>
Bytes Raw(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

uint32_t F32Bits(float f) { return std::bit_cast<uint32_t>(f); }
float BitsF32(uint32_t u) { return std::bit_cast<float>(u); }

// ---------------------------------------------------------------------------
// Reference conversions (spec/container.md §10.4), written independently of
// codecs/float_convert.h so that the vectors check the library.

// The f16 value with these bits, exactly (every f16 is a double).
double F16Value(uint16_t h) {
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000u) ? -v : v;
}

// Nearest f16 by exact arithmetic in double: round the magnitude to a
// multiple of the f16 quantum at its binade, ties to even; past 65520 (the
// midpoint between 65504 and 2^16) is infinity.
uint16_t RefF32ToF16(uint32_t u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7e00u);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const double x = std::fabs(static_cast<double>(BitsF32(u)));
  if (x >= 65520.0) return sign | 0x7c00u;
  int e = x == 0 ? -14 : std::ilogb(x);
  if (e < -14) e = -14;
  const double q = std::ldexp(1.0, e - 10);  // spacing of f16 values in this binade
  const double n = x / q;                      // exact: q is a power of two
  double r = std::floor(n);
  const double frac = n - r;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0)) r += 1;
  const double v = r * q;
  if (v == 0) return sign;
  if (v < std::ldexp(1.0, -14)) return sign | static_cast<uint16_t>(v / std::ldexp(1.0, -24));
  const int ve = std::ilogb(v);
  const int mant = static_cast<int>(v / std::ldexp(1.0, ve - 10)) - 1024;
  return sign | static_cast<uint16_t>(((ve + 15) << 10) | mant);
}

uint32_t RefF16ToF32(uint16_t h) {
  const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  if ((h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0) {
    return sign | 0x7fc00000u | (static_cast<uint32_t>(h & 0x03ffu) << 13);
  }
  if ((h & 0x7fffu) == 0x7c00u) return sign | 0x7f800000u;
  return F32Bits(static_cast<float>(F16Value(h)));
}

// Nearest bf16 by comparing distances exactly in double; ties to even; the
// value past the largest finite bf16 is 2^128 (IEEE: round as if the exponent
// were unbounded, then overflow to infinity).
uint16_t RefF32ToBF16(uint32_t u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  const uint32_t sign = u & 0x80000000u;
  const uint32_t a = u & 0x7fffffffu;
  if (a == 0x7f800000u) return static_cast<uint16_t>((sign | a) >> 16);
  const uint32_t lo = a & 0xffff0000u;
  const uint32_t hi = lo + 0x10000u;
  const double x = BitsF32(a);
  const double vlo = BitsF32(lo);
  const double vhi = hi >= 0x7f800000u ? std::ldexp(1.0, 128) : static_cast<double>(BitsF32(hi));
  const double dlo = x - vlo, dhi = vhi - x;
  uint32_t r = dlo < dhi ? lo : dhi < dlo ? hi : (((lo >> 16) & 1u) ? hi : lo);
  return static_cast<uint16_t>((sign | r) >> 16);
}

uint32_t RefBF16ToF32(uint16_t b) { return static_cast<uint32_t>(b) << 16; }

std::vector<uint32_t> ToF32Bits(DType from, const Bytes& b) {
  std::vector<uint32_t> out;
  const size_t n = b.size() / static_cast<size_t>(bp::DTypeSize(from));
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    switch (from) {
      case DType::kF32: { uint32_t u; std::memcpy(&u, &b[4 * i], 4); out.push_back(u); break; }
      case DType::kF16: { uint16_t h; std::memcpy(&h, &b[2 * i], 2); out.push_back(RefF16ToF32(h)); break; }
      case DType::kBF16: { uint16_t h; std::memcpy(&h, &b[2 * i], 2); out.push_back(RefBF16ToF32(h)); break; }
      case DType::kF64: { double d; std::memcpy(&d, &b[8 * i], 8); out.push_back(F32Bits(static_cast<float>(d))); break; }
      default: Die("ToF32Bits: not a float dtype");
    }
  }
  return out;
}

Bytes FromF32Bits(DType to, const std::vector<uint32_t>& v) {
  Bytes out;
  for (uint32_t u : v) {
    switch (to) {
      case DType::kF32: out.resize(out.size() + 4); std::memcpy(&out[out.size() - 4], &u, 4); break;
      case DType::kF16: { uint16_t h = RefF32ToF16(u); out.resize(out.size() + 2); std::memcpy(&out[out.size() - 2], &h, 2); break; }
      case DType::kBF16: { uint16_t h = RefF32ToBF16(u); out.resize(out.size() + 2); std::memcpy(&out[out.size() - 2], &h, 2); break; }
      default: Die("FromF32Bits: bad target");
    }
  }
  return out;
}

// Conversion between float dtypes as the spec defines it: a copy for equal
// types, otherwise through f32.
Bytes Convert(DType from, DType to, const Bytes& b) {
  if (from == to) return b;
  return FromF32Bits(to, ToF32Bits(from, b));
}

// ---------------------------------------------------------------------------
// A small JSON emitter (pretty, stable, numbers written exactly).

struct Json {
  enum Kind { kToken, kString, kArray, kObject };
  Kind kind = kToken;
  std::string text;
  std::vector<Json> items;
  // Keys and values side by side: std::pair<std::string, Json> would need
  // Json complete here, which clang with libstdc++ rejects.
  std::vector<std::string> keys;
  std::vector<Json> values;

  static Json Token(std::string t) { Json j; j.text = std::move(t); return j; }
  static Json Str(std::string s) { Json j; j.kind = kString; j.text = std::move(s); return j; }
  static Json Arr() { Json j; j.kind = kArray; return j; }
  static Json Obj() { Json j; j.kind = kObject; return j; }
  Json& Add(std::string key, Json v) {
    keys.push_back(std::move(key));
    values.push_back(std::move(v));
    return *this;
  }
  Json& Push(Json v) { items.push_back(std::move(v)); return *this; }
};

Json U(uint64_t v) { return Json::Token(std::to_string(v)); }
Json I(int64_t v) { return Json::Token(std::to_string(v)); }
Json Bool(bool b) { return Json::Token(b ? "true" : "false"); }
Json S(std::string s) { return Json::Str(std::move(s)); }
Json F32(float f) {
  if (std::isnan(f)) return S("NaN");
  if (std::isinf(f)) return S(f > 0 ? "Infinity" : "-Infinity");
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, f);
  return Json::Token(std::string(buf, r.ptr));
}
Json F64(double d) {
  if (std::isnan(d)) return S("NaN");
  if (std::isinf(d)) return S(d > 0 ? "Infinity" : "-Infinity");
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  return Json::Token(std::string(buf, r.ptr));
}
Json StrList(const std::vector<std::string>& v) {
  Json a = Json::Arr();
  for (const auto& s : v) a.Push(S(s));
  return a;
}

std::string Inline(const Json& j) {
  switch (j.kind) {
    case Json::kToken: return j.text;
    case Json::kString: return bp::io::JsonQuote(j.text);
    case Json::kArray: {
      std::string s = "[";
      for (size_t i = 0; i < j.items.size(); ++i) s += (i ? ", " : "") + Inline(j.items[i]);
      return s + "]";
    }
    case Json::kObject: {
      std::string s = "{";
      for (size_t i = 0; i < j.keys.size(); ++i) {
        s += (i ? ", " : "") + bp::io::JsonQuote(j.keys[i]) + ": " + Inline(j.values[i]);
      }
      return s + "}";
    }
  }
  return "";
}

bool HasContainer(const Json& j) {
  for (const auto& i : j.items) if (i.kind == Json::kArray || i.kind == Json::kObject) return true;
  for (const auto& v : j.values) if (v.kind == Json::kArray || v.kind == Json::kObject) {
    if (!v.items.empty() || !v.values.empty()) return true;
  }
  return false;
}

void Pretty(const Json& j, int indent, std::string* out) {
  std::string one = Inline(j);
  // Scalars, scalar lists (however long: hex and value lists) and short flat
  // objects stay on one line.
  if (j.kind == Json::kToken || j.kind == Json::kString ||
      (!HasContainer(j) && (j.kind == Json::kArray || one.size() + indent <= 150))) {
    *out += one;
    return;
  }
  std::string pad(indent + 2, ' ');
  if (j.kind == Json::kArray) {
    *out += "[\n";
    for (size_t i = 0; i < j.items.size(); ++i) {
      *out += pad;
      Pretty(j.items[i], indent + 2, out);
      *out += i + 1 < j.items.size() ? ",\n" : "\n";
    }
    *out += std::string(indent, ' ') + "]";
    return;
  }
  *out += "{\n";
  for (size_t i = 0; i < j.keys.size(); ++i) {
    *out += pad + bp::io::JsonQuote(j.keys[i]) + ": ";
    Pretty(j.values[i], indent + 2, out);
    *out += i + 1 < j.keys.size() ? ",\n" : "\n";
  }
  *out += std::string(indent, ' ') + "}";
}

std::string Render(const Json& j) {
  std::string s;
  Pretty(j, 0, &s);
  return s + "\n";
}

// ---------------------------------------------------------------------------
// Container plumbing: file ids, manifests, headers and footers.

fmt::Footer FooterOf(const Bytes& b) {
  if (b.size() < 128) Die("FooterOf: short file");
  return Take(fmt::ParseFooter(absl::MakeConstSpan(b).subspan(b.size() - 64), "vector"), "footer");
}

v1::Manifest ManifestOf(const Bytes& b) {
  fmt::Footer f = FooterOf(b);
  v1::Manifest m;
  if (!m.ParseFromArray(b.data() + f.manifest_offset, static_cast<int>(f.manifest_length))) Die("manifest parse");
  return m;
}

// Recomputes the header checksum after an edit of bytes 0..56.
void ResealHeader(Bytes& b) { Put64(b.data() + 56, fmt::Xxh3(absl::MakeConstSpan(b.data(), 56))); }
// Recomputes the footer checksum after an edit of footer bytes 0..48.
void ResealFooter(Bytes& b) {
  uint8_t* f = b.data() + b.size() - 64;
  Put64(f + 48, fmt::Xxh3(absl::MakeConstSpan(f, 48)));
}

void SetFileId(Bytes& b, uint64_t id) {
  Put64(b.data() + 24, id);
  ResealHeader(b);
  Put64(b.data() + b.size() - 64 + 32, id);
  ResealFooter(b);
}

// Replaces the manifest with `manifest_bytes` and writes a matching footer
// (same file_id and version as before).
Bytes RewrapBytes(const Bytes& b, const std::string& manifest_bytes) {
  fmt::Footer f = FooterOf(b);
  Bytes out(b.begin(), b.begin() + static_cast<ptrdiff_t>(f.manifest_offset));
  out.insert(out.end(), manifest_bytes.begin(), manifest_bytes.end());
  f.manifest_length = manifest_bytes.size();
  f.manifest_xxh3 = Xxh3(manifest_bytes);
  f.file_size = out.size() + 64;
  auto fb = fmt::EncodeFooter(f);
  out.insert(out.end(), fb.begin(), fb.end());
  return out;
}

std::string Serialize(const v1::Manifest& m) {
  std::string s;
  if (!m.SerializeToString(&s)) Die("serialize");
  return s;
}

Bytes Rewrap(const Bytes& b, const v1::Manifest& m) { return RewrapBytes(b, Serialize(m)); }

// Edits the manifest of `b` and rewraps it.
Bytes EditManifest(const Bytes& b, const std::function<void(v1::Manifest&)>& edit) {
  v1::Manifest m = ManifestOf(b);
  edit(m);
  return Rewrap(b, m);
}

v1::Tensor* FindTensor(v1::Manifest& m, const std::string& name) {
  for (auto& t : *m.mutable_tensors()) {
    if (t.name() == name) return &t;
  }
  Die(StrCat("no tensor ", name));
}

// A file assembled by hand: the header placeholder, then streams appended at
// aligned offsets with zero padding.
struct Assembly {
  Bytes bytes = Bytes(64, 0);
  uint64_t Append(const Bytes& data, uint64_t alignment) {
    while (bytes.size() % alignment != 0) bytes.push_back(0);
    uint64_t offset = bytes.size();
    bytes.insert(bytes.end(), data.begin(), data.end());
    return offset;
  }
  void SealHeader(const fmt::Header& h) {
    auto hb = fmt::EncodeHeader(h);
    std::memcpy(bytes.data(), hb.data(), hb.size());
  }
  // Header, manifest and footer for a complete file.
  Bytes Finish(const fmt::Header& h, const std::string& manifest_bytes) {
    SealHeader(h);
    Bytes out = bytes;
    fmt::Footer f;
    f.manifest_offset = out.size();
    f.manifest_length = manifest_bytes.size();
    f.manifest_xxh3 = Xxh3(manifest_bytes);
    f.format_major = h.format_major;
    f.format_minor = h.format_minor;
    f.file_id = h.file_id;
    f.file_size = out.size() + manifest_bytes.size() + 64;
    out.insert(out.end(), manifest_bytes.begin(), manifest_bytes.end());
    auto fb = fmt::EncodeFooter(f);
    out.insert(out.end(), fb.begin(), fb.end());
    return out;
  }
};

void SetStream(v1::Stream* s, const std::string& role, uint32_t shard, uint64_t offset, const Bytes& stored,
               uint64_t alignment) {
  s->set_role(role);
  s->set_shard(shard);
  s->set_offset(offset);
  s->set_length(stored.size());
  s->set_alignment(alignment);
  s->set_xxh3(Xxh3(stored));
  s->set_compression(v1::COMPRESSION_NONE);
  s->set_raw_length(stored.size());
}

// ---------------------------------------------------------------------------
// Tensors: what goes in, what a reader must give back.

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> shape;
  DType dtype = DType::kF32;
  std::string codec = "f32";
  Bytes source;  // row-major elements of `dtype`

  // The element type the codec stores.
  DType Stored() const {
    if (codec == "f32") return DType::kF32;
    if (codec == "f16") return DType::kF16;
    if (codec == "bf16") return DType::kBF16;
    return dtype;  // raw
  }
  Bytes StoredBytes() const { return codec == "raw" ? source : Convert(dtype, Stored(), source); }
};

TensorSpec F32Tensor(std::string name, std::vector<uint64_t> shape, std::vector<float> v, std::string codec = "f32") {
  return TensorSpec{std::move(name), std::move(shape), DType::kF32, std::move(codec), Raw(v)};
}
TensorSpec F32BitsTensor(std::string name, std::vector<uint64_t> shape, std::vector<uint32_t> v,
                         std::string codec = "f32") {
  return TensorSpec{std::move(name), std::move(shape), DType::kF32, std::move(codec), Raw(v)};
}

Json ErrorJson(const std::string& cls, const std::string& message) {
  return Json::Obj().Add("class", S(cls)).Add("message", S(message));
}

Json BytesJson(const Bytes& b, bool with_f32_values) {
  Json o = Json::Obj();
  if (b.size() <= 4096) {
    o.Add("hex", S(Hex(b)));
  } else {
    o.Add("bytes", U(b.size())).Add("xxh3", S(HexU(Xxh3(b), 16))).Add("sha256", S(bp::Sha256Hex(b)));
  }
  if (with_f32_values && b.size() <= 4096) {
    Json values = Json::Arr();
    for (size_t i = 0; i + 4 <= b.size(); i += 4) {
      float f;
      std::memcpy(&f, &b[i], 4);
      values.Push(F32(f));
    }
    o.Add("values", values);
  }
  return o;
}

// The decodes a conforming reader produces for a tensor of a raw codec.
Json DecodeJson(const TensorSpec& t) {
  const DType stored = t.Stored();
  const Bytes st = t.StoredBytes();
  Json d = Json::Obj();
  d.Add("native", BytesJson(st, false));
  const std::pair<const char*, DType> outs[] = {{"f32", DType::kF32}, {"f16", DType::kF16}, {"bf16", DType::kBF16}};
  // Float targets only from stored f32/f16/bf16 (§10.3): "raw" holding F64
  // or any other dtype decodes to its native bytes only.
  const bool float_stored = stored == DType::kF32 || stored == DType::kF16 || stored == DType::kBF16;
  for (const auto& [name, to] : outs) {
    if (float_stored) {
      d.Add(name, BytesJson(Convert(stored, to, st), to == DType::kF32));
    } else {
      d.Add(name, Json::Obj().Add("error", ErrorJson("INVALID_ARGUMENT", "cannot decode")));
    }
  }
  return d;
}

Json DecodeErrorJson(const std::string& cls, const std::string& message) {
  Json d = Json::Obj();
  for (const char* out : {"native", "f32", "f16", "bf16"}) d.Add(out, Json::Obj().Add("error", ErrorJson(cls, message)));
  return d;
}

Json StreamJson(const v1::Stream& s) {
  Json o = Json::Obj();
  o.Add("role", S(s.role()))
      .Add("shard", U(s.shard()))
      .Add("offset", U(s.offset()))
      .Add("length", U(s.length()))
      .Add("alignment", U(s.alignment()))
      .Add("xxh3", S(HexU(s.xxh3(), 16)))
      .Add("compression", S(s.compression() == v1::COMPRESSION_NONE   ? std::string("none")
                            : s.compression() == v1::COMPRESSION_ZSTD ? std::string("zstd")
                                                                      : "compression-" + std::to_string(s.compression())))
      .Add("raw_length", U(s.raw_length()));
  // Format 1.1: written only when the list is not empty, so that the 1.0
  // expectations keep their bytes.
  if (s.views_size() > 0) o.Add("views", StrList({s.views().begin(), s.views().end()}));
  // Format 1.2 line-prefix checksums: written only where present, so that
  // the 1.0 and 1.1 expectations keep their bytes.
  if (s.line_bytes() != 0 || s.prefix_bytes_size() > 0) {
    Json prefixes = Json::Arr();
    for (uint64_t p : s.prefix_bytes()) prefixes.Push(U(p));
    o.Add("line_bytes", U(s.line_bytes())).Add("prefix_bytes", prefixes);
  }
  Json chunks = Json::Arr();
  for (const auto& c : s.chunks()) {
    Json chunk = Json::Obj()
                     .Add("stored_offset", U(c.stored_offset()))
                     .Add("stored_length", U(c.stored_length()))
                     .Add("raw_offset", U(c.raw_offset()))
                     .Add("raw_length", U(c.raw_length()))
                     .Add("first_row", U(c.first_row()))
                     .Add("row_count", U(c.row_count()))
                     .Add("xxh3", S(HexU(c.xxh3(), 16)));
    if (c.prefix_xxh3_size() > 0) {
      Json hashes = Json::Arr();
      for (uint64_t h : c.prefix_xxh3()) hashes.Push(S(HexU(h, 16)));
      chunk.Add("prefix_xxh3", hashes);
    }
    chunks.Push(std::move(chunk));
  }
  o.Add("chunks", chunks);
  return o;
}

Json ParamJson(const v1::CodecParam& p);

// Tensor record as the manifest states it, plus the expected decodes.
Json TensorJson(const v1::Tensor& t, Json decode) {
  Json o = Json::Obj();
  o.Add("name", S(t.name()));
  Json shape = Json::Arr();
  for (uint64_t d : t.shape()) shape.Push(U(d));
  o.Add("shape", shape);
  o.Add("dtype", S(std::string(bp::DTypeName(static_cast<DType>(t.dtype())))));
  o.Add("codec", S(t.codec().id()));
  Json params = Json::Arr();
  for (const auto& p : t.codec().params()) params.Push(ParamJson(p));
  o.Add("codec_params", params);
  o.Add("required_features", StrList({t.required_features().begin(), t.required_features().end()}));
  Json streams = Json::Arr();
  for (const auto& s : t.streams()) streams.Push(StreamJson(s));
  o.Add("streams", streams);
  o.Add("decode", std::move(decode));
  return o;
}

// ---------------------------------------------------------------------------
// Metadata values as JSON (Appendix B.1).

bool IsUnsigned(ValueType t) {
  return t == ValueType::kUint8 || t == ValueType::kUint16 || t == ValueType::kUint32 || t == ValueType::kUint64;
}
bool IsSigned(ValueType t) {
  return t == ValueType::kInt8 || t == ValueType::kInt16 || t == ValueType::kInt32 || t == ValueType::kInt64;
}

Json ValueJson(const MetaValue& v, Json o = Json::Obj()) {
  o.Add("type", S(std::string(bp::ValueTypeName(v.type))));
  if (IsUnsigned(v.type)) {
    o.Add("value", U(v.u));
  } else if (IsSigned(v.type)) {
    o.Add("value", I(v.i));
  } else if (v.type == ValueType::kFloat32) {
    o.Add("value", F32(v.f32)).Add("bits", S(HexU(F32Bits(v.f32), 8)));
  } else if (v.type == ValueType::kFloat64) {
    o.Add("value", F64(v.f64)).Add("bits", S(HexU(std::bit_cast<uint64_t>(v.f64), 16)));
  } else if (v.type == ValueType::kBool) {
    o.Add("value", Bool(v.b));
  } else if (v.type == ValueType::kString) {
    if (bp::io::IsValidUtf8(v.s)) o.Add("value", S(v.s));
    else o.Add("hex", S(Hex(v.s)));
  } else if (v.type == ValueType::kArray) {
    o.Add("element_type", S(std::string(bp::ValueTypeName(v.element_type))));
    Json elements = Json::Arr();
    for (size_t k = 0; k < v.array_size(); ++k) elements.Push(ValueJson(v.element(k)));
    o.Add("elements", elements);
  }
  return o;
}

MetaValue FromProtoValue(const v1::Value& v);
MetaValue FromProtoArray(const v1::Array& a) {
  std::vector<MetaValue> el;
  auto et = static_cast<ValueType>(a.element_type());
  for (uint64_t x : a.uints()) el.push_back(MetaValue::Uint(et, x));
  for (int64_t x : a.ints()) el.push_back(MetaValue::Int(et, x));
  for (float x : a.f32s()) el.push_back(MetaValue::Float32(x));
  for (double x : a.f64s()) el.push_back(MetaValue::Float64(x));
  for (bool x : a.bools()) el.push_back(MetaValue::Bool(x));
  for (const auto& x : a.strings()) el.push_back(MetaValue::String(x));
  for (const auto& x : a.arrays()) el.push_back(FromProtoArray(x));
  return MetaValue::Array(et, std::move(el));
}
MetaValue FromProtoValue(const v1::Value& v) {
  auto t = static_cast<ValueType>(v.type());
  if (IsUnsigned(t)) return MetaValue::Uint(t, v.u());
  if (IsSigned(t)) return MetaValue::Int(t, v.i());
  switch (t) {
    case ValueType::kFloat32: return MetaValue::Float32(v.f32());
    case ValueType::kFloat64: return MetaValue::Float64(v.f64());
    case ValueType::kBool: return MetaValue::Bool(v.b());
    case ValueType::kString: return MetaValue::String(v.s());
    case ValueType::kArray: return FromProtoArray(v.array());
    default: Die("value type");
  }
}
Json ParamJson(const v1::CodecParam& p) {
  return ValueJson(FromProtoValue(p.value()), Json::Obj().Add("key", S(p.key())));
}

Json MetadataJson(const v1::Manifest& m) {
  Json a = Json::Arr();
  for (const auto& e : m.metadata()) a.Push(ValueJson(FromProtoValue(e.value()), Json::Obj().Add("key", S(e.key()))));
  return a;
}

// ---------------------------------------------------------------------------
// Writing vectors.

struct Decodes {
  std::string tensor;
  Json decode;
  // Format 1.1: view name -> decodes in that view (absent: none listed).
  std::vector<std::pair<std::string, Json>> views = {};
};

// Format 1.1 (container.md §15): the views a reader offers, "full" first
// (ranges computed: per shard the span of every non-empty stream), then the
// declared ones as the manifest records them; `bytes` is the sum of the
// stored lengths of the streams each reads (§15.5).
Json ViewsJson(const v1::Manifest& m) {
  auto reads = [](const v1::Stream& s, const std::string& view) {
    return view == "full" || s.views_size() == 0 ||
           std::find(s.views().begin(), s.views().end(), view) != s.views().end();
  };
  auto range = [](uint64_t shard, uint64_t offset, uint64_t length) {
    return Json::Obj().Add("shard", U(shard)).Add("offset", U(offset)).Add("length", U(length));
  };
  auto bytes_of = [&](const std::string& view) {
    uint64_t n = 0;
    for (const auto& t : m.tensors())
      for (const auto& s : t.streams())
        if (reads(s, view)) n += s.length();
    return n;
  };
  Json a = Json::Arr();
  {
    const size_t shards = m.shards_size() == 0 ? 1 : static_cast<size_t>(m.shards_size());
    std::vector<uint64_t> begin(shards, ~0ull), end(shards, 0);
    for (const auto& t : m.tensors())
      for (const auto& s : t.streams()) {
        if (s.length() == 0) continue;
        begin[s.shard()] = std::min<uint64_t>(begin[s.shard()], s.offset());
        end[s.shard()] = std::max<uint64_t>(end[s.shard()], s.offset() + s.length());
      }
    Json ranges = Json::Arr();
    for (size_t k = 0; k < shards; ++k)
      if (begin[k] < end[k]) ranges.Push(range(k, begin[k], end[k] - begin[k]));
    // "full" is not declared: it has no description in the file.
    a.Push(Json::Obj().Add("name", S("full")).Add("ranges", ranges)
               .Add("bytes", U(bytes_of("full"))));
  }
  for (const auto& v : m.views()) {
    Json ranges = Json::Arr();
    for (const auto& r : v.ranges()) ranges.Push(range(r.shard(), r.offset(), r.length()));
    a.Push(Json::Obj().Add("name", S(v.name())).Add("description", S(v.description())).Add("ranges", ranges)
               .Add("bytes", U(bytes_of(v.name()))));
  }
  return a;
}

// Format 1.1 (spec/elastic.md): the elastic manifest's shape and budgets.
Json ElasticJson(const v1::ElasticManifest& e) {
  auto uints = [](const auto& v) {
    Json a = Json::Arr();
    for (uint64_t x : v) a.Push(U(x));
    return a;
  };
  Json axes = Json::Arr();
  for (const auto& a : e.axes()) {
    Json axis = Json::Obj()
                    .Add("name", S(a.name()))
                    .Add("scope", S(a.scope() == v1::ELASTIC_SCOPE_LAYER ? "layer" : "global"))
                    .Add("granularity", U(a.granularity()))
                    .Add("unit_elems", U(a.unit_elems()))
                    .Add("parent", uints(a.parent()));
    // Format 1.2 keys only where used, so 1.1 expectations keep their bytes.
    if (a.groups() > 1) axis.Add("groups", U(a.groups()));
    axes.Push(axis);
  }
  Json bindings = Json::Arr();
  for (const auto& b : e.bindings()) {
    Json binding = Json::Obj().Add("tensor", S(b.tensor())).Add("dims", StrList({b.dims().begin(), b.dims().end()}));
    if (b.segmented_size() > 0) {
      Json segmented = Json::Arr();
      for (const auto& sd : b.segmented()) {
        Json segs = Json::Arr();
        for (const auto& seg : sd.segments()) {
          segs.Push(seg.axis().empty() ? Json::Obj().Add("fixed_elems", U(seg.fixed_elems()))
                                       : Json::Obj().Add("axis", S(seg.axis())));
        }
        segmented.Push(Json::Obj().Add("dim", U(sd.dim())).Add("segments", segs));
      }
      binding.Add("segmented", segmented);
    }
    if (b.flat()) binding.Add("flat", Bool(true));  // format 1.4, only where used
    bindings.Push(binding);
  }
  Json budgets = Json::Arr();
  for (const auto& b : e.budgets()) {
    Json keep = Json::Arr();
    for (bool k : b.layer_keep()) keep.Push(Bool(k));
    Json sizes = Json::Arr();
    for (const auto& sz : b.sizes()) sizes.Push(Json::Obj().Add("axis", S(sz.axis())).Add("counts", uints(sz.counts())));
    budgets.Push(Json::Obj()
                     .Add("name", S(b.name()))
                     .Add("nested_in", S(b.nested_in()))
                     .Add("layer_keep", keep)
                     .Add("sizes", sizes));
  }
  return Json::Obj()
      .Add("version", U(e.version()))
      .Add("layer_count", U(e.layer_count()))
      .Add("layer_pattern", S(e.layer_pattern()))
      .Add("axes", axes)
      .Add("bindings", bindings)
      .Add("budgets", budgets);
}

// The whole expected.json of a valid vector: the container facts come from
// the manifest the file carries (they describe its layout), the metadata and
// the decodes from what the generator put in.
Json ExpectedJson(const Bytes& b, const std::vector<std::string>& missing_features,
                  const std::vector<Decodes>& decodes) {
  v1::Manifest m = ManifestOf(b);
  Json o = Json::Obj();
  o.Add("format_major", U(m.format_major())).Add("format_minor", U(m.format_minor()));
  o.Add("file_size", U(b.size()));
  o.Add("alignment", U(m.alignment()));
  o.Add("writer", S(m.writer()));
  o.Add("required_features", StrList({m.required_features().begin(), m.required_features().end()}));
  o.Add("optional_features", StrList({m.optional_features().begin(), m.optional_features().end()}));
  o.Add("missing_features", StrList(missing_features));
  o.Add("shards", U(m.shards_size() == 0 ? 1 : m.shards_size()));
  o.Add("metadata", MetadataJson(m));
  Json tensors = Json::Arr();
  if (static_cast<size_t>(m.tensors_size()) != decodes.size()) Die("decodes do not match the tensors");
  for (int i = 0; i < m.tensors_size(); ++i) {
    if (m.tensors(i).name() != decodes[i].tensor) Die(StrCat("tensor order: ", m.tensors(i).name()));
    Json t = TensorJson(m.tensors(i), decodes[i].decode);
    if (!decodes[i].views.empty()) {
      Json dv = Json::Obj();
      for (const auto& [view, d] : decodes[i].views) dv.Add(view, d);
      t.Add("decode_views", dv);
    }
    tensors.Push(std::move(t));
  }
  o.Add("tensors", tensors);
  // Format 1.1 keys, only in files that use the addition (the 1.0
  // expectations keep their bytes).
  if (m.views_size() > 0) o.Add("views", ViewsJson(m));
  if (m.has_elastic()) o.Add("elastic", ElasticJson(m.elastic()));
  return o;
}

// Self-check with the library reader (informative; the test is the check).
void SelfCheckValid(const std::string& name, const std::filesystem::path& path) {
  auto r = bp::Reader::Open(path.string());
  if (!r.ok()) {
    std::fprintf(stderr, "  !! valid/%s does not open: %s\n", name.c_str(), std::string(r.status().ToString()).c_str());
    ++g_mismatches;
    return;
  }
  absl::Status v = (*r)->VerifyContainer();
  if (!v.ok()) {
    std::fprintf(stderr, "  !! valid/%s does not verify: %s\n", name.c_str(), std::string(v.ToString()).c_str());
    ++g_mismatches;
  }
}

void SaveValid(const std::string& name, const Bytes& b, const std::vector<std::string>& missing,
               const std::vector<Decodes>& decodes, const std::vector<std::pair<std::string, Json>>& extra = {}) {
  auto path = g_out / "valid" / (name + ".bolt");
  WriteFile(path, b);
  Json expected = ExpectedJson(b, missing, decodes);
  for (const auto& [key, value] : extra) expected.Add(key, value);
  WriteText(g_out / "valid" / (name + ".expected.json"), Render(expected));
  SelfCheckValid(name, path);
  std::printf("valid/%s.bolt (%zu bytes)\n", name.c_str(), b.size());
}

struct ErrorSpec {
  std::string stage;  // open | verify | decode
  std::string cls;    // absl canonical code name
  std::string message;
  std::string rule;   // section of spec/container.md
};

std::string StageError(const std::filesystem::path& path, const std::string& stage) {
  auto r = bp::Reader::Open(path.string());
  if (!r.ok()) return StrCat("open: ", std::string(r.status().ToString()));
  if (stage == "open") return "open: OK";
  absl::Status v = (*r)->VerifyContainer();
  if (stage == "verify") return StrCat("verify: ", v.ok() ? std::string("OK") : std::string(v.ToString()));
  for (size_t t = 0; t < (*r)->tensors().size(); ++t) {
    auto n = (*r)->DecodedBytes(t, bp::OutputType::kNative);
    if (!n.ok()) return StrCat("decode: ", std::string(n.status().ToString()));
    std::vector<uint8_t> buf(*n);
    absl::Status s = (*r)->Decode(t, bp::OutputType::kNative, absl::MakeSpan(buf));
    if (!s.ok()) return StrCat("decode: ", std::string(s.ToString()));
  }
  return "decode: OK";
}

void SaveInvalid(const std::string& name, Bytes b, const ErrorSpec& e) {
  auto path = g_out / "invalid" / (name + ".bolt");
  WriteFile(path, b);
  std::string txt = StrCat("stage: ", e.stage, "\nclass: ", e.cls, "\nmessage: ", e.message, "\nrule: ", e.rule, "\n");
  WriteText(g_out / "invalid" / (name + ".expected_error.txt"), txt);
  std::string got = StageError(path, e.stage);
  bool match = got.rfind(e.stage + ": " + e.cls, 0) == 0 && got.find(e.message) != std::string::npos;
  std::printf("invalid/%s.bolt (%zu bytes)%s\n", name.c_str(), b.size(), match ? "" : "  [reader differs]");
  if (!match) {
    std::fprintf(stderr, "  .. invalid/%s: expected %s %s \"%s\"; the library says %s\n", name.c_str(),
                 e.stage.c_str(), e.cls.c_str(), e.message.c_str(), got.c_str());
    ++g_mismatches;
  }
}

bp::WriterOptions Options(uint64_t alignment = 64, int zstd_level = 0) {
  bp::WriterOptions o;
  o.alignment = alignment;
  o.zstd_level = zstd_level;
  o.writer_name = kWriterName;
  return o;
}

// Writes with the library Writer into the scratch folder and returns the
// bytes with the deterministic file_id of `name`.
Bytes WriteWith(const std::string& name, const bp::WriterOptions& options,
                const std::function<void(bp::Writer&)>& fill) {
  auto path = g_scratch / (name + ".bolt");
  auto w = Take(bp::Writer::Create(path.string(), options), StrCat("create ", name));
  fill(*w);
  Check(w->Finish(), StrCat("finish ", name));
  Bytes b = ReadFile(path);
  std::filesystem::remove(path);
  SetFileId(b, FileId(name));
  return b;
}

// One f32 tensor `tensor` of `shape` stored as q8_0 with elastic manifest
// `e`: the base the "cut splits a block" vectors break.
Bytes WriteQ8Elastic(const std::string& name, const std::string& tensor, const std::vector<uint64_t>& shape,
                     const Bytes& src_bytes, const bp::ElasticManifest& e) {
  return WriteWith(name, Options(), [&](bp::Writer& w) {
    bp::TensorSource src;
    src.name = tensor;
    src.dtype = DType::kF32;
    src.shape = absl::MakeConstSpan(shape);
    src.bytes = absl::MakeConstSpan(src_bytes);
    auto enc = Take(bp::EncodeTensor("q8_0", src, {}, {}), "encode q8_0");
    Check(w.AddTensor(tensor, shape, DType::kF32, "q8_0", std::move(enc)), "add q8_0");
    Check(w.SetElastic(e), StrCat("elastic ", name));
  });
}

using Tweak = std::function<void(bp::EncodedTensor&)>;

void Add(bp::Writer& w, const TensorSpec& t, const Tweak& tweak = {}) {
  bp::TensorSource src;
  src.name = t.name;
  src.dtype = t.dtype;
  src.shape = absl::MakeConstSpan(t.shape);
  src.bytes = absl::MakeConstSpan(t.source);
  auto enc = Take(bp::EncodeTensor(t.codec, src, {}, {}), StrCat("encode ", t.name));
  // The library encoder must store exactly what the reference conversions give.
  if (enc.streams.size() != 1 || enc.streams[0].bytes != t.StoredBytes()) {
    Die(StrCat("codec \"", t.codec, "\" stored tensor \"", t.name, "\" differently from the reference conversion"));
  }
  if (tweak) tweak(enc);
  Check(w.AddTensor(t.name, t.shape, t.dtype, t.codec, std::move(enc)), StrCat("add ", t.name));
}

// Chunks of `rows_per_chunk` whole rows over the (only) data stream.
void SetRowChunks(bp::EncodedTensor& enc, uint64_t rows, uint64_t rows_per_chunk) {
  auto& s = enc.streams[0];
  const uint64_t row_bytes = s.bytes.size() / rows;
  s.chunks.clear();
  for (uint64_t r = 0; r < rows; r += rows_per_chunk) {
    uint64_t n = std::min(rows_per_chunk, rows - r);
    s.chunks.push_back(bp::EncodedChunk{r * row_bytes, n * row_bytes, r, n});
  }
}

std::vector<Decodes> DecodesOf(const std::vector<TensorSpec>& ts) {
  std::vector<Decodes> d;
  for (const auto& t : ts) d.push_back({t.name, DecodeJson(t)});
  return d;
}

}  // namespace

#pragma GCC diagnostic pop

#endif  // BOLTPACK_SPEC_VECTORS_VECTORS_COMMON_H_
