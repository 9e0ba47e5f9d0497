// A codec added from outside the tree (here, from this test) and registered
// is handled by format/ and io/ from what it reports about itself (Layout,
// Ggml, traits), never by its id: the elastic cut of its stored streams
// copies whole cells, and the GGUF mapping and tool traits say what the
// codec declares. The toy codec stores int8 values with one f32 scale per
// 16 elements of a row, in two streams; it declares one parameter, "clip"
// (the fraction of each block's amax its scale reaches), which a --codec
// rule sets through the shared parser, and that it takes 1-D tensors.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "boltpack/writer.h"
#include "codecs/encoded_record.h"
#include "common/checked_math.h"
#include "common/str_cat.h"
#include "format/elastic_cut.h"
#include "format/elastic_manifest.h"
#include "gtest/gtest.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "tests/test_util.h"
#include "tools/codec_plan.h"
#include "tools/codec_rules.h"
#include "tools/commands.h"
#include "tools/inputs.h"

namespace boltpack {
namespace {

constexpr std::string_view kToyId = "toy-i8s16";
constexpr uint64_t kBlock = 16;

class ToyInt8Codec : public Codec {
 public:
  std::string_view id() const override { return kToyId; }
  std::string_view description() const override { return "int8 values, one f32 scale per 16 (a test plugin)"; }

