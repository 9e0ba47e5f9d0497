// bf16-spec (the Cassandra split) and the online KV split: encode and
// decode speed in GB/s of bf16 (2 bytes per value), beside memcpy. Peer:
// ZipNN decodes 1.66 GB/s per core (compress 1.12) at 1.51x, lossless
// (research/lossless-float.md §6).
//
//   BM_SpecDecode/<view>/<threads>   whole-tensor decode of a 4096 x 8192 tensor
//   BM_SpecEncode/<threads>          encode (selection, split, Huffman tables, lanes)
//   BM_KvEncode/<n>                  one K/V vector at a time, n = 128x8 and 4096
//   BM_KvDecode{Draft,Full}/<n>
//   BM_KvPortable{Encode,DecodeFull}/<n>   the same without SIMD/BMI2 (the
//                                          portable build, same bytes)
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/kv_split.h"
#include "codecs/bf16_spec/split_kernel.h"
#include "codecs/encoded_record.h"
#include "codecs/float_convert.h"
#include "common/parallel_for.h"

namespace boltpack {
namespace {

constexpr uint64_t kRows = 4096, kCols = 8192;  // 32 Mi weights = 64 MiB bf16
constexpr uint64_t kN = kRows * kCols;
const std::vector<uint64_t> kShape = {kRows, kCols};

std::vector<uint16_t> Gaussian(size_t n, float sigma, uint32_t seed) {
  std::vector<uint16_t> v(n);
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, sigma);
  for (auto& x : v) x = F32ToBF16(g(rng));
  return v;
}

const std::vector<uint8_t>& Source() {
  static const std::vector<uint8_t> bytes = [] {
    const auto v = Gaussian(kN, 0.02f, 1);
    std::vector<uint8_t> b(kN * 2);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  }();
  return bytes;
}

const CodecParams& Params() {
  static const CodecParams p = {{"keep", MetaValue::Float64(0.5)}, {"mbits", MetaValue::Uint(ValueType::kUint64, 3)}};
  return p;
}

struct Prepared {
  EncodedTensor enc;
  TensorInfo info;
};

const Prepared& Encoded() {
  static const Prepared p = [] {
    Prepared q;
    TensorSource src{"w", DType::kBF16, kShape, Source()};
    q.enc = *FindCodec("bf16-spec")->Encode(src, Params(), {.threads = 0});
    q.info = RecordFor("w", DType::kBF16, kShape, "bf16-spec", q.enc);
    return q;
  }();
  return p;
}

std::string SizeLabel(const Prepared& p) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "draft %.2f%% + verify %.2f%% of bf16; ZipNN decode 1.66 GB/s/core, 1.51x",
                100.0 * p.enc.streams[0].bytes.size() / (2.0 * kN), 100.0 * p.enc.streams[1].bytes.size() / (2.0 * kN));
  return buf;
}

void BM_SpecDecode(benchmark::State& state, std::string view) {
  const Prepared& p = Encoded();
  const Codec* c = FindCodec("bf16-spec");
  DecodeInput in = InputFor(p.info, p.enc);
  in.view = view;
  if (view == "draft") in.streams[1] = {};
  std::vector<uint8_t> dst(kN * 2);
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    absl::Status st = c->Decode(in, OutputType::kBF16, absl::MakeSpan(dst), {.threads = threads});
    if (!st.ok()) state.SkipWithError(std::string(st.message()).c_str());
    benchmark::ClobberMemory();
  }
  if (view == "full" && dst != Source()) state.SkipWithError("decode differs");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kN * 2));
  state.counters["threads"] = threads == 0 ? HardwareThreads() : threads;
  state.SetLabel(SizeLabel(p));
}

void BM_SpecEncode(benchmark::State& state) {
  const Codec* c = FindCodec("bf16-spec");
  TensorSource src{"w", DType::kBF16, kShape, Source()};
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    auto enc = c->Encode(src, Params(), {.threads = threads});
    if (!enc.ok()) state.SkipWithError(std::string(enc.status().message()).c_str());
    benchmark::DoNotOptimize(enc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kN * 2));
  state.counters["threads"] = threads == 0 ? HardwareThreads() : threads;
  state.SetLabel("keep 0.5, mbits 3, magnitude; ZipNN compress 1.12 GB/s/core");
}

void BM_Memcpy(benchmark::State& state) {
  std::vector<uint8_t> dst(kN * 2);
  const auto& src = Source();
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kN * 2));
  state.SetLabel("memcpy of the bf16 bytes, one core");
}

// ---- KV vectors ---------------------------------------------------------------

constexpr size_t kKvVectors = 256;  // per iteration, cycled through a cache-sized set

struct KvSetup {
  KvSplitCodec codec;
  std::vector<uint16_t> vectors;
  std::vector<uint8_t> spec, verif;
  std::vector<KvSplitSizes> sizes;
};

