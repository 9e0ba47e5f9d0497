#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace boltpack::io {
namespace {

using ::boltpack::testing::MakeTempDir;
using ::boltpack::testing::ReadFileBytes;
using ::boltpack::testing::SharedDir;
using ::boltpack::testing::SourceDir;
using ::boltpack::testing::WriteFileBytes;

// A .safetensors image: 8-byte LE length, `header` as given (no padding
// added, so tests control every byte), then `data_bytes` bytes 0,1,2,...
std::vector<uint8_t> Build(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  for (size_t i = 0; i < data_bytes; ++i) out.push_back(static_cast<uint8_t>(i));
  return out;
}

absl::StatusOr<std::unique_ptr<SafetensorsModel>> Open(const std::vector<uint8_t>& bytes) {
  return SafetensorsModel::OpenBuffer(bytes, "model.safetensors");
}

// The error message of opening `bytes`, which must fail.
std::string ErrorOf(const std::vector<uint8_t>& bytes) {
  auto m = Open(bytes);
  EXPECT_FALSE(m.ok()) << "opened a file that should be rejected";
  if (m.ok()) return "";
  std::string msg(m.status().message());
  // Every error names the file.
  EXPECT_EQ(msg.rfind("model.safetensors: ", 0), 0u) << msg;
  return msg;
}

std::string ErrorOf(const std::string& header, size_t data_bytes) {
  return ErrorOf(Build(header, data_bytes));
}

#define EXPECT_HAS(haystack, needle)                                   \
  do {                                                                 \
    std::string h_ = (haystack);                                       \
    EXPECT_NE(h_.find(needle), std::string::npos) << "message: " << h_; \
  } while (0)

std::string Entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  uint64_t begin, uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
}

// ---- reading: valid files ---------------------------------------------------

TEST(SafetensorsReadTest, MinimalFile) {
  // OpenBuffer does not copy: the bytes must outlive the model.
  std::vector<uint8_t> file = Build("{" + Entry("x", "F32", "[2,2]", 0, 16) + "}", 16);
  auto m = Open(file);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ((*m)->tensors().size(), 1u);
  const SafetensorsTensor& t = (*m)->tensors()[0];
  EXPECT_EQ(t.name, "x");
  EXPECT_EQ(t.dtype, DType::kF32);
  EXPECT_EQ(t.shape, (std::vector<uint64_t>{2, 2}));
  EXPECT_EQ(t.data_begin, 0u);
  EXPECT_EQ(t.data_end, 16u);
  absl::Span<const uint8_t> bytes = (*m)->TensorBytes(0);
  ASSERT_EQ(bytes.size(), 16u);
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[15], 15);
  EXPECT_TRUE((*m)->TensorBytes(1).empty());  // out of range: empty, not a crash
  EXPECT_EQ((*m)->files(), std::vector<std::string>{"model.safetensors"});
}

TEST(SafetensorsReadTest, EmptyModelAndTrailingSpaces) {
  // Hugging Face's writer produces exactly this for no tensors.
  auto m = Open(Build("{}      ", 0));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE((*m)->tensors().empty());
  // Other JSON whitespace after the object is what serde_json accepts too.
  EXPECT_TRUE(Open(Build("{}\n\t\r ", 0)).ok());
  EXPECT_HAS(ErrorOf("{}  x", 0), "after the JSON value");
  EXPECT_HAS(ErrorOf(std::string("{}\0\0", 4), 0), "header JSON");
}

TEST(SafetensorsReadTest, ZeroDimAndZeroSizeTensors) {
  std::string h = "{" + Entry("scalar", "F32", "[]", 0, 4) + "," +
                  Entry("empty", "F16", "[0,3]", 4, 4) + "," +
                  Entry("also_empty", "I64", "[5,0]", 4, 4) + "," + Entry("last", "U8", "[2]", 4, 6) +
                  "}";
  std::vector<uint8_t> file = Build(h, 6);
  auto m = Open(file);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ((*m)->tensors().size(), 4u);
  EXPECT_TRUE((*m)->tensors()[0].shape.empty());
  EXPECT_EQ((*m)->TensorBytes(0).size(), 4u);
  EXPECT_EQ((*m)->TensorBytes(1).size(), 0u);
  EXPECT_EQ((*m)->TensorBytes(2).size(), 0u);
  EXPECT_EQ((*m)->TensorBytes(3).size(), 2u);
  EXPECT_EQ((*m)->TensorBytes(3)[0], 4);
}