  absl::Status CanEncode(DType dtype, absl::Span<const uint64_t> shape, const CodecParams& params) const override {
    if (dtype != DType::kF32) return absl::InvalidArgumentError("toy: F32 only");
    if (!Clip(params).ok()) return Clip(params).status();
    if (shape.empty() || shape.back() % kBlock != 0) return absl::InvalidArgumentError("toy: row not a multiple of 16");
    return CheckedProduct(shape).has_value() ? absl::OkStatus() : absl::OutOfRangeError("toy: too many elements");
  }
  absl::StatusOr<EncodedTensor> Encode(const TensorSource& source, const CodecParams& params,
                                       const ExecOptions&) const override {
    if (absl::Status s = CanEncode(source.dtype, source.shape, params); !s.ok()) return s;
    const uint64_t n = *CheckedProduct(source.shape);
    if (source.bytes.size() != n * 4) return absl::InvalidArgumentError("toy: source size");
    std::vector<float> x(n);
    std::memcpy(x.data(), source.bytes.data(), n * 4);
    EncodedStream values{"values", std::vector<uint8_t>(n)}, scales{"scales", std::vector<uint8_t>(n / kBlock * 4)};
    const float clip = static_cast<float>(*Clip(params));
    for (uint64_t b = 0; b < n / kBlock; ++b) {
      float amax = 0;
      for (uint64_t i = 0; i < kBlock; ++i) amax = std::fmax(amax, std::fabs(x[b * kBlock + i]));
      const float scale = amax * clip / 127.0f;
      std::memcpy(scales.bytes.data() + b * 4, &scale, 4);
      for (uint64_t i = 0; i < kBlock; ++i) {
        const float q = scale == 0 ? 0 : std::fmin(127.0f, std::fmax(-127.0f, std::round(x[b * kBlock + i] / scale)));
        values.bytes[b * kBlock + i] = static_cast<uint8_t>(static_cast<int8_t>(q));
      }
    }
    EncodedTensor out;
    out.params = params;  // stored as given: the record says how it was made
    out.streams.push_back(std::move(values));
    out.streams.push_back(std::move(scales));
    return out;
  }
  absl::Status ValidateRecord(const TensorInfo& info) const override {
    if (absl::Status s = CanEncode(info.dtype, info.shape, info.codec_params); !s.ok()) return s;
    const uint64_t n = *CheckedProduct(info.shape);
    if (info.streams.size() != 2 || info.streams[0].role != "values" || info.streams[1].role != "scales" ||
        info.streams[0].raw_length != n || info.streams[1].raw_length != n / kBlock * 4) {
      return absl::DataLossError(StrCat("toy: tensor '", info.name, "': streams do not match the shape"));
    }
    return absl::OkStatus();
  }
  bool CanDecodeTo(const TensorInfo&, OutputType out) const override { return out == OutputType::kF32; }
  absl::StatusOr<uint64_t> DecodedBytes(const TensorInfo& info, OutputType) const override {
    return *CheckedProduct(info.shape) * 4;
  }
  absl::Status Decode(const DecodeInput& input, OutputType, absl::Span<uint8_t> dst,
                      const ExecOptions&) const override {
    const uint64_t n = *CheckedProduct(input.info->shape);
    for (uint64_t e = 0; e < n; ++e) {
      float scale;
      std::memcpy(&scale, input.streams[1].data() + e / kBlock * 4, 4);
      const float y = static_cast<float>(static_cast<int8_t>(input.streams[0][e])) * scale;
      std::memcpy(dst.data() + e * 4, &y, 4);
    }
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> EncodedSize(DType dtype, absl::Span<const uint64_t> shape,
                                       const CodecParams& params) const override {
    if (absl::Status s = CanEncode(dtype, shape, params); !s.ok()) return s;
    return *CheckedProduct(shape) / kBlock * (kBlock + 4);
  }
  std::vector<int> SliceableAxes(absl::Span<const uint64_t> shape, const CodecParams&) const override {
    std::vector<int> axes;
    for (int a = 0; a + 1 < static_cast<int>(shape.size()); ++a) axes.push_back(a);
    return axes;
  }
  std::optional<StoredLayout> Layout(DType, const CodecParams&) const override {
    return StoredLayout{kBlock, {kBlock, 4}};
  }
  CodecTraits traits() const override {
    CodecTraits t;
    t.quantizer = true;
    t.takes_1d = true;  // unlike the built-in block quantizers
    return t;
  }
  std::vector<CodecParamSpec> ParamSpecs() const override {
    CodecParamSpec clip;
    clip.name = "clip";
    clip.kind = ParamKind::kNumber;
    clip.help = "fraction of each block's amax the scale reaches";
    clip.min = 0;
    clip.min_exclusive = true;
    clip.max = 1;
    clip.default_text = "1";
    return {clip};
  }

 private:
  // Its one parameter, as the shared parser types it (FLOAT64).
  static absl::StatusOr<double> Clip(const CodecParams& params) {
    if (params.empty()) return 1.0;
    if (params.size() != 1 || params[0].first != "clip" || params[0].second.type != ValueType::kFloat64 ||
        !(params[0].second.f64 > 0 && params[0].second.f64 <= 1)) {
      return absl::InvalidArgumentError("toy: takes one parameter, clip, FLOAT64 in (0, 1]");
    }
    return params[0].second.f64;
  }
};

const Codec& Toy() {
  static const Codec* toy = [] {
    if (FindCodec(kToyId) == nullptr) {
      EXPECT_TRUE(RegisterCodec(std::make_unique<ToyInt8Codec>()).ok());
    }
    return FindCodec(kToyId);
  }();
  return *toy;
}

std::vector<float> Decode(const TensorInfo& info, const std::vector<std::vector<uint8_t>>& streams) {
  const Codec* codec = FindCodec(info.codec_id);
  EXPECT_TRUE(codec->ValidateRecord(info).ok());
  std::vector<float> out(*CheckedProduct(info.shape));
  DecodeInput in;
  in.info = &info;
  for (const auto& s : streams) in.streams.emplace_back(s);
  absl::Span<uint8_t> dst(reinterpret_cast<uint8_t*>(out.data()), out.size() * 4);
  EXPECT_TRUE(codec->Decode(in, OutputType::kF32, dst, {}).ok());
  return out;
}

TEST(PluginCodec, ElasticCutCopiesItsCellsByWhatItReports) {
  ASSERT_EQ(Toy().id(), kToyId);
  constexpr uint64_t kRows = 5, kCols = 64;
  std::vector<float> x(kRows * kCols);
  for (uint64_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) * 0.37f) * (1 + i % 7);
  std::vector<uint64_t> shape{kRows, kCols};
  absl::Span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(x.data()), x.size() * 4);
  auto enc = EncodeTensor(std::string(kToyId), {"w", DType::kF32, shape, bytes}, {}, {});
  ASSERT_TRUE(enc.ok()) << enc.status();
  const TensorInfo info = RecordFor("w", DType::kF32, shape, std::string(kToyId), *enc);
  std::vector<std::vector<uint8_t>> streams;
  for (const auto& s : enc->streams) streams.push_back(s.bytes);
  std::vector<absl::Span<const uint8_t>> spans(streams.begin(), streams.end());
  const std::vector<float> parent = Decode(info, streams);

