// The header-only C++ wrapper of the C API (include/boltpack/boltpack.hpp):
// each of its answers must be the C API's, its errors must carry the code
// and the message of the failed call, and its handles must close once.
#include "boltpack/boltpack.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tests/budget_fixture.h"
#include "tests/test_util.h"

namespace {

using boltpack::testing::SourceDir;

std::string TinyStories(const std::string& file) { return SourceDir() + "/testdata/tinystories-656k/" + file; }

// The C API's f32 decode of tensor t, to compare the wrapper's with.
std::vector<float> DecodeWithC(const bp_reader* r, size_t t) {
  uint64_t bytes = 0;
  EXPECT_EQ(bp_decoded_size(r, t, BP_OUT_F32, &bytes), BP_OK) << bp_last_error(r);
  std::vector<float> values(bytes / sizeof(float));
  EXPECT_EQ(bp_decode(r, t, BP_OUT_F32, values.data(), bytes, 1), BP_OK) << bp_last_error(r);
  return values;
}

TEST(CppWrapper, MissingFileIsNotFoundWithTheCallsMessage) {
  std::string path = boltpack::testing::MakeTempDir() + "/absent.bolt";
  auto reader = bp::Reader::Open(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), BP_ERR_NOT_FOUND);
  EXPECT_NE(reader.status().message().find("absent.bolt"), std::string::npos) << reader.status().message();
  std::error_code ec = reader.status().error_code();
  EXPECT_EQ(ec.value(), BP_ERR_NOT_FOUND);
  EXPECT_STREQ(ec.category().name(), "boltpack");
  EXPECT_EQ(ec.message(), "NOT_FOUND");
  EXPECT_EQ(reader.status().ToString().rfind("NOT_FOUND: ", 0), 0u) << reader.status().ToString();
}

TEST(CppWrapper, ChecksumKindIsCorrupt) {
  bp::Status checksum(BP_ERR_CHECKSUM, "bad chunk");
  EXPECT_FALSE(checksum.ok());
  EXPECT_EQ(checksum.kind(), BP_ERR_CORRUPT);
  EXPECT_TRUE(bp::Status().ok());
  EXPECT_EQ(bp::Status::FromLastCall(BP_OK).code(), BP_OK);
}

// Every tensor of a safetensors file: names, shapes, streams and decodes as
// a C reader of the same file sees them.
TEST(CppWrapper, SafetensorsAgreesWithTheCApi) {
  std::string path = TinyStories("model.safetensors");
  auto reader = bp::Reader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  bp_reader* c = nullptr;
  ASSERT_EQ(bp_open(path.c_str(), &c), BP_OK) << bp_last_error_message();
  ASSERT_EQ(reader->tensor_count(), bp_tensor_count(c));
  ASSERT_GT(reader->tensor_count(), 0u);
  EXPECT_EQ(reader->metadata_count(), bp_metadata_count(c));
  for (size_t t = 0; t < reader->tensor_count(); ++t) {
    auto info = reader->tensor(t);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    struct bp_tensor_info want;
    ASSERT_EQ(bp_tensor_info(c, t, &want), BP_OK);
    EXPECT_EQ(info->name(), want.name);
    ASSERT_EQ(info->shape().size(), want.ndim);
    for (uint32_t d = 0; d < want.ndim; ++d) EXPECT_EQ(info->shape()[d], want.shape[d]);
    EXPECT_EQ(info->stored_bytes(), want.stored_bytes);
    auto found = reader->Find(std::string(info->name()));
    ASSERT_TRUE(found.ok());
    EXPECT_EQ(*found, t);
    auto stored = reader->StoredBytes(t, 0);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    EXPECT_EQ(stored->size(), want.stored_bytes);  // one stream per safetensors tensor
    auto values = reader->DecodeF32(t, 1);
    ASSERT_TRUE(values.ok()) << values.status().ToString();
    std::vector<float> expected = DecodeWithC(c, t);
    ASSERT_EQ(values->size(), expected.size());
    EXPECT_EQ(std::memcmp(values->data(), expected.data(), expected.size() * sizeof(float)), 0) << info->name();
  }
  bp_close(c);
}

TEST(CppWrapper, DecodeRangeIsTheBlockOfTheWholeDecode) {
  auto reader = bp::Reader::Open(TinyStories("model.safetensors"));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  size_t t = 0;
  while (t < reader->tensor_count() && reader->tensor(t)->shape().size() != 2) ++t;
  ASSERT_LT(t, reader->tensor_count()) << "no 2-D tensor";
  auto info = reader->tensor(t);  // shape() points into it: kept alive
  auto shape = info->shape();
  ASSERT_GE(shape[0], 3u);
  ASSERT_GE(shape[1], 2u);
  auto whole = reader->DecodeF32(t);
  ASSERT_TRUE(whole.ok());
  std::vector<float> block(2 * 2);
  bp::Status s = reader->DecodeRange(t, {1, 3}, {0, 2}, BP_OUT_F32, std::as_writable_bytes(std::span(block)));
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (uint64_t r = 0; r < 2; ++r) {
    for (uint64_t col = 0; col < 2; ++col) EXPECT_EQ(block[r * 2 + col], (*whole)[(r + 1) * shape[1] + col]);
  }
  // One element short: refused, with the block's size in the message.
  bp::Status short_dst = reader->DecodeRange(t, {1, 3}, {0, 2}, BP_OUT_F32,
                                             std::as_writable_bytes(std::span(block)).first(15));
  EXPECT_EQ(short_dst.code(), BP_ERR_INVALID_ARGUMENT);
  EXPECT_FALSE(short_dst.message().empty());
}