TEST(SafetensorsReadTest, HeaderOrderIsKeptWhateverTheOffsets) {
  std::string h = "{" + Entry("b", "U8", "[2]", 2, 4) + "," + Entry("a", "U8", "[2]", 0, 2) + "}";
  std::vector<uint8_t> file = Build(h, 4);
  auto m = Open(file);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->tensors()[0].name, "b");
  EXPECT_EQ((*m)->tensors()[1].name, "a");
  EXPECT_EQ((*m)->TensorBytes(0)[0], 2);
}

TEST(SafetensorsReadTest, EveryDTypeName) {
  struct Case {
    const char* name;
    DType dtype;
    int size;
  };
  const Case cases[] = {
      {"BOOL", DType::kBool, 1},       {"U8", DType::kU8, 1},
      {"I8", DType::kI8, 1},           {"I16", DType::kI16, 2},
      {"U16", DType::kU16, 2},         {"F16", DType::kF16, 2},
      {"BF16", DType::kBF16, 2},       {"I32", DType::kI32, 4},
      {"U32", DType::kU32, 4},         {"F32", DType::kF32, 4},
      {"F64", DType::kF64, 8},         {"I64", DType::kI64, 8},
      {"U64", DType::kU64, 8},         {"C64", DType::kC64, 8},
      {"F8_E4M3", DType::kF8E4M3, 1},  {"F8_E5M2", DType::kF8E5M2, 1},
      {"F8_E8M0", DType::kF8E8M0, 1},
  };
  for (const Case& c : cases) {
    uint64_t n = 3 * static_cast<uint64_t>(c.size);
    auto m = Open(Build("{" + Entry("t", c.name, "[3]", 0, n) + "}", n));
    ASSERT_TRUE(m.ok()) << c.name << ": " << m.status();
    EXPECT_EQ((*m)->tensors()[0].dtype, c.dtype) << c.name;
  }
}

TEST(SafetensorsReadTest, MetadataIsKeptInOrder) {
  std::string h = R"({"__metadata__":{"z":"1","a":"2","format":"pt"},)" + Entry("x", "U8", "[1]", 0, 1) + "}";
  auto m = Open(Build(h, 1));
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<std::pair<std::string, std::string>> want = {{"z", "1"}, {"a", "2"}, {"format", "pt"}};
  EXPECT_EQ((*m)->metadata(), want);
  // __metadata__ may come anywhere in the header.
  h = "{" + Entry("x", "U8", "[1]", 0, 1) + R"(,"__metadata__":{}})";
  EXPECT_TRUE(Open(Build(h, 1)).ok());
}

// ---- reading: each rule broken ----------------------------------------------

TEST(SafetensorsRejectTest, FileShorterThanLengthField) {
  EXPECT_HAS(ErrorOf(std::vector<uint8_t>{1, 0, 0}), "too small for the 8-byte header length");
  EXPECT_HAS(ErrorOf(std::vector<uint8_t>{}), "file is 0 bytes");
}

TEST(SafetensorsRejectTest, HeaderTooLarge) {
  std::vector<uint8_t> b = Build("{}      ", 0);
  uint64_t n = kSafetensorsMaxHeaderBytes + 1;
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(n >> (8 * i));
  EXPECT_HAS(ErrorOf(b), "header length 100000001 is over the limit of 100000000");
  EXPECT_EQ(Open(b).status().code(), absl::StatusCode::kResourceExhausted);
  std::memset(b.data(), 0xff, 8);  // would overflow n + 8
  EXPECT_HAS(ErrorOf(b), "over the limit");
}

TEST(SafetensorsRejectTest, HeaderPastEndOfFile) {
  std::vector<uint8_t> b = Build("{}      ", 0);
  b[0] = 9;
  EXPECT_HAS(ErrorOf(b), "header length 9 runs past the end of the file (16 bytes)");
}

TEST(SafetensorsRejectTest, HeaderNotUtf8) {
  EXPECT_HAS(ErrorOf("{\"\xff\":1}", 0), "not valid UTF-8");
  EXPECT_HAS(ErrorOf("{}   \xc3", 0), "not valid UTF-8");  // even in the padding
}

