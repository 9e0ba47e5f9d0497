// GGUF reader/writer and imatrix: every reader rule with a crafted file,
// the conformance and corpus files, exact rewrites, split models.
#include <cstring>
#include <filesystem>
#include <functional>

#include "gtest/gtest.h"
#include "io/gguf.h"
#include "io/imatrix.h"
#include "tests/test_util.h"

namespace boltpack::io {
namespace {

using testing::MakeTempDir;
using testing::ReadFileBytes;
using testing::SharedDir;
using testing::SourceDir;
using testing::WriteFileBytes;

// Raw GGUF bytes, field by field (for files a writer must refuse to make).
struct Raw {
  std::vector<uint8_t> b;
  template <typename T>
  Raw& Put(T v) {
    uint8_t tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));
    b.insert(b.end(), tmp, tmp + sizeof(T));
    return *this;
  }
  Raw& Str(std::string_view s) {
    Put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Raw& Header(uint32_t version, int64_t n_tensors, int64_t n_kv) {
    b.insert(b.end(), {'G', 'G', 'U', 'F'});
    return Put(version).Put(n_tensors).Put(n_kv);
  }
  Raw& KvU32(std::string_view k, uint32_t v) { return Str(k).Put<int32_t>(4).Put(v); }
  Raw& Tensor(std::string_view name, std::vector<int64_t> ne, int32_t type, uint64_t offset) {
    Str(name).Put<uint32_t>(ne.size());
    for (auto d : ne) Put(d);
    return Put(type).Put(offset);
  }
  Raw& PadTo(size_t a) {
    b.resize((b.size() + a - 1) / a * a, 0);
    return *this;
  }
  Raw& Zeros(size_t n) {
    b.resize(b.size() + n, 0);
    return *this;
  }
};

absl::Status Open(const Raw& r) { return GgufModel::OpenBuffer(r.b, "crafted.gguf").status(); }

void ExpectRejected(const Raw& r, std::initializer_list<std::string_view> words) {
  absl::Status s = Open(r);
  ASSERT_FALSE(s.ok()) << "accepted";
  std::string msg(s.message());
  EXPECT_NE(msg.find("crafted.gguf"), std::string::npos) << msg;
  for (auto w : words) EXPECT_NE(msg.find(w), std::string::npos) << "\"" << w << "\" not in: " << msg;
}

// One valid F32 tensor "w" of 8 elements.
Raw OneTensor(std::function<void(Raw&)> kv = nullptr, int64_t n_kv = 0) {
  Raw r;
  r.Header(3, 1, n_kv);
  if (kv) kv(r);
  r.Tensor("w", {8}, 0, 0).PadTo(32).Zeros(32);
  return r;
}

std::string GgufDir() { return SourceDir() + "/testdata/gguf"; }

TEST(GgufTypes, TableMatchesGgml) {
  EXPECT_EQ(GgmlTypeById(8)->type_size, 34u);
  EXPECT_EQ(GgmlTypeById(8)->block_size, 32u);
  EXPECT_EQ(GgmlTypeById(40)->type_size, 36u);
  EXPECT_EQ(GgmlTypeById(40)->block_size, 64u);
  EXPECT_EQ(GgmlTypeById(16)->type_size, 66u);
  EXPECT_EQ(GgmlTypeById(12)->type_size, 144u);
  EXPECT_EQ(GgmlTypeById(42)->type_size, 18u);
  for (int removed : {4, 5, 31, 32, 33, 36, 37, 38, 43, -1}) EXPECT_EQ(GgmlTypeById(removed), nullptr) << removed;
  int known = 0;
  for (int i = 0; i < kGgmlTypeCount; ++i) known += GgmlTypeById(i) != nullptr;
  EXPECT_EQ(known, 35);
  EXPECT_EQ(GgmlTypeCodecId(*GgmlTypeById(12)), "ggml-q4_k");
  EXPECT_EQ(GgmlTypeCodecId(*GgmlTypeById(40)), "nvfp4-ggml");
  EXPECT_EQ(GgmlTypeCodecId(*GgmlTypeById(28)), "raw");
  EXPECT_EQ(GgmlTypeDType(*GgmlTypeById(28)), DType::kF64);
  EXPECT_EQ(GgmlTypeDType(*GgmlTypeById(14)), DType::kF32);
  CodecParams p{{"ggml_type", MetaValue::Int(ValueType::kInt32, 12)}};
  EXPECT_EQ(GgmlTypeForCodec("ggml-q4_k", DType::kF32, p)->id, 12);
  CodecParams wrong{{"ggml_type", MetaValue::Int(ValueType::kInt32, 13)}};
  EXPECT_EQ(GgmlTypeForCodec("ggml-q4_k", DType::kF32, wrong), nullptr);
  EXPECT_EQ(GgmlTypeForCodec("raw", DType::kI32, {})->id, 26);
  EXPECT_EQ(GgmlTypeForCodec("raw", DType::kU8, {}), nullptr);
  EXPECT_EQ(GgmlTypeForCodec("int4-g128", DType::kF32, {}), nullptr);
  for (int i = 0; i < kGgmlTypeCount; ++i) {
    if (const GgmlType* t = GgmlTypeById(i)) {
      EXPECT_EQ(GgmlTypeForCodec(GgmlTypeCodecId(*t), GgmlTypeDType(*t),
                                 {{"ggml_type", MetaValue::Int(ValueType::kInt32, i)}}),
                t)
          << t->name;
    }
  }
}

TEST(GgufReader, MinimalValidFile) {
  auto m = GgufModel::OpenBuffer(OneTensor().b, "ok.gguf");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ((*m)->tensors().size(), 1u);
  EXPECT_EQ((*m)->TensorBytes(0).size(), 32u);
  EXPECT_EQ((*m)->data_offset(0) % 32, 0u);
}

TEST(GgufReader, RejectsBadHeaders) {
  Raw r;
  r.b = {'G', 'G', 'U'};
  ExpectRejected(r, {"not a GGUF"});
  r.b = {'F', 'U', 'G', 'G', 3, 0, 0, 0};
  ExpectRejected(r, {"not a GGUF"});
  ExpectRejected(Raw().Header(1, 0, 0), {"version 1"});
  ExpectRejected(Raw().Header(4, 0, 0), {"version 4"});
  ExpectRejected(Raw().Header(0x03000000, 0, 0), {"byte-swapped"});
  ExpectRejected(Raw().Header(3, -1, 0), {"negative tensor count"});
  ExpectRejected(Raw().Header(3, 0, -5), {"negative key/value count"});
  ExpectRejected(Raw().Header(3, 0, 1'000'000'000), {"cannot fit"});
  ExpectRejected(Raw().Header(3, 1'000'000'000, 0), {"cannot fit"});
  EXPECT_TRUE(Open(Raw().Header(2, 0, 0)).ok());
  EXPECT_TRUE(Open(Raw().Header(3, 0, 0)).ok());
}

TEST(GgufReader, RejectsBadKeys) {
  ExpectRejected(Raw().Header(3, 0, 1).Str("").Put<int32_t>(4).Put<uint32_t>(1), {"empty"});
  ExpectRejected(Raw().Header(3, 0, 2).KvU32("a.b", 1).KvU32("a.b", 2), {"duplicate key", "a.b"});
  ExpectRejected(Raw().Header(3, 0, 1).Str("k").Put<int32_t>(13), {"\"k\"", "invalid value type 13"});
  ExpectRejected(Raw().Header(3, 0, 1).Str("k").Put<int32_t>(-1), {"invalid value type -1"});
  ExpectRejected(Raw().Header(3, 0, 1).Str(std::string("a\0b", 3)).Put<int32_t>(4).Put<uint32_t>(1), {"NUL"});
  ExpectRejected(Raw().Header(3, 0, 1).Str("\xff\xfe").Put<int32_t>(4).Put<uint32_t>(1), {"UTF-8"});
  ExpectRejected(Raw().Header(3, 0, 1).Str("k").Put<int32_t>(7).Put<uint8_t>(2), {"\"k\"", "bool byte 2"});
  // Strings: the 1 GiB cap, and never past the end of the file.
  ExpectRejected(Raw().Header(3, 0, 1).Str("k").Put<int32_t>(8).Put<uint64_t>((1ull << 30) + 1), {"1 GiB"});
  ExpectRejected(Raw().Header(3, 0, 1).Str("k").Put<int32_t>(8).Put<uint64_t>(100).Zeros(10), {"left in the file"});
  ExpectRejected(Raw().Header(3, 0, 1).Put<uint64_t>(~0ull).Zeros(8), {"key #0", "1 GiB"});
  // Arrays: the 2^30 cap, and the count must fit in the bytes left.
  ExpectRejected(Raw().Header(3, 0, 1).Str("k").Put<int32_t>(9).Put<int32_t>(0).Put<uint64_t>((1ull << 30) + 1),
                 {"\"k\"", "limit 2^30"});
  ExpectRejected(Raw().Header(3, 0, 1).Str("k").Put<int32_t>(9).Put<int32_t>(5).Put<uint64_t>(1000).Zeros(40),
                 {"\"k\"", "cannot fit"});
  ExpectRejected(Raw().Header(3, 0, 1).Str("k").Put<int32_t>(9).Put<int32_t>(99).Put<uint64_t>(0),
                 {"invalid array element type 99"});
}

TEST(GgufReader, AlignmentKey) {
  ExpectRejected(OneTensor([](Raw& r) { r.Str("general.alignment").Put<int32_t>(5).Put<int32_t>(64); }, 1),
                 {"general.alignment", "UINT32"});
  ExpectRejected(OneTensor([](Raw& r) { r.KvU32("general.alignment", 24); }, 1), {"power of two"});
  ExpectRejected(OneTensor([](Raw& r) { r.KvU32("general.alignment", 0); }, 1), {"power of two"});
  // ggml has no upper bound; bolt-pack's is 2^24, since a rewrite pads to it
  // (a fuzzer's 100-byte file with 2^30 asked for a gigabyte).
  ExpectRejected(Raw().Header(3, 0, 1).KvU32("general.alignment", 1u << 25), {"general.alignment", "<= 16777216"});
  Raw largest;
  largest.Header(3, 0, 1).KvU32("general.alignment", kGgufMaxAlignment);
  auto vocab_only = GgufModel::OpenBuffer(largest.b, "a24.gguf");
  ASSERT_TRUE(vocab_only.ok()) << vocab_only.status();
  EXPECT_EQ((*vocab_only)->alignment(), kGgufMaxAlignment);
  // Alignment 1 is what ggml accepts too.
  Raw one;
  one.Header(3, 1, 1).KvU32("general.alignment", 1).Tensor("w", {8}, 0, 0).Zeros(32);
  auto m = GgufModel::OpenBuffer(one.b, "a1.gguf");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->alignment(), 1u);
}

TEST(GgufReader, NestedArraysAndAllTypes) {
  Raw r;
  r.Header(3, 0, 2);
  // [[1, 2], []] as arrays of arrays of u16.
  r.Str("nested").Put<int32_t>(9).Put<int32_t>(9).Put<uint64_t>(2);
  r.Put<int32_t>(2).Put<uint64_t>(2).Put<uint16_t>(1).Put<uint16_t>(2);
  r.Put<int32_t>(2).Put<uint64_t>(0);
  r.Str("s").Put<int32_t>(8).Str("x");
  auto m = GgufModel::OpenBuffer(r.b, "nested.gguf");
  ASSERT_TRUE(m.ok()) << m.status();
  const MetaValue& v = (*m)->metadata()[0].second;
  ASSERT_EQ(v.type, ValueType::kArray);
  EXPECT_EQ(v.element_type, ValueType::kArray);
  ASSERT_EQ(v.array_size(), 2u);
  EXPECT_EQ(v.child(0).element_type, ValueType::kUint16);
  EXPECT_EQ(v.child(0).uint_element(1), 2u);
  // Writing it back gives the same bytes.
  auto h = EncodeGgufHeader("x", (*m)->metadata(), {}, 3, 32, /*pad_empty=*/false);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(*h, r.b);
  // Depth is capped.
  Raw deep;
  deep.Header(3, 0, 1).Str("d").Put<int32_t>(9);
  for (int i = 0; i < 20; ++i) deep.Put<int32_t>(9).Put<uint64_t>(1);
  deep.Put<int32_t>(0).Put<uint64_t>(0);
  ExpectRejected(deep, {"nested deeper"});
}

TEST(GgufReader, RejectsBadTensorInfos) {
  auto one = [](std::string name, std::vector<int64_t> ne, int32_t type, uint64_t off) {
    Raw r;
    r.Header(3, 1, 0).Tensor(name, ne, type, off).PadTo(32).Zeros(4096);
    return r;
  };
  ExpectRejected(one(std::string(64, 'n'), {8}, 0, 0), {"64 bytes", "63"});
  EXPECT_TRUE(Open(one(std::string(63, 'n'), {8}, 0, 0)).ok());
  ExpectRejected(one("", {8}, 0, 0), {"empty name"});
  ExpectRejected(one("t", {1, 1, 1, 1, 1}, 0, 0), {"\"t\"", "5 dimensions"});
  ExpectRejected(one("t", {8, -1}, 0, 0), {"\"t\"", "negative"});
  ExpectRejected(one("t", {INT64_MAX / 2, 4}, 0, 0), {"\"t\"", "overflow"});
  ExpectRejected(one("t", {32}, 4, 0), {"\"t\"", "removed ggml type 4"});
  ExpectRejected(one("t", {32}, 43, 0), {"\"t\"", "ggml type 43"});
  ExpectRejected(one("t", {32}, -3, 0), {"\"t\"", "ggml type -3"});
  ExpectRejected(one("t", {48}, 8, 0), {"\"t\"", "48", "block size 32"});
  ExpectRejected(one("t", {8}, 0, 16), {"\"t\"", "offset 16", "alignment 32"});
  ExpectRejected(one("t", {8}, 0, 32), {"\"t\"", "offset 32, expected 0"});
  ExpectRejected(one("t", {1 << 20}, 0, 0), {"\"t\"", "past the end"});
  // Zero-element and 0-d tensors are fine.
  EXPECT_TRUE(Open(one("t", {0, 5}, 8, 0)).ok());
  EXPECT_TRUE(Open(one("t", {}, 0, 0)).ok());
  Raw dup;
  dup.Header(3, 2, 0).Tensor("a", {8}, 0, 0).Tensor("a", {8}, 0, 32).PadTo(32).Zeros(64);
  ExpectRejected(dup, {"duplicate tensor name", "\"a\""});
  Raw overlap;
  overlap.Header(3, 2, 0).Tensor("a", {8}, 0, 0).Tensor("b", {8}, 0, 0).PadTo(32).Zeros(64);
  ExpectRejected(overlap, {"\"b\"", "offset 0, expected 32"});
  Raw swapped;
  swapped.Header(3, 2, 0).Tensor("a", {8}, 0, 32).Tensor("b", {8}, 0, 0).PadTo(32).Zeros(64);
  ExpectRejected(swapped, {"\"a\"", "offset 32, expected 0"});
  // A data section that starts past the end of the file.
  Raw nodata;
  nodata.Header(3, 1, 0).Tensor("a", {8}, 0, 0);
  ExpectRejected(nodata, {"past the end"});
  // The last tensor may lack its trailing padding (ggml with no_alloc).
  Raw nopad;
  nopad.Header(3, 1, 0).Tensor("a", {3}, 0, 0).PadTo(32).Zeros(12);
  EXPECT_TRUE(Open(nopad).ok());
}

TEST(GgufReader, EveryTruncationIsRejected) {
  std::vector<uint8_t> full = ReadFileBytes(GgufDir() + "/ggml-writer-all.gguf");
  ASSERT_FALSE(full.empty());
  auto m = GgufModel::OpenBuffer(full, "all.gguf");
  ASSERT_TRUE(m.ok()) << m.status();
  // The last tensor ends before the final padding; anything shorter fails.
  const auto& last = (*m)->tensors().back();
  uint64_t need = last.file_offset + last.nbytes;
  for (size_t n = 0; n < full.size(); n += (n < 2048 ? 1 : 97)) {
    auto t = GgufModel::OpenBuffer(absl::MakeConstSpan(full.data(), n), "cut.gguf");
    EXPECT_EQ(t.ok(), n >= need) << n;
  }
}

TEST(GgufReader, VocabOnlyUnpadded) {
  Raw r;
  r.Header(3, 0, 1).Str("general.architecture").Put<int32_t>(8).Str("llama");
  ASSERT_NE(r.b.size() % 32, 0u);
  auto m = GgufModel::OpenBuffer(r.b, "vocab.gguf");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->data_offset(0), r.b.size());
}

TEST(GgufReader, OpensAndIndexesTenThousandTensors) {
  // Speed lives in bench/gguf_bench.cc (a timed test fails on a loaded
  // machine or under ASan); this checks the indexed result.
  std::vector<GgufTensorDecl> decls;
  for (int i = 0; i < 10000; ++i) decls.push_back({"blk." + std::to_string(i) + ".w", {32, 2}, 8});
  Metadata kv{{"general.architecture", MetaValue::String("llama")}};
  auto h = EncodeGgufHeader("big", kv, decls, 3, 32);
  ASSERT_TRUE(h.ok()) << h.status();
  std::vector<uint8_t> bytes = *h;
  bytes.resize(bytes.size() + 10000 * 96, 0);
  auto m = GgufModel::OpenBuffer(bytes, "big.gguf");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->tensors().size(), 10000u);
  for (size_t i : {0u, 4999u, 9999u}) EXPECT_EQ((*m)->FindTensor("blk." + std::to_string(i) + ".w"), i);
  EXPECT_FALSE((*m)->FindTensor("blk.10000.w").has_value());
}

TEST(GgufWriter, RefusesWhatGgmlRejects) {
  Metadata kv;
  auto fail = [&](std::vector<GgufTensorDecl> d, std::string_view word, Metadata m = {}) {
    auto h = EncodeGgufHeader("out.gguf", m, d, 3, 0);
    ASSERT_FALSE(h.ok());
    EXPECT_NE(std::string(h.status().message()).find(word), std::string::npos) << h.status();
  };
  std::string long_name(64, 'x');
  fail({{long_name, {32}, 0}}, long_name);
  fail({{"a", {32}, 0}, {"a", {32}, 0}}, "duplicate");
  fail({{"a", {1, 1, 1, 1, 1}, 0}}, "at most 4");
  fail({{"a", {32}, 4}}, "unknown ggml type 4");
  fail({{"a", {48}, 8}}, "block size");
  fail({}, "general.alignment", {{"general.alignment", MetaValue::Uint(ValueType::kUint64, 64)}});
  fail({}, "general.alignment", {{"general.alignment", MetaValue::Uint(ValueType::kUint32, 48)}});
  fail({}, "<= 16777216", {{"general.alignment", MetaValue::Uint(ValueType::kUint32, 1u << 25)}});
  fail({}, "duplicate", {{"k", MetaValue::Bool(true)}, {"k", MetaValue::Bool(true)}});
}

TEST(GgufWriter, StreamsAndPadsLikeGgml) {
  std::string dir = MakeTempDir();
  Metadata kv{{"general.alignment", MetaValue::Uint(ValueType::kUint32, 64)}};
  auto w = GgufWriter::Create(dir + "/w.gguf", kv, {{"a", {3}, 0}, {"b", {32}, 8}});
  ASSERT_TRUE(w.ok()) << w.status();
  std::vector<uint8_t> a(12, 1), b(34, 2);
  EXPECT_FALSE((*w)->WriteNext(b).ok());  // wrong size for "a"
  ASSERT_TRUE((*w)->WriteNext(a).ok());
  ASSERT_TRUE((*w)->WriteNext(b).ok());
  EXPECT_FALSE((*w)->WriteNext(b).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  auto bytes = ReadFileBytes(dir + "/w.gguf");
  EXPECT_EQ(bytes.size() % 64, 0u);
  auto m = GgufModel::Open(dir + "/w.gguf");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->tensors()[1].offset, 64u);
  EXPECT_EQ((*m)->TensorBytes(1)[33], 2);
}

// Every GGUF of the conformance set (shipped) and the corpus (../shared):
// opens or is rejected as expected; rewritten from what was read, the valid
// ones come out byte for byte.
void CheckRewrite(const std::string& path) {
  SCOPED_TRACE(path);
  auto m = GgufModel::Open(path);
  ASSERT_TRUE(m.ok()) << m.status();
  const GgufModel& g = **m;
  std::vector<GgufTensorDecl> decls;
  for (const auto& t : g.tensors()) decls.push_back({std::string(t.name), t.ne, t.type->id});
  std::string out = MakeTempDir() + "/out.gguf";
  GgufWriterOptions o;
  o.version = g.version();
  o.pad_empty = !(g.tensors().empty() && g.data_offset(0) == g.file_size(0));
  auto w = GgufWriter::Create(out, g.metadata(), decls, o);
  ASSERT_TRUE(w.ok()) << w.status();
  for (size_t i = 0; i < g.tensors().size(); ++i) ASSERT_TRUE((*w)->WriteNext(g.TensorBytes(i)).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_TRUE(ReadFileBytes(out) == ReadFileBytes(path)) << "not byte-identical";
}

TEST(GgufConformance, ShippedFiles) {
  for (const char* f : {"ggml-writer-all", "ggml-writer-experts", "ggml-writer-empty", "ggml-writer-metaonly"}) {
    CheckRewrite(GgufDir() + "/" + f + ".gguf");
  }
  auto all = GgufModel::Open(GgufDir() + "/ggml-writer-all.gguf");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)->metadata().size(), 21u);
  auto bad = GgufModel::Open(GgufDir() + "/ggml-writer-align64-misaligned.gguf");
  ASSERT_FALSE(bad.ok());
  std::string msg(bad.status().message());
  for (auto w : {"ggml-writer-align64-misaligned.gguf", "blk.0.ffn_up.weight", "offset 33568", "alignment 64"}) {
    EXPECT_NE(msg.find(w), std::string::npos) << msg;
  }
}

TEST(GgufConformance, CorpusFiles) {
  if (SharedDir().empty()) GTEST_SKIP() << "../shared not present";
  std::string corpus = SharedDir() + "/corpus/gguf";
  int n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(corpus)) {
    if (e.path().extension() != ".gguf") continue;
    std::string p = e.path().string();
    if (p.find("/odd/") != std::string::npos) {
      auto m = GgufModel::Open(p);
      EXPECT_FALSE(m.ok()) << p;
      EXPECT_NE(m.status().message().find(e.path().filename().string()), std::string_view::npos);
    } else {
      CheckRewrite(p);
    }
    ++n;
  }
  EXPECT_GE(n, 18);
}

