// Bytes handed out piece by piece, so a writer can stream a tensor without
// holding it whole: `bolt-pack slice` passes the kept runs of the input's
// mapping straight to the output file (format/cut_pieces.h), and the .bolt,
// GGUF and safetensors writers take them (Writer::AddStoredTensor,
// GgufWriter::WriteNext, SafetensorsWriter::WriteNext).
#ifndef BOLTPACK_PIECE_SOURCE_H_
#define BOLTPACK_PIECE_SOURCE_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace boltpack {

class PieceSource {
 public:
  virtual ~PieceSource() = default;
  // What the pieces add up to, known before the first one.
  virtual uint64_t size() const = 0;
  // The next piece, valid until the next call; empty once all were given.
  // An error ends the stream.
  virtual absl::StatusOr<absl::Span<const uint8_t>> Next() = 0;
  // Verifies `part`, a part of the piece Next gave last (its source
  // checksums, for a source that has them): a writer calls it for every
  // part, in order, before asking for the next piece, and may run it on
  // another thread while it writes the part, so a mismatch can be found
  // after the bytes were written (to a file that is then never committed).
  virtual absl::Status Check(absl::Span<const uint8_t> part) {
    (void)part;
    return absl::OkStatus();
  }
  // How many of the latest pieces Next gave stay valid: with N, a piece
  // stays valid through the next N - 1 calls, so a writer may fetch up to
  // N - 1 pieces ahead of the one it is still writing (on another thread).
  // 1: a piece is valid until the next call only.
  virtual int LivePieces() const { return 1; }
  // The XXH3 of `bytes`, which start in the part Check passed last and may
  // run past it into the source's memory, when the source verified exactly
  // those bytes as one checksummed unit (a whole source chunk); nullopt
  // when it does not know. A writer whose output chunk turns out to be
  // those very bytes takes it instead of hashing them a second time.
  virtual std::optional<uint64_t> VerifiedXxh3(absl::Span<const uint8_t> bytes) const {
    (void)bytes;
    return std::nullopt;
  }
  // The XXH3 that bytes [offset, offset + length) of this source's output
  // (counted from its first piece) have, when the source holds a checksum
  // of exactly those bytes and checks it: Check fails the copy if they do
  // not match, so a writer may record it for an output chunk of those
  // bytes without hashing them. nullopt when the source has none.
  virtual std::optional<uint64_t> VouchedXxh3(uint64_t offset, uint64_t length) const {
    (void)offset;
    (void)length;
    return std::nullopt;
  }
};

// One span as a single piece.
class SpanPieces final : public PieceSource {
 public:
  explicit SpanPieces(absl::Span<const uint8_t> bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  int LivePieces() const override { return 2; }  // the span, then nothing
  absl::StatusOr<absl::Span<const uint8_t>> Next() override {
    absl::Span<const uint8_t> out = done_ ? absl::Span<const uint8_t>() : bytes_;
    done_ = true;
    return out;
  }

 private:
  absl::Span<const uint8_t> bytes_;
  bool done_ = false;
};

// A stream of a skeleton file (WriterOptions::skeleton): a length, no
// bytes. The writer never asks for its pieces; one that did is told so.
class HolePieces final : public PieceSource {
 public:
  explicit HolePieces(uint64_t size) : size_(size) {}
  uint64_t size() const override { return size_; }
  absl::StatusOr<absl::Span<const uint8_t>> Next() override {
    return absl::FailedPreconditionError("a skeleton stream has no bytes to read");
  }

 private:
  uint64_t size_;
};

}  // namespace boltpack

#endif  // BOLTPACK_PIECE_SOURCE_H_
