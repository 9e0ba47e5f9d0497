// Sizes and counts a file declares are limited before anything is built
// from them: each case here is a small file that once made a parser build
// gigabytes (issue 15 item 2), run through `bolt-pack inspect` with its peak
// resident memory measured (wait4, as bounded_memory_test.cc does). Each is
// refused cleanly (exit 1, the file and the limit named) or accepted, in
// well under 256 MiB. The CLI's heap is capped at 1 GiB so that a
// regression fails here fast instead of swapping the machine.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "boltpack/types.h"
#include "common/sanitizers.h"
#include "common/str_cat.h"
#include "format/layout.h"
#include "common/limits.h"
#include "gtest/gtest.h"
#include "io/json.h"
#include "tests/manifest_rewrite.h"
#include "tests/proto_wire.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::ReadFileBytes;
using testing::RunCliMeasured;
using testing::SourceDir;
using testing::WriteFileBytes;

constexpr int64_t kMaxPeakKib = 256 * 1024;     // issue 15's bound for a file of <= 64 MB
constexpr uint64_t kHeapCap = uint64_t{1} << 30;  // RLIMIT_DATA of the CLI under test

// Little-endian GGUF fields.
struct Gguf {
  std::vector<uint8_t> b;
  template <typename T>
  Gguf& Put(T v) {
    const size_t at = b.size();
    b.resize(at + sizeof(T));
    std::memcpy(b.data() + at, &v, sizeof(T));
    return *this;
  }
  Gguf& Str(std::string_view s) {
    Put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Gguf& Header(int64_t n_tensors, int64_t n_kv) {
    b.insert(b.end(), {'G', 'G', 'U', 'F'});
    return Put<uint32_t>(3).Put(n_tensors).Put(n_kv);
  }
  Gguf& PadTo(size_t a) {
    b.resize((b.size() + a - 1) / a * a, 0);
    return *this;
  }
};

using testing::Field;
using testing::Varint;

class ParserLimits : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef BOLTPACK_ASAN
    GTEST_SKIP() << "ASan keeps freed buffers in quarantine: resident memory would measure the sanitizer";
#endif
    dir_ = MakeTempDir();
  }
  std::string Write(const std::string& name, const std::vector<uint8_t>& bytes) {
    const std::string path = dir_ + "/" + name;
    WriteFileBytes(path, bytes);
    return path;
  }
  // `inspect path` exits 1 with a message naming the file and `words`,
  // within the memory bound.
  void ExpectRefused(const std::string& path, std::initializer_list<std::string_view> words) {
    const auto run = RunCliMeasured({"inspect", path}, kHeapCap);
    EXPECT_EQ(run.exit_code, 1) << run.output;
    EXPECT_NE(run.output.find(path), std::string::npos) << run.output;
    for (auto w : words) EXPECT_NE(run.output.find(w), std::string::npos) << "no \"" << w << "\" in: " << run.output;
    EXPECT_LT(run.peak_rss_kib, kMaxPeakKib) << path;
  }
  // A .bolt whose manifest is a valid one followed by `extra` wire fields.
  std::string BoltWithExtraManifestFields(const std::string& name, const std::string& extra) {
    const auto base = ReadFileBytes(SourceDir() + "/spec/vectors/valid/f32.bolt");
    const v1::Manifest m = testing::ManifestOf(base);
    return Write(name, testing::WithManifestBytes(base, m.SerializeAsString() + extra));
  }
  std::string dir_;
};

TEST_F(ParserLimits, MeasuredPeakIsTheCliOwnWhateverTheTestProcessHolds) {
  // 384 MiB resident here (as the whole test binary grows, run in one
  // process): a forked child's ru_maxrss counted them all, so the bounds
  // below failed in a full run and passed alone.
  std::vector<char> held(size_t{384} << 20);
  std::memset(held.data(), 1, held.size());
  const auto run = RunCliMeasured({"--version"}, kHeapCap);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("bolt-pack "), std::string::npos) << run.output;
  EXPECT_GT(run.peak_rss_kib, 0);
  EXPECT_LT(run.peak_rss_kib, 32 * 1024);
  EXPECT_EQ(held[held.size() / 2], 1);
  // A failure is still measured: exit 2 for bad usage.
  const auto bad = RunCliMeasured({"inspect"}, kHeapCap);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_LT(bad.peak_rss_kib, 32 * 1024);
}

TEST_F(ParserLimits, GgufArrayOf16MBytesIsRefusedBeforeItIsBuilt) {
  // 16.8 MB: one U8 array of 2^24 elements, which the bytes left allow
  // (5.5 GB and 11.6 s before: a MetaValue per byte, three copies).
  constexpr uint64_t n = uint64_t{1} << 24;
  Gguf g;
  g.Header(0, 1).Str("tokenizer.ggml.bytes").Put<int32_t>(9).Put<int32_t>(0).Put<uint64_t>(n);
  g.b.resize(g.b.size() + n, 0);
  ExpectRefused(Write("u8-array.gguf", g.b),
                {"key \"tokenizer.ggml.bytes\"", "more than 4194304 metadata array elements in the file"});
}

