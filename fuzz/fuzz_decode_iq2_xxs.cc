// Fuzzes the "iq2_xxs" decoder on hostile records and bytes: the first two
// input bytes pick a shape (rows x blocks per row) and how the record lies
// (stream length, chunks); the rest are block bytes, so d takes every fp16
// value (NaN, Inf, subnormal) and every index/sign/scale pattern. Whatever
// ValidateRecord accepts must decode to every output (whole, by rows, on
// one or more threads) without touching memory outside the spans given.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/tensor_info.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const boltpack::Codec* codec = boltpack::FindCodec("iq2_xxs");
  if (codec == nullptr) __builtin_trap();
  const uint8_t sel = data[0], lie = data[1];
  const uint8_t* bytes = data + 2;
  const size_t nbytes = size - 2;

  boltpack::TensorInfo info;
  info.name = "fuzz";
  info.codec_id = "iq2_xxs";
  info.dtype = (sel & 0x80) ? boltpack::DType::kBF16 : boltpack::DType::kF32;
  const uint64_t blocks = nbytes / 66;
  const uint64_t per_row = 1 + (sel & 3);
  const uint64_t rows = blocks / per_row;
  switch ((sel >> 2) & 3) {
    case 0: info.shape = {blocks * 256}; break;
    case 1: info.shape = {rows, per_row * 256}; break;
    case 2: info.shape = {rows, 1, per_row * 256}; break;
    default: info.shape = {rows, per_row * 256 + (sel >> 4)}; break;  // often invalid
  }
  boltpack::StreamInfo s;
  s.role = (lie & 1) ? "data" : "blocks";
  s.raw_length = nbytes - (lie & 2 ? 0 : nbytes % 66);
  if (lie & 4) s.raw_length += lie >> 4;
  if (lie & 8) {
    const uint64_t half = rows / 2;
    const uint64_t rb = per_row * 66;
    s.chunks.push_back({0, half * rb, 0, half * rb, 0, half, 0});
    s.chunks.push_back({half * rb, (rows - half) * rb + (lie >> 5), half * rb,
                        (rows - half) * rb + (lie >> 5), half, rows - half, 0});
  }
  s.length = s.raw_length;
  info.streams.push_back(s);
  if (!codec->ValidateRecord(info).ok()) return 0;

  // The stream span is exactly the validated raw length (the reader checks
  // that); the decoder must not read past it.
  if (info.streams[0].raw_length > nbytes) __builtin_trap();  // validated length lies
  std::vector<uint8_t> stream(bytes, bytes + info.streams[0].raw_length);
  boltpack::DecodeInput input{&info, {stream}, {0}};
  for (auto out : {boltpack::OutputType::kF32, boltpack::OutputType::kBF16,
                   boltpack::OutputType::kF16, boltpack::OutputType::kNative}) {
    auto n = codec->DecodedBytes(info, out);
    if (!n.ok() || *n > (64u << 20)) continue;
    std::vector<uint8_t> dst(*n);
    (void)codec->Decode(input, out, absl::MakeSpan(dst), {.threads = (sel & 0x40) ? 2 : 1});
    const uint64_t r = info.row_count();
    if (r > 1) {
      auto range = codec->RowRangeBytes(info, 0, r / 2, r);
      if (range.ok()) {
        if (range->second > stream.size() || range->first > range->second) __builtin_trap();
        boltpack::DecodeInput part{
            &info,
            {absl::MakeConstSpan(stream).subspan(range->first, range->second - range->first)},
            {range->first}};
        (void)codec->DecodeRows(part, r / 2, r, out, absl::MakeSpan(dst));
      }
    }
  }
  return 0;
}
