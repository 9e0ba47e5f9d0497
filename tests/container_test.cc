// Container writer/reader: round trips, hostile bytes (every single-byte
// flip, every truncation), atomic output, copy-through of unknown codecs.
#include <filesystem>
#include <random>

#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "boltpack/writer.h"
#include "boltpack_proto/boltpack.pb.h"
#include "format/layout.h"
#include "gtest/gtest.h"
#include "tests/manifest_rewrite.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::RewriteManifest;
using testing::ReadFileBytes;
using testing::WriteFileBytes;

std::vector<float> Ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(static_cast<int>(i % 97) - 48);
  return v;
}

absl::Span<const uint8_t> Bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

void AddF32(Writer& w, const std::string& name, std::vector<uint64_t> shape, const std::vector<float>& values,
            const std::string& codec = "f32") {
  TensorSource src{name, DType::kF32, shape, Bytes(values)};
  auto enc = EncodeTensor(codec, src, {}, {});
  ASSERT_TRUE(enc.ok()) << enc.status();
  ASSERT_TRUE(w.AddTensor(name, shape, DType::kF32, codec, std::move(*enc)).ok());
}

// A small file: two tensors and metadata, alignment 64.
std::string WriteSmallFile(const std::string& dir, int zstd_level = 0) {
  std::string path = dir + "/small.bolt";
  WriterOptions opt;
  opt.alignment = 64;
  opt.zstd_level = zstd_level;
  auto w = Writer::Create(path, opt);
  EXPECT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE((*w)->AddMetadata("general.name", MetaValue::String("tiny")).ok());
  EXPECT_TRUE((*w)->AddMetadata("n", MetaValue::Uint(ValueType::kUint32, 7)).ok());
  AddF32(**w, "a", {4, 3}, Ramp(12, 0.5f));
  AddF32(**w, "b", {5}, Ramp(5, -0.25f), "bf16");
  EXPECT_TRUE((*w)->Finish().ok());
  return path;
}

// Rewrites a valid file's manifest (fixing the footer) so that a test can
// break exactly one rule.
TEST(Container, RoundTripValuesAndMetadata) {
  std::string dir = MakeTempDir();
  std::string path = WriteSmallFile(dir);
  auto r = Reader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->version().major, 1u);
  EXPECT_EQ((*r)->alignment(), 64u);
  ASSERT_EQ((*r)->tensors().size(), 2u);
  ASSERT_EQ((*r)->metadata().size(), 2u);
  EXPECT_EQ((*r)->metadata()[0].first, "general.name");
  EXPECT_EQ((*r)->metadata()[0].second.s, "tiny");
  EXPECT_EQ((*r)->metadata()[1].second.type, ValueType::kUint32);
  EXPECT_EQ((*r)->metadata()[1].second.u, 7u);
  std::vector<float> a(12);
  ASSERT_TRUE((*r)->Decode(0, OutputType::kF32, {reinterpret_cast<uint8_t*>(a.data()), 48}).ok());
  EXPECT_EQ(a, Ramp(12, 0.5f));
  // Row-range read equals the matching slice.
  std::vector<float> rows(6);
  ASSERT_TRUE((*r)->DecodeRows(0, 1, 3, OutputType::kF32, {reinterpret_cast<uint8_t*>(rows.data()), 24}).ok());
  EXPECT_EQ(rows, std::vector<float>(a.begin() + 3, a.begin() + 9));
  // Zero-copy span of an uncompressed stream points into the mapping, aligned.
  auto span = (*r)->StoredStream(0, 0);
  ASSERT_TRUE(span.ok());
  EXPECT_EQ(span->size(), 48u);
  EXPECT_EQ((*r)->tensors()[0].streams[0].offset % 64, 0u);
  EXPECT_TRUE((*r)->VerifyContainer().ok());
}