TEST_F(ParserLimits, GgufArraysPastTheLimitTogetherAreRefused) {
  // Many arrays, each small, add up: the limit is per file.
  constexpr int kArrays = 5;
  constexpr uint64_t n = uint64_t{1} << 20;
  Gguf g;
  g.Header(0, kArrays);
  for (int k = 0; k < kArrays; ++k) {
    g.Str("a." + std::to_string(k)).Put<int32_t>(9).Put<int32_t>(0).Put<uint64_t>(n);
    g.b.resize(g.b.size() + n, 0);
  }
  ExpectRefused(Write("u8-arrays.gguf", g.b), {"\"a.4\"", "more than 4194304 metadata array elements"});
}

TEST_F(ParserLimits, GgufOneTensorPastTheTensorLimitIsRefused) {
  constexpr int64_t n = static_cast<int64_t>(format::kMaxTensors) + 1;
  Gguf g;
  g.Header(n, 0);
  for (int64_t i = 0; i < n; ++i) g.Str("t").Put<uint32_t>(0).Put<int32_t>(0).Put<uint64_t>(0);
  ExpectRefused(Write("too-many-tensors.gguf", g.b), {"1000001 tensors (limit 1000000)"});
}

TEST_F(ParserLimits, GgufKeyValuesPastTheMetadataLimitAreRefused) {
  // 13 bytes each: 1,000,001 of them fit in 13 MB (each a key, a MetaValue
  // and a set entry: about 190 bytes in memory).
  constexpr int64_t n = static_cast<int64_t>(format::kMaxMetadataEntries) + 1;
  Gguf g;
  g.Header(0, n);
  for (int64_t i = 0; i < n; ++i) g.Str("k").Put<int32_t>(0).Put<uint8_t>(0);
  ExpectRefused(Write("too-many-keys.gguf", g.b), {"1000001 key/values (limit 1000000)"});
}

// Files just inside the limits are accepted, and their cost is bounded too.
// These bounds are what the tools reach now (issue 15's target is 256 MB):
// a regression past them fails here.
// Opening 1M GGUF tensors costs the mapped tensor-info table and one
// 88-byte InputTensor each, no allocation per tensor (inspect and verify of
// the 39 MB file: 231 MB measured; 351 MB before).
constexpr int64_t kGgufMillionTensorsPeakKib = kMaxPeakKib;

// `n` zero-size 1-D F32 tensors named t0, t1, ... (each padded with 'x' to
// `name_bytes` when that is not 0): the tensor-info table is the file.
std::vector<uint8_t> GgufOfEmptyTensors(int64_t n, size_t name_bytes = 0) {
  Gguf g;
  g.Header(n, 0);
  for (int64_t i = 0; i < n; ++i) {
    std::string name = "t" + std::to_string(i);
    if (name.size() < name_bytes) name.resize(name_bytes, 'x');
    g.Str(name).Put<uint32_t>(1).Put<uint64_t>(0).Put<int32_t>(0).Put<uint64_t>(0);
  }
  g.PadTo(32);
  return g.b;
}
// .bolt of 1M zero-size tensors: the reader keeps each tensor as where its
// record lies in the manifest (a TensorInfo with its heap parts, 450-600
// bytes, is built when asked for), the writer its serialized record.
// Measured (MiB): inspect 177 (527 before), verify 76 (444), copy 226
// (667), to GGUF 239 (658).
constexpr int64_t kBoltMillionTensorsInspectPeakKib = kMaxPeakKib;
constexpr int64_t kBoltMillionTensorsVerifyPeakKib = kMaxPeakKib;
constexpr int64_t kBoltMillionTensorsCopyPeakKib = kMaxPeakKib;
constexpr int64_t kBoltMillionTensorsToGgufPeakKib = kMaxPeakKib;
constexpr int64_t kBoltChunkLimitPeakKib = kMaxPeakKib;            // 237 MB measured

TEST_F(ParserLimits, GgufMillionZeroSizeTensorsOpenWithinBounds) {
  // 39 MB: the tensor limit's worth of distinct names, each 1-D and empty.
  const std::string path = Write("million-tensors.gguf", GgufOfEmptyTensors(format::kMaxTensors));
  // verify opens as inspect does (Inputs), without printing a million rows.
  const auto run = RunCliMeasured({"verify", path}, kHeapCap);
  EXPECT_EQ(run.exit_code, 0) << run.output.substr(0, 400);
  EXPECT_NE(run.output.find("1000000 tensors"), std::string::npos) << run.output.substr(0, 400);
  EXPECT_LT(run.peak_rss_kib, kGgufMillionTensorsPeakKib);
}

// A GGUF of one array `key` of `n` elements of GGUF type `type` whose
// bytes `element` appends.
template <typename Element>
std::vector<uint8_t> GgufOfOneArray(std::string_view key, int32_t type, uint64_t n, Element&& element) {
  Gguf g;
  g.Header(0, 1).Str(key).Put<int32_t>(9).Put<int32_t>(type).Put<uint64_t>(n);
  for (uint64_t k = 0; k < n; ++k) element(g, k);
  g.PadTo(32);
  return g.b;
}

