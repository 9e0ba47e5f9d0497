// Tests of the C API (include/boltpack/boltpack.h) over files written here
// with the C++ Writer.
#include "boltpack/boltpack.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "boltpack/codec.h"
#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "boltpack/types.h"
#include "boltpack/version.h"
#include "boltpack/writer.h"
#include "tests/budget_fixture.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

// EXPECT_THAT/HasSubstr without gmock (the test binary links gtest only).
#define EXPECT_CONTAINS(haystack, needle)                                     \
  do {                                                                        \
    const std::string bp_h_ = (haystack);                                     \
    const std::string bp_n_ = (needle);                                       \
    EXPECT_NE(bp_h_.find(bp_n_), std::string::npos)                           \
        << "\"" << bp_h_ << "\" does not contain \"" << bp_n_ << "\"";       \
  } while (0)

std::vector<uint8_t> FloatBytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(float));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// Adds `values` (dtype F32) encoded with `codec`.
void AddFloats(Writer& w, const std::string& name, std::vector<uint64_t> shape,
               const std::vector<float>& values, std::string_view codec = "f32") {
  std::vector<uint8_t> bytes = FloatBytes(values);
  TensorSource src;
  src.name = name;
  src.dtype = DType::kF32;
  src.shape = shape;
  src.bytes = bytes;
  auto enc = EncodeTensor(codec, src, {}, {});
  ASSERT_TRUE(enc.ok()) << enc.status();
  ASSERT_TRUE(w.AddTensor(name, shape, DType::kF32, std::string(codec), std::move(*enc)).ok());
}

struct Fixture {
  std::string path;
  std::vector<float> weight;  // 3 x 4
  std::vector<float> bias;    // 4
};

// A file with two f32 tensors, one i32 tensor stored with "raw" (which does
// not decode to f32) and metadata of every scalar type plus arrays.
Fixture WriteFixture(const std::string& dir) {
  Fixture f;
  f.path = dir + "/capi.bolt";
  for (int i = 0; i < 12; ++i) f.weight.push_back(0.5f * static_cast<float>(i) - 2.0f);
  f.bias = {1.0f, -1.0f, 0.25f, 8.0f};
  WriterOptions opt;
  opt.alignment = 64;
  auto w = Writer::Create(f.path, opt);
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return f;
  Writer& writer = **w;
  EXPECT_TRUE(writer.AddMetadata("general.name", MetaValue::String("tiny")).ok());
  EXPECT_TRUE(writer.AddMetadata("n.u32", MetaValue::Uint(ValueType::kUint32, 4000000000u)).ok());
  EXPECT_TRUE(writer.AddMetadata("n.i64", MetaValue::Int(ValueType::kInt64, -42)).ok());
  EXPECT_TRUE(writer.AddMetadata("n.f32", MetaValue::Float32(0.5f)).ok());
  EXPECT_TRUE(writer.AddMetadata("n.f64", MetaValue::Float64(1e-300)).ok());
  EXPECT_TRUE(writer.AddMetadata("flag", MetaValue::Bool(true)).ok());
  EXPECT_TRUE(writer.AddMetadata("bytes", MetaValue::String(std::string("a\0b", 3))).ok());
  EXPECT_TRUE(writer
                  .AddMetadata("tokens", MetaValue::Array(ValueType::kString,
                                                          {MetaValue::String("<s>"),
                                                           MetaValue::String("hello")}))
                  .ok());
  EXPECT_TRUE(writer
                  .AddMetadata("ids", MetaValue::Array(ValueType::kInt32,
                                                       {MetaValue::Int(ValueType::kInt32, 7),
                                                        MetaValue::Int(ValueType::kInt32, -8)}))
                  .ok());
  AddFloats(writer, "layer.weight", {3, 4}, f.weight);
  AddFloats(writer, "layer.bias", {4}, f.bias);
  {
    std::vector<int32_t> ints = {1, 2, 3};
    std::vector<uint8_t> bytes(ints.size() * 4);
    std::memcpy(bytes.data(), ints.data(), bytes.size());
    std::vector<uint64_t> shape = {3};
    TensorSource src;
    src.name = "ints";
    src.dtype = DType::kI32;
    src.shape = shape;
    src.bytes = bytes;
    auto enc = EncodeTensor("raw", src, {}, {});
    EXPECT_TRUE(enc.ok()) << enc.status();
    if (enc.ok()) {
      EXPECT_TRUE(writer.AddTensor("ints", shape, DType::kI32, "raw", std::move(*enc)).ok());
    }
  }
  absl::Status done = writer.Finish();
  EXPECT_TRUE(done.ok()) << done;
  return f;
}

class CApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir();
    fixture_ = WriteFixture(dir_);
    ASSERT_EQ(bp_open(fixture_.path.c_str(), &r_), BP_OK) << bp_last_error_message();
    ASSERT_NE(r_, nullptr);
  }
  void TearDown() override { bp_close(r_); }

  size_t Tensor(const char* name) {
    size_t i = SIZE_MAX;
    EXPECT_EQ(bp_find_tensor(r_, name, &i), BP_OK) << bp_last_error(r_);
    return i;
  }
  size_t Key(const char* key) {
    size_t i = SIZE_MAX;
    EXPECT_EQ(bp_metadata_find(r_, key, &i), BP_OK) << bp_last_error(r_);
    return i;
  }

  std::string dir_;
  Fixture fixture_;
  bp_reader* r_ = nullptr;
};

TEST(CApiBasics, VersionAndStatusNames) {
  EXPECT_STREQ(bp_version_string(), BOLTPACK_VERSION_STRING);
  EXPECT_STREQ(bp_status_name(BP_OK), "OK");
  EXPECT_STREQ(bp_status_name(BP_ERR_CORRUPT), "CORRUPT");
  EXPECT_STREQ(bp_status_name(static_cast<bp_status>(99)), "UNKNOWN");
  // The numbers are part of the ABI.
  EXPECT_EQ(BP_ERR_INVALID_ARGUMENT, 1);
  EXPECT_EQ(BP_ERR_NOT_FOUND, 2);
  EXPECT_EQ(BP_ERR_CORRUPT, 3);
  EXPECT_EQ(BP_ERR_UNSUPPORTED, 4);
  EXPECT_EQ(BP_ERR_RESOURCE, 5);
  EXPECT_EQ(BP_ERR_IO, 6);
  EXPECT_EQ(BP_ERR_INTERNAL, 7);
  EXPECT_EQ(BP_ERR_OUT_OF_RANGE, 8);
  EXPECT_EQ(BP_ERR_CHECKSUM, 100);
  EXPECT_STREQ(bp_status_name(BP_ERR_CHECKSUM), "CHECKSUM");
  for (int kind = BP_OK; kind <= BP_ERR_OUT_OF_RANGE; ++kind) {
    EXPECT_EQ(bp_status_kind(static_cast<bp_status>(kind)), kind);
  }
  EXPECT_EQ(bp_status_kind(BP_ERR_CHECKSUM), BP_ERR_CORRUPT);
  EXPECT_EQ(bp_status_kind(static_cast<bp_status>(199)), BP_ERR_CORRUPT);
  EXPECT_EQ(bp_status_kind(static_cast<bp_status>(250)), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_status_kind(static_cast<bp_status>(300)), BP_ERR_UNSUPPORTED);
  EXPECT_EQ(bp_status_kind(static_cast<bp_status>(9)), BP_ERR_INTERNAL);
  EXPECT_EQ(bp_status_kind(static_cast<bp_status>(-5)), BP_ERR_INTERNAL);
  // The number says what the string says, and what the headers say.
  EXPECT_EQ(bp_version_number(), static_cast<uint32_t>(BOLTPACK_VERSION));
  EXPECT_EQ(bp_version_number(), static_cast<uint32_t>(BOLTPACK_VERSION_MAJOR * 10000 +
                                                       BOLTPACK_VERSION_MINOR * 100 + BOLTPACK_VERSION_PATCH));
  unsigned major = 0, minor = 0, patch = 0;
  ASSERT_EQ(std::sscanf(bp_version_string(), "%u.%u.%u", &major, &minor, &patch), 3);
  EXPECT_EQ(bp_version_number(), major * 10000 + minor * 100 + patch);
  for (int d = 0; d <= kMaxDType; ++d) {
    EXPECT_EQ(std::string(bp_dtype_name(d)), DTypeName(static_cast<DType>(d))) << d;
  }
  EXPECT_STREQ(bp_dtype_name(-1), "?");
  EXPECT_STREQ(bp_dtype_name(kMaxDType + 1), "?");
  EXPECT_EQ(BP_OUT_F32, 0);
  EXPECT_EQ(BP_OUT_NATIVE, 3);
}

TEST(CApiBasics, MissingFileNamesTheFile) {
  std::string path = testing::MakeTempDir() + "/does-not-exist.bolt";
  bp_reader* r = reinterpret_cast<bp_reader*>(0x1);
  EXPECT_EQ(bp_open(path.c_str(), &r), BP_ERR_NOT_FOUND);
  EXPECT_EQ(r, nullptr);
  EXPECT_CONTAINS(std::string(bp_last_error_message()), path);
}

