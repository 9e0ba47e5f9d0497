// Tiny Hugging Face folders (random-free: element i of a tensor is i) of
// each architecture table: names, which tensors are reordered, tied and
// untied embeddings, sharded weights, and the `{arch}.*` keys.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "gtest/gtest.h"
#include "io/gguf.h"
#include "io/hf_arch.h"
#include "io/safetensors.h"
#include "tests/hf_folder_util.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::RunCli;

using Spec = testing::HfTensor;
using testing::WriteHfText;

// Element i of a tensor is i.
std::vector<uint8_t> Elements(const Spec& s) { return testing::HfElements(s, 1.0f); }

void WriteSafetensors(const std::string& path, const std::vector<Spec>& specs, DType dtype = DType::kF32) {
  testing::WriteHfWeights(path, specs, dtype, 1.0f);
}

// One decoder layer, hidden 8, 2 query heads and 1 KV head of 4.
std::vector<Spec> LayerTensors(bool qk_norm) {
  std::vector<Spec> s = {
      {"model.embed_tokens.weight", {6, 8}},
      {"model.layers.0.input_layernorm.weight", {8}},
      {"model.layers.0.self_attn.q_proj.weight", {8, 8}},
      {"model.layers.0.self_attn.k_proj.weight", {4, 8}},
      {"model.layers.0.self_attn.v_proj.weight", {4, 8}},
      {"model.layers.0.self_attn.o_proj.weight", {8, 8}},
      {"model.layers.0.post_attention_layernorm.weight", {8}},
      {"model.layers.0.mlp.gate_proj.weight", {16, 8}},
      {"model.layers.0.mlp.up_proj.weight", {16, 8}},
      {"model.layers.0.mlp.down_proj.weight", {8, 16}},
      {"model.norm.weight", {8}},
      {"lm_head.weight", {6, 8}},
  };
  if (qk_norm) {
    s.push_back({"model.layers.0.self_attn.q_norm.weight", {4}});
    s.push_back({"model.layers.0.self_attn.k_norm.weight", {4}});
  }
  return s;
}

std::string Config(const std::string& arch, bool tied) {
  return R"({"architectures": [")" + arch + R"("], "num_hidden_layers": 1, "hidden_size": 8,
    "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 16, "vocab_size": 6,
    "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 1000000.0, "tie_word_embeddings": )" +
         (tied ? "true" : "false") + "}";
}

struct Converted {
  std::string path;
  std::unique_ptr<io::GgufModel> model;
  std::map<std::string, size_t> index;  // name -> tensor
};

Converted Convert(const std::string& dir) {
  const std::string out = MakeTempDir() + "/m.gguf";
  auto r = RunCli({"convert", dir, "-o", out});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  Converted c;
  c.path = out;
  auto m = io::GgufModel::Open(out);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return c;
  c.model = std::move(*m);
  for (size_t i = 0; i < c.model->tensors().size(); ++i) c.index[std::string(c.model->tensors()[i].name)] = i;
  return c;
}

std::vector<uint8_t> BytesOf(const Converted& c, const std::string& name) {
  auto b = c.model->TensorBytes(c.index.at(name));
  return {b.begin(), b.end()};
}

const MetaValue* Key(const Converted& c, std::string_view key) {
  for (const auto& [k, v] : c.model->metadata()) {
    if (k == key) return &v;
  }
  return nullptr;
}

TEST(HfArchFolder, Qwen3KeepsRowsAndMapsQkNorms) {
  const std::string dir = MakeTempDir();
  WriteSafetensors(dir + "/model.safetensors", LayerTensors(true));
  WriteHfText(dir + "/config.json", Config("Qwen3ForCausalLM", false));
  Converted c = Convert(dir);
  ASSERT_NE(c.model, nullptr);
  EXPECT_EQ(c.index.size(), 14u);
  for (const char* n : {"blk.0.attn_q_norm.weight", "blk.0.attn_k_norm.weight", "output.weight", "token_embd.weight"}) {
    EXPECT_TRUE(c.index.count(n)) << n;
  }
  // NEOX rotary in llama.cpp: Q is written as the checkpoint has it.
  EXPECT_EQ(BytesOf(c, "blk.0.attn_q.weight"), Elements({"", {8, 8}}));
  EXPECT_EQ(Key(c, "general.architecture")->s, "qwen3");
  EXPECT_EQ(Key(c, "qwen3.attention.head_count_kv")->u, 1u);
  EXPECT_EQ(Key(c, "qwen3.rope.freq_base")->f32, 1000000.0f);
  EXPECT_EQ(Key(c, "qwen3.vocab_size"), nullptr);  // llama's key, not Qwen's
  EXPECT_EQ(Key(c, "general.file_type")->u, 0u);   // ALL_F32
}

