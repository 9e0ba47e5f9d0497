// What checking checksums on every decode costs (issue 15): Reader::Decode
// of one 4096 x 8192 tensor (32 M weights, rows N(0, s^2) with s log-normal
// around 0.02) per codec, with ReaderOptions::verify_checksums on and off,
// on 1, 2 and 8 threads, beside memcpy of the decoded bytes.
//
// A reader checks each chunk once, so every iteration opens a fresh reader
// (over the file's bytes in memory: no page faults in the timing) and the
// "on" figure includes hashing every stored byte. Counters: GB/s of decoded
// output (wall), and stored GB/s.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "boltpack/writer.h"

namespace boltpack {
namespace {

constexpr uint64_t kRows = 4096, kCols = 8192;

std::vector<float> Weights() {
  std::mt19937 rng(7);
  std::lognormal_distribution<float> scale(std::log(0.02f), 0.5f);
  std::normal_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> w(kRows * kCols);
  for (uint64_t r = 0; r < kRows; ++r) {
    const float s = scale(rng);
    for (uint64_t c = 0; c < kCols; ++c) w[r * kCols + c] = s * unit(rng);
  }
  return w;
}

// The codec's .bolt file of the weights, in memory; bf16 codecs take the
// weights rounded to bf16.
const std::vector<uint8_t>& FileOf(const std::string& codec) {
  static std::map<std::string, std::vector<uint8_t>> files;
  auto it = files.find(codec);
  if (it != files.end()) return it->second;
  static const std::vector<float> w = Weights();
  const bool bf16 = codec.rfind("bf16", 0) == 0;
  std::vector<uint16_t> half;
  TensorSource src{"w", DType::kF32, {}, {reinterpret_cast<const uint8_t*>(w.data()), w.size() * 4}};
  const std::vector<uint64_t> shape = {kRows, kCols};
  src.shape = shape;
  if (bf16) {
    half.resize(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      uint32_t u;
      std::memcpy(&u, &w[i], 4);
      half[i] = static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
    }
    src.dtype = DType::kBF16;
    src.bytes = {reinterpret_cast<const uint8_t*>(half.data()), half.size() * 2};
  }
  std::string path = (std::filesystem::temp_directory_path() / ("decode_verify_bench-" + codec + ".bolt")).string();
  {
    auto writer = Writer::Create(path, {.durable = false});
    auto enc = EncodeTensor(codec, src, {}, {.threads = 2});
    if (!writer.ok() || !enc.ok() || !(*writer)->AddTensor("w", shape, src.dtype, codec, std::move(*enc)).ok() ||
        !(*writer)->Finish().ok()) {
      std::abort();
    }
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  return files[codec] = std::move(bytes);
}

// args: verify (0/1), threads; the codec by name.
void BM_Decode(benchmark::State& state, const std::string& codec, OutputType out) {
  const std::vector<uint8_t>& file = FileOf(codec);
  ReaderOptions opt;
  opt.verify_checksums = state.range(0) != 0;
  const ExecOptions exec{.threads = static_cast<int>(state.range(1))};
  std::vector<uint8_t> dst;
  uint64_t stored = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto reader = Reader::OpenBuffer(file, codec + ".bolt", opt);
    if (!reader.ok()) std::abort();
    auto n = (*reader)->DecodedBytes(0, out);
    if (!n.ok()) std::abort();
    if (dst.size() != *n) dst.assign(*n, 1);
    stored = (*reader)->tensors()[0].stored_bytes();
    state.ResumeTiming();
    if (!(*reader)->Decode(0, out, absl::MakeSpan(dst), exec).ok()) std::abort();
    benchmark::DoNotOptimize(dst.data());
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(dst.size()) * 1e-9 * state.iterations(),
                                              benchmark::Counter::kIsRate);
  state.counters["stored_GB/s"] = benchmark::Counter(static_cast<double>(stored) * 1e-9 * state.iterations(),
                                                     benchmark::Counter::kIsRate);
  state.SetLabel(opt.verify_checksums ? "checked" : "unchecked");
}

// The same decode with checksums off and on, alternately in one loop (the
// order swapped every pair): a VM's slow drift moves both sides of a pair
// alike, so the median of the paired ratios is the cost, where the minima
// of separate runs differ by +-15% between runs on the device machine.
// Counters: off_ms and on_ms (medians) and cost_pct (median of on/off - 1).
void BM_DecodePaired(benchmark::State& state, const std::string& codec, OutputType out) {
  const std::vector<uint8_t>& file = FileOf(codec);
  const ExecOptions exec{.threads = static_cast<int>(state.range(0))};
  std::vector<uint8_t> dst;
  std::vector<double> off_ms, on_ms, ratio;
  auto decode_ms = [&](bool verify) {
    ReaderOptions opt;
    opt.verify_checksums = verify;
    auto reader = Reader::OpenBuffer(file, codec + ".bolt", opt);
    if (!reader.ok()) std::abort();
    auto n = (*reader)->DecodedBytes(0, out);
    if (!n.ok()) std::abort();
    if (dst.size() != *n) dst.assign(*n, 1);
    const auto t0 = std::chrono::steady_clock::now();
    if (!(*reader)->Decode(0, out, absl::MakeSpan(dst), exec).ok()) std::abort();
    benchmark::DoNotOptimize(dst.data());
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  decode_ms(false);  // pages of dst and the file touched once before timing
  for (auto _ : state) {
    const bool on_first = (off_ms.size() & 1) != 0;
    const double a = decode_ms(on_first), b = decode_ms(!on_first);
    off_ms.push_back(on_first ? b : a);
    on_ms.push_back(on_first ? a : b);
    ratio.push_back(on_ms.back() / off_ms.back());
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  state.counters["off_ms"] = median(off_ms);
  state.counters["on_ms"] = median(on_ms);
  state.counters["cost_pct"] = (median(ratio) - 1) * 100;
}

void PairedArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"threads"});
  for (int threads : {1, 2, 8}) b->Arg(threads);
  b->Unit(benchmark::kMillisecond)->Iterations(41);
}

void BM_Memcpy(benchmark::State& state) {
  std::vector<uint8_t> a(kRows * kCols * 4, 1), b(a.size(), 2);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), a.size());
    benchmark::DoNotOptimize(b.data());
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(a.size()) * 1e-9 * state.iterations(),
                                              benchmark::Counter::kIsRate);
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"verify", "threads"});
  for (int threads : {1, 2, 8}) {
    for (int verify : {0, 1}) b->Args({verify, threads});
  }
  // The minimum over repetitions is the figure least moved by the VM's
  // neighbours (medians drift by 10-20% between runs here).
  b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5)->ComputeStatistics("min", [](const std::vector<double>& v) {
    return *std::min_element(v.begin(), v.end());
  });
}

BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Decode, q8_0_to_f32, std::string("q8_0"), OutputType::kF32)->Apply(Args);
BENCHMARK_CAPTURE(BM_Decode, q8_0_to_bf16, std::string("q8_0"), OutputType::kBF16)->Apply(Args);
BENCHMARK_CAPTURE(BM_Decode, bf16_huffman_to_bf16, std::string("bf16-huffman"), OutputType::kBF16)->Apply(Args);
BENCHMARK_CAPTURE(BM_Decode, bf16_unary_to_bf16, std::string("bf16-unary"), OutputType::kBF16)->Apply(Args);
BENCHMARK_CAPTURE(BM_Decode, bf16_huffman_to_f32, std::string("bf16-huffman"), OutputType::kF32)->Apply(Args);
BENCHMARK_CAPTURE(BM_Decode, bf16_raw_to_bf16, std::string("bf16"), OutputType::kBF16)->Apply(Args);
BENCHMARK_CAPTURE(BM_DecodePaired, q8_0_to_f32, std::string("q8_0"), OutputType::kF32)->Apply(PairedArgs);
BENCHMARK_CAPTURE(BM_DecodePaired, q8_0_to_bf16, std::string("q8_0"), OutputType::kBF16)->Apply(PairedArgs);
BENCHMARK_CAPTURE(BM_DecodePaired, bf16_huffman_to_bf16, std::string("bf16-huffman"), OutputType::kBF16)
    ->Apply(PairedArgs);
BENCHMARK_CAPTURE(BM_DecodePaired, bf16_unary_to_bf16, std::string("bf16-unary"), OutputType::kBF16)
    ->Apply(PairedArgs);
BENCHMARK_CAPTURE(BM_DecodePaired, bf16_huffman_to_f32, std::string("bf16-huffman"), OutputType::kF32)
    ->Apply(PairedArgs);
BENCHMARK_CAPTURE(BM_DecodePaired, bf16_raw_to_bf16, std::string("bf16"), OutputType::kBF16)->Apply(PairedArgs);

}  // namespace
}  // namespace boltpack

BENCHMARK_MAIN();
