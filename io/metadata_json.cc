#include "io/metadata_json.h"

#include <cmath>

#include "common/escape.h"
#include "common/str_cat.h"
#include "io/json.h"

namespace boltpack::io {
namespace {

std::string FloatJson(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  return StrCat(v);
}

// Element i of array `v`, without a copy of a string or nested element.
std::string ElementToJson(const MetaValue& v, size_t i) {
  if (v.element_type == ValueType::kString) return io::JsonQuote(v.string_element(i));
  if (ValueTypeWidth(v.element_type) == 0) return MetaValueToJson(v.child(i));
  return MetaValueToJson(v.element(i));
}

}  // namespace

std::string MetaValueToJson(const MetaValue& v) {
  switch (v.type) {
    case ValueType::kUint8: case ValueType::kUint16: case ValueType::kUint32: case ValueType::kUint64:
      return StrCat(v.u);
    case ValueType::kInt8: case ValueType::kInt16: case ValueType::kInt32: case ValueType::kInt64:
      return StrCat(v.i);
    case ValueType::kFloat32: return FloatJson(v.f32);
    case ValueType::kFloat64: return FloatJson(v.f64);
    case ValueType::kBool: return v.b ? "true" : "false";
    case ValueType::kString: return io::JsonQuote(v.s);
    case ValueType::kArray: {
      std::string out = "[";
      for (size_t i = 0; i < v.array_size(); ++i) {
        if (i > 0) out += ",";
        out += ElementToJson(v, i);
      }
      return out + "]";
    }
    default: return "null";
  }
}

std::string MetaValueSummary(const MetaValue& v) {
  constexpr size_t kMaxShown = 8;
  if (v.type == ValueType::kString) {
    // Shown on a terminal: control bytes and invalid UTF-8 as \xNN.
    return v.s.size() > 80 ? QuoteForDisplay(v.s, 77) : QuoteForDisplay(v.s);
  }
  if (v.type != ValueType::kArray) return MetaValueToJson(v);
  std::string out = StrCat(ValueTypeName(v.element_type), "[", v.array_size(), "] [");
  for (size_t i = 0; i < v.array_size() && i < kMaxShown; ++i) {
    if (i > 0) out += ", ";
    out += MetaValueSummary(v.element(i));
  }
  if (v.array_size() > kMaxShown) out += ", ...";
  return out + "]";
}

}  // namespace boltpack::io