TEST(HfArchFolder, LlamaShardedUntiedPermutesQAndK) {
  const std::string dir = MakeTempDir();
  std::vector<Spec> all = LayerTensors(false);
  std::vector<Spec> first(all.begin(), all.begin() + 6), second(all.begin() + 6, all.end());
  WriteSafetensors(dir + "/model-00001-of-00002.safetensors", first);
  WriteSafetensors(dir + "/model-00002-of-00002.safetensors", second);
  std::string map;
  for (const auto& s : first) map += "\"" + s.name + "\": \"model-00001-of-00002.safetensors\",";
  for (const auto& s : second) map += "\"" + s.name + "\": \"model-00002-of-00002.safetensors\",";
  map.pop_back();
  WriteHfText(dir + "/model.safetensors.index.json", R"({"metadata": {}, "weight_map": {)" + map + "}}");
  WriteHfText(dir + "/config.json", Config("LlamaForCausalLM", false));
  Converted c = Convert(dir);
  ASSERT_NE(c.model, nullptr);
  EXPECT_TRUE(c.index.count("output.weight"));  // untied: the head is its own tensor
  const std::vector<uint8_t> q = Elements({"", {8, 8}}), k = Elements({"", {4, 8}});
  EXPECT_EQ(BytesOf(c, "blk.0.attn_q.weight"), *io::PermuteRotaryRows(q, 8, 32, 2));
  EXPECT_EQ(BytesOf(c, "blk.0.attn_k.weight"), *io::PermuteRotaryRows(k, 4, 32, 1));  // by the KV heads
  EXPECT_EQ(BytesOf(c, "blk.0.attn_v.weight"), Elements({"", {4, 8}}));
  EXPECT_EQ(Key(c, "llama.rope.dimension_count")->u, 4u);
  EXPECT_EQ(Key(c, "llama.vocab_size")->u, 6u);
}

TEST(HfArchFolder, TiedEmbeddingsWriteNoOutput) {
  const std::string dir = MakeTempDir();
  WriteSafetensors(dir + "/model.safetensors", LayerTensors(false));
  WriteHfText(dir + "/config.json", Config("MistralForCausalLM", true));
  Converted c = Convert(dir);
  ASSERT_NE(c.model, nullptr);
  EXPECT_FALSE(c.index.count("output.weight"));
  EXPECT_TRUE(c.index.count("token_embd.weight"));
  EXPECT_EQ(Key(c, "general.architecture")->s, "llama");
}

TEST(HfArchFolder, Llama3RopeScalingWritesRopeFreqsFirst) {
  const std::string dir = MakeTempDir();
  WriteSafetensors(dir + "/model.safetensors", LayerTensors(false));
  std::string config = Config("LlamaForCausalLM", true);
  config.pop_back();
  config += R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
      "high_freq_factor": 4.0, "original_max_position_embeddings": 8}})";
  WriteHfText(dir + "/config.json", config);
  Converted c = Convert(dir);
  ASSERT_NE(c.model, nullptr);
  ASSERT_TRUE(c.index.count("rope_freqs.weight"));
  EXPECT_EQ(c.index.at("rope_freqs.weight"), 0u);
  EXPECT_EQ(c.model->tensors()[0].Shape(), (std::vector<uint64_t>{2}));  // head_dim 4 / 2
  EXPECT_EQ(c.model->tensors()[0].type->id, 0);                        // F32
  EXPECT_EQ(Key(c, "llama.rope.scaling.type"), nullptr);
}

