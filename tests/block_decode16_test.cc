// The block codecs' 16-bit decoders (BlockCodec::DecodeBlocksBf16 and
// DecodeBlocksF16, fused kernels that round in registers) against the
// definition: decode to f32, then ConvertF32ToBF16 / ConvertF32ToF16
// (float_convert.h). Bit for bit, on the portable and the AVX2 kernels, on
// random bytes and on every value of every scale field (so every NaN,
// infinite, subnormal and zero scale each format can hold), through the
// kernels directly and through Decode / DecodeRows (whole-block ranges into
// aligned buffers take the kernels; ranges inside blocks and odd addresses
// the f32 tile).
#include <algorithm>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "codecs/block_common/block_codec.h"
#include "codecs/encoded_record.h"
#include "codecs/float_convert.h"
#include "gtest/gtest.h"

namespace boltpack {
namespace {

// Where a codec keeps its per-block scale: `count` fields of `width` bytes
// at `offset` in stream `stream`'s bytes of a block.
struct ScaleField {
  size_t stream;
  uint32_t offset;
  uint32_t width;  // 1 or 2 (little-endian)
  uint32_t count;
};

struct Case {
  const char* id;
  ScaleField scale;
};

constexpr Case kCases[] = {
    {"q8_0", {0, 0, 2, 1}},        // fp16 d
    {"mxfp4", {0, 0, 1, 1}},       // e8m0
    {"nvfp4-ggml", {0, 0, 1, 4}},  // four ue4m3 sub-block scales
    {"nvfp4", {1, 0, 1, 1}},       // e4m3fn, times the tensor scale
    {"int4-g128", {1, 0, 2, 1}},   // fp16 d
};

// gtest names a failing case by its codec.
void PrintTo(const Case& c, std::ostream* os) { *os << c.id; }

const BlockCodec& Get(const std::string& id) {
  const Codec* c = FindCodec(id);
  EXPECT_NE(c, nullptr) << id;
  return dynamic_cast<const BlockCodec&>(*c);
}

class BlockDecode16Test : public ::testing::TestWithParam<Case> {
 protected:
  const BlockCodec& codec() const { return Get(GetParam().id); }
  uint64_t B() const { return codec().format().block_elems; }
};

// Blocks of random bytes in which block i < 2^(8*width) has every scale field
// set to i: every scale pattern once, with random values beside it; then
// `extra` blocks of nothing but random bytes.
std::vector<std::vector<uint8_t>> ScaleSweepBlocks(const BlockFormat& format, const ScaleField& f,
                                                   uint64_t extra, uint64_t* nblocks) {
  const uint64_t patterns = uint64_t{1} << (8 * f.width);
  *nblocks = patterns + extra;
  std::mt19937 rng(5);
  std::vector<std::vector<uint8_t>> streams;
  for (const BlockStreamSpec& s : format.streams) {
    streams.emplace_back(*nblocks * s.bytes_per_block);
    for (auto& v : streams.back()) v = static_cast<uint8_t>(rng());
  }
  const uint32_t bpb = format.streams[f.stream].bytes_per_block;
  for (uint64_t b = 0; b < patterns; ++b) {
    for (uint32_t c = 0; c < f.count; ++c) {
      uint8_t* p = streams[f.stream].data() + b * bpb + f.offset + c * f.width;
      p[0] = static_cast<uint8_t>(b);
      if (f.width == 2) p[1] = static_cast<uint8_t>(b >> 8);
    }
  }
  return streams;
}

std::vector<BlockParams> ParamsToTry(const std::string& id) {
  if (id != "nvfp4") return {BlockParams{}};
  // The tensor scale multiplies the e4m3 scale: results that overflow to
  // infinity, that are subnormal, and ordinary ones.
  std::vector<BlockParams> all;
  for (float ts : {1.0f, 3.7e-5f, 1e30f, 1e37f, 1e-40f, 0x1p-126f}) {
    BlockParams p;
    p.tensor_scale = ts;
    all.push_back(p);
  }
  return all;
}

std::string Bits16Mismatch(const std::vector<uint16_t>& want, const std::vector<uint16_t>& got,
                           const std::vector<float>& f32) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] != got[i]) {
      char b[160];
      std::snprintf(b, sizeof b, "element %zu: f32 bits %08x, want %04x, got %04x", i,
                    FloatBits(f32[i]), want[i], got[i]);
      return b;
    }
  }
  return "";
}

