// A small strict JSON (RFC 8259) DOM for untrusted input: safetensors
// headers, shard indexes and config files. No exceptions; every error names
// the byte offset and what is wrong. Objects keep their key order (a vector
// of pairs, because formats such as safetensors give order a meaning) and a
// duplicate key is an error rather than "last one wins", so two readers can
// never disagree about what a file says.
#ifndef BOLTPACK_IO_JSON_H_
#define BOLTPACK_IO_JSON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace boltpack::io {

struct JsonLimits {
  // Nesting depth of arrays/objects; bounds the parser's recursion (and the
  // DOM destructor's), so hostile input cannot overflow the stack.
  int max_depth = 64;
  // Whole-document size; callers with their own bound (a 100 MB safetensors
  // header) pass it here too.
  uint64_t max_bytes = uint64_t{256} << 20;
  // Values in the document (every array element and member counts). A value
  // costs 112 bytes in the DOM (144 as a member) whatever its text ("0," is
  // 2 bytes), and a growing array briefly holds 1.5 times that, so the byte
  // limit alone would let 100 MB of "[0,0,..." take 5.6 GB. 2^19 values peak
  // near 160 MB: a safetensors header of about 65K tensors (7-8 values each).
  uint64_t max_values = uint64_t{1} << 19;
};

enum class JsonType : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
std::string_view JsonTypeName(JsonType type);

class JsonValue {
 public:
  using Member = std::pair<std::string, JsonValue>;

  JsonValue() = default;  // null

  static JsonValue Null() { return JsonValue(); }
  static JsonValue Bool(bool b);
  static JsonValue String(std::string s);
  static JsonValue Uint(uint64_t v);
  static JsonValue Int(int64_t v);
  // Non-finite values have no JSON spelling; they serialize as null.
  static JsonValue Double(double v);
  static JsonValue Array(std::vector<JsonValue> elements = {});
  static JsonValue Object(std::vector<Member> members = {});

  JsonType type() const { return type_; }
  bool is_null() const { return type_ == JsonType::kNull; }
  bool is_bool() const { return type_ == JsonType::kBool; }
  bool is_number() const { return type_ == JsonType::kNumber; }
  bool is_string() const { return type_ == JsonType::kString; }
  bool is_array() const { return type_ == JsonType::kArray; }
  bool is_object() const { return type_ == JsonType::kObject; }

  bool bool_value() const { return bool_; }
  // kString: the decoded UTF-8 text.
  const std::string& string_value() const { return text_; }
  // kNumber: the number exactly as written in the source (or as formatted
  // for constructed numbers), so no precision is ever lost on a rewrite.
  const std::string& number_text() const { return text_; }
  // True when the source had no fraction and no exponent ("12", "-3").
  bool is_integer() const { return is_integer_; }
  // Set only when the value is an integer (no fraction/exponent) that fits.
  std::optional<uint64_t> uint64_value() const;
  std::optional<int64_t> int64_value() const;
  // Nearest double; +-inf when the magnitude overflows, 0 when it underflows.
  double double_value() const { return double_; }

  const std::vector<JsonValue>& array() const { return array_; }
  std::vector<JsonValue>& mutable_array() { return array_; }
  const std::vector<Member>& object() const { return object_; }
  std::vector<Member>& mutable_object() { return object_; }
  // First member named `key` (linear: objects here are small or walked once).
  const JsonValue* Find(std::string_view key) const;

  friend bool operator==(const JsonValue& a, const JsonValue& b);

 private:
  friend class JsonParser;
  JsonType type_ = JsonType::kNull;
  bool bool_ = false;
  bool is_integer_ = false;
  bool has_u64_ = false;
  bool has_i64_ = false;
  uint64_t u64_ = 0;
  int64_t i64_ = 0;
  double double_ = 0;
  std::string text_;
  std::vector<JsonValue> array_;
  std::vector<Member> object_;
};

// Parses one JSON value (any type) surrounded by optional whitespace.
// Errors: InvalidArgument "byte N: <what>" (ResourceExhausted for limits).
absl::StatusOr<JsonValue> ParseJson(std::string_view text, const JsonLimits& limits = {});

// The JSON object in file `path`: at most limits.max_bytes read (a regular
// file only), parsed with `limits`; every error names the file, and a
// document that is not an object is InvalidArgument. (io/json_file.cc)
absl::StatusOr<JsonValue> ReadJsonObjectFile(const std::string& path, const JsonLimits& limits = {});

// `s` as a JSON string literal, quotes included, escaped the way serde_json
// (and so Hugging Face's safetensors writer) does: only '"', '\\' and control
// characters; \b \t \n \f \r short forms, other controls as lowercase \u00xx.
// Valid UTF-8 passes through; a byte that is not part of well-formed UTF-8
// becomes \ufffd (U+FFFD), so the output is always valid JSON (writers of
// files should refuse such a string rather than change it).
std::string JsonQuote(std::string_view s);
void AppendJsonQuoted(std::string_view s, std::string* out);

// Compact serialization (no spaces), members in stored order.
std::string SerializeJson(const JsonValue& value);
void AppendJson(const JsonValue& value, std::string* out);

// Strict UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF.
bool IsValidUtf8(std::string_view s);
// Offset of the first invalid byte, or nullopt when `s` is valid.
std::optional<size_t> FirstInvalidUtf8(std::string_view s);

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_JSON_H_
