// Protobuf wire-format pieces (spec/boltpack.proto), for tests that build
// manifests no writer makes: counts past the limits, odd wire forms.
#ifndef BOLTPACK_TESTS_PROTO_WIRE_H_
#define BOLTPACK_TESTS_PROTO_WIRE_H_

#include <cstdint>
#include <string>

namespace boltpack::testing {

inline std::string Varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}
// A length-delimited field (wire type 2).
inline std::string Field(uint32_t number, const std::string& payload) {
  return Varint(uint64_t{number} << 3 | 2) + Varint(payload.size()) + payload;
}
// A varint field (wire type 0).
inline std::string VarintField(uint32_t number, uint64_t v) { return Varint(uint64_t{number} << 3) + Varint(v); }

}  // namespace boltpack::testing

#endif  // BOLTPACK_TESTS_PROTO_WIRE_H_