// Tokenizer-like string arrays at the limits: 2^22 four-byte strings (a
// 50 MB GGUF), and the 30-byte tokens of a 64 MB GGUF (1.7M, each past
// std::string's inline buffer). The first two tokens are what inspect shows.
constexpr uint64_t kThirtyByteTokens = (uint64_t{64} << 20) / 38 - 2;
std::vector<uint8_t> GgufOfFourByteStrings() {
  return GgufOfOneArray("tokenizer.ggml.tokens", 8, format::kMaxMetadataArrayElements, [](Gguf& g, uint64_t k) {
    char s[4];
    std::memcpy(s, &k, 4);
    g.Str(std::string_view(s, 4));
  });
}
std::string ThirtyByteToken(uint64_t k) {
  std::string s = "token-" + std::to_string(k);
  s.resize(30, '_');
  return s;
}
std::vector<uint8_t> GgufOfThirtyByteTokens() {
  return GgufOfOneArray("tokenizer.ggml.tokens", 8, kThirtyByteTokens,
                        [](Gguf& g, uint64_t k) { g.Str(ThirtyByteToken(k)); });
}
constexpr std::string_view kFourByteStringsShown = "string[4194304] [\"\\x00\\x00\\x00\\x00\", \"\\x01\\x00\\x00\\x00\"";

// Packed arrays cost about their bytes: a numeric array at the file's
// element limit is its bytes once (4 MB for U8), not a MetaValue per
// element (88 bytes each, 371 MB for this file before).
constexpr int64_t kNumericArrayPeakKib = 64 * 1024;
constexpr int64_t kBoltArrayPeakKib = 48 * 1024;

