#include "io/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace boltpack::io {
namespace {

std::string ErrorOf(std::string_view text, const JsonLimits& limits = {}) {
  absl::StatusOr<JsonValue> v = ParseJson(text, limits);
  EXPECT_FALSE(v.ok()) << "parsed: " << text;
  return v.ok() ? std::string() : std::string(v.status().message());
}

TEST(JsonTest, ParsesScalars) {
  auto v = ParseJson(" true ");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->is_bool());
  EXPECT_TRUE(v->bool_value());
  v = ParseJson("false");
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->bool_value());
  v = ParseJson("null");
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->is_null());
  v = ParseJson("\"hi\"");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->string_value(), "hi");
}

TEST(JsonTest, ObjectsKeepKeyOrder) {
  auto v = ParseJson(R"({"b":1,"a":2,"c":{"z":[],"y":{}}})");
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_TRUE(v->is_object());
  ASSERT_EQ(v->object().size(), 3u);
  EXPECT_EQ(v->object()[0].first, "b");
  EXPECT_EQ(v->object()[1].first, "a");
  EXPECT_EQ(v->object()[2].first, "c");
  ASSERT_NE(v->Find("c"), nullptr);
  EXPECT_EQ(v->Find("c")->object()[0].first, "z");
  EXPECT_EQ(v->Find("missing"), nullptr);
  EXPECT_EQ(SerializeJson(*v), R"({"b":1,"a":2,"c":{"z":[],"y":{}}})");
}

TEST(JsonTest, DuplicateKeyIsAnErrorNamingTheKey) {
  std::string err = ErrorOf(R"({"a":1,"dup":2,"dup":3})");
  EXPECT_NE(err.find("duplicate key \"dup\""), std::string::npos) << err;
  EXPECT_NE(err.find("byte 15"), std::string::npos) << err;
  // Large objects take the hashed path; the check must still fire.
  std::string big = "{";
  for (int i = 0; i < 100; ++i) big += "\"k" + std::to_string(i) + "\":0,";
  big += "\"k42\":1}";
  err = ErrorOf(big);
  EXPECT_NE(err.find("duplicate key \"k42\""), std::string::npos) << err;
}

TEST(JsonTest, Integers) {
  auto v = ParseJson("18446744073709551615");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->uint64_value(), std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(v->int64_value().has_value());
  EXPECT_TRUE(v->is_integer());

  v = ParseJson("18446744073709551616");  // 2^64: no exact integer, still a double
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->uint64_value().has_value());
  EXPECT_DOUBLE_EQ(v->double_value(), 18446744073709551616.0);
  EXPECT_EQ(v->number_text(), "18446744073709551616");

  v = ParseJson("-9223372036854775808");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->int64_value(), std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(v->uint64_value().has_value());

  v = ParseJson("-0");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->int64_value(), 0);

  v = ParseJson("1.0");
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->is_integer());
  EXPECT_FALSE(v->uint64_value().has_value());
  EXPECT_EQ(v->number_text(), "1.0");
}

TEST(JsonTest, Doubles) {
  auto v = ParseJson("-12.5e-1");
  ASSERT_TRUE(v.ok());
  EXPECT_DOUBLE_EQ(v->double_value(), -1.25);
  v = ParseJson("1E+2");
  ASSERT_TRUE(v.ok());
  EXPECT_DOUBLE_EQ(v->double_value(), 100.0);
  // Out of double range: kept (RFC 8259 allows it), as inf or 0, text intact.
  v = ParseJson("1e400");
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(std::isinf(v->double_value()));
  EXPECT_EQ(v->number_text(), "1e400");
  v = ParseJson("-0.0001e-400");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->double_value(), 0.0);
  EXPECT_EQ(SerializeJson(JsonValue::Double(0.1)), "0.1");
  EXPECT_EQ(SerializeJson(JsonValue::Double(NAN)), "null");
}

