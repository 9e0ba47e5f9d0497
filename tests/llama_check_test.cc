// bolt-pack verify --target llama.cpp: the metadata keys, value types and
// tensor shapes llama.cpp's loader needs, on .gguf and .bolt files.
#include <filesystem>
#include <functional>

#include "gtest/gtest.h"
#include "io/gguf.h"
#include "io/json.h"
#include "tests/test_util.h"
#include "tools/llama_check.h"
#include "common/str_cat.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::RunCli;
using testing::SharedDir;
using testing::SourceDir;

constexpr int kF32 = 0;

// A small but complete llama model: 2 layers, n_embd 32, 4 heads (2 KV),
// head size 8, FFN 64, 16 tokens. Shapes are GGUF ne (innermost first).
struct Model {
  Metadata kv;
  std::vector<io::GgufTensorDecl> tensors;

  MetaValue* Find(std::string_view key) {
    for (auto& [k, v] : kv) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  void Erase(std::string_view key) {
    std::erase_if(kv, [&](const auto& e) { return e.first == key; });
  }
  io::GgufTensorDecl* Tensor(std::string_view name) {
    for (auto& t : tensors) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }
};

Model TinyLlama() {
  Model m;
  auto u32 = [](uint64_t v) { return MetaValue::Uint(ValueType::kUint32, v); };
  std::vector<MetaValue> tokens, scores, types;
  for (int i = 0; i < 16; ++i) {
    tokens.push_back(MetaValue::String("t" + std::to_string(i)));
    scores.push_back(MetaValue::Float32(-static_cast<float>(i)));
    types.push_back(MetaValue::Int(ValueType::kInt32, 1));
  }
  m.kv = {{"general.architecture", MetaValue::String("llama")},
          {"general.name", MetaValue::String("tiny")},
          {"llama.context_length", u32(128)},
          {"llama.embedding_length", u32(32)},
          {"llama.block_count", u32(2)},
          {"llama.feed_forward_length", u32(64)},
          {"llama.attention.head_count", u32(4)},
          {"llama.attention.head_count_kv", u32(2)},
          {"llama.rope.freq_base", MetaValue::Float32(500000.0f)},
          {"llama.attention.layer_norm_rms_epsilon", MetaValue::Float32(1e-5f)},
          {"llama.rope.dimension_count", u32(8)},
          {"tokenizer.ggml.model", MetaValue::String("llama")},
          {"tokenizer.ggml.tokens", MetaValue::Array(ValueType::kString, tokens)},
          {"tokenizer.ggml.scores", MetaValue::Array(ValueType::kFloat32, scores)},
          {"tokenizer.ggml.token_type", MetaValue::Array(ValueType::kInt32, types)},
          {"tokenizer.ggml.bos_token_id", u32(1)},
          {"tokenizer.ggml.eos_token_id", u32(2)}};
  m.tensors.push_back({"token_embd.weight", {32, 16}, kF32});
  m.tensors.push_back({"output_norm.weight", {32}, kF32});
  for (int i = 0; i < 2; ++i) {
    std::string b = "blk." + std::to_string(i) + ".";
    m.tensors.push_back({b + "attn_norm.weight", {32}, kF32});
    m.tensors.push_back({b + "attn_q.weight", {32, 32}, kF32});
    m.tensors.push_back({b + "attn_k.weight", {32, 16}, kF32});
    m.tensors.push_back({b + "attn_v.weight", {32, 16}, kF32});
    m.tensors.push_back({b + "attn_output.weight", {32, 32}, kF32});
    m.tensors.push_back({b + "ffn_norm.weight", {32}, kF32});
    m.tensors.push_back({b + "ffn_gate.weight", {32, 64}, kF32});
    m.tensors.push_back({b + "ffn_up.weight", {32, 64}, kF32});
    m.tensors.push_back({b + "ffn_down.weight", {64, 32}, kF32});
  }
  return m;
}

// Writes `m` with the library's GGUF writer (tensor data zero).
std::string Write(const Model& m, const std::string& path) {
  auto w = io::GgufWriter::Create(path, m.kv, m.tensors);
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return path;
  for (const auto& t : m.tensors) {
    auto n = io::GgmlTensorBytes(*io::GgmlTypeById(t.type), t.ne);
    std::vector<uint8_t> bytes(*n, 0);
    EXPECT_TRUE((*w)->WriteNext(bytes).ok());
  }
  EXPECT_TRUE((*w)->Finish().ok());
  return path;
}

testing::CommandResult Check(const std::string& file, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"verify", "--target", "llama.cpp", file};
  args.insert(args.end(), extra.begin(), extra.end());
  return RunCli(args);
}