TEST_F(ParserLimits, GgufLargestMetadataArrayIsInspectedWithOneCopy) {
  // 4.2 MB: one U8 array of exactly the file's element limit (2^22).
  constexpr uint64_t n = format::kMaxMetadataArrayElements;
  Gguf g;
  g.Header(0, 1).Str("tokenizer.ggml.bytes").Put<int32_t>(9).Put<int32_t>(0).Put<uint64_t>(n);
  g.b.resize(g.b.size() + n, 0);
  g.PadTo(32);
  const auto run = RunCliMeasured({"inspect", Write("largest-array.gguf", g.b)}, kHeapCap);
  EXPECT_EQ(run.exit_code, 0) << run.output.substr(0, 400);
  // The file's one key, not the gguf.* facts Inputs appends for a convert.
  EXPECT_NE(run.output.find("metadata (1):"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("uint8[4194304]"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("gguf.version"), std::string::npos) << run.output;
  EXPECT_LT(run.peak_rss_kib, kMaxPeakKib);
  EXPECT_LT(run.peak_rss_kib, kNumericArrayPeakKib);
}

TEST_F(ParserLimits, GgufNumericArraysOfEveryTypeAtTheLimit) {
  // GGUF type, its width, and how inspect names it: 4 MB (U8) to 32 MB (U64).
  struct Type {
    int32_t id;
    int width;
    const char* name;
  };
  constexpr Type kTypes[] = {{0, 1, "uint8"},  {1, 1, "int8"},   {2, 2, "uint16"}, {3, 2, "int16"},
                             {4, 4, "uint32"}, {5, 4, "int32"},  {6, 4, "float32"}, {7, 1, "bool"},
                             {10, 8, "uint64"}, {11, 8, "int64"}, {12, 8, "float64"}};
  constexpr uint64_t n = format::kMaxMetadataArrayElements;
  for (const Type& t : kTypes) {
    SCOPED_TRACE(t.name);
    Gguf g;
    g.Header(0, 1).Str("a").Put<int32_t>(9).Put<int32_t>(t.id).Put<uint64_t>(n);
    g.b.resize(g.b.size() + n * t.width, 0);
    g.b.back() = 1;  // the last element 1 (a bool byte must be 0 or 1)
    g.PadTo(32);
    const std::string path = Write(std::string(t.name) + ".gguf", g.b);
    const auto run = RunCliMeasured({"inspect", path}, kHeapCap);
    EXPECT_EQ(run.exit_code, 0) << run.output.substr(0, 400);
    EXPECT_NE(run.output.find(std::string(t.name) + "[4194304] ["), std::string::npos) << run.output;
    // The mapped file and one packed copy of its array, and the program:
    // 24 MB for U8 (361 MB before), 80 MB for U64 (389 MB before).
    const int64_t bound = 16 * 1024 + 2 * static_cast<int64_t>(n * t.width / 1024);
    EXPECT_LT(run.peak_rss_kib, std::min(bound, kMaxPeakKib));
    const auto verify = RunCliMeasured({"verify", path}, kHeapCap);
    EXPECT_EQ(verify.exit_code, 0) << verify.output.substr(0, 400);
    EXPECT_LT(verify.peak_rss_kib, std::min(bound, kMaxPeakKib));
  }
}

TEST_F(ParserLimits, GgufStringArraysAtTheLimitAreInspectedWithinBounds) {
  // 50 MB: 2^22 four-byte strings (each an 8-byte length and its bytes),
  // once a MetaValue and a std::string each (~500 MB).
  const auto short_strings = GgufOfFourByteStrings();
  const auto run = RunCliMeasured({"inspect", Write("short-strings.gguf", short_strings)}, kHeapCap);
  EXPECT_EQ(run.exit_code, 0) << run.output.substr(0, 400);
  EXPECT_NE(run.output.find(kFourByteStringsShown), std::string::npos) << run.output;
  EXPECT_LT(run.peak_rss_kib, kMaxPeakKib);
  // 64 MB of 30-byte tokens (once a heap block each as well).
  constexpr uint64_t m = kThirtyByteTokens;
  const auto long_strings = GgufOfThirtyByteTokens();
  ASSERT_LE(long_strings.size(), size_t{64} << 20);
  const std::string path = Write("long-strings.gguf", long_strings);
  const auto inspect = RunCliMeasured({"inspect", path}, kHeapCap);
  EXPECT_EQ(inspect.exit_code, 0) << inspect.output.substr(0, 400);
  EXPECT_NE(inspect.output.find(StrCat("string[", m, "] [\"", ThirtyByteToken(0), "\", \"token-1")),
            std::string::npos)
      << inspect.output;
  EXPECT_LT(inspect.peak_rss_kib, kMaxPeakKib);
  const auto verify = RunCliMeasured({"verify", path}, kHeapCap);
  EXPECT_EQ(verify.exit_code, 0) << verify.output.substr(0, 400);
  EXPECT_LT(verify.peak_rss_kib, kMaxPeakKib);
}

TEST_F(ParserLimits, BoltMetadataArrayAtTheLimitConvertsBothWays) {
  // The U8 array at the limit as a .bolt's metadata (packed varints in the
  // manifest): convert, inspect, verify, copy and export, each within the
  // bound (818 MB to inspect before), and back to the same GGUF. Read from
  // the wire into its packed bytes (format/metadata_wire.h): 15-22 MB
  // measured (110-118 MB as a protobuf message of 2^22 uint64).
  constexpr uint64_t n = format::kMaxMetadataArrayElements;
  const auto gguf = GgufOfOneArray("tokenizer.ggml.bytes", 0, n,
                                   [](Gguf& g, uint64_t k) { g.Put<uint8_t>(static_cast<uint8_t>(k * 7)); });
  const std::string in = Write("array.gguf", gguf);
  const std::string bolt = dir_ + "/array.bolt", copy = dir_ + "/copy.bolt", back = dir_ + "/back.gguf";
  const auto to_bolt = RunCliMeasured({"convert", in, "-o", bolt}, kHeapCap);
  EXPECT_EQ(to_bolt.exit_code, 0) << to_bolt.output;
  EXPECT_LT(to_bolt.peak_rss_kib, kBoltArrayPeakKib);
  const auto inspect = RunCliMeasured({"inspect", bolt}, kHeapCap);
  EXPECT_EQ(inspect.exit_code, 0) << inspect.output.substr(0, 400);
  EXPECT_NE(inspect.output.find("uint8[4194304] [0, 7, 14, 21, 28, 35, 42, 49, ...]"),
            std::string::npos)
      << inspect.output;
  EXPECT_LT(inspect.peak_rss_kib, kBoltArrayPeakKib);
  const auto verify = RunCliMeasured({"verify", bolt}, kHeapCap);
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
  EXPECT_LT(verify.peak_rss_kib, kBoltArrayPeakKib);
  const auto to_copy = RunCliMeasured({"convert", bolt, "-o", copy}, kHeapCap);
  EXPECT_EQ(to_copy.exit_code, 0) << to_copy.output;
  EXPECT_LT(to_copy.peak_rss_kib, kBoltArrayPeakKib);
  const auto to_gguf = RunCliMeasured({"convert", copy, "-o", back}, kHeapCap);
  EXPECT_EQ(to_gguf.exit_code, 0) << to_gguf.output;
  EXPECT_LT(to_gguf.peak_rss_kib, kBoltArrayPeakKib);
  EXPECT_EQ(ReadFileBytes(back), gguf);
}

// A string array as a .bolt's metadata: GGUF -> .bolt, then inspect,
// verify, .bolt -> GGUF (byte-identical to the input) and .bolt -> .bolt,
// each exit 0 within the bound. Entries are read from the wire into
// the packed form and written from it (format/metadata_wire.h): as protobuf
// messages, a std::string per element, these cost 317-439 MB.
class BoltStringArrays : public ParserLimits {
 protected:
  void ExpectEveryPathWithinBounds(const std::vector<uint8_t>& gguf, const std::string& shown) {
    const std::string in = Write("strings.gguf", gguf);
    const std::string bolt = dir_ + "/strings.bolt", copy = dir_ + "/copy.bolt", back = dir_ + "/back.gguf";
    auto expect_ok = [&](const testing::MeasuredCommand& run, const char* what) {
      EXPECT_EQ(run.exit_code, 0) << what << ": " << run.output.substr(0, 400);
      EXPECT_LT(run.peak_rss_kib, kMaxPeakKib) << what;
      // 1 s on one core is the target (0.1-0.6 s measured alone); wall time
      // on a shared machine waits for a core too.
      EXPECT_LT(run.seconds, 2.0) << what;
    };
    expect_ok(RunCliMeasured({"convert", in, "-o", bolt, "--no-fsync"}, kHeapCap), "GGUF -> .bolt");
    const auto inspect = RunCliMeasured({"inspect", bolt}, kHeapCap);
    expect_ok(inspect, "inspect");
    EXPECT_NE(inspect.output.find(shown), std::string::npos) << inspect.output.substr(0, 600);
    const auto verify = RunCliMeasured({"verify", bolt}, kHeapCap);
    expect_ok(verify, "verify");
    EXPECT_NE(verify.output.find(bolt + ": OK (0 tensors"), std::string::npos) << verify.output.substr(0, 400);
    expect_ok(RunCliMeasured({"convert", bolt, "-o", copy, "--no-fsync"}, kHeapCap), ".bolt -> .bolt");
    expect_ok(RunCliMeasured({"convert", copy, "-o", back, "--no-fsync"}, kHeapCap), ".bolt -> GGUF");
    EXPECT_EQ(ReadFileBytes(back), gguf);
  }
};

TEST_F(BoltStringArrays, FourByteStringsAtTheElementLimit) {
  // 2^22 four-byte strings: a 50 MB GGUF, a 25 MB manifest.
  const auto gguf = GgufOfFourByteStrings();
  ExpectEveryPathWithinBounds(gguf, std::string(kFourByteStringsShown));
}

TEST_F(BoltStringArrays, ThirtyByteTokensOf64MB) {
  // 1.7M 30-byte tokens: a 64 MB GGUF, a 56 MB manifest.
  const auto gguf = GgufOfThirtyByteTokens();
  ASSERT_LE(gguf.size(), size_t{64} << 20);
  ExpectEveryPathWithinBounds(gguf, StrCat("string[", kThirtyByteTokens, "] [\"", ThirtyByteToken(0), "\", \"token-1"));
}

TEST_F(ParserLimits, NestedMetadataArraysAtTheLimitConvertBothWays) {
  // 4.2 MB: 4096 U8 arrays of 1023 elements (2^22 elements with the outer
  // array's): children are values, their elements packed.
  constexpr uint64_t outer = 4096, inner = 1023;
  static_assert(outer * (inner + 1) == format::kMaxMetadataArrayElements);
  Gguf g;
  g.Header(0, 1).Str("nested").Put<int32_t>(9).Put<int32_t>(9).Put<uint64_t>(outer);
  for (uint64_t a = 0; a < outer; ++a) {
    g.Put<int32_t>(0).Put<uint64_t>(inner);
    for (uint64_t k = 0; k < inner; ++k) g.Put<uint8_t>(static_cast<uint8_t>(a + k));
  }
  g.PadTo(32);
  const std::string in = Write("nested.gguf", g.b);
  const std::string bolt = dir_ + "/nested.bolt", back = dir_ + "/back.gguf";
  const auto inspect = RunCliMeasured({"inspect", in}, kHeapCap);
  EXPECT_EQ(inspect.exit_code, 0) << inspect.output.substr(0, 400);
  EXPECT_NE(inspect.output.find("array[4096] [uint8[1023] [0, 1, 2, 3, 4, 5, 6, 7, ...], uint8[1023] [1, 2,"),
            std::string::npos)
      << inspect.output;
  EXPECT_LT(inspect.peak_rss_kib, kNumericArrayPeakKib);
  const auto to_bolt = RunCliMeasured({"convert", in, "-o", bolt}, kHeapCap);
  EXPECT_EQ(to_bolt.exit_code, 0) << to_bolt.output;
  EXPECT_LT(to_bolt.peak_rss_kib, kMaxPeakKib);
  const auto inspect_bolt = RunCliMeasured({"inspect", bolt}, kHeapCap);
  EXPECT_EQ(inspect_bolt.exit_code, 0) << inspect_bolt.output.substr(0, 400);
  EXPECT_NE(inspect_bolt.output.find("array[4096] [uint8[1023] [0, 1, 2,"), std::string::npos)
      << inspect_bolt.output;
  EXPECT_LT(inspect_bolt.peak_rss_kib, kMaxPeakKib);
  const auto to_gguf = RunCliMeasured({"convert", bolt, "-o", back}, kHeapCap);
  EXPECT_EQ(to_gguf.exit_code, 0) << to_gguf.output;
  EXPECT_LT(to_gguf.peak_rss_kib, kMaxPeakKib);
  EXPECT_EQ(ReadFileBytes(back), g.b);
}

TEST_F(ParserLimits, GgufMillionsOfTinyNestedArraysStayWithinBounds) {
  // 50 MB: 2^22 - 1 empty U8 arrays in one array (12 bytes each in the
  // file); 27 MB: 2^21 one-element arrays. Children are encoded into one
  // buffer (9 to 18 bytes each and an 8-byte end), not a MetaValue each
  // (56 bytes and a heap block: 284 and 343 MB).
  const uint64_t empty_children = format::kMaxMetadataArrayElements - 1;
  Gguf empty;
  empty.Header(0, 1).Str("n").Put<int32_t>(9).Put<int32_t>(9).Put<uint64_t>(empty_children);
  for (uint64_t k = 0; k < empty_children; ++k) empty.Put<int32_t>(0).Put<uint64_t>(0);
  empty.PadTo(32);
  const auto run = RunCliMeasured({"inspect", Write("empty-children.gguf", empty.b)}, kHeapCap);
  EXPECT_EQ(run.exit_code, 0) << run.output.substr(0, 400);
  EXPECT_NE(run.output.find("array[4194303] [uint8[0] [], uint8[0] []"), std::string::npos) << run.output;
  EXPECT_LT(run.peak_rss_kib, kMaxPeakKib);
  const uint64_t single_children = format::kMaxMetadataArrayElements / 2;
  Gguf single;
  single.Header(0, 1).Str("n").Put<int32_t>(9).Put<int32_t>(9).Put<uint64_t>(single_children);
  for (uint64_t k = 0; k < single_children; ++k) single.Put<int32_t>(4).Put<uint64_t>(1).Put<uint32_t>(k);
  single.PadTo(32);
  const auto inspect = RunCliMeasured({"inspect", Write("single-children.gguf", single.b)}, kHeapCap);
  EXPECT_EQ(inspect.exit_code, 0) << inspect.output.substr(0, 400);
  EXPECT_NE(inspect.output.find("array[2097152] [uint32[1] [0], uint32[1] [1], uint32[1] [2]"), std::string::npos)
      << inspect.output;
  EXPECT_LT(inspect.peak_rss_kib, kMaxPeakKib);
}

TEST_F(ParserLimits, GgufMillionTensorsAreListedWithinBounds) {
  // inspect of the 1M-tensor file above, its million lines made as printed.
  const auto run = RunCliMeasured({"inspect", Write("million-tensors.gguf", GgufOfEmptyTensors(format::kMaxTensors))},
                                  kHeapCap);
  EXPECT_EQ(run.exit_code, 0) << run.output.substr(0, 400);
  EXPECT_NE(run.output.find("tensors (1000000):"), std::string::npos) << run.output.substr(0, 400);
  EXPECT_NE(run.output.find("  t999999 "), std::string::npos);
  EXPECT_LT(run.peak_rss_kib, kGgufMillionTensorsPeakKib);
}

TEST_F(ParserLimits, GgufLongNamedTensorsOpenWithinBounds) {
  // 57 MB: 600k tensors of 63-byte names (GGUF's longest; 1M would be 90 MB,
  // past the 64 MB the bound is for). The names are views of the mapping.
  const std::string path = Write("long-names.gguf", GgufOfEmptyTensors(600000, 63));
  const auto run = RunCliMeasured({"verify", path}, kHeapCap);
  EXPECT_EQ(run.exit_code, 0) << run.output.substr(0, 400);
  EXPECT_NE(run.output.find("600000 tensors"), std::string::npos) << run.output.substr(0, 400);
  EXPECT_LT(run.peak_rss_kib, kGgufMillionTensorsPeakKib);
}

// Converting the 1M-tensor file holds, besides what opening costs, the
// output's declarations (80 bytes each for GGUF, 64 for safetensors, their
// shapes inline). GGUF: 249-254 MB measured (818 before), at the 256 MB
// target, bounded with room for the noise of a shared machine; safetensors:
// 216 MB measured (792 before; 268 MiB while its 55 MB JSON header was held
// whole and each declaration's shape was a heap block).
constexpr int64_t kGgufMillionTensorsToGgufPeakKib = 288 * 1024;
constexpr int64_t kGgufMillionTensorsToSafetensorsPeakKib = kMaxPeakKib;

TEST_F(ParserLimits, GgufMillionTensorsConvertToGgufWithinBounds) {
  const auto input = GgufOfEmptyTensors(format::kMaxTensors);
  const std::string in = Write("million-tensors.gguf", input), out = dir_ + "/out.gguf";
  const auto run = RunCliMeasured({"convert", in, "-o", out, "--no-fsync"}, kHeapCap);
  EXPECT_EQ(run.exit_code, 0) << run.output.substr(0, 400);
  EXPECT_NE(run.output.find("wrote " + out + " (1000000 tensors)"), std::string::npos) << run.output.substr(0, 400);
  EXPECT_EQ(ReadFileBytes(out), input);  // byte-identical
  EXPECT_LT(run.peak_rss_kib, kGgufMillionTensorsToGgufPeakKib);
}

TEST_F(ParserLimits, GgufMillionTensorsConvertToSafetensorsWithinBounds) {
  const std::string in = Write("million-tensors.gguf", GgufOfEmptyTensors(format::kMaxTensors));
  const std::string out = dir_ + "/out.safetensors";
  const auto run = RunCliMeasured({"convert", in, "-o", out, "--no-fsync"}, kHeapCap);
  EXPECT_EQ(run.exit_code, 0) << run.output.substr(0, 400);
  EXPECT_NE(run.output.find("wrote " + out + " (1000000 tensors)"), std::string::npos) << run.output.substr(0, 400);
  const auto bytes = ReadFileBytes(out);
  ASSERT_GT(bytes.size(), 8u);
  const std::string header(bytes.begin() + 8, bytes.end());
  EXPECT_NE(header.find("\"t999999\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}"), std::string::npos);
  EXPECT_LT(run.peak_rss_kib, kGgufMillionTensorsToSafetensorsPeakKib);
}

TEST_F(ParserLimits, SafetensorsShapeOf10MEntriesIsRefusedWhileParsed) {
  // 20 MB header: one tensor whose shape lists 10M dimensions (1.9 GB before).
  constexpr size_t n = 10'000'000;
  std::string header = "{\"x\":{\"dtype\":\"F32\",\"shape\":[";
  header.reserve(header.size() + 2 * n + 64);
  for (size_t i = 0; i < n; ++i) header += i ? ",1" : "1";
  header += "],\"data_offsets\":[0,4]}}";
  const uint64_t len = header.size();
  std::vector<uint8_t> file(8 + len + 4, 0);
  std::memcpy(file.data(), &len, 8);
  std::memcpy(file.data() + 8, header.data(), len);
  ExpectRefused(Write("long-shape.safetensors", file), {"header JSON", "more than 524288 values"});
}

TEST_F(ParserLimits, SafetensorsMetadataAtTheValueLimitIsAcceptedWithinBounds) {
  // The largest header the value limit lets through: the root, __metadata__
  // and 2^19 - 2 short strings (309 MB at 2^20 values, the limit's first value).
  constexpr size_t n = (size_t{1} << 19) - 2;
  std::string header = "{\"__metadata__\":{";
  for (size_t i = 0; i < n; ++i) header += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":\"\"";
  header += "}}";
  const uint64_t len = header.size();
  std::vector<uint8_t> file(8 + len, 0);
  std::memcpy(file.data(), &len, 8);
  std::memcpy(file.data() + 8, header.data(), len);
  const std::string path = Write("max-metadata.safetensors", file);
  // verify parses as inspect does, without printing half a million keys.
  const auto run = RunCliMeasured({"verify", path}, kHeapCap);
  EXPECT_EQ(run.exit_code, 0) << run.output.substr(0, 400);
  EXPECT_LT(run.peak_rss_kib, kMaxPeakKib);
  // One value more is refused.
  header.insert(header.size() - 2, ",\"one_more\":\"\"");
  const uint64_t len2 = header.size();
  file.assign(8 + len2, 0);
  std::memcpy(file.data(), &len2, 8);
  std::memcpy(file.data() + 8, header.data(), len2);
  ExpectRefused(Write("one-more.safetensors", file), {"header JSON", "more than 524288 values"});
}

TEST_F(ParserLimits, BoltManifestOf16MEmptyTensorsIsRefusedBeforeParsing) {
  // 32 MiB of 2-byte empty Tensor messages (2.3 GB before).
  constexpr size_t n = size_t{1} << 24;
  std::string extra;
  extra.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) extra += std::string("\x42\x00", 2);
  ExpectRefused(BoltWithExtraManifestFields("empty-tensors.bolt", extra),
                {"16777224 tensors exceed the limit of 1000000"});
}

TEST_F(ParserLimits, BoltManifestChunksPastTheReaderLimitAreRefused) {
  // One tensor, one stream, 2^22 + 1 empty chunks (8 MB of manifest).
  constexpr size_t n = (size_t{1} << 22) + 1;
  std::string chunks;
  chunks.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) chunks += std::string("\x4a\x00", 2);
  const std::string tensor = Field(1, "bomb") + Field(5, chunks);
  ExpectRefused(BoltWithExtraManifestFields("chunks.bolt", Field(8, tensor)),
                {"tensor \"bomb\"", "more than 4194304 chunks"});
}