// Split models: three shards written as gguf-split does.
std::string WriteSplit(const std::string& dir, int count, int32_t declared_tensors, bool skip_last = false) {
  std::string prefix = dir + "/Model-Q8_0";
  for (int k = 0; k < count; ++k) {
    if (skip_last && k == count - 1) break;
    Metadata kv;
    if (k == 0) kv.emplace_back("general.architecture", MetaValue::String("llama"));
    kv.emplace_back("split.no", MetaValue::Uint(ValueType::kUint16, k));
    kv.emplace_back("split.count", MetaValue::Uint(ValueType::kUint16, count));
    kv.emplace_back("split.tensors.count", MetaValue::Int(ValueType::kInt32, declared_tensors));
    std::vector<GgufTensorDecl> d{{"t" + std::to_string(k), {32, 2}, 8}};
    auto w = GgufWriter::Create(GgufSplitPath(prefix, k, count), kv, d);
    EXPECT_TRUE(w.ok()) << w.status();
    std::vector<uint8_t> bytes(68, static_cast<uint8_t>(k + 1));
    EXPECT_TRUE((*w)->WriteNext(bytes).ok());
    EXPECT_TRUE((*w)->Finish().ok());
  }
  return GgufSplitPath(prefix, 0, count);
}

TEST(GgufSplit, OpensAsOneModel) {
  std::string dir = MakeTempDir();
  std::string first = WriteSplit(dir, 3, 3);
  EXPECT_EQ(first, dir + "/Model-Q8_0-00001-of-00003.gguf");
  auto m = GgufModel::Open(first);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->shard_count(), 3u);
  ASSERT_EQ((*m)->tensors().size(), 3u);
  EXPECT_EQ((*m)->tensors()[2].name, "t2");
  EXPECT_EQ((*m)->tensors()[2].shard, 2u);
  EXPECT_EQ((*m)->TensorBytes(2)[0], 3);
  auto second = GgufModel::Open(dir + "/Model-Q8_0-00002-of-00003.gguf");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("first shard"), std::string_view::npos);
}

