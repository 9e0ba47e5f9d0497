// Shared machinery for block-quantization codecs (q8_0, mxfp4, nvfp4-ggml,
// nvfp4, int4-g128): a tensor is cut into blocks of `block_elems`
// consecutive elements along its innermost dimension (whose length must be
// a multiple of the block), and each block contributes a fixed number of
// bytes to each of the codec's streams, in block order. A concrete codec
// supplies the block format, its parameters and the per-block encode and
// decode kernels; this base does everything else:
//
//   - dtype/shape/parameter checks (CanEncode, ValidateRecord): every size a
//     decoder relies on (stream count, roles, raw_length = blocks x bytes per
//     block, chunks of whole rows) is checked before decoding;
//   - encoding from F32/F16/BF16/F64 sources in parallel over blocks (an
//     aligned F32 source is read in place), with the codec's portable or
//     AVX2 kernel (chosen once, by CPUID); a non-finite value fails the
//     encode naming its element; a first pass measures the tensor's amax
//     only for codecs whose parameters need it (NeedsTensorAmax);
//   - chunks of whole outer rows of about 1 MiB (of the largest stream);
//   - decoding to f32, bf16 and f16 (the kernels; bf16/f16 are the f32
//     values rounded by float_convert.h's rules) and kNative (single-stream
//     codecs: the stored blocks), in parallel over blocks; DecodeRows/
//     RowRangeBytes for row ranges. A range that starts or ends inside a
//     block, or an output buffer not aligned for its type, goes through an
//     f32 tile instead (the same bits).
//
// Outer rows are shape[0]; for a tensor of rank >= 2 an outer row is a whole
// number of blocks. A 1-D tensor is one innermost row of shape[0] elements:
// it has no chunks, and a row-range read of it decodes the blocks covering
// the range (kNative then needs a block-aligned range).
#ifndef BOLTPACK_CODECS_BLOCK_COMMON_BLOCK_CODEC_H_
#define BOLTPACK_CODECS_BLOCK_COMMON_BLOCK_CODEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "boltpack/codec.h"

namespace boltpack {

// True when the CPU has AVX2, FMA and F16C (checked once, with CPUID).
bool CpuHasAvx2Fma16c();

// Target size of a chunk of whole rows.
inline constexpr uint64_t kBlockChunkTargetBytes = uint64_t{1} << 20;

struct BlockStreamSpec {
  std::string role;
  uint32_t bytes_per_block = 0;
};

struct BlockFormat {
  std::string id;
  std::string description;
  uint32_t block_elems = 0;
  std::vector<BlockStreamSpec> streams;  // 1 or 2
  // The ggml type a GGUF export writes (Codec::Ggml); none by default.
  GgmlMapping ggml;
};

// Decode-time parameters after parsing and validation.
struct BlockParams {
  float tensor_scale = 1.0f;  // nvfp4 only
};

class BlockCodec : public Codec {
 public:
  explicit BlockCodec(BlockFormat format);

  const BlockFormat& format() const { return format_; }

  std::string_view id() const override { return format_.id; }
  std::string_view description() const override { return format_.description; }

  absl::Status CanEncode(DType dtype, absl::Span<const uint64_t> shape,
                         const CodecParams& params) const override;
  absl::StatusOr<EncodedTensor> Encode(const TensorSource& source, const CodecParams& params,
                                       const ExecOptions& exec) const override;
  absl::Status ValidateRecord(const TensorInfo& info) const override;
  bool CanDecodeTo(const TensorInfo& info, OutputType out) const override;
  absl::StatusOr<uint64_t> DecodedBytes(const TensorInfo& info, OutputType out) const override;
  absl::Status Decode(const DecodeInput& input, OutputType out, absl::Span<uint8_t> dst,
                      const ExecOptions& exec) const override;
  absl::Status DecodeRows(const DecodeInput& input, uint64_t row_begin, uint64_t row_end,
                          OutputType out, absl::Span<uint8_t> dst) const override;
  absl::StatusOr<std::pair<uint64_t, uint64_t>> RowRangeBytes(const TensorInfo& info,
                                                              size_t stream_index,
                                                              uint64_t row_begin,
                                                              uint64_t row_end) const override;
  absl::StatusOr<uint64_t> EncodedSize(DType dtype, absl::Span<const uint64_t> shape,
                                       const CodecParams& params) const override;
  absl::StatusOr<std::optional<EncodePlan>> PlanEncode(DType dtype, absl::Span<const uint64_t> shape,
                                                       const CodecParams& params) const override;
  std::vector<int> SliceableAxes(absl::Span<const uint64_t> shape,
                                 const CodecParams& params) const override;
  // One cell per block and stream: format().block_elems elements in each
  // stream's bytes_per_block.
  std::optional<StoredLayout> Layout(DType dtype, const CodecParams& params) const override;
  GgmlMapping Ggml(DType /*dtype*/, const CodecParams& /*params*/) const override { return format_.ggml; }
  CodecTraits traits() const override;

  // ---- what a concrete codec provides -------------------------------------

