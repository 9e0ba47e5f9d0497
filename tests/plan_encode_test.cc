// Codec::PlanEncode gives the record Encode writes (bolt-pack plan's exact
// sizes rest on it): for every codec that plans, on shapes with and without
// chunks, 1-D and 3-D, the planned record equals the encoded one but for a
// stored value that depends on the data (nvfp4's tensor scale), which must
// have the same type. Codecs whose records depend on the data say so.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "codecs/encoded_record.h"
#include "gtest/gtest.h"

namespace boltpack {
namespace {

std::vector<uint8_t> RandomBf16(uint64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 0.05f);
  std::vector<uint8_t> out(n * 2);
  for (uint64_t i = 0; i < n; ++i) {
    float f = g(rng);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint16_t b = static_cast<uint16_t>(u >> 16);
    out[2 * i] = static_cast<uint8_t>(b);
    out[2 * i + 1] = static_cast<uint8_t>(b >> 8);
  }
  return out;
}

void ExpectSameRecord(const TensorInfo& planned, const TensorInfo& encoded, const EncodePlan& plan,
                      const EncodedTensor& enc) {
  ASSERT_EQ(planned.codec_params.size(), encoded.codec_params.size());
  for (size_t p = 0; p < planned.codec_params.size(); ++p) {
    EXPECT_EQ(planned.codec_params[p].first, encoded.codec_params[p].first);
    EXPECT_EQ(planned.codec_params[p].second.type, encoded.codec_params[p].second.type);
    if (planned.codec_params[p].first != "tensor_scale") {
      EXPECT_TRUE(planned.codec_params[p].second == encoded.codec_params[p].second) << planned.codec_params[p].first;
    }
  }
  ASSERT_EQ(planned.streams.size(), encoded.streams.size());
  for (size_t k = 0; k < planned.streams.size(); ++k) {
    const StreamInfo& a = planned.streams[k];
    const StreamInfo& b = encoded.streams[k];
    EXPECT_EQ(a.role, b.role);
    EXPECT_EQ(a.length, b.length);
    EXPECT_EQ(a.raw_length, b.raw_length);
    EXPECT_EQ(a.views, b.views);
    EXPECT_EQ(plan.record.streams[k].compressible, enc.streams[k].compressible);
    ASSERT_EQ(a.chunks.size(), b.chunks.size()) << a.role;
    for (size_t c = 0; c < a.chunks.size(); ++c) {
      EXPECT_EQ(a.chunks[c].raw_offset, b.chunks[c].raw_offset);
      EXPECT_EQ(a.chunks[c].raw_length, b.chunks[c].raw_length);
      EXPECT_EQ(a.chunks[c].first_row, b.chunks[c].first_row);
      EXPECT_EQ(a.chunks[c].row_count, b.chunks[c].row_count);
    }
  }
}

TEST(PlanEncode, EqualsEncodesRecord) {
  const std::vector<std::string> codecs = {"q8_0", "mxfp4", "nvfp4", "int4-g128", "iq2_xxs",
                                           "f32",  "f16",   "bf16",  "raw"};
  // Small (no chunks), large enough for 1 MiB chunks of every codec, 3-D
  // experts, 1-D.
  const std::vector<std::vector<uint64_t>> shapes = {{8, 256}, {4100, 1024}, {3, 700, 512}, {4096}};
  int planned_any = 0;
  for (const auto& id : codecs) {
    const Codec* codec = FindCodec(id);
    ASSERT_NE(codec, nullptr) << id;
    for (const auto& shape : shapes) {
      uint64_t n = 1;
      for (uint64_t d : shape) n *= d;
      auto plan = codec->PlanEncode(DType::kBF16, shape, {});
      absl::Status can = codec->CanEncode(DType::kBF16, shape, {});
      ASSERT_EQ(plan.ok(), can.ok()) << id << " " << plan.status() << " / " << can;
      if (!plan.ok()) continue;
      ASSERT_TRUE(plan->has_value()) << id;
      const std::vector<uint8_t> bytes = RandomBf16(n, static_cast<uint32_t>(n));
      TensorSource src{"w", DType::kBF16, shape, bytes};
      auto enc = codec->Encode(src, {}, ExecOptions{2});
      ASSERT_TRUE(enc.ok()) << id << " " << enc.status();
      const TensorInfo encoded = RecordFor("w", DType::kBF16, shape, id, *enc);
      const TensorInfo planned = RecordForPlan("w", DType::kBF16, shape, id, **plan);
      SCOPED_TRACE(id + " " + std::to_string(n));
      ExpectSameRecord(planned, encoded, **plan, *enc);
      EXPECT_TRUE(codec->ValidateRecord(planned).ok());
      planned_any += planned.streams[0].chunks.size() > 1;
    }
  }
  EXPECT_GT(planned_any, 5);  // the chunked shapes were chunked
}

TEST(PlanEncode, DataDependentCodecsDoNotPlan) {
  for (const std::string id : {"bf16-huffman", "bf16-unary"}) {
    const Codec* codec = FindCodec(id);
    ASSERT_NE(codec, nullptr) << id;
    auto plan = codec->PlanEncode(DType::kBF16, std::vector<uint64_t>{64, 64}, {});
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_FALSE(plan->has_value()) << id;
  }
}

}  // namespace
}  // namespace boltpack
