// Every path from a .bolt file's stored bytes to values: Decode, DecodeRows,
// DecodeRowRanges and ReadRawStream all come through ReadRaw, and every
// chunk (or chunk-less stream) they read is checked against its checksum
// the first time this reader reads it [C-7.4.1].
//
// A decode of many rows is cut into blocks of whole chunks; each block's
// chunks are checked on the thread that decodes it, as the decoder reads
// them, while their bytes are still in cache, so checking costs a hash of
// bytes already at hand rather than a second pass over the tensor from
// memory.
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "absl/strings/str_format.h"
#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "common/buffer_pool.h"
#include "common/checksum_status.h"
#include "common/mapped_file.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "common/xxh3.h"
#include "format/chunk_hasher.h"
#include "format/manifest_validate.h"
#include "format/reader_impl.h"
#include "format/zstd_frames.h"

namespace boltpack {

using format::StreamChecks;

namespace {

// Room for raw bytes decompressed from a zstd stream: pooled (warm pages)
// for the row blocks of a decode, plain memory refused rather than thrown
// for a stream too large for the pool's purpose.
class RawScratch {
 public:
  absl::StatusOr<uint8_t*> Get(uint64_t n, const std::string& where) {
    if (n <= kPooledBytes) return pooled_.Get(n);
    owned_.reset(new (std::nothrow) uint8_t[n]);
    if (!owned_) return absl::ResourceExhaustedError(StrCat(where, ": cannot allocate ", n, " bytes"));
    return owned_.get();
  }

