// The codec plugin interface. A codec turns a tensor's elements into one or
// more named streams and back. Codecs are registered by id (the string stored
// in the manifest); see codec_registry.h.
//
// Contract for decoders: stream bytes are hostile. ValidateRecord is called
// before Decode and must check every size the decoder relies on, so that
// Decode cannot read or write out of bounds whatever the file says.
#ifndef BOLTPACK_CODEC_H_
#define BOLTPACK_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/tensor_info.h"
#include "boltpack/types.h"

namespace boltpack {

// A tensor handed to an encoder: contiguous row-major elements of `dtype`.
struct TensorSource {
  std::string_view name;
  DType dtype = DType::kUnspecified;
  absl::Span<const uint64_t> shape;
  absl::Span<const uint8_t> bytes;
  // Optional importance weights (e.g. from a llama.cpp imatrix): one per
  // column (innermost dimension), or one per column of each outermost slice
  // for 3-D expert tensors ([n_experts][n_cols], flattened). Empty: none.
  absl::Span<const float> importance;
};

// A piece of an encoded stream that decodes alone (a run of whole rows).
struct EncodedChunk {
  uint64_t raw_offset = 0;
  uint64_t raw_length = 0;
  uint64_t first_row = 0;
  uint64_t row_count = 0;
};

struct EncodedStream {
  std::string role;
  std::vector<uint8_t> bytes;
  // Optional split of `bytes` into independently decodable pieces, in order,
  // tiling `bytes` exactly. The writer compresses each piece on its own.
  std::vector<EncodedChunk> chunks;
  // False for streams that are already entropy coded (zstd would not pay).
  bool compressible = true;
  // Views that read this stream; empty means every view. A stream only the
  // "full" view reads (e.g. a Cassandra tensor's verification data) is stored
  // after every stream the "draft" view reads, so a draft loader reads one
  // contiguous range of the file.
  std::vector<std::string> views;
};

struct EncodedTensor {
  CodecParams params;  // the effective parameters, stored in the manifest
  std::vector<EncodedStream> streams;
};

// Told by a decoder, as it goes, how far it has read its streams, so that
// the reader can hash those bytes while they are still in this core's cache
// (checksums are checked on every decode, spec container.md §7.4).
class ReadProgress {
 public:
  virtual ~ReadProgress() = default;
  // The decoder has read raw bytes of stream `stream` up to raw offset
  // `raw_end` (from the stream's start, not from raw_base). Called from the
  // thread running the decode, in increasing order per stream.
  virtual void ReadTo(size_t stream, uint64_t raw_end) = 0;
};

// What a decoder reads: the validated record and, per stream (same order as
// info.streams), its raw (decompressed) bytes. For a row-range read,
// `raw_base[k]` is the raw offset at which `streams[k]` starts (0 otherwise).
struct DecodeInput {
  const TensorInfo* info = nullptr;
  std::vector<absl::Span<const uint8_t>> streams;
  std::vector<uint64_t> raw_base;
  // The view being decoded; empty means "full" (every original bit). Streams
  // the view does not read are passed as empty spans.
  std::string_view view;
  // Optional, for DecodeRows: where to report reading progress. Reporting
  // only saves time: whatever a decoder does not report, the reader checks
  // after DecodeRows returns.
  ReadProgress* progress = nullptr;
};

struct ExecOptions {
  int threads = 1;
};

// What Encode gives for a tensor, known from its dtype, shape and
// parameters alone (Codec::PlanEncode): the record (stored parameters and
// streams: role, chunks, views, `bytes` left empty) and each stream's length.
struct EncodePlan {
  EncodedTensor record;
  std::vector<uint64_t> lengths;  // per stream of record
};

// How a codec's streams tile a tensor, for cutting them without decoding
// (elastic budgets, slice): each stream stores, for every run of
// `block_elems` consecutive elements along the innermost dimension, exactly
// cell_bytes[k] bytes, in row-major block order. An element codec is
// block_elems 1 and the element size; ggml's Q8_0 is 32 elements in 34 bytes.
struct StoredLayout {
  uint64_t block_elems = 1;
  std::vector<uint64_t> cell_bytes;  // per stream, in record order
};

// How a GGUF export holds a tensor of this codec.
enum class GgmlExport {
  kNone,           // no ggml type holds it: re-encode it first
  kStoredBytes,    // its one stream is the ggml tensor's data, byte for byte
  kDecodedBf16,    // decoded to bf16 and written as BF16, which holds its values exactly
  kTwoLevelNvfp4,  // ggml NVFP4 blocks plus a "<name>.scale" F32 tensor (spec/gguf-mapping.md §3)
  kRepackedQ4_0,   // its groups repacked losslessly to ggml Q4_0 blocks (int4-g128, gguf-mapping.md §3.2)
};

struct GgmlMapping {
  int type = -1;  // the ggml type id (GGUF tensor type); -1 with kNone
  GgmlExport how = GgmlExport::kNone;
};

// What tools ask of a codec instead of testing its id.
struct CodecTraits {
  // Stores every element whole, row-major, in one stream "data" (f32, f16,
  // bf16, raw): a GGUF or safetensors tensor of such a codec is its bytes.
  bool element = false;
  // For an element codec, the type it stores; kUnspecified: the tensor's own
  // dtype, unchanged (raw).
  DType element_dtype = DType::kUnspecified;
  // Quantizes in blocks (lossy).
  bool quantizer = false;
  // Takes 1-D tensors (norms, biases) in a GGUF-compatible plan. False for
  // the block quantizers: llama-quantize keeps such tensors in float, as
  // ggml's kernels take them in float only, so the codec plan keeps them
  // out of these codecs.
  bool takes_1d = true;
  // Stores blocks it can neither encode nor decode (the ggml pass-through
  // codecs): convert copies such tensors, and a codec listing says so.
  bool copy_only = false;
  // Entropy-codes the bf16 exponent, every bit kept (bf16-huffman, ...):
  // inspect reports the exponent's entropy, the bound such a code approaches.
  bool exponent_coded = false;
};

// The kinds of value a codec parameter takes, and the MetaValue type a
// parsed user value is stored with (codecs/codec_params.h).
enum class ParamKind {
  kNumber,   // a finite decimal: FLOAT64
  kInteger,  // a whole number: INT64
  kBool,     // true or false: BOOL
  kChoice,   // one of `choices`: STRING
  kText,     // any string (stored-only tables, e.g. code lengths): STRING
};

// One parameter a codec takes or stores, as users and parsers see it. The
// codec's CanEncode and ValidateRecord stay the authority on what it accepts;
// this says what to offer users and how to type their text.
struct CodecParamSpec {
  std::string_view name;
  ParamKind kind = ParamKind::kNumber;
  std::string_view help;
  // kNumber and kInteger: the range, each bound inclusive unless said
  // otherwise (keep is in (0, 1]).
  double min = -1.0e308;
  double max = 1.0e308;
  bool min_exclusive = false;
  bool max_exclusive = false;
  // kChoice: the strings allowed.
  std::vector<std::string_view> choices;
  // What the encoder does without it, shown to users ("0.5", "computed from
  // the tensor's amax"); empty: nothing to say.
  std::string_view default_text;
  // A user may pass it to the encoder. False: the encoder writes it into
  // the record (code tables, measured errors) and a user may not.
  bool settable = true;
};

class Codec {
 public:
  virtual ~Codec() = default;

