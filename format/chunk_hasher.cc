#include "format/chunk_hasher.h"

#include <algorithm>
#include <limits>

namespace boltpack::format {

namespace {

// The chunk of `s` that holds raw offset `at` (the last one at its end).
size_t ChunkAt(const StreamInfo& s, uint64_t at) {
  auto after = [](uint64_t offset, const ChunkInfo& c) { return offset < c.raw_offset; };
  const size_t k = std::upper_bound(s.chunks.begin(), s.chunks.end(), at, after) - s.chunks.begin();
  return k == 0 ? 0 : k - 1;
}

}  // namespace

ChunkHasher::ChunkHasher(const Reader::Impl& impl, size_t tensor, const TensorInfo& info)
    : impl_(impl), tensor_(tensor), info_(info), cursors_(info.streams.size()) {}

void ChunkHasher::Start(size_t stream, uint64_t begin, uint64_t end) {
  const StreamInfo& s = info_.streams[stream];
  Cursor& c = cursors_[stream];
  c.active = impl_.options.verify_checksums && !s.chunks.empty();
  if (!c.active) return;
  c.chunk = ChunkAt(s, begin);
  c.last = std::max(c.chunk, end == begin ? c.chunk : ChunkAt(s, end - 1));
  c.at = s.chunks[c.chunk].raw_offset;
  c.xxh3.Reset();
}

void ChunkHasher::ReadTo(size_t stream, uint64_t raw_end) {
  Cursor& c = cursors_[stream];
  if (!c.active) return;
  const StreamInfo& s = info_.streams[stream];
  // Uncompressed: a chunk's stored bytes are its raw bytes (validated).
  const uint8_t* stored = impl_.Stored(s).data();
  while (c.active && c.at < raw_end) {
    const ChunkInfo& k = s.chunks[c.chunk];
    const uint64_t end = k.raw_offset + k.raw_length;
    if (c.at == k.raw_offset && impl_.checks.Done(tensor_, stream, c.chunk, StreamChecks::kChecksum)) {
      c.at = end;
    } else {
      const uint64_t to = std::min(raw_end, end);
      c.xxh3.Update(stored + k.stored_offset + (c.at - k.raw_offset), to - c.at);
      c.at = to;
    }
    if (c.at == end) EndChunk(stream, c);
  }
}

void ChunkHasher::EndChunk(size_t stream, Cursor& c) {
  const ChunkInfo& k = info_.streams[stream].chunks[c.chunk];
  if (!impl_.checks.Done(tensor_, stream, c.chunk, StreamChecks::kChecksum)) {
    const uint64_t got = c.xxh3.Digest();
    if (got != k.xxh3) {
      c.status = impl_.ChecksumMismatch(info_, stream, c.chunk, got);
      c.active = false;
      return;
    }
    impl_.checks.Mark(tensor_, stream, c.chunk, StreamChecks::kChecksum);
  }
  c.xxh3.Reset();
  if (c.chunk == c.last) {
    c.active = false;
  } else {
    ++c.chunk;
  }
}

absl::Status ChunkHasher::Finish() {
  absl::Status first;
  for (size_t s = 0; s < cursors_.size(); ++s) {
    ReadTo(s, std::numeric_limits<uint64_t>::max());
    // In stream order, as the checks after a decode were.
    if (first.ok()) first = cursors_[s].status;
    cursors_[s].status = absl::OkStatus();
  }
  return first;
}

}  // namespace boltpack::format
