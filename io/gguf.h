// GGUF (ggml's model file) reading and writing. See spec/gguf-mapping.md.
//
// The reader is at least as strict as ggml's gguf.cpp (snapshot d99724f):
// magic, version 2 or 3, string and array caps (1 GiB / 2^30 elements, and
// never more than the bytes left), non-empty unique keys, known value types,
// bool bytes 0/1, `general.alignment` a UINT32 power of two, tensor names of
// 1..63 bytes and unique, at most 4 dimensions, ne >= 0, overflow-checked
// sizes, known ggml types only (removed ids rejected), ne[0] a multiple of
// the block size, each tensor's offset a multiple of the alignment and equal
// to the padded sum of the tensors before it (ggml's contiguity rule), and
// tensor bytes inside the file. It differs from ggml where ggml is lax or
// buggy: nested arrays (which GGUF's spec allows) are read (up to 8 levels),
// keys must be valid UTF-8 without NUL and at most 4096 bytes (bolt-pack's
// key rules), bools other than 0/1 are rejected, and opening is linear in
// the number of keys and tensors.
//
// Split models (NAME-00001-of-0000N.gguf with split.no / split.count /
// split.tensors.count) open as one model from the first shard; io/gguf_split.h
// writes them.
#ifndef BOLTPACK_IO_GGUF_H_
#define BOLTPACK_IO_GGUF_H_

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/piece_source.h"
#include "boltpack/types.h"
#include "codecs/ggml/ggml_types.h"

