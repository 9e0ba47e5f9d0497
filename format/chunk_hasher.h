// Checks the chunks of a row block's uncompressed streams while the block
// is decoded. The decoder reports how far it has read (ReadProgress), and
// each chunk is fed to a streaming XXH3 up to there, while those bytes are
// still in this core's L1/L2: checking after the decode read them from
// memory again, since a block's output (4x its stored bytes for q8_0 to
// f32) evicts them. A chunk's digest is compared once its last byte is fed;
// what the decoder did not report is fed at Finish, so every chunk a block
// touches is hashed whole, once (unless this reader already checked it),
// however the codec reports.
//
// One per decoding thread; not thread-safe.
#ifndef BOLTPACK_FORMAT_CHUNK_HASHER_H_
#define BOLTPACK_FORMAT_CHUNK_HASHER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "boltpack/codec.h"
#include "common/xxh3.h"
#include "format/reader_impl.h"

namespace boltpack::format {

class ChunkHasher final : public ReadProgress {
 public:
  // Tensor `tensor` of `impl`, whose TensorInfo `info` outlives the hasher.
  ChunkHasher(const Reader::Impl& impl, size_t tensor, const TensorInfo& info);

  // Starts a block that reads raw bytes [begin, end) of stream `stream`
  // (uncompressed, with chunks): its chunks are hashed from their first byte.
  void Start(size_t stream, uint64_t begin, uint64_t end);
  void ReadTo(size_t stream, uint64_t raw_end) override;
  // Hashes the rest of every chunk started and ends the block; the first
  // mismatch, in stream order, if any.
  absl::Status Finish();

 private:
  struct Cursor {
    bool active = false;
    size_t chunk = 0, last = 0;  // the chunk being hashed, the block's last
    uint64_t at = 0;             // raw offset hashed up to
    Xxh3Stream xxh3;
    absl::Status status;  // its mismatch
  };
  void EndChunk(size_t stream, Cursor& c);

  const Reader::Impl& impl_;
  const size_t tensor_;
  const TensorInfo& info_;
  std::vector<Cursor> cursors_;  // per stream
};

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_CHUNK_HASHER_H_
