#include "codecs/bf16_exp/bf16_exp_codecs.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "boltpack/tensor_info.h"
#include "boltpack/writer.h"
#include "codecs/bf16_exp/byte_split.h"
#include "codecs/bf16_exp/bit_io.h"
#include "codecs/bf16_exp/exponent_code.h"
#include "codecs/float_convert.h"
#include "codecs/encoded_record.h"
#include "gtest/gtest.h"
#include "io/safetensors.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

struct Encoded {
  EncodedTensor tensor;
  TensorInfo info;
  DecodeInput Input() const {
    DecodeInput in{&info, {}, {}};
    for (const auto& s : tensor.streams) {
      in.streams.push_back(s.bytes);
      in.raw_base.push_back(0);
    }
    return in;
  }
};

Encoded EncodeOrDie(const Codec& codec, DType dtype, const std::vector<uint64_t>& shape,
                    const std::vector<uint8_t>& bytes, int threads = 1, CodecParams params = {}) {
  TensorSource src{"t", dtype, shape, bytes};
  auto enc = codec.Encode(src, params, ExecOptions{threads});
  EXPECT_TRUE(enc.ok()) << enc.status();
  Encoded out;
  if (enc.ok()) out.tensor = *std::move(enc);
  out.info = RecordFor("t", dtype, shape, codec.id(), out.tensor);
  return out;
}

std::vector<uint8_t> DecodeOrDie(const Codec& codec, const Encoded& e, OutputType out, int threads = 1) {
  auto size = codec.DecodedBytes(e.info, out);
  EXPECT_TRUE(size.ok()) << size.status();
  std::vector<uint8_t> dst(size.ok() ? *size : 0);
  absl::Status s = codec.Decode(e.Input(), out, absl::MakeSpan(dst), ExecOptions{threads});
  EXPECT_TRUE(s.ok()) << s;
  return dst;
}

std::vector<uint8_t> Bytes(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> b(v.size() * 2);
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<uint16_t> GaussianBf16(size_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, sigma);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = F32ToBF16(g(rng));
  return v;
}

const char* kLossless[] = {"bf16-huffman", "bf16-unary"};

// Every output type of a lossless codec equals the conversion of the source.
void ExpectLossless(const Codec& c, const std::vector<uint64_t>& shape, const std::vector<uint16_t>& v,
                    int threads = 1) {
  const auto bytes = Bytes(v);
  Encoded e = EncodeOrDie(c, DType::kBF16, shape, bytes, threads);
  ASSERT_TRUE(c.ValidateRecord(e.info).ok()) << c.ValidateRecord(e.info);
  EXPECT_TRUE(DecodeOrDie(c, e, OutputType::kBF16, threads) == bytes) << c.id();
  EXPECT_TRUE(DecodeOrDie(c, e, OutputType::kNative, threads) == bytes) << c.id();
  std::vector<uint8_t> f32(v.size() * 4), f16(v.size() * 2);
  ConvertBF16ToF32(v.data(), f32.data(), v.size());
  ConvertBF16ToF16(v.data(), f16.data(), v.size());
  EXPECT_TRUE(DecodeOrDie(c, e, OutputType::kF32, threads) == f32) << c.id();
  EXPECT_TRUE(DecodeOrDie(c, e, OutputType::kF16, threads) == f16) << c.id();
}

TEST(Bf16Exp, Registered) {
  for (const char* id : {"bf16-huffman", "bf16-unary", "bf16-mx"}) {
    ASSERT_NE(FindCodec(id), nullptr) << id;
    EXPECT_FALSE(FindCodec(id)->description().empty());
  }
}

TEST(Bf16Exp, AllBitPatternsRoundTrip) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<uint16_t> shuffled = all;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
  for (const char* id : kLossless) {
    const Codec& c = *FindCodec(id);
    ExpectLossless(c, {65536}, all);
    ExpectLossless(c, {256, 256}, shuffled, 4);
    ExpectLossless(c, {16, 64, 64}, shuffled, 2);
  }
}

TEST(Bf16Exp, ChunkedFourLaneRoundTrip) {
  // 2^20 weights: 4 chunks of 2^18, each 4 lanes; plus specials.
  auto v = GaussianBf16(1u << 20, 0.02f, 1);
  for (uint32_t i = 0; i < 65536; ++i) v[i * 16] = static_cast<uint16_t>(i);
  for (const char* id : kLossless) {
    const Codec& c = *FindCodec(id);
    Encoded e = EncodeOrDie(c, DType::kBF16, {1024, 1024}, Bytes(v), 4);
    EXPECT_EQ(e.tensor.streams[1].chunks.size(), 4u);
    ExpectLossless(c, {1024, 1024}, v, 4);
    ExpectLossless(c, {1u << 20}, v, 3);
    ExpectLossless(c, {3, 1u << 18, 1}, std::vector<uint16_t>(v.begin(), v.begin() + 3 * (1u << 18)), 2);
  }
}

