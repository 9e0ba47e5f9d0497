// The library's Decode of a whole model into memory: every tensor of a .bolt
// file decoded to its dtype (bf16 for bf16-huffman) into one buffer, on
// THREADS threads (each tensor's chunks spread over them), best of a few
// passes; the buffer is faulted in first, so the figure is the decode's.
// bench/core_scaling.py runs it at 1 thread and at all, side by side.
//   model_decode_bench FILE.bolt THREADS [PASSES]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "boltpack/reader.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s FILE.bolt THREADS [PASSES]\n", argv[0]);
    return 2;
  }
  const int threads = std::atoi(argv[2]);
  const int passes = argc > 3 ? std::atoi(argv[3]) : 3;
  auto reader = boltpack::Reader::Open(argv[1]);
  if (!reader.ok()) {
    std::fprintf(stderr, "%s\n", std::string(reader.status().message()).c_str());
    return 1;
  }
  const boltpack::Reader& r = **reader;
  std::vector<uint64_t> offsets;
  uint64_t total = 0;
  for (size_t t = 0; t < r.tensors().size(); ++t) {
    auto n = r.DecodedBytes(t, boltpack::OutputType::kNative);
    if (!n.ok()) {
      std::fprintf(stderr, "%s\n", std::string(n.status().message()).c_str());
      return 1;
    }
    offsets.push_back(total);
    total += *n;
  }
  std::vector<uint8_t> out(total, 1);  // faulted in before the clock starts
  double best = 1e30;
  for (int p = 0; p < passes; ++p) {
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t t = 0; t < r.tensors().size(); ++t) {
      const uint64_t end = t + 1 < offsets.size() ? offsets[t + 1] : total;
      absl::Status s = r.Decode(t, boltpack::OutputType::kNative,
                                absl::MakeSpan(out.data() + offsets[t], end - offsets[t]), {.threads = threads});
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
        return 1;
      }
    }
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, sec);
  }
  std::printf("decode %zu tensors, %.3f GB out, threads %d: %.3f s, %.2f GB/s\n", r.tensors().size(), total / 1e9,
              threads, best, total / 1e9 / best);
  return 0;
}
