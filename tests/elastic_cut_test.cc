// Cutting stored tensors (format/elastic_cut.h) for every codec a slice
// handles: the cut of the encoded tensor decodes to exactly the same cut of
// the decoded parent (block codecs by copying whole cells, lossless bf16
// codecs by decode + re-encode), for prefixes and for permutations of outer
// dimensions and of whole blocks of the innermost one.
#include <cstring>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/writer.h"
#include "codecs/encoded_record.h"
#include "format/elastic_cut.h"
#include "format/elastic_manifest.h"
#include "gtest/gtest.h"

namespace boltpack {
namespace {

constexpr uint64_t kRows = 6, kCols = 512;

std::vector<float> Source() {
  std::vector<float> v(kRows * kCols);
  uint32_t h = 12345;
  for (auto& x : v) {
    h = h * 1664525u + 1013904223u;
    x = static_cast<float>(static_cast<int32_t>(h >> 9) % 4000) / 1000.0f;
  }
  return v;
}

std::vector<uint8_t> Decode(const TensorInfo& info, const std::vector<std::vector<uint8_t>>& streams) {
  const Codec* codec = FindCodec(info.codec_id);
  EXPECT_NE(codec, nullptr);
  EXPECT_TRUE(codec->ValidateRecord(info).ok()) << info.codec_id;
  auto n = codec->DecodedBytes(info, OutputType::kF32);
  EXPECT_TRUE(n.ok());
  std::vector<uint8_t> out(*n);
  DecodeInput in;
  in.info = &info;
  for (const auto& s : streams) in.streams.emplace_back(s);
  auto st = codec->Decode(in, OutputType::kF32, absl::MakeSpan(out), {});
  EXPECT_TRUE(st.ok()) << st;
  return out;
}

class ElasticCut : public ::testing::TestWithParam<std::string> {};

TEST_P(ElasticCut, CutOfEncodedEqualsCutOfDecoded) {
  std::string codec_id = GetParam();
  bool bf16_source = codec_id.rfind("bf16-", 0) == 0;
  auto f32 = Source();
  std::vector<uint64_t> shape{kRows, kCols};
  std::vector<uint8_t> src_bytes(f32.size() * 4);
  std::memcpy(src_bytes.data(), f32.data(), src_bytes.size());
  DType dtype = DType::kF32;
  if (bf16_source) {
    // The lossless bf16 codecs take BF16 elements.
    auto enc = EncodeTensor("bf16", {"t", DType::kF32, shape, src_bytes}, {}, {});
    ASSERT_TRUE(enc.ok());
    src_bytes = enc->streams[0].bytes;
    dtype = DType::kBF16;
  }
  auto enc = EncodeTensor(codec_id, {"t", dtype, shape, src_bytes}, {}, {});
  ASSERT_TRUE(enc.ok()) << enc.status();
  TensorInfo info = RecordFor("t", dtype, shape, codec_id, *enc);
  std::vector<std::vector<uint8_t>> streams;
  std::vector<absl::Span<const uint8_t>> spans;
  for (auto& s : enc->streams) streams.push_back(s.bytes);
  for (auto& s : streams) spans.emplace_back(s);
  auto full = Decode(info, streams);
  std::vector<float> parent(full.size() / 4);
  std::memcpy(parent.data(), full.data(), full.size());

  // Rows 4, 1, 2 (a permutation-like gather) and columns: blocks 256..511
  // then 0..255 (whole blocks for every codec here), and a plain prefix.
  std::vector<uint64_t> rows{4, 1, 2}, cols;
  for (uint64_t c = 256; c < 512; ++c) cols.push_back(c);
  for (uint64_t c = 0; c < 256; ++c) cols.push_back(c);
  std::vector<uint64_t> prefix_rows{0, 1, 2, 3}, prefix_cols;
  for (uint64_t c = 0; c < 256; ++c) prefix_cols.push_back(c);
  for (const auto& maps : {format::ElementMaps{rows, cols}, format::ElementMaps{prefix_rows, prefix_cols},
                           format::ElementMaps{prefix_rows, {}}}) {
    auto cut = format::CutRawTensor(info, spans, maps, "t.cut");
    ASSERT_TRUE(cut.ok()) << cut.status();
    uint64_t out_cols = maps[1].empty() ? kCols : maps[1].size();
    ASSERT_EQ(cut->info.shape, (std::vector<uint64_t>{maps[0].size(), out_cols}));
    EXPECT_EQ(cut->info.codec_id, codec_id);
    auto got = Decode(cut->info, cut->streams);
    ASSERT_EQ(got.size(), maps[0].size() * out_cols * 4);
    for (uint64_t r = 0; r < maps[0].size(); ++r) {
      for (uint64_t c = 0; c < out_cols; ++c) {
        float want = parent[maps[0][r] * kCols + (maps[1].empty() ? c : maps[1][c])];
        float g;
        std::memcpy(&g, got.data() + (r * out_cols + c) * 4, 4);
        ASSERT_EQ(std::memcmp(&g, &want, 4), 0) << codec_id << " row " << r << " col " << c;
      }
    }
    // Block codecs: the cut is made of the parent's own cells.
    if (format::StoredCellLayout(codec_id, dtype, info.codec_params)) {
      EXPECT_EQ(cut->info.codec_params, info.codec_params);
    }
  }
  // A cut inside a block is refused, naming the block size.
  auto layout = format::StoredCellLayout(codec_id, dtype, info.codec_params);
  if (layout && layout->block_elems > 1) {
    std::vector<uint64_t> odd(layout->block_elems + 1);
    for (uint64_t c = 0; c < odd.size(); ++c) odd[c] = c;
    auto bad = format::CutRawTensor(info, spans, {{}, odd}, "t.bad");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(std::string(bad.status().message()).find(std::to_string(layout->block_elems)), std::string::npos)
        << bad.status();
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, ElasticCut,
                         ::testing::Values("f32", "f16", "bf16", "q8_0", "mxfp4", "nvfp4-ggml", "nvfp4", "int4-g128",
                                           "iq2_xxs", "bf16-huffman", "bf16-unary"),
                         [](const auto& p) {
                           std::string s = p.param;
                           for (auto& ch : s) ch = (ch == '-') ? '_' : ch;
                           return s;
                         });

}  // namespace
}  // namespace boltpack
