// Views (format 1.1, spec/container.md "Views"): placement of streams only
// the full view reads after every other stream, Manifest.views and its
// ranges, decoding in a view without touching the bytes it does not read,
// validation of view declarations, the CLI and the C API.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>

#include "boltpack/boltpack.h"
#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "boltpack/writer.h"
#include "boltpack_proto/boltpack.pb.h"
#include "common/str_cat.h"
#include "format/layout.h"
#include "gtest/gtest.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "tests/manifest_rewrite.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::RewriteManifest;
using testing::ReadFileBytes;
using testing::RunCli;
using testing::SourceDir;
using testing::WriteFileBytes;

// A toy view-aware codec for F32 tensors: stream "hi" (every view) holds the
// upper 16 bits of each value, stream "lo" (only "full") the lower 16. The
// draft view decodes hi << 16 (bf16 truncation); full decodes exactly.
class SplitF32Codec : public Codec {
 public:
  static constexpr const char* kId = "x-views-split";
  std::string_view id() const override { return kId; }
  std::string_view description() const override { return "test: f32 as hi/lo halves"; }
  absl::Status CanEncode(DType dtype, absl::Span<const uint64_t>, const CodecParams&) const override {
    return dtype == DType::kF32 ? absl::OkStatus() : absl::InvalidArgumentError("F32 only");
  }
  absl::StatusOr<EncodedTensor> Encode(const TensorSource& src, const CodecParams&, const ExecOptions&) const override {
    size_t n = src.bytes.size() / 4;
    EncodedTensor e;
    e.streams.resize(2);
    e.streams[0].role = "hi";
    e.streams[1].role = "lo";
    e.streams[1].views = {"full"};
    for (size_t i = 0; i < n; ++i) {
      uint32_t v;
      std::memcpy(&v, src.bytes.data() + 4 * i, 4);
      for (int b = 0; b < 2; ++b) {
        e.streams[0].bytes.push_back(static_cast<uint8_t>(v >> (16 + 8 * b)));
        e.streams[1].bytes.push_back(static_cast<uint8_t>(v >> (8 * b)));
      }
    }
    return e;
  }
  absl::Status ValidateRecord(const TensorInfo& info) const override {
    uint64_t n = info.element_count();
    if (info.dtype != DType::kF32 || info.streams.size() != 2 || info.streams[0].role != "hi" ||
        info.streams[1].role != "lo" || info.streams[0].raw_length != 2 * n || info.streams[1].raw_length != 2 * n) {
      return absl::DataLossError(StrCat("tensor \"", info.name, "\": not a split record"));
    }
    return absl::OkStatus();
  }
  bool CanDecodeTo(const TensorInfo&, OutputType out) const override { return out == OutputType::kF32; }
  absl::StatusOr<uint64_t> DecodedBytes(const TensorInfo& info, OutputType) const override {
    return info.element_count() * 4;
  }
  absl::Status Decode(const DecodeInput& in, OutputType, absl::Span<uint8_t> dst, const ExecOptions&) const override {
    uint64_t n = in.info->element_count();
    bool full = in.view.empty() || in.view == "full";
    if (in.streams[0].size() != 2 * n || (full ? in.streams[1].size() != 2 * n : !in.streams[1].empty())) {
      return absl::InvalidArgumentError("stream sizes differ from the view");
    }
    for (uint64_t i = 0; i < n; ++i) {
      uint32_t v = (uint32_t{in.streams[0][2 * i]} << 16) | (uint32_t{in.streams[0][2 * i + 1]} << 24);
      if (full) v |= uint32_t{in.streams[1][2 * i]} | (uint32_t{in.streams[1][2 * i + 1]} << 8);
      std::memcpy(dst.data() + 4 * i, &v, 4);
    }
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> EncodedSize(DType, absl::Span<const uint64_t> shape, const CodecParams&) const override {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    return 4 * n;
  }
  std::vector<int> SliceableAxes(absl::Span<const uint64_t>, const CodecParams&) const override { return {}; }
};

void RegisterSplitCodec() {
  static bool once = [] {
    EXPECT_TRUE(RegisterCodec(std::make_unique<SplitF32Codec>()).ok());
    return true;
  }();
  (void)once;
}

std::vector<float> Values(size_t n, float seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = seed * (static_cast<float>(i % 101) - 50.3f) / 7.1f;
  return v;
}

absl::Span<const uint8_t> Bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

float Truncated(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u &= 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Fixture {
  std::string path;
  std::vector<std::vector<float>> values;  // a, b, c
};

void Add(Writer& w, const std::string& name, const std::vector<float>& v, const std::string& codec) {
  std::vector<uint64_t> shape = {v.size() / 8, 8};
  TensorSource src{name, DType::kF32, shape, Bytes(v)};
  auto enc = EncodeTensor(codec, src, {}, {});
  ASSERT_TRUE(enc.ok()) << enc.status();
  ASSERT_TRUE(w.AddTensor(name, shape, DType::kF32, codec, std::move(*enc)).ok());
}

// Tensors a (split), b (plain f32), c (split): the "lo" streams of a and c
// are only read by the full view.
Fixture WriteViewFile(const std::string& dir, uint64_t alignment = 64) {
  RegisterSplitCodec();
  Fixture f;
  f.path = dir + "/views.bolt";
  f.values = {Values(8 * 40, 1.0f), Values(8 * 3, -2.0f), Values(8 * 25, 0.37f)};
  WriterOptions opt;
  opt.alignment = alignment;
  auto w = Writer::Create(f.path, opt);
  EXPECT_TRUE(w.ok()) << w.status();
  Add(**w, "a", f.values[0], SplitF32Codec::kId);
  Add(**w, "b", f.values[1], "f32");
  Add(**w, "c", f.values[2], SplitF32Codec::kId);
  // A view-tagged stream that is also read by the draft view.
  EXPECT_TRUE((*w)->Finish().ok());
  return f;
}

std::vector<float> DecodeF32(const Reader& r, size_t t, std::string_view view) {
  auto n = r.DecodedBytes(t, OutputType::kF32);
  EXPECT_TRUE(n.ok()) << n.status();
  std::vector<float> out(*n / 4);
  auto dst = absl::MakeSpan(reinterpret_cast<uint8_t*>(out.data()), *n);
  absl::Status st = r.Decode(t, view, OutputType::kF32, dst);
  EXPECT_TRUE(st.ok()) << st;
  return out;
}

TEST(Views, FullOnlyStreamsLieAfterEveryDraftStream) {
  Fixture f = WriteViewFile(MakeTempDir());
  auto r = Reader::Open(f.path);
  ASSERT_TRUE(r.ok()) << r.status();
  uint64_t draft_end = 0, full_begin = ~0ull, draft_begin = ~0ull, draft_bytes = 0, all_bytes = 0;
  for (const auto& t : (*r)->tensors()) {
    for (const auto& s : t.streams) {
      all_bytes += s.length;
      if (ViewReadsStream("draft", s)) {
        draft_begin = std::min(draft_begin, s.offset);
        draft_end = std::max(draft_end, s.offset + s.length);
        draft_bytes += s.length;
      } else {
        EXPECT_EQ(s.views, std::vector<std::string>{"full"}) << t.name << " " << s.role;
        full_begin = std::min(full_begin, s.offset);
      }
    }
  }
  EXPECT_LE(draft_end, full_begin);
  // Tensors keep their manifest order; the lo streams were moved, not the tensors.
  ASSERT_EQ((*r)->tensors().size(), 3u);
  EXPECT_EQ((*r)->tensors()[1].name, "b");
  EXPECT_LT((*r)->tensors()[2].streams[0].offset, (*r)->tensors()[0].streams[1].offset);

  const auto& views = (*r)->views();
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[0].name, "full");
  EXPECT_EQ(views[1].name, "draft");
  EXPECT_FALSE(views[1].description.empty());
  ASSERT_EQ(views[1].ranges.size(), 1u);
  EXPECT_EQ(views[1].ranges[0].shard, 0u);
  EXPECT_EQ(views[1].ranges[0].offset, draft_begin);
  EXPECT_EQ(views[1].ranges[0].length, draft_end - draft_begin);
  EXPECT_EQ(*(*r)->ViewBytes("draft"), draft_bytes);
  EXPECT_EQ(*(*r)->ViewBytes("full"), all_bytes);
  EXPECT_EQ(*(*r)->ViewBytes(""), all_bytes);
  EXPECT_EQ(draft_bytes, 2u * (320 + 200) + 4u * 24);
  auto unknown = (*r)->ViewBytes("tiny");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("tiny"), std::string::npos);
  EXPECT_TRUE((*r)->VerifyContainer().ok());
}