TEST(Container, TensorShapeReadsTheRecordAsItsTensorInfoHasIt) {
  std::string dir = MakeTempDir();
  std::string path = dir + "/shapes.bolt";
  auto w = Writer::Create(path, WriterOptions{});
  ASSERT_TRUE(w.ok()) << w.status();
  AddF32(**w, "a", {4, 3}, Ramp(12, 0.5f));
  AddF32(**w, "b", {5}, Ramp(5, -0.25f), "bf16");
  AddF32(**w, "empty", {2, 0, 300}, {});
  AddF32(**w, "wide", {1, 2, 1, 200}, Ramp(400, 1.0f));
  ASSERT_TRUE((*w)->Finish().ok());
  auto r = Reader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ((*r)->tensors().size(), 4u);
  std::vector<uint64_t> dims = {77};  // appended to, not replaced
  std::vector<uint64_t> want = {77};
  for (size_t i = 0; i < 4; ++i) {
    const TensorInfo info = (*r)->tensors()[i];
    EXPECT_EQ((*r)->TensorShape(i, &dims), info.dtype) << info.name;
    want.insert(want.end(), info.shape.begin(), info.shape.end());
  }
  EXPECT_EQ(dims, want);
  EXPECT_EQ(dims, (std::vector<uint64_t>{77, 4, 3, 5, 2, 0, 300, 1, 2, 1, 200}));
}

TEST(Container, TensorCodecReadsTheRecordAsItsTensorInfoHasIt) {
  std::string dir = MakeTempDir();
  std::string path = dir + "/codecs.bolt";
  WriterOptions opt;
  opt.zstd_level = 3;  // compressed streams: stored bytes differ from raw
  auto w = Writer::Create(path, opt);
  ASSERT_TRUE(w.ok()) << w.status();
  AddF32(**w, "a", {4, 64}, Ramp(256, 0.5f));
  AddF32(**w, "b", {8, 32}, Ramp(256, -0.25f), "bf16");
  AddF32(**w, "q", {2, 64}, Ramp(128, 0.1f), "q8_0");
  AddF32(**w, "empty", {2, 0, 300}, {});
  ASSERT_TRUE((*w)->Finish().ok());
  auto r = Reader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ((*r)->tensors().size(), 4u);
  std::vector<std::string> codecs;
  for (size_t i = 0; i < 4; ++i) {
    const TensorInfo info = (*r)->tensors()[i];
    uint64_t stored = 12345;
    codecs.push_back((*r)->TensorCodec(i, &stored));
    EXPECT_EQ(codecs.back(), info.codec_id) << info.name;
    EXPECT_EQ(stored, info.stored_bytes()) << info.name;
  }
  EXPECT_EQ(codecs, (std::vector<std::string>{"f32", "bf16", "q8_0", "f32"}));
  // The q8_0 blocks (2 a row, 34 bytes each) are stored compressed: the
  // size read is the stored one, not the raw one.
  uint64_t stored = 0;
  EXPECT_EQ((*r)->TensorCodec(2, &stored), "q8_0");
  EXPECT_LT(stored, 2u * 2u * 34u);
  EXPECT_GT(stored, 0u);
}

TEST(Container, ZstdChunkedStreamsDecodeAndReadRows) {
  std::string dir = MakeTempDir();
  std::string path = dir + "/z.bolt";
  WriterOptions opt;
  opt.zstd_level = 3;
  opt.threads = 2;
  auto w = Writer::Create(path, opt);
  ASSERT_TRUE(w.ok());
  // 3 MiB of compressible rows: the raw codec cuts ~1 MiB chunks.
  std::vector<float> big = Ramp(768 * 1024, 1.0f);
  AddF32(**w, "big", {768, 1024}, big);
  ASSERT_TRUE((*w)->Finish().ok());
  auto r = Reader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status();
  const auto s = (*r)->tensors()[0].streams[0];
  EXPECT_EQ(s.compression, Compression::kZstd);
  EXPECT_GT(s.chunks.size(), 1u);
  EXPECT_LT(s.length, s.raw_length / 4);
  EXPECT_EQ((*r)->required_features(), std::vector<std::string>{"zstd"});
  std::vector<float> out(big.size());
  ExecOptions exec;
  exec.threads = 2;
  ASSERT_TRUE((*r)->Decode(0, OutputType::kF32, {reinterpret_cast<uint8_t*>(out.data()), out.size() * 4}, exec).ok());
  EXPECT_EQ(out, big);
  std::vector<float> rows(10 * 1024);
  ASSERT_TRUE((*r)->DecodeRows(0, 700, 710, OutputType::kF32, {reinterpret_cast<uint8_t*>(rows.data()), rows.size() * 4}).ok());
  EXPECT_TRUE(std::equal(rows.begin(), rows.end(), big.begin() + 700 * 1024));
  EXPECT_TRUE((*r)->VerifyContainer().ok());
}