TEST(SafetensorsRejectTest, HeaderMustStartWithBrace) {
  EXPECT_HAS(ErrorOf(" {}", 0), "does not start with '{'");
  EXPECT_HAS(ErrorOf("[]", 0), "does not start with '{'");
  EXPECT_HAS(ErrorOf("", 0), "does not start with '{'");
}

TEST(SafetensorsRejectTest, InvalidJson) {
  EXPECT_HAS(ErrorOf("{\"x\":", 0), "header JSON: byte 5");
  EXPECT_HAS(ErrorOf("{\"x\":{\"dtype\":\"F32\",}}", 0), "header JSON");
}

TEST(SafetensorsRejectTest, DuplicateTensorName) {
  std::string h = "{" + Entry("x", "U8", "[1]", 0, 1) + "," + Entry("x", "U8", "[1]", 1, 2) + "}";
  EXPECT_HAS(ErrorOf(h, 2), "duplicate key \"x\"");
  h = R"({"__metadata__":{},"__metadata__":{}})";
  EXPECT_HAS(ErrorOf(h, 0), "duplicate key \"__metadata__\"");
}

TEST(SafetensorsRejectTest, TensorEntryKeys) {
  EXPECT_HAS(ErrorOf(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":1}})", 1),
             "tensor \"x\": unknown key \"extra\" in tensor entry");
  EXPECT_HAS(ErrorOf(R"({"x":{"shape":[1],"data_offsets":[0,1]}})", 1), "tensor \"x\": missing \"dtype\"");
  EXPECT_HAS(ErrorOf(R"({"x":{"dtype":"U8","data_offsets":[0,1]}})", 1), "missing \"shape\"");
  EXPECT_HAS(ErrorOf(R"({"x":{"dtype":"U8","shape":[1]}})", 1), "missing \"data_offsets\"");
  EXPECT_HAS(ErrorOf(R"({"x":[1,2]})", 0), "tensor \"x\": entry is an array, not an object");
  EXPECT_HAS(ErrorOf(R"({"x":{"dtype":5,"shape":[1],"data_offsets":[0,1]}})", 1),
             "\"dtype\" is not a string");
}

TEST(SafetensorsRejectTest, DTypes) {
  EXPECT_HAS(ErrorOf("{" + Entry("w", "F4", "[2]", 0, 1) + "}", 1),
             "tensor \"w\": unsupported dtype \"F4\"");
  EXPECT_HAS(ErrorOf("{" + Entry("w", "F6_E2M3", "[4]", 0, 3) + "}", 3), "unsupported dtype");
  EXPECT_HAS(ErrorOf("{" + Entry("w", "F128", "[1]", 0, 16) + "}", 16),
             "tensor \"w\": unknown dtype \"F128\"");
  EXPECT_HAS(ErrorOf("{" + Entry("w", "f32", "[1]", 0, 4) + "}", 4), "unknown dtype \"f32\"");
}

TEST(SafetensorsRejectTest, ShapeDims) {
  EXPECT_HAS(ErrorOf("{" + Entry("s", "U8", "[-1]", 0, 0) + "}", 0),
             "tensor \"s\": shape dim -1 is not a non-negative integer");
  EXPECT_HAS(ErrorOf("{" + Entry("s", "U8", "[2.0]", 0, 2) + "}", 2), "shape dim 2.0 is not");
  EXPECT_HAS(ErrorOf("{" + Entry("s", "U8", "[1e1]", 0, 10) + "}", 10), "shape dim 1e1 is not");
  EXPECT_HAS(ErrorOf("{" + Entry("s", "U8", "[\"2\"]", 0, 2) + "}", 2), "shape dim a string is not");
  EXPECT_HAS(ErrorOf("{" + Entry("s", "U8", "[18446744073709551616]", 0, 0) + "}", 0), "shape dim");
  EXPECT_HAS(ErrorOf("{" + Entry("s", "U8", "{}", 0, 0) + "}", 0), "\"shape\" is not an array");
  EXPECT_HAS(ErrorOf("{" + Entry("s", "U8", "[1,1,1,1,1,1,1,1,1]", 0, 1) + "}", 1),
             "shape has 9 dims, more than the limit of 8");
  EXPECT_TRUE(Open(Build("{" + Entry("s", "U8", "[1,1,1,1,1,1,1,2]", 0, 2) + "}", 2)).ok());
}

