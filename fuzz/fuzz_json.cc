// libFuzzer target for the strict JSON parser: parse, and when the input is
// accepted, check that serializing and parsing again gives the same value.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "io/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  boltpack::io::JsonLimits limits;
  limits.max_depth = 32;
  limits.max_values = 1024;  // so small inputs reach the value limit too
  auto value = boltpack::io::ParseJson(text, limits);
  if (!value.ok()) return 0;
  std::string out = boltpack::io::SerializeJson(*value);
  // Accepted input must re-serialize to valid UTF-8 that parses back equal.
  if (!boltpack::io::IsValidUtf8(out)) __builtin_trap();
  auto again = boltpack::io::ParseJson(out, limits);
  if (!again.ok() || !(*again == *value)) __builtin_trap();
  // Compact output is a fixed point.
  if (boltpack::io::SerializeJson(*again) != out) __builtin_trap();
  return 0;
}
