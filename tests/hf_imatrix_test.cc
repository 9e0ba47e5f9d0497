// convert HF_DIR --imatrix: a llama.cpp imatrix naming the GGUF tensors
// (what llama-imatrix writes from a GGUF) and one naming the Hugging Face
// tensors give the same output byte for byte; per-expert HF entries join
// into the stacked *_exps tensor in expert order; an imatrix that names
// neither is an error naming both names (tools/importance.h).
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "io/hf_arch.h"
#include "io/json.h"
#include "tests/hf_folder_util.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::HfTensor;
using testing::MakeTempDir;
using testing::ReadFileBytes;
using testing::RunCli;

constexpr uint64_t kWidth = 256;  // one iq2_xxs block per row

// One imatrix entry: the tensor's names in both namings and its weights.
struct Entry {
  std::string hf;
  std::string gguf;
  std::vector<float> weights;
};

// Column weights that differ from column to column (so that an encode
// weighted by them differs from an unweighted one), seeded per tensor.
std::vector<float> Weights(uint64_t n, int seed) {
  std::vector<float> w(n);
  for (uint64_t j = 0; j < n; ++j) w[j] = static_cast<float>(1 + (j * 7 + seed * 13) % 17) * 0.25f;
  return w;
}

// A legacy llama.cpp imatrix (.dat): int32 count, then per entry int32
// name length, name, int32 ncall, int32 nval, nval float32.
void WriteLegacyImatrix(const std::string& path, const std::vector<std::pair<std::string, std::vector<float>>>& e) {
  std::vector<uint8_t> out;
  auto i32 = [&](int32_t v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + 4);
  };
  i32(static_cast<int32_t>(e.size()));
  for (const auto& [name, w] : e) {
    i32(static_cast<int32_t>(name.size()));
    out.insert(out.end(), name.begin(), name.end());
    i32(1);
    i32(static_cast<int32_t>(w.size()));
    const auto* p = reinterpret_cast<const uint8_t*>(w.data());
    out.insert(out.end(), p, p + 4 * w.size());
  }
  testing::WriteFileBytes(path, out);
}

// A one-layer llama folder, hidden 256 (2 heads of 128, 1 KV head); with
// `experts`, Mixtral's router and two experts in place of the MLP.
std::string WriteFolder(bool experts) {
  const std::string dir = MakeTempDir();
  const std::string l = "model.layers.0.";
  std::vector<HfTensor> t = {
      {"model.embed_tokens.weight", {8, kWidth}},     {l + "input_layernorm.weight", {kWidth}},
      {l + "self_attn.q_proj.weight", {kWidth, kWidth}}, {l + "self_attn.k_proj.weight", {128, kWidth}},
      {l + "self_attn.v_proj.weight", {128, kWidth}}, {l + "self_attn.o_proj.weight", {kWidth, kWidth}},
      {l + "post_attention_layernorm.weight", {kWidth}}, {"model.norm.weight", {kWidth}},
      {"lm_head.weight", {8, kWidth}},
  };
  if (experts) {
    t.push_back({l + "block_sparse_moe.gate.weight", {2, kWidth}});
    for (const char* x : {"0", "1"}) {
      for (const char* w : {"w1", "w2", "w3"}) {
        t.push_back({l + "block_sparse_moe.experts." + x + "." + w + ".weight", {kWidth, kWidth}});
      }
    }
  } else {
    for (const char* w : {"gate_proj", "up_proj", "down_proj"}) t.push_back({l + "mlp." + w + ".weight", {kWidth, kWidth}});
  }
  testing::WriteHfWeights(dir + "/model.safetensors", t, DType::kF32, 1.0f / 65536);
  testing::WriteHfText(dir + "/config.json", std::string(R"({"architectures": [")") +
                                                 (experts ? "MixtralForCausalLM" : "LlamaForCausalLM") +
                                                 R"("], "num_hidden_layers": 1, "hidden_size": 256,
      "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 256, "vocab_size": 8,
      "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "num_local_experts": 2, "num_experts_per_tok": 1})");
  return dir;
}

// The entries of every matrix an iq2_xxs rule on blk.* encodes.
std::vector<Entry> Entries(bool experts) {
  const std::string l = "model.layers.0.";
  std::vector<Entry> e = {
      {l + "self_attn.q_proj.weight", "blk.0.attn_q.weight", {}},
      {l + "self_attn.k_proj.weight", "blk.0.attn_k.weight", {}},
      {l + "self_attn.v_proj.weight", "blk.0.attn_v.weight", {}},
      {l + "self_attn.o_proj.weight", "blk.0.attn_output.weight", {}},
  };
  if (experts) {
    e.push_back({l + "block_sparse_moe.gate.weight", "blk.0.ffn_gate_inp.weight", {}});
  } else {
    e.push_back({l + "mlp.gate_proj.weight", "blk.0.ffn_gate.weight", {}});
    e.push_back({l + "mlp.up_proj.weight", "blk.0.ffn_up.weight", {}});
    e.push_back({l + "mlp.down_proj.weight", "blk.0.ffn_down.weight", {}});
  }
  for (size_t i = 0; i < e.size(); ++i) e[i].weights = Weights(kWidth, static_cast<int>(i));
  return e;
}