TEST(SafetensorsRejectTest, SizeOverflow) {
  EXPECT_HAS(ErrorOf("{" + Entry("o", "U8", "[4294967296,4294967296,2]", 0, 0) + "}", 0),
             "tensor \"o\": element count of shape [4294967296,4294967296,2] overflows");
  EXPECT_HAS(ErrorOf("{" + Entry("o", "F64", "[4611686018427387904]", 0, 0) + "}", 0),
             "byte size of F64 [4611686018427387904] overflows");
  // An end offset near 2^64 must not wrap anything either.
  EXPECT_HAS(ErrorOf("{" + Entry("o", "U8", "[1]", 18446744073709551614ull, 18446744073709551615ull) + "}", 0),
             "leave a hole");
}

TEST(SafetensorsRejectTest, ByteCountMismatch) {
  EXPECT_EQ(ErrorOf("{" + Entry("x", "F32", "[2,2]", 0, 12) + "}", 12),
            "model.safetensors: tensor \"x\": data_offsets [0, 12] hold 12 bytes but F32 [2,2] "
            "needs 16");
  EXPECT_HAS(ErrorOf("{" + Entry("x", "F32", "[]", 0, 0) + "}", 0), "hold 0 bytes but F32 [] needs 4");
}

TEST(SafetensorsRejectTest, DataOffsetsShape) {
  EXPECT_HAS(ErrorOf(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})", 1),
             "\"data_offsets\" is not an array of two integers");
  EXPECT_HAS(ErrorOf(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}})", 1),
             "\"data_offsets\" must be two non-negative integers");
  EXPECT_HAS(ErrorOf(R"({"x":{"dtype":"U8","shape":[0],"data_offsets":[4,2]}})", 4),
             "data_offsets [4, 2] end before they begin");
}

TEST(SafetensorsRejectTest, HolesAndOverlaps) {
  // Data not starting at 0.
  EXPECT_HAS(ErrorOf("{" + Entry("a", "U8", "[2]", 2, 4) + "}", 4),
             "tensor \"a\": data_offsets [2, 4] leave a hole: the bytes before them end at 0");
  // A hole between two tensors.
  std::string h = "{" + Entry("a", "U8", "[2]", 0, 2) + "," + Entry("b", "U8", "[2]", 3, 5) + "}";
  EXPECT_HAS(ErrorOf(h, 5), "tensor \"b\": data_offsets [3, 5] leave a hole");
  // Overlap.
  h = "{" + Entry("a", "U8", "[4]", 0, 4) + "," + Entry("b", "U8", "[2]", 2, 4) + "}";
  EXPECT_HAS(ErrorOf(h, 4), "data_offsets [2, 4] overlap tensor \"a\" [0, 4]");
  // Two tensors sharing the same bytes (aliasing).
  h = "{" + Entry("a", "U8", "[4]", 0, 4) + "," + Entry("b", "U8", "[4]", 0, 4) + "}";
  EXPECT_HAS(ErrorOf(h, 4), "overlap");
}

TEST(SafetensorsRejectTest, BufferMustBeCoveredExactly) {
  std::string h = "{" + Entry("a", "U8", "[4]", 0, 4) + "}";
  EXPECT_HAS(ErrorOf(h, 5), "tensors cover 4 bytes but the file has 5 bytes after the header");
  EXPECT_HAS(ErrorOf(h, 3), "tensors need a 4-byte data buffer but the file has 3");
  EXPECT_HAS(ErrorOf("{}", 1), "1 unaccounted trailing bytes");
}

TEST(SafetensorsRejectTest, MetadataMustBeStringMap) {
  EXPECT_HAS(ErrorOf(R"({"__metadata__":[]})", 0), "__metadata__ is an array, not an object of strings");
  EXPECT_HAS(ErrorOf(R"({"__metadata__":null})", 0), "__metadata__ is null");
  EXPECT_HAS(ErrorOf(R"({"__metadata__":{"n":1}})", 0), "__metadata__ value of \"n\" is a number, not a string");
  EXPECT_HAS(ErrorOf(R"({"__metadata__":{"a":"1","a":"2"}})", 0), "duplicate key \"a\"");
}

TEST(SafetensorsRejectTest, NamesInMessagesAreQuoted) {
  // A control character in a tensor name must not reach the message raw.
  std::string h = R"({"bad\nname":{"dtype":"U8","shape":[1],"data_offsets":[0,2]}})";
  std::string err = ErrorOf(h, 2);
  EXPECT_HAS(err, "tensor \"bad\\x0aname\"");  // common/escape.h, as every message shows names
  EXPECT_EQ(err.find('\n'), std::string::npos);
}