TEST(GgufSplit, Errors) {
  std::string dir = MakeTempDir();
  auto m = GgufModel::Open(WriteSplit(dir, 3, 4));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("split.tensors.count is 4"), std::string_view::npos) << m.status();
  std::string dir2 = MakeTempDir();
  auto missing = GgufModel::Open(WriteSplit(dir2, 3, 3, /*skip_last=*/true));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("00003-of-00003"), std::string_view::npos);
  // Wrong key type.
  Raw r;
  r.Header(3, 0, 1).Str("split.no").Put<int32_t>(4).Put<uint32_t>(0);
  ExpectRejected(r, {"split.no", "uint16"});
}

// An imatrix GGUF as llama-imatrix writes it.
std::vector<uint8_t> ImatrixGguf() {
  Metadata kv{{"general.type", MetaValue::String("imatrix")},
              {"imatrix.chunk_count", MetaValue::Uint(ValueType::kUint32, 10)},
              {"imatrix.chunk_size", MetaValue::Uint(ValueType::kUint32, 512)}};
  std::vector<GgufTensorDecl> d{{"blk.0.ffn_up.weight.in_sum2", {4}, 0},
                                {"blk.0.ffn_up.weight.counts", {1}, 0},
                                {"blk.0.ffn_up_exps.weight.in_sum2", {4, 2}, 0},
                                {"blk.0.ffn_up_exps.weight.counts", {1, 2}, 0}};
  auto h = EncodeGgufHeader("im", kv, d, 3, 32);
  std::vector<uint8_t> b = *h;
  auto put = [&](std::vector<float> v) {
    size_t n = b.size();
    b.resize(n + v.size() * 4);
    std::memcpy(b.data() + n, v.data(), v.size() * 4);
    b.resize((b.size() + 31) / 32 * 32, 0);
  };
  put({2, 4, 6, 8});
  put({2});
  put({1, 2, 3, 4, 10, 20, 30, 40});
  put({1, 0});
  return b;
}