TEST(Container, EverySingleByteFlipIsCaught) {
  std::string dir = MakeTempDir();
  auto good = ReadFileBytes(WriteSmallFile(dir));
  ASSERT_LT(good.size(), 4096u);
  for (size_t i = 0; i < good.size(); ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}}) {
      auto bad = good;
      bad[i] ^= mask;
      auto r = Reader::OpenBuffer(bad, "flip.bolt");
      if (!r.ok()) continue;
      absl::Status v = (*r)->VerifyContainer();
      ASSERT_FALSE(v.ok()) << "flip of byte " << i << " mask " << int(mask) << " not detected";
    }
  }
}

TEST(Container, EveryTruncationIsRejected) {
  std::string dir = MakeTempDir();
  auto good = ReadFileBytes(WriteSmallFile(dir, 3));
  for (size_t len = 0; len < good.size(); ++len) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(len));
    auto r = Reader::OpenBuffer(cut, "cut.bolt");
    ASSERT_FALSE(r.ok()) << "truncation to " << len << " bytes accepted";
  }
  // Appended bytes are rejected too.
  auto longer = good;
  longer.push_back(0);
  EXPECT_FALSE(Reader::OpenBuffer(longer, "long.bolt").ok());
}

TEST(Container, ErrorsNameFileAndProblem) {
  std::string dir = MakeTempDir();
  WriteFileBytes(dir + "/text.bolt", std::vector<uint8_t>(200, 'x'));
  auto r = Reader::Open(dir + "/text.bolt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("text.bolt"), std::string::npos);
  EXPECT_NE(r.status().message().find("not a bolt-pack file"), std::string::npos);
  auto missing = Reader::Open(dir + "/nope.bolt");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST(Container, UnknownCodecListsAndCopiesButDoesNotDecode) {
  std::string dir = MakeTempDir();
  auto good = ReadFileBytes(WriteSmallFile(dir));
  auto bad = RewriteManifest(good, [](v1::Manifest& m) { m.mutable_tensors(0)->mutable_codec()->set_id("future-codec"); });
  WriteFileBytes(dir + "/future.bolt", bad);
  auto r = Reader::Open(dir + "/future.bolt");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->tensors()[0].codec_id, "future-codec");
  std::vector<uint8_t> buf(48);
  absl::Status st = (*r)->Decode(0, OutputType::kF32, absl::MakeSpan(buf));
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("future-codec"), std::string::npos);
  EXPECT_NE(st.message().find("\"a\""), std::string::npos);
  // Copy-through keeps the bytes and the codec id.
  auto w = Writer::Create(dir + "/copy.bolt", {.alignment = 64, .inputs = {dir + "/future.bolt"}});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->CopyTensor(**r, 0).ok());
  ASSERT_TRUE((*w)->CopyTensor(**r, 1).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  auto c = Reader::Open(dir + "/copy.bolt");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->tensors()[0].codec_id, "future-codec");
  EXPECT_EQ(*(*c)->StoredStream(0, 0), *(*r)->StoredStream(0, 0));
  EXPECT_TRUE((*c)->VerifyContainer().ok());
}

TEST(Container, UnknownRequiredFeatureListsButRefusesDecode) {
  std::string dir = MakeTempDir();
  auto bad = RewriteManifest(ReadFileBytes(WriteSmallFile(dir)),
                             [](v1::Manifest& m) { m.add_required_features("time-travel"); });
  auto r = Reader::OpenBuffer(bad, "f.bolt");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->missing_features(), std::vector<std::string>{"time-travel"});
  EXPECT_EQ((*r)->tensors().size(), 2u);
  std::vector<uint8_t> buf(48);
  absl::Status st = (*r)->Decode(0, OutputType::kF32, absl::MakeSpan(buf));
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("time-travel"), std::string::npos);
}

