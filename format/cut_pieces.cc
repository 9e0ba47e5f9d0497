#include "format/cut_pieces.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "boltpack/reader.h"
#include "common/escape.h"
#include "common/checked_math.h"
#include "common/checksum_status.h"
#include "common/piece_copy.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "format/elastic_manifest.h"
#include "format/layout.h"
#include "common/mapped_file.h"

namespace boltpack::format {
namespace {

// The cell map of the innermost dimension when every block of `block`
// output elements reads one whole, aligned source block; nullopt otherwise
// (CutStoredTensor then reports which block is split).
std::optional<std::vector<uint64_t>> WholeBlockMap(const std::vector<uint64_t>& elems, uint64_t block) {
  if (elems.size() % block != 0) return std::nullopt;
  std::vector<uint64_t> cells(elems.size() / block);
  for (size_t q = 0; q < cells.size(); ++q) {
    uint64_t first = elems[q * block];
    if (first % block != 0) return std::nullopt;
    for (uint64_t i = 1; i < block; ++i) {
      if (elems[q * block + i] != first + i) return std::nullopt;
    }
    cells[q] = first / block;
  }
  return cells;
}

// The first chunk ending after stream byte `offset` (chunks tile the
// stream in order, which the reader checked when it opened the file).
std::vector<ChunkInfo>::const_iterator ChunkEndingAfter(const std::vector<ChunkInfo>& chunks, uint64_t offset) {
  return std::upper_bound(chunks.begin(), chunks.end(), offset,
                          [](uint64_t v, const ChunkInfo& c) { return v < c.stored_offset + c.stored_length; });
}

}  // namespace

StreamCutPieces::Source StreamCutPieces::SourceOf(const Reader& reader, size_t tensor, size_t stream) {
  const auto info = reader.SharedTensor(tensor);
  return {info->name, info->streams[stream]};
}

StreamCutPieces::StreamCutPieces(const Reader& reader, size_t tensor, size_t stream, absl::Span<const uint8_t> stored,
                                 std::vector<uint64_t> grid, uint64_t cell_bytes, ElementMaps cell_maps)
    : reader_(reader), tensor_(tensor), stream_(stream), source_(SourceOf(reader, tensor, stream)), stored_(stored),
      maps_(std::move(cell_maps)), grid_(grid) {
  size_t n = grid.size();
  stride_.assign(n, cell_bytes);
  for (size_t d = n - 1; d > 0; --d) stride_[d - 1] = stride_[d] * grid[d];
  out_dims_.resize(n);
  for (size_t d = 0; d < n; ++d) out_dims_[d] = maps_[d].empty() ? grid[d] : maps_[d].size();
  // Innermost runs: maximal stretches where the map is consecutive.
  const auto& inner = maps_[n - 1];
  if (inner.empty()) {
    if (grid[n - 1] > 0) inner_runs_.emplace_back(0, grid[n - 1] * cell_bytes);
  } else {
    for (size_t j = 0; j < inner.size();) {
      size_t k = j + 1;
      while (k < inner.size() && inner[k] == inner[k - 1] + 1) ++k;
      inner_runs_.emplace_back(inner[j] * cell_bytes, (k - j) * cell_bytes);
      j = k;
    }
  }
  RunCursor& c = cursor_;
  c.rows_left = inner_runs_.empty() ? 0 : 1;
  for (size_t d = 0; d + 1 < n; ++d) c.rows_left *= out_dims_[d];
  c.idx.assign(n > 0 ? n - 1 : 0, 0);
  c.row_base = 0;
  for (size_t d = 0; d + 1 < n; ++d) c.row_base += (maps_[d].empty() ? 0 : maps_[d][0]) * stride_[d];
  ahead_ = cursor_;
  uint64_t row_bytes = 0;
  for (const auto& r : inner_runs_) row_bytes += r.second;
  size_ = c.rows_left * row_bytes;
  verified_.assign(source_.stream.chunks.size(), false);
  needed_from_.fill(UINT64_MAX);
}

StreamCutPieces::~StreamCutPieces() { ReleaseBelow(stored_.size()); }

StreamCutPieces::StreamCutPieces(const Reader& reader, size_t tensor, size_t stream, absl::Span<const uint8_t> stored)
    : StreamCutPieces(reader, tensor, stream, stored, {stored.size()}, 1, ElementMaps(1)) {}

std::pair<uint64_t, uint64_t> StreamCutPieces::NextRun(RunCursor& c) const {
  while (c.rows_left > 0) {
    if (c.run < inner_runs_.size()) {
      const auto& r = inner_runs_[c.run++];
      return {c.row_base + r.first, r.second};
    }
    c.run = 0;
    if (--c.rows_left == 0) break;
    // The next row of the innermost outer dimension, without a carry (the
    // common step): its offset moves by that dimension's map step alone.
    // Offsets are unsigned, and the difference may be negative (a map need
    // not ascend): the wrap-around sum is still the right offset.
    const size_t last = c.idx.size() - 1;  // rows_left > 1 means an outer dimension
    if (c.idx[last] + 1 < out_dims_[last]) {
      const auto& m = maps_[last];
      const uint64_t from = m.empty() ? c.idx[last] : m[c.idx[last]];
      ++c.idx[last];
      const uint64_t to = m.empty() ? c.idx[last] : m[c.idx[last]];
      c.row_base = c.row_base - from * stride_[last] + to * stride_[last];
      continue;
    }
    // A carry: the next outer index tuple (odometer) and its source offset.
    for (size_t d = c.idx.size(); d-- > 0;) {
      if (++c.idx[d] < out_dims_[d]) break;
      c.idx[d] = 0;
    }
    c.row_base = 0;
    for (size_t d = 0; d < c.idx.size(); ++d) {
      c.row_base += (maps_[d].empty() ? c.idx[d] : maps_[d][c.idx[d]]) * stride_[d];
    }
  }
  return {0, 0};
}

uint64_t StreamCutPieces::StepRegularRows(RunCursor& c, uint64_t max_rows) const {
  if (inner_runs_.size() != 1 || c.run != 1 || c.rows_left <= 1 || c.idx.empty()) return 0;
  const size_t last = c.idx.size() - 1;
  const auto& m = maps_[last];
  uint64_t n = std::min({max_rows, out_dims_[last] - 1 - c.idx[last], c.rows_left - 1});
  if (!m.empty()) {
    uint64_t k = 0;
    while (k < n && m[c.idx[last] + k + 1] == m[c.idx[last] + k] + 1) ++k;
    n = k;
  }
  c.idx[last] += n;
  c.rows_left -= n;
  c.row_base += n * stride_[last];
  return n;
}

void StreamCutPieces::ReadAhead() {
  const StreamInfo& info = source_.stream;
  auto advise = [&](uint64_t begin, uint64_t end, int advice) {
    if (end <= begin) return;
    io::AdviseMappedPages(stored_.subspan(begin, end - begin), advice);
  };
  if (!ahead_started_) {
    ahead_started_ = true;
    if (info.chunks.empty() && prefix_units_.empty()) {
      // Checked whole on first use: the kernel reads it all, its own way.
      advise(0, stored_.size(), MADV_WILLNEED);
      return;
    }
    // What is read is known exactly (below): the kernel's own readahead
    // would run on past kept regions into dropped bytes.
    advise(0, stored_.size(), MADV_RANDOM);
  }
  if (info.chunks.empty() && prefix_units_.empty()) return;
  // The bytes a kept run makes the slice read: the run itself with line
  // prefixes, else every source chunk it touches (verified whole).
  auto read_range = [&](uint64_t begin, uint64_t end) -> std::pair<uint64_t, uint64_t> {
    if (!prefix_units_.empty()) return {begin, end};
    auto a = ChunkEndingAfter(info.chunks, begin);
    auto b = ChunkEndingAfter(info.chunks, end - 1);
    if (a == info.chunks.end() || b == info.chunks.end()) return {begin, end};
    return {a->stored_offset, b->stored_offset + b->stored_length};
  };
  // The range to advise next, grown while reads are close together (a gap
  // of at most kReadAheadGapBytes is read too: cheaper than another
  // request), handed to the kernel once it is kAdviseBytes or a gap ends it.
  auto flush = [&] {
    advise(advise_.first, advise_.second, MADV_WILLNEED);
    advised_end_ = std::max(advised_end_, advise_.second);
    advise_ = {0, 0};
  };
  // A kept range [begin, end) of the source: what it makes the slice read
  // joins the range to advise.
  auto note = [&](uint64_t begin, uint64_t end) {
    // Runs ascend: a run that ends before what was advised lies in it (the
    // short runs of a width cut, many per chunk, need no chunk lookup).
    if (end <= advised_end_) return;
    auto [start, stop] = read_range(begin, end);
    start = std::max(start, advised_end_);
    if (stop <= start) return;
    if (advise_.second > advise_.first && start >= advise_.first && start <= advise_.second + kReadAheadGapBytes) {
      advise_.second = std::max(advise_.second, stop);
    } else {
      flush();
      advise_ = {start, stop};
    }
    if (advise_.second - advise_.first >= kAdviseBytes) flush();
  };
  // Rows at a constant stride whose gaps would be read anyway (a width
  // cut) are taken as one range, not run by run.
  const uint64_t row_run = inner_runs_.size() == 1 ? inner_runs_[0].second : 0;
  const uint64_t row_stride = stride_.size() >= 2 ? stride_[stride_.size() - 2] : 0;
  const bool batch_rows = row_run != 0 && row_stride >= row_run && row_stride - row_run <= kReadAheadGapBytes;
  while (ahead_out_ < handed_out_ + kReadAheadBytes) {
    if (ahead_run_.second == 0 && batch_rows) {
      const uint64_t budget = handed_out_ + kReadAheadBytes - ahead_out_;
      const uint64_t first = ahead_.row_base + row_stride;  // the next row, when it follows at the stride
      if (uint64_t n = StepRegularRows(ahead_, std::max<uint64_t>(1, std::min(budget / row_run, kAdviseBytes / row_stride)))) {
        ahead_out_ += n * row_run;
        note(first + inner_runs_[0].first, ahead_.row_base + inner_runs_[0].first + row_run);
        continue;
      }
    }
    if (ahead_run_.second == 0) {
      ahead_run_ = NextRun(ahead_);
      if (ahead_run_.second == 0) break;
    }
    // Long runs (a whole stream) are advised a step at a time.
    uint64_t take = std::min(ahead_run_.second, kAdviseBytes);
    const uint64_t run_begin = ahead_run_.first;
    ahead_run_ = {run_begin + take, ahead_run_.second - take};
    ahead_out_ += take;
    note(run_begin, run_begin + take);
  }
  flush();
}

absl::Status StreamCutPieces::Verify(uint64_t begin, uint64_t end) {
  const StreamInfo& s = source_.stream;
  if (s.chunks.empty()) {
    if (!whole_verified_) {
      absl::Status st = reader_.VerifyStream(tensor_, stream_);
      if (!st.ok()) return st;
      whole_verified_ = true;
    }
    return absl::OkStatus();
  }
  if (last_chunk_ < s.chunks.size() && verified_[last_chunk_]) {
    const ChunkInfo& last = s.chunks[last_chunk_];
    if (begin >= last.stored_offset && end <= last.stored_offset + last.stored_length) return absl::OkStatus();
  }
  for (size_t c = static_cast<size_t>(ChunkEndingAfter(s.chunks, begin) - s.chunks.begin());
       c < s.chunks.size() && s.chunks[c].stored_offset < end; ++c) {
    if (verified_[c]) continue;
    const ChunkInfo& chunk = s.chunks[c];
    if (Xxh3(stored_.subspan(chunk.stored_offset, chunk.stored_length)) != chunk.xxh3) {
      return ChecksumMismatchError(StrCat(reader_.path(), ": tensor ", QuoteForDisplay(source_.tensor_name), " stream \"",
                                          s.role, "\": chunk ", c, " checksum mismatch"));
    }
    verified_[c] = true;
    last_chunk_ = c;
  }
  return absl::OkStatus();
}

std::pair<uint64_t, uint64_t> StreamCutPieces::NextCoalesced() {
  if (pending_.second == 0) pending_ = NextRun(cursor_);
  auto [start, len] = pending_;
  if (len == 0) return {0, 0};
  if (len > kCutPieceBytes) {
    len = kCutPieceBytes;
    pending_ = {start + len, pending_.second - len};
    return {start, len};
  }
  pending_ = {0, 0};
  // Runs that continue where this one ends join it (a cut outer dimension
  // keeps long stretches of whole rows).
  while (len < kCutPieceBytes) {
    auto r = NextRun(cursor_);
    if (r.second == 0) break;
    if (r.first != start + len) {
      pending_ = r;
      break;
    }
    uint64_t take = std::min(r.second, kCutPieceBytes - len);
    len += take;
    if (take < r.second) {
      pending_ = {r.first + take, r.second - take};
      break;
    }
  }
  return {start, len};
}

absl::StatusOr<uint64_t> StreamCutPieces::GatherRegularRows(uint8_t* out, uint64_t room) {
  // pending_ must be the whole run of the row cursor_ is at.
  if (inner_runs_.size() != 1 || pending_.second != inner_runs_[0].second || cursor_.run != 1 ||
      pending_.first != cursor_.row_base + inner_runs_[0].first) {
    return 0;
  }
  const uint64_t len = pending_.second;
  if (room < len) return 0;
  const uint64_t stride = stride_[cursor_.idx.size() - 1];
  const uint64_t first = pending_.first;
  const uint64_t rows = 1 + StepRegularRows(cursor_, room / len - 1);
  pending_ = {0, 0};
  const uint8_t* src = stored_.data() + first;
  for (uint64_t k = 0; k < rows; ++k, src += stride, out += len) {
    if (prefix_units_.empty()) {  // else Check hashes the gathered piece
      const uint64_t begin = static_cast<uint64_t>(src - stored_.data());
      BP_RETURN_IF_ERROR(Verify(begin, begin + len));
    }
    std::memcpy(out, src, len);
  }
  return rows * len;
}

absl::StatusOr<absl::Span<const uint8_t>> StreamCutPieces::Next() {
  if (size_ == 0 && !whole_verified_) {
    // Nothing to copy; an empty stream's checksum is still the file's word.
    if (stored_.empty()) {
      absl::Status st = Verify(0, 0);
      if (!st.ok()) return st;
    }
    whole_verified_ = true;
  }
  ReadAhead();
  auto run = held_.second != 0 ? held_ : NextCoalesced();
  held_ = {0, 0};
  if (run.second >= kGatherRunBytes || run.second == 0) {
    handed_out_ += run.second;
    ReleaseBehind(run.second == 0 ? UINT64_MAX : run.first);
    return stored_.subspan(run.first, run.second);
  }
  // Short runs: copied together into one piece. Each run's source chunks
  // are verified first, here: the copy then reads them from cache, and
  // Check has nothing left to do for the piece.
  // The other buffers may still be being written (LivePieces).
  gather_slot_ = (gather_slot_ + 1) % kGatherBuffers;
  uint8_t* gathered = gathered_.Get(kGatherBuffers * kCutPieceBytes) + gather_slot_ * kCutPieceBytes;
  uint64_t filled = 0;
  uint64_t last_run_begin = run.first;
  while (run.second != 0) {
    if (run.second >= kGatherRunBytes || filled + run.second > kCutPieceBytes) {
      held_ = run;  // the next piece starts with it
      break;
    }
    if (prefix_units_.empty()) {  // else Check hashes the gathered piece
      absl::Status verified = Verify(run.first, run.first + run.second);
      if (!verified.ok()) return verified;
    }
    std::memcpy(gathered + filled, stored_.data() + run.first, run.second);
    filled += run.second;
    last_run_begin = run.first;
    BP_ASSIGN_OR_RETURN(uint64_t rows, GatherRegularRows(gathered + filled, kCutPieceBytes - filled));
    filled += rows;
    run = NextCoalesced();
  }
  handed_out_ += filled;
  // A gathered piece is a copy, but the chunk of its last run may still be
  // read (verified whole, or the next run's).
  ReleaseBehind(last_run_begin);
  return absl::MakeConstSpan(gathered, filled);
}

void StreamCutPieces::ReleaseBehind(uint64_t needed_from) {
  const StreamInfo& s = source_.stream;
  if (needed_from != UINT64_MAX && prefix_units_.empty() && !s.chunks.empty()) {
    // Check verifies the whole chunk the piece starts in.
    auto c = ChunkEndingAfter(s.chunks, needed_from);
    if (c != s.chunks.end()) needed_from = std::min(needed_from, c->stored_offset);
  }
  needed_from_[calls_++ % kGatherBuffers] = needed_from;
  const uint64_t low = *std::min_element(needed_from_.begin(), needed_from_.end());
  if (low != UINT64_MAX && low >= released_ + kReleaseStepBytes) ReleaseBelow(low);
}

void StreamCutPieces::ReleaseBelow(uint64_t end) {
  end = std::min<uint64_t>(end, stored_.size());
  if (!reader_.mapped() || end <= released_) return;
  io::ReleaseMappedPages(stored_.subspan(released_, end - released_));
  released_ = end;
}

absl::Status StreamCutPieces::Check(absl::Span<const uint8_t> part) {
  if (!prefix_units_.empty()) return CheckPrefixes(part);
  // A gathered piece (not in the mapping) was verified as it was gathered.
  if (part.empty() || part.data() < stored_.data() || part.data() >= stored_.data() + stored_.size()) {
    return absl::OkStatus();
  }
  uint64_t begin = static_cast<uint64_t>(part.data() - stored_.data());
  return Verify(begin, begin + part.size());
}

std::optional<uint64_t> StreamCutPieces::VerifiedXxh3(absl::Span<const uint8_t> bytes) const {
  if (bytes.empty() || bytes.data() < stored_.data() || bytes.data() >= stored_.data() + stored_.size()) {
    return std::nullopt;  // not in the mapping: a gathered piece
  }
  const StreamInfo& s = source_.stream;
  uint64_t begin = static_cast<uint64_t>(bytes.data() - stored_.data());
  if (s.chunks.empty()) {
    if (whole_verified_ && begin == 0 && bytes.size() == stored_.size()) return s.xxh3;
    return std::nullopt;
  }
  auto it = std::lower_bound(s.chunks.begin(), s.chunks.end(), begin,
                             [](const ChunkInfo& c, uint64_t v) { return c.stored_offset < v; });
  // The last chunk starting at `begin` (earlier ones there are empty).
  while (it != s.chunks.end() && std::next(it) != s.chunks.end() && std::next(it)->stored_offset == begin) ++it;
  if (it == s.chunks.end() || it->stored_offset != begin || it->stored_length != bytes.size()) return std::nullopt;
  if (!verified_[static_cast<size_t>(it - s.chunks.begin())]) return std::nullopt;
  return it->xxh3;
}

absl::Status StreamCutPieces::CheckPrefixes(absl::Span<const uint8_t> part) {
  while (!part.empty()) {
    if (unit_ >= prefix_units_.size()) {
      return absl::InternalError(StrCat(reader_.path(), ": tensor ", QuoteForDisplay(source_.tensor_name),
                                        ": more bytes checked than the cut keeps"));
    }
    const PrefixUnit& u = prefix_units_[unit_];
    uint64_t n = std::min<uint64_t>(part.size(), u.out_end - prefix_checked_);
    unit_hash_.Update(part.data(), n);
    prefix_checked_ += n;
    part.remove_prefix(n);
    if (prefix_checked_ < u.out_end) break;
    if (unit_hash_.Digest() != u.xxh3) {
      const StreamInfo& s = source_.stream;
      // [C-6.10.1.9]
      return ChecksumMismatchError(StrCat(reader_.path(), ": tensor ", QuoteForDisplay(source_.tensor_name),
                                        " stream \"", s.role, "\": chunk ", u.chunk,
                                        " line-prefix checksum mismatch (prefix ", prefix_, ": the first ",
                                        s.prefix_bytes[prefix_], " bytes of each ", s.line_bytes, "-byte line)"));
    }
    unit_hash_.Reset();
    ++unit_;
  }
  return absl::OkStatus();
}

std::optional<uint64_t> StreamCutPieces::VouchedXxh3(uint64_t offset, uint64_t length) const {
  auto it = std::lower_bound(prefix_units_.begin(), prefix_units_.end(), offset,
                             [](const PrefixUnit& u, uint64_t v) { return u.out_begin < v; });
  if (it == prefix_units_.end() || it->out_begin != offset || it->out_end - it->out_begin != length) {
    return std::nullopt;
  }
  return it->xxh3;
}

std::optional<std::vector<ChunkInfo>> StreamCutPieces::UseLinePrefixes() {
  const StreamInfo& s = source_.stream;
  const size_t n = grid_.size();
  if (n < 2 || size_ == 0 || s.prefix_bytes.empty() || s.chunks.empty() || !prefix_units_.empty()) {
    return std::nullopt;
  }
  // One dimension j >= 1 cut to a prefix, every other but the outermost
  // whole: each line (dimensions j and inwards) keeps its first `kept`
  // bytes, which must be a recorded prefix.
  size_t j = 0;
  for (size_t d = 1; d < n; ++d) {
    if (maps_[d].empty()) continue;
    if (j != 0) return std::nullopt;
    j = d;
  }
  if (j == 0) return std::nullopt;  // whole source chunks: VerifiedXxh3 covers them
  for (size_t i = 0; i < maps_[j].size(); ++i) {
    if (maps_[j][i] != i) return std::nullopt;
  }
  // Sizes within the stored stream: no overflow.
  const uint64_t step = stride_[j];  // bytes of one element (cell) of dimension j
  if (s.line_bytes != step * grid_[j]) return std::nullopt;
  const uint64_t kept = maps_[j].size() * step;
  auto p = std::find(s.prefix_bytes.begin(), s.prefix_bytes.end(), kept);
  if (p == s.prefix_bytes.end()) return std::nullopt;
  uint64_t lines_per_row = 1;
  for (size_t d = 1; d < j; ++d) lines_per_row *= grid_[d];
  const uint64_t row_out_bytes = lines_per_row * kept;
  // Rows: every source chunk kept whole, its rows in order, or not at all.
  const auto& rows = maps_[0];
  const uint64_t out_rows = rows.empty() ? grid_[0] : rows.size();
  std::vector<PrefixUnit> units;
  std::vector<ChunkInfo> chunks;
  for (uint64_t r = 0; r < out_rows;) {
    const uint64_t src_row = rows.empty() ? r : rows[r];
    auto it = std::upper_bound(s.chunks.begin(), s.chunks.end(), src_row,
                               [](uint64_t v, const ChunkInfo& c) { return v < c.first_row + c.row_count; });
    if (it == s.chunks.end() || it->first_row != src_row || it->row_count > out_rows - r) return std::nullopt;
    for (uint64_t i = 1; i < it->row_count; ++i) {
      if ((rows.empty() ? r + i : rows[r + i]) != src_row + i) return std::nullopt;
    }
    ChunkInfo c;
    c.first_row = r;
    c.row_count = it->row_count;
    c.raw_offset = c.stored_offset = r * row_out_bytes;
    c.raw_length = c.stored_length = it->row_count * row_out_bytes;
    const size_t index = static_cast<size_t>(it - s.chunks.begin());
    units.push_back({c.stored_offset, c.stored_offset + c.stored_length,
                     s.ChunkPrefixXxh3(index)[static_cast<size_t>(p - s.prefix_bytes.begin())], index});
    chunks.push_back(c);
    r += it->row_count;
  }
  prefix_ = static_cast<size_t>(p - s.prefix_bytes.begin());
  prefix_units_ = std::move(units);
  return chunks;
}

std::vector<PieceSource*> CutInPlace::pieces() const {
  std::vector<PieceSource*> out;
  for (const auto& s : streams) out.push_back(s.get());
  return out;
}

std::optional<CutInPlace> CutTensorInPlace(const Reader& reader, size_t tensor, const ElementMaps& maps,
                                           const std::string& new_name) {
  if (tensor >= reader.tensors().size()) return std::nullopt;
  const auto shared = reader.SharedTensor(tensor);
  const TensorInfo& info = *shared;
  if (info.shape.empty() || maps.size() != info.shape.size()) return std::nullopt;
  auto layout = StoredCellLayout(info.codec_id, info.dtype, info.codec_params);
  if (!layout || layout->cell_bytes.size() != info.streams.size() || layout->block_elems == 0 ||
      info.shape.back() % layout->block_elems != 0) {
    return std::nullopt;
  }
  std::vector<uint64_t> grid = info.shape;
  grid.back() /= layout->block_elems;
  ElementMaps cell_maps = maps;
  if (layout->block_elems > 1 && !maps.back().empty()) {
    auto cells = WholeBlockMap(maps.back(), layout->block_elems);
    if (!cells) return std::nullopt;
    cell_maps.back() = std::move(*cells);
  }
  for (size_t d = 0; d < grid.size(); ++d) {
    for (uint64_t v : cell_maps[d]) {
      if (v >= grid[d]) return std::nullopt;
    }
  }
  auto cells = CheckedProduct(grid);
  CutInPlace out;
  out.info = info;
  out.info.name = new_name;
  for (size_t d = 0; d < info.shape.size(); ++d) out.info.shape[d] = maps[d].empty() ? info.shape[d] : maps[d].size();
  for (size_t k = 0; k < info.streams.size(); ++k) {
    const StreamInfo& s = info.streams[k];
    auto stored = reader.StoredStream(tensor, k);
    auto bytes = cells ? CheckedMul(*cells, layout->cell_bytes[k]) : std::nullopt;
    if (s.compression != Compression::kNone || !stored.ok() || !bytes || *bytes != stored->size()) return std::nullopt;
    out.streams.push_back(
        std::make_unique<StreamCutPieces>(reader, tensor, k, *stored, grid, layout->cell_bytes[k], cell_maps));
    StreamInfo& o = out.info.streams[k];
    o.compression = Compression::kNone;
    o.raw_length = o.length = out.streams.back()->size();
    o.chunks.clear();
    o.offset = 0;
    o.xxh3 = 0;
    o.line_bytes = 0;
    o.prefix_bytes.clear();
  }
  AddRowChunks(&out.info);
  for (size_t k = 0; k < out.streams.size(); ++k) {
    if (auto chunks = out.streams[k]->UseLinePrefixes()) out.info.streams[k].chunks = std::move(*chunks);
  }
  return out;
}

}  // namespace boltpack::format
