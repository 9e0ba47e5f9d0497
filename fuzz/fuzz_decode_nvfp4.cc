// libFuzzer target: the "nvfp4" decoder on arbitrary stream bytes
// (fuzz/block_decode_fuzz.h).
#include "fuzz/block_decode_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return boltpack::fuzz::FuzzBlockDecode("nvfp4", data, size);
}