TEST_P(BlockDecode16Test, KernelsEqualF32ThenRoundOnEveryScaleAndRandomBytes) {
  uint64_t nb = 0;
  const auto streams = ScaleSweepBlocks(codec().format(), GetParam().scale, 4099, &nb);
  const uint8_t* in[2] = {streams[0].data(), streams.size() > 1 ? streams[1].data() : nullptr};
  const uint64_t n = nb * B();
  std::vector<bool> paths = {false};
  if (CpuHasAvx2Fma16c()) paths.push_back(true);
  for (const BlockParams& params : ParamsToTry(GetParam().id)) {
    for (bool avx2 : paths) {
      SCOPED_TRACE(std::string(GetParam().id) + (avx2 ? " avx2" : " portable") +
                   " tensor_scale " + std::to_string(params.tensor_scale));
      std::vector<float> f32(n);
      codec().DecodeBlocksF32(in, nb, f32.data(), params, avx2);
      std::vector<uint16_t> want(n), got(n, 0xdead);
      ConvertF32ToBF16(f32.data(), want.data(), n);
      codec().DecodeBlocksBf16(in, nb, got.data(), params, avx2);
      EXPECT_EQ(Bits16Mismatch(want, got, f32), "") << "bf16";
      // The base's own f32-tile path gives the same bits as well.
      std::fill(got.begin(), got.end(), 0xdead);
      codec().BlockCodec::DecodeBlocksBf16(in, nb, got.data(), params, avx2);
      EXPECT_EQ(Bits16Mismatch(want, got, f32), "") << "bf16, base tile path";

      ConvertF32ToF16(f32.data(), want.data(), n);
      std::fill(got.begin(), got.end(), 0xdead);
      codec().DecodeBlocksF16(in, nb, got.data(), params, avx2);
      EXPECT_EQ(Bits16Mismatch(want, got, f32), "") << "f16";
      std::fill(got.begin(), got.end(), 0xdead);
      codec().BlockCodec::DecodeBlocksF16(in, nb, got.data(), params, avx2);
      EXPECT_EQ(Bits16Mismatch(want, got, f32), "") << "f16, base tile path";
    }
  }
}

// The sweep does reach the special values the rounding rules treat apart.
TEST_P(BlockDecode16Test, SweepDecodesToNaNInfinityAndSubnormals) {
  uint64_t nb = 0;
  const auto streams = ScaleSweepBlocks(codec().format(), GetParam().scale, 0, &nb);
  const uint8_t* in[2] = {streams[0].data(), streams.size() > 1 ? streams[1].data() : nullptr};
  bool nan = false, inf = false, subnormal = false;
  for (const BlockParams& params : ParamsToTry(GetParam().id)) {
    std::vector<float> f32(nb * B());
    codec().DecodeBlocksF32(in, nb, f32.data(), params, false);
    for (float v : f32) {
      const uint32_t u = FloatBits(v) & 0x7fffffffu;
      nan |= u > 0x7f800000u;
      inf |= u == 0x7f800000u;
      subnormal |= u != 0 && u < 0x00800000u;
    }
  }
  const std::string id = GetParam().id;
  // q8_0 and int4-g128 have fp16 scales (NaN, infinity); nvfp4's e4m3fn has
  // NaN and, times 1e37, overflows; mxfp4's largest exponent (2^127) times
  // 6 overflows, its scales are never NaN; nvfp4-ggml's ue4m3 is finite.
  const bool has_nan = id == "q8_0" || id == "int4-g128" || id == "nvfp4";
  EXPECT_EQ(nan, has_nan);
  EXPECT_EQ(inf, has_nan || id == "mxfp4");
  // f32 subnormals: mxfp4's smallest shared exponents, and nvfp4 with a tiny
  // tensor scale. fp16 scales (q8_0, int4-g128) are normal f32 values even
  // when subnormal in fp16, and so are their products with small integers
  // (those reach f16's subnormal range, which the f16 rounding must get
  // right); nvfp4-ggml's ue4m3 does not go below 2^-10.
  EXPECT_EQ(subnormal, id == "mxfp4" || id == "nvfp4");
}

// A record of random stored bytes with the codec's own parameters.
struct RandomRecord {
  EncodedTensor tensor;
  TensorInfo info;
};

RandomRecord MakeRandomRecord(const BlockCodec& codec, const std::vector<uint64_t>& shape,
                              uint32_t seed) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  std::vector<float> x(n);
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 0.02f);
  for (auto& v : x) v = g(rng);
  TensorSource src{"t", DType::kF32, shape,
                   absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(x.data()), n * 4)};
  auto enc = codec.Encode(src, {}, ExecOptions{1});
  EXPECT_TRUE(enc.ok()) << enc.status();
  RandomRecord r;
  if (enc.ok()) r.tensor = *std::move(enc);
  for (auto& s : r.tensor.streams) {
    for (auto& v : s.bytes) v = static_cast<uint8_t>(rng());
  }
  r.info = RecordFor("t", DType::kF32, shape, codec.id(), r.tensor);
  return r;
}