 private:
  static constexpr uint64_t kPooledBytes = uint64_t{64} << 20;
  PooledBuffer pooled_;
  std::unique_ptr<uint8_t[]> owned_;
};

absl::Status ZstdInto(absl::Span<const uint8_t> src, uint8_t* dst, uint64_t raw_length, const std::string& where) {
  size_t got = ZSTD_decompress(dst, raw_length, src.data(), src.size());
  if (ZSTD_isError(got)) return absl::DataLossError(StrCat(where, ": zstd: ", ZSTD_getErrorName(got)));
  if (got != raw_length) {
    // [C-7.3.2]
    return absl::DataLossError(StrCat(where, ": zstd data holds ", got, " bytes, the manifest says ", raw_length));
  }
  return absl::OkStatus();
}

// The chunks of `s` that hold raw bytes [begin, end): [first, last].
std::pair<size_t, size_t> ChunksOver(const StreamInfo& s, uint64_t begin, uint64_t end) {
  auto after = [](uint64_t offset, const ChunkInfo& c) { return offset < c.raw_offset; };
  size_t first = std::upper_bound(s.chunks.begin(), s.chunks.end(), begin, after) - s.chunks.begin();
  first = first == 0 ? 0 : first - 1;
  size_t last = first;
  while (last + 1 < s.chunks.size() && s.chunks[last + 1].raw_offset < end) ++last;
  return {first, last};
}

struct Unit {
  absl::Span<const uint8_t> stored;
  uint64_t raw_offset = 0;
  uint64_t raw_length = 0;
  uint64_t xxh3 = 0;
};

Unit UnitOf(const StreamInfo& s, absl::Span<const uint8_t> stored, uint64_t k) {
  if (s.chunks.empty()) return {stored, 0, s.raw_length, s.xxh3};
  const ChunkInfo& c = s.chunks[k];
  return {stored.subspan(c.stored_offset, c.stored_length), c.raw_offset, c.raw_length, c.xxh3};
}

std::string UnitName(const StreamInfo& s, uint64_t k) { return s.chunks.empty() ? "" : StrCat(" chunk ", k); }

}  // namespace

absl::Status Reader::Impl::CheckUnit(size_t t, const TensorInfo& tensor, size_t s, uint64_t unit) const {
  if (!options.verify_checksums || checks.Done(t, s, unit, StreamChecks::kChecksum)) return absl::OkStatus();
  const StreamInfo& info = tensor.streams[s];
  Unit u = UnitOf(info, Stored(info), unit);
  const uint64_t got = Xxh3(u.stored);
  if (got != u.xxh3) return ChecksumMismatch(tensor, s, unit, got);
  checks.Mark(t, s, unit, StreamChecks::kChecksum);
  return absl::OkStatus();
}

absl::Status Reader::Impl::ChecksumMismatch(const TensorInfo& t, size_t s, uint64_t unit, uint64_t got) const {
  const StreamInfo& info = t.streams[s];
  const uint64_t want = info.chunks.empty() ? info.xxh3 : info.chunks[unit].xxh3;
  // [C-7.4.1]
  return ChecksumMismatchError(absl::StrFormat("%s%s: checksum mismatch (manifest %016x, data %016x)",
                                               WhereStream(t, s), UnitName(info, unit), want, got));
}

absl::Status Reader::Impl::CheckZstdBound(size_t index, const TensorInfo& t, size_t s, uint64_t unit) const {
  const StreamInfo& info = t.streams[s];
  if (info.compression != Compression::kZstd || checks.Done(index, s, unit, StreamChecks::kZstdBound)) {
    return absl::OkStatus();
  }
  Unit u = UnitOf(info, Stored(info), unit);
  if (u.raw_length > options.max_decompressed_stream_bytes) {
    return absl::ResourceExhaustedError(StrCat(WhereStream(t, s), UnitName(info, unit), ": ", u.raw_length,
                                               " decompressed bytes exceed the reader's limit of ",
                                               options.max_decompressed_stream_bytes));
  }
  // A raw length beyond what the frames' headers bound is a lie told to
  // make the reader allocate (the rule a copy applies too).
  BP_RETURN_IF_ERROR(format::CheckZstdFrames(u.stored, u.raw_length, StrCat(WhereStream(t, s), UnitName(info, unit))));
  checks.Mark(index, s, unit, StreamChecks::kZstdBound);
  return absl::OkStatus();
}

namespace {

// Raw bytes [base, base + bytes.size()) of one stream.
struct RawView {
  absl::Span<const uint8_t> bytes;
  uint64_t base = 0;
};

// Raw bytes [begin, end) of stream `s`: a span of the mapping for an
// uncompressed stream, else the units they lie in decompressed into
// `scratch`, on up to `threads` threads. Every unit is checked first, unless
// `check` is false: then the caller checks them as it uses the bytes, while
// they are in cache (an uncompressed stream's: format/chunk_hasher.h).
absl::StatusOr<RawView> ReadRaw(const Reader::Impl& impl, size_t t, const TensorInfo& tensor, size_t s,
                                uint64_t begin, uint64_t end, int threads, RawScratch& scratch, bool check = true) {
  const StreamInfo& info = tensor.streams[s];
  if (begin > end || end > info.raw_length) {
    return absl::OutOfRangeError(StrCat(impl.WhereStream(tensor, s), ": raw range [", begin, ", ", end,
                                        ") outside the stream"));
  }
  const auto units = info.chunks.empty() ? std::pair<size_t, size_t>{0, 0} : ChunksOver(info, begin, end);
  const size_t first = units.first, last = units.second;
  const auto stored = impl.Stored(info);
  // The pages of the units read (checked whole), asked for before the first
  // fault so that the kernel reads those and no more (io::AdviseWillNeed).
  if (info.chunks.empty()) {
    io::AdviseWillNeed(stored);
  } else {
    const Unit lo_unit = UnitOf(info, stored, first), hi_unit = UnitOf(info, stored, last);
    io::AdviseWillNeed(absl::MakeConstSpan(lo_unit.stored.data(),
                                           hi_unit.stored.data() + hi_unit.stored.size() - lo_unit.stored.data()));
  }
  if (info.compression == Compression::kNone) {
    if (!check) return RawView{stored.subspan(begin, end - begin), begin};
    BP_RETURN_IF_ERROR(ParallelFor(last - first + 1, threads, 1, [&](uint64_t a, uint64_t b) -> absl::Status {
      for (uint64_t k = first + a; k < first + b; ++k) BP_RETURN_IF_ERROR(impl.CheckUnit(t, tensor, s, k));
      return absl::OkStatus();
    }));
    return RawView{stored.subspan(begin, end - begin), begin};
  }
  // Every unit's bound before the allocation their raw lengths ask for.
  for (uint64_t k = first; k <= last; ++k) BP_RETURN_IF_ERROR(impl.CheckZstdBound(t, tensor, s, k));
  const uint64_t lo = UnitOf(info, stored, first).raw_offset;
  const Unit tail = UnitOf(info, stored, last);
  BP_ASSIGN_OR_RETURN(uint8_t * dst, scratch.Get(tail.raw_offset + tail.raw_length - lo, impl.WhereStream(tensor, s)));
  BP_RETURN_IF_ERROR(ParallelFor(last - first + 1, threads, 1, [&](uint64_t a, uint64_t b) -> absl::Status {
    for (uint64_t k = first + a; k < first + b; ++k) {
      if (check) BP_RETURN_IF_ERROR(impl.CheckUnit(t, tensor, s, k));
      const Unit u = UnitOf(info, stored, k);
      BP_RETURN_IF_ERROR(ZstdInto(u.stored, dst + (u.raw_offset - lo), u.raw_length,
                                  StrCat(impl.WhereStream(tensor, s), UnitName(info, k))));
    }
    return absl::OkStatus();
  }));
  return RawView{absl::MakeConstSpan(dst + (begin - lo), end - begin), begin};
}

// For an error of a decode in a view that leaves streams out: which ones (a
// codec that does not decode views rejects their empty bytes).
std::string ViewNote(const TensorInfo& info, const ViewInfo* view) {
  std::string left_out;
  for (const auto& s : info.streams) {
    if (!ViewReadsStream(view->name, s)) left_out += StrCat(left_out.empty() ? "" : ", ", "\"", s.role, "\"");
  }
  if (left_out.empty()) return {};
  return StrCat(" (view \"", view->name, "\" does not read stream ", left_out, ")");
}

// Blocks are made of whole chunks of at least this many stored bytes (the
// writers' chunks are about 1 MiB): small enough to stay in a core's cache
// between their check and their decode, large enough that a block's setup
// costs nothing.
constexpr uint64_t kMinBlockStoredBytes = uint64_t{256} << 10;

// A run of whole outer rows decoded on its own, and where its output goes.
struct RowBlock {
  uint64_t begin = 0, end = 0;
  uint64_t dst_offset = 0;  // in rows from the start of the output
};

// Cuts `ranges` into blocks at chunk boundaries of the streams `reads`
// marks, so that within a range each chunk lies in one block and is checked
// once (a range's first and last block may hold part of a chunk). Blocks
// hold whole chunks up to at least `min_rows` rows.
std::vector<RowBlock> CutIntoBlocks(const TensorInfo& info, const std::vector<bool>& reads,
                                    absl::Span<const RowRange> ranges, uint64_t min_rows) {
  std::vector<uint64_t> cuts;
  for (size_t s = 0; s < info.streams.size(); ++s) {
    if (!reads[s]) continue;
    for (const auto& c : info.streams[s].chunks) cuts.push_back(c.first_row);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<RowBlock> blocks;
  uint64_t out_row = 0;
  for (const RowRange& r : ranges) {
    size_t c = std::upper_bound(cuts.begin(), cuts.end(), r.begin) - cuts.begin();
    for (uint64_t at = r.begin; at < r.end;) {
      uint64_t end = r.end;
      for (; c < cuts.size() && cuts[c] < r.end; ++c) {
        if (cuts[c] - at >= min_rows) {
          end = cuts[c];
          break;
        }
      }
      blocks.push_back({at, end, out_row});
      out_row += end - at;
      at = end;
    }
  }
  return blocks;
}

// Reader::CanDecode and DecodedBytes of tensor `t`, whose TensorInfo is
// `info`: a decode asks for both, and each built or looked up the tensor
// and checked its record again (three times a tensor in a verify).
absl::Status CheckDecodable(const Reader::Impl& impl, const TensorInfo& info, OutputType out) {
  if (!impl.missing_features.empty()) {
    // [C-5.3.4]
    return absl::UnimplementedError(StrCat(
        impl.path, ": needs feature \"", impl.missing_features[0],
        "\" which this reader does not implement; the file can be listed and copied, not decoded"));
  }
  for (const auto& f : info.required_features) {
    if (!format::IsKnownFeature(f)) {
      // [C-5.3.5]
      return absl::UnimplementedError(StrCat(impl.Where(info), ": needs feature \"", f,
                                             "\" which this reader does not implement"));
    }
  }
  // [C-5.2.2] [C-6.7.2]
  if (static_cast<int>(info.dtype) > kMaxDType) {
    return absl::UnimplementedError(StrCat(impl.Where(info), ": dtype ", static_cast<int>(info.dtype),
                                           " is unknown to this reader; its bytes can be copied, not decoded"));
  }
  for (const auto& s : info.streams) {
    // [C-5.2.2] [C-6.9.10]
    if (s.compression != Compression::kNone && s.compression != Compression::kZstd) {
      return absl::UnimplementedError(StrCat(impl.Where(info), " stream \"", s.role, "\": compression ",
                                             static_cast<int>(s.compression), " is unknown to this reader"));
    }
  }
  const Codec* codec = FindCodec(info.codec_id);
  // [C-10.2.1]
  if (codec == nullptr) {
    return absl::UnimplementedError(StrCat(impl.Where(info), ": codec \"", info.codec_id,
                                           "\" is unknown to this reader; its bytes can be copied, not decoded"));
  }
  // [C-10.3.1] [C-10.3.2]
  absl::Status valid = codec->ValidateRecord(info);
  if (!valid.ok()) {
    // A record its codec rejects is a damaged file, whatever code the codec
    // chose [C-12.2] [C-10.3.1].
    return absl::DataLossError(StrCat(impl.path, ": ", valid.message()));
  }
  if (!codec->CanDecodeTo(info, out)) {
    return absl::InvalidArgumentError(StrCat(impl.Where(info), ": codec \"", info.codec_id,
                                             "\" cannot decode a ", DTypeName(info.dtype),
                                             " tensor to this output type"));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> DecodedBytesOf(const Reader::Impl& impl, size_t t, const TensorInfo& info, OutputType out) {
  BP_RETURN_IF_ERROR(CheckDecodable(impl, info, out));
  // Callers allocate this many bytes next: a zstd stream must first show it
  // can hold what its record (and so the decoded size) claims.
  for (size_t s = 0; s < info.streams.size(); ++s) {
    if (info.streams[s].compression != Compression::kZstd) continue;  // its raw length is its stored length
    for (uint64_t u = 0; u < StreamChecks::Units(info.streams[s]); ++u) {
      BP_RETURN_IF_ERROR(impl.CheckZstdBound(t, info, s, u));
    }
  }
  return FindCodec(info.codec_id)->DecodedBytes(info, out);
}

}  // namespace

absl::Status Reader::CanDecode(size_t tensor, OutputType out) const {
  if (tensor >= impl_->tensor_count()) return absl::OutOfRangeError(StrCat(impl_->path, ": no tensor #", tensor));
  return CheckDecodable(*impl_, *impl_->Tensor(tensor), out);
}

absl::StatusOr<uint64_t> Reader::DecodedBytes(size_t tensor, OutputType out) const {
  if (tensor >= impl_->tensor_count()) return absl::OutOfRangeError(StrCat(impl_->path, ": no tensor #", tensor));
  return DecodedBytesOf(*impl_, tensor, *impl_->Tensor(tensor), out);
}

absl::Status Reader::ReadRawStream(size_t tensor, size_t stream, absl::Span<uint8_t> dst,
                                   const ExecOptions& exec) const {
  const auto info = tensor < impl_->tensor_count() ? impl_->Tensor(tensor) : nullptr;
  if (info == nullptr || stream >= info->streams.size()) {
    return absl::OutOfRangeError(StrCat(impl_->path, ": no stream ", stream, " of tensor ", tensor));
  }
  const StreamInfo& s = info->streams[stream];
  if (dst.size() != s.raw_length) {
    return absl::InvalidArgumentError(StrCat(impl_->WhereStream(*info, stream), ": buffer of ", dst.size(),
                                             " bytes for ", s.raw_length, " raw bytes"));
  }
  RawScratch scratch;
  BP_ASSIGN_OR_RETURN(RawView raw, ReadRaw(*impl_, tensor, *info, stream, 0, s.raw_length, exec.threads, scratch));
  if (!raw.bytes.empty()) std::memcpy(dst.data(), raw.bytes.data(), raw.bytes.size());
  return absl::OkStatus();
}

absl::Status Reader::Decode(size_t tensor, OutputType out, absl::Span<uint8_t> dst, const ExecOptions& exec) const {
  return Decode(tensor, impl_->options.view, out, dst, exec);
}

absl::Status Reader::Decode(size_t tensor, std::string_view view, OutputType out, absl::Span<uint8_t> dst,
                            const ExecOptions& exec) const {
  if (tensor >= impl_->tensor_count()) return absl::OutOfRangeError(StrCat(impl_->path, ": no tensor #", tensor));
  const RowRange all{0, impl_->Tensor(tensor)->row_count()};
  return DecodeRowRanges(tensor, view, absl::MakeConstSpan(&all, 1), out, dst, exec);
}

absl::Status Reader::DecodeRows(size_t tensor, uint64_t row_begin, uint64_t row_end, OutputType out,
                                absl::Span<uint8_t> dst, const ExecOptions& exec) const {
  return DecodeRows(tensor, impl_->options.view, row_begin, row_end, out, dst, exec);
}

absl::Status Reader::DecodeRows(size_t tensor, std::string_view view, uint64_t row_begin, uint64_t row_end,
                                OutputType out, absl::Span<uint8_t> dst, const ExecOptions& exec) const {
  const RowRange range{row_begin, row_end};
  return DecodeRowRanges(tensor, view, absl::MakeConstSpan(&range, 1), out, dst, exec);
}

absl::Status Reader::DecodeRowRanges(size_t tensor, std::string_view view, absl::Span<const RowRange> ranges,
                                     OutputType out, absl::Span<uint8_t> dst, const ExecOptions& exec) const {
  BP_ASSIGN_OR_RETURN(const ViewInfo* v, impl_->FindView(view));
  if (tensor >= impl_->tensor_count()) return absl::OutOfRangeError(StrCat(impl_->path, ": no tensor #", tensor));
  const auto shared = impl_->Tensor(tensor);  // alive as long as `input` points at it
  const TensorInfo& info = *shared;
  BP_ASSIGN_OR_RETURN(const uint64_t total, DecodedBytesOf(*impl_, tensor, info, out));
  const uint64_t rows = info.row_count();
  uint64_t kept = 0;
  for (const RowRange& r : ranges) {
    if (r.begin > r.end || r.end > rows) {
      return absl::OutOfRangeError(StrCat(impl_->Where(info), ": rows [", r.begin, ", ", r.end,
                                          ") outside [0, ", rows, ")"));
    }
    kept += r.end - r.begin;
  }
  const bool whole = ranges.size() == 1 && ranges[0].begin == 0 && ranges[0].end == rows;
  const bool whole_rows = rows > 0 && total % rows == 0;
  if (!whole && !whole_rows) {
    return absl::UnimplementedError(StrCat(impl_->Where(info), ": this output has no whole bytes per row, so "
                                           "rows cannot be decoded apart; decode the whole tensor"));
  }
  const uint64_t row_bytes = whole_rows ? total / rows : 0;
  const uint64_t need = whole ? total : kept * row_bytes;
  if (dst.size() < need) {
    return absl::InvalidArgumentError(StrCat(impl_->Where(info), ": output buffer of ", dst.size(),
                                             " bytes is smaller than the ", need, " the decode writes"));
  }
  const bool full = v == &impl_->views[0];
  std::vector<bool> reads(info.streams.size());
  for (size_t s = 0; s < info.streams.size(); ++s) reads[s] = full || ViewReadsStream(v->name, info.streams[s]);
  const Codec* codec = FindCodec(info.codec_id);
  auto codec_error = [&](absl::Status st) {
    if (st.ok()) return st;
    absl::Status named(st.code(), StrCat(impl_->path, ": ", st.message(), ViewNote(info, v)));
    // Payloads (a checksum mismatch's mark) survive the new message.
    st.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) { named.SetPayload(url, payload); });
    return named;
  };
  DecodeInput input;
  input.info = &info;
  if (!full) input.view = v->name;
  // [C-15.5.2]
  input.streams.resize(info.streams.size());  // a stream the view does not read stays empty
  input.raw_base.assign(info.streams.size(), 0);
  std::vector<RawScratch> whole_scratch(info.streams.size());
  // Reads the streams that `chunked` selects whole into `input`.
  auto read_whole = [&](bool chunked) -> absl::Status {
    for (size_t s = 0; s < info.streams.size(); ++s) {
      if (!reads[s] || info.streams[s].chunks.empty() == chunked) continue;
      BP_ASSIGN_OR_RETURN(RawView raw, ReadRaw(*impl_, tensor, info, s, 0, info.streams[s].raw_length, exec.threads,
                                               whole_scratch[s]));
      input.streams[s] = raw.bytes;
    }
    return absl::OkStatus();
  };
  // Streams without chunks are read (checked, decompressed) once, whole,
  // and shared by every block.
  BP_RETURN_IF_ERROR(read_whole(/*chunked=*/false));
  std::vector<RowBlock> blocks;
  if (whole_rows) {
    const uint64_t pieces = std::max<uint64_t>(1, info.stored_bytes() / kMinBlockStoredBytes);
    blocks = CutIntoBlocks(info, reads, ranges, std::max<uint64_t>(1, rows / pieces));
  }
  // A whole tensor in one block (at most one chunk per stream, or no whole
  // bytes per row): one decode, on the codec's own threads.
  if (whole && blocks.size() <= 1) {
    BP_RETURN_IF_ERROR(read_whole(/*chunked=*/true));
    return codec_error(codec->Decode(input, out, dst.subspan(0, need), exec));
  }
  // A block's uncompressed chunks are hashed as the decoder reads them
  // (format/chunk_hasher.h), and all of them before its result counts; a
  // zstd chunk is hashed just before it is decompressed, which then reads
  // it from cache. The decoders are built for hostile bytes (validated
  // records, fuzzed), so decoding before the check is done is safe; a
  // decode that read a bad chunk fails with the checksum error, not with
  // whatever the decoder made of the bytes, and a failed decode's output is
  // unspecified.
  absl::Status st = ParallelFor(blocks.size(), exec.threads, 1, [&](uint64_t a, uint64_t b) -> absl::Status {
    std::vector<RawScratch> scratch(info.streams.size());
    format::ChunkHasher hasher(*impl_, tensor, info);
    DecodeInput part = input;
    if (impl_->options.verify_checksums) part.progress = &hasher;
    for (uint64_t i = a; i < b; ++i) {
      const RowBlock& blk = blocks[i];
      for (size_t s = 0; s < info.streams.size(); ++s) {
        if (!reads[s]) continue;
        BP_ASSIGN_OR_RETURN(auto range, codec->RowRangeBytes(info, s, blk.begin, blk.end));
        if (info.streams[s].chunks.empty()) {  // read and checked whole above
          if (range.first > range.second || range.second > input.streams[s].size()) {
            return absl::DataLossError(StrCat(impl_->WhereStream(info, s), ": rows [", blk.begin, ", ", blk.end,
                                              ") lie outside the stream"));
          }
          part.streams[s] = input.streams[s].subspan(range.first, range.second - range.first);
          part.raw_base[s] = range.first;
          continue;
        }
        const bool zstd = info.streams[s].compression != Compression::kNone;
        BP_ASSIGN_OR_RETURN(RawView raw, ReadRaw(*impl_, tensor, info, s, range.first, range.second, 1, scratch[s],
                                                 /*check=*/zstd));
        if (!zstd) hasher.Start(s, range.first, range.second);
        part.streams[s] = raw.bytes;
        part.raw_base[s] = raw.base;
      }
      auto rows_dst = dst.subspan(blk.dst_offset * row_bytes, (blk.end - blk.begin) * row_bytes);
      absl::Status decoded = codec->DecodeRows(part, blk.begin, blk.end, out, rows_dst);
      BP_RETURN_IF_ERROR(hasher.Finish());
      BP_RETURN_IF_ERROR(codec_error(decoded));
    }
    return absl::OkStatus();
  });
  if (st.code() == absl::StatusCode::kUnimplemented && whole) {
    // A codec that cannot decode row ranges: the whole tensor at once.
    BP_RETURN_IF_ERROR(read_whole(/*chunked=*/true));
    return codec_error(codec->Decode(input, out, dst.subspan(0, need), exec));
  }
  return st;
}

}  // namespace boltpack
