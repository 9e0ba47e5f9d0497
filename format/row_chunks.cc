#include "format/row_chunks.h"

#include <algorithm>

namespace boltpack::format {
namespace {

constexpr uint64_t kChunkTargetBytes = uint64_t{1} << 20;

}  // namespace

void AddRowChunks(TensorInfo* info) {
  if (info->shape.size() < 2 || info->shape[0] < 2) return;
  uint64_t rows = info->shape[0];
  uint64_t widest = 0;
  for (const auto& s : info->streams) widest = std::max(widest, s.raw_length / rows);
  if (widest == 0) return;
  uint64_t per = std::max<uint64_t>(1, kChunkTargetBytes / widest);
  if (per >= rows) return;
  for (auto& s : info->streams) {
    uint64_t row_bytes = s.raw_length / rows;
    s.chunks.clear();
    for (uint64_t r = 0; r < rows; r += per) {
      uint64_t n = std::min(per, rows - r);
      ChunkInfo c;
      c.raw_offset = c.stored_offset = r * row_bytes;
      c.raw_length = c.stored_length = n * row_bytes;
      c.first_row = r;
      c.row_count = n;
      s.chunks.push_back(c);
    }
  }
}

}  // namespace boltpack::format