  virtual std::string_view id() const = 0;
  virtual std::string_view description() const = 0;

  // OK when this codec can encode a tensor of this dtype and shape with these
  // parameters; otherwise says why (e.g. row length not a multiple of 32).
  virtual absl::Status CanEncode(DType dtype, absl::Span<const uint64_t> shape,
                                 const CodecParams& params) const = 0;
  virtual absl::StatusOr<EncodedTensor> Encode(const TensorSource& source,
                                               const CodecParams& params,
                                               const ExecOptions& exec) const = 0;

  // Checks the record (dtype, shape, params, stream roles and raw lengths)
  // before any decode. Decode may assume it passed.
  virtual absl::Status ValidateRecord(const TensorInfo& info) const = 0;
  virtual bool CanDecodeTo(const TensorInfo& info, OutputType out) const = 0;
  // Bytes a full decode to `out` writes.
  virtual absl::StatusOr<uint64_t> DecodedBytes(const TensorInfo& info,
                                                OutputType out) const = 0;
  virtual absl::Status Decode(const DecodeInput& input, OutputType out,
                              absl::Span<uint8_t> dst,
                              const ExecOptions& exec) const = 0;
  // Decodes outer rows [row_begin, row_end). The default says it is not
  // supported.
  virtual absl::Status DecodeRows(const DecodeInput& input, uint64_t row_begin,
                                  uint64_t row_end, OutputType out,
                                  absl::Span<uint8_t> dst) const;
  // For a row-range read: the raw byte range of stream `stream_index` that
  // rows [row_begin, row_end) need.
  virtual absl::StatusOr<std::pair<uint64_t, uint64_t>> RowRangeBytes(
      const TensorInfo& info, size_t stream_index, uint64_t row_begin,
      uint64_t row_end) const;

  // Stored bytes (before compression) this codec produces for such a tensor.
  virtual absl::StatusOr<uint64_t> EncodedSize(DType dtype,
                                               absl::Span<const uint64_t> shape,
                                               const CodecParams& params) const = 0;
  // The record Encode writes for such a tensor, without its elements, for
  // planning a file's exact size (bolt-pack plan): equal to Encode's but
  // for a stored parameter whose value depends on the data (nvfp4's tensor
  // scale), which gets a placeholder of the same serialized size. nullopt
  // (the default) when the record itself depends on the data (entropy
  // codes, whose lengths and code tables do): such a tensor can only be
  // estimated. An error when Encode would refuse the tensor (CanEncode).
  virtual absl::StatusOr<std::optional<EncodePlan>> PlanEncode(DType /*dtype*/,
                                                              absl::Span<const uint64_t> /*shape*/,
                                                              const CodecParams& /*params*/) const {
    return std::optional<EncodePlan>();
  }
  // Axes (0 = outermost) along which a whole-unit prefix or subset can be cut
  // from the stored bytes without re-encoding.
  virtual std::vector<int> SliceableAxes(absl::Span<const uint64_t> shape,
                                         const CodecParams& params) const = 0;

  // The grid of fixed-size cells its streams are for a tensor of this dtype
  // and these (stored) parameters; nullopt (the default) when its streams
  // are no such grid (entropy codes): such tensors are cut by decoding and
  // re-encoding.
  virtual std::optional<StoredLayout> Layout(DType /*dtype*/,
                                             const CodecParams& /*params*/) const {
    return std::nullopt;
  }
  // The ggml type a GGUF export writes for it, and how. Default: none.
  virtual GgmlMapping Ggml(DType /*dtype*/, const CodecParams& /*params*/) const { return {}; }
  // What it is (see CodecTraits). Default: none of those.
  virtual CodecTraits traits() const { return {}; }
  // The parameters it takes from users and those it stores, in the order a
  // listing shows them. Default: none.
  virtual std::vector<CodecParamSpec> ParamSpecs() const { return {}; }
};

}  // namespace boltpack

#endif  // BOLTPACK_CODEC_H_
