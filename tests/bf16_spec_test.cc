// bf16-spec (spec/codecs-bf16-spec.md): the full view restores every bit,
// the draft view equals an independent reference computed here (sort-based
// selection, bit arithmetic), on all 65536 bf16 patterns arranged in rows,
// on TinyStories, at keep = 1 and tiny keep, mbits 0..7, rows of one
// element, with and without importance; hostile records are refused.
#include "codecs/bf16_spec/bf16_spec_codec.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "codecs/encoded_record.h"
#include "codecs/float_convert.h"
#include "gtest/gtest.h"
#include "format/layout.h"
#include "io/safetensors.h"
#include "tests/manifest_rewrite.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

const Codec& SpecCodec() { return *FindCodec("bf16-spec"); }

struct Encoded {
  EncodedTensor tensor;
  TensorInfo info;
  DecodeInput Input(std::string_view view) const {
    DecodeInput in;
    in.info = &info;
    for (size_t k = 0; k < tensor.streams.size(); ++k) {
      // The draft view does not read the verification stream.
      const bool skip = view == "draft" && k == 1;
      in.streams.push_back(skip ? absl::Span<const uint8_t>() : absl::Span<const uint8_t>(tensor.streams[k].bytes));
      in.raw_base.push_back(0);
    }
    in.view = view;
    return in;
  }
};

std::vector<uint8_t> Bytes(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> b(v.size() * 2);
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

CodecParams Params(double keep, int mbits) {
  return {{"keep", MetaValue::Float64(keep)}, {"mbits", MetaValue::Int(ValueType::kInt64, mbits)}};
}

Encoded EncodeOrDie(const std::vector<uint64_t>& shape, const std::vector<uint16_t>& v, const CodecParams& params,
                    int threads = 1, absl::Span<const float> importance = {}) {
  const auto bytes = Bytes(v);
  TensorSource src{"t", DType::kBF16, shape, bytes, importance};
  auto enc = SpecCodec().Encode(src, params, ExecOptions{threads});
  EXPECT_TRUE(enc.ok()) << enc.status();
  Encoded out;
  if (enc.ok()) out.tensor = *std::move(enc);
  out.info = RecordFor("t", DType::kBF16, shape, "bf16-spec", out.tensor);
  return out;
}

std::vector<uint16_t> DecodeOrDie(const Encoded& e, std::string_view view, int threads = 1,
                                  OutputType out = OutputType::kBF16) {
  auto size = SpecCodec().DecodedBytes(e.info, out);
  EXPECT_TRUE(size.ok()) << size.status();
  std::vector<uint8_t> dst(size.ok() ? *size : 0);
  absl::Status s = SpecCodec().Decode(e.Input(view), out, absl::MakeSpan(dst), ExecOptions{threads});
  EXPECT_TRUE(s.ok()) << s;
  std::vector<uint16_t> v(dst.size() / 2);
  if (!v.empty()) std::memcpy(v.data(), dst.data(), v.size() * 2);
  return v;
}

// ---- independent reference ------------------------------------------------

// Kept flags: per row of `cols` (innermost; single elements for rank <= 1),
// the ceil(keep*cols) largest scores, ties to the lower index, by sorting.
std::vector<bool> ReferenceKept(const std::vector<uint64_t>& shape, const std::vector<uint16_t>& v, double keep,
                                const std::vector<float>& importance) {
  const uint64_t cols = shape.size() >= 2 ? shape.back() : 1;
  std::vector<bool> kept(v.size(), false);
  if (cols == 0) return kept;
  const uint64_t k = std::min<uint64_t>(cols, std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(keep * cols))));
  const uint64_t per_expert = shape.size() == 3 && importance.size() == shape[0] * cols ? shape[1] : 0;
  for (uint64_t r = 0; r * cols < v.size(); ++r) {
    std::vector<uint32_t> score(cols);
    for (uint64_t j = 0; j < cols; ++j) {
      const uint16_t x = v[r * cols + j];
      if (importance.empty() || shape.size() < 2) {
        score[j] = x & 0x7fff;
      } else {
        const float w = std::sqrt(importance[(per_expert ? (r / per_expert) * cols : 0) + j]);
        float s = BF16ToF32(static_cast<uint16_t>(x & 0x7fff)) * w;
        uint32_t bits;
        std::memcpy(&bits, &s, 4);
        score[j] = bits & 0x7fffffff;
      }
    }
    std::vector<uint64_t> idx(cols);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](uint64_t a, uint64_t b) { return score[a] > score[b]; });
    for (uint64_t i = 0; i < k; ++i) kept[r * cols + idx[i]] = true;
  }
  return kept;
}

