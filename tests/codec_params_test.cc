// Codec parameters as users give them (`--codec PATTERN=CODEC:key=value`, a
// recipe's params): typed by what each codec declares (ParamSpecs), the types
// its encoder takes, and rejected with a message naming the flag or rule,
// the codec and the key. Also: the 1-D trait drives the codec plan.
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/writer.h"
#include "codecs/codec_params.h"
#include "common/str_cat.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"
#include "tools/codec_rules.h"
#include "tools/recipe.h"

namespace boltpack {
namespace {

using tools::ParseCodecRule;

// Rows of `cols` values, F32, not all equal (so every codec has work to do).
std::vector<float> Ramp(uint64_t n) {
  std::vector<float> x(n);
  for (uint64_t i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<int>(i % 23) - 11) * 0.125f;
  return x;
}

absl::StatusOr<EncodedTensor> EncodeWith(const tools::CodecRule& rule, DType dtype, const std::vector<uint64_t>& shape,
                                         const std::vector<uint8_t>& bytes) {
  return EncodeTensor(rule.codec_id, TensorSource{"w", dtype, shape, bytes}, rule.params, ExecOptions{});
}

std::vector<uint8_t> F32Bytes(const std::vector<float>& x) {
  std::vector<uint8_t> b(x.size() * 4);
  std::memcpy(b.data(), x.data(), b.size());
  return b;
}

std::vector<uint8_t> Bf16Bytes(const std::vector<float>& x) {
  std::vector<uint8_t> b(x.size() * 2);
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &x[i], 4);
    const uint16_t h = static_cast<uint16_t>(u >> 16);  // exact: the ramp's values are short
    std::memcpy(b.data() + 2 * i, &h, 2);
  }
  return b;
}

const MetaValue* Find(const CodecParams& p, std::string_view key) {
  for (const auto& [k, v] : p) {
    if (k == key) return &v;
  }
  return nullptr;
}

TEST(CodecParams, Nvfp4TensorScaleIsANumberTheEncoderTakes) {
  auto rule = ParseCodecRule("*=nvfp4:tensor_scale=0.01");
  ASSERT_TRUE(rule.ok()) << rule.status();
  ASSERT_EQ(rule->params.size(), 1u);
  EXPECT_EQ(rule->params[0].second.type, ValueType::kFloat64);
  // An integer's text is a number too.
  auto whole = ParseCodecRule("*=nvfp4:tensor_scale=2");
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->params[0].second.type, ValueType::kFloat64);
  EXPECT_EQ(whole->params[0].second.f64, 2.0);
  auto enc = EncodeWith(*rule, DType::kF32, {2, 32}, F32Bytes(Ramp(64)));
  ASSERT_TRUE(enc.ok()) << enc.status();
  const MetaValue* stored = Find(enc->params, "tensor_scale");
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(stored->type, ValueType::kFloat32);
  EXPECT_EQ(stored->f32, 0.01f);
}

TEST(CodecParams, Bf16SpecKeepAndMbitsAreWhatTheEncoderStores) {
  auto rule = ParseCodecRule("*=bf16-spec:keep=0.25,mbits=2");
  ASSERT_TRUE(rule.ok()) << rule.status();
  ASSERT_EQ(rule->params.size(), 2u);
  EXPECT_EQ(rule->params[0].second.type, ValueType::kFloat64);
  EXPECT_EQ(rule->params[1].second.type, ValueType::kInt64);
  auto enc = EncodeWith(*rule, DType::kBF16, {4, 64}, Bf16Bytes(Ramp(256)));
  ASSERT_TRUE(enc.ok()) << enc.status();
  ASSERT_NE(Find(enc->params, "keep"), nullptr);
  EXPECT_EQ(Find(enc->params, "keep")->f64, 0.25);
  ASSERT_NE(Find(enc->params, "mbits"), nullptr);
  EXPECT_EQ(Find(enc->params, "mbits")->u, 2u);
  EXPECT_EQ(Find(enc->params, "kept_per_row")->u, 16u);
}

// The defaults a listing shows are what the encoder uses without them.
TEST(CodecParams, Bf16SpecDefaultsShownAreTheOnesItStores) {
  const Codec* codec = FindCodec("bf16-spec");
  ASSERT_NE(codec, nullptr);
  std::vector<ParamText> defaults;
  for (const CodecParamSpec& s : codec->ParamSpecs()) {
    if (s.settable) defaults.push_back({std::string(s.name), std::string(s.default_text)});
  }
  ASSERT_EQ(defaults.size(), 2u);
  auto typed = ParseCodecParams(*codec, defaults, "defaults");
  ASSERT_TRUE(typed.ok()) << typed.status();
  const std::vector<uint8_t> bytes = Bf16Bytes(Ramp(256));
  const std::vector<uint64_t> shape{4, 64};
  auto plain = EncodeTensor("bf16-spec", TensorSource{"w", DType::kBF16, shape, bytes}, {}, ExecOptions{});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(Find(plain->params, "keep")->f64, Find(*typed, "keep")->f64);
  EXPECT_EQ(static_cast<int64_t>(Find(plain->params, "mbits")->u), Find(*typed, "mbits")->i);
}