TEST(CApiBasics, GarbageFileIsAnErrorNamingTheFile) {
  std::string path = testing::MakeTempDir() + "/garbage.bolt";
  testing::WriteFileBytes(path, std::vector<uint8_t>(300, 0xAB));
  bp_reader* r = nullptr;
  bp_status st = bp_open(path.c_str(), &r);
  EXPECT_NE(st, BP_OK);
  EXPECT_EQ(r, nullptr);
  EXPECT_CONTAINS(std::string(bp_last_error_message()), path);
}

TEST(CApiBasics, NullArguments) {
  bp_reader* r = nullptr;
  EXPECT_EQ(bp_open(nullptr, &r), BP_ERR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(std::string(bp_last_error_message()), "path");
  EXPECT_EQ(bp_open("x.bolt", nullptr), BP_ERR_INVALID_ARGUMENT);
  bp_close(nullptr);  // a no-op

  uint32_t a, b;
  size_t i;
  uint64_t u;
  int64_t s;
  double d;
  int flag;
  const char* str;
  size_t len;
  const void* data;
  struct bp_tensor_info ti;
  struct bp_stream_info si;
  float buf[4];
  EXPECT_EQ(bp_format_version(nullptr, &a, &b), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_verify(nullptr), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_tensor_count(nullptr), 0u);
  EXPECT_EQ(bp_find_tensor(nullptr, "x", &i), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_tensor_info(nullptr, 0, &ti), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_stream_info(nullptr, 0, 0, &si), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_stream_data(nullptr, 0, 0, &data, &u), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_decoded_size(nullptr, 0, BP_OUT_F32, &u), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_decode(nullptr, 0, BP_OUT_F32, buf, sizeof(buf), 1), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_count(nullptr), 0u);
  EXPECT_EQ(bp_metadata_find(nullptr, "k", &i), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_key(nullptr, 0), nullptr);
  EXPECT_EQ(bp_metadata_type(nullptr, 0), BP_VALUE_UNSPECIFIED);
  EXPECT_EQ(bp_metadata_get_u64(nullptr, 0, &u), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_get_i64(nullptr, 0, &s), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_get_f64(nullptr, 0, &d), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_get_bool(nullptr, 0, &flag), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_get_string(nullptr, 0, &str, &len), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_array_len(nullptr, 0, &len), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_array_type(nullptr, 0, &flag), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_array_get_string(nullptr, 0, 0, &str, &len), BP_ERR_INVALID_ARGUMENT);
  EXPECT_STRNE(bp_last_error(nullptr), "");
}

TEST_F(CApiTest, NullOutputPointers) {
  EXPECT_EQ(bp_format_version(r_, nullptr, nullptr), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_find_tensor(r_, nullptr, nullptr), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_tensor_info(r_, 0, nullptr), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_stream_info(r_, 0, 0, nullptr), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_stream_data(r_, 0, 0, nullptr, nullptr), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_decoded_size(r_, 0, BP_OUT_F32, nullptr), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_decode(r_, 0, BP_OUT_F32, nullptr, 16, 1), BP_ERR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(std::string(bp_last_error(r_)), "dst");
  EXPECT_EQ(bp_metadata_get_u64(r_, 0, nullptr), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_get_string(r_, 0, nullptr, nullptr), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_array_get_u64(r_, 0, 0, nullptr), BP_ERR_INVALID_ARGUMENT);
}

TEST_F(CApiTest, ListsTensors) {
  uint32_t major = 0, minor = 99;
  ASSERT_EQ(bp_format_version(r_, &major, &minor), BP_OK);
  EXPECT_GE(major, 1u);
  ASSERT_EQ(bp_tensor_count(r_), 3u);

  size_t w = Tensor("layer.weight");
  struct bp_tensor_info info;
  ASSERT_EQ(bp_tensor_info(r_, w, &info), BP_OK) << bp_last_error(r_);
  EXPECT_STREQ(info.name, "layer.weight");
  EXPECT_EQ(info.ndim, 2u);
  EXPECT_EQ(info.shape[0], 3u);
  EXPECT_EQ(info.shape[1], 4u);
  for (int d = 2; d < BP_MAX_DIMS; ++d) EXPECT_EQ(info.shape[d], 0u);
  EXPECT_EQ(info.dtype, BP_DTYPE_F32);
  EXPECT_STREQ(info.codec, "f32");
  EXPECT_EQ(info.stored_bytes, 12u * 4);
  ASSERT_EQ(info.stream_count, 1u);

  struct bp_stream_info s;
  ASSERT_EQ(bp_stream_info(r_, w, 0, &s), BP_OK) << bp_last_error(r_);
  EXPECT_STREQ(s.role, "data");
  EXPECT_EQ(s.compression, BP_COMPRESSION_NONE);
  EXPECT_EQ(s.stored_length, 48u);
  EXPECT_EQ(s.raw_length, 48u);

  // Zero-copy: the stored bytes are the little-endian floats.
  const void* data = nullptr;
  uint64_t size = 0;
  ASSERT_EQ(bp_stream_data(r_, w, 0, &data, &size), BP_OK) << bp_last_error(r_);
  ASSERT_EQ(size, 48u);
  EXPECT_EQ(std::memcmp(data, fixture_.weight.data(), 48), 0);
  // The same pointer each time (it is the mapping, not a copy).
  const void* again = nullptr;
  ASSERT_EQ(bp_stream_data(r_, w, 0, &again, &size), BP_OK);
  EXPECT_EQ(again, data);
  // Checked, the same mapping once the checksum holds.
  ASSERT_EQ(bp_stream_data_checked(r_, w, 0, &again, &size), BP_OK) << bp_last_error(r_);
  EXPECT_EQ(again, data);
  EXPECT_EQ(size, 48u);

  size_t i = 0;
  EXPECT_EQ(bp_find_tensor(r_, "nope", &i), BP_ERR_NOT_FOUND);
  EXPECT_CONTAINS(std::string(bp_last_error(r_)), "nope");
  EXPECT_CONTAINS(std::string(bp_last_error(r_)), fixture_.path);
  EXPECT_EQ(bp_tensor_info(r_, 3, &info), BP_ERR_OUT_OF_RANGE);
  EXPECT_EQ(bp_stream_info(r_, w, 1, &s), BP_ERR_OUT_OF_RANGE);
  EXPECT_CONTAINS(std::string(bp_last_error(r_)), "layer.weight");
  EXPECT_EQ(bp_stream_data(r_, 99, 0, &data, &size), BP_ERR_OUT_OF_RANGE);
}

TEST_F(CApiTest, Decodes) {
  size_t w = Tensor("layer.weight");
  uint64_t bytes = 0;
  ASSERT_EQ(bp_decoded_size(r_, w, BP_OUT_F32, &bytes), BP_OK) << bp_last_error(r_);
  ASSERT_EQ(bytes, 48u);
  std::vector<float> out(12, -1.0f);
  ASSERT_EQ(bp_decode(r_, w, BP_OUT_F32, out.data(), bytes, 1), BP_OK) << bp_last_error(r_);
  EXPECT_EQ(out, fixture_.weight);
  std::vector<float> out2(12, -1.0f);
  ASSERT_EQ(bp_decode(r_, w, BP_OUT_F32, out2.data(), bytes, 0), BP_OK) << bp_last_error(r_);
  EXPECT_EQ(out2, fixture_.weight);

  // A larger buffer is fine; a smaller one is refused, naming the tensor.
  std::vector<float> big(20, 0.0f);
  EXPECT_EQ(bp_decode(r_, w, BP_OUT_F32, big.data(), big.size() * 4, 1), BP_OK);
  EXPECT_EQ(bp_decode(r_, w, BP_OUT_F32, out.data(), 47, 1), BP_ERR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(std::string(bp_last_error(r_)), "layer.weight");
  EXPECT_CONTAINS(std::string(bp_last_error(r_)), fixture_.path);

  // bf16 output of an f32 tensor (half the bytes).
  ASSERT_EQ(bp_decoded_size(r_, Tensor("layer.bias"), BP_OUT_BF16, &bytes), BP_OK)
      << bp_last_error(r_);
  EXPECT_EQ(bytes, 8u);

  // An output type outside the enum.
  EXPECT_EQ(bp_decode(r_, w, static_cast<bp_output>(7), out.data(), 48, 1),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_decoded_size(r_, w, static_cast<bp_output>(-1), &bytes), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_decode(r_, 42, BP_OUT_F32, out.data(), 48, 1), BP_ERR_OUT_OF_RANGE);
}

TEST_F(CApiTest, NotDecodableToThisOutputIsAnError) {
  size_t t = Tensor("ints");
  uint64_t bytes = 0;
  EXPECT_EQ(bp_decoded_size(r_, t, BP_OUT_F32, &bytes), BP_ERR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(std::string(bp_last_error(r_)), "ints");
  int32_t dst[3] = {0, 0, 0};
  EXPECT_EQ(bp_decode(r_, t, BP_OUT_F32, dst, sizeof(dst), 1), BP_ERR_INVALID_ARGUMENT);
  // Native works.
  ASSERT_EQ(bp_decoded_size(r_, t, BP_OUT_NATIVE, &bytes), BP_OK) << bp_last_error(r_);
  ASSERT_EQ(bytes, sizeof(dst));
  ASSERT_EQ(bp_decode(r_, t, BP_OUT_NATIVE, dst, sizeof(dst), 1), BP_OK) << bp_last_error(r_);
  EXPECT_EQ(dst[0], 1);
  EXPECT_EQ(dst[2], 3);
}

TEST_F(CApiTest, Metadata) {
  ASSERT_EQ(bp_metadata_count(r_), 9u);
  EXPECT_STREQ(bp_metadata_key(r_, 0), "general.name");
  EXPECT_EQ(bp_metadata_key(r_, 9), nullptr);
  EXPECT_EQ(bp_metadata_type(r_, 9), BP_VALUE_UNSPECIFIED);

  const char* str = nullptr;
  size_t len = 0;
  ASSERT_EQ(bp_metadata_get_string(r_, Key("general.name"), &str, &len), BP_OK);
  EXPECT_EQ(std::string(str, len), "tiny");
  EXPECT_EQ(str[len], '\0');
  ASSERT_EQ(bp_metadata_get_string(r_, Key("bytes"), &str, &len), BP_OK);
  EXPECT_EQ(std::string(str, len), std::string("a\0b", 3));

  uint64_t u = 0;
  EXPECT_EQ(bp_metadata_type(r_, Key("n.u32")), BP_VALUE_UINT32);
  ASSERT_EQ(bp_metadata_get_u64(r_, Key("n.u32"), &u), BP_OK);
  EXPECT_EQ(u, 4000000000u);
  int64_t s = 0;
  EXPECT_EQ(bp_metadata_type(r_, Key("n.i64")), BP_VALUE_INT64);
  ASSERT_EQ(bp_metadata_get_i64(r_, Key("n.i64"), &s), BP_OK);
  EXPECT_EQ(s, -42);
  double d = 0;
  ASSERT_EQ(bp_metadata_get_f64(r_, Key("n.f32"), &d), BP_OK);
  EXPECT_EQ(d, 0.5);
  ASSERT_EQ(bp_metadata_get_f64(r_, Key("n.f64"), &d), BP_OK);
  EXPECT_EQ(d, 1e-300);
  int flag = 0;
  EXPECT_EQ(bp_metadata_type(r_, Key("flag")), BP_VALUE_BOOL);
  ASSERT_EQ(bp_metadata_get_bool(r_, Key("flag"), &flag), BP_OK);
  EXPECT_EQ(flag, 1);

  size_t k = 0;
  EXPECT_EQ(bp_metadata_find(r_, "absent", &k), BP_ERR_NOT_FOUND);
  EXPECT_CONTAINS(std::string(bp_last_error(r_)), "absent");
  EXPECT_EQ(bp_metadata_get_u64(r_, 9, &u), BP_ERR_OUT_OF_RANGE);
}

TEST_F(CApiTest, MetadataTypeMismatchIsAnErrorNotAnAbort) {
  uint64_t u = 123;
  int64_t s = 0;
  double d = 0;
  int flag = 0;
  const char* str = nullptr;
  size_t len = 0;
  EXPECT_EQ(bp_metadata_get_u64(r_, Key("general.name"), &u), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(u, 123u);  // untouched
  std::string msg = bp_last_error(r_);
  EXPECT_CONTAINS(msg, "general.name");
  EXPECT_CONTAINS(msg, fixture_.path);
  EXPECT_CONTAINS(msg, "string");
  // No silent signed/unsigned or int/float conversion.
  EXPECT_EQ(bp_metadata_get_i64(r_, Key("n.u32"), &s), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_get_u64(r_, Key("n.i64"), &u), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_get_f64(r_, Key("n.i64"), &d), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_get_bool(r_, Key("n.u32"), &flag), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_get_string(r_, Key("flag"), &str, &len), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_array_len(r_, Key("flag"), &len), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_metadata_get_string(r_, Key("tokens"), &str, &len), BP_ERR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(std::string(bp_last_error(r_)), "is array");
}

TEST_F(CApiTest, MetadataArrays) {
  size_t tokens = Key("tokens");
  EXPECT_EQ(bp_metadata_type(r_, tokens), BP_VALUE_ARRAY);
  size_t len = 0;
  int type = 0;
  ASSERT_EQ(bp_metadata_array_len(r_, tokens, &len), BP_OK);
  EXPECT_EQ(len, 2u);
  ASSERT_EQ(bp_metadata_array_type(r_, tokens, &type), BP_OK);
  EXPECT_EQ(type, BP_VALUE_STRING);
  const char* str = nullptr;
  size_t n = 0;
  ASSERT_EQ(bp_metadata_array_get_string(r_, tokens, 1, &str, &n), BP_OK);
  EXPECT_EQ(std::string(str, n), "hello");
  EXPECT_EQ(bp_metadata_array_get_string(r_, tokens, 2, &str, &n), BP_ERR_OUT_OF_RANGE);
  EXPECT_CONTAINS(std::string(bp_last_error(r_)), "tokens");
  int64_t s = 0;
  EXPECT_EQ(bp_metadata_array_get_i64(r_, tokens, 0, &s), BP_ERR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(std::string(bp_last_error(r_)), "tokens\"[0]");

  size_t ids = Key("ids");
  ASSERT_EQ(bp_metadata_array_type(r_, ids, &type), BP_OK);
  EXPECT_EQ(type, BP_VALUE_INT32);
  ASSERT_EQ(bp_metadata_array_get_i64(r_, ids, 1, &s), BP_OK);
  EXPECT_EQ(s, -8);
  uint64_t u = 0;
  EXPECT_EQ(bp_metadata_array_get_u64(r_, ids, 0, &u), BP_ERR_INVALID_ARGUMENT);
  // Element getters on a non-array.
  EXPECT_EQ(bp_metadata_array_get_i64(r_, Key("n.i64"), 0, &s), BP_ERR_INVALID_ARGUMENT);
}

TEST_F(CApiTest, VerifyFindsCorruption) {
  EXPECT_EQ(bp_verify(r_), BP_OK) << bp_last_error(r_);

  // Flip one byte of a stream in a copy; open still succeeds (it checks
  // structure, not checksums), verify names the file.
  auto reader = Reader::Open(fixture_.path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  uint64_t offset = (*reader)->tensors()[0].streams[0].offset;
  std::vector<uint8_t> bytes = testing::ReadFileBytes(fixture_.path);
  ASSERT_LT(offset, bytes.size());
  bytes[offset] ^= 0x40;
  std::string bad = dir_ + "/corrupt.bolt";
  testing::WriteFileBytes(bad, bytes);
  bp_reader* r = nullptr;
  ASSERT_EQ(bp_open(bad.c_str(), &r), BP_OK) << bp_last_error_message();
  // A flipped stored byte is a checksum mismatch, a refinement of CORRUPT.
  EXPECT_EQ(bp_verify(r), BP_ERR_CHECKSUM);
  EXPECT_CONTAINS(std::string(bp_last_error(r)), bad);
  EXPECT_CONTAINS(std::string(bp_last_error_message()), bad);
  bp_close(r);
}

// Bytes whose checksum fails give BP_ERR_CHECKSUM wherever the checksum is
// compared (header, manifest, a stream read by a decode); structural damage
// stays BP_ERR_CORRUPT.
TEST_F(CApiTest, ChecksumMismatchIsNotStructuralCorruption) {
  auto reader = Reader::Open(fixture_.path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  const uint64_t stream_at = (*reader)->tensors()[Tensor("layer.weight")].streams[0].offset;
  const std::vector<uint8_t> good = testing::ReadFileBytes(fixture_.path);
  auto open_flipped = [&](uint64_t offset, bp_reader** r) {
    std::vector<uint8_t> bytes = good;
    bytes.at(offset) ^= 0x01;
    std::string path = dir_ + "/flipped-" + std::to_string(offset) + ".bolt";
    testing::WriteFileBytes(path, bytes);
    return bp_open(path.c_str(), r);
  };
  bp_reader* r = nullptr;
  // Header byte 40 is reserved (zero): only the header checksum sees it.
  EXPECT_EQ(open_flipped(40, &r), BP_ERR_CHECKSUM);
  EXPECT_CONTAINS(std::string(bp_last_error_message()), "header checksum mismatch");
  // The manifest ends where the 64-byte footer starts.
  EXPECT_EQ(open_flipped(good.size() - 65, &r), BP_ERR_CHECKSUM);
  EXPECT_CONTAINS(std::string(bp_last_error_message()), "manifest checksum mismatch");
  // A decode reads the stream and checks it; without checks it decodes.
  ASSERT_EQ(open_flipped(stream_at, &r), BP_OK) << bp_last_error_message();
  std::vector<float> out(12);
  EXPECT_EQ(bp_decode(r, Tensor("layer.weight"), BP_OUT_F32, out.data(), 48, 1), BP_ERR_CHECKSUM);
  EXPECT_CONTAINS(std::string(bp_last_error(r)), "checksum mismatch");
  // The stored bytes a GPU upload takes are checked the same way.
  const void* data = &out;
  uint64_t size = 1;
  EXPECT_EQ(bp_stream_data_checked(r, Tensor("layer.weight"), 0, &data, &size), BP_ERR_CHECKSUM);
  EXPECT_EQ(data, nullptr);
  EXPECT_EQ(size, 0u);
  bp_close(r);
  std::string flipped = dir_ + "/flipped-" + std::to_string(stream_at) + ".bolt";
  ASSERT_EQ(bp_open_flags(flipped.c_str(), nullptr, BP_OPEN_NO_VERIFY, &r), BP_OK);
  EXPECT_EQ(bp_decode(r, Tensor("layer.weight"), BP_OUT_F32, out.data(), 48, 1), BP_OK) << bp_last_error(r);
  EXPECT_NE(out, fixture_.weight);
  EXPECT_EQ(bp_stream_data_checked(r, Tensor("layer.weight"), 0, &data, &size), BP_OK) << bp_last_error(r);
  bp_close(r);
  // A truncated file (its footer magic cut) is structurally broken.
  std::vector<uint8_t> cut(good.begin(), good.end() - 1);
  std::string truncated = dir_ + "/truncated.bolt";
  testing::WriteFileBytes(truncated, cut);
  EXPECT_EQ(bp_open(truncated.c_str(), &r), BP_ERR_CORRUPT);
  EXPECT_EQ(r, nullptr);
}

TEST_F(CApiTest, ConcurrentDecodesOnOneReader) {
  size_t w = Tensor("layer.weight");
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < 8; ++k) {
    threads.emplace_back([&] {
      for (int rep = 0; rep < 50; ++rep) {
        std::vector<float> out(12);
        if (bp_decode(r_, w, BP_OUT_F32, out.data(), 48, 1) != BP_OK || out != fixture_.weight) {
          failures++;
        }
        // Errors on other threads must not disturb this one's message.
        size_t i;
        if (bp_find_tensor(r_, "missing", &i) != BP_ERR_NOT_FOUND ||
            std::string(bp_last_error_message()).find("missing") == std::string::npos) {
          failures++;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

// Budgets from C (spec/elastic.md §5.3, §5.4) over the elastic bf16-spec
// fixture: names, kept tensors, zero-copy regions where the stream allows
// them, decodes of the kept part in the "full" and "draft" views equal to
// the cut, computed here, of the whole tensor's decode in that view.
TEST(CApiBudgets, RegionsAndDecodesInEachView) {
  if (FindCodec("bf16-spec") == nullptr) GTEST_SKIP() << "bf16-spec codec not built in";
  auto f = testing::WriteBudgetFixture(testing::MakeTempDir());
  bp_reader* r = nullptr;
  ASSERT_EQ(bp_open(f.path.c_str(), &r), BP_OK) << f.path << bp_last_error_message();
  ASSERT_EQ(bp_budget_count(r), 2u);
  EXPECT_STREQ(bp_budget_name(r, 0), "half");
  EXPECT_STREQ(bp_budget_name(r, 1), "first");
  EXPECT_EQ(bp_budget_name(r, 2), nullptr);
  bp_budget* b = nullptr;
  EXPECT_EQ(bp_budget_open(r, "nope", nullptr, &b), BP_ERR_NOT_FOUND);
  EXPECT_EQ(b, nullptr);
  EXPECT_CONTAINS(std::string(bp_last_error(r)), "nope");
  EXPECT_EQ(bp_budget_open(r, "half", "nope", &b), BP_ERR_NOT_FOUND);
  uint64_t full_bytes = 0, draft_bytes = 0;
  size_t regions_seen = 0, decoded_spec = 0;
  for (std::string view : {"full", "draft"}) {
    ASSERT_EQ(bp_budget_open(r, "half", view.c_str(), &b), BP_OK) << bp_last_error(r);
    ASSERT_EQ(bp_budget_bytes(b, view == "full" ? &full_bytes : &draft_bytes), BP_OK);
    ASSERT_EQ(bp_budget_tensor_count(b), 9u);
    for (size_t i = 0; i < bp_budget_tensor_count(b); ++i) {
      struct bp_budget_tensor bt;
      ASSERT_EQ(bp_budget_tensor(b, i, &bt), BP_OK);
      struct bp_tensor_info ti;
      ASSERT_EQ(bp_tensor_info(r, bt.tensor, &ti), BP_OK);
      std::vector<uint64_t> shape(ti.shape, ti.shape + ti.ndim), kept(bt.shape, bt.shape + bt.ndim);
      ASSERT_EQ(bt.ndim, ti.ndim);
      // Reference: the whole tensor decoded in this view, cut here.
      uint64_t whole_size = 0;
      ASSERT_EQ(bp_decoded_size(r, bt.tensor, BP_OUT_BF16, &whole_size), BP_OK);
      std::vector<uint8_t> whole(whole_size);
      if (view == "full") {
        ASSERT_EQ(bp_decode(r, bt.tensor, BP_OUT_BF16, whole.data(), whole.size(), 1), BP_OK);
      } else {
        bp_reader* dr = nullptr;
        ASSERT_EQ(bp_open_view(f.path.c_str(), "draft", &dr), BP_OK);
        ASSERT_EQ(bp_decode(dr, bt.tensor, BP_OUT_BF16, whole.data(), whole.size(), 1), BP_OK);
        bp_close(dr);
      }
      auto want = testing::CutPrefix(whole.data(), shape, kept, 2);
      uint64_t n = 0;
      ASSERT_EQ(bp_budget_decoded_size(b, i, BP_OUT_BF16, &n), BP_OK);
      ASSERT_EQ(n, want.size());
      std::vector<uint8_t> got(n + 3, 0xAB);  // a larger buffer is fine
      ASSERT_EQ(bp_budget_decode(b, i, BP_OUT_BF16, got.data(), got.size()), BP_OK) << bp_last_error(r);
      got.resize(n);
      EXPECT_EQ(got, want) << view << " " << bt.name;
      EXPECT_EQ(bp_budget_decode(b, i, BP_OUT_BF16, got.data(), n - 1), BP_ERR_INVALID_ARGUMENT);
      size_t count = 0;
      bp_status st = bp_budget_region_count(b, i, &count);
      if (std::string(ti.codec) == "bf16-spec") {
        EXPECT_EQ(st, BP_ERR_UNSUPPORTED);
        EXPECT_CONTAINS(std::string(bp_last_error(r)), ti.name);
        ++decoded_spec;
        continue;
      }
      ASSERT_EQ(st, BP_OK);
      ASSERT_EQ(count, 1u);
      struct bp_region reg;
      ASSERT_EQ(bp_budget_region(b, i, 0, &reg), BP_OK);
      EXPECT_EQ(bp_budget_region(b, i, 1, &reg), BP_ERR_OUT_OF_RANGE);
      ASSERT_EQ(bp_budget_region(b, i, 0, &reg), BP_OK);
      // Gather the runs by hand: they are the original bf16 bytes, cut.
      std::vector<uint8_t> bytes;
      uint64_t runs = 1;
      for (uint32_t d = 0; d < reg.ndim; ++d) runs *= reg.counts[d];
      for (uint64_t k = 0; k < runs; ++k) {
        uint64_t off = 0, rest = k;
        for (uint32_t d = reg.ndim; d-- > 0;) {
          off += (rest % reg.counts[d]) * reg.strides[d];
          rest /= reg.counts[d];
        }
        ASSERT_LE(off + reg.run_bytes, reg.base_size);
        bytes.insert(bytes.end(), reg.base + off, reg.base + off + reg.run_bytes);
      }
      EXPECT_EQ(bytes.size(), reg.total_bytes);
      EXPECT_EQ(bytes, want) << bt.name;
      ++regions_seen;
    }
    EXPECT_EQ(bp_budget_tensor(b, 9, nullptr), BP_ERR_OUT_OF_RANGE);
    bp_budget_close(b);
    b = nullptr;
  }
  EXPECT_EQ(regions_seen, 10u);  // 5 plain tensors, twice
  EXPECT_EQ(decoded_spec, 8u);
  EXPECT_LT(draft_bytes, full_bytes);
  // NULL handles and a file without budgets.
  EXPECT_EQ(bp_budget_count(nullptr), 0u);
  EXPECT_EQ(bp_budget_tensor_count(nullptr), 0u);
  EXPECT_EQ(bp_budget_open(r, "half", nullptr, nullptr), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_budget_decode(nullptr, 0, BP_OUT_BF16, nullptr, 0), BP_ERR_INVALID_ARGUMENT);
  bp_budget_close(nullptr);
  bp_close(r);
}

TEST_F(CApiTest, FileWithoutBudgets) {
  EXPECT_EQ(bp_budget_count(r_), 0u);
  EXPECT_EQ(bp_budget_name(r_, 0), nullptr);
  bp_budget* b = reinterpret_cast<bp_budget*>(1);
  EXPECT_EQ(bp_budget_open(r_, "any", nullptr, &b), BP_ERR_NOT_FOUND);
  EXPECT_EQ(b, nullptr);
  EXPECT_CONTAINS(std::string(bp_last_error(r_)), "elastic");
}

}  // namespace
}  // namespace boltpack
