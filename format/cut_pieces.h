// Cutting a stored tensor without copying it (spec/elastic.md §5.1): the
// kept bytes of each stream are handed to a writer as runs of the reader's
// mapping, in output order, so `bolt-pack slice` moves them from the input
// mapping to the output file in one copy (the write itself) with memory
// bounded by a piece, not by a tensor. The record is the one
// CutStoredTensor gives (format/elastic_cut.h), so the output is the same.
//
// Source checksums: every source chunk a kept byte lies in has its XXH3
// verified once, the first time (a stream without chunks is checked whole,
// once): by Check (which a writer calls for every part it writes, possibly
// on another thread) for parts of the mapping, and by Next for the short
// runs it gathers, before copying them. Every byte copied is verified and
// chunks a budget drops are not read at all. A mismatch is DATA_LOSS naming
// the tensor, stream and chunk, and fails the write before the output is
// committed.
//
// Line prefixes (format 1.2, spec/container.md §6.10.1): when the stream
// records a checksum of exactly what the cut keeps of each source chunk
// (one inner dimension cut so that every line keeps a recorded prefix,
// whole chunks kept),
// Check hashes the bytes it is handed instead and compares per chunk, so
// only the kept bytes are read, and the output chunk takes that checksum
// (VouchedXxh3) instead of being hashed again.
#ifndef BOLTPACK_FORMAT_CUT_PIECES_H_
#define BOLTPACK_FORMAT_CUT_PIECES_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/tensor_info.h"
#include "boltpack/piece_source.h"
#include "common/buffer_pool.h"
#include "common/xxh3.h"
#include "format/elastic_cut.h"

namespace boltpack {
class Reader;
}  // namespace boltpack

namespace boltpack::format {

// Pieces of at most this many bytes, so a piece is verified, hashed again
// by the writer and written while it is still in cache.
inline constexpr uint64_t kCutPieceBytes = uint64_t{1} << 20;
// Runs shorter than this (a cut of the innermost dimension keeps one short
// run per row) are gathered into one piece of up to kCutPieceBytes: handing
// each to the writer alone would cost more than copying it.
inline constexpr uint64_t kGatherRunBytes = uint64_t{16} << 10;

// Source pages are released behind the pieces (StreamCutPieces::
// ReleaseBehind) this many bytes at a time: each release interrupts the
// other thread (a TLB flush), which cost more than it saved when done per
// MiB; 32 MiB keeps a slice's resident memory near 50 MB.
inline constexpr uint64_t kReleaseStepBytes = uint64_t{32} << 20;

// The kept cells of one stored stream, verified chunk by chunk.
class StreamCutPieces final : public PieceSource {
 public:
  // `grid` is the stream's cell grid (outer dimensions, innermost in
  // blocks), `cell_maps` one map per grid dimension (empty: whole), in
  // cells; `maps` must be in range (CutInPlace checks them).
  StreamCutPieces(const Reader& reader, size_t tensor, size_t stream, absl::Span<const uint8_t> stored,
                  std::vector<uint64_t> grid, uint64_t cell_bytes, ElementMaps cell_maps);
  // The whole stored stream (any codec, compressed or not).
  StreamCutPieces(const Reader& reader, size_t tensor, size_t stream, absl::Span<const uint8_t> stored);
  // Releases what is left of the stream's pages (ReleaseBehind).
  ~StreamCutPieces() override;
  StreamCutPieces(const StreamCutPieces&) = delete;
  StreamCutPieces& operator=(const StreamCutPieces&) = delete;

  uint64_t size() const override { return size_; }
  absl::StatusOr<absl::Span<const uint8_t>> Next() override;
  // Gathered pieces take turns in kGatherBuffers buffers; the others are
  // the mapping itself.
  int LivePieces() const override { return kGatherBuffers; }
  // Checks the source chunks `part` (a part of the last piece) lies in; a
  // gathered piece was checked as it was gathered.
  absl::Status Check(absl::Span<const uint8_t> part) override;
  // The checksum of a source chunk Check verified, when `bytes` are exactly
  // that chunk's bytes in the mapping.
  std::optional<uint64_t> VerifiedXxh3(absl::Span<const uint8_t> bytes) const override;
  std::optional<uint64_t> VouchedXxh3(uint64_t offset, uint64_t length) const override;

  // Switches to line-prefix verification when the stream's checksums cover
  // this cut (see above) and returns the output's chunks, one per kept
  // source chunk; nullopt (and nothing changes) otherwise. Call before the
  // first Next.
  std::optional<std::vector<ChunkInfo>> UseLinePrefixes();

 private:
  // Line-prefix mode: hashes `part`, the next output bytes, and compares
  // each kept source chunk's checksum where its bytes end.
  absl::Status CheckPrefixes(absl::Span<const uint8_t> part);
  // Checks the XXH3 of every source chunk [begin, end) overlaps that was
  // not checked yet (the whole stream once, when it has no chunks).
  absl::Status Verify(uint64_t begin, uint64_t end);
  // Where the walk over the kept runs is: the outer index tuple, the next
  // inner run of its row, rows left, the row's source offset.
  struct RunCursor {
    std::vector<uint64_t> idx;
    size_t run = 0;
    uint64_t rows_left = 0;
    uint64_t row_base = 0;
  };
  // The next run of kept cells at `c` (source byte offset, bytes), or
  // length 0.
  std::pair<uint64_t, uint64_t> NextRun(RunCursor& c) const;
  // After the cursor handed out the single run of its row: steps it over
  // up to `max_rows` following rows whose runs lie at the innermost outer
  // dimension's stride (same outer indices, consecutive in its map), as if
  // their runs were handed out too, and returns how many.
  uint64_t StepRegularRows(RunCursor& c, uint64_t max_rows) const;
  // When pending_ is the run of the row cursor_ is at: copies it and the
  // rows StepRegularRows finds after it (verifying their source chunks
  // unless line prefixes check the piece) to `out`, up to `room` bytes, and
  // returns the bytes copied; 0 otherwise. A width cut keeps one short run
  // per row: walking them one by one cost more than copying them.
  absl::StatusOr<uint64_t> GatherRegularRows(uint8_t* out, uint64_t room);
  // Asks the kernel to read the source bytes the slice will read (the kept
  // runs, or the whole source chunks they lie in when those are verified
  // whole) up to kReadAheadBytes ahead of what Next handed out (madvise
  // WILLNEED), with the kernel's own readahead off for the stream (RANDOM):
  // a mapping's page faults read ahead little, so a cold slice waited on
  // the disk request by request, and that readahead ran past kept regions
  // into dropped bytes. A stream without chunks, verified whole on first
  // use, is only advised whole.
  void ReadAhead();
  // The same with the runs after it that continue it joined, up to
  // kCutPieceBytes.
  std::pair<uint64_t, uint64_t> NextCoalesced();

