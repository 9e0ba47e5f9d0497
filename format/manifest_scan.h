// A bound on the work of parsing a manifest, taken before it is parsed.
//
// Protobuf builds every repeated record it reads: a 2-byte empty Tensor
// message becomes a ~140-byte object, so a 32 MiB manifest of them cost
// 2.3 GB of memory before validation ([C-6.13.9]) could count them. This
// pass reads the wire format once, builds nothing, and counts the repeated
// records (tensors, metadata entries, streams, chunks, dimensions, codec
// parameters, metadata array elements) against the limits of
// common/limits.h, so a file past one is refused with RESOURCE_EXHAUSTED for
// the cost of reading its manifest. Malformed wire data is left to the
// parser, which rejects it with DATA_LOSS.
#ifndef BOLTPACK_FORMAT_MANIFEST_SCAN_H_
#define BOLTPACK_FORMAT_MANIFEST_SCAN_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace boltpack::format {

absl::Status ScanManifestLimits(absl::Span<const uint8_t> manifest, const std::string& file);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_MANIFEST_SCAN_H_
