// A pass over a GGUF key/value section that builds nothing: how many array
// elements its values hold, so that the reader refuses a file past its limit
// before it builds the first MetaValue (112 bytes each, from as little as 1
// byte of file: 4M of them were 470 MB before the limit was reached).
#ifndef BOLTPACK_IO_GGUF_KV_SCAN_H_
#define BOLTPACK_IO_GGUF_KV_SCAN_H_

#include <cstdint>
#include <string>

#include "absl/types/span.h"

namespace boltpack::io {

struct GgufArrayCount {
  uint64_t elements = 0;  // in all arrays, nested ones included
  std::string key;        // the key whose value went past `limit`, if one did
};

// Counts the array elements of the first `n_kv` key/values at the start of
// `kv`, stopping at the first whose count goes past `limit`. Malformed or
// truncated data ends the count where it is: the reader reports it.
GgufArrayCount CountGgufArrayElements(absl::Span<const uint8_t> kv, uint64_t n_kv, uint64_t limit);

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_GGUF_KV_SCAN_H_
