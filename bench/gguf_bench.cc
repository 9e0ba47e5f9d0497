// Opening and indexing a GGUF of 10,000 tensors (metadata only, as ggml's
// gguf_init_from_file with no_alloc): ggml d99724f takes 309 ms because its
// open is quadratic in the tensor count; this reader is linear.
#include <filesystem>

#include <benchmark/benchmark.h>

#include "common/atomic_file.h"
#include "io/gguf.h"

namespace {

// `n` Q8_0 tensors with llama.cpp-style names, with or without a
// 32,000-token vocabulary.
std::string MakeFile(int n, bool vocab) {
  using namespace boltpack;
  std::string path = (std::filesystem::temp_directory_path() / ("gguf_bench_" + std::to_string(n) + (vocab ? "v" : "") + ".gguf")).string();
  if (std::filesystem::exists(path)) return path;
  Metadata kv{{"general.architecture", MetaValue::String("llama")}};
  std::vector<MetaValue> tokens;
  for (int i = 0; i < (vocab ? 32000 : 0); ++i) tokens.push_back(MetaValue::String("tok" + std::to_string(i)));
  if (vocab) kv.emplace_back("tokenizer.ggml.tokens", MetaValue::Array(ValueType::kString, std::move(tokens)));
  std::vector<io::GgufTensorDecl> decls;
  for (int i = 0; i < n; ++i) decls.push_back({"blk." + std::to_string(i / 10) + ".t" + std::to_string(i % 10) + ".weight", {64, 2}, 8});
  auto w = io::GgufWriter::Create(path, kv, decls);
  if (!w.ok()) std::abort();
  std::vector<uint8_t> bytes(136, 0);
  for (int i = 0; i < n; ++i) {
    if (!(*w)->WriteNext(bytes).ok()) std::abort();
  }
  if (!(*w)->Finish().ok()) std::abort();
  return path;
}

void BM_GgufOpen(benchmark::State& state) {
  std::string path = MakeFile(static_cast<int>(state.range(0)), state.range(1) != 0);
  for (auto _ : state) {
    auto m = boltpack::io::GgufModel::Open(path);
    if (!m.ok()) state.SkipWithError(std::string(m.status().message()).c_str());
    benchmark::DoNotOptimize((*m)->FindTensor("blk.10.t3.weight"));
  }
  state.counters["tensors"] = static_cast<double>(state.range(0));
}
// Second argument: 1 adds a 32,000-token vocabulary (string array).
BENCHMARK(BM_GgufOpen)
    ->ArgsProduct({{1000, 3000, 10000, 30000}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