TEST(Bf16Exp, AdversarialDistributions) {
  std::vector<std::pair<std::vector<uint64_t>, std::vector<uint16_t>>> cases;
  cases.push_back({{}, {0x3f80}});
  cases.push_back({{0, 7}, {}});
  cases.push_back({{5}, {0, 0, 0, 0, 0}});
  cases.push_back({{1000}, std::vector<uint16_t>(1000, 0x8000)});       // -0 only
  cases.push_back({{33, 1000}, std::vector<uint16_t>(33000, 0x3f81)});  // one exponent
  {
    // Geometric over all 256 exponents: forces the 12-bit length limit and
    // unary escapes.
    std::vector<uint16_t> v;
    std::mt19937 rng(3);
    for (int e = 0; e < 256; ++e) {
      const size_t count = std::max<size_t>(1, size_t{1} << std::max(0, 20 - e));
      for (size_t k = 0; k < count && v.size() < 3'000'000; ++k) {
        v.push_back(static_cast<uint16_t>((rng() & 0x8000) | e << 7 | (rng() & 0x7f)));
      }
    }
    std::shuffle(v.begin(), v.end(), rng);
    cases.push_back({{v.size()}, v});
  }
  {
    std::vector<uint16_t> v(100000);  // uniform random bits: every exponent
    std::mt19937 rng(4);
    for (auto& x : v) x = static_cast<uint16_t>(rng());
    cases.push_back({{100, 1000}, v});
  }
  for (const char* id : kLossless) {
    for (const auto& [shape, v] : cases) ExpectLossless(*FindCodec(id), shape, v, 2);
  }
  // The geometric case needs the length limit.
  auto lengths = bf16_exp::HuffmanLengths(std::vector<uint64_t>([] {
    std::vector<uint64_t> f(256);
    for (int i = 0; i < 256; ++i) f[i] = uint64_t{1} << (40 - std::min(i, 40));
    return f;
  }()), 12);
  int longest = 0;
  for (auto l : lengths) longest = std::max<int>(longest, l);
  EXPECT_EQ(longest, 12);
  EXPECT_TRUE(bf16_exp::ExponentCode::Huffman(lengths).ok());
}

TEST(Bf16Exp, LaneEdges) {
  // One value; lane splits that are not multiples of 4; sizes around the
  // 4-lane threshold and the decoder's 32-byte fast-loop steps; one exponent
  // only; all 256 exponents in every lane.
  std::mt19937 rng(31);
  for (const char* id : kLossless) {
    const Codec& c = *FindCodec(id);
    for (uint64_t m : {1ull, 2ull, 3ull, 7ull, 31ull, 32ull, 33ull, 100ull, 16383ull, 16384ull, 16385ull, 16386ull,
                       16387ull, 20001ull, 65537ull}) {
      auto v = GaussianBf16(m, 0.02f, static_cast<uint32_t>(m));
      ExpectLossless(c, {m}, v);
      std::vector<uint16_t> same(m, 0x3c12);
      for (size_t i = 0; i < m; ++i) same[i] = static_cast<uint16_t>(0x3c00 | (rng() & 0x807f));
      ExpectLossless(c, {m}, same);
      if (m >= 256) {
        std::vector<uint16_t> all = v;
        // Every exponent at the start, middle and end of each lane.
        for (int k = 0; k < 4; ++k) {
          const uint64_t b = m * k / 4, e = m * (k + 1) / 4;
          for (uint64_t j = 0; j < 64 && b + j < e; ++j) all[b + j] = static_cast<uint16_t>(((rng() % 256) << 7) | (rng() & 0x807f));
          for (uint64_t j = 0; j < 64 && e - 1 - j > b; ++j) all[e - 1 - j] = static_cast<uint16_t>(((rng() % 256) << 7) | (rng() & 0x807f));
        }
        for (int ex = 0; ex < 256; ++ex) all[(ex * 7919u) % m] = static_cast<uint16_t>(ex << 7 | (ex & 1 ? 0x8000 : 0));
        ExpectLossless(c, {m}, all);
      }
    }
  }
}

