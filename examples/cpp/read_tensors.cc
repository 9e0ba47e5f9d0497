// Lists the tensors of a model (.bolt, GGUF or safetensors) with the
// header-only C++ wrapper of libboltpack_read (boltpack/boltpack.hpp: no
// Abseil, nothing of bolt-pack's dependencies), shows the zero-copy stored
// bytes of each stream, and decodes each decodable tensor to f32, printing
// its sum.
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

int Fail(const bp::Status& status) {
  std::fprintf(stderr, "read_tensors: %s\n", status.ToString().c_str());
  return 1;
}

// The zero-copy stored bytes of each stream, straight from the mapping.
int PrintStreams(const bp::Reader& reader, size_t t, uint32_t streams) {
  for (uint32_t s = 0; s < streams; ++s) {
    auto info = reader.stream(t, s);
    if (!info.ok()) return Fail(info.status());
    auto bytes = reader.StoredBytes(t, s);
    if (!bytes.ok()) return Fail(bytes.status());
    std::printf("  stream %s: %zu bytes at %p%s, first byte 0x%02x\n", std::string(info->role()).c_str(),
                bytes->size(), static_cast<const void*>(bytes->data()), info->compressed() ? " (zstd)" : "",
                bytes->empty() ? 0u : static_cast<unsigned>((*bytes)[0]));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL\n", argv[0]);
    return 2;
  }
  auto opened = bp::Reader::Open(argv[1]);
  if (!opened.ok()) return Fail(opened.status());
  const bp::Reader& reader = *opened;
  std::printf("%s: %zu tensors, %zu metadata entries (libboltpack %s)\n", argv[1], reader.tensor_count(),
              reader.metadata_count(), bp_version_string());

  for (size_t t = 0; t < reader.tensor_count(); ++t) {
    auto info = reader.tensor(t);
    if (!info.ok()) return Fail(info.status());
    std::string shape;
    for (uint64_t d : info->shape()) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    std::printf("%s [%s] dtype=%s codec=%s stored=%llu\n", std::string(info->name()).c_str(), shape.c_str(),
                std::string(info->dtype_name()).c_str(), std::string(info->codec()).c_str(),
                static_cast<unsigned long long>(info->stored_bytes()));
    if (int rc = PrintStreams(reader, t, info->stream_count()); rc != 0) return rc;

    auto values = reader.DecodeF32(t);
    if (!values.ok()) {
      bp_status kind = values.status().kind();
      if (kind == BP_ERR_UNSUPPORTED || kind == BP_ERR_INVALID_ARGUMENT) {
        std::printf("  (not decodable to f32: %s)\n", values.status().message().c_str());
        continue;
      }
      return Fail(values.status());
    }
    double sum = 0;
    for (float x : *values) sum += x;
    std::printf("  sum=%.6g\n", sum);
  }
  return 0;
}
