// Chunks hashed while they are decoded (format/chunk_hasher.h): a row
// block's uncompressed chunks are fed to XXH3 as the codec reports its
// progress, and every chunk a block touches is still checked whole, once per
// reader, before the decode returns, with the error naming the chunk.
#include <cstring>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "boltpack/writer.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::ReadFileBytes;

constexpr uint64_t kCols = 1024;

std::vector<float> Values(uint64_t n) {
  std::vector<float> v(n);
  uint32_t x = 12345;
  for (auto& f : v) {
    x = x * 1664525u + 1013904223u;
    f = (static_cast<float>(x >> 8) / 16777216.0f - 0.5f) * 0.1f;
  }
  return v;
}

// A .bolt of one tensor "w" of `rows` x 1024 values in `codec`, in memory;
// with `rows_per_chunk`, its chunks are cut to that many rows (many chunks
// in one row block).
std::vector<uint8_t> File(const std::string& codec, uint64_t rows, uint64_t rows_per_chunk = 0) {
  const std::vector<float> w = Values(rows * kCols);
  const std::vector<uint64_t> shape = {rows, kCols};
  TensorSource src{"w", DType::kF32, shape, {reinterpret_cast<const uint8_t*>(w.data()), w.size() * 4}};
  std::vector<uint16_t> bf;
  if (codec.rfind("bf16", 0) == 0) {
    bf.resize(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      uint32_t u;
      std::memcpy(&u, &w[i], 4);
      bf[i] = static_cast<uint16_t>(u >> 16);
    }
    src.dtype = DType::kBF16;
    src.bytes = {reinterpret_cast<const uint8_t*>(bf.data()), bf.size() * 2};
  }
  auto enc = EncodeTensor(codec, src, {}, {});
  EXPECT_TRUE(enc.ok()) << enc.status();
  if (rows_per_chunk > 0) {
    for (auto& s : enc->streams) {
      const uint64_t row_bytes = s.bytes.size() / rows;
      s.chunks.clear();
      for (uint64_t r = 0; r < rows; r += rows_per_chunk) {
        const uint64_t n = std::min(rows_per_chunk, rows - r);
        s.chunks.push_back(EncodedChunk{r * row_bytes, n * row_bytes, r, n});
      }
    }
  }
  const std::string path = MakeTempDir() + "/w.bolt";
  auto writer = Writer::Create(path, {.durable = false});
  EXPECT_TRUE(writer.ok()) << writer.status();
  EXPECT_TRUE((*writer)->AddTensor("w", shape, src.dtype, codec, std::move(*enc)).ok());
  EXPECT_TRUE((*writer)->Finish().ok());
  return ReadFileBytes(path);
}

// Flips a byte of chunk `k` of stream `s` of tensor 0, `into` its stored
// bytes (0: the first, 1: the last, else the middle).
void Corrupt(std::vector<uint8_t>& file, size_t s, size_t k, int into = 2) {
  auto r = Reader::OpenBuffer(file, "w.bolt");
  ASSERT_TRUE(r.ok()) << r.status();
  const StreamInfo info = (*r)->tensors()[0].streams[s];
  ASSERT_LT(k, info.chunks.size());
  const ChunkInfo& c = info.chunks[k];
  const uint64_t at = into == 0 ? 0 : into == 1 ? c.stored_length - 1 : c.stored_length / 2;
  file[info.offset + c.stored_offset + at] ^= 0x20;
}

std::string Mismatch(const Reader& r, size_t s, size_t k) {
  return "w.bolt: tensor \"w\" stream \"" + r.tensors()[0].streams[s].role + "\" chunk " + std::to_string(k) +
         ": checksum mismatch (manifest ";
}

absl::Status DecodeF32(const Reader& r, std::vector<uint8_t>& out, int threads) {
  out.assign(*r.DecodedBytes(0, OutputType::kF32), 0);
  return r.Decode(0, OutputType::kF32, absl::MakeSpan(out), {.threads = threads});
}

// The block codecs' and the raw codecs' DecodeRows report their progress.
class ManySmallChunks : public ::testing::TestWithParam<const char*> {};