TEST(Views, DecodeDraftAndFull) {
  Fixture f = WriteViewFile(MakeTempDir());
  auto r = Reader::Open(f.path);
  ASSERT_TRUE(r.ok()) << r.status();
  for (size_t t = 0; t < 3; ++t) {
    EXPECT_EQ(DecodeF32(**r, t, "full"), f.values[t]);
    std::vector<float> draft = DecodeF32(**r, t, "draft");
    for (size_t i = 0; i < draft.size(); ++i) {
      EXPECT_EQ(draft[i], t == 1 ? f.values[t][i] : Truncated(f.values[t][i])) << t << " " << i;
    }
  }
  // The reader's default view comes from ReaderOptions.
  ReaderOptions opt;
  opt.view = "draft";
  auto d = Reader::Open(f.path, opt);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->view(), "draft");
  std::vector<float> out(f.values[0].size());
  ASSERT_TRUE((*d)->Decode(0, OutputType::kF32, absl::MakeSpan(reinterpret_cast<uint8_t*>(out.data()), out.size() * 4)).ok());
  EXPECT_EQ(out[1], Truncated(f.values[0][1]));
  opt.view = "nope";
  auto bad = Reader::Open(f.path, opt);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(bad.status().message().find("\"nope\""), std::string::npos) << bad.status();
  absl::Status st = (*r)->Decode(0, "nope", OutputType::kF32, absl::MakeSpan(reinterpret_cast<uint8_t*>(out.data()), out.size() * 4));
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
}