TEST(Bf16Exp, ByteSplitPathsAgree) {
  // The dispatched (AVX2 or SSE2) split and join equal the portable ones on
  // every bf16 pattern, at unaligned offsets and odd lengths.
  std::vector<uint8_t> src(2 * 65536 + 64);
  for (uint32_t i = 0; i < src.size() / 2; ++i) {
    const uint16_t x = static_cast<uint16_t>(i * 40503u);
    src[2 * i] = static_cast<uint8_t>(x);
    src[2 * i + 1] = static_cast<uint8_t>(x >> 8);
  }
  for (size_t off : {0, 1, 3}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{17}, size_t{33}, size_t{65536 + 7}}) {
      std::vector<uint8_t> sm1(n), ex1(n), sm2(n), ex2(n), back1(2 * n), back2(2 * n);
      bf16_exp::SplitBf16(src.data() + 2 * off, n, sm1.data(), ex1.data());
      bf16_exp::SplitBf16Scalar(src.data() + 2 * off, n, sm2.data(), ex2.data());
      ASSERT_EQ(sm1, sm2) << off << " " << n;
      ASSERT_EQ(ex1, ex2) << off << " " << n;
      bf16_exp::JoinBf16(sm1.data(), ex1.data(), n, back1.data());
      bf16_exp::JoinBf16Scalar(sm1.data(), ex1.data(), n, back2.data());
      ASSERT_EQ(back1, back2);
      ASSERT_TRUE(std::equal(back1.begin(), back1.end(), src.begin() + 2 * off));
      std::vector<uint64_t> hist(256, 0), want(256, 0);
      bf16_exp::CountExponents(ex1.data(), n, hist.data());
      for (uint8_t e : ex1) ++want[e];
      ASSERT_EQ(hist, want);
    }
  }
}

TEST(Bf16Exp, ChunkCodesRoundTripAndRejectBadWords) {
  // EncodeChunk/DecodeChunk for every unary K (code words up to 28 bits: the
  // bit writer's 2-codes-per-store path) and length-limited Huffman codes;
  // an escape of a ranked exponent deep inside a 4-lane chunk is rejected.
  std::mt19937 rng(41);
  std::vector<uint8_t> syms(40000);
  std::vector<uint64_t> freq(256);
  for (auto& s : syms) {
    // Geometric-ish over 40 exponents around 120, a few anywhere.
    s = rng() % 100 == 0 ? static_cast<uint8_t>(rng()) : static_cast<uint8_t>(120 + std::min<int>(39, std::countr_zero(rng() | 0x80000000u)));
    ++freq[s];
  }
  std::vector<uint8_t> ranked;
  for (int s = 0; s < 256 && ranked.size() < 20; ++s) {
    if (freq[s]) ranked.push_back(static_cast<uint8_t>(s));
  }
  for (size_t k = 0; k <= 20; ++k) {
    std::vector<uint8_t> r(ranked.begin(), ranked.begin() + static_cast<long>(std::min(k, ranked.size())));
    auto code = bf16_exp::ExponentCode::Unary(r);
    ASSERT_TRUE(code.ok());
    for (uint64_t m : {uint64_t{1}, uint64_t{999}, uint64_t{40000}}) {
      std::vector<uint8_t> bytes, back(m);
      bf16_exp::EncodeChunk(*code, syms.data(), m, &bytes);
      ASSERT_TRUE(bf16_exp::DecodeChunk(*code, bytes, m, back.data()).ok()) << k << " " << m;
      ASSERT_TRUE(std::equal(back.begin(), back.end(), syms.begin())) << k << " " << m;
      // The single-symbol and compact tables decode the same bits.
      for (auto tables : {bf16_exp::ExponentCode::Tables::kSingle, bf16_exp::ExponentCode::Tables::kCompact}) {
        auto other = bf16_exp::ExponentCode::Unary(r, tables);
        ASSERT_TRUE(other.ok());
        std::vector<uint8_t> back1(m);
        ASSERT_TRUE(bf16_exp::DecodeChunk(*other, bytes, m, back1.data()).ok()) << k << " " << m;
        ASSERT_EQ(back1, back);
      }
    }
  }
  for (int max_bits : {12, 9}) {
    std::vector<uint64_t> f(256);
    for (int i = 0; i < 256; ++i) f[i] = freq[i] + 1;
    auto lengths = bf16_exp::HuffmanLengths(f, max_bits);
    auto code = bf16_exp::ExponentCode::Huffman(lengths);
    ASSERT_TRUE(code.ok());
    std::vector<uint8_t> bytes, back(syms.size());
    bf16_exp::EncodeChunk(*code, syms.data(), syms.size(), &bytes);
    ASSERT_TRUE(bf16_exp::DecodeChunk(*code, bytes, syms.size(), back.data()).ok());
    EXPECT_EQ(back, syms);
    // The single-symbol and compact (9-bit window: the 10..12-bit code
    // words take the slow path) tables decode the same bits.
    for (auto tables : {bf16_exp::ExponentCode::Tables::kSingle, bf16_exp::ExponentCode::Tables::kCompact}) {
      auto other = bf16_exp::ExponentCode::Huffman(lengths, tables);
      ASSERT_TRUE(other.ok());
      std::vector<uint8_t> back1(syms.size());
      ASSERT_TRUE(bf16_exp::DecodeChunk(*other, bytes, syms.size(), back1.data()).ok());
      EXPECT_EQ(back1, syms);
      // A corrupted chunk fails (or decodes) the same way with all tables.
      for (int trial = 0; trial < 50; ++trial) {
        std::vector<uint8_t> bad = bytes;
        bad[12 + rng() % (bad.size() - 12)] ^= static_cast<uint8_t>(1 + rng() % 255);
        const bool ok_full = bf16_exp::DecodeChunk(*code, bad, syms.size(), back.data()).ok();
        const bool ok_other = bf16_exp::DecodeChunk(*other, bad, syms.size(), back1.data()).ok();
        EXPECT_EQ(ok_full, ok_other);
        if (ok_full && ok_other) {
          EXPECT_EQ(back, back1);
        }
      }
    }
  }
  // Unary, K = 3: put an escape of rank-1's exponent in lane 2's middle.
  const std::vector<uint8_t> r3 = {ranked[0], ranked[1], ranked[2]};
  auto code = bf16_exp::ExponentCode::Unary(r3);
  ASSERT_TRUE(code.ok());
  std::vector<uint8_t> out(20000 + 64);
  {
    // Hand-made lane: 10000 rank-0 codes ("1"), an escape "000" + byte of a
    // ranked exponent, then rank-0 codes, zero padded.
    std::vector<uint8_t> buf(20000);
    bf16_exp::BitWriter w(buf.data());
    for (int i = 0; i < 10000; ++i) w.Put(1, 1);
    w.Put(ranked[1], 11);
    for (int i = 0; i < 9999; ++i) w.Put(1, 1);
    const size_t n = w.Finish();
    const uint8_t* data[1] = {buf.data()};
    const size_t size[1] = {n};
    uint8_t* dst[1] = {out.data()};
    const size_t count[1] = {20000};
    EXPECT_FALSE(code->DecodeLanes(data, size, dst, count, 1).ok());
  }
}

