// Strings read from a file are escaped where bolt-pack prints them
// (common/escape.h): inspect's text output, and the messages that name a
// tensor or key, which stay whole when a name holds a NUL byte.
#include "common/escape.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::RunCli;

bool Has(const testing::CommandResult& r, std::string_view text) { return r.output.find(text) != std::string::npos; }

TEST(Escape, ControlBytesNulDelAndInvalidUtf8AreHex) {
  const char raw[] = "a\x1b[2Jb\0c\x7f\xff|\xc3\xa9|\xc2\x9b|\xe2\x82\xac";
  const std::string s(raw, sizeof(raw) - 1);
  EXPECT_EQ(EscapeForDisplay(s), "a\\x1b[2Jb\\x00c\\x7f\\xff|\xc3\xa9|\\xc2\\x9b|\xe2\x82\xac");
  // Overlong, surrogate, past U+10FFFF, stray continuation, truncated.
  EXPECT_EQ(EscapeForDisplay("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(EscapeForDisplay("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(EscapeForDisplay("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
  EXPECT_EQ(EscapeForDisplay("\x80z"), "\\x80z");
  EXPECT_EQ(EscapeForDisplay("z\xe2\x82"), "z\\xe2\\x82");
  EXPECT_EQ(EscapeForDisplay("blk.0.attn_q.weight \xf0\x9f\x98\x80"), "blk.0.attn_q.weight \xf0\x9f\x98\x80");
}

TEST(Escape, QuoteCutsAtACharacterBoundary) {
  EXPECT_EQ(QuoteForDisplay("a\nb"), "\"a\\x0ab\"");
  EXPECT_EQ(QuoteForDisplay("abcdef", 4), "\"abcd\"...");
  EXPECT_EQ(QuoteForDisplay("ab\xc3\xa9z", 3), "\"ab\"...");
  EXPECT_EQ(QuoteForDisplay("abc", 3), "\"abc\"");
}

TEST(Escape, JsonQuoteKeepsJsonValid) {
  EXPECT_EQ(io::JsonQuote(std::string("a\x1b\0\x7f", 4)), "\"a\\u001b\\u0000\x7f\"");
  EXPECT_EQ(io::JsonQuote("x\xffy\xc3\xa9"), "\"x\\ufffdy\xc3\xa9\"");
  EXPECT_TRUE(io::ParseJson(io::JsonQuote("\xc0\xaf\xed\xa0\x80\xe2\x82")).ok());
}

// A GGUF v3 file written byte by byte (bolt-pack's writer may refuse such
// names): string metadata and F32 tensors of 4 elements.
class RawGguf {
 public:
  void Key(const std::string& key, const std::string& value) { kv_.push_back({key, value}); }
  void Tensor(const std::string& name) { tensors_.push_back(name); }
  std::vector<uint8_t> Bytes() const {
    std::vector<uint8_t> b;
    auto u32 = [&](uint32_t v) { for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i))); };
    auto u64 = [&](uint64_t v) { for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i))); };
    auto str = [&](const std::string& s) { u64(s.size()); b.insert(b.end(), s.begin(), s.end()); };
    for (char c : std::string("GGUF")) b.push_back(static_cast<uint8_t>(c));
    u32(3);
    u64(tensors_.size());
    u64(kv_.size());
    for (const auto& [k, v] : kv_) {
      str(k);
      u32(8);  // GGUF_TYPE_STRING
      str(v);
    }
    for (size_t i = 0; i < tensors_.size(); ++i) {
      str(tensors_[i]);
      u32(1);
      u64(4);
      u32(0);       // F32
      u64(i * 32);  // 16 bytes each, aligned to 32
    }
    while (b.size() % 32) b.push_back(0);
    b.resize(b.size() + 32 * tensors_.size(), 0);
    return b;
  }

 private:
  std::vector<std::pair<std::string, std::string>> kv_;
  std::vector<std::string> tensors_;
};

