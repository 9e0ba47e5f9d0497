// Fuzzes the .bolt reader: open (header, footer, manifest validation), then
// everything a consumer may do with what open accepted: verify, decode every
// tensor to every output type, and row-range reads.
//
// Checksums would stop almost every mutation at the door, so for most inputs
// the target first repairs the header, manifest and footer checksums (and
// the footer's size and file id) of its copy; the rest exercise the checks.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/base/internal/endian.h"
#include "google/protobuf/stubs/logging.h"
#include "boltpack/reader.h"
#include "format/layout.h"

namespace {

void RepairChecksums(std::vector<uint8_t>& b) {
  using boltpack::format::Xxh3;
  if (b.size() < 128) return;
  absl::little_endian::Store64(b.data() + 56, Xxh3({b.data(), 56}));
  uint8_t* footer = b.data() + b.size() - 64;
  uint64_t offset = absl::little_endian::Load64(footer);
  uint64_t length = absl::little_endian::Load64(footer + 8);
  if (offset <= b.size() - 64 && length <= b.size() - 64 - offset) {
    absl::little_endian::Store64(footer + 16, Xxh3({b.data() + offset, length}));
  }
  std::memcpy(footer + 32, b.data() + 24, 8);  // file id
  absl::little_endian::Store64(footer + 40, b.size());
  absl::little_endian::Store64(footer + 48, Xxh3({footer, 48}));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Hostile manifests make protobuf log each invalid UTF-8 string; the
  // reader already reports them as errors.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  if (size > 0 && data[size - 1] % 8 != 0) RepairChecksums(bytes);
  boltpack::ReaderOptions options;
  options.max_decompressed_stream_bytes = 64u << 20;
  options.verify_checksums = (size & 1) != 0;
  auto reader = boltpack::Reader::OpenBuffer(bytes, "fuzz.bolt", options);
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
      uint64_t rows = r.tensors()[t].row_count();
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