  auto layout = format::StoredCellLayout(kToyId, DType::kF32, {});
  ASSERT_TRUE(layout.has_value());
  EXPECT_EQ(layout->block_elems, kBlock);
  EXPECT_EQ(layout->cell_bytes, (std::vector<uint64_t>{kBlock, 4}));

  // A budget's gather: rows 3, 0, 4 and the blocks 2, 0 (columns 32..47, 0..15).
  std::vector<uint64_t> rows{3, 0, 4}, cols;
  for (uint64_t c = 32; c < 48; ++c) cols.push_back(c);
  for (uint64_t c = 0; c < 16; ++c) cols.push_back(c);
  auto cut = format::CutRawTensor(info, spans, {rows, cols}, "w.cut");
  ASSERT_TRUE(cut.ok()) << cut.status();
  ASSERT_EQ(cut->info.shape, (std::vector<uint64_t>{3, 32}));
  EXPECT_EQ(cut->info.codec_id, kToyId);
  ASSERT_EQ(cut->streams.size(), 2u);
  EXPECT_EQ(cut->streams[0].size(), 3u * 32);
  EXPECT_EQ(cut->streams[1].size(), 3u * 2 * 4);  // cells copied, not re-encoded
  const std::vector<float> got = Decode(cut->info, cut->streams);
  for (uint64_t r = 0; r < rows.size(); ++r) {
    for (uint64_t c = 0; c < cols.size(); ++c) {
      ASSERT_EQ(got[r * cols.size() + c], parent[rows[r] * kCols + cols[c]]) << r << " " << c;
    }
  }
  // A cut inside one of its blocks is refused, naming the block size.
  std::vector<uint64_t> odd(kBlock + 1);
  for (uint64_t c = 0; c < odd.size(); ++c) odd[c] = c;
  auto bad = format::CutRawTensor(info, spans, {{}, odd}, "w.bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("16"), std::string::npos) << bad.status();
}

TEST(PluginCodec, ToolsAskItsTraitsAndGgmlMapping) {
  ASSERT_EQ(Toy().id(), kToyId);
  EXPECT_TRUE(TraitsOf(kToyId).quantizer);
  EXPECT_FALSE(TraitsOf(kToyId).element);
  // It declares no ggml type: a GGUF export has none for it.
  EXPECT_EQ(io::GgmlTypeForCodec(kToyId, DType::kF32, {}), nullptr);
  // The built-ins answer from their own descriptions, as before by name.
  ASSERT_NE(io::GgmlTypeForCodec("q8_0", DType::kF32, {}), nullptr);
  EXPECT_EQ(io::GgmlTypeForCodec("q8_0", DType::kF32, {})->id, 8);
  EXPECT_EQ(io::GgmlTypeForCodec("raw", DType::kI16, {})->id, 25);
  EXPECT_EQ(io::GgmlTypeForCodec("nvfp4", DType::kF32, {}), nullptr);  // two-level: tools/gguf_nvfp4
  EXPECT_EQ(FindCodec("nvfp4")->Ggml(DType::kF32, {}).how, GgmlExport::kTwoLevelNvfp4);
  EXPECT_EQ(FindCodec("bf16-huffman")->Ggml(DType::kBF16, {}).how, GgmlExport::kDecodedBf16);
  EXPECT_TRUE(TraitsOf("raw").element);
  EXPECT_EQ(TraitsOf("raw").element_dtype, DType::kUnspecified);
  EXPECT_EQ(TraitsOf("f16").element_dtype, DType::kF16);
  EXPECT_FALSE(TraitsOf("no-such-codec").element);
}

// The whole tool chain on a model stored with the plugin: convert with an
// elastic manifest, inspect, slice a budget to .bolt and to GGUF, export
// to GGUF, all in-process (the CLI binary does not have the toy), with no
// line outside this file naming the codec.
TEST(PluginCodec, ConvertInspectSliceAndExportRunThroughTheTools) {
  ASSERT_EQ(Toy().id(), kToyId);
  constexpr int kLayers = 2;
  constexpr uint64_t kRows = 8, kCols = 64, kKept = 48;
  const std::string dir = testing::MakeTempDir();
  std::vector<io::SafetensorsTensorDecl> decls;
  for (int l = 0; l < kLayers; ++l) decls.push_back({"blk." + std::to_string(l) + ".ffn_down.weight", DType::kF32, {kRows, kCols}});
  {
    auto w = io::SafetensorsWriter::Create(dir + "/m.safetensors", {}, decls, {}, /*durable=*/false);
    ASSERT_TRUE(w.ok()) << w.status();
    std::vector<float> x(kRows * kCols);
    for (int l = 0; l < kLayers; ++l) {
      for (uint64_t i = 0; i < x.size(); ++i) x[i] = std::cos(static_cast<float>(i * (l + 3)) * 0.11f);
      ASSERT_TRUE((*w)->WriteNext({reinterpret_cast<const uint8_t*>(x.data()), x.size() * 4}).ok());
    }
    ASSERT_TRUE((*w)->Finish().ok());
  }
  testing::WriteFileBytes(dir + "/e.json", [] {
    const std::string j = R"({"version": 1, "layers": {"count": 2, "name_pattern": "blk.{L}."},
      "axes": {"width": {"scope": "layer"}},
      "bindings": [{"tensor": "blk.{L}.ffn_down.weight", "dims": ["-", "width"]}],
      "budgets": [{"name": "narrow", "per_layer": {"width": [48, 48]}}]})";
    return std::vector<uint8_t>(j.begin(), j.end());
  }());
  tools::ConvertArgs convert;
  convert.inputs = {dir + "/m.safetensors"};
  convert.output = dir + "/e.bolt";
  convert.codec_rules = {"*=" + std::string(kToyId)};
  convert.elastic = dir + "/e.json";
  convert.no_fsync = true;
  ASSERT_EQ(tools::RunConvert(convert), 0);