TEST(SafetensorsReadTest, FuzzSeedsBehaveAsNamed) {
  // fuzz/corpus/safetensors: valid_* must open and bad_* must be rejected,
  // so the seeds keep covering both sides of every check.
  std::string dir = SourceDir() + "/fuzz/corpus/safetensors";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no seed corpus";
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    std::vector<uint8_t> bytes = ReadFileBytes(entry.path().string());
    auto m = SafetensorsModel::OpenBuffer(bytes, name);
    if (name.rfind("valid_", 0) == 0) {
      EXPECT_TRUE(m.ok()) << name << ": " << m.status();
      ++seen;
    } else if (name.rfind("bad_", 0) == 0) {
      EXPECT_FALSE(m.ok()) << name << " was accepted";
      ++seen;
    }
  }
  EXPECT_GT(seen, 0);
}

// ---- files on disk ----------------------------------------------------------

std::string TinyStories() { return SourceDir() + "/testdata/tinystories-656k/model.safetensors"; }
std::string Recall() { return SourceDir() + "/testdata/tl-recall-gpt/recall_weights.safetensors"; }

TEST(SafetensorsFileTest, OpensTinyStories) {
  auto m = SafetensorsModel::Open(TinyStories());
  ASSERT_TRUE(m.ok()) << m.status();
  const auto& tensors = (*m)->tensors();
  ASSERT_FALSE(tensors.empty());
  EXPECT_EQ(tensors[0].name, "lm_head.weight");
  EXPECT_EQ(tensors[0].dtype, DType::kF32);
  EXPECT_EQ(tensors[0].shape, (std::vector<uint64_t>{2048, 128}));
  std::vector<std::pair<std::string, std::string>> want = {
      {"format", "pt"}, {"model.embed_tokens.weight", "lm_head.weight"}};
  EXPECT_EQ((*m)->metadata(), want);
  uint64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) total += (*m)->TensorBytes(i).size();
  EXPECT_EQ(total, tensors.back().data_end);
}

TEST(SafetensorsFileTest, MissingFileNamesThePath) {
  auto m = SafetensorsModel::Open(MakeTempDir() + "/nope.safetensors");
  ASSERT_FALSE(m.ok());
  EXPECT_HAS(std::string(m.status().message()), "nope.safetensors");
}

// Reads `src` and writes it back with the same metadata and order; returns
// the new file's bytes.
std::vector<uint8_t> Rewrite(const std::string& src, const std::string& dst) {
  auto m = SafetensorsModel::Open(src);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return {};
  std::vector<SafetensorsTensorDecl> decls;
  for (const auto& t : (*m)->tensors()) decls.push_back({t.name, t.dtype, t.shape});
  auto w = SafetensorsWriter::Create(dst, (*m)->metadata(), decls, {src});
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return {};
  for (size_t i = 0; i < decls.size(); ++i) {
    absl::Status s = (*w)->WriteNext((*m)->TensorBytes(i));
    EXPECT_TRUE(s.ok()) << s;
  }
  absl::Status s = (*w)->Finish();
  EXPECT_TRUE(s.ok()) << s;
  return ReadFileBytes(dst);
}

// Files written by Hugging Face's writer (compact header, tensors in offset
// order, __metadata__ first) come back byte for byte.
TEST(SafetensorsFileTest, RoundTripIsByteIdentical) {
  std::string dir = MakeTempDir();
  for (const std::string& src : {TinyStories(), Recall()}) {
    std::vector<uint8_t> out = Rewrite(src, dir + "/out.safetensors");
    std::vector<uint8_t> in = ReadFileBytes(src);
    ASSERT_EQ(out.size(), in.size()) << src;
    EXPECT_TRUE(out == in) << src << " differs after a round trip";
  }
}

TEST(SafetensorsFileTest, RoundTripSharedCorpus) {
  if (SharedDir().empty()) GTEST_SKIP() << "../shared is absent";
  std::string dir = MakeTempDir();
  for (const char* rel : {"/corpus/weights/tinystories-656k/model.safetensors",
                          "/corpus/weights/gpt2-lora-seqcls/adapter_model.safetensors"}) {
    std::string src = SharedDir() + rel;
    if (!std::filesystem::exists(src)) continue;
    std::vector<uint8_t> out = Rewrite(src, dir + "/out.safetensors");
    EXPECT_TRUE(out == ReadFileBytes(src)) << src << " differs after a round trip";
  }
}

