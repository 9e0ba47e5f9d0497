// Line-prefix checksums (format 1.2, format/line_prefix.h): the hasher on
// parts of any size, what the writer plans and records for an elastic
// file, the reader's and validator's checks, slicing through the CLI (the
// prefix path and the whole-chunk fallback give the same bytes; only kept
// bytes are verified; the output chunks take the recorded checksums) and
// copying a file as stored. Every expected checksum is computed here by
// gathering the kept bytes by hand and hashing them with boltpack::Xxh3,
// never with the code under test.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "boltpack/reader.h"
#include "boltpack/writer.h"
#include "boltpack_proto/boltpack.pb.h"
#include "common/xxh3.h"
#include "format/line_prefix.h"
#include "gtest/gtest.h"
#include "io/elastic_json.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "tests/elastic_reference.h"
#include "tests/manifest_rewrite.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::ReadFileBytes;
using testing::RewriteManifest;
using testing::RunCli;
using testing::WriteFileBytes;

// ---- independent references ----

// The first `prefix` bytes of every `line`-byte line of `bytes`, in order.
std::vector<uint8_t> GatherPrefixes(absl::Span<const uint8_t> bytes, uint64_t line, uint64_t prefix) {
  std::vector<uint8_t> out;
  for (uint64_t off = 0; off + line <= bytes.size(); off += line) {
    out.insert(out.end(), bytes.begin() + off, bytes.begin() + off + prefix);
  }
  return out;
}

uint64_t HandPrefixXxh3(absl::Span<const uint8_t> bytes, uint64_t line, uint64_t prefix) {
  return Xxh3(GatherPrefixes(bytes, line, prefix));
}

std::vector<uint8_t> PseudoRandomBytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t h = seed * 2654435761u + 1;
  for (auto& b : v) {
    h = h * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(h >> 24);
  }
  return v;
}

// ---- 1. LinePrefixHasher ----

TEST(LinePrefix, HasherMatchesHandGatherForAnyPartSizes) {
  const uint64_t line = 37;  // odd, so parts straddle line ends everywhere
  const std::vector<uint64_t> prefixes = {1, 8, 20, 36};
  const auto data = PseudoRandomBytes(line * 53, 7);
  std::vector<uint64_t> want;
  for (uint64_t p : prefixes) want.push_back(HandPrefixXxh3(data, line, p));

  // The same bytes in parts of one size, and in a cycle of mixed sizes.
  std::vector<std::vector<size_t>> patterns = {{1}, {2}, {3}, {36}, {37}, {38}, {74}, {1000}, {5, 1, 17, 36, 2, 40, 111}};
  for (const auto& pattern : patterns) {
    SCOPED_TRACE(::testing::PrintToString(pattern));
    format::LinePrefixHasher hasher(line, prefixes);
    size_t at = 0, k = 0;
    while (at < data.size()) {
      size_t n = std::min(pattern[k++ % pattern.size()], data.size() - at);
      hasher.Update(absl::MakeConstSpan(data).subspan(at, n));
      at += n;
    }
    EXPECT_EQ(hasher.Finish(), want);
  }
  // One prefix at a time gives the same digests (prefixes are independent).
  for (size_t k = 0; k < prefixes.size(); ++k) {
    format::LinePrefixHasher one(line, {prefixes[k]});
    one.Update(data);
    EXPECT_EQ(one.Finish(), std::vector<uint64_t>{want[k]});
    EXPECT_EQ(format::LinePrefixXxh3(data, line, prefixes[k]), want[k]);
  }
}

TEST(LinePrefix, HasherFinishStartsOver) {
  const uint64_t line = 16;
  const std::vector<uint64_t> prefixes = {4, 12};
  const auto a = PseudoRandomBytes(line * 10, 1);
  const auto b = PseudoRandomBytes(line * 3, 2);
  format::LinePrefixHasher hasher(line, prefixes);
  // A part that ends inside a line, then the rest.
  hasher.Update(absl::MakeConstSpan(a).first(21));
  hasher.Update(absl::MakeConstSpan(a).subspan(21));
  EXPECT_EQ(hasher.Finish(), (std::vector<uint64_t>{HandPrefixXxh3(a, line, 4), HandPrefixXxh3(a, line, 12)}));
  // After Finish the next bytes start a new line and new digests.
  hasher.Update(absl::MakeConstSpan(b).first(5));
  hasher.Update(absl::MakeConstSpan(b).subspan(5));
  EXPECT_EQ(hasher.Finish(), (std::vector<uint64_t>{HandPrefixXxh3(b, line, 4), HandPrefixXxh3(b, line, 12)}));
  // Nothing since the last Finish: the digest of no bytes.
  EXPECT_EQ(hasher.Finish(), (std::vector<uint64_t>{Xxh3({}), Xxh3({})}));
}

// ---- the model: elastic tensors bound to global axes "exp" and "width" ----

constexpr uint64_t kWidth = 256;   // the innermost dimension of every bound tensor
constexpr uint64_t kQ8Block = 32;  // q8_0: 34 bytes per 32 elements
constexpr uint64_t kQ8BlockBytes = 34;

struct ModelTensor {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<std::string> dims;  // empty: unbound
  bool q8 = false;
  // What the writer records when the tensor is chunked: lines of the
  // dimensions from `line_dim` inwards (0: no prefixes) and the prefixes
  // (bytes) of the budgets that cut that dimension to a prefix and leave
  // every other but the outermost whole.
  size_t line_dim = 0;
  std::vector<uint64_t> prefixes;
};

// Sizes chosen for several 1 MiB chunks: f.w2 1024 rows a chunk (3 chunks),
// f.w3 two experts a chunk (2), q.w2 3855 rows a chunk (2), q.w3 three
// experts a chunk (2), f.mid / f.mid2 256 rows a chunk (3). f.small is too
// small for chunks of its own and gets one chunk for its prefixes; f.free
// has no binding: no prefixes; f.norm is 1-D.
//
// Budgets (below): half {exp 4, width 128}, quarter {2, 64}, quarter3
// {3, 64}, wide {2, 256}. f32 lines of 256 elements are 1024 bytes, q8_0
// lines 8 blocks of 34 bytes. f.mid: quarter and quarter3 cut two inner
// dimensions (no prefix of a line), wide cuts "exp" to 2 and half "width"
// to 128, one cut each: the inner dimension wins. f.mid2: lines of
// [exp, 256] (4096 bytes) cut to 2 and 3 rows of 1024 bytes.
std::vector<ModelTensor> ModelTensors() {
  return {
      {"f.w2", {2560, kWidth}, {"-", "width"}, false, 1, {256, 512}},
      {"f.w3", {4, 512, kWidth}, {"exp", "-", "width"}, false, 2, {256, 512}},
      {"q.w2", {4096, kWidth}, {"-", "width"}, true, 1, {68, 136}},
      {"q.w3", {4, 1024, kWidth}, {"exp", "-", "width"}, true, 2, {68, 136}},
      {"f.mid", {600, 4, kWidth}, {"-", "exp", "width"}, false, 2, {512}},
      {"f.mid2", {600, 4, kWidth}, {"-", "exp", "-"}, false, 1, {2048, 3072}},
      {"f.small", {8, kWidth}, {"-", "width"}, false, 1, {256, 512}},
      {"f.norm", {kWidth}, {"width"}, false, 0, {}},
      {"f.free", {1100, kWidth}, {}, false, 0, {}},
  };
}

struct BudgetSpec {
  std::string name;
  uint64_t exp, width;
};
// Two distinct innermost cuts (64, 128), one of them twice, and a budget
// at full width.
const std::vector<BudgetSpec> kBudgets = {
    {"half", 4, 128}, {"quarter", 2, 64}, {"quarter3", 3, 64}, {"wide", 2, kWidth}};