TEST(JsonTest, NumberSyntaxErrors) {
  EXPECT_NE(ErrorOf("01").find("leading zero"), std::string::npos);
  EXPECT_NE(ErrorOf("1.").find("digit after '.'"), std::string::npos);
  EXPECT_NE(ErrorOf("1e").find("exponent"), std::string::npos);
  EXPECT_NE(ErrorOf("-").find("digit"), std::string::npos);
  EXPECT_NE(ErrorOf("+1").find("expected a value"), std::string::npos);
  EXPECT_NE(ErrorOf(".5").find("expected a value"), std::string::npos);
  EXPECT_FALSE(ParseJson("NaN").ok());
  EXPECT_FALSE(ParseJson("Infinity").ok());
  EXPECT_FALSE(ParseJson("0x10").ok());
}

TEST(JsonTest, StringEscapes) {
  auto v = ParseJson(R"("a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00")");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->string_value(), "a\"b\\c/d\b\f\n\r\tA\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  v = ParseJson(R"("\u0000")");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->string_value(), std::string(1, '\0'));
}

TEST(JsonTest, StringErrors) {
  EXPECT_NE(ErrorOf(R"("\ud83d")").find("unpaired high surrogate"), std::string::npos);
  EXPECT_NE(ErrorOf(R"("\ud83dx")").find("unpaired high surrogate"), std::string::npos);
  EXPECT_NE(ErrorOf(R"("\ud83d\u0041")").find("low surrogate"), std::string::npos);
  EXPECT_NE(ErrorOf(R"("\ude00")").find("unpaired low surrogate"), std::string::npos);
  EXPECT_NE(ErrorOf(R"("\u12g4")").find("invalid hex digit"), std::string::npos);
  EXPECT_NE(ErrorOf(R"("\x")").find("invalid escape"), std::string::npos);
  EXPECT_NE(ErrorOf("\"a\nb\"").find("unescaped control character"), std::string::npos);
  EXPECT_NE(ErrorOf("\"abc").find("unterminated string"), std::string::npos);
  // Invalid UTF-8: stray continuation, overlong, surrogate, past U+10FFFF, truncated.
  for (std::string bad : {"\"\x80\"", "\"\xc0\xaf\"", "\"\xe0\x80\xaf\"", "\"\xed\xa0\x80\"",
                          "\"\xf4\x90\x80\x80\"", "\"\xf5\x80\x80\x80\"", "\"\xe2\x82\""}) {
    std::string err = ErrorOf(bad);
    EXPECT_NE(err.find("invalid UTF-8"), std::string::npos) << err;
  }
  EXPECT_NE(ErrorOf("\"ok\" \xff").find("after the JSON value"), std::string::npos);
}

TEST(JsonTest, StructureErrorsNameTheOffset) {
  EXPECT_EQ(ErrorOf("[1,]"), "byte 3: unexpected ']', expected a value");
  EXPECT_EQ(ErrorOf("{\"a\" 1}"), "byte 5: unexpected '1', expected ':' after an object key");
  EXPECT_EQ(ErrorOf("{1:2}"), "byte 1: unexpected '1', expected a string key");
  EXPECT_EQ(ErrorOf("[1 2]"), "byte 3: unexpected '2', expected ',' or ']' in array");
  EXPECT_EQ(ErrorOf("{\"a\":1"), "byte 6: unexpected end of input, expected ',' or '}' in object");
  EXPECT_EQ(ErrorOf(""), "byte 0: unexpected end of input, expected a value");
  EXPECT_EQ(ErrorOf("{} {}"), "byte 3: unexpected '{' after the JSON value");
  EXPECT_NE(ErrorOf("tru").find("invalid literal"), std::string::npos);
  EXPECT_NE(ErrorOf("\xef\xbb\xbf{}").find("byte 0"), std::string::npos);  // no BOM
}