TEST(Container, ManifestRulesAreEnforced) {
  std::string dir = MakeTempDir();
  auto good = ReadFileBytes(WriteSmallFile(dir));
  struct Case {
    const char* what;
    std::function<void(v1::Manifest&)> edit;
  };
  std::vector<Case> cases = {
      {"overlap", [](v1::Manifest& m) { m.mutable_tensors(1)->mutable_streams(0)->set_offset(m.tensors(0).streams(0).offset()); }},
      {"lie outside", [](v1::Manifest& m) { m.mutable_tensors(0)->mutable_streams(0)->set_length(1 << 20); }},
      {"not a multiple", [](v1::Manifest& m) { m.mutable_tensors(0)->mutable_streams(0)->set_offset(65); }},
      {"dimensions", [](v1::Manifest& m) { for (int i = 0; i < 9; ++i) m.mutable_tensors(0)->add_shape(1); }},
      {"duplicate tensor", [](v1::Manifest& m) { m.mutable_tensors(1)->set_name("a"); }},
      {"out of range", [](v1::Manifest& m) { m.mutable_tensors(0)->set_dtype(static_cast<v1::DType>(300)); }},
      {"zstd", [](v1::Manifest& m) { m.mutable_tensors(0)->mutable_streams(0)->set_compression(v1::COMPRESSION_ZSTD); }},
      {"out of range", [](v1::Manifest& m) { m.mutable_metadata(1)->mutable_value()->set_u(1ull << 40); }},
      {"duplicate metadata", [](v1::Manifest& m) { m.mutable_metadata(1)->set_key("general.name"); }},
      {"element count", [](v1::Manifest& m) { m.mutable_tensors(0)->set_shape(0, 1ull << 40); m.mutable_tensors(0)->set_shape(1, 1ull << 40); }},
  };
  for (const auto& c : cases) {
    auto r = Reader::OpenBuffer(RewriteManifest(good, c.edit), "m.bolt");
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_NE(r.status().message().find(c.what), std::string::npos) << c.what << ": " << r.status();
  }
  // A dtype of a later minor version lists but does not decode.
  {
    // OpenBuffer reads the caller's bytes for as long as the reader lives.
    const auto later_dtype = RewriteManifest(good, [](v1::Manifest& m) { m.mutable_tensors(0)->set_dtype(static_cast<v1::DType>(99)); });
    auto r = Reader::OpenBuffer(later_dtype, "d.bolt");
    ASSERT_TRUE(r.ok()) << r.status();
    std::vector<uint8_t> buf(48);
    EXPECT_EQ((*r)->Decode(0, OutputType::kF32, absl::MakeSpan(buf)).code(), absl::StatusCode::kUnimplemented);
  }
  // A raw length that disagrees with the shape opens (the codec is asked at
  // decode time) but does not decode.
  const auto short_shape = RewriteManifest(good, [](v1::Manifest& m) { m.mutable_tensors(0)->set_shape(0, 5); });
  auto r = Reader::OpenBuffer(short_shape, "m.bolt");
  ASSERT_TRUE(r.ok());
  std::vector<uint8_t> buf(1000);
  EXPECT_FALSE((*r)->Decode(0, OutputType::kF32, absl::MakeSpan(buf)).ok());
}

TEST(Container, WriterIsAtomicAndRefusesToOverwriteInputs) {
  std::string dir = MakeTempDir();
  std::string path = WriteSmallFile(dir);
  auto before = ReadFileBytes(path);
  {
    auto w = Writer::Create(path, {.inputs = {path}});
    ASSERT_FALSE(w.ok());
    EXPECT_NE(w.status().message().find("refusing to overwrite"), std::string::npos);
  }
  {
    // Abandoned writer: the destination is untouched, no temporary remains.
    auto w = Writer::Create(path, {.alignment = 64});
    ASSERT_TRUE(w.ok());
    AddF32(**w, "x", {2}, Ramp(2, 1));
  }
  EXPECT_EQ(ReadFileBytes(path), before);
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
}

TEST(Container, ZeroDimAndEmptyTensors) {
  std::string dir = MakeTempDir();
  auto w = Writer::Create(dir + "/e.bolt", {.alignment = 64});
  ASSERT_TRUE(w.ok());
  AddF32(**w, "scalar", {}, {3.5f});
  AddF32(**w, "empty", {0, 4}, {});
  ASSERT_TRUE((*w)->Finish().ok());
  auto r = Reader::Open(dir + "/e.bolt");
  ASSERT_TRUE(r.ok()) << r.status();
  float v = 0;
  ASSERT_TRUE((*r)->Decode(0, OutputType::kF32, {reinterpret_cast<uint8_t*>(&v), 4}).ok());
  EXPECT_EQ(v, 3.5f);
  EXPECT_EQ(*(*r)->DecodedBytes(1, OutputType::kF32), 0u);
  EXPECT_TRUE((*r)->VerifyContainer().ok());
}

}  // namespace
}  // namespace boltpack
