// libFuzzer target: any byte string is a candidate .gguf file (and imatrix).
// The reader must reject it with a status or hand back tensors whose bytes
// lie inside the input; a file it accepts must be rewritable by the writer
// (the header it re-encodes parses to the same keys and tensor infos).
#include <cstddef>
#include <cstdint>

#include "io/gguf.h"
#include "io/imatrix.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace boltpack::io;
  (void)Imatrix::Parse({data, size}, "fuzz.imatrix");
  auto model = GgufModel::OpenBuffer({data, size}, "fuzz.gguf");
  if (!model.ok()) return 0;
  const auto& tensors = (*model)->tensors();
  uint8_t sum = 0;
  std::vector<GgufTensorDecl> decls;
  for (size_t i = 0; i < tensors.size(); ++i) {
    absl::Span<const uint8_t> bytes = (*model)->TensorBytes(i);
    if (bytes.size() != tensors[i].nbytes) __builtin_trap();
    if (!bytes.empty() && (bytes.data() < data || bytes.data() + bytes.size() > data + size)) __builtin_trap();
    for (uint8_t b : bytes) sum = static_cast<uint8_t>(sum + b);
    decls.push_back({std::string(tensors[i].name), tensors[i].ne, tensors[i].type->id});
  }
  auto header = EncodeGgufHeader("fuzz.out", (*model)->metadata(), decls, (*model)->version(), 0);
  if (!header.ok()) __builtin_trap();
  std::vector<uint8_t> again = *header;
  for (size_t i = 0; i < tensors.size(); ++i) {
    auto b = (*model)->TensorBytes(i);
    again.insert(again.end(), b.begin(), b.end());
    again.resize((again.size() + (*model)->alignment() - 1) / (*model)->alignment() * (*model)->alignment(), 0);
  }
  auto reread = GgufModel::OpenBuffer(again, "fuzz.again");
  if (!reread.ok() || (*reread)->metadata() != (*model)->metadata() || (*reread)->tensors().size() != tensors.size()) {
    __builtin_trap();
  }
  volatile uint8_t sink = sum;
  (void)sink;
  return 0;
}
