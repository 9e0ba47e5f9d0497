#include "format/line_prefix.h"

#include <algorithm>

#include "format/row_chunks.h"
#include "format/elastic_manifest.h"
#include "format/elastic_runs.h"
#include "format/elastic_validate.h"
#include "common/limits.h"
#include "common/checked_math.h"

namespace boltpack::format {

LinePrefixHasher::LinePrefixHasher(uint64_t line_bytes, std::vector<uint64_t> prefixes)
    : line_bytes_(line_bytes), prefixes_(std::move(prefixes)) {
  for (size_t k = 0; k < prefixes_.size(); ++k) hashers_.push_back(std::make_unique<Xxh3Stream>());
}

void LinePrefixHasher::Update(absl::Span<const uint8_t> part) {
  while (!part.empty()) {
    uint64_t n = std::min<uint64_t>(part.size(), line_bytes_ - in_line_);
    for (size_t k = 0; k < prefixes_.size(); ++k) {
      if (in_line_ >= prefixes_[k]) continue;
      hashers_[k]->Update(part.data(), std::min(n, prefixes_[k] - in_line_));
    }
    in_line_ += n;
    if (in_line_ == line_bytes_) in_line_ = 0;
    part.remove_prefix(n);
  }
}

std::vector<uint64_t> LinePrefixHasher::Finish() {
  std::vector<uint64_t> digests;
  digests.reserve(hashers_.size());
  for (auto& h : hashers_) {
    digests.push_back(h->Digest());
    h->Reset();
  }
  in_line_ = 0;
  return digests;
}

uint64_t LinePrefixXxh3(absl::Span<const uint8_t> lines, uint64_t line_bytes, uint64_t prefix) {
  LinePrefixHasher hasher(line_bytes, {prefix});
  hasher.Update(lines);
  return hasher.Finish()[0];
}

LineCuts PlanLineCuts(const ElasticManifest& manifest, const BindingIndex& index, const std::string& name,
                      absl::Span<const uint64_t> shape) {
  LineCuts best;
  if (shape.size() < 2) return best;
  ElasticBound bound = index.Resolve(name);
  if (bound.binding == nullptr) return best;
  // Per dimension j >= 1: the prefixes budgets cut it to while keeping
  // every other dimension but the outermost whole.
  std::vector<std::vector<uint64_t>> cuts(shape.size());
  for (const ElasticBudget& budget : manifest.budgets) {
    std::vector<DimRuns> runs = KeptRuns(manifest, budget, bound, shape);
    size_t cut_dim = 0;
    bool one_prefix = true;
    for (size_t d = 1; d < shape.size(); ++d) {
      if (WholeDim(runs[d], shape[d])) continue;
      bool prefix = runs[d].size() == 1 && runs[d][0].start == 0 && runs[d][0].length > 0;
      one_prefix &= prefix && cut_dim == 0;
      cut_dim = d;
    }
    if (cut_dim != 0 && one_prefix) cuts[cut_dim].push_back(runs[cut_dim][0].length);
  }
  // One line shape per stream: the dimension most budgets' cuts share
  // (ties: the inner one).
  for (size_t d = 1; d < shape.size(); ++d) {
    std::sort(cuts[d].begin(), cuts[d].end());
    cuts[d].erase(std::unique(cuts[d].begin(), cuts[d].end()), cuts[d].end());
    if (!cuts[d].empty() && cuts[d].size() >= best.cuts.size()) best = {d, cuts[d]};
  }
  return best;
}

void PlanLinePrefixes(TensorInfo* info, const LineCuts& line) {
  const auto& shape = info->shape;
  if (line.cuts.empty() || line.dim == 0 || line.dim >= shape.size()) return;
  auto layout = StoredCellLayout(info->codec_id, info->dtype, info->codec_params);
  if (!layout || layout->block_elems == 0 || layout->cell_bytes.size() != info->streams.size() ||
      shape.back() % layout->block_elems != 0) {
    return;
  }
  bool chunkless = true;
  for (const StreamInfo& s : info->streams) {
    chunkless &= s.chunks.empty() && s.compression == Compression::kNone;
  }
  if (chunkless && shape[0] > 0) {
    AddRowChunks(info);
    for (StreamInfo& s : info->streams) {
      if (s.chunks.empty()) s.chunks.push_back({0, s.raw_length, 0, s.raw_length, 0, shape[0], 0});
    }
  }
  // Cells of one step of the line's dimension (everything inside it, the
  // innermost dimension in blocks) and steps per line.
  const bool innermost = line.dim + 1 == shape.size();
  const uint64_t inner_cells = shape.back() / layout->block_elems;
  std::optional<uint64_t> step = innermost ? 1 : inner_cells;
  for (size_t d = line.dim + 1; step && d + 1 < shape.size(); ++d) step = CheckedMul(*step, shape[d]);
  const uint64_t line_dim_cells = innermost ? inner_cells : shape[line.dim];
  for (size_t k = 0; k < info->streams.size(); ++k) {
    StreamInfo& s = info->streams[k];
    s.line_bytes = 0;
    s.prefix_bytes.clear();
    const uint64_t cell = layout->cell_bytes[k];
    auto step_bytes = step ? CheckedMul(*step, cell) : std::nullopt;
    auto line_bytes = step_bytes ? CheckedMul(*step_bytes, line_dim_cells) : std::nullopt;
    if (s.compression != Compression::kNone || s.chunks.empty() || !line_bytes || *line_bytes == 0) continue;
    bool whole_lines = true;
    for (const ChunkInfo& c : s.chunks) whole_lines &= c.stored_length % *line_bytes == 0;
    if (!whole_lines) continue;
    for (uint64_t c : line.cuts) {
      if (innermost && c % layout->block_elems != 0) continue;  // splits a block: never a byte prefix
      uint64_t steps = innermost ? c / layout->block_elems : c;
      if (s.prefix_bytes.size() < kMaxLinePrefixes) s.prefix_bytes.push_back(steps * *step_bytes);
    }
    if (!s.prefix_bytes.empty()) s.line_bytes = *line_bytes;
  }
}

}  // namespace boltpack::format
