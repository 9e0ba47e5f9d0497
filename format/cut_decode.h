// Decoding a tensor cut in place (format/cut_pieces.h) to its elements in
// batches of outer rows, as pieces for a writer: `bolt-pack slice` to
// .safetensors (and to .gguf for codecs GGUF has no type for) holds one
// batch of a tensor, not the tensor, and decodes a batch on every thread.
// Cell codecs decode rows independently, so a batch's record (the cut
// record with fewer outer rows) decodes to exactly the batch's rows of the
// whole cut tensor's decode.
#ifndef BOLTPACK_FORMAT_CUT_DECODE_H_
#define BOLTPACK_FORMAT_CUT_DECODE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "boltpack/codec.h"
#include "boltpack/piece_source.h"
#include "common/buffer_pool.h"
#include "format/cut_pieces.h"

namespace boltpack::format {

class DecodedCutPieces final : public PieceSource {
 public:
  // `cut` must outlive this; checks that its codec decodes to `out`.
  static absl::StatusOr<std::unique_ptr<DecodedCutPieces>> Create(CutInPlace& cut, OutputType out, int threads);

  uint64_t size() const override { return size_; }
  absl::StatusOr<absl::Span<const uint8_t>> Next() override;
  // A batch decodes into one of two buffers, so the next batch decodes
  // while the writer still writes the last one.
  int LivePieces() const override { return 2; }

 private:
  DecodedCutPieces() = default;

  CutInPlace* cut_ = nullptr;
  const Codec* codec_ = nullptr;
  OutputType out_ = OutputType::kNative;
  ExecOptions exec_;
  uint64_t size_ = 0;
  uint64_t rows_ = 0, rows_done_ = 0, rows_per_batch_ = 1;
  std::vector<uint64_t> row_stored_;  // per stream, stored bytes of one outer row
  uint64_t row_decoded_ = 0;          // decoded bytes of one outer row
  std::vector<PooledBuffer> stored_;  // one batch per stream
  PooledBuffer decoded_[2];
  int decoded_slot_ = 0;  // the buffer decoded last
  // Leftover of the current piece of each stream.
  std::vector<absl::Span<const uint8_t>> leftover_;
};

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_CUT_DECODE_H_