// ---- writer -------------------------------------------------------------------

TEST(SafetensorsWriterTest, HeaderMatchesHuggingFaceBytes) {
  // The expected bytes are from safetensors' own tests (tensor.rs).
  std::string dir = MakeTempDir();
  {
    auto w = SafetensorsWriter::Create(dir + "/a.safetensors", {}, {{"attn.0", DType::kF32, {1, 2, 3}}}, {});
    ASSERT_TRUE(w.ok()) << w.status();
    std::vector<uint8_t> data(24, 7);
    ASSERT_TRUE((*w)->WriteNext(data).ok());
    ASSERT_TRUE((*w)->Finish().ok());
    std::vector<uint8_t> got = ReadFileBytes(dir + "/a.safetensors");
    std::vector<uint8_t> want = Build(R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})", 0);
    want.insert(want.end(), data.begin(), data.end());
    EXPECT_EQ(got, want);
  }
  {
    auto w = SafetensorsWriter::Create(dir + "/b.safetensors", {{"framework", "pt"}}, {}, {});
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE((*w)->Finish().ok());
    EXPECT_EQ(ReadFileBytes(dir + "/b.safetensors"), Build(R"({"__metadata__":{"framework":"pt"}}     )", 0));
  }
  {
    auto w = SafetensorsWriter::Create(dir + "/c.safetensors", {}, {}, {});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Finish().ok());
    EXPECT_EQ(ReadFileBytes(dir + "/c.safetensors"), Build("{}      ", 0));
  }
}