TEST(Bf16Exp, F32SourceNeedsOptIn) {
  for (const char* id : {"bf16-huffman", "bf16-unary", "bf16-mx"}) {
    const Codec& c = *FindCodec(id);
    const std::vector<uint64_t> shape = {4, 8};
    EXPECT_FALSE(c.CanEncode(DType::kF32, shape, {}).ok());
    EXPECT_FALSE(c.CanEncode(DType::kF16, shape, {}).ok());
    EXPECT_FALSE(c.CanEncode(DType::kBF16, shape, {{"nope", MetaValue::Bool(true)}}).ok());
    EXPECT_TRUE(c.CanEncode(DType::kBF16, shape, {}).ok());
    ASSERT_TRUE(c.CanEncode(DType::kF32, shape, {{"from_f32", MetaValue::Bool(true)}}).ok());
    std::vector<float> f(32);
    std::mt19937 rng(5);
    std::normal_distribution<float> g(0, 1);
    for (auto& x : f) x = g(rng);
    std::vector<uint8_t> fb(128);
    std::memcpy(fb.data(), f.data(), 128);
    Encoded e = EncodeOrDie(c, DType::kF32, shape, fb, 1, {{"from_f32", MetaValue::Bool(true)}});
    ASSERT_TRUE(c.ValidateRecord(e.info).ok()) << c.ValidateRecord(e.info);
    std::vector<uint16_t> want(32);
    ConvertF32ToBF16(f.data(), want.data(), 32);
    if (std::string(id) != "bf16-mx") {
      EXPECT_TRUE(DecodeOrDie(c, e, OutputType::kBF16) == Bytes(want));
    }
    // The record must say it was converted.
    TensorInfo bad = e.info;
    bad.codec_params.erase(bad.codec_params.begin());
    EXPECT_FALSE(c.ValidateRecord(bad).ok());
  }
}

