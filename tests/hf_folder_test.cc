// A Hugging Face checkpoint folder as a convert input (tools/hf_input.cc):
// TinyStories-656K converted from its folder is llama.cpp's own GGUF of it,
// tensor bytes and keys alike; names, the Q/K reordering, the tokenizer
// routes and the errors each in a test of their own.
#include <cstring>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "io/gguf.h"
#include "io/hf_arch.h"
#include "io/hf_tokenizer.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::RunCli;
using testing::SourceDir;

std::string TinyFolder() { return SourceDir() + "/testdata/tinystories-656k"; }
std::string Reference() { return TinyFolder() + "/TinyStories-656K.f16.gguf"; }

// Keys that say who converted the reference and where it came from, not
// what the model is.
bool Provenance(std::string_view key) {
  return key == "general.name" || key == "general.url" || key == "general.source.url" ||
         key.rfind("mradermacher.", 0) == 0;
}

const MetaValue* Find(const Metadata& m, std::string_view key) {
  for (const auto& [k, v] : m) {
    if (k == key) return &v;
  }
  return nullptr;
}

// `got` has the reference's tensors (names, order, types, ne, bytes) and
// its keys and values, provenance aside.
void ExpectLikeReference(const std::string& got_path, const std::string& ref_path = Reference()) {
  auto ref = io::GgufModel::Open(ref_path);
  auto got = io::GgufModel::Open(got_path);
  ASSERT_TRUE(ref.ok()) << ref.status();
  ASSERT_TRUE(got.ok()) << got.status();
  const auto& rt = (*ref)->tensors();
  const auto& gt = (*got)->tensors();
  ASSERT_EQ(gt.size(), rt.size());
  for (size_t i = 0; i < rt.size(); ++i) {
    SCOPED_TRACE(std::string(rt[i].name));
    EXPECT_EQ(gt[i].name, rt[i].name);
    EXPECT_EQ(gt[i].Shape(), rt[i].Shape());
    EXPECT_EQ(gt[i].type->id, rt[i].type->id);
    auto a = (*ref)->TensorBytes(i), b = (*got)->TensorBytes(i);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0) << "tensor bytes differ";
  }
  for (const auto& [k, v] : (*ref)->metadata()) {
    if (Provenance(k)) continue;
    const MetaValue* mine = Find((*got)->metadata(), k);
    ASSERT_NE(mine, nullptr) << "missing key " << k;
    EXPECT_TRUE(*mine == v) << "key " << k << " differs";
  }
  for (const auto& [k, v] : (*got)->metadata()) {
    if (!Provenance(k)) {
      EXPECT_NE(Find((*ref)->metadata(), k), nullptr) << "extra key " << k;
    }
  }
}

