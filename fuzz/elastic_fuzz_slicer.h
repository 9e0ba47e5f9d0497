// The slicer half of the elastic fuzz target: the fixed fuzz model
// (fuzz/elastic_fuzz_model.h) is written once, with real data, as a .bolt
// held in memory; for every budget a fuzzed manifest declares (the first
// kMaxCutBudgets), every kept tensor is cut both ways `bolt-pack slice`
// can cut it — in place, as pieces of the input mapping handed to the
// writer (format/cut_pieces.h), and by the gathering cutter
// (CutStoredTensor) — and the two must give the same record shape and the
// same bytes, which must also be the source cells the plan's runs name
// (runs of groups, segments and product dimensions alike: the plan comes
// from format/elastic_runs.h). A second copy of the model carries line-prefix
// checksums (format 1.2) for fixed width cuts, so fuzzed budgets that cut
// those widths slice through them: the same bytes again, and every output
// chunk checksum the source vouches for must be the checksum of its bytes.
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
#include "common/xxh3.h"
#include "format/cut_pieces.h"
#include "format/elastic_cut.h"
#include "format/elastic_plan.h"
#include "format/elastic_runs.h"

namespace boltpack::fuzz {

inline constexpr size_t kMaxCutBudgets = 8;

// Element `i` (row-major) of every fuzz-model tensor before encoding.
inline float SourceValue(uint64_t i) { return static_cast<float>(i % 4093) * 0.25f - 500.0f; }

// The manifest the second copy records line prefixes for: every width cut
// to 32 and to 64 (layer 1's is 96 wide), all experts kept.
inline ElasticManifest LinePrefixManifest() {
  ElasticManifest m;
  m.layer_count = 2;
  m.layer_pattern = "blk.{L}.";
  m.axes.push_back({"experts", ElasticScope::kLayer, 1, 1, {4, 6}, "", ""});
  m.axes.push_back({"width", ElasticScope::kLayer, 32, 1, {64, 96}, "", ""});
  m.bindings.push_back({"blk.{L}.up.weight", {"experts", "width", "-"}});
  m.bindings.push_back({"blk.{L}.down.weight", {"experts", "-", "width"}});
  m.budgets.push_back({"w32", {true, true}, {{"width", {32, 32}}}, ""});
  m.budgets.push_back({"w64", {true, true}, {{"width", {64, 64}}}, ""});
  return m;
}

// The fuzz model with every element distinct (f32: its index; q8_0: the
// encoding of index-dependent values), written to a temporary .bolt once;
// with `line_prefixes`, a copy with line-prefix checksums for
// LinePrefixManifest's cuts.
inline std::unique_ptr<Reader> WriteFuzzModel(const std::vector<TensorInfo>& tensors, bool line_prefixes) {
  std::string path = "/tmp/boltpack-fuzz-elastic-" + std::to_string(::getpid()) + (line_prefixes ? "-lp" : "") +
                     ".bolt";
  WriterOptions options;
  options.line_prefixes = line_prefixes;
  auto writer = Writer::Create(path, options);
  if (!writer.ok()) __builtin_trap();
  if (line_prefixes && !(*writer)->SetElastic(LinePrefixManifest()).ok()) __builtin_trap();
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
}

inline const Reader& ElasticFuzzReader(const std::vector<TensorInfo>& tensors) {
  static std::unique_ptr<Reader> reader = WriteFuzzModel(tensors, false);
  return *reader;
}

inline const Reader& ElasticFuzzPrefixedReader(const std::vector<TensorInfo>& tensors) {
  static std::unique_ptr<Reader> reader = [&] {
    auto r = WriteFuzzModel(tensors, true);
    // The copy must carry prefixes, or it checks nothing new.
    bool any = false;
    for (const auto& t : r->tensors()) any |= !t.streams[0].prefix_bytes.empty();
    if (!any) __builtin_trap();
    return r;
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

// Every output chunk checksum the cut's sources vouch for is the XXH3 of
// those bytes of the drained streams.
inline void CheckVouched(const format::CutInPlace& cut, const std::vector<std::vector<uint8_t>>& streams) {
  for (size_t k = 0; k < streams.size(); ++k) {
    for (const ChunkInfo& c : cut.info.streams[k].chunks) {
      auto vouched = cut.streams[k]->VouchedXxh3(c.stored_offset, c.stored_length);
      if (!vouched) continue;
      if (c.stored_offset > streams[k].size() || c.stored_length > streams[k].size() - c.stored_offset) {
        __builtin_trap();
      }
      if (*vouched != Xxh3({streams[k].data() + c.stored_offset, static_cast<size_t>(c.stored_length)})) {
        __builtin_trap();
      }
    }
  }
}

inline void CheckEveryCutOf(const Reader& reader, const ElasticManifest& m) {
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
      CheckVouched(*in_place, streams);
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

inline void CheckEveryCut(const ElasticManifest& m, const std::vector<TensorInfo>& tensors) {
  CheckEveryCutOf(ElasticFuzzReader(tensors), m);
  CheckEveryCutOf(ElasticFuzzPrefixedReader(tensors), m);
}

}  // namespace boltpack::fuzz

#endif  // BOLTPACK_FUZZ_ELASTIC_FUZZ_SLICER_H_