uint16_t ReferenceDraft(uint16_t x, int mbits) {
  const int low = 7 - mbits;
  const uint16_t e = (x >> 7) & 0xff;
  uint16_t d = static_cast<uint16_t>(x & ~((1u << low) - 1));
  if (low > 0 && e != 0 && e != 255) d |= static_cast<uint16_t>(1u << (low - 1));
  return d;
}

std::vector<uint16_t> ReferenceDraftTensor(const std::vector<uint64_t>& shape, const std::vector<uint16_t>& v,
                                           double keep, int mbits, const std::vector<float>& importance = {}) {
  const auto kept = ReferenceKept(shape, v, keep, importance);
  std::vector<uint16_t> d(v.size(), 0);
  for (size_t i = 0; i < v.size(); ++i) d[i] = kept[i] ? ReferenceDraft(v[i], mbits) : 0;
  return d;
}

void ExpectSplit(const std::vector<uint64_t>& shape, const std::vector<uint16_t>& v, double keep, int mbits,
                 int threads = 1, const std::vector<float>& importance = {}) {
  SCOPED_TRACE(::testing::Message() << "keep " << keep << " mbits " << mbits << " elements " << v.size());
  Encoded e = EncodeOrDie(shape, v, Params(keep, mbits), threads, importance);
  ASSERT_TRUE(SpecCodec().ValidateRecord(e.info).ok()) << SpecCodec().ValidateRecord(e.info);
  EXPECT_TRUE(DecodeOrDie(e, "", threads) == v);
  EXPECT_TRUE(DecodeOrDie(e, "full", threads) == v);
  EXPECT_TRUE(DecodeOrDie(e, "draft", threads) == ReferenceDraftTensor(shape, v, keep, mbits, importance));
}

std::vector<uint16_t> AllPatterns(uint32_t seed) {
  std::vector<uint16_t> v(65536);
  for (uint32_t i = 0; i < 65536; ++i) v[i] = static_cast<uint16_t>(i);
  if (seed != 0) std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return v;
}

std::vector<uint16_t> Gaussian(size_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, sigma);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = F32ToBF16(g(rng));
  return v;
}

// ---- tests ------------------------------------------------------------------

TEST(Bf16Spec, Registered) {
  ASSERT_NE(FindCodec("bf16-spec"), nullptr);
  EXPECT_FALSE(SpecCodec().description().empty());
}

TEST(Bf16Spec, AllBitPatternsInRows) {
  const auto all = AllPatterns(0), shuffled = AllPatterns(11);
  for (int mbits : {0, 3, 7}) {
    for (double keep : {0.5, 1.0, 0.001}) {
      ExpectSplit({256, 256}, shuffled, keep, mbits, 2);
      ExpectSplit({512, 128}, all, keep, mbits);
      ExpectSplit({65536, 1}, shuffled, keep, mbits);  // rows of one element
      ExpectSplit({65536}, all, keep, mbits);          // 1-D: every element kept
      ExpectSplit({4, 16, 1024}, shuffled, keep, mbits, 3);
      ExpectSplit({16, 4096}, shuffled, keep, mbits);
    }
  }
  for (int mbits = 0; mbits <= 7; ++mbits) ExpectSplit({1024, 64}, shuffled, 0.3, mbits);
}

