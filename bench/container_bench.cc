// Container benchmarks: opening and indexing a file of many tensors (the
// peer, ggml's gguf_init_from_file, is quadratic: 309 ms for 10,000 tensors
// per BRIEF.md), raw stream reads beside memcpy, and raw-codec decode speed
// on one core and on all cores.
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "boltpack/reader.h"
#include "boltpack/writer.h"
#include "common/parallel_for.h"

namespace boltpack {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("boltpack-bench-" + name)).string();
}

// A file of `n` small f32 tensors (64 values each), alignment 64.
const std::string& ManyTensorFile(int n) {
  static std::map<int, std::string> paths;
  auto it = paths.find(n);
  if (it != paths.end()) return it->second;
  std::string path = TempPath("many-" + std::to_string(n) + ".bolt");
  auto w = Writer::Create(path, {.alignment = 64});
  std::vector<float> v(64, 1.0f);
  for (int i = 0; i < n; ++i) {
    std::string name = "blk." + std::to_string(i / 10) + ".ffn_" + std::to_string(i % 10) + ".weight";
    std::vector<uint64_t> shape = {8, 8};
    TensorSource src{name, DType::kF32, shape, {reinterpret_cast<const uint8_t*>(v.data()), 256}};
    auto enc = EncodeTensor("f32", src, {}, {});
    (void)(*w)->AddTensor(name, shape, DType::kF32, "f32", std::move(*enc));
  }
  (void)(*w)->Finish();
  return paths.emplace(n, path).first->second;
}

void BM_OpenAndIndex(benchmark::State& state) {
  const std::string& path = ManyTensorFile(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto r = Reader::Open(path);
    if (!r.ok()) state.SkipWithError(std::string(r.status().message()).c_str());
    benchmark::DoNotOptimize((*r)->FindTensor("blk.5.ffn_3.weight"));
  }
  state.counters["tensors"] = static_cast<double>(state.range(0));
  state.SetLabel("ggml gguf_init_from_file: 4.7 ms @1k, 23 ms @3k, 309 ms @10k, 2.5 s @30k");
}
BENCHMARK(BM_OpenAndIndex)->Arg(1000)->Arg(10000)->Arg(30000)->Unit(benchmark::kMillisecond);

constexpr size_t kBigElements = 64u << 20;  // 64 Mi floats = 256 MiB

const std::string& BigFile(const std::string& codec) {
  static std::map<std::string, std::string> paths;
  auto it = paths.find(codec);
  if (it != paths.end()) return it->second;
  std::string path = TempPath("big-" + codec + ".bolt");
  std::vector<float> v(kBigElements);
  std::mt19937 rng(1);
  std::normal_distribution<float> g(0, 0.02f);
  for (auto& x : v) x = g(rng);
  std::vector<uint64_t> shape = {kBigElements / 4096, 4096};
  TensorSource src{"w", DType::kF32, shape, {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4}};
  auto enc = EncodeTensor(codec, src, {}, {.threads = 0});
  auto w = Writer::Create(path, {});
  (void)(*w)->AddTensor("w", shape, DType::kF32, codec, std::move(*enc));
  (void)(*w)->Finish();
  return paths.emplace(codec, path).first->second;
}

void BM_Memcpy(benchmark::State& state) {
  std::vector<uint8_t> src(kBigElements * 4, 1), dst(kBigElements * 4);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * src.size()));
  state.SetLabel("bytes copied; BRIEF.md: ~5.2 GB/s on this kind of machine");
}
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();

// Zero-copy stream span, read into a caller buffer (what an engine does).
void BM_RawStreamRead(benchmark::State& state) {
  auto r = Reader::Open(BigFile("f32"));
  std::vector<uint8_t> dst(kBigElements * 4);
  for (auto _ : state) {
    auto span = (*r)->StoredStream(0, 0);
    std::memcpy(dst.data(), span->data(), span->size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * dst.size()));
}
BENCHMARK(BM_RawStreamRead)->Unit(benchmark::kMillisecond)->UseRealTime();

void Decode(benchmark::State& state, const std::string& codec, OutputType out, int out_size) {
  auto r = Reader::Open(BigFile(codec));
  std::vector<uint8_t> dst(kBigElements * out_size);
  ExecOptions exec{.threads = static_cast<int>(state.range(0))};
  for (auto _ : state) {
    auto st = (*r)->Decode(0, out, absl::MakeSpan(dst), exec);
    if (!st.ok()) state.SkipWithError(std::string(st.message()).c_str());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBigElements));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * dst.size()));
}

void BM_DecodeF32ToF32(benchmark::State& s) { Decode(s, "f32", OutputType::kF32, 4); }
void BM_DecodeBF16ToF32(benchmark::State& s) { Decode(s, "bf16", OutputType::kF32, 4); }
void BM_DecodeF16ToF32(benchmark::State& s) { Decode(s, "f16", OutputType::kF32, 4); }
void BM_DecodeBF16ToBF16(benchmark::State& s) { Decode(s, "bf16", OutputType::kBF16, 2); }
int AllCores() { return HardwareThreads(); }
BENCHMARK(BM_DecodeF32ToF32)->Arg(1)->Arg(AllCores())->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DecodeBF16ToF32)->Arg(1)->Arg(AllCores())->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DecodeF16ToF32)->Arg(1)->Arg(AllCores())->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DecodeBF16ToBF16)->Arg(1)->Arg(AllCores())->Unit(benchmark::kMillisecond)->UseRealTime();

void Encode(benchmark::State& state, const std::string& codec) {
  std::vector<float> v(kBigElements / 4, 0.5f);
  std::vector<uint64_t> shape = {v.size() / 4096, 4096};
  TensorSource src{"w", DType::kF32, shape, {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4}};
  ExecOptions exec{.threads = static_cast<int>(state.range(0))};
  for (auto _ : state) {
    auto enc = EncodeTensor(codec, src, {}, exec);
    benchmark::DoNotOptimize(enc);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * v.size()));
}
void BM_EncodeF32ToBF16(benchmark::State& s) { Encode(s, "bf16"); }
void BM_EncodeF32ToF16(benchmark::State& s) { Encode(s, "f16"); }
BENCHMARK(BM_EncodeF32ToBF16)->Arg(1)->Arg(AllCores())->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EncodeF32ToF16)->Arg(1)->Arg(AllCores())->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace boltpack

BENCHMARK_MAIN();
