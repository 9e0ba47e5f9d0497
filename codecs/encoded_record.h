// The record of an encoded tensor before it is placed in a file (stored ==
// raw, no compression; the writer fills in offsets and checksums), and
// helpers for code that drives a codec without a container (tests,
// benchmarks, fuzz targets).
#ifndef BOLTPACK_CODECS_ENCODED_RECORD_H_
#define BOLTPACK_CODECS_ENCODED_RECORD_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "boltpack/codec.h"
#include "boltpack/tensor_info.h"
#include "common/status_macros.h"

namespace boltpack {

inline TensorInfo RecordFor(std::string name, DType dtype, std::vector<uint64_t> shape,
                            std::string_view codec_id, const EncodedTensor& encoded) {
  TensorInfo info;
  info.name = std::move(name);
  info.shape = std::move(shape);
  info.dtype = dtype;
  info.codec_id = std::string(codec_id);
  info.codec_params = encoded.params;
  for (const EncodedStream& s : encoded.streams) {
    StreamInfo si;
    si.role = s.role;
    si.length = s.bytes.size();
    si.raw_length = s.bytes.size();
    si.alignment = 64;
    si.views = s.views;
    for (const EncodedChunk& c : s.chunks) {
      si.chunks.push_back(ChunkInfo{c.raw_offset, c.raw_length, c.raw_offset, c.raw_length,
                                    c.first_row, c.row_count, 0});
    }
    info.streams.push_back(std::move(si));
  }
  return info;
}

// The record of a planned encode (Codec::PlanEncode): RecordFor's, with
// the lengths the plan gives in place of bytes.
inline TensorInfo RecordForPlan(std::string name, DType dtype, std::vector<uint64_t> shape,
                                std::string_view codec_id, const EncodePlan& plan) {
  TensorInfo info = RecordFor(std::move(name), dtype, std::move(shape), codec_id, plan.record);
  for (size_t k = 0; k < info.streams.size() && k < plan.lengths.size(); ++k) {
    info.streams[k].length = plan.lengths[k];
    info.streams[k].raw_length = plan.lengths[k];
  }
  return info;
}

inline DecodeInput InputFor(const TensorInfo& info, const EncodedTensor& encoded) {
  DecodeInput in;
  in.info = &info;
  for (const EncodedStream& s : encoded.streams) {
    in.streams.push_back(s.bytes);
    in.raw_base.push_back(0);
  }
  return in;
}

inline absl::StatusOr<std::vector<uint8_t>> DecodeWhole(const Codec& codec, const TensorInfo& info,
                                                        const EncodedTensor& encoded, OutputType out,
                                                        int threads = 1) {
  BP_RETURN_IF_ERROR(codec.ValidateRecord(info));
  BP_ASSIGN_OR_RETURN(const uint64_t size, codec.DecodedBytes(info, out));
  std::vector<uint8_t> dst(size);
  BP_RETURN_IF_ERROR(
      codec.Decode(InputFor(info, encoded), out, absl::MakeSpan(dst), ExecOptions{threads}));
  return dst;
}

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_ENCODED_RECORD_H_
