// The checksums of one stream that the writer computes as its bytes go by
// (Writer's AppendPieces hands every part to Update, on a side thread while
// the part is written): the stream's XXH3, each chunk's XXH3, and the
// line-prefix checksums of format 1.2 (spec/container.md §6.10.1).
//
// A chunk whose bytes are exactly a source chunk the source vouched for or
// verified (PieceSource::VouchedXxh3, VerifiedXxh3) takes that checksum
// instead of being hashed again. A stream copied verbatim (`copied`) keeps
// the chunk checksums its record brings, and its line-prefix checksums are
// checked against the record instead of computed.
#ifndef BOLTPACK_FORMAT_STREAM_CHECKSUMS_H_
#define BOLTPACK_FORMAT_STREAM_CHECKSUMS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "boltpack/piece_source.h"
#include "boltpack/tensor_info.h"
#include "common/xxh3.h"
#include "format/line_prefix.h"

namespace boltpack::format {

class StreamChecksums {
 public:
  // `s`: the stream's record, whose chunks tile it in order (the writer
  // checks they lie inside it; ValidateManifest that they tile it, at
  // Finish). The chunk and prefix checksums land in it. `path` names the
  // file in messages. `src` and `s` outlive this.
  StreamChecksums(PieceSource& src, StreamInfo& s, bool copied, std::string_view path);

  // The next part of the stream, in order.
  void Update(absl::Span<const uint8_t> part);

  // After the last part: DATA_LOSS when a copied stream's line-prefix
  // checksums do not match its bytes; else sets the stream's xxh3.
  absl::Status Finish();

 private:
  void HashChunks(absl::Span<const uint8_t> part);
  void CloseChunks();
  void HashPrefixes(absl::Span<const uint8_t> part);
  void ClosePrefixChunks();

  PieceSource& src_;
  StreamInfo& s_;
  const bool copied_;
  const std::string_view path_;

  Xxh3Stream whole_, chunk_;
  size_t c_ = 0;  // the chunk `hashed_` is in
  uint64_t hashed_ = 0;
  // The checksum of chunk c_ when the source vouched for the source bytes
  // [first_, first_ + its length) (VerifiedXxh3) and its parts so far are
  // exactly [first_, next_) of them: then chunk c_ is not hashed again.
  std::optional<uint64_t> known_;
  bool vouched_ = false;  // `known_` from VouchedXxh3: no mapping to follow
  const uint8_t* first_ = nullptr;
  const uint8_t* next_ = nullptr;

  std::optional<LinePrefixHasher> prefixes_;  // when the stream has line prefixes
  size_t pc_ = 0;  // the chunk prefix hashing is in
  uint64_t prefixed_ = 0;
  absl::Status prefix_status_;
};

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_STREAM_CHECKSUMS_H_