TEST_F(ParserLimits, BoltMetadataArrayPastTheElementLimitIsRefused) {
  // A UINT8 array of 2^23 packed varints (8 MB): 0.9 GB as MetaValues.
  const std::string packed(size_t{1} << 23, '\0');
  const std::string array = Varint(1 << 3) + Varint(1) + Field(2, packed);     // element_type UINT8
  const std::string value = Varint(1 << 3) + Varint(13) + Field(8, array);     // type ARRAY
  const std::string entry = Field(1, "big") + Field(2, value);
  ExpectRefused(BoltWithExtraManifestFields("metadata-array.bolt", Field(7, entry)),
                {"metadata \"big\"", "more than 4194304 elements"});
}

TEST_F(ParserLimits, BoltManifestArraysNestedTooDeepAreRefused) {
  std::string array = Varint(1 << 3) + Varint(1);
  for (int d = 0; d < 9; ++d) array = Varint(1 << 3) + Varint(13) + Field(8, array);
  const std::string value = Varint(1 << 3) + Varint(13) + Field(8, array);
  ExpectRefused(BoltWithExtraManifestFields("deep.bolt", Field(7, Field(1, "deep") + Field(2, value))),
                {"metadata \"deep\"", "arrays nested deeper than 8"});
}

// .bolt files just inside the manifest limits: opening and copying them
// costs about the manifest's bytes (the reader parses one tensor record at
// a time; the writer serializes each record as it is added).
class BoltManifestBounds : public ParserLimits {
 protected:
  // A .bolt made by convert from a GGUF of one zero-size tensor, and its
  // manifest without the tensor; `record` that tensor's fields but its name.
  void SetUp() override {
    ParserLimits::SetUp();
    if (IsSkipped()) return;
    Gguf g;
    g.Header(1, 0).Str("t").Put<uint32_t>(1).Put<uint64_t>(0).Put<int32_t>(0).Put<uint64_t>(0);
    g.PadTo(32);
    const std::string base = dir_ + "/base.bolt";
    const auto run = testing::RunCli({"convert", Write("base.gguf", g.b), "-o", base});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    base_ = ReadFileBytes(base);
    head_ = testing::ManifestOf(base_);
    ASSERT_EQ(head_.tensors_size(), 1);
    v1::Tensor t = head_.tensors(0);
    t.clear_name();
    record_ = t.SerializeAsString();
    head_.clear_tensors();
  }
  // The base file with tensors t0..t{n-1}, each a copy of the base's one.
  std::string MillionTensors(size_t n) {
    std::string m = head_.SerializeAsString();
    m.reserve(m.size() + n * (record_.size() + 12));
    for (size_t i = 0; i < n; ++i) m += Field(8, Field(1, "t" + std::to_string(i)) + record_);
    return Write("million.bolt", testing::WithManifestBytes(base_, m));
  }
  std::vector<uint8_t> base_;
  v1::Manifest head_;
  std::string record_;
};