TEST(Bf16Exp, DecodeRowsEqualsSliceOfDecode) {
  auto v = GaussianBf16(700 * 1000, 0.05f, 9);
  const std::vector<uint64_t> shape = {700, 1000};
  for (const char* id : {"bf16-huffman", "bf16-unary", "bf16-mx"}) {
    const Codec& c = *FindCodec(id);
    Encoded e = EncodeOrDie(c, DType::kBF16, shape, Bytes(v), 2);
    ASSERT_TRUE(c.ValidateRecord(e.info).ok());
    for (OutputType out : {OutputType::kBF16, OutputType::kF32}) {
      const auto full = DecodeOrDie(c, e, out, 2);
      const size_t row_bytes = 1000 * (out == OutputType::kF32 ? 4 : 2);
      for (auto [a, b] : std::vector<std::pair<uint64_t, uint64_t>>{{0, 700}, {0, 1}, {261, 263}, {262, 600}, {699, 700}, {5, 5}}) {
        // Hand the codec only the byte ranges it asks for, as the reader does.
        DecodeInput in{&e.info, {}, {}};
        for (size_t s = 0; s < e.tensor.streams.size(); ++s) {
          auto r = c.RowRangeBytes(e.info, s, a, b);
          ASSERT_TRUE(r.ok()) << r.status();
          in.streams.push_back(absl::MakeConstSpan(e.tensor.streams[s].bytes).subspan(r->first, r->second - r->first));
          in.raw_base.push_back(r->first);
        }
        std::vector<uint8_t> part((b - a) * row_bytes);
        ASSERT_TRUE(c.DecodeRows(in, a, b, out, absl::MakeSpan(part)).ok()) << id << " " << a << ".." << b;
        EXPECT_TRUE(std::equal(part.begin(), part.end(), full.begin() + a * row_bytes)) << id << " " << a << ".." << b;
      }
    }
  }
}

TEST(Bf16Exp, HostileRecordsAreRejected) {
  const Codec& h = *FindCodec("bf16-huffman");
  auto v = GaussianBf16(4096, 0.02f, 11);
  Encoded e = EncodeOrDie(h, DType::kBF16, {64, 64}, Bytes(v));
  auto with_lengths = [&](std::string hex) {
    TensorInfo i = e.info;
    for (auto& [k, val] : i.codec_params) {
      if (k == "exp_code_lengths") val.s = hex;
    }
    return i;
  };
  std::string over(256, '0'), incomplete(256, '0'), big(256, '0');
  over[1] = over[2] = over[3] = '1';
  incomplete[1] = '1';
  incomplete[2] = '2';
  big[1] = 'd';
  for (const std::string& hex : {over, incomplete, big, std::string(255, '0'), std::string(256, 'X'), std::string(256, '0')}) {
    EXPECT_FALSE(h.ValidateRecord(with_lengths(hex)).ok()) << hex;
  }
  TensorInfo bad = e.info;
  bad.streams[0].raw_length -= 1;
  EXPECT_FALSE(h.ValidateRecord(bad).ok());
  bad = e.info;
  std::swap(bad.streams[0], bad.streams[1]);
  EXPECT_FALSE(h.ValidateRecord(bad).ok());
  bad = e.info;
  bad.codec_params.push_back({"extra", MetaValue::Bool(true)});
  EXPECT_FALSE(h.ValidateRecord(bad).ok());
  const Codec& u = *FindCodec("bf16-unary");
  Encoded eu = EncodeOrDie(u, DType::kBF16, {64, 64}, Bytes(v));
  for (const std::string& hex : {std::string("7a7a"), std::string("7"), std::string(42, '1'), std::string("zz")}) {
    TensorInfo i = eu.info;
    for (auto& [k, val] : i.codec_params) {
      if (k == "exp_ranks") val.s = hex;
    }
    EXPECT_FALSE(u.ValidateRecord(i).ok()) << hex;
  }
}

