// verify --target llama.cpp on NVFP4 models, and the GGUF export of
// two-level nvfp4 (tools/gguf_nvfp4.h): llama.cpp reads a "<w>.scale" only
// beside block matmul weights and an NVFP4 output.weight, never beside
// token_embd, so the export keeps the embedding out of NVFP4 and the check
// reports a scale llama.cpp would refuse.
#include <cstring>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "common/str_cat.h"
#include "gtest/gtest.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::RunCli;

constexpr int kF32 = 0, kF16 = 1, kQ8_0 = 8, kNvfp4 = 40;

std::string F16Model() { return testing::SourceDir() + "/testdata/tinystories-656k/TinyStories-656K.f16.gguf"; }

bool Has(const testing::CommandResult& r, std::string_view text) { return r.output.find(text) != std::string::npos; }

const MetaValue* Find(const Metadata& kv, std::string_view key) {
  for (const auto& [k, v] : kv) {
    if (k == key) return &v;
  }
  return nullptr;
}

// The shipped model's metadata and tensors with their matrices as NVFP4
// (type ids only: the check reads no data), each with a ".scale" of ne {1}.
struct Nvfp4Model {
  Metadata kv;
  std::vector<io::GgufTensorDecl> tensors;
};

Nvfp4Model Nvfp4Layout() {
  auto src = io::GgufModel::Open(F16Model());
  EXPECT_TRUE(src.ok()) << src.status();
  Nvfp4Model m;
  if (!src.ok()) return m;
  m.kv = (*src)->metadata();
  for (const auto& t : (*src)->tensors()) {
    const bool matrix = t.ne.size() == 2;
    m.tensors.push_back({std::string(t.name), t.ne, matrix ? kNvfp4 : kF32});
    if (matrix && t.name != "token_embd.weight") {
      m.tensors.push_back({std::string(t.name.substr(0, t.name.size() - 7)) + ".scale", {1}, kF32});
    }
  }
  return m;
}

std::string Write(const Nvfp4Model& m, const std::string& path) {
  auto w = io::GgufWriter::Create(path, m.kv, m.tensors);
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return path;
  for (const auto& t : m.tensors) {
    auto n = io::GgmlTensorBytes(*io::GgmlTypeById(t.type), t.ne);
    EXPECT_TRUE(n.ok()) << t.name;
    EXPECT_TRUE((*w)->WriteNext(std::vector<uint8_t>(n.ok() ? *n : 0, 0)).ok());
  }
  EXPECT_TRUE((*w)->Finish().ok());
  return path;
}

testing::CommandResult CheckLayout(const Nvfp4Model& m) {
  return RunCli({"verify", "--target", "llama.cpp", Write(m, MakeTempDir() + "/m.gguf")});
}

// A line "<severity>: tensor "<tensor>": ..." of verify's output holding `text`.
bool HasProblem(const testing::CommandResult& r, std::string_view tensor, std::string_view text,
                std::string_view severity = "error") {
  const std::string head = std::string(severity) + ": tensor \"" + std::string(tensor) + "\": ";
  for (size_t at = r.output.find(head); at != std::string::npos; at = r.output.find(head, at + 1)) {
    const size_t end = r.output.find('\n', at);
    if (r.output.substr(at, end - at).find(text) != std::string::npos) return true;
  }
  return false;
}

std::string Problems(const testing::CommandResult& r) { return r.output; }