TEST_F(BoltManifestBounds, MillionTensorsAreInspectedAndVerifiedWithinBounds) {
  // 46 MB of manifest: 1.0 GB to open before the manifest was parsed one
  // tensor at a time, 444-527 MiB before the reader kept records.
  const std::string path = MillionTensors(format::kMaxTensors);
  const auto inspect = RunCliMeasured({"inspect", path}, kHeapCap);
  EXPECT_EQ(inspect.exit_code, 0) << inspect.output.substr(0, 400);
  EXPECT_NE(inspect.output.find("tensors (1000000):"), std::string::npos) << inspect.output.substr(0, 400);
  EXPECT_NE(inspect.output.find("  t999999 "), std::string::npos);
  EXPECT_LT(inspect.peak_rss_kib, kBoltMillionTensorsInspectPeakKib);
  const auto verify = RunCliMeasured({"verify", path}, kHeapCap);
  EXPECT_EQ(verify.exit_code, 0) << verify.output.substr(0, 400);
  EXPECT_NE(verify.output.find("OK (1000000 tensors"), std::string::npos) << verify.output.substr(0, 400);
  EXPECT_LT(verify.peak_rss_kib, kBoltMillionTensorsVerifyPeakKib);
}

TEST_F(BoltManifestBounds, MillionTensorsAreCopiedWithinBounds) {
  const std::string path = MillionTensors(format::kMaxTensors);
  const std::string out = dir_ + "/copy.bolt";
  const auto run = RunCliMeasured({"convert", path, "-o", out}, 2 * kHeapCap);
  EXPECT_EQ(run.exit_code, 0) << run.output.substr(0, 400);
  EXPECT_NE(run.output.find("(1000000 tensors)"), std::string::npos) << run.output.substr(0, 400);
  EXPECT_LT(run.peak_rss_kib, kBoltMillionTensorsCopyPeakKib);
  // The copy holds the same records (its manifest is written in field order).
  const v1::Manifest copy = testing::ManifestOf(ReadFileBytes(out));
  ASSERT_EQ(copy.tensors_size(), static_cast<int>(format::kMaxTensors));
  EXPECT_EQ(copy.tensors(999999).name(), "t999999");
  v1::Tensor last = copy.tensors(999999);
  last.clear_name();
  EXPECT_EQ(last.SerializeAsString(), record_);
}

