// Tiny Gemma 2 and Gemma 3 (text) Hugging Face folders to GGUF: the
// sandwich norms' names, every norm stored as weight + 1 in F32 (the sum
// taken in F32 from BF16, in F16 from F16, as llama.cpp's converter takes
// it), Gemma 2's dropped lm_head, Gemma 3's Q/K norms, the `{arch}.*` keys
// (soft-capping, sliding window, head width, rope) with transformers'
// defaults for absent fields, and the SentencePiece-style tokenizer with
// add_space_prefix false. scripts/llama_cpp_check.sh runs such folders in
// llama.cpp (tests/llama_cpp/make_gemma_hf.py).
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "codecs/float_convert.h"
#include "gtest/gtest.h"
#include "io/gguf.h"
#include "io/hf_arch.h"
#include "tests/hf_folder_util.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::HfTensor;
using testing::MakeTempDir;
using testing::RunCli;

constexpr float kStep = 1.0f / 256;  // element i is i / 256: exact in BF16 and F32, and after + 1

// One Gemma layer: hidden 8, 2 query heads and 1 KV head of 4, FFN 16,
// the TinyStories vocabulary of 2048.
std::vector<HfTensor> GemmaTensors(bool gemma3, bool lm_head) {
  const std::string l = "model.layers.0.";
  std::vector<HfTensor> t = {
      {"model.embed_tokens.weight", {2048, 8}},       {"model.norm.weight", {8}},
      {l + "input_layernorm.weight", {8}},            {l + "post_attention_layernorm.weight", {8}},
      {l + "pre_feedforward_layernorm.weight", {8}},  {l + "post_feedforward_layernorm.weight", {8}},
      {l + "self_attn.q_proj.weight", {8, 8}},        {l + "self_attn.k_proj.weight", {4, 8}},
      {l + "self_attn.v_proj.weight", {4, 8}},        {l + "self_attn.o_proj.weight", {8, 8}},
      {l + "mlp.gate_proj.weight", {16, 8}},          {l + "mlp.up_proj.weight", {16, 8}},
      {l + "mlp.down_proj.weight", {8, 16}},
  };
  if (gemma3) t.insert(t.end(), {{l + "self_attn.q_norm.weight", {4}}, {l + "self_attn.k_norm.weight", {4}}});
  if (lm_head) t.push_back({"lm_head.weight", {2048, 8}});
  return t;
}

std::string WriteGemma(bool gemma3, bool lm_head, DType dtype, const std::string& extra_config) {
  const std::string dir = MakeTempDir();
  testing::WriteHfWeights(dir + "/model.safetensors", GemmaTensors(gemma3, lm_head), dtype, kStep);
  testing::WriteHfText(dir + "/config.json",
                       std::string(R"({"architectures": [")") + (gemma3 ? "Gemma3ForCausalLM" : "Gemma2ForCausalLM") +
                           R"("], "num_hidden_layers": 1, "hidden_size": 8, "intermediate_size": 16,
      "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "vocab_size": 2048,
      "max_position_embeddings": 64, "rms_norm_eps": 1e-6)" + extra_config + "}");
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
    std::filesystem::copy_file(testing::SourceDir() + "/testdata/tinystories-656k/" + f, dir + "/" + f);
  }
  return dir;
}

struct Gguf {
  std::string path;
  std::unique_ptr<io::GgufModel> model;
  std::map<std::string, size_t> index;

