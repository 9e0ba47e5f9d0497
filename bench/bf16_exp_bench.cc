// bf16 exponent codecs: encode and decode speed in GB/s of bf16 (2 bytes per
// weight), 1 thread and 2 threads, beside memcpy and ZipNN's published
// single-core figures (decode 1.66 GB/s, compress 1.12 GB/s, 1.51x;
// research/lossless-float.md).
//
// Data sets:
//   tinystories  testdata/tinystories-656k (20 tensors, 656k weights) rounded
//                to bf16; with 2 threads the tensors are decoded two at a time
//                (largest first), as a loader does.
//   synth64m     one 4096 x 8192 bf16 tensor (64 MiB), rows N(0, s^2) with s
//                log-normal around 0.02 (a trained layer's spread of row
//                scales); 2 threads split its chunks.
//
// Counters: GB/s is wall time; cpu_GB/s divides by the process CPU time (all
// threads), which stays meaningful on a shared, loaded machine: for 1 thread
// it is the per-core speed. The label gives ratio, bits per weight and the
// 8 + H(exponent) bound.
#include <benchmark/benchmark.h>

#include <atomic>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "boltpack/codec_registry.h"
#include "codecs/encoded_record.h"
#include "codecs/float_convert.h"
#include "io/safetensors.h"

