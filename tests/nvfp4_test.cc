// The two-level NVFP4 codec ("nvfp4"): ModelOpt's scale rules, accuracy on
// small weights (where ggml's single-level layout collapses), and the
// lossless conversion to ggml NVFP4 blocks plus a tensor scale.
#include "codecs/nvfp4/nvfp4_codec.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "boltpack/codec_registry.h"
#include "codecs/encoded_record.h"
#include "gtest/gtest.h"

namespace boltpack {
namespace {

std::vector<float> Gaussian(uint64_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, sigma);
  std::vector<float> x(n);
  for (auto& v : x) v = g(rng);
  return x;
}

struct Enc {
  EncodedTensor tensor;
  TensorInfo info;
};

Enc Encode(const char* id, const std::vector<uint64_t>& shape, const std::vector<float>& x,
           const CodecParams& params = {}) {
  TensorSource src{"w", DType::kF32, shape,
                   absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(x.data()), x.size() * 4)};
  auto enc = FindCodec(id)->Encode(src, params, ExecOptions{4});
  EXPECT_TRUE(enc.ok()) << enc.status();
  Enc e;
  if (enc.ok()) e.tensor = *std::move(enc);
  e.info = RecordFor("w", DType::kF32, shape, id, e.tensor);
  return e;
}

std::vector<float> Decode(const Enc& e) {
  auto d = DecodeWhole(*FindCodec(e.info.codec_id), e.info, e.tensor, OutputType::kF32, 2);
  EXPECT_TRUE(d.ok()) << d.status();
  std::vector<float> y(d.ok() ? d->size() / 4 : 0);
  if (!y.empty()) std::memcpy(y.data(), d->data(), d->size());
  return y;
}

double RelRms(const std::vector<float>& x, const std::vector<float>& y) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    den += double(x[i]) * x[i];
  }
  return std::sqrt(num / den);
}

TEST(Nvfp4, CastFp4IsModelOptRounding) {
  // Ties go to the even code: 0.25->0, 0.75->1.0, 1.25->1.0, 1.75->2.0,
  // 2.5->2.0, 3.5->4.0, 5->4.0; > 5 saturates.
  const std::pair<float, int> cases[] = {{0.0f, 0},  {0.25f, 0}, {0.26f, 1}, {0.75f, 2}, {1.25f, 2},
                                         {1.75f, 4}, {2.5f, 4},  {3.5f, 6},  {5.0f, 6},  {5.01f, 7},
                                         {100.f, 7}, {-0.1f, 8}, {-6.0f, 15}};
  for (auto [x, code] : cases) EXPECT_EQ(CastFp4ModelOpt(x), code) << x;
}

TEST(Nvfp4, E4m3RoundsToNearestEven) {
  for (int c = 0; c < 0x7F; ++c) {
    EXPECT_EQ(F32ToE4m3fnRne(E4m3fnToF32(static_cast<uint8_t>(c))), c) << c;
  }
  EXPECT_EQ(F32ToE4m3fnRne(1.0625f), 0x38);  // halfway 1.0/1.125 -> even (1.0)
  EXPECT_EQ(F32ToE4m3fnRne(1.1875f), 0x3A);  // halfway 1.125/1.25 -> even (1.25)
  EXPECT_EQ(F32ToE4m3fnRne(0x1p-9f), 0x01);
  EXPECT_EQ(F32ToE4m3fnRne(1.5f * 0x1p-9f), 0x02);  // subnormal tie -> even
  EXPECT_EQ(F32ToE4m3fnRne(448.0f), 0x7E);
  EXPECT_TRUE(std::isnan(E4m3fnToF32(0x7F)));
  // The NaNs keep the byte's sign (codecs.md §4; the codec vector
  // spec/vectors/codecs/nvfp4 has a block of scale 0xFF).
  EXPECT_EQ(std::bit_cast<uint32_t>(E4m3fnToF32(0x7F)), 0x7FC00000u);
  EXPECT_EQ(std::bit_cast<uint32_t>(E4m3fnToF32(0xFF)), 0xFFC00000u);
}

TEST(Nvfp4, TensorScaleIsModelOpts) {
  std::vector<float> x = Gaussian(4 * 256, 0.02f, 1);
  x[77] = 0.5f;
  Enc e = Encode("nvfp4", {4, 256}, x);
  ASSERT_EQ(e.tensor.params.size(), 1u);
  EXPECT_EQ(e.tensor.params[0].first, "tensor_scale");
  EXPECT_EQ(e.tensor.params[0].second.type, ValueType::kFloat32);
  EXPECT_EQ(e.tensor.params[0].second.f32, 0.5f / 2688.0f);
  // The block holding the amax gets scale 448 (0x7E) and code 6.0.
  EXPECT_EQ(e.tensor.streams[1].bytes[77 / 16], 0x7E);
  EXPECT_EQ((e.tensor.streams[0].bytes[77 / 2] >> 4) & 0xF, 7);
  EXPECT_EQ(Decode(e)[77], 0.5f);
  // A given scale is used, and a bad one refused.
  Enc forced = Encode("nvfp4", {4, 256}, x, {{"tensor_scale", MetaValue::Float64(1.0)}});
  EXPECT_EQ(forced.tensor.params[0].second.f32, 1.0f);
  EXPECT_FALSE(FindCodec("nvfp4")->CanEncode(DType::kF32, std::vector<uint64_t>{16},
                                             {{"tensor_scale", MetaValue::Float64(-1)}}).ok());
  TensorInfo bad = e.info;
  bad.codec_params[0].second = MetaValue::Float32(std::nanf(""));
  EXPECT_FALSE(FindCodec("nvfp4")->ValidateRecord(bad).ok());
  bad.codec_params.clear();
  EXPECT_FALSE(FindCodec("nvfp4")->ValidateRecord(bad).ok());
}

