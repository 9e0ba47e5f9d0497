// Lossless bf16 per model: size and speed of the bf16 codecs on real model
// files, beside memcpy and the lossless peers (BRIEF.md: ZipNN 1.51x at
// 1.66 GB/s decode per core; DFloat11 about 11 bits/w; entropy limit about
// 10.6 bits/w; zstd on raw bf16 1.27x; ZipNN compress 1.12 GB/s per core,
// research/lossless-float.md).
//
//   bf16_corpus_bench [--min-time=S] [--threads=N] MODEL... [synth:MB]
//
// MODEL is a .safetensors or .gguf file; `synth:64` is one synthetic 64 MB
// (32 Mi values, 4096 x 8192) N(0, 0.02) tensor. Every float tensor (F32,
// F16, BF16, F64) is rounded to bf16 as the library does (container.md
// §10.5, round to nearest even); other dtypes (quantized GGUF blocks,
// integers) are skipped and counted. The codecs are driven through the
// registry's Encode/Decode, the calls the writer and reader make.
//
// Per model and codec: stored bits per weight, ratio vs bf16, and encode and
// decode GB/s of bf16 (2 bytes per weight) on 1 thread and on all threads.
// 1-thread speeds divide by the process CPU time (per-core speed, stable on
// a shared machine); all-thread speeds divide by wall time (what a loader
// sees). Each timed loop repeats for at least --min-time seconds, three
// times, and the best is kept. Every lossless decode is compared with its
// input bit for bit (and bf16-spec's draft view with the draft rule, §5);
// a mismatch aborts.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "boltpack/codec_registry.h"
#include "codecs/bf16_spec/split_kernel.h"
#include "codecs/encoded_record.h"
#include "codecs/float_convert.h"
#include "common/parallel_for.h"
#include "io/gguf.h"
#include "io/safetensors.h"

