// bolt-pack convert/inspect/verify on GGUF: exact round trips through .bolt,
// typed metadata, codec mapping, exit codes and messages.
#include <filesystem>

#include "boltpack/reader.h"
#include "gtest/gtest.h"
#include "io/gguf.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::ReadFileBytes;
using testing::RunCli;
using testing::SharedDir;
using testing::SourceDir;

std::string Gguf(const std::string& name) { return SourceDir() + "/testdata/gguf/" + name + ".gguf"; }

const MetaValue* Find(const Metadata& m, std::string_view key) {
  for (const auto& [k, v] : m) {
    if (k == key) return &v;
  }
  return nullptr;
}

TEST(GgufCli, GgmlWriterFilesRoundTripByteIdentical) {
  std::string dir = MakeTempDir();
  for (const char* name : {"ggml-writer-all", "ggml-writer-experts", "ggml-writer-empty", "ggml-writer-metaonly"}) {
    SCOPED_TRACE(name);
    std::string bolt = dir + "/" + name + ".bolt", back = dir + "/" + name + ".gguf";
    auto r1 = RunCli({"convert", Gguf(name), "-o", bolt});
    ASSERT_EQ(r1.exit_code, 0) << r1.output;
    auto r2 = RunCli({"convert", bolt, "-o", back});
    ASSERT_EQ(r2.exit_code, 0) << r2.output;
    EXPECT_TRUE(ReadFileBytes(back) == ReadFileBytes(Gguf(name))) << "not byte-identical";
  }
}

TEST(GgufCli, BoltKeepsTypedMetadataShapesAndCodecs) {
  std::string bolt = MakeTempDir() + "/all.bolt";
  auto r = RunCli({"convert", Gguf("ggml-writer-all"), "-o", bolt});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto reader = Reader::Open(bolt);
  ASSERT_TRUE(reader.ok()) << reader.status();
  const Metadata& m = (*reader)->metadata();
  auto gguf = io::GgufModel::Open(Gguf("ggml-writer-all"));
  ASSERT_TRUE(gguf.ok());
  // The GGUF keys first, in order, with their types and values; then gguf.*.
  ASSERT_EQ(m.size(), (*gguf)->metadata().size() + 2);
  for (size_t i = 0; i < (*gguf)->metadata().size(); ++i) EXPECT_EQ(m[i], (*gguf)->metadata()[i]) << m[i].first;
  EXPECT_EQ(Find(m, "test.u16")->type, ValueType::kUint16);
  EXPECT_EQ(Find(m, "gguf.version")->u, 3u);
  EXPECT_EQ(Find(m, "gguf.alignment")->u, 32u);
  auto idx = (*reader)->FindTensor("blk.0.q4k.weight");
  ASSERT_TRUE(idx);
  const TensorInfo& q4k = (*reader)->tensors()[*idx];
  EXPECT_EQ(q4k.codec_id, "ggml-q4_k");
  EXPECT_EQ(q4k.dtype, DType::kF32);
  EXPECT_EQ(q4k.shape, (std::vector<uint64_t>{5, 1024}));
  ASSERT_EQ(q4k.codec_params.size(), 1u);
  EXPECT_EQ(q4k.codec_params[0].second, MetaValue::Int(ValueType::kInt32, 12));
  const TensorInfo& four = (*reader)->tensors()[*(*reader)->FindTensor("four_d.q8_0")];
  EXPECT_EQ(four.codec_id, "q8_0");
  EXPECT_EQ(four.shape, (std::vector<uint64_t>{2, 3, 2, 32}));
  EXPECT_EQ((*reader)->tensors()[*(*reader)->FindTensor("tok.bf16")].codec_id, "bf16");
  EXPECT_EQ((*reader)->tensors()[*(*reader)->FindTensor("blk.0.ssm_in.weight")].codec_id, "nvfp4-ggml");
}

TEST(GgufCli, CorpusRoundTrips) {
  if (SharedDir().empty()) GTEST_SKIP() << "../shared not present";
  std::string dir = MakeTempDir();
  int n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(SharedDir() + "/corpus/gguf")) {
    if (e.path().extension() != ".gguf" || e.path().string().find("/odd/") != std::string::npos) continue;
    SCOPED_TRACE(e.path().string());
    std::string bolt = dir + "/x.bolt", back = dir + "/x.gguf";
    ASSERT_EQ(RunCli({"convert", e.path().string(), "-o", bolt}).exit_code, 0);
    ASSERT_EQ(RunCli({"convert", bolt, "-o", back}).exit_code, 0);
    EXPECT_TRUE(ReadFileBytes(back) == ReadFileBytes(e.path().string()));
    std::filesystem::remove(bolt);
    std::filesystem::remove(back);
    ++n;
  }
  EXPECT_GE(n, 16);
}

