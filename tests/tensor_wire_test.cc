// format/tensor_wire.h against protobuf: the bytes written are protobuf's
// for the same record, and what the canonical reader accepts parses with
// protobuf to the same record.
#include "format/tensor_wire.h"

#include <random>
#include <string>

#include "boltpack_proto/boltpack.pb.h"
#include "format/manifest_convert.h"
#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"

namespace boltpack::format {
namespace {

std::string ProtobufBytes(const TensorInfo& info) {
  v1::Tensor t;
  ToProto(info, &t);
  return t.SerializeAsString();
}

absl::Span<const uint8_t> Bytes(const std::string& s) {
  return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// Values across the varint widths, zero (left out on the wire) most often.
uint64_t Value(std::mt19937_64& rng) {
  switch (rng() % 5) {
    case 0: return 0;
    case 1: return rng() % 128;
    case 2: return rng() % 100000;
    case 3: return rng();
    default: return ~uint64_t{0} >> (rng() % 64);
  }
}

std::string Text(std::mt19937_64& rng) {
  static const char* const kTexts[] = {"", "w", "model.layers.0.mlp.experts.3.weight", "full", "draft", "é✓", "data"};
  return kTexts[rng() % 7];
}

StreamInfo RandomStream(std::mt19937_64& rng) {
  StreamInfo s;
  s.role = Text(rng);
  s.shard = static_cast<uint32_t>(Value(rng));
  s.offset = Value(rng), s.length = Value(rng), s.alignment = Value(rng), s.xxh3 = Value(rng);
  s.compression = static_cast<Compression>(rng() % 3);
  s.raw_length = Value(rng), s.line_bytes = Value(rng);
  for (size_t k = rng() % 3; k > 0; --k) s.prefix_bytes.push_back(Value(rng));
  const bool prefixes = rng() % 2 == 0;
  for (size_t k = rng() % 4; k > 0; --k) {
    s.chunks.push_back({Value(rng), Value(rng), Value(rng), Value(rng), Value(rng), Value(rng), Value(rng)});
    if (prefixes) {
      for (size_t p = 0; p < s.prefix_bytes.size(); ++p) s.prefix_xxh3.push_back(Value(rng));
    }
  }
  for (size_t k = rng() % 3; k > 0; --k) s.views.push_back(Text(rng));
  return s;
}

TensorInfo RandomTensor(std::mt19937_64& rng) {
  TensorInfo info;
  info.name = Text(rng);
  for (size_t k = rng() % 4; k > 0; --k) info.shape.push_back(Value(rng));
  info.dtype = static_cast<DType>(rng() % 20);
  info.codec_id = Text(rng);
  if (rng() % 4 == 0) info.codec_params.emplace_back("scale", MetaValue::Float32(0.5f));
  if (rng() % 4 == 0) {
    info.codec_params.emplace_back("group", MetaValue::Uint(ValueType::kUint32, Value(rng) & 0xffffffff));
  }
  for (size_t k = rng() % 4; k > 0; --k) info.streams.push_back(RandomStream(rng));
  for (size_t k = rng() % 2; k > 0; --k) info.required_features.push_back(Text(rng));
  return info;
}

TEST(TensorWire, WritesProtobufsBytes) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 3000; ++i) {
    const TensorInfo info = RandomTensor(rng);
    std::string wire = "prefix";
    AppendTensorWire(info, &wire);
    ASSERT_EQ(wire.substr(6), ProtobufBytes(info)) << "record " << i;
    EXPECT_EQ(TensorWireSize(info), wire.size() - 6);
  }
}

TEST(TensorWire, ReadsWhatItWritesAsProtobufDoes) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 3000; ++i) {
    const std::string wire = ProtobufBytes(RandomTensor(rng));
    TensorInfo read;
    ASSERT_TRUE(TensorFromCanonicalWire(Bytes(wire), &read)) << "record " << i;
    EXPECT_EQ(ProtobufBytes(read), wire) << "record " << i;
  }
}

// Damaged records: what the canonical reader still accepts must be what
// protobuf makes of the same bytes, and it must accept nothing protobuf
// refuses.
TEST(TensorWire, AcceptsOnlyWhatProtobufReadsTheSame) {
  google::protobuf::LogSilencer quiet;  // protobuf logs each string that is not UTF-8
  std::mt19937_64 rng(13);
  int accepted = 0, declined = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string wire = ProtobufBytes(RandomTensor(rng));
    if (wire.empty()) continue;
    for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
      const size_t at = rng() % wire.size();
      switch (rng() % 3) {
        case 0: wire[at] = static_cast<char>(rng()); break;
        case 1: wire.resize(at); break;
        default: wire.insert(at, 1, static_cast<char>(rng())); break;
      }
      if (wire.empty()) break;
    }
    TensorInfo fast;
    const bool ok = TensorFromCanonicalWire(Bytes(wire), &fast);
    v1::Tensor proto;
    const bool proto_ok = proto.ParseFromString(wire);
    if (!ok) {
      ++declined;
      continue;
    }
    ++accepted;
    ASSERT_TRUE(proto_ok) << "record " << i << " accepted where protobuf refuses it";
    ASSERT_EQ(ProtobufBytes(fast), ProtobufBytes(FromProto(proto))) << "record " << i;
  }
  // Both outcomes occur, so the oracle was exercised.
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(declined, 1000);
}

TEST(TensorWire, DeclinesValidButNonCanonicalRecords) {
  TensorInfo info;
  info.name = "w";
  info.shape = {2, 3};
  info.codec_id = "f32";
  const std::string canonical = ProtobufBytes(info);
  const std::string cases[] = {
      canonical + std::string("\x0a\x01x", 3),   // a second name (protobuf keeps the last)
      canonical + std::string("\x10\x04", 2),    // an unpacked shape element
      canonical + std::string("\x78\x01", 2),    // an unknown field 15
      std::string("\x18\x01", 2) + canonical,    // dtype before the name
  };
  for (const auto& wire : cases) {
    v1::Tensor proto;
    ASSERT_TRUE(proto.ParseFromString(wire));
    TensorInfo read;
    EXPECT_FALSE(TensorFromCanonicalWire(Bytes(wire), &read));
  }
  google::protobuf::LogSilencer quiet;
  TensorInfo bad_utf8 = info;
  bad_utf8.name = "\xff";
  TensorInfo read;
  EXPECT_FALSE(TensorFromCanonicalWire(Bytes(ProtobufBytes(bad_utf8)), &read));
}

}  // namespace
}  // namespace boltpack::format