TEST(Escape, InspectTextShowsGgufNamesKeysAndValuesEscaped) {
  RawGguf g;
  g.Key("general.architecture", "llama");
  g.Key("x.title\x1b]0;pwned\x07", std::string("v\x1b[31m\0\xff", 8));
  g.Tensor("w\x1b[2J.weight");
  const std::string dir = MakeTempDir();
  testing::WriteFileBytes(dir + "/esc.gguf", g.Bytes());
  auto r = RunCli({"inspect", dir + "/esc.gguf"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\0'), std::string::npos);
  EXPECT_TRUE(Has(r, "x.title\\x1b]0;pwned\\x07")) << r.output;
  EXPECT_TRUE(Has(r, "\"v\\x1b[31m\\x00\\xff\"")) << r.output;
  EXPECT_TRUE(Has(r, "  w\\x1b[2J.weight ")) << r.output;
  // --json stays valid JSON: control bytes as \u00XX, invalid UTF-8 as U+FFFD.
  auto j = RunCli({"inspect", dir + "/esc.gguf", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.output;
  EXPECT_TRUE(io::ParseJson(j.output).ok()) << j.output;
  EXPECT_TRUE(Has(j, "\"w\\u001b[2J.weight\"")) << j.output;
  EXPECT_TRUE(Has(j, "\"v\\u001b[31m\\u0000\\ufffd\"")) << j.output;

  // A name that is not UTF-8: shown escaped, or (by a reader that refuses
  // such names) named whole in the error.
  RawGguf u;
  u.Key("general.architecture", "llama");
  u.Tensor("u\xff.weight");
  testing::WriteFileBytes(dir + "/ff.gguf", u.Bytes());
  r = RunCli({"inspect", dir + "/ff.gguf"});
  EXPECT_EQ(r.output.find('\xff'), std::string::npos) << r.output;
  EXPECT_TRUE(Has(r, r.exit_code == 0 ? "  u\\xff.weight " : "u\\xff.weight")) << r.output;

  // A .bolt (converted from the first file) keeps the names: escaped too.
  auto c = RunCli({"convert", dir + "/esc.gguf", "-o", dir + "/esc.bolt"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  r = RunCli({"inspect", dir + "/esc.bolt"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  EXPECT_TRUE(Has(r, "x.title\\x1b]0;pwned\\x07")) << r.output;
  EXPECT_TRUE(Has(r, "  w\\x1b[2J.weight ")) << r.output;
}

TEST(Escape, ErrorNamingATensorWithANulByteIsWhole) {
  // GGUF: the parser refuses the name, naming it.
  RawGguf g;
  g.Key("general.architecture", "llama");
  g.Tensor(std::string("a\x1b\0b.weight", 11));
  const std::string dir = MakeTempDir();
  testing::WriteFileBytes(dir + "/nul.gguf", g.Bytes());
  auto r = RunCli({"inspect", dir + "/nul.gguf"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Has(r, "tensor \"a\\x1b\\x00b.weight\": name holds a NUL byte")) << r.output;

  // .bolt: the spec's invalid vector "bias\0x" is refused at open, whole.
  r = RunCli({"inspect", testing::SourceDir() + "/spec/vectors/invalid/tensor_name_nul.bolt"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Has(r, "\"bias\\x00x\" contains a NUL byte")) << r.output;

  // safetensors accepts the name ("\u0000" in its JSON); a .bolt cannot
  // hold it, and the message says so after the NUL.
  std::string header = "{\"a\\u0000\\u001bz\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
  while ((header.size() + 8) % 8) header += ' ';
  std::vector<uint8_t> st(8);
  for (int i = 0; i < 8; ++i) st[i] = static_cast<uint8_t>(header.size() >> (8 * i));
  st.insert(st.end(), header.begin(), header.end());
  st.resize(st.size() + 16, 0);
  testing::WriteFileBytes(dir + "/nul.safetensors", st);
  r = RunCli({"convert", dir + "/nul.safetensors", "-o", dir + "/nul.bolt"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  // Refused at import, naming the input (format/output_rules.h), the name whole.
  EXPECT_TRUE(Has(r, "nul.safetensors: tensor name \"a\\x00\\x1bz\" contains a NUL byte")) << r.output;
}

}  // namespace
}  // namespace boltpack
