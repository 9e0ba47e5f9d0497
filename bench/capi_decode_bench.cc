// Decode speed through the C API (bp_decode) to f32 and to bf16, per codec,
// on one core and on all cores: what an engine that loads bf16 weights onto
// a GPU sees. 4 M weights N(0, 0.02) in 1024 x 4096; f32, bf16 and q8_0
// from f32 sources, bf16-huffman from the bf16 rounding of them.
#include <benchmark/benchmark.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "boltpack/boltpack.h"
#include "boltpack/codec_registry.h"
#include "boltpack/writer.h"

namespace boltpack {
namespace {

constexpr uint64_t kRows = 1024, kCols = 4096, kN = kRows * kCols;

std::vector<uint8_t> Source(DType dtype) {
  std::mt19937 rng(1);
  std::normal_distribution<float> g(0.0f, 0.02f);
  std::vector<uint8_t> out(kN * (dtype == DType::kF32 ? 4 : 2));
  for (uint64_t i = 0; i < kN; ++i) {
    float f = g(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if (dtype == DType::kF32) {
      std::memcpy(&out[4 * i], &bits, 4);
    } else {
      uint16_t h = static_cast<uint16_t>(bits >> 16);
      std::memcpy(&out[2 * i], &h, 2);
    }
  }
  return out;
}

// One file holding a tensor per codec, written once per process.
const std::string& BenchFile() {
  static const std::string path = [] {
    std::string p = (std::filesystem::temp_directory_path() / "boltpack-capi-decode-bench.bolt").string();
    auto w = Writer::Create(p, {});
    const std::vector<uint64_t> shape = {kRows, kCols};
    for (const char* id : {"f32", "bf16", "q8_0", "bf16-huffman"}) {
      if (FindCodec(id) == nullptr) continue;
      const DType dtype = std::string(id) == "bf16-huffman" ? DType::kBF16 : DType::kF32;
      std::vector<uint8_t> bytes = Source(dtype);
      TensorSource src{id, dtype, shape, bytes};
      auto enc = EncodeTensor(id, src, {}, {});
      if (enc.ok()) (void)(*w)->AddTensor(id, shape, dtype, id, std::move(*enc));
    }
    (void)(*w)->Finish();
    return p;
  }();
  return path;
}

void BM_CapiDecode(benchmark::State& state, const std::string& id, bp_output out) {
  bp_reader* r = nullptr;
  size_t t = 0;
  if (bp_open(BenchFile().c_str(), &r) != BP_OK || bp_find_tensor(r, id.c_str(), &t) != BP_OK) {
    state.SkipWithError(bp_last_error_message());
    bp_close(r);
    return;
  }
  uint64_t n = 0;
  (void)bp_decoded_size(r, t, out, &n);
  std::vector<uint8_t> dst(n);
  const int threads = static_cast<int>(state.range(0));  // 0: all cores
  (void)bp_decode(r, t, out, dst.data(), n, threads);  // checksums checked once, pages in
  for (auto _ : state) {
    if (bp_decode(r, t, out, dst.data(), n, threads) != BP_OK) state.SkipWithError(bp_last_error(r));
    benchmark::ClobberMemory();
  }
  state.counters["Mweights/s"] = benchmark::Counter(double(kN) * state.iterations() / 1e6, benchmark::Counter::kIsRate);
  bp_close(r);
}

const int kRegistered = [] {
  for (const char* id : {"f32", "bf16", "q8_0", "bf16-huffman"}) {
    for (const auto& target : {std::pair{BP_OUT_F32, "f32"}, std::pair{BP_OUT_BF16, "bf16"}}) {
      const std::string s = id;
      const bp_output out = target.first;
      benchmark::RegisterBenchmark((std::string("BM_CapiDecode/") + s + "/to_" + target.second).c_str(),
                                   [s, out](benchmark::State& st) { BM_CapiDecode(st, s, out); })
          ->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
    }
  }
  return 0;
}();

}  // namespace
}  // namespace boltpack

BENCHMARK_MAIN();
