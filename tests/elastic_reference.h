// Helpers shared by the elastic tests that compute what a budget keeps
// independently of the library (tests/elastic_groups_test.cc,
// tests/elastic_product_test.cc): deterministic source values, a direct
// gather by per-dimension index lists, and f32 decoding of a result.
#ifndef BOLTPACK_TESTS_ELASTIC_REFERENCE_H_
#define BOLTPACK_TESTS_ELASTIC_REFERENCE_H_

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "boltpack/budget_view.h"
#include "boltpack/reader.h"
#include "gtest/gtest.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "tests/test_util.h"

namespace boltpack::testing {

// Per dimension, the source indices kept, in output order (empty: all).
using Index = std::vector<std::vector<uint64_t>>;

inline uint64_t Count(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

// Deterministic, distinct-ish values per tensor (multiples of 1/256 in
// [-3.9, 3.9]: exact in f32 and f16).
inline std::vector<float> Values(const std::string& name, uint64_t n) {
  uint32_t h = 2166136261u;
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  std::vector<float> v(n);
  for (auto& x : v) {
    h = h * 1664525u + 1013904223u;
    x = static_cast<float>(static_cast<int>((h >> 8) % 2001) - 1000) / 256.0f;
  }
  return v;
}

// src (row-major `shape`) at the indices `idx` keeps, in output order.
inline std::vector<float> Gather(const std::vector<float>& src, const std::vector<uint64_t>& shape, const Index& idx) {
  std::vector<uint64_t> out_shape(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) out_shape[d] = idx[d].empty() ? shape[d] : idx[d].size();
  std::vector<float> out(Count(out_shape));
  std::vector<uint64_t> at(shape.size(), 0);
  for (uint64_t e = 0; e < out.size(); ++e) {
    uint64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + (idx[d].empty() ? at[d] : idx[d][at[d]]);
    out[e] = src[off];
    for (size_t d = shape.size(); d-- > 0;) {
      if (++at[d] < out_shape[d]) break;
      at[d] = 0;
    }
  }
  return out;
}

inline std::vector<float> FloatsOf(absl::Span<const uint8_t> bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

inline std::vector<float> DecodeF32(const Reader& r, const std::string& name) {
  auto t = r.FindTensor(name);
  EXPECT_TRUE(t.has_value()) << name;
  if (!t) return {};
  std::vector<float> out(r.tensors()[*t].element_count());
  EXPECT_TRUE(r.Decode(*t, OutputType::kF32, {reinterpret_cast<uint8_t*>(out.data()), out.size() * 4}).ok()) << name;
  return out;
}

inline std::string JsonFloats(const std::vector<float>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// A budget of an elastic file sliced by the CLI to .bolt, .gguf and
// .safetensors (DIR/BUDGET.*), each opened, with the parent's budget views.
struct SlicedBudget {
  std::unique_ptr<Reader> parent, sliced;
  std::unique_ptr<io::GgufModel> gguf;
  std::unique_ptr<io::SafetensorsModel> st;
  std::map<std::string, BudgetTensor> views;  // by tensor name
};

// Use as ASSERT_NO_FATAL_FAILURE(SliceAllFormats(...)).
inline void SliceAllFormats(const std::string& dir, const std::string& parent_path, const std::string& budget,
                            SlicedBudget* out) {
  std::string base = dir + "/" + budget;
  for (const char* ext : {".bolt", ".gguf", ".safetensors"}) {
    auto s = RunCli({"slice", parent_path, "--budget", budget, "-o", base + ext});
    ASSERT_EQ(s.exit_code, 0) << s.output;
  }
  auto parent = Reader::Open(parent_path);
  ASSERT_TRUE(parent.ok()) << parent.status();
  auto sliced = Reader::Open(base + ".bolt");
  ASSERT_TRUE(sliced.ok()) << sliced.status();
  auto gguf = io::GgufModel::Open(base + ".gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.status();
  auto st = io::SafetensorsModel::Open(base + ".safetensors");
  ASSERT_TRUE(st.ok()) << st.status();
  auto tensors = BudgetTensors(**parent, budget);
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  for (const auto& t : *tensors) out->views[t.name] = t;
  out->parent = std::move(*parent);
  out->sliced = std::move(*sliced);
  out->gguf = std::move(*gguf);
  out->st = std::move(*st);
}

// Checks tensor `name` of a sliced budget through every other path against
// `want` (its f32 elements): the .bolt slice decoded, DecodeBudget on the
// parent, the zero-copy regions of the parent's budget view (concatenated:
// the sliced .bolt's stored stream), the .gguf's stored cells (the same
// bytes) and the .safetensors' f32. Use with ASSERT_NO_FATAL_FAILURE.
inline void CheckSlicedTensor(const SlicedBudget& sb, const std::string& name, const std::vector<float>& want) {
  const Reader& parent = *sb.parent;
  const Reader& sliced = *sb.sliced;
  EXPECT_EQ(DecodeF32(sliced, name), want);
  auto it = sb.views.find(name);
  ASSERT_TRUE(it != sb.views.end());
  const BudgetTensor& bt = it->second;
  auto n = BudgetDecodedBytes(parent, bt, OutputType::kF32);
  ASSERT_TRUE(n.ok()) << n.status();
  std::vector<uint8_t> decoded(*n);
  ASSERT_TRUE(DecodeBudget(parent, bt, "", OutputType::kF32, absl::MakeSpan(decoded)).ok());
  EXPECT_EQ(FloatsOf(decoded), want);
  auto view = BudgetView(parent, bt);
  ASSERT_TRUE(view.ok()) << view.status();
  std::vector<uint8_t> gathered;
  for (const auto& region : view->streams) {
    ASSERT_EQ(region.stream, 0u);
    std::vector<uint8_t> part(region.total_bytes());
    ASSERT_TRUE(region.CopyTo(absl::MakeSpan(part)).ok());
    gathered.insert(gathered.end(), part.begin(), part.end());
  }
  auto si = sliced.FindTensor(name);
  ASSERT_TRUE(si.has_value());
  auto stored = sliced.StoredStream(*si, 0);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(gathered, std::vector<uint8_t>(stored->begin(), stored->end()));
  auto gi = sb.gguf->FindTensor(name);
  ASSERT_TRUE(gi.has_value());
  auto gb = sb.gguf->TensorBytes(*gi);
  EXPECT_EQ(std::vector<uint8_t>(gb.begin(), gb.end()), gathered);
  bool found = false;
  for (size_t i = 0; i < sb.st->tensors().size(); ++i) {
    if (sb.st->tensors()[i].name != name) continue;
    found = true;
    EXPECT_EQ(FloatsOf(sb.st->TensorBytes(i)), want);
  }
  EXPECT_TRUE(found) << name << " is not in the .safetensors slice";
}

}  // namespace boltpack::testing

#endif  // BOLTPACK_TESTS_ELASTIC_REFERENCE_H_