TEST(GgufCli, RejectsBrokenFilesWithClearMessages) {
  auto r = RunCli({"convert", Gguf("ggml-writer-align64-misaligned"), "-o", MakeTempDir() + "/x.bolt"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("\"blk.0.ffn_up.weight\" has offset 33568, not a multiple of the alignment 64"),
            std::string::npos)
      << r.output;
  auto v = RunCli({"verify", Gguf("ggml-writer-align64-misaligned")});
  EXPECT_EQ(v.exit_code, 1);
  if (!SharedDir().empty()) {
    for (const char* f : {"ggml-vocab-bert-bge.utf8-mangled.gguf", "threatflux-test_model.gguf"}) {
      auto o = RunCli({"inspect", SharedDir() + "/corpus/gguf/odd/" + f});
      EXPECT_EQ(o.exit_code, 1) << f;
      EXPECT_NE(o.output.find(f), std::string::npos) << o.output;
    }
  }
}

TEST(GgufCli, InspectAndVerify) {
  auto t = RunCli({"inspect", Gguf("ggml-writer-all")});
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("gguf: 3, alignment 32"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("ggml-q4_k"), std::string::npos);
  auto j = RunCli({"inspect", "--json", Gguf("ggml-writer-all")});
  ASSERT_EQ(j.exit_code, 0) << j.output;
  auto json = io::ParseJson(j.output);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_NE(j.output.find("\"ggml_type\":\"IQ2_XXS\""), std::string::npos);
  EXPECT_NE(j.output.find("\"bits_per_weight\":2.0625"), std::string::npos);
  auto v = RunCli({"verify", Gguf("ggml-writer-experts")});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("OK"), std::string::npos);
}

