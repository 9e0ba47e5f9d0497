#include "format/elastic_cut.h"

#include <cstring>

#include <zstd.h>

#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "boltpack/writer.h"
#include "codecs/encoded_record.h"
#include "common/escape.h"
#include "common/checked_math.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "format/elastic_manifest.h"

namespace boltpack::format {
namespace {

// The cell map of the innermost dimension from its element map, when every
// block of `block` output elements reads one whole source block.
absl::StatusOr<std::vector<uint64_t>> BlockMap(const std::vector<uint64_t>& elems, uint64_t block,
                                               const std::string& where) {
  if (elems.size() % block != 0) {
    return absl::InvalidArgumentError(StrCat(where, ": keeps ", elems.size(),
                                             " elements of its innermost dimension, not a multiple of its block of ",
                                             block, " elements"));
  }
  std::vector<uint64_t> cells(elems.size() / block);
  for (size_t q = 0; q < cells.size(); ++q) {
    uint64_t first = elems[q * block];
    bool whole = first % block == 0;
    for (uint64_t i = 1; whole && i < block; ++i) whole = elems[q * block + i] == first + i;
    if (!whole) {
      return absl::InvalidArgumentError(StrCat(where, ": the cut or permutation of its innermost dimension splits ",
                                               block, "-element blocks (output element ", q * block, ")"));
    }
    cells[q] = first / block;
  }
  return cells;
}

}  // namespace

ElementMaps PrefixMaps(absl::Span<const uint64_t> shape, absl::Span<const uint64_t> kept) {
  ElementMaps maps(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (kept[d] == shape[d]) continue;
    maps[d].resize(kept[d]);
    for (uint64_t j = 0; j < kept[d]; ++j) maps[d][j] = j;
  }
  return maps;
}

absl::StatusOr<std::vector<uint8_t>> GatherCells(absl::Span<const uint8_t> src, absl::Span<const uint64_t> grid,
                                                 uint64_t cell_bytes, const ElementMaps& maps) {
  size_t n = grid.size();
  auto total = CheckedProduct(grid);
  auto bytes = total ? CheckedMul(*total, cell_bytes) : std::nullopt;
  if (!bytes || *bytes != src.size() || maps.size() != n) {
    return absl::InvalidArgumentError(StrCat("cell grid of ", src.size(), " bytes does not match its shape"));
  }
  std::vector<uint64_t> out_dims(n);
  for (size_t d = 0; d < n; ++d) {
    out_dims[d] = maps[d].empty() ? grid[d] : maps[d].size();
    for (uint64_t v : maps[d]) {
      if (v >= grid[d]) return absl::InvalidArgumentError(StrCat("index ", v, " past dimension ", d, " of ", grid[d]));
    }
  }
  auto out_total = CheckedProduct(out_dims);
  std::vector<uint8_t> out;
  if (n == 0) {
    out.assign(src.begin(), src.end());
    return out;
  }
  out.resize(*out_total * cell_bytes);
  if (*out_total == 0) return out;
  // Source strides in cells.
  std::vector<uint64_t> stride(n, 1);
  for (size_t d = n - 1; d > 0; --d) stride[d - 1] = stride[d] * grid[d];
  // Innermost runs: maximal stretches where the map is consecutive.
  const auto& inner = maps[n - 1];
  std::vector<std::pair<uint64_t, uint64_t>> runs;  // (source start, length)
  if (inner.empty()) {
    runs.emplace_back(0, grid[n - 1]);
  } else {
    for (uint64_t j = 0; j < inner.size();) {
      uint64_t k = j + 1;
      while (k < inner.size() && inner[k] == inner[k - 1] + 1) ++k;
      runs.emplace_back(inner[j], k - j);
      j = k;
    }
  }
  uint64_t rows = *out_total / out_dims[n - 1];
  std::vector<uint64_t> idx(n, 0);
  uint8_t* dst = out.data();
  for (uint64_t r = 0; r < rows; ++r) {
    uint64_t base = 0;
    for (size_t d = 0; d + 1 < n; ++d) {
      uint64_t s = maps[d].empty() ? idx[d] : maps[d][idx[d]];
      base += s * stride[d];
    }
    for (const auto& [start, len] : runs) {
      std::memcpy(dst, src.data() + (base + start) * cell_bytes, len * cell_bytes);
      dst += len * cell_bytes;
    }
    for (size_t d = n - 1; d-- > 0;) {
      if (++idx[d] < out_dims[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

absl::StatusOr<CutTensor> CutRawTensor(const TensorInfo& info, const std::vector<absl::Span<const uint8_t>>& streams,
                                       const ElementMaps& maps, std::string new_name) {
  std::string where = StrCat("tensor ", QuoteForDisplay(info.name));
  if (maps.size() != info.shape.size() || streams.size() != info.streams.size()) {
    return absl::InvalidArgumentError(StrCat(where, ": ", maps.size(), " maps for ", info.shape.size(), " dimensions"));
  }
  std::vector<uint64_t> shape(info.shape.size());
  for (size_t d = 0; d < shape.size(); ++d) shape[d] = maps[d].empty() ? info.shape[d] : maps[d].size();
  CutTensor out;
  auto layout = StoredCellLayout(info.codec_id, info.dtype, info.codec_params);
  if (layout && layout->cell_bytes.size() == info.streams.size() && !info.shape.empty() &&
      info.shape.back() % layout->block_elems == 0) {
    std::vector<uint64_t> grid = info.shape;
    grid.back() /= layout->block_elems;
    ElementMaps cell_maps = maps;
    if (layout->block_elems > 1 && !maps.back().empty()) {
      BP_ASSIGN_OR_RETURN(cell_maps.back(), BlockMap(maps.back(), layout->block_elems, where));
    }
    out.info = info;
    out.info.name = std::move(new_name);
    out.info.shape = shape;
    for (size_t k = 0; k < streams.size(); ++k) {
      auto bytes = GatherCells(streams[k], grid, layout->cell_bytes[k], cell_maps);
      if (!bytes.ok()) return absl::DataLossError(StrCat(where, " stream \"", info.streams[k].role, "\": ", bytes.status().message()));
      StreamInfo& s = out.info.streams[k];
      s.compression = Compression::kNone;
      s.raw_length = s.length = bytes->size();
      s.chunks.clear();
      s.offset = 0;
      s.xxh3 = 0;
      s.line_bytes = 0;
      s.prefix_bytes.clear();
      out.streams.push_back(std::move(*bytes));
    }
    AddRowChunks(&out.info);
    return out;
  }
  // Decode, cut the elements, encode again with the same codec.
  const Codec* codec = FindCodec(info.codec_id);
  if (codec == nullptr) {
    return absl::UnimplementedError(StrCat(where, ": codec \"", info.codec_id,
                                           "\" is not known to this version, so it cannot be cut"));
  }
  OutputType out_type = info.dtype == DType::kF32 ? OutputType::kF32
                        : info.dtype == DType::kF16 ? OutputType::kF16
                        : info.dtype == DType::kBF16 ? OutputType::kBF16
                                                     : OutputType::kNative;
  if (!codec->CanDecodeTo(info, out_type)) {
    return absl::UnimplementedError(StrCat(where, ": codec \"", info.codec_id, "\" cannot decode to ",
                                           DTypeName(info.dtype), " elements, so it cannot be cut"));
  }
  BP_RETURN_IF_ERROR(codec->ValidateRecord(info));
  BP_ASSIGN_OR_RETURN(uint64_t n, codec->DecodedBytes(info, out_type));
  std::vector<uint8_t> elems(n);
  DecodeInput in;
  in.info = &info;
  in.streams = streams;
  BP_RETURN_IF_ERROR(codec->Decode(in, out_type, absl::MakeSpan(elems), {}));
  uint64_t esize = static_cast<uint64_t>(DTypeSize(info.dtype));
  BP_ASSIGN_OR_RETURN(auto cut, GatherCells(elems, info.shape, esize, maps));
  TensorSource src{info.name, info.dtype, shape, cut};
  BP_ASSIGN_OR_RETURN(EncodedTensor enc, EncodeTensor(info.codec_id, src, {}, {}));
  out.info = RecordFor(std::move(new_name), info.dtype, shape, info.codec_id, enc);
  for (auto& s : enc.streams) out.streams.push_back(std::move(s.bytes));
  return out;
}

absl::StatusOr<CutTensor> CutStoredTensor(const Reader& reader, size_t tensor, const ElementMaps& maps,
                                          std::string new_name) {
  if (tensor >= reader.tensors().size()) return absl::OutOfRangeError(StrCat(reader.path(), ": no tensor #", tensor));
  const auto shared = reader.SharedTensor(tensor);
  const TensorInfo& info = *shared;
  std::vector<std::vector<uint8_t>> owned(info.streams.size());
  std::vector<absl::Span<const uint8_t>> raw(info.streams.size());
  for (size_t k = 0; k < info.streams.size(); ++k) {
    BP_RETURN_IF_ERROR(reader.VerifyStream(tensor, k));
    BP_ASSIGN_OR_RETURN(auto stored, reader.StoredStream(tensor, k));
    const StreamInfo& s = info.streams[k];
    std::string where = StrCat(reader.path(), ": tensor ", QuoteForDisplay(info.name), " stream \"", s.role, "\"");
    if (s.compression == Compression::kNone) {
      raw[k] = stored;
    } else if (s.compression == Compression::kZstd) {
      owned[k].resize(s.raw_length);
      size_t got = ZSTD_decompress(owned[k].data(), owned[k].size(), stored.data(), stored.size());
      if (ZSTD_isError(got) || got != s.raw_length) {
        return absl::DataLossError(StrCat(where, ": zstd data does not decompress to its ", s.raw_length, " bytes"));
      }
      raw[k] = owned[k];
    } else {
      return absl::UnimplementedError(StrCat(where, ": unknown compression"));
    }
  }
  TensorInfo plain = info;
  for (size_t k = 0; k < plain.streams.size(); ++k) {
    auto& s = plain.streams[k];
    s.compression = Compression::kNone;
    s.length = s.raw_length;
    for (auto& c : s.chunks) {
      c.stored_offset = c.raw_offset;
      c.stored_length = c.raw_length;
    }
  }
  auto cut = CutRawTensor(plain, raw, maps, std::move(new_name));
  if (!cut.ok() && cut.status().message().find(reader.path()) == std::string_view::npos) {
    return absl::Status(cut.status().code(), StrCat(reader.path(), ": ", cut.status().message()));
  }
  return cut;
}

}  // namespace boltpack::format