namespace boltpack::io {

inline constexpr uint32_t kGgufDefaultAlignment = 32;
// ggml sets no upper bound on general.alignment; bolt-pack does, because a
// writer pads the key/values to it: a 100-byte file declaring 2^31 would
// otherwise ask for gigabytes of padding on a rewrite. 16 MiB is above every
// page size a loader maps with (4 KiB, 64 KiB, 2 MiB huge pages).
inline constexpr uint32_t kGgufMaxAlignment = 1u << 24;
inline constexpr uint64_t kGgufMaxStringBytes = 1ull << 30;    // GGUF_MAX_STRING_LENGTH
inline constexpr uint64_t kGgufMaxArrayElements = 1ull << 30;  // GGUF_MAX_ARRAY_ELEMENTS
inline constexpr size_t kGgufMaxNameBytes = 63;                // GGML_MAX_NAME - 1
inline constexpr size_t kGgufMaxDims = 4;                      // GGML_MAX_DIMS
using ::boltpack::kGgmlTypeCount;

// Metadata keys bolt-pack adds when it imports a GGUF (and consumes when it
// exports one): what an exact rewrite needs besides the GGUF keys.
inline constexpr std::string_view kGgufKeyPrefix = "gguf.";
inline constexpr std::string_view kGgufVersionKey = "gguf.version";      // UINT32
inline constexpr std::string_view kGgufAlignmentKey = "gguf.alignment";  // UINT32
// BOOL false, present only for a file without tensors that ends right after
// its key/values (no padding; llama.cpp's vocab-only files).
inline constexpr std::string_view kGgufPaddedKey = "gguf.padded";

// ggml's types and the codec of each live with the codecs
// (codecs/ggml/ggml_types.h), which check records against the same table.
using ::boltpack::GgmlType;
using ::boltpack::GgmlTypeById;
using ::boltpack::GgmlTypeByName;
using ::boltpack::GgmlTensorBytes;
using ::boltpack::GgmlTypeCodecId;

// The logical dtype of such a tensor (F32 for every block-quantized type).
DType GgmlTypeDType(const GgmlType& type);
// The reverse: the GGUF type of a bolt-pack tensor stored by `codec_id` with
// `dtype` and `params` whose stored bytes are that type's data (the codec's
// Ggml() says kStoredBytes), or nullptr when GGUF has no such type.
const GgmlType* GgmlTypeForCodec(std::string_view codec_id, DType dtype, const CodecParams& params);

// A GGUF tensor's ne, held inline: GGUF has at most 4 dimensions
// (GGML_MAX_DIMS), so a model of 1M tensors needs no allocation per shape.
// Reads like a std::vector<uint64_t> (and converts to one).
class GgufDims {
 public:
  using value_type = uint64_t;
  using iterator = const uint64_t*;
  using const_iterator = const uint64_t*;
  GgufDims() = default;
  GgufDims(std::initializer_list<uint64_t> d) { Assign(d.begin(), d.end()); }
  GgufDims(const std::vector<uint64_t>& d) { Assign(d.data(), d.data() + d.size()); }  // NOLINT: as a vector
  // Keeps the first kGgufMaxDims values; declared_size() counts them all,
  // so a writer refuses a shape of more (EncodeGgufHeader).
  template <typename It>
  GgufDims(It first, It last) {
    for (; first != last; ++first) Push(*first);
  }
  size_t size() const { return n_; }
  size_t declared_size() const { return declared_; }
  bool empty() const { return n_ == 0; }
  const uint64_t* data() const { return d_; }
  const uint64_t* begin() const { return d_; }
  const uint64_t* end() const { return d_ + n_; }
  std::reverse_iterator<const uint64_t*> rbegin() const { return std::reverse_iterator<const uint64_t*>(end()); }
  std::reverse_iterator<const uint64_t*> rend() const { return std::reverse_iterator<const uint64_t*>(begin()); }
  uint64_t operator[](size_t i) const { return d_[i]; }
  uint64_t& operator[](size_t i) { return d_[i]; }
  void resize(size_t n) { n_ = declared_ = static_cast<uint32_t>(n < kMaxDims ? n : kMaxDims); }
  operator std::vector<uint64_t>() const { return {begin(), end()}; }  // NOLINT: as a vector
  friend bool operator==(const GgufDims& a, const GgufDims& b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }
  friend bool operator==(const GgufDims& a, const std::vector<uint64_t>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  static constexpr uint32_t kMaxDims = 4;  // kGgufMaxDims
  void Assign(const uint64_t* first, const uint64_t* last) {
    for (; first != last; ++first) Push(*first);
  }
  void Push(uint64_t v) {
    if (n_ < kMaxDims) d_[n_++] = v;
    if (declared_ < UINT32_MAX) ++declared_;
  }
  uint64_t d_[kMaxDims] = {};
  uint32_t n_ = 0;
  uint32_t declared_ = 0;
};

// 96 bytes and no allocation: the name views the file (its mapping, or the
// buffer OpenBuffer was given, both alive as long as the model).
struct GgufTensor {
  std::string_view name;
  GgufDims ne;  // GGUF order: innermost first
  const GgmlType* type = nullptr;
  uint64_t offset = 0;       // relative to its file's data section
  uint64_t nbytes = 0;
  uint64_t file_offset = 0;  // absolute, in that file
  uint32_t shard = 0;        // which file of a split model

  // bolt-pack shape: ne reversed (outermost first).
  std::vector<uint64_t> Shape() const { return {ne.rbegin(), ne.rend()}; }
};

class GgufModel {
 public:
  // Opens a .gguf file; a first shard (split.count > 1) opens the whole
  // split model (its siblings are found by the -0000K-of-0000N name).
  static absl::StatusOr<std::unique_ptr<GgufModel>> Open(const std::string& path);
  // One file's bytes, which the caller keeps alive (a split shard opens
  // alone: its tensors are the shard's).
  static absl::StatusOr<std::unique_ptr<GgufModel>> OpenBuffer(absl::Span<const uint8_t> bytes,
                                                               std::string display_name);
  ~GgufModel();