TEST(Views, DraftNeverTouchesTheFullOnlyRegion) {
  Fixture f = WriteViewFile(MakeTempDir());
  auto bytes = ReadFileBytes(f.path);
  uint64_t begin = ~0ull, end = 0;
  {
    auto r = Reader::Open(f.path);
    ASSERT_TRUE(r.ok());
    for (const auto& t : (*r)->tensors()) {
      for (const auto& s : t.streams) {
        if (ViewReadsStream("draft", s)) continue;
        begin = std::min(begin, s.offset);
        end = std::max(end, s.offset + s.length);
      }
    }
  }
  ASSERT_LT(begin, end);
  for (uint64_t i = begin; i < end; ++i) bytes[i] = 0xA5;  // the verification region, garbage
  ReaderOptions opt;
  opt.verify_checksums = true;
  auto r = Reader::OpenBuffer(bytes, "garbage.bolt", opt);
  ASSERT_TRUE(r.ok()) << r.status();
  for (size_t t = 0; t < 3; ++t) {
    std::vector<float> draft = DecodeF32(**r, t, "draft");
    for (size_t i = 0; i < draft.size(); ++i) {
      ASSERT_EQ(draft[i], t == 1 ? f.values[t][i] : Truncated(f.values[t][i])) << t << " " << i;
    }
  }
  std::vector<float> out(f.values[0].size());
  auto dst = absl::MakeSpan(reinterpret_cast<uint8_t*>(out.data()), out.size() * 4);
  EXPECT_EQ((*r)->Decode(0, "full", OutputType::kF32, dst).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ((*r)->VerifyContainer().code(), absl::StatusCode::kDataLoss);
}

TEST(Views, FileWithoutViewTagsHasOnlyFull) {
  std::string dir = MakeTempDir();
  std::string path = dir + "/plain.bolt";
  auto w = Writer::Create(path, {});
  ASSERT_TRUE(w.ok());
  Add(**w, "b", Values(16, 1.0f), "f32");
  ASSERT_TRUE((*w)->Finish().ok());
  auto r = Reader::Open(path);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ((*r)->views().size(), 1u);
  EXPECT_EQ((*r)->views()[0].name, "full");
  EXPECT_EQ(*(*r)->ViewBytes("full"), 64u);
  EXPECT_EQ((*r)->ViewBytes("draft").status().code(), absl::StatusCode::kNotFound);
  auto file = ReadFileBytes(path);
  auto footer = format::ParseFooter(absl::MakeConstSpan(file).subspan(file.size() - 64), "x");
  v1::Manifest m;
  ASSERT_TRUE(m.ParseFromArray(file.data() + footer->manifest_offset, static_cast<int>(footer->manifest_length)));
  EXPECT_EQ(m.views_size(), 0);
  EXPECT_EQ(m.tensors(0).streams(0).views_size(), 0);
}

TEST(Views, CopyTensorAndAddStoredTensorKeepViews) {
  std::string dir = MakeTempDir();
  Fixture f = WriteViewFile(dir);
  auto src = Reader::Open(f.path);
  ASSERT_TRUE(src.ok());
  std::string out = dir + "/copy.bolt";
  {
    auto w = Writer::Create(out, {});
    ASSERT_TRUE(w.ok());
    // Reverse order, plus a stored tensor whose second stream only full reads.
    for (size_t t = 3; t-- > 0;) ASSERT_TRUE((*w)->CopyTensor(**src, t).ok());
    TensorInfo info;
    info.name = "stored";
    info.shape = {4};
    info.dtype = DType::kU8;
    info.codec_id = "x-opaque";
    info.streams.resize(2);
    info.streams[0].role = "p";
    info.streams[1].role = "q";
    info.streams[1].views = {"draft", "full"};
    std::vector<uint8_t> p = {1, 2, 3, 4}, q = {5, 6};
    ASSERT_TRUE((*w)->AddStoredTensor(info, {p, q}).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  auto r = Reader::Open(out);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ((*r)->views().size(), 2u);
  EXPECT_EQ((*r)->views()[1].description, (*src)->views()[1].description);
  EXPECT_EQ(*(*r)->ViewBytes("draft"), *(*src)->ViewBytes("draft") + 6);
  for (size_t t = 0; t < 3; ++t) {
    size_t s = 2 - t;
    EXPECT_EQ((*r)->tensors()[t].streams.back().views, (*src)->tensors()[s].streams.back().views);
    EXPECT_EQ(DecodeF32(**r, t, "draft"), DecodeF32(**src, s, "draft"));
    EXPECT_EQ(DecodeF32(**r, t, "full"), f.values[s]);
  }
  EXPECT_TRUE((*r)->VerifyContainer().ok());
}

TEST(Views, WriterRejectsBadViewLists) {
  std::string dir = MakeTempDir();
  auto w = Writer::Create(dir + "/bad.bolt", {});
  ASSERT_TRUE(w.ok());
  auto add = [&](std::string name, std::vector<std::string> views) {
    TensorInfo info;
    info.name = std::move(name);
    info.shape = {2};
    info.dtype = DType::kU8;
    info.codec_id = "x-opaque";
    info.streams.resize(1);
    info.streams[0].role = "p";
    info.streams[0].views = std::move(views);
    std::vector<uint8_t> p = {1, 2};
    return (*w)->AddStoredTensor(info, {p});
  };
  EXPECT_FALSE(add("a", {"Draft", "full"}).ok());
  EXPECT_FALSE(add("b", {"draft"}).ok());  // without full
  EXPECT_FALSE(add("c", {"full", "full"}).ok());
  EXPECT_FALSE(add("d", {std::string(65, 'x'), "full"}).ok());
  EXPECT_TRUE(add("e", {"full"}).ok());
  EXPECT_TRUE((*w)->Finish().ok());
}

TEST(Views, ValidationRejectsBadDeclarations) {
  std::string dir = MakeTempDir();
  Fixture f = WriteViewFile(dir);
  auto good = ReadFileBytes(f.path);
  ASSERT_TRUE(Reader::OpenBuffer(good, "good.bolt").ok());
  struct Case {
    const char* expect;
    std::function<void(v1::Manifest&)> edit;
  };
  auto lo = [](v1::Manifest& m) { return m.mutable_tensors(0)->mutable_streams(1); };
  std::vector<Case> cases = {
      {"does not declare", [&](v1::Manifest& m) { lo(m)->add_views("tiny"); }},
      {"twice", [&](v1::Manifest& m) { lo(m)->add_views("full"); }},
      {"without \"full\"", [&](v1::Manifest& m) { lo(m)->set_views(0, "draft"); }},
      {"duplicate view", [](v1::Manifest& m) { *m.add_views() = m.views(0); }},
      {"implicit", [](v1::Manifest& m) { m.mutable_views(0)->set_name("full"); }},
      {"is not 1..64", [](v1::Manifest& m) { m.mutable_views(0)->set_name("Draft"); }},
      {"is not 1..64", [](v1::Manifest& m) { m.mutable_views(0)->set_name(std::string(65, 'd')); }},
      {"is not 1..64", [](v1::Manifest& m) { m.mutable_views(0)->set_name(""); }},
      {"description", [](v1::Manifest& m) { m.mutable_views(0)->set_description(std::string(4097, 'x')); }},
      {"views exceed", [](v1::Manifest& m) {
         for (int k = 0; k < 64; ++k) m.add_views()->set_name(StrCat("v", k));
       }},
      {"do not match", [](v1::Manifest& m) {
         auto* r = m.mutable_views(0)->mutable_ranges(0);
         r->set_length(r->length() + 64);
       }},
      {"do not match", [](v1::Manifest& m) { m.mutable_views(0)->clear_ranges(); }},
      {"increasing order", [](v1::Manifest& m) { *m.mutable_views(0)->add_ranges() = m.views(0).ranges(0); }},
      {"outside the data section", [](v1::Manifest& m) { m.mutable_views(0)->mutable_ranges(0)->set_length(1ull << 40); }},
      {"holds no stream", [](v1::Manifest& m) {
         // A view that reads nothing may not claim a range.
         auto* v = m.add_views();
         v->set_name("empty");
         *v->add_ranges() = m.views(0).ranges(0);
         for (auto& t : *m.mutable_tensors()) {
           for (auto& s : *t.mutable_streams()) {
             if (s.views_size() == 0) {
               s.add_views("full");
               s.add_views("draft");
             }
           }
         }
       }},
      {"lies before", [](v1::Manifest& m) {
         // Swap a draft-read stream with a full-only one of the same size.
         auto* hi = m.mutable_tensors(2)->mutable_streams(0);
         auto* low = m.mutable_tensors(2)->mutable_streams(1);
         uint64_t o = hi->offset();
         hi->set_offset(low->offset());
         low->set_offset(o);
       }},
  };
  for (const auto& c : cases) {
    auto r = Reader::OpenBuffer(RewriteManifest(good, c.edit), "bad.bolt");
    ASSERT_FALSE(r.ok()) << c.expect;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << c.expect << ": " << r.status();
  }
  // A 1.0-style reader ignores Stream.views: dropping every view tag and
  // Manifest.views leaves a valid file whose every view is full.
  // OpenBuffer maps the caller's bytes: they must outlive the reader.
  const std::vector<uint8_t> plain_bytes = RewriteManifest(good, [](v1::Manifest& m) {
    m.clear_views();
    for (auto& t : *m.mutable_tensors()) {
      for (auto& s : *t.mutable_streams()) s.clear_views();
    }
  });
  auto plain = Reader::OpenBuffer(plain_bytes, "plain.bolt");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(DecodeF32(**plain, 0, "full"), f.values[0]);
}

// A hostile (or careless) file tags the only stream of an f32 tensor as
// read by "full" alone: the f32 codec knows no views, gets an empty stream in
// the draft view and must fail cleanly, naming what the view left out.
TEST(Views, CodecWithoutViewsFailsCleanlyInDraft) {
  std::string dir = MakeTempDir();
  std::string path = dir + "/tagged.bolt";
  {
    auto w = Writer::Create(path, {});
    ASSERT_TRUE(w.ok());
    std::vector<float> v = Values(16, 1.0f);
    TensorInfo info;
    info.name = "w";
    info.shape = {16};
    info.dtype = DType::kF32;
    info.codec_id = "f32";
    info.streams.resize(1);
    info.streams[0].role = "data";
    info.streams[0].views = {"full"};
    ASSERT_TRUE((*w)->AddStoredTensor(info, {Bytes(v)}).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  auto r = Reader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*(*r)->ViewBytes("draft"), 0u);
  std::vector<float> out(16);
  auto dst = absl::MakeSpan(reinterpret_cast<uint8_t*>(out.data()), 64);
  absl::Status st = (*r)->Decode(0, "draft", OutputType::kF32, dst);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("does not read stream \"data\""), std::string::npos) << st;
  st = (*r)->DecodeRows(0, "draft", 0, 4, OutputType::kF32, dst);
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE((*r)->Decode(0, "full", OutputType::kF32, dst).ok());
  EXPECT_EQ(out, Values(16, 1.0f));
}

TEST(Views, CApiOpensInAView) {
  Fixture f = WriteViewFile(MakeTempDir());
  bp_reader* r = nullptr;
  ASSERT_EQ(bp_open_view(f.path.c_str(), "draft", &r), BP_OK) << bp_last_error_message();
  ASSERT_EQ(bp_view_count(r), 2u);
  EXPECT_STREQ(bp_view_name(r, 0), "full");
  EXPECT_STREQ(bp_view_name(r, 1), "draft");
  EXPECT_EQ(bp_view_name(r, 2), nullptr);
  uint64_t draft = 0, full = 0;
  ASSERT_EQ(bp_view_bytes(r, nullptr, &draft), BP_OK);
  ASSERT_EQ(bp_view_bytes(r, "full", &full), BP_OK);
  EXPECT_LT(draft, full);
  EXPECT_EQ(bp_view_bytes(r, "x", &full), BP_ERR_NOT_FOUND);
  std::vector<float> out(f.values[0].size());
  ASSERT_EQ(bp_decode(r, 0, BP_OUT_F32, out.data(), out.size() * 4, 1), BP_OK) << bp_last_error(r);
  EXPECT_EQ(out[3], Truncated(f.values[0][3]));
  bp_close(r);
  EXPECT_EQ(bp_open_view(f.path.c_str(), "medium", &r), BP_ERR_NOT_FOUND);
  EXPECT_EQ(r, nullptr);
  ASSERT_EQ(bp_open_view(f.path.c_str(), nullptr, &r), BP_OK);
  ASSERT_EQ(bp_decode(r, 0, BP_OUT_F32, out.data(), out.size() * 4, 1), BP_OK);
  EXPECT_EQ(out, f.values[0]);
  bp_close(r);
}

// End to end with the bf16-spec codec, when it is built in: TinyStories as
// bf16, packed with bf16-spec, unpacked in the draft and the full view.
TEST(Views, Bf16SpecEndToEnd) {
  if (FindCodec("bf16-spec") == nullptr) GTEST_SKIP() << "bf16-spec codec not built in";
  std::string dir = MakeTempDir();
  std::string src = SourceDir() + "/testdata/tinystories-656k/model.safetensors";
  auto c0 = RunCli({"convert", src, "-o", dir + "/bf16.safetensors", "--codec", "*=bf16"});
  ASSERT_EQ(c0.exit_code, 0) << c0.output;
  auto c1 = RunCli({"convert", dir + "/bf16.safetensors", "-o", dir + "/m.bolt", "--codec", "*=bf16-spec"});
  ASSERT_EQ(c1.exit_code, 0) << c1.output;
  auto full = RunCli({"convert", dir + "/m.bolt", "-o", dir + "/full.safetensors"});
  ASSERT_EQ(full.exit_code, 0) << full.output;
  EXPECT_EQ(ReadFileBytes(dir + "/bf16.safetensors"), ReadFileBytes(dir + "/full.safetensors"));
  auto draft = RunCli({"convert", dir + "/m.bolt", "--view", "draft", "-o", dir + "/draft.safetensors"});
  ASSERT_EQ(draft.exit_code, 0) << draft.output;
  auto d = io::SafetensorsModel::Open(dir + "/draft.safetensors");
  auto o = io::SafetensorsModel::Open(dir + "/bf16.safetensors");
  ASSERT_TRUE(d.ok() && o.ok());
  ASSERT_EQ((*d)->tensors().size(), (*o)->tensors().size());
  size_t differ = 0;
  for (size_t i = 0; i < (*d)->tensors().size(); ++i) {
    const auto& dt = (*d)->tensors()[i];
    const auto& ot = (*o)->tensors()[i];
    EXPECT_EQ(dt.name, ot.name);
    EXPECT_EQ(dt.dtype, DType::kBF16);
    EXPECT_EQ(dt.shape, ot.shape);
    auto db = (*d)->TensorBytes(i);
    auto ob = (*o)->TensorBytes(i);
    ASSERT_EQ(db.size(), ob.size());
    differ += !std::equal(db.begin(), db.end(), ob.begin());
  }
  EXPECT_GT(differ, 0u);
  auto i = RunCli({"inspect", dir + "/m.bolt", "--json"});
  ASSERT_EQ(i.exit_code, 0) << i.output;
  auto json = io::ParseJson(i.output);
  ASSERT_TRUE(json.ok()) << json.status();
  uint64_t draft_bytes = *json->Find("views")->Find("draft")->Find("bytes")->uint64_value();
  uint64_t full_bytes = *json->Find("views")->Find("full")->Find("bytes")->uint64_value();
  EXPECT_LT(draft_bytes, full_bytes);
  size_t spec = 0;
  for (const auto& t : json->Find("tensors")->array()) {
    if (t.Find("codec")->string_value() != "bf16-spec") continue;
    ++spec;
    ASSERT_NE(t.Find("exponent_entropy"), nullptr) << t.Find("name")->string_value();
  }
  EXPECT_GT(spec, 0u);
  EXPECT_EQ(RunCli({"convert", dir + "/m.bolt", "--view", "nope", "-o", dir + "/x.safetensors"}).exit_code, 2);
  EXPECT_EQ(RunCli({"convert", dir + "/m.bolt", "--view", "draft", "-o", dir + "/x.bolt"}).exit_code, 2);
}

TEST(Views, InspectJsonReportsViews) {
  Fixture f = WriteViewFile(MakeTempDir());
  // The CLI cannot decode the test codec, but it lists views and streams.
  auto i = RunCli({"inspect", f.path, "--json"});
  ASSERT_EQ(i.exit_code, 0) << i.output;
  auto json = io::ParseJson(i.output);
  ASSERT_TRUE(json.ok()) << json.status() << i.output;
  auto r = Reader::Open(f.path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*json->Find("views")->Find("draft")->Find("bytes")->uint64_value(), *(*r)->ViewBytes("draft"));
  EXPECT_EQ(*json->Find("views")->Find("full")->Find("bytes")->uint64_value(), *(*r)->ViewBytes("full"));
  const auto& lo = json->Find("tensors")->array()[0].Find("streams")->array()[1];
  EXPECT_EQ(lo.Find("views")->array()[0].string_value(), "full");
  auto text = RunCli({"inspect", f.path});
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("draft"), std::string::npos) << text.output;
}

}  // namespace
}  // namespace boltpack