// The file of issue 15 item 5: token_embd NVFP4 with a token_embd.scale.
// llama.cpp refuses it ("wrong number of tensors; expected 35, got 34").
TEST(LlamaNvfp4, VerifyRejectsTheScaleBesideTheEmbedding) {
  Nvfp4Model m = Nvfp4Layout();
  m.tensors.insert(m.tensors.begin() + 1, {"token_embd.scale", {1}, kF32});
  ASSERT_EQ(m.tensors.size(), 35u);
  const std::string dir = MakeTempDir();
  auto r = RunCli({"verify", "--target", "llama.cpp", Write(m, dir + "/bad.gguf")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Has(r, "error: tensor \"token_embd.scale\": llama.cpp reads no scale beside \"token_embd.weight\" "
                     "(only beside block matmul weights and an NVFP4 output.weight), so it never loads this tensor "
                     "and fails with \"wrong number of tensors\""))
      << r.output;
  EXPECT_TRUE(Has(r, "FAILED for llama.cpp (architecture \"llama\", 35 tensors; 1 error, 0 warnings)")) << r.output;

  // The same file with the embedding in Q8_0 and no token_embd.scale: OK.
  Nvfp4Model good = Nvfp4Layout();
  good.tensors[0].type = kQ8_0;
  r = RunCli({"verify", "--target", "llama.cpp", Write(good, dir + "/good.gguf")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Has(r, "OK for llama.cpp (architecture \"llama\", 34 tensors; 0 errors, 0 warnings)")) << r.output;
}

TEST(LlamaNvfp4, ScalesOfTheOutputOfExpertsAndBesideBiases) {
  {
    // Tied output (no output.weight) to an NVFP4 embedding: llama.cpp reads
    // output.scale for it, then aborts.
    Nvfp4Model m = Nvfp4Layout();
    m.tensors.push_back({"output.scale", {1}, kF32});
    auto r = CheckLayout(m);
    EXPECT_TRUE(HasProblem(r, "output.scale", "then aborts (GGML_ASSERT: a tied NVFP4 output takes no scale)"))
        << Problems(r);
    m.tensors[0].type = kQ8_0;
    r = CheckLayout(m);
    EXPECT_TRUE(HasProblem(r, "output.scale", "is a scale without its weight \"output.weight\"")) << Problems(r);
  }
  {
    // An F16 output.weight takes no scale; an NVFP4 one does.
    Nvfp4Model m = Nvfp4Layout();
    m.tensors[0].type = kQ8_0;
    m.tensors.push_back({"output.weight", {128, 2048}, kF16});
    m.tensors.push_back({"output.scale", {1}, kF32});
    auto r = CheckLayout(m);
    EXPECT_TRUE(HasProblem(r, "output.scale", "only when output.weight is NVFP4")) << Problems(r);
    m.tensors[m.tensors.size() - 2].type = kNvfp4;
    r = CheckLayout(m);
    EXPECT_EQ(r.exit_code, 0) << Problems(r);
  }
  {
    Nvfp4Model m = Nvfp4Layout();
    m.tensors[0].type = kQ8_0;
    for (auto& t : m.tensors) {
      if (t.name == "blk.0.attn_q.scale") t.ne = {2};
    }
    m.tensors.push_back({"blk.0.attn_k.input_scale", {1}, kF32});  // read too
    m.tensors.push_back({"blk.0.attn_norm.scale", {1}, kF32});     // never
    m.tensors.push_back({"blk.1.ffn_up.bias", {384}, kF32});
    auto r = CheckLayout(m);
    EXPECT_TRUE(HasProblem(r, "blk.0.attn_q.scale", "GGUF ne [2] but llama.cpp expects ne [1] beside "
                                                    "\"blk.0.attn_q.weight\" (\"tensor has wrong shape\")"))
        << Problems(r);
    EXPECT_TRUE(HasProblem(r, "blk.0.attn_norm.scale", "llama.cpp reads no scale beside \"blk.0.attn_norm.weight\""))
        << Problems(r);
    EXPECT_TRUE(HasProblem(r, "blk.1.ffn_up.scale", "is NVFP4 with both a scale and a bias; llama.cpp aborts"))
        << Problems(r);
    EXPECT_FALSE(HasProblem(r, "blk.0.attn_k.input_scale", "")) << Problems(r);
    EXPECT_TRUE(Has(r, "3 errors, 0 warnings")) << Problems(r);
  }
}

// llama.cpp requires no scale (absent means 1); a weight without one beside
// others that have one is reported as a warning, not an error.
TEST(LlamaNvfp4, AMissingScaleAmongOthersIsAWarning) {
  Nvfp4Model m = Nvfp4Layout();
  m.tensors[0].type = kQ8_0;
  std::erase_if(m.tensors, [](const auto& t) { return t.name == "blk.1.attn_v.scale"; });
  auto r = CheckLayout(m);
  EXPECT_EQ(r.exit_code, 0) << Problems(r);
  EXPECT_TRUE(HasProblem(r, "blk.1.attn_v.scale", "missing, while 13 other NVFP4 weights have a scale (1 without one)",
                         "warning"))
      << Problems(r);
}

// The export of issue 15 item 5, fixed: the embedding goes to Q8_0 (a note
// says so), every matrix weight to NVFP4 with its scale, general.file_type
// is MOSTLY_NVFP4 (39), and verify --target llama.cpp agrees, on the GGUF
// and on a .bolt holding the same tensors in two-level nvfp4.
TEST(LlamaNvfp4, TwoLevelExportKeepsTheEmbeddingOutOfNvfp4) {
  const std::string dir = MakeTempDir();
  auto r = RunCli({"convert", F16Model(), "-o", dir + "/t.gguf", "--codec", "*.weight=nvfp4"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Has(r, "bolt-pack: note: token_embd.weight: nvfp4 -> q8_0 (llama.cpp reads no token_embd.scale, so "
                     "NVFP4 would lose the tensor scale)"))
      << r.output;
  auto check = [&](const std::string& path) {
    SCOPED_TRACE(path);
    auto g = io::GgufModel::Open(path);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ((*g)->tensors().size(), 34u);
    EXPECT_FALSE((*g)->FindTensor("token_embd.scale").has_value());
    EXPECT_EQ((*g)->tensors()[*(*g)->FindTensor("token_embd.weight")].type->id, kQ8_0);
    size_t nvfp4 = 0;
    for (const auto& t : (*g)->tensors()) {
      if (t.type->id != kNvfp4) continue;
      ++nvfp4;
      auto s = (*g)->FindTensor(std::string(t.name.substr(0, t.name.size() - 7)) + ".scale");
      ASSERT_TRUE(s.has_value()) << t.name;
      EXPECT_EQ((*g)->tensors()[*s].ne, std::vector<uint64_t>{1});
    }
    EXPECT_EQ(nvfp4, 14u);
    const MetaValue* ft = Find((*g)->metadata(), "general.file_type");
    ASSERT_NE(ft, nullptr);
    EXPECT_EQ(ft->type, ValueType::kUint32);
    EXPECT_EQ(ft->u, 39u);  // LLAMA_FTYPE_MOSTLY_NVFP4
    auto v = RunCli({"verify", "--target", "llama.cpp", path});
    EXPECT_EQ(v.exit_code, 0) << v.output;
    EXPECT_TRUE(Has(v, "OK for llama.cpp (architecture \"llama\", 34 tensors; 0 errors, 0 warnings)")) << v.output;
  };
  check(dir + "/t.gguf");

  r = RunCli({"convert", F16Model(), "-o", dir + "/t.bolt", "--codec", "*.weight=nvfp4"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto v = RunCli({"verify", "--target", "llama.cpp", dir + "/t.bolt"});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_TRUE(Has(v, "OK for llama.cpp (architecture \"llama\", 34 tensors; 0 errors, 0 warnings)")) << v.output;
  r = RunCli({"convert", dir + "/t.bolt", "-o", dir + "/b.gguf"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Has(r, "note: token_embd.weight: nvfp4 -> q8_0")) << r.output;
  check(dir + "/b.gguf");
}

// llama-quantize writes general.file_type and quantization_version even
// when the source has neither; so does a re-encoding export.
TEST(LlamaNvfp4, ReencodedGgufGetsTheFileTypeLlamaQuantizeWrites) {
  auto src = io::GgufModel::Open(F16Model());
  ASSERT_TRUE(src.ok()) << src.status();
  Nvfp4Model m;
  m.kv = (*src)->metadata();
  std::erase_if(m.kv, [](const auto& e) {
    return e.first == "general.file_type" || e.first == "general.quantization_version";
  });
  for (const auto& t : (*src)->tensors()) m.tensors.push_back({std::string(t.name), t.ne, t.type->id});
  const std::string dir = MakeTempDir();
  Write(m, dir + "/nokey.gguf");
  for (const auto& [codec, ftype] : std::vector<std::pair<std::string, uint64_t>>{{"q8_0", 7}, {"nvfp4", 39},
                                                                                  {"bf16", 32}}) {
    SCOPED_TRACE(codec);
    auto r = RunCli({"convert", dir + "/nokey.gguf", "-o", dir + "/" + codec + ".gguf", "--codec", "*=" + codec});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto g = io::GgufModel::Open(dir + "/" + codec + ".gguf");
    ASSERT_TRUE(g.ok()) << g.status();
    const MetaValue* ft = Find((*g)->metadata(), "general.file_type");
    ASSERT_NE(ft, nullptr);
    EXPECT_EQ(ft->u, ftype);
    const MetaValue* qv = Find((*g)->metadata(), "general.quantization_version");
    if (codec == "bf16") {
      EXPECT_EQ(qv, nullptr);
    } else {
      ASSERT_NE(qv, nullptr);
      EXPECT_EQ(qv->u, 2u);
    }
  }
}

}  // namespace
}  // namespace boltpack

namespace boltpack {
namespace {

// Beside a *_exps weight llama.cpp reads one scale per expert (ne
// {n_expert}); the export repeats the tensor scale for each.
TEST(LlamaNvfp4, ExpertWeightsGetOneScalePerExpert) {
  const std::string dir = MakeTempDir();
  std::vector<float> x(2 * 64 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(static_cast<int>(i % 37) - 18);
  {
    auto w = io::SafetensorsWriter::Create(dir + "/moe.safetensors", {},
                                           {{"blk.0.ffn_up_exps.weight", DType::kF32, {2, 64, 64}}}, {});
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE((*w)->WriteNext(absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(x.data()), x.size() * 4)).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  auto r = RunCli({"convert", dir + "/moe.safetensors", "-o", dir + "/moe.gguf", "--codec", "*=nvfp4"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto g = io::GgufModel::Open(dir + "/moe.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  auto s = (*g)->FindTensor("blk.0.ffn_up_exps.scale");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ((*g)->tensors()[*s].ne, std::vector<uint64_t>{2});
  const auto bytes = (*g)->TensorBytes(*s);
  ASSERT_EQ(bytes.size(), 8u);
  float a = 0, b = 0;
  std::memcpy(&a, bytes.data(), 4);
  std::memcpy(&b, bytes.data() + 4, 4);
  EXPECT_EQ(a, b);
  EXPECT_GT(a, 0.0f);
}

// Issue 21 item 6: a recipe convert to .bolt, then a plain export to GGUF
// (no codec rules), names the mix it writes, not the F16 source's file
// type; adds general.quantization_version; and counts the tensors it wrote,
// ".scale" tensors included. A plain round trip of the GGUF keeps its keys.
TEST(LlamaNvfp4, PlainExportOfARecodedBoltNamesItsMix) {
  const std::string dir = MakeTempDir();
  for (const auto& [codec, ftype, count] :
       std::vector<std::tuple<std::string, uint64_t, size_t>>{{"q8_0", 7, 20}, {"nvfp4", 39, 34}}) {
    SCOPED_TRACE(codec);
    auto r = RunCli({"convert", F16Model(), "-o", dir + "/" + codec + ".bolt", "--codec", "*.weight=" + codec});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string out = dir + "/" + codec + ".gguf";
    r = RunCli({"convert", dir + "/" + codec + ".bolt", "-o", out});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(Has(r, StrCat("wrote ", out, " (", count, " tensors)"))) << r.output;
    auto g = io::GgufModel::Open(out);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ((*g)->tensors().size(), count);
    const MetaValue* ft = Find((*g)->metadata(), "general.file_type");
    ASSERT_NE(ft, nullptr);
    EXPECT_EQ(ft->u, ftype);
    const MetaValue* qv = Find((*g)->metadata(), "general.quantization_version");
    ASSERT_NE(qv, nullptr);
    EXPECT_EQ(qv->u, 2u);
    // Exported again, the file stays as it is, byte for byte.
    r = RunCli({"convert", out, "-o", dir + "/again.gguf"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(testing::ReadFileBytes(out) == testing::ReadFileBytes(dir + "/again.gguf"));
  }
  // The F16 source through .bolt and back keeps its own keys and bytes.
  ASSERT_EQ(RunCli({"convert", F16Model(), "-o", dir + "/f16.bolt"}).exit_code, 0);
  ASSERT_EQ(RunCli({"convert", dir + "/f16.bolt", "-o", dir + "/f16.gguf"}).exit_code, 0);
  EXPECT_TRUE(testing::ReadFileBytes(F16Model()) == testing::ReadFileBytes(dir + "/f16.gguf"));
}

}  // namespace
}  // namespace boltpack