TEST(Bf16Spec, ShapesAndTies) {
  ExpectSplit({}, {0x3f80}, 0.5, 3);
  ExpectSplit({0, 7}, {}, 0.5, 3);
  ExpectSplit({3, 0}, {}, 0.5, 3);
  ExpectSplit({5, 3}, std::vector<uint16_t>(15, 0x8000), 0.5, 3);     // -0 everywhere: ties
  ExpectSplit({33, 100}, std::vector<uint16_t>(3300, 0x3f81), 0.25, 2);  // equal values
  ExpectSplit({7, 9}, std::vector<uint16_t>(63, 0x7fc1), 0.5, 3);     // NaN everywhere
  std::vector<uint16_t> mixed = Gaussian(10 * 77, 0.1f, 3);
  for (size_t i = 0; i < mixed.size(); i += 5) mixed[i] = static_cast<uint16_t>(0x7f80 | (i & 0x8000));  // inf
  for (size_t i = 2; i < mixed.size(); i += 13) mixed[i] = static_cast<uint16_t>(i & 0x807f);  // subnormals, zeros
  ExpectSplit({10, 77}, mixed, 0.5, 3);
  ExpectSplit({10, 77}, mixed, 0.2, 0);
  // Short rows (conv kernels) take the direct ranking; 16 and 17 columns
  // sit on either side of it. Few distinct magnitudes: many ties.
  std::vector<uint16_t> few(64 * 17);
  std::mt19937 rng(12);
  for (auto& x : few) x = static_cast<uint16_t>((rng() & 0x8000) | (0x3f80 + (rng() % 5)));
  for (uint64_t cols : {2, 3, 9, 16, 17}) {
    const std::vector<uint16_t> v(few.begin(), few.begin() + static_cast<long>(64 * cols));
    for (double keep : {0.1, 0.5, 0.9}) ExpectSplit({64, cols}, v, keep, 3);
    std::vector<float> imp(cols);
    for (auto& w : imp) w = static_cast<float>(rng() % 3);
    ExpectSplit({64, cols}, v, 0.5, 2, 1, imp);
  }
}

TEST(Bf16Spec, ChunkedParallelAndRowRanges) {
  auto v = Gaussian(1024 * 1024, 0.02f, 1);
  for (uint32_t i = 0; i < 65536; ++i) v[i * 16] = static_cast<uint16_t>(i);
  const std::vector<uint64_t> shape = {1024, 1024};
  Encoded e = EncodeOrDie(shape, v, Params(0.5, 3), 2);
  ASSERT_EQ(e.tensor.streams[0].chunks.size(), 4u);
  ASSERT_EQ(e.tensor.streams[1].chunks.size(), 4u);
  EXPECT_TRUE(e.tensor.streams[0].views.empty());
  EXPECT_EQ(e.tensor.streams[1].views, std::vector<std::string>({"full"}));
  ASSERT_TRUE(SpecCodec().ValidateRecord(e.info).ok());
  const auto draft_ref = ReferenceDraftTensor(shape, v, 0.5, 3);
  EXPECT_TRUE(DecodeOrDie(e, "full", 4) == v);
  EXPECT_TRUE(DecodeOrDie(e, "draft", 4) == draft_ref);
  // f32 and f16 targets are conversions of the bf16 values.
  {
    auto f32 = DecodeOrDie(e, "full", 2, OutputType::kF32);
    std::vector<uint16_t> want(v.size() * 2);
    ConvertBF16ToF32(v.data(), want.data(), v.size());
    EXPECT_TRUE(f32 == want);
    auto f16 = DecodeOrDie(e, "draft", 2, OutputType::kF16);
    std::vector<uint16_t> want16(v.size());
    ConvertBF16ToF16(draft_ref.data(), want16.data(), v.size());
    EXPECT_TRUE(f16 == want16);
  }
  // Row ranges, handed only the bytes RowRangeBytes asks for.
  for (auto [a, b] : std::vector<std::pair<uint64_t, uint64_t>>{{0, 1}, {255, 257}, {300, 900}, {1023, 1024}, {0, 1024}}) {
    for (std::string_view view : {"full", "draft"}) {
      DecodeInput in;
      in.info = &e.info;
      in.view = view;
      for (size_t k = 0; k < 2; ++k) {
        auto r = SpecCodec().RowRangeBytes(e.info, k, a, b);
        ASSERT_TRUE(r.ok()) << r.status();
        if (view == "draft" && k == 1) {
          in.streams.push_back({});
          in.raw_base.push_back(0);
          continue;
        }
        in.streams.push_back(absl::MakeConstSpan(e.tensor.streams[k].bytes).subspan(r->first, r->second - r->first));
        in.raw_base.push_back(r->first);
      }
      std::vector<uint16_t> part((b - a) * 1024);
      absl::Status st = SpecCodec().DecodeRows(in, a, b, OutputType::kBF16,
                                               absl::MakeSpan(reinterpret_cast<uint8_t*>(part.data()), part.size() * 2));
      ASSERT_TRUE(st.ok()) << st;
      const auto& ref = view == "full" ? v : draft_ref;
      EXPECT_TRUE(std::equal(part.begin(), part.end(), ref.begin() + a * 1024)) << view << " " << a << ".." << b;
    }
  }
  // Encoding with 1 and 3 threads gives the same bytes.
  Encoded e1 = EncodeOrDie(shape, v, Params(0.5, 3), 1);
  EXPECT_TRUE(e1.tensor.streams[0].bytes == e.tensor.streams[0].bytes);
  EXPECT_TRUE(e1.tensor.streams[1].bytes == e.tensor.streams[1].bytes);
}