namespace boltpack {
namespace {

struct Tensor {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<uint16_t> bf16;
};

struct Model {
  std::string name;
  std::vector<Tensor> tensors;
  uint64_t params = 0;
  size_t skipped = 0;  // tensors of non-float dtypes
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "bf16_corpus_bench: FATAL: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Rounds a float tensor's bytes to bf16; false for other dtypes.
bool ToBf16(DType dtype, absl::Span<const uint8_t> bytes, std::vector<uint16_t>* out) {
  switch (dtype) {
    case DType::kBF16:
      out->resize(bytes.size() / 2);
      std::memcpy(out->data(), bytes.data(), bytes.size());
      return true;
    case DType::kF32:
      out->resize(bytes.size() / 4);
      ConvertF32ToBF16(bytes.data(), out->data(), out->size());
      return true;
    case DType::kF16:
      out->resize(bytes.size() / 2);
      ConvertF16ToBF16(bytes.data(), out->data(), out->size());
      return true;
    case DType::kF64: {
      // Through f32 (round to nearest even twice): the library's F64 path.
      std::vector<float> f(bytes.size() / 8);
      ConvertF64ToF32(bytes.data(), f.data(), f.size());
      out->resize(f.size());
      ConvertF32ToBF16(f.data(), out->data(), f.size());
      return true;
    }
    default:
      return false;
  }
}

void Add(Model* m, std::string name, std::vector<uint64_t> shape, DType dtype, absl::Span<const uint8_t> bytes) {
  Tensor t{std::move(name), std::move(shape), {}};
  if (!ToBf16(dtype, bytes, &t.bf16)) {
    ++m->skipped;
    return;
  }
  if (t.bf16.empty()) return;
  m->params += t.bf16.size();
  m->tensors.push_back(std::move(t));
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Model Load(const std::string& arg) {
  Model m;
  m.name = arg;
  if (arg.rfind("synth:", 0) == 0) {
    const uint64_t mb = std::strtoull(arg.c_str() + 6, nullptr, 10);
    const uint64_t cols = 8192, rows = std::max<uint64_t>(1, mb * 1000000 / 2 / cols);
    m.name = "synthetic N(0,0.02) " + std::to_string(rows) + "x" + std::to_string(cols);
    Tensor t{"synth", {rows, cols}, std::vector<uint16_t>(rows * cols)};
    std::mt19937 rng(1);
    std::normal_distribution<float> g(0, 0.02f);
    for (auto& x : t.bf16) x = F32ToBF16(g(rng));
    m.params = t.bf16.size();
    m.tensors.push_back(std::move(t));
    return m;
  }
  const size_t slash = arg.find_last_of('/');
  const std::string base = slash == std::string::npos ? arg : arg.substr(slash + 1);
  const std::string lower = Lower(arg);
  // Name the model by its folder and file: the corpus puts one model per folder.
  if (slash != std::string::npos) {
    const size_t up = arg.find_last_of('/', slash - 1);
    m.name = arg.substr(up == std::string::npos ? 0 : up + 1);
  }
  if (lower.size() >= 5 && lower.substr(lower.size() - 5) == ".gguf") {
    auto model = io::GgufModel::Open(arg);
    if (!model.ok()) Die(arg + ": " + std::string(model.status().message()));
    for (size_t i = 0; i < (*model)->tensors().size(); ++i) {
      const auto& gt = (*model)->tensors()[i];
      // Block types (q8_0, ...) are not floats: GgmlTypeDType gives their
      // block dtype, which ToBf16 refuses.
      const DType dt = gt.type->block_size > 1 ? DType::kUnspecified : io::GgmlTypeDType(*gt.type);
      Add(&m, std::string(gt.name), gt.Shape(), dt, (*model)->TensorBytes(i));
    }
  } else {
    auto model = io::SafetensorsModel::Open(arg);
    if (!model.ok()) Die(arg + ": " + std::string(model.status().message()));
    for (size_t i = 0; i < (*model)->tensors().size(); ++i) {
      const auto& st = (*model)->tensors()[i];
      Add(&m, st.name, st.shape, st.dtype, (*model)->TensorBytes(i));
    }
  }
  // Largest first: the all-thread runs hand tensors out in this order.
  std::stable_sort(m.tensors.begin(), m.tensors.end(),
                   [](const Tensor& a, const Tensor& b) { return a.bf16.size() > b.bf16.size(); });
  return m;
}

double ExponentBound(const Model& m) {
  std::vector<uint64_t> freq(256);
  for (const auto& t : m.tensors) {
    for (uint16_t x : t.bf16) ++freq[(x >> 7) & 0xff];
  }
  double h = 0;
  const double n = static_cast<double>(m.params);
  for (uint64_t f : freq) {
    if (f) h -= static_cast<double>(f) / n * std::log2(static_cast<double>(f) / n);
  }
  return 8 + h;
}

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Options {
  double min_time = 0.3;
  int threads = 0;  // all hardware threads
};

// Runs fn(tensor, codec threads) once over the model. One thread: in order.
// Several: tensors with at least `threads` chunks of work each get all the
// threads (the codec splits them), one after another; the rest are handed
// out one at a time, one codec thread each.
template <typename Fn>
void ForEachTensor(const Model& m, int threads, const Fn& fn) {
  if (threads <= 1) {
    for (size_t i = 0; i < m.tensors.size(); ++i) fn(i, 1);
    return;
  }
  const uint64_t big = static_cast<uint64_t>(threads) << 18;
  size_t i = 0;
  for (; i < m.tensors.size() && m.tensors[i].bf16.size() >= big; ++i) fn(i, threads);
  if (i == m.tensors.size()) return;
  std::atomic<size_t> next{i};
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < m.tensors.size();) fn(k, 1);
  };
  std::vector<std::thread> pool;
  for (int k = 1; k < threads; ++k) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

// GB/s of bf16 for `body` (one pass over the model): the best of three
// runs of at least min_time each; by CPU time for one thread, wall time
// otherwise.
template <typename Body>
double Speed(const Model& m, const Options& o, int threads, const Body& body) {
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    uint64_t iters = 0;
    const double w0 = WallSeconds(), c0 = CpuSeconds();
    double w = 0, c = 0;
    do {
      body(threads);
      ++iters;
      w = WallSeconds() - w0;
      c = CpuSeconds() - c0;
    } while (w < o.min_time);
    const double secs = threads <= 1 ? c : w;
    best = std::max(best, 2.0 * static_cast<double>(m.params) * static_cast<double>(iters) / secs / 1e9);
  }
  return best;
}

struct CodecRun {
  const char* id;
  const char* label;
  CodecParams params;
};

struct Row {
  std::string codec;
  double bpw = 0, ratio = 0, enc1 = 0, encn = 0, dec1 = 0, decn = 0;
  std::string note;
};

std::string Fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[200];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

std::vector<Row> RunModel(const Model& m, const Options& o, int all) {
  std::vector<Row> rows;
  std::vector<CodecRun> runs = {
      {"bf16-huffman", "bf16-huffman", {}},
      {"bf16-unary", "bf16-unary", {}},
      {"bf16-mx", "bf16-mx", {}},
      {"bf16-spec", "bf16-spec k.5 m3",
       {{"keep", MetaValue::Float64(0.5)}, {"mbits", MetaValue::Uint(ValueType::kUint64, 3)}}},
  };
  const size_t nt = m.tensors.size();
  for (const auto& run : runs) {
    const Codec* codec = FindCodec(run.id);
    if (codec == nullptr) Die(std::string("codec not registered: ") + run.id);
    std::vector<EncodedTensor> enc(nt);
    std::vector<TensorInfo> info(nt);
    std::vector<std::vector<uint16_t>> dst(nt);
    auto src_of = [&](size_t i) {
      const Tensor& t = m.tensors[i];
      return TensorSource{t.name, DType::kBF16, t.shape,
                          absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(t.bf16.data()), t.bf16.size() * 2)};
    };
    for (size_t i = 0; i < nt; ++i) {
      auto e = codec->Encode(src_of(i), run.params, {.threads = all});
      if (!e.ok()) Die(m.name + ": " + m.tensors[i].name + ": " + run.id + " encode: " + std::string(e.status().message()));
      enc[i] = *std::move(e);
      info[i] = RecordFor(m.tensors[i].name, DType::kBF16, m.tensors[i].shape, run.id, enc[i]);
      absl::Status v = codec->ValidateRecord(info[i]);
      if (!v.ok()) Die(m.name + ": " + m.tensors[i].name + ": " + run.id + " record: " + std::string(v.message()));
      dst[i].resize(m.tensors[i].bf16.size());
    }
    std::atomic<bool> failed{false};
    auto encode = [&](int threads) {
      ForEachTensor(m, threads, [&](size_t i, int th) {
        auto e = codec->Encode(src_of(i), run.params, {.threads = th});
        if (!e.ok()) failed = true;
      });
    };
    auto decode_view = [&](const std::string& view, int threads) {
      ForEachTensor(m, threads, [&](size_t i, int th) {
        DecodeInput in = InputFor(info[i], enc[i]);
        if (!view.empty()) {
          in.view = view;
          in.streams[1] = {};  // the draft reads the speculation stream only
        }
        auto out = absl::MakeSpan(reinterpret_cast<uint8_t*>(dst[i].data()), dst[i].size() * 2);
        absl::Status st = codec->Decode(in, OutputType::kBF16, out, {.threads = th});
        if (!st.ok()) {
          std::fprintf(stderr, "%s: %s: %s decode: %s\n", m.name.c_str(), m.tensors[i].name.c_str(), run.id,
                       std::string(st.message()).c_str());
          failed = true;
        }
      });
    };
    Row r;
    r.codec = run.label;
    uint64_t stored = 0, spec_bytes = 0;
    for (const auto& e : enc) {
      for (const auto& s : e.streams) stored += s.bytes.size();
      if (!e.streams.empty()) spec_bytes += e.streams[0].bytes.size();
    }
    r.bpw = 8.0 * static_cast<double>(stored) / static_cast<double>(m.params);
    r.ratio = 2.0 * static_cast<double>(m.params) / static_cast<double>(stored);
    r.enc1 = Speed(m, o, 1, encode);
    r.encn = Speed(m, o, all, encode);
    const bool lossy = std::string(run.id) == "bf16-mx";
    auto full = [&](int threads) { decode_view("", threads); };
    r.dec1 = Speed(m, o, 1, full);
    r.decn = Speed(m, o, all, full);
    if (failed) Die(m.name + ": " + run.id + ": an encode or decode failed");
    if (!lossy) {
      for (size_t i = 0; i < nt; ++i) {
        if (dst[i] != m.tensors[i].bf16) Die(m.name + ": " + m.tensors[i].name + ": " + run.id + " decode is not bit-exact");
      }
      r.note = "bit-exact";
    } else {
      // Error over finite values and the share of values that changed, as
      // the encoder's rel_rms_error / lossy_fraction define them.
      double num = 0, den = 0;
      uint64_t changed = 0;
      for (size_t i = 0; i < nt; ++i) {
        const auto& a = m.tensors[i].bf16;
        for (size_t j = 0; j < a.size(); ++j) {
          changed += a[j] != dst[i][j];
          const double x = BF16ToF32(a[j]), y = BF16ToF32(dst[i][j]);
          if (!std::isfinite(x)) continue;
          num += (x - y) * (x - y);
          den += x * x;
        }
      }
      r.note = Fmt("rel.RMS err %.2e, %.2f%% of values lost bits", den > 0 ? std::sqrt(num / den) : 0.0,
                   100.0 * static_cast<double>(changed) / static_cast<double>(m.params));
    }
    if (std::string(run.id) == "bf16-spec") {
      r.note = Fmt("draft %.2f%% of bf16 (%.2f bits/w); full ", 100.0 * static_cast<double>(spec_bytes) / (2.0 * m.params),
                   8.0 * static_cast<double>(spec_bytes) / static_cast<double>(m.params)) +
               r.note;
      rows.push_back(r);
      // The draft view: speculation bytes only; each value is 0 (pruned) or
      // the original with its low 4 mantissa bits replaced by 1000 (§5).
      Row d;
      d.codec = "  draft view";
      d.bpw = 8.0 * static_cast<double>(spec_bytes) / static_cast<double>(m.params);
      d.ratio = 2.0 * static_cast<double>(m.params) / static_cast<double>(spec_bytes);
      auto draft = [&](int threads) { decode_view("draft", threads); };
      d.dec1 = Speed(m, o, 1, draft);
      d.decn = Speed(m, o, all, draft);
      if (failed) Die(m.name + ": bf16-spec draft decode failed");
      uint64_t kept = 0;
      for (size_t i = 0; i < nt; ++i) {
        const auto& a = m.tensors[i].bf16;
        for (size_t j = 0; j < a.size(); ++j) {
          const uint32_t x = a[j];
          const uint16_t want = bf16_spec::DraftValue(x >> 15, (x >> 7) & 0xff, (x & 0x7f) >> 4, 3);
          if (dst[i][j] != 0 && dst[i][j] != want) {
            Die(m.name + ": " + m.tensors[i].name + ": bf16-spec draft value breaks the draft rule");
          }
          kept += dst[i][j] != 0;
        }
      }
      d.note = Fmt("%.1f%% of values non-zero; checked against the draft rule",
                   100.0 * static_cast<double>(kept) / static_cast<double>(m.params));
      rows.push_back(d);
      continue;
    }
    rows.push_back(r);
  }
  return rows;
}

double MemcpySpeed(const Model& m, const Options& o) {
  std::vector<std::vector<uint16_t>> dst;
  for (const auto& t : m.tensors) dst.emplace_back(t.bf16.size());
  return Speed(m, o, 1, [&](int) {
    for (size_t i = 0; i < m.tensors.size(); ++i) {
      std::memcpy(dst[i].data(), m.tensors[i].bf16.data(), dst[i].size() * 2);
    }
    // Keep the copies from being optimised away.
    asm volatile("" : : "r"(dst.data()) : "memory");
  });
}

void PrintRow(const Row& r) {
  auto sp = [](double v) { return v > 0 ? Fmt("%7.2f", v) : std::string("      -"); };
  std::printf("| %-17s | %6.3f | %6.3fx | %s | %s | %s | %s | %s |\n", r.codec.c_str(), r.bpw, r.ratio, sp(r.enc1).c_str(),
              sp(r.encn).c_str(), sp(r.dec1).c_str(), sp(r.decn).c_str(), r.note.c_str());
}

int Main(int argc, char** argv) {
  Options o;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--min-time=", 0) == 0) {
      o.min_time = std::atof(a.c_str() + 11);
    } else if (a.rfind("--threads=", 0) == 0) {
      o.threads = std::atoi(a.c_str() + 10);
    } else if (a == "--help" || a == "-h" || a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "usage: %s [--min-time=S] [--threads=N] MODEL.{safetensors,gguf}... [synth:MB]\n", argv[0]);
      return a == "--help" || a == "-h" ? 0 : 2;
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s [--min-time=S] [--threads=N] MODEL.{safetensors,gguf}... [synth:MB]\n", argv[0]);
    return 2;
  }
  const int all = o.threads > 0 ? o.threads : HardwareThreads();
  std::printf("# Lossless bf16 per model: %d threads for \"all\"; 1-thread speeds by CPU time, all-thread by wall "
              "time; GB/s of bf16 (2 bytes/weight)\n",
              all);
  std::printf("# Peers (BRIEF.md): ZipNN 1.51x (10.6 bits/w), decode 1.66 GB/s/core, compress 1.12 GB/s/core; "
              "DFloat11 ~11 bits/w; entropy limit ~10.6 bits/w (1.50x); zstd on raw bf16 ~1.27x; "
              "memcpy ~5.2 GB/s copied\n\n");
  std::vector<std::pair<Model, std::vector<Row>>> results;
  for (const auto& in : inputs) {
    Model m = Load(in);
    if (m.tensors.empty()) {
      std::printf("## %s: no float tensors (%zu others), skipped\n\n", m.name.c_str(), m.skipped);
      continue;
    }
    const double memcpy_gbs = MemcpySpeed(m, o);
    std::printf("## %s: %zu float tensors%s, %llu params, %llu bf16 bytes, 8+H(exponent) = %.3f bits/w "
                "(order-0 bound %.3fx); memcpy %.2f GB/s (1 thread)\n\n",
                m.name.c_str(), m.tensors.size(),
                m.skipped ? (", " + std::to_string(m.skipped) + " non-float skipped").c_str() : "",
                static_cast<unsigned long long>(m.params), static_cast<unsigned long long>(2 * m.params),
                ExponentBound(m), 16.0 / ExponentBound(m), memcpy_gbs);
    std::printf("| codec             |    bpw |   ratio | enc 1t | enc %dt | dec 1t | dec %dt | check |\n", all, all);
    std::printf("|---|---:|---:|---:|---:|---:|---:|---|\n");
    std::fflush(stdout);
    auto rows = RunModel(m, o, all);
    for (const auto& r : rows) PrintRow(r);
    std::printf("\n");
    std::fflush(stdout);
    m.tensors.clear();  // only the name and counts are needed from here on
    results.emplace_back(std::move(m), std::move(rows));
  }
  // Totals over the model files (the synthetic tensor is left out: it is
  // there for speed at size): sizes weighted by weights, speeds as total
  // bytes over total time.
  std::vector<const std::pair<Model, std::vector<Row>>*> files;
  for (const auto& mr : results) {
    if (mr.first.name.rfind("synthetic", 0) != 0) files.push_back(&mr);
  }
  if (files.size() > 1) {
    uint64_t params = 0;
    for (const auto* f : files) params += f->first.params;
    std::printf("## total over %zu model files: %llu params, %llu bf16 bytes\n\n", files.size(),
                static_cast<unsigned long long>(params), static_cast<unsigned long long>(2 * params));
    std::printf("| codec             |    bpw |   ratio | enc 1t | enc %dt | dec 1t | dec %dt | |\n", all, all);
    std::printf("|---|---:|---:|---:|---:|---:|---:|---|\n");
    for (size_t k = 0; k < files.front()->second.size(); ++k) {
      Row t;
      t.codec = files.front()->second[k].codec;
      double bits = 0, time[4] = {0, 0, 0, 0};
      bool have[4] = {true, true, true, true};
      for (const auto* f : files) {
        const Row& r = f->second[k];
        const double p = static_cast<double>(f->first.params);
        bits += r.bpw * p;
        const double sp[4] = {r.enc1, r.encn, r.dec1, r.decn};
        for (int j = 0; j < 4; ++j) {
          if (sp[j] > 0) time[j] += 2.0 * p / sp[j];
          else have[j] = false;
        }
      }
      t.bpw = bits / static_cast<double>(params);
      t.ratio = 16.0 / t.bpw;
      double* out[4] = {&t.enc1, &t.encn, &t.dec1, &t.decn};
      for (int j = 0; j < 4; ++j) *out[j] = have[j] && time[j] > 0 ? 2.0 * static_cast<double>(params) / time[j] : 0;
      PrintRow(t);
    }
  }
  return 0;
}

}  // namespace
}  // namespace boltpack

int main(int argc, char** argv) { return boltpack::Main(argc, argv); }