  const Reader& reader_;
  size_t tensor_, stream_;
  // The source stream's record and its tensor's name, built once (the
  // reader builds a TensorInfo each time it is asked).
  struct Source {
    std::string tensor_name;
    StreamInfo stream;
  };
  static Source SourceOf(const Reader& reader, size_t tensor, size_t stream);
  const Source source_;
  absl::Span<const uint8_t> stored_;
  uint64_t size_ = 0;
  // Cut geometry, in bytes: per outer dimension the source stride, the
  // output count and its map; the innermost dimension as runs.
  std::vector<uint64_t> stride_;
  std::vector<uint64_t> out_dims_;
  ElementMaps maps_;
  std::vector<std::pair<uint64_t, uint64_t>> inner_runs_;  // (source byte offset in a row, bytes)
  RunCursor cursor_;  // the runs Next hands out
  // Read-ahead: a second walk ahead of the first, how many output bytes it
  // is at, the rest of its current run and the range not advised yet.
  static constexpr uint64_t kReadAheadBytes = uint64_t{32} << 20;
  static constexpr uint64_t kAdviseBytes = uint64_t{4} << 20;
  static constexpr uint64_t kReadAheadGapBytes = uint64_t{64} << 10;
  RunCursor ahead_;
  uint64_t ahead_out_ = 0;
  uint64_t handed_out_ = 0;
  std::pair<uint64_t, uint64_t> ahead_run_{0, 0};
  std::pair<uint64_t, uint64_t> advise_{0, 0};
  uint64_t advised_end_ = 0;  // source bytes before this were advised
  bool ahead_started_ = false;
  std::pair<uint64_t, uint64_t> pending_{0, 0};  // a run not yet handed out
  std::pair<uint64_t, uint64_t> held_{0, 0};     // a coalesced run for the next piece
  // Memory stays bounded whatever the model's size: the pages of source
  // bytes no piece needs any more are dropped from the address space as
  // the slice goes (MADV_DONTNEED, on the thread that calls Next), so a
  // slice's resident memory is bounded (kReleaseStepBytes), not the mapped
  // part of the model (1.7 GB for half the width of a 2.3 GB model, now
  // 53 MB), and the kernel reclaims them as plain page cache.
  // ReleaseBehind records that the piece handed out now needs the source
  // from `needed_from` on and releases below every live piece's need; the
  // destructor releases the rest. Only over a file mapping (Reader::mapped): its pages return
  // from the page cache if read again.
  void ReleaseBehind(uint64_t needed_from);
  void ReleaseBelow(uint64_t end);
  static constexpr int kGatherBuffers = 4;
  std::array<uint64_t, kGatherBuffers> needed_from_;  // per live Next call
  size_t calls_ = 0;
  uint64_t released_ = 0;  // source bytes before this were released
  // Short runs, copied: kGatherBuffers slots of kCutPieceBytes in one
  // buffer, which is whole huge pages (common/buffer_pool.h): apart, each
  // slot took a 2 MiB page of its own, all zeroed on first use.
  PooledBuffer gathered_;
  int gather_slot_ = 0;  // the slot filled last
  // Source chunks already verified (or the whole stream); the last one
  // checked, which the next run is most likely in.
  std::vector<bool> verified_;
  bool whole_verified_ = false;
  size_t last_chunk_ = 0;
  // Line-prefix mode: per kept source chunk, in output order, where its
  // bytes end in the output and their recorded checksum.
  struct PrefixUnit {
    uint64_t out_begin = 0, out_end = 0;
    uint64_t xxh3 = 0;
    size_t chunk = 0;
  };
  std::vector<uint64_t> grid_;
  std::vector<PrefixUnit> prefix_units_;  // empty: whole source chunks are verified
  size_t prefix_ = 0;                     // the Stream.prefix_bytes entry used
  size_t unit_ = 0;                       // the unit Check is in
  uint64_t prefix_checked_ = 0;           // output bytes hashed so far
  Xxh3Stream unit_hash_;
};

// A tensor cut in place: the record for the writer and its stream pieces.
struct CutInPlace {
  TensorInfo info;
  std::vector<std::unique_ptr<StreamCutPieces>> streams;
  std::vector<PieceSource*> pieces() const;
};

// Cuts tensor `tensor` of `reader` by `maps` without copying; nullopt when
// that is not possible (a compressed stream, a codec without fixed cells,
// an innermost map that does not move whole blocks, maps out of range),
// where CutStoredTensor decodes or reports the problem.
std::optional<CutInPlace> CutTensorInPlace(const Reader& reader, size_t tensor, const ElementMaps& maps,
                                           const std::string& new_name);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_CUT_PIECES_H_
