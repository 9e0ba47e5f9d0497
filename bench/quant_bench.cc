// Encode and decode speed of the block-quantization codecs on 4 M weights
// N(0, 0.02) (ggml's benchmark input), one core and all cores, in weights per
// second; labels carry ggml d99724f's one-core figures (BRIEF.md).
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "codecs/encoded_record.h"
#include "common/parallel_for.h"

namespace boltpack {
namespace {

constexpr uint64_t kRows = 1024, kCols = 4096, kN = kRows * kCols;

const std::vector<float>& Weights() {
  static const std::vector<float> x = [] {
    std::mt19937 rng(1);
    std::normal_distribution<float> g(0.0f, 0.02f);
    std::vector<float> v(kN);
    for (auto& f : v) f = g(rng);
    return v;
  }();
  return x;
}

// ggml's figures: quantize, dequantize (M weights/s, one core).
const std::map<std::string, std::pair<const char*, const char*>> kGgml = {
    {"q8_0", {"161", "1646"}}, {"nvfp4-ggml", {"31", "603"}}, {"mxfp4", {"104", "678"}},
    {"nvfp4", {"-", "-"}},     {"int4-g128", {"-", "-"}}};

int Threads(int arg) { return arg == 0 ? HardwareThreads() : 1; }

void BM_Encode(benchmark::State& state, const std::string& id) {
  const Codec& codec = *FindCodec(id);
  const std::vector<uint64_t> shape = {kRows, kCols};
  TensorSource src{"w", DType::kF32, shape,
                   absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(Weights().data()), kN * 4)};
  const int threads = Threads(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto enc = codec.Encode(src, {}, ExecOptions{threads});
    benchmark::DoNotOptimize(enc);
  }
  state.counters["Mweights/s"] = benchmark::Counter(double(kN) * state.iterations() / 1e6, benchmark::Counter::kIsRate);
  state.SetLabel(std::string("threads=") + std::to_string(threads) + " ggml quantize (1 core): " +
                 kGgml.at(id).first + " M/s");
}

void BM_Decode(benchmark::State& state, const std::string& id, OutputType out) {
  const Codec& codec = *FindCodec(id);
  const std::vector<uint64_t> shape = {kRows, kCols};
  TensorSource src{"w", DType::kF32, shape,
                   absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(Weights().data()), kN * 4)};
  const EncodedTensor enc = *codec.Encode(src, {}, ExecOptions{0});
  const TensorInfo info = RecordFor("w", DType::kF32, shape, id, enc);
  std::vector<uint8_t> dst(*codec.DecodedBytes(info, out));
  const DecodeInput in = InputFor(info, enc);
  const int threads = Threads(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(codec.Decode(in, out, absl::MakeSpan(dst), ExecOptions{threads}));
    benchmark::ClobberMemory();
  }
  state.counters["Mweights/s"] = benchmark::Counter(double(kN) * state.iterations() / 1e6, benchmark::Counter::kIsRate);
  state.SetLabel(std::string("threads=") + std::to_string(threads) + " ggml dequantize f32 (1 core): " +
                 kGgml.at(id).second + " M/s");
}

// memcpy of the f32 output size: the ceiling a decoder writing f32 meets.
void BM_MemcpyF32Baseline(benchmark::State& state) {
  std::vector<float> a(Weights()), b(kN);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), kN * 4);
    benchmark::ClobberMemory();
  }
  state.counters["Mweights/s"] = benchmark::Counter(double(kN) * state.iterations() / 1e6, benchmark::Counter::kIsRate);
  state.SetBytesProcessed(int64_t(state.iterations()) * kN * 4);
  state.SetLabel("memcpy of 4 M f32; ggml machine: about 5.2 GB/s copied");
}
BENCHMARK(BM_MemcpyF32Baseline)->Unit(benchmark::kMillisecond)->UseRealTime();

const int kRegistered = [] {
  for (const char* id : {"q8_0", "mxfp4", "nvfp4-ggml", "nvfp4", "int4-g128"}) {
    const std::string s = id;
    benchmark::RegisterBenchmark((std::string("BM_Encode/") + s).c_str(),
                                 [s](benchmark::State& st) { BM_Encode(st, s); })
        ->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
    // A plain pair, not a structured binding: clang 14 cannot capture those.
    for (const auto& target : {std::pair{OutputType::kF32, "f32"}, std::pair{OutputType::kBF16, "bf16"},
                               std::pair{OutputType::kF16, "f16"}}) {
      const OutputType out = target.first;
      benchmark::RegisterBenchmark((std::string("BM_Decode/") + s + "/" + target.second).c_str(),
                                   [s, out](benchmark::State& st) { BM_Decode(st, s, out); })
          ->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
    }
  }
  return 0;
}();

}  // namespace
}  // namespace boltpack

BENCHMARK_MAIN();