// The experts' entries: per expert under HF names, and stacked (expert 0's
// weights, then expert 1's) under the GGUF name, as a legacy file flattens.
void AddExperts(std::vector<std::pair<std::string, std::vector<float>>>* hf,
                std::vector<std::pair<std::string, std::vector<float>>>* gguf) {
  const char* w[] = {"w1", "w2", "w3"};
  const char* stacked[] = {"blk.0.ffn_gate_exps.weight", "blk.0.ffn_down_exps.weight", "blk.0.ffn_up_exps.weight"};
  for (int k = 0; k < 3; ++k) {
    std::vector<float> both;
    for (int x = 0; x < 2; ++x) {
      std::vector<float> one = Weights(kWidth, 20 + 2 * k + x);
      hf->push_back({"model.layers.0.block_sparse_moe.experts." + std::to_string(x) + "." + w[k] + ".weight", one});
      both.insert(both.end(), one.begin(), one.end());
    }
    gguf->push_back({stacked[k], both});
  }
}

std::vector<uint8_t> ConvertWith(const std::string& dir, const std::string& imatrix) {
  const std::string out = MakeTempDir() + "/m.gguf";
  std::vector<std::string> args = {"convert", dir, "-o", out, "--codec", "blk.*=iq2_xxs", "--no-fsync"};
  if (!imatrix.empty()) args.insert(args.end(), {"--imatrix", imatrix});
  auto r = RunCli(args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return ReadFileBytes(out);
}

TEST(HfImatrix, GgufAndHfNamesGiveTheSameBytes) {
  for (bool experts : {false, true}) {
    SCOPED_TRACE(experts ? "mixtral" : "llama");
    const std::string dir = WriteFolder(experts);
    std::vector<std::pair<std::string, std::vector<float>>> hf, gguf;
    for (const Entry& e : Entries(experts)) {
      hf.push_back({e.hf, e.weights});
      gguf.push_back({e.gguf, e.weights});
    }
    if (experts) AddExperts(&hf, &gguf);
    WriteLegacyImatrix(dir + "/hf.dat", hf);
    WriteLegacyImatrix(dir + "/gguf.dat", gguf);
    const std::vector<uint8_t> by_gguf = ConvertWith(dir, dir + "/gguf.dat");
    const std::vector<uint8_t> by_hf = ConvertWith(dir, dir + "/hf.dat");
    ASSERT_FALSE(by_gguf.empty());
    EXPECT_TRUE(by_gguf == by_hf);
    // Through a .bolt (its encode path) the HF-named imatrix gives the same
    // GGUF again.
    const std::string bolt = MakeTempDir() + "/m.bolt", back = MakeTempDir() + "/back.gguf";
    auto b = RunCli({"convert", dir, "-o", bolt, "--codec", "blk.*=iq2_xxs", "--imatrix", dir + "/hf.dat"});
    ASSERT_EQ(b.exit_code, 0) << b.output;
    auto g = RunCli({"convert", bolt, "-o", back});
    ASSERT_EQ(g.exit_code, 0) << g.output;
    EXPECT_TRUE(ReadFileBytes(back) == by_gguf);
    // The weights change the encode: an imatrix that were ignored would
    // give the unweighted file.
    EXPECT_FALSE(by_gguf == ConvertWith(dir, ""));
    if (experts) {
      // Experts joined in the other order are other weights: other bytes.
      std::swap(hf[hf.size() - 1].second, hf[hf.size() - 2].second);
      WriteLegacyImatrix(dir + "/swapped.dat", hf);
      EXPECT_FALSE(by_gguf == ConvertWith(dir, dir + "/swapped.dat"));
    }
  }
}

TEST(HfImatrix, AnImatrixNamingNeitherIsAnErrorNamingBoth) {
  const std::string dir = WriteFolder(false);
  std::vector<std::pair<std::string, std::vector<float>>> other;
  for (const Entry& e : Entries(false)) other.push_back({"layers.0." + e.gguf, e.weights});
  WriteLegacyImatrix(dir + "/other.dat", other);
  auto r = RunCli({"convert", dir, "-o", MakeTempDir() + "/m.gguf", "--codec", "blk.*=iq2_xxs", "--imatrix",
                   dir + "/other.dat"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("no entry for tensor \"blk.0.ffn_down.weight\" nor under its Hugging Face name "
                          "\"model.layers.0.mlp.down_proj.weight\", which codec \"iq2_xxs\""),
            std::string::npos)
      << r.output;
  // An HF-named entry of the wrong width is refused by that name (the
  // first tensor in the converter's order, sorted by HF name).
  std::vector<std::pair<std::string, std::vector<float>>> narrow = {
      {"model.layers.0.mlp.down_proj.weight", Weights(128, 0)}};
  WriteLegacyImatrix(dir + "/narrow.dat", narrow);
  r = RunCli({"convert", dir, "-o", MakeTempDir() + "/m.gguf", "--codec", "blk.*=iq2_xxs", "--imatrix",
              dir + "/narrow.dat"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("\"model.layers.0.mlp.down_proj.weight\" has 1 x 128 weights"), std::string::npos)
      << r.output;
}

// A GGUF input (here the folder's own conversion) has no table: the
// GGUF-named imatrix gives the folder's bytes again, the HF-named one is an
// error naming the GGUF name alone.
TEST(HfImatrix, AGgufInputTakesGgufNamesOnly) {
  const std::string dir = WriteFolder(false);
  std::vector<std::pair<std::string, std::vector<float>>> hf, gguf;
  for (const Entry& e : Entries(false)) {
    hf.push_back({e.hf, e.weights});
    gguf.push_back({e.gguf, e.weights});
  }
  WriteLegacyImatrix(dir + "/hf.dat", hf);
  WriteLegacyImatrix(dir + "/gguf.dat", gguf);
  const std::string f32 = MakeTempDir() + "/f32.gguf";
  ASSERT_EQ(RunCli({"convert", dir, "-o", f32}).exit_code, 0);
  const std::string out = MakeTempDir() + "/m.gguf";
  auto r = RunCli({"convert", f32, "-o", out, "--codec", "blk.*=iq2_xxs", "--imatrix", dir + "/gguf.dat"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(ReadFileBytes(out) == ConvertWith(dir, dir + "/hf.dat"));
  r = RunCli({"convert", f32, "-o", MakeTempDir() + "/m.gguf", "--codec", "blk.*=iq2_xxs", "--imatrix", dir + "/hf.dat"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("no entry for tensor \"blk.0.ffn_down.weight\", which codec \"iq2_xxs\""),
            std::string::npos)
      << r.output;
}

TEST(HfImatrix, AnExpertMissingFromAPerExpertSetIsNamed) {
  const std::string dir = WriteFolder(true);
  std::vector<std::pair<std::string, std::vector<float>>> hf, gguf;
  for (const Entry& e : Entries(true)) hf.push_back({e.hf, e.weights});
  AddExperts(&hf, &gguf);
  hf.erase(hf.begin() + static_cast<long>(hf.size()) - 1);  // expert 1's w3
  WriteLegacyImatrix(dir + "/partial.dat", hf);
  auto r = RunCli({"convert", dir, "-o", MakeTempDir() + "/m.gguf", "--codec", "blk.*=iq2_xxs", "--imatrix",
                   dir + "/partial.dat"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("entries for some experts of \"blk.0.ffn_up_exps.weight\" but not "
                          "\"model.layers.0.block_sparse_moe.experts.1.w3.weight\""),
            std::string::npos)
      << r.output;
}

TEST(HfImatrix, GgufNamesMapBackToHfNames) {
  auto config = io::ParseJson(R"({"architectures": ["MixtralForCausalLM"]})");
  ASSERT_TRUE(config.ok());
  auto arch = io::FindHfArch(*config, "config.json");
  ASSERT_TRUE(arch.ok()) << arch.status();
  EXPECT_EQ(io::HfNameOfGguf(**arch, "blk.12.attn_k.weight"), "model.layers.12.self_attn.k_proj.weight");
  EXPECT_EQ(io::HfNameOfGguf(**arch, "blk.3.ffn_down_exps.weight", 5),
            "model.layers.3.block_sparse_moe.experts.5.w2.weight");
  EXPECT_EQ(io::HfNameOfGguf(**arch, "blk.3.ffn_down_exps.weight"), std::nullopt);  // a stack has no one name
  EXPECT_EQ(io::HfNameOfGguf(**arch, "token_embd.weight"), "model.embed_tokens.weight");
  EXPECT_EQ(io::HfNameOfGguf(**arch, "rope_freqs.weight"), std::nullopt);
  EXPECT_EQ(io::HfNameOfGguf(**arch, "xblk.3.attn_k.weight"), std::nullopt);
}

}  // namespace
}  // namespace boltpack