KvSetup& Kv(size_t n) {
  static std::map<size_t, KvSetup*> cache;
  auto it = cache.find(n);
  if (it != cache.end()) return *it->second;
  const auto calib = Gaussian(n, 1.0f, 2);
  auto codec = KvSplitCodec::Create(n, {0.5, 3}, calib);
  auto* s = new KvSetup{*std::move(codec), Gaussian(n * kKvVectors, 1.0f, 3), {}, {}, {}};
  const size_t ms = s->codec.max_speculation_bytes(), mv = s->codec.max_verification_bytes();
  s->spec.resize(ms * kKvVectors);
  s->verif.resize(mv * kKvVectors);
  for (size_t i = 0; i < kKvVectors; ++i) {
    s->sizes.push_back(*s->codec.Encode(absl::MakeConstSpan(s->vectors).subspan(i * n, n),
                                        absl::MakeSpan(s->spec).subspan(i * ms, ms),
                                        absl::MakeSpan(s->verif).subspan(i * mv, mv)));
  }
  cache[n] = s;
  return *s;
}

std::string KvLabel(const KvSetup& s, size_t n) {
  size_t sp = 0, ve = 0;
  for (const auto& z : s.sizes) {
    sp += z.speculation;
    ve += z.verification;
  }
  char buf[160];
  const double bf16 = 2.0 * n * kKvVectors;
  std::snprintf(buf, sizeof buf, "draft %.2f%% + verify %.2f%% of bf16; goal >= 1 GB/s", 100.0 * sp / bf16,
                100.0 * ve / bf16);
  return buf;
}

void BM_KvEncode(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  KvSetup& s = Kv(n);
  const size_t ms = s.codec.max_speculation_bytes(), mv = s.codec.max_verification_bytes();
  for (auto _ : state) {
    for (size_t i = 0; i < kKvVectors; ++i) {
      auto z = s.codec.Encode(absl::MakeConstSpan(s.vectors).subspan(i * n, n), absl::MakeSpan(s.spec).subspan(i * ms, ms),
                              absl::MakeSpan(s.verif).subspan(i * mv, mv));
      benchmark::DoNotOptimize(z);
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kKvVectors * n * 2));
  state.SetLabel(KvLabel(s, n));
}

void BM_KvDecode(benchmark::State& state, bool full) {
  const size_t n = static_cast<size_t>(state.range(0));
  KvSetup& s = Kv(n);
  const size_t ms = s.codec.max_speculation_bytes(), mv = s.codec.max_verification_bytes();
  std::vector<uint16_t> out(n * kKvVectors);
  for (auto _ : state) {
    for (size_t i = 0; i < kKvVectors; ++i) {
      auto sp = absl::MakeConstSpan(s.spec).subspan(i * ms, s.sizes[i].speculation);
      auto o = absl::MakeSpan(out).subspan(i * n, n);
      absl::Status st = full ? s.codec.DecodeFull(sp, absl::MakeConstSpan(s.verif).subspan(i * mv, s.sizes[i].verification), o)
                             : s.codec.DecodeDraft(sp, o);
      if (!st.ok()) state.SkipWithError(std::string(st.message()).c_str());
    }
    benchmark::ClobberMemory();
  }
  if (full && out != s.vectors) state.SkipWithError("decode differs");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kKvVectors * n * 2));
  state.SetLabel(KvLabel(s, n));
}

void BM_KvPortableEncode(benchmark::State& state) {
  bf16_spec::SetKvSplitPortableForTesting(true);
  BM_KvEncode(state);
  bf16_spec::SetKvSplitPortableForTesting(false);
}

void BM_KvPortableDecodeFull(benchmark::State& state) {
  bf16_spec::SetKvSplitPortableForTesting(true);
  BM_KvDecode(state, true);
  bf16_spec::SetKvSplitPortableForTesting(false);
}

void BM_KvMemcpy(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  KvSetup& s = Kv(n);
  std::vector<uint16_t> out(n * kKvVectors);
  for (auto _ : state) {
    for (size_t i = 0; i < kKvVectors; ++i) std::memcpy(out.data() + i * n, s.vectors.data() + i * n, n * 2);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kKvVectors * n * 2));
}

BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_SpecDecode, full, std::string("full"))->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_SpecDecode, draft, std::string("draft"))->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SpecEncode)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_KvMemcpy)->Arg(1024)->Arg(4096)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_KvEncode)->Arg(1024)->Arg(4096)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KvDecode, draft, false)->Arg(1024)->Arg(4096)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_KvDecode, full, true)->Arg(1024)->Arg(4096)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_KvPortableEncode)->Arg(1024)->Arg(4096)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_KvPortableDecodeFull)->Arg(1024)->Arg(4096)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace boltpack

BENCHMARK_MAIN();