TEST(SafetensorsWriterTest, WritesZeroDimZeroSizeAndMetadata) {
  std::string path = MakeTempDir() + "/m.safetensors";
  std::vector<SafetensorsTensorDecl> decls = {
      {"scalar", DType::kF32, {}}, {"empty", DType::kBF16, {0, 4}}, {"v", DType::kI16, {3}}};
  auto w = SafetensorsWriter::Create(path, {{"b", "x\"y"}, {"a", "\xc3\xa9"}}, decls, {});
  ASSERT_TRUE(w.ok()) << w.status();
  std::vector<uint8_t> s = {1, 2, 3, 4}, v = {5, 6, 7, 8, 9, 10};
  ASSERT_TRUE((*w)->WriteNext(s).ok());
  ASSERT_TRUE((*w)->WriteNext({}).ok());
  ASSERT_TRUE((*w)->WriteNext(v).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  auto m = SafetensorsModel::Open(path);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ((*m)->tensors().size(), 3u);
  EXPECT_TRUE((*m)->tensors()[0].shape.empty());
  EXPECT_EQ((*m)->tensors()[1].shape, (std::vector<uint64_t>{0, 4}));
  EXPECT_EQ(std::vector<uint8_t>((*m)->TensorBytes(2).begin(), (*m)->TensorBytes(2).end()), v);
  std::vector<std::pair<std::string, std::string>> want = {{"b", "x\"y"}, {"a", "\xc3\xa9"}};
  EXPECT_EQ((*m)->metadata(), want);
  std::vector<uint8_t> bytes = ReadFileBytes(path);
  EXPECT_EQ(bytes[0] % 8, 0) << "header must be padded to a multiple of 8";
}

TEST(SafetensorsWriterTest, RefusesToOverwriteItsInput) {
  std::string dir = MakeTempDir();
  std::string path = dir + "/in.safetensors";
  std::filesystem::copy_file(Recall(), path);
  auto w = SafetensorsWriter::Create(path, {}, {}, {path});
  ASSERT_FALSE(w.ok());
  EXPECT_HAS(std::string(w.status().message()), "refusing to overwrite an input");
  // Same file through another spelling of the path.
  w = SafetensorsWriter::Create(dir + "/./in.safetensors", {}, {}, {path});
  EXPECT_FALSE(w.ok());
  EXPECT_EQ(ReadFileBytes(path), ReadFileBytes(Recall()));
}

TEST(SafetensorsWriterTest, SizeAndCountChecks) {
  std::string path = MakeTempDir() + "/w.safetensors";
  auto w = SafetensorsWriter::Create(path, {}, {{"a", DType::kF32, {2}}, {"b", DType::kU8, {1}}}, {});
  ASSERT_TRUE(w.ok());
  std::vector<uint8_t> seven(7);
  absl::Status s = (*w)->WriteNext(seven);
  EXPECT_HAS(std::string(s.message()), "tensor \"a\": got 7 bytes but F32 [2] needs 8");
  ASSERT_TRUE((*w)->WriteNext(std::vector<uint8_t>(8)).ok());
  s = (*w)->Finish();
  EXPECT_HAS(std::string(s.message()), "tensor \"b\": not written (1 of 2 tensors were)");
  ASSERT_TRUE((*w)->WriteNext(std::vector<uint8_t>(1)).ok());
  s = (*w)->WriteNext(std::vector<uint8_t>(1));
  EXPECT_HAS(std::string(s.message()), "all 2 declared tensors are already written");
  EXPECT_FALSE(std::filesystem::exists(path)) << "nothing appears before Finish";
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_TRUE(SafetensorsModel::Open(path).ok());
}

TEST(SafetensorsWriterTest, AbandonedWriterLeavesNoFile) {
  std::string dir = MakeTempDir();
  {
    auto w = SafetensorsWriter::Create(dir + "/x.safetensors", {}, {{"a", DType::kU8, {1}}}, {});
    ASSERT_TRUE(w.ok());
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

TEST(SafetensorsWriterTest, RejectsDeclarationsReadersWouldReject) {
  std::string path = MakeTempDir() + "/w.safetensors";
  auto err = [&](std::vector<std::pair<std::string, std::string>> meta,
                 std::vector<SafetensorsTensorDecl> decls) {
    auto w = SafetensorsWriter::Create(path, std::move(meta), std::move(decls), {});
    EXPECT_FALSE(w.ok());
    return w.ok() ? std::string() : std::string(w.status().message());
  };
  EXPECT_HAS(err({}, {{"a", DType::kU8, {1}}, {"a", DType::kU8, {1}}}), "tensor \"a\": duplicate tensor name");
  EXPECT_HAS(err({}, {{"__metadata__", DType::kU8, {1}}}), "reserved");
  EXPECT_HAS(err({}, {{"a", DType::kUnspecified, {1}}}), "no safetensors spelling");
  EXPECT_HAS(err({}, {{"a", DType::kU8, {1, 1, 1, 1, 1, 1, 1, 1, 1}}}), "9 dims");
  EXPECT_HAS(err({}, {{"a", DType::kF64, {uint64_t{1} << 62}}}), "overflows");
  EXPECT_HAS(err({}, {{"\xff", DType::kU8, {1}}}), "not valid UTF-8");
  EXPECT_HAS(err({{"k", "\xc0\x80"}}, {}), "not valid UTF-8");
  EXPECT_HAS(err({{"k", "1"}, {"k", "2"}}, {}), "duplicate __metadata__ key \"k\"");
}

// ---- sharded models ---------------------------------------------------------

void WriteShard(const std::string& path, std::vector<std::pair<std::string, std::string>> meta,
                const std::vector<SafetensorsTensorDecl>& decls, uint8_t fill) {
  auto w = SafetensorsWriter::Create(path, std::move(meta), decls, {});
  ASSERT_TRUE(w.ok()) << w.status();
  for (const auto& d : decls) {
    uint64_t n = DTypeSize(d.dtype);
    for (uint64_t dim : d.shape) n *= dim;
    ASSERT_TRUE((*w)->WriteNext(std::vector<uint8_t>(n, fill)).ok());
  }
  ASSERT_TRUE((*w)->Finish().ok());
}

void WriteText(const std::string& path, const std::string& text) {
  WriteFileBytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

class ShardedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    WriteShard(dir_ + "/model-00001-of-00002.safetensors", {{"format", "pt"}},
               {{"b", DType::kF32, {2}}, {"a", DType::kU8, {3}}}, 1);
    WriteShard(dir_ + "/model-00002-of-00002.safetensors", {{"other", "x"}},
               {{"d", DType::kI16, {1}}, {"c", DType::kF16, {}}}, 2);
  }
  absl::StatusOr<std::unique_ptr<SafetensorsModel>> OpenIndex(const std::string& json) {
    WriteText(dir_ + "/model.safetensors.index.json", json);
    return SafetensorsModel::Open(dir_ + "/model.safetensors.index.json");
  }
  std::string IndexError(const std::string& json) {
    auto m = OpenIndex(json);
    EXPECT_FALSE(m.ok());
    return m.ok() ? std::string() : std::string(m.status().message());
  }
  std::string dir_;
};

TEST_F(ShardedTest, OpensInShardOrderThenHeaderOrder) {
  // The second shard appears first in the weight_map, so it comes first.
  auto m = OpenIndex(R"({"metadata":{"total_size":17},"weight_map":{
      "c":"model-00002-of-00002.safetensors","a":"model-00001-of-00002.safetensors",
      "b":"model-00001-of-00002.safetensors","d":"model-00002-of-00002.safetensors"}})");
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<std::string> names;
  for (const auto& t : (*m)->tensors()) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"d", "c", "b", "a"}));
  ASSERT_EQ((*m)->files().size(), 2u);
  EXPECT_NE((*m)->files()[0].find("model-00002-of-00002.safetensors"), std::string::npos);
  EXPECT_EQ((*m)->tensors()[0].file_index, 0u);
  EXPECT_EQ((*m)->tensors()[2].file_index, 1u);
  // metadata() is the first shard's __metadata__.
  std::vector<std::pair<std::string, std::string>> want = {{"other", "x"}};
  EXPECT_EQ((*m)->metadata(), want);
  EXPECT_EQ((*m)->TensorBytes(0).size(), 2u);
  EXPECT_EQ((*m)->TensorBytes(0)[0], 2);
  EXPECT_EQ((*m)->TensorBytes(2).size(), 8u);
  EXPECT_EQ((*m)->TensorBytes(2)[0], 1);
}

