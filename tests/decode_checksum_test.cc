// Checksums on every decode (issue 15, spec container.md §7.4): Decode,
// DecodeRows, DecodeRowRanges, ReadRawStream, budgets, the C API and the CLI
// check the stored bytes they read, a row range only the chunks it reads,
// each chunk once per reader; ReaderOptions::verify_checksums = false,
// BP_OPEN_NO_VERIFY and --no-verify opt out. Also: zstd streams must show
// they can hold the raw length they declare before it is allocated.
#include <cstring>
#include <filesystem>

#include "boltpack/boltpack.h"
#include "boltpack/reader.h"
#include "boltpack/writer.h"
#include "boltpack_proto/boltpack.pb.h"
#include "common/checksum_status.h"
#include "gtest/gtest.h"
#include "tests/manifest_rewrite.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::ReadFileBytes;
using testing::RewriteManifest;
using testing::RunCli;
using testing::WriteFileBytes;

std::vector<float> Values(size_t n, float seed) {
  std::vector<float> v(n);
  uint32_t x = static_cast<uint32_t>(seed * 1000) | 1;
  for (auto& f : v) {
    x = x * 1664525u + 1013904223u;
    f = (static_cast<float>(x >> 8) / 16777216.0f - 0.5f) * seed;
  }
  return v;
}

absl::Span<const uint8_t> Bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

// A model whose tensors span several chunks: "w" q8_0 (4096 x 1024, about
// 4.3 MB in ~1 MiB chunks), "h" bf16-huffman (2048 x 512), "r" f32 (3 x 8,
// one chunk-less stream), "z" f32 under zstd (in chunks).
struct Model {
  std::string path;
  std::vector<float> w, h, r, z;
};

void Add(Writer& w, const std::string& name, std::vector<uint64_t> shape, const std::vector<float>& v,
         const std::string& codec) {
  TensorSource src{name, DType::kF32, shape, Bytes(v)};
  if (codec == "bf16-huffman") {
    // The bf16 codecs take bf16 elements: truncate.
    std::vector<uint16_t> bf(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      uint32_t u;
      std::memcpy(&u, &v[i], 4);
      bf[i] = static_cast<uint16_t>(u >> 16);
    }
    src.dtype = DType::kBF16;
    src.bytes = {reinterpret_cast<const uint8_t*>(bf.data()), bf.size() * 2};
    auto enc = EncodeTensor(codec, src, {}, {});
    ASSERT_TRUE(enc.ok()) << enc.status();
    ASSERT_TRUE(w.AddTensor(name, shape, DType::kBF16, codec, std::move(*enc)).ok());
    return;
  }
  auto enc = EncodeTensor(codec, src, {}, {});
  ASSERT_TRUE(enc.ok()) << enc.status();
  ASSERT_TRUE(w.AddTensor(name, shape, DType::kF32, codec, std::move(*enc)).ok());
}

Model WriteModel(const std::string& dir, int zstd_level = 0) {
  Model m;
  m.path = dir + "/m.bolt";
  m.w = Values(4096 * 1024, 1.0f);
  m.h = Values(2048 * 512, 0.05f);
  m.r = Values(24, 2.0f);
  m.z.assign(512 * 1024, 0.25f);  // compresses well
  for (size_t i = 0; i < m.z.size(); i += 7) m.z[i] = static_cast<float>(i % 13);
  WriterOptions opt;
  opt.zstd_level = zstd_level;
  auto w = Writer::Create(m.path, opt);
  EXPECT_TRUE(w.ok()) << w.status();
  Add(**w, "w", {4096, 1024}, m.w, "q8_0");
  Add(**w, "h", {2048, 512}, m.h, "bf16-huffman");
  Add(**w, "r", {3, 8}, m.r, "f32");
  Add(**w, "z", {512, 1024}, m.z, "f32");
  EXPECT_TRUE((*w)->Finish().ok());
  return m;
}

std::vector<uint8_t> DecodeAll(const Reader& r, size_t t, const ExecOptions& exec = {}) {
  auto n = r.DecodedBytes(t, OutputType::kF32);
  EXPECT_TRUE(n.ok()) << n.status();
  std::vector<uint8_t> out(n.ok() ? *n : 0);
  absl::Status st = r.Decode(t, OutputType::kF32, absl::MakeSpan(out), exec);
  EXPECT_TRUE(st.ok()) << st;
  return out;
}

// Flips one byte in the middle of chunk `k` of stream 0 of tensor `name`.
uint64_t CorruptChunk(const std::string& path, const std::string& name, size_t k) {
  uint64_t at = 0;
  {
    auto r = Reader::Open(path);
    EXPECT_TRUE(r.ok());
    const auto s = (*r)->tensors()[*(*r)->FindTensor(name)].streams[0];
    EXPECT_LT(k, std::max<size_t>(1, s.chunks.size()));
    at = s.offset + (s.chunks.empty() ? s.length / 2 : s.chunks[k].stored_offset + s.chunks[k].stored_length / 2);
  }
  auto bytes = ReadFileBytes(path);
  bytes[at] ^= 0x55;
  WriteFileBytes(path, bytes);
  return at;
}