TEST(CppWrapper, ErrorsOfReaderCallsCarryCodeAndMessage) {
  auto reader = bp::Reader::Open(TinyStories("TinyStories-656K.f16.gguf"));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto past = reader->tensor(reader->tensor_count());
  EXPECT_EQ(past.status().code(), BP_ERR_OUT_OF_RANGE);
  auto missing = reader->Find("no.such.tensor");
  EXPECT_EQ(missing.status().code(), BP_ERR_NOT_FOUND);
  EXPECT_NE(missing.status().message().find("no.such.tensor"), std::string::npos)
      << missing.status().message();
  std::vector<std::byte> tiny(1);
  EXPECT_EQ(reader->Decode(0, BP_OUT_F32, tiny).code(), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(reader->budget_count(), 0u);
  EXPECT_EQ(reader->OpenBudget("half").status().code(), BP_ERR_NOT_FOUND);
  auto arch = reader->FindMetadata("general.architecture");
  ASSERT_TRUE(arch.ok()) << arch.status().ToString();
  auto value = reader->MetadataString(*arch);
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, "llama");
  EXPECT_EQ(reader->MetadataU64(*arch).status().code(), BP_ERR_INVALID_ARGUMENT);
}

// A moved reader keeps working and is closed once (ASan reports a second
// close), the moved-from one holds nothing.
TEST(CppWrapper, MovedReaderKeepsItsHandle) {
  auto opened = bp::Reader::Open(TinyStories("model.safetensors"));
  ASSERT_TRUE(opened.ok());
  const bp_reader* handle = opened->get();
  bp::Reader moved = std::move(*opened);
  EXPECT_EQ(opened->get(), nullptr);
  EXPECT_EQ(moved.get(), handle);
  EXPECT_GT(moved.tensor_count(), 0u);
  bp::Reader other = std::move(*bp::Reader::Open(TinyStories("TinyStories-656K.f16.gguf")));
  other = std::move(moved);  // closes the GGUF reader, takes the safetensors one
  EXPECT_EQ(other.get(), handle);
  EXPECT_TRUE(other.tensor(0).ok());
  EXPECT_TRUE(other.DecodeF32(0).ok());
}

TEST(CppWrapper, BudgetAgreesWithTheCApi) {
  auto f = boltpack::testing::WriteBudgetFixture(boltpack::testing::MakeTempDir());
  auto reader = bp::Reader::Open(f.path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  ASSERT_EQ(reader->budget_count(), 2u);
  EXPECT_EQ(reader->budget_name(0), "half");
  EXPECT_EQ(reader->budget_name(2), "");
  auto budget = reader->OpenBudget("half", "full");
  if (!budget.ok() && budget.status().code() == BP_ERR_UNSUPPORTED) GTEST_SKIP() << "bf16-spec not built in";
  ASSERT_TRUE(budget.ok()) << budget.status().ToString();
  bp_budget* c = nullptr;
  ASSERT_EQ(bp_budget_open(reader->get(), "half", "full", &c), BP_OK);
  ASSERT_EQ(budget->tensor_count(), bp_budget_tensor_count(c));
  uint64_t bytes = 0;
  ASSERT_EQ(bp_budget_bytes(c, &bytes), BP_OK);
  EXPECT_EQ(*budget->bytes(), bytes);
  for (size_t i = 0; i < budget->tensor_count(); ++i) {
    auto kept = budget->tensor(i);
    ASSERT_TRUE(kept.ok());
    struct bp_budget_tensor want;
    ASSERT_EQ(bp_budget_tensor(c, i, &want), BP_OK);
    EXPECT_EQ(kept->name(), want.name);
    EXPECT_EQ(kept->shape().size(), want.ndim);
    auto n = budget->decoded_size(i, BP_OUT_BF16);
    ASSERT_TRUE(n.ok());
    std::vector<std::byte> got(*n), expected(*n);
    ASSERT_TRUE(budget->Decode(i, BP_OUT_BF16, got).ok());
    ASSERT_EQ(bp_budget_decode(c, i, BP_OUT_BF16, expected.data(), expected.size()), BP_OK);
    EXPECT_EQ(got, expected) << want.name;
    size_t count = 0;
    bp_status regions = bp_budget_region_count(c, i, &count);
    EXPECT_EQ(budget->regions(i).status().code(), regions);
    if (regions == BP_OK) {
      EXPECT_EQ(budget->regions(i)->size(), count);
    }
  }
  EXPECT_EQ(budget->tensor(budget->tensor_count()).status().code(), BP_ERR_OUT_OF_RANGE);
  bp_budget_close(c);
}

}  // namespace