  ::testing::internal::CaptureStdout();
  const int inspected = tools::RunInspect({dir + "/e.bolt"});
  const std::string listing = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(inspected, 0);
  EXPECT_NE(listing.find(kToyId), std::string::npos) << listing;

  auto parent = Reader::Open(dir + "/e.bolt");
  ASSERT_TRUE(parent.ok()) << parent.status();
  tools::SliceArgs slice;
  slice.input = dir + "/e.bolt";
  slice.budget = "narrow";
  slice.no_fsync = true;
  for (const char* ext : {".bolt", ".gguf"}) {
    slice.output = dir + "/s" + ext;
    ASSERT_EQ(tools::RunSlice(slice), 0) << ext;
  }
  // The budget kept whole cells of the plugin's stored bytes: the cut is
  // still the toy codec, and decodes to the parent's values of the kept
  // columns (no importance given: the first 48).
  auto cut = Reader::Open(dir + "/s.bolt");
  ASSERT_TRUE(cut.ok()) << cut.status();
  auto exported = tools::Inputs::Open({dir + "/s.gguf"});
  ASSERT_TRUE(exported.ok()) << exported.status();
  for (int l = 0; l < kLayers; ++l) {
    const std::string name = "blk." + std::to_string(l) + ".ffn_down.weight";
    auto p = (*parent)->FindTensor(name);
    auto c = (*cut)->FindTensor(name);
    ASSERT_TRUE(p.has_value() && c.has_value()) << name;
    const TensorInfo& cut_info = *(*cut)->SharedTensor(*c);
    EXPECT_EQ(cut_info.codec_id, kToyId);
    ASSERT_EQ(cut_info.shape, (std::vector<uint64_t>{kRows, kKept}));
    std::vector<float> wv(kRows * kCols), kv(kRows * kKept);
    ASSERT_TRUE((*parent)->Decode(*p, OutputType::kF32, {reinterpret_cast<uint8_t*>(wv.data()), wv.size() * 4}).ok());
    ASSERT_TRUE((*cut)->Decode(*c, OutputType::kF32, {reinterpret_cast<uint8_t*>(kv.data()), kv.size() * 4}).ok());
    for (uint64_t r = 0; r < kRows; ++r) {
      for (uint64_t k = 0; k < kKept; ++k) ASSERT_EQ(kv[r * kKept + k], wv[r * kCols + k]) << name << " " << r << " " << k;
    }
    // It declares no ggml type, so the GGUF budget holds its decode.
    const tools::InputTensor* g = nullptr;
    for (const auto& t : (*exported)->tensors()) g = t.name == name ? &t : g;
    ASSERT_NE(g, nullptr) << name;
    auto gv = tools::DecodeToLogical(*g, 1);
    ASSERT_TRUE(gv.ok()) << gv.status();
    ASSERT_EQ(gv->size(), kv.size() * 4);
    EXPECT_EQ(std::memcmp(gv->data(), kv.data(), gv->size()), 0) << name;
  }
  // convert to GGUF asks for a codec with a GGUF type, naming the plugin's,
  // and re-encodes to the one given.
  tools::ConvertArgs to_gguf;
  to_gguf.inputs = {dir + "/e.bolt"};
  to_gguf.output = dir + "/all.gguf";
  to_gguf.no_fsync = true;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(tools::RunConvert(to_gguf), 1);
  const std::string refused = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(refused.find("codec \"toy-i8s16\" (dtype F32) has no GGUF type"), std::string::npos) << refused;
  EXPECT_FALSE(std::filesystem::exists(to_gguf.output));
  to_gguf.codec_rules = {"*=f32"};
  ASSERT_EQ(tools::RunConvert(to_gguf), 0);
  auto all = tools::Inputs::Open({to_gguf.output});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ((*all)->tensors().size(), static_cast<size_t>(kLayers));
}

