// Lists the tensors of a .bolt file with the bolt-pack C++ API, shows the
// zero-copy stored bytes of each stream, and decodes each decodable tensor to
// f32, printing its sum.
//
//   read_tensors_cpp model.bolt
//
// Exits 1 with bolt-pack's error message on any failure. Tensors this library
// cannot decode to f32 are listed and skipped.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "boltpack/boltpack.hpp"

namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "read_tensors: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FILE.bolt\n", argv[0]);
    return 2;
  }
  auto opened = boltpack::Reader::Open(argv[1]);
  if (!opened.ok()) return Fail(opened.status());
  const boltpack::Reader& reader = **opened;

  boltpack::FormatVersion v = reader.version();
  std::printf("%s: format %u.%u, %zu tensors, %zu metadata entries (bolt-pack %s)\n",
              reader.path().c_str(), v.major, v.minor, reader.tensors().size(),
              reader.metadata().size(), BOLTPACK_VERSION_STRING);

  const auto& tensors = reader.tensors();
  for (size_t t = 0; t < tensors.size(); ++t) {
    const boltpack::TensorInfo& info = tensors[t];
    std::string shape;
    for (size_t d = 0; d < info.shape.size(); ++d) {
      if (d > 0) shape += ", ";
      shape += std::to_string(info.shape[d]);
    }
    std::string dtype(boltpack::DTypeName(info.dtype));
    std::printf("%s [%s] dtype=%s codec=%s stored=%llu\n", info.name.c_str(), shape.c_str(),
                dtype.c_str(), info.codec_id.c_str(),
                static_cast<unsigned long long>(info.stored_bytes()));

    // Zero-copy: each stream's stored bytes, straight from the mapping.
    for (size_t s = 0; s < info.streams.size(); ++s) {
      auto span = reader.StoredStream(t, s);
      if (!span.ok()) return Fail(span.status());
      const boltpack::StreamInfo& stream = info.streams[s];
      std::printf("  stream %s: %zu bytes at %p%s, first byte 0x%02x\n", stream.role.c_str(),
                  span->size(), static_cast<const void*>(span->data()),
                  stream.compression == boltpack::Compression::kZstd ? " (zstd)" : "",
                  span->empty() ? 0u : static_cast<unsigned>((*span)[0]));
    }

    absl::Status can = reader.CanDecode(t, boltpack::OutputType::kF32);
    if (!can.ok()) {
      if (absl::IsUnimplemented(can) || absl::IsFailedPrecondition(can) ||
          absl::IsInvalidArgument(can)) {
        std::printf("  (not decodable to f32: %s)\n", std::string(can.message()).c_str());
        continue;
      }
      return Fail(can);
    }
    auto bytes = reader.DecodedBytes(t, boltpack::OutputType::kF32);
    if (!bytes.ok()) return Fail(bytes.status());
    std::vector<float> values(*bytes / sizeof(float));
    absl::Status decoded = reader.Decode(
        t, boltpack::OutputType::kF32,
        absl::MakeSpan(reinterpret_cast<uint8_t*>(values.data()), values.size() * sizeof(float)),
        boltpack::ExecOptions{.threads = 0});
    if (!decoded.ok()) return Fail(decoded);
    double sum = 0;
    for (float x : values) sum += x;
    std::printf("  sum=%.6g\n", sum);
  }
  return 0;
}