TEST(DecodeChecksum, BlockDecodeEqualsWholeDecodeOnEveryThreadCount) {
  std::string dir = MakeTempDir();
  Model m = WriteModel(dir, /*zstd_level=*/3);
  auto r = Reader::Open(m.path);
  ASSERT_TRUE(r.ok()) << r.status();
  for (size_t t = 0; t < (*r)->tensors().size(); ++t) {
    const auto& info = (*r)->tensors()[t];
    std::vector<uint8_t> one = DecodeAll(**r, t, {.threads = 1});
    std::vector<uint8_t> many = DecodeAll(**r, t, {.threads = 4});
    ASSERT_EQ(one, many) << info.name;
    // Row by row, in two ranges, and with the checks off: the same bytes.
    const uint64_t rows = info.row_count(), row_bytes = one.size() / rows;
    std::vector<uint8_t> ranges(one.size());
    const RowRange parts[] = {{0, rows / 3}, {rows / 3, rows}};
    ASSERT_TRUE((*r)->DecodeRowRanges(t, "full", parts, OutputType::kF32, absl::MakeSpan(ranges), {.threads = 3}).ok());
    EXPECT_EQ(ranges, one) << info.name;
    std::vector<uint8_t> row(row_bytes);
    for (uint64_t i : {uint64_t{0}, rows / 2, rows - 1}) {
      ASSERT_TRUE((*r)->DecodeRows(t, i, i + 1, OutputType::kF32, absl::MakeSpan(row)).ok());
      EXPECT_EQ(0, std::memcmp(row.data(), one.data() + i * row_bytes, row_bytes)) << info.name << " row " << i;
    }
  }
  // The lossless and raw tensors are exact; q8_0 within its step.
  auto h = DecodeAll(**r, *(*r)->FindTensor("z"));
  EXPECT_EQ(0, std::memcmp(h.data(), m.z.data(), h.size()));
}