TEST(CodecParams, FromF32IsABoolEachBf16CodecTakes) {
  for (const char* id : {"bf16-huffman", "bf16-unary", "bf16-mx"}) {
    auto rule = ParseCodecRule(StrCat("*=", id, ":from_f32=true"));
    ASSERT_TRUE(rule.ok()) << id << ": " << rule.status();
    ASSERT_EQ(rule->params.size(), 1u);
    EXPECT_EQ(rule->params[0].second.type, ValueType::kBool);
    auto enc = EncodeWith(*rule, DType::kF32, {2, 64}, F32Bytes(Ramp(128)));
    ASSERT_TRUE(enc.ok()) << id << ": " << enc.status();
    ASSERT_NE(Find(enc->params, "from_f32"), nullptr) << id;
    EXPECT_TRUE(Find(enc->params, "from_f32")->b) << id;
    // Without it an F32 tensor is refused (the rounding is lossy).
    auto plain = ParseCodecRule(StrCat("*=", id));
    ASSERT_TRUE(plain.ok());
    EXPECT_FALSE(EncodeWith(*plain, DType::kF32, {2, 64}, F32Bytes(Ramp(128))).ok()) << id;
  }
}

// Every registered codec: its specs have distinct names, its settable ones
// a kind a user can write, and the listing names each of them.
TEST(CodecParams, EveryCodecDeclaresDistinctNamesAndTheListingShowsThem) {
  const std::string listing = tools::CodecListing();
  for (const std::string& id : RegisteredCodecIds()) {
    const Codec* codec = FindCodec(id);
    ASSERT_NE(codec, nullptr) << id;
    const auto specs = codec->ParamSpecs();
    for (size_t i = 0; i < specs.size(); ++i) {
      for (size_t j = 0; j < i; ++j) EXPECT_NE(specs[i].name, specs[j].name) << id;
      if (specs[i].settable) {
        EXPECT_NE(specs[i].kind, ParamKind::kText) << id << " " << specs[i].name;
      }
    }
    EXPECT_NE(listing.find(id), std::string::npos) << id;
    // No parameters at all is accepted by every codec's parser.
    auto none = ParseCodecParams(*codec, {}, "test");
    ASSERT_TRUE(none.ok()) << id << ": " << none.status();
    EXPECT_TRUE(none->empty());
  }
  EXPECT_NE(listing.find("keep=NUMBER  a number in (0, 1], default 0.5"), std::string::npos) << listing;
  EXPECT_NE(listing.find("mbits=INTEGER  an integer 0..7, default 3"), std::string::npos) << listing;
  EXPECT_NE(listing.find("tensor_scale=NUMBER  a number in (0, 3.4e+38], default amax / 2688"), std::string::npos)
      << listing;
  EXPECT_NE(listing.find("from_f32=BOOL  true or false, default false"), std::string::npos) << listing;
  EXPECT_NE(listing.find("scored_by=CHOICE  (stored) one of wanda, magnitude"), std::string::npos) << listing;
  EXPECT_NE(listing.find("ggml-q4_k"), std::string::npos) << listing;
}