TEST(Bf16Exp, CorruptBytesFailCleanly) {
  // Mutations of valid streams either decode or fail; never crash (the
  // fuzz targets and ASan builds push this further).
  auto v = GaussianBf16(40000, 0.02f, 12);
  for (uint32_t i = 0; i < 4000; ++i) v[i * 10] = static_cast<uint16_t>(i * 16);
  std::mt19937 rng(13);
  for (const char* id : kLossless) {
    const Codec& c = *FindCodec(id);
    for (const std::vector<uint64_t>& shape : {std::vector<uint64_t>{40, 1000}, std::vector<uint64_t>{4000, 10}}) {
      Encoded good = EncodeOrDie(c, DType::kBF16, shape, Bytes(v));
      int failures = 0;
      for (int trial = 0; trial < 300; ++trial) {
        Encoded e = good;
        auto& ex = e.tensor.streams[1].bytes;
        if (trial % 3 == 0) {
          ex.resize(rng() % ex.size());
        } else {
          for (int k = 0; k < 1 + trial % 5; ++k) ex[rng() % ex.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
        }
        e.info = RecordFor("t", DType::kBF16, shape, c.id(), e.tensor);
        if (!c.ValidateRecord(e.info).ok()) continue;
        std::vector<uint8_t> dst(v.size() * 2);
        failures += !c.Decode(e.Input(), OutputType::kBF16, absl::MakeSpan(dst), {2}).ok();
      }
      EXPECT_GT(failures, 100) << id;
    }
  }
}

TEST(Bf16Exp, MxIsNearLossless) {
  const Codec& c = *FindCodec("bf16-mx");
  auto v = GaussianBf16(1u << 16, 0.02f, 21);
  Encoded e = EncodeOrDie(c, DType::kBF16, {256, 256}, Bytes(v), 2);
  ASSERT_TRUE(c.ValidateRecord(e.info).ok()) << c.ValidateRecord(e.info);
  double rms = -1, lossy = -1;
  for (const auto& [k, val] : e.tensor.params) {
    if (k == "rel_rms_error") rms = val.f64;
    if (k == "lossy_fraction") lossy = val.f64;
  }
  EXPECT_GT(lossy, 0.0);
  EXPECT_LT(lossy, 0.03);
  EXPECT_GT(rms, 0.0);
  EXPECT_LT(rms, 1e-3);
  const auto got = DecodeOrDie(c, e, OutputType::kBF16, 2);
  std::vector<uint16_t> back(v.size());
  std::memcpy(back.data(), got.data(), got.size());
  size_t differ = 0;
  double err = 0, ref = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    differ += back[i] != v[i];
    const double x = BF16ToF32(v[i]), y = BF16ToF32(back[i]);
    err += (x - y) * (x - y);
    ref += x * x;
    // Within 6 binades of the block maximum everything is exact; below, the
    // error is at most half a step of 2^(E-140), E the block's exponent.
    double amax = 0;
    for (size_t j = i / 32 * 32; j < i / 32 * 32 + 32; ++j) amax = std::max<double>(amax, std::fabs(BF16ToF32(v[j])));
    EXPECT_LE(std::fabs(x - y), amax * std::ldexp(1.0, -14)) << i;
  }
  EXPECT_NEAR(static_cast<double>(differ) / v.size(), lossy, 1e-12);
  EXPECT_NEAR(std::sqrt(err / ref), rms, 1e-9);
  EXPECT_EQ(*c.EncodedSize(DType::kBF16, std::vector<uint64_t>{256, 256}, {}),
            e.tensor.streams[0].bytes.size() + e.tensor.streams[1].bytes.size() + e.tensor.streams[2].bytes.size());
  // Specials survive: a block with NaN/inf keeps them bit-exact.
  std::vector<uint16_t> s = {0x7fc1, 0xff80, 0x7f80, 0x0000, 0x8000, 0x0001, 0x3f80, 0x7f7f};
  s.resize(64, 0x4000);
  Encoded es = EncodeOrDie(c, DType::kBF16, {64}, Bytes(s));
  const auto gs = DecodeOrDie(c, es, OutputType::kBF16);
  std::vector<uint16_t> bs(64);
  std::memcpy(bs.data(), gs.data(), 128);
  for (int i : {0, 1, 2, 7}) EXPECT_EQ(bs[i], s[i]) << i;  // 1.0 is 128 binades below inf: flushed
  // All 65536 patterns in blocks of equal exponent decode exactly.
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(((i & 0xff) << 8) | (i >> 8));
  std::vector<uint16_t> sorted(all);
  std::sort(sorted.begin(), sorted.end(), [](uint16_t a, uint16_t b) { return (a & 0x7f80) < (b & 0x7f80); });
  Encoded ea = EncodeOrDie(c, DType::kBF16, {65536}, Bytes(sorted));
  EXPECT_TRUE(DecodeOrDie(c, ea, OutputType::kBF16) == Bytes(sorted));
}

