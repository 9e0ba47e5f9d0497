// A tiny Hugging Face NemotronHForCausalLM folder (Mamba-2, attention, MoE:
// pattern "M*E"; element i of a tensor is i) converted to GGUF: the names of
// gguf-py's nemotron_h tensor map, the converter's reshapes and A =
// -exp(A_log), the router and conv1d in F32, the per-layer arrays that give
// llama.cpp the layer kinds, and verify --target llama.cpp --strict passing.
// The full-size check against make_nemotron_h.py's GGUF, bit for bit, and
// llama.cpp loading it are in scripts/llama_cpp_check.sh.
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>

#include "gtest/gtest.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "tests/hf_folder_util.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::RunCli;

using Spec = testing::HfTensor;
using testing::WriteHfText;

// hidden 8; Mamba-2 2 heads of 4 in 2 groups, state 2, conv 3; attention 2
// heads of 4 (1 KV head); 2 experts of 16 (top 1) and a shared one of 16.
std::vector<Spec> Tensors(bool moe) {
  std::vector<Spec> s = {
      {"backbone.embeddings.weight", {6, 8}},
      {"backbone.norm_f.weight", {8}},
      {"lm_head.weight", {6, 8}},
      {"backbone.layers.0.norm.weight", {8}},
      {"backbone.layers.0.mixer.in_proj.weight", {26, 8}},
      {"backbone.layers.0.mixer.conv1d.weight", {16, 1, 3}},
      {"backbone.layers.0.mixer.conv1d.bias", {16}},
      {"backbone.layers.0.mixer.dt_bias", {2}},
      {"backbone.layers.0.mixer.A_log", {2}},
      {"backbone.layers.0.mixer.D", {2}},
      {"backbone.layers.0.mixer.norm.weight", {8}},
      {"backbone.layers.0.mixer.out_proj.weight", {8, 8}},
      {"backbone.layers.1.norm.weight", {8}},
      {"backbone.layers.1.mixer.q_proj.weight", {8, 8}},
      {"backbone.layers.1.mixer.k_proj.weight", {4, 8}},
      {"backbone.layers.1.mixer.v_proj.weight", {4, 8}},
      {"backbone.layers.1.mixer.o_proj.weight", {8, 8}},
      {"backbone.layers.2.norm.weight", {8}},
  };
  const std::string m = "backbone.layers.2.mixer.";
  if (!moe) {
    s.push_back({m + "up_proj.weight", {16, 8}});
    s.push_back({m + "down_proj.weight", {8, 16}});
    return s;
  }
  s.push_back({m + "gate.weight", {2, 8}});
  s.push_back({m + "gate.e_score_correction_bias", {2}});
  for (int x = 0; x < 2; ++x) {
    s.push_back({m + "experts." + std::to_string(x) + ".up_proj.weight", {16, 8}});
    s.push_back({m + "experts." + std::to_string(x) + ".down_proj.weight", {8, 16}});
  }
  s.push_back({m + "shared_experts.up_proj.weight", {16, 8}});
  s.push_back({m + "shared_experts.down_proj.weight", {8, 16}});
  return s;
}

std::string Config(bool moe) {
  std::string c = R"({"architectures": ["NemotronHForCausalLM"], "num_hidden_layers": 3, "hidden_size": 8,
    "vocab_size": 6, "max_position_embeddings": 64, "num_attention_heads": 2, "num_key_value_heads": 1,
    "head_dim": 4, "mamba_num_heads": 2, "mamba_head_dim": 4, "ssm_state_size": 2, "n_groups": 2,
    "conv_kernel": 3, "layer_norm_epsilon": 1e-5, "tie_word_embeddings": false, )";
  if (!moe) return c + R"("hybrid_override_pattern": "M*-", "intermediate_size": 16})";
  return c + R"("hybrid_override_pattern": "M*E", "n_routed_experts": 2, "num_experts_per_tok": 1,
    "moe_intermediate_size": 16, "moe_shared_expert_intermediate_size": 16, "n_shared_experts": 1,
    "norm_topk_prob": true, "routed_scaling_factor": 2.5, "n_group": 1, "topk_group": 1})";
}

std::string Folder(bool moe, DType dtype = DType::kF32) {
  const std::string dir = MakeTempDir();
  const auto specs = Tensors(moe);
  testing::WriteHfWeights(dir + "/model.safetensors", specs, dtype, 1.0f / 8);
  WriteHfText(dir + "/config.json", Config(moe));
  WriteHfText(dir + "/tokenizer.json", R"({"added_tokens": [{"id": 4, "content": "<|endoftext|>", "special": true}],
      "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
      "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120a": 3, "c": 5}, "merges": ["a b"]}})");
  WriteHfText(dir + "/tokenizer_config.json", R"({"eos_token": "<|endoftext|>", "bos_token": null})");
  return dir;
}