  // Parses stored parameters (ValidateRecord, Decode). Default: none allowed.
  virtual absl::StatusOr<BlockParams> ParseStoredParams(const CodecParams& params) const;
  // Checks parameters given to the encoder. Default: none allowed.
  virtual absl::Status CheckEncodeParams(const CodecParams& params) const;
  // Whether EncodeParams needs the tensor's amax (a first pass over the
  // source). Default: no, and EncodeParams gets amax 0.
  virtual bool NeedsTensorAmax(const CodecParams& /*requested*/) const { return false; }
  // The parameters to store, from the requested ones and the tensor's amax
  // (max |x|, finite; 0 unless NeedsTensorAmax). Default: none.
  virtual absl::StatusOr<CodecParams> EncodeParams(const CodecParams& requested,
                                                   float amax) const;
  // Encodes `nblocks` whole blocks of x; out[k] points at stream k's bytes of
  // the first block. Any floats are valid input: a block holding NaN or
  // infinity (or one the format cannot hold) fails with an error, and the
  // base then reports the first non-finite element of the tensor if there is
  // one. `avx2` may only be true when CpuHasAvx2Fma16c(); both paths must
  // write the same bytes and fail on the same inputs.
  virtual absl::Status EncodeBlocks(const float* x, uint64_t nblocks, uint8_t* const* out,
                                    const BlockParams& params, bool avx2) const = 0;
  // Decodes `nblocks` blocks (in[k]: stream k's bytes of the first block) to
  // f32. `avx2` may only be true when CpuHasAvx2Fma16c(); both paths must give
  // the same bits. Any bytes are valid input.
  virtual void DecodeBlocksF32(const uint8_t* const* in, uint64_t nblocks, float* y,
                               const BlockParams& params, bool avx2) const = 0;
  // The same blocks to bf16 / f16: exactly the bits of DecodeBlocksF32
  // followed by ConvertF32ToBF16 / ConvertF32ToF16, on either path. The
  // default does just that through an f32 tile on the stack; a codec
  // overrides it with a kernel that rounds in registers (quant_simd.h's
  // Bf16Out, F16Out), which an engine loading bf16 onto a GPU wants as fast
  // as the f32 decode.
  virtual void DecodeBlocksBf16(const uint8_t* const* in, uint64_t nblocks, uint16_t* y,
                                const BlockParams& params, bool avx2) const;
  virtual void DecodeBlocksF16(const uint8_t* const* in, uint64_t nblocks, uint16_t* y,
                               const BlockParams& params, bool avx2) const;
  // kNative: single-stream codecs whose blocks are an engine's format.
  virtual bool HasNativeOutput() const { return format_.streams.size() == 1; }

 protected:
  absl::Status Fail(const TensorInfo& info, const std::string& what) const;

  // Decodes nblocks blocks to `out` (kF32, kF16 or kBF16) at y, through the
  // kernel of that type.
  void DecodeBlocksTo(const uint8_t* const* in, uint64_t nblocks, OutputType out, uint8_t* y,
                      const BlockParams& params, bool avx2) const;

 private:
  struct Geometry;
  absl::StatusOr<Geometry> CheckShape(absl::Span<const uint64_t> shape) const;
  EncodedTensor Skeleton(const Geometry& g, CodecParams stored) const;
  absl::Status CheckInput(const DecodeInput& input) const;
  // Decodes elements [e0, e1) given the stream spans (stream k's span starts
  // at raw byte base[k]) into dst, telling `progress` (when not null, and
  // on one thread only) how far it has read.
  absl::Status DecodeRange(const TensorInfo& info, const BlockParams& params,
                           const std::vector<absl::Span<const uint8_t>>& streams,
                           const std::vector<uint64_t>& base, uint64_t e0, uint64_t e1,
                           OutputType out, absl::Span<uint8_t> dst, int threads,
                           ReadProgress* progress) const;

  BlockFormat format_;
  uint64_t bytes_per_block_total_ = 0;
};

// ---- shared number formats ------------------------------------------------

// ggml's kvalues_mxfp4: E2M1 codes (bit 3 sign) as doubled integers.
inline constexpr int8_t kE2M1Doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// ggml's best_index_mxfp4(x, e): the first of the 16 codes minimising
// |kE2M1Doubled[i]*e - x| in float (ties to the lower index; NaN -> 0).
// Computed over the 8 magnitudes only, which gives the same index (see the
// proof in block_codec.cc).
int BestIndexE2M1(float x, float e);

// ggml_ue4m3_to_fp32, halved: 0x00 and 0x7F -> 0; otherwise exponent bits
// 6..3 (bit 7 is not part of it), mantissa bits 2..0, so 0xFF -> 480/2.
float Ue4m3ToF32Half(uint8_t x);
// ggml_fp32_to_ue4m3 (round half up on magnitude, x >= 248 -> 0x7E).
uint8_t F32ToUe4m3Ggml(float x);

// OCP / PyTorch float8_e4m3fn: sign, 4 exponent bits (bias 7), 3 mantissa
// bits, 0x7F/0xFF NaN, no infinities. Exact.
float E4m3fnToF32(uint8_t x);
// float -> e4m3fn, round to nearest even, for x in [0, 448] (what ModelOpt
// feeds it after clamping); larger values saturate to 448, NaN -> 0x7F.
uint8_t F32ToE4m3fnRne(float x);

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_BLOCK_COMMON_BLOCK_CODEC_H_
