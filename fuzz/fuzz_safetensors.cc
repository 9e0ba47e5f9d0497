// libFuzzer target: any byte string is a candidate .safetensors file. The
// reader must either reject it with a status or hand back tensors whose
// bytes all lie inside the input (ASan checks every byte touched here).
#include <cstddef>
#include <cstdint>

#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto model = boltpack::io::SafetensorsModel::OpenBuffer({data, size}, "fuzz.safetensors");
  if (!model.ok()) return 0;
  const auto& tensors = (*model)->tensors();
  uint8_t sum = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    absl::Span<const uint8_t> bytes = (*model)->TensorBytes(i);
    // Invariants a valid open promises: the size matches the declaration and
    // the span lies inside the input buffer.
    if (bytes.size() != tensors[i].data_end - tensors[i].data_begin) __builtin_trap();
    if (!bytes.empty() && (bytes.data() < data || bytes.data() + bytes.size() > data + size)) {
      __builtin_trap();
    }
    for (uint8_t b : bytes) sum = static_cast<uint8_t>(sum + b);
  }
  for (const auto& [k, v] : (*model)->metadata()) sum = static_cast<uint8_t>(sum + k.size() + v.size());
  // Keep the reads from being optimized away.
  volatile uint8_t sink = sum;
  (void)sink;
  return 0;
}
