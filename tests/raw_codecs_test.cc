#include "codecs/raw/raw_codecs.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/tensor_info.h"
#include "boltpack/types.h"
#include "codecs/float_convert.h"
#include "codecs/encoded_record.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

std::vector<uint8_t> Conformance(const std::string& name) {
  return testing::ReadFileBytes(testing::SourceDir() + "/testdata/conformance/ggml/" + name);
}

struct Encoded {
  EncodedTensor tensor;
  TensorInfo info;
};

Encoded EncodeOrDie(const Codec& codec, DType dtype, const std::vector<uint64_t>& shape,
                    const std::vector<uint8_t>& bytes, int threads = 1) {
  TensorSource src{"t", dtype, shape, bytes};
  auto enc = codec.Encode(src, {}, ExecOptions{threads});
  EXPECT_TRUE(enc.ok()) << enc.status();
  Encoded out;
  if (enc.ok()) out.tensor = *std::move(enc);
  out.info = RecordFor("t", dtype, shape, codec.id(), out.tensor);
  return out;
}

std::vector<uint8_t> DecodeOrDie(const Codec& codec, const Encoded& e, OutputType out,
                                 int threads = 1) {
  auto size = codec.DecodedBytes(e.info, out);
  EXPECT_TRUE(size.ok()) << size.status();
  std::vector<uint8_t> dst(size.ok() ? *size : 0);
  DecodeInput in{&e.info, {e.tensor.streams.at(0).bytes}, {0}};
  absl::Status s = codec.Decode(in, out, absl::MakeSpan(dst), ExecOptions{threads});
  EXPECT_TRUE(s.ok()) << s;
  return dst;
}