TEST_F(BoltManifestBounds, MillionTensorsAreConvertedToGgufWithinBounds) {
  // 658 MiB before the reader kept records instead of TensorInfos.
  const std::string path = MillionTensors(format::kMaxTensors);
  const std::string out = dir_ + "/million.gguf";
  const auto run = RunCliMeasured({"convert", path, "-o", out}, kHeapCap);
  EXPECT_EQ(run.exit_code, 0) << run.output.substr(0, 400);
  EXPECT_NE(run.output.find("(1000000 tensors)"), std::string::npos) << run.output.substr(0, 400);
  EXPECT_LT(run.peak_rss_kib, kBoltMillionTensorsToGgufPeakKib);
  // The GGUF holds every tensor, the last one last (its info is the
  // table's last entry: name, 1 dimension of 0, F32, its data offset).
  const auto gguf = ReadFileBytes(out);
  uint64_t n_tensors = 0;
  ASSERT_GT(gguf.size(), 24u);
  std::memcpy(&n_tensors, gguf.data() + 8, 8);
  EXPECT_EQ(n_tensors, format::kMaxTensors);
  const std::string last = "t999999";
  const std::string_view text(reinterpret_cast<const char*>(gguf.data()), gguf.size());
  EXPECT_NE(text.rfind(last), std::string_view::npos);
}