// The codecs' own encode-time checks use the same specs on typed
// parameters (an API caller's): any numeric type for a number, any integer
// type for an integer, nothing stored-only, unknown or repeated.
TEST(CodecParams, CanEncodeChecksTypedParamsAgainstTheSameSpecs) {
  const Codec* spec = FindCodec("bf16-spec");
  const Codec* huffman = FindCodec("bf16-huffman");
  const Codec* nvfp4 = FindCodec("nvfp4");
  ASSERT_TRUE(spec != nullptr && huffman != nullptr && nvfp4 != nullptr);
  const std::vector<uint64_t> shape{4, 64};
  auto can = [&](const Codec* c, DType dtype, CodecParams p) { return c->CanEncode(dtype, shape, p); };
  EXPECT_TRUE(can(spec, DType::kBF16, {{"keep", MetaValue::Float32(0.5f)},
                                       {"mbits", MetaValue::Uint(ValueType::kUint32, 7)}}).ok());
  EXPECT_TRUE(can(nvfp4, DType::kF32, {{"tensor_scale", MetaValue::Int(ValueType::kInt32, 1)}}).ok());
  EXPECT_TRUE(can(huffman, DType::kF32, {{"from_f32", MetaValue::Bool(true)}}).ok());
  const std::vector<std::pair<absl::Status, std::string>> refused = {
      {can(spec, DType::kBF16, {{"keep", MetaValue::String("0.5")}}),
       "codec 'bf16-spec': parameter 'keep' must be a number in (0, 1], got string"},
      {can(spec, DType::kBF16, {{"mbits", MetaValue::Float64(3)}}), "parameter 'mbits' must be an integer 0..7"},
      {can(spec, DType::kBF16, {{"mbits", MetaValue::Uint(ValueType::kUint8, 8)}}), "must be an integer 0..7"},
      {can(spec, DType::kBF16, {{"keep", MetaValue::Float64(std::nan(""))}}), "must be a number in (0, 1]"},
      {can(spec, DType::kBF16, {{"kept_per_row", MetaValue::Uint(ValueType::kUint64, 3)}}),
       "stored parameter 'kept_per_row' (it takes: keep, mbits)"},
      {can(spec, DType::kBF16, {{"keep", MetaValue::Float64(0.5)}, {"keep", MetaValue::Float64(0.5)}}),
       "parameter 'keep' appears twice"},
      {can(huffman, DType::kF32, {{"from_f32", MetaValue::Int(ValueType::kInt64, 1)}}),
       "codec 'bf16-huffman': parameter 'from_f32' must be true or false"},
      {can(huffman, DType::kBF16, {{"exp_code_lengths", MetaValue::String("")}}), "stored parameter 'exp_code_lengths'"},
      {can(nvfp4, DType::kF32, {{"tensor_scale", MetaValue::Float64(-1)}}), "parameter 'tensor_scale' must be"},
      {can(nvfp4, DType::kF32, {{"scale", MetaValue::Float64(1)}}), "unknown parameter 'scale' (it takes: tensor_scale)"},
      // Within the spec's range, but 0 once rounded to FP32: still the codec's to refuse.
      {can(nvfp4, DType::kF32, {{"tensor_scale", MetaValue::Float64(1e-50)}}), "tensor_scale"},
  };
  for (const auto& [status, fragment] : refused) {
    ASSERT_FALSE(status.ok()) << fragment;
    EXPECT_NE(status.message().find(fragment), std::string::npos) << status;
  }
}

struct Rejected {
  std::string flag;
  std::vector<std::string> fragments;
};

TEST(CodecParams, RejectsUnknownStoredRepeatedWrongKindAndOutOfRange) {
  const std::vector<Rejected> cases = {
      {"*=bf16-spec:kep=0.5", {"--codec \"*=bf16-spec:kep=0.5\"", "codec \"bf16-spec\"", "unknown parameter \"kep\"",
                               "(it takes: keep, mbits)"}},
      {"*=q8_0:x=1", {"--codec \"*=q8_0:x=1\"", "codec \"q8_0\"", "\"x\"", "it takes no parameters"}},
      {"*=iq2_xxs:imatrix=1", {"codec \"iq2_xxs\"", "it takes no parameters"}},
      {"*=raw:x=1", {"codec \"raw\"", "it takes no parameters"}},
      {"*=nvfp4:scale=1", {"codec \"nvfp4\"", "unknown parameter \"scale\"", "(it takes: tensor_scale)"}},
      {"*=bf16-spec:kept_per_row=3", {"parameter \"kept_per_row\" is stored by the encoder", "it takes: keep, mbits"}},
      {"*=bf16-huffman:exp_code_lengths=00", {"codec \"bf16-huffman\"", "\"exp_code_lengths\" is stored by the encoder"}},
      {"*=bf16-mx:rel_rms_error=0", {"\"rel_rms_error\" is stored by the encoder", "(it takes: from_f32)"}},
      {"*=ggml-q4_k:ggml_type=12", {"codec \"ggml-q4_k\"", "is stored by the encoder", "it takes no parameters"}},
      {"*=bf16-spec:keep=0.5,keep=0.6", {"parameter \"keep\" is given twice"}},
      {"*=bf16-spec:mbits=two", {"parameter \"mbits\" must be an integer 0..7, got \"two\""}},
      {"*=bf16-spec:mbits=2.5", {"parameter \"mbits\" must be an integer 0..7, got \"2.5\""}},
      {"*=bf16-spec:keep=half", {"parameter \"keep\" must be a number in (0, 1], got \"half\""}},
      {"*=bf16-mx:from_f32=yes", {"parameter \"from_f32\" must be true or false, got \"yes\""}},
      {"*=bf16-spec:keep=1.5", {"parameter \"keep\" is out of range: must be a number in (0, 1], got \"1.5\""}},
      {"*=bf16-spec:keep=0", {"\"keep\" is out of range"}},
      {"*=bf16-spec:mbits=8", {"\"mbits\" is out of range: must be an integer 0..7, got \"8\""}},
      {"*=bf16-spec:mbits=-1", {"\"mbits\" is out of range"}},
      {"*=nvfp4:tensor_scale=-1", {"\"tensor_scale\" is out of range"}},
      {"*=nvfp4:tensor_scale=1e39", {"\"tensor_scale\" is out of range"}},
      {"*=nvfp4:tensor_scale=inf", {"\"tensor_scale\" must be a number"}},
      {"*=nvfp4:tensor_scale=", {"\"tensor_scale\" must be a number", "got \"\""}},
      {"*=keep:x=1", {"--codec \"*=keep:x=1\"", "\"keep\" takes no parameters"}},
  };
  for (const Rejected& c : cases) {
    auto rule = ParseCodecRule(c.flag);
    ASSERT_FALSE(rule.ok()) << c.flag;
    const std::string message(rule.status().message());
    for (const std::string& f : c.fragments) EXPECT_NE(message.find(f), std::string::npos) << c.flag << ": " << message;
  }
}