  const MetaValue* Key(std::string_view key) const {
    for (const auto& [k, v] : model->metadata()) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  std::vector<float> Floats(const std::string& name) const {
    auto b = model->TensorBytes(index.at(name));
    std::vector<float> f(b.size() / 4);
    std::memcpy(f.data(), b.data(), b.size());
    return f;
  }
};

Gguf Convert(const std::string& dir) {
  Gguf g;
  g.path = MakeTempDir() + "/m.gguf";
  auto r = RunCli({"convert", dir, "-o", g.path, "--no-fsync"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  auto m = io::GgufModel::Open(g.path);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return g;
  g.model = std::move(*m);
  for (size_t i = 0; i < g.model->tensors().size(); ++i) g.index[std::string(g.model->tensors()[i].name)] = i;
  return g;
}

// A norm of n elements as the converter writes it: i / 256 + 1.
std::vector<float> PlusOne(size_t n) {
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = static_cast<float>(i) * kStep + 1.0f;
  return f;
}

TEST(HfGemma, Gemma2NamesSandwichNormsAddsOneAndDropsTheHead) {
  const std::string dir = WriteGemma(false, true, DType::kBF16,
                                     R"(, "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
      "sliding_window": 32, "rope_theta": 10000.0)");
  Gguf g = Convert(dir);
  ASSERT_NE(g.model, nullptr);
  EXPECT_EQ(g.index.size(), 13u);  // the 14 HF tensors but lm_head
  EXPECT_FALSE(g.index.count("output.weight"));
  for (const char* n : {"blk.0.attn_norm.weight", "blk.0.post_attention_norm.weight", "blk.0.ffn_norm.weight",
                        "blk.0.post_ffw_norm.weight", "output_norm.weight"}) {
    ASSERT_TRUE(g.index.count(n)) << n;
    EXPECT_EQ(g.model->tensors()[g.index.at(n)].type->id, 0) << n;  // F32
    EXPECT_EQ(g.Floats(n), PlusOne(8)) << n;
  }
  // Matrices keep their rows (NEOX rotary) and BF16.
  const auto& q = g.model->tensors()[g.index.at("blk.0.attn_q.weight")];
  EXPECT_EQ(q.type->id, 30);
  EXPECT_EQ(q.Shape(), (std::vector<uint64_t>{8, 8}));
  auto bytes = g.model->TensorBytes(g.index.at("blk.0.attn_q.weight"));
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.end()),
            testing::HfBf16(testing::HfElements({"", {8, 8}}, kStep)));
  EXPECT_EQ(g.Key("general.architecture")->s, "gemma2");
  EXPECT_EQ(g.Key("gemma2.attn_logit_softcapping")->f32, 50.0f);
  EXPECT_EQ(g.Key("gemma2.final_logit_softcapping")->f32, 30.0f);
  EXPECT_EQ(g.Key("gemma2.attention.sliding_window")->u, 32u);
  EXPECT_EQ(g.Key("gemma2.attention.key_length")->u, 4u);
  EXPECT_EQ(g.Key("gemma2.attention.value_length")->u, 4u);
  EXPECT_EQ(g.Key("gemma2.rope.freq_base"), nullptr);  // Gemma2Model writes none
  EXPECT_EQ(g.Key("tokenizer.ggml.model")->s, "llama");
  ASSERT_NE(g.Key("tokenizer.ggml.add_space_prefix"), nullptr);
  EXPECT_FALSE(g.Key("tokenizer.ggml.add_space_prefix")->b);
  auto v = RunCli({"verify", "--target", "llama.cpp", "--strict", g.path});
  EXPECT_EQ(v.exit_code, 0) << v.output;
}

TEST(HfGemma, Gemma2AbsentFieldsTakeTransformersDefaults) {
  Gguf g = Convert(WriteGemma(false, false, DType::kF32, ""));
  ASSERT_NE(g.model, nullptr);
  EXPECT_EQ(g.Key("gemma2.attn_logit_softcapping")->f32, 50.0f);
  EXPECT_EQ(g.Key("gemma2.final_logit_softcapping")->f32, 30.0f);
  EXPECT_EQ(g.Key("gemma2.attention.sliding_window")->u, 4096u);
}

TEST(HfGemma, Gemma3AddsQkNormsRopeAndScaling) {
  const std::string dir = WriteGemma(true, false, DType::kF32,
                                     R"(, "sliding_window": 32, "sliding_window_pattern": 6,
      "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "final_logit_softcapping": null,
      "attn_logit_softcapping": null, "rope_scaling": {"rope_type": "linear", "factor": 8.0})");
  Gguf g = Convert(dir);
  ASSERT_NE(g.model, nullptr);
  EXPECT_EQ(g.index.size(), 15u);
  EXPECT_FALSE(g.index.count("output.weight"));  // no lm_head in the folder
  for (const char* n : {"blk.0.attn_q_norm.weight", "blk.0.attn_k_norm.weight"}) {
    ASSERT_TRUE(g.index.count(n)) << n;
    EXPECT_EQ(g.Floats(n), PlusOne(4)) << n;
  }
  EXPECT_EQ(g.Floats("blk.0.post_ffw_norm.weight"), PlusOne(8));
  EXPECT_EQ(g.Floats("blk.0.attn_q.weight"), [] {
    std::vector<float> f(64);
    for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(i) * kStep;
    return f;
  }());
  EXPECT_EQ(g.Key("general.architecture")->s, "gemma3");
  EXPECT_EQ(g.Key("gemma3.rope.freq_base")->f32, 1000000.0f);
  EXPECT_EQ(g.Key("gemma3.rope.scaling.type")->s, "linear");
  EXPECT_EQ(g.Key("gemma3.rope.scaling.factor")->f32, 8.0f);
  EXPECT_EQ(g.Key("gemma3.attention.sliding_window")->u, 32u);
  EXPECT_EQ(g.Key("gemma3.attention.key_length")->u, 4u);
  EXPECT_EQ(g.Key("gemma3.final_logit_softcapping"), nullptr);
  EXPECT_EQ(g.Key("gemma3.attn_logit_softcapping"), nullptr);
  EXPECT_FALSE(g.Key("tokenizer.ggml.add_space_prefix")->b);
  auto v = RunCli({"verify", "--target", "llama.cpp", "--strict", g.path});
  EXPECT_EQ(v.exit_code, 0) << v.output;
}

TEST(HfGemma, Gemma3KeepsAnLmHeadAndDefaults) {
  Gguf g = Convert(WriteGemma(true, true, DType::kF32, R"(, "final_logit_softcapping": 30.0)"));
  ASSERT_NE(g.model, nullptr);
  EXPECT_TRUE(g.index.count("output.weight"));
  EXPECT_EQ(g.Key("gemma3.final_logit_softcapping")->f32, 30.0f);
  EXPECT_EQ(g.Key("gemma3.rope.freq_base")->f32, 1000000.0f);
  EXPECT_EQ(g.Key("gemma3.attention.sliding_window")->u, 4096u);
  // Every layer global: no window key.
  Gguf all_global = Convert(WriteGemma(true, false, DType::kF32, R"(, "sliding_window_pattern": 1)"));
  ASSERT_NE(all_global.model, nullptr);
  EXPECT_EQ(all_global.Key("gemma3.attention.sliding_window"), nullptr);
}

// transformers 5's rope_parameters: the global layers' theta; a scaled
// rope there is refused rather than dropped.
TEST(HfGemma, Gemma3ReadsRopeParameters) {
  Gguf g = Convert(WriteGemma(true, false, DType::kF32, R"(, "rope_parameters": {
      "full_attention": {"rope_type": "default", "rope_theta": 500000.0},
      "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})"));
  ASSERT_NE(g.model, nullptr);
  EXPECT_EQ(g.Key("gemma3.rope.freq_base")->f32, 500000.0f);
  auto r = RunCli({"convert", WriteGemma(true, false, DType::kF32, R"(, "rope_parameters": {
      "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}})"), "-o",
                   MakeTempDir() + "/m.gguf"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("rope_parameters with a rope_type other than \"default\""), std::string::npos) << r.output;
}

TEST(HfGemma, Gemma3RefusesAttentionSoftCapping) {
  auto r = RunCli({"convert", WriteGemma(true, false, DType::kF32, R"(, "attn_logit_softcapping": 50.0)"), "-o",
                   MakeTempDir() + "/m.gguf"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("\"attn_logit_softcapping\" is set, which Gemma 3 does not have"), std::string::npos)
      << r.output;
}

// + 1 in F32 from F32 and BF16 (1 + 2^-11 kept), in F16 from F16 (the tie
// rounds to even: 1).
TEST(HfGemma, NormPlusOneRoundsAsTheConverter) {
  const float x = 1.0f / 2048;
  const uint16_t h = F32ToF16(x), b = F32ToBF16(x);
  std::vector<uint8_t> f32(4), f16(2), bf16(2);
  std::memcpy(f32.data(), &x, 4);
  std::memcpy(f16.data(), &h, 2);
  std::memcpy(bf16.data(), &b, 2);
  auto one = [](DType d, const std::vector<uint8_t>& in) {
    auto out = io::NormPlusOneF32(d, in, "t");
    EXPECT_TRUE(out.ok()) << out.status();
    float y = 0;
    if (out.ok()) std::memcpy(&y, out->data(), 4);
    return y;
  };
  EXPECT_EQ(one(DType::kF32, f32), 1.0f + x);
  EXPECT_EQ(one(DType::kBF16, bf16), 1.0f + x);
  EXPECT_EQ(one(DType::kF16, f16), 1.0f);
  EXPECT_FALSE(io::NormPlusOneF32(DType::kI8, {1, 2}, "t").ok());
}

}  // namespace
}  // namespace boltpack
