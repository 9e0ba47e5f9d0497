// Fuzzes the .bolt reader: open (header, footer, manifest validation), then
// everything a consumer may do with what open accepted: verify, decode every
// tensor to every output type, and row-range reads.
//
// For most inputs the target first repairs the checksums that open checks
// (fuzz/repair_checksums.h); the rest exercise those checks.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "google/protobuf/stubs/logging.h"
#include "boltpack/reader.h"
#include "fuzz/repair_checksums.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Hostile manifests make protobuf log each invalid UTF-8 string; the
  // reader already reports them as errors.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  if (size > 0 && data[size - 1] % 8 != 0) boltpack::fuzz::RepairChecksums(bytes);
  boltpack::ReaderOptions options;
  options.max_decompressed_stream_bytes = 64u << 20;
  options.verify_checksums = (size & 1) != 0;
  auto reader = boltpack::Reader::OpenBuffer(bytes, "fuzz.bolt", options);
  if (!reader.ok()) return 0;
  const boltpack::Reader& r = **reader;
  (void)r.VerifyContainer();
  for (size_t t = 0; t < r.tensors().size(); ++t) {
    const boltpack::TensorInfo info = r.tensors()[t];  // each tensors()[t] builds the record again
    // Shape and dtype read straight from the record's wire bytes, and its
    // name, must be the built record's.
    std::vector<uint64_t> shape;
    if (r.TensorShape(t, &shape) != info.dtype || shape != info.shape || r.TensorName(t) != info.name) {
      __builtin_trap();
    }
    // So must its codec and stored size.
    uint64_t stored = ~0ull;
    if (r.TensorCodec(t, &stored) != info.codec_id || stored != info.stored_bytes()) __builtin_trap();
    for (size_t s = 0; s < info.streams.size(); ++s) (void)r.StoredStream(t, s);
    for (auto out : {boltpack::OutputType::kF32, boltpack::OutputType::kBF16, boltpack::OutputType::kF16,
                     boltpack::OutputType::kNative}) {
      auto n = r.DecodedBytes(t, out);
      if (!n.ok() || *n > (64u << 20)) continue;
      std::vector<uint8_t> buf(*n);
      const uint64_t rows = info.row_count();
      // Every view the file declares ("full" first): streams a view does not
      // read reach the codec empty.
      for (const auto& view : r.views()) {
        (void)r.Decode(t, view.name, out, absl::MakeSpan(buf));
        if (rows > 1 && *n > 0) {
          uint64_t row_bytes = *n / rows;
          std::vector<uint8_t> part(row_bytes * (rows / 2 + 1));
          (void)r.DecodeRows(t, view.name, rows / 2, rows, out, absl::MakeSpan(part));
        }
      }
    }
  }
  return 0;
}
