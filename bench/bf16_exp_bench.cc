// bf16 exponent codecs: encode and decode speed on one core and on all
// cores, in GB/s of bf16 (2 bytes per weight), beside memcpy. Peer: ZipNN
// decodes 1.66 GB/s per core (compress 1.12) at 1.51x (BRIEF.md).
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "boltpack/codec_registry.h"
#include "codecs/float_convert.h"
#include "common/parallel_for.h"

namespace boltpack {
namespace {

constexpr uint64_t kRows = 4096, kCols = 8192;  // 32 Mi weights = 64 MiB bf16
constexpr uint64_t kN = kRows * kCols;
const std::vector<uint64_t> kShape = {kRows, kCols};

const std::vector<uint8_t>& Source() {
  static const std::vector<uint8_t> bytes = [] {
    std::vector<uint16_t> v(kN);
    std::mt19937 rng(1);
    std::normal_distribution<float> g(0, 0.02f);
    for (auto& x : v) x = F32ToBF16(g(rng));
    std::vector<uint8_t> b(kN * 2);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  }();
  return bytes;
}

struct Prepared {
  EncodedTensor enc;
  TensorInfo info;
};

const Prepared& Encoded(const std::string& id) {
  static std::map<std::string, Prepared> cache;
  auto it = cache.find(id);
  if (it != cache.end()) return it->second;
  Prepared p;
  TensorSource src{"w", DType::kBF16, kShape, Source()};
  p.enc = *FindCodec(id)->Encode(src, {}, {.threads = 0});
  p.info.name = "w";
  p.info.shape = kShape;
  p.info.dtype = DType::kBF16;
  p.info.codec_id = id;
  p.info.codec_params = p.enc.params;
  for (const auto& s : p.enc.streams) {
    StreamInfo si;
    si.role = s.role;
    si.length = si.raw_length = s.bytes.size();
    for (const auto& c : s.chunks) si.chunks.push_back({c.raw_offset, c.raw_length, c.raw_offset, c.raw_length, c.first_row, c.row_count, 0});
    p.info.streams.push_back(std::move(si));
  }
  return cache.emplace(id, std::move(p)).first->second;
}

std::string Label(const Prepared& p, const char* peer) {
  uint64_t stored = 0;
  for (const auto& s : p.enc.streams) stored += s.bytes.size();
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.4fx vs bf16, %.3f bits/w; %s", 2.0 * kN / stored, 8.0 * stored / kN, peer);
  return buf;
}

void BM_Decode(benchmark::State& state, const std::string& id) {
  const Prepared& p = Encoded(id);
  const Codec* c = FindCodec(id);
  DecodeInput in{&p.info, {}, {}};
  for (const auto& s : p.enc.streams) {
    in.streams.push_back(s.bytes);
    in.raw_base.push_back(0);
  }
  std::vector<uint8_t> dst(kN * 2);
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    absl::Status st = c->Decode(in, OutputType::kBF16, absl::MakeSpan(dst), {.threads = threads});
    if (!st.ok()) state.SkipWithError(std::string(st.message()).c_str());
    benchmark::ClobberMemory();
  }
  if (dst != Source() && id != "bf16-mx") state.SkipWithError("decode differs");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kN * 2));
  state.counters["threads"] = threads == 0 ? HardwareThreads() : threads;
  state.SetLabel(Label(p, "ZipNN decode 1.66 GB/s/core, 1.51x"));
}

void BM_Encode(benchmark::State& state, const std::string& id) {
  const Codec* c = FindCodec(id);
  TensorSource src{"w", DType::kBF16, kShape, Source()};
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    auto enc = c->Encode(src, {}, {.threads = threads});
    if (!enc.ok()) state.SkipWithError(std::string(enc.status().message()).c_str());
    benchmark::DoNotOptimize(enc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kN * 2));
  state.counters["threads"] = threads == 0 ? HardwareThreads() : threads;
  state.SetLabel("ZipNN compress 1.12 GB/s/core");
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
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_CAPTURE(BM_Decode, huffman, std::string("bf16-huffman"))->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Decode, unary, std::string("bf16-unary"))->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Decode, mx, std::string("bf16-mx"))->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Encode, huffman, std::string("bf16-huffman"))->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Encode, unary, std::string("bf16-unary"))->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Encode, mx, std::string("bf16-mx"))->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace boltpack

BENCHMARK_MAIN();
