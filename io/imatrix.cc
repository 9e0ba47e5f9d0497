#include "io/imatrix.h"

#include <cmath>
#include <cstring>

#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/gguf.h"
#include "common/mapped_file.h"

namespace boltpack::io {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

float LoadF32(const uint8_t* p) {
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Imatrix>> Imatrix::Load(const std::string& path) {
  BP_ASSIGN_OR_RETURN(auto map, MappedFile::Open(path));
  return Parse(map->bytes(), path);
}

absl::StatusOr<std::unique_ptr<Imatrix>> Imatrix::Parse(absl::Span<const uint8_t> bytes, const std::string& name) {
  auto im = std::make_unique<Imatrix>();
  im->path_ = name;
  auto fail = [&](std::string_view what) { return absl::InvalidArgumentError(StrCat(name, ": imatrix: ", what)); };
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0) {
    im->format_ = "gguf";
    BP_ASSIGN_OR_RETURN(auto g, GgufModel::OpenBuffer(bytes, name));
    for (size_t i = 0; i < g->tensors().size(); ++i) {
      const GgufTensor& sums = g->tensors()[i];
      if (!EndsWith(sums.name, ".in_sum2")) continue;
      std::string base(sums.name.substr(0, sums.name.size() - 8));
      auto ci = g->FindTensor(base + ".counts");
      if (!ci) return fail(StrCat("\"", sums.name, "\" has no \"", base, ".counts\""));
      const GgufTensor& counts = g->tensors()[*ci];
      if (sums.type->id != 0 || counts.type->id != 0) return fail(StrCat("\"", base, "\": sums and counts must be F32"));
      if (sums.ne.empty() || sums.ne.size() > 2) return fail(StrCat("\"", sums.name, "\" must have 1 or 2 dimensions"));
      uint64_t cols = sums.ne[0], experts = sums.ne.size() == 2 ? sums.ne[1] : 1;
      uint64_t n_counts = 1;
      for (uint64_t d : counts.ne) n_counts *= d;
      if (n_counts != experts) {
        return fail(StrCat("\"", counts.name, "\" holds ", n_counts, " counts for ", experts, " expert(s)"));
      }
      ImatrixEntry e;
      e.n_cols = cols;
      e.n_experts = experts;
      e.weights.resize(cols * experts);
      const uint8_t* s = g->TensorBytes(i).data();
      const uint8_t* c = g->TensorBytes(*ci).data();
      for (uint64_t x = 0; x < experts; ++x) {
        float count = LoadF32(c + 4 * x);
        for (uint64_t j = 0; j < cols; ++j) {
          e.weights[x * cols + j] = count > 0.0f ? LoadF32(s + 4 * (x * cols + j)) / count : 1.0f;
        }
      }
      im->entries_.emplace(std::move(base), std::move(e));
    }
    for (const auto& t : g->tensors()) {
      if (EndsWith(t.name, ".counts") && !im->entries_.count(std::string(t.name.substr(0, t.name.size() - 7)))) {
        return fail(StrCat("\"", t.name, "\" has no matching .in_sum2"));
      }
    }
    if (im->entries_.empty()) return fail("no <name>.in_sum2 tensors");
    return im;
  }
  im->format_ = "legacy";
  uint64_t pos = 0;
  auto read_i32 = [&](const char* what) -> absl::StatusOr<int32_t> {
    if (bytes.size() - pos < 4) return fail(StrCat("truncated at byte ", pos, " reading ", what));
    int32_t v;
    std::memcpy(&v, bytes.data() + pos, 4);
    pos += 4;
    return v;
  };
  BP_ASSIGN_OR_RETURN(int32_t n, read_i32("the entry count"));
  if (n <= 0) return fail(StrCat("entry count ", n, " (not a GGUF imatrix, and not a legacy one)"));
  for (int32_t i = 0; i < n; ++i) {
    BP_ASSIGN_OR_RETURN(int32_t len, read_i32("a name length"));
    if (len <= 0 || static_cast<uint64_t>(len) > bytes.size() - pos) {
      return fail(StrCat("entry ", i, ": name length ", len, " at byte ", pos - 4));
    }
    std::string tname(reinterpret_cast<const char*>(bytes.data() + pos), len);
    pos += len;
    BP_ASSIGN_OR_RETURN(int32_t ncall, read_i32("ncall"));
    BP_ASSIGN_OR_RETURN(int32_t nval, read_i32("nval"));
    if (ncall <= 0) return fail(StrCat("entry \"", tname, "\": ncall ", ncall));
    if (nval <= 0 || static_cast<uint64_t>(nval) > (bytes.size() - pos) / 4) {
      return fail(StrCat("entry \"", tname, "\": ", nval, " values do not fit in the file"));
    }
    ImatrixEntry e;
    e.n_cols = nval;
    e.weights.resize(nval);
    std::memcpy(e.weights.data(), bytes.data() + pos, 4ull * nval);
    pos += 4ull * nval;
    if (!im->entries_.emplace(tname, std::move(e)).second) return fail(StrCat("duplicate entry \"", tname, "\""));
  }
  return im;
}

const ImatrixEntry* Imatrix::Find(std::string_view tensor) const {
  auto it = entries_.find(std::string(tensor));
  return it == entries_.end() ? nullptr : &it->second;
}

absl::StatusOr<absl::Span<const float>> Imatrix::For(std::string_view tensor, absl::Span<const uint64_t> shape) const {
  const ImatrixEntry* e = Find(tensor);
  if (e == nullptr) return absl::Span<const float>();
  uint64_t cols = shape.empty() ? 1 : shape.back();
  uint64_t experts = shape.size() >= 3 ? shape[0] : 1;
  if (e->n_cols == cols && e->n_experts == 1 && e->weights.size() == cols) {
    return absl::MakeConstSpan(e->weights);
  }
  // A legacy file flattens expert tensors: n_experts x n_cols values.
  if (e->n_cols * e->n_experts == cols * experts && e->weights.size() == cols * experts && experts > 1) {
    return absl::MakeConstSpan(e->weights);
  }
  return absl::InvalidArgumentError(StrCat(path_, ": imatrix entry \"", tensor, "\" has ", e->n_experts, " x ",
                                           e->n_cols, " weights; the tensor needs ", experts, " x ", cols));
}

}  // namespace boltpack::io
