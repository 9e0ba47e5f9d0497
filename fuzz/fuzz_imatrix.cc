// Fuzzes the importance-matrix reader (llama.cpp imatrix GGUF and legacy
// .dat) and the per-tensor lookup the converter does with what it accepted.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/imatrix.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto im = boltpack::io::Imatrix::Parse({data, size}, "fuzz.imatrix");
  if (!im.ok()) return 0;
  // Shapes that fit an entry and shapes that do not: both must be answered.
  for (uint64_t cols : {uint64_t{1}, uint64_t{32}, uint64_t{4096}}) {
    for (const std::vector<uint64_t>& shape : {std::vector<uint64_t>{8, cols}, std::vector<uint64_t>{4, 2, cols}}) {
      (void)(*im)->For("blk.0.ffn_up.weight", shape);
      (void)(*im)->For("t", shape);
    }
  }
  return 0;
}