struct Gguf {
  std::unique_ptr<io::GgufModel> model;
  std::map<std::string, size_t> index;
  const io::GgufTensor& T(const std::string& name) const { return model->tensors()[index.at(name)]; }
  const MetaValue* Key(std::string_view key) const {
    for (const auto& [k, v] : model->metadata()) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};

Gguf Convert(const std::string& dir, const std::string& out, bool f16 = true) {
  std::vector<std::string> args = {"convert", dir, "-o", out};
  if (f16) args.insert(args.end(), {"--codec", "*=f16"});
  auto r = RunCli(args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  Gguf g;
  auto m = io::GgufModel::Open(out);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return g;
  g.model = std::move(*m);
  for (size_t i = 0; i < g.model->tensors().size(); ++i) g.index[std::string(g.model->tensors()[i].name)] = i;
  return g;
}

std::vector<int64_t> Ints(const MetaValue* v) {
  std::vector<int64_t> out;
  if (v == nullptr) return out;
  for (size_t i = 0; i < v->array_size(); ++i) out.push_back(v->int_element(i));
  return out;
}

TEST(HfNemotron, MoeFolderMapsReshapesAndPassesVerify) {
  const std::string out = MakeTempDir() + "/m.gguf";
  Gguf g = Convert(Folder(true), out);
  ASSERT_NE(g.model, nullptr);
  EXPECT_EQ(g.model->tensors().size(), 24u);  // 26 HF tensors: 2 experts stacked, twice
  EXPECT_EQ(g.T("blk.0.ssm_conv1d.weight").ne, (std::vector<uint64_t>{3, 16}));
  EXPECT_EQ(g.T("blk.0.ssm_a").ne, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(g.T("blk.0.ssm_d").ne, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(g.T("blk.0.ssm_norm.weight").ne, (std::vector<uint64_t>{4, 2}));
  EXPECT_EQ(g.T("blk.2.ffn_up_exps.weight").ne, (std::vector<uint64_t>{8, 16, 2}));
  EXPECT_EQ(g.T("blk.2.exp_probs_b.bias").ne, (std::vector<uint64_t>{2}));
  // F32 where llama.cpp's converter keeps it: A, D, the norms, conv1d, the router.
  for (const char* f32 : {"blk.0.ssm_a", "blk.0.ssm_d", "blk.0.ssm_norm.weight", "blk.0.ssm_conv1d.weight",
                          "blk.2.ffn_gate_inp.weight", "blk.0.ssm_dt.bias"}) {
    EXPECT_EQ(g.T(f32).type->id, 0) << f32;
  }
  EXPECT_EQ(g.T("blk.0.ssm_in.weight").type->id, 1);
  auto a = g.model->TensorBytes(g.index.at("blk.0.ssm_a"));
  float a1;
  std::memcpy(&a1, a.data() + 4, 4);
  EXPECT_EQ(a1, static_cast<float>(-std::exp(0.125)));  // A_log element 1 is 1/8
  EXPECT_EQ(g.Key("general.architecture")->s, "nemotron_h_moe");
  EXPECT_EQ(Ints(g.Key("nemotron_h_moe.attention.head_count_kv")), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(Ints(g.Key("nemotron_h_moe.feed_forward_length")), (std::vector<int64_t>{0, 0, 16}));
  EXPECT_EQ(g.Key("nemotron_h_moe.ssm.inner_size")->u, 8u);
  EXPECT_EQ(g.Key("nemotron_h_moe.ssm.time_step_rank")->u, 2u);
  EXPECT_EQ(g.Key("nemotron_h_moe.expert_count")->u, 2u);
  EXPECT_EQ(g.Key("nemotron_h_moe.expert_weights_scale")->f32, 2.5f);
  EXPECT_NE(g.Key("nemotron_h_moe.attention.layer_norm_rms_epsilon"), nullptr);
  auto v = RunCli({"verify", "--target", "llama.cpp", "--strict", out});
  EXPECT_EQ(v.exit_code, 0) << v.output;
}

TEST(HfNemotron, DenseFolderIsNemotronH) {
  const std::string out = MakeTempDir() + "/m.gguf";
  Gguf g = Convert(Folder(false), out);
  ASSERT_NE(g.model, nullptr);
  EXPECT_EQ(g.Key("general.architecture")->s, "nemotron_h");
  EXPECT_EQ(Ints(g.Key("nemotron_h.feed_forward_length")), (std::vector<int64_t>{0, 0, 16}));
  EXPECT_EQ(g.T("blk.2.ffn_up.weight").ne, (std::vector<uint64_t>{8, 16}));
  auto v = RunCli({"verify", "--target", "llama.cpp", "--strict", out});
  EXPECT_EQ(v.exit_code, 0) << v.output;
}

// A BF16 checkpoint (as NVIDIA ships them): the matrices stay BF16 without
// rules, and every tensor llama.cpp's converter keeps in F32 is F32 (A from
// BF16 A_log included), so no BF16 Mamba-2 vector reaches ggml's kernels.
TEST(HfNemotron, Bf16CheckpointKeepsTheConvertersF32Tensors) {
  const std::string out = MakeTempDir() + "/m.gguf";
  Gguf g = Convert(Folder(true, DType::kBF16), out, false);
  ASSERT_NE(g.model, nullptr);
  for (const auto& t : g.model->tensors()) {
    const std::string n(t.name);
    const bool f32 = t.ne.size() < 2 || n.find("norm") != std::string::npos || n.find("ssm_a") != std::string::npos ||
                     n.find("ssm_d") != std::string::npos || n.find("conv1d") != std::string::npos ||
                     n.find("gate_inp") != std::string::npos;
    EXPECT_EQ(t.type->id, f32 ? 0 : 30) << n;
  }
  auto a = g.model->TensorBytes(g.index.at("blk.0.ssm_a"));
  float a1;
  std::memcpy(&a1, a.data() + 4, 4);
  EXPECT_EQ(a1, static_cast<float>(-std::exp(0.125)));
  auto v = RunCli({"verify", "--target", "llama.cpp", "--strict", out});
  EXPECT_EQ(v.exit_code, 0) << v.output;
}

TEST(HfNemotron, PatternThatDisagreesIsNamed) {
  const std::string dir = Folder(true);
  std::string c = Config(true);
  c.replace(c.find("\"M*E\""), 5, "\"M*EM\"");
  WriteHfText(dir + "/config.json", c);
  auto r = RunCli({"convert", dir, "-o", MakeTempDir() + "/m.gguf"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("the layer pattern names 4 layers"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace boltpack
