// tools/safetensors_out: what bolt-pack writes as safetensors loads in
// transformers, whose from_pretrained refuses __metadata__ without a
// "format" of pt/tf/flax/mlx.
#include "tools/safetensors_out.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "io/safetensors.h"
#include "tests/test_util.h"

namespace boltpack::tools {
namespace {

using Metadata = std::vector<std::pair<std::string, std::string>>;

// The __metadata__ a file written with `metadata` (and, with `split`, in
// files of at most 4 bytes) reads back with.
Metadata WrittenMetadata(Metadata metadata, bool split) {
  const std::string dir = ::boltpack::testing::MakeTempDir();
  std::vector<io::SafetensorsTensorDecl> decls = {{"a", DType::kF32, {1}}, {"b", DType::kF32, {1}}};
  auto out = SafetensorsOut::Create(dir + "/model.safetensors", std::move(metadata), decls, {}, false,
                                    split ? 4 : 0, 0);
  EXPECT_TRUE(out.ok()) << out.status();
  std::vector<uint8_t> four = {0, 0, 128, 63};
  EXPECT_TRUE(out->WriteNext(four).ok());
  EXPECT_TRUE(out->WriteNext(four).ok());
  EXPECT_TRUE(out->Finish().ok());
  auto m = io::SafetensorsModel::Open(dir + (split ? "/model-00001-of-00002.safetensors" : "/model.safetensors"));
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? (*m)->metadata() : Metadata{};
}

TEST(SafetensorsOut, CarriedMetadataGetsTransformersFormat) {
  const Metadata want = {{"format", "pt"}, {"general.architecture", "llama"}};
  EXPECT_EQ(WrittenMetadata({{"general.architecture", "llama"}}, false), want);
  EXPECT_EQ(WrittenMetadata({{"general.architecture", "llama"}}, true), want);  // every shard
}

TEST(SafetensorsOut, AFormatGivenOrNoMetadataIsKept) {
  EXPECT_EQ(WrittenMetadata({{"format", "mlx"}, {"x", "1"}}, false), (Metadata{{"format", "mlx"}, {"x", "1"}}));
  EXPECT_EQ(WrittenMetadata({}, false), Metadata{});
}

}  // namespace
}  // namespace boltpack::tools