TEST(DecodeChecksum, EveryDecodePathRefusesACorruptChunkAndNamesIt) {
  std::string dir = MakeTempDir();
  Model m = WriteModel(dir);
  {
    auto r = Reader::Open(m.path);
    ASSERT_TRUE(r.ok());
    ASSERT_GE((*r)->tensors()[0].streams[0].chunks.size(), 3u);
  }
  CorruptChunk(m.path, "w", 2);
  auto r = Reader::Open(m.path);  // open does not read the data
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& info = (*r)->tensors()[0];
  const auto& chunk = info.streams[0].chunks[2];
  std::vector<uint8_t> out(info.element_count() * 4);
  for (int threads : {1, 4}) {
    absl::Status st = (*r)->Decode(0, OutputType::kF32, absl::MakeSpan(out), {.threads = threads});
    EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
    EXPECT_TRUE(IsChecksumMismatch(st)) << st;  // marked, not just worded (the C API's BP_ERR_CHECKSUM)
    EXPECT_NE(st.message().find(m.path + ": tensor \"w\" stream \"" + info.streams[0].role + "\" chunk 2: checksum mismatch"),
              std::string::npos)
        << st;
  }
  const uint64_t row_bytes = 1024 * 4;
  // Rows of the damaged chunk fail; rows of other chunks decode (only the
  // chunks a row range reads are checked).
  EXPECT_EQ((*r)->DecodeRows(0, chunk.first_row, chunk.first_row + 1, OutputType::kF32,
                             absl::MakeSpan(out.data(), row_bytes)).code(),
            absl::StatusCode::kDataLoss);
  EXPECT_TRUE((*r)->DecodeRows(0, 0, 1, OutputType::kF32, absl::MakeSpan(out.data(), row_bytes)).ok());
  const RowRange over[] = {{0, 1}, {chunk.first_row + chunk.row_count - 1, chunk.first_row + chunk.row_count}};
  EXPECT_EQ((*r)->DecodeRowRanges(0, "full", over, OutputType::kF32, absl::MakeSpan(out)).code(),
            absl::StatusCode::kDataLoss);
  std::vector<uint8_t> raw(info.streams[0].raw_length);
  EXPECT_EQ((*r)->ReadRawStream(0, 0, absl::MakeSpan(raw)).code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(IsChecksumMismatch((*r)->ReadRawStream(0, 0, absl::MakeSpan(raw))));
  EXPECT_TRUE(IsChecksumMismatch((*r)->VerifyContainer()));
  // The other tensors are intact.
  for (size_t t = 1; t < (*r)->tensors().size(); ++t) DecodeAll(**r, t);

  // Opting out decodes the damaged bytes.
  ReaderOptions unchecked;
  unchecked.verify_checksums = false;
  auto u = Reader::Open(m.path, unchecked);
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE((*u)->Decode(0, OutputType::kF32, absl::MakeSpan(out)).ok());
  EXPECT_TRUE((*u)->ReadRawStream(0, 0, absl::MakeSpan(raw)).ok());
}

TEST(DecodeChecksum, AChunkLessStreamIsCheckedWhole) {
  std::string dir = MakeTempDir();
  Model m = WriteModel(dir);
  CorruptChunk(m.path, "r", 0);
  auto r = Reader::Open(m.path);
  ASSERT_TRUE(r.ok());
  size_t t = *(*r)->FindTensor("r");
  ASSERT_TRUE((*r)->tensors()[t].streams[0].chunks.empty());
  std::vector<uint8_t> row(8 * 4);
  absl::Status st = (*r)->DecodeRows(t, 2, 3, OutputType::kF32, absl::MakeSpan(row));
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(IsChecksumMismatch(st)) << st;
  EXPECT_NE(st.message().find("tensor \"r\" stream \"data\": checksum mismatch (manifest "), std::string::npos) << st;
}

TEST(DecodeChecksum, CApiChecksByDefaultAndOptsOutWithAFlag) {
  std::string dir = MakeTempDir();
  Model m = WriteModel(dir);
  CorruptChunk(m.path, "w", 1);
  std::vector<float> out(m.w.size());
  bp_reader* r = nullptr;
  ASSERT_EQ(bp_open(m.path.c_str(), &r), BP_OK);
  // A checksum mismatch has its own code, of the CORRUPT kind.
  EXPECT_EQ(bp_decode(r, 0, BP_OUT_F32, out.data(), out.size() * 4, 2), BP_ERR_CHECKSUM);
  EXPECT_EQ(bp_status_kind(BP_ERR_CHECKSUM), BP_ERR_CORRUPT);
  EXPECT_NE(std::string(bp_last_error(r)).find("chunk 1: checksum mismatch"), std::string::npos) << bp_last_error(r);
  bp_close(r);
  ASSERT_EQ(bp_open_flags(m.path.c_str(), nullptr, BP_OPEN_NO_VERIFY, &r), BP_OK);
  EXPECT_EQ(bp_decode(r, 0, BP_OUT_F32, out.data(), out.size() * 4, 2), BP_OK);
  bp_close(r);
  EXPECT_EQ(bp_open_flags(m.path.c_str(), nullptr, 0x80u, &r), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(r, nullptr);
}

TEST(DecodeChecksum, ConvertRefusesCorruptInputToEveryOutputAndWritesNothing) {
  std::string dir = MakeTempDir();
  Model m = WriteModel(dir);
  CorruptChunk(m.path, "w", 1);
  const std::vector<std::vector<std::string>> cases = {
      {"-o", dir + "/a.safetensors"},
      {"-o", dir + "/b.bolt", "--codec", "*=q8_0"},  // re-encoding must not launder the damage
      {"-o", dir + "/c.bolt", "--codec", "*=f16"},
      {"-o", dir + "/d.gguf", "--codec", "*=bf16"},
      {"-o", dir + "/e.gguf"},  // q8_0 stored bytes copied as GGUF blocks
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"convert", m.path};
    args.insert(args.end(), c.begin(), c.end());
    auto res = RunCli(args);
    EXPECT_EQ(res.exit_code, 1) << c[1] << "\n" << res.output;
    EXPECT_NE(res.output.find("tensor \"w\" stream"), std::string::npos) << res.output;
    EXPECT_NE(res.output.find("checksum mismatch"), std::string::npos) << res.output;
    EXPECT_FALSE(std::filesystem::exists(c[1])) << c[1];
  }
  auto res = RunCli({"convert", m.path, "-o", dir + "/f.safetensors", "--no-verify"});
  EXPECT_EQ(res.exit_code, 0) << res.output;
}

TEST(DecodeChecksum, AZstdStreamMustHoldItsRawLengthBeforeItIsAllocated) {
  std::string dir = MakeTempDir();
  Model m = WriteModel(dir, /*zstd_level=*/3);
  auto bytes = ReadFileBytes(m.path);
  int z = -1;
  auto bomb = RewriteManifest(bytes, [&](v1::Manifest& man) {
    for (int t = 0; t < man.tensors_size(); ++t) {
      auto* tensor = man.mutable_tensors(t);
      if (tensor->name() != "z") continue;
      z = t;
      // 2^34 f32 values, one stream of 2^36 raw bytes in its one chunk.
      tensor->clear_shape();
      tensor->add_shape(uint64_t{1} << 24);
      tensor->add_shape(1024);
      auto* s = tensor->mutable_streams(0);
      ASSERT_EQ(s->compression(), v1::COMPRESSION_ZSTD);
      s->set_raw_length(uint64_t{1} << 36);
      s->clear_chunks();
    }
  });
  ASSERT_GE(z, 0);
  std::string path = dir + "/bomb.bolt";
  WriteFileBytes(path, bomb);
  auto r = Reader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status();
  auto n = (*r)->DecodedBytes(z, OutputType::kF32);
  EXPECT_EQ(n.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(n.status().message().find("zstd data holds 2097152 bytes, the manifest says 68719476736"), std::string::npos) << n.status();
  auto res = RunCli({"convert", path, "-o", dir + "/x.safetensors"});
  EXPECT_EQ(res.exit_code, 1) << res.output;
  EXPECT_NE(res.output.find("zstd data holds 2097152 bytes"), std::string::npos) << res.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/x.safetensors"));
}

}  // namespace
}  // namespace boltpack