TEST_F(ShardedTest, RejectsPathsOutsideTheFolder) {
  for (std::string bad : {"../model-00001-of-00002.safetensors", "/etc/passwd", "sub/x.safetensors",
                          "a\\\\b.safetensors", "..", ".", ""}) {
    std::string err = IndexError(R"({"weight_map":{"a":")" + bad + R"("}})");
    EXPECT_HAS(err, "not a plain file name");
    EXPECT_HAS(err, "model.safetensors.index.json");
  }
}

TEST_F(ShardedTest, RejectsIncompleteOrWrongMaps) {
  const std::string s1 = "model-00001-of-00002.safetensors", s2 = "model-00002-of-00002.safetensors";
  // A shard tensor missing from the weight_map.
  std::string err = IndexError(R"({"weight_map":{"a":")" + s1 + R"(","b":")" + s1 + R"(","c":")" + s2 + R"("}})");
  EXPECT_HAS(err, "tensor \"d\": is not listed in the weight_map");
  EXPECT_HAS(err, s2);
  // A listed tensor that its file does not have.
  err = IndexError(R"({"weight_map":{"a":")" + s1 + R"(","b":")" + s1 + R"(","zz":")" + s1 + R"("}})");
  EXPECT_HAS(err, "weight_map puts tensor \"zz\" in \"" + s1 + "\" but that file has no such tensor");
  // A tensor listed under the wrong shard.
  err = IndexError(R"({"weight_map":{"a":")" + s1 + R"(","b":")" + s1 + R"(","c":")" + s1 + R"(","d":")" + s2 + R"("}})");
  EXPECT_HAS(err, "tensor \"c\": is in this shard, but the weight_map");
  // Structure.
  EXPECT_HAS(IndexError(R"({"metadata":{}})"), "missing \"weight_map\"");
  EXPECT_HAS(IndexError(R"({"weight_map":[]})"), "\"weight_map\" is not an object");
  EXPECT_HAS(IndexError(R"({"weight_map":{"a":1}})"), "weight_map entry for \"a\" is a number");
  EXPECT_HAS(IndexError(R"({"weight_map":{"a":"x","a":"y"}})"), "duplicate key \"a\"");
  EXPECT_HAS(IndexError("[]"), "not a JSON object");
  EXPECT_HAS(IndexError(R"({"weight_map":{"a":"missing.safetensors"}})"), "missing.safetensors");
}

TEST_F(ShardedTest, ShardErrorsNameTheShard) {
  WriteText(dir_ + "/broken.safetensors", "garbage!garbage!");
  std::string err = IndexError(R"({"weight_map":{"a":"broken.safetensors"}})");
  EXPECT_HAS(err, "broken.safetensors: header length");
}

}  // namespace
}  // namespace boltpack::io