TEST(CodecParams, RecipeRulesAndFallbacksUseTheSameParser) {
  const std::string dir = testing::MakeTempDir();
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  auto good = tools::LoadRecipe(write("good.textproto", R"(
    rules { pattern: "*" use { codec: "bf16-spec" params { key: "keep" value: "0.25" } params { key: "mbits" value: "1" } }
            fallback { codec: "nvfp4" params { key: "tensor_scale" value: "0.5" } } }
  )"));
  ASSERT_TRUE(good.ok()) << good.status();
  ASSERT_EQ(good->size(), 1u);
  const tools::CodecRule& r = (*good)[0];
  ASSERT_EQ(r.params.size(), 2u);
  EXPECT_EQ(r.params[0].second.type, ValueType::kFloat64);
  EXPECT_EQ(r.params[1].second.type, ValueType::kInt64);
  ASSERT_EQ(r.fallback_params.size(), 1u);
  EXPECT_EQ(r.fallback_params[0].second.type, ValueType::kFloat64);

  auto unknown = tools::LoadRecipe(write("unknown.textproto", R"(
    rules { pattern: "*mlp*" use { codec: "q8_0" params { key: "bits" value: "8" } } }
  )"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown.textproto: rule 1 (\"*mlp*\"): codec \"q8_0\": unknown "
                                            "parameter \"bits\" (it takes no parameters)"),
            std::string::npos)
      << unknown.status();
  auto fallback = tools::LoadRecipe(write("fallback.textproto", R"(
    rules { pattern: "a" use { codec: "q8_0" } }
    rules { pattern: "b" use { codec: "q8_0" } fallback { codec: "bf16-spec" params { key: "mbits" value: "9" } } }
  )"));
  ASSERT_FALSE(fallback.ok());
  EXPECT_NE(fallback.status().message().find("rule 2 (\"b\") fallback: codec \"bf16-spec\": parameter \"mbits\" is out "
                                             "of range"),
            std::string::npos)
      << fallback.status();
  auto default_fallback = tools::LoadRecipe(write("default.textproto", R"(
    default_fallback { codec: "nvfp4" params { key: "tensor_scale" value: "1" } params { key: "tensor_scale" value: "2" } }
    rules { pattern: "a" use { codec: "q8_0" } }
  )"));
  ASSERT_FALSE(default_fallback.ok());
  EXPECT_NE(default_fallback.status().message().find("default_fallback: codec \"nvfp4\": parameter \"tensor_scale\" is "
                                                     "given twice"),
            std::string::npos)
      << default_fallback.status();
  auto keep = tools::LoadRecipe(write("keep.textproto", R"(
    rules { pattern: "a" use { codec: "keep" params { key: "x" value: "1" } } }
  )"));
  ASSERT_FALSE(keep.ok());
  EXPECT_NE(keep.status().message().find("\"keep\" takes no parameters"), std::string::npos) << keep.status();
}

TEST(CodecParams, ConvertHelpListsEachCodecsParameters) {
  auto help = testing::RunCli({"convert", "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.output;
  EXPECT_NE(help.output.find("bf16-spec: Cassandra"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("keep=NUMBER  a number in (0, 1], default 0.5: fraction of each row kept"),
            std::string::npos)
      << help.output;
  EXPECT_NE(help.output.find("q8_0: ggml Q8_0"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("Copied, not encoded"), std::string::npos) << help.output;
  // A bad parameter on the command line is a usage error naming the flag.
  auto bad = testing::RunCli({"convert", testing::SourceDir() + "/testdata/tinystories-656k/model.safetensors", "-o",
                              testing::MakeTempDir() + "/x.bolt", "--codec", "*=bf16-spec:keep=2"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--codec \"*=bf16-spec:keep=2\": codec \"bf16-spec\": parameter \"keep\" is out of range"),
            std::string::npos)
      << bad.output;
}

}  // namespace
}  // namespace boltpack
