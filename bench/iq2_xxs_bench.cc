// IQ2_XXS: encode and decode speed on one core and on all cores, beside
// ggml's figures (BRIEF.md, ggml d99724f, one core: quantize with imatrix
// 1.6 M weights/s, dequantize to f32 250 M weights/s) and memcpy.
// Counters: weights/s ("items_per_second") and bytes of output.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "codecs/iq2_xxs/iq2_xxs_kernels.h"
#include "common/parallel_for.h"

namespace boltpack {
namespace {

constexpr uint64_t kCols = 4096;
constexpr uint64_t kRows = 1024;  // 4 Mi weights, as ggml's figures
constexpr uint64_t kN = kRows * kCols;

const std::vector<float>& Weights() {
  static const std::vector<float> v = [] {
    std::vector<float> x(kN);
    std::mt19937 rng(1);
    std::normal_distribution<float> g(0, 0.02f);
    for (auto& e : x) e = g(rng);
    return x;
  }();
  return v;
}

const std::vector<float>& Importance() {
  static const std::vector<float> v = [] {
    std::vector<float> w(kCols);
    std::mt19937 rng(2);
    std::gamma_distribution<float> g(1.0f, 1.0f);
    for (auto& e : w) e = g(rng) + 1e-3f;
    return w;
  }();
  return v;
}

const std::vector<uint8_t>& Blocks() {
  static const std::vector<uint8_t> b = [] {
    std::vector<uint8_t> out(kN / 256 * 66);
    const auto& x = Weights();
    for (uint64_t r = 0; r < kRows; ++r) {
      iq2_xxs::QuantizeRow(x.data() + r * kCols, Importance().data(), kCols,
                           out.data() + r * kCols / 256 * 66);
    }
    return out;
  }();
  return b;
}

int Threads(const benchmark::State& state) {
  return state.range(0) == 0 ? HardwareThreads() : static_cast<int>(state.range(0));
}

// Through the codec (rows in parallel), with and without importance.
void BM_Iq2XxsEncode(benchmark::State& state) {
  const Codec* codec = FindCodec("iq2_xxs");
  const auto& x = Weights();
  const std::vector<uint64_t> shape = {kRows, kCols};
  TensorSource src{"w", DType::kF32, shape,
                   {reinterpret_cast<const uint8_t*>(x.data()), x.size() * 4}};
  if (state.range(1) != 0) src.importance = Importance();
  const int threads = Threads(state);
  for (auto _ : state) {
    auto enc = codec->Encode(src, {}, {.threads = threads});
    if (!enc.ok()) state.SkipWithError(std::string(enc.status().message()).c_str());
    benchmark::DoNotOptimize(enc->streams[0].bytes.data());
  }
  state.SetItemsProcessed(state.iterations() * kN);
  state.counters["threads"] = threads;
  state.SetLabel(state.range(1) ? "imatrix; ggml quantize_iq2_xxs (imatrix): 1.6 M/s on 1 core"
                                : "no imatrix; ggml cannot (it aborts without one)");
}
BENCHMARK(BM_Iq2XxsEncode)
    ->ArgsProduct({{1, 0}, {1, 0}})
    ->ArgNames({"threads", "imatrix"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_Iq2XxsDecode(benchmark::State& state) {
  const Codec* codec = FindCodec("iq2_xxs");
  const auto& blocks = Blocks();
  const auto out = static_cast<OutputType>(state.range(1));
  TensorInfo info;
  info.name = "w";
  info.shape = {kRows, kCols};
  info.dtype = DType::kF32;
  info.codec_id = "iq2_xxs";
  StreamInfo s;
  s.role = "blocks";
  s.raw_length = s.length = blocks.size();
  info.streams.push_back(s);
  std::vector<uint8_t> dst(*codec->DecodedBytes(info, out));
  DecodeInput in{&info, {blocks}, {0}};
  const int threads = Threads(state);
  for (auto _ : state) {
    (void)codec->Decode(in, out, absl::MakeSpan(dst), {.threads = threads});
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kN);
  state.SetBytesProcessed(state.iterations() * dst.size());
  state.counters["threads"] = threads;
  state.SetLabel(out == OutputType::kF32 ? "to f32; ggml dequantize_row_iq2_xxs: 250 M/s on 1 core"
                                         : "to bf16 (through f32)");
}
BENCHMARK(BM_Iq2XxsDecode)
    ->ArgsProduct({{1, 0}, {static_cast<int>(OutputType::kF32), static_cast<int>(OutputType::kBF16)}})
    ->ArgNames({"threads", "out"})
    ->UseRealTime();

// The kernel alone, both ISAs, one core.
void BM_Iq2XxsDecodeKernel(benchmark::State& state) {
  const auto isa = state.range(0) ? iq2_xxs::Isa::kAvx2 : iq2_xxs::Isa::kPortable;
  if (isa == iq2_xxs::Isa::kAvx2 && !iq2_xxs::Avx2Supported()) {
    state.SkipWithError("no AVX2");
    return;
  }
  const auto& blocks = Blocks();
  std::vector<float> y(kN);
  for (auto _ : state) {
    iq2_xxs::DecodeBlocksF32(blocks.data(), blocks.size() / 66, y.data(), isa);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kN);
  state.SetBytesProcessed(state.iterations() * kN * 4);
  state.SetLabel(state.range(0) ? "avx2" : "portable");
}
BENCHMARK(BM_Iq2XxsDecodeKernel)->Arg(0)->Arg(1);

void BM_Iq2XxsMemcpyBaseline(benchmark::State& state) {
  std::vector<uint8_t> src(kN * 4, 1), dst(kN * 4);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * src.size());
  state.SetLabel("16 MiB, the f32 output size of 4 Mi weights; BRIEF: ~5.2 GB/s");
}
BENCHMARK(BM_Iq2XxsMemcpyBaseline);

}  // namespace
}  // namespace boltpack

BENCHMARK_MAIN();