TEST(JsonTest, DepthLimit) {
  std::string ok(64, '[');
  ok += std::string(64, ']');
  EXPECT_TRUE(ParseJson(ok).ok());
  std::string deep(65, '[');
  deep += std::string(65, ']');
  absl::StatusOr<JsonValue> v = ParseJson(deep);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(v.status().message().find("deeper than the limit of 64"), std::string::npos);
  // A million brackets must fail cleanly, not overflow the stack.
  EXPECT_FALSE(ParseJson(std::string(1'000'000, '[')).ok());
  JsonLimits tight;
  tight.max_depth = 2;
  EXPECT_TRUE(ParseJson("[[1]]", tight).ok());
  EXPECT_FALSE(ParseJson("[[[1]]]", tight).ok());
}

TEST(JsonTest, SizeLimit) {
  JsonLimits limits;
  limits.max_bytes = 4;
  absl::StatusOr<JsonValue> v = ParseJson("[1,2]", limits);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(JsonTest, QuoteMatchesSerdeJson) {
  EXPECT_EQ(JsonQuote("plain"), "\"plain\"");
  EXPECT_EQ(JsonQuote("q\"b\\s/"), R"("q\"b\\s/")");
  EXPECT_EQ(JsonQuote("\b\f\n\r\t"), R"("\b\f\n\r\t")");
  EXPECT_EQ(JsonQuote(std::string("\x01\x1f\x7f", 3)), "\"\\u0001\\u001f\x7f\"");
  EXPECT_EQ(JsonQuote("\xc3\xa9"), "\"\xc3\xa9\"");  // non-ASCII passes through
  EXPECT_EQ(JsonQuote(std::string_view("\0", 1)), R"("\u0000")");
}

TEST(JsonTest, RoundTripThroughSerializer) {
  const std::string docs[] = {
      R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})",
      R"([1,-2,3.5e10,true,false,null,"s\n\u0001",[],{}])",
      R"("\ud83d\ude00")",
  };
  for (const std::string& doc : docs) {
    auto v = ParseJson(doc);
    ASSERT_TRUE(v.ok()) << v.status();
    std::string out = SerializeJson(*v);
    auto again = ParseJson(out);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*v, *again) << out;
  }
  EXPECT_EQ(SerializeJson(*ParseJson(docs[0])), docs[0]);
}

TEST(JsonTest, ConstructedValues) {
  JsonValue obj = JsonValue::Object({{"u", JsonValue::Uint(7)},
                                     {"i", JsonValue::Int(-3)},
                                     {"s", JsonValue::String("x")},
                                     {"a", JsonValue::Array({JsonValue::Bool(true), JsonValue()})}});
  EXPECT_EQ(SerializeJson(obj), R"({"u":7,"i":-3,"s":"x","a":[true,null]})");
  EXPECT_EQ(obj.Find("u")->uint64_value(), 7u);
  EXPECT_EQ(obj.Find("i")->int64_value(), -3);
}

TEST(JsonTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("abc\xc3\xa9\xf0\x9f\x98\x80"));
  EXPECT_EQ(FirstInvalidUtf8("ab\xff"), 2u);
  EXPECT_EQ(FirstInvalidUtf8("ab\xc3"), 2u);
  EXPECT_FALSE(IsValidUtf8("\xed\xbf\xbf"));  // surrogate U+DFFF
  EXPECT_TRUE(IsValidUtf8("\xf4\x8f\xbf\xbf"));  // U+10FFFF
}

TEST(JsonTest, ParsesShippedConfig) {
  // testdata/ holds a real config.json; it must parse.
  std::vector<uint8_t> bytes =
      boltpack::testing::ReadFileBytes(boltpack::testing::SourceDir() + "/testdata/tinystories-656k/config.json");
  std::string text(bytes.begin(), bytes.end());
  auto v = ParseJson(text);
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_TRUE(v->is_object());
  EXPECT_NE(v->Find("hidden_size"), nullptr);
}

}  // namespace
}  // namespace boltpack::io
