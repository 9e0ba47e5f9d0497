// GGUF export of two-level nvfp4 tensors (spec/gguf-mapping.md §3): ggml
// NVFP4 blocks plus llama.cpp's `<name>.scale` F32 tensor, through the CLI
// (safetensors -> .bolt -> .gguf, and safetensors -> .gguf directly).
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "codecs/encoded_record.h"
#include "gtest/gtest.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

struct Src {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<float> x;
};

std::vector<Src> Sources() {
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.0f, 0.02f);
  std::vector<Src> s = {{"blk.0.attn_q.weight", {4, 128}, {}},  // tensor scale amax/2688
                        {"blk.0.ffn_up.weight", {3, 64}, {}},   // tensor scale 1: all zeros
                        {"x", {3, 64}, {}}};                    // llama.cpp reads no scale beside it
  for (auto& t : s) {
    uint64_t n = 1;
    for (uint64_t d : t.shape) n *= d;
    t.x.resize(n);
    if (t.name != "blk.0.ffn_up.weight") {
      for (auto& v : t.x) v = g(rng) * (t.name == "x" ? 50.0f : 1.0f);
    }
  }
  return s;
}

void WriteSafetensors(const std::string& path, const std::vector<Src>& srcs) {
  std::vector<io::SafetensorsTensorDecl> decls;
  for (const auto& t : srcs) decls.push_back({t.name, DType::kF32, t.shape});
  auto w = io::SafetensorsWriter::Create(path, {}, decls, {});
  ASSERT_TRUE(w.ok()) << w.status();
  for (const auto& t : srcs) {
    ASSERT_TRUE((*w)->WriteNext(absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(t.x.data()), t.x.size() * 4)).ok());
  }
  ASSERT_TRUE((*w)->Finish().ok());
}

std::vector<float> DecodeGgmlNvfp4(const io::GgufModel& m, size_t i) {
  const io::GgufTensor& t = m.tensors()[i];
  EncodedTensor enc;
  const auto bytes = m.TensorBytes(i);
  enc.streams.push_back(EncodedStream{"blocks", std::vector<uint8_t>(bytes.begin(), bytes.end()), {}, true});
  const TensorInfo info = RecordFor(std::string(t.name), DType::kF32, t.Shape(), "nvfp4-ggml", enc);
  auto d = DecodeWhole(*FindCodec("nvfp4-ggml"), info, enc, OutputType::kF32);
  EXPECT_TRUE(d.ok()) << d.status();
  std::vector<float> y(d.ok() ? d->size() / 4 : 0);
  if (!y.empty()) std::memcpy(y.data(), d->data(), d->size());
  return y;
}