// Its parameter, declared in ParamSpecs, is typed and checked by the same
// parser as the built-ins' and reaches its encoder through convert.
TEST(PluginCodec, ItsDeclaredParameterIsSetThroughACodecRule) {
  ASSERT_EQ(Toy().id(), kToyId);
  auto rule = tools::ParseCodecRule(StrCat("*=", kToyId, ":clip=0.5"));
  ASSERT_TRUE(rule.ok()) << rule.status();
  ASSERT_EQ(rule->params.size(), 1u);
  EXPECT_EQ(rule->params[0].first, "clip");
  EXPECT_EQ(rule->params[0].second.type, ValueType::kFloat64);
  EXPECT_EQ(rule->params[0].second.f64, 0.5);
  auto unknown = tools::ParseCodecRule(StrCat("*=", kToyId, ":clp=1"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown parameter \"clp\" (it takes: clip)"), std::string::npos)
      << unknown.status();
  auto range = tools::ParseCodecRule(StrCat("*=", kToyId, ":clip=2"));
  ASSERT_FALSE(range.ok());
  EXPECT_NE(range.status().message().find("\"clip\" is out of range: must be a number in (0, 1]"), std::string::npos)
      << range.status();
  EXPECT_NE(tools::CodecListing().find("clip=NUMBER  a number in (0, 1], default 1: fraction"), std::string::npos);

  const std::string dir = testing::MakeTempDir();
  constexpr uint64_t kRows = 2, kCols = 32;
  std::vector<float> x(kRows * kCols);
  for (uint64_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 16) - 7.5f;  // amax 7.5 per block
  {
    auto w = io::SafetensorsWriter::Create(dir + "/m.safetensors", {}, {{"w", DType::kF32, {kRows, kCols}}}, {},
                                           /*durable=*/false);
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE((*w)->WriteNext({reinterpret_cast<const uint8_t*>(x.data()), x.size() * 4}).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  tools::ConvertArgs convert;
  convert.inputs = {dir + "/m.safetensors"};
  convert.output = dir + "/m.bolt";
  convert.codec_rules = {StrCat("*=", kToyId, ":clip=0.5")};
  convert.no_fsync = true;
  ASSERT_EQ(tools::RunConvert(convert), 0);
  auto r = Reader::Open(dir + "/m.bolt");
  ASSERT_TRUE(r.ok()) << r.status();
  auto t = (*r)->FindTensor("w");
  ASSERT_TRUE(t.has_value());
  const TensorInfo& info = *(*r)->SharedTensor(*t);
  EXPECT_EQ(info.codec_id, kToyId);
  ASSERT_EQ(info.codec_params.size(), 1u);
  EXPECT_EQ(info.codec_params[0].second.f64, 0.5);
  std::vector<float> y(x.size());
  ASSERT_TRUE((*r)->Decode(*t, OutputType::kF32, {reinterpret_cast<uint8_t*>(y.data()), y.size() * 4}).ok());
  float ymax = 0;
  for (float v : y) ymax = std::fmax(ymax, std::fabs(v));
  EXPECT_FLOAT_EQ(ymax, 3.75f);  // clipped at half of each block's amax
}

// The plan asks the codec whether it takes 1-D tensors (norms, biases):
// the toy says it does and gets one; the built-in q8_0, a block quantizer
// as llama-quantize treats it, does not, and the norm stays in float.
TEST(PluginCodec, ItsOneDimensionalTraitDrivesThePlan) {
  ASSERT_EQ(Toy().id(), kToyId);
  EXPECT_TRUE(TraitsOf(kToyId).takes_1d);
  EXPECT_FALSE(TraitsOf("q8_0").takes_1d);
  const std::string dir = testing::MakeTempDir();
  std::vector<float> x(32 + 2 * 32, 0.25f);
  {
    auto w = io::SafetensorsWriter::Create(dir + "/m.safetensors", {},
                                           {{"norm.weight", DType::kF32, {32}}, {"w", DType::kF32, {2, 32}}}, {},
                                           /*durable=*/false);
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE((*w)->WriteNext({reinterpret_cast<const uint8_t*>(x.data()), 32 * 4}).ok());
    ASSERT_TRUE((*w)->WriteNext({reinterpret_cast<const uint8_t*>(x.data() + 32), 64 * 4}).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  auto in = tools::Inputs::Open({dir + "/m.safetensors"});
  ASSERT_TRUE(in.ok()) << in.status();
  size_t norm = 0, matrix = 0;
  for (size_t i = 0; i < (*in)->tensors().size(); ++i) {
    if ((*in)->tensors()[i].name == "norm.weight") norm = i;
    if ((*in)->tensors()[i].name == "w") matrix = i;
  }
  ASSERT_NE(norm, matrix);
  for (const std::string& codec : {std::string(kToyId), std::string("q8_0")}) {
    auto rule = tools::ParseCodecRule("*=" + codec);
    ASSERT_TRUE(rule.ok()) << rule.status();
    std::vector<std::string> fallbacks;
    const tools::CodecPlan plan = tools::PlanCodecs(**in, {*rule}, &fallbacks);
    ASSERT_EQ(plan.size(), 2u);
    ASSERT_NE(plan[matrix], nullptr) << codec;
    EXPECT_EQ(plan[matrix]->codec_id, codec);
    if (codec == kToyId) {
      ASSERT_NE(plan[norm], nullptr);
      EXPECT_EQ(plan[norm]->codec_id, codec);
      EXPECT_TRUE(fallbacks.empty());
    } else {
      EXPECT_EQ(plan[norm], nullptr);
      ASSERT_EQ(fallbacks.size(), 1u);
      EXPECT_NE(fallbacks[0].find("norm.weight: q8_0 -> kept as F32 (a 1-D tensor stays in float"), std::string::npos)
          << fallbacks[0];
    }
  }
}

}  // namespace
}  // namespace boltpack