// The folder with the three TinyStories-656K GGUF files (llama.cpp
// conversions): testdata/ ships them; ../shared/corpus has them too.
std::string TinyStoriesGgufDir() {
  for (std::string dir : {SourceDir() + "/testdata/tinystories-656k/",
                          SharedDir().empty() ? std::string() : SharedDir() + "/corpus/gguf/tinystories-656k/"}) {
    if (!dir.empty() && std::filesystem::exists(dir + "TinyStories-656K.f16.gguf")) return dir;
  }
  return "";
}

bool Has(const testing::CommandResult& r, std::string_view text) { return r.output.find(text) != std::string::npos; }

TEST(LlamaCheck, CompleteModelPasses) {
  std::string f = Write(TinyLlama(), MakeTempDir() + "/tiny.gguf");
  auto r = Check(f);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Has(r, "OK for llama.cpp (architecture \"llama\", 20 tensors; 0 errors, 0 warnings)")) << r.output;
}

TEST(LlamaCheck, MissingRopeFreqBaseIsReportedNotSilent) {
  Model m = TinyLlama();
  m.Erase("llama.rope.freq_base");
  std::string f = Write(m, MakeTempDir() + "/norope.gguf");
  auto r = Check(f);
  // llama.cpp loads it (with 10000), so it is a warning, named and explained.
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Has(r, "warning: key \"llama.rope.freq_base\": missing: llama.cpp silently uses 10000")) << r.output;
  EXPECT_TRUE(Has(r, "1 warning")) << r.output;
  auto strict = Check(f, {"--strict"});
  EXPECT_EQ(strict.exit_code, 1) << strict.output;
  EXPECT_TRUE(Has(strict, "FAILED for llama.cpp")) << strict.output;
}

TEST(LlamaCheck, WrongValueTypesAreErrors) {
  struct Case {
    std::string key;
    MetaValue value;
    std::string expect;
  };
  std::vector<Case> cases = {
      {"llama.embedding_length", MetaValue::Uint(ValueType::kUint64, 32),
       "error: key \"llama.embedding_length\": has type"},
      {"llama.rope.freq_base", MetaValue::Float64(10000.0), "error: key \"llama.rope.freq_base\": has type"},
      {"llama.block_count", MetaValue::Int(ValueType::kInt32, 2), "error: key \"llama.block_count\": has type"},
      {"tokenizer.ggml.scores", MetaValue::Array(ValueType::kInt32, std::vector<MetaValue>(16, MetaValue::Int(ValueType::kInt32, 0))),
       "error: key \"tokenizer.ggml.scores\": must be an array of"},
      {"tokenizer.ggml.bos_token_id", MetaValue::Int(ValueType::kInt32, 1),
       "error: key \"tokenizer.ggml.bos_token_id\": has type"},
  };
  std::string dir = MakeTempDir();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.key);
    Model m = TinyLlama();
    *m.Find(c.key) = c.value;
    auto r = Check(Write(m, dir + "/t.gguf"));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(Has(r, c.expect)) << r.output;
  }
}