TEST(GgufCli, ExportErrorsNameTheTensor) {
  std::string dir = MakeTempDir();
  // A U8 tensor has no GGUF type; a 64-byte name does not fit GGUF.
  std::string longname(64, 'n');
  {
    auto w = io::SafetensorsWriter::Create(dir + "/u8.safetensors", {}, {{"bytes.u8", DType::kU8, {4}}}, {});
    ASSERT_TRUE(w.ok());
    std::vector<uint8_t> b(4, 1);
    ASSERT_TRUE((*w)->WriteNext(b).ok());
    ASSERT_TRUE((*w)->Finish().ok());
    auto w2 = io::SafetensorsWriter::Create(dir + "/long.safetensors", {}, {{longname, DType::kF32, {4}}}, {});
    ASSERT_TRUE(w2.ok());
    std::vector<uint8_t> f(16, 0);
    ASSERT_TRUE((*w2)->WriteNext(f).ok());
    ASSERT_TRUE((*w2)->Finish().ok());
  }
  auto r = RunCli({"convert", dir + "/u8.safetensors", "-o", dir + "/u8.gguf"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("\"bytes.u8\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no GGUF type"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/u8.gguf"));
  auto l = RunCli({"convert", dir + "/long.safetensors", "-o", dir + "/long.gguf"});
  EXPECT_EQ(l.exit_code, 1);
  EXPECT_NE(l.output.find(longname), std::string::npos) << l.output;
  EXPECT_NE(l.output.find("63"), std::string::npos) << l.output;
  // --codec re-encodes what GGUF cannot hold as it is.
  auto c = RunCli({"convert", SourceDir() + "/testdata/tinystories-656k/model.safetensors", "-o", dir + "/ts.gguf",
                   "--codec", "*=f16"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto g = io::GgufModel::Open(dir + "/ts.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g.value()->tensors()[0].type->id, 1);
}

TEST(GgufCli, SafetensorsToGgufShapes) {
  std::string dir = MakeTempDir();
  std::string st = SourceDir() + "/testdata/tinystories-656k/model.safetensors";
  ASSERT_EQ(RunCli({"convert", st, "-o", dir + "/ts.gguf"}).exit_code, 0);
  auto g = io::GgufModel::Open(dir + "/ts.gguf");
  auto s = io::SafetensorsModel::Open(st);
  ASSERT_TRUE(g.ok() && s.ok());
  ASSERT_EQ(g.value()->tensors().size(), s.value()->tensors().size());
  for (size_t i = 0; i < s.value()->tensors().size(); ++i) {
    EXPECT_EQ(g.value()->tensors()[i].Shape(), s.value()->tensors()[i].shape);
    auto a = g.value()->TensorBytes(i);
    auto b = s.value()->TensorBytes(i);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  }
  // And back: the same tensors (GGUF metadata travels as typed keys).
  ASSERT_EQ(RunCli({"convert", dir + "/ts.gguf", "-o", dir + "/ts2.safetensors"}).exit_code, 0);
}

TEST(GgufCli, ImatrixOption) {
  std::string dir = MakeTempDir();
  std::vector<uint8_t> junk = {1, 2, 3};
  testing::WriteFileBytes(dir + "/bad.dat", junk);
  auto r = RunCli({"convert", Gguf("ggml-writer-all"), "-o", dir + "/x.bolt", "--imatrix", dir + "/bad.dat"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("bad.dat"), std::string::npos) << r.output;
  // A valid imatrix whose entry does not fit the tensor is an error naming both.
  Metadata kv;
  auto h = io::EncodeGgufHeader("im", kv, {{"odd.f32.in_sum2", {3}, 0}, {"odd.f32.counts", {1}, 0}}, 3, 32);
  ASSERT_TRUE(h.ok());
  std::vector<uint8_t> b = *h;
  b.resize(b.size() + 64, 0);
  testing::WriteFileBytes(dir + "/im.gguf", b);
  auto m = RunCli({"convert", Gguf("ggml-writer-all"), "-o", dir + "/y.bolt", "--codec", "odd.f32=f16", "--imatrix",
                   dir + "/im.gguf"});
  EXPECT_EQ(m.exit_code, 1);
  EXPECT_NE(m.output.find("odd.f32"), std::string::npos) << m.output;
}

TEST(GgufCli, SplitModelConvertsAsOne) {
  std::string dir = MakeTempDir();
  std::string prefix = dir + "/M";
  for (int k = 0; k < 2; ++k) {
    Metadata kv;
    if (k == 0) kv.emplace_back("general.architecture", MetaValue::String("llama"));
    kv.emplace_back("split.no", MetaValue::Uint(ValueType::kUint16, k));
    kv.emplace_back("split.count", MetaValue::Uint(ValueType::kUint16, 2));
    kv.emplace_back("split.tensors.count", MetaValue::Int(ValueType::kInt32, 2));
    auto w = io::GgufWriter::Create(io::GgufSplitPath(prefix, k, 2), kv, {{"t" + std::to_string(k), {32}, 8}});
    ASSERT_TRUE(w.ok());
    std::vector<uint8_t> bytes(34, static_cast<uint8_t>(k));
    ASSERT_TRUE((*w)->WriteNext(bytes).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  auto r = RunCli({"convert", io::GgufSplitPath(prefix, 0, 2), "-o", dir + "/one.gguf"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto g = io::GgufModel::Open(dir + "/one.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g.value()->tensors().size(), 2u);
  EXPECT_EQ(g.value()->metadata().size(), 1u);  // split.* dropped
}

TEST(GgufCli, LosslessBf16CodecsExportAsBf16) {
  // GGUF has no entropy-coded type: bf16-huffman, bf16-unary and bf16-spec
  // (every original bit in its full view) export as BF16, giving the very
  // file that the plain bf16 tensors give.
  std::string dir = MakeTempDir();
  const std::string model = SourceDir() + "/testdata/tinystories-656k/model.safetensors";
  ASSERT_EQ(RunCli({"convert", model, "-o", dir + "/bf.safetensors", "--codec", "*=bf16"}).exit_code, 0);
  auto ref = RunCli({"convert", dir + "/bf.safetensors", "-o", dir + "/ref.gguf"});
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  for (const std::string codec : {"bf16-huffman", "bf16-unary", "bf16-spec"}) {
    SCOPED_TRACE(codec);
    auto r = RunCli({"convert", dir + "/bf.safetensors", "-o", dir + "/" + codec + ".bolt", "--codec", "*=" + codec});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = RunCli({"convert", dir + "/" + codec + ".bolt", "-o", dir + "/" + codec + ".gguf"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(ReadFileBytes(dir + "/" + codec + ".gguf") == ReadFileBytes(dir + "/ref.gguf"));
  }
}

TEST(GgufCli, ReencodedModelGetsItsFileType) {
  // llama-quantize sets general.file_type to what it made; so does a
  // re-encoding convert (a plain round trip keeps every byte, key included).
  std::string dir = MakeTempDir();
  const std::string f16 = SourceDir() + "/testdata/tinystories-656k/TinyStories-656K.f16.gguf";
  ASSERT_EQ(RunCli({"convert", f16, "-o", dir + "/q8.gguf", "--codec", "*=q8_0"}).exit_code, 0);
  auto q8 = io::GgufModel::Open(dir + "/q8.gguf");
  ASSERT_TRUE(q8.ok()) << q8.status();
  const MetaValue* ft = Find((*q8)->metadata(), "general.file_type");
  ASSERT_NE(ft, nullptr);
  EXPECT_EQ(ft->u, 7u);  // LLAMA_FTYPE_MOSTLY_Q8_0
  auto src = io::GgufModel::Open(f16);
  ASSERT_TRUE(src.ok()) << src.status();
  EXPECT_EQ(Find((*src)->metadata(), "general.file_type")->u, 1u);  // MOSTLY_F16
}

}  // namespace
}  // namespace boltpack