TEST(Bf16Spec, WandaImportance) {
  const std::vector<uint64_t> shape = {64, 96};
  auto v = Gaussian(64 * 96, 0.05f, 5);
  std::vector<float> imp(96);
  std::mt19937 rng(6);
  std::exponential_distribution<float> ex(1.0f);
  for (auto& w : imp) w = ex(rng) * 100;
  imp[3] = 0;
  ExpectSplit(shape, v, 0.5, 3, 1, imp);
  Encoded e = EncodeOrDie(shape, v, Params(0.5, 3), 1, imp);
  bool wanda = false;
  for (const auto& [k, p] : e.tensor.params) wanda |= k == "scored_by" && p.s == "wanda";
  EXPECT_TRUE(wanda);
  // Importance changes the selection.
  EXPECT_FALSE(ReferenceKept(shape, v, 0.5, imp) == ReferenceKept(shape, v, 0.5, {}));
  // 3-D experts: one vector per expert.
  const std::vector<uint64_t> s3 = {3, 8, 32};
  auto v3 = Gaussian(3 * 8 * 32, 0.05f, 8);
  std::vector<float> imp3(3 * 32);
  for (auto& w : imp3) w = ex(rng);
  ExpectSplit(s3, v3, 0.4, 2, 1, imp3);
  // Bad importance.
  std::vector<float> wrong(95, 1.0f);
  const auto bytes = Bytes(v);
  EXPECT_FALSE(SpecCodec().Encode({"t", DType::kBF16, shape, bytes, wrong}, Params(0.5, 3), {}).ok());
  std::vector<float> nan(96, NAN);
  EXPECT_FALSE(SpecCodec().Encode({"t", DType::kBF16, shape, bytes, nan}, Params(0.5, 3), {}).ok());
}

TEST(Bf16Spec, ParamsAndDtypes) {
  const std::vector<uint64_t> shape = {4, 8};
  const Codec& c = SpecCodec();
  EXPECT_TRUE(c.CanEncode(DType::kBF16, shape, {}).ok());
  absl::Status f32 = c.CanEncode(DType::kF32, shape, {});
  EXPECT_FALSE(f32.ok());
  EXPECT_NE(std::string(f32.message()).find("convert the tensor to bf16 first"), std::string::npos) << f32;
  EXPECT_NE(std::string(f32.message()).find("lossy"), std::string::npos) << f32;
  EXPECT_FALSE(c.CanEncode(DType::kI8, shape, {}).ok());
  EXPECT_FALSE(c.CanEncode(DType::kBF16, shape, Params(0, 3)).ok());
  EXPECT_FALSE(c.CanEncode(DType::kBF16, shape, Params(1.5, 3)).ok());
  EXPECT_FALSE(c.CanEncode(DType::kBF16, shape, Params(0.5, 8)).ok());
  EXPECT_FALSE(c.CanEncode(DType::kBF16, shape, Params(0.5, -1)).ok());
  EXPECT_FALSE(c.CanEncode(DType::kBF16, shape, {{"nope", MetaValue::Bool(true)}}).ok());
  EXPECT_TRUE(c.CanEncode(DType::kBF16, shape, {{"keep", MetaValue::Int(ValueType::kInt64, 1)}}).ok());
  // Defaults: keep 0.5, mbits 3.
  auto v = Gaussian(32, 1.0f, 2);
  Encoded e = EncodeOrDie(shape, v, {});
  bool k4 = false, m3 = false;
  for (const auto& [k, p] : e.tensor.params) {
    k4 |= k == "kept_per_row" && p.u == 4;
    m3 |= k == "mbits" && p.u == 3;
  }
  EXPECT_TRUE(k4 && m3);
  // Unknown view.
  std::vector<uint8_t> dst(64);
  EXPECT_FALSE(c.Decode(e.Input("thumbnail"), OutputType::kBF16, absl::MakeSpan(dst), {}).ok());
}

