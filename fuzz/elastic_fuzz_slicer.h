// The slicer half of the elastic fuzz target: the fixed fuzz model
// (fuzz/elastic_fuzz_model.h) is written once, with real data, as a .bolt
// held in memory; for every budget a fuzzed manifest declares (the first
// kMaxCutBudgets), every kept tensor is cut both ways `bolt-pack slice`
// can cut it — in place, as pieces of the input mapping handed to the
// writer (format/cut_pieces.h), and by the gathering cutter
// (CutStoredTensor) — and the two must give the same record shape and the
// same bytes, which must also be the source cells the plan's runs name
// (runs of groups, segments and product dimensions alike: the plan comes
// from format/elastic_runs.h).
#ifndef BOLTPACK_FUZZ_ELASTIC_FUZZ_SLICER_H_
#define BOLTPACK_FUZZ_ELASTIC_FUZZ_SLICER_H_

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <memory>
#include <string>
#include <vector>

#include "boltpack/reader.h"
#include "boltpack/writer.h"
#include "format/cut_pieces.h"
#include "format/elastic_cut.h"
#include "format/elastic_plan.h"
#include "format/elastic_runs.h"

namespace boltpack::fuzz {

inline constexpr size_t kMaxCutBudgets = 8;

// Element `i` (row-major) of every fuzz-model tensor before encoding.
inline float SourceValue(uint64_t i) { return static_cast<float>(i % 4093) * 0.25f - 500.0f; }

// The fuzz model with every element distinct (f32: its index; q8_0: the
// encoding of index-dependent values), written to a temporary .bolt once.
inline const Reader& ElasticFuzzReader(const std::vector<TensorInfo>& tensors) {
  static std::unique_ptr<Reader> reader = [&] {
    std::string path = "/tmp/boltpack-fuzz-elastic-" + std::to_string(::getpid()) + ".bolt";
    auto writer = Writer::Create(path);
    if (!writer.ok()) __builtin_trap();
    for (const auto& t : tensors) {
      uint64_t n = 1;
      for (uint64_t d : t.shape) n *= d;
      std::vector<float> values(n);
      for (uint64_t i = 0; i < n; ++i) values[i] = SourceValue(i);
      TensorSource src{t.name, DType::kF32, t.shape,
                       {reinterpret_cast<const uint8_t*>(values.data()), values.size() * sizeof(float)}};
      auto enc = EncodeTensor(t.codec_id, src, {}, {});
      if (!enc.ok()) __builtin_trap();
      if (!(*writer)->AddTensor(t.name, t.shape, DType::kF32, t.codec_id, std::move(*enc)).ok()) __builtin_trap();
    }
    if (!(*writer)->Finish().ok()) __builtin_trap();
    auto r = Reader::Open(path);
    if (!r.ok()) __builtin_trap();
    std::remove(path.c_str());  // the mapping stays valid
    return std::move(*r);
  }();
  return *reader;
}

// Drains every piece source of an in-place cut into one buffer per stream.
inline std::vector<std::vector<uint8_t>> DrainPieces(format::CutInPlace& cut) {
  std::vector<std::vector<uint8_t>> out;
  for (PieceSource* s : cut.pieces()) {
    std::vector<uint8_t> bytes;
    for (;;) {
      auto piece = s->Next();
      if (!piece.ok()) __builtin_trap();  // the source file is intact
      if (piece->empty()) break;
      if (!s->Check(*piece).ok()) __builtin_trap();
      bytes.insert(bytes.end(), piece->begin(), piece->end());
    }
    if (bytes.size() != s->size()) __builtin_trap();
    out.push_back(std::move(bytes));
  }
  return out;
}

inline void CheckEveryCut(const ElasticManifest& m, const std::vector<TensorInfo>& tensors) {
  const Reader& reader = ElasticFuzzReader(tensors);
  size_t budgets = 0;
  for (const auto& b : m.budgets) {
    if (++budgets > kMaxCutBudgets) break;
    auto plan = format::PlanSlice(m, reader.tensors(), {}, b);
    if (!plan.ok()) __builtin_trap();
    for (const auto& p : plan->tensors) {
      const TensorInfo& t = reader.tensors()[p.source];
      format::ElementMaps maps = format::RunMaps(t.shape, p.runs);
      auto gathered = format::CutStoredTensor(reader, p.source, maps, p.name);
      if (!gathered.ok()) __builtin_trap();  // the validator accepted this cut
      if (gathered->info.shape != p.kept) __builtin_trap();
      auto in_place = format::CutTensorInPlace(reader, p.source, maps, p.name);
      if (!in_place) continue;  // a cut only the gathering cutter makes
      if (in_place->info.shape != p.kept) __builtin_trap();
      auto streams = DrainPieces(*in_place);
      if (streams.size() != gathered->streams.size()) __builtin_trap();
      for (size_t k = 0; k < streams.size(); ++k) {
        if (streams[k] != gathered->streams[k]) __builtin_trap();
      }
      // f32: each kept element is the source element its maps name.
      if (t.codec_id != "f32") continue;
      std::vector<uint64_t> idx(t.shape.size(), 0);
      uint64_t n = streams[0].size() / 4;
      for (uint64_t e = 0; e < n; ++e) {
        uint64_t off = 0;
        for (size_t d = 0; d < t.shape.size(); ++d) off = off * t.shape[d] + (maps[d].empty() ? idx[d] : maps[d][idx[d]]);
        float got;
        std::memcpy(&got, streams[0].data() + e * 4, 4);
        if (got != SourceValue(off)) __builtin_trap();
        for (size_t d = idx.size(); d-- > 0;) {
          if (++idx[d] < p.kept[d]) break;
          idx[d] = 0;
        }
      }
    }
  }
}

}  // namespace boltpack::fuzz

#endif  // BOLTPACK_FUZZ_ELASTIC_FUZZ_SLICER_H_