// What llama.cpp's loader needs of each architecture, as bolt-pack's
// predictor of it (verify --target llama.cpp --strict) checks: keys, tensor
// names and shapes, and a tokenizer.
// A byte-level tokenizer of 5 tokens (6 with the config's padding).
void WriteTokenizer(const std::string& dir) {
  WriteHfText(dir + "/tokenizer.json", R"({"added_tokens": [{"id": 4, "content": "<|endoftext|>", "special": true}],
      "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
      "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120a": 3}, "merges": ["a b", "\u0120 a"]}})");
  WriteHfText(dir + "/tokenizer_config.json", R"({"eos_token": "<|endoftext|>", "bos_token": null})");
}

TEST(HfArchFolder, EachTableGivesAGgufLlamaCppAccepts) {
  for (const char* arch : {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"}) {
    SCOPED_TRACE(arch);
    const std::string dir = MakeTempDir();
    WriteSafetensors(dir + "/model.safetensors", LayerTensors(std::string(arch) == "Qwen3ForCausalLM"));
    WriteHfText(dir + "/config.json", Config(arch, false));
    WriteTokenizer(dir);
    const std::string out = MakeTempDir() + "/m.gguf";
    auto r = RunCli({"convert", dir, "-o", out, "--codec", "*=f16"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto v = RunCli({"verify", "--target", "llama.cpp", "--strict", out});
    EXPECT_EQ(v.exit_code, 0) << v.output;
  }
}

TEST(HfArchFolder, Bf16CheckpointKeepsItsMatricesAndWritesNormsInF32) {
  const std::string dir = MakeTempDir();
  WriteSafetensors(dir + "/model.safetensors", LayerTensors(false), DType::kBF16);
  WriteHfText(dir + "/config.json", Config("LlamaForCausalLM", false));
  for (const char* rule : {"", "*=f16"}) {
    SCOPED_TRACE(rule);
    const std::string out = MakeTempDir() + "/m.gguf";
    std::vector<std::string> args = {"convert", dir, "-o", out};
    if (*rule != 0) args.insert(args.end(), {"--codec", rule});
    auto r = RunCli(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto m = io::GgufModel::Open(out);
    ASSERT_TRUE(m.ok()) << m.status();
    for (const auto& t : (*m)->tensors()) {
      const int want = t.ne.size() < 2 ? 0 : (*rule != 0 ? 1 : 30);  // F32, F16, BF16
      EXPECT_EQ(t.type->id, want) << t.name;
    }
  }
}

// One MoE layer: attention as above, a router and 2 experts.
std::vector<Spec> MoeTensors(const std::string& mlp, const std::string& gate, const std::vector<std::string>& w,
                             bool qk_norm) {
  std::vector<Spec> s;
  for (const auto& t : LayerTensors(qk_norm)) {
    if (t.name.find(".mlp.") == std::string::npos) s.push_back(t);
  }
  s.push_back({"model.layers.0." + mlp + "." + gate + ".weight", {2, 8}});
  // Experts in the file in reverse: the stack is in expert order anyway.
  for (int x = 1; x >= 0; --x) {
    const std::string e = "model.layers.0." + mlp + ".experts." + std::to_string(x) + ".";
    s.push_back({e + w[0] + ".weight", {16, 8}});  // gate
    s.push_back({e + w[1] + ".weight", {8, 16}});  // down
    s.push_back({e + w[2] + ".weight", {16, 8}});  // up
  }
  return s;
}

std::string MoeConfig(const std::string& arch, const std::string& experts_field) {
  std::string c = Config(arch, true);
  c.pop_back();
  return c + ", \"" + experts_field + "\": 2, \"num_experts_per_tok\": 1, \"moe_intermediate_size\": 16}";
}

// Both experts' tensors, 0 then 1, as one buffer.
std::vector<uint8_t> Stacked(const std::vector<uint64_t>& shape) {
  std::vector<uint8_t> one = Elements({"", shape});
  std::vector<uint8_t> both = one;
  both.insert(both.end(), one.begin(), one.end());
  return both;
}

TEST(HfArchFolder, MixtralAndQwen3MoeStackTheirExperts) {
  struct Case {
    const char* arch;
    const char* experts_field;
    std::vector<Spec> tensors;
    const char* gguf_arch;
  };
  const Case cases[] = {
      {"MixtralForCausalLM", "num_local_experts", MoeTensors("block_sparse_moe", "gate", {"w1", "w2", "w3"}, false),
       "llama"},
      {"Qwen3MoeForCausalLM", "num_experts", MoeTensors("mlp", "gate", {"gate_proj", "down_proj", "up_proj"}, true),
       "qwen3moe"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.arch);
    const std::string dir = MakeTempDir();
    WriteSafetensors(dir + "/model.safetensors", k.tensors);
    WriteHfText(dir + "/config.json", MoeConfig(k.arch, k.experts_field));
    WriteTokenizer(dir);
    Converted c = Convert(dir);
    ASSERT_NE(c.model, nullptr);
    const std::string a = k.gguf_arch;
    // verify has no qwen3moe rules yet (a warning, which --strict fails):
    // the keys every architecture needs are checked all the same.
    std::vector<std::string> verify = {"verify", "--target", "llama.cpp", c.path};
    if (a == "llama") verify.push_back("--strict");
    auto v = RunCli(verify);
    EXPECT_EQ(v.exit_code, 0) << v.output;
    EXPECT_EQ(Key(c, "general.architecture")->s, k.gguf_arch);
    EXPECT_EQ(Key(c, a + ".expert_count")->u, 2u);
    EXPECT_EQ(Key(c, a + ".expert_used_count")->u, 1u);
    for (const char* n : {"blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight", "blk.0.ffn_down_exps.weight",
                          "blk.0.ffn_gate_inp.weight"}) {
      ASSERT_TRUE(c.index.count(n)) << n;
    }
    EXPECT_EQ(c.model->tensors()[c.index.at("blk.0.ffn_gate_exps.weight")].Shape(), (std::vector<uint64_t>{2, 16, 8}));
    EXPECT_EQ(c.model->tensors()[c.index.at("blk.0.ffn_down_exps.weight")].Shape(), (std::vector<uint64_t>{2, 8, 16}));
    EXPECT_EQ(BytesOf(c, "blk.0.ffn_up_exps.weight"), Stacked({16, 8}));
    EXPECT_EQ(BytesOf(c, "blk.0.ffn_down_exps.weight"), Stacked({8, 16}));
    EXPECT_EQ(c.index.size(), 13u + (std::string(k.arch) == "Qwen3MoeForCausalLM" ? 2 : 0) - 1);  // tied: no output
  }
}

TEST(HfArchFolder, MissingOrSurplusExpertIsNamed) {
  std::vector<Spec> s = MoeTensors("block_sparse_moe", "gate", {"w1", "w2", "w3"}, false);
  s.erase(std::remove_if(s.begin(), s.end(), [](const Spec& t) { return t.name.find("experts.1.w3") != std::string::npos; }),
          s.end());
  const std::string dir = MakeTempDir();
  WriteSafetensors(dir + "/model.safetensors", s);
  WriteHfText(dir + "/config.json", MoeConfig("MixtralForCausalLM", "num_local_experts"));
  auto r = RunCli({"convert", dir, "-o", MakeTempDir() + "/m.gguf"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("expert 1 of \"blk.0.ffn_up_exps.weight\" is missing"), std::string::npos) << r.output;
  WriteHfText(dir + "/config.json", MoeConfig("MixtralForCausalLM", "num_local_experts").replace(
                                      MoeConfig("MixtralForCausalLM", "num_local_experts").find("\"num_local_experts\": 2"),
                                      22, "\"num_local_experts\": 1"));
  r = RunCli({"convert", dir, "-o", MakeTempDir() + "/m.gguf"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("expert 1 of a model of 1 experts"), std::string::npos) << r.output;
}

TEST(HfArchFolder, UnmappedTensorIsNamed) {
  const std::string dir = MakeTempDir();
  std::vector<Spec> s = LayerTensors(false);
  s.push_back({"model.layers.0.mlp.experts.0.w1.weight", {2, 2}});
  WriteSafetensors(dir + "/model.safetensors", s);
  WriteHfText(dir + "/config.json", Config("LlamaForCausalLM", false));
  auto r = RunCli({"convert", dir, "-o", MakeTempDir() + "/m.gguf"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("\"model.layers.0.mlp.experts.0.w1.weight\" has no GGUF name in the llama mapping"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace boltpack
