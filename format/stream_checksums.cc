#include "format/stream_checksums.h"

#include <algorithm>
#include <vector>

#include "common/str_cat.h"

namespace boltpack::format {

StreamChecksums::StreamChecksums(PieceSource& src, StreamInfo& s, bool copied, std::string_view path)
    : src_(src), s_(s), copied_(copied), path_(path) {
  if (!s_.prefix_bytes.empty()) prefixes_.emplace(s_.line_bytes, s_.prefix_bytes);
  if (!copied_) CloseChunks();  // empty chunks at the start
}

void StreamChecksums::Update(absl::Span<const uint8_t> part) {
  HashChunks(part);
  HashPrefixes(part);
}

absl::Status StreamChecksums::Finish() {
  if (prefixes_) ClosePrefixChunks();  // empty chunks at the end
  if (!prefix_status_.ok()) return prefix_status_;
  s_.xxh3 = whole_.Digest();
  return absl::OkStatus();
}

// Chunks ending at `hashed_` are complete (chunks tile the stream in order).
void StreamChecksums::CloseChunks() {
  while (c_ < s_.chunks.size() && s_.chunks[c_].stored_offset + s_.chunks[c_].stored_length <= hashed_) {
    s_.chunks[c_].xxh3 = known_ ? *known_ : chunk_.Digest();
    known_.reset();
    chunk_.Reset();
    ++c_;
  }
}

void StreamChecksums::HashChunks(absl::Span<const uint8_t> part) {
  whole_.Update(part);
  while (!copied_ && !part.empty()) {
    uint64_t n = part.size();
    if (c_ < s_.chunks.size()) {
      const ChunkInfo& ch = s_.chunks[c_];
      n = std::min(n, ch.stored_offset + ch.stored_length - hashed_);
      // An output chunk whose bytes are one whole source chunk (kept
      // whole rows) has that chunk's checksum, which Check verified.
      if (n > 0 && hashed_ == ch.stored_offset) {
        // A source checksum of exactly this output chunk (a line-prefix
        // checksum, format 1.2) that the source checks as it goes.
        known_ = src_.VouchedXxh3(ch.stored_offset, ch.stored_length);
        vouched_ = known_.has_value();
        if (!vouched_) known_ = src_.VerifiedXxh3({part.data(), static_cast<size_t>(ch.stored_length)});
        first_ = next_ = part.data();
      }
      if (known_ && !vouched_ && part.data() != next_) {
        // Not the source chunk's next bytes after all: hash what was
        // skipped (still mapped: the parts so far were exactly it).
        chunk_.Update(first_, static_cast<uint64_t>(next_ - first_));
        known_.reset();
      }
      if (known_) {
        next_ += n;
      } else {
        chunk_.Update(part.data(), n);
      }
    }
    hashed_ += n;
    part.remove_prefix(n);
    CloseChunks();
  }
}

// Line-prefix checksums (1.2), chunk by chunk: computed, or for a copied
// stream checked against the record it brings (the first mismatch is kept).
void StreamChecksums::ClosePrefixChunks() {
  while (pc_ < s_.chunks.size() && s_.chunks[pc_].stored_offset + s_.chunks[pc_].stored_length <= prefixed_) {
    std::vector<uint64_t> digests = prefixes_->Finish();
    const auto known_digests = s_.ChunkPrefixXxh3(pc_);
    if (!copied_) {
      s_.prefix_xxh3.resize(s_.chunks.size() * s_.prefix_bytes.size());
      std::copy(digests.begin(), digests.end(), s_.prefix_xxh3.begin() + static_cast<ptrdiff_t>(pc_ * digests.size()));
    } else if (!std::equal(digests.begin(), digests.end(), known_digests.begin(), known_digests.end()) &&
               prefix_status_.ok()) {
      prefix_status_ = absl::DataLossError(StrCat(path_, ": stream \"", s_.role, "\": chunk ", pc_,
                                                  " copied from a source whose line-prefix checksums do not match"));
    }
    ++pc_;
  }
}

void StreamChecksums::HashPrefixes(absl::Span<const uint8_t> part) {
  if (!prefixes_) return;
  ClosePrefixChunks();
  while (!part.empty() && pc_ < s_.chunks.size()) {
    const ChunkInfo& ch = s_.chunks[pc_];
    uint64_t n = std::min<uint64_t>(part.size(), ch.stored_offset + ch.stored_length - prefixed_);
    prefixes_->Update(part.first(n));
    prefixed_ += n;
    part.remove_prefix(n);
    ClosePrefixChunks();
  }
}

}  // namespace boltpack::format