std::vector<uint8_t> RoundF32Bytes(const std::vector<uint8_t>& f32, OutputType out) {
  std::vector<uint8_t> r(f32.size() / 2);
  if (out == OutputType::kBF16) {
    ConvertF32ToBF16(f32.data(), r.data(), f32.size() / 4);
  } else {
    ConvertF32ToF16(f32.data(), r.data(), f32.size() / 4);
  }
  return r;
}

// Decodes rows [r0, r1) through DecodeRows into a buffer `misalign` bytes
// past an aligned one (1: the kernels cannot store there; the f32 tile path).
std::vector<uint8_t> DecodeRowsAt(const BlockCodec& codec, const RandomRecord& r, uint64_t r0,
                                  uint64_t r1, OutputType out, size_t misalign) {
  DecodeInput in;
  in.info = &r.info;
  for (size_t k = 0; k < r.tensor.streams.size(); ++k) {
    auto range = codec.RowRangeBytes(r.info, k, r0, r1);
    EXPECT_TRUE(range.ok()) << range.status();
    if (!range.ok()) return {};
    in.streams.push_back(absl::MakeConstSpan(r.tensor.streams[k].bytes)
                             .subspan(range->first, range->second - range->first));
    in.raw_base.push_back(range->first);
  }
  const uint64_t rows = r.info.shape[0];
  uint64_t n = 1;
  for (uint64_t d : r.info.shape) n *= d;
  const uint64_t bytes = (r1 - r0) * (n / rows) * OutputTypeSize(out);
  std::vector<uint8_t> buf(bytes + 8);
  absl::Status s = codec.DecodeRows(in, r0, r1, out, absl::MakeSpan(buf.data() + misalign, bytes));
  EXPECT_TRUE(s.ok()) << s;
  return std::vector<uint8_t>(buf.begin() + misalign, buf.begin() + misalign + bytes);
}

TEST_P(BlockDecode16Test, DecodeAndDecodeRowsEqualF32ThenRound) {
  const uint64_t b = B();
  // Whole-block rows (the kernels), and a 1-D tensor whose rows are single
  // elements (ranges inside blocks: the f32 tile path).
  for (const std::vector<uint64_t>& shape :
       {std::vector<uint64_t>{9, 3 * b}, std::vector<uint64_t>{2, 3, b}, std::vector<uint64_t>{5 * b}}) {
    SCOPED_TRACE(std::string(GetParam().id) + " rank " + std::to_string(shape.size()));
    const RandomRecord r = MakeRandomRecord(codec(), shape, 17);
    ASSERT_TRUE(codec().ValidateRecord(r.info).ok()) << codec().ValidateRecord(r.info);
    auto f32 = DecodeWhole(codec(), r.info, r.tensor, OutputType::kF32);
    ASSERT_TRUE(f32.ok()) << f32.status();
    for (OutputType out : {OutputType::kBF16, OutputType::kF16}) {
      const std::vector<uint8_t> want = RoundF32Bytes(*f32, out);
      for (int threads : {1, 3}) {
        auto got = DecodeWhole(codec(), r.info, r.tensor, out, threads);
        ASSERT_TRUE(got.ok()) << got.status();
        EXPECT_TRUE(*got == want) << OutputTypeName(out) << " threads " << threads;
      }
      const uint64_t rows = shape[0];
      const uint64_t row_bytes = want.size() / rows;
      std::vector<uint64_t> cuts;
      for (uint64_t c : {uint64_t{0}, uint64_t{1}, b - 1, b, b + 1, 2 * b + 3, rows - 1, rows}) {
        if (c <= rows) cuts.push_back(c);
      }
      for (uint64_t r0 : cuts) {
        for (uint64_t r1 : cuts) {
          if (r1 < r0) continue;
          for (size_t misalign : {size_t{0}, size_t{1}}) {
            const std::vector<uint8_t> got = DecodeRowsAt(codec(), r, r0, r1, out, misalign);
            ASSERT_EQ(got.size(), (r1 - r0) * row_bytes);
            EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin() + r0 * row_bytes))
                << OutputTypeName(out) << " rows " << r0 << ".." << r1 << " misalign " << misalign;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, BlockDecode16Test, ::testing::ValuesIn(kCases),
                         [](const auto& param_info) {
                           std::string s = param_info.param.id;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

}  // namespace
}  // namespace boltpack
