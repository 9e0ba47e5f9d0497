// Typed metadata as JSON text, for `inspect --json` and for safetensors
// `__metadata__` (which holds strings only).
#ifndef BOLTPACK_IO_METADATA_JSON_H_
#define BOLTPACK_IO_METADATA_JSON_H_

#include <string>

#include "boltpack/types.h"

namespace boltpack::io {

// Numbers as JSON numbers (non-finite floats as the strings "nan", "inf",
// "-inf"), strings quoted, arrays as JSON arrays.
std::string MetaValueToJson(const MetaValue& value);
// Short human form for the text listing: long arrays and strings elided.
std::string MetaValueSummary(const MetaValue& value);

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_METADATA_JSON_H_