  uint32_t version() const;    // of the first file
  uint32_t alignment() const;  // general.alignment or 32
  // Key/value pairs of the first file, in file order.
  const Metadata& metadata() const;
  // Moves the key/values out (metadata() is empty afterwards), so that a
  // caller that keeps them does not hold a second copy.
  Metadata ReleaseMetadata();
  // Tensors in file order, shards in order.
  const std::vector<GgufTensor>& tensors() const;
  // Frees the tensor list (tensors() is empty and FindTensor finds nothing
  // afterwards), for a caller that keeps its own (tools/inputs.h) with
  // their TensorBytes taken first: 96 MB for 1M tensors.
  void ReleaseTensors();
  // Drops the resident pages of each file's header (key/values and tensor
  // infos; io::ReleaseMappedPages): names viewing them read the file again
  // if used. For a caller that has copied what it needs of them (a
  // conversion's output declarations): 39 MB for 1M tensors.
  void ReleaseHeaderPages() const;
  std::optional<size_t> FindTensor(std::string_view name) const;
  const std::vector<std::string>& files() const;
  uint64_t file_size(size_t shard) const;
  // Start of the data section of a shard.
  uint64_t data_offset(size_t shard) const;
  // Number of files (1 unless split).
  size_t shard_count() const;
  // Zero-copy bytes of tensor `i` (inside the mapping).
  absl::Span<const uint8_t> TensorBytes(size_t i) const;

  struct Impl;

 private:
  explicit GgufModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Key of a MetaValue in GGUF terms (gguf_type id), -1 if it has none.
int GgufValueTypeId(ValueType type);

struct GgufTensorDecl {
  std::string name;
  GgufDims ne;  // innermost first (inline: a writer of 1M tensors allocates no shape)
  int type = 0;              // ggml type id
};

struct GgufWriterOptions {
  uint32_t version = 3;
  // 0: `general.alignment` of the metadata if present, else 32.
  uint32_t alignment = 0;
  // Paths the output must not overwrite.
  std::vector<std::string> inputs;
  // False: a file without tensors ends right after its key/values (as
  // llama.cpp's vocab-only files do); ggml's writer pads it.
  bool pad_empty = true;
  // False: no fsync before the rename (common/atomic_file.h).
  bool durable = true;
};

// The bytes before the data section, as ggml's gguf_write_to_file writes
// them: header, key/values, tensor infos (offsets = running padded sums),
// zero padding to the alignment. Validates everything a GGUF reader checks.
absl::StatusOr<std::vector<uint8_t>> EncodeGgufHeader(std::string_view file, const Metadata& kv,
                                                      const std::vector<GgufTensorDecl>& tensors,
                                                      uint32_t version, uint32_t alignment,
                                                      bool pad_empty = true);
// The alignment a file with metadata `kv` gets (general.alignment or 32).
absl::StatusOr<uint32_t> GgufAlignmentOf(std::string_view file, const Metadata& kv);

// Streams a GGUF file: header from the declarations first, then each
// tensor's bytes in declaration order, each padded to the alignment (also
// the last, as ggml does). Atomic (temporary file + rename).
class GgufWriter {
 public:
  static absl::StatusOr<std::unique_ptr<GgufWriter>> Create(const std::string& path, const Metadata& kv,
                                                            std::vector<GgufTensorDecl> tensors,
                                                            const GgufWriterOptions& options = {});
  ~GgufWriter();
  absl::Status WriteNext(absl::Span<const uint8_t> bytes);
  // The same from pieces (a tensor streamed without being held whole).
  absl::Status WriteNext(PieceSource& bytes);
  // The same, writing behind: returns once every piece is fetched and
  // checked while a thread still writes the last ones, so the next
  // tensor's reads overlap these writes. The writer keeps the source until
  // its bytes are written; memory its pieces point into that it does not
  // own (a Reader's mapping) must outlive Finish (or the writer). A write
  // error is returned by a later call or by Finish.
  absl::Status WriteNextBehind(std::shared_ptr<PieceSource> bytes);
  absl::Status Finish();

  struct Impl;

 private:
  // WriteNext and WriteNextBehind of pieces; `behind`: the owner of `pieces`, or null.
  absl::Status WritePieces(PieceSource& pieces, std::shared_ptr<PieceSource> behind);
  explicit GgufWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "NAME-00002-of-00005.gguf" for prefix NAME, shard index 1 (0-based) of 5.
std::string GgufSplitPath(std::string_view prefix, int index, int count);

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_GGUF_H_