std::string ElasticJson(const std::vector<ModelTensor>& tensors) {
  std::string j = R"({"version": 1, "axes": {"exp": {"scope": "global"}, "width": {"scope": "global"}}, "bindings": [)";
  bool first = true;
  for (const auto& t : tensors) {
    if (t.dims.empty()) continue;
    j += std::string(first ? "" : ", ") + R"({"tensor": ")" + t.name + R"(", "dims": [)";
    first = false;
    for (size_t d = 0; d < t.dims.size(); ++d) j += (d ? ", \"" : "\"") + t.dims[d] + "\"";
    j += "]}";
  }
  j += R"(], "budgets": [)";
  for (size_t b = 0; b < kBudgets.size(); ++b) {
    j += (b ? ", " : "") + std::string(R"({"name": ")") + kBudgets[b].name + R"(", "global": {"exp": )" +
         std::to_string(kBudgets[b].exp) + R"(, "width": )" + std::to_string(kBudgets[b].width) + "}}";
  }
  return j + "]}";
}

std::vector<uint8_t> F32Bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<float> ValuesOf(const ModelTensor& t) { return testing::Values(t.name, testing::Count(t.shape)); }

// Bytes per line (innermost row) and per element block as stored.
uint64_t CellBytes(bool q8) { return q8 ? kQ8BlockBytes : 4; }
uint64_t BlockElems(bool q8) { return q8 ? kQ8Block : 1; }
uint64_t LineBytes(bool q8, uint64_t width) { return width / BlockElems(q8) * CellBytes(q8); }

// Stored bytes of one line of the dimensions from `dim` inwards.
uint64_t LineBytesFrom(const ModelTensor& t, size_t dim) {
  uint64_t n = LineBytes(t.q8, t.shape.back());
  for (size_t d = dim; d + 1 < t.shape.size(); ++d) n *= t.shape[d];
  return n;
}

const ModelTensor& Find(const std::vector<ModelTensor>& ts, const std::string& name) {
  for (const auto& t : ts) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << name;
  return ts.front();
}

// Checks every stream of `r` against the independent reference: recorded
// line_bytes / prefix_bytes as planned, and every chunk's prefix_xxh3 the
// hash of the hand-gathered prefixes of its stored bytes.
void ExpectRecordedPrefixes(const Reader& r, const std::vector<ModelTensor>& model) {
  for (size_t i = 0; i < r.tensors().size(); ++i) {
    const TensorInfo& info = r.tensors()[i];
    SCOPED_TRACE(info.name);
    const ModelTensor& t = Find(model, info.name);
    ASSERT_EQ(info.streams.size(), 1u);
    const StreamInfo& s = info.streams[0];
    // A tensor without chunks of its own gets row chunks for its prefixes.
    const std::vector<uint64_t>& want = t.prefixes;
    EXPECT_EQ(s.prefix_bytes, want);
    if (want.empty()) {
      EXPECT_EQ(s.line_bytes, 0u);
      EXPECT_TRUE(s.prefix_xxh3.empty());
      continue;
    }
    const uint64_t line = LineBytesFrom(t, t.line_dim);
    EXPECT_EQ(s.line_bytes, line);
    auto stored = r.StoredStream(i, 0);
    ASSERT_TRUE(stored.ok()) << stored.status();
    for (size_t k = 0; k < s.chunks.size(); ++k) {
      const ChunkInfo& c = s.chunks[k];
      ASSERT_EQ(s.ChunkPrefixXxh3(k).size(), want.size()) << "chunk " << k;
      auto bytes = stored->subspan(c.stored_offset, c.stored_length);
      for (size_t p = 0; p < want.size(); ++p) {
        EXPECT_EQ(s.ChunkPrefixXxh3(k)[p], HandPrefixXxh3(bytes, line, want[p]))
            << "chunk " << k << " prefix " << want[p];
      }
    }
  }
}

ElasticManifest ManifestFor(const std::vector<ModelTensor>& tensors) {
  std::vector<io::ElasticTensorShape> shapes;
  for (const auto& t : tensors) shapes.push_back({t.name, t.shape});
  auto parsed = io::ParseElasticJson(ElasticJson(tensors), "e.json", shapes);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? parsed->manifest : ElasticManifest{};
}

// The model written with the library Writer: every tensor encoded
// (AddTensor), plus "s.f" / "s.q" added as stored bytes with explicit row
// chunks (5 + 7 rows). `elastic_first`: SetElastic before the tensors.
std::vector<ModelTensor> LibraryModel() {
  auto m = ModelTensors();
  m.push_back({"s.f", {12, kWidth}, {"-", "width"}, false, 1, {256, 512}});
  m.push_back({"s.q", {12, kWidth}, {"-", "width"}, true, 1, {68, 136}});
  return m;
}

void WriteLibraryModel(const std::string& path, WriterOptions options, bool elastic_first,
                       const std::vector<ModelTensor>& model, bool compressible = false) {
  auto w = Writer::Create(path, options);
  ASSERT_TRUE(w.ok()) << w.status();
  ElasticManifest manifest = ManifestFor(model);
  if (elastic_first) {
    ASSERT_TRUE((*w)->SetElastic(manifest).ok());
  }
  for (const auto& t : model) {
    SCOPED_TRACE(t.name);
    std::vector<float> v = ValuesOf(t);
    if (compressible) {
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 4);
    }
    auto bytes = F32Bytes(v);
    TensorSource src{t.name, DType::kF32, t.shape, bytes, {}};
    auto enc = EncodeTensor(t.q8 ? "q8_0" : "f32", src, {}, {});
    ASSERT_TRUE(enc.ok()) << enc.status();
    if (t.name.rfind("s.", 0) != 0) {
      ASSERT_TRUE((*w)->AddTensor(t.name, t.shape, DType::kF32, t.q8 ? "q8_0" : "f32", std::move(*enc)).ok());
      continue;
    }
    // As stored bytes, chunked by hand: rows [0, 5) and [5, 12).
    ASSERT_EQ(enc->streams.size(), 1u);
    const uint64_t row = LineBytes(t.q8, kWidth);
    TensorInfo info;
    info.name = t.name;
    info.shape = t.shape;
    info.dtype = DType::kF32;
    info.codec_id = t.q8 ? "q8_0" : "f32";
    info.codec_params = enc->params;
    StreamInfo s;
    s.role = enc->streams[0].role;
    s.raw_length = enc->streams[0].bytes.size();
    for (auto [first, count] : {std::pair<uint64_t, uint64_t>{0, 5}, {5, 7}}) {
      ChunkInfo c;
      c.stored_offset = c.raw_offset = first * row;
      c.stored_length = c.raw_length = count * row;
      c.first_row = first;
      c.row_count = count;
      s.chunks.push_back(c);
    }
    info.streams.push_back(s);
    std::vector<absl::Span<const uint8_t>> spans = {enc->streams[0].bytes};
    absl::Status st = (*w)->AddStoredTensor(std::move(info), spans);
    ASSERT_TRUE(st.ok()) << st;
  }
  if (!elastic_first) {
    ASSERT_TRUE((*w)->SetElastic(manifest).ok());
  }
  absl::Status st = (*w)->Finish();
  ASSERT_TRUE(st.ok()) << st;
}

WriterOptions PrefixOptions() {
  WriterOptions o;
  o.alignment = 64;
  o.line_prefixes = true;
  return o;
}

// ---- 2. writer planning ----