uint64_t Product(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

// Random element bytes of `dtype`, with specials sprinkled in for floats.
std::vector<uint8_t> RandomBytes(DType dtype, uint64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(n * DTypeSize(dtype));
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  if (dtype == DType::kF32) {
    // Mostly ordinary values so rounding paths (not only NaN) are exercised.
    std::normal_distribution<float> g(0.0f, 3.0f);
    for (uint64_t i = 0; i < n; i += 2) {
      const float v = g(rng);
      std::memcpy(&b[i * 4], &v, 4);
    }
  }
  if (dtype == DType::kF64) {
    std::normal_distribution<double> g(0.0, 100.0);
    for (uint64_t i = 0; i < n; i += 2) {
      const double v = g(rng);
      std::memcpy(&b[i * 8], &v, 8);
    }
  }
  return b;
}

// Reference element conversion, one at a time via the scalar helpers.
std::vector<uint8_t> ReferenceConvert(DType from, DType to, const std::vector<uint8_t>& src) {
  const uint64_t n = src.size() / DTypeSize(from);
  std::vector<uint8_t> out(n * DTypeSize(to));
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t f32bits = 0;
    switch (from) {
      case DType::kF32: std::memcpy(&f32bits, &src[i * 4], 4); break;
      case DType::kF16: {
        uint16_t h;
        std::memcpy(&h, &src[i * 2], 2);
        if (to == DType::kF16) {
          std::memcpy(&out[i * 2], &h, 2);
          continue;
        }
        f32bits = F16BitsToF32Bits(h);
        break;
      }
      case DType::kBF16: {
        uint16_t h;
        std::memcpy(&h, &src[i * 2], 2);
        if (to == DType::kBF16) {
          std::memcpy(&out[i * 2], &h, 2);
          continue;
        }
        f32bits = BF16BitsToF32Bits(h);
        break;
      }
      case DType::kF64: {
        double d;
        std::memcpy(&d, &src[i * 8], 8);
        f32bits = FloatBits(static_cast<float>(d));
        break;
      }
      default: ADD_FAILURE() << "bad dtype"; return out;
    }
    if (to == DType::kF32) {
      std::memcpy(&out[i * 4], &f32bits, 4);
    } else {
      const uint16_t h =
          to == DType::kF16 ? F32BitsToF16Bits(f32bits) : F32BitsToBF16Bits(f32bits);
      std::memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

DType OutDType(OutputType out, DType native) {
  switch (out) {
    case OutputType::kF32: return DType::kF32;
    case OutputType::kF16: return DType::kF16;
    case OutputType::kBF16: return DType::kBF16;
    case OutputType::kNative: return native;
  }
  return native;
}

const OutputType kAllOutputs[] = {OutputType::kF32, OutputType::kBF16, OutputType::kF16,
                                  OutputType::kNative};

// ---- registry -------------------------------------------------------------

TEST(CodecRegistry, BuiltinsAreRegistered) {
  for (const char* id : {"f32", "f16", "bf16", "raw"}) {
    const Codec* c = FindCodec(id);
    ASSERT_NE(c, nullptr) << id;
    EXPECT_EQ(c->id(), id);
    EXPECT_FALSE(c->description().empty());
  }
  EXPECT_EQ(FindCodec("nope"), nullptr);
  const auto ids = RegisteredCodecIds();
  for (const char* id : {"f32", "f16", "bf16", "raw"}) {
    EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << id;
  }
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
}

class NamedCodec : public Codec {
 public:
  explicit NamedCodec(std::string id) : id_(std::move(id)) {}
  std::string_view id() const override { return id_; }
  std::string_view description() const override { return "test"; }
  absl::Status CanEncode(DType, absl::Span<const uint64_t>, const CodecParams&) const override {
    return absl::OkStatus();
  }
  absl::StatusOr<EncodedTensor> Encode(const TensorSource&, const CodecParams&,
                                       const ExecOptions&) const override {
    return EncodedTensor{};
  }
  absl::Status ValidateRecord(const TensorInfo&) const override { return absl::OkStatus(); }
  bool CanDecodeTo(const TensorInfo&, OutputType) const override { return false; }
  absl::StatusOr<uint64_t> DecodedBytes(const TensorInfo&, OutputType) const override {
    return 0;
  }
  absl::Status Decode(const DecodeInput&, OutputType, absl::Span<uint8_t>,
                      const ExecOptions&) const override {
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> EncodedSize(DType, absl::Span<const uint64_t>,
                                       const CodecParams&) const override {
    return 0;
  }
  std::vector<int> SliceableAxes(absl::Span<const uint64_t>, const CodecParams&) const override {
    return {};
  }

 private:
  std::string id_;
};

TEST(CodecRegistry, RegisterChecksIds) {
  EXPECT_EQ(RegisterCodec(std::make_unique<NamedCodec>("f16")).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(RegisterCodec(std::make_unique<NamedCodec>("Bad")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RegisterCodec(nullptr).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(RegisterCodec(std::make_unique<NamedCodec>("test-plugin_1")).ok());
  EXPECT_NE(FindCodec("test-plugin_1"), nullptr);
  EXPECT_EQ(RegisterCodec(std::make_unique<NamedCodec>("test-plugin_1")).code(),
            absl::StatusCode::kAlreadyExists);
}

TEST(CodecRegistry, ValidIds) {
  EXPECT_TRUE(IsValidCodecId("q8_0"));
  EXPECT_TRUE(IsValidCodecId("0abc-d"));
  EXPECT_TRUE(IsValidCodecId(std::string(64, 'a')));
  EXPECT_FALSE(IsValidCodecId(std::string(65, 'a')));
  EXPECT_FALSE(IsValidCodecId(""));
  EXPECT_FALSE(IsValidCodecId("_x"));
  EXPECT_FALSE(IsValidCodecId("-x"));
  EXPECT_FALSE(IsValidCodecId("F16"));
  EXPECT_FALSE(IsValidCodecId("a b"));
  EXPECT_FALSE(IsValidCodecId("a.b"));
}

TEST(CodecRegistry, ConcurrentUse) {
  std::atomic<int> found{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        found += FindCodec("bf16") != nullptr;
        if (i == 100) {
          ASSERT_TRUE(RegisterCodec(std::make_unique<NamedCodec>("conc-" + std::to_string(t)))
                          .ok());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(found.load(), 8 * 200);
  for (int t = 0; t < 8; ++t) EXPECT_NE(FindCodec("conc-" + std::to_string(t)), nullptr);
}

TEST(CodecDefaults, RowMethodsUnimplementedNamingTheCodec) {
  NamedCodec c("mycodec");
  TensorInfo info;
  auto st = c.DecodeRows(DecodeInput{}, 0, 1, OutputType::kF32, {});
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("mycodec"), std::string::npos);
  auto r = c.RowRangeBytes(info, 0, 0, 1);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("mycodec"), std::string::npos);
}

// ---- conformance through the codecs --------------------------------------

TEST(RawCodecsConformance, EncodeMatchesGgml) {
  const std::vector<uint8_t> input = Conformance("encode_input.f32");
  const std::vector<uint64_t> shape = {80, 4096};
  for (const char* id : {"f16", "bf16"}) {
    const Codec* codec = FindCodec(id);
    ASSERT_NE(codec, nullptr);
    for (int threads : {1, 4}) {
      Encoded e = EncodeOrDie(*codec, DType::kF32, shape, input, threads);
      ASSERT_EQ(e.tensor.streams.size(), 1u);
      EXPECT_TRUE(e.tensor.streams[0].bytes == Conformance(std::string(id) + ".encode.bin"))
          << id << " threads=" << threads;
      EXPECT_TRUE(e.tensor.streams[0].chunks.empty()) << "640 KiB fits one chunk";
      EXPECT_TRUE(codec->ValidateRecord(e.info).ok());
    }
  }
}

TEST(RawCodecsConformance, DecodeMatchesGgml) {
  for (const char* id : {"f16", "bf16"}) {
    const Codec* codec = FindCodec(id);
    const DType dtype = std::string(id) == "f16" ? DType::kF16 : DType::kBF16;
    const std::vector<uint8_t> input = Conformance(std::string(id) + ".decode_input.bin");
    const std::vector<uint8_t> want = Conformance(std::string(id) + ".decode_output.f32");
    // Both the float codec and "raw" hold these bytes unchanged.
    for (const Codec* c : {codec, FindCodec("raw")}) {
      Encoded e = EncodeOrDie(*c, dtype, {1024}, input);
      EXPECT_TRUE(e.tensor.streams[0].bytes == input);
      ASSERT_TRUE(c->ValidateRecord(e.info).ok());
      EXPECT_TRUE(DecodeOrDie(*c, e, OutputType::kF32) == want) << c->id() << " " << id;
      EXPECT_TRUE(DecodeOrDie(*c, e, OutputType::kF32, 3) == want) << c->id() << " " << id;
      EXPECT_TRUE(DecodeOrDie(*c, e, OutputType::kNative) == input);
    }
  }
}

// ---- round trips -------------------------------------------------------------

TEST(RawCodecs, RoundTripEveryCodecSourceAndOutput) {
  const std::vector<std::vector<uint64_t>> shapes = {{}, {1}, {37}, {5, 7}, {3, 4, 129},
                                                     {0, 5}, {300, 1000}};
  uint32_t seed = 1;
  for (const char* id : {"f32", "f16", "bf16"}) {
    const Codec* codec = FindCodec(id);
    const DType stored = *DTypeFromName(std::string(id) == "f32"    ? "F32"
                                        : std::string(id) == "f16" ? "F16"
                                                                   : "BF16");
    for (DType src : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
      for (const auto& shape : shapes) {
        const uint64_t n = Product(shape);
        const auto bytes = RandomBytes(src, n, seed++);
        for (int threads : {1, 4}) {
          Encoded e = EncodeOrDie(*codec, src, shape, bytes, threads);
          ASSERT_TRUE(codec->ValidateRecord(e.info).ok()) << codec->ValidateRecord(e.info);
          const auto stored_bytes = ReferenceConvert(src, stored, bytes);
          ASSERT_TRUE(e.tensor.streams[0].bytes == stored_bytes)
              << id << " from " << DTypeName(src);
          for (OutputType out : kAllOutputs) {
            ASSERT_TRUE(codec->CanDecodeTo(e.info, out));
            const auto got = DecodeOrDie(*codec, e, out, threads);
            const auto want = ReferenceConvert(stored, OutDType(out, stored), stored_bytes);
            ASSERT_TRUE(got == want) << id << " from " << DTypeName(src) << " out "
                                     << static_cast<int>(out) << " n=" << n;
          }
        }
      }
    }
  }
}

TEST(RawCodecs, RawKeepsAnyDtypeAndDecodesFloatsOnlyWhenItCan) {
  const Codec* raw = FindCodec("raw");
  uint32_t seed = 100;
  for (int d = 1; d <= kMaxDType; ++d) {
    const DType dtype = static_cast<DType>(d);
    const std::vector<uint64_t> shape = {6, 11};
    const auto bytes = RandomBytes(dtype, Product(shape), seed++);
    Encoded e = EncodeOrDie(*raw, dtype, shape, bytes, 2);
    ASSERT_TRUE(raw->ValidateRecord(e.info).ok()) << DTypeName(dtype);
    EXPECT_TRUE(e.tensor.streams[0].bytes == bytes);
    EXPECT_TRUE(DecodeOrDie(*raw, e, OutputType::kNative) == bytes);
    EXPECT_EQ(*raw->DecodedBytes(e.info, OutputType::kNative), bytes.size());
    const bool is_float16_32 =
        dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
    for (OutputType out : {OutputType::kF32, OutputType::kF16, OutputType::kBF16}) {
      EXPECT_EQ(raw->CanDecodeTo(e.info, out), is_float16_32) << DTypeName(dtype);
      if (is_float16_32) {
        EXPECT_TRUE(DecodeOrDie(*raw, e, out) ==
                    ReferenceConvert(dtype, OutDType(out, dtype), bytes));
      } else {
        EXPECT_FALSE(raw->DecodedBytes(e.info, out).ok());
        std::vector<uint8_t> dst(bytes.size() * 4);
        DecodeInput in{&e.info, {e.tensor.streams[0].bytes}, {0}};
        EXPECT_FALSE(raw->Decode(in, out, absl::MakeSpan(dst), {}).ok());
      }
    }
  }
}

TEST(RawCodecs, FloatCodecsRejectOtherDtypes) {
  for (const char* id : {"f32", "f16", "bf16"}) {
    const Codec* c = FindCodec(id);
    const std::vector<uint64_t> shape = {4};
    for (DType d : {DType::kI32, DType::kU8, DType::kBool, DType::kF8E4M3, DType::kC64,
                    DType::kUnspecified}) {
      absl::Status s = c->CanEncode(d, shape, {});
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << id;
      EXPECT_NE(s.message().find("raw"), std::string::npos) << s;
      std::vector<uint8_t> bytes(16);
      EXPECT_FALSE(c->Encode(TensorSource{"x", d, shape, bytes}, {}, {}).ok());
    }
    EXPECT_FALSE(c->CanEncode(DType::kF32, shape, {{"k", MetaValue::Bool(true)}}).ok());
    EXPECT_TRUE(c->CanEncode(DType::kF64, shape, {}).ok());
  }
  EXPECT_FALSE(FindCodec("raw")->CanEncode(DType::kUnspecified, std::vector<uint64_t>{1}, {})
                   .ok());
}

TEST(RawCodecs, EncodeChecksSourceSizeAndShape) {
  const Codec* c = FindCodec("f16");
  std::vector<uint8_t> bytes(4 * 9);
  const std::vector<uint64_t> shape = {10};
  auto r = c->Encode(TensorSource{"short", DType::kF32, shape, bytes}, {}, {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("short"), std::string::npos);
  const std::vector<uint64_t> huge = {1ull << 40, 1ull << 40};
  EXPECT_FALSE(c->CanEncode(DType::kF32, huge, {}).ok());
  EXPECT_FALSE(c->EncodedSize(DType::kF32, huge, {}).ok());
  const std::vector<uint64_t> nine_dims(9, 1);
  EXPECT_FALSE(c->CanEncode(DType::kF32, nine_dims, {}).ok());
}

TEST(RawCodecs, SizesAndAxes) {
  const std::vector<uint64_t> shape = {3, 5, 7};
  EXPECT_EQ(*FindCodec("f32")->EncodedSize(DType::kF64, shape, {}), 105u * 4);
  EXPECT_EQ(*FindCodec("f16")->EncodedSize(DType::kF32, shape, {}), 105u * 2);
  EXPECT_EQ(*FindCodec("bf16")->EncodedSize(DType::kF64, shape, {}), 105u * 2);
  EXPECT_EQ(*FindCodec("raw")->EncodedSize(DType::kI64, shape, {}), 105u * 8);
  EXPECT_EQ(FindCodec("raw")->SliceableAxes(shape, {}), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(FindCodec("f16")->SliceableAxes({}, {}), std::vector<int>{});

  Encoded e = EncodeOrDie(*FindCodec("f16"), DType::kF64, shape,
                          RandomBytes(DType::kF64, 105, 5));
  EXPECT_EQ(*FindCodec("f16")->DecodedBytes(e.info, OutputType::kF32), 105u * 4);
  EXPECT_EQ(*FindCodec("f16")->DecodedBytes(e.info, OutputType::kNative), 105u * 2);
  EXPECT_EQ(*FindCodec("f16")->DecodedBytes(e.info, OutputType::kBF16), 105u * 2);
}

// ---- chunks and row ranges ---------------------------------------------

TEST(RawCodecs, ChunksAreWholeRowsOfAboutOneMiB) {
  const Codec* c = FindCodec("f32");
  const std::vector<uint64_t> shape = {1000, 700};  // 2800-byte rows, 2.8 MB
  Encoded e = EncodeOrDie(*c, DType::kF32, shape, RandomBytes(DType::kF32, 700000, 9), 4);
  const auto& chunks = e.tensor.streams[0].chunks;
  ASSERT_EQ(chunks.size(), 3u);  // 374 rows per chunk
  uint64_t row = 0, offset = 0;
  for (const auto& ch : chunks) {
    EXPECT_EQ(ch.first_row, row);
    EXPECT_EQ(ch.raw_offset, offset);
    EXPECT_EQ(ch.raw_length, ch.row_count * 2800);
    EXPECT_LE(ch.raw_length, kRawChunkTargetBytes);
    row += ch.row_count;
    offset += ch.raw_length;
  }
  EXPECT_EQ(row, 1000u);
  EXPECT_EQ(offset, e.tensor.streams[0].bytes.size());
  EXPECT_TRUE(c->ValidateRecord(e.info).ok());

  // Rows bigger than the target: one row per chunk.
  Encoded big = EncodeOrDie(*FindCodec("raw"), DType::kU8, {3, (1u << 20) + 5},
                            RandomBytes(DType::kU8, 3 * ((1u << 20) + 5), 3));
  ASSERT_EQ(big.tensor.streams[0].chunks.size(), 3u);
  EXPECT_EQ(big.tensor.streams[0].chunks[2].first_row, 2u);
  EXPECT_TRUE(FindCodec("raw")->ValidateRecord(big.info).ok());

  // A 1-d tensor's rows are its elements; a single outer row cannot be split.
  Encoded flat = EncodeOrDie(*FindCodec("raw"), DType::kU8, {(1u << 20) + 1},
                             RandomBytes(DType::kU8, (1u << 20) + 1, 4));
  EXPECT_EQ(flat.tensor.streams[0].chunks.size(), 2u);
  Encoded scalarish = EncodeOrDie(*FindCodec("raw"), DType::kU8, {1, (1u << 20) + 1},
                                  RandomBytes(DType::kU8, (1u << 20) + 1, 4));
  EXPECT_TRUE(scalarish.tensor.streams[0].chunks.empty());
}

TEST(RawCodecs, DecodeRowsEqualsSliceOfDecode) {
  const std::vector<uint64_t> shape = {23, 3, 5};  // 15 elements per row
  for (const char* id : {"f32", "f16", "bf16", "raw"}) {
    const Codec* c = FindCodec(id);
    for (DType src : {DType::kF32, DType::kBF16}) {
      Encoded e = EncodeOrDie(*c, src, shape, RandomBytes(src, 23 * 15, 77));
      for (OutputType out : kAllOutputs) {
        const auto full = DecodeOrDie(*c, e, out);
        const uint64_t row_out = full.size() / 23;
        const auto& data = e.tensor.streams[0].bytes;
        for (auto [b, en] : {std::pair<uint64_t, uint64_t>{0, 23}, {0, 1}, {5, 9}, {22, 23},
                             {7, 7}}) {
          // Whole stream given.
          std::vector<uint8_t> dst((en - b) * row_out, 0xcd);
          DecodeInput whole{&e.info, {data}, {0}};
          ASSERT_TRUE(c->DecodeRows(whole, b, en, out, absl::MakeSpan(dst)).ok());
          EXPECT_TRUE(std::equal(dst.begin(), dst.end(), full.begin() + b * row_out)) << id;
          // Only the bytes RowRangeBytes asks for, at their raw offset.
          auto range = c->RowRangeBytes(e.info, 0, b, en);
          ASSERT_TRUE(range.ok()) << range.status();
          ASSERT_LE(range->first, range->second);
          ASSERT_LE(range->second, data.size());
          std::fill(dst.begin(), dst.end(), 0xcd);
          DecodeInput part{&e.info,
                           {absl::MakeConstSpan(data).subspan(range->first,
                                                              range->second - range->first)},
                           {range->first}};
          ASSERT_TRUE(c->DecodeRows(part, b, en, out, absl::MakeSpan(dst)).ok());
          EXPECT_TRUE(std::equal(dst.begin(), dst.end(), full.begin() + b * row_out)) << id;
        }
      }
    }
  }
}

TEST(RawCodecs, DecodeRowsRejectsBadRangesAndSpans) {
  const Codec* c = FindCodec("f16");
  Encoded e = EncodeOrDie(*c, DType::kF32, {10, 4}, RandomBytes(DType::kF32, 40, 1));
  const auto& data = e.tensor.streams[0].bytes;  // 8 bytes per row
  std::vector<uint8_t> dst(1000);
  EXPECT_EQ(*c->RowRangeBytes(e.info, 0, 2, 5), (std::pair<uint64_t, uint64_t>{16, 40}));
  EXPECT_FALSE(c->RowRangeBytes(e.info, 0, 5, 11).ok());
  EXPECT_FALSE(c->RowRangeBytes(e.info, 0, 6, 5).ok());
  EXPECT_FALSE(c->RowRangeBytes(e.info, 1, 0, 1).ok());
  // Span starting after the rows wanted, or ending before them.
  DecodeInput late{&e.info, {absl::MakeConstSpan(data).subspan(24)}, {24}};
  EXPECT_FALSE(c->DecodeRows(late, 2, 5, OutputType::kF32, absl::MakeSpan(dst)).ok());
  DecodeInput short_span{&e.info, {absl::MakeConstSpan(data).subspan(16, 16)}, {16}};
  EXPECT_FALSE(c->DecodeRows(short_span, 2, 5, OutputType::kF32, absl::MakeSpan(dst)).ok());
  // Too small a destination.
  DecodeInput whole{&e.info, {data}, {0}};
  std::vector<uint8_t> small(3 * 4 * 4 - 1);
  EXPECT_FALSE(c->DecodeRows(whole, 2, 5, OutputType::kF32, absl::MakeSpan(small)).ok());
  std::vector<uint8_t> tiny(10);
  EXPECT_FALSE(c->Decode(whole, OutputType::kF32, absl::MakeSpan(tiny), {}).ok());
  // A stream span that does not match the record.
  DecodeInput truncated{&e.info, {absl::MakeConstSpan(data).subspan(0, 70)}, {0}};
  EXPECT_FALSE(c->Decode(truncated, OutputType::kF32, absl::MakeSpan(dst), {}).ok());
}

// ---- ValidateRecord ----------------------------------------------------------

TEST(RawCodecs, ValidateRecordRejectsWhatDecodeRelyOn) {
  const Codec* c = FindCodec("bf16");
  Encoded e = EncodeOrDie(*c, DType::kF32, {1000, 600}, RandomBytes(DType::kF32, 600000, 2));
  ASSERT_TRUE(c->ValidateRecord(e.info).ok());
  ASSERT_FALSE(e.info.streams[0].chunks.empty());

  auto expect_bad = [&](TensorInfo info, const std::string& what) {
    info.name = "layer.7.weight";
    absl::Status s = c->ValidateRecord(info);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << what;
    EXPECT_NE(s.message().find("layer.7.weight"), std::string::npos) << what << ": " << s;
  };
  TensorInfo bad = e.info;
  bad.streams[0].raw_length -= 2;
  expect_bad(bad, "short raw length");
  bad = e.info;
  bad.streams[0].raw_length += 2;
  expect_bad(bad, "long raw length");
  bad = e.info;
  bad.streams[0].role = "scales";
  expect_bad(bad, "wrong role");
  bad = e.info;
  bad.streams.push_back(bad.streams[0]);
  expect_bad(bad, "two streams");
  bad = e.info;
  bad.streams.clear();
  expect_bad(bad, "no stream");
  bad = e.info;
  bad.dtype = DType::kI16;
  expect_bad(bad, "integer dtype");
  bad = e.info;
  bad.dtype = static_cast<DType>(99);
  expect_bad(bad, "unknown dtype");
  bad = e.info;
  bad.dtype = DType::kF16;  // same element count, still 2 bytes stored: fine
  EXPECT_TRUE(c->ValidateRecord(bad).ok());
  bad = e.info;
  bad.shape = {1000, 601};
  expect_bad(bad, "shape does not match raw length");
  bad = e.info;
  bad.shape = {1ull << 32, 1ull << 32, 1ull << 32};
  expect_bad(bad, "overflowing shape");
  bad = e.info;
  bad.codec_params = {{"x", MetaValue::Bool(true)}};
  expect_bad(bad, "unknown parameter");
  bad = e.info;
  bad.codec_id = "f16";
  expect_bad(bad, "other codec's record");
  bad = e.info;
  bad.streams[0].chunks[0].raw_length -= 1200;  // not whole rows any more
  expect_bad(bad, "chunk not whole rows");
  bad = e.info;
  bad.streams[0].chunks.back().row_count += 1;
  bad.streams[0].chunks.back().raw_length += 1200;
  expect_bad(bad, "chunk past the last row");

  // raw: raw length follows the dtype's size.
  const Codec* raw = FindCodec("raw");
  Encoded r = EncodeOrDie(*raw, DType::kI64, {9}, RandomBytes(DType::kI64, 9, 3));
  ASSERT_TRUE(raw->ValidateRecord(r.info).ok());
  TensorInfo wrong = r.info;
  wrong.dtype = DType::kI32;  // would read half the bytes
  EXPECT_FALSE(raw->ValidateRecord(wrong).ok());
  wrong.dtype = DType::kUnspecified;
  EXPECT_FALSE(raw->ValidateRecord(wrong).ok());
}

// ---- types.h and tensor_info.h ---------------------------------------------

TEST(Types, DTypeNamesAndSizes) {
  for (int d = 1; d <= kMaxDType; ++d) {
    const DType dt = static_cast<DType>(d);
    EXPECT_EQ(DTypeFromName(DTypeName(dt)), dt) << d;
    EXPECT_GT(DTypeSize(dt), 0);
  }
  EXPECT_EQ(DTypeName(DType::kF8E4M3), "F8_E4M3");
  EXPECT_EQ(DTypeName(DType::kBool), "BOOL");
  EXPECT_EQ(DTypeSize(DType::kC64), 8);
  EXPECT_EQ(DTypeSize(DType::kBF16), 2);
  EXPECT_EQ(DTypeSize(DType::kUnspecified), 0);
  EXPECT_EQ(DTypeSize(static_cast<DType>(200)), 0);
  EXPECT_FALSE(DTypeFromName("f32").has_value());
  EXPECT_FALSE(DTypeFromName("UNSPECIFIED").has_value());
  EXPECT_EQ(OutputTypeFromName("native"), OutputType::kNative);
  EXPECT_EQ(OutputTypeFromName("bf16"), OutputType::kBF16);
  EXPECT_FALSE(OutputTypeFromName("F32").has_value());
  EXPECT_EQ(OutputTypeSize(OutputType::kF32), 4);
  EXPECT_EQ(OutputTypeSize(OutputType::kF16), 2);
  EXPECT_EQ(OutputTypeSize(OutputType::kNative), 0);
  EXPECT_EQ(ValueTypeName(ValueType::kFloat64), "float64");
}

TEST(Types, MetaValueEquality) {
  const float nan1 = BitsFloat(0x7fc00001u), nan2 = BitsFloat(0x7fc00002u);
  EXPECT_EQ(MetaValue::Float32(nan1), MetaValue::Float32(nan1));
  EXPECT_NE(MetaValue::Float32(nan1), MetaValue::Float32(nan2));
  EXPECT_NE(MetaValue::Float32(0.0f), MetaValue::Float32(-0.0f));
  EXPECT_EQ(MetaValue::Float64(std::numeric_limits<double>::quiet_NaN()),
            MetaValue::Float64(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_NE(MetaValue::Uint(ValueType::kUint8, 1), MetaValue::Uint(ValueType::kUint16, 1));
  EXPECT_NE(MetaValue::Int(ValueType::kInt32, -1), MetaValue::Int(ValueType::kInt32, 1));
  MetaValue stray = MetaValue::String("a");
  stray.u = 5;  // not the meaningful field for a string
  EXPECT_EQ(stray, MetaValue::String("a"));
  auto arr = [](std::vector<MetaValue> v) {
    return MetaValue::Array(ValueType::kString, std::move(v));
  };
  EXPECT_EQ(arr({MetaValue::String("x")}), arr({MetaValue::String("x")}));
  EXPECT_NE(arr({MetaValue::String("x")}), arr({MetaValue::String("y")}));
  EXPECT_NE(arr({}), MetaValue::Array(ValueType::kInt32, {}));
  EXPECT_EQ(MetaValue::Bool(true).type, ValueType::kBool);
}

TEST(Types, TensorInfoSaturates) {
  TensorInfo t;
  EXPECT_EQ(t.element_count(), 1u);
  EXPECT_EQ(t.row_count(), 1u);
  EXPECT_EQ(t.row_elements(), 1u);
  t.shape = {4, 5, 6};
  EXPECT_EQ(t.element_count(), 120u);
  EXPECT_EQ(t.row_count(), 4u);
  EXPECT_EQ(t.row_elements(), 30u);
  t.shape = {1ull << 40, 1ull << 40};
  EXPECT_EQ(t.element_count(), std::numeric_limits<uint64_t>::max());
  t.shape = {1ull << 40, 1ull << 40, 0};
  EXPECT_EQ(t.element_count(), 0u);
  t.streams.resize(2);
  t.streams[0].length = 10;
  t.streams[0].role = "a";
  t.streams[1].length = std::numeric_limits<uint64_t>::max();
  t.streams[1].role = "b";
  EXPECT_EQ(t.stored_bytes(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(t.FindStream("b"), &t.streams[1]);
  EXPECT_EQ(t.FindStream("c"), nullptr);
}

}  // namespace
}  // namespace boltpack