// A sliced elastic model whose kept layers keep different expert counts has
// per-layer arrays: llama.cpp takes them for feed_forward_length, the head
// counts and expert_used_count (get_key_or_arr) but reads expert_count and
// (outside nemotron_h) expert_feed_forward_length as one number (get_key)
// and refuses the file.
TEST(LlamaCheck, PerLayerArraysOnlyWhereLlamaCppTakesThem) {
  auto per_layer = [](std::vector<uint64_t> v) {
    std::vector<MetaValue> e;
    for (uint64_t x : v) e.push_back(MetaValue::Uint(ValueType::kUint32, x));
    return MetaValue::Array(ValueType::kUint32, e);
  };
  std::string dir = MakeTempDir();
  {
    Model m = TinyLlama();
    *m.Find("llama.feed_forward_length") = per_layer({64, 64});
    *m.Find("llama.attention.head_count") = per_layer({4, 4});
    auto r = Check(Write(m, dir + "/ok.gguf"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  for (const char* key : {"llama.expert_count", "llama.expert_feed_forward_length", "llama.expert_shared_count"}) {
    SCOPED_TRACE(key);
    Model m = TinyLlama();
    m.kv.emplace_back(key, per_layer({3, 4}));
    auto r = Check(Write(m, dir + "/moe.gguf"));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(Has(r, StrCat("error: key \"", key, "\": is an array of 2 uint32"))) << r.output;
    EXPECT_TRUE(Has(r, "reads it as a single uint32")) << r.output;
  }
}

TEST(LlamaCheck, MissingRequiredKeysAreErrors) {
  std::string dir = MakeTempDir();
  for (const char* key : {"llama.context_length", "llama.embedding_length", "llama.block_count",
                          "llama.attention.layer_norm_rms_epsilon", "tokenizer.ggml.model", "tokenizer.ggml.tokens",
                          "general.architecture"}) {
    SCOPED_TRACE(key);
    Model m = TinyLlama();
    m.Erase(key);
    auto r = Check(Write(m, dir + "/t.gguf"));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(Has(r, std::string("error: key \"") + key + "\": missing")) << r.output;
  }
}

TEST(LlamaCheck, ShapeMismatchesNameTheTensorAndBothOrders) {
  Model m = TinyLlama();
  m.Tensor("blk.1.attn_k.weight")->ne = {32, 32};  // needs n_embd_head_k*n_head_kv = 16
  auto r = Check(Write(m, MakeTempDir() + "/t.gguf"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Has(r, "error: tensor \"blk.1.attn_k.weight\": shape [32, 32] (GGUF ne [32, 32]) but llama.cpp expects "
                     "ne [n_embd=32, n_embd_head_k*n_head_kv=16], i.e. shape [n_embd_head_k*n_head_kv=16, n_embd=32]"))
      << r.output;

  // token_embd must be [n_vocab, n_embd] (outermost first): transposed is wrong.
  Model t = TinyLlama();
  t.Tensor("token_embd.weight")->ne = {16, 32};
  auto e = Check(Write(t, MakeTempDir() + "/t.gguf"));
  EXPECT_EQ(e.exit_code, 1) << e.output;
  EXPECT_TRUE(Has(e, "error: tensor \"token_embd.weight\": shape [32, 16] (GGUF ne [16, 32])")) << e.output;

  // Trailing 1s are what ggml's check_tensor_dims accepts.
  Model ok = TinyLlama();
  ok.Tensor("output_norm.weight")->ne = {32, 1};
  auto o = Check(Write(ok, MakeTempDir() + "/t.gguf"));
  EXPECT_EQ(o.exit_code, 0) << o.output;
}

TEST(LlamaCheck, BlockCountAgainstTensors) {
  Model more = TinyLlama();
  more.Find("llama.block_count")->u = 3;
  auto r = Check(Write(more, MakeTempDir() + "/t.gguf"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Has(r, "key \"llama.block_count\": is 3 but 1 of those blocks have no tensors (first: blk.2")) << r.output;
  EXPECT_TRUE(Has(r, "tensor \"blk.2.attn_q.weight\": missing")) << r.output;

  Model fewer = TinyLlama();
  fewer.Find("llama.block_count")->u = 1;
  auto f = Check(Write(fewer, MakeTempDir() + "/t.gguf"));
  EXPECT_EQ(f.exit_code, 1) << f.output;
  EXPECT_TRUE(Has(f, "tensor \"blk.1.attn_norm.weight\": is in block 1 but llama.block_count is 1")) << f.output;
}

// The array `v` without its last element.
void DropLastElement(MetaValue* v) {
  std::vector<MetaValue> kept;
  for (size_t k = 0; k + 1 < v->array_size(); ++k) kept.push_back(v->element(k));
  *v = MetaValue::Array(v->element_type, std::move(kept));
}

TEST(LlamaCheck, PerLayerArraysAndTokenArrays) {
  Model m = TinyLlama();
  // feed_forward_length per layer: right length passes, wrong length fails.
  *m.Find("llama.feed_forward_length") =
      MetaValue::Array(ValueType::kInt32, {MetaValue::Int(ValueType::kInt32, 64), MetaValue::Int(ValueType::kInt32, 64)});
  auto ok = Check(Write(m, MakeTempDir() + "/t.gguf"));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  DropLastElement(m.Find("llama.feed_forward_length"));
  auto bad = Check(Write(m, MakeTempDir() + "/t.gguf"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(Has(bad, "key \"llama.feed_forward_length\": is an array of 1 elements but block_count is 2")) << bad.output;

  Model s = TinyLlama();
  DropLastElement(s.Find("tokenizer.ggml.scores"));
  auto r = Check(Write(s, MakeTempDir() + "/t.gguf"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Has(r, "key \"tokenizer.ggml.scores\": has 15 elements but tokenizer.ggml.tokens has 16")) << r.output;
}

TEST(LlamaCheck, UnexpectedTensorForLlamaIsAnError) {
  Model m = TinyLlama();
  m.tensors.push_back({"blk.0.mystery.weight", {32}, kF32});
  auto r = Check(Write(m, MakeTempDir() + "/t.gguf"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Has(r, "tensor \"blk.0.mystery.weight\": is not a tensor llama.cpp's \"llama\" architecture creates"))
      << r.output;
}

TEST(LlamaCheck, JsonReport) {
  Model m = TinyLlama();
  m.Erase("llama.rope.freq_base");
  m.Tensor("blk.0.ffn_down.weight")->ne = {32, 64};
  auto r = Check(Write(m, MakeTempDir() + "/t.gguf"), {"--json"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  auto json = io::ParseJson(r.output);
  ASSERT_TRUE(json.ok()) << json.status() << r.output;
  EXPECT_EQ(json->Find("architecture")->string_value(), "llama");
  EXPECT_FALSE(json->Find("ok")->bool_value());
  EXPECT_EQ(json->Find("errors")->uint64_value(), 1u);
  EXPECT_EQ(json->Find("warnings")->uint64_value(), 1u);
  const auto& problems = json->Find("problems")->array();
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].Find("severity")->string_value(), "warning");
  EXPECT_EQ(problems[0].Find("key")->string_value(), "llama.rope.freq_base");
  EXPECT_EQ(problems[1].Find("severity")->string_value(), "error");
  EXPECT_EQ(problems[1].Find("tensor")->string_value(), "blk.0.ffn_down.weight");
}

TEST(LlamaCheck, BoltConvertedFromGgufIsCheckedByItsTypedMetadata) {
  std::string dir = MakeTempDir();
  std::string good = Write(TinyLlama(), dir + "/good.gguf");
  ASSERT_EQ(RunCli({"convert", good, "-o", dir + "/good.bolt"}).exit_code, 0);
  auto r = Check(dir + "/good.bolt");
  EXPECT_EQ(r.exit_code, 0) << r.output;

  Model m = TinyLlama();
  *m.Find("llama.context_length") = MetaValue::Uint(ValueType::kUint16, 128);
  m.Tensor("blk.0.ffn_up.weight")->ne = {32, 48};
  std::string bad = Write(m, dir + "/bad.gguf");
  ASSERT_EQ(RunCli({"convert", bad, "-o", dir + "/bad.bolt"}).exit_code, 0);
  auto b = Check(dir + "/bad.bolt");
  EXPECT_EQ(b.exit_code, 1) << b.output;
  EXPECT_TRUE(Has(b, "key \"llama.context_length\": has type")) << b.output;
  EXPECT_TRUE(Has(b, "tensor \"blk.0.ffn_up.weight\": shape [48, 32]")) << b.output;

  // A tensor whose codec GGUF lacks cannot reach llama.cpp.
  ASSERT_EQ(RunCli({"convert", good, "-o", dir + "/mx.bolt", "--codec", "blk.0.attn_q.weight=bf16-mx:from_f32=true"})
                .exit_code,
            0);
  auto i = Check(dir + "/mx.bolt");
  EXPECT_EQ(i.exit_code, 1) << i.output;
  EXPECT_TRUE(Has(i, "tensor \"blk.0.attn_q.weight\": codec \"bf16-mx\"")) << i.output;
}

TEST(LlamaCheck, AnyKeyOfAnyTypeIsReportedNeverACrash) {
  std::vector<MetaValue> odd = {
      MetaValue::Uint(ValueType::kUint8, 255),
      MetaValue::Int(ValueType::kInt64, -1),
      MetaValue::Float64(-0.0),
      MetaValue::Bool(true),
      MetaValue::String(""),
      MetaValue::Array(ValueType::kString, {}),
      MetaValue::Array(ValueType::kInt32, {MetaValue::Int(ValueType::kInt32, -7)}),
      MetaValue::Array(ValueType::kUint32, std::vector<MetaValue>(2, MetaValue::Uint(ValueType::kUint32, 0))),
  };
  std::string dir = MakeTempDir();
  Model base = TinyLlama();
  for (size_t k = 0; k < base.kv.size(); ++k) {
    for (size_t v = 0; v < odd.size(); ++v) {
      SCOPED_TRACE(base.kv[k].first + " #" + std::to_string(v));
      Model m = base;
      m.kv[k].second = odd[v];
      auto r = Check(Write(m, dir + "/t.gguf"));
      EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.exit_code << r.output;
      EXPECT_TRUE(Has(r, "for llama.cpp (architecture")) << r.output;
    }
  }
}

TEST(LlamaCheck, UsageErrors) {
  std::string f = Write(TinyLlama(), MakeTempDir() + "/t.gguf");
  EXPECT_EQ(RunCli({"verify", "--target", "vllm", f}).exit_code, 2);
  EXPECT_EQ(RunCli({"verify", "--json", f}).exit_code, 2);
  EXPECT_EQ(Check(SourceDir() + "/testdata/tinystories-656k/model.safetensors").exit_code, 2);
}

TEST(LlamaCheck, RealTinyStoriesGgufPassesAndBreaksAsExpected) {
  std::string dir = TinyStoriesGgufDir();
  if (dir.empty()) GTEST_SKIP() << "no TinyStories GGUF (testdata/tinystories-656k or ../shared)";
  for (const char* name : {"TinyStories-656K-Q8_0.from-llama.cpp.zig.gguf", "TinyStories-656K.f16.gguf",
                           "tinystories-656k-q8_0.from-infer-zero.gguf"}) {
    auto r = Check(dir + name);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(Has(r, "0 errors, 0 warnings")) << r.output;
  }
  // The same file without rope.freq_base, rewritten by the library.
  auto src = io::GgufModel::Open(dir + "TinyStories-656K.f16.gguf");
  ASSERT_TRUE(src.ok()) << src.status();
  Metadata kv = (*src)->metadata();
  std::erase_if(kv, [](const auto& e) { return e.first == "llama.rope.freq_base"; });
  std::vector<io::GgufTensorDecl> decls;
  for (const auto& t : (*src)->tensors()) decls.push_back({std::string(t.name), t.ne, t.type->id});
  std::string out = MakeTempDir() + "/norope.gguf";
  auto w = io::GgufWriter::Create(out, kv, decls);
  ASSERT_TRUE(w.ok()) << w.status();
  for (size_t i = 0; i < decls.size(); ++i) ASSERT_TRUE((*w)->WriteNext((*src)->TensorBytes(i)).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  auto r = Check(out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Has(r, "key \"llama.rope.freq_base\": missing: llama.cpp silently uses 10000")) << r.output;
}

TEST(LlamaCheck, CorpusVocabFilesHaveNoErrorsAndUnknownArchsFallBack) {
  if (SharedDir().empty()) GTEST_SKIP() << "../shared not present";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(SharedDir() + "/corpus/gguf/vocab")) {
    if (e.path().extension() != ".gguf") continue;
    SCOPED_TRACE(e.path().string());
    auto r = Check(e.path().string());
    EXPECT_EQ(r.exit_code, 0) << r.output;  // vocab-only: warnings at most
    EXPECT_TRUE(Has(r, "the file has no tensors")) << r.output;
    ++n;
  }
  EXPECT_GE(n, 10);
  // superpoint is not a language model: the generic checks catch it.
  auto s = Check(SharedDir() + "/corpus/gguf/superpoint.gguf");
  EXPECT_EQ(s.exit_code, 1);
  EXPECT_TRUE(Has(s, "architecture \"superpoint\" has no specific rules here")) << s.output;
  EXPECT_TRUE(Has(s, "key \"superpoint.block_count\": missing")) << s.output;
}

TEST(LlamaCheck, QuantizedOneDimensionalTensorIsAnError) {
  // bolt-pack's own conversion keeps norms in float, so write the bad file
  // directly: a Q8_0 norm weight (32 elements, one block).
  Model m = TinyLlama();
  m.Tensor("blk.1.ffn_norm.weight")->type = 8;  // GGML_TYPE_Q8_0
  std::string f = Write(m, MakeTempDir() + "/qnorm.gguf");
  auto r = Check(f);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Has(r, "tensor \"blk.1.ffn_norm.weight\": is a quantized 1-D tensor")) << r.output;
}

TEST(LlamaCheck, ConvertKeepsOneDimensionalTensorsInFloatForQuantizingCodecs) {
  std::string dir = MakeTempDir();
  std::string good = Write(TinyLlama(), dir + "/good.gguf");
  auto c = RunCli({"convert", good, "-o", dir + "/q8.gguf", "--codec", "*=q8_0"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_TRUE(Has(c, "blk.0.attn_norm.weight: q8_0 -> kept as F32 (a 1-D tensor stays in float")) << c.output;
  auto r = Check(dir + "/q8.gguf");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// A small nemotron_h_moe model with the keys and tensors llama.cpp's
// converter writes (gguf-py; llama_model_nemotron_h::load_arch_tensors):
// layers Mamba-2, MoE, Mamba-2, attention, Mamba-2, MoE; n_embd 64; Mamba-2
// d_inner 128 in 4 heads and 2 groups, state 16, conv 4; 4 experts (top 2)
// of width 32 plus a shared expert of 64; attention 4 heads (2 KV) of 16.
// head_count_kv and feed_forward_length are per-layer and give the kinds.
// `latent` routes the experts through a 32-wide latent projection.
Model TinyNemotronHMoe(bool latent = false) {
  Model m;
  const std::string a = "nemotron_h_moe.";
  auto u32 = [](uint64_t v) { return MetaValue::Uint(ValueType::kUint32, v); };
  auto per_layer = [&](std::vector<uint64_t> v) {
    std::vector<MetaValue> e;
    for (uint64_t x : v) e.push_back(MetaValue::Int(ValueType::kInt32, static_cast<int64_t>(x)));
    return MetaValue::Array(ValueType::kInt32, e);
  };
  std::vector<MetaValue> tokens;
  for (int i = 0; i < 16; ++i) tokens.push_back(MetaValue::String("t" + std::to_string(i)));
  m.kv = {{"general.architecture", MetaValue::String("nemotron_h_moe")},
          {a + "context_length", u32(128)},
          {a + "embedding_length", u32(64)},
          {a + "block_count", u32(6)},
          {a + "feed_forward_length", per_layer({0, 32, 0, 0, 0, 32})},
          {a + "attention.head_count", u32(4)},
          {a + "attention.head_count_kv", per_layer({0, 0, 0, 2, 0, 0})},
          {a + "attention.layer_norm_rms_epsilon", MetaValue::Float32(1e-5f)},
          {a + "attention.layer_norm_epsilon", MetaValue::Float32(1e-5f)},
          {a + "ssm.conv_kernel", u32(4)},
          {a + "ssm.inner_size", u32(128)},
          {a + "ssm.state_size", u32(16)},
          {a + "ssm.time_step_rank", u32(4)},
          {a + "ssm.group_count", u32(2)},
          {a + "expert_count", u32(4)},
          {a + "expert_used_count", u32(2)},
          {a + "expert_feed_forward_length", u32(32)},
          {a + "expert_shared_feed_forward_length", u32(64)},
          {"tokenizer.ggml.model", MetaValue::String("llama")},
          {"tokenizer.ggml.tokens", MetaValue::Array(ValueType::kString, tokens)}};
  const uint64_t moe = latent ? 32 : 64;  // the experts' input width
  if (latent) m.kv.emplace_back(a + "moe_latent_size", u32(32));
  m.tensors.push_back({"token_embd.weight", {64, 16}, kF32});
  m.tensors.push_back({"output_norm.weight", {64}, kF32});
  m.tensors.push_back({"output.weight", {64, 16}, kF32});
  for (int i = 0; i < 6; ++i) {
    std::string b = "blk." + std::to_string(i) + ".";
    m.tensors.push_back({b + "attn_norm.weight", {64}, kF32});
    if (i % 2 == 0) {  // Mamba-2: ssm_in {n_embd, 2*d_inner + 2*n_group*d_state + n_head}
      m.tensors.push_back({b + "ssm_in.weight", {64, 2 * 128 + 2 * 2 * 16 + 4}, kF32});
      m.tensors.push_back({b + "ssm_conv1d.weight", {4, 128 + 2 * 2 * 16}, kF32});
      m.tensors.push_back({b + "ssm_conv1d.bias", {128 + 2 * 2 * 16}, kF32});
      m.tensors.push_back({b + "ssm_dt.bias", {4}, kF32});
      m.tensors.push_back({b + "ssm_a", {1, 4}, kF32});
      m.tensors.push_back({b + "ssm_d", {1, 4}, kF32});
      m.tensors.push_back({b + "ssm_norm.weight", {64, 2}, kF32});
      m.tensors.push_back({b + "ssm_out.weight", {128, 64}, kF32});
    } else if (i == 3) {
      m.tensors.push_back({b + "attn_q.weight", {64, 64}, kF32});
      m.tensors.push_back({b + "attn_k.weight", {64, 32}, kF32});
      m.tensors.push_back({b + "attn_v.weight", {64, 32}, kF32});
      m.tensors.push_back({b + "attn_output.weight", {64, 64}, kF32});
    } else {
      m.tensors.push_back({b + "ffn_gate_inp.weight", {64, 4}, kF32});
      m.tensors.push_back({b + "exp_probs_b.bias", {4}, kF32});
      if (latent) {
        m.tensors.push_back({b + "ffn_latent_down.weight", {64, 32}, kF32});
        m.tensors.push_back({b + "ffn_latent_up.weight", {32, 64}, kF32});
      }
      m.tensors.push_back({b + "ffn_up_exps.weight", {moe, 32, 4}, kF32});
      m.tensors.push_back({b + "ffn_down_exps.weight", {32, moe, 4}, kF32});
      m.tensors.push_back({b + "ffn_up_shexp.weight", {64, 64}, kF32});
      m.tensors.push_back({b + "ffn_down_shexp.weight", {64, 64}, kF32});
    }
  }
  return m;
}

// The dense nemotron_h variant: the MoE layers become ReLU^2 MLPs of 96.
Model TinyNemotronH() {
  Model m = TinyNemotronHMoe();
  Model out;
  for (auto& [k, v] : m.kv) {
    std::string key = k;
    if (key.rfind("nemotron_h_moe.", 0) == 0) key = "nemotron_h." + key.substr(15);
    if (key.find(".expert_") != std::string::npos) continue;
    out.kv.emplace_back(key, v);
  }
  *out.Find("general.architecture") = MetaValue::String("nemotron_h");
  std::vector<MetaValue> ff;
  for (uint64_t x : {0, 96, 0, 0, 0, 96}) ff.push_back(MetaValue::Int(ValueType::kInt32, static_cast<int64_t>(x)));
  *out.Find("nemotron_h.feed_forward_length") = MetaValue::Array(ValueType::kInt32, ff);
  for (auto& t : m.tensors) {
    if (t.name.find("ffn_") != std::string::npos || t.name.find("exp_probs_b") != std::string::npos) continue;
    out.tensors.push_back(t);
  }
  for (int i : {1, 5}) {
    out.tensors.push_back({"blk." + std::to_string(i) + ".ffn_up.weight", {64, 96}, kF32});
    out.tensors.push_back({"blk." + std::to_string(i) + ".ffn_down.weight", {96, 64}, kF32});
  }
  return out;
}

MetaValue Int32Array(std::vector<int64_t> v) {
  std::vector<MetaValue> e;
  for (int64_t x : v) e.push_back(MetaValue::Int(ValueType::kInt32, x));
  return MetaValue::Array(ValueType::kInt32, e);
}

// The converter's layout: head_count_kv 0 on the Mamba-2 and MoE layers is
// how llama.cpp tells the kinds apart, not a GQA ratio (issue 21 item 1).
TEST(LlamaCheckNemotronH, ValidFilesOfEachVariantPass) {
  std::string dir = MakeTempDir();
  struct Case {
    const char* name;
    Model model;
    const char* expect;
  };
  for (const auto& c : {Case{"moe", TinyNemotronHMoe(), "architecture \"nemotron_h_moe\", 49 tensors"},
                        Case{"latent", TinyNemotronHMoe(true), "architecture \"nemotron_h_moe\", 53 tensors"},
                        Case{"dense", TinyNemotronH(), "architecture \"nemotron_h\", 41 tensors"}}) {
    SCOPED_TRACE(c.name);
    auto r = Check(Write(c.model, dir + "/" + c.name + ".gguf"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(Has(r, StrCat("OK for llama.cpp (", c.expect, "; 0 errors, 0 warnings)"))) << r.output;
  }
}

// The targeted llama.cpp reads expert_used_count (every architecture) and
// expert_feed_forward_length (nemotron_h) with get_key_or_arr; expert_count
// stays one number (issue 21 item 3).
TEST(LlamaCheckNemotronH, PerLayerExpertKeysWhereTheLoaderTakesThem) {
  std::string dir = MakeTempDir();
  Model m = TinyNemotronHMoe();
  *m.Find("nemotron_h_moe.expert_used_count") = Int32Array({0, 2, 0, 0, 0, 1});
  *m.Find("nemotron_h_moe.expert_feed_forward_length") = Int32Array({0, 32, 0, 0, 0, 32});
  auto ok = Check(Write(m, dir + "/ok.gguf"));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_TRUE(tools::LlamaScalarKeysGivenAsArrays(m.kv).empty());

  // The per-layer expert width is the one the layer's tensors must have.
  m.Tensor("blk.5.ffn_up_exps.weight")->ne = {64, 16, 4};
  m.Tensor("blk.5.ffn_down_exps.weight")->ne = {16, 64, 4};
  auto narrow = Check(Write(m, dir + "/narrow.gguf"));
  EXPECT_EQ(narrow.exit_code, 1) << narrow.output;
  EXPECT_TRUE(Has(narrow, "tensor \"blk.5.ffn_up_exps.weight\": shape [4, 16, 64] (GGUF ne [64, 16, 4]) but "
                          "llama.cpp expects ne [n_embd=64, n_ff_exp=32, n_expert=4]")) << narrow.output;
  *m.Find("nemotron_h_moe.expert_feed_forward_length") = Int32Array({0, 32, 0, 0, 0, 16});
  EXPECT_EQ(Check(Write(m, dir + "/narrow2.gguf")).exit_code, 0);

  Model e = TinyNemotronHMoe();
  *e.Find("nemotron_h_moe.expert_count") = Int32Array({0, 4, 0, 0, 0, 4});
  auto r = Check(Write(e, dir + "/count.gguf"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Has(r, "error: key \"nemotron_h_moe.expert_count\": is an array of 6 int32")) << r.output;
  EXPECT_EQ(tools::LlamaScalarKeysGivenAsArrays(e.kv), std::vector<std::string>{"nemotron_h_moe.expert_count"});

  // llama reads expert_used_count per layer too.
  Model l = TinyLlama();
  l.kv.emplace_back("llama.expert_used_count", Int32Array({2, 2}));
  EXPECT_TRUE(tools::LlamaScalarKeysGivenAsArrays(l.kv).empty());
}

// Files llama.cpp refuses or aborts on (issue 21 item 2), each named.
TEST(LlamaCheckNemotronH, BrokenVariantsAreErrors) {
  struct Case {
    const char* name;
    std::function<void(Model&)> edit;
    std::string expect;
  };
  const std::string a = "nemotron_h_moe.";
  std::vector<Case> cases = {
      {"head_count per layer, 0 on layer 0",
       [&](Model& m) { *m.Find(a + "attention.head_count") = Int32Array({0, 0, 0, 4, 0, 0}); },
       "error: key \"nemotron_h_moe.attention.head_count\": layer 0 has 0 heads while later layers have heads"},
      {"no layer_norm_epsilon", [&](Model& m) { m.Erase(a + "attention.layer_norm_epsilon"); },
       "error: key \"nemotron_h_moe.attention.layer_norm_epsilon\": missing"},
      {"no rms epsilon", [&](Model& m) { m.Erase(a + "attention.layer_norm_rms_epsilon"); },
       "error: key \"nemotron_h_moe.attention.layer_norm_rms_epsilon\": missing"},
      {"no ssm.group_count", [&](Model& m) { m.Erase(a + "ssm.group_count"); },
       "error: key \"nemotron_h_moe.ssm.group_count\": missing"},
      {"ungrouped ssm_norm", [&](Model& m) { m.Tensor("blk.2.ssm_norm.weight")->ne = {128, 1}; },
       "tensor \"blk.2.ssm_norm.weight\": shape [1, 128] (GGUF ne [128, 1]) but llama.cpp expects ne "
       "[d_inner/n_group=64, n_group=2]"},
      {"ssm_in of another inner size", [&](Model& m) { m.Tensor("blk.0.ssm_in.weight")->ne = {64, 196}; },
       "tensor \"blk.0.ssm_in.weight\": shape [196, 64] (GGUF ne [64, 196]) but llama.cpp expects ne [n_embd=64, "
       "2*d_inner+2*n_group*d_state+n_ssm_head=324]"},
      {"attention K of 4 heads", [&](Model& m) { m.Tensor("blk.3.attn_k.weight")->ne = {64, 64}; },
       "tensor \"blk.3.attn_k.weight\": shape [64, 64] (GGUF ne [64, 64]) but llama.cpp expects ne [n_embd=64, "
       "n_embd_head_k*n_head_kv=32]"},
      {"shared expert width", [&](Model& m) { m.Tensor("blk.1.ffn_up_shexp.weight")->ne = {64, 32}; },
       "tensor \"blk.1.ffn_up_shexp.weight\": shape [32, 64] (GGUF ne [64, 32]) but llama.cpp expects ne "
       "[n_embd=64, n_ff_shexp=64]"},
      {"no router bias",
       [](Model& m) { std::erase_if(m.tensors, [](const auto& t) { return t.name == "blk.5.exp_probs_b.bias"; }); },
       "error: tensor \"blk.5.exp_probs_b.bias\": missing (llama.cpp: \"missing tensor\")"},
      {"attention tensor in a Mamba-2 block",
       [](Model& m) { m.tensors.push_back({"blk.0.attn_q.weight", {64, 64}, kF32}); },
       "error: tensor \"blk.0.attn_q.weight\": is not a tensor llama.cpp's \"nemotron_h_moe\" architecture creates "
       "in blk.0, a Mamba-2 layer (head_count_kv 0, feed_forward_length 0)"},
      {"a gate for the experts",
       [](Model& m) { m.tensors.push_back({"blk.1.ffn_gate_exps.weight", {64, 32, 4}, kF32}); },
       "is not a tensor llama.cpp's \"nemotron_h_moe\" architecture creates in blk.1, a MoE layer"},
      {"attention layer without heads", [&](Model& m) { *m.Find(a + "attention.head_count") = Int32Array({4, 4, 4, 0, 4, 4}); },
       "layer 3 is an attention layer (head_count_kv 2, feed_forward_length 0) with head_count 0"},
  };
  std::string dir = MakeTempDir();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Model m = TinyNemotronHMoe();
    c.edit(m);
    auto r = Check(Write(m, dir + "/t.gguf"));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(Has(r, c.expect)) << r.output;
  }
}

// head_count_kv 0 marks a layer without attention in the hybrid
// architectures; for one without rules here (granitehybrid) it is no error,
// for llama it is.
TEST(LlamaCheckNemotronH, KvHeadsZeroIsAnErrorOnlyWhereEveryLayerAttends) {
  std::string dir = MakeTempDir();
  Model m = TinyLlama();
  *m.Find("llama.attention.head_count_kv") = Int32Array({2, 0});
  auto r = Check(Write(m, dir + "/llama.gguf"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Has(r, "layer 1: head_count 4 is not a multiple of head_count_kv 0")) << r.output;
  Model g;
  for (auto& [k, v] : m.kv) {
    g.kv.emplace_back(k.rfind("llama.", 0) == 0 ? "granitehybrid." + k.substr(6) : k, v);
  }
  *g.Find("general.architecture") = MetaValue::String("granitehybrid");
  g.tensors = m.tensors;
  auto u = Check(Write(g, dir + "/granite.gguf"));
  EXPECT_FALSE(Has(u, "head_count_kv")) << u.output;
}

// A layer 0 with heads is all llama.cpp needs: per-layer head counts with a
// nonzero first element load.
TEST(LlamaCheckNemotronH, PerLayerHeadCountsWithHeadsOnLayerZeroPass) {
  Model m = TinyNemotronHMoe();
  *m.Find("nemotron_h_moe.attention.head_count") = Int32Array({4, 0, 0, 4, 0, 0});
  auto r = Check(Write(m, MakeTempDir() + "/t.gguf"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
}  // namespace boltpack