TEST(LinePrefix, WriterRecordsPrefixesOfBudgetCuts) {
  std::string dir = MakeTempDir();
  auto model = LibraryModel();
  ASSERT_NO_FATAL_FAILURE(WriteLibraryModel(dir + "/p.bolt", PrefixOptions(), true, model));
  auto r = Reader::Open(dir + "/p.bolt");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->version().minor, 2u);
  // The test's premise: the big tensors have several chunks, the explicit
  // chunks are kept.
  for (const char* name : {"f.w2", "f.w3", "q.w2", "q.w3", "f.mid", "f.mid2", "s.f", "s.q"}) {
    auto i = (*r)->FindTensor(name);
    ASSERT_TRUE(i.has_value()) << name;
    EXPECT_GE((*r)->tensors()[*i].streams[0].chunks.size(), 2u) << name;
  }
  const auto sq = (*r)->tensors()[*(*r)->FindTensor("s.q")].streams[0];
  ASSERT_EQ(sq.chunks.size(), 2u);
  EXPECT_EQ(sq.chunks[0].row_count, 5u);
  EXPECT_EQ(sq.chunks[1].row_count, 7u);
  ASSERT_NO_FATAL_FAILURE(ExpectRecordedPrefixes(**r, model));
  // Spelled out once: q8_0 lines of 8 blocks of 34 bytes, cuts at 2 and 4 blocks.
  EXPECT_EQ(sq.line_bytes, 272u);
  EXPECT_EQ(sq.prefix_bytes, (std::vector<uint64_t>{68, 136}));
  const auto fw = (*r)->tensors()[*(*r)->FindTensor("f.w3")].streams[0];
  EXPECT_EQ(fw.line_bytes, 1024u);
  EXPECT_EQ(fw.prefix_bytes, (std::vector<uint64_t>{256, 512}));
  EXPECT_TRUE((*r)->VerifyContainer().ok());
  auto v = RunCli({"verify", dir + "/p.bolt"});
  EXPECT_EQ(v.exit_code, 0) << v.output;
}

TEST(LinePrefix, NoPrefixesWithoutTheOptionOrWithTheManifestLate) {
  std::string dir = MakeTempDir();
  auto model = LibraryModel();
  WriterOptions plain;
  plain.alignment = 64;
  ASSERT_NO_FATAL_FAILURE(WriteLibraryModel(dir + "/plain.bolt", plain, true, model));
  // The option, but the manifest set after the tensors: nothing to plan from.
  ASSERT_NO_FATAL_FAILURE(WriteLibraryModel(dir + "/late.bolt", PrefixOptions(), false, model));
  for (const char* file : {"/plain.bolt", "/late.bolt"}) {
    SCOPED_TRACE(file);
    auto r = Reader::Open(dir + file);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)->version().minor, 1u);  // elastic version 1: format 1.1
    for (const auto& t : (*r)->tensors()) {
      for (const auto& s : t.streams) {
        EXPECT_EQ(s.line_bytes, 0u) << t.name;
        EXPECT_TRUE(s.prefix_bytes.empty()) << t.name;
        EXPECT_TRUE(s.prefix_xxh3.empty()) << t.name;
      }
    }
    // Nor in the stored manifest.
    v1::Manifest m = testing::ManifestOf(ReadFileBytes(dir + file));
    for (const auto& t : m.tensors()) {
      for (const auto& s : t.streams()) {
        EXPECT_EQ(s.line_bytes(), 0u);
        EXPECT_EQ(s.prefix_bytes_size(), 0);
      }
    }
  }
}

TEST(LinePrefix, CompressedStreamsGetNone) {
  std::string dir = MakeTempDir();
  auto model = LibraryModel();
  WriterOptions o = PrefixOptions();
  o.zstd_level = 3;
  ASSERT_NO_FATAL_FAILURE(WriteLibraryModel(dir + "/z.bolt", o, true, model, /*compressible=*/true));
  auto r = Reader::Open(dir + "/z.bolt");
  ASSERT_TRUE(r.ok()) << r.status();
  bool any_zstd = false;
  for (const auto& t : (*r)->tensors()) {
    for (const auto& s : t.streams) {
      if (s.compression != Compression::kZstd) continue;
      any_zstd = true;
      EXPECT_EQ(s.line_bytes, 0u) << t.name;
      EXPECT_TRUE(s.prefix_bytes.empty()) << t.name;
      EXPECT_TRUE(s.prefix_xxh3.empty()) << t.name;
    }
  }
  EXPECT_TRUE(any_zstd);
  // The big encoded f32 tensors are the compressible ones.
  EXPECT_EQ((*r)->tensors()[*(*r)->FindTensor("f.w2")].streams[0].compression, Compression::kZstd);
  EXPECT_TRUE((*r)->VerifyContainer().ok());
}

// ---- 3. reader and validator ----

// The index of tensor `name` in a stored manifest.
int ProtoTensor(const v1::Manifest& m, const std::string& name) {
  for (int i = 0; i < m.tensors_size(); ++i) {
    if (m.tensors(i).name() == name) return i;
  }
  ADD_FAILURE() << name;
  return 0;
}

// VerifyStream reads a stream once for all its checksums: the stream's own
// is reported first, then the first chunk whose checksum does not match.
TEST(LinePrefix, VerifyReportsTheStreamChecksumFirstThenTheFirstBadChunk) {
  std::string dir = MakeTempDir();
  auto model = LibraryModel();
  ASSERT_NO_FATAL_FAILURE(WriteLibraryModel(dir + "/p.bolt", PrefixOptions(), true, model));
  auto bytes = ReadFileBytes(dir + "/p.bolt");
  // A wrong chunk record over intact bytes: only that chunk fails.
  auto bad_record = RewriteManifest(bytes, [](v1::Manifest& m) {
    auto* c = m.mutable_tensors(ProtoTensor(m, "f.w2"))->mutable_streams(0)->mutable_chunks(2);
    c->set_xxh3(c->xxh3() ^ 1);
  });
  WriteFileBytes(dir + "/record.bolt", bad_record);
  auto r = Reader::Open(dir + "/record.bolt");
  ASSERT_TRUE(r.ok()) << r.status();
  size_t t = *(*r)->FindTensor("f.w2");
  ASSERT_GT((*r)->tensors()[t].streams[0].chunks.size(), 2u);
  absl::Status st = (*r)->VerifyStream(t, 0);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  EXPECT_NE(std::string(st.message()).find("chunk 2 checksum mismatch"), std::string::npos) << st;
  // A flipped byte in that chunk: the stream's checksum fails first.
  const StreamInfo s = (*r)->tensors()[t].streams[0];
  auto flipped = bytes;
  flipped[s.offset + s.chunks[2].stored_offset + 3] ^= 0x10;
  WriteFileBytes(dir + "/flip.bolt", flipped);
  auto f = Reader::Open(dir + "/flip.bolt");
  ASSERT_TRUE(f.ok()) << f.status();
  st = (*f)->VerifyStream(t, 0);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  EXPECT_NE(std::string(st.message()).find("f.w2"), std::string::npos) << st;
  EXPECT_NE(std::string(st.message()).find("checksum mismatch (manifest"), std::string::npos) << st;
}