TEST(Bf16Exp, MxBlockFastPathEqualsPerValueDecode) {
  // Random stream bytes (any bytes are a valid bf16-mx payload): the whole-
  // block decode (exact offsets vectorised, offset 7 patched) equals the
  // value-by-value decode that one-row ranges take, for every output type.
  const Codec& c = *FindCodec("bf16-mx");
  const uint64_t n = 32 * 700 + 5;
  std::mt19937 rng(51);
  Encoded e = EncodeOrDie(c, DType::kBF16, {n, 1}, Bytes(GaussianBf16(n, 0.02f, 52)));
  for (int round = 0; round < 3; ++round) {
    for (auto& stream : e.tensor.streams) {
      for (auto& b : stream.bytes) b = static_cast<uint8_t>(rng());
    }
    // Shared exponents around 120..136 so both paths (E >= 7) and E < 7 occur.
    for (size_t k = 0; k < e.tensor.streams[0].bytes.size(); ++k) {
      if (round < 2 && k % 9 != 0) e.tensor.streams[0].bytes[k] = static_cast<uint8_t>(120 + rng() % 17);
    }
    ASSERT_TRUE(c.ValidateRecord(e.info).ok());
    for (OutputType out : {OutputType::kBF16, OutputType::kF32}) {
      const auto full = DecodeOrDie(c, e, out);
      const size_t osz = out == OutputType::kF32 ? 4 : 2;
      for (uint64_t r = 0; r < n; r += 1 + rng() % 3) {
        DecodeInput in{&e.info, {}, {}};
        for (size_t s = 0; s < 3; ++s) {
          auto range = c.RowRangeBytes(e.info, s, r, r + 1);
          ASSERT_TRUE(range.ok());
          in.streams.push_back(absl::MakeConstSpan(e.tensor.streams[s].bytes).subspan(range->first, range->second - range->first));
          in.raw_base.push_back(range->first);
        }
        std::vector<uint8_t> one(osz);
        ASSERT_TRUE(c.DecodeRows(in, r, r + 1, out, absl::MakeSpan(one)).ok());
        ASSERT_TRUE(std::equal(one.begin(), one.end(), full.begin() + r * osz)) << round << " " << r;
      }
    }
  }
}

// ---- real weights ------------------------------------------------------------

struct ModelStats {
  uint64_t weights = 0;
  uint64_t stored = 0;
  double bound_bits = 0;  // 8 + H(exponent) over the whole set, times weights
};

// Writes the model (F32 -> bf16, ggml rounding) with `codec` and reads it
// back bit-exactly; returns the stored bytes and the 8+H bound.
ModelStats RoundTripModel(const std::string& path, const std::string& codec) {
  ModelStats st;
  auto model = io::SafetensorsModel::Open(path);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return st;
  const std::string out = testing::MakeTempDir() + "/m.bolt";
  auto w = Writer::Create(out, {.alignment = 64, .threads = 2});
  EXPECT_TRUE(w.ok());
  std::map<std::string, std::vector<uint16_t>> want;
  std::vector<uint64_t> freq(256);
  for (size_t i = 0; i < (*model)->tensors().size(); ++i) {
    const auto& t = (*model)->tensors()[i];
    if (t.dtype != DType::kF32) continue;
    auto bytes = (*model)->TensorBytes(i);
    std::vector<uint16_t> bf(bytes.size() / 4);
    ConvertF32ToBF16(bytes.data(), bf.data(), bf.size());
    for (uint16_t x : bf) ++freq[(x >> 7) & 0xff];
    st.weights += bf.size();
    auto b = Bytes(bf);
    TensorSource src{t.name, DType::kBF16, t.shape, b};
    auto enc = EncodeTensor(codec, src, {}, {.threads = 2});
    EXPECT_TRUE(enc.ok()) << enc.status();
    EXPECT_TRUE((*w)->AddTensor(t.name, t.shape, DType::kBF16, codec, std::move(*enc)).ok());
    want[t.name] = std::move(bf);
  }
  EXPECT_TRUE((*w)->Finish().ok());
  double h = 0;
  for (uint64_t f : freq) {
    if (f) h -= static_cast<double>(f) / st.weights * std::log2(static_cast<double>(f) / st.weights);
  }
  st.bound_bits = (8 + h) * static_cast<double>(st.weights);
  auto r = Reader::Open(out);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return st;
  for (size_t t = 0; t < (*r)->tensors().size(); ++t) {
    const auto& info = (*r)->tensors()[t];
    st.stored += info.stored_bytes();
    std::vector<uint8_t> got(want[info.name].size() * 2);
    EXPECT_TRUE((*r)->Decode(t, OutputType::kBF16, absl::MakeSpan(got)).ok());
    EXPECT_TRUE(got == Bytes(want[info.name])) << info.name;
    if (info.row_count() > 2) {
      const uint64_t re = want[info.name].size() / info.row_count();
      std::vector<uint8_t> part(re * 2 * 2);
      EXPECT_TRUE((*r)->DecodeRows(t, 1, 3, OutputType::kBF16, absl::MakeSpan(part)).ok());
      EXPECT_TRUE(std::equal(part.begin(), part.end(), got.begin() + re * 2)) << info.name;
    }
  }
  EXPECT_TRUE((*r)->VerifyContainer().ok());
  return st;
}