TEST(Nvfp4Gguf, BoltToGgufWritesBlocksAndScaleTensors) {
  const std::string dir = testing::MakeTempDir();
  const std::vector<Src> srcs = Sources();
  WriteSafetensors(dir + "/m.safetensors", srcs);
  auto r = testing::RunCli({"convert", dir + "/m.safetensors", "-o", dir + "/m.bolt", "--codec", "*=nvfp4"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = testing::RunCli({"convert", dir + "/m.bolt", "-o", dir + "/m.gguf"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = testing::RunCli({"convert", dir + "/m.safetensors", "-o", dir + "/direct.gguf", "--codec", "*=nvfp4"});
  ASSERT_EQ(r.exit_code, 0) << r.output;

  auto reader = Reader::Open(dir + "/m.bolt");
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto gguf = io::GgufModel::Open(dir + "/m.gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.status();
  auto direct = io::GgufModel::Open(dir + "/direct.gguf");
  ASSERT_TRUE(direct.ok()) << direct.status();
  const io::GgufModel& m = **gguf;
  // NVFP4 tensor, then its scale tensor unless the scale is exactly 1. "x"
  // has a scale but llama.cpp reads none beside it ("x.scale" would make it
  // refuse the file): it goes to Q8_0, in both exports, and says so.
  ASSERT_EQ(m.tensors().size(), 4u);
  const std::vector<std::string> names = {"blk.0.attn_q.weight", "blk.0.attn_q.scale", "blk.0.ffn_up.weight", "x"};
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(m.tensors()[i].name, names[i]);
  EXPECT_NE(r.output.find("bolt-pack: note: x: nvfp4 -> q8_0 (llama.cpp reads no x.scale"), std::string::npos)
      << r.output;
  EXPECT_EQ(m.tensors()[3].type->id, 8);
  EXPECT_EQ((*direct)->tensors()[*(*direct)->FindTensor("x")].type->id, 8);
  EXPECT_FALSE((*direct)->FindTensor("x.scale").has_value());

  for (size_t k = 0; k < srcs.size(); ++k) {
    const Src& s = srcs[k];
    SCOPED_TRACE(s.name);
    if (s.name == "x") continue;
    const size_t ti = *m.FindTensor(s.name);
    EXPECT_EQ(m.tensors()[ti].type->id, 40);
    EXPECT_EQ(m.tensors()[ti].Shape(), s.shape);
    const TensorInfo& info = (*reader)->tensors()[k];
    ASSERT_EQ(info.codec_id, "nvfp4");
    const float ts = info.codec_params.at(0).second.f32;
    float scale = 1.0f;
    const std::string scale_name = s.name.substr(0, s.name.size() - 7) + ".scale";
    auto si = m.FindTensor(scale_name);
    if (ts == 1.0f) {
      EXPECT_FALSE(si.has_value()) << "a unit scale is omitted, as llama.cpp's converter does";
    } else {
      ASSERT_TRUE(si.has_value());
      const io::GgufTensor& st = m.tensors()[*si];
      EXPECT_EQ(st.type->id, 0);
      EXPECT_EQ(st.ne, std::vector<uint64_t>{1});
      ASSERT_EQ(m.TensorBytes(*si).size(), 4u);
      std::memcpy(&scale, m.TensorBytes(*si).data(), 4);
      EXPECT_EQ(scale, ts) << "the scale itself (real = ggml value x scale), not its inverse";
    }
    // The bolt decode vs the GGUF blocks times the scale.
    std::vector<float> want(s.x.size());
    ASSERT_TRUE((*reader)
                    ->Decode(k, OutputType::kF32,
                             absl::MakeSpan(reinterpret_cast<uint8_t*>(want.data()), want.size() * 4))
                    .ok());
    const std::vector<float> got = DecodeGgmlNvfp4(m, ti);
    ASSERT_EQ(got.size(), want.size());
    size_t exact = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const float g = got[i] * scale;
      if (ts == 1.0f) {
        ASSERT_EQ(std::memcmp(&g, &want[i], 4), 0) << "bit for bit at " << i;
      } else {
        // bolt: E2M1 x fl(e4m3 x ts); GGUF: fl(E2M1 x e4m3) x ts, rounded
        // once. Equal unless the E2M1 value is 1.5, 3 or 6: then <= 1 ulp.
        ASSERT_LE(std::fabs(g - want[i]), std::ldexp(std::fabs(want[i]), -23)) << i;
      }
      exact += g == want[i];
    }
    EXPECT_GT(exact, got.size() / 2);
    // The direct export (re-encoding by the rule) writes the same blocks.
    const size_t di = *(*direct)->FindTensor(s.name);
    EXPECT_TRUE(std::vector<uint8_t>((*direct)->TensorBytes(di).begin(), (*direct)->TensorBytes(di).end()) ==
                std::vector<uint8_t>(m.TensorBytes(ti).begin(), m.TensorBytes(ti).end()));
  }
  // Direct export computes the scale while writing, so it always writes it.
  EXPECT_TRUE((*direct)->FindTensor("blk.0.ffn_up.scale").has_value());

  // Rows that are not a multiple of 64 cannot become GGUF NVFP4 blocks.
  WriteSafetensors(dir + "/odd.safetensors", {{"w.weight", {2, 48}, std::vector<float>(96, 0.5f)}});
  r = testing::RunCli({"convert", dir + "/odd.safetensors", "-o", dir + "/odd.bolt", "--codec", "*=nvfp4"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = testing::RunCli({"convert", dir + "/odd.bolt", "-o", dir + "/odd.gguf"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("w.weight"), std::string::npos) << r.output;
}

TEST(Nvfp4Gguf, ZstdCompressedStreamsExportToTheSameGguf) {
  // A .bolt written with --zstd stores the same codec bytes compressed; its
  // GGUF export must be byte-identical to the uncompressed file's.
  const std::string dir = testing::MakeTempDir();
  WriteSafetensors(dir + "/m.safetensors", Sources());
  for (const std::string codec : {"nvfp4", "q8_0"}) {
    for (const std::string zstd : {"", "3"}) {
      std::vector<std::string> args = {"convert", dir + "/m.safetensors", "-o", dir + "/" + codec + zstd + ".bolt",
                                       "--codec", "*=" + codec};
      if (!zstd.empty()) args.insert(args.end(), {"--zstd", zstd});
      auto r = testing::RunCli(args);
      ASSERT_EQ(r.exit_code, 0) << r.output;
      r = testing::RunCli({"convert", dir + "/" + codec + zstd + ".bolt", "-o", dir + "/" + codec + zstd + ".gguf"});
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    auto packed = Reader::Open(dir + "/" + codec + "3.bolt");
    ASSERT_TRUE(packed.ok()) << packed.status();
    bool any_compressed = false;
    for (const auto& t : (*packed)->tensors()) {
      for (const auto& st : t.streams) any_compressed |= st.compression == Compression::kZstd;
    }
    EXPECT_TRUE(any_compressed) << codec << ": the all-zero tensor should compress";
    EXPECT_EQ(testing::ReadFileBytes(dir + "/" + codec + ".gguf"), testing::ReadFileBytes(dir + "/" + codec + "3.gguf"))
        << codec;
  }
}

}  // namespace
}  // namespace boltpack