TEST(LinePrefix, VerifyReportsAWrongPrefixChecksum) {
  std::string dir = MakeTempDir();
  auto model = LibraryModel();
  ASSERT_NO_FATAL_FAILURE(WriteLibraryModel(dir + "/p.bolt", PrefixOptions(), true, model));
  auto bytes = ReadFileBytes(dir + "/p.bolt");
  auto bad = RewriteManifest(bytes, [](v1::Manifest& m) {
    auto* c = m.mutable_tensors(ProtoTensor(m, "f.w2"))->mutable_streams(0)->mutable_chunks(1);
    ASSERT_EQ(c->prefix_xxh3_size(), 2);
    c->set_prefix_xxh3(1, c->prefix_xxh3(1) ^ 1);
  });
  WriteFileBytes(dir + "/bad.bolt", bad);
  auto r = Reader::Open(dir + "/bad.bolt");
  ASSERT_TRUE(r.ok()) << r.status();  // well-formed: only the checksum is wrong
  size_t t = *(*r)->FindTensor("f.w2");
  absl::Status st = (*r)->VerifyStream(t, 0);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  // Names the chunk, the prefix and the tensor.
  EXPECT_NE(std::string(st.message()).find("chunk 1 line-prefix checksum"), std::string::npos) << st;
  EXPECT_NE(std::string(st.message()).find("512 bytes"), std::string::npos) << st;
  EXPECT_NE(std::string(st.message()).find("f.w2"), std::string::npos) << st;
  absl::Status all = (*r)->VerifyContainer();
  EXPECT_EQ(all.code(), absl::StatusCode::kDataLoss) << all;
  EXPECT_NE(std::string(all.message()).find("line-prefix checksum"), std::string::npos) << all;
  // Every other stream still verifies.
  for (size_t i = 0; i < (*r)->tensors().size(); ++i) {
    if (i != t) {
      EXPECT_TRUE((*r)->VerifyStream(i, 0).ok()) << (*r)->tensors()[i].name;
    }
  }
  auto v = RunCli({"verify", dir + "/bad.bolt"});
  EXPECT_NE(v.exit_code, 0);
  EXPECT_NE(v.output.find("line-prefix checksum"), std::string::npos) << v.output;
  // A slice that relies on the wrong record (half keeps 512 bytes a line)
  // fails; one that uses the other prefix (quarter: 256) does not.
  auto half = RunCli({"slice", dir + "/bad.bolt", "--budget", "half", "-o", dir + "/half.bolt"});
  EXPECT_NE(half.exit_code, 0) << half.output;
  EXPECT_NE(half.output.find("line-prefix checksum"), std::string::npos) << half.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/half.bolt"));
  auto quarter = RunCli({"slice", dir + "/bad.bolt", "--budget", "quarter", "-o", dir + "/quarter.bolt"});
  EXPECT_EQ(quarter.exit_code, 0) << quarter.output;
  auto vq = RunCli({"verify", dir + "/quarter.bolt"});
  EXPECT_EQ(vq.exit_code, 0) << vq.output;
}