namespace boltpack {
namespace {

struct Tensor {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> bf16;
};

struct DataSet {
  std::vector<Tensor> tensors;
  uint64_t weights = 0;
  double bound_bits = 0;  // 8 + H(exponent), per weight
};

void Finish(DataSet* d) {
  std::vector<uint64_t> freq(256);
  for (const auto& t : d->tensors) {
    for (size_t i = 0; i < t.bf16.size(); i += 2) ++freq[((t.bf16[i + 1] << 1) | (t.bf16[i] >> 7)) & 0xff];
    d->weights += t.bf16.size() / 2;
  }
  double h = 0;
  for (uint64_t f : freq) {
    if (f) h -= static_cast<double>(f) / d->weights * std::log2(static_cast<double>(f) / d->weights);
  }
  d->bound_bits = 8 + h;
  // Largest first: the 2-thread decode hands them out in this order.
  std::stable_sort(d->tensors.begin(), d->tensors.end(),
                   [](const Tensor& a, const Tensor& b) { return a.bf16.size() > b.bf16.size(); });
}

const DataSet& Synth() {
  static const DataSet set = [] {
    constexpr uint64_t kRows = 4096, kCols = 8192;
    DataSet d;
    Tensor t{"synth", {kRows, kCols}, std::vector<uint8_t>(kRows * kCols * 2)};
    std::mt19937 rng(1);
    std::normal_distribution<float> g(0, 1);
    std::normal_distribution<float> scale(0, 0.35f);
    std::vector<uint16_t> row(kCols);
    for (uint64_t r = 0; r < kRows; ++r) {
      const float s = 0.02f * std::exp(scale(rng));
      for (auto& x : row) x = F32ToBF16(s * g(rng));
      std::memcpy(t.bf16.data() + r * kCols * 2, row.data(), kCols * 2);
    }
    d.tensors.push_back(std::move(t));
    Finish(&d);
    return d;
  }();
  return set;
}

std::string SourceDir() {
  std::string f = __FILE__;  // <source>/bench/bf16_exp_bench.cc
  for (int up = 0; up < 2; ++up) f = f.substr(0, f.find_last_of('/'));
  return f;
}

const DataSet& Tiny() {
  static const DataSet set = [] {
    DataSet d;
    const char* env = std::getenv("BOLTPACK_TINYSTORIES");
    const std::string path = env ? env : SourceDir() + "/testdata/tinystories-656k/model.safetensors";
    auto model = io::SafetensorsModel::Open(path);
    if (!model.ok()) {
      std::fprintf(stderr, "cannot open %s: %s\n", path.c_str(), std::string(model.status().message()).c_str());
      return d;
    }
    for (size_t i = 0; i < (*model)->tensors().size(); ++i) {
      const auto& st = (*model)->tensors()[i];
      if (st.dtype != DType::kF32) continue;
      auto b = (*model)->TensorBytes(i);
      Tensor t{st.name, st.shape, std::vector<uint8_t>(b.size() / 2)};
      ConvertF32ToBF16(b.data(), t.bf16.data(), b.size() / 4);
      d.tensors.push_back(std::move(t));
    }
    Finish(&d);
    return d;
  }();
  return set;
}

const DataSet& Get(const std::string& set) { return set == "tinystories" ? Tiny() : Synth(); }

struct Prepared {
  std::vector<EncodedTensor> enc;
  std::vector<TensorInfo> info;
  uint64_t stored = 0;
};

const Prepared& Encoded(const std::string& set, const std::string& id) {
  static std::map<std::string, Prepared> cache;
  auto it = cache.find(set + "/" + id);
  if (it != cache.end()) return it->second;
  Prepared p;
  for (const Tensor& t : Get(set).tensors) {
    TensorSource src{t.name, DType::kBF16, t.shape, t.bf16};
    p.enc.push_back(*FindCodec(id)->Encode(src, {}, {.threads = 0}));
    p.info.push_back(RecordFor(t.name, DType::kBF16, t.shape, id, p.enc.back()));
    for (const auto& s : p.enc.back().streams) p.stored += s.bytes.size();
  }
  return cache.emplace(set + "/" + id, std::move(p)).first->second;
}

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Runs fn(tensor index, codec threads) over the data set's tensors on
// `threads` threads: a single tensor gets all of them, several tensors are
// handed out one at a time.
template <typename Fn>
void ForEachTensor(size_t count, int threads, Fn fn) {
  if (count == 1 || threads <= 1) {
    for (size_t i = 0; i < count; ++i) fn(i, threads);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < count;) fn(i, 1);
  };
  std::vector<std::thread> pool;
  for (int k = 1; k < threads; ++k) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

void Report(benchmark::State& state, uint64_t weights, double wall, double cpu, const std::string& label) {
  const double bytes = 2.0 * static_cast<double>(weights) * static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["GB/s"] = bytes / wall / 1e9;
  state.counters["cpu_GB/s"] = bytes / cpu / 1e9;
  state.SetLabel(label);
}

void BM_Decode(benchmark::State& state, const std::string& set, const std::string& id) {
  const DataSet& d = Get(set);
  if (d.tensors.empty()) return state.SkipWithError("no data");
  const Prepared& p = Encoded(set, id);
  const Codec* c = FindCodec(id);
  std::vector<DecodeInput> in;
  std::vector<std::vector<uint8_t>> dst;
  for (size_t t = 0; t < d.tensors.size(); ++t) {
    DecodeInput di{&p.info[t], {}, {}};
    for (const auto& s : p.enc[t].streams) {
      di.streams.push_back(s.bytes);
      di.raw_base.push_back(0);
    }
    in.push_back(std::move(di));
    dst.emplace_back(d.tensors[t].bf16.size());
  }
  const int threads = static_cast<int>(state.range(0));
  std::atomic<bool> failed{false};
  double wall = 0, cpu = 0;
  for (auto _ : state) {
    const auto w0 = std::chrono::steady_clock::now();
    const double c0 = ProcessCpuSeconds();
    ForEachTensor(d.tensors.size(), threads, [&](size_t t, int th) {
      if (!c->Decode(in[t], OutputType::kBF16, absl::MakeSpan(dst[t]), {.threads = th}).ok()) failed = true;
    });
    cpu += ProcessCpuSeconds() - c0;
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    benchmark::ClobberMemory();
  }
  if (failed) return state.SkipWithError("decode failed");
  for (size_t t = 0; t < d.tensors.size(); ++t) {
    if (id != "bf16-mx" && dst[t] != d.tensors[t].bf16) return state.SkipWithError("decode differs");
  }
  char buf[200];
  std::snprintf(buf, sizeof buf, "%.4fx, %.3f bits/w (8+H %.3f); ZipNN decode 1.66 GB/s/core, 1.51x",
                2.0 * d.weights / p.stored, 8.0 * p.stored / d.weights, d.bound_bits);
  Report(state, d.weights, wall, cpu, buf);
}

void BM_Encode(benchmark::State& state, const std::string& set, const std::string& id) {
  const DataSet& d = Get(set);
  if (d.tensors.empty()) return state.SkipWithError("no data");
  const Codec* c = FindCodec(id);
  const int threads = static_cast<int>(state.range(0));
  std::atomic<bool> failed{false};
  double wall = 0, cpu = 0;
  for (auto _ : state) {
    const auto w0 = std::chrono::steady_clock::now();
    const double c0 = ProcessCpuSeconds();
    ForEachTensor(d.tensors.size(), threads, [&](size_t t, int th) {
      TensorSource src{d.tensors[t].name, DType::kBF16, d.tensors[t].shape, d.tensors[t].bf16};
      auto enc = c->Encode(src, {}, {.threads = th});
      if (!enc.ok()) failed = true;
      benchmark::DoNotOptimize(enc);
    });
    cpu += ProcessCpuSeconds() - c0;
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  }
  if (failed) return state.SkipWithError("encode failed");
  Report(state, d.weights, wall, cpu, "ZipNN compress 1.12 GB/s/core");
}

void BM_Memcpy(benchmark::State& state, const std::string& set) {
  const DataSet& d = Get(set);
  std::vector<std::vector<uint8_t>> dst;
  for (const auto& t : d.tensors) dst.emplace_back(t.bf16.size());
  double wall = 0, cpu = 0;
  for (auto _ : state) {
    const auto w0 = std::chrono::steady_clock::now();
    const double c0 = ProcessCpuSeconds();
    for (size_t t = 0; t < d.tensors.size(); ++t) std::memcpy(dst[t].data(), d.tensors[t].bf16.data(), dst[t].size());
    benchmark::ClobberMemory();
    cpu += ProcessCpuSeconds() - c0;
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  }
  Report(state, d.weights, wall, cpu, "memcpy of the bf16 bytes, one core");
}

#define BF16_BENCH(set)                                                                                        \
  BENCHMARK_CAPTURE(BM_Memcpy, set, std::string(#set))->Unit(benchmark::kMillisecond)->UseRealTime();         \
  BENCHMARK_CAPTURE(BM_Decode, set##_huffman, std::string(#set), std::string("bf16-huffman"))                 \
      ->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();                                          \
  BENCHMARK_CAPTURE(BM_Decode, set##_unary, std::string(#set), std::string("bf16-unary"))                     \
      ->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();                                          \
  BENCHMARK_CAPTURE(BM_Decode, set##_mx, std::string(#set), std::string("bf16-mx"))                           \
      ->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();                                          \
  BENCHMARK_CAPTURE(BM_Encode, set##_huffman, std::string(#set), std::string("bf16-huffman"))                 \
      ->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();                                          \
  BENCHMARK_CAPTURE(BM_Encode, set##_unary, std::string(#set), std::string("bf16-unary"))                     \
      ->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();                                          \
  BENCHMARK_CAPTURE(BM_Encode, set##_mx, std::string(#set), std::string("bf16-mx"))                           \
      ->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()

BF16_BENCH(tinystories);
BF16_BENCH(synth64m);

}  // namespace
}  // namespace boltpack

BENCHMARK_MAIN();
