// Cutting in place (format/cut_pieces.h): the pieces handed to a writer are
// the bytes and record CutStoredTensor produces, for contiguous, strided and
// whole cuts; source chunks holding kept bytes are verified (also when the
// check runs on the writer's side thread, after the part was written), and
// chunks holding only dropped bytes are not read; the pages of a file
// mapping are dropped from the address space behind the pieces (never a
// caller's buffer's).
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "boltpack/reader.h"
#include "boltpack/writer.h"
#include "format/cut_pieces.h"
#include "format/elastic_cut.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;

// [16, 256, 256] f32: 4 MiB in 4 chunks of 4 outer rows (1 MiB each), so
// the writer checks and hashes it on its side thread.
constexpr uint64_t kRows = 16, kMid = 256, kInner = 256;

std::string WriteSource(const std::string& dir, uint64_t rows = kRows) {
  std::string path = dir + "/src.bolt";
  std::vector<float> v(rows * kMid * kInner);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 9973) * 0.25f;
  std::vector<uint64_t> shape = {rows, kMid, kInner};
  TensorSource src{"t", DType::kF32, shape, {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4}};
  auto enc = EncodeTensor("f32", src, {}, {});
  EXPECT_TRUE(enc.ok()) << enc.status();
  auto w = Writer::Create(path);
  EXPECT_TRUE(w.ok());
  EXPECT_TRUE((*w)->AddTensor("t", shape, DType::kF32, "f32", std::move(*enc)).ok());
  EXPECT_TRUE((*w)->Finish().ok());
  return path;
}

std::vector<uint8_t> Drain(PieceSource& p) {
  std::vector<uint8_t> out;
  for (;;) {
    auto piece = p.Next();
    EXPECT_TRUE(piece.ok()) << piece.status();
    if (!piece.ok() || piece->empty()) break;
    EXPECT_TRUE(p.Check(*piece).ok());
    out.insert(out.end(), piece->begin(), piece->end());
  }
  return out;
}

format::ElementMaps Maps(std::vector<uint64_t> kept) {
  return format::PrefixMaps(std::vector<uint64_t>{kRows, kMid, kInner}, kept);
}

TEST(CutPieces, SameBytesAndRecordAsCutStoredTensor) {
  std::string dir = MakeTempDir();
  auto r = Reader::Open(WriteSource(dir));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ((*r)->tensors()[0].streams[0].chunks.size(), 4u);
  // Outer prefix (one range), a middle cut (a run per row), an innermost
  // cut (short runs, gathered), and no cut at all.
  for (std::vector<uint64_t> kept : {std::vector<uint64_t>{12, kMid, kInner}, {16, 64, kInner}, {12, kMid, 128},
                                     {kRows, kMid, kInner}}) {
    SCOPED_TRACE(::testing::PrintToString(kept));
    auto cut = format::CutTensorInPlace(**r, 0, Maps(kept), "u");
    ASSERT_TRUE(cut.has_value());
    auto want = format::CutStoredTensor(**r, 0, Maps(kept), "u");
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_EQ(cut->info.shape, want->info.shape);
    ASSERT_EQ(cut->info.streams.size(), 1u);
    EXPECT_EQ(cut->info.streams[0].chunks.size(), want->info.streams[0].chunks.size());
    EXPECT_EQ(cut->streams[0]->size(), want->streams[0].size());
    EXPECT_EQ(Drain(*cut->streams[0]), want->streams[0]);
    // Written through the writer: identical streams and checksums.
    auto a = Writer::Create(dir + "/a.bolt");
    auto b = Writer::Create(dir + "/b.bolt");
    ASSERT_TRUE(a.ok() && b.ok());
    auto again = format::CutTensorInPlace(**r, 0, Maps(kept), "u");
    ASSERT_TRUE((*a)->AddStoredTensor(std::move(again->info), again->pieces()).ok());
    std::vector<absl::Span<const uint8_t>> spans(want->streams.begin(), want->streams.end());
    ASSERT_TRUE((*b)->AddStoredTensor(want->info, spans).ok());
    ASSERT_TRUE((*a)->Finish().ok());
    ASSERT_TRUE((*b)->Finish().ok());
    auto ra = Reader::Open(dir + "/a.bolt");
    auto rb = Reader::Open(dir + "/b.bolt");
    ASSERT_TRUE(ra.ok() && rb.ok());
    const StreamInfo sa = (*ra)->tensors()[0].streams[0];
    const StreamInfo sb = (*rb)->tensors()[0].streams[0];
    EXPECT_EQ(sa.xxh3, sb.xxh3);
    ASSERT_EQ(sa.chunks.size(), sb.chunks.size());
    for (size_t c = 0; c < sa.chunks.size(); ++c) EXPECT_EQ(sa.chunks[c].xxh3, sb.chunks[c].xxh3);
    EXPECT_TRUE((*ra)->VerifyContainer().ok());
  }
}