TEST(Bf16Spec, HostileRecordsAndBytes) {
  const std::vector<uint64_t> shape = {40, 50};
  auto v = Gaussian(2000, 0.1f, 9);
  Encoded e = EncodeOrDie(shape, v, Params(0.5, 3));
  const Codec& c = SpecCodec();
  ASSERT_TRUE(c.ValidateRecord(e.info).ok());
  auto bad = [&](auto mutate) {
    TensorInfo info = e.info;
    mutate(info);
    return !c.ValidateRecord(info).ok();
  };
  EXPECT_TRUE(bad([](TensorInfo& i) { i.codec_params.pop_back(); }));
  EXPECT_TRUE(bad([](TensorInfo& i) { i.codec_params.push_back({"x", MetaValue::Bool(true)}); }));
  EXPECT_TRUE(bad([](TensorInfo& i) { i.codec_params[2].second.u = 51; }));  // kept_per_row > cols
  EXPECT_TRUE(bad([](TensorInfo& i) { i.codec_params[1].second.u = 8; }));   // mbits
  EXPECT_TRUE(bad([](TensorInfo& i) { i.codec_params[4].second.s[0] = 'f'; }));
  EXPECT_TRUE(bad([](TensorInfo& i) { i.dtype = DType::kF32; }));
  EXPECT_TRUE(bad([](TensorInfo& i) { i.streams[0].raw_length = 10; }));  // shorter than bitmap + fields
  EXPECT_TRUE(bad([](TensorInfo& i) { i.streams[1].raw_length = 10; }));
  EXPECT_TRUE(bad([](TensorInfo& i) { i.streams[0].views = {"full"}; }));
  EXPECT_TRUE(bad([](TensorInfo& i) { std::swap(i.streams[0], i.streams[1]); }));
  EXPECT_TRUE(bad([](TensorInfo& i) { i.streams.pop_back(); }));
  // Flipped bytes: decode succeeds or fails cleanly, never crashes.
  std::mt19937 rng(10);
  for (int trial = 0; trial < 300; ++trial) {
    Encoded f = e;
    auto& s = f.tensor.streams[trial % 2].bytes;
    s[rng() % s.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    std::vector<uint8_t> dst(4000);
    (void)c.Decode(f.Input("full"), OutputType::kBF16, absl::MakeSpan(dst), {});
    (void)c.Decode(f.Input("draft"), OutputType::kBF16, absl::MakeSpan(dst), {});
  }
  // A bitmap row keeping the wrong count is refused.
  Encoded f = e;
  f.tensor.streams[0].bytes[0] ^= 1;
  std::vector<uint8_t> dst(4000);
  EXPECT_FALSE(c.Decode(f.Input("draft"), OutputType::kBF16, absl::MakeSpan(dst), {}).ok());
  // Output too small; verification missing for the full view.
  std::vector<uint8_t> small(10);
  EXPECT_FALSE(c.Decode(e.Input("full"), OutputType::kBF16, absl::MakeSpan(small), {}).ok());
  DecodeInput no_verif = e.Input("draft");
  no_verif.view = "full";
  EXPECT_FALSE(c.Decode(no_verif, OutputType::kBF16, absl::MakeSpan(dst), {}).ok());
}

// TinyStories-656K (f32, converted to bf16): full view bit-exact, draft
// view equals the reference, draft bytes <= 35% of the bf16 bytes at
// keep 0.5, mbits 3.
TEST(Bf16Spec, TinyStoriesSplit) {
  auto model = io::SafetensorsModel::Open(testing::SourceDir() + "/testdata/tinystories-656k/model.safetensors");
  ASSERT_TRUE(model.ok()) << model.status();
  for (auto [keep, mbits] : std::vector<std::pair<double, int>>{{0.5, 3}, {0.5, 2}, {0.25, 3}, {0.75, 4}, {1.0, 7}}) {
    uint64_t weights = 0, spec = 0, verif = 0;
    for (size_t i = 0; i < (*model)->tensors().size(); ++i) {
      const auto& t = (*model)->tensors()[i];
      auto b = (*model)->TensorBytes(i);
      std::vector<uint16_t> v(b.size() / 4);
      ConvertF32ToBF16(b.data(), v.data(), v.size());
      Encoded e = EncodeOrDie(t.shape, v, Params(keep, mbits), 2);
      ASSERT_TRUE(SpecCodec().ValidateRecord(e.info).ok());
      ASSERT_TRUE(DecodeOrDie(e, "full", 2) == v) << t.name;
      ASSERT_TRUE(DecodeOrDie(e, "draft", 2) == ReferenceDraftTensor(t.shape, v, keep, mbits)) << t.name;
      weights += v.size();
      spec += e.tensor.streams[0].bytes.size();
      verif += e.tensor.streams[1].bytes.size();
    }
    const double bf16 = 2.0 * weights;
    std::printf("TinyStories bf16-spec keep=%.2f mbits=%d: %llu weights; speculation %.2f%% (%.3f bits/w), "
                "verification %.2f%%, total %.2f%% of bf16\n",
                keep, mbits, static_cast<unsigned long long>(weights), 100.0 * spec / bf16, 8.0 * spec / weights,
                100.0 * verif / bf16, 100.0 * (spec + verif) / bf16);
    if (keep == 0.5 && mbits == 3) {
      EXPECT_LE(spec, 0.35 * bf16);
      EXPECT_LE(spec + verif, 0.70 * bf16);  // the split keeps the exponent coding's gain
    }
  }
}

// The CLI: a bf16 TinyStories converted with bf16-spec verifies and
// converts back to the same tensors; --activations is --imatrix's alias.
// TinyStories-656K rounded to bf16, written as a safetensors file.
void WriteBf16TinyStories(const std::string& path) {
  auto model = io::SafetensorsModel::Open(testing::SourceDir() + "/testdata/tinystories-656k/model.safetensors");
  ASSERT_TRUE(model.ok());
  std::vector<io::SafetensorsTensorDecl> decls;
  for (const auto& t : (*model)->tensors()) decls.push_back({t.name, DType::kBF16, t.shape});
  auto sw = io::SafetensorsWriter::Create(path, {}, decls, {});
  ASSERT_TRUE(sw.ok());
  for (size_t i = 0; i < (*model)->tensors().size(); ++i) {
    auto b = (*model)->TensorBytes(i);
    std::vector<uint8_t> bf(b.size() / 2);
    ConvertF32ToBF16(b.data(), bf.data(), b.size() / 4);
    ASSERT_TRUE((*sw)->WriteNext(bf).ok());
  }
  ASSERT_TRUE((*sw)->Finish().ok());
}

TEST(Bf16Spec, CliRoundTrip) {
  const std::string dir = testing::MakeTempDir();
  ASSERT_NO_FATAL_FAILURE(WriteBf16TinyStories(dir + "/bf.safetensors"));
  auto c = testing::RunCli({"convert", dir + "/bf.safetensors", "-o", dir + "/m.bolt", "--codec", "*=bf16-spec:keep=0.5,mbits=3"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto v = testing::RunCli({"verify", dir + "/m.bolt"});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  auto b = testing::RunCli({"convert", dir + "/m.bolt", "-o", dir + "/back.safetensors", "--codec", "*=bf16"});
  ASSERT_EQ(b.exit_code, 0) << b.output;
  auto back = io::SafetensorsModel::Open(dir + "/back.safetensors");
  auto orig = io::SafetensorsModel::Open(dir + "/bf.safetensors");
  ASSERT_TRUE(back.ok() && orig.ok());
  ASSERT_EQ((*back)->tensors().size(), (*orig)->tensors().size());
  for (size_t i = 0; i < (*orig)->tensors().size(); ++i) {
    const auto& t = (*orig)->tensors()[i];
    bool found = false;
    for (size_t j = 0; j < (*back)->tensors().size(); ++j) {
      if ((*back)->tensors()[j].name != t.name) continue;
      found = true;
      auto x = (*orig)->TensorBytes(i);
      auto y = (*back)->TensorBytes(j);
      EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << t.name;
    }
    EXPECT_TRUE(found) << t.name;
  }
  // F32 tensors are refused (kept as they are, with the reason).
  auto f = testing::RunCli({"convert", testing::SourceDir() + "/testdata/tinystories-656k/model.safetensors", "-o",
                            dir + "/f.bolt", "--codec", "*=bf16-spec"});
  EXPECT_NE(f.output.find("bf16 first"), std::string::npos) << f.output;
  auto h = testing::RunCli({"convert", "--help"});
  EXPECT_NE(h.output.find("--activations"), std::string::npos) << h.output;
}

// verify decodes every declared view: a speculation stream the draft view
// cannot decode (checksums intact, so only a decode can tell) is reported
// for the draft view with the tensor's name, and the exit is non-zero.
TEST(Bf16Spec, VerifyDecodesTheDraftView) {
  const std::string dir = testing::MakeTempDir();
  ASSERT_NO_FATAL_FAILURE(WriteBf16TinyStories(dir + "/bf.safetensors"));
  auto c = testing::RunCli({"convert", dir + "/bf.safetensors", "-o", dir + "/m.bolt", "--codec",
                            "*=bf16-spec:keep=0.5,mbits=3"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto ok = testing::RunCli({"verify", dir + "/m.bolt"});
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("view \"draft\": 20 tensors decoded"), std::string::npos) << ok.output;
  auto json = testing::RunCli({"verify", "--json", dir + "/m.bolt"});
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_NE(json.output.find("{\"name\":\"draft\",\"tensors\":20,"), std::string::npos) << json.output;

  // A 2-D tensor (it has a keep bitmap) stored as one chunk: flip its first
  // bitmap bit, so its first prune row keeps one value too many or too few,
  // and give the stream its new checksum.
  auto file = testing::ReadFileBytes(dir + "/m.bolt");
  v1::Manifest m = testing::ManifestOf(file);
  int victim = -1;
  for (int i = 0; i < m.tensors_size() && victim < 0; ++i) {
    const auto& t = m.tensors(i);
    if (t.shape_size() == 2 && t.streams(0).chunks_size() == 0 && t.streams(0).compression() == v1::COMPRESSION_NONE) {
      victim = i;
    }
  }
  ASSERT_GE(victim, 0);
  const std::string name = m.tensors(victim).name();
  v1::Stream* s = m.mutable_tensors(victim)->mutable_streams(0);
  file[s->offset()] ^= 0x01;
  s->set_xxh3(format::Xxh3(absl::MakeConstSpan(file).subspan(s->offset(), s->length())));
  testing::WriteFileBytes(dir + "/bad.bolt", testing::WithManifest(file, m));
  auto bad = testing::RunCli({"verify", dir + "/bad.bolt"});
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_EQ(bad.output.find("checksum"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("tensor \"" + name + "\", view \"draft\": "), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("keep bitmap"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("1 failed"), std::string::npos) << bad.output;
  auto bad_json = testing::RunCli({"verify", "--json", dir + "/bad.bolt"});
  EXPECT_EQ(bad_json.exit_code, 1) << bad_json.output;
  EXPECT_NE(bad_json.output.find("\"tensor\":\"" + name + "\",\"view\":\"draft\""), std::string::npos)
      << bad_json.output;
}

}  // namespace
}  // namespace boltpack