TEST(Imatrix, GgufFormat) {
  auto im = Imatrix::Parse(ImatrixGguf(), "im.gguf");
  ASSERT_TRUE(im.ok()) << im.status();
  EXPECT_EQ((*im)->format(), "gguf");
  EXPECT_EQ((*im)->size(), 2u);
  uint64_t shape2[] = {16, 4};
  auto w = (*im)->For("blk.0.ffn_up.weight", shape2);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(std::vector<float>(w->begin(), w->end()), (std::vector<float>{1, 2, 3, 4}));
  uint64_t shape3[] = {2, 16, 4};
  auto e = (*im)->For("blk.0.ffn_up_exps.weight", shape3);
  ASSERT_TRUE(e.ok()) << e.status();
  // Expert 1 never saw input: weights 1 (as llama.cpp).
  EXPECT_EQ(std::vector<float>(e->begin(), e->end()), (std::vector<float>{1, 2, 3, 4, 1, 1, 1, 1}));
  uint64_t wrong[] = {16, 8};
  EXPECT_FALSE((*im)->For("blk.0.ffn_up.weight", wrong).ok());
  EXPECT_TRUE((*im)->For("other", wrong)->empty());
}

TEST(Imatrix, LegacyFormat) {
  std::vector<uint8_t> b;
  auto i32 = [&](int32_t v) {
    uint8_t t[4];
    std::memcpy(t, &v, 4);
    b.insert(b.end(), t, t + 4);
  };
  i32(1);
  std::string name = "blk.0.attn_q.weight";
  i32(name.size());
  b.insert(b.end(), name.begin(), name.end());
  i32(7);
  i32(2);
  float v[2] = {0.5f, 1.5f};
  b.insert(b.end(), reinterpret_cast<uint8_t*>(v), reinterpret_cast<uint8_t*>(v) + 8);
  auto im = Imatrix::Parse(b, "old.dat");
  ASSERT_TRUE(im.ok()) << im.status();
  EXPECT_EQ((*im)->format(), "legacy");
  EXPECT_EQ((*im)->Find(name)->weights, (std::vector<float>{0.5f, 1.5f}));
  b.resize(b.size() - 1);
  EXPECT_FALSE(Imatrix::Parse(b, "cut.dat").ok());
  EXPECT_FALSE(Imatrix::Parse(std::vector<uint8_t>{0, 0, 0, 0}, "zero.dat").ok());
}

TEST(Imatrix, RejectsUnpairedTensors) {
  Metadata kv;
  std::vector<GgufTensorDecl> d{{"x.in_sum2", {4}, 0}};
  auto h = EncodeGgufHeader("im", kv, d, 3, 32);
  std::vector<uint8_t> b = *h;
  b.resize(b.size() + 32, 0);
  auto im = Imatrix::Parse(b, "bad.gguf");
  ASSERT_FALSE(im.ok());
  EXPECT_NE(im.status().message().find("x.counts"), std::string_view::npos);
}

}  // namespace
}  // namespace boltpack::io