TEST_F(BoltManifestBounds, StreamOfTheChunkLimitIsVerifiedWithinBounds) {
  // One empty tensor whose stream has kMaxManifestChunks empty chunks, each
  // with its checksum (54 MB of manifest; 507 MB to open before).
  const std::string chunk =
      Field(9, Varint(7 << 3 | 1) + std::string(8, '\0'));  // xxh3, patched below
  uint64_t empty_xxh3 = format::Xxh3({});
  std::string c = chunk;
  std::memcpy(c.data() + c.size() - 8, &empty_xxh3, 8);
  v1::Tensor t;
  t.ParseFromString(record_);
  t.set_name("many");
  std::string m = head_.SerializeAsString();
  std::string stream = t.streams(0).SerializeAsString();
  stream.reserve(stream.size() + c.size() * format::kMaxManifestChunks);
  for (uint64_t i = 0; i < format::kMaxManifestChunks; ++i) stream += c;
  t.clear_streams();
  m += Field(8, t.SerializeAsString() + Field(5, stream));
  const std::string path = Write("chunks.bolt", testing::WithManifestBytes(base_, m));
  const auto run = RunCliMeasured({"verify", path}, kHeapCap);
  EXPECT_EQ(run.exit_code, 0) << run.output.substr(0, 400);
  EXPECT_NE(run.output.find("OK (1 tensors"), std::string::npos) << run.output.substr(0, 400);
  EXPECT_LT(run.peak_rss_kib, kBoltChunkLimitPeakKib);
}

TEST(JsonLimits, ValuesPastMaxValuesAreRefused) {
  io::JsonLimits limits;
  limits.max_values = 4;  // the array and three elements
  EXPECT_TRUE(io::ParseJson("[1,2,3]", limits).ok());
  auto s = io::ParseJson("[1,2,3,4]", limits);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.status().message().find("byte 7: more than 4 values"), std::string::npos) << s.status();
  limits.max_values = 3;  // members count too
  EXPECT_FALSE(io::ParseJson("{\"a\":{\"b\":[1]}}", limits).ok());
}

}  // namespace
}  // namespace boltpack