TEST(HfFolder, TinyStoriesToGgufIsLlamaCppsConversion) {
  const std::string out = MakeTempDir() + "/t.gguf";
  auto r = RunCli({"convert", TinyFolder(), "-o", out, "--codec", "*=f16"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectLikeReference(out);
}

TEST(HfFolder, TinyStoriesThroughBoltToGguf) {
  // The .bolt keeps GGUF names and keys, so its export is the same file.
  const std::string dir = MakeTempDir();
  auto r1 = RunCli({"convert", TinyFolder(), "-o", dir + "/t.bolt", "--codec", "*=f16"});
  ASSERT_EQ(r1.exit_code, 0) << r1.output;
  auto r2 = RunCli({"convert", dir + "/t.bolt", "-o", dir + "/t.gguf"});
  ASSERT_EQ(r2.exit_code, 0) << r2.output;
  ExpectLikeReference(dir + "/t.gguf");
}

TEST(HfFolder, ElasticSliceFromTheFolderIsTheReferencesSlice) {
  // The publisher's path: the elastic manifest (GGUF names) binds to the
  // folder's tensors as to llama.cpp's GGUF, and a budget sliced from
  // either .bolt is the same GGUF.
  const std::string dir = MakeTempDir();
  const std::string elastic = SourceDir() + "/recipes/tinystories-656k-elastic.json";
  auto a = RunCli({"convert", TinyFolder(), "-o", dir + "/a.bolt", "--codec", "*=f16", "--elastic", elastic});
  ASSERT_EQ(a.exit_code, 0) << a.output;
  auto b = RunCli({"convert", Reference(), "-o", dir + "/b.bolt", "--elastic", elastic});
  ASSERT_EQ(b.exit_code, 0) << b.output;
  for (const char* budget : {"ffn50", "heads50"}) {
    SCOPED_TRACE(budget);
    const std::string sa = dir + "/a_" + budget + ".gguf", sb = dir + "/b_" + budget + ".gguf";
    ASSERT_EQ(RunCli({"slice", dir + "/a.bolt", "--budget", budget, "-o", sa}).exit_code, 0);
    ASSERT_EQ(RunCli({"slice", dir + "/b.bolt", "--budget", budget, "-o", sb}).exit_code, 0);
    ExpectLikeReference(sa, sb);
  }
}

// Q's rows as llama.cpp wants them, in f32: the checkpoint's, reordered.
std::vector<uint8_t> ReorderedQ(int layer) {
  auto src = io::SafetensorsModel::Open(TinyFolder() + "/model.safetensors");
  EXPECT_TRUE(src.ok());
  const std::string name = "model.layers." + std::to_string(layer) + ".self_attn.q_proj.weight";
  for (size_t i = 0; i < (*src)->tensors().size(); ++i) {
    if ((*src)->tensors()[i].name == name) return *io::PermuteRotaryRows((*src)->TensorBytes(i), 128, 512, 8);
  }
  return {};
}

std::vector<uint8_t> SafetensorsBytes(const std::string& path, const std::string& name) {
  auto m = io::SafetensorsModel::Open(path);
  EXPECT_TRUE(m.ok()) << m.status();
  for (size_t i = 0; i < (*m)->tensors().size(); ++i) {
    if ((*m)->tensors()[i].name == name) return {(*m)->TensorBytes(i).begin(), (*m)->TensorBytes(i).end()};
  }
  ADD_FAILURE() << "no " << name << " in " << path;
  return {};
}

TEST(HfFolder, TinyStoriesToSafetensorsHasGgufNamesAndRows) {
  // Without rules, directly and through .bolt: every output path reorders Q.
  const std::string dir = MakeTempDir();
  auto r = RunCli({"convert", TinyFolder(), "-o", dir + "/t.safetensors"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto inspect = RunCli({"inspect", dir + "/t.safetensors"});
  EXPECT_NE(inspect.output.find("blk.1.attn_q.weight"), std::string::npos) << inspect.output;
  EXPECT_EQ(inspect.output.find("self_attn"), std::string::npos) << inspect.output;
  EXPECT_EQ(SafetensorsBytes(dir + "/t.safetensors", "blk.1.attn_q.weight"), ReorderedQ(1));
  ASSERT_EQ(RunCli({"convert", TinyFolder(), "-o", dir + "/t.bolt"}).exit_code, 0);
  ASSERT_EQ(RunCli({"convert", dir + "/t.bolt", "-o", dir + "/b.safetensors"}).exit_code, 0);
  EXPECT_EQ(SafetensorsBytes(dir + "/b.safetensors", "blk.0.attn_q.weight"), ReorderedQ(0));
}

TEST(HfFolder, ConfigJsonNextToWeightsSaysWhatToPass) {
  auto r = RunCli({"convert", TinyFolder() + "/model.safetensors", TinyFolder() + "/config.json", "-o",
                   MakeTempDir() + "/x.gguf"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("config.json: is a model config"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("checkpoint folder"), std::string::npos) << r.output;
  auto t = RunCli({"convert", TinyFolder() + "/tokenizer.json", "-o", MakeTempDir() + "/x.gguf"});
  EXPECT_NE(t.output.find("is a tokenizer (tokenizer.json)"), std::string::npos) << t.output;
}

TEST(HfFolder, FolderIsConvertedAlone) {
  auto r = RunCli({"convert", TinyFolder(), TinyFolder() + "/model.safetensors", "-o", MakeTempDir() + "/x.gguf"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("converted on its own"), std::string::npos) << r.output;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A folder with TinyStories' weights under another config.json.
std::string FolderWithConfig(const std::string& config) {
  const std::string dir = MakeTempDir() + "/m";
  std::filesystem::create_directory(dir);
  std::filesystem::copy_file(TinyFolder() + "/model.safetensors", dir + "/model.safetensors");
  WriteText(dir + "/config.json", config);
  return dir;
}

TEST(HfFolder, UnknownArchitectureIsNamed) {
  const std::string dir = FolderWithConfig(R"({"architectures": ["FooForCausalLM"], "num_attention_heads": 8})");
  auto r = RunCli({"convert", dir, "-o", MakeTempDir() + "/x.gguf"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("architecture \"FooForCausalLM\" has no GGUF mapping"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("LlamaForCausalLM"), std::string::npos) << r.output;  // the known ones
}

TEST(HfFolder, NoWeightsOrConfigAreNamed) {
  const std::string empty = MakeTempDir() + "/e";
  std::filesystem::create_directory(empty);
  auto r = RunCli({"convert", empty, "-o", MakeTempDir() + "/x.gguf"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("config.json: not found"), std::string::npos) << r.output;
  WriteText(empty + "/config.json", R"({"architectures": ["LlamaForCausalLM"]})");
  r = RunCli({"convert", empty, "-o", MakeTempDir() + "/x.gguf"});
  EXPECT_NE(r.output.find("neither model.safetensors nor model.safetensors.index.json"), std::string::npos)
      << r.output;
}

TEST(HfFolder, HeadsThatDoNotSplitTheRowsAreAnError) {
  // 128 query rows in 3 heads: not the model the weights are.
  const std::string dir = FolderWithConfig(
      R"({"architectures": ["LlamaForCausalLM"], "num_attention_heads": 3, "num_key_value_heads": 4})");
  auto r = RunCli({"convert", dir, "-o", MakeTempDir() + "/x.gguf"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("self_attn.q_proj.weight\": 128 rows do not split into 3 heads"), std::string::npos)
      << r.output;
}

TEST(HfArch, LlamaNames) {
  auto arch = io::FindHfArch(*io::ParseJson(R"({"architectures": ["LlamaForCausalLM"]})"), "config.json");
  ASSERT_TRUE(arch.ok()) << arch.status();
  EXPECT_EQ((*arch)->gguf, "llama");
  const std::pair<const char*, const char*> cases[] = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight"},
      {"model.layers.17.self_attn.k_proj.weight", "blk.17.attn_k.weight"},
      {"model.layers.3.self_attn.v_proj.weight", "blk.3.attn_v.weight"},
      {"model.layers.3.self_attn.o_proj.weight", "blk.3.attn_output.weight"},
      {"model.layers.3.mlp.gate_proj.weight", "blk.3.ffn_gate.weight"},
      {"model.layers.3.mlp.up_proj.weight", "blk.3.ffn_up.weight"},
      {"model.layers.3.mlp.down_proj.weight", "blk.3.ffn_down.weight"},
      {"model.layers.3.input_layernorm.weight", "blk.3.attn_norm.weight"},
      {"model.layers.3.post_attention_layernorm.weight", "blk.3.ffn_norm.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
  };
  for (const auto& [hf, gguf] : cases) {
    auto m = io::MapHfTensorName(**arch, hf);
    ASSERT_TRUE(m.has_value()) << hf;
    EXPECT_EQ(m->name, gguf);
  }
  EXPECT_EQ(io::MapHfTensorName(**arch, "model.layers.0.self_attn.q_proj.weight")->rule->permute,
            io::HfPermute::kQueryHeads);
  EXPECT_EQ(io::MapHfTensorName(**arch, "model.layers.0.self_attn.k_proj.bias")->rule->permute,
            io::HfPermute::kKeyHeads);
  EXPECT_EQ(io::MapHfTensorName(**arch, "model.layers.0.self_attn.rotary_emb.inv_freq")->name, "");  // skipped
  EXPECT_FALSE(io::MapHfTensorName(**arch, "model.layers.0.mlp.experts.0.w1.weight").has_value());
  EXPECT_FALSE(io::MapHfTensorName(**arch, "model.layers.x.mlp.up_proj.weight").has_value());
}

TEST(HfArch, QwenNamesAreNotPermuted) {
  auto q3 = io::FindHfArch(*io::ParseJson(R"({"architectures": ["Qwen3ForCausalLM"]})"), "config.json");
  ASSERT_TRUE(q3.ok()) << q3.status();
  EXPECT_EQ((*q3)->gguf, "qwen3");
  auto q = io::MapHfTensorName(**q3, "model.layers.2.self_attn.q_proj.weight");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->rule->permute, io::HfPermute::kNone);
  EXPECT_EQ(io::MapHfTensorName(**q3, "model.layers.2.self_attn.k_norm.weight")->name, "blk.2.attn_k_norm.weight");
  auto q2 = io::FindHfArch(*io::ParseJson(R"({"architectures": ["Qwen2ForCausalLM"]})"), "config.json");
  ASSERT_TRUE(q2.ok());
  EXPECT_EQ(io::MapHfTensorName(**q2, "model.layers.0.self_attn.v_proj.bias")->name, "blk.0.attn_v.bias");
  EXPECT_FALSE(io::MapHfTensorName(**q2, "model.layers.0.self_attn.q_norm.weight").has_value());
  auto mistral = io::FindHfArch(*io::ParseJson(R"({"architectures": ["MistralForCausalLM"]})"), "c");
  ASSERT_TRUE(mistral.ok());
  EXPECT_EQ((*mistral)->gguf, "llama");
}

TEST(HfArch, PermuteSwapsTheRotaryHalves) {
  // One head of 6 rows: [2, 3] halves (rows 0 1 2 | 3 4 5) interleave to
  // 0 3 1 4 2 5, each row (2 bytes) moving whole.
  std::vector<uint8_t> in = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5};
  auto out = io::PermuteRotaryRows(in, 6, 2, 1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, (std::vector<uint8_t>{0, 0, 3, 3, 1, 1, 4, 4, 2, 2, 5, 5}));
  // Two heads of 4: each head on its own.
  std::vector<uint8_t> two = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(*io::PermuteRotaryRows(two, 8, 1, 2), (std::vector<uint8_t>{0, 2, 1, 3, 4, 6, 5, 7}));
  EXPECT_FALSE(io::PermuteRotaryRows(two, 8, 1, 3).ok());
  EXPECT_FALSE(io::PermuteRotaryRows(two, 8, 2, 2).ok());  // bytes are not 8 rows of 2
  EXPECT_FALSE(io::PermuteRotaryRows(two, 8, 1, uint64_t{1} << 63).ok());  // 2 * heads would wrap to 0
}

TEST(HfArch, HyperparametersFromConfig) {
  auto config = io::ParseJson(R"({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2,
      "hidden_size": 64, "num_attention_heads": 4, "rope_theta": 500000.0, "head_dim": 32,
      "rope_scaling": {"rope_type": "linear", "factor": 4.0}})");
  ASSERT_TRUE(config.ok());
  auto arch = io::FindHfArch(*config, "c");
  auto kv = io::HfHyperparameters(**arch, *config, "c");
  ASSERT_TRUE(kv.ok()) << kv.status();
  EXPECT_EQ(Find(*kv, "general.architecture")->s, "llama");
  EXPECT_EQ(Find(*kv, "llama.block_count")->u, 2u);
  EXPECT_EQ(Find(*kv, "llama.rope.freq_base")->f32, 500000.0f);
  EXPECT_EQ(Find(*kv, "llama.rope.dimension_count")->u, 32u);  // head_dim, not 64 / 4
  EXPECT_EQ(Find(*kv, "llama.attention.key_length")->u, 32u);
  EXPECT_EQ(Find(*kv, "llama.rope.scaling.type")->s, "linear");
  EXPECT_EQ(Find(*kv, "llama.attention.head_count_kv"), nullptr);  // absent in config: left out
  auto bad = io::ParseJson(R"({"num_hidden_layers": -1})");
  EXPECT_FALSE(io::HfHyperparameters(**arch, *bad, "c").ok());
  auto dynamic = io::ParseJson(R"({"rope_scaling": {"rope_type": "dynamic", "factor": 8.0}})");
  auto refused = io::HfHyperparameters(**arch, *dynamic, "c");
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("\"dynamic\""), std::string::npos);
  // llama3 is a tensor (Llama3RopeFactors), not keys.
  auto llama3 = io::ParseJson(R"({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}})");
  auto kv3 = io::HfHyperparameters(**arch, *llama3, "c");
  ASSERT_TRUE(kv3.ok()) << kv3.status();
  EXPECT_EQ(Find(*kv3, "llama.rope.scaling.type"), nullptr);
}

TEST(HfArch, Llama3RopeFactorsAsTheConverterComputesThem) {
  // Llama 3.1 8B's rope_scaling: 64 pairs; the fastest rotate unscaled, the
  // slowest by `factor`, the middle band smoothly between.
  auto config = io::ParseJson(R"({"hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 500000.0,
      "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 8192}})");
  auto f = io::Llama3RopeFactors(*config, "c");
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->size(), 64u);
  EXPECT_EQ((*f)[0], 1.0f);
  EXPECT_EQ((*f)[63], 8.0f);
  int middle = 0;
  for (float x : *f) {
    EXPECT_GE(x, 1.0f);
    EXPECT_LE(x, 8.0f);
    middle += x > 1.0f && x < 8.0f;
  }
  EXPECT_GT(middle, 0);
  for (size_t i = 1; i < f->size(); ++i) EXPECT_GE((*f)[i], (*f)[i - 1]);  // slower pairs scale more
  EXPECT_TRUE(io::Llama3RopeFactors(*io::ParseJson("{}"), "c")->empty());
  auto bad = io::ParseJson(R"({"head_dim": 8, "rope_scaling": {"rope_type": "llama3", "low_freq_factor": 4.0,
      "high_freq_factor": 1.0}})");
  EXPECT_FALSE(io::Llama3RopeFactors(*bad, "c").ok());
}

// A byte-level (GPT-2 style) tokenizer.json of six tokens and a hole.
constexpr char kByteLevelTokenizer[] = R"({
  "added_tokens": [{"id": 4, "content": "<|endoftext|>", "special": true},
                   {"id": 2, "content": "ab", "special": false}, {"id": 6, "content": "<|im_start|>"}],
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
  "model": {"type": "BPE", "byte_fallback": false, "vocab": {"a": 0, "b": 1, "ab": 2, "Ġa": 3},
            "merges": ["a b", ["Ġ", "a"]]}})";

TEST(HfTokenizer, ByteLevelBpeIsGpt2WithMerges) {
  const std::string dir = MakeTempDir();
  WriteText(dir + "/tokenizer.json", kByteLevelTokenizer);
  WriteText(dir + "/tokenizer_config.json", R"({"eos_token": "<|endoftext|>", "chat_template": "{{ x }}"})");
  auto config = io::ParseJson(R"({"vocab_size": 8})");
  std::vector<std::string> files;
  auto kv = io::HfTokenizerMetadata(dir, *config, &files);
  ASSERT_TRUE(kv.ok()) << kv.status();
  EXPECT_EQ(files.size(), 2u);
  EXPECT_EQ(Find(*kv, "tokenizer.ggml.model")->s, "gpt2");
  EXPECT_EQ(Find(*kv, "tokenizer.ggml.pre")->s, "gpt-2");
  const MetaValue* tokens = Find(*kv, "tokenizer.ggml.tokens");
  ASSERT_EQ(tokens->array_size(), 8u);  // padded to the embedding's rows
  EXPECT_EQ(tokens->string_element(3), "Ġa");
  EXPECT_EQ(tokens->string_element(5), "[PAD5]");
  EXPECT_EQ(tokens->string_element(6), "<|im_start|>");
  const MetaValue* types = Find(*kv, "tokenizer.ggml.token_type");
  EXPECT_EQ(types->int_element(0), 1);  // normal
  EXPECT_EQ(types->int_element(2), 4);  // an added token of the vocab: user-defined
  EXPECT_EQ(types->int_element(4), 3);  // special: control
  EXPECT_EQ(types->int_element(5), 5);  // a hole: unused
  EXPECT_EQ(types->int_element(6), 3);  // looks special: control
  EXPECT_EQ(types->int_element(7), 5);
  EXPECT_EQ(Find(*kv, "tokenizer.ggml.scores"), nullptr);
  const MetaValue* merges = Find(*kv, "tokenizer.ggml.merges");
  ASSERT_EQ(merges->array_size(), 2u);
  EXPECT_EQ(merges->string_element(1), "Ġ a");
  EXPECT_EQ(Find(*kv, "tokenizer.ggml.eos_token_id")->u, 4u);
  EXPECT_EQ(Find(*kv, "tokenizer.chat_template")->s, "{{ x }}");
}

TEST(HfTokenizer, ChatTemplateJinjaFileWhenTheConfigHasNone) {
  const std::string dir = MakeTempDir();
  WriteText(dir + "/tokenizer.json", kByteLevelTokenizer);
  WriteText(dir + "/chat_template.jinja", "{% for m in messages %}{{ m.content }}{% endfor %}");
  auto config = io::ParseJson("{}");
  std::vector<std::string> files;
  auto kv = io::HfTokenizerMetadata(dir, *config, &files);
  ASSERT_TRUE(kv.ok()) << kv.status();
  EXPECT_EQ(Find(*kv, "tokenizer.chat_template")->s, "{% for m in messages %}{{ m.content }}{% endfor %}");
  EXPECT_EQ(files.back(), dir + "/chat_template.jinja");  // so the output cannot overwrite it
}

TEST(HfTokenizer, UnknownPreTokenizerAndHostileIdsAreRefused) {
  const std::string dir = MakeTempDir();
  WriteText(dir + "/tokenizer.json", R"({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\w+"}},
      "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})");
  auto config = io::ParseJson("{}");
  std::vector<std::string> files;
  auto kv = io::HfTokenizerMetadata(dir, *config, &files);
  EXPECT_FALSE(kv.ok());
  EXPECT_NE(kv.status().message().find("\\w+"), std::string::npos) << kv.status();
  // An id of 2^40 would size the token list by it: refused first.
  WriteText(dir + "/tokenizer.json", R"({"model": {"type": "BPE", "byte_fallback": true,
      "vocab": {"a": 1099511627776}}})");
  kv = io::HfTokenizerMetadata(dir, *config, &files);
  EXPECT_FALSE(kv.ok());
  EXPECT_NE(kv.status().message().find("vocab entry \"a\""), std::string::npos) << kv.status();
  WriteText(dir + "/tokenizer.json", R"({"model": {"type": "Unigram", "vocab": []}})");
  kv = io::HfTokenizerMetadata(dir, *config, &files);
  EXPECT_NE(kv.status().message().find("\"Unigram\" is not converted yet"), std::string::npos) << kv.status();
}

TEST(HfTokenizer, NoTokenizerJsonGivesNoKeys) {
  auto config = io::ParseJson("{}");
  std::vector<std::string> files;
  const std::string dir = MakeTempDir();
  auto kv = io::HfTokenizerMetadata(dir, *config, &files);
  ASSERT_TRUE(kv.ok());
  EXPECT_TRUE(kv->empty());
  WriteText(dir + "/tokenizer.model", "sentencepiece");
  kv = io::HfTokenizerMetadata(dir, *config, &files);
  EXPECT_FALSE(kv.ok());
  EXPECT_NE(kv.status().message().find("only tokenizer.model"), std::string::npos) << kv.status();
}

}  // namespace
}  // namespace boltpack