TEST(CutPieces, KeptChunksAreVerifiedDroppedOnesAreNotRead) {
  std::string dir = MakeTempDir();
  std::string src = WriteSource(dir);
  uint64_t offset = 0;
  {
    auto r = Reader::Open(src);
    ASSERT_TRUE(r.ok());
    offset = (*r)->tensors()[0].streams[0].offset;
  }
  const uint64_t row = kMid * kInner * 4;
  auto clean = testing::ReadFileBytes(src);
  // A byte of row 14 (chunk 3): dropped by a cut keeping 12 rows.
  auto bytes = clean;
  bytes[offset + 14 * row + 100] ^= 1;
  testing::WriteFileBytes(src, bytes);
  {
    auto r = Reader::Open(src);
    ASSERT_TRUE(r.ok());
    auto cut = format::CutTensorInPlace(**r, 0, Maps({12, kMid, 128}), "u");
    auto w = Writer::Create(dir + "/ok.bolt");
    ASSERT_TRUE(w.ok());
    EXPECT_TRUE((*w)->AddStoredTensor(std::move(cut->info), cut->pieces()).ok());
    EXPECT_TRUE((*w)->Finish().ok());
  }
  // A byte of row 9 (chunk 2), kept: reported whether the part is checked
  // inline or on the side thread (outer cut: whole 1 MiB parts) or gathered.
  bytes = clean;
  bytes[offset + 9 * row + 4] ^= 1;
  testing::WriteFileBytes(src, bytes);
  for (std::vector<uint64_t> kept : {std::vector<uint64_t>{12, kMid, kInner}, {12, kMid, 128}}) {
    SCOPED_TRACE(::testing::PrintToString(kept));
    auto r = Reader::Open(src);
    ASSERT_TRUE(r.ok());
    auto cut = format::CutTensorInPlace(**r, 0, Maps(kept), "u");
    ASSERT_TRUE(cut.has_value());
    std::string out = dir + "/bad.bolt";
    auto w = Writer::Create(out);
    ASSERT_TRUE(w.ok());
    absl::Status st = (*w)->AddStoredTensor(std::move(cut->info), cut->pieces());
    EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
    EXPECT_NE(std::string(st.message()).find("chunk 2 checksum mismatch"), std::string::npos) << st;
    // The writer is failed: nothing is committed.
    EXPECT_FALSE((*w)->Finish().ok());
    w->reset();
    EXPECT_FALSE(std::filesystem::exists(out));
  }
}

size_t PresentPages(absl::Span<const uint8_t> bytes) { return testing::PresentPages(bytes.data(), bytes.size()); }

TEST(CutPieces, MappedPagesAreReleasedBehindThePieces) {
  // [64 + 3 steps, 256, 256] f32 (a 256 KiB row): all but 16 rows kept, in
  // 1 MiB pieces, so pages are released during the pass.
  constexpr uint64_t kBigRows = 64 + 3 * format::kReleaseStepBytes / (kMid * kInner * 4);
  std::string dir = MakeTempDir();
  auto r = Reader::Open(WriteSource(dir, kBigRows));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE((*r)->mapped());
  auto stored = (*r)->StoredStream(0, 0);
  ASSERT_TRUE(stored.ok());
  auto maps = format::PrefixMaps(std::vector<uint64_t>{kBigRows, kMid, kInner}, {kBigRows - 16, kMid, kInner});
  std::vector<uint8_t> out;
  {
    auto cut = format::CutTensorInPlace(**r, 0, maps, "u");
    ASSERT_TRUE(cut.has_value());
    size_t most_present = 0;
    for (;;) {
      auto piece = cut->streams[0]->Next();
      ASSERT_TRUE(piece.ok()) << piece.status();
      if (piece->empty()) break;
      ASSERT_TRUE(cut->streams[0]->Check(*piece).ok());
      out.insert(out.end(), piece->begin(), piece->end());
      most_present = std::max(most_present, PresentPages(*stored));
    }
    // Up to a release step, the pieces a writer may still hold (LivePieces,
    // 1 MiB each) and the chunk being verified; not the 108 MiB read.
    EXPECT_LE(most_present, (format::kReleaseStepBytes + (6u << 20)) / 4096);
    EXPECT_GE(most_present, 1u);
  }
  // The rest goes with the cut.
  EXPECT_LE(PresentPages(*stored), 2u);
  auto reference = format::CutStoredTensor(**r, 0, maps, "u");
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_EQ(out, reference->streams[0]);
}

TEST(CutPieces, BufferBytesAreNeverReleased) {
  // Over a caller's buffer, dropping pages would zero them: they stay.
  std::string dir = MakeTempDir();
  std::vector<uint8_t> file = testing::ReadFileBytes(WriteSource(dir, 64));
  const std::vector<uint8_t> copy = file;
  auto r = Reader::OpenBuffer(file, "buffer.bolt");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE((*r)->mapped());
  {
    auto cut = format::CutTensorInPlace(**r, 0, format::PrefixMaps(std::vector<uint64_t>{64, kMid, kInner}, {48, kMid, kInner}), "u");
    ASSERT_TRUE(cut.has_value());
    EXPECT_EQ(Drain(*cut->streams[0]).size(), 48 * kMid * kInner * 4);
  }
  EXPECT_TRUE(file == copy);
}

}  // namespace
}  // namespace boltpack
