// The body of the block-codec decode fuzz targets (fuzz_decode_q8_0.cc and
// its siblings): the codec given arbitrary stream bytes. The first bytes
// pick a shape, the output type (and, for nvfp4, the tensor scale); the
// rest fill the streams. A record the codec accepts must decode, whole and
// by row range, without touching memory outside the buffers, and the row
// range must decode to the same bytes as those rows of the whole tensor.
//
// Work per execution follows the input: the shape holds at most the blocks
// the input supplies (the last one zero-filled), so a 7-byte input does not
// decode 64 blocks of zeros; and one output type is decoded per execution
// (byte 0 picks it), which covers all four across the corpus at a quarter
// of the cost of decoding each input four times.
#ifndef BOLTPACK_FUZZ_BLOCK_DECODE_FUZZ_H_
#define BOLTPACK_FUZZ_BLOCK_DECODE_FUZZ_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "boltpack/codec_registry.h"
#include "codecs/block_common/block_codec.h"
#include "codecs/encoded_record.h"

namespace boltpack::fuzz {

inline int FuzzBlockDecode(const char* codec_id, const uint8_t* data, size_t size) {
  static const auto* codec = dynamic_cast<const BlockCodec*>(FindCodec(codec_id));
  if (codec == nullptr || size < 6) return 0;
  const uint64_t B = codec->format().block_elems;
  uint64_t block_bytes = 0;
  for (const auto& s : codec->format().streams) block_bytes += s.bytes_per_block;
  const uint64_t supplied = std::max<uint64_t>(1, (size - 6 + block_bytes - 1) / block_bytes);
  const uint64_t row_blocks = std::min<uint64_t>(1 + data[1] % 8, supplied);
  const uint64_t rows = std::min<uint64_t>(1 + data[0] % 8, std::max<uint64_t>(1, supplied / row_blocks));
  static constexpr OutputType kOutputs[] = {OutputType::kF32, OutputType::kF16, OutputType::kBF16,
                                            OutputType::kNative};
  const OutputType out = kOutputs[(data[0] >> 3) % 4];
  float ts;
  std::memcpy(&ts, data + 2, 4);
  data += 6;
  size -= 6;
  std::vector<uint64_t> shape = rows == 1 ? std::vector<uint64_t>{row_blocks * B}
                                          : std::vector<uint64_t>{rows, row_blocks * B};
  const uint64_t nblocks = rows * row_blocks;
  EncodedTensor enc;
  if (codec->id() == "nvfp4") enc.params.emplace_back("tensor_scale", MetaValue::Float32(ts));
  for (const auto& s : codec->format().streams) {
    std::vector<uint8_t> bytes(nblocks * s.bytes_per_block);
    const size_t take = bytes.size() < size ? bytes.size() : size;
    if (take) std::memcpy(bytes.data(), data, take);
    data += take;
    size -= take;
    enc.streams.push_back(EncodedStream{s.role, std::move(bytes), {}, true});
  }
  const TensorInfo info = RecordFor("f", DType::kF32, shape, codec->id(), enc);
  if (!codec->ValidateRecord(info).ok() || !codec->CanDecodeTo(info, out)) return 0;
  auto whole = DecodeWhole(*codec, info, enc, out);
  const uint64_t r0 = shape.size() == 1 ? 0 : rows / 2, r1 = shape[0];
  DecodeInput in;
  in.info = &info;
  for (size_t k = 0; k < enc.streams.size(); ++k) {
    auto range = codec->RowRangeBytes(info, k, r0, r1);
    if (!range.ok()) return 0;
    in.streams.push_back(absl::MakeConstSpan(enc.streams[k].bytes).subspan(range->first, range->second - range->first));
    in.raw_base.push_back(range->first);
  }
  const uint64_t row_bytes = whole.ok() ? whole->size() / shape[0] : 0;
  std::vector<uint8_t> dst((r1 - r0) * (shape.size() == 1 ? shape[0] : shape[1]) * 4 + 64);
  const bool part = codec->DecodeRows(in, r0, r1, out, absl::MakeSpan(dst)).ok();
  if (whole.ok() && part && row_bytes * shape[0] == whole->size() &&
      std::memcmp(dst.data(), whole->data() + r0 * row_bytes, (r1 - r0) * row_bytes) != 0) {
    __builtin_trap();  // rows decode to other values than the whole tensor has there
  }
  return 0;
}

}  // namespace boltpack::fuzz

#endif  // BOLTPACK_FUZZ_BLOCK_DECODE_FUZZ_H_
