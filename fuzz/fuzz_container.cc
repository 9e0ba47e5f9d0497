// Fuzzes the .bolt reader: open (header, footer, manifest validation), then
// everything a consumer may do with what open accepted: verify, decode every
// tensor to every output type, and row-range reads.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "boltpack/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  boltpack::ReaderOptions options;
  options.max_decompressed_stream_bytes = 64u << 20;
  options.verify_checksums = (size & 1) != 0;
  auto reader = boltpack::Reader::OpenBuffer({data, size}, "fuzz.bolt", options);
  if (!reader.ok()) return 0;
  const boltpack::Reader& r = **reader;
  (void)r.VerifyContainer();
  for (size_t t = 0; t < r.tensors().size(); ++t) {
    for (size_t s = 0; s < r.tensors()[t].streams.size(); ++s) (void)r.StoredStream(t, s);
    for (auto out : {boltpack::OutputType::kF32, boltpack::OutputType::kBF16, boltpack::OutputType::kF16,
                     boltpack::OutputType::kNative}) {
      auto n = r.DecodedBytes(t, out);
      if (!n.ok() || *n > (64u << 20)) continue;
      std::vector<uint8_t> buf(*n);
      (void)r.Decode(t, out, absl::MakeSpan(buf));
      uint64_t rows = r.tensors()[t].row_count();
      if (rows > 1 && *n > 0) {
        uint64_t row_bytes = *n / rows;
        std::vector<uint8_t> part(row_bytes * (rows / 2 + 1));
        (void)r.DecodeRows(t, rows / 2, rows, out, absl::MakeSpan(part));
      }
    }
  }
  return 0;
}
