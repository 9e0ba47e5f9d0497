/* boltpack/cuda.h: decode and batch-1 GEMV of stored tensors on an NVIDIA
 * GPU (libboltpack_cuda, built with -DBOLTPACK_CUDA=ON; gpu/).
 *
 * The kernels read a tensor's streams in their stored form (spec/codecs*.md)
 * from device memory: the caller finds the streams and the codec params with
 * the read library (boltpack.h; bp_cuda_describe fills the description),
 * copies the streams' bytes to the device (bp_cuda_upload does both) and
 * passes device pointers. Every call that takes a stream is asynchronous on
 * it, allocates nothing and returns at once; errors of the arguments are
 * returned before anything is queued, errors of a launch as BP_ERR_INTERNAL
 * with CUDA's message (bp_cuda_last_error). Decoded values are bit-identical
 * to bp_decode's on the CPU, NaN payloads included.
 *
 * Plain C; cudaStream_t is `struct CUstream_st*`, so this header needs no
 * CUDA header and any cudaStream_t (or torch's stream handle) passes as is;
 * NULL is the legacy default stream. */
#ifndef BOLTPACK_CUDA_H_
#define BOLTPACK_CUDA_H_

#include <stddef.h>
#include <stdint.h>

#include "boltpack/boltpack.h" /* bp_status, bp_output, bp_reader */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st* bp_cuda_stream; /* = cudaStream_t */

/* Codecs with GPU kernels. Numbers are part of the ABI. */
typedef enum bp_cuda_codec {
  BP_CUDA_CODEC_NONE = 0,
  BP_CUDA_CODEC_BF16 = 1,       /* raw bf16 elements (the baseline) */
  BP_CUDA_CODEC_Q8_0 = 2,       /* spec/codecs.md §1 */
  BP_CUDA_CODEC_MXFP4 = 3,      /* §2 */
  BP_CUDA_CODEC_NVFP4_GGML = 4, /* §3 */
  BP_CUDA_CODEC_NVFP4 = 5,      /* §4, two-level: values, scales, tensor_scale */
  BP_CUDA_CODEC_INT4_G128 = 6,  /* §5: values, scales */
  BP_CUDA_CODEC_IQ2_XXS = 7,    /* spec/codecs-iq2_xxs.md */
  BP_CUDA_CODEC_BF16_MX = 8,    /* spec/codecs-bf16-exp.md §6: shared exponents, offsets, sign_mantissa */
  BP_CUDA_CODEC_BF16_HUFFMAN = 9, /* §3: sign_mantissa, exponents; needs the index (below) */
  BP_CUDA_CODEC_BF16_UNARY = 10,  /* §4: likewise */
  BP_CUDA_CODEC_RESERVED_MAX_ = 0x7FFFFFFF
} bp_cuda_codec;

#define BP_CUDA_MAX_STREAMS 4

/* A stored tensor seen as a matrix: `rows` x `cols`, cols the innermost
 * dimension (a tensor [E, R, C] is E*R rows of C), row-major. */
struct bp_cuda_tensor {
  int codec;                                 /* BP_CUDA_CODEC_* */
  uint64_t rows;
  uint64_t cols;
  uint32_t stream_count;
  const void* streams[BP_CUDA_MAX_STREAMS];  /* device pointers, record order, raw (uncompressed) bytes */
  uint64_t stream_bytes[BP_CUDA_MAX_STREAMS];
  float tensor_scale;                        /* nvfp4: the record's tensor_scale; else 1 */
  /* bf16-huffman and bf16-unary only (NULL and 0 otherwise): their lanes
   * are decoded by many threads each, which start at the sync points of
   * the index (device memory, built by bp_cuda_upload from
   * bp_sync_points: the decode table and one point per 256 exponents,
   * gpu/entropy_index.h), `segments` of them; their streams need 32
   * readable bytes past their end (bp_cuda_upload allocates them), and
   * `workspace` (device, rows x 8 floats) holds the GEMV's f32 sums for a
   * bf16 y, so GEMVs of one tensor with bf16 y must not run concurrently. */
  const void* index;
  uint64_t index_bytes;
  uint64_t segments;
  void* workspace;
  uint64_t workspace_bytes;
};

/* The GPU codec of a codec id ("q8_0", "nvfp4", "bf16", ...);
 * BP_ERR_UNSUPPORTED when it has no kernels. */
BP_API bp_status bp_cuda_codec_from_id(const char* codec_id, int* codec);

/* Fills *out from tensor `tensor` of an open reader: codec, rows, cols,
 * stream count and raw sizes, params. streams[] are left NULL (the bytes
 * are not on the device yet), and so is the index of bf16-huffman and
 * bf16-unary (bp_cuda_upload builds it). BP_ERR_UNSUPPORTED: no kernels for
 * its codec, or a stream is compressed. Host only; no CUDA call. */
BP_API bp_status bp_cuda_describe(const bp_reader* r, size_t tensor, struct bp_cuda_tensor* out);

/* Checks a description against its codec's layout: cols a multiple of the
 * block and of 8, stream sizes exactly what rows x cols need, pointers
 * present, 16-byte aligned where the kernels load vectors. Every call
 * below runs it first. */
BP_API bp_status bp_cuda_check(const struct bp_cuda_tensor* t);

/* Describes tensor `tensor`, checks its streams against their checksums
 * (unless the reader was opened with BP_OPEN_NO_VERIFY), allocates device
 * memory for them and copies them there (synchronously). Free with
 * bp_cuda_free. */
BP_API bp_status bp_cuda_upload(const bp_reader* r, size_t tensor, struct bp_cuda_tensor* out);
BP_API void bp_cuda_free(struct bp_cuda_tensor* t);

/* Decodes the whole tensor into dst (device memory, 16-byte aligned,
 * dst_bytes >= rows*cols*{4,2,2}) as f32, bf16 or f16
 * (BP_OUT_F32/BF16/F16). */
BP_API bp_status bp_cuda_decode(const struct bp_cuda_tensor* t, bp_output out, void* dst, uint64_t dst_bytes,
                                bp_cuda_stream stream);

/* y = W x for `batch` vectors (1..8): x is batch x cols bf16 (device,
 * 16-byte aligned, row-major), y batch x rows as f32 or bf16 (y_type
 * BP_OUT_F32 or BP_OUT_BF16). Sums in f32 in an order of the kernel's
 * choosing: within a few f32 ulps of sum |w||x| of an f32 reference over
 * the decoded W. No workspace for these codecs. */
BP_API bp_status bp_cuda_gemv(const struct bp_cuda_tensor* w, const void* x, int batch, bp_output y_type, void* y,
                              bp_cuda_stream stream);

/* Message of the calling thread's last failed bp_cuda_* call, "" if none. */
BP_API const char* bp_cuda_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* BOLTPACK_CUDA_H_ */
