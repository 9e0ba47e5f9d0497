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
#include "codecs/block_common/block_codec.h"
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

// The block kernels alone on 64 K weights, whose output (256 KiB of f32)
// stays in L2: what each output costs in compute, without the DRAM writes
// that bound a whole-tensor decode. `fused` is the codec's 16-bit kernel
// (BlockCodec::DecodeBlocksBf16/F16); `tile` the base's f32 tile then
// float_convert.h, the path every 16-bit decode took before the kernels.
void BM_Kernel(benchmark::State& state, const std::string& id, OutputType out, bool fused) {
  const BlockCodec& codec = dynamic_cast<const BlockCodec&>(*FindCodec(id));
  constexpr uint64_t kCols = 4096, kKernelRows = 16, kElems = kKernelRows * kCols;
  const std::vector<uint64_t> shape = {kKernelRows, kCols};
  TensorSource src{"w", DType::kF32, shape,
                   absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(Weights().data()), kElems * 4)};
  const EncodedTensor enc = *codec.Encode(src, {}, ExecOptions{1});
  const TensorInfo info = RecordFor("w", DType::kF32, shape, id, enc);
  const BlockParams params = *codec.ParseStoredParams(info.codec_params);
  const uint8_t* in[2] = {enc.streams[0].bytes.data(),
                          enc.streams.size() > 1 ? enc.streams[1].bytes.data() : nullptr};
  const uint64_t nb = kElems / codec.format().block_elems;
  std::vector<float> y32(kElems);
  std::vector<uint16_t> y16(kElems);
  const bool avx2 = CpuHasAvx2Fma16c();
  for (auto _ : state) {
    if (out == OutputType::kF32) {
      codec.DecodeBlocksF32(in, nb, y32.data(), params, avx2);
    } else if (out == OutputType::kBF16) {
      fused ? codec.DecodeBlocksBf16(in, nb, y16.data(), params, avx2)
            : codec.BlockCodec::DecodeBlocksBf16(in, nb, y16.data(), params, avx2);
    } else {
      fused ? codec.DecodeBlocksF16(in, nb, y16.data(), params, avx2)
            : codec.BlockCodec::DecodeBlocksF16(in, nb, y16.data(), params, avx2);
    }
    benchmark::ClobberMemory();
  }
  state.counters["Mweights/s"] = benchmark::Counter(double(kElems) * state.iterations() / 1e6, benchmark::Counter::kIsRate);
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
    benchmark::RegisterBenchmark((std::string("BM_Kernel/") + s + "/f32").c_str(),
                                 [s](benchmark::State& st) { BM_Kernel(st, s, OutputType::kF32, true); })
        ->Unit(benchmark::kMicrosecond);
    for (const auto& target : {std::pair{OutputType::kBF16, "bf16"}, std::pair{OutputType::kF16, "f16"}}) {
      for (bool fused : {false, true}) {
        const OutputType out = target.first;
        benchmark::RegisterBenchmark(
            (std::string("BM_Kernel/") + s + "/" + target.second + (fused ? "/fused" : "/tile")).c_str(),
            [s, out, fused](benchmark::State& st) { BM_Kernel(st, s, out, fused); })
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  return 0;
}();

}  // namespace
}  // namespace boltpack

BENCHMARK_MAIN();
