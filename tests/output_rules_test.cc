// Only valid outputs (issue 15, item 4): every name an import takes is one a
// .bolt holds, a .bolt -> .bolt copy refuses records its reader would refuse,
// the writer reads back what it writes with the reader's rules, and GGUF
// types without a codec of their own pass through as ggml-* records that
// verify by checksum and round-trip byte for byte.
#include <algorithm>
#include <cstring>
#include <filesystem>

#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "boltpack/writer.h"
#include "boltpack_proto/boltpack.pb.h"
#include "common/str_cat.h"
#include "format/output_rules.h"
#include "gtest/gtest.h"
#include "io/gguf.h"
#include "tests/manifest_rewrite.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::ReadFileBytes;
using testing::RewriteManifest;
using testing::RunCli;
using testing::SourceDir;
using testing::WriteFileBytes;

#define EXPECT_HAS(text, fragment) \
  EXPECT_NE(std::string(text).find(fragment), std::string::npos) << "missing \"" << (fragment) << "\" in: " << (text)

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

// Nothing but `keep` in `dir`: no output, no temporary.
size_t FilesIn(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

std::string WriteGgufNamed(const std::string& path, const std::string& name) {
  auto w = io::GgufWriter::Create(path, {{"general.architecture", MetaValue::String("llama")}},
                                  {io::GgufTensorDecl{name, {4}, 0}});
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return path;
  std::vector<uint8_t> data(16, 0);
  EXPECT_TRUE((*w)->WriteNext(data).ok());
  EXPECT_TRUE((*w)->Finish().ok());
  return path;
}

// A safetensors file of one F32 [1] tensor named `name`.
std::string WriteSafetensorsNamed(const std::string& path, const std::string& name) {
  std::string header = "{\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  while (header.size() % 8 != 0) header += ' ';
  // Sized once: growing an 8-byte vector by insert trips GCC 12's
  // -Warray-bounds (a false positive) under -O2.
  std::vector<uint8_t> file(8 + header.size() + 4, 0);
  uint64_t n = header.size();
  std::memcpy(file.data(), &n, 8);
  std::memcpy(file.data() + 8, header.data(), header.size());
  WriteFileBytes(path, file);
  return path;
}

TEST(ImportNames, NonUtf8GgufTensorNameIsRefusedNamingTheInput) {
  std::string dir = MakeTempDir();
  std::string in = WriteGgufNamed(dir + "/bad.gguf", "\xff\xfe.w");
  for (const char* ext : {".bolt", ".gguf", ".safetensors"}) {
    std::string out = dir + "/out" + ext;
    auto r = RunCli({"convert", in, "-o", out});
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_HAS(r.output, in + ": tensor name \"\\xff\\xfe.w\" is not valid UTF-8 (byte 0)");
    EXPECT_FALSE(Exists(out));
  }
  EXPECT_EQ(FilesIn(dir), 1u);
}

TEST(ImportNames, EmptyAndOverlongSafetensorsNamesAreRefusedNamingTheInput) {
  std::string dir = MakeTempDir();
  struct Case {
    std::string name;
    std::string message;
  };
  for (const Case& c : {Case{"", "tensor name of 0 bytes (\"\"); names are 1..4096 bytes"},
                        Case{std::string(8192, 'w'), "tensor name of 8192 bytes (\"wwww"}}) {
    std::string in = WriteSafetensorsNamed(StrCat(dir, "/name", c.name.size(), ".safetensors"), c.name);
    ASSERT_EQ(RunCli({"inspect", in}).exit_code, 0);  // a valid safetensors file...
    std::string out = dir + "/n.bolt";
    auto r = RunCli({"convert", in, "-o", out});  // ...that a .bolt cannot hold
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_HAS(r.output, in + ": " + c.message);
    EXPECT_EQ(r.output.find(out), std::string::npos) << "names the output: " << r.output;
    EXPECT_FALSE(Exists(out));
  }
}

TEST(WriterNames, NamesThatWouldNotParseBackAreRefused) {
  std::string dir = MakeTempDir();
  auto w = Writer::Create(dir + "/w.bolt", {.alignment = 64});
  ASSERT_TRUE(w.ok());
  absl::Status key = (*w)->AddMetadata("k\xc3", MetaValue::Bool(true));
  EXPECT_EQ(key.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_HAS(key.message(), dir + "/w.bolt: metadata key \"k\\xc3\" is not valid UTF-8 (byte 1)");
  TensorInfo info;
  info.name = "\xed\xa0\x80";  // a UTF-16 surrogate: not UTF-8
  info.dtype = DType::kU8;
  info.shape = {1};
  info.codec_id = "x-opaque";
  info.streams.push_back({.role = "data"});
  uint8_t byte = 7;
  absl::Status name = (*w)->AddStoredTensor(info, {absl::Span<const uint8_t>(&byte, 1)});
  EXPECT_HAS(name.message(), "tensor name \"\\xed\\xa0\\x80\" is not valid UTF-8 (byte 0)");
}

TEST(WriterReadBack, ManifestThatDoesNotParseBackIsRefused) {
  v1::Manifest m;
  m.set_format_major(1);
  m.set_alignment(64);
  m.add_tensors()->set_name("\xff");
  std::string bytes = m.SerializeAsString();
  absl::Status st = format::ValidateAsReader(bytes, "out.bolt", 64);
  EXPECT_HAS(st.message(), "out.bolt: the manifest does not parse back");
}

// A one-tensor q8_0 file (32 x 64 zeros but one, so zstd compresses it).
std::string WriteQ8File(const std::string& path, int zstd_level = 0) {
  auto w = Writer::Create(path, {.alignment = 64, .zstd_level = zstd_level});
  EXPECT_TRUE(w.ok());
  std::vector<float> v(32 * 64, 0.0f);
  v[5] = 1.5f;
  uint64_t shape[2] = {32, 64};
  TensorSource src{"q.weight", DType::kF32, shape,
                   {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)}};
  auto enc = EncodeTensor("q8_0", src, {}, {});
  EXPECT_TRUE(enc.ok()) << enc.status();
  EXPECT_TRUE((*w)->AddTensor("q.weight", {32, 64}, DType::kF32, "q8_0", std::move(*enc)).ok());
  EXPECT_TRUE((*w)->Finish().ok());
  return path;
}

void SetRawLength(v1::Stream* s, uint64_t raw) {
  uint64_t grow = raw - s->raw_length();
  s->set_raw_length(raw);
  if (s->chunks_size() > 0) {
    auto* last = s->mutable_chunks(s->chunks_size() - 1);
    last->set_raw_length(last->raw_length() + grow);
  }
}

TEST(CopyRules, RecordsTheReaderRefusesAreNotCopied) {
  std::string dir = MakeTempDir();
  auto plain = ReadFileBytes(WriteQ8File(dir + "/plain.bolt"));
  auto packed = ReadFileBytes(WriteQ8File(dir + "/packed.bolt", 3));
  ASSERT_EQ(testing::ManifestOf(packed).tensors(0).streams(0).compression(), v1::COMPRESSION_ZSTD);
  struct Case {
    const char* name;
    const std::vector<uint8_t>* base;
    std::function<void(v1::Manifest&)> edit;
    std::string message;
  };
  std::vector<Case> cases = {
      {"no streams", &plain, [](v1::Manifest& m) { m.mutable_tensors(0)->clear_streams(); },
       "expected 1 stream(s) (\"blocks\"), found 0"},
      {"unknown role", &plain, [](v1::Manifest& m) { m.mutable_tensors(0)->mutable_streams(0)->set_role("mystery"); },
       "stream 0 has role \"mystery\", expected \"blocks\""},
      {"compression 9", &plain,
       [](v1::Manifest& m) { m.mutable_tensors(0)->mutable_streams(0)->set_compression(static_cast<v1::Compression>(9)); },
       "stream \"blocks\": compression 9 is a later format version's, which this version cannot write; not copied"},
      {"q8_0 raw_length bomb", &packed,
       [](v1::Manifest& m) { SetRawLength(m.mutable_tensors(0)->mutable_streams(0), 1ull << 36); },
       "stream \"blocks\" raw length is 68719476736, expected 64 blocks x 34 bytes"},
      {"unknown codec raw_length bomb", &packed,
       [](v1::Manifest& m) {
         m.mutable_tensors(0)->mutable_codec()->set_id("future-codec");
         SetRawLength(m.mutable_tensors(0)->mutable_streams(0), 1ull << 36);
       },
       "stream \"blocks\": zstd data holds 2176 bytes, the manifest says 68719476736; not copied"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string file = c.name;
    std::replace(file.begin(), file.end(), ' ', '-');
    std::string in = dir + "/" + file + ".bolt", out = dir + "/out.bolt";
    WriteFileBytes(in, RewriteManifest(*c.base, c.edit));
    ASSERT_EQ(RunCli({"inspect", in}).exit_code, 0);  // the reader opens it (and refuses to decode it)
    auto r = RunCli({"convert", in, "-o", out});
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_HAS(r.output, in + ": ");
    EXPECT_HAS(r.output, "q.weight");
    EXPECT_HAS(r.output, c.message);
    EXPECT_FALSE(Exists(out));
  }
  EXPECT_EQ(FilesIn(dir), 2 + cases.size());  // plain, packed and the inputs: no output
  // Copying an unknown codec through stays possible (the plugin rule).
  std::string in = dir + "/future.bolt", out = dir + "/future-copy.bolt";
  WriteFileBytes(in, RewriteManifest(packed, [](v1::Manifest& m) { m.mutable_tensors(0)->mutable_codec()->set_id("future-codec"); }));
  auto ok = RunCli({"convert", in, "-o", out});
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  auto copy = Reader::Open(out);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ((*copy)->tensors()[0].codec_id, "future-codec");
}

TEST(CopyRules, WriterCopyTensorNamesTheInput) {
  std::string dir = MakeTempDir();
  auto bad = RewriteManifest(ReadFileBytes(WriteQ8File(dir + "/q.bolt")),
                             [](v1::Manifest& m) { m.mutable_tensors(0)->mutable_streams(0)->set_role("mystery"); });
  auto r = Reader::OpenBuffer(bad, "src.bolt");
  ASSERT_TRUE(r.ok()) << r.status();
  auto w = Writer::Create(dir + "/o.bolt", {.alignment = 64});
  ASSERT_TRUE(w.ok());
  absl::Status st = (*w)->CopyTensor(**r, 0);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_HAS(st.message(), "src.bolt: not a valid \"q8_0\" record, not copied: tensor 'q.weight'");
}

std::string Gguf(const std::string& name) { return SourceDir() + "/testdata/gguf/" + name + ".gguf"; }

TEST(GgmlPassThrough, GgmlWriterAllConvertsVerifiesAndRoundTrips) {
  std::string dir = MakeTempDir();
  std::string bolt = dir + "/all.bolt", back = dir + "/all.gguf";
  auto c = RunCli({"convert", Gguf("ggml-writer-all"), "-o", bolt});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto v = RunCli({"verify", bolt});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_HAS(v.output, ": OK (");
  EXPECT_HAS(v.output, " not decoded (a codec this version stores but does not decode)");
  auto g = RunCli({"verify", Gguf("ggml-writer-all")});
  EXPECT_EQ(g.exit_code, 0) << g.output;
  auto b = RunCli({"convert", bolt, "-o", back});
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_TRUE(ReadFileBytes(back) == ReadFileBytes(Gguf("ggml-writer-all"))) << "not byte-identical";
  // Every ggml-* record passes its codec's ValidateRecord and says why it
  // does not decode.
  auto r = Reader::Open(bolt);
  ASSERT_TRUE(r.ok()) << r.status();
  size_t passed = 0;
  for (size_t i = 0; i < (*r)->tensors().size(); ++i) {
    const TensorInfo& t = (*r)->tensors()[i];
    if (t.codec_id.rfind("ggml-", 0) != 0) continue;
    ++passed;
    const Codec* codec = FindCodec(t.codec_id);
    ASSERT_NE(codec, nullptr) << t.codec_id;
    EXPECT_TRUE(codec->ValidateRecord(t).ok()) << t.name;
    auto n = (*r)->DecodedBytes(i, OutputType::kF32);
    EXPECT_EQ(n.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_HAS(n.status().message(), "not decoded by this version");
  }
  EXPECT_EQ(passed, 1u);
  auto q4k = (*r)->FindTensor("blk.0.q4k.weight");
  ASSERT_TRUE(q4k);
  EXPECT_HAS((*r)->DecodedBytes(*q4k, OutputType::kF32).status().message(),
             "tensor \"blk.0.q4k.weight\": codec ggml type Q4_K: not decoded by this version");
}

// A GGUF with one [2, block] tensor of every type stored as ggml-* (its
// bytes arbitrary: GGUF, like these codecs, does not look inside blocks).
TEST(GgmlPassThrough, EveryPassThroughTypeVerifiesAndRoundTrips) {
  std::string dir = MakeTempDir();
  std::string gguf = dir + "/types.gguf", bolt = dir + "/types.bolt", back = dir + "/back.gguf";
  std::vector<io::GgufTensorDecl> decls;
  for (const GgmlType& type : GgmlTypes()) {
    if (GgmlTypeCodecId(type).rfind("ggml-", 0) != 0) continue;
    decls.push_back({StrCat("t.", type.name), {type.block_size, 2}, type.id});
  }
  ASSERT_GE(decls.size(), 20u);
  auto w = io::GgufWriter::Create(gguf, {{"general.architecture", MetaValue::String("llama")}}, decls);
  ASSERT_TRUE(w.ok()) << w.status();
  uint32_t x = 12345;
  for (const auto& d : decls) {
    std::vector<uint8_t> bytes(2 * GgmlTypeById(d.type)->type_size);
    for (auto& b : bytes) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 24);
    ASSERT_TRUE((*w)->WriteNext(bytes).ok());
  }
  ASSERT_TRUE((*w)->Finish().ok());
  auto c = RunCli({"convert", gguf, "-o", bolt});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto v = RunCli({"verify", bolt});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_HAS(v.output, StrCat(", ", decls.size(), " tensors not decoded"));
  auto g = RunCli({"verify", gguf});
  EXPECT_EQ(g.exit_code, 0) << g.output;
  EXPECT_HAS(g.output, StrCat("0 decoded, ", decls.size(), " not decoded"));
  ASSERT_EQ(RunCli({"convert", bolt, "-o", back}).exit_code, 0);
  EXPECT_TRUE(ReadFileBytes(back) == ReadFileBytes(gguf)) << "not byte-identical";
}

TEST(GgmlPassThrough, RecordRulesFollowGgmlBlockSizes) {
  const Codec* codec = FindCodec("ggml-q4_k");
  ASSERT_NE(codec, nullptr);
  TensorInfo t;
  t.name = "w";
  t.shape = {5, 1024};
  t.dtype = DType::kF32;
  t.codec_id = "ggml-q4_k";
  t.codec_params = {{"ggml_type", MetaValue::Int(ValueType::kInt32, 12)}};
  t.streams.push_back({.role = "data", .raw_length = 5 * 4 * 144});
  EXPECT_TRUE(codec->ValidateRecord(t).ok());
  TensorInfo shorter = t;
  shorter.streams[0].raw_length -= 1;
  EXPECT_HAS(codec->ValidateRecord(shorter).message(),
             "stream \"data\" raw length is 2879, but Q4_K (256 elements in 144 bytes) of this shape is 2880 bytes");
  TensorInfo odd_row = t;
  odd_row.shape = {5, 1000};
  EXPECT_HAS(codec->ValidateRecord(odd_row).message(), "not a multiple of Q4_K's block size 256");
  TensorInfo wrong_param = t;
  wrong_param.codec_params[0].second.i = 13;
  EXPECT_HAS(codec->ValidateRecord(wrong_param).message(), "exactly INT32 \"ggml_type\" = 12 (Q4_K)");
  TensorInfo no_stream = t;
  no_stream.streams.clear();
  EXPECT_HAS(codec->ValidateRecord(no_stream).message(), "expected one stream \"data\", found 0");
  EXPECT_EQ(codec->CanEncode(DType::kF32, t.shape, {}).code(), absl::StatusCode::kUnimplemented);
  // One codec per type without a codec of its own; none for those that have one.
  for (const GgmlType& type : GgmlTypes()) {
    const Codec* holder = FindCodec(GgmlTypeCodecId(type));
    ASSERT_NE(holder, nullptr) << type.name;
    if (GgmlTypeCodecId(type).rfind("ggml-", 0) == 0) {
      EXPECT_HAS(holder->description(), StrCat("ggml ", type.name, " blocks"));
    }
  }
}

TEST(GgmlPassThrough, ReencodingOrDecodingIsACleanError) {
  std::string dir = MakeTempDir();
  std::string out = dir + "/q.bolt";
  auto r = RunCli({"convert", Gguf("ggml-writer-all"), "-o", out, "--codec", "blk.0.q4k.weight=q8_0"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_HAS(r.output, "tensor \"blk.0.q4k.weight\": codec ggml type Q4_K: not decoded by this version");
  EXPECT_FALSE(Exists(out));
  std::string bolt = dir + "/all.bolt";
  ASSERT_EQ(RunCli({"convert", Gguf("ggml-writer-all"), "-o", bolt}).exit_code, 0);
  std::string st = dir + "/all.safetensors";
  auto s = RunCli({"convert", bolt, "-o", st, "--codec", "blk.0.q4k.weight=f32"});
  EXPECT_EQ(s.exit_code, 1) << s.output;
  EXPECT_HAS(s.output, "codec ggml type Q4_K: not decoded by this version");
  EXPECT_FALSE(Exists(st));
}

// Slicing needs no decode: outer rows and whole blocks of the innermost
// dimension are cut from the stored bytes, to .bolt and .gguf.
TEST(GgmlPassThrough, SliceCutsWholeRowsAndBlocks) {
  std::string dir = MakeTempDir();
  const uint64_t row = 1024 / 256 * 144;  // blk.0.q4k.weight: 5 rows of Q4_K
  auto source = io::GgufModel::Open(Gguf("ggml-writer-all"));
  ASSERT_TRUE(source.ok());
  auto src = (*source)->TensorBytes(*(*source)->FindTensor("blk.0.q4k.weight"));
  struct Case {
    const char* name;
    const char* json;
    std::vector<uint8_t> want;
  };
  std::vector<uint8_t> rows(src.begin(), src.begin() + 2 * row), blocks;
  for (uint64_t r = 0; r < 5; ++r) blocks.insert(blocks.end(), src.begin() + r * row, src.begin() + r * row + row / 2);
  std::vector<Case> cases = {
      {"rows", R"({"version": 1, "layers": {"count": 1, "name_pattern": "blk.{L}."}, "axes": {"rows": {"scope": "layer"}},
         "bindings": [{"tensor": "blk.{L}.q4k.weight", "dims": ["rows", "-"]}],
         "budgets": [{"name": "cut", "per_layer": {"rows": [2]}}]})", rows},
      {"blocks", R"({"version": 1, "layers": {"count": 1, "name_pattern": "blk.{L}."},
         "axes": {"cols": {"scope": "layer", "granularity": 256}},
         "bindings": [{"tensor": "blk.{L}.q4k.weight", "dims": ["-", "cols"]}],
         "budgets": [{"name": "cut", "per_layer": {"cols": [512]}}]})", blocks},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string json = StrCat(dir, "/", c.name, ".json"), bolt = StrCat(dir, "/", c.name, ".bolt");
    std::vector<uint8_t> text(c.json, c.json + std::strlen(c.json));
    WriteFileBytes(json, text);
    ASSERT_EQ(RunCli({"convert", Gguf("ggml-writer-all"), "-o", bolt, "--elastic", json}).exit_code, 0);
    std::string cut_bolt = StrCat(dir, "/", c.name, "-cut.bolt"), cut_gguf = StrCat(dir, "/", c.name, "-cut.gguf");
    ASSERT_EQ(RunCli({"slice", bolt, "--budget", "cut", "-o", cut_bolt}).exit_code, 0);
    ASSERT_EQ(RunCli({"slice", bolt, "--budget", "cut", "-o", cut_gguf}).exit_code, 0);
    EXPECT_EQ(RunCli({"verify", cut_bolt}).exit_code, 0);
    auto g = io::GgufModel::Open(cut_gguf);
    ASSERT_TRUE(g.ok()) << g.status();
    auto got = (*g)->TensorBytes(*(*g)->FindTensor("blk.0.q4k.weight"));
    EXPECT_TRUE(std::vector<uint8_t>(got.begin(), got.end()) == c.want);
    auto st = RunCli({"slice", bolt, "--budget", "cut", "-o", StrCat(dir, "/", c.name, ".safetensors")});
    EXPECT_EQ(st.exit_code, 1) << st.output;
    EXPECT_HAS(st.output, "codec ggml type Q4_K: not decoded by this version");
  }
}

}  // namespace
}  // namespace boltpack
