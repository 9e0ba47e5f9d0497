// q8_0 specifics: its error bounds and the container round trip through the
// CLI (`convert --codec '*=q8_0'`, then `inspect` shows 8.5 bits per weight).
#include "codecs/q8_0/q8_0_codec.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "boltpack/codec_registry.h"
#include "codecs/encoded_record.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

TEST(Q8_0, ErrorBoundsAndLayout) {
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 0.02f);
  std::vector<float> x(16 * 4096);
  for (auto& v : x) v = g(rng);
  const std::vector<uint64_t> shape = {16, 4096};
  TensorSource src{"w", DType::kF32, shape,
                   absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(x.data()), x.size() * 4)};
  auto enc = FindCodec("q8_0")->Encode(src, {}, ExecOptions{2});
  ASSERT_TRUE(enc.ok()) << enc.status();
  ASSERT_EQ(enc->streams[0].bytes.size(), x.size() / 32 * 34);
  const TensorInfo info = RecordFor("w", DType::kF32, shape, "q8_0", *enc);
  auto y = DecodeWhole(*FindCodec("q8_0"), info, *enc, OutputType::kF32);
  ASSERT_TRUE(y.ok());
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    float v;
    std::memcpy(&v, y->data() + 4 * i, 4);
    num += (double(x[i]) - v) * (double(x[i]) - v);
    den += double(x[i]) * x[i];
  }
  EXPECT_LE(std::sqrt(num / den), 0.0056);
  // Block 0: d = f16(amax/127), q = round(x/d).
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  int8_t q0;
  std::memcpy(&q0, &enc->streams[0].bytes[2], 1);
  EXPECT_EQ(q0, static_cast<int8_t>(std::roundf(x[0] * (1.0f / (amax / 127.0f)))));
  // A block whose fp16 scale would overflow is refused.
  x[0] = 1e7f;
  EXPECT_FALSE(FindCodec("q8_0")->Encode(src, {}, {}).ok());
}

TEST(Q8_0, CliConvertAndInspect) {
  const std::string model = testing::SourceDir() + "/testdata/tinystories-656k/model.safetensors";
  const std::string out = testing::MakeTempDir() + "/m.bolt";
  auto r = testing::RunCli({"convert", model, "-o", out, "--codec", "*=q8_0"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = testing::RunCli({"inspect", out});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("q8_0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("8.5"), std::string::npos) << r.output;
  r = testing::RunCli({"verify", out});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
}  // namespace boltpack