TEST(Bf16Exp, ShippedModelsRatios) {
  const std::string tiny = testing::SourceDir() + "/testdata/tinystories-656k/model.safetensors";
  const std::string recall = testing::SourceDir() + "/testdata/tl-recall-gpt/recall_weights.safetensors";
  for (const std::string& path : {tiny, recall}) {
    for (const char* codec : kLossless) {
      ModelStats st = RoundTripModel(path, codec);
      ASSERT_GT(st.weights, 0u);
      const double bits = 8.0 * st.stored / st.weights;
      const double ratio = 2.0 * st.weights / st.stored;
      std::printf("%s %s: %.4f bits/weight (8+H %.4f), %.4fx vs bf16\n", path.substr(path.rfind('/', path.rfind('/') - 1)).c_str(),
                  codec, bits, st.bound_bits / st.weights, ratio);
      if (path == tiny) {
        if (std::string(codec) == "bf16-huffman") {
          EXPECT_GE(ratio, 1.50);
          EXPECT_LE(bits, st.bound_bits / st.weights + 0.06);
        } else {
          EXPECT_GE(ratio, 1.48);
        }
      }
    }
  }
}

TEST(Bf16Exp, CliConvertBf16Safetensors) {
  // Make a bf16 safetensors of TinyStories, convert it with bf16-huffman,
  // and back to safetensors: the bytes are identical.
  const std::string dir = testing::MakeTempDir();
  auto model = io::SafetensorsModel::Open(testing::SourceDir() + "/testdata/tinystories-656k/model.safetensors");
  ASSERT_TRUE(model.ok());
  std::vector<io::SafetensorsTensorDecl> decls;
  for (const auto& t : (*model)->tensors()) decls.push_back({t.name, DType::kBF16, t.shape});
  auto sw = io::SafetensorsWriter::Create(dir + "/bf.safetensors", {}, decls, {});
  ASSERT_TRUE(sw.ok());
  for (size_t i = 0; i < (*model)->tensors().size(); ++i) {
    auto b = (*model)->TensorBytes(i);
    std::vector<uint8_t> bf(b.size() / 2);
    ConvertF32ToBF16(b.data(), bf.data(), b.size() / 4);
    ASSERT_TRUE((*sw)->WriteNext(bf).ok());
  }
  ASSERT_TRUE((*sw)->Finish().ok());
  for (const char* codec : {"bf16-huffman", "bf16-unary"}) {
    auto c = testing::RunCli({"convert", dir + "/bf.safetensors", "-o", dir + "/m.bolt", "--codec", std::string("*=") + codec});
    ASSERT_EQ(c.exit_code, 0) << c.output;
    auto v = testing::RunCli({"verify", dir + "/m.bolt"});
    EXPECT_EQ(v.exit_code, 0) << v.output;
    auto i = testing::RunCli({"inspect", dir + "/m.bolt", "--json"});
    EXPECT_NE(i.output.find(codec), std::string::npos);
    auto b = testing::RunCli({"convert", dir + "/m.bolt", "-o", dir + "/back.safetensors", "--codec", "*=bf16"});
    ASSERT_EQ(b.exit_code, 0) << b.output;
    EXPECT_TRUE(testing::ReadFileBytes(dir + "/back.safetensors") == testing::ReadFileBytes(dir + "/bf.safetensors"));
    std::remove((dir + "/m.bolt").c_str());
    std::remove((dir + "/back.safetensors").c_str());
  }
  // F32 input needs from_f32=true (the conversion is lossy): without it the
  // tensors keep their source form, with one warning saying why.
  const std::string f32 = testing::SourceDir() + "/testdata/tinystories-656k/model.safetensors";
  auto refused = testing::RunCli({"convert", f32, "-o", dir + "/x.bolt", "--codec", "*=bf16-huffman"});
  EXPECT_EQ(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find("bf16-huffman -> kept as F32"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("from_f32"), std::string::npos) << refused.output;
  auto ok = testing::RunCli({"convert", f32, "-o", dir + "/y.bolt", "--codec", "*=bf16-mx:from_f32=true"});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  auto js = testing::RunCli({"inspect", dir + "/y.bolt", "--json"});
  EXPECT_NE(js.output.find("lossy_fraction"), std::string::npos) << js.output.substr(0, 2000);
}

}  // namespace
}  // namespace boltpack