TEST_P(ManySmallChunks, InOneBlockDecodeAsUncheckedAndEachIsChecked) {
  // 64 chunks of 8 rows (8.5 KiB each for q8_0, 32 KiB for f32): a row
  // block holds 8 to 30 of them.
  const std::vector<uint8_t> good = File(GetParam(), 512, 8);
  ReaderOptions unchecked;
  unchecked.verify_checksums = false;
  auto u = Reader::OpenBuffer(good, "w.bolt", unchecked);
  ASSERT_TRUE(u.ok()) << u.status();
  ASSERT_EQ((*u)->tensors()[0].streams[0].chunks.size(), 64u);
  std::vector<uint8_t> want, got;
  ASSERT_TRUE(DecodeF32(**u, want, 1).ok());
  for (int threads : {1, 3}) {
    auto r = Reader::OpenBuffer(good, "w.bolt");
    ASSERT_TRUE(DecodeF32(**r, got, threads).ok());
    EXPECT_EQ(got, want) << threads << " threads";
  }
  // A flipped byte at the start, middle or end of a chunk inside a block.
  for (int into : {0, 1, 2}) {
    std::vector<uint8_t> bad = good;
    Corrupt(bad, 0, 37, into);
    for (int threads : {1, 3}) {
      auto r = Reader::OpenBuffer(bad, "w.bolt");
      absl::Status st = DecodeF32(**r, got, threads);
      EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
      EXPECT_NE(st.message().find(Mismatch(**r, 0, 37)), std::string::npos) << st;
    }
    // A range that reads one row of the chunk checks the whole chunk; its
    // neighbours decode.
    auto r = Reader::OpenBuffer(bad, "w.bolt");
    std::vector<uint8_t> row(kCols * 4);
    const uint64_t last_row = 37 * 8 + 7;
    EXPECT_EQ((*r)->DecodeRows(0, last_row, last_row + 1, OutputType::kF32, absl::MakeSpan(row)).code(),
              absl::StatusCode::kDataLoss);
    EXPECT_TRUE((*r)->DecodeRows(0, 36 * 8, 37 * 8, OutputType::kF32, absl::MakeSpan(got)).ok());
    EXPECT_TRUE((*r)->DecodeRows(0, 38 * 8, 39 * 8, OutputType::kF32, absl::MakeSpan(got)).ok());
  }
}

INSTANTIATE_TEST_SUITE_P(ChunkHasher, ManySmallChunks, ::testing::Values("q8_0", "f32"));

TEST(ChunkHasher, EitherStreamOfAnEntropyCodedTensorIsNamed) {
  // bf16-huffman chunks of 2^18 values: 1024 x 1024 is four.
  const std::vector<uint8_t> good = File("bf16-huffman", 1024);
  for (size_t s : {0u, 1u}) {
    std::vector<uint8_t> bad = good;
    Corrupt(bad, s, 2);
    for (int threads : {1, 4}) {
      auto r = Reader::OpenBuffer(bad, "w.bolt");
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ((*r)->tensors()[0].streams[s].chunks.size(), 4u);
      std::vector<uint8_t> out;
      absl::Status st = DecodeF32(**r, out, threads);
      EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
      EXPECT_NE(st.message().find(Mismatch(**r, s, 2)), std::string::npos) << st;
    }
  }
  // Both streams damaged: the first stream's chunk is named, as before.
  std::vector<uint8_t> bad = good;
  Corrupt(bad, 1, 1);
  Corrupt(bad, 0, 1);
  auto r = Reader::OpenBuffer(bad, "w.bolt");
  std::vector<uint8_t> out;
  absl::Status st = DecodeF32(**r, out, 1);
  EXPECT_NE(st.message().find(Mismatch(**r, 0, 1)), std::string::npos) << st;
}

TEST(ChunkHasher, EachChunkIsHashedOncePerReader) {
  std::vector<uint8_t> file = File("q8_0", 512, 8);
  auto r = Reader::OpenBuffer(file, "w.bolt");
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint8_t> first, second;
  ASSERT_TRUE(DecodeF32(**r, first, 2).ok());
  // Bytes changed under a reader that already checked them are not hashed
  // again (the reader's memo): the decode reads them as they now are.
  Corrupt(file, 0, 10);
  ASSERT_TRUE(DecodeF32(**r, second, 2).ok());
  EXPECT_NE(first, second);
  // A new reader checks them.
  auto fresh = Reader::OpenBuffer(file, "w.bolt");
  absl::Status st = DecodeF32(**fresh, second, 2);
  EXPECT_NE(st.message().find(Mismatch(**fresh, 0, 10)), std::string::npos) << st;
}

}  // namespace
}  // namespace boltpack