TEST(LinePrefix, MalformedPrefixFieldsAreRejectedAtOpen) {
  std::string dir = MakeTempDir();
  auto model = LibraryModel();
  ASSERT_NO_FATAL_FAILURE(WriteLibraryModel(dir + "/p.bolt", PrefixOptions(), true, model));
  const auto bytes = ReadFileBytes(dir + "/p.bolt");
  using Edit = std::function<void(v1::Stream*)>;
  const std::vector<std::pair<std::string, Edit>> cases = {
      {"prefix equal to line_bytes", [](v1::Stream* s) { s->set_prefix_bytes(1, s->line_bytes()); }},
      {"prefix beyond line_bytes", [](v1::Stream* s) { s->set_prefix_bytes(1, s->line_bytes() + 4); }},
      {"prefix 0", [](v1::Stream* s) { s->set_prefix_bytes(0, 0); }},
      {"not ascending",
       [](v1::Stream* s) {
         uint64_t a = s->prefix_bytes(0);
         s->set_prefix_bytes(0, s->prefix_bytes(1));
         s->set_prefix_bytes(1, a);
       }},
      {"duplicate", [](v1::Stream* s) { s->set_prefix_bytes(1, s->prefix_bytes(0)); }},
      {"checksum count below prefix count", [](v1::Stream* s) { s->mutable_chunks(1)->mutable_prefix_xxh3()->RemoveLast(); }},
      {"checksum count above prefix count", [](v1::Stream* s) { s->mutable_chunks(0)->add_prefix_xxh3(1); }},
      {"line_bytes 0 with prefixes", [](v1::Stream* s) { s->set_line_bytes(0); }},
      {"line_bytes without prefixes",
       [](v1::Stream* s) {
         s->clear_prefix_bytes();
         for (auto& c : *s->mutable_chunks()) c.clear_prefix_xxh3();
       }},
      {"checksums without prefixes", [](v1::Stream* s) {
         s->clear_prefix_bytes();
         s->set_line_bytes(0);
       }},
      {"lines that do not tile the chunks", [](v1::Stream* s) { s->set_line_bytes(1000); }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.first);
    const Edit& edit = c.second;
    auto bad = RewriteManifest(bytes, [&](v1::Manifest& m) {
      v1::Stream* s = m.mutable_tensors(ProtoTensor(m, "f.w2"))->mutable_streams(0);
      ASSERT_EQ(s->prefix_bytes_size(), 2);
      edit(s);
    });
    WriteFileBytes(dir + "/bad.bolt", bad);
    auto r = Reader::Open(dir + "/bad.bolt");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  }
  // More prefixes than a stream may carry (64): refused as too many.
  {
    auto many = RewriteManifest(bytes, [&](v1::Manifest& m) {
      v1::Stream* s = m.mutable_tensors(ProtoTensor(m, "f.w2"))->mutable_streams(0);
      s->clear_prefix_bytes();
      for (auto& chunk : *s->mutable_chunks()) chunk.clear_prefix_xxh3();
      for (uint64_t p = 1; p <= 65; ++p) {
        s->add_prefix_bytes(p * 4);
        for (auto& chunk : *s->mutable_chunks()) chunk.add_prefix_xxh3(p);
      }
    });
    WriteFileBytes(dir + "/many.bolt", many);
    auto r = Reader::Open(dir + "/many.bolt");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  }
  // Prefix checksums on a stream without chunks are refused too.
  auto bad = RewriteManifest(bytes, [&](v1::Manifest& m) {
    v1::Stream* s = m.mutable_tensors(ProtoTensor(m, "f.small"))->mutable_streams(0);
    s->clear_chunks();
    s->clear_prefix_bytes();
    s->set_line_bytes(1024);
    s->add_prefix_bytes(256);
  });
  WriteFileBytes(dir + "/bad.bolt", bad);
  auto r = Reader::Open(dir + "/bad.bolt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
}

// ---- 4. slicing through the CLI ----

// The .safetensors input and its conversion to an elastic .bolt (line
// prefixes: convert --elastic sets them), plus the same file with every
// line-prefix field stripped (identical data: the whole-chunk path).
struct Sources {
  std::string dir, prefixed, stripped;
};

void MakeSources(Sources* out) {
  out->dir = MakeTempDir();
  const std::string& dir = out->dir;
  auto model = ModelTensors();
  std::vector<io::SafetensorsTensorDecl> decls;
  for (const auto& t : model) decls.push_back({t.name, DType::kF32, t.shape});
  auto w = io::SafetensorsWriter::Create(dir + "/in.safetensors", {}, decls, {});
  ASSERT_TRUE(w.ok()) << w.status();
  for (const auto& t : model) ASSERT_TRUE((*w)->WriteNext(F32Bytes(ValuesOf(t))).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  std::ofstream(dir + "/e.json") << ElasticJson(model);
  out->prefixed = dir + "/src.bolt";
  auto c = RunCli({"convert", dir + "/in.safetensors", "-o", out->prefixed, "--elastic", dir + "/e.json", "--codec",
                   "q.*=q8_0"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto r = Reader::Open(out->prefixed);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->version().minor, 2u);
  ASSERT_NO_FATAL_FAILURE(ExpectRecordedPrefixes(**r, model));
  out->stripped = dir + "/stripped.bolt";
  WriteFileBytes(out->stripped, RewriteManifest(ReadFileBytes(out->prefixed), [](v1::Manifest& m) {
                   for (auto& t : *m.mutable_tensors()) {
                     for (auto& s : *t.mutable_streams()) {
                       s.set_line_bytes(0);
                       s.clear_prefix_bytes();
                       for (auto& chunk : *s.mutable_chunks()) chunk.clear_prefix_xxh3();
                     }
                   }
                 }));
  auto rs = Reader::Open(out->stripped);
  ASSERT_TRUE(rs.ok()) << rs.status();
  EXPECT_TRUE((*rs)->VerifyContainer().ok());
}

// What a budget keeps of tensor t: a prefix of every outer dimension
// (all but the innermost) and of the bytes of each line.
struct Kept {
  std::vector<uint64_t> outer, outer_kept;  // lines: dims [0, n-1)
  uint64_t line_bytes = 0;                  // stored bytes of a whole line
  uint64_t kept_bytes = 0;                  // of each line
  std::vector<uint64_t> keep;               // per dimension, elements kept
  uint64_t rows() const { return outer_kept.empty() ? 1 : outer_kept[0]; }
};

Kept KeptOf(const ModelTensor& t, uint64_t exp, uint64_t width) {
  auto keep = [&](size_t d) {
    if (t.dims.empty() || t.dims[d] == "-") return t.shape[d];
    return t.dims[d] == "exp" ? exp : width;
  };
  Kept k;
  const size_t n = t.shape.size();
  for (size_t d = 0; d < n; ++d) k.keep.push_back(keep(d));
  for (size_t d = 0; d + 1 < n; ++d) {
    k.outer.push_back(t.shape[d]);
    k.outer_kept.push_back(keep(d));
  }
  k.line_bytes = LineBytes(t.q8, t.shape.back());
  k.kept_bytes = LineBytes(t.q8, keep(n - 1));
  return k;
}

// The stored bytes a cut keeps, gathered by hand from the parent's stream:
// every kept line (row-major over the kept outer prefixes), its kept prefix.
std::vector<uint8_t> HandCut(absl::Span<const uint8_t> stored, const Kept& k) {
  std::vector<uint8_t> out;
  std::vector<uint64_t> at(k.outer.size(), 0);
  for (bool more = std::find(k.outer_kept.begin(), k.outer_kept.end(), 0u) == k.outer_kept.end(); more;) {
    uint64_t line = 0;
    for (size_t d = 0; d < at.size(); ++d) line = line * k.outer[d] + at[d];
    auto src = stored.subspan(line * k.line_bytes, k.kept_bytes);
    out.insert(out.end(), src.begin(), src.end());
    more = false;
    for (size_t d = at.size(); d-- > 0;) {
      if (++at[d] < k.outer_kept[d]) {
        more = true;
        break;
      }
      at[d] = 0;
    }
  }
  return out;
}

std::vector<uint8_t> Vec(absl::Span<const uint8_t> s) { return {s.begin(), s.end()}; }

// Every tensor's bytes by name, of a GGUF or safetensors file.
template <typename Model>
std::map<std::string, std::vector<uint8_t>> TensorBytesOf(const std::string& path) {
  std::map<std::string, std::vector<uint8_t>> out;
  auto m = Model::Open(path);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return out;
  for (size_t i = 0; i < (*m)->tensors().size(); ++i) out[std::string((*m)->tensors()[i].name)] = Vec((*m)->TensorBytes(i));
  return out;
}
std::map<std::string, std::vector<uint8_t>> GgufTensors(const std::string& path) {
  return TensorBytesOf<io::GgufModel>(path);
}
std::map<std::string, std::vector<uint8_t>> SafetensorsTensors(const std::string& path) {
  return TensorBytesOf<io::SafetensorsModel>(path);
}

std::map<std::string, std::vector<uint8_t>> BoltStreams(const std::string& path) {
  std::map<std::string, std::vector<uint8_t>> out;
  auto r = Reader::Open(path);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return out;
  for (size_t i = 0; i < (*r)->tensors().size(); ++i) {
    for (size_t k = 0; k < (*r)->tensors()[i].streams.size(); ++k) {
      auto s = (*r)->StoredStream(i, k);
      EXPECT_TRUE(s.ok()) << s.status();
      // Stream 0 by the tensor's name (as in GGUF), others by name#k.
      if (s.ok()) out[(*r)->tensors()[i].name + (k ? "#" + std::to_string(k) : "")] = Vec(*s);
    }
  }
  return out;
}

void Slice(const std::string& src, const std::vector<std::string>& how, const std::string& out) {
  std::vector<std::string> args = {"slice", src};
  args.insert(args.end(), how.begin(), how.end());
  args.insert(args.end(), {"-o", out});
  auto s = RunCli(args);
  ASSERT_EQ(s.exit_code, 0) << s.output;
}

// Which tensors a budget cuts on the line-prefix path (the recorded line
// dimension cut to a recorded prefix, the others but dim 0 whole, dim 0
// whole source chunks), worked out from the chunk layout and records
// above: f.w3 has two experts a chunk, q.w3 three.
std::vector<std::string> PrefixPathTensors(const std::string& budget) {
  if (budget == "half") return {"f.mid", "f.w2", "f.w3", "q.w2", "q.w3"};  // f.mid2 whole
  if (budget == "quarter") return {"f.w2", "f.w3", "q.w2", "f.mid2"};
  if (budget == "quarter3") return {"f.w2", "q.w2", "q.w3", "f.mid2"};
  if (budget == "wide") return {"f.mid2"};  // f.mid's record is of its width
  return {};
}

// Checks a .bolt slice of `src` (budget exp/width) against the hand cut of
// the parent's stored bytes, and, for each tensor of `prefix_path`, the
// output chunks: one per kept source chunk, in order, each carrying that
// source chunk's recorded checksum of the kept prefix.
void CheckBoltSlice(const std::string& src, const std::string& out, const std::vector<ModelTensor>& model,
                    uint64_t exp, uint64_t width, const std::vector<std::string>& prefix_path) {
  auto parent = Reader::Open(src);
  ASSERT_TRUE(parent.ok()) << parent.status();
  auto sliced = Reader::Open(out);
  ASSERT_TRUE(sliced.ok()) << sliced.status();
  ASSERT_EQ((*sliced)->tensors().size(), model.size());
  for (const auto& t : model) {
    SCOPED_TRACE(t.name);
    size_t pi = *(*parent)->FindTensor(t.name);
    auto si = (*sliced)->FindTensor(t.name);
    ASSERT_TRUE(si.has_value());
    auto pstored = (*parent)->StoredStream(pi, 0);
    auto sstored = (*sliced)->StoredStream(*si, 0);
    ASSERT_TRUE(pstored.ok() && sstored.ok());
    Kept k = KeptOf(t, exp, width);
    EXPECT_EQ(Vec(*sstored), HandCut(*pstored, k));
    if (std::find(prefix_path.begin(), prefix_path.end(), t.name) == prefix_path.end()) continue;
    SCOPED_TRACE("prefix path");
    const StreamInfo ps = (*parent)->tensors()[pi].streams[0];
    // The kept prefix of each line: the kept elements of the line dimension.
    ASSERT_GT(t.line_dim, 0u);
    const uint64_t kept_prefix = t.line_dim + 1 == t.shape.size() ? LineBytes(t.q8, k.keep[t.line_dim])
                                                                  : k.keep[t.line_dim] * LineBytesFrom(t, t.line_dim + 1);
    auto p = std::find(ps.prefix_bytes.begin(), ps.prefix_bytes.end(), kept_prefix);
    ASSERT_NE(p, ps.prefix_bytes.end()) << "the cut is not a recorded prefix";
    std::vector<const ChunkInfo*> kept_chunks;
    for (const auto& c : ps.chunks) {
      if (c.first_row < k.rows()) kept_chunks.push_back(&c);
    }
    ASSERT_FALSE(kept_chunks.empty());
    ASSERT_EQ(kept_chunks.back()->first_row + kept_chunks.back()->row_count, k.rows()) << "a source chunk is split";
    const StreamInfo os = (*sliced)->tensors()[*si].streams[0];
    ASSERT_EQ(os.chunks.size(), kept_chunks.size());
    for (size_t c = 0; c < kept_chunks.size(); ++c) {
      EXPECT_EQ(os.chunks[c].first_row, kept_chunks[c]->first_row) << "chunk " << c;
      EXPECT_EQ(os.chunks[c].row_count, kept_chunks[c]->row_count) << "chunk " << c;
      EXPECT_EQ(os.chunks[c].xxh3, ps.ChunkPrefixXxh3(static_cast<size_t>(kept_chunks[c] - ps.chunks.data()))[static_cast<size_t>(p - ps.prefix_bytes.begin())]) << "chunk " << c;
      // And it is the hash of the chunk's bytes.
      EXPECT_EQ(os.chunks[c].xxh3, Xxh3(sstored->subspan(os.chunks[c].stored_offset, os.chunks[c].stored_length)));
    }
  }
}

TEST(LinePrefix, SlicedBytesAreTheSameWithAndWithoutPrefixes) {
  Sources src;
  ASSERT_NO_FATAL_FAILURE(MakeSources(&src));
  const auto model = ModelTensors();
  for (const auto& b : kBudgets) {
    SCOPED_TRACE(b.name);
    std::map<std::string, std::string> out;  // "kind.ext" -> path
    for (const auto& [kind, path] : {std::pair<std::string, std::string>{"pfx", src.prefixed}, {"plain", src.stripped}}) {
      for (const char* ext : {".bolt", ".gguf", ".safetensors"}) {
        std::string o = src.dir + "/" + kind + "_" + b.name + ext;
        ASSERT_NO_FATAL_FAILURE(Slice(path, {"--budget", b.name}, o));
        out[kind + ext] = o;
      }
      auto v = RunCli({"verify", out[kind + ".bolt"]});
      EXPECT_EQ(v.exit_code, 0) << v.output;
      ASSERT_NO_FATAL_FAILURE(CheckBoltSlice(path, out[kind + ".bolt"], model, b.exp, b.width,
                                             kind == "pfx" ? PrefixPathTensors(b.name) : std::vector<std::string>{}));
    }
    EXPECT_EQ(BoltStreams(out["pfx.bolt"]), BoltStreams(out["plain.bolt"]));
    auto gp = GgufTensors(out["pfx.gguf"]);
    EXPECT_EQ(gp.size(), model.size());
    EXPECT_EQ(gp, GgufTensors(out["plain.gguf"]));
    EXPECT_EQ(gp, BoltStreams(out["pfx.bolt"]));  // GGUF holds the stored cells
    auto sp = SafetensorsTensors(out["pfx.safetensors"]);
    EXPECT_EQ(sp.size(), model.size());
    EXPECT_EQ(sp, SafetensorsTensors(out["plain.safetensors"]));
    // f32 tensors: the source elements at the kept indices.
    for (const auto& t : model) {
      if (t.q8) continue;
      SCOPED_TRACE(t.name);
      EXPECT_EQ(sp[t.name], HandCut(F32Bytes(ValuesOf(t)), KeptOf(t, b.exp, b.width)));
    }
  }
}

// A slice keeps the budgets nested in it, and its cut tensors get
// line-prefix checksums for them: slicing such a budget out of the slice
// takes the prefix path again and equals slicing it out of the parent.
TEST(LinePrefix, SliceOfASliceUsesItsRecordedPrefixes) {
  Sources src;
  ASSERT_NO_FATAL_FAILURE(MakeSources(&src));
  const std::string& dir = src.dir;
  ASSERT_NO_FATAL_FAILURE(Slice(src.prefixed, {"--budget", "half"}, dir + "/half.bolt"));
  // The half model: every bound innermost dimension 128 wide. Its cut
  // tensors get prefixes for the budgets nested in half (quarter and
  // quarter3 cut "width" to 64; wide is not nested); f.mid has none (both
  // cut two inner dimensions of it); f.mid2 is copied whole with its record.
  auto half_model = ModelTensors();
  for (auto& t : half_model) {
    if (!t.dims.empty() && t.dims.back() == "width") t.shape.back() = 128;
    if (t.name == "f.w2" || t.name == "f.w3" || t.name == "f.small") t.prefixes = {256};
    if (t.name == "q.w2" || t.name == "q.w3") t.prefixes = {68};
    if (t.name == "f.mid") t.prefixes = {};
  }
  {
    auto r = Reader::Open(dir + "/half.bolt");
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_NE((*r)->elastic(), nullptr);
    ASSERT_NE((*r)->elastic()->FindBudget("quarter"), nullptr);
    ASSERT_NO_FATAL_FAILURE(ExpectRecordedPrefixes(**r, half_model));
    EXPECT_TRUE((*r)->VerifyContainer().ok());
  }
  for (const char* budget : {"quarter", "quarter3"}) {
    SCOPED_TRACE(budget);
    const BudgetSpec& b = *std::find_if(kBudgets.begin(), kBudgets.end(), [&](const BudgetSpec& x) { return x.name == budget; });
    std::string again = dir + "/" + budget + "_of_half.bolt";
    ASSERT_NO_FATAL_FAILURE(Slice(dir + "/half.bolt", {"--budget", budget}, again));
    ASSERT_NO_FATAL_FAILURE(Slice(src.prefixed, {"--budget", budget}, dir + "/" + budget + ".bolt"));
    EXPECT_EQ(BoltStreams(again), BoltStreams(dir + "/" + budget + ".bolt"));
    // f.mid's middle dimension is cut: whole chunks, as from the parent.
    ASSERT_NO_FATAL_FAILURE(CheckBoltSlice(dir + "/half.bolt", again, half_model, b.exp, b.width, PrefixPathTensors(budget)));
    auto v = RunCli({"verify", again});
    EXPECT_EQ(v.exit_code, 0) << v.output;
  }
}

// A copy of `path` with byte `at` (absolute) flipped.
std::string Flipped(const std::string& path, uint64_t at, const std::string& out) {
  auto bytes = ReadFileBytes(path);
  bytes[at] ^= 0x40;
  WriteFileBytes(out, bytes);
  return out;
}

// Absolute file offset of byte `col` of line `line` of tensor `name`.
uint64_t LineByte(const std::string& path, const std::string& name, uint64_t line, uint64_t col) {
  auto r = Reader::Open(path);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return 0;
  const StreamInfo s = (*r)->tensors()[*(*r)->FindTensor(name)].streams[0];
  EXPECT_GT(s.line_bytes, col);
  return s.offset + line * s.line_bytes + col;
}

TEST(LinePrefix, SliceVerifiesExactlyTheKeptBytes) {
  Sources src;
  ASSERT_NO_FATAL_FAILURE(MakeSources(&src));
  const std::string& dir = src.dir;
  // Reference outputs of the clean source.
  std::map<std::string, std::string> clean;
  for (const char* ext : {".bolt", ".gguf", ".safetensors"}) {
    clean[ext] = dir + "/clean_half" + ext;
    ASSERT_NO_FATAL_FAILURE(Slice(src.prefixed, {"--budget", "half"}, clean[ext]));
  }
  // A kept byte ("half" keeps the first 128 elements of each line): f32
  // line 1500 (chunk 1) byte 10, q8_0 line 4000 (chunk 1) byte 100 (< 136).
  for (const auto& [name, line, col] : {std::tuple<std::string, uint64_t, uint64_t>{"f.w2", 1500, 10},
                                        {"q.w2", 4000, 100}, {"q.w3", 100, 3}, {"f.w3", 700, 511}}) {
    SCOPED_TRACE(name);
    std::string bad = Flipped(src.prefixed, LineByte(src.prefixed, name, line, col), dir + "/kept.bolt");
    for (const char* ext : {".bolt", ".gguf", ".safetensors"}) {
      SCOPED_TRACE(ext);
      std::string o = dir + "/bad_half" + ext;
      auto s = RunCli({"slice", bad, "--budget", "half", "-o", o});
      EXPECT_NE(s.exit_code, 0) << s.output;
      EXPECT_NE(s.output.find("line-prefix checksum"), std::string::npos) << s.output;
      EXPECT_NE(s.output.find(name), std::string::npos) << s.output;
      EXPECT_FALSE(std::filesystem::exists(o));
    }
  }
  // A dropped byte (beyond the kept 512 bytes of an f32 line; beyond 136 of
  // a q8_0 line): the slice never reads it, so it succeeds with the clean
  // output, while the source itself does not verify.
  for (const auto& [name, line, col] : {std::tuple<std::string, uint64_t, uint64_t>{"f.w2", 1500, 700},
                                        {"q.w2", 4000, 200}, {"f.w3", 700, 512}}) {
    SCOPED_TRACE(name);
    std::string bad = Flipped(src.prefixed, LineByte(src.prefixed, name, line, col), dir + "/dropped.bolt");
    auto v = RunCli({"verify", bad});
    EXPECT_NE(v.exit_code, 0) << v.output;
    for (const char* ext : {".bolt", ".gguf", ".safetensors"}) {
      SCOPED_TRACE(ext);
      std::string o = dir + "/dropped_half" + ext;
      ASSERT_NO_FATAL_FAILURE(Slice(bad, {"--budget", "half"}, o));
      if (std::string(ext) == ".bolt") {
        EXPECT_EQ(BoltStreams(o), BoltStreams(clean[ext]));  // the header's file id differs
      } else {
        EXPECT_EQ(ReadFileBytes(o), ReadFileBytes(clean[ext]));
      }
    }
    auto vo = RunCli({"verify", dir + "/dropped_half.bolt"});
    EXPECT_EQ(vo.exit_code, 0) << vo.output;
    // The same byte with whole-chunk verification (no prefixes) is caught.
    std::string bad_plain =
        Flipped(src.stripped, LineByte(src.prefixed, name, line, col), dir + "/dropped_plain.bolt");
    auto s = RunCli({"slice", bad_plain, "--budget", "half", "-o", dir + "/dropped_plain_half.bolt"});
    EXPECT_NE(s.exit_code, 0) << s.output;
    EXPECT_NE(s.output.find("checksum mismatch"), std::string::npos) << s.output;
  }
}

TEST(LinePrefix, AdHocCutFallsBackToWholeChunks) {
  Sources src;
  ASSERT_NO_FATAL_FAILURE(MakeSources(&src));
  const std::string& dir = src.dir;
  // 96 elements: on q8_0 block boundaries, but not a recorded prefix.
  for (const char* ext : {".bolt", ".gguf", ".safetensors"}) {
    ASSERT_NO_FATAL_FAILURE(Slice(src.prefixed, {"--keep", "width=96"}, dir + "/k" + ext));
    ASSERT_NO_FATAL_FAILURE(Slice(src.stripped, {"--keep", "width=96"}, dir + "/kp" + ext));
  }
  auto v = RunCli({"verify", dir + "/k.bolt"});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  ASSERT_NO_FATAL_FAILURE(CheckBoltSlice(src.prefixed, dir + "/k.bolt", ModelTensors(), 4, 96, {}));
  EXPECT_EQ(BoltStreams(dir + "/k.bolt"), BoltStreams(dir + "/kp.bolt"));
  EXPECT_EQ(GgufTensors(dir + "/k.gguf"), GgufTensors(dir + "/kp.gguf"));
  EXPECT_EQ(SafetensorsTensors(dir + "/k.safetensors"), SafetensorsTensors(dir + "/kp.safetensors"));
  // An ad hoc cut at a recorded prefix takes the prefix path like the
  // budget: a dropped byte is not read, and the bytes are half's.
  std::string dropped = Flipped(src.prefixed, LineByte(src.prefixed, "f.w2", 1500, 900), dir + "/dropped.bolt");
  ASSERT_NO_FATAL_FAILURE(Slice(dropped, {"--keep", "width=128"}, dir + "/k128.bolt"));
  ASSERT_NO_FATAL_FAILURE(Slice(src.prefixed, {"--budget", "half"}, dir + "/half.bolt"));
  EXPECT_EQ(BoltStreams(dir + "/k128.bolt"), BoltStreams(dir + "/half.bolt"));
  ASSERT_NO_FATAL_FAILURE(CheckBoltSlice(src.prefixed, dir + "/k128.bolt", ModelTensors(), 4, 128, PrefixPathTensors("half")));
  // The fallback verifies whole source chunks: a byte beyond the cut but in
  // a kept chunk is caught.
  std::string bad = Flipped(src.prefixed, LineByte(src.prefixed, "f.w2", 1500, 900), dir + "/bad.bolt");
  auto s = RunCli({"slice", bad, "--keep", "width=96", "-o", dir + "/kb.bolt"});
  EXPECT_NE(s.exit_code, 0) << s.output;
  EXPECT_NE(s.output.find("checksum mismatch"), std::string::npos) << s.output;
}

// A codec of two streams (nvfp4: 8 value bytes and 1 scale byte per 16
// elements): each stream has its own lines and prefixes, and the slice
// checks and carries each one's kept bytes.
TEST(LinePrefix, TwoStreamCodecHasLinesPerStream) {
  std::string dir = MakeTempDir();
  const std::vector<uint64_t> shape = {8448, kWidth};  // 8192 rows a chunk: 2 chunks
  const std::string json =
      R"({"version": 1, "axes": {"width": {"scope": "global"}}, "bindings": [{"tensor": "n.w2", "dims": ["-", "width"]}],
          "budgets": [{"name": "half", "global": {"width": 128}}, {"name": "quarter", "global": {"width": 64}}]})";
  auto parsed = io::ParseElasticJson(json, "e.json", {{"n.w2", shape}});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const std::string path = dir + "/n.bolt";
  {
    auto w = Writer::Create(path, PrefixOptions());
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE((*w)->SetElastic(parsed->manifest).ok());
    auto bytes = F32Bytes(testing::Values("n.w2", testing::Count(shape)));
    auto enc = EncodeTensor("nvfp4", TensorSource{"n.w2", DType::kF32, shape, bytes, {}}, {}, {});
    ASSERT_TRUE(enc.ok()) << enc.status();
    ASSERT_TRUE((*w)->AddTensor("n.w2", shape, DType::kF32, "nvfp4", std::move(*enc)).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  // Lines: 16 blocks of 8 value bytes, of 1 scale byte.
  const uint64_t line[2] = {128, 16};
  auto r = Reader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ((*r)->tensors()[0].streams.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    SCOPED_TRACE(k);
    const StreamInfo s = (*r)->tensors()[0].streams[k];
    EXPECT_EQ(s.line_bytes, line[k]);
    EXPECT_EQ(s.prefix_bytes, (std::vector<uint64_t>{line[k] / 4, line[k] / 2}));
    ASSERT_EQ(s.chunks.size(), 2u);
    auto stored = (*r)->StoredStream(0, k);
    ASSERT_TRUE(stored.ok());
    for (size_t ci = 0; ci < s.chunks.size(); ++ci) {
      const ChunkInfo& c = s.chunks[ci];
      ASSERT_EQ(s.ChunkPrefixXxh3(ci).size(), 2u);
      auto b = stored->subspan(c.stored_offset, c.stored_length);
      EXPECT_EQ(s.ChunkPrefixXxh3(ci)[0], HandPrefixXxh3(b, line[k], line[k] / 4));
      EXPECT_EQ(s.ChunkPrefixXxh3(ci)[1], HandPrefixXxh3(b, line[k], line[k] / 2));
    }
  }
  // "half" keeps the first half of every line of both streams; the output
  // chunks are the source chunks with their recorded half-line checksums.
  ASSERT_NO_FATAL_FAILURE(Slice(path, {"--budget", "half"}, dir + "/half.bolt"));
  auto v = RunCli({"verify", dir + "/half.bolt"});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  {
    auto h = Reader::Open(dir + "/half.bolt");
    ASSERT_TRUE(h.ok()) << h.status();
    for (size_t k = 0; k < 2; ++k) {
      SCOPED_TRACE(k);
      auto src_stored = (*r)->StoredStream(0, k);
      auto out_stored = (*h)->StoredStream(0, k);
      ASSERT_TRUE(src_stored.ok() && out_stored.ok());
      EXPECT_EQ(Vec(*out_stored), GatherPrefixes(*src_stored, line[k], line[k] / 2));
      const StreamInfo ss = (*r)->tensors()[0].streams[k];
      const StreamInfo os = (*h)->tensors()[0].streams[k];
      ASSERT_EQ(os.chunks.size(), ss.chunks.size());
      for (size_t c = 0; c < os.chunks.size(); ++c) EXPECT_EQ(os.chunks[c].xxh3, ss.ChunkPrefixXxh3(c)[1]);
    }
  }
  // A kept and a dropped byte of the scales stream (line 8300, chunk 1).
  const uint64_t scales = (*r)->tensors()[0].streams[1].offset + 8300 * 16;
  std::string kept = Flipped(path, scales + 3, dir + "/kept.bolt");
  auto bad = RunCli({"slice", kept, "--budget", "half", "-o", dir + "/bad.bolt"});
  EXPECT_NE(bad.exit_code, 0) << bad.output;
  EXPECT_NE(bad.output.find("stream \"scales\""), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("line-prefix checksum"), std::string::npos) << bad.output;
  std::string dropped = Flipped(path, scales + 12, dir + "/dropped.bolt");
  ASSERT_NO_FATAL_FAILURE(Slice(dropped, {"--budget", "half"}, dir + "/ok.bolt"));
  EXPECT_EQ(BoltStreams(dir + "/ok.bolt"), BoltStreams(dir + "/half.bolt"));
  // A writer may omit them for any stream: with the scales' stripped, the
  // values take the prefix path and the scales whole chunks; same bytes.
  WriteFileBytes(dir + "/values_only.bolt", RewriteManifest(ReadFileBytes(path), [](v1::Manifest& m) {
                   v1::Stream* s = m.mutable_tensors(0)->mutable_streams(1);
                   s->set_line_bytes(0);
                   s->clear_prefix_bytes();
                   for (auto& chunk : *s->mutable_chunks()) chunk.clear_prefix_xxh3();
                 }));
  for (const char* ext : {".bolt", ".safetensors", ".gguf"}) {
    SCOPED_TRACE(ext);
    ASSERT_NO_FATAL_FAILURE(Slice(dir + "/values_only.bolt", {"--budget", "half"}, dir + "/vo" + ext));
    ASSERT_NO_FATAL_FAILURE(Slice(path, {"--budget", "half"}, dir + "/full" + ext));
  }
  EXPECT_EQ(BoltStreams(dir + "/vo.bolt"), BoltStreams(dir + "/half.bolt"));
  auto vo = RunCli({"verify", dir + "/vo.bolt"});
  EXPECT_EQ(vo.exit_code, 0) << vo.output;
  EXPECT_EQ(SafetensorsTensors(dir + "/vo.safetensors"), SafetensorsTensors(dir + "/full.safetensors"));
  EXPECT_EQ(GgufTensors(dir + "/vo.gguf"), GgufTensors(dir + "/full.gguf"));
}

// ---- 5. copying as stored ----

TEST(LinePrefix, CopyKeepsAndChecksPrefixes) {
  Sources src;
  ASSERT_NO_FATAL_FAILURE(MakeSources(&src));
  const std::string& dir = src.dir;
  auto c = RunCli({"convert", src.prefixed, "-o", dir + "/copy.bolt"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  {
    auto a = Reader::Open(src.prefixed);
    auto b = Reader::Open(dir + "/copy.bolt");
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ((*b)->version().minor, 2u);
    ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
    for (const auto& t : (*a)->tensors()) {
      SCOPED_TRACE(t.name);
      const StreamInfo& sa = t.streams[0];
      const StreamInfo sb = (*b)->tensors()[*(*b)->FindTensor(t.name)].streams[0];
      EXPECT_EQ(sb.line_bytes, sa.line_bytes);
      EXPECT_EQ(sb.prefix_bytes, sa.prefix_bytes);
      ASSERT_EQ(sb.chunks.size(), sa.chunks.size());
      EXPECT_EQ(sb.prefix_xxh3, sa.prefix_xxh3);
    }
    ASSERT_NO_FATAL_FAILURE(ExpectRecordedPrefixes(**b, ModelTensors()));
  }
  auto v = RunCli({"verify", dir + "/copy.bolt"});
  EXPECT_EQ(v.exit_code, 0) << v.output;

  // Re-encoding one tensor (f16: 2-byte cells) plans its prefixes anew from
  // the manifest the file carries.
  auto f16 = RunCli({"convert", src.prefixed, "-o", dir + "/f16.bolt", "--codec", "f.w2=f16"});
  ASSERT_EQ(f16.exit_code, 0) << f16.output;
  {
    auto r = Reader::Open(dir + "/f16.bolt");
    ASSERT_TRUE(r.ok()) << r.status();
    size_t i = *(*r)->FindTensor("f.w2");
    const StreamInfo s = (*r)->tensors()[i].streams[0];
    EXPECT_EQ((*r)->tensors()[i].codec_id, "f16");
    EXPECT_EQ(s.line_bytes, 512u);
    EXPECT_EQ(s.prefix_bytes, (std::vector<uint64_t>{128, 256}));
    auto stored = (*r)->StoredStream(i, 0);
    ASSERT_TRUE(stored.ok());
    ASSERT_GE(s.chunks.size(), 2u);
    for (size_t ci = 0; ci < s.chunks.size(); ++ci) {
      const ChunkInfo& chunk = s.chunks[ci];
      ASSERT_EQ(s.ChunkPrefixXxh3(ci).size(), 2u);
      auto bytes = stored->subspan(chunk.stored_offset, chunk.stored_length);
      EXPECT_EQ(s.ChunkPrefixXxh3(ci)[0], HandPrefixXxh3(bytes, 512, 128));
      EXPECT_EQ(s.ChunkPrefixXxh3(ci)[1], HandPrefixXxh3(bytes, 512, 256));
    }
  }

  // A source whose recorded prefix checksum is wrong is not copied.
  WriteFileBytes(dir + "/wrong.bolt", RewriteManifest(ReadFileBytes(src.prefixed), [](v1::Manifest& m) {
                   auto* ch = m.mutable_tensors(ProtoTensor(m, "q.w2"))->mutable_streams(0)->mutable_chunks(0);
                   ch->set_prefix_xxh3(0, ch->prefix_xxh3(0) + 1);
                 }));
  auto bad = RunCli({"convert", dir + "/wrong.bolt", "-o", dir + "/copy2.bolt"});
  EXPECT_NE(bad.exit_code, 0) << bad.output;
  EXPECT_NE(bad.output.find("line-prefix checksums do not match"), std::string::npos) << bad.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/copy2.bolt"));
  // Through the library: DATA_LOSS.
  auto r = Reader::Open(dir + "/wrong.bolt");
  ASSERT_TRUE(r.ok()) << r.status();
  auto w = Writer::Create(dir + "/copy3.bolt");
  ASSERT_TRUE(w.ok());
  absl::Status st = (*w)->CopyTensor(**r, *(*r)->FindTensor("q.w2"));
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  EXPECT_NE(std::string(st.message()).find("line-prefix checksums do not match"), std::string::npos) << st;
  // Other tensors copy fine, with their prefixes.
  auto w2 = Writer::Create(dir + "/copy4.bolt");
  ASSERT_TRUE(w2.ok());
  ASSERT_TRUE((*w2)->CopyTensor(**r, *(*r)->FindTensor("f.w2")).ok());
  ASSERT_TRUE((*w2)->Finish().ok());
  auto r4 = Reader::Open(dir + "/copy4.bolt");
  ASSERT_TRUE(r4.ok()) << r4.status();
  EXPECT_EQ((*r4)->version().minor, 2u);
  EXPECT_EQ((*r4)->tensors()[0].streams[0].prefix_bytes, (std::vector<uint64_t>{256, 512}));
  EXPECT_TRUE((*r4)->VerifyContainer().ok());
}

}  // namespace
}  // namespace boltpack