// ggml's layout has no tensor scale: 0.96 at std 0.002, 1.0 at 0.0005. The
// two-level codec keeps the same error at every scale.
TEST(Nvfp4, SmallWeightsKeepTheirAccuracy) {
  const std::vector<uint64_t> shape = {64, 4096};
  const double ref = RelRms(Gaussian(64 * 4096, 0.02f, 2), Decode(Encode("nvfp4", shape, Gaussian(64 * 4096, 0.02f, 2))));
  EXPECT_LT(ref, 0.105);
  for (float sigma : {0.002f, 0.0005f}) {
    const std::vector<float> x = Gaussian(64 * 4096, sigma, 2);
    const double err = RelRms(x, Decode(Encode("nvfp4", shape, x)));
    EXPECT_LE(err, ref * 1.10) << sigma;
    EXPECT_GE(err, ref * 0.90) << sigma;
    const double ggml_err = RelRms(x, Decode(Encode("nvfp4-ggml", shape, x)));
    EXPECT_GT(ggml_err, 0.9) << "ggml's layout collapses at std " << sigma;
  }
}

TEST(Nvfp4, ToGgmlIsLosslessWithUnitTensorScale) {
  const std::vector<uint64_t> shape = {3, 2, 128};
  const std::vector<float> x = Gaussian(3 * 2 * 128, 0.3f, 4);
  Enc e = Encode("nvfp4", shape, x, {{"tensor_scale", MetaValue::Float32(1.0f)}});
  auto g = Nvfp4ToGgml(e.info, e.tensor.streams[0].bytes, e.tensor.streams[1].bytes);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->tensor_scale, 1.0f);
  ASSERT_EQ(g->blocks.size(), 3u * 2 * 128 / 64 * 36);
  EncodedTensor ge;
  ge.streams.push_back(EncodedStream{"blocks", g->blocks, {}, true});
  const TensorInfo gi = RecordFor("w", DType::kF32, shape, "nvfp4-ggml", ge);
  auto a = DecodeWhole(*FindCodec("nvfp4"), e.info, e.tensor, OutputType::kF32);
  auto b = DecodeWhole(*FindCodec("nvfp4-ggml"), gi, ge, OutputType::kF32);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(*a == *b) << "bit for bit";
  // And back again: the same streams.
  auto back = GgmlToNvfp4(shape, g->blocks, 1.0f);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->scales == e.tensor.streams[1].bytes);
  // Codes 8 (-0) become +0 in ggml; compare decoded values instead of bytes.
  EncodedTensor re;
  re.params = back->params;
  re.streams.push_back(EncodedStream{"values", back->values, {}, true});
  re.streams.push_back(EncodedStream{"scales", back->scales, {}, true});
  const TensorInfo ri = RecordFor("w", DType::kF32, shape, "nvfp4", re);
  EXPECT_TRUE(*DecodeWhole(*FindCodec("nvfp4"), ri, re, OutputType::kF32) == *a);
}

TEST(Nvfp4, ToGgmlKeepsTheTensorScaleAndApproximatesWithIt) {
  const std::vector<uint64_t> shape = {2, 64};
  const std::vector<float> x = Gaussian(128, 0.01f, 5);
  Enc e = Encode("nvfp4", shape, x);
  auto g = Nvfp4ToGgml(e.info, e.tensor.streams[0].bytes, e.tensor.streams[1].bytes);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->tensor_scale, e.tensor.params[0].second.f32);
  EncodedTensor ge;
  ge.streams.push_back(EncodedStream{"blocks", g->blocks, {}, true});
  const TensorInfo gi = RecordFor("w", DType::kF32, shape, "nvfp4-ggml", ge);
  auto b = DecodeWhole(*FindCodec("nvfp4-ggml"), gi, ge, OutputType::kF32);
  const std::vector<float> y = Decode(e);
  for (size_t i = 0; i < y.size(); ++i) {
    float v;
    std::memcpy(&v, b->data() + 4 * i, 4);
    EXPECT_NEAR(v * g->tensor_scale, y[i], 1e-6f * std::fabs(y[i]) + 1e-30f) << i;
  }
  // Rows not a multiple of 64 cannot become GGUF NVFP4 blocks.
  Enc odd = Encode("nvfp4", {2, 48}, Gaussian(96, 0.01f, 6));
  EXPECT_FALSE(Nvfp4ToGgml(odd.info, odd.tensor.streams[0].bytes, odd.tensor.streams[1].bytes).ok());
}

}  // namespace
}  // namespace boltpack
