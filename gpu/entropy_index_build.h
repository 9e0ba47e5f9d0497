// The host side of entropy_index.h: the index of a bf16-huffman or
// bf16-unary tensor of an open reader, built from its record's code and
// bp_sync_points (which decode every lane on the CPU: the index exists only
// for bytes the CPU decoder accepts). Host only; no CUDA call.
#ifndef BOLTPACK_GPU_ENTROPY_INDEX_BUILD_H_
#define BOLTPACK_GPU_ENTROPY_INDEX_BUILD_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "boltpack/boltpack.h"
#include "gpu/entropy_index.h"

namespace boltpack::gpu {

// The index's bytes (to copy to the device as they are) and its segments.
bp_status BuildEntropyIndex(const bp_reader* r, size_t tensor, bool unary, std::vector<uint8_t>* index,
                            uint64_t* segments);

}  // namespace boltpack::gpu

#endif  // BOLTPACK_GPU_ENTROPY_INDEX_BUILD_H_
